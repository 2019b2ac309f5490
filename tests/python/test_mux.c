/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The link multiplexer of the Python package (python/csrc/mux.c) over fake
 * links: each frame leaves on the port of its destination MAC, group
 * addresses on all, unknown ones nowhere; a burst filled from several ports
 * goes back to each port whole, with its own handles; tx_fold only when
 * every port has it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mux.h"

struct fake {
	unsigned tx, folds, flushes, have;      /* have: frames waiting to be received */
	unsigned released;
	uintptr_t handles_back;                 /* sum of the handles given back */
	uint8_t id;
	uint8_t last_dst[6];
};

static int f_tx(void *l, const struct droce_tx_frame *f, uint64_t now)
{
	struct fake *k = l;
	k->tx++;
	memcpy(k->last_dst, f->hdr, 6);
	return 0;
}

static int f_fold(void *l, const struct droce_tx_frame *f, uint32_t crc, uint64_t now)
{
	struct fake *k = l;
	k->folds++;
	return 0;
}

static void f_flush(void *l, uint64_t now)
{
	((struct fake *)l)->flushes++;
}

static unsigned f_rx(void *l, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct fake *k = l;
	unsigned got = k->have < n ? k->have : n;
	for (unsigned i = 0; i < got; i++) {
		f[i].data = &k->id;
		f[i].len = 1;
		f[i].handle = (void *)(uintptr_t)(k->id * 100u + i + 1);
	}
	k->have -= got;
	return got;
}

static void f_release(void *l, struct droce_rx_frame *f, unsigned n)
{
	struct fake *k = l;
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(*f[i].data, k->id); /* its own frames only */
		k->handles_back += (uintptr_t)f[i].handle;
	}
	k->released += n;
}

static const struct droce_link_ops fold_ops = {f_tx, f_flush, f_rx, f_release, f_fold, NULL};
static const struct droce_link_ops plain_ops = {f_tx, f_flush, f_rx, f_release, NULL, NULL};

static const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 0xa}, mac_b[6] = {2, 0, 0, 0, 0, 0xb},
		     mac_x[6] = {2, 0, 0, 0, 0, 0xc}, bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static int send_to(struct droce_link l, const uint8_t mac[6])
{
	uint8_t hdr[14] = {0};
	memcpy(hdr, mac, 6);
	struct droce_tx_frame f = {.hdr = hdr, .hdr_len = sizeof(hdr)};
	return l.ops->tx(l.priv, &f, 0);
}

static void test_tx_routes_by_mac(void **state)
{
	(void)state;
	struct droce_mux m;
	struct fake a = {.id = 1}, b = {.id = 2};
	droce_mux_init(&m);
	assert_int_equal(droce_mux_add(&m, (struct droce_link){&fold_ops, &a}, mac_a), 0);
	assert_int_equal(droce_mux_add(&m, (struct droce_link){&fold_ops, &b}, mac_b), 1);
	struct droce_link l = droce_mux_link(&m);
	assert_int_equal(send_to(l, mac_b), 0);
	assert_int_equal(b.tx, 1);
	assert_int_equal(a.tx, 0);
	assert_memory_equal(b.last_dst, mac_b, 6);
	send_to(l, mac_a);
	assert_int_equal(a.tx, 1);
	assert_int_equal(b.tx, 1);
	send_to(l, mac_x); /* nobody's: dropped, counted */
	assert_int_equal(a.tx + b.tx, 2);
	assert_int_equal(m.tx_unroutable, 1);
	send_to(l, bcast);
	assert_int_equal(a.tx, 2);
	assert_int_equal(b.tx, 2);
	assert_int_equal(m.tx_broadcast, 1);
	uint8_t hdr[14] = {0};
	memcpy(hdr, mac_b, 6);
	struct droce_tx_frame f = {.hdr = hdr, .hdr_len = sizeof(hdr)};
	assert_non_null(l.ops->tx_fold);
	assert_int_equal(l.ops->tx_fold(l.priv, &f, 0, 0), 0);
	assert_int_equal(b.folds, 1);
	assert_int_equal(a.folds, 0);
	l.ops->tx_flush(l.priv, 0);
	assert_int_equal(a.flushes + b.flushes, 2);
}

static void test_rx_burst_released_to_each(void **state)
{
	(void)state;
	struct droce_mux m;
	struct fake a = {.id = 1, .have = 3}, b = {.id = 2, .have = 2};
	droce_mux_init(&m);
	droce_mux_add(&m, (struct droce_link){&plain_ops, &a}, mac_a);
	droce_mux_add(&m, (struct droce_link){&plain_ops, &b}, mac_b);
	struct droce_link l = droce_mux_link(&m);
	struct droce_rx_frame f[4];
	unsigned n = l.ops->rx_burst(l.priv, f, 4, 0);
	assert_int_equal(n, 4); /* 3 from a, 1 from b */
	l.ops->rx_release(l.priv, f, n);
	assert_int_equal(a.released, 3);
	assert_int_equal(b.released, 1);
	assert_int_equal(a.handles_back, 101 + 102 + 103);
	assert_int_equal(b.handles_back, 201);
	/* the next burst starts at the other port */
	a.have = 5;
	n = l.ops->rx_burst(l.priv, f, 4, 0);
	assert_int_equal(n, 4);
	assert_int_equal(*f[0].data, 2);
	l.ops->rx_release(l.priv, f, n);
	assert_int_equal(b.released, 2);
	assert_int_equal(a.released, 6);
}

static void test_fold_only_when_all_fold(void **state)
{
	(void)state;
	struct droce_mux m;
	struct fake a = {.id = 1}, b = {.id = 2};
	droce_mux_init(&m);
	droce_mux_add(&m, (struct droce_link){&fold_ops, &a}, mac_a);
	assert_non_null(droce_mux_link(&m).ops->tx_fold);
	droce_mux_add(&m, (struct droce_link){&plain_ops, &b}, mac_b);
	assert_null(droce_mux_link(&m).ops->tx_fold);
	struct droce_link_ops none = {0};
	assert_int_equal(droce_mux_add(&m, (struct droce_link){&none, &b}, mac_b), -EINVAL);
	for (unsigned i = m.n; i < DROCE_MUX_MAX; i++)
		assert_int_equal(droce_mux_add(&m, (struct droce_link){&plain_ops, &b}, mac_b), (int)i);
	assert_int_equal(droce_mux_add(&m, (struct droce_link){&plain_ops, &b}, mac_b), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_routes_by_mac),
		cmocka_unit_test(test_rx_burst_released_to_each),
		cmocka_unit_test(test_fold_only_when_all_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
