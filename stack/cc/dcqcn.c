/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "dcqcn": rate-based congestion control for RoCEv2 (Zhu et al., SIGCOMM
 * 2015, the reaction point of A17.9's CNP scheme). The window stays at the
 * configured ceiling; the rate paces packets through next_send_time():
 *   - a CNP cuts the rate: Rt = Rc, Rc *= 1 - alpha/2, alpha grows by g;
 *   - every DROCE_DCQCN_PERIOD_NS without a CNP alpha decays by (1 - g) and
 *     the rate climbs: DROCE_DCQCN_FAST_ROUNDS steps of fast recovery
 *     (Rc = (Rc + Rt) / 2), then additive increase (Rt += Rai first).
 * Time only advances through the `now` of the callbacks (increase is
 * evaluated lazily when the requester asks), so it is deterministic.
 */
#include "cc/cc.h"

static void dcqcn_init(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		       uint64_t now)
{
	s->max_pkts = s->wnd_pkts = max_pkts;
	s->losses = s->cnps = 0;
	s->max_bytes = s->wnd_bytes = max_bytes;
	s->u.dcqcn.rc = s->u.dcqcn.rt = DROCE_DCQCN_LINE_RATE_BPNS;
	s->u.dcqcn.alpha = 1.0;
	s->u.dcqcn.next_tx = 0;
	s->u.dcqcn.last_cnp = 0;
	s->u.dcqcn.last_inc = now;
	s->u.dcqcn.inc_rounds = 0;
}

/* Apply the periods elapsed since the last step (alpha decay, increase). */
static void dcqcn_advance(struct droce_cc_state *s, uint64_t now)
{
	double line = DROCE_DCQCN_LINE_RATE_BPNS;
	while (now >= s->u.dcqcn.last_inc + DROCE_DCQCN_PERIOD_NS) {
		s->u.dcqcn.last_inc += DROCE_DCQCN_PERIOD_NS;
		if (s->u.dcqcn.rc >= line)
			break;
		s->u.dcqcn.alpha *= 1.0 - DROCE_DCQCN_G;
		if (s->u.dcqcn.inc_rounds >= DROCE_DCQCN_FAST_ROUNDS)
			s->u.dcqcn.rt += DROCE_DCQCN_RAI_BPNS;
		if (s->u.dcqcn.rt > line)
			s->u.dcqcn.rt = line;
		s->u.dcqcn.rc = (s->u.dcqcn.rc + s->u.dcqcn.rt) / 2.0;
		s->u.dcqcn.inc_rounds++;
	}
	if (s->u.dcqcn.rc >= line)
		s->u.dcqcn.last_inc = now; /* at line rate: nothing to catch up */
}

static void dcqcn_on_ack(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes, uint64_t now)
{
	dcqcn_advance(s, now);
}

static void dcqcn_on_loss(struct droce_cc_state *s, bool timeout, uint64_t now)
{
	s->losses++;
}

static void dcqcn_on_cnp(struct droce_cc_state *s, uint64_t now)
{
	s->cnps++;
	dcqcn_advance(s, now);
	s->u.dcqcn.rt = s->u.dcqcn.rc;
	s->u.dcqcn.rc *= 1.0 - s->u.dcqcn.alpha / 2.0;
	if (s->u.dcqcn.rc < DROCE_DCQCN_MIN_RATE_BPNS)
		s->u.dcqcn.rc = DROCE_DCQCN_MIN_RATE_BPNS;
	s->u.dcqcn.alpha = (1.0 - DROCE_DCQCN_G) * s->u.dcqcn.alpha + DROCE_DCQCN_G;
	s->u.dcqcn.last_cnp = now;
	s->u.dcqcn.last_inc = now;
	s->u.dcqcn.inc_rounds = 0;
}

static bool dcqcn_can_send(const struct droce_cc_state *s, uint32_t inflight_pkts,
			   uint64_t inflight_bytes, uint32_t bytes, uint64_t now)
{
	return inflight_pkts < s->wnd_pkts && inflight_bytes + bytes <= s->wnd_bytes;
}

static uint64_t dcqcn_next_send_time(const struct droce_cc_state *s, uint64_t now)
{
	return s->u.dcqcn.next_tx > now ? s->u.dcqcn.next_tx : now;
}

static void dcqcn_on_sent(struct droce_cc_state *s, uint32_t bytes, uint64_t now)
{
	dcqcn_advance(s, now);
	if (s->u.dcqcn.rc >= DROCE_DCQCN_LINE_RATE_BPNS) {
		s->u.dcqcn.next_tx = 0; /* unpaced at line rate */
		return;
	}
	/* Wire bytes: payload plus ~70 bytes of headers, trailer and Ethernet overhead. */
	uint64_t gap = (uint64_t)((double)(bytes + 70u) / s->u.dcqcn.rc);
	uint64_t base = s->u.dcqcn.next_tx > now ? s->u.dcqcn.next_tx : now;
	s->u.dcqcn.next_tx = base + gap;
}

const struct droce_cc_algo droce_cc_dcqcn = {
	.name = "dcqcn",
	.init = dcqcn_init,
	.on_ack = dcqcn_on_ack,
	.on_loss = dcqcn_on_loss,
	.on_cnp = dcqcn_on_cnp,
	.can_send = dcqcn_can_send,
	.next_send_time = dcqcn_next_send_time,
	.on_sent = dcqcn_on_sent,
};
