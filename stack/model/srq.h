/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A shared receive queue (IBTA 10.2.9). core/ writes it (srq.c: create,
 * modify, post); transport/ takes its oldest WQE into a consuming QP's
 * one-slot RQ (transport/recv.c, droce_rq_next) and disarms the limit.
 */
#ifndef DROCE_MODEL_SRQ_H
#define DROCE_MODEL_SRQ_H

#include <stdint.h>

#include "model/wqe.h"

struct droce_ctx;
struct droce_pd;

/** Largest SRQ (WQEs), as verbs' max_srq_wr. */
#define DROCE_SRQ_WR_LIMIT 65535u

struct droce_srq {
	struct droce_ctx *ctx;
	struct droce_rwqe *ring;
	uint32_t mask, head, tail;    /* free-running; queued = tail - head */
	uint32_t max_wr, max_sge;
	uint32_t limit;               /* armed when non-zero */
	uint32_t users;               /* QPs created on it */
	struct droce_pd *pd;          /* its WQEs' lkeys are checked in it (10.6.3.2) */
	uint32_t pd_id;
	void *user;                   /* srq_context, handed back in its events */
	struct droce_srq *prev, *next; /* the context's list (destroyed with it) */
};

#endif
