/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's entry points for core/ (transport/tp.h): dispatch of a
 * received packet, the QP's turn on the link, state-change hooks.
 *
 * The turn is shared between the requester and the responder: each gets half of the quota, the one with work left takes what the
 * other did not use, and who goes first alternates, so a stream of READ
 * responses cannot keep the QP's own requests (and their retransmissions) off
 * the link, nor the other way round (rxe runs them as independent tasks).
 */
#include "wire/psn.h"
#include "transport/tp_int.h"
#include "transport/spray.h"
#include "transport/sr.h"
#include "wire/opcode.h"

int droce_tp_fit(struct droce_qp *qp, uint8_t transport, uint8_t max_dest_rd_atomic)
{
	struct droce_tp *t = &qp->tp;
	if (transport != DROCE_TRANSPORT_GBN && !t->sr && !(t->sr = calloc(1, sizeof(*t->sr))))
		return -ENOMEM;
	if (max_dest_rd_atomic && !t->rd && !(t->rd = calloc(1, sizeof(*t->rd))))
		return -ENOMEM;
	return 0;
}

void droce_tp_release(struct droce_qp *qp)
{
	free(qp->tp.sr);
	free(qp->tp.rd);
	qp->tp.sr = NULL;
	qp->tp.rd = NULL;
}

void droce_tp_reset(struct droce_qp *qp)
{
	droce_req_reset(qp);
	droce_resp_reset(qp);
	if (qp->tp.sr)
		memset(qp->tp.sr, 0, sizeof(*qp->tp.sr));
	qp->tp.kick = false;
	qp->tp.resp_first = false;
}

void droce_tp_rtr(struct droce_qp *qp)
{
	qp->tp.epsn = qp->tp.ack_psn = qp->attr.rq_psn;
	qp->tp.msn = 0;
	if (qp->tp.sr)
		qp->tp.sr->rx_base = qp->tp.sr->rx_hi = qp->attr.rq_psn;
}

void droce_tp_rts(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	t->npsn = t->cur_psn = t->una_psn = t->snd_max = qp->attr.sq_psn;
	if (t->sr)
		t->sr->tx_base = t->sr->peer_hi = t->sr->resent_to = t->sr->resend_end = qp->attr.sq_psn;
	if (qp->transport == DROCE_TRANSPORT_SR_SPRAY)
		droce_sr_rts(qp);
	t->retry_left = qp->attr.retry_cnt;
	t->rnr_left = qp->attr.rnr_retry;
	qp->ccs.line_bpns = qp->ctx->p.line_rate_gbps / 8.0; /* rate cc starts here */
	qp->cc->init(&qp->ccs, qp->ctx->p.window_pkts, qp->ctx->p.window_bytes, 0);
	droce_rtt_init(&qp->rtt);
}

void droce_tp_ecn_ce(struct droce_qp *qp, uint64_t now)
{
	qp->stats.ecn_marked++;
	if (!qp->tp.last_cnp || now - qp->tp.last_cnp >= DROCE_CNP_INTERVAL_NS) {
		qp->tp.cnp_pending = true;
		droce_tp_kick(qp);
	}
}

void droce_tp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	uint16_t f = pkt->op->flags;
	/* IBTA 11.6.3.1: Communication Established, the first packet a QP in
	 * RTR receives (rdma_cm's servers wait for it, or for the RTU). */
	if (qp->state == DROCE_QPS_RTR && !qp->comm_est && qp->type == DROCE_QPT_RC) {
		qp->comm_est = true;
		droce_event_raise(qp->ctx, DROCE_EVENT_COMM_EST, qp, NULL, NULL);
	}
	if (qp->type != DROCE_QPT_RC)
		droce_ud_rx(qp, pkt, now);
	else if (droce_opcode_service(pkt->h.bth.opcode) == DROCE_SVC_CNP)
		droce_comp_cnp(qp, now);
	else if (f & DROCE_OPF_REQ)
		droce_resp_rx(qp, pkt, now);
	else
		droce_comp_rx(qp, pkt, now);
}

typedef enum droce_tx_result (*tx_fn)(struct droce_qp *, uint64_t, unsigned, unsigned *);

/* Nothing queued on one side: the other has the whole turn (no call). */
static inline bool resp_idle(const struct droce_tp *t)
{
	return !t->cnp_pending && t->job_head == t->job_tail && !t->ack_pending && !t->nak_pending;
}

static inline bool req_idle(const struct droce_qp *qp)
{
	return qp->tp.sq_cur == qp->sq_tail;
}

enum droce_tx_result droce_tp_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent)
{
	if (qp->type != DROCE_QPT_RC)
		return droce_ud_tx(qp, now, quota, sent);
	if (resp_idle(&qp->tp))
		return droce_req_tx(qp, now, quota, sent);
	if (req_idle(qp))
		return droce_resp_tx(qp, now, quota, sent);
	bool rf = qp->tp.resp_first;
	tx_fn first = rf ? droce_resp_tx : droce_req_tx, second = rf ? droce_req_tx : droce_resp_tx;
	unsigned a = 0, b = 0, c = 0;
	qp->tp.resp_first = !rf;
	*sent = 0;

	enum droce_tx_result r1 = first(qp, now, (quota + 1) / 2, &a);
	*sent = a;
	if (r1 == DROCE_TX_BUSY)
		return r1;
	enum droce_tx_result r2 = second(qp, now, quota - a, &b);
	*sent += b;
	if (r2 == DROCE_TX_BUSY)
		return r2;
	if (r1 == DROCE_TX_MORE && *sent < quota) {
		r1 = first(qp, now, quota - *sent, &c);
		*sent += c;
		if (r1 == DROCE_TX_BUSY)
			return r1;
	}
	return r1 == DROCE_TX_MORE || r2 == DROCE_TX_MORE ? DROCE_TX_MORE : DROCE_TX_IDLE;
}
