/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc/swift.c: additive increase below the target delay, multiplicative
 * decrease proportional to the excess (at most once per RTT, at most
 * MAX_MDF), pacing below one packet per RTT.
 */
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
		cmocka_unit_test(test_pacing_below_one_packet),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
