/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results in perftest's columns (the ones users' scripts parse) and as JSON.
 */
#ifndef DROCE_PERF_REPORT_H
#define DROCE_PERF_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <droce/poll.h>

#include "opts.h"

struct bw_result {
	uint32_t bytes;
	uint64_t iterations;
	double bw_peak_gbps;
	double bw_avg_gbps;
	double msg_rate_mpps;
};

struct lat_result {
	uint32_t bytes;
	uint64_t iterations;
	double t_min_us, t_max_us, t_typical_us, t_avg_us, t_stdev_us, t_p99_us, t_p999_us;
};

/**
 * Latency statistics over @p n samples in nanoseconds (sorted in place),
 * each multiplied by @p scale (0.5 for RTT/2, as perftest reports write_lat
 * and send_lat). t_typical is the median, as perftest's.
 * @return 0, or -EINVAL when n == 0.
 */
int lat_compute(uint64_t *samples_ns, uint64_t n, double scale, struct lat_result *out);

void report_bw_header(FILE *f, bool gbits);
void report_bw_row(FILE *f, const struct bw_result *r, bool gbits);
void report_lat_header(FILE *f);
void report_lat_row(FILE *f, const struct lat_result *r);
void report_rule(FILE *f);

/** Counters reported beside the results. */
struct perf_counters {
	uint64_t retrans_timeout, retrans_nak, retrans_pkts;
	uint64_t nak_psn_seq, nak_invalid_req, nak_remote_access, nak_remote_op;
	uint64_t rnr_nak_sent, rnr_nak_rcvd;
	uint64_t dup_reqs, out_of_seq;
	unsigned n_drop;
	struct { const char *reason; uint64_t count; } drop[64];
	/* --impair: what the receive-side shim did to this side's frames, so
	 * a loss test can show the loss (and the recovery above) happened. */
	bool impaired;
	uint64_t imp_frames, imp_dropped, imp_held, imp_duplicated, imp_corrupted;
	/* Per QP (droce backend; rdma-core exposes none of it): the RTT the
	 * requester measured, the ACK timeout and window in use. */
	/* selective repeat (--transport sr|sr-spray; droce backend) */
	uint8_t transport;         /* enum droce_transport */
	uint64_t sr_ooo_placed, sr_ooo_dropped, sack_sent, sack_rcvd, sr_rounds, sr_skipped;
	/* sr-spray, per path index over all QPs (a path is a UDP source port per QP) */
	uint64_t spray_pkts[8], spray_resent[8], spray_moves;
	/* The process's memory (/proc/self/status): peak resident set and
	 * hugetlbfs pages mapped, for the memory a QP costs at this count. */
	uint64_t mem_rss_peak, mem_hugetlb;
	unsigned mem_qps;
	unsigned n_path;
	struct perf_qp_path *path; /* n_path entries, malloc'd; perf_counters_free */
	/* The poll loop (droce backend): busy and idle time, the idle policy's
	 * sleeps; busy cycles are busy_ns at the TSC's rate. */
	bool has_loop;
	struct droce_poller_stats loop;
	uint64_t tsc_hz;
	/* The DPDK port (droce backend): bursts a memif peer's vanishing cut
	 * short (its regions unmapped under them), the frames of those. */
	bool has_port;
	uint64_t port_tx_faulted, port_tx_abandoned, port_rx_faulted;
};

struct perf_qp_path {
	uint64_t rtt_samples, rtt_min_ns, rtt_srtt_ns, rtt_var_ns;
	uint64_t rto_ns;       /* the ACK timeout the QP arms next */
	uint64_t window_bytes;
	uint32_t window_pkts;
	const char *timeout_mode; /* "ibta" or "adaptive" */
};

/** One line of the poll loop's busy/idle split (nothing without one). */
void report_loop(FILE *f, const struct perf_counters *c);

/** Print the per-QP path lines (at most @p max QPs, then a summary). */
void report_paths(FILE *f, const struct perf_counters *c, unsigned max);

/**
 * Write the JSON file: {"test", "results": [...], "check", "counters"}.
 * @return 0 or a negative errno from opening/writing the file.
 */
int report_json(const char *path, enum perf_test test, const struct bw_result *bw,
		const struct lat_result *lat, unsigned n, const char *check,
		const struct perf_counters *c);

#endif
