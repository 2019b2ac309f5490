/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory footprint of droce's objects, from the structures the engine
 * allocates (stack/core): a context, a QP at the default and at other
 * queue depths, a CQ entry, an MR slot. The numbers in docs/benchmarks.md.
 *   build/bench/engine/droce-footprint
 */
#include <stdio.h>

#include <droce/droce.h>

#include "core/core_int.h"

static unsigned pow2(unsigned v)
{
	unsigned p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

static size_t qp_bytes(unsigned send_wr, unsigned recv_wr, unsigned inline_max)
{
	return sizeof(struct droce_qp) + pow2(send_wr) * sizeof(struct droce_swqe) +
	       pow2(recv_wr) * sizeof(struct droce_rwqe) + (size_t)pow2(send_wr) * inline_max;
}

int main(void)
{
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	size_t ctx = sizeof(struct droce_ctx) + p.max_qps * sizeof(void *) +
		     p.max_mrs * sizeof(struct droce_mr_slot) + p.burst * sizeof(struct droce_rx_frame);
	printf("context (max_qps %u, max_mrs %u, burst %u): %zu bytes\n", p.max_qps, p.max_mrs,
	       p.burst, ctx);
	printf("QP struct alone: %zu bytes; send WQE %zu, receive WQE %zu\n", sizeof(struct droce_qp),
	       sizeof(struct droce_swqe), sizeof(struct droce_rwqe));
	printf("QP, defaults (send %u, recv %u, inline %u): %zu bytes\n", DROCE_DEFAULT_MAX_SEND_WR,
	       DROCE_DEFAULT_MAX_RECV_WR, DROCE_DEFAULT_MAX_INLINE,
	       qp_bytes(DROCE_DEFAULT_MAX_SEND_WR, DROCE_DEFAULT_MAX_RECV_WR, DROCE_DEFAULT_MAX_INLINE));
	printf("QP, send 128 / recv 128 / inline 0 (droce-perf -t 128): %zu bytes\n", qp_bytes(128, 128, 0));
	printf("QP, send 16 / recv 16 / inline 64 (many-QP comm core): %zu bytes\n", qp_bytes(16, 16, 64));
	printf("CQ entry: %zu bytes\n", sizeof(struct droce_wc));
	return 0;
}
