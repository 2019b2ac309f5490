/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (rxe_comp.c's job): matches ACKs, NAKs, READ responses and
 * atomic acknowledges to send WQEs, writes READ data and atomic results into
 * the local SGEs, completes WQEs in order, releases the window, and drives
 * retries:
 *   - an ACK or response for PSN p implicitly acknowledges every earlier PSN
 *     (IBTA 9.7.5.1.3); if that skips over a READ/atomic whose responses have
 *     not all arrived, those responses were lost: retry from the first
 *     missing response PSN (an "implicit NAK", as rxe's COMPST_ERROR_RETRY);
 *   - PSN-sequence NAK: go back to the NAK'd PSN (counts against retry_cnt);
 *   - RNR NAK: wait the time its syndrome encodes (table 45), then go back,
 *     up to rnr_retry times (7 = forever);
 *   - invalid request / remote access / remote operational NAK: the WQE
 *     completes with REM_INV_REQ_ERR / REM_ACCESS_ERR / REM_OP_ERR, the QP
 *     moves to ERR and the rest is flushed; a reserved NAK code gets
 *     REM_OP_ERR (rxe); a NAK past a READ/atomic that has no response yet
 *     is first an implicit NAK of that READ: re-issue from it (rxe
 *     check_psn, hfi1), the NAK's error is not the READ's;
 *   - a bad response (9.9.2.x: READ response for a non-READ, atomic ACK for
 *     a non-atomic, wrong FIRST/MIDDLE/LAST/ONLY opcode, a NAK syndrome in
 *     a response's AETH, a reserved AETH type) places nothing, resends
 *     nothing: BAD_RESP_ERR and ERR at once; a READ response of the wrong
 *     length: LOC_LEN_ERR (hfi1's choice; rxe differs, docs/transport.md).
 */
#include "wire/psn.h"
#include "transport/tp_int.h"
#include "transport/sr.h"
#include "wire/opcode.h"

/* IBTA table 45: RNR NAK timer field -> microseconds x 100 (0 = 655.36 ms). */
static const uint32_t rnr_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

/** RNR timer code -> nanoseconds. */
uint64_t droce_rnr_timer_ns(uint8_t code);
uint64_t droce_rnr_timer_ns(uint8_t code)
{
	return (uint64_t)rnr_10us[code & 31] * 10000u;
}

static inline bool is_rd_atomic(uint8_t op)
{
	return op == DROCE_WR_RDMA_READ || op == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* Complete the WQE at sq_una successfully (a CQE only when signaled).
 * Inline: ack_upto runs it for every message a cumulative ACK covers. */
static inline __attribute__((always_inline)) void complete_una(struct droce_qp *qp)
{
	struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
	if ((w->flags & DROCE_SEND_SIGNALED) || qp->sq_sig_all) {
		struct droce_wc wc = {
			.wr_id = w->wr_id,
			.status = DROCE_WC_SUCCESS,
			.opcode = droce_wc_opcode_of(w->opcode),
			.byte_len = w->length,
			.qp_num = qp->qpn,
		};
		droce_tp_complete(qp, qp->scq, &wc);
		if (qp->state == DROCE_QPS_ERR)
			return; /* CQ overrun flushed everything */
	}
	droce_req_wqe_done(qp);
	qp->sq_una++;
}

/*
 * Everything up to and including PSN @p p is acknowledged. Completes the
 * covered SEND/WRITE WQEs; stops at a READ/atomic still waiting for its
 * responses. @return true if such a WQE was skipped over (responses lost).
 */
static bool ack_upto(struct droce_qp *qp, uint32_t p, uint32_t *retry_psn)
{
	uint32_t np = droce_psn_add(p, 1);
	bool retry = false;

	while (qp->sq_una != qp->tp.sq_new && qp->state != DROCE_QPS_ERR) {
		struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
		if (is_rd_atomic(w->opcode)) {
			/* Only responses advance a READ/atomic. */
			if (droce_psn_diff(np, w->rd_next_psn) > 0) {
				np = w->rd_next_psn;
				if (droce_psn_diff(p, w->last_psn) >= 0) {
					retry = true;
					*retry_psn = w->rd_next_psn;
				}
			}
			break;
		}
		if (droce_psn_diff(w->last_psn, p) > 0)
			break;
		complete_una(qp);
	}
	if (qp->state != DROCE_QPS_ERR && droce_psn_diff(np, qp->tp.una_psn) > 0 &&
	    droce_psn_diff(np, qp->tp.snd_max) <= 0)
		qp->tp.una_psn = np;
	return retry;
}

static void update_acked_bseq(struct droce_qp *qp)
{
	if (qp->sq_una == qp->tp.sq_new) {
		qp->tp.acked_bseq = qp->tp.bseq_next;
		return;
	}
	const struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
	int32_t d = droce_psn_diff(qp->tp.una_psn, w->first_psn);
	uint64_t off = d > 0 ? (uint64_t)d * qp->mtu : 0;
	qp->tp.acked_bseq = w->bseq + (off < w->length ? off : w->length);
}

/* After una_psn may have moved: reset retry counters on progress (9.7.6.1.3),
 * restart the ACK timer, feed cc, keep the send cursor at or after una.
 * The single "an ACK or response covers PSNs up to una_psn - 1" point (an RTT
 * sampler hooks here). */
static void after_ack(struct droce_qp *qp, uint32_t old_una, uint64_t now)
{
	if (qp->state == DROCE_QPS_ERR)
		return;
	int32_t adv = droce_psn_diff(qp->tp.una_psn, old_una);
	if (adv > 0) {
		uint64_t old_b = qp->tp.acked_bseq;
		update_acked_bseq(qp);
		qp->tp.retry_left = qp->attr.retry_cnt;
		qp->tp.rnr_left = qp->attr.rnr_retry;
		qp->tp.gap_retry = false;
		qp->tp.went_back = false;
		qp->cc->on_ack(&qp->ccs, (uint32_t)adv, qp->tp.acked_bseq - old_b, now);
		droce_qp_rtt_ack(qp, qp->tp.acked_bseq - old_b, now); /* RTT sample, window (rtt.h) */
		droce_tmr_progress(qp, now);
	}
	if (droce_psn_diff(qp->tp.cur_psn, qp->tp.una_psn) < 0)
		droce_req_rewind(qp, qp->tp.una_psn);
	droce_tp_kick(qp);
}

/* Every go-back (NAK, gap, timeout, RNR) records where it went: until an
 * ACK moves una, a PSN-sequence NAK for that PSN reports the gap the resend
 * is repairing (see the NAK case of on_ack). */
static void went_back_to(struct droce_qp *qp, uint32_t psn)
{
	qp->tp.went_back = true;
	qp->tp.back_psn = psn;
	if (qp->transport)
		droce_sr_go_back(qp, psn); /* resend all not SACKed */
}

/* Go back to @p psn because of a NAK or a detected response gap. */
static void retry_from(struct droce_qp *qp, uint32_t psn, uint64_t now)
{
	if (qp->tp.retry_left == 0) {
		droce_tp_fail_send(qp, DROCE_WC_RETRY_EXC_ERR, 0);
		return;
	}
	qp->tp.retry_left--;
	qp->stats.retrans_nak++;
	qp->cc->on_loss(&qp->ccs, false, now);
	qp->tp.gap_retry = true;
	went_back_to(qp, psn);
	droce_req_rewind(qp, psn);
	droce_tmr_rewound(qp, now);
}

/* The ACK timer expired with PSNs outstanding and the last resend out
 * (9.7.6.1.3): count a retry, go back to the oldest unacknowledged PSN. */
void droce_comp_timeout(struct droce_qp *qp, uint64_t now)
{
	if (qp->tp.retry_left == 0) {
		droce_tp_fail_send(qp, DROCE_WC_RETRY_EXC_ERR, 0);
		return;
	}
	qp->tp.retry_left--;
	qp->stats.retrans_timeout++;
	droce_rtt_on_timeout(&qp->rtt); /* RFC 6298 5.5 back-off */
	qp->cc->on_loss(&qp->ccs, true, now);
	qp->tp.gap_retry = false;
	if (qp->transport)
		droce_sr_renege(qp);
	went_back_to(qp, qp->tp.una_psn);
	droce_req_rewind(qp, qp->tp.una_psn);
	droce_tmr_rewound(qp, now);
}

static void on_rnr(struct droce_qp *qp, uint32_t psn, uint8_t code, uint64_t now)
{
	if (qp->attr.rnr_retry != 7) { /* 7 = retry forever (9.7.5.2.8) */
		if (qp->tp.rnr_left == 0) {
			droce_tp_fail_send(qp, DROCE_WC_RNR_RETRY_EXC_ERR, DROCE_AETH_RNR_NAK | code);
			return;
		}
		qp->tp.rnr_left--;
	}
	went_back_to(qp, psn);
	droce_req_rewind(qp, psn);
	droce_tmr_rnr(qp, droce_rnr_timer_ns(code), now);
}

static enum droce_wc_status nak_status(uint8_t code)
{
	switch (code) {
	case DROCE_NAK_INVALID_REQ:
	case DROCE_NAK_INVALID_RD_REQ:
		return DROCE_WC_REM_INV_REQ_ERR;
	case DROCE_NAK_REMOTE_ACCESS:
		return DROCE_WC_REM_ACCESS_ERR;
	case DROCE_NAK_REMOTE_OP:
		return DROCE_WC_REM_OP_ERR;
	default:
		return DROCE_WC_REM_OP_ERR; /* reserved codes (table 44): as rxe */
	}
}

/* 9.9.2: a response the requester cannot have asked for is a protocol
 * error of the peer; retrying would ask again for the same answer. */
static void bad_resp(struct droce_qp *qp, enum droce_wc_status st, uint8_t opcode)
{
	droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
	droce_tp_fail_send(qp, st, opcode);
}

static void on_ack_pkt(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->h.bth.psn, old_una = qp->tp.una_psn, rpsn = 0;
	uint8_t syn = pkt->h.ext.aeth.syndrome;
	uint8_t val = syn & DROCE_AETH_VALUE_MASK;

	switch (syn & DROCE_AETH_TYPE_MASK) {
	case DROCE_AETH_ACK: {
		/* The credit field is information only: droce does not do
		 * end-to-end credits (its window is cc's). */
		qp->stats.acks_rcvd++;
		bool retry = ack_upto(qp, psn, &rpsn);
		after_ack(qp, old_una, now);
		if (retry && qp->state != DROCE_QPS_ERR && !qp->tp.gap_retry)
			retry_from(qp, rpsn, now);
		return;
	}
	case DROCE_AETH_RNR_NAK: {
		qp->stats.rnr_nak_rcvd++;
		bool retry = ack_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK), &rpsn);
		after_ack(qp, old_una, now);
		if (qp->state == DROCE_QPS_ERR)
			return;
		if (retry) {
			if (!qp->tp.gap_retry)
				retry_from(qp, rpsn, now);
			return;
		}
		on_rnr(qp, psn, val, now);
		return;
	}
	case DROCE_AETH_NAK: {
		if (val < 5)
			qp->stats.nak_rcvd[val]++;
		bool retry = ack_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK), &rpsn);
		after_ack(qp, old_una, now);
		if (qp->state == DROCE_QPS_ERR)
			return;
		if (val == DROCE_NAK_PSN_SEQ_ERR && !retry && qp->tp.went_back &&
		    psn == qp->tp.back_psn) {
			/* The gap droce already went back for, nothing ACKed
			 * since: a responder NAKs once per gap (9.7.5.2.1), so
			 * this copy was provoked by packets sent before the
			 * go-back, or is delayed. rxe follows each RNR NAK for X
			 * with a sequence NAK for X, which arrives during the RNR
			 * wait or after it, when X is on its way again (seen in
			 * the interop suite's retry-exc case). The resend already repairs
			 * it: no second rewind, no retry counted, timers as they
			 * are (the ACK timer recovers if the resend is lost). */
			qp->stats.nak_seq_dup++;
			return;
		}
		if (val == DROCE_NAK_PSN_SEQ_ERR || retry) {
			/* A NAK past a READ/atomic with no response yet says the
			 * responder saw later PSNs: that READ's response was lost.
			 * Re-issue from it; a fatal NAK comes again at its own PSN. */
			if (!retry || !qp->tp.gap_retry)
				retry_from(qp, retry ? rpsn : psn, now);
			return;
		}
		droce_tp_fail_send(qp, nak_status(val), syn);
		return;
	}
	default: /* reserved AETH type: not an answer droce can take */
		bad_resp(qp, DROCE_WC_BAD_RESP_ERR, pkt->h.bth.opcode);
		return;
	}
}

static void on_read_resp(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->h.bth.psn, old_una = qp->tp.una_psn, rpsn = 0;
	bool retry = ack_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK), &rpsn);
	if (retry) {
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR && !qp->tp.gap_retry)
			retry_from(qp, rpsn, now);
		return;
	}
	if (qp->state == DROCE_QPS_ERR || qp->sq_una == qp->tp.sq_new) {
		after_ack(qp, old_una, now);
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
		return;
	}
	struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
	if (droce_psn_diff(psn, w->first_psn) < 0 || droce_psn_diff(psn, w->last_psn) > 0) {
		after_ack(qp, old_una, now);
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
		return;
	}
	if (w->opcode != DROCE_WR_RDMA_READ) {
		/* A READ response where the oldest request is no READ. */
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR)
			bad_resp(qp, DROCE_WC_BAD_RESP_ERR, pkt->h.bth.opcode);
		return;
	}
	int32_t d = droce_psn_diff(psn, w->rd_next_psn);
	if (d < 0) {
		after_ack(qp, old_una, now);
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_STALE_RESP);
		return;
	}
	if (d > 0) {
		/* A response went missing: re-issue the READ for the rest
		 * (9.7.5.1.5), once per gap. */
		after_ack(qp, old_una, now);
		if (!qp->tp.gap_retry && qp->state != DROCE_QPS_ERR)
			retry_from(qp, w->rd_next_psn, now);
		else
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_OUT_OF_SEQ);
		return;
	}
	uint32_t idx = (uint32_t)droce_psn_diff(psn, w->first_psn);
	uint32_t off = idx * qp->mtu;
	uint32_t left = w->length > off ? w->length - off : 0;
	uint32_t expect = left < qp->mtu ? left : qp->mtu;
	bool last = psn == w->last_psn;
	uint16_t f = pkt->op->flags;
	bool op_ok = last ? (f & DROCE_OPF_LAST) != 0 : !(f & DROCE_OPF_LAST);
	/* FIRST, LAST and ONLY carry an AETH: it must say ACK (9.7.5.1.2). */
	bool nak = (pkt->op->hdrs & DROCE_HDR_AETH) &&
		   (pkt->h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK;
	if (!op_ok || nak || pkt->h.payload_len != expect) {
		after_ack(qp, old_una, now);
		if (qp->state == DROCE_QPS_ERR)
			return;
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_BAD_RESP_LEN);
		droce_tp_fail_send(qp, op_ok && !nak ? DROCE_WC_LOC_LEN_ERR : DROCE_WC_BAD_RESP_ERR,
				   pkt->h.bth.opcode);
		return;
	}
	if (expect && !droce_segs_live(qp->ctx, w->seg, w->nseg)) {
		/* The READ's local buffer was deregistered: nothing placed,
		 * LOC_PROT_ERR (10.7.3.1), the QP to ERR. */
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR)
			droce_tp_fail_send(qp, DROCE_WC_LOC_PROT_ERR, 0);
		return;
	}
	droce_seg_copy_in(w->seg, w->nseg, off, pkt->payload, expect);
	w->rd_next_psn = droce_psn_add(psn, 1);
	qp->tp.una_psn = w->rd_next_psn;
	if (last)
		complete_una(qp);
	after_ack(qp, old_una, now);
}

