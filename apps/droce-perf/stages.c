/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll-stage trace's line (include/droce/trace.h): where the measured
 * part of the run spent its time, in nanoseconds per operation (a round
 * trip of write_lat, a message of write_bw), from a droce built with
 * -Dstage_trace=true. "work" is the sum of the stages that did something;
 * "caller" is droce-perf's own loop between polls (posting, the CQ, and for
 * a latency test its wait on the buffer), "idle" the polls that found
 * nothing: together the time spent waiting for the peer and the link.
 */
#include <stdio.h>

#include "perf.h"

void perf_stage_mark(struct perf *p, bool start, uint64_t ops)
{
	if (p->be && p->be->stage_mark)
		p->be->stage_mark(p, start, ops);
}

void perf_print_stages(const struct perf *p)
{
	if (!p->have_stages || !p->stage_ops || !p->tsc_hz)
		return;
	const struct droce_stage_stats *s = &p->stages;
	double k = 1e9 / (double)p->tsc_hz / (double)p->stage_ops;
	double work = 0;
	for (unsigned i = DROCE_STAGE_LINK_RX; i < DROCE_STAGE_IDLE; i++)
		work += (double)s->cycles[i];
	printf(" Stages (ns per operation, %llu operations; %llu polls with work, %llu without):",
	       (unsigned long long)p->stage_ops, (unsigned long long)s->work_polls,
	       (unsigned long long)s->idle_polls);
	for (unsigned i = DROCE_STAGE_LINK_RX; i < DROCE_STAGE_IDLE; i++)
		printf(" %s %.1f", droce_stage_name((enum droce_stage)i), (double)s->cycles[i] * k);
	printf("; work %.1f; caller %.1f, idle %.1f\n", work * k,
	       (double)s->cycles[DROCE_STAGE_CALLER] * k, (double)s->cycles[DROCE_STAGE_IDLE] * k);
}
