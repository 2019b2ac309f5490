/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf's command line, statistics, report and check pattern. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <droce/ctx.h>

#include "flow.h"
#include "opts.h"
#include "pattern.h"
#include "report.h"

static int parse(struct perf_opts *o, char *err, const char *const *args)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)"droce-perf";
	while (*args)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	return perf_opts_parse(argc, argv, o, err, 128);
}

static void test_server_defaults(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *a[] = {"write_bw", NULL};
	assert_int_equal(parse(&o, err, a), 0);
	assert_int_equal(o.test, PERF_WRITE_BW);
	assert_null(o.server);
	assert_int_equal(o.size, 65536);
	assert_int_equal(o.iters, 5000);
	assert_int_equal(o.qps, 1);
	assert_int_equal(o.mtu, 4096);
	assert_int_equal(o.qp_timeout, 14); /* perftest's default: 67 ms */
	assert_false(o.check);
}

static void test_client_options_anywhere(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *a[] = {"-s", "4K", "send_bw", "--check", "10.0.0.1", "-q", "4",
			   "--report_gbits", "--json", "/tmp/x.json", "-m", "1024",
			   "--cc", "dcqcn", "--window", "64", "-u", "17", NULL};
	assert_int_equal(parse(&o, err, a), 0);
	assert_int_equal(o.test, PERF_SEND_BW);
	assert_string_equal(o.server, "10.0.0.1");
	assert_int_equal(o.size, 4096);
	assert_int_equal(o.iters, 5000);
	assert_int_equal(o.qps, 4);
	assert_int_equal(o.mtu, 1024);
	assert_true(o.check);
	assert_true(o.report_gbits);
	assert_string_equal(o.json, "/tmp/x.json");
	assert_string_equal(o.cc, "dcqcn");
	assert_int_equal(o.window, 64);
	assert_int_equal(o.qp_timeout, 17);
}

static void test_cm_option(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *srv[] = {"write_bw", "--cm", NULL};
	assert_int_equal(parse(&o, err, srv), 0);
	assert_true(o.cm);
	assert_null(o.cm_peer);
	const char *cli[] = {"write_bw", "--cm=198.18.0.9", "127.0.0.1", NULL};
	assert_int_equal(parse(&o, err, cli), 0);
	assert_true(o.cm);
	assert_string_equal(o.cm_peer, "198.18.0.9");
	const char *srv_addr[] = {"write_bw", "--cm=198.18.0.9", NULL};
	assert_int_equal(parse(&o, err, srv_addr), -EINVAL);
	assert_non_null(strstr(err, "client option"));
	const char *verbs[] = {"write_bw", "--cm", "--backend", "verbs", "127.0.0.1", NULL};
	assert_int_equal(parse(&o, err, verbs), -EINVAL);
	assert_non_null(strstr(err, "droce backend"));
	const char *none[] = {"write_bw", NULL};
	assert_int_equal(parse(&o, err, none), 0);
	assert_false(o.cm);
}

/* --peer: the one side-channel client a server serves (docs/security.md). */
static void test_peer_option(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *v4[] = {"write_bw", "--peer", "198.18.0.2", NULL};
	assert_int_equal(parse(&o, err, v4), 0);
	assert_string_equal(o.peer, "198.18.0.2");
	const char *v6[] = {"write_bw", "--peer", "fd00::2", NULL};
	assert_int_equal(parse(&o, err, v6), 0);
	assert_string_equal(o.peer, "fd00::2");
	const char *bad[] = {"write_bw", "--peer", "host.example", NULL};
	assert_int_equal(parse(&o, err, bad), -EINVAL);
	assert_non_null(strstr(err, "--peer"));
	const char *none[] = {"write_bw", NULL};
	assert_int_equal(parse(&o, err, none), 0);
	assert_null(o.peer);
}

/* --idle: busy by default (today's loop), adaptive by name, nothing else;
 * a droce option, refused with --backend verbs. */
static void test_idle_option(void **state)
{
	(void)state;
	struct perf_opts o;
	char err[128];
	const char *none[] = {"write_lat", NULL};
	assert_int_equal(parse(&o, err, none), 0);
	assert_int_equal(o.idle, DROCE_IDLE_BUSY);
	const char *ad[] = {"write_lat", "--idle", "adaptive", NULL};
	assert_int_equal(parse(&o, err, ad), 0);
	assert_int_equal(o.idle, DROCE_IDLE_ADAPTIVE);
	const char *bad[] = {"write_lat", "--idle", "sleepy", NULL};
	assert_int_equal(parse(&o, err, bad), -EINVAL);
	assert_non_null(strstr(err, "--idle"));
	const char *vb[] = {"write_lat", "--backend", "verbs", "--idle", "adaptive", NULL};
	assert_int_equal(parse(&o, err, vb), -EINVAL);
}

