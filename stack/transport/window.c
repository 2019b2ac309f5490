/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer's one call after an ACK moved the window: take
 * the RTT sample cc/rtt.c finds, hand it to the algorithm (on_rtt:
 * delay-based cc), and with window_tune set the window ceiling to twice the
 * measured bandwidth-delay product (delivery rate x min RTT; the factor 2 is
 * BBR's cwnd gain: with it a window-limited flow keeps growing until the
 * path, not the window, limits it), within [window_min_bytes, window_bytes].
 */
#include "transport/tp_int.h"

void droce_qp_rtt_ack(struct droce_qp *qp, uint64_t bytes, uint64_t now)
{
	uint64_t rtt = droce_rtt_on_ack(&qp->rtt, qp->tp.una_psn, now);
	if (rtt && qp->cc->on_rtt)
		qp->cc->on_rtt(&qp->ccs, rtt, now);
	const struct droce_ctx_params *p = &qp->ctx->p;
	if (!p->window_tune)
		return;
	droce_rtt_on_delivered(&qp->rtt, bytes, now);
	uint64_t bdp = droce_rtt_bdp(&qp->rtt);
	if (!bdp)
		return;
	uint64_t w = 2 * bdp;
	if (w < p->window_min_bytes)
		w = p->window_min_bytes;
	if (w > p->window_bytes)
		w = p->window_bytes;
	uint64_t pk = w / (qp->mtu ? qp->mtu : 4096) + 1;
	if (pk > p->window_pkts)
		pk = p->window_pkts;
	droce_cc_set_ceiling(&qp->ccs, (uint32_t)pk, w);
}
