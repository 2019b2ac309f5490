/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unreliable Datagram (IBTA vol 1 9.8.4, 10.2.4; RoCEv2: Annex A17).
 *
 * Send: every WQE is one SEND_ONLY (or SEND_ONLY_WITH_IMMEDIATE) packet with
 * a DETH (Q_Key, source QP) to the WQE's address handle and remote QPN. No
 * ACK, no retransmission, no window: the WQE completes once its packet has
 * left. The PSN still increments per packet (9.8.4: it is not checked by
 * the receiver). The DETH Q_Key is the WR's, or the QP's own when the WR's
 * has its high bit set (10.2.4: a "controlled" Q_Key a consumer may not
 * send directly). A message longer than the MTU sends nothing and completes
 * successfully (C10-93.1.1, as rxe), counted in stats.ud_oversize. A send
 * WQE with a bad lkey completes in error and takes the QP to SQE (10.3.1:
 * a UD send error stops the send queue only; receives go on).
 *
 * Receive (after the context's P_Key check): the QP must be in RTR or
 * later, the DETH Q_Key must be the QP's (10.2.4: else silently dropped,
 * counted BAD_QKEY), and a receive WQE must be posted (no RNR NAK for UD:
 * dropped, counted UD_NO_RWQE). The first 40 bytes of the buffer get the
 * GRH area as verbs places it for RoCEv2 (rxe_resp.c): IPv4, 20 zero bytes
 * then the IPv4 header as received; IPv6 (and a RoCEv1 GRH), the 40-byte
 * header. The payload follows; byte_len counts both and the completion
 * carries the source QP and DROCE_WC_GRH. A datagram longer than the WQE
 * is dropped with the WQE left posted (UD_TOO_LONG: class D, as rxe).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "wire/psn.h"
#include "transport/tp_int.h"
#include "wire/opcode.h"

#define GRH_LEN 40u

/* A17.5.1.1: flow entropy in 0xC000..0xFFFF, from both QPNs unless the
 * address handle fixes the port. */
static uint16_t ud_sport(const struct droce_qp *qp, const struct droce_ah *ah, uint32_t dqpn)
{
	if (ah->net.sport)
		return ah->net.sport;
	uint32_t h = (qp->qpn * 0x9E3779B1u) ^ (dqpn * 0x85EBCA77u);
	h ^= h >> 15;
	return (uint16_t)(0xC000u | (h & 0x3FFFu));
}

static void ud_send_wc(struct droce_qp *qp, const struct droce_swqe *w, enum droce_wc_status st)
{
	if (st == DROCE_WC_SUCCESS && !(w->flags & DROCE_SEND_SIGNALED) && !qp->sq_sig_all)
		return;
	struct droce_wc wc = {
		.wr_id = w->wr_id,
		.status = st,
		.opcode = DROCE_WC_SEND,
		.byte_len = w->length,
		.qp_num = qp->qpn,
	};
	droce_tp_complete(qp, qp->scq, &wc);
}

/* 10.3.1: a send error on a UD QP moves it to SQE: the failed WQE completes
 * with its status, the ones behind it are flushed, receives continue. */
static void ud_sq_error(struct droce_qp *qp, enum droce_wc_status st)
{
	struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
	ud_send_wc(qp, w, st);
	if (qp->state == DROCE_QPS_ERR)
		return; /* the completion overran the CQ (the flush released it) */
	droce_ud_swqe_release(w);
	qp->sq_una++;
	qp->state = DROCE_QPS_SQE;
	qp->attr.qp_state = DROCE_QPS_SQE;
	for (; qp->sq_una != qp->sq_tail && qp->state != DROCE_QPS_ERR; qp->sq_una++) {
		w = &qp->sq[qp->sq_una & qp->sq_mask];
		ud_send_wc(qp, w, DROCE_WC_WR_FLUSH_ERR);
		if (qp->state == DROCE_QPS_ERR)
			return; /* overran: the flush to ERR released this one and the rest */
		droce_ud_swqe_release(w);
	}
}

