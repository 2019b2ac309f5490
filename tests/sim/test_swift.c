/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc/swift.c: additive increase below the target delay, multiplicative
 * decrease proportional to the excess (at most once per RTT, at most
 * MAX_MDF), pacing below one packet per RTT.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cc/cc.h"

static const struct droce_cc_algo *A = &droce_cc_swift;

static void test_registered(void **state)
{
	assert_ptr_equal(droce_cc_find("swift"), &droce_cc_swift);
}

static void test_increase_below_target(void **state)
{
	struct droce_cc_state s = {0};
	A->init(&s, 512, 1 << 21, 0);
	A->on_sent(&s, 4096, 0);
	double w0 = s.u.swift.cwnd;
	/* A window's worth ACKed at a delay well below target: + about AI. */
	A->on_ack(&s, 8, (uint64_t)w0, 5000);
	A->on_rtt(&s, 5000, 5000);
	assert_true(s.u.swift.cwnd > w0 + DROCE_SWIFT_AI_BYTES * 0.99);
	assert_true(s.u.swift.cwnd < w0 + DROCE_SWIFT_AI_BYTES * 1.01);
}

static void test_decrease_above_target(void **state)
{
	struct droce_cc_state s = {0};
	A->init(&s, 512, 1 << 21, 0);
	A->on_sent(&s, 4096, 0);
	A->on_rtt(&s, 5000, 1000); /* a first sample sets the RTT */
	double w0 = s.u.swift.cwnd;
	/* Twice the target: cut by BETA * (d - t) / d, capped by MAX_MDF. */
	A->on_rtt(&s, 200000, 100000);
	assert_true(s.u.swift.cwnd >= w0 * (1 - DROCE_SWIFT_MAX_MDF) * 0.999);
	assert_true(s.u.swift.cwnd < w0 * 0.9);
	double w1 = s.u.swift.cwnd;
	/* Again within one RTT: no second cut. */
	A->on_rtt(&s, 200000, 100001);
	assert_true(s.u.swift.cwnd == w1);
	/* The window gates what is in flight. */
	assert_false(A->can_send(&s, 1, (uint64_t)w1, 4096, 100002));
}

/*
 * The decrease below its cap, against the paper's formula written out here
 * (Swift, SIGCOMM 2020, 3.1 and 3.5), not the implementation's: target =
 * base + flow scaling alpha / sqrt(cwnd in packets) + beta, clamped to
 * [0, range]; cwnd *= 1 - BETA (delay - target) / delay. A delay a little
 * above target keeps the factor far from MAX_MDF, so a wrong excess (over
 * the target instead of the delay), a wrong target or a fixed cut fails.
 */
static void test_decrease_proportional(void **state)
{
	struct droce_cc_state s = {0};
	A->init(&s, 512, 1 << 21, 0);
	A->on_sent(&s, 4096, 0);
	A->on_rtt(&s, 5000, 1000);
	double w0 = s.u.swift.cwnd;
	double alpha = DROCE_SWIFT_FS_RANGE_NS /
		       (1 / sqrt(DROCE_SWIFT_FS_MIN_CWND) - 1 / sqrt(DROCE_SWIFT_FS_MAX_CWND));
	double beta = -alpha / sqrt(DROCE_SWIFT_FS_MAX_CWND);
	double fs = alpha / sqrt(w0 / 4096.0) + beta;
	fs = fs < 0 ? 0 : fs > DROCE_SWIFT_FS_RANGE_NS ? DROCE_SWIFT_FS_RANGE_NS : fs;
	double target = DROCE_SWIFT_BASE_TARGET_NS + fs;
	double delay = (double)(uint64_t)(target * 1.25); /* whole ns, as on_rtt takes it */
	double want = w0 * (1 - DROCE_SWIFT_BETA * (delay - target) / delay);
	assert_true(want > w0 * (1 - DROCE_SWIFT_MAX_MDF) * 1.2); /* far from the cap */
	A->on_rtt(&s, (uint64_t)delay, 100000);
	printf("target %.0f ns, delay %.0f ns: cwnd %.1f -> %.1f (want %.1f)\n", target, delay, w0,
	       s.u.swift.cwnd, want);
	assert_true(s.u.swift.cwnd > want * 0.99999 && s.u.swift.cwnd < want * 1.00001);
}

static void test_pacing_below_one_packet(void **state)
{
	struct droce_cc_state s = {0};
	A->init(&s, 512, 1 << 21, 0);
	A->on_sent(&s, 4096, 0);
	A->on_rtt(&s, 10000, 1);
	for (uint64_t t = 2; s.u.swift.cwnd >= 1024; t += 100000)
		A->on_rtt(&s, 1000000, t); /* far above target: halve each RTT */
	double c = s.u.swift.cwnd;
	printf("cwnd %g bytes, rtt %g ns\n", c, s.u.swift.rtt);
	A->on_sent(&s, 4096, 10000000);
	uint64_t next = A->next_send_time(&s, 10000000);
	/* One 4 KB packet every rtt * 4096 / cwnd. */
	double want = s.u.swift.rtt * 4096.0 / c;
	assert_true(next > 10000000 + (uint64_t)(want * 0.99));
	assert_true(next < 10000000 + (uint64_t)(want * 1.01) + 1);
	assert_true(next - 10000000 > (uint64_t)s.u.swift.rtt); /* below one per RTT */
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_increase_below_target),
		cmocka_unit_test(test_decrease_above_target),
		cmocka_unit_test(test_decrease_proportional),
		cmocka_unit_test(test_pacing_below_one_packet),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
