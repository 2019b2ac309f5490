/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's per-QP state (requester, responder, completer, the one
 * timer), embedded in the QP as qp->tp. Only transport/ writes it; core/
 * reads the deadline (droce_tp_deadline) and the kick flag after each call
 * into the transport, and the constants for modify_qp's checks.
 */
#ifndef DROCE_MODEL_TP_H
#define DROCE_MODEL_TP_H

#include <stdbool.h>
#include <stdint.h>

#include "model/seg.h"

/** Largest max_rd_atomic / max_dest_rd_atomic accepted by modify_qp. */
#define DROCE_QP_MAX_RD_ATOMIC 32u
/** Responder READ/atomic response jobs queued (originals plus duplicates). */
#define DROCE_RESP_JOBS 64u

enum droce_res_type { DROCE_RES_NONE, DROCE_RES_READ, DROCE_RES_ATOMIC };

/** Responder memory of a READ/atomic request (duplicate detection, replay). */
struct droce_rd_res {
	uint8_t type;
	uint32_t first_psn, last_psn;
	uint64_t orig;          /* atomic: the value returned */
	uint32_t rkey, len;     /* READ: the original request's R_Key and range, */
	uint64_t va;            /* which a duplicate must stay within (rxe) */
};

/** A queued READ response stream or atomic acknowledge. */
struct droce_resp_job {
	uint8_t type;
	bool started;           /* first packet sent (FIRST vs MIDDLE) */
	uint32_t psn;           /* next PSN to send */
	uint32_t last_psn;
	bool dup;               /* answers a duplicate request */
	const uint8_t *ptr;     /* READ: next byte */
	struct droce_mr_ref mr; /* READ: the registration ptr is in (checked per packet) */
	uint32_t left;          /* READ: bytes still to send */
	uint64_t orig;          /* atomic: original value */
	uint32_t msn;           /* MSN the response carries: the responder's MSN once
				   this request was executed (9.7.5.1.1), not when the
				   queue drains */
};

/**
 * The retransmission timer (timer.c): one state at a time, so the ACK
 * timeout never runs during an RNR wait (9.7.5.2.8 / 9.7.6.1.3).
 *   IDLE: nothing outstanding, or a rewind waiting to be sent;
 *   ACK:  `at` is the local ACK timeout of the oldest unacknowledged PSN;
 *   RNR:  `at` is the end of the RNR wait; the requester sends nothing.
 * `pace_at` is the congestion controller's next send time (independent of
 * the state: a gate, not a retransmission).
 */
enum droce_tmr_state { DROCE_TMR_IDLE, DROCE_TMR_ACK, DROCE_TMR_RNR };

struct droce_tp_timer {
	uint8_t state;            /* enum droce_tmr_state */
	bool held;                /* an expiry came with the resend still not out: the
				     next one counts (a link that takes nothing, as a
				     memif whose peer died, must not hold the QP in RTS
				     for ever) */
	bool resend_pending;      /* rewound, the first resent packet has not left yet:
				     the first expiry then counts no retry */
	uint64_t at;              /* ACK or RNR deadline; 0 in IDLE */
	uint64_t from;            /* when the ACK timer last ran from (shifted by pauses) */
	uint64_t paused0;         /* the link's paused time when the ACK timer last ran
				     from (timer.c: paused time does not count) */
	uint64_t pace_at;         /* 0 = no pacing wait */
};

/** Selective repeat's bitmaps (transport/sr.c), PSN-relative, 64 bits a word. */
#define DROCE_SR_WORDS 4u
#define DROCE_SR_BITS (DROCE_SR_WORDS * 64u)
/** sr-spray: UDP source ports (ECMP entropy values) a QP spreads its packets over. */
#define DROCE_SR_PATHS 8u
/** WRITEs with immediate a selective-repeat responder holds placed ahead of ePSN. */
#define DROCE_SR_IMM 16u

/** Selective repeat's per-QP state (transport/sr.c, spray.c): allocated
 * when a QP chooses sr or sr-spray (droce_tp_fit), so the many go-back-N
 * QPs of a comm core carry none of it. */
struct droce_tp_sr {
	/* responder: bit i = PSN rx_base + i placed out of order */
	uint64_t rx_map[DROCE_SR_WORDS];
	uint32_t rx_base;             /* the PSN of bit 0 (ePSN once caught up) */
	uint32_t rx_hi;               /* one past the highest PSN seen */
	struct {                      /* WRITE with immediate placed ahead: completes in order */
		uint32_t psn, imm, len;
		bool used;
	} rx_imm[DROCE_SR_IMM];
	/* requester: bit i = PSN tx_base + i SACKed by the responder */
	uint64_t tx_map[DROCE_SR_WORDS];
	uint32_t tx_base;             /* una_psn once caught up */
	uint32_t peer_hi;             /* the responder's rx_hi, as last reported */
	uint32_t resent_to;           /* holes below it were resent in this round */
	uint32_t resend_end;          /* a SACK round resends holes below it, then jumps to snd_max */
	bool round;                   /* a SACK round is under way (else a go-back resends
					 every un-SACKed PSN up to snd_max) */
	/* sr-spray: PSN p leaves on path p % DROCE_SR_PATHS, i.e. UDP source port path_sport[] */
	uint16_t path_sport[DROCE_SR_PATHS];
	uint8_t lost_path, lost_streak; /* the path of the last resend, resends in a row on it */
	uint16_t path_gen;            /* re-draws so far (the next draw's input) */
	/* sr-spray's time-based loss detection (RFC 8985's RACK, spray.c):
	 * per PSN of the flight (the flight is capped at DROCE_SR_BITS, so
	 * PSN p has slot p % DROCE_SR_BITS to itself) */
	uint64_t tx_ts[DROCE_SR_BITS];    /* when PSN p was last sent */
	uint64_t tx_again[DROCE_SR_WORDS]; /* p was sent more than once: its delivery is ambiguous */
	uint64_t dl_seen[DROCE_SR_WORDS];  /* p's delivery was taken as a sample already */
	uint32_t dl_una;              /* PSNs below it are sampled and their slots free */
	uint64_t rack_ts;             /* send time of the most recently sent packet delivered */
	uint64_t rack_rtt;            /* ... and its RTT */
	uint8_t reo_mult;             /* reordering window = min RTT x reo_mult / 4 */
	uint8_t reo_calm;             /* loss rounds since the window last grew */
	uint64_t path_wait[DROCE_SR_PATHS]; /* send time of the oldest packet on path i
					   not known delivered (0: none out) */
	uint64_t path_sent[DROCE_SR_PATHS]; /* last send on path i */
	uint64_t path_rtt[DROCE_SR_PATHS];  /* path i's smoothed RTT (0: no sample) */
	uint64_t path_moved[DROCE_SR_PATHS]; /* packets sent on path i before this took its old port */
	uint64_t slow_move_at;        /* when a path last moved for its RTT */
};

