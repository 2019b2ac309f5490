/* SPDX-License-Identifier: BSD-3-Clause */
#include "flow.h"

struct perf_flow perf_bw_flow(const struct perf_opts *o, unsigned slots)
{
	struct perf_flow f = {.inflight = o->tx_depth, .recvs = 0};
	if (o->test == PERF_SEND_BW) {
		/* each SEND lands in its own receive buffer, and one sent past
		 * the posted receives is RNR-NAKed (IBTA 9.7.5.2.8) */
		f.recvs = slots;
		if (f.inflight > slots)
			f.inflight = slots;
	}
	if (!o->check)
		return f;
	if (o->test == PERF_WRITE_BW) {
		unsigned half = slots / 2 ? slots / 2 : 1;
		f.recvs = half;
		if (f.inflight > slots - half)
			f.inflight = slots - half ? slots - half : 1;
	} else if (f.inflight > slots) {
		/* TX reads registered memory: a slot is not refilled while in flight. */
		f.inflight = slots;
	}
	return f;
}

unsigned perf_bw_slots(const struct perf_opts *o, uint32_t slot_size)
{
	unsigned slots = o->tx_depth < 2 ? 2 : o->tx_depth;
	uint64_t one = (uint64_t)slots * slot_size;
	if (one > PERF_BUF_MAX)
		one = PERF_BUF_MAX;
	/* All QPs together hold what one QP's buffer does, at least two slots
	 * each (perftest's cycle buffer: two messages per QP). A buffer per
	 * QP of tx_depth messages would grow the memory every message touches
	 * with the QP count (1024 QPs x 128 x 4 KB = 512 MB a side, cold in
	 * cache and TLB at every copy), which measures the machine's memory,
	 * not the stack's cost per QP. */
	while (slots > 2 && (uint64_t)slots * slot_size * o->qps > one)
		slots >>= 1;
	return slots;
}
