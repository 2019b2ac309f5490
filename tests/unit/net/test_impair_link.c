/* SPDX-License-Identifier: BSD-3-Clause */
/* The receive-side impairment wrapper: drop, duplicate, reorder and corrupt
 * over an inner link, with every inner buffer released exactly once. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "net/link/impair_link.h"
#include "net/link/memlink.h"

/* Frame i: 64 bytes, every byte i (not RoCE: rules match by position). */
static void send_frames(struct droce_link tx, unsigned n)
{
	for (unsigned i = 1; i <= n; i++) {
		uint8_t b[64];
		struct droce_tx_frame f = {0};
		memset(b, (int)i, sizeof(b));
		f.hdr = b;
		f.hdr_len = sizeof(b);
		assert_int_equal(tx.ops->tx(tx.priv, &f, 0), 0);
	}
}

/* Receive everything (polling until idle twice), return first bytes in order. */
static unsigned recv_all(struct droce_link rx, uint8_t *seen, unsigned max, unsigned burst)
{
	unsigned n = 0, idle = 0;
	while (idle < 2) {
		struct droce_rx_frame f[32];
		unsigned got = rx.ops->rx_burst(rx.priv, f, burst, 0);
		idle = got ? 0 : idle + 1;
		for (unsigned i = 0; i < got; i++) {
			assert_true(n < max);
			assert_int_equal(f[i].len, 64);
			seen[n++] = f[i].data[0];
		}
		rx.ops->rx_release(rx.priv, f, got);
	}
	return n;
}

static void test_rules(void **state)
{
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_impair *imp = droce_impair_create(NULL);
	assert_non_null(ml);
	assert_non_null(imp);
	struct droce_impair_rule drop = {.action = DROCE_IMPAIR_DROP, .match = DROCE_IMPAIR_M_NTH, .nth = 2};
	struct droce_impair_rule dup = {.action = DROCE_IMPAIR_DUP, .match = DROCE_IMPAIR_M_NTH, .nth = 3};
	struct droce_impair_rule hold = {.action = DROCE_IMPAIR_HOLD, .match = DROCE_IMPAIR_M_NTH, .nth = 4, .hold = 2};
	struct droce_impair_rule flip = {.action = DROCE_IMPAIR_CORRUPT, .match = DROCE_IMPAIR_M_NTH, .nth = 8,
					 .offset = 5, .xor_mask = 0x01};
	assert_int_equal(droce_impair_add_rule(imp, &drop), 0);
	assert_int_equal(droce_impair_add_rule(imp, &dup), 0);
	assert_int_equal(droce_impair_add_rule(imp, &hold), 0);
	assert_int_equal(droce_impair_add_rule(imp, &flip), 0);
	struct droce_impair_link *il = droce_impair_link_create(droce_memlink_end(ml, 1), imp);
	assert_non_null(il);

	send_frames(droce_memlink_end(ml, 0), 8);
	uint8_t seen[32];
	unsigned n = recv_all(droce_impair_link_get(il), seen, sizeof(seen), 32);
	/* 2 dropped, 3 twice, 4 held until two later frames (5, 6) passed. */
	const uint8_t want[] = {1, 3, 3, 5, 6, 4, 7, 8};
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(seen, want, sizeof(want));
	/* Every inner buffer went back: nothing outstanding on the memlink. */
	assert_int_equal(droce_memlink_outstanding(ml, DROCE_MEMLINK_0_TO_1), 0);
	droce_impair_link_destroy(il);
	droce_impair_destroy(imp);
	droce_memlink_destroy(ml);
}

static void test_held_frame_flushed_when_idle(void **state)
{
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_impair *imp = droce_impair_create(NULL);
	struct droce_impair_rule hold = {.action = DROCE_IMPAIR_HOLD, .match = DROCE_IMPAIR_M_NTH, .nth = 2, .hold = 5};
	assert_int_equal(droce_impair_add_rule(imp, &hold), 0);
	struct droce_impair_link *il = droce_impair_link_create(droce_memlink_end(ml, 1), imp);
	send_frames(droce_memlink_end(ml, 0), 3);
	uint8_t seen[8];
	/* Burst of 2: one inner frame per call, so ordering is visible. */
	unsigned n = recv_all(droce_impair_link_get(il), seen, sizeof(seen), 2);
	const uint8_t want[] = {1, 3, 2};
	assert_int_equal(n, 3);
	assert_memory_equal(seen, want, 3);
	assert_int_equal(droce_memlink_outstanding(ml, DROCE_MEMLINK_0_TO_1), 0);
	droce_impair_link_destroy(il);
	droce_impair_destroy(imp);
	droce_memlink_destroy(ml);
}

static void test_probabilistic_seeded(void **state)
{
	/* Same seed, same fate; frames conserved: got = sent - dropped + duplicated. */
	unsigned counts[2];
	for (int run = 0; run < 2; run++) {
		struct droce_memlink *ml = droce_memlink_create(NULL);
		struct droce_impair_spec spec;
		char err[64];
		assert_int_equal(droce_impair_parse("drop=0.1,dup=0.1,reorder=0.1,seed=42", &spec, err, sizeof(err)), 0);
		struct droce_impair *imp = droce_impair_create(&spec);
		struct droce_impair_link *il = droce_impair_link_create(droce_memlink_end(ml, 1), imp);
		uint8_t seen[512];
		unsigned total = 0;
		for (int round = 0; round < 10; round++) {
			send_frames(droce_memlink_end(ml, 0), 20);
			total += recv_all(droce_impair_link_get(il), seen, sizeof(seen), 32);
		}
		struct droce_impair_stats st;
		droce_impair_get_stats(imp, &st);
		assert_int_equal(st.frames, 200);
		assert_true(st.dropped > 0 && st.duplicated > 0 && st.held > 0);
		assert_int_equal(total, 200 - st.dropped + st.duplicated - droce_impair_link_dup_skipped(il));
		assert_int_equal(droce_memlink_outstanding(ml, DROCE_MEMLINK_0_TO_1), 0);
		counts[run] = total;
		droce_impair_link_destroy(il);
		droce_impair_destroy(imp);
		droce_memlink_destroy(ml);
	}
	assert_int_equal(counts[0], counts[1]);
}

static void test_create_rejects(void **state)
{
	struct droce_link none = {0};
	struct droce_impair *imp = droce_impair_create(NULL);
	errno = 0;
	assert_null(droce_impair_link_create(none, imp));
	assert_int_equal(errno, EINVAL);
	droce_impair_destroy(imp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_held_frame_flushed_when_idle),
		cmocka_unit_test(test_probabilistic_seeded),
		cmocka_unit_test(test_create_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
