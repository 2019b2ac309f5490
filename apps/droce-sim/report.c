/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results: the JSON summary (fields listed in docs/sim.md), CSV time series
 * (per-flow receive rate, per-queue depth) and their plots. Every number is
 * printed with a fixed format from integer or deterministic double
 * arithmetic, so two runs with one seed give the same bytes (wall_s aside).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim.h"

#ifndef DROCE_SIM_PLOT_SCRIPT
#define DROCE_SIM_PLOT_SCRIPT "plot.py"
#endif

int report_open_csv(struct sim *s)
{
	char path[1024];
	if (mkdir(s->o.csv, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/flows.csv", s->o.csv);
	s->csv_flows = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/queues.csv", s->o.csv);
	s->csv_queues = fopen(path, "w");
	if (!s->csv_flows || !s->csv_queues)
		return -1;
	/* Per connection (flows sharing one are summed): receive rate. */
	fprintf(s->csv_flows, "t_us");
	for (unsigned i = 0; i < s->nconns; i++)
		fprintf(s->csv_flows, ",h%u>h%u%s", s->conns[i]->src->id, s->conns[i]->dst->id,
			s->conns[i]->short_class ? "s" : "");
	fprintf(s->csv_flows, "\n");
	/* Queues: every switch egress port. */
	s->sample_ports = calloc(1, sizeof(*s->sample_ports) * 4096);
	if (!s->sample_ports)
		return -1;
	fprintf(s->csv_queues, "t_us");
	for (unsigned i = 0; i < s->nswitches; i++)
		for (unsigned j = 0; j < s->switches[i].nports && s->nsample_ports < 4096; j++) {
			s->sample_ports[s->nsample_ports++] = &s->switches[i].ports[j];
			fprintf(s->csv_queues, ",%s", s->switches[i].ports[j].name);
		}
	fprintf(s->csv_queues, "\n");
	return 0;
}

/* --fail: the fabric's goodput per interval, and how long a connection
 * with work outstanding went without delivering a byte. */
static void sample_fail(struct sim *s)
{
	uint64_t rx = 0;
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		struct droce_qp_stats st;
		droce_qp_get_stats(c->rqp, &st);
		rx += st.rx_bytes;
		if (st.rx_bytes != c->fail_rx || !c->outstanding) {
			c->fail_rx = st.rx_bytes;
			c->fail_t = s->now;
		} else if (s->now - c->fail_t > s->max_stall) {
			s->max_stall = s->now - c->fail_t;
		}
	}
	if (s->nseries == s->cseries) {
		size_t nc = s->cseries ? 2 * s->cseries : 256;
		double *n = realloc(s->series, nc * sizeof(*n));
		if (!n)
			return;
		s->series = n;
		s->cseries = nc;
	}
	s->series[s->nseries++] = (double)(rx - s->series_rx) * 8.0 / (double)s->o.sample_ns;
	s->series_rx = rx;
}

void report_sample(struct sim *s)
{
	if (s->o.nfails)
		sample_fail(s);
	if (!s->csv_flows)
		return;
	double dt = (double)s->o.sample_ns;
	fprintf(s->csv_flows, "%.3f", (double)s->now / 1e3);
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		struct droce_qp_stats st;
		droce_qp_get_stats(c->rqp, &st);
		fprintf(s->csv_flows, ",%.3f", (double)(st.rx_bytes - c->last_rx) * 8.0 / dt);
		c->last_rx = st.rx_bytes;
	}
	fprintf(s->csv_flows, "\n");
	fprintf(s->csv_queues, "%.3f", (double)s->now / 1e3);
	for (unsigned i = 0; i < s->nsample_ports; i++)
		fprintf(s->csv_queues, ",%llu", (unsigned long long)s->sample_ports[i]->qbytes);
	fprintf(s->csv_queues, "\n");
}

void report_close_csv(struct sim *s)
{
	if (s->csv_flows)
		fclose(s->csv_flows);
	if (s->csv_queues)
		fclose(s->csv_queues);
	s->csv_flows = s->csv_queues = NULL;
}

static void ports_each(struct sim *s, void (*fn)(struct sim *, struct port *, void *), void *arg)
{
	for (unsigned i = 0; i < s->nhosts; i++)
		fn(s, &s->hnodes[i].ports[0], arg);
	for (unsigned i = 0; i < s->nswitches; i++)
		for (unsigned j = 0; j < s->switches[i].nports; j++)
			fn(s, &s->switches[i].ports[j], arg);
}

static void busiest(struct sim *s, struct port *p, void *arg)
{
	struct port **b = arg;
	if (p->node->kind == NODE_SWITCH && (!*b || p->busy_ns > (*b)->busy_ns))
		*b = p;
}

static uint64_t p99_of(const struct port *p, uint64_t buffer)
{
	if (!p->qhist_n)
		return 0;
	uint64_t want = (p->qhist_n * 99 + 99) / 100, acc = 0;
	for (unsigned b = 0; b < 256; b++) {
		acc += p->qhist[b];
		if (acc >= want)
			return (uint64_t)(b + 1) * buffer / 256; /* the bucket's upper edge */
	}
	return buffer;
}

