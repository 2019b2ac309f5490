/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICMP echo reply (stack/net/neigh/icmp.c) and frame classification
 * (stack/net/neigh/classify.c). No EAL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/neigh/classify.h"
#include "net/neigh/icmp.h"
#include "wire/build.h"
#include "wire/bytes.h"

static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t our_ip[4] = {10, 0, 0, 1};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t peer_ip[4] = {10, 0, 0, 2};

/* An echo request from the peer to @p dst with @p data_len data bytes. */
static size_t echo_request(uint8_t *f, const uint8_t *dst, size_t data_len)
{
	memcpy(f, our_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	droce_put_be16(f + 12, 0x0800);
	uint8_t *ip = f + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	droce_put_be16(ip + 2, (uint16_t)(20 + 8 + data_len));
	droce_put_be16(ip + 4, 0x1234);
	droce_put_be16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, peer_ip, 4);
	memcpy(ip + 16, dst, 4);
	droce_put_be16(ip + 10, droce_inet_csum(ip, 20));
	uint8_t *ic = ip + 20;
	ic[0] = 8;
	ic[1] = 0;
	droce_put_be16(ic + 2, 0);
	droce_put_be16(ic + 4, 0xbeef); /* id */
	droce_put_be16(ic + 6, 7);      /* seq */
	for (size_t i = 0; i < data_len; i++)
		ic[8 + i] = (uint8_t)i;
	droce_put_be16(ic + 2, droce_inet_csum(ic, 8 + data_len));
	size_t len = 14 + 20 + 8 + data_len;
	if (len < 60) {
		memset(f + len, 0, 60 - len);
		len = 60;
	}
	return len;
}

static void test_echo_reply(void **state)
{
	(void)state;
	uint8_t f[200], out[200];
	struct droce_icmp_stats st = {0};
	size_t len = echo_request(f, our_ip, 56);
	size_t n = droce_icmp_echo_reply(f, len, our_mac, our_ip, out, sizeof(out), &st);
	assert_int_equal(n, 14 + 20 + 8 + 56);
	assert_memory_equal(out, peer_mac, 6);
	assert_memory_equal(out + 6, our_mac, 6);
	const uint8_t *ip = out + 14, *ic = ip + 20;
	assert_int_equal(droce_inet_csum(ip, 20), 0);
	assert_memory_equal(ip + 12, our_ip, 4);
	assert_memory_equal(ip + 16, peer_ip, 4);
	assert_int_equal(ip[9], 1);
	assert_int_equal(ic[0], 0);
	assert_int_equal(droce_inet_csum(ic, 8 + 56), 0);
	assert_memory_equal(ic + 4, f + 14 + 20 + 4, 4 + 56); /* id, seq, data */
	assert_int_equal(st.rx_echo, 1);
	/* a small request gets a 60-byte padded reply */
	len = echo_request(f, our_ip, 0);
	assert_int_equal(droce_icmp_echo_reply(f, len, our_mac, our_ip, out, sizeof(out), &st), 60);
	assert_int_equal(droce_inet_csum(out + 14 + 20, 8), 0);
}

