/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "swift": delay-based congestion control after Kumar et al., "Swift:
 * Delay is Simple and Effective for Congestion Control in the Datacenter",
 * SIGCOMM 2020, section 3 (algorithm 1), on the RTT samples the transport
 * takes (cc/rtt.h: an AckReq packet's send to the ACK covering it).
 *   - target delay = base target + flow scaling: alpha / sqrt(cwnd) + beta,
 *     clamped to [0, FS_RANGE], so many small flows share a slightly larger
 *     target instead of fighting over a tiny one (3.5);
 *   - delay below target: additive increase, AI per RTT
 *     (cwnd += AI * acked / cwnd; below one packet cwnd += AI * acked/pkt);
 *   - delay above target: at most once per RTT, multiplicative decrease
 *     proportional to the excess, cwnd *= max(1 - BETA (delay - target) /
 *     delay, 1 - MAX_MDF);
 *   - a retransmission timeout cuts by MAX_MDF;
 *   - below one packet the window becomes a rate: one packet per
 *     RTT * pkt / cwnd (pacing, 3.4), which is how Swift handles incasts
 *     far wider than the BDP.
 * The window is in bytes (a packet is the largest payload sent so far).
 * Hop-count scaling is left out: the transport does not see the hop count.
 */
#include <math.h>

#include "cc/cc.h"

static double pkt_of(const struct droce_cc_state *s)
{
	return s->u.swift.pkt ? (double)s->u.swift.pkt : 4096.0;
}

static void set_window(struct droce_cc_state *s)
{
	double c = s->u.swift.cwnd;
	if (c < DROCE_SWIFT_MIN_CWND)
		c = s->u.swift.cwnd = DROCE_SWIFT_MIN_CWND;
	if (c > (double)s->max_bytes)
		c = s->u.swift.cwnd = (double)s->max_bytes;
	s->wnd_bytes = (uint64_t)c;
	uint64_t p = (uint64_t)(c / pkt_of(s)) + 1;
	s->wnd_pkts = p < s->max_pkts ? (uint32_t)p : s->max_pkts;
}

static void swift_init(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		       uint64_t now)
{
	s->max_pkts = max_pkts;
	s->max_bytes = max_bytes;
	s->losses = s->cnps = 0;
	s->wnd_is_ceiling = false;
	s->u.swift.cwnd = DROCE_SWIFT_INIT_CWND;
	s->u.swift.rtt = 0;
	s->u.swift.acked = 0;
	s->u.swift.last_dec = 0;
	s->u.swift.next_tx = 0;
	s->u.swift.pkt = 0;
	s->u.swift.delay = 0;
	set_window(s);
}

/* The target delay for the current window (flow scaling, 3.5). */
static double target_ns(const struct droce_cc_state *s)
{
	const double a = DROCE_SWIFT_FS_RANGE_NS /
			 (1.0 / sqrt(DROCE_SWIFT_FS_MIN_CWND) - 1.0 / sqrt(DROCE_SWIFT_FS_MAX_CWND));
	const double b = -a / sqrt(DROCE_SWIFT_FS_MAX_CWND);
	double w = s->u.swift.cwnd / pkt_of(s);
	double fs = a / sqrt(w > 1e-6 ? w : 1e-6) + b;
	if (fs < 0)
		fs = 0;
	if (fs > DROCE_SWIFT_FS_RANGE_NS)
		fs = DROCE_SWIFT_FS_RANGE_NS;
	return DROCE_SWIFT_BASE_TARGET_NS + fs;
}

static void swift_on_ack(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes, uint64_t now)
{
	s->u.swift.acked += bytes;
}

static void swift_on_rtt(struct droce_cc_state *s, uint64_t rtt, uint64_t now)
{
	double d = (double)rtt, t = target_ns(s);
	s->u.swift.delay = rtt;
	s->u.swift.rtt = s->u.swift.rtt > 0 ? 0.875 * s->u.swift.rtt + 0.125 * d : d;
	double acked = (double)s->u.swift.acked;
	s->u.swift.acked = 0;
	if (d < t) {
		double pkt = pkt_of(s);
		if (s->u.swift.cwnd >= pkt)
			s->u.swift.cwnd += DROCE_SWIFT_AI_BYTES * acked / s->u.swift.cwnd;
		else
			s->u.swift.cwnd += DROCE_SWIFT_AI_BYTES * acked / pkt;
	} else if (!s->u.swift.last_dec || now - s->u.swift.last_dec >= (uint64_t)s->u.swift.rtt) {
		double f = 1.0 - DROCE_SWIFT_BETA * (d - t) / d;
		if (f < 1.0 - DROCE_SWIFT_MAX_MDF)
			f = 1.0 - DROCE_SWIFT_MAX_MDF;
		s->u.swift.cwnd *= f;
		s->u.swift.last_dec = now ? now : 1;
	}
	set_window(s);
}

static void swift_on_loss(struct droce_cc_state *s, bool timeout, uint64_t now)
{
	s->losses++;
	if (s->u.swift.last_dec && now - s->u.swift.last_dec < (uint64_t)s->u.swift.rtt)
		return;
	s->u.swift.cwnd *= 1.0 - DROCE_SWIFT_MAX_MDF;
	s->u.swift.last_dec = now ? now : 1;
	set_window(s);
}

static void swift_on_cnp(struct droce_cc_state *s, uint64_t now)
{
	s->cnps++; /* delay, not ECN, is Swift's signal */
}

static bool swift_can_send(const struct droce_cc_state *s, uint32_t inflight_pkts,
			   uint64_t inflight_bytes, uint32_t bytes, uint64_t now)
{
	return inflight_pkts < s->wnd_pkts && (double)(inflight_bytes + bytes) <= s->u.swift.cwnd;
}

static uint64_t swift_next_send_time(const struct droce_cc_state *s, uint64_t now)
{
	return s->u.swift.next_tx > now ? s->u.swift.next_tx : now;
}

static void swift_on_sent(struct droce_cc_state *s, uint32_t bytes, uint64_t now)
{
	if (bytes > s->u.swift.pkt)
		s->u.swift.pkt = bytes;
	double pkt = pkt_of(s);
	if (s->u.swift.cwnd >= pkt || s->u.swift.rtt <= 0) {
		s->u.swift.next_tx = 0;
		return;
	}
	/* Below one packet per RTT: pace, one packet every rtt * pkt / cwnd. */
	double gap = s->u.swift.rtt * (bytes ? (double)bytes : pkt) / s->u.swift.cwnd;
	uint64_t base = s->u.swift.next_tx > now ? s->u.swift.next_tx : now;
	s->u.swift.next_tx = base + (uint64_t)gap;
}

const struct droce_cc_algo droce_cc_swift = {
	.name = "swift",
	.init = swift_init,
	.on_ack = swift_on_ack,
	.on_loss = swift_on_loss,
	.on_cnp = swift_on_cnp,
	.can_send = swift_can_send,
	.next_send_time = swift_next_send_time,
	.on_sent = swift_on_sent,
	.on_rtt = swift_on_rtt,
};
