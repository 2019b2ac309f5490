/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events (IBTA 11.6.3) waiting for the application: a ring per
 * context. core/ and transport/ raise them as data (droce_event_raise);
 * core/ hands them out (droce_ctx_get_event, srq.c) and drops those of a
 * QP, CQ or SRQ being destroyed.
 */
#ifndef DROCE_MODEL_EVENT_H
#define DROCE_MODEL_EVENT_H

#include <stdint.h>

#include <droce/droce.h>

#include "model/ctx.h"
#include "model/qp.h"
#include "model/srq.h"

/** Raise an event; a full ring counts it lost (ev_lost). */
static inline void droce_event_raise(struct droce_ctx *ctx, enum droce_event_type type,
				     struct droce_qp *qp, struct droce_cq *cq, struct droce_srq *srq)
{
	if (ctx->ev_count == DROCE_EVENT_RING) {
		ctx->ev_lost++;
		return;
	}
	struct droce_event *e = &ctx->ev[(ctx->ev_head + ctx->ev_count) % DROCE_EVENT_RING];
	e->type = type;
	e->qp = qp;
	e->cq = cq;
	e->srq = srq;
	e->context = qp ? qp->user : srq ? srq->user : NULL;
	ctx->ev_count++;
}

#endif
