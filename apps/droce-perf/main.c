/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf: perftest for droce.
 *   server: droce-perf [EAL args --] TEST [options]
 *   client: droce-perf [EAL args --] TEST [options] SERVER
 * Both sides take the same TEST and options, as with perftest. The server
 * serves one run and exits. Exit 0 only when the run completed (and, with
 * --check, every byte verified); otherwise non-zero with a message, always
 * within bounded time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static const char *test_title(enum perf_test t)
{
	static const char *const titles[] = {
		"RDMA_Write BW Test", "RDMA_Read BW Test", "Send BW Test", "RDMA_Write Latency Test",
		"RDMA_Read Latency Test", "Send Latency Test", "Atomic FETCH_AND_ADD Latency Test",
	};
	return titles[t];
}

static void print_counters(const struct perf_counters *c)
{
	printf(" Counters: retransmits %llu (timeout %llu, NAK %llu), NAK rcvd seq/inv/acc/op "
	       "%llu/%llu/%llu/%llu, RNR sent/rcvd %llu/%llu, dup %llu, out-of-seq %llu\n",
	       (unsigned long long)c->retrans_pkts, (unsigned long long)c->retrans_timeout,
	       (unsigned long long)c->retrans_nak, (unsigned long long)c->nak_psn_seq,
	       (unsigned long long)c->nak_invalid_req, (unsigned long long)c->nak_remote_access,
	       (unsigned long long)c->nak_remote_op, (unsigned long long)c->rnr_nak_sent,
	       (unsigned long long)c->rnr_nak_rcvd, (unsigned long long)c->dup_reqs,
	       (unsigned long long)c->out_of_seq);
	if (c->transport)
		printf(" Selective repeat (%s): placed out of order %llu, out-of-order dropped %llu, "
		       "SACKs sent/rcvd %llu/%llu, resend rounds %llu, SACKed not resent %llu\n",
		       droce_transport_name(c->transport), (unsigned long long)c->sr_ooo_placed,
		       (unsigned long long)c->sr_ooo_dropped, (unsigned long long)c->sack_sent,
		       (unsigned long long)c->sack_rcvd, (unsigned long long)c->sr_rounds,
		       (unsigned long long)c->sr_skipped);
	if (c->transport == DROCE_TRANSPORT_SR_SPRAY) {
		printf(" Paths (UDP source port i of each QP): sent/resent");
		for (unsigned k = 0; k < 8; k++)
			printf(" %u:%llu/%llu", k, (unsigned long long)c->spray_pkts[k],
			       (unsigned long long)c->spray_resent[k]);
		printf(", moved %llu\n", (unsigned long long)c->spray_moves);
	}
	for (unsigned i = 0; i < c->n_drop; i++)
		printf(" Drops %s: %llu\n", c->drop[i].reason, (unsigned long long)c->drop[i].count);
	if (c->impaired)
		printf(" Impair (receive side): %llu frames, %llu dropped, %llu reordered, %llu duplicated, "
		       "%llu corrupted\n",
		       (unsigned long long)c->imp_frames, (unsigned long long)c->imp_dropped,
		       (unsigned long long)c->imp_held, (unsigned long long)c->imp_duplicated,
		       (unsigned long long)c->imp_corrupted);
}

static int run_client(struct perf *p, const uint32_t *sizes, unsigned n, struct bw_result *bw,
		      struct lat_result *lat)
{
	bool isbw = perf_is_bw(p->o.test);
	report_rule(stdout);
	if (isbw)
		report_bw_header(stdout, p->o.report_gbits);
	else
		report_lat_header(stdout);
	for (unsigned i = 0; i < n; i++) {
		int r = isbw ? perf_run_bw(p, sizes[i], &bw[i]) : perf_run_lat(p, sizes[i], &lat[i]);
		if (r)
			return r;
		if (isbw)
			report_bw_row(stdout, &bw[i], p->o.report_gbits);
		else
			report_lat_row(stdout, &lat[i]);
		fflush(stdout);
	}
	report_rule(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static struct perf p;
	char err[160];
	int eal_argc = 0, sep = -1;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			sep = i;
			break;
		}
	if (sep > 0)
		eal_argc = sep - 1;
	char **app_argv = sep > 0 ? argv + sep : argv;
	int app_argc = sep > 0 ? argc - sep : argc;
	int r = perf_opts_parse(app_argc, app_argv, &p.o, err, sizeof(err));
	if (r == 1) {
		perf_usage(argv[0]);
		return 0;
	}
	if (r) {
		fprintf(stderr, "droce-perf: %s\n", err);
		return 2;
	}
	p.server = p.o.server == NULL;