static void test_bad_command_lines(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *bad[][6] = {
		{NULL},
		{"nonsense_bw", NULL},
		{"write_bw", "-s", "0", NULL},
		{"write_bw", "-s", "9M", NULL},
		{"write_bw", "-m", "1000", NULL},
		{"write_bw", "-q", "0", NULL},
		{"write_bw", "-q", "16385", NULL},
		{"write_bw", "--memif", "peer", NULL},
		{"write_bw", "a", "b", NULL},
		{"write_bw", "--bogus", NULL},
		{"write_bw", "-D", "-1", NULL},
		{"write_lat", "-q", "2", NULL},
		{"write_bw", "--window", "0", NULL},
		{"write_bw", "--timeout-mode", "rfc", NULL},
		{"write_bw", "-u", "0", NULL},  /* 0 = no timeout: a lost tail would hang */
		{"write_bw", "--qp-timeout", "32", NULL},
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(parse(&o, err, bad[i]), -22);
		assert_true(strlen(err) > 0);
	}
}

/* --backend verbs and its options; droce-only and verbs-only options do not mix. */
static void test_backend_options(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *d[] = {"read_lat", NULL};
	assert_int_equal(parse(&o, err, d), 0);
	assert_int_equal(o.backend, PERF_BACKEND_DROCE);
	assert_int_equal(o.gid_index, -1);
	assert_int_equal(o.ib_port, 1);
	assert_null(o.ib_dev);
	const char *v[] = {"write_bw", "--backend", "verbs", "--ib-dev", "rxe0", "--gid-index", "1",
			   "--check", "10.0.0.2", NULL};
	assert_int_equal(parse(&o, err, v), 0);
	assert_int_equal(o.backend, PERF_BACKEND_VERBS);
	assert_string_equal(o.ib_dev, "rxe0");
	assert_int_equal(o.gid_index, 1);
	assert_string_equal(o.server, "10.0.0.2");
	const char *bad[][6] = {
		{"write_bw", "--backend", "rxe", NULL},
		{"write_bw", "--backend", "verbs", "--iface", "eth0", NULL},
		{"write_bw", "--backend", "verbs", "--impair", "drop=0.1", NULL},
		{"write_bw", "--ib-dev", "rxe0", NULL},
		{"write_bw", "--gid-index", "1", NULL},
		{"write_bw", "--backend", "verbs", "--gid-index", "256", NULL},
		{"write_bw", "--backend", "verbs", "--timeout-mode", "adaptive", NULL},
		{"write_bw", "--backend", "verbs", "--window-tune", NULL},
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(&o, err, bad[i]), -EINVAL);
}

/* With --check no message may land in a slot the server has not verified:
 * write_bw needs inflight + receives <= slots (found live against rxe, which
 * RNR-NAKs a WRITE with immediate at its last packet after placing the
 * others: with 16 slots, 16 in flight and 16 receives the client's message
 * 16 overwrote slot 0 before the server verified message 0). */
static void test_bw_flow_keeps_slots_safe(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *tests[] = {"write_bw", "send_bw", "read_bw"};
	const char *depths[] = {"1", "2", "3", "16", "128"};
	for (unsigned t = 0; t < 3; t++)
		for (unsigned d = 0; d < 5; d++)
			for (unsigned slots = 2; slots <= 256; slots = slots * 2 + (slots & 1)) {
				const char *a[] = {tests[t], "--check", "-t", depths[d], NULL};
				assert_int_equal(parse(&o, err, a), 0);
				struct perf_flow f = perf_bw_flow(&o, slots);
				assert_true(f.inflight >= 1);
				assert_true(f.inflight <= o.tx_depth);
				if (t == 0) {
					assert_true(f.recvs >= 1);
					assert_true(f.inflight + f.recvs <= slots);
				} else {
					assert_true(f.inflight <= slots);
					assert_int_equal(f.recvs, t == 1 ? slots : 0);
				}
			}
	const char *nocheck[] = {"write_bw", "-t", "64", NULL};
	assert_int_equal(parse(&o, err, nocheck), 0);
	assert_int_equal(perf_bw_flow(&o, 4).inflight, 64);
	assert_int_equal(perf_bw_flow(&o, 4).recvs, 0);
}

