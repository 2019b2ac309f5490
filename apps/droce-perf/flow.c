/* SPDX-License-Identifier: BSD-3-Clause */
#include "flow.h"

struct perf_flow perf_bw_flow(const struct perf_opts *o, unsigned slots)
{
	struct perf_flow f = {.inflight = o->tx_depth, .recvs = 0};
	if (o->test == PERF_SEND_BW)
		f.recvs = slots; /* each SEND lands in its own receive buffer */
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
