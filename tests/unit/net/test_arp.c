/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ARP (stack/net/neigh/arp.c): replies to requests for our IP only, the RFC 826
 * merge rule, expiry, static entries, a bounded table, resolve with its
 * request rate limit, gratuitous ARP, 802.1Q-tagged requests and malformed
 * frames counted. No EAL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/neigh/arp.h"
#include "wire/bytes.h"

#define SEC 1000000000ull

static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t our_ip[4] = {10, 0, 0, 1};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t peer_ip[4] = {10, 0, 0, 2};
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t zero6[6];

static struct droce_arp *mk(unsigned entries)
{
	struct droce_arp_conf c;
	memset(&c, 0, sizeof(c));
	memcpy(c.mac, our_mac, 6);
	memcpy(c.ip, our_ip, 4);
	c.entries = entries;
	c.ttl_ns = 10 * SEC;
	c.retry_ns = SEC;
	struct droce_arp *a = droce_arp_create(&c);
	assert_non_null(a);
	return a;
}

static size_t request(uint8_t *f, const uint8_t *smac, const uint8_t *sip, const uint8_t *tip)
{
	return droce_arp_build(f, 60, 1, bcast, smac, sip, zero6, tip);
}

static void test_create_rejects(void **state)
{
	(void)state;
	struct droce_arp_conf c;
	memset(&c, 0, sizeof(c));
	memcpy(c.mac, our_mac, 6);
	assert_null(droce_arp_create(&c)); /* zero IP */
	memcpy(c.ip, our_ip, 4);
	c.mac[0] = 0x01;                   /* multicast MAC */
	assert_null(droce_arp_create(&c));
	assert_null(droce_arp_create(NULL));
}

static void test_reply_to_request_for_us(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t f[60], out[64];
	request(f, peer_mac, peer_ip, our_ip);
	size_t n = droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out));
	assert_int_equal(n, DROCE_ARP_FRAME_LEN);
	assert_memory_equal(out, peer_mac, 6);          /* Ethernet dst */
	assert_memory_equal(out + 6, our_mac, 6);       /* Ethernet src */
	assert_int_equal(droce_get_be16(out + 12), 0x0806);
	assert_int_equal(droce_get_be16(out + 14 + 6), 2); /* oper reply */
	assert_memory_equal(out + 14 + 8, our_mac, 6);  /* sha */
	assert_memory_equal(out + 14 + 14, our_ip, 4);  /* spa */
	assert_memory_equal(out + 14 + 18, peer_mac, 6);/* tha */
	assert_memory_equal(out + 14 + 24, peer_ip, 4); /* tpa */
	/* the requester was learnt (merge rule: addressed to us) */
	uint8_t mac[6];
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 1), 0);
	assert_memory_equal(mac, peer_mac, 6);
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.rx_requests, 1);
	assert_int_equal(st.tx_replies, 1);
	droce_arp_destroy(a);
}

static void test_no_reply_for_others(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t f[60], out[64], mac[6];
	const uint8_t other_ip[4] = {10, 0, 0, 3};
	request(f, peer_mac, peer_ip, other_ip);
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out)), 0);
	/* strangers talking among themselves are not learnt */
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 0), -ENOENT);
	/* a reply to us from the peer is learnt; no answer to a reply */
	droce_arp_build(f, sizeof(f), 2, our_mac, peer_mac, peer_ip, our_mac, our_ip);
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out)), 0);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 0), 0);
	/* now known, a broadcast request from it for someone else refreshes it */
	request(f, peer_mac, peer_ip, other_ip);
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out)), 0);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 0), 0);
	assert_memory_equal(mac, peer_mac, 6);
	/* one naming another MAC does not replace it at once: disputed (not
	 * even after a second of silence) until a request asked after it is
	 * answered by that MAC alone (a NIC that moved), then taken */
	const uint8_t new_mac[6] = {0x02, 0, 0, 0, 0, 0x22};
	request(f, new_mac, peer_ip, other_ip);
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out)), 0);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, SEC / 2), -ENOENT);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 2 * SEC), -ENOENT);
	size_t rl;
	uint8_t req[60];
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 2 * SEC, req, sizeof(req), &rl), -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	droce_arp_build(f, sizeof(f), 2, our_mac, new_mac, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 2 * SEC + 1, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 3 * SEC), 0);
	assert_memory_equal(mac, new_mac, 6);
	droce_arp_destroy(a);
}

