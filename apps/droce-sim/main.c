/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-sim: run real droce contexts over a simulated fabric (docs/sim.md).
 * The main loop pops events in (time, sequence) order and hands them to the
 * fabric, the hosts or the workload; the virtual clock is the time of the
 * event being run. Wall time is read only for wall_s and the progress line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool all_done(const struct sim *s)
{
	return s->nflows && s->flows_done == s->nflows;
}

static void run(struct sim *s)
{
	struct event e;
	double t0 = wall_now(), last = t0;
	uint64_t next_sample = s->o.sample_ns;
	if (s->csv_flows || s->o.nfails)
		evq_push(&s->q, 0, EV_SAMPLE, NULL, NULL, 0);
	workload_kickoff(s);
	while (evq_pop(&s->q, &e)) {
		if (s->o.duration && e.t > s->o.duration) {
			s->now = s->o.duration;
			if (e.type == EV_ARRIVE)
				pkt_free(s, e.pkt); /* the rest go back at exit */
			break;
		}
		s->now = e.t;
		s->events++;
		switch (e.type) {
		case EV_POLL: {
			struct host *h = e.obj;
			uint64_t *at = e.arg ? &h->timer_at : &h->poll_at;
			if (*at != e.t)
				break; /* superseded (host_wake) */
			*at = UINT64_MAX;
			host_poll(s, h);
			break;
		}
		case EV_START:
			workload_start(s, e.obj);
			break;
		case EV_SAMPLE:
			report_sample(s);
			if (!all_done(s))
				evq_push(&s->q, next_sample, EV_SAMPLE, NULL, NULL, 0);
			next_sample += s->o.sample_ns;
			break;
		default:
			fabric_event(s, &e);
			break;
		}
		if (all_done(s) || s->stuck)
			break;
		if ((s->events & 0xFFFF) == 0) {
			double w = wall_now();
			if (w - last >= 2.0 && !s->o.quiet) {
				fprintf(stderr, "droce-sim: %.3f ms simulated, %llu frames, %u/%u flows done, %.1f s\n",
					(double)s->now / 1e6, (unsigned long long)s->frames, s->flows_done,
					s->nflows, w - t0);
				last = w;
			}
		}
	}
	if (s->csv_flows)
		report_sample(s);
	s->wall_s = wall_now() - t0;
}

int main(int argc, char **argv)
{
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return 1;
	int rc = sim_parse_args(&s->o, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	const struct sim_opts *o = &s->o;
	s->rng = o->seed ^ 0xD1B54A32D192ED03ULL;
	if (o->leaves)
		s->nhosts = o->leaves * o->per_leaf;
	else
		s->nhosts = o->hosts;
	if (fabric_build(s) || hosts_create(s)) {
		fprintf(stderr, "droce-sim: cannot build the fabric: %s\n", strerror(errno));
		return 1;
	}
	if (fabric_schedule_fails(s)) {
		fprintf(stderr, "droce-sim: --fail names a link this fabric does not have\n");
		return 1;
	}
	if (workload_build(s)) {
		fprintf(stderr, "droce-sim: cannot build the workload\n");
		return 1;
	}
	if (o->csv && report_open_csv(s)) {
		fprintf(stderr, "droce-sim: cannot write %s: %s\n", o->csv, strerror(errno));
		return 1;
	}
	run(s);
	report_close_csv(s);
	rc = 0;
	if (s->stuck) {
		fprintf(stderr, "droce-sim: a host kept working at %llu ns without time moving on; stopped\n",
			(unsigned long long)s->now);
		rc = 1;
	}
	if (o->json) {
		FILE *f = strcmp(o->json, "-") == 0 ? stdout : fopen(o->json, "w");
		if (!f || report_json(s, f)) {
			fprintf(stderr, "droce-sim: cannot write %s\n", o->json);
			rc = 1;
		}
		if (f && f != stdout)
			fclose(f);
	}
	if (!o->quiet)
		fprintf(stderr, "droce-sim: %u/%u flows done in %.3f ms simulated, %llu events, %llu frames, "
			"%.2f s wall (%.2f M frames/s)\n",
			s->flows_done, s->nflows, (double)s->now / 1e6, (unsigned long long)s->events,
			(unsigned long long)s->frames, s->wall_s,
			s->wall_s > 0 ? (double)s->frames / s->wall_s / 1e6 : 0.0);
	if (o->plot && report_plot(s))
		rc = 1;
	/* Frames still on a wire go back to the pool before it is freed. */
	struct event e;
	while (evq_pop(&s->q, &e))
		if (e.type == EV_ARRIVE)
			pkt_free(s, e.pkt);
	hosts_destroy(s);
	fabric_free(s);
	free(s->flows);
	for (unsigned i = 0; i < s->nconns; i++) {
		free(s->conns[i]->q);
		free(s->conns[i]);
	}
	free(s->conns);
	free(s->q.h);
	free(s->sample_ports);
	free(s->series);
	free(s);
	return rc;
}
