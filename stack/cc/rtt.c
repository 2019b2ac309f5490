/* SPDX-License-Identifier: BSD-3-Clause */
/* RTT estimation, adaptive ACK timeout, delivery rate (see rtt.h). */
#include <string.h>

#include <droce/params.h>

#include "wire/psn.h"
#include "cc/rtt.h"

/* Decay of the delivery-rate maximum per interval without a higher one. */
#define RATE_DECAY 0.875

void droce_rtt_init(struct droce_rtt *r)
{
	memset(r, 0, sizeof(*r));
}

void droce_rtt_on_rewind(struct droce_rtt *r, uint32_t psn)
{
	/* The ring is in PSN order: drop from the newest back to @p psn. */
	while (r->count) {
		uint32_t last = (r->head + r->count - 1) % DROCE_RTT_RING;
		if (droce_psn_diff(r->psn[last], psn) < 0)
			break;
		r->count--;
	}
}

void droce_rtt_on_timeout(struct droce_rtt *r)
{
	if (r->backoff < 16)
		r->backoff++;
}

void droce_rtt_sample(struct droce_rtt *r, uint64_t rtt)
{
	if (!rtt)
		rtt = 1;
	r->last_ns = rtt;
	if (!r->samples || rtt < r->min_ns)
		r->min_ns = rtt;
	if (!r->samples) {
		/* RFC 6298 2.2 */
		r->srtt_ns = rtt;
		r->rttvar_ns = rtt / 2;
	} else {
		/* RFC 6298 2.3: RTTVAR first, with the old SRTT. */
		uint64_t d = r->srtt_ns > rtt ? r->srtt_ns - rtt : rtt - r->srtt_ns;
		r->rttvar_ns = (3 * r->rttvar_ns + d) / 4;
		r->srtt_ns = (7 * r->srtt_ns + rtt) / 8;
	}
	r->samples++;
	r->backoff = 0; /* RFC 6298 5.7: a fresh sample ends the back-off */
}

uint64_t droce_rtt_on_ack(struct droce_rtt *r, uint32_t una, uint64_t now)
{
	uint64_t t = 0;
	bool got = false;
	while (r->count && droce_psn_diff(r->psn[r->head], una) < 0) {
		t = r->sent[r->head];
		got = true;
		r->head = (r->head + 1) % DROCE_RTT_RING;
		r->count--;
	}
	if (!got)
		return 0;
	uint64_t rtt = now > t ? now - t : 1;
	droce_rtt_sample(r, rtt);
	return rtt;
}

uint64_t droce_rtt_timeout(const struct droce_rtt *r, bool adaptive, uint64_t floor,
			   uint64_t init, uint64_t ceiling)
{
	if (!adaptive || !ceiling)
		return ceiling;
	uint64_t rto = r->samples ? r->srtt_ns + 4 * r->rttvar_ns : init;
	if (rto < floor)
		rto = floor;
	for (uint32_t i = 0; i < r->backoff && rto < ceiling; i++)
		rto *= 2;
	return rto < ceiling ? rto : ceiling;
}

uint64_t droce_rtt_timeout_irn(uint64_t rto, uint32_t outstanding, bool paused_lately,
			       uint64_t high, uint64_t ceiling)
{
	if (outstanding <= DROCE_RTO_LOW_MAX_PKTS && !paused_lately)
		return rto;
	if (high > ceiling)
		high = ceiling;
	return rto > high ? rto : high;
}

void droce_rtt_on_delivered(struct droce_rtt *r, uint64_t bytes, uint64_t now)
{
	if (!r->dr_t0) {
		r->dr_t0 = now ? now : 1;
		r->dr_bytes = 0;
		return; /* the interval starts at the first ACK */
	}
	r->dr_bytes += bytes;
	uint64_t span = now - r->dr_t0;
	uint64_t need = r->srtt_ns > 1000 ? r->srtt_ns : 1000;
	if (span < need)
		return;
	double rate = (double)r->dr_bytes / (double)span;
	double kept = r->rate_bpns * RATE_DECAY;
	r->rate_bpns = rate > kept ? rate : kept;
	r->dr_t0 = now;
	r->dr_bytes = 0;
}

uint64_t droce_rtt_bdp(const struct droce_rtt *r)
{
	if (!r->samples || r->rate_bpns <= 0)
		return 0;
	return (uint64_t)(r->rate_bpns * (double)r->min_ns);
}
