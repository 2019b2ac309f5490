/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "fixed": a static window (DROCE_DEFAULT_WINDOW_PKTS / _BYTES), no pacing,
 * no reaction to loss or CNPs beyond counting them. The baseline every other
 * algorithm is compared with, and what a lossless (PFC) fabric wants.
 */
#include "cc/cc.h"

static void fixed_init(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		       uint64_t now)
{
	s->max_pkts = s->wnd_pkts = max_pkts;
	s->losses = s->cnps = 0;
	s->max_bytes = s->wnd_bytes = max_bytes;
	s->wnd_is_ceiling = true;
}

static void fixed_on_ack(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes, uint64_t now)
{
}

static void fixed_on_loss(struct droce_cc_state *s, bool timeout, uint64_t now)
{
	s->losses++;
}

static void fixed_on_cnp(struct droce_cc_state *s, uint64_t now)
{
	s->cnps++;
}

static bool fixed_can_send(const struct droce_cc_state *s, uint32_t inflight_pkts,
			   uint64_t inflight_bytes, uint32_t bytes, uint64_t now)
{
	return inflight_pkts < s->wnd_pkts && inflight_bytes + bytes <= s->wnd_bytes;
}

static uint64_t fixed_next_send_time(const struct droce_cc_state *s, uint64_t now)
{
	return now;
}

const struct droce_cc_algo droce_cc_fixed = {
	.name = "fixed",
	.init = fixed_init,
	.on_ack = fixed_on_ack,
	.on_loss = fixed_on_loss,
	.on_cnp = fixed_on_cnp,
	.can_send = fixed_can_send,
	.next_send_time = fixed_next_send_time,
};