static void test_expiry(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t f[60], out[64], mac[6];
	request(f, peer_mac, peer_ip, our_ip);
	droce_arp_input(a, f, sizeof(f), 5 * SEC, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 14 * SEC), 0);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 15 * SEC), -ENOENT);
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.expired, 1);
	/* resolve of an expired entry asks again */
	size_t rl;
	uint8_t req[60];
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 15 * SEC, req, sizeof(req), &rl),
			 -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	droce_arp_destroy(a);
}

static void test_static_entries(void **state)
{
	(void)state;
	struct droce_arp *a = mk(2);
	uint8_t f[60], out[64], mac[6];
	const uint8_t st_mac[6] = {0x02, 0, 0, 0, 0, 0x99};
	assert_int_equal(droce_arp_add_static(a, peer_ip, st_mac), 0);
	/* the wire does not overwrite it, and it never expires */
	request(f, peer_mac, peer_ip, our_ip);
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out)), 60);
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, UINT64_MAX - 1), 0);
	assert_memory_equal(mac, st_mac, 6);
	/* table of 2: a second static fills it, a third has no room */
	const uint8_t ip2[4] = {10, 0, 0, 7}, ip3[4] = {10, 0, 0, 8};
	assert_int_equal(droce_arp_add_static(a, ip2, st_mac), 0);
	assert_int_equal(droce_arp_add_static(a, ip3, st_mac), -ENOSPC);
	size_t rl;
	assert_int_equal(droce_arp_resolve(a, ip3, mac, 0, out, sizeof(out), &rl), -ENOSPC);
	assert_int_equal(droce_arp_delete(a, ip2), 0);
	assert_int_equal(droce_arp_delete(a, ip2), -ENOENT);
	assert_int_equal(droce_arp_add_static(a, ip3, st_mac), 0);
	const uint8_t zero_ip[4] = {0};
	assert_int_equal(droce_arp_add_static(a, zero_ip, st_mac), -EINVAL);
	droce_arp_destroy(a);
}

static void test_bounded_table_evicts_oldest(void **state)
{
	(void)state;
	struct droce_arp *a = mk(3);
	uint8_t f[60], out[64], mac[6];
	uint8_t ips[4][4], macs[4][6];
	for (int i = 0; i < 4; i++) {
		const uint8_t ip[4] = {10, 0, 1, (uint8_t)(i + 1)};
		const uint8_t m[6] = {0x02, 0, 0, 0, 1, (uint8_t)(i + 1)};
		memcpy(ips[i], ip, 4);
		memcpy(macs[i], m, 6);
		request(f, m, ip, our_ip);
		droce_arp_input(a, f, sizeof(f), (uint64_t)i * SEC, out, sizeof(out));
	}
	/* the first (closest to expiry) was evicted, the others stay */
	assert_int_equal(droce_arp_lookup(a, ips[0], mac, 4 * SEC), -ENOENT);
	for (int i = 1; i < 4; i++) {
		assert_int_equal(droce_arp_lookup(a, ips[i], mac, 4 * SEC), 0);
		assert_memory_equal(mac, macs[i], 6);
	}
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.evicted, 1);
	droce_arp_destroy(a);
}

static void test_resolve_rate_limited(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t req[60], mac[6], out[64];
	size_t rl;
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 100, req, sizeof(req), &rl), -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	assert_memory_equal(req, bcast, 6);
	assert_int_equal(droce_get_be16(req + 14 + 6), 1);
	assert_memory_equal(req + 14 + 24, peer_ip, 4);
	/* within retry_ns: no second request */
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 100 + SEC / 2, req, sizeof(req), &rl),
			 -EAGAIN);
	assert_int_equal(rl, 0);
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 100 + SEC, req, sizeof(req), &rl),
			 -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	/* the reply completes the entry */
	uint8_t f[60];
	droce_arp_build(f, sizeof(f), 2, our_mac, peer_mac, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 2 * SEC, out, sizeof(out));
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 2 * SEC, req, sizeof(req), &rl), 0);
	assert_memory_equal(mac, peer_mac, 6);
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.tx_requests, 2);
	droce_arp_destroy(a);
}

