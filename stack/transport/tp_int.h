/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls between the transport's own files (requester, responder, completer,
 * timer, transmit, completion/ERR). Nothing outside stack/transport includes
 * it; core/ sees only transport/tp.h.
 */
#ifndef DROCE_TRANSPORT_TP_INT_H
#define DROCE_TRANSPORT_TP_INT_H

#include "model/model.h"
#include "transport/tp.h"

/** Ask core to give @p qp a turn on the link (read by core after each call). */
static inline void droce_tp_kick(struct droce_qp *qp)
{
	qp->tp.kick = true;
}

static inline bool droce_is_rd_atomic(uint8_t op)
{
	return op == DROCE_WR_RDMA_READ || op == DROCE_WR_ATOMIC_CMP_AND_SWP ||
	       op == DROCE_WR_ATOMIC_FETCH_AND_ADD;
}

/* xmit.c: build and send one frame of @p qp. @return 0 or -ENOBUFS (or another error: lost). */
int droce_tp_xmit(struct droce_qp *qp, const struct droce_hdrs *h, const struct droce_seg *seg,
		  unsigned nseg, uint64_t now);
/* xmit.c: a frame whose @p len bytes after the headers (a multiple of 4,
 * copied: droce's SACK block, wire/sack.h) travel with the headers. */
int droce_tp_xmit_tail(struct droce_qp *qp, const struct droce_hdrs *h, const uint8_t *tail,
		       uint32_t len, uint64_t now);

/* error.c: completions and the move to ERR */
/** Post @p wc into @p cq; a full CQ moves the QP to ERR (11.4.2.1 CQ overrun). */
void droce_tp_complete(struct droce_qp *qp, struct droce_cq *cq, const struct droce_wc *wc);
/** Complete the send WQE at sq_una with @p status, then ERR and flush. */
void droce_tp_fail_send(struct droce_qp *qp, enum droce_wc_status status, uint32_t vendor_err);

/* requester.c: the send cursor moves here only */
enum droce_tx_result droce_req_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent);
/** Go back to @p psn (go-back-N, 9.7.6): the cursor on the WQE and packet that carry it. */
void droce_req_rewind(struct droce_qp *qp, uint32_t psn);
/** The completer retired the WQE at sq_una: READ/atomic accounting, the
 * cursor past it if it was still on it (per completion: inline). */
static inline void droce_req_wqe_done(struct droce_qp *qp)
{
	const struct droce_swqe *w = &qp->sq[qp->sq_una & qp->sq_mask];
	if (droce_is_rd_atomic(w->opcode) && qp->sq_una != qp->tp.sq_cur && qp->tp.rd_inflight)
		qp->tp.rd_inflight--;
	if (qp->tp.sq_cur == qp->sq_una) {
		qp->tp.sq_cur++;
		qp->tp.cur_pkt = 0;
	}
}
void droce_req_reset(struct droce_qp *qp);

/* responder.c */
void droce_resp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now);
enum droce_tx_result droce_resp_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent);
void droce_resp_reset(struct droce_qp *qp);

/* recv.c: the receive WQE the next message consumes */
/**
 * Make sure @p qp has a receive WQE at rq_head: its own RQ's, or for a QP
 * on an SRQ the SRQ's oldest, moved into the QP's one-slot RQ (the limit
 * event is raised here). @return false when there is none (RNR for RC).
 */
bool droce_rq_next(struct droce_qp *qp);

/* ud.c: UD and GSI QPs (IBTA 9.8.4) */
enum droce_tx_result droce_ud_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent);
void droce_ud_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now);

/* completer.c */
void droce_comp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now);
void droce_comp_cnp(struct droce_qp *qp, uint64_t now);
/** ACK timer expired with PSNs outstanding (timer.c decides when). */
void droce_comp_timeout(struct droce_qp *qp, uint64_t now);

/* timer.c: the one retransmission timer state machine of a QP */
/** IDLE -> ACK from @p now (IDLE again when the QP has no ACK timeout). */
void droce_tmr_arm_ack(struct droce_qp *qp, uint64_t now);
/** A request packet left: the ACK timer runs if it was idle (per packet: inline). */
static inline void droce_tmr_sent(struct droce_qp *qp, uint64_t now)
{
	qp->tp.tmr.resend_pending = false;
	qp->tp.tmr.held = false;
	if (qp->tp.tmr.state == DROCE_TMR_IDLE)
		droce_tmr_arm_ack(qp, now);
}
/** The oldest unacknowledged PSN moved: restart, or stop when nothing is outstanding. */
void droce_tmr_progress(struct droce_qp *qp, uint64_t now);
/** A NAK or a response gap rewound the cursor: ACK timer from now, the resend not yet out. */
void droce_tmr_rewound(struct droce_qp *qp, uint64_t now);
/** An RNR NAK: wait @p ns with the ACK timer stopped. */
void droce_tmr_rnr(struct droce_qp *qp, uint64_t ns, uint64_t now);
/** The congestion controller asks to send nothing before @p t. */
void droce_tmr_pace(struct droce_qp *qp, uint64_t t);
static inline bool droce_tmr_in_rnr(const struct droce_qp *qp)
{
	return qp->tp.tmr.state == DROCE_TMR_RNR;
}

/* window.c: an ACK moved una_psn, @p bytes newly acknowledged: take the
 * RTT sample (cc's on_rtt) and, with window_tune, follow the measured BDP. */
void droce_qp_rtt_ack(struct droce_qp *qp, uint64_t bytes, uint64_t now);

/** A packet arrived with ECN CE (A17.9): count it, queue a CNP (rate-limited). */
void droce_tp_ecn_ce(struct droce_qp *qp, uint64_t now);

#endif
