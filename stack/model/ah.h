/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UD address handle. Written by core/ (ah.c) at create; read by
 * transport/ (ud.c) per datagram. Reference counted: the handle and each
 * UD WQE naming it (model/wqe.h droce_ud_swqe_hold / _release), so a handle
 * destroyed with datagrams queued lives until the last of them is gone.
 */
#ifndef DROCE_MODEL_AH_H
#define DROCE_MODEL_AH_H

#include <stdlib.h>

#include <droce/droce.h>

#include "model/pd.h"
#include "wire/fields.h"

/** A UD address handle (core/ah.c): the network fields of its datagrams,
 * filled once at create from the attributes and the context's address. */
struct droce_ah {
	struct droce_ctx *ctx;
	struct droce_pd *pd;          /* NULL once destroyed (the PD may go then) */
	uint32_t refs;                /* the handle, plus one per UD WQE naming it */
	struct droce_ah_attr attr;
	struct droce_net_fields net;  /* sport 0: derived per datagram from the QPNs */
	struct droce_ah *prev, *next; /* the context's list (destroyed with it) */
};

/** Drop a reference (a UD WQE retired, or the handle destroyed): the last one frees it. */
static inline void droce_ah_put(struct droce_ah *ah)
{
	if (--ah->refs == 0)
		free(ah);
}

#endif
