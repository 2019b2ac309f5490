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
 *
 * The send cursor (sq_cur, cur_pkt, cur_psn) moves in three places only:
 * advance() after a packet left, droce_req_rewind(), and
 * droce_req_wqe_done() when the completer retires the WQE under it.
 * sent_one() is also the single "request packet sent" point (cc on_sent, the
 * ACK timer; an RTT sampler hooks there).
 */
#include <errno.h>

#include "wire/psn.h"
#include "transport/tp_int.h"
#include "transport/spray.h"
#include "transport/sr.h"
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
	/* A shift, not a divide (tens of cycles) on every message. */
	return w->length ? (w->length + qp->mtu - 1) >> qp->mtu_shift : 1;
}

void droce_req_reset(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	t->sq_cur = t->sq_new = qp->sq_una; /* RESET: 0; ERR: past everything flushed */
	t->cur_pkt = 0;
	t->cur_psn = t->npsn = t->snd_max = t->una_psn = 0;
	t->bseq_next = t->acked_bseq = 0;
	t->rd_inflight = 0;
	t->pkts_since_ackreq = 0;
	t->retry_left = t->rnr_left = 0;
	t->gap_retry = t->went_back = false;
	t->back_psn = 0;
	t->tmr.state = DROCE_TMR_IDLE;
	t->tmr.resend_pending = false;
	t->tmr.held = false;
	t->tmr.at = t->tmr.pace_at = 0;
}



static uint32_t count_rd_inflight(const struct droce_qp *qp)
{
	uint32_t n = 0;
	for (uint32_t i = qp->sq_una; i != qp->tp.sq_cur; i++)
		n += is_rd_atomic(qp->sq[i & qp->sq_mask].opcode);
	return n;
}

