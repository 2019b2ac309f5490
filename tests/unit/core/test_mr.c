/* SPDX-License-Identifier: BSD-3-Clause */
/* MR table: registration errors, keys, bounds, access, stale keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/core_int.h"
#include "pair.h"

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
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va, 128, DROCE_ACCESS_REMOTE_READ), buf + 16);
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va + 100, 28, 0), buf + 116);
	assert_ptr_equal(droce_mr_lookup(ctx, mr->rkey, va + 128, 0, 0), buf + 144);
	/* Bounds: one byte before, one past the end, overflow. */
	assert_null(droce_mr_lookup(ctx, mr->rkey, va - 1, 4, 0));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va + 100, 29, 0));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va + 1, UINT64_MAX, 0));
	assert_null(droce_mr_lookup(ctx, mr->rkey, UINT64_MAX - 2, 8, 0));
	/* Access: not granted. */
	assert_null(droce_mr_lookup(ctx, mr->rkey, va, 8, DROCE_ACCESS_REMOTE_WRITE));
	assert_null(droce_mr_lookup(ctx, mr->rkey, va, 8, DROCE_ACCESS_REMOTE_ATOMIC));
	/* Wrong key bits, wrong index. */
	for (unsigned k = 1; k < 256; k++)
		assert_null(droce_mr_lookup(ctx, mr->rkey ^ k, va, 8, 0));
	assert_null(droce_mr_lookup(ctx, mr->rkey + (1u << 8), va, 8, 0));
	assert_null(droce_mr_lookup(ctx, 0xFFFFFFFFu, va, 8, 0));
	/* Stale key after deregistration, even when the slot is reused. */
	uint32_t old = mr->rkey;
	assert_int_equal(droce_dereg_mr(mr), 0);
	assert_null(droce_mr_lookup(ctx, old, va, 8, 0));
	for (int i = 0; i < 64; i++) {
		struct droce_mr *n = droce_reg_mr(ctx, buf + 16, 128, DROCE_ACCESS_REMOTE_READ);
		assert_non_null(n);
		if ((n->rkey >> 8) == (old >> 8))
			assert_int_not_equal(n->rkey, old);
	}
	assert_null(droce_mr_lookup(ctx, old, va, 8, 0));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_errors),
		cmocka_unit_test(test_keys_bounds_access),
		cmocka_unit_test(test_keys_differ_by_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
