/* SPDX-License-Identifier: BSD-3-Clause */
/* MR table: registration errors, keys, bounds, access, stale keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/core_int.h"
#include "pair.h"

#define PD0 1u /* the context's own PD: what droce_reg_mr and a QP without one use */

static struct droce_ctx *mkctx(uint32_t max_mrs, uint64_t seed)
{
	static struct tl_pair link;
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	link.end[0].pair = &link;
	p.link.ops = &tl_ops;
	p.link.priv = &link.end[0];
	p.max_mrs = max_mrs;
	p.seed = seed;
	return droce_ctx_create(&p);
}

static void test_reg_errors(void **state)
{
	struct droce_ctx *ctx = mkctx(4, 1);
	uint8_t buf[64];
	errno = 0;
	assert_null(droce_reg_mr(ctx, buf, sizeof(buf), 1u << 7));
	assert_int_equal(errno, EINVAL);
	/* IBTA 10.6.3.1: remote write / atomic need local write. */
	assert_null(droce_reg_mr(ctx, buf, sizeof(buf), DROCE_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	assert_null(droce_reg_mr(ctx, buf, sizeof(buf), DROCE_ACCESS_REMOTE_ATOMIC));
	assert_null(droce_reg_mr(ctx, NULL, 10, 0));
	assert_null(droce_reg_mr(NULL, buf, 10, 0));
	assert_int_equal(droce_dereg_mr(NULL), -EINVAL);
	/* Table full -> ENOMEM. */
	struct droce_mr *m[4];
	for (int i = 0; i < 4; i++)
		assert_non_null(m[i] = droce_reg_mr(ctx, buf, sizeof(buf), DROCE_ACCESS_REMOTE_READ));
	assert_null(droce_reg_mr(ctx, buf, sizeof(buf), 0));
	assert_int_equal(errno, ENOMEM);
	for (int i = 0; i < 4; i++)
		assert_int_equal(droce_dereg_mr(m[i]), 0);
	droce_ctx_destroy(ctx);
}

static void test_keys_bounds_access(void **state)
{
	struct droce_ctx *ctx = mkctx(64, 99);
	uint8_t buf[256];
	struct droce_mr *mr = droce_reg_mr(ctx, buf + 16, 128,
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_ptr_equal(mr->addr, buf + 16);
	assert_int_equal(mr->length, 128);
	uint64_t va = (uintptr_t)(buf + 16);
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va, 128, DROCE_ACCESS_REMOTE_READ, PD0, NULL), buf + 16);
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va + 100, 28, 0, PD0, NULL), buf + 116);
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va + 128, 0, 0, PD0, NULL), buf + 144);
	/* Bounds: one byte before, one past the end, overflow. */
	assert_null(droce_mr_lookup(ctx, mr->rkey, va - 1, 4, 0, PD0, NULL));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va + 100, 29, 0, PD0, NULL));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va + 1, UINT64_MAX, 0, PD0, NULL));
	assert_null(droce_mr_lookup(ctx, mr->rkey, UINT64_MAX - 2, 8, 0, PD0, NULL));
	/* Access: not granted. */
	assert_null(droce_mr_lookup(ctx, mr->rkey, va, 8, DROCE_ACCESS_REMOTE_WRITE, PD0, NULL));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va, 8, DROCE_ACCESS_REMOTE_ATOMIC, PD0, NULL));
	/* Wrong key bits, wrong index. */
	for (unsigned k = 1; k < 256; k++)
		assert_null(droce_mr_lookup(ctx, mr->rkey ^ k, va, 8, 0, PD0, NULL));
	assert_null(droce_mr_lookup(ctx, mr->rkey ^ 1u, va, 8, 0, PD0, NULL));
	/* Another PD's QP (10.6.3.2). */
	assert_null(droce_mr_lookup(ctx, mr->rkey, va, 8, 0, PD0 + 1, NULL));
	assert_null(droce_mr_lookup(ctx, 0xFFFFFFFFu, va, 8, 0, PD0, NULL));
	/* Stale key after deregistration, even when the slot is reused. */
	uint32_t old = mr->rkey;
	assert_int_equal(droce_dereg_mr(mr), 0);
	assert_null(droce_mr_lookup(ctx, old, va, 8, 0, PD0, NULL));
	for (int i = 0; i < 64; i++) {
		struct droce_mr *n = droce_reg_mr(ctx, buf + 16, 128, DROCE_ACCESS_REMOTE_READ);
		assert_non_null(n);
		if ((n->rkey & 63) == (old & 63))
			assert_int_not_equal(n->rkey, old);
	}
	assert_null(droce_mr_lookup(ctx, old, va, 8, 0, PD0, NULL));
	droce_ctx_destroy(ctx);
}

