/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stack/net/port/tsc.h: the TSC -> ns conversion against exact integer
 * arithmetic (cycles * 1e9 / hz in 128 bits) at rates from 1 MHz to
 * 5 GHz, over deltas from 0 to a year; monotonic; 0 before the epoch. No
 * EAL: the conversion is arithmetic (the rdtsc read is DPDK's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "net/port/tsc.h"

__extension__ typedef unsigned __int128 u128;

static uint64_t exact(uint64_t d, uint64_t hz)
{
	return (uint64_t)((u128)d * 1000000000u / hz);
}

static void test_against_exact(void **state)
{
	(void)state;
	static const uint64_t rates[] = { 1000000, 999999937, 1000000000, 2100000000, 2593905000,
					  3000000000, 4999999999 };
	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		uint64_t hz = rates[r];
		struct droce_tsc c;
		droce_tsc_init(&c, hz, 12345);
		assert_int_equal(droce_tsc_ns(&c, 12345), 0);
		assert_int_equal(droce_tsc_ns(&c, 100), 0); /* before the epoch */
		uint64_t prev = 0;
		/* Deltas up to a year of cycles, growing by ~1.1x. */
		for (uint64_t d = 1; d < hz * 86400u * 365u; d += d / 10 + 1) {
			uint64_t got = droce_tsc_ns(&c, 12345 + d), want = exact(d, hz);
			/* The multiplier is off by at most 1/2 in 2^32: d/2^33 ns,
			 * plus one for the truncating shift. */
			uint64_t slack = (d >> 32) + 1;
			assert_true(got + slack >= want && got <= want + slack);
			assert_true(got >= prev);
			prev = got;
		}
		/* One second of cycles is one second, to the nanosecond. */
		uint64_t s = droce_tsc_ns(&c, 12345 + hz);
		assert_true(s >= 999999999 && s <= 1000000001);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
