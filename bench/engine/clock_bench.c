/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one "now" costs the poll loop, side by side (best of -r rounds):
 * clock_gettime(CLOCK_MONOTONIC) (vDSO), the TSC through a double multiply
 * (droce-perf's perf_now before stack/net/port/tsc.h), and droce_tsc_now_ns
 * (one rdtsc, one 64x64->128 multiply, a shift). No EAL: the TSC rate is
 * calibrated here against CLOCK_MONOTONIC over 50 ms.
 *
 *   droce-bench-clock [-n CALLS] [-r ROUNDS]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "net/port/tsc.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long n = 10000000;
	unsigned rounds = 5;
	int c;
	while ((c = getopt(argc, argv, "n:r:h")) != -1) {
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n CALLS] [-r ROUNDS]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (n == 0 || rounds == 0)
		return 2;
	uint64_t t0 = mono_ns(), c0 = rte_rdtsc();
	while (mono_ns() - t0 < 50000000u)
		;
	uint64_t hz = (rte_rdtsc() - c0) * 1000000000u / (mono_ns() - t0);
	struct droce_tsc clk;
	droce_tsc_init(&clk, hz, rte_rdtsc());
	double ns_per_tsc = 1e9 / (double)hz;
	uint64_t tsc0 = rte_rdtsc();

	const char *name[3] = { "clock_gettime(MONOTONIC)", "rdtsc * double (old perf_now)",
				"droce_tsc_now_ns" };
	double best[3] = { 1e30, 1e30, 1e30 };
	uint64_t sink = 0;
	for (unsigned r = 0; r < rounds; r++)
		for (int k = 0; k < 3; k++) {
			uint64_t s = mono_ns(), acc = 0;
			for (unsigned long i = 0; i < n; i++) {
				if (k == 0)
					acc += mono_ns();
				else if (k == 1)
					acc += (uint64_t)((double)(rte_rdtsc() - tsc0) * ns_per_tsc);
				else
					acc += droce_tsc_now_ns(&clk);
			}
			double ns = (double)(mono_ns() - s) / (double)n;
			sink += acc;
			if (ns < best[k])
				best[k] = ns;
		}
	printf("# droce-bench-clock: %lu calls per case, best of %u rounds, TSC %.3f GHz\n", n, rounds,
	       (double)hz / 1e9);
	for (int k = 0; k < 3; k++)
		printf("%-32s %6.1f ns/call\n", name[k], best[k]);
	printf("# checksum (keeps the work alive): %llx\n", (unsigned long long)sink);
	return 0;
}
