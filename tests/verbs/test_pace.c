/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress thread's pace (stack/verbs/pace.c): the window, the nap
 * while the application drives, the naps after stepping in. Stepped by
 * hand: every call is one wake-up of the thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "verbs/pace.h"

#define HOLD 4000u

/* An application that keeps calling: each look finds it driving, and the
 * looks thin out to one every PACE_DRIVE_NAP_MAX_NS. */
static void test_driving_thins_out(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	assert_true(dv_pace_app_drives(&p, 0));
	assert_false(dv_pace_app_drives(&p, PACE_ACTIVE_MIN_NS));
	uint64_t want = PACE_ACTIVE_MIN_NS, total = 0;
	for (int i = 0; i < 12; i++) {
		uint64_t nap = dv_pace_driving(&p, 0, false, 0);
		assert_int_equal(nap, want);
		total += nap;
		want = want * 2 > PACE_DRIVE_NAP_MAX_NS ? PACE_DRIVE_NAP_MAX_NS : want * 2;
	}
	assert_int_equal(dv_pace_driving(&p, 0, false, 0), PACE_DRIVE_NAP_MAX_NS);
	assert_int_equal(p.looks, 13);
	/* The old pace looked every window: 5 us, here 200 us in the end. */
	assert_true(total > 12 * PACE_ACTIVE_MIN_NS);
}

/* Never look before the window can have run out. */
static void test_not_before_the_window(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	p.active_ns = 80000; /* grown (a ping-pong, below) */
	p.drive_nap_ns = PACE_ACTIVE_MIN_NS;
	assert_int_equal(dv_pace_driving(&p, 30000, false, 0), 50000);
	assert_int_equal(dv_pace_driving(&p, 79000, false, 0), 10000);
}

/* ACKs the application held past their time: it stopped calling, so look
 * often again. */
static void test_flushed_resets(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	for (int i = 0; i < 10; i++)
		dv_pace_driving(&p, 0, false, 0);
	assert_int_equal(dv_pace_driving(&p, 0, false, 0), PACE_DRIVE_NAP_MAX_NS);
	assert_int_equal(dv_pace_driving(&p, 0, true, 0), PACE_ACTIVE_MIN_NS);
	assert_int_equal(dv_pace_driving(&p, 0, false, 0), 2 * PACE_ACTIVE_MIN_NS);
}

/* ACKs held: back when they are due, and the nap keeps its length. */
static void test_held_acks(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	for (int i = 0; i < 10; i++)
		dv_pace_driving(&p, 0, false, 0);
	assert_int_equal(dv_pace_driving(&p, 0, false, 3000), 3000);
	assert_int_equal(dv_pace_driving(&p, 0, false, HOLD), HOLD);
	assert_int_equal(p.drive_nap_ns, PACE_DRIVE_NAP_MAX_NS);
	/* Due later than the nap: the nap. */
	dv_pace_init(&p);
	assert_int_equal(dv_pace_driving(&p, 0, false, 9000), PACE_ACTIVE_MIN_NS);
	assert_int_equal(dv_pace_driving(&p, 0, false, 3000), 3000);
	assert_int_equal(p.drive_nap_ns, 2 * PACE_ACTIVE_MIN_NS);
}

/* Stepping in (the application is away) resets the nap it takes the next
 * time the application drives. */
static void test_stepping_in_resets(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	for (int i = 0; i < 10; i++)
		dv_pace_driving(&p, 0, false, 0);
	assert_int_equal(dv_pace_stepped_in(&p, 1, false, false, HOLD), 0);
	assert_int_equal(dv_pace_driving(&p, 0, false, 0), PACE_ACTIVE_MIN_NS);
	assert_int_equal(p.polls, 1);
	assert_int_equal(p.busy_polls, 1);
}

/* Busy polls follow each other, PACE_BUSY_STREAK at most. */
static void test_busy_streak(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	for (unsigned i = 1; i < PACE_BUSY_STREAK; i++)
		assert_int_equal(dv_pace_stepped_in(&p, 32, false, false, HOLD), 0);
	assert_int_equal(dv_pace_stepped_in(&p, 32, false, false, HOLD), PACE_IDLE_NAP_NS);
	assert_int_equal(dv_pace_stepped_in(&p, 32, false, false, HOLD), 0);
}

/* Idle polls nap; held ACKs bring it back when they are due; a long quiet
 * link naps longer. */
static void test_idle(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	assert_int_equal(dv_pace_stepped_in(&p, 0, false, false, HOLD), PACE_IDLE_NAP_NS);
	assert_int_equal(dv_pace_stepped_in(&p, 0, false, true, HOLD), HOLD);
	for (unsigned i = 2; i < PACE_IDLE_LONG; i++)
		dv_pace_stepped_in(&p, 0, false, false, HOLD);
	assert_int_equal(dv_pace_stepped_in(&p, 0, false, false, HOLD), PACE_IDLE_LONG_NS);
	assert_int_equal(dv_pace_stepped_in(&p, 1, false, false, HOLD), 0);
	assert_int_equal(dv_pace_stepped_in(&p, 0, false, false, HOLD), PACE_IDLE_NAP_NS);
}

/* The window: doubles when stepping in shortly after the application left
 * finds nothing (its replies arrive inside poll_cq), back to the minimum
 * when it finds work (it waits on memory for the peer's WRITE). */
static void test_window(void **state)
{
	struct dv_pace p;
	dv_pace_init(&p);
	uint64_t want = PACE_ACTIVE_MIN_NS;
	for (int i = 0; i < 8; i++) {
		dv_pace_stepped_in(&p, 0, true, false, HOLD);
		want = want * 2 > PACE_ACTIVE_MAX_NS ? PACE_ACTIVE_MAX_NS : want * 2;
		assert_int_equal(p.active_ns, want);
	}
	assert_int_equal(p.active_ns, PACE_ACTIVE_MAX_NS);
	/* Not recent: the window stays. */
	dv_pace_stepped_in(&p, 1, false, false, HOLD);
	assert_int_equal(p.active_ns, PACE_ACTIVE_MAX_NS);
	dv_pace_stepped_in(&p, 1, true, false, HOLD);
	assert_int_equal(p.active_ns, PACE_ACTIVE_MIN_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_driving_thins_out),
		cmocka_unit_test(test_not_before_the_window),
		cmocka_unit_test(test_flushed_resets),
		cmocka_unit_test(test_held_acks),
		cmocka_unit_test(test_stepping_in_resets),
		cmocka_unit_test(test_busy_streak),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