static void test_keys_differ_by_seed(void **state)
{
	struct droce_ctx *a = mkctx(1024, 1), *b = mkctx(1024, 2);
	uint8_t buf[8];
	unsigned same = 0;
	for (int i = 0; i < 32; i++) {
		struct droce_mr *x = droce_reg_mr(a, buf, 8, 0), *y = droce_reg_mr(b, buf, 8, 0);
		same += x->rkey == y->rkey;
	}
	assert_true(same < 4);
	droce_ctx_destroy(a);
	droce_ctx_destroy(b);
}

/* One slot registered again and again (max_mrs 1): with 31 key bits per
 * slot no key repeats within 2^31 registrations (a permutation of the
 * count); 4096 in a row here, where 8 random bits would repeat within a
 * few dozen and the "differ from the last" rule let a key come back after
 * two registrations. A stale key is refused at each step. */
static void test_stale_key_never_matches(void **state)
{
	struct droce_ctx *ctx = mkctx(1, 7);
	uint8_t buf[8];
	enum { N = 4096 };
	uint32_t *seen = calloc(N, sizeof(*seen));
	assert_non_null(seen);
	for (unsigned i = 0; i < N; i++) {
		struct droce_mr *m = droce_reg_mr(ctx, buf, 8, DROCE_ACCESS_REMOTE_READ);
		assert_non_null(m);
		seen[i] = m->rkey;
		for (unsigned j = i >= 16 ? i - 16 : 0; j < i; j++)
			assert_null(droce_mr_lookup(ctx, seen[j], (uintptr_t)buf, 8, 0, PD0, NULL));
		assert_int_equal(droce_dereg_mr(m), 0);
	}
	/* All distinct: sort and compare neighbours. */
	for (unsigned i = 1; i < N; i++) {
		uint32_t v = seen[i];
		unsigned j = i;
		while (j > 0 && seen[j - 1] > v) {
			seen[j] = seen[j - 1];
			j--;
		}
		seen[j] = v;
	}
	for (unsigned i = 1; i < N; i++)
		assert_int_not_equal(seen[i], seen[i - 1]);
	free(seen);
	droce_ctx_destroy(ctx);
}

/* Keys do not follow from what a peer sees: two contexts with the same
 * address, MAC and parameters and no seed draw different keys (getrandom);
 * with the same seed they draw the same ones (simulation, replay). */
static void test_keys_unseeded_differ_seeded_repeat(void **state)
{
	struct droce_ctx *a = mkctx(4096, 0), *b = mkctx(4096, 0);
	struct droce_ctx *c = mkctx(4096, 42), *d = mkctx(4096, 42);
	uint8_t buf[8];
	unsigned same_ab = 0, same_cd = 0;
	for (int i = 0; i < 32; i++) {
		struct droce_mr *x = droce_reg_mr(a, buf, 8, 0), *y = droce_reg_mr(b, buf, 8, 0);
		struct droce_mr *z = droce_reg_mr(c, buf, 8, 0), *w = droce_reg_mr(d, buf, 8, 0);
		same_ab += x->rkey == y->rkey;
		same_cd += z->rkey == w->rkey;
	}
	assert_int_equal(same_ab, 0);
	assert_int_equal(same_cd, 32);
	droce_ctx_destroy(a);
	droce_ctx_destroy(b);
	droce_ctx_destroy(c);
	droce_ctx_destroy(d);
}

/* rdma-core's ibv_dealloc_pd: EBUSY while a region is in the PD. */
static void test_pd_of_mr(void **state)
{
	struct droce_ctx *ctx = mkctx(8, 3);
	uint8_t buf[64];
	struct droce_pd *pd = droce_alloc_pd(ctx);
	assert_non_null(pd);
	struct droce_mr *m = droce_reg_mr_pd(pd, buf, sizeof(buf), DROCE_ACCESS_REMOTE_READ);
	assert_non_null(m);
	assert_ptr_equal(m->pd, pd);
	uint64_t va = (uintptr_t)buf;
	assert_null(droce_mr_lookup(ctx, m->rkey, va, 8, 0, PD0, NULL));
	assert_ptr_equal(droce_mr_lookup(ctx, m->rkey, va, 8, 0, pd->id, NULL), buf);
	assert_int_equal(droce_dealloc_pd(pd), -EBUSY);
	assert_int_equal(droce_dereg_mr(m), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);
	errno = 0;
	assert_null(droce_reg_mr_pd(NULL, buf, 8, 0));
	assert_int_equal(errno, EINVAL);
	/* A PD never freed goes with its context (ASan's leak check). */
	assert_non_null(droce_alloc_pd(ctx));
	droce_ctx_destroy(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_errors),
		cmocka_unit_test(test_keys_bounds_access),
		cmocka_unit_test(test_keys_differ_by_seed),
		cmocka_unit_test(test_stale_key_never_matches),
		cmocka_unit_test(test_keys_unseeded_differ_seeded_repeat),
		cmocka_unit_test(test_pd_of_mr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