static void on_atomic_ack(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->h.bth.psn, old_una = qp->tp.una_psn, rpsn = 0;
	bool retry = ack_upto(qp, droce_psn_add(psn, DROCE_PSN_MASK), &rpsn);
	if (retry) {
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR && !qp->tp.gap_retry)
			retry_from(qp, rpsn, now);
		return;
	}
	struct droce_swqe *w = qp->sq_una != qp->tp.sq_new ? &qp->sq[qp->sq_una & qp->sq_mask] : NULL;
	if (qp->state != DROCE_QPS_ERR && w && droce_psn_diff(psn, w->first_psn) >= 0 &&
	    droce_psn_diff(psn, w->last_psn) <= 0 &&
	    ((w->opcode != DROCE_WR_ATOMIC_CMP_AND_SWP && w->opcode != DROCE_WR_ATOMIC_FETCH_AND_ADD) ||
	     (pkt->h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK)) {
		/* An atomic ACK for a request that is no atomic, or one that
		 * says NAK: a bad response. */
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR)
			bad_resp(qp, DROCE_WC_BAD_RESP_ERR, pkt->h.bth.opcode);
		return;
	}
	if (qp->state == DROCE_QPS_ERR || !w ||
	    (w->opcode != DROCE_WR_ATOMIC_CMP_AND_SWP && w->opcode != DROCE_WR_ATOMIC_FETCH_AND_ADD) ||
	    psn != w->first_psn || w->rd_next_psn != psn) {
		after_ack(qp, old_una, now);
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
		return;
	}
	uint64_t orig = pkt->h.ext.atomic_ack;
	if (!droce_segs_live(qp->ctx, w->seg, w->nseg)) {
		after_ack(qp, old_una, now);
		if (qp->state != DROCE_QPS_ERR)
			droce_tp_fail_send(qp, DROCE_WC_LOC_PROT_ERR, 0);
		return;
	}
	if (w->nseg)
		memcpy(w->seg[0].ptr, &orig, sizeof(orig)); /* host order, as verbs */
	w->rd_next_psn = droce_psn_add(psn, 1);
	qp->tp.una_psn = w->rd_next_psn;
	complete_una(qp);
	after_ack(qp, old_una, now);
}