/* sr-spray's per-path counters as a JSON array body. */
static const char *per_path(const uint64_t *v, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < DROCE_SPRAY_PATHS && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	return buf;
}

static void json_flows(struct sim *s, FILE *out, double *jain)
{
	double sum = 0, sq = 0;
	unsigned n = 0;
	fprintf(out, "  \"flows\": [");
	for (unsigned i = 0; i < s->nflows; i++) {
		struct flow *f = &s->flows[i];
		bool started = f->conn->qhead > 0 || f->conn->posted || f->end ||
			       (f->conn->nq && f->start <= s->now);
		uint64_t end = f->end ? f->end : s->now;
		uint64_t t = end > f->start ? end - f->start : 0;
		double gbps = t && started ? (double)f->done_bytes * 8.0 / (double)t : 0.0;
		uint64_t retrans = f->end ? f->retrans : 0;
		struct droce_qp_stats qs;
		char resent[DROCE_SPRAY_PATHS * 21];
		droce_qp_get_stats(f->conn->sqp, &qs);
		if (!f->end && started) {
			struct droce_qp_stats st;
			droce_qp_get_stats(f->conn->sqp, &st);
			retrans = st.retrans_pkts - f->retrans0;
		}
		fprintf(out, "%s\n    {\"src\": %u, \"dst\": %u, \"bytes\": %llu, \"done_bytes\": %llu, "
			"\"start_us\": %.3f, \"goodput_gbps\": %.4f, \"fct_us\": %.3f, \"retransmits\": %llu, "
			"\"timeouts\": %llu, \"srtt_us\": %.3f, \"min_rtt_us\": %.3f, \"rto_us\": %.3f, "
			"\"window_bytes\": %llu, \"cc_rate_mbps\": %llu, \"sr_rounds\": %llu, "
			"\"spray_moves\": %llu, \"spray_resent\": [%s]}",
			i ? "," : "", f->src, f->dst, (unsigned long long)f->bytes,
			(unsigned long long)f->done_bytes, (double)f->start / 1e3, gbps,
			f->end ? (double)(f->end - f->start) / 1e3 : -1.0,
			(unsigned long long)retrans, (unsigned long long)qs.retrans_timeout,
			(double)qs.rtt_srtt_ns / 1e3, (double)qs.rtt_min_ns / 1e3, (double)qs.rto_ns / 1e3,
			(unsigned long long)qs.window_bytes, (unsigned long long)qs.cc_rate_mbps,
			(unsigned long long)qs.sr_rounds, (unsigned long long)qs.spray_moves,
			per_path(qs.spray_resent, resent, sizeof(resent)));
		if (!f->short_msg) {
			sum += gbps;
			sq += gbps * gbps;
			n++;
		}
	}
	fprintf(out, "\n  ],\n");
	uint64_t total = 0;
	for (unsigned i = 0; i < s->nflows; i++)
		total += s->flows[i].done_bytes;
	/* Aggregate: every byte delivered over the whole run. */
	fprintf(out, "  \"goodput_gbps\": %.4f,\n", s->now ? (double)total * 8.0 / (double)s->now : 0.0);
	*jain = sq > 0 ? sum * sum / ((double)n * sq) : 0.0;
}

