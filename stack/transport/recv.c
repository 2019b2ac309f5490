/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a message's receive WQE comes from: the QP's own RQ, or its shared
 * receive queue (IBTA 10.2.9). A WQE taken from an SRQ belongs to the QP
 * from then on: it is moved into the QP's one-slot RQ, so it completes on
 * the QP's receive CQ, or is flushed with the QP if the QP goes to ERR
 * before the message ends (as rxe keeps it in the QP, resp.srq_wqe).
 */
#include "transport/tp_int.h"

bool droce_rq_next(struct droce_qp *qp)
{
	if (qp->rq_head != qp->rq_tail)
		return true;
	struct droce_srq *s = qp->srq;
	if (!s || s->head == s->tail)
		return false;
	qp->rq[qp->rq_tail & qp->rq_mask] = s->ring[s->head & s->mask];
	qp->rq_tail++;
	s->head++;
	/* IBTA 10.2.9 (SRQ limit): fewer WQEs than the armed limit left: one
	 * event, and the limit disarms until the application arms it again. */
	if (s->limit && s->tail - s->head < s->limit) {
		s->limit = 0;
		droce_event_raise(qp->ctx, DROCE_EVENT_SRQ_LIMIT_REACHED, NULL, NULL, s);
	}
	return true;
}