void droce_comp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	if (qp->state != DROCE_QPS_RTS && qp->state != DROCE_QPS_SQD &&
	    qp->state != DROCE_QPS_SQE) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_QP_STATE);
		return;
	}
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += pkt->h.payload_len;
	if (pkt->h.net.ecn == 3)
		droce_tp_ecn_ce(qp, now); /* READ responses: we are the notification point */
	uint32_t psn = pkt->h.bth.psn;
	if (droce_psn_diff(psn, qp->tp.snd_max) >= 0) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_GHOST_RESP);
		return;
	}
	if (pkt->h.payload_len && pkt->h.bth.opcode == DROCE_OP_RC_ACKNOWLEDGE) {
		/* An ACK with droce's SACK block (the parser lets no other ACK
		 * body through): only a QP that agreed to selective repeat
		 * takes it. Its cumulative part may be older than una (the
		 * ACK for the PSN before a hole); the bitmap is news anyway. */
		struct droce_sack s;
		if (!qp->transport || !droce_sack_parse(pkt->payload, pkt->h.payload_len, &s)) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
			return;
		}
		if (droce_psn_diff(psn, qp->tp.una_psn) >= 0)
			on_ack_pkt(qp, pkt, now);
		if (qp->state == DROCE_QPS_RTS || qp->state == DROCE_QPS_SQD)
			droce_sr_on_sack(qp, psn, &s, now);
		return;
	}
	if (droce_psn_diff(psn, qp->tp.una_psn) < 0) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_STALE_RESP);
		return;
	}
	uint16_t f = pkt->op->flags;
	if (f & DROCE_OPF_ACK)
		on_ack_pkt(qp, pkt, now);
	else if (f & DROCE_OPF_READ)
		on_read_resp(qp, pkt, now);
	else if (f & DROCE_OPF_ATOMIC)
		on_atomic_ack(qp, pkt, now);
	else
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_UNEXPECTED_RESP);
}

void droce_comp_cnp(struct droce_qp *qp, uint64_t now)
{
	qp->stats.cnp_rcvd++;
	qp->cc->on_cnp(&qp->ccs, now);
}