static void test_echo_ignored_or_bad(void **state)
{
	(void)state;
	uint8_t f[200], g[200], out[200];
	struct droce_icmp_stats st = {0};
	const uint8_t other[4] = {10, 0, 0, 9};
	size_t len = echo_request(f, other, 8);
	assert_int_equal(droce_icmp_echo_reply(f, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	assert_int_equal(st.rx_ignored, 1);
	len = echo_request(f, our_ip, 8);
	/* an echo reply (type 0) is not answered */
	memcpy(g, f, len);
	g[34] = 0;
	droce_put_be16(g + 36, 0);
	droce_put_be16(g + 36, droce_inet_csum(g + 34, 16));
	assert_int_equal(droce_icmp_echo_reply(g, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	assert_int_equal(st.rx_ignored, 2);
	/* bad ICMP checksum, bad IP checksum, fragment, truncated, IP length beyond frame */
	memcpy(g, f, len);
	g[34 + 9] ^= 1;
	assert_int_equal(droce_icmp_echo_reply(g, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	memcpy(g, f, len);
	g[14 + 8] = 1; /* TTL changes, checksum not updated */
	assert_int_equal(droce_icmp_echo_reply(g, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	memcpy(g, f, len);
	droce_put_be16(g + 14 + 6, 0x2000); /* MF */
	droce_put_be16(g + 14 + 10, 0);
	droce_put_be16(g + 14 + 10, droce_inet_csum(g + 14, 20));
	assert_int_equal(droce_icmp_echo_reply(g, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	assert_int_equal(droce_icmp_echo_reply(f, 30, our_mac, our_ip, out, sizeof(out), &st), 0);
	memcpy(g, f, len);
	droce_put_be16(g + 14 + 2, 500);
	droce_put_be16(g + 14 + 10, 0);
	droce_put_be16(g + 14 + 10, droce_inet_csum(g + 14, 20));
	assert_int_equal(droce_icmp_echo_reply(g, len, our_mac, our_ip, out, sizeof(out), &st), 0);
	assert_int_equal(st.rx_bad, 5);
	assert_int_equal(st.rx_echo, 0);
	/* no room for the reply */
	assert_int_equal(droce_icmp_echo_reply(f, len, our_mac, our_ip, out, 40, &st), 0);
}

static void test_classify(void **state)
{
	(void)state;
	uint8_t f[200];
	size_t len = echo_request(f, our_ip, 8);
	assert_int_equal(droce_net_classify(f, len), DROCE_NET_ICMP);
	assert_int_equal(droce_net_classify(f, 20), DROCE_NET_RUNT);
	assert_int_equal(droce_net_classify(f, 10), DROCE_NET_RUNT);
	assert_int_equal(droce_net_classify(NULL, 0), DROCE_NET_RUNT);
	f[14 + 9] = 6; /* TCP */
	assert_int_equal(droce_net_classify(f, len), DROCE_NET_OTHER_IPV4);
	droce_put_be16(f + 12, 0x0806);
	assert_int_equal(droce_net_classify(f, len), DROCE_NET_ARP);
	droce_put_be16(f + 12, 0x88cc); /* LLDP */
	assert_int_equal(droce_net_classify(f, len), DROCE_NET_OTHER);
	assert_string_equal(droce_net_class_name(DROCE_NET_ROCEV2_IPV6), "ROCEV2_IPV6");

	/* frames from the wire builder: IPv4, IPv6 (tagged too), RoCEv1 */
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	h.bth.opcode = 0x04; /* RC SEND ONLY */
	h.payload_len = 16;
	h.net.ttl = 64;
	h.net.sport = 49152;
	uint8_t payload[16] = {0};
	uint8_t b[256];
	static const struct { uint8_t ver; bool v1; bool vlan; enum droce_net_class c; } cases[] = {
		{4, false, false, DROCE_NET_ROCEV2_IPV4},
		{6, false, false, DROCE_NET_ROCEV2_IPV6},
		{6, false, true, DROCE_NET_ROCEV2_IPV6},
		{4, false, true, DROCE_NET_ROCEV2_IPV4},
		{6, true, false, DROCE_NET_ROCEV1},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h.net.ip_version = cases[i].ver;
		h.net.rocev1 = cases[i].v1;
		h.net.has_vlan = cases[i].vlan;
		size_t n = droce_build_frame(b, sizeof(b), &h, payload);
		assert_true(n > 0);
		assert_int_equal(droce_net_classify(b, n), cases[i].c);
		assert_int_equal(droce_net_l3_off(b, n), cases[i].vlan ? 18 : 14);
	}
	/* UDP to another port is not RoCE */
	h.net.ip_version = 4;
	h.net.rocev1 = false;
	h.net.has_vlan = false;
	size_t n = droce_build_frame(b, sizeof(b), &h, payload);
	droce_put_be16(b + 14 + 20 + 2, 53);
	assert_int_equal(droce_net_classify(b, n), DROCE_NET_OTHER_IPV4);
}

static void test_inet_csum(void **state)
{
	(void)state;
	/* RFC 1071 example bytes: 0001 f203 f4f5 f6f7 sum to 0xddf2 (complement 0x220d) */
	const uint8_t d[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	assert_int_equal(droce_inet_csum(d, 8), 0x220d);
	/* odd length pads with a zero byte */
	const uint8_t o[3] = {0x01, 0x02, 0x03};
	assert_int_equal(droce_inet_csum(o, 3), (uint16_t)~(0x0102 + 0x0300));
}

/* Random bytes of every length up to 200, and corrupted copies of good
 * frames: nothing reads out of bounds (the sanitizer build watches), every
 * frame is counted exactly once, and only well-formed requests get replies. */
static void test_garbage(void **state)
{
	(void)state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t good[200], f[200], out[256];
	size_t glen = echo_request(good, our_ip, 100);
	struct droce_icmp_stats st = {0};
	unsigned replies = 0, runs = 20000;
	for (unsigned i = 0; i < runs; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t len = (size_t)(x % 201);
		if (i & 1) {
			/* a good request with one byte flipped and a random length */
			memcpy(f, good, glen);
			f[(x >> 16) % glen] ^= (uint8_t)(1u << ((x >> 40) % 8));
			len = (x >> 24) % 2 ? glen : len;
		} else {
			for (size_t k = 0; k < len; k++)
				f[k] = (uint8_t)(x >> ((k % 8) * 8)) ^ (uint8_t)k;
		}
		uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
		memcpy(copy, f, len);
		(void)droce_net_classify(copy, len);
		size_t n = droce_icmp_echo_reply(copy, len, our_mac, our_ip, out, sizeof(out), &st);
		if (n != 0) {
			replies++;
			assert_int_equal(droce_inet_csum(out + 14, 20), 0);
		}
		free(copy);
	}
	assert_int_equal(st.rx_echo + st.rx_bad + st.rx_ignored, runs);
	assert_int_equal(st.rx_echo, replies);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo_reply),
		cmocka_unit_test(test_echo_ignored_or_bad),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_inet_csum),
		cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
