/* SPDX-License-Identifier: BSD-3-Clause */
#include "report.h"

#include <droce/verbs.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* perftest takes the sample at index n * p; clamp to the last. */
static uint64_t percentile(const uint64_t *s, uint64_t n, double p)
{
	uint64_t i = (uint64_t)((double)n * p);
	return s[i < n ? i : n - 1];
}

int lat_compute(uint64_t *s, uint64_t n, double scale, struct lat_result *out)
{
	if (n == 0)
		return -EINVAL;
	qsort(s, n, sizeof(*s), cmp_u64);
	double sum = 0, sq = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += (double)s[i];
	double avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++) {
		double d = (double)s[i] - avg;
		sq += d * d;
	}
	double k = scale / 1000.0; /* ns -> us, times RTT scale */
	out->iterations = n;
	out->t_min_us = (double)s[0] * k;
	out->t_max_us = (double)s[n - 1] * k;
	out->t_typical_us = (double)s[n / 2] * k;
	out->t_avg_us = avg * k;
	out->t_stdev_us = sqrt(sq / (double)n) * k;
	out->t_p99_us = (double)percentile(s, n, 0.99) * k;
	out->t_p999_us = (double)percentile(s, n, 0.999) * k;
	return 0;
}

void report_rule(FILE *f)
{
	fputs("---------------------------------------------------------------------------------------\n", f);
}

void report_bw_header(FILE *f, bool gbits)
{
	const char *u = gbits ? "Gb/sec" : "MB/sec";
	fprintf(f, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", u, u);
}

void report_bw_row(FILE *f, const struct bw_result *r, bool gbits)
{
	/* MB/sec as perftest: 2^20 bytes per second. */
	double k = gbits ? 1.0 : 1e9 / 8.0 / 1048576.0;
	fprintf(f, " %-10u %-10llu       %-14.2f     %-14.2f       %.6f\n", r->bytes,
		(unsigned long long)r->iterations, r->bw_peak_gbps * k, r->bw_avg_gbps * k,
		r->msg_rate_mpps);
}

void report_lat_header(FILE *f)
{
	fputs(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
	      "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n", f);
}

void report_lat_row(FILE *f, const struct lat_result *r)
{
	fprintf(f, " %-7u %-10llu     %-7.2f        %-7.2f      %-7.2f            %-7.2f"
		"        %-7.2f         %-7.2f                %-7.2f\n",
		r->bytes, (unsigned long long)r->iterations, r->t_min_us, r->t_max_us,
		r->t_typical_us, r->t_avg_us, r->t_stdev_us, r->t_p99_us, r->t_p999_us);
}

int report_json(const char *path, enum perf_test test, const struct bw_result *bw,
		const struct lat_result *lat, unsigned n, const char *check,
		const struct perf_counters *c)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"test\": \"%s\", \"results\": [", perf_test_name(test));
	for (unsigned i = 0; i < n; i++) {
		if (bw)
			fprintf(f, "%s{\"bytes\": %u, \"iterations\": %llu, \"bw_peak_gbps\": %.6f, "
				"\"bw_avg_gbps\": %.6f, \"msg_rate_mpps\": %.6f}", i ? ", " : "",
				bw[i].bytes, (unsigned long long)bw[i].iterations, bw[i].bw_peak_gbps,
				bw[i].bw_avg_gbps, bw[i].msg_rate_mpps);
		else
			fprintf(f, "%s{\"bytes\": %u, \"iterations\": %llu, \"t_min_us\": %.3f, "
				"\"t_max_us\": %.3f, \"t_typical_us\": %.3f, \"t_avg_us\": %.3f, "
				"\"t_stdev_us\": %.3f, \"t_p99_us\": %.3f, \"t_p999_us\": %.3f}",
				i ? ", " : "", lat[i].bytes, (unsigned long long)lat[i].iterations,
				lat[i].t_min_us, lat[i].t_max_us, lat[i].t_typical_us, lat[i].t_avg_us,
				lat[i].t_stdev_us, lat[i].t_p99_us, lat[i].t_p999_us);
	}
	fprintf(f, "], \"check\": \"%s\", \"counters\": {", check);
	fprintf(f, "\"retransmits\": {\"timeout\": %llu, \"nak\": %llu, \"packets\": %llu}, ",
		(unsigned long long)c->retrans_timeout, (unsigned long long)c->retrans_nak,
		(unsigned long long)c->retrans_pkts);
	fprintf(f, "\"naks\": {\"psn_seq_err\": %llu, \"invalid_req\": %llu, "
		"\"remote_access\": %llu, \"remote_op\": %llu}, ",
		(unsigned long long)c->nak_psn_seq, (unsigned long long)c->nak_invalid_req,
		(unsigned long long)c->nak_remote_access, (unsigned long long)c->nak_remote_op);
	if (c->transport)
		fprintf(f, "\"selective_repeat\": {\"transport\": \"%s\", \"placed_out_of_order\": %llu, "
			"\"out_of_order_dropped\": %llu, \"sacks_sent\": %llu, \"sacks_received\": %llu, "
			"\"resend_rounds\": %llu, \"sacked_not_resent\": %llu}, ",
			droce_transport_name(c->transport), (unsigned long long)c->sr_ooo_placed,
			(unsigned long long)c->sr_ooo_dropped, (unsigned long long)c->sack_sent,
			(unsigned long long)c->sack_rcvd, (unsigned long long)c->sr_rounds,
			(unsigned long long)c->sr_skipped);
	if (c->transport == DROCE_TRANSPORT_SR_SPRAY) {
		fprintf(f, "\"paths\": {\"moves\": %llu, \"sent\": [", (unsigned long long)c->spray_moves);
		for (unsigned k = 0; k < 8; k++)
			fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)c->spray_pkts[k]);
		fputs("], \"resent\": [", f);
		for (unsigned k = 0; k < 8; k++)
			fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)c->spray_resent[k]);
		fputs("]}, ", f);
	}
	fprintf(f, "\"rnr\": {\"sent\": %llu, \"received\": %llu}, ",
		(unsigned long long)c->rnr_nak_sent, (unsigned long long)c->rnr_nak_rcvd);
	fprintf(f, "\"duplicates\": %llu, \"out_of_sequence\": %llu, \"drops\": {",
		(unsigned long long)c->dup_reqs, (unsigned long long)c->out_of_seq);
	for (unsigned i = 0; i < c->n_drop; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", c->drop[i].reason,
			(unsigned long long)c->drop[i].count);
	fputs("}", f);
	if (c->has_port)
		fprintf(f, ", \"port\": {\"tx_faulted\": %llu, \"tx_abandoned\": %llu, \"rx_faulted\": %llu}",
			(unsigned long long)c->port_tx_faulted, (unsigned long long)c->port_tx_abandoned,
			(unsigned long long)c->port_rx_faulted);
	if (c->impaired)
		fprintf(f, ", \"impair\": {\"frames\": %llu, \"dropped\": %llu, \"reordered\": %llu, "
			"\"duplicated\": %llu, \"corrupted\": %llu}",
			(unsigned long long)c->imp_frames, (unsigned long long)c->imp_dropped,
			(unsigned long long)c->imp_held, (unsigned long long)c->imp_duplicated,
			(unsigned long long)c->imp_corrupted);
	if (c->has_loop) {
		const struct droce_poller_stats *l = &c->loop;
		uint64_t all = l->busy_ns + l->idle_ns;
		fprintf(f, ", \"loop\": {\"idle\": \"%s\", \"busy_ns\": %llu, \"idle_ns\": %llu, "
			"\"busy_share\": %.4f, \"busy_cycles\": %llu, \"busy_polls\": %llu, "
			"\"idle_polls\": %llu, \"sleeps\": %llu, \"woken\": %llu}",
			droce_idle_mode_name(l->idle), (unsigned long long)l->busy_ns,
			(unsigned long long)l->idle_ns, all ? (double)l->busy_ns / (double)all : 0.0,
			(unsigned long long)((double)l->busy_ns * (double)c->tsc_hz / 1e9),
			(unsigned long long)l->busy_polls, (unsigned long long)l->idle_polls,
			(unsigned long long)l->sleeps, (unsigned long long)l->woken);
	}
	fprintf(f, "}, \"memory\": {\"qps\": %u, \"rss_peak_bytes\": %llu, \"hugetlb_bytes\": %llu",
		c->mem_qps, (unsigned long long)c->mem_rss_peak, (unsigned long long)c->mem_hugetlb);
	fputs("}, \"qps\": [", f);
	for (unsigned i = 0; i < c->n_path; i++) {
		const struct perf_qp_path *q = &c->path[i];
		fprintf(f, "%s{\"qp\": %u, \"rtt_samples\": %llu, \"rtt_min_us\": %.3f, "
			"\"rtt_srtt_us\": %.3f, \"rtt_var_us\": %.3f, \"timeout_mode\": \"%s\", "
			"\"timeout_us\": %.3f, \"window_pkts\": %u, \"window_bytes\": %llu}",
			i ? ", " : "", i, (unsigned long long)q->rtt_samples, q->rtt_min_ns / 1e3,
			q->rtt_srtt_ns / 1e3, q->rtt_var_ns / 1e3, q->timeout_mode, q->rto_ns / 1e3,
			q->window_pkts, (unsigned long long)q->window_bytes);
	}
	fputs("]}\n", f);
	int bad = ferror(f);
	if (fclose(f) || bad)
		return -EIO;
	return 0;
}