/* Many QPs share one QP's buffer budget, two slots each at least, so the
 * memory every message touches does not grow with the QP count; a send_bw
 * client keeps no more SENDs in flight than the server has receives. */
static void test_bw_slots_follow_qps(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *one[] = {"write_bw", NULL};
	assert_int_equal(parse(&o, err, one), 0);
	assert_int_equal(perf_bw_slots(&o, 4096), 128);
	assert_int_equal(perf_bw_slots(&o, 8u << 20), 2); /* 16 MB a QP at most */
	const char *depths[] = {"1", "2", "16", "128", "1024"};
	const char *counts[] = {"1", "2", "3", "1024", "10000", "16384"};
	for (unsigned d = 0; d < 5; d++)
		for (unsigned c = 0; c < 6; c++) {
			const char *a[] = {"write_bw", "-t", depths[d], "-q", counts[c], NULL};
			assert_int_equal(parse(&o, err, a), 0);
			unsigned depth = o.tx_depth < 2 ? 2 : o.tx_depth;
			for (uint32_t size = 64; size <= 65536; size <<= 4) {
				unsigned slots = perf_bw_slots(&o, size);
				uint64_t one_qp = (uint64_t)depth * size;
				if (one_qp > PERF_BUF_MAX)
					one_qp = PERF_BUF_MAX;
				assert_true(slots >= 2 && slots <= depth);
				assert_true(slots == 2 || (uint64_t)slots * size * o.qps <= one_qp);
				/* the largest such count: twice as many would not fit */
				assert_true(slots == depth ||
					    (uint64_t)slots * 2 * size * o.qps > one_qp);
			}
		}
	const char *send[] = {"send_bw", "-t", "128", "-q", "1024", NULL};
	assert_int_equal(parse(&o, err, send), 0);
	struct perf_flow f = perf_bw_flow(&o, perf_bw_slots(&o, 4096));
	assert_int_equal(f.recvs, 2);
	assert_int_equal(f.inflight, 2);
}

static void test_atomic_size_is_8(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *a[] = {"atomic_lat", "-s", "64", NULL};
	assert_int_equal(parse(&o, err, a), 0);
	assert_int_equal(o.size, 8);
}

static void test_lat_stats(void **state)
{
	uint64_t s[1000];
	struct lat_result r;
	/* 1..1000 us in reverse order: min 1, max 1000, median 501, p99 991. */
	for (unsigned i = 0; i < 1000; i++)
		s[i] = (uint64_t)(1000 - i) * 1000;
	assert_int_equal(lat_compute(s, 1000, 1.0, &r), 0);
	assert_true(r.t_min_us == 1.0);
	assert_true(r.t_max_us == 1000.0);
	assert_true(r.t_typical_us == 501.0);
	assert_true(r.t_p99_us == 991.0);
	assert_true(r.t_p999_us == 1000.0);
	assert_true(r.t_avg_us > 500.49 && r.t_avg_us < 500.51);
	assert_true(r.t_stdev_us > 288.6 && r.t_stdev_us < 288.7);
	/* RTT/2 halves everything. */
	for (unsigned i = 0; i < 1000; i++)
		s[i] = 2000;
	assert_int_equal(lat_compute(s, 1000, 0.5, &r), 0);
	assert_true(r.t_typical_us == 1.0 && r.t_stdev_us == 0.0);
	assert_int_equal(lat_compute(s, 0, 1.0, &r), -22);
}

static void test_pattern(void **state)
{
	/* Word-at-a-time fill and check agree with the byte definition. */
	uint8_t big[1001];
	pattern_fill(big, sizeof(big), 12345);
	for (size_t i = 0; i < sizeof(big); i++)
		assert_int_equal(big[i], pattern_byte(12345, i));
	big[999] ^= 0x80;
	assert_int_equal(pattern_check(big, sizeof(big), 12345), 999);
	big[999] ^= 0x80;
	big[16] ^= 1;
	assert_int_equal(pattern_check(big, sizeof(big), 12345), 16);

	uint8_t a[257], b[257];
	pattern_fill(a, sizeof(a), 7);
	pattern_fill(b, sizeof(b), 8);
	assert_int_equal(pattern_check(a, sizeof(a), 7), -1);
	assert_int_not_equal(pattern_check(a, sizeof(a), 8), -1);
	assert_memory_not_equal(a, b, sizeof(a));
	a[200] ^= 1;
	assert_int_equal(pattern_check(a, sizeof(a), 7), 200);
}

/* A poisoned buffer differs from the pattern in every byte, so a READ that
 * leaves any byte of its target unwritten fails the check at that byte. */
