/* SPDX-License-Identifier: BSD-3-Clause */
/* stack/poll/poller.c: the accounting on a virtual clock, the adaptive
 * policy's back-off and its bounds (as asked: the sleeps' lengths are
 * counted as asked, so no assertion here depends on the scheduler). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include <droce/droce.h>

static struct droce_poller *make(uint8_t idle, uint64_t spin, uint64_t max)
{
	struct droce_poller_conf c;
	droce_poller_conf_init(&c);
	c.idle = idle;
	c.spin_ns = spin;
	c.sleep_max_ns = max;
	struct droce_poller *p = droce_poller_create(&c);
	assert_non_null(p);
	return p;
}

static struct droce_poller_stats stats(const struct droce_poller *p)
{
	struct droce_poller_stats s;
	assert_int_equal(droce_poller_get_stats(p, &s), 0);
	return s;
}

/* Each interval goes to the iteration that started it. */
static void test_accounting(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_BUSY, 0, 0);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	droce_poller_step(p, 1100, 0, UINT64_MAX);
	droce_poller_step(p, 1300, 0, UINT64_MAX);
	droce_poller_step(p, 1600, 2, UINT64_MAX);
	droce_poller_step(p, 1700, 0, UINT64_MAX);
	struct droce_poller_stats s = stats(p);
	assert_int_equal(s.busy_ns, 100 + 100);
	assert_int_equal(s.idle_ns, 200 + 300);
	assert_int_equal(s.busy_polls, 2);
	assert_int_equal(s.idle_polls, 2);
	assert_int_equal(s.idle, DROCE_IDLE_BUSY);
	droce_poller_destroy(p);
}

/* Busy never sleeps, however long the loop has been idle. */
static void test_busy_never_sleeps(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_BUSY, 1000, 0);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	for (uint64_t t = 2000000; t < 100000000; t += 1000000)
		droce_poller_step(p, t, 0, UINT64_MAX);
	assert_int_equal(stats(p).sleeps, 0);
	droce_poller_destroy(p);
}

/* Adaptive: polls through spin_ns, then sleeps 10, 20, 40 ... us up to the
 * maximum; work starts the back-off over. */
static void test_adaptive_backoff(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_ADAPTIVE, 5000, 40000);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	droce_poller_step(p, 3000, 0, UINT64_MAX); /* 2 us quiet: still spinning */
	assert_int_equal(stats(p).sleeps, 0);
	uint64_t expect[] = {10000, 20000, 40000, 40000};
	uint64_t t = 7000, sum = 0;
	for (unsigned i = 0; i < 4; i++, t += 100000) {
		droce_poller_step(p, t, 0, UINT64_MAX);
		sum += expect[i];
		assert_int_equal(stats(p).sleeps, i + 1);
		assert_int_equal(stats(p).sleep_ns, sum);
	}
	droce_poller_step(p, t, 3, UINT64_MAX); /* work */
	t += 6000;
	droce_poller_step(p, t, 0, UINT64_MAX);
	assert_int_equal(stats(p).sleep_ns, sum + 10000);
	droce_poller_destroy(p);
}

/* A sleep never runs past the next timer; a timer due already: no sleep. */
static void test_deadline_bounds(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_ADAPTIVE, 1000, 0);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	droce_poller_step(p, 5000, 0, 5000);
	assert_int_equal(stats(p).sleeps, 0);
	droce_poller_step(p, 6000, 0, 6700);
	assert_int_equal(stats(p).sleeps, 1);
	assert_int_equal(stats(p).sleep_ns, 700);
	droce_poller_destroy(p);
}

/* A wake between two steps (work posted during the poll) keeps the next
 * step from sleeping; the one after sleeps again. */
static void test_wake_skips_sleep(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_ADAPTIVE, 1000, 0);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	droce_poller_wake(p);
	droce_poller_step(p, 5000, 0, UINT64_MAX);
	assert_int_equal(stats(p).sleeps, 0);
	droce_poller_step(p, 6000, 0, UINT64_MAX);
	assert_int_equal(stats(p).sleeps, 1);
	droce_poller_destroy(p);
}

/* An added descriptor that is readable ends the sleep (10 s asked). */
static void test_fd_ends_sleep(void **state)
{
	(void)state;
	struct droce_poller *p = make(DROCE_IDLE_ADAPTIVE, 1000, 10000000000ull);
	int fd = eventfd(1, EFD_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(droce_poller_add_fd(p, fd), 0);
	assert_int_equal(droce_poller_add_fd(p, -1), -EINVAL);
	droce_poller_step(p, 1000, 1, UINT64_MAX);
	for (uint64_t t = 5000; t < 5000 + 30 * 1000; t += 1000)
		droce_poller_step(p, t, 0, UINT64_MAX); /* back-off up to 10 s sleeps */
	struct droce_poller_stats s = stats(p);
	assert_int_equal(s.woken, s.sleeps);
	assert_true(s.sleep_ns > 10000000000ull);
	close(fd);
	droce_poller_destroy(p);
}

static void test_parse(void **state)
{
	(void)state;
	uint8_t m = 9;
	assert_int_equal(droce_idle_mode_parse("busy", &m), 0);
	assert_int_equal(m, DROCE_IDLE_BUSY);
	assert_int_equal(droce_idle_mode_parse("adaptive", &m), 0);
	assert_int_equal(m, DROCE_IDLE_ADAPTIVE);
	assert_int_equal(droce_idle_mode_parse("sleepy", &m), -EINVAL);
	assert_int_equal(droce_idle_mode_parse(NULL, &m), -EINVAL);
	assert_string_equal(droce_idle_mode_name(DROCE_IDLE_ADAPTIVE), "adaptive");
	struct droce_poller_conf c;
	droce_poller_conf_init(&c);
	c.idle = 7;
	assert_null(droce_poller_create(&c));
	assert_null(droce_poller_create(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accounting),
		cmocka_unit_test(test_busy_never_sleeps),
		cmocka_unit_test(test_adaptive_backoff),
		cmocka_unit_test(test_deadline_bounds),
		cmocka_unit_test(test_wake_skips_sleep),
		cmocka_unit_test(test_fd_ends_sleep),
		cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