void report_paths(FILE *f, const struct perf_counters *c, unsigned max)
{
	if (!c->n_path)
		return;
	fputs(" QP   RTT samples  min[usec]  srtt[usec]  rttvar[usec]  timeout[usec] mode      "
	      "window[pkts]  window[KB]\n", f);
	for (unsigned i = 0; i < c->n_path && i < max; i++) {
		const struct perf_qp_path *q = &c->path[i];
		fprintf(f, " %-4u %-12llu %-10.2f %-11.2f %-13.2f %-13.1f %-9s %-13u %llu\n", i,
			(unsigned long long)q->rtt_samples, q->rtt_min_ns / 1e3, q->rtt_srtt_ns / 1e3,
			q->rtt_var_ns / 1e3, q->rto_ns / 1e3, q->timeout_mode, q->window_pkts,
			(unsigned long long)(q->window_bytes / 1024));
	}
	if (c->n_path > max)
		fprintf(f, " ... %u more QPs (all of them in --json)\n", c->n_path - max);
}

void report_loop(FILE *f, const struct perf_counters *c)
{
	if (!c->has_loop)
		return;
	const struct droce_poller_stats *l = &c->loop;
	uint64_t all = l->busy_ns + l->idle_ns;
	fprintf(f, " Poll loop: idle %s, busy %.1f%% (%.3f s busy, %.3f s idle; %llu busy, %llu empty "
		"polls), %.3g busy cycles, %llu sleeps (%llu woken early)\n",
		droce_idle_mode_name(l->idle), all ? 100.0 * (double)l->busy_ns / (double)all : 0.0,
		(double)l->busy_ns / 1e9, (double)l->idle_ns / 1e9, (unsigned long long)l->busy_polls,
		(unsigned long long)l->idle_polls, (double)l->busy_ns * (double)c->tsc_hz / 1e9,
		(unsigned long long)l->sleeps, (unsigned long long)l->woken);
}