static void test_gratuitous_and_conflict(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t g[60], out[64];
	assert_int_equal(droce_arp_gratuitous(a, g, sizeof(g)), DROCE_ARP_FRAME_LEN);
	assert_memory_equal(g, bcast, 6);
	assert_memory_equal(g + 14 + 14, our_ip, 4);
	assert_memory_equal(g + 14 + 24, our_ip, 4);
	assert_int_equal(droce_arp_gratuitous(a, g, 10), 0);
	/* our own announcement echoed back is no conflict; another MAC is */
	assert_int_equal(droce_arp_input(a, g, sizeof(g), 0, out, sizeof(out)), 0);
	droce_arp_build(g, sizeof(g), 1, bcast, peer_mac, our_ip, zero6, our_ip);
	assert_int_equal(droce_arp_input(a, g, sizeof(g), 0, out, sizeof(out)), 0);
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.conflicts, 1);
	assert_int_equal(st.tx_gratuitous, 1);
	droce_arp_destroy(a);
}

/* An attacker answers for the peer, before or after the peer itself: the
 * entry is not silently redirected (before: the last answer won, and any
 * frame claiming the address overwrote it); it is disputed, lookups fail,
 * resolve asks again, and it is usable only once one MAC has stood the lock
 * time (1 s) with no other contradicting it. Counted in mac_conflicts. */
static void test_conflicting_answers_dispute(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	const uint8_t liar[6] = {0x02, 0, 0, 0, 0, 0x66};
	uint8_t req[60], mac[6], f[60], out[64];
	size_t rl;
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 100, req, sizeof(req), &rl), -EAGAIN);
	/* the genuine answer, then a forged one */
	droce_arp_build(f, sizeof(f), 2, our_mac, peer_mac, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 200, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 300), 0);
	assert_memory_equal(mac, peer_mac, 6);
	droce_arp_build(f, sizeof(f), 2, our_mac, liar, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 400, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 500), -ENOENT);
	/* silence does not settle it: the liar answered last */
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 2 * SEC), -ENOENT);
	/* resolve asks everyone again (rate-limited as for an unknown address);
	 * both answer: still disputed */
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 2 * SEC, req, sizeof(req), &rl), -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	droce_arp_build(f, sizeof(f), 2, our_mac, peer_mac, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 2 * SEC + 10, out, sizeof(out));
	droce_arp_build(f, sizeof(f), 2, our_mac, liar, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 2 * SEC + 20, out, sizeof(out));
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 4 * SEC, req, sizeof(req), &rl), -EAGAIN);
	assert_int_equal(rl, DROCE_ARP_FRAME_LEN);
	/* the liar gives up: the genuine host answers, asked again it alone
	 * answers, and its MAC is taken */
	droce_arp_build(f, sizeof(f), 2, our_mac, peer_mac, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 4 * SEC + 10, out, sizeof(out));
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 5 * SEC + 20, req, sizeof(req), &rl), -EAGAIN);
	droce_arp_input(a, f, sizeof(f), 5 * SEC + 30, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 6 * SEC), -ENOENT); /* within retry_ns */
	assert_int_equal(droce_arp_resolve(a, peer_ip, mac, 6 * SEC + 20, req, sizeof(req), &rl), 0);
	assert_memory_equal(mac, peer_mac, 6);
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.mac_conflicts, 4);
	/* a static entry is never disputed */
	assert_int_equal(droce_arp_add_static(a, peer_ip, peer_mac), 0);
	droce_arp_build(f, sizeof(f), 2, our_mac, liar, peer_ip, our_mac, our_ip);
	droce_arp_input(a, f, sizeof(f), 5 * SEC, out, sizeof(out));
	assert_int_equal(droce_arp_lookup(a, peer_ip, mac, 5 * SEC), 0);
	assert_memory_equal(mac, peer_mac, 6);
	droce_arp_destroy(a);
}

