/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core/'s scheduling of a context's QPs: the transmit list a QP joins when
 * it has output, and the fold of its transport deadline into the deadline
 * heap. Only core/ includes it.
 */
#ifndef DROCE_CORE_SCHED_H
#define DROCE_CORE_SCHED_H

#include "model/model.h"

/** Put @p qp on the context's transmit list (idempotent). */
void droce_qp_kick_list(struct droce_qp *qp);
/* Inline: every post and every received frame asks, and the QP is mostly
 * on the list already (one test, no call). */
static inline void droce_qp_kick(struct droce_qp *qp)
{
	if (!qp->in_ready)
		droce_qp_kick_list(qp);
}

/** Fold @p qp's transport deadline into the context's timers (after every
 * call into the transport; one compare when it did not move). */
static inline void droce_ctx_timer_fold(struct droce_ctx *ctx, struct droce_qp *qp)
{
	droce_timers_set(&ctx->timers, qp->index, droce_tp_deadline(&qp->tp));
}

#endif
