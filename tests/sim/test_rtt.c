/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cc/rtt.c: RFC 6298 smoothing, Karn's rule, the adaptive timeout's
 * floor, ceiling and back-off, and the delivery-rate BDP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <droce/params.h>
#include "cc/rtt.h"

static void test_rfc6298(void **state)
{
	struct droce_rtt r;
	droce_rtt_init(&r);
	droce_rtt_sample(&r, 8000);
	assert_int_equal(r.srtt_ns, 8000);      /* 2.2: SRTT = R */
	assert_int_equal(r.rttvar_ns, 4000);    /* RTTVAR = R/2 */
	droce_rtt_sample(&r, 16000);
	/* 2.3: RTTVAR = 3/4 * 4000 + 1/4 * |8000 - 16000| = 5000; SRTT = 7/8 8000 + 1/8 16000 = 9000 */
	assert_int_equal(r.rttvar_ns, 5000);
	assert_int_equal(r.srtt_ns, 9000);
	assert_int_equal(r.min_ns, 8000);
	assert_int_equal(r.samples, 2);
}

static void test_timeout_bounds(void **state)
{
	struct droce_rtt r;
	droce_rtt_init(&r);
	uint64_t ceil = 4096ull << 14;
	/* No sample yet: the initial value; ibta mode: the IBTA value. */
	assert_int_equal(droce_rtt_timeout(&r, true, 16000, 1000000, ceil), 1000000);
	assert_int_equal(droce_rtt_timeout(&r, true, 16000, 1000000, 500000), 500000);
	droce_rtt_sample(&r, 5000);
	assert_int_equal(droce_rtt_timeout(&r, false, 16000, 1000000, ceil), ceil);
	/* 5000 + 4 * 2500 = 15000: below the floor. */
	assert_int_equal(droce_rtt_timeout(&r, true, 16000, 1000000, ceil), 16000);
	assert_int_equal(droce_rtt_timeout(&r, true, 1000, 1000000, ceil), 15000);
	/* 0 = no timer at all, in any mode. */
	assert_int_equal(droce_rtt_timeout(&r, true, 16000, 1000000, 0), 0);
	/* Back-off doubles, up to the ceiling; a new sample ends it. */
	droce_rtt_on_timeout(&r);
	assert_int_equal(droce_rtt_timeout(&r, true, 1000, 1000000, ceil), 30000);
	for (int i = 0; i < 16; i++)
		droce_rtt_on_timeout(&r);
	assert_int_equal(droce_rtt_timeout(&r, true, 1000, 1000000, ceil), ceil);
	droce_rtt_sample(&r, 5000);
	assert_true(droce_rtt_timeout(&r, true, 1000, 1000000, ceil) < 20000);
}

/* A sample comes from the newest timed PSN an ACK covers; a rewind
 * (retransmission) forgets the timings in flight (Karn). */
static void test_ring_and_karn(void **state)
{
	struct droce_rtt r;
	droce_rtt_init(&r);
	droce_rtt_on_send(&r, 15, 1000);
	droce_rtt_on_send(&r, 31, 2000);
	droce_rtt_on_send(&r, 47, 3000);
	assert_int_equal(droce_rtt_on_ack(&r, 15, 9000), 0);   /* PSN 15 not yet covered */
	assert_int_equal(droce_rtt_on_ack(&r, 32, 10000), 8000); /* covers 15 and 31: newest 31 */
	assert_int_equal(r.samples, 1);
	droce_rtt_on_send(&r, 63, 40000);
	droce_rtt_on_rewind(&r, 50);                            /* 50.. go again: 63 forgotten */
	assert_int_equal(droce_rtt_on_ack(&r, 48, 50000), 47000); /* 47 was before the rewind */
	assert_int_equal(droce_rtt_on_ack(&r, 64, 51000), 0);     /* 63 is ambiguous: no sample */
	assert_int_equal(r.samples, 2);
	droce_rtt_on_send(&r, 70, 52000);
	droce_rtt_on_rewind(&r, 70);
	assert_int_equal(r.count, 0);
	/* PSN wrap: 0xFFFFFF sent, una 2 covers it. */
	droce_rtt_on_send(&r, 0xFFFFFFu, 60000);
	assert_int_equal(droce_rtt_on_ack(&r, 2, 61000), 1000);
}

static void test_bdp(void **state)
{
	struct droce_rtt r;
	droce_rtt_init(&r);
	droce_rtt_sample(&r, 10000);
	assert_int_equal(droce_rtt_bdp(&r), 0); /* no rate yet */
	/* 12.5 bytes/ns (100 Gbit/s) for 100 us. */
	for (uint64_t t = 0; t <= 100000; t += 1000)
		droce_rtt_on_delivered(&r, 12500, t);
	uint64_t bdp = droce_rtt_bdp(&r);
	printf("bdp %llu\n", (unsigned long long)bdp);
	assert_true(bdp > 120000 && bdp < 130000); /* 12.5 * 10000 */
}

/* IRN's RTO_low only with few packets outstanding and no pause lately. */
static void test_irn_two_timeouts(void **state)
{
	(void)state;
	const uint64_t ceil = 67108864;
	/* few outstanding, no pause: the RFC 6298 value as it is */
	assert_int_equal(droce_rtt_timeout_irn(30000, 1, false, 100000, ceil), 30000);
	assert_int_equal(droce_rtt_timeout_irn(30000, DROCE_RTO_LOW_MAX_PKTS, false, 100000, ceil),
			 30000);
	/* one more outstanding, or a pause: RTO_high */
	assert_int_equal(droce_rtt_timeout_irn(30000, DROCE_RTO_LOW_MAX_PKTS + 1, false, 100000, ceil),
			 100000);
	assert_int_equal(droce_rtt_timeout_irn(30000, 1, true, 100000, ceil), 100000);
	/* never below the RFC value (backed off past RTO_high), never above the ceiling */
	assert_int_equal(droce_rtt_timeout_irn(240000, 16, false, 100000, ceil), 240000);
	assert_int_equal(droce_rtt_timeout_irn(30000, 16, true, 100000, 50000), 50000);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_rfc6298),
		cmocka_unit_test(test_timeout_bounds),
		cmocka_unit_test(test_ring_and_karn),
		cmocka_unit_test(test_bdp),
		cmocka_unit_test(test_irn_two_timeouts),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