	uint32_t sizes[32];
	unsigned n = perf_sizes(&p.o, sizes, 32);
	struct bw_result bw[32] = {0};
	struct lat_result lat[32] = {0};

	report_rule(stdout);
	printf("                    %s\n", test_title(p.o.test));
	printf(" Backend: %s\n", p.o.backend == PERF_BACKEND_VERBS ? "verbs (rdma-core)" : "droce");
	printf(" Role: %s  QPs: %u  TX depth: %u  Iterations: %llu%s  Check: %s\n",
	       p.server ? "server" : "client", p.o.qps, p.o.tx_depth, (unsigned long long)p.o.iters,
	       p.o.duration > 0 ? " (duration mode)" : "", p.o.check ? "on" : "off");
	r = perf_setup(&p, eal_argc, argv + 1, argv[0]);
	if (!r && p.server)
		r = perf_server_prepare(&p);
	if (!r && p.o.test == PERF_SEND_LAT && !p.server)
		r = perf_lat_post_recv(&p);
	if (!r) {
		r = droce_sc_ready(&p.sc, 0);
		if (r)
			fprintf(stderr, "droce-perf: peer not ready: %s\n", p.sc.err);
	}
	if (!r) {
		printf(" Path MTU: %u  Connected: %u QP(s), local QPN %u -> remote QPN %u\n", p.mtu,
		       p.o.qps, p.qp[0].qpn, p.qp[0].peer_qpn);
		fflush(stdout); /* a test watching the log starts its next step here */
		if (p.server)
			r = perf_is_bw(p.o.test) ? perf_serve_bw(&p, sizes, n) : perf_serve_lat(&p, sizes, n);
		else
			r = run_client(&p, sizes, n, bw, lat);
		/* The final handshake carries each side's verdict to the other. */
		int status = r ? (r < 0 ? -r : EIO) : p.check_failed ? EIO : 0;
		int h = droce_sc_ready(&p.sc, status);
		if (!r && h) {
			fprintf(stderr, "droce-perf: peer reported failure: %s\n", p.sc.err);
			r = h;
		}
	}
	struct perf_counters c;
	perf_counters(&p, &c);
	print_counters(&c);
	report_paths(stdout, &c, 16);
	report_loop(stdout, &c);
	perf_print_port(&p);
	perf_print_stages(&p);
	printf(" Memory: peak resident %.1f MB, hugetlbfs %.1f MB: %.1f KB per QP (%u QPs)\n",
	       c.mem_rss_peak / 1e6, c.mem_hugetlb / 1e6,
	       (double)(c.mem_rss_peak + c.mem_hugetlb) / 1e3 / (c.mem_qps ? c.mem_qps : 1), c.mem_qps);
	const char *check = !p.o.check ? "off" : (p.check_failed || r) ? "failed" : "ok";
	if (p.o.check)
		printf(" Check: %s%s%s\n", check, p.check_failed ? ": " : "", p.check_failed ? p.check_msg : "");
	if (p.o.json) {
		int j = report_json(p.o.json, p.o.test, perf_is_bw(p.o.test) ? bw : NULL,
				    perf_is_bw(p.o.test) ? NULL : lat, p.server ? 0 : n, check, &c);
		if (j)
			fprintf(stderr, "droce-perf: --json %s: %s\n", p.o.json, strerror(-j));
	}
	perf_counters_free(&c);
	perf_teardown(&p);
	if (r || p.check_failed) {
		fprintf(stderr, "droce-perf: %s FAILED\n", perf_test_name(p.o.test));
		return 1;
	}
	return 0;
}
