/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The query verbs of the verbs drop-in (stack/verbs/device.c) fill the
 * caller's whole struct, of the size the caller says it has, as rdma-core
 * does: bytes droce has no value for are zero, never what the caller's
 * stack held. NCCL's port attribute struct is 56 bytes (active_speed_ex at
 * 52, read as the link speed when non-zero); rdma-core 44's is 52.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verbs/backend.h"
#include "verbs/dv.h"

/* A context as ibv_open_device makes it, as far as the queries look. */
static struct dv_context *fake_context(void)
{
	struct dv_context *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->dev = &dv_dev;
	c->shared = c; /* the first open: its own engine (dv_ctx follows it) */
	c->be = &dv_backend_thread;
	dv_dev.roce_mtu = 4096;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.context.device = &dv_dev.ibdev;
	return c;
}

static int all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void test_port_zeroes_the_callers_size(void **state)
{
	struct dv_context *c = fake_context();
	struct ibv_context *ic = &c->vctx.context;
	/* NCCL's own struct: rdma-core 44's plus a 32-bit active_speed_ex. */
	uint8_t buf[64];
	const size_t nccl = sizeof(struct ibv_port_attr) + 4;
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(dv_query_port_ex(ic, 1, (struct ibv_port_attr *)buf, nccl), 0);
	struct ibv_port_attr a;
	memcpy(&a, buf, sizeof(a));
	assert_int_equal(a.state, IBV_PORT_ACTIVE);
	assert_int_equal(a.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(a.active_mtu, IBV_MTU_4096);
	assert_true(all(buf + sizeof(a), nccl - sizeof(a), 0));
	/* Past the size given: untouched. */
	assert_true(all(buf + nccl, sizeof(buf) - nccl, 0xa5));
	/* Fields droce has no value for are zero, not the caller's bytes. */
	assert_int_equal(a.bad_pkey_cntr, 0);
	assert_int_equal(a.sm_sl, 0);
	assert_int_equal(a.flags, 0);
	/* A shorter struct (an older header): only that much written. */
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(dv_query_port_ex(ic, 1, (struct ibv_port_attr *)buf, 16), 0);
	assert_true(all(buf + 16, sizeof(buf) - 16, 0xa5));
	assert_int_equal(dv_query_port_ex(ic, 2, (struct ibv_port_attr *)buf, nccl), EINVAL);
	free(c);
}

static void test_device_zeroes_the_callers_size(void **state)
{
	struct dv_context *c = fake_context();
	struct ibv_context *ic = &c->vctx.context;
	uint8_t buf[sizeof(struct ibv_device_attr_ex) + 64];
	memset(buf, 0xa5, sizeof(buf));
	struct ibv_device_attr_ex *x = (struct ibv_device_attr_ex *)buf;
	/* A caller built against a newer header passes a bigger struct. */
	const size_t len = sizeof(*x) + 32;
	assert_int_equal(dv_query_device_ex(ic, NULL, x, len), 0);
	assert_int_equal(x->orig_attr.phys_port_cnt, 1);
	assert_int_equal(x->phys_port_cnt_ex, 1);
	assert_true(all(buf + sizeof(*x), 32, 0));
	assert_true(all(buf + len, sizeof(buf) - len, 0xa5));
	assert_int_equal(x->max_dm_size, 0);
	assert_int_equal(x->odp_caps.general_caps, 0);
	/* ibv_query_device: its whole fixed struct. */
	struct ibv_device_attr d;
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(ibv_query_device(ic, &d), 0);
	/* No EE contexts, RDDs or raw IPv6 QPs in droce: zero, not 0xa5. */
	assert_int_equal(d.max_ee, 0);
	assert_int_equal(d.max_rdd, 0);
	assert_int_equal(d.max_raw_ipv6_qp, 0);
	assert_int_equal(d.phys_port_cnt, 1);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_zeroes_the_callers_size),
		cmocka_unit_test(test_device_zeroes_the_callers_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