enum droce_tx_result droce_ud_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent)
{
	*sent = 0;
	/* SQD: no new message starts, and every UD message is new. */
	while (qp->state == DROCE_QPS_RTS && qp->sq_una != qp->sq_tail) {
		struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
		if (w->status != DROCE_WC_SUCCESS) {
			ud_sq_error(qp, (enum droce_wc_status)w->status);
			return DROCE_TX_IDLE;
		}
		if (w->length > qp->mtu) {
			qp->stats.ud_oversize++;
			droce_ud_swqe_release(w);
			qp->sq_una++;
			ud_send_wc(qp, w, DROCE_WC_SUCCESS);
			continue;
		}
		/* The buffer must still be the registration it was posted under
		 * (10.6.3.2): a local protection error stops the send queue. */
		if (!droce_segs_live(qp->ctx, w->seg, w->nseg)) {
			ud_sq_error(qp, DROCE_WC_LOC_PROT_ERR);
			return DROCE_TX_IDLE;
		}
		if (*sent >= quota)
			return DROCE_TX_MORE;
		const struct droce_ah *ah = droce_swqe_ud_ah(w);
		uint32_t qkey = droce_swqe_ud_qkey(w);
		bool imm = w->opcode == DROCE_WR_SEND_WITH_IMM;
		struct droce_hdrs h;
		memset(&h, 0, sizeof(h));
		h.net = ah->net;
		h.net.sport = ud_sport(qp, ah, droce_swqe_ud_qpn(w));
		h.bth.opcode = imm ? DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE : DROCE_OP_UD_SEND_ONLY;
		h.bth.se = (w->flags & DROCE_SEND_SOLICITED) != 0;
		h.bth.pkey = qp->attr.pkey;
		h.bth.dqpn = droce_swqe_ud_qpn(w);
		h.bth.psn = qp->tp.npsn;
		h.ext.deth.qkey = (qkey & 0x80000000u) ? qp->attr.qkey : qkey;
		h.ext.deth.sqpn = qp->qpn;
		if (imm)
			h.ext.imm = w->imm;
		h.payload_len = w->length;
		int rc = droce_tp_xmit(qp, &h, w->seg, w->nseg, now);
		if (rc == -ENOBUFS)
			return DROCE_TX_BUSY;
		/* Any other error: the datagram is lost, as on the wire. */
		qp->tp.npsn = droce_psn_add(qp->tp.npsn, 1);
		droce_ud_swqe_release(w); /* the frame has its bytes: the handle may go */
		qp->sq_una++;
		(*sent)++;
		ud_send_wc(qp, w, DROCE_WC_SUCCESS);
	}
	return DROCE_TX_IDLE;
}

void droce_ud_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	struct droce_ctx *ctx = qp->ctx;
	(void)now;
	if (droce_opcode_service(pkt->h.bth.opcode) != DROCE_SVC_UD)
		return; /* a CNP: UD runs no congestion control (the context counts it) */
	if (qp->state < DROCE_QPS_RTR || qp->state == DROCE_QPS_ERR) {
		droce_ctx_drop(ctx, qp, DROCE_DROP_QP_STATE);
		return;
	}
	if (pkt->h.ext.deth.qkey != qp->attr.qkey) {
		droce_ctx_drop(ctx, qp, DROCE_DROP_BAD_QKEY);
		return;
	}
	if (!droce_rq_next(qp)) {
		droce_ctx_drop(ctx, qp, DROCE_DROP_UD_NO_RWQE);
		return;
	}
	struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
	uint32_t len = pkt->h.payload_len;
	if (r->status == DROCE_WC_SUCCESS && !droce_segs_live(ctx, r->seg, r->nseg))
		r->status = DROCE_WC_LOC_PROT_ERR; /* deregistered since the post (10.6.3.2) */
	if (r->status == DROCE_WC_SUCCESS && (uint64_t)GRH_LEN + len > r->length) {
		droce_ctx_drop(ctx, qp, DROCE_DROP_UD_TOO_LONG);
		return;
	}
	struct droce_wc wc = {
		.wr_id = r->wr_id,
		.status = (enum droce_wc_status)r->status,
		.opcode = DROCE_WC_RECV,
		.qp_num = qp->qpn,
		.src_qp = pkt->h.ext.deth.sqpn,
	};
	qp->rq_head++;
	if (wc.status != DROCE_WC_SUCCESS) {
		/* A bad lkey found at post: the WQE completes in error and the QP
		 * goes to ERR (a local protection error, 10.7.3.1 class A). */
		droce_tp_complete(qp, qp->rcq, &wc);
		droce_tp_to_err(qp);
		return;
	}
	uint8_t grh[GRH_LEN];
	const uint8_t *l3 = pkt->frame + pkt->l3_off;
	if (pkt->h.net.ip_version == 4 && !pkt->h.net.rocev1) {
		memset(grh, 0, 20);
		memcpy(grh + 20, l3, 20);
	} else {
		memcpy(grh, l3, GRH_LEN);
	}
	droce_seg_copy_in(r->seg, r->nseg, 0, grh, GRH_LEN);
	droce_seg_copy_in(r->seg, r->nseg, GRH_LEN, pkt->payload, len);
	wc.byte_len = GRH_LEN + len;
	wc.wc_flags = DROCE_WC_GRH | DROCE_WC_WITH_SMAC;
	memcpy(wc.smac, pkt->frame + 6, 6); /* Ethernet source: the parser checked the header */
	if (pkt->op->flags & DROCE_OPF_IMM) {
		wc.wc_flags |= DROCE_WC_WITH_IMM;
		wc.imm_data = htobe32(pkt->h.ext.imm);
	}
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += len;
	droce_tp_complete(qp, qp->rcq, &wc);
}
