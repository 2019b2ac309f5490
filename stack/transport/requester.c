/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: turns send WQEs into request packets (IBTA vol 1 9.7.1-9.7.2):
 * segmentation at the path MTU, 24-bit PSNs with wrap, FIRST/MIDDLE/LAST/ONLY
 * opcodes, AckReq on the last packet of a message and every
 * DROCE_DEFAULT_ACK_REQ_EVERY packets. READ requests consume one PSN per
 * response packet (9.7.1), atomics one. Sending is gated by max_rd_atomic,
 * fence (10.8.3.3), and the congestion-control window and pacing.
 *
 * Retransmission is go-back-N (9.7.6): droce_req_rewind() moves the send
 * cursor back to a PSN and the same PSNs are sent again, re-reading the MR
 * (nothing is copied at post time except inline data). A READ rewound into
 * the middle of its response range is re-issued for the remaining bytes at
 * that PSN with address and length adjusted (9.7.5.1.5 / C9-155).
 */
#include <errno.h>

#include "core/core.h"
#include "transport/psn.h"
#include "wire/opcode.h"

static inline bool is_rd_atomic(uint8_t op)
{
	return op == DROCE_WR_RDMA_READ || op == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

static uint32_t wqe_npkts(const struct droce_qp *qp, const struct droce_swqe *w)
{
	if (w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP || w->opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD)
		return 1;
	return w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1;
}

void droce_req_reset(struct droce_qp *qp)
{
	qp->cur_pkt = 0;
	qp->cur_psn = qp->npsn = qp->snd_max = qp->una_psn = 0;
	qp->bseq_next = qp->acked_bseq = 0;
	qp->rd_inflight = 0;
	qp->pkts_since_ackreq = 0;
	qp->rnr_wait = false;
	qp->gap_retry = false;
	qp->rto_deadline = qp->rnr_deadline = qp->pace_deadline = 0;
}

static uint32_t count_rd_inflight(const struct droce_qp *qp)
{
	uint32_t n = 0;
	for (uint32_t i = qp->sq_una; i != qp->sq_cur; i++)
		n += is_rd_atomic(qp->sq[i & qp->sq_mask].opcode);
	return n;
}

void droce_req_rewind(struct droce_qp *qp, uint32_t psn)
{
	uint32_t i;
	for (i = qp->sq_una; i != qp->sq_new; i++) {
		const struct droce_swqe *w = &qp->sq[i & qp->sq_mask];
		if (droce_psn_diff(psn, w->first_psn) >= 0 && droce_psn_diff(psn, w->last_psn) <= 0)
			break;
	}
	qp->sq_cur = i;
	if (i != qp->sq_new) {
		const struct droce_swqe *w = &qp->sq[i & qp->sq_mask];
		qp->cur_pkt = (uint32_t)droce_psn_diff(psn, w->first_psn);
		qp->cur_psn = psn;
	} else {
		qp->cur_pkt = 0;
		qp->cur_psn = qp->npsn;
	}
	qp->rd_inflight = count_rd_inflight(qp);
	qp->pkts_since_ackreq = 0;
	droce_rtt_on_rewind(&qp->rtt, psn); /* Karn: PSNs from here are sent again */
	droce_qp_kick(qp);
}

static uint8_t send_opcode(bool first, bool last, bool imm)
{
	if (first && last)
		return imm ? DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE : DROCE_OP_RC_SEND_ONLY;
	if (first)
		return DROCE_OP_RC_SEND_FIRST;
	if (last)
		return imm ? DROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE : DROCE_OP_RC_SEND_LAST;
	return DROCE_OP_RC_SEND_MIDDLE;
}

static uint8_t write_opcode(bool first, bool last, bool imm)
{
	if (first && last)
		return imm ? DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : DROCE_OP_RC_RDMA_WRITE_ONLY;
	if (first)
		return DROCE_OP_RC_RDMA_WRITE_FIRST;
	if (last)
		return imm ? DROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : DROCE_OP_RC_RDMA_WRITE_LAST;
	return DROCE_OP_RC_RDMA_WRITE_MIDDLE;
}

static void arm_rto(struct droce_qp *qp, uint64_t now)
{
	uint64_t rto = droce_qp_rto(qp); /* ibta or adaptive (rtt.h) */
	if (!rto)
		return;
	qp->rto_deadline = now + rto;
	droce_ctx_timer_at(qp->ctx, qp->rto_deadline);
}

enum droce_tx_result droce_req_tx(struct droce_qp *qp, uint64_t now, unsigned quota,
				  unsigned *sent)
{
	*sent = 0;
	if ((qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD) || qp->rnr_wait ||
	    qp->pace_deadline)
		return DROCE_TX_IDLE;

	for (;;) {
		if (qp->sq_cur == qp->sq_tail)
			return DROCE_TX_IDLE;
		struct droce_swqe *w = &qp->sq[qp->sq_cur & qp->sq_mask];
		bool fresh = qp->sq_cur == qp->sq_new;
		bool rda = is_rd_atomic(w->opcode);

		if (w->status != DROCE_WC_SUCCESS) {
			/* Bad lkey found at post: complete it in order, then ERR. */
			if (qp->sq_cur == qp->sq_una)
				droce_qp_fail_send(qp, (enum droce_wc_status)w->status, 0);
			return DROCE_TX_IDLE;
		}
		if (qp->cur_pkt == 0) {
			if (fresh && qp->state == DROCE_QPS_SQD)
				return DROCE_TX_IDLE; /* SQD: no new message starts */
			uint32_t max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
			if (rda && qp->rd_inflight >= max_rd)
				return DROCE_TX_IDLE;
			if ((w->flags & DROCE_SEND_FENCE) && qp->rd_inflight)
				return DROCE_TX_IDLE;
		}
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (fresh) {
			w->npkts = wqe_npkts(qp, w);
			w->first_psn = qp->npsn;
			w->last_psn = droce_psn_add(qp->npsn, w->npkts - 1);
			w->rd_next_psn = w->first_psn;
			w->bseq = qp->bseq_next;
			qp->bseq_next += w->length;
			qp->npsn = droce_psn_add(w->last_psn, 1);
			qp->sq_new++;
		}

		/* Window and pacing (cc/): bytes are the message bytes this PSN carries. */
		uint32_t off = qp->cur_pkt * qp->mtu;
		uint32_t plen = 0;
		if (!rda && w->length > off)
			plen = w->length - off < qp->mtu ? w->length - off : qp->mtu;
		uint32_t inflight = (uint32_t)droce_psn_diff(qp->cur_psn, qp->una_psn);
		uint64_t cur_bseq = w->bseq + (off < w->length ? off : w->length);
		uint32_t wbytes = rda ? w->length - (off < w->length ? off : w->length) : plen;
		if (inflight && !qp->cc->can_send(&qp->ccs, inflight, cur_bseq - qp->acked_bseq,
						  wbytes, now))
			return DROCE_TX_IDLE; /* the completer kicks us when ACKs open it */
		uint64_t t = qp->cc->next_send_time(&qp->ccs, now);
		if (t > now) {
			qp->pace_deadline = t;
			droce_ctx_timer_at(qp->ctx, t);
			return DROCE_TX_IDLE;
		}

		struct droce_hdrs h = qp->tmpl;
		struct droce_seg seg[DROCE_TX_MAX_SEG];
		unsigned nseg = 0;
		bool last;
		uint32_t next_psn;
		h.bth.psn = qp->cur_psn;
		h.payload_len = 0;
		switch (w->opcode) {
		case DROCE_WR_RDMA_READ:
			h.bth.opcode = DROCE_OP_RC_RDMA_READ_REQUEST;
			h.ext.reth.va = w->remote_addr + off;
			h.ext.reth.rkey = w->rkey;
			h.ext.reth.dma_len = w->length - (off < w->length ? off : w->length);
			last = true;
			next_psn = droce_psn_add(w->last_psn, 1);
			break;
		case DROCE_WR_ATOMIC_CMP_AND_SWP:
		case DROCE_WR_ATOMIC_FETCH_AND_ADD:
			h.bth.opcode = w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ? DROCE_OP_RC_COMPARE_SWAP
										 : DROCE_OP_RC_FETCH_ADD;
			h.ext.atomic.va = w->remote_addr;
			h.ext.atomic.rkey = w->rkey;
			if (w->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP) {
				h.ext.atomic.swap_add = w->swap;
				h.ext.atomic.compare = w->compare_add;
			} else {
				h.ext.atomic.swap_add = w->compare_add;
				h.ext.atomic.compare = 0;
			}
			last = true;
			next_psn = droce_psn_add(w->first_psn, 1);
			break;
		default: {
			bool first = qp->cur_pkt == 0;
			last = qp->cur_pkt + 1 >= w->npkts;
			bool imm = w->opcode == DROCE_WR_SEND_WITH_IMM ||
				   w->opcode == DROCE_WR_RDMA_WRITE_WITH_IMM;
			bool send = w->opcode == DROCE_WR_SEND || w->opcode == DROCE_WR_SEND_WITH_IMM;
			h.bth.opcode = send ? send_opcode(first, last, imm) : write_opcode(first, last, imm);
			if (!send && first) {
				h.ext.reth.va = w->remote_addr;
				h.ext.reth.rkey = w->rkey;
				h.ext.reth.dma_len = w->length;
			}
			if (imm && last)
				h.ext.imm = w->imm;
			/* 9.2.3: SE on the last packet of a solicited SEND or
			 * RDMA WRITE with immediate (the ones that complete a
			 * receive WQE); a plain WRITE consumes none. */
			if (last && (send || imm) && (w->flags & DROCE_SEND_SOLICITED))
				h.bth.se = true;
			h.payload_len = plen;
			nseg = droce_seg_slice(w->seg, w->nseg, off, plen, seg);
			next_psn = droce_psn_add(qp->cur_psn, 1);
			break;
		}
		}
		/* 9.7.2: AckReq on the last packet of a message, and every N packets
		 * so a long message is acknowledged (and its window freed) as it goes. */
		h.bth.ack_req = last || qp->pkts_since_ackreq + 1 >= DROCE_DEFAULT_ACK_REQ_EVERY;

		int rc = droce_qp_xmit(qp, &h, seg, nseg, now);
		if (rc == -ENOBUFS)
			return DROCE_TX_BUSY;
		/* Any other error: the frame is lost; retransmission recovers. */

		if (droce_psn_diff(qp->cur_psn, qp->snd_max) < 0) {
			qp->stats.retrans_pkts++;
			if (droce_psn_diff(next_psn, qp->snd_max) > 0)
				qp->snd_max = next_psn;
		} else {
			qp->snd_max = next_psn;
			if (h.bth.ack_req) /* RTT: time fresh AckReq packets only (rtt.h) */
				droce_rtt_on_send(&qp->rtt, qp->cur_psn, now);
		}
		qp->pkts_since_ackreq = h.bth.ack_req ? 0 : qp->pkts_since_ackreq + 1;
		if (qp->cc->on_sent)
			qp->cc->on_sent(&qp->ccs, h.payload_len, now);
		if (!qp->rto_deadline)
			arm_rto(qp, now);
		qp->cur_psn = next_psn;
		if (last) {
			qp->sq_cur++;
			qp->cur_pkt = 0;
			if (rda)
				qp->rd_inflight++;
		} else {
			qp->cur_pkt++;
		}
		(*sent)++;
	}
}

/* ACK timeout (9.7.6.1.3), RNR wait (9.7.5.2.8) and pacing. */
void droce_req_timers(struct droce_qp *qp, uint64_t now)
{
	if (qp->state == DROCE_QPS_ERR || qp->state == DROCE_QPS_RESET) {
		qp->rto_deadline = qp->rnr_deadline = qp->pace_deadline = 0;
		return;
	}
	if (qp->pace_deadline) {
		if (now >= qp->pace_deadline) {
			qp->pace_deadline = 0;
			droce_qp_kick(qp);
		} else {
			droce_ctx_timer_at(qp->ctx, qp->pace_deadline);
		}
	}
	if (qp->rnr_deadline) {
		if (now >= qp->rnr_deadline) {
			qp->rnr_deadline = 0;
			qp->rnr_wait = false;
			arm_rto(qp, now);
			droce_qp_kick(qp);
		} else {
			droce_ctx_timer_at(qp->ctx, qp->rnr_deadline);
		}
	}
	if (!qp->rto_deadline)
		return;
	if (now < qp->rto_deadline) {
		droce_ctx_timer_at(qp->ctx, qp->rto_deadline);
		return;
	}
	if (qp->una_psn == qp->snd_max) { /* nothing outstanding */
		qp->rto_deadline = 0;
		return;
	}
	if (qp->retry_left == 0) {
		qp->rto_deadline = 0;
		droce_qp_fail_send(qp, DROCE_WC_RETRY_EXC_ERR, 0);
		return;
	}
	qp->retry_left--;
	qp->stats.retrans_timeout++;
	droce_rtt_on_timeout(&qp->rtt); /* RFC 6298 5.5 back-off */
	qp->cc->on_loss(&qp->ccs, true, now);
	qp->gap_retry = false;
	droce_req_rewind(qp, qp->una_psn);
	arm_rto(qp, now);
}
