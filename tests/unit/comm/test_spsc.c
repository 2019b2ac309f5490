/* SPDX-License-Identifier: BSD-3-Clause */
/* The comm-core SPSC ring: bounds, order, and a two-thread stress. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "comm/spsc.h"

static void test_init_rejects(void **state)
{
	struct droce_spsc r;
	uint64_t mem[8];
	assert_int_equal(droce_spsc_init(&r, mem, 3, 8), -EINVAL);
	assert_int_equal(droce_spsc_init(&r, mem, 1, 8), -EINVAL);
	assert_int_equal(droce_spsc_init(&r, NULL, 4, 8), -EINVAL);
	assert_int_equal(droce_spsc_init(&r, mem, 4, 0), -EINVAL);
	assert_int_equal(droce_spsc_init(&r, mem, 8, 8), 0);
}

static void test_full_and_empty(void **state)
{
	struct droce_spsc r;
	uint64_t mem[4];
	assert_int_equal(droce_spsc_init(&r, mem, 4, sizeof(uint64_t)), 0);
	assert_null(droce_spsc_peek(&r));
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t *s = droce_spsc_reserve(&r);
		assert_non_null(s);
		*s = i;
		droce_spsc_push(&r);
	}
	assert_null(droce_spsc_reserve(&r)); /* full at exactly 4 */
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t *s = droce_spsc_peek(&r);
		assert_non_null(s);
		assert_int_equal(*s, i);
		droce_spsc_pop(&r);
	}
	assert_null(droce_spsc_peek(&r));
	assert_non_null(droce_spsc_reserve(&r)); /* room again after wrap */
}

#define N_ITEMS 2000000u

static void *producer(void *arg)
{
	struct droce_spsc *r = arg;
	for (uint64_t i = 0; i < N_ITEMS; i++) {
		uint64_t *s;
		while (!(s = droce_spsc_reserve(r)))
			;
		*s = i * 2654435761u;
		droce_spsc_push(r);
	}
	return NULL;
}

static void test_two_threads_in_order(void **state)
{
	struct droce_spsc r;
	uint64_t *mem = calloc(64, sizeof(uint64_t));
	pthread_t t;
	assert_int_equal(droce_spsc_init(&r, mem, 64, sizeof(uint64_t)), 0);
	assert_int_equal(pthread_create(&t, NULL, producer, &r), 0);
	uint64_t bad = 0;
	for (uint64_t i = 0; i < N_ITEMS; i++) {
		uint64_t *s;
		while (!(s = droce_spsc_peek(&r)))
			;
		bad += *s != i * 2654435761u;
		droce_spsc_pop(&r);
	}
	pthread_join(t, NULL);
	assert_int_equal(bad, 0);
	assert_null(droce_spsc_peek(&r));
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects),
		cmocka_unit_test(test_full_and_empty),
		cmocka_unit_test(test_two_threads_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
