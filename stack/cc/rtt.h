/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-QP round-trip time, adaptive ACK timeout and delivery rate.
 *
 * The requester timestamps the packets that ask for an ACK (AckReq, IBTA
 * 9.7.2) when they are sent for the first time; the ACK, READ response or
 * atomic acknowledge that moves the oldest unacknowledged PSN past one of
 * them is a sample (9.7.5.1.3: a response acknowledges every earlier PSN).
 * Karn's rule: a retransmission round forgets the timings of the packets it
 * sends again, and retransmitted packets are never timed, so no sample is
 * ambiguous.
 *
 * The smoothed RTT and its variance follow RFC 6298 section 2 (alpha 1/8,
 * beta 1/4); the adaptive timeout is SRTT + 4 RTTVAR, at least the floor,
 * at most the IBTA Local ACK Timeout (9.7.6.1.3: 4.096 us * 2^timeout, the
 * ceiling the application asked for), doubled after each expiry (RFC 6298
 * 5.5) until a new sample arrives. Before the first sample it is an
 * initial value (RFC 6298 2.1's 1 s, scaled to a datacenter: params.h
 * DROCE_DEFAULT_RTO_INIT_NS), backed off the same way, never above the
 * ceiling: a QP whose first NAK is lost must not wait the full IBTA time.
 *
 * Delivery rate: bytes acknowledged per interval of at least one smoothed
 * RTT, kept as a decaying maximum (BBR's bandwidth filter in miniature);
 * droce_rtt_bdp() is that rate times the minimum RTT.
 */
#ifndef DROCE_CC_RTT_H
#define DROCE_CC_RTT_H

#include <stdbool.h>
#include <stdint.h>

/** Timed packets in flight per QP (one per AckReq: window / ACK_REQ_EVERY). */
#define DROCE_RTT_RING 64u

struct droce_rtt {
	uint64_t min_ns, srtt_ns, rttvar_ns, last_ns;
	uint64_t samples;
	uint32_t backoff;          /* timeouts since the last sample (RFC 6298 5.5) */
	uint32_t head, count;      /* ring of timed PSNs, oldest first */
	uint32_t psn[DROCE_RTT_RING];
	uint64_t sent[DROCE_RTT_RING];
	uint64_t dr_t0, dr_bytes;  /* delivery-rate interval in progress */
	double rate_bpns;          /* decaying maximum delivery rate, bytes per ns */
};

void droce_rtt_init(struct droce_rtt *r);

/** A fresh (never sent before) AckReq packet @p psn left at @p now (per
 * packet of small messages: inline). */
static inline void droce_rtt_on_send(struct droce_rtt *r, uint32_t psn, uint64_t now)
{
	if (r->count == DROCE_RTT_RING) { /* full: drop the oldest timing */
		r->head = (r->head + 1) % DROCE_RTT_RING;
		r->count--;
	}
	uint32_t i = (r->head + r->count) % DROCE_RTT_RING;
	r->psn[i] = psn;
	r->sent[i] = now;
	r->count++;
}

/**
 * A retransmission round starts at @p psn: forget the timings of @p psn
 * and later, which are sent again (Karn); earlier ones were sent once and
 * stay unambiguous.
 */
void droce_rtt_on_rewind(struct droce_rtt *r, uint32_t psn);

/** The ACK timer expired: back off (RFC 6298 5.5). */
void droce_rtt_on_timeout(struct droce_rtt *r);

/**
 * Every PSN before @p una is acknowledged at @p now.
 * @return the RTT sample in ns (the newest timed packet covered), or 0.
 */
uint64_t droce_rtt_on_ack(struct droce_rtt *r, uint32_t una, uint64_t now);

/** Fold a sample into min/smoothed/variance (exposed for tests). */
void droce_rtt_sample(struct droce_rtt *r, uint64_t rtt);

/**
 * The ACK timeout to arm: @p ceiling (the IBTA value; 0 = no timer) when
 * not @p adaptive; else RFC 6298's SRTT + 4 RTTVAR (@p init before the
 * first sample), backed off, clamped to [@p floor, @p ceiling].
 */
uint64_t droce_rtt_timeout(const struct droce_rtt *r, bool adaptive, uint64_t floor,
			   uint64_t init, uint64_t ceiling);

/**
 * IRN's two timeouts (Mittal et al., SIGCOMM 2018, section 3.2): @p rto
 * (droce_rtt_timeout's, IRN's RTO_low) only while at most
 * DROCE_RTO_LOW_MAX_PKTS packets are @p outstanding and the link was not
 * @p paused_lately (PFC); otherwise at least @p high, never above
 * @p ceiling. With few packets outstanding a late ACK is most likely a
 * lost tail, which nothing but the timer recovers; with many, a loss is
 * most likely followed by packets the responder NAKs (9.7.5.2.1), and a
 * late ACK is a queue or a pause: the timer need not be quick, and a quick
 * one fires for nothing. A link paused lately says the fabric is holding
 * frames, not losing them.
 */
uint64_t droce_rtt_timeout_irn(uint64_t rto, uint32_t outstanding, bool paused_lately,
			       uint64_t high, uint64_t ceiling);

/** @p bytes newly acknowledged at @p now (delivery rate). */
void droce_rtt_on_delivered(struct droce_rtt *r, uint64_t bytes, uint64_t now);

/** Delivery rate x minimum RTT in bytes (0 until both are measured). */
uint64_t droce_rtt_bdp(const struct droce_rtt *r);

#endif
