/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completions the transport generates, and the move to ERR (IBTA 10.3.1,
 * 11.4.2): every outstanding send and receive WQE completes with
 * WR_FLUSH_ERR, signaled or not (verbs: flushed WRs always generate a
 * completion), after the WQE that caused it, and the transport goes back to
 * what RESET leaves (droce_tp_reset: no cursor inside a WQE, no message half
 * received, no timer, no queued answer).
 *
 * A completion can itself move the QP to ERR (a CQ overrun): callers check
 * qp->state after each one and stop what they were doing.
 */
#include "transport/tp_int.h"

void droce_tp_complete(struct droce_qp *qp, struct droce_cq *cq, const struct droce_wc *wc)
{
	if (droce_cq_push(cq, wc) != 0 && qp->state != DROCE_QPS_ERR) {
		/* IBTA 11.4.2.1: CQ overrun is a QP error, which no completion
		 * can report (11.6.3: CQ error, local catastrophic WQ error). */
		droce_event_raise(qp->ctx, DROCE_EVENT_CQ_ERR, NULL, cq, NULL);
		droce_event_raise(qp->ctx, DROCE_EVENT_QP_FATAL, qp, NULL, NULL);
		droce_tp_to_err(qp);
	}
}

static void send_wc(struct droce_qp *qp, const struct droce_swqe *w, enum droce_wc_status st,
		    uint32_t vendor_err)
{
	struct droce_wc wc = {
		.wr_id = w->wr_id,
		.status = st,
		.opcode = droce_wc_opcode_of(w->opcode),
		.byte_len = w->length,
		.qp_num = qp->qpn,
		.vendor_err = vendor_err,
	};
	droce_tp_complete(qp, qp->scq, &wc);
}

void droce_tp_to_err(struct droce_qp *qp)
{
	if (qp->state == DROCE_QPS_ERR)
		return;
	qp->state = DROCE_QPS_ERR;
	qp->attr.qp_state = DROCE_QPS_ERR;
	for (; qp->sq_una != qp->sq_tail; qp->sq_una++) {
		struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
		send_wc(qp, w, DROCE_WC_WR_FLUSH_ERR, 0);
		if (qp->type != DROCE_QPT_RC)
			droce_ud_swqe_release(w); /* flushed: its handle may go */
	}
	for (; qp->rq_head != qp->rq_tail; qp->rq_head++) {
		struct droce_wc wc = {
			.wr_id = qp->rq[qp->rq_head & qp->rq_mask].wr_id,
			.status = DROCE_WC_WR_FLUSH_ERR,
			.opcode = DROCE_WC_RECV,
			.qp_num = qp->qpn,
		};
		droce_tp_complete(qp, qp->rcq, &wc);
	}
	/* IBTA 11.6.3.1: a QP on an SRQ in ERR takes no more WQEs from it:
	 * Last WQE Reached, so the application knows when to destroy it. */
	if (qp->srq)
		droce_event_raise(qp->ctx, DROCE_EVENT_QP_LAST_WQE_REACHED, qp, NULL, NULL);
	droce_tp_reset(qp);
}

void droce_tp_fail_send(struct droce_qp *qp, enum droce_wc_status status, uint32_t vendor_err)
{
	if (qp->state == DROCE_QPS_ERR)
		return;
	if (qp->sq_una != qp->sq_tail) {
		send_wc(qp, &qp->sq[qp->sq_una & qp->sq_mask], status, vendor_err);
		if (qp->state == DROCE_QPS_ERR)
			return; /* the error completion overran the CQ: already flushed */
		qp->sq_una++;
	}
	droce_tp_to_err(qp);
}
