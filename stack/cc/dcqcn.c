/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "dcqcn": rate-based congestion control for RoCEv2, the reaction point
 * (RP) of Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, section 3.1 (the notification point, one CNP
 * per flow per 50 us at most, is droce_tp_ecn_ce() in transport/tp.c; the
 * congestion point is the switch: droce-sim's RED marking).
 *
 * The window stays at its ceiling; the rate Rc paces packets through
 * next_send_time():
 *   - a CNP cuts: Rt = Rc, Rc = Rc (1 - alpha/2), alpha = (1 - g) alpha + g,
 *     and restarts the increase machinery (timer, byte counter, counts);
 *   - alpha has its own timer: every K without a CNP, alpha = (1 - g) alpha,
 *     whatever the rate is doing (so the next cut after a quiet spell is
 *     gentle);
 *   - a rate-increase event happens every T (timer) and every B bytes sent
 *     (byte counter), each counted since the last cut (t_cnt, bc_cnt): fast
 *     recovery while both counts are below F (Rc = (Rt + Rc) / 2), additive
 *     increase once one reaches F (Rt += R_AI first), hyper increase once
 *     both have (Rt += i R_HAI, i = min(t_cnt, bc_cnt) - F + 1).
 * Rates are bytes per ns, capped at the link's line rate (line_bpns, set
 * from the context's line_rate_gbps) and floored at DROCE_DCQCN_MIN_RATE.
 * Time advances only through the callbacks' `now` (the timers are caught
 * up lazily), so it is deterministic.
 */
#include <math.h>

#include "cc/cc.h"

static double line_of(const struct droce_cc_state *s)
{
	return s->line_bpns > 0 ? s->line_bpns : DROCE_DCQCN_LINE_RATE_BPNS;
}

static void dcqcn_init(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		       uint64_t now)
{
	s->max_pkts = s->wnd_pkts = max_pkts;
	s->losses = s->cnps = 0;
	s->max_bytes = s->wnd_bytes = max_bytes;
	s->wnd_is_ceiling = true;
	s->u.dcqcn.rc = s->u.dcqcn.rt = line_of(s);
	s->u.dcqcn.alpha = 1.0; /* the paper's initial alpha (mlx5: 1023/1024) */
	s->u.dcqcn.next_tx = 0;
	s->u.dcqcn.last_cnp = 0;
	s->u.dcqcn.last_alpha = now;
	s->u.dcqcn.last_inc = now;
	s->u.dcqcn.bytes = 0;
	s->u.dcqcn.t_cnt = s->u.dcqcn.bc_cnt = 0;
	s->u.dcqcn.cut = false;
}

/* One rate-increase event (the counts already include it). */
static void increase(struct droce_cc_state *s)
{
	double line = line_of(s);
	uint32_t t = s->u.dcqcn.t_cnt, b = s->u.dcqcn.bc_cnt, F = DROCE_DCQCN_FAST_ROUNDS;
	uint32_t hi = t > b ? t : b, lo = t < b ? t : b;
	if (lo >= F)
		s->u.dcqcn.rt += (double)(lo - F + 1) * DROCE_DCQCN_RHAI_BPNS; /* hyper */
	else if (hi >= F)
		s->u.dcqcn.rt += DROCE_DCQCN_RAI_BPNS; /* additive */
	/* else fast recovery: Rt stays */
	if (s->u.dcqcn.rt > line)
		s->u.dcqcn.rt = line;
	s->u.dcqcn.rc = (s->u.dcqcn.rc + s->u.dcqcn.rt) / 2.0;
	if (s->u.dcqcn.rc >= line * (1.0 - 1e-9)) {
		s->u.dcqcn.rc = s->u.dcqcn.rt = line;
		s->u.dcqcn.cut = false; /* back at line rate: nothing to recover */
	}
}

/* Catch the timers up to @p now: alpha (K) and rate increase (T). */
static void dcqcn_advance(struct droce_cc_state *s, uint64_t now)
{
	if (now > s->u.dcqcn.last_alpha + DROCE_DCQCN_ALPHA_NS) {
		uint64_t n = (now - s->u.dcqcn.last_alpha) / DROCE_DCQCN_ALPHA_NS;
		s->u.dcqcn.alpha *= pow(1.0 - DROCE_DCQCN_G, (double)n);
		s->u.dcqcn.last_alpha += n * DROCE_DCQCN_ALPHA_NS;
	}
	if (!s->u.dcqcn.cut) {
		s->u.dcqcn.last_inc = now;
		return;
	}
	while (s->u.dcqcn.cut && now >= s->u.dcqcn.last_inc + DROCE_DCQCN_PERIOD_NS) {
		s->u.dcqcn.last_inc += DROCE_DCQCN_PERIOD_NS;
		s->u.dcqcn.t_cnt++;
		increase(s);
	}
	if (!s->u.dcqcn.cut)
		s->u.dcqcn.last_inc = now;
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
	s->u.dcqcn.last_alpha = now; /* the alpha timer restarts at a CNP */
	s->u.dcqcn.last_inc = now;
	s->u.dcqcn.bytes = 0;
	s->u.dcqcn.t_cnt = s->u.dcqcn.bc_cnt = 0;
	s->u.dcqcn.cut = true;
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
	if (s->u.dcqcn.cut) {
		s->u.dcqcn.bytes += bytes;
		while (s->u.dcqcn.cut && s->u.dcqcn.bytes >= DROCE_DCQCN_BYTES) {
			s->u.dcqcn.bytes -= DROCE_DCQCN_BYTES;
			s->u.dcqcn.bc_cnt++;
			increase(s);
		}
	}
	if (!s->u.dcqcn.cut) {
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
