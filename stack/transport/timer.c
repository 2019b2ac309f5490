/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One retransmission timer per QP, a small state machine:
 *
 *   IDLE --packet sent--> ACK --progress, all ACKed--> IDLE
 *   ACK  --progress-----> ACK (restarted, 9.7.6.1.3)
 *   ACK  --expires------> retry (completer): rewind, ACK from now; or
 *                         RETRY_EXC_ERR when retry_cnt is spent
 *   any  --RNR NAK------> RNR (the ACK timeout does not run while the
 *                         responder asked us to wait, 9.7.5.2.8)
 *   RNR  --expires------> IDLE, resend; ACK starts when that packet leaves
 *
 * An ACK expiry while a rewind's first packet has not left yet (the link or
 * the scheduler held it) counts no retry: it re-arms and waits, so a link
 * busy for a moment costs no retry. A second expiry in a row with the
 * packet still not out counts as a timeout (9.7.6.1.3): a whole ACK timeout
 * in which the link took nothing is a path that does not work, and without
 * this a QP whose link refuses every frame for good (a memif whose peer
 * died: its ring stays full, every transmission is -ENOBUFS) stayed in RTS
 * with its work outstanding for ever instead of completing RETRY_EXC_ERR.
 *
 * The adaptive timeout (docs/cc.md) leaves out the time the link spent
 * paused by PFC, and is IRN's RTO_low only with few packets outstanding
 * and no pause lately, RTO_high otherwise (cc/rtt.h): both are looked at
 * again when the timer expires, as the timer runs from `from`.
 *
 * Pacing (`pace_at`) is the congestion controller's gate on the next send,
 * kept here so the QP has a single deadline for core/ to watch.
 */
#include "wire/psn.h"
#include "transport/tp_int.h"

/* The ACK timeout to arm now: the IBTA value, or RFC 6298's from the
 * measured RTT with that value as ceiling (cc/rtt.h). 0 = no timer. */
static inline uint64_t rto_of(const struct droce_qp *qp)
{
	uint8_t m = qp->timeout_mode ? qp->timeout_mode : qp->ctx->p.timeout_mode;
	return droce_rtt_timeout(&qp->rtt, m == DROCE_TIMEOUT_ADAPTIVE, qp->ctx->p.rto_min_ns,
				 DROCE_DEFAULT_RTO_INIT_NS, qp->timeout_ns);
}

uint64_t droce_tp_rto(const struct droce_qp *qp)
{
	return rto_of(qp);
}

/* The timeout that holds at @p now: the adaptive one raised to RTO_high
 * with many packets outstanding or the link paused within RTO_high. */
static uint64_t rto_now(const struct droce_qp *qp, uint64_t now)
{
	uint64_t rto = rto_of(qp);
	uint8_t m = qp->timeout_mode ? qp->timeout_mode : qp->ctx->p.timeout_mode;
	if (!rto || m != DROCE_TIMEOUT_ADAPTIVE)
		return rto;
	const struct droce_ctx *ctx = qp->ctx;
	uint64_t high = ctx->p.rto_high_ns;
	bool paused = ctx->link_paused_at && now - ctx->link_paused_at < high;
	uint32_t out = (uint32_t)droce_psn_diff(qp->tp.snd_max, qp->tp.una_psn);
	return droce_rtt_timeout_irn(rto, out, paused, high, qp->timeout_ns);
}

static void arm_ack(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp_timer *t = &qp->tp.tmr;
	uint64_t rto = rto_now(qp, now);
	if (!rto) {
		t->state = DROCE_TMR_IDLE;
		t->at = 0;
		return;
	}
	t->state = DROCE_TMR_ACK;
	t->at = now + rto;
	t->from = now;
	t->paused0 = qp->ctx->link_paused_ns;
}

void droce_tmr_arm_ack(struct droce_qp *qp, uint64_t now)
{
	arm_ack(qp, now);
}

void droce_tmr_progress(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp_timer *t = &qp->tp.tmr;
	if (t->state == DROCE_TMR_RNR)
		return; /* an ACK for earlier PSNs does not end the RNR wait */
	if (qp->tp.una_psn == qp->tp.snd_max) {
		t->state = DROCE_TMR_IDLE;
		t->at = 0;
		return;
	}
	arm_ack(qp, now);
}

void droce_tmr_rewound(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp_timer *t = &qp->tp.tmr;
	t->resend_pending = true;
	if (t->state != DROCE_TMR_RNR)
		arm_ack(qp, now);
}

void droce_tmr_rnr(struct droce_qp *qp, uint64_t ns, uint64_t now)
{
	struct droce_tp_timer *t = &qp->tp.tmr;
	t->state = DROCE_TMR_RNR;
	t->at = now + ns;
	t->resend_pending = true;
}

void droce_tmr_pace(struct droce_qp *qp, uint64_t t)
{
	qp->tp.tmr.pace_at = t;
}

void droce_tp_timers(struct droce_qp *qp, uint64_t now)
{
	struct droce_tp_timer *t = &qp->tp.tmr;
	if (qp->state == DROCE_QPS_ERR || qp->state == DROCE_QPS_RESET) {
		t->state = DROCE_TMR_IDLE;
		t->at = t->pace_at = 0;
		return;
	}
	if (t->pace_at && now >= t->pace_at) {
		t->pace_at = 0;
		droce_tp_kick(qp);
	}
	if (t->state == DROCE_TMR_IDLE || now < t->at)
		return;
	if (t->state == DROCE_TMR_RNR) {
		/* The cursor was rewound to the RNR'd PSN: resend it now. */
		t->state = DROCE_TMR_IDLE;
		t->at = 0;
		droce_tp_kick(qp);
		return;
	}
	/* ACK timeout. */
	if (qp->tp.una_psn == qp->tp.snd_max) { /* nothing outstanding */
		t->state = DROCE_TMR_IDLE;
		t->at = 0;
		return;
	}
	/* Time the link spent paused since the timer ran from does not
	 * count: a packet held in a paused transmitter, or behind one, has
	 * not had the time the timeout allows it (802.1Qbb pauses hold
	 * frames, they do not lose them). A pause still going on moves the
	 * deadline again at the next expiry. */
	uint64_t paused = qp->ctx->link_paused_ns;
	if (paused > t->paused0) /* a link whose count went back gives no credit */
		t->from += paused - t->paused0;
	t->paused0 = paused;
	/* The timeout that holds now (more packets outstanding than at
	 * arming, a pause since, a new RTT estimate), from the same start. */
	uint64_t due = t->from + rto_now(qp, now);
	if (now < due) {
		t->at = due;
		return;
	}
	if (t->resend_pending && !t->held) {
		t->held = true;
		arm_ack(qp, now);
		droce_tp_kick(qp);
		return;
	}
	droce_comp_timeout(qp, now);
}