/** A responder's READ/atomic state (9.7.5.1.x: what the requester may
 * still retry, and the responses being sent): allocated when the QP first
 * accepts READs or atomics (max_dest_rd_atomic > 0, droce_tp_fit). */
struct droce_tp_rd {
	struct droce_rd_res res[DROCE_QP_MAX_RD_ATOMIC];
	struct droce_resp_job jobs[DROCE_RESP_JOBS];
};

/**
 * The transport's per-QP state. droce_tp_reset() puts all of it back.
 * What every packet of a go-back-N WRITE/SEND stream touches stays here;
 * the state of selective repeat and of READ/atomic responses hangs off it
 * (sr, rd), so 10 k QPs' hot state is not spread over 10 k x 10 KB.
 */
struct droce_tp {
	/* ---- requester ---- */
	uint32_t sq_cur;              /* WQE being (re)transmitted */
	uint32_t sq_new;              /* first WQE never transmitted */
	uint32_t cur_pkt;             /* packet index inside sq_cur */
	uint32_t cur_psn;             /* PSN of the next packet to transmit */
	uint32_t npsn;                /* next PSN for a new WQE */
	uint32_t snd_max;             /* one past the highest PSN ever sent */
	uint32_t una_psn;             /* oldest unacknowledged PSN */
	uint64_t bseq_next, acked_bseq; /* byte sequence: next new byte, first unACKed byte */
	uint32_t rd_inflight;         /* READ/atomic sent, not complete */
	uint32_t pkts_since_ackreq;
	uint8_t retry_left, rnr_left;
	bool gap_retry;               /* a re-issue for a response gap is under way */
	bool went_back;               /* went back to back_psn (NAK, timeout, RNR), nothing ACKed since */
	uint32_t back_psn;
	struct droce_tp_timer tmr;

	/* ---- responder ---- */
	uint32_t epsn, msn;
	uint32_t ack_psn;             /* one past the last SEND/WRITE/atomic executed (rq_psn
					 at RTR): a duplicate SEND/WRITE is re-ACKed with
					 ack_psn - 1, never a READ's PSN (rxe resp.ack_psn) */
	uint16_t in_msg;              /* 0, or DROCE_OPF_SEND / DROCE_OPF_WRITE of the message in progress */
	uint32_t recv_off;            /* SEND: bytes placed in rq_head's WQE */
	uint8_t *wr_ptr;              /* WRITE: next byte */
	struct droce_mr_ref wr_mr;    /* WRITE: the registration wr_ptr is in (checked per packet) */
	uint32_t wr_left, wr_len;
	bool nak_gap;                 /* a NAK (seq or RNR) was sent for the current gap */
	bool resp_err;                /* a fatal NAK is pending: then ERR */
	bool ack_pending;             /* one coalesced ACK owed, for pend_ack_psn (9.7.5.1.1) */
	uint32_t pend_ack_psn;
	bool nak_pending;             /* NAK (sequence, RNR or fatal) for nak_psn */
	uint8_t nak_syndrome;
	uint32_t nak_psn;
	uint32_t nak_msn;             /* the MSN when the NAK was queued */
	bool cnp_pending;
	uint64_t last_cnp;
	struct droce_tp_rd *rd;       /* NULL until max_dest_rd_atomic > 0 */
	uint32_t res_next;
	uint8_t res_size;             /* max_dest_rd_atomic the ring was started with */
	uint32_t job_head, job_tail;  /* free-running */
	uint32_t jobs_new;            /* original (non-duplicate) READ/atomic jobs queued */

	/* ---- selective repeat (transport/sr.c) ---- */
	struct droce_tp_sr *sr;       /* NULL until the QP chooses sr or sr-spray */

	/* ---- scheduling ---- */
	bool kick;                    /* has output: core puts the QP on its ready list */
	bool resp_first;              /* whose turn leads on the link next (fair sharing) */
};


/** Earliest armed deadline of the transport @p t, or UINT64_MAX. */
static inline uint64_t droce_tp_deadline(const struct droce_tp *t)
{
	uint64_t d = t->tmr.state != DROCE_TMR_IDLE ? t->tmr.at : UINT64_MAX;
	if (t->tmr.pace_at && t->tmr.pace_at < d)
		d = t->tmr.pace_at;
	return d;
}

#endif
