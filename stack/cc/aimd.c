/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "aimd": a window that halves on loss or CNP (at most once per 50 us, the
 * DCQCN rate-decrease period, so one congestion event is one cut) and grows
 * by one packet (and 4 KB) per window of ACKed packets (bytes), i.e. once
 * per round trip however the ACKs are coalesced, up to the configured
 * ceiling. A simple, deterministic stand-in until DCQCN lands.
 */
#include "cc/cc.h"

#define AIMD_CUT_INTERVAL_NS 50000u
#define AIMD_MIN_PKTS 1u
#define AIMD_MIN_BYTES 4096u

static void aimd_init(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		      uint64_t now)
{
	s->max_pkts = s->wnd_pkts = max_pkts;
	s->losses = s->cnps = 0;
	s->max_bytes = s->wnd_bytes = max_bytes;
	s->wnd_is_ceiling = false;
	s->u.aimd.last_cut = 0;
	s->u.aimd.acked = 0;
	s->u.aimd.acked_bytes = 0;
}

static void aimd_cut(struct droce_cc_state *s, uint64_t now)
{
	if (s->u.aimd.last_cut && now - s->u.aimd.last_cut < AIMD_CUT_INTERVAL_NS)
		return;
	s->u.aimd.last_cut = now ? now : 1;
	s->u.aimd.acked = 0;
	s->u.aimd.acked_bytes = 0;
	s->wnd_pkts = s->wnd_pkts / 2 > AIMD_MIN_PKTS ? s->wnd_pkts / 2 : AIMD_MIN_PKTS;
	s->wnd_bytes = s->wnd_bytes / 2 > AIMD_MIN_BYTES ? s->wnd_bytes / 2 : AIMD_MIN_BYTES;
}

static void aimd_on_ack(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes, uint64_t now)
{
	/* Additive increase: +1 packet once a whole window has been ACKed. */
	s->u.aimd.acked += pkts;
	while (s->wnd_pkts < s->max_pkts && s->u.aimd.acked >= s->wnd_pkts) {
		s->u.aimd.acked -= s->wnd_pkts;
		s->wnd_pkts++;
	}
	if (s->wnd_pkts >= s->max_pkts)
		s->u.aimd.acked = 0;
	s->u.aimd.acked_bytes += bytes;
	while (s->wnd_bytes < s->max_bytes && s->u.aimd.acked_bytes >= s->wnd_bytes) {
		s->u.aimd.acked_bytes -= s->wnd_bytes;
		s->wnd_bytes = s->wnd_bytes + 4096u < s->max_bytes ? s->wnd_bytes + 4096u : s->max_bytes;
	}
	if (s->wnd_bytes >= s->max_bytes)
		s->u.aimd.acked_bytes = 0;
}

static void aimd_on_loss(struct droce_cc_state *s, bool timeout, uint64_t now)
{
	s->losses++;
	aimd_cut(s, now);
}

static void aimd_on_cnp(struct droce_cc_state *s, uint64_t now)
{
	s->cnps++;
	aimd_cut(s, now);
}

static bool aimd_can_send(const struct droce_cc_state *s, uint32_t inflight_pkts,
			  uint64_t inflight_bytes, uint32_t bytes, uint64_t now)
{
	return inflight_pkts < s->wnd_pkts && inflight_bytes + bytes <= s->wnd_bytes;
}

static uint64_t aimd_next_send_time(const struct droce_cc_state *s, uint64_t now)
{
	return now;
}

const struct droce_cc_algo droce_cc_aimd = {
	.name = "aimd",
	.init = aimd_init,
	.on_ack = aimd_on_ack,
	.on_loss = aimd_on_loss,
	.on_cnp = aimd_on_cnp,
	.can_send = aimd_can_send,
	.next_send_time = aimd_next_send_time,
};