static void test_vlan_tag_kept(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t plain[60], f[64], out[68];
	request(plain, peer_mac, peer_ip, our_ip);
	memcpy(f, plain, 12);
	f[12] = 0x81;
	f[13] = 0x00;
	f[14] = 0x20;
	f[15] = 0x05; /* PCP 1, VID 5 */
	memcpy(f + 16, plain + 12, 48);
	size_t n = droce_arp_input(a, f, sizeof(f), 0, out, sizeof(out));
	assert_int_equal(n, DROCE_ARP_FRAME_LEN + 4);
	assert_memory_equal(out + 12, f + 12, 4);
	assert_int_equal(droce_get_be16(out + 16), 0x0806);
	assert_memory_equal(out + 18 + 24, peer_ip, 4);
	/* too small an output buffer: no reply */
	assert_int_equal(droce_arp_input(a, f, sizeof(f), 0, out, 60), 0);
	droce_arp_destroy(a);
}

static void test_malformed_counted(void **state)
{
	(void)state;
	struct droce_arp *a = mk(8);
	uint8_t f[60], out[64];
	unsigned bad = 0;
	request(f, peer_mac, peer_ip, our_ip);
	assert_int_equal(droce_arp_input(a, f, 41, 0, out, sizeof(out)), 0); /* truncated */
	bad++;
	static const struct { unsigned off; uint8_t val; } mut[] = {
		{14 + 1, 6},   /* htype 6 */
		{14 + 3, 0xdd},/* ptype */
		{14 + 4, 8},   /* hlen */
		{14 + 5, 16},  /* plen */
		{14 + 7, 3},   /* oper RARP */
		{14 + 8, 0x01},/* multicast sender MAC */
		{13, 0x00},    /* ethertype 0x0800: not ARP at all */
	};
	for (unsigned i = 0; i < sizeof(mut) / sizeof(mut[0]); i++) {
		uint8_t g[60];
		memcpy(g, f, 60);
		g[mut[i].off] = mut[i].val;
		assert_int_equal(droce_arp_input(a, g, sizeof(g), 0, out, sizeof(out)), 0);
		bad++;
	}
	uint8_t z[60];
	memcpy(z, f, 60);
	memset(z + 14 + 8, 0, 6); /* zero sender MAC */
	assert_int_equal(droce_arp_input(a, z, sizeof(z), 0, out, sizeof(out)), 0);
	bad++;
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.rx_bad, bad);
	assert_int_equal(st.learned, 0);
	droce_arp_destroy(a);
}

/* Random and corrupted frames of exact-size buffers (ASan watches the reads):
 * every frame is counted once as a request, a reply or bad. */
static void test_garbage(void **state)
{
	(void)state;
	struct droce_arp *a = mk(4);
	uint64_t x = 0x243f6a8885a308d3ull;
	uint8_t good[60], out[64];
	request(good, peer_mac, peer_ip, our_ip);
	unsigned runs = 20000;
	for (unsigned i = 0; i < runs; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t len = (size_t)(x % 80);
		uint8_t *f = malloc(len ? len : 1);
		for (size_t k = 0; k < len; k++)
			f[k] = k < 60 && (i & 1) ? good[k] : (uint8_t)(x >> ((k % 8) * 8));
		if ((i & 1) && len > 0)
			f[(x >> 20) % len] ^= (uint8_t)(1u << ((x >> 40) % 8));
		(void)droce_arp_input(a, f, len, i, out, sizeof(out));
		free(f);
	}
	struct droce_arp_stats st;
	droce_arp_get_stats(a, &st);
	assert_int_equal(st.rx_requests + st.rx_replies + st.rx_bad, runs);
	assert_true(st.rx_bad > 0);
	assert_true(st.rx_requests > 0);
	droce_arp_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rejects),
		cmocka_unit_test(test_reply_to_request_for_us),
		cmocka_unit_test(test_no_reply_for_others),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_static_entries),
		cmocka_unit_test(test_bounded_table_evicts_oldest),
		cmocka_unit_test(test_resolve_rate_limited),
		cmocka_unit_test(test_gratuitous_and_conflict),
		cmocka_unit_test(test_conflicting_answers_dispute),
		cmocka_unit_test(test_vlan_tag_kept),
		cmocka_unit_test(test_malformed_counted),
		cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