int report_json(struct sim *s, FILE *out)
{
	struct port *b = NULL;
	for (unsigned i = 0; i < s->nswitches; i++)
		for (unsigned j = 0; j < s->switches[i].nports; j++)
			port_account(s, &s->switches[i].ports[j]);
	ports_each(s, busiest, &b);
	uint64_t sim_ns = s->now;
	uint64_t cnps = 0, retrans = 0, timeouts = 0;
	double rtt_sum = 0;
	uint64_t rtt_n = 0;
	for (unsigned i = 0; i < s->nconns; i++) {
		struct droce_qp_stats a, r;
		droce_qp_get_stats(s->conns[i]->sqp, &a);
		droce_qp_get_stats(s->conns[i]->rqp, &r);
		cnps += r.cnp_sent;
		retrans += a.retrans_pkts;
		timeouts += a.retrans_timeout;
		if (a.rtt_samples) {
			rtt_sum += (double)a.rtt_srtt_ns;
			rtt_n++;
		}
	}
	double jain;
	fprintf(out, "{\n");
	fprintf(out, "  \"sim_ns\": %llu,\n", (unsigned long long)sim_ns);
	fprintf(out, "  \"wall_s\": %.3f,\n", s->wall_s);
	fprintf(out, "  \"events\": %llu,\n", (unsigned long long)s->events);
	fprintf(out, "  \"frames\": %llu,\n", (unsigned long long)s->frames);
	fprintf(out, "  \"hosts\": %u,\n", s->nhosts);
	fprintf(out, "  \"cc\": \"%s\",\n", s->o.cc);
	fprintf(out, "  \"transport\": \"%s\",\n", droce_transport_name(s->o.transport));
	fprintf(out, "  \"flows_done\": %u,\n", s->flows_done);
	json_flows(s, out, &jain);
	fprintf(out, "  \"jain\": %.4f,\n", jain);
	double util = b && sim_ns ? (double)b->busy_ns / (double)sim_ns : 0.0;
	fprintf(out, "  \"link_util\": %.4f,\n", util > 1 ? 1.0 : util);
	fprintf(out, "  \"busiest_link\": \"%s\",\n", b ? b->name : "");
	fprintf(out, "  \"queue_bytes\": {\"max\": %llu, \"p99\": %llu},\n",
		(unsigned long long)(b ? b->max_q : 0),
		(unsigned long long)(b ? p99_of(b, s->o.buffer) : 0));
	fprintf(out, "  \"drops\": %llu,\n", (unsigned long long)s->drops);
	fprintf(out, "  \"random_drops\": %llu,\n", (unsigned long long)(s->random_drops + s->tail_drops));
	fprintf(out, "  \"link_drops\": %llu,\n", (unsigned long long)s->link_drops);
	fprintf(out, "  \"cnps\": %llu,\n", (unsigned long long)cnps);
	fprintf(out, "  \"ecn_marked\": %llu,\n", (unsigned long long)s->ecn_marked);
	fprintf(out, "  \"pause_frames\": %llu,\n", (unsigned long long)s->pause_frames);
	fprintf(out, "  \"retransmits\": %llu,\n", (unsigned long long)retrans);
	fprintf(out, "  \"timeouts\": %llu,\n", (unsigned long long)timeouts);
	fprintf(out, "  \"wc_errors\": %llu,\n", (unsigned long long)s->wc_errors);
	fprintf(out, "  \"mean_srtt_us\": %.3f,\n", rtt_n ? rtt_sum / (double)rtt_n / 1e3 : 0.0);
	fprintf(out, "  \"links\": [");
	bool first = true;
	for (unsigned i = 0; i < s->nswitches; i++)
		for (unsigned j = 0; j < s->switches[i].nports; j++) {
			const struct port *p = &s->switches[i].ports[j];
			fprintf(out, "%s\n    {\"name\": \"%s\", \"bytes\": %llu, \"util\": %.4f, "
				"\"max_queue\": %llu, \"drops\": %llu, \"marked\": %llu}",
				first ? "" : ",", p->name, (unsigned long long)p->tx_bytes,
				sim_ns ? (double)p->busy_ns / (double)sim_ns : 0.0,
				(unsigned long long)p->max_q, (unsigned long long)p->drops,
				(unsigned long long)p->marks);
			first = false;
		}
	fprintf(out, "\n  ]");
	if (s->o.nfails) {
		fprintf(out, ",\n  \"max_stall_ns\": %llu,\n  \"sample_ns\": %llu,\n  \"goodput_series_gbps\": [",
			(unsigned long long)s->max_stall, (unsigned long long)s->o.sample_ns);
		for (size_t i = 0; i < s->nseries; i++)
			fprintf(out, "%s%.2f", i ? ", " : "", s->series[i]);
		fprintf(out, "]");
	}
	if (s->o.wl == WL_ALLREDUCE) {
		/* nccl-tests: algbw = size / time; busbw = algbw * 2(n-1)/n. */
		uint64_t t = (s->ar_done ? s->ar_end : s->now) - s->ar_start;
		double alg = s->ar_done && t ? (double)s->o.wl_bytes * 8.0 / (double)t : 0.0;
		double bus = alg * 2.0 * (s->nhosts - 1) / s->nhosts;
		fprintf(out, ",\n  \"algbw_gbps\": %.4f,\n  \"busbw_gbps\": %.4f", alg, bus);
	}
	if (s->o.wl == WL_MIX) {
		/* FCT percentiles of the short messages that finished. */
		unsigned n = 0;
		uint64_t *v = malloc(sizeof(*v) * (s->nflows + 1));
		for (unsigned i = 0; v && i < s->nflows; i++)
			if (s->flows[i].short_msg && s->flows[i].end)
				v[n++] = s->flows[i].end - s->flows[i].start;
		for (unsigned i = 1; i < n; i++) { /* insertion sort: deterministic, n is small */
			uint64_t x = v[i];
			unsigned j = i;
			for (; j && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		fprintf(out, ",\n  \"short_fct_us\": {\"n\": %u, \"p50\": %.3f, \"p99\": %.3f}", n,
			n ? (double)v[n / 2] / 1e3 : 0.0, n ? (double)v[(n * 99) / 100] / 1e3 : 0.0);
		free(v);
	}
	fprintf(out, "\n}\n");
	return ferror(out) ? -1 : 0;
}

int report_plot(struct sim *s)
{
	char cmd[4096];
	if (mkdir(s->o.plot, 0755) && errno != EEXIST)
		return -1;
	/* Debian's python3 (python3-matplotlib), not whatever python3 is first on PATH. */
	const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
	snprintf(cmd, sizeof(cmd), "%s '%s' '%s' '%s'", py, DROCE_SIM_PLOT_SCRIPT, s->o.csv, s->o.plot);
	int rc = system(cmd);
	if (rc) {
		fprintf(stderr, "droce-sim: plotting failed (%s)\n", cmd);
		return -1;
	}
	return 0;
}