static void test_pattern_poison(void **state)
{
	uint8_t buf[1003];
	for (uint64_t key = 0; key < 64; key++) {
		pattern_poison(buf, sizeof(buf), key);
		for (size_t i = 0; i < sizeof(buf); i++)
			assert_int_not_equal(buf[i], pattern_byte(key, i));
		assert_int_equal(pattern_check(buf, sizeof(buf), key), 0);
		/* a READ that placed all but its last packet's bytes */
		pattern_fill(buf, 1000, key);
		assert_int_equal(pattern_check(buf, sizeof(buf), key), 1000);
		pattern_fill(buf, sizeof(buf), key);
		assert_int_equal(pattern_check(buf, sizeof(buf), key), -1);
	}
	(void)state;
}

/* --timeout-mode and --window-tune reach the context's parameters. */
static void test_rtt_options(void **state)
{
	struct perf_opts o;
	char err[128];
	const char *d[] = {"write_bw", NULL};
	assert_int_equal(parse(&o, err, d), 0);
	assert_int_equal(o.timeout_mode, 0); /* the library's default */
	assert_false(o.window_tune);
	const char *a[] = {"write_bw", "--timeout-mode", "adaptive", "--window-tune", NULL};
	assert_int_equal(parse(&o, err, a), 0);
	assert_int_equal(o.timeout_mode, DROCE_TIMEOUT_ADAPTIVE);
	assert_true(o.window_tune);
	const char *q[] = {"write_bw", "-q", "16384", NULL};
	assert_int_equal(parse(&o, err, q), 0);
	assert_int_equal(o.qps, 16384);
	const char *b[] = {"write_lat", "--timeout-mode", "ibta", NULL};
	assert_int_equal(parse(&o, err, b), 0);
	assert_int_equal(o.timeout_mode, DROCE_TIMEOUT_IBTA);
}

static void test_json(void **state)
{
	struct bw_result bw = {65536, 5000, 30.5, 29.25, 0.055};
	struct perf_counters c = {0};
	char path[] = "/tmp/droce-perf-json-XXXXXX";
	char buf[2048];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	c.retrans_pkts = 3;
	c.n_drop = 1;
	c.drop[0].reason = "BAD_ICRC";
	c.drop[0].count = 2;
	assert_int_equal(report_json(path, PERF_WRITE_BW, &bw, NULL, 1, "ok", &c), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	unlink(path);
	assert_non_null(strstr(buf, "\"test\": \"write_bw\""));
	assert_non_null(strstr(buf, "\"bytes\": 65536"));
	assert_non_null(strstr(buf, "\"bw_avg_gbps\": 29.250000"));
	assert_non_null(strstr(buf, "\"check\": \"ok\""));
	assert_non_null(strstr(buf, "\"BAD_ICRC\": 2"));
	assert_non_null(strstr(buf, "\"qps\": []"));
	/* per-QP RTT, timeout and window */
	struct perf_qp_path q = {.rtt_samples = 10, .rtt_min_ns = 1500, .rtt_srtt_ns = 2250,
				 .rtt_var_ns = 500, .rto_ns = 4250000, .window_bytes = 65536,
				 .window_pkts = 16, .timeout_mode = "adaptive"};
	c.n_path = 1;
	c.path = &q;
	assert_int_equal(report_json(path, PERF_WRITE_BW, &bw, NULL, 1, "ok", &c), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	unlink(path);
	assert_non_null(strstr(buf, "\"qps\": [{\"qp\": 0, \"rtt_samples\": 10, \"rtt_min_us\": 1.500, "
				    "\"rtt_srtt_us\": 2.250, \"rtt_var_us\": 0.500, \"timeout_mode\": \"adaptive\", "
				    "\"timeout_us\": 4250.000, \"window_pkts\": 16, \"window_bytes\": 65536}]"));
	c.n_path = 0;
	assert_int_equal(report_json("/nonexistent/dir/x.json", PERF_WRITE_BW, &bw, NULL, 1, "ok", &c), -2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_defaults),
		cmocka_unit_test(test_client_options_anywhere),
		cmocka_unit_test(test_bad_command_lines),
		cmocka_unit_test(test_backend_options),
		cmocka_unit_test(test_bw_flow_keeps_slots_safe),
		cmocka_unit_test(test_bw_slots_follow_qps),
		cmocka_unit_test(test_atomic_size_is_8),
		cmocka_unit_test(test_lat_stats),
		cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_pattern_poison),
		cmocka_unit_test(test_rtt_options),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_cm_option),
		cmocka_unit_test(test_peer_option),
		cmocka_unit_test(test_idle_option),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