void droce_req_rewind(struct droce_qp *qp, uint32_t psn)
{
	uint32_t i;
	for (i = qp->sq_una; i != qp->tp.sq_new; i++) {
		const struct droce_swqe *w = &qp->sq[i & qp->sq_mask];
		if (droce_psn_diff(psn, w->first_psn) >= 0 && droce_psn_diff(psn, w->last_psn) <= 0)
			break;
	}
	qp->tp.sq_cur = i;
	if (i != qp->tp.sq_new) {
		const struct droce_swqe *w = &qp->sq[i & qp->sq_mask];
		qp->tp.cur_pkt = (uint32_t)droce_psn_diff(psn, w->first_psn);
		qp->tp.cur_psn = psn;
	} else {
		qp->tp.cur_pkt = 0;
		qp->tp.cur_psn = qp->tp.npsn;
	}
	qp->tp.rd_inflight = count_rd_inflight(qp);
	qp->tp.pkts_since_ackreq = 0;
	droce_rtt_on_rewind(&qp->rtt, psn); /* Karn: PSNs from here are sent again */
	droce_tp_kick(qp);
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

/* The cursor past the packet that just left: the next packet of the WQE,
 * or the next WQE after its last one. */
static void advance(struct droce_qp *qp, uint32_t next_psn, bool last, bool rda)
{
	struct droce_tp *t = &qp->tp;
	t->cur_psn = next_psn;
	if (last) {
		t->sq_cur++;
		t->cur_pkt = 0;
		if (rda)
			t->rd_inflight++;
	} else {
		t->cur_pkt++;
	}
}

/* A request packet carrying PSNs up to @p next_psn - 1 left. */
static void sent_one(struct droce_qp *qp, const struct droce_hdrs *h, uint32_t next_psn, uint64_t now)
{
	struct droce_tp *t = &qp->tp;
	if (droce_psn_diff(t->cur_psn, t->snd_max) < 0) {
		qp->stats.retrans_pkts++;
		if (droce_psn_diff(next_psn, t->snd_max) > 0)
			t->snd_max = next_psn;
	} else {
		t->snd_max = next_psn;
		if (h->bth.ack_req) /* RTT: time fresh AckReq packets only (rtt.h) */
			droce_rtt_on_send(&qp->rtt, t->cur_psn, now);
	}
	t->pkts_since_ackreq = h->bth.ack_req ? 0 : t->pkts_since_ackreq + 1;
	if (qp->cc->on_sent)
		qp->cc->on_sent(&qp->ccs, h->payload_len, now);
	droce_tmr_sent(qp, now);
}

enum droce_tx_result droce_req_tx(struct droce_qp *qp, uint64_t now, unsigned quota,
				  unsigned *sent)
{
	*sent = 0;
	if ((qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD) || droce_tmr_in_rnr(qp) ||
	    qp->tp.tmr.pace_at)
		return DROCE_TX_IDLE;

	/* The connection's headers, copied once per turn, not per packet (the
	 * template is some 170 bytes). Each packet sets every field its opcode
	 * writes (PSN, opcode, AckReq, length, and the extension headers the
	 * opcode table names), and SE is put back below: nothing of one packet
	 * leaks into the next. */
	struct droce_hdrs h = qp->tmpl;
	for (;;) {
		if (qp->tp.sq_cur == qp->sq_tail)
			return DROCE_TX_IDLE;
		struct droce_swqe *w = &qp->sq[qp->tp.sq_cur & qp->sq_mask];
		bool fresh = qp->tp.sq_cur == qp->tp.sq_new;
		bool rda = is_rd_atomic(w->opcode);

		if (w->status != DROCE_WC_SUCCESS) {
			/* Bad lkey found at post: complete it in order, then ERR. */
			if (qp->tp.sq_cur == qp->sq_una)
				droce_tp_fail_send(qp, (enum droce_wc_status)w->status, 0);
			return DROCE_TX_IDLE;
		}
		if (qp->tp.cur_pkt == 0) {
			if (fresh && qp->state == DROCE_QPS_SQD)
				return DROCE_TX_IDLE; /* SQD: no new message starts */
			uint32_t max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
			if (rda && qp->tp.rd_inflight >= max_rd)
				return DROCE_TX_IDLE;
			if ((w->flags & DROCE_SEND_FENCE) && qp->tp.rd_inflight)
				return DROCE_TX_IDLE;
		}
		if (qp->transport) {
			/* Selective repeat (sr.h): a resend passes over what the
			 * responder SACKed; new packets wait for the BDP cap. */
			if (droce_psn_diff(qp->tp.cur_psn, qp->tp.snd_max) < 0 && !fresh) {
				enum droce_sr_tx a = droce_sr_tx_check(qp, qp->tp.cur_psn);
				if (a == DROCE_SR_JUMP) {
					droce_req_rewind(qp, qp->tp.snd_max);
					continue;
				}
				if (a == DROCE_SR_SKIP && !rda) {
					advance(qp, droce_psn_add(qp->tp.cur_psn, 1),
						qp->tp.cur_pkt + 1 >= w->npkts, false);
					continue;
				}
			} else {
				if (droce_psn_diff(qp->tp.cur_psn, qp->tp.snd_max) >= 0)
					droce_sr_tx_new(qp);
				uint32_t fl = (uint32_t)droce_psn_diff(qp->tp.snd_max, qp->tp.una_psn);
				if (fl && fl >= droce_sr_flight(qp))
					return DROCE_TX_IDLE; /* the completer kicks us on the next ACK */
			}
		}
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (fresh) {
			w->npkts = wqe_npkts(qp, w);
			w->first_psn = qp->tp.npsn;
			w->last_psn = droce_psn_add(qp->tp.npsn, w->npkts - 1);
			w->rd_next_psn = w->first_psn;
			w->bseq = qp->tp.bseq_next;
			qp->tp.bseq_next += w->length;
			qp->tp.npsn = droce_psn_add(w->last_psn, 1);
			qp->tp.sq_new++;
		}

		/* Window and pacing (cc/): bytes are the message bytes this PSN carries. */
		uint32_t off = qp->tp.cur_pkt * qp->mtu;
		uint32_t plen = 0;
		if (!rda && w->length > off)
			plen = w->length - off < qp->mtu ? w->length - off : qp->mtu;
		uint32_t inflight = (uint32_t)droce_psn_diff(qp->tp.cur_psn, qp->tp.una_psn);
		uint64_t cur_bseq = w->bseq + (off < w->length ? off : w->length);
		uint32_t wbytes = rda ? w->length - (off < w->length ? off : w->length) : plen;
		if (inflight && !qp->cc->can_send(&qp->ccs, inflight, cur_bseq - qp->tp.acked_bseq,
						  wbytes, now))
			return DROCE_TX_IDLE; /* the completer kicks us when ACKs open it */
		uint64_t t = qp->cc->next_send_time(&qp->ccs, now);
		if (t > now) {
			droce_tmr_pace(qp, t);
			return DROCE_TX_IDLE;
		}

		struct droce_seg seg[DROCE_TX_MAX_SEG];
		unsigned nseg = 0;
		bool last;
		uint32_t next_psn;
		h.bth.psn = qp->tp.cur_psn;
		h.bth.se = qp->tmpl.bth.se;
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
			bool first = qp->tp.cur_pkt == 0;
			last = qp->tp.cur_pkt + 1 >= w->npkts;
			bool imm = w->opcode == DROCE_WR_SEND_WITH_IMM ||
				   w->opcode == DROCE_WR_RDMA_WRITE_WITH_IMM;
			bool send = w->opcode == DROCE_WR_SEND || w->opcode == DROCE_WR_SEND_WITH_IMM;
			h.bth.opcode = send ? send_opcode(first, last, imm) : write_opcode(first, last, imm);
			if (!send && first) {
				h.ext.reth.va = w->remote_addr;
				h.ext.reth.rkey = w->rkey;
				h.ext.reth.dma_len = w->length;
			}
			if (!send && qp->transport) {
				/* Selective repeat: every WRITE packet a WRITE_ONLY
				 * with its own RETH, placed wherever it arrives
				 * (docs/wire.md). With immediate, the last packet's
				 * RETH names the whole message, its payload the tail. */
				bool tail = imm && last;
				h.bth.opcode = tail ? DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
						    : DROCE_OP_RC_RDMA_WRITE_ONLY;
				h.ext.reth.va = w->remote_addr + (tail ? 0 : off);
				h.ext.reth.rkey = w->rkey;
				h.ext.reth.dma_len = tail ? w->length : plen;
			}
			if (imm && last)
				h.ext.imm = w->imm;
			/* 9.2.3: SE on the last packet of a solicited SEND or
			 * RDMA WRITE with immediate (the ones that complete a
			 * receive WQE); a plain WRITE consumes none. */
			if (last && (send || imm) && (w->flags & DROCE_SEND_SOLICITED))
				h.bth.se = true;
			/* The local buffer must still be the registration it was
			 * posted under (10.6.3.2): one compare per segment. A
			 * deregistered one completes the WQE with LOC_PROT_ERR, in
			 * order, and nothing more of it is read. */
			if (plen && !droce_segs_live(qp->ctx, w->seg, w->nseg)) {
				w->status = DROCE_WC_LOC_PROT_ERR;
				if (qp->tp.sq_cur == qp->sq_una)
					droce_tp_fail_send(qp, DROCE_WC_LOC_PROT_ERR, 0);
				return DROCE_TX_IDLE;
			}
			h.payload_len = plen;
			nseg = droce_seg_slice(w->seg, w->nseg, off, plen, seg);
			next_psn = droce_psn_add(qp->tp.cur_psn, 1);
			break;
		}
		}
		/* 9.7.2: AckReq on the last packet of a message, and every N packets
		 * so a long message is acknowledged (and its window freed) as it goes. */
		h.bth.ack_req = last || qp->tp.pkts_since_ackreq + 1 >= DROCE_DEFAULT_ACK_REQ_EVERY;

		if (qp->transport == DROCE_TRANSPORT_SR_SPRAY)
			h.net.sport = droce_sr_sport(qp, h.bth.psn, now); /* spraying (spray.c) */
		int rc = droce_tp_xmit(qp, &h, seg, nseg, now);
		if (rc == -ENOBUFS)
			return DROCE_TX_BUSY;
		/* Any other error: the frame is lost; retransmission recovers. */
		sent_one(qp, &h, next_psn, now);
		advance(qp, next_psn, last, rda);
		(*sent)++;
	}
}
