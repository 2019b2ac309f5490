/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One link over several: what lets one context (one rank of a collective)
 * reach each peer over a point-to-point port of its own (a memif pair per
 * pair of ranks, docs/python.md). TX goes to the port whose peer owns the
 * frame's destination MAC, as a learning switch with a static table would
 * send it; RX takes bursts from every port in turn. No DPDK types: unit-
 * tested over fake links (tests/python/test_mux.c).
 */
#ifndef DROCE_PY_MUX_H
#define DROCE_PY_MUX_H

#include <stdint.h>

#include <droce/link.h>

#define DROCE_MUX_MAX 64u

struct droce_mux {
	unsigned n;
	struct droce_link inner[DROCE_MUX_MAX];
	uint8_t peer_mac[DROCE_MUX_MAX][6];
	/* the last burst: which inner links filled it, in order, and how many
	 * frames each (rx_release gives each link back its own) */
	unsigned burst_n;
	uint8_t burst_from[DROCE_MUX_MAX];
	unsigned burst_cnt[DROCE_MUX_MAX];
	unsigned next;               /* the link polled first next time (fairness) */
	uint64_t tx_unroutable;      /* frames for a MAC no port leads to: dropped */
	uint64_t tx_broadcast;       /* frames sent on every port */
};

void droce_mux_init(struct droce_mux *m);

/**
 * Add @p inner, the link whose other end is the host with @p peer_mac.
 * @return its index, or -ENOSPC, -EINVAL (tx or rx_burst missing).
 */
int droce_mux_add(struct droce_mux *m, struct droce_link inner, const uint8_t peer_mac[6]);

/** The link to give droce_ctx_create(); tx_fold only when every inner link has it. */
struct droce_link droce_mux_link(struct droce_mux *m);

#endif
