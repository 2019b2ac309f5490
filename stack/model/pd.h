/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A protection domain (IBTA 10.2.3). Written by core/ (mr.c: alloc,
 * dealloc; mr.c, qp.c, ah.c count the objects in it); the key checks
 * (model/mr.h) compare its id.
 */
#ifndef DROCE_MODEL_PD_H
#define DROCE_MODEL_PD_H

#include <stdint.h>

struct droce_ctx;

struct droce_pd {
	struct droce_ctx *ctx;
	uint32_t id;          /* never 0; the context's own PD is 1 */
	uint32_t users;       /* MRs, QPs and AHs in it: dealloc is EBUSY while > 0 */
	struct droce_pd *prev, *next; /* the context's list (freed with it) */
};

#endif
