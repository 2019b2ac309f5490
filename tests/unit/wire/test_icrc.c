/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC (IBTA vol 1 Annex A17.4.5, 7.8.1): the ISA-L path equals zlib's
 * crc32 over an independently masked copy; chaining over segments equals
 * one shot; known values (the CRC-32 check value, a frame made with scapy,
 * the corpus vectors); any single-bit flip in the covered bytes is caught,
 * and flips in the masked variant fields are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

/*
 * Reference ICRC written from the spec text, not from icrc.c: copy the
 * whole covered area behind 8 bytes of ones (the absent LRH), set the
 * variant fields to ones, run zlib's crc32.
 */
static uint32_t ref_icrc(const uint8_t *l3, enum droce_l3 kind, size_t covered)
{
	uint8_t *m = malloc(8 + covered);
	assert_non_null(m);
	memset(m, 0xFF, 8);
	memcpy(m + 8, l3, covered);
	uint8_t *ip = m + 8, *udp, *bth;
	if (kind == DROCE_L3_IPV4) {
		ip[1] = 0xFF;                 /* type of service (DSCP, ECN) */
		ip[8] = 0xFF;                 /* time to live */
		ip[10] = ip[11] = 0xFF;       /* header checksum */
		udp = ip + 20;
	} else {
		ip[0] |= 0x0F;                /* traffic class ... */
		ip[1] = ip[2] = ip[3] = 0xFF; /* ... and flow label */
		ip[7] = 0xFF;                 /* hop limit */
		udp = ip + 40;
	}
	if (kind != DROCE_L3_GRH) {
		udp[6] = udp[7] = 0xFF;       /* UDP checksum */
		bth = udp + 8;
	} else {
		bth = udp;
	}
	bth[4] = 0xFF;                        /* FECN, BECN, resv6 */
	uint32_t crc = (uint32_t)crc32(0L, m, (uInt)(8 + covered));
	free(m);
	return crc;
}

static enum droce_l3 kind_of(const struct droce_pkt *p)
{
	return p->h.net.rocev1 ? DROCE_L3_GRH
	       : p->h.net.ip_version == 4 ? DROCE_L3_IPV4 : DROCE_L3_IPV6;
}

static void test_crc32_check_value(void **state)
{
	static const char check[] = "123456789";
	assert_int_equal(droce_icrc_update(0, check, 9), 0xCBF43926u);
	assert_int_equal(crc32(0L, (const Bytef *)check, 9), 0xCBF43926u);
	assert_int_equal(droce_icrc_update(0, check, 0), 0);
	/* chaining from a running value, split anywhere */
	for (size_t i = 0; i <= 9; i++)
		assert_int_equal(droce_icrc_update(droce_icrc_update(0, check, i), check + i, 9 - i),
				 0xCBF43926u);
}

/* ISA-L crc32_gzip_refl chains exactly like zlib's crc32. */
static void test_update_equals_zlib(void **state)
{
	struct wt_rng r = { wt_seed("isal_vs_zlib", 0x5EED0004) };
	uint8_t *buf = malloc(9000);
	assert_non_null(buf);
	for (int i = 0; i < 2000; i++) {
		size_t off = wt_rng_below(&r, 64), n = wt_rng_below(&r, 9000 - 64);
		uint32_t seed = i % 3 ? (uint32_t)wt_rng_next(&r) : 0;
		wt_rng_fill(&r, buf + off, n);
		assert_int_equal(droce_icrc_update(seed, buf + off, n),
				 (uint32_t)crc32(seed, buf + off, (uInt)n));
	}
	free(buf);
}

/* droce_icrc_begin over built frames == zlib over the reference mask ==
 * the ICRC the builder wrote; chained segments == one shot. */
static void test_begin_equals_reference(void **state)
{
	struct wt_rng r = { wt_seed("icrc_reference", 0x5EED0005) };
	uint8_t payload[3000];

	for (int i = 0; i < 600; i++) {
		uint8_t op;
		do
			op = (uint8_t)wt_rng_next(&r);
		while (!droce_opcode_info(op));
		const struct droce_opcode_info *oi = droce_opcode_info(op);
		uint32_t plen = oi->flags & DROCE_OPF_PAYLOAD ? wt_rng_below(&r, sizeof(payload)) : 0;
		struct droce_hdrs h;
		struct droce_pkt p;
		size_t len;
		wt_random_hdrs(&r, &h, op, (enum wt_l3)wt_rng_below(&r, 3), wt_rng_below(&r, 2), plen);
		wt_rng_fill(&r, payload, plen);
		uint8_t *f = wt_build(&h, payload, &len);
		assert_non_null(f);
		assert_int_equal(droce_parse(f, len, &p, DROCE_PARSE_F_NO_ICRC), DROCE_PARSE_OK);
		size_t covered = len - 4 - p.l3_off;
		uint32_t want = ref_icrc(f + p.l3_off, kind_of(&p), covered);
		assert_int_equal(droce_icrc_load(f + len - 4), want);
		assert_int_equal(droce_icrc_begin(f + p.l3_off, kind_of(&p), covered), want);

		/* begin over the headers up to the BTH plus a random extra, then
		 * random segments */
		size_t pre = p.bth_off + DROCE_BTH_LEN - p.l3_off;
		size_t first = pre + wt_rng_below(&r, (uint32_t)(covered - pre + 1));
		uint32_t crc = droce_icrc_begin(f + p.l3_off, kind_of(&p), first);
		size_t done = first;
		while (done < covered) {
			size_t n = 1 + wt_rng_below(&r, (uint32_t)(covered - done));
			crc = droce_icrc_update(crc, f + p.l3_off + done, n);
			done += n;
		}
		assert_int_equal(crc, want);
		free(f);
	}
}

/* Corpus frames and vectors: the wire ICRC equals the reference. */
static void ref_frame(const struct wt_frame *f, void *arg)
{
	struct droce_pkt p;
	if (droce_parse(f->data, f->len, &p, DROCE_PARSE_F_NO_ICRC) != DROCE_PARSE_OK)
		return;
	size_t covered = p.l3_len - 4;
	assert_int_equal(p.icrc, ref_icrc(f->data + p.l3_off, kind_of(&p), covered));
	assert_int_equal(p.icrc, droce_icrc_begin(f->data + p.l3_off, kind_of(&p), covered));
	(*(unsigned *)arg)++;
}

static void test_corpus_reference(void **state)
{
	unsigned n = 0;
	if (!wt_corpus_dir())
		skip();
	assert_true(wt_corpus_for_each(ref_frame, &n) > 0);
	assert_true(wt_vectors_for_each(ref_frame, &n) > 0);
	assert_true(n >= 40);
}

/*
 * A frame made with Debian's python3-scapy 2.5 (scapy.contrib.roce computes
 * the ICRC): Ether(dst=02:00:00:00:00:02, src=02:00:00:00:00:01) /
 * IP(10.0.0.1 -> 10.0.0.2, tos=2, ttl=64, id=0x1234, DF) /
 * UDP(sport=0xC0DE, dport=4791, chksum=0) / BTH(opcode=4 RC_SEND_ONLY,
 * solicited=1, padcount=2, pkey=0xFFFF, dqpn=0x123, ackreq=1, psn=0xABCD) /
 * "droce!" + 2 pad bytes. The builder must produce it byte for byte.
 */
static const uint8_t scapy_frame[66] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x02, 0x00, 0x34, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x81, 0x0a, 0x00,
	0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00,
	0x04, 0xa0, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xab, 0xcd, 0x64, 0x72,
	0x6f, 0x63, 0x65, 0x21, 0x00, 0x00, 0x43, 0xe6, 0x61, 0xdf,
};

static void test_scapy_vector(void **state)
{
	struct droce_hdrs h;
	uint8_t buf[128];

	memset(&h, 0, sizeof(h));
	memcpy(h.net.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(h.net.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	h.net.ip_version = 4;
	memcpy(h.net.src_ip, "\x0a\x00\x00\x01", 4);
	memcpy(h.net.dst_ip, "\x0a\x00\x00\x02", 4);
	h.net.ecn = 2;
	h.net.ttl = 64;
	h.net.ip_id = 0x1234;
	h.net.sport = 0xC0DE;
	h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
	h.bth.se = true;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = 0x123;
	h.bth.ack_req = true;
	h.bth.psn = 0xABCD;
	h.payload_len = 6;
	size_t len = droce_build_frame(buf, sizeof(buf), &h, "droce!");
	assert_int_equal(len, sizeof(scapy_frame));
	assert_memory_equal(buf, scapy_frame, len);
	assert_int_equal(droce_icrc_begin(scapy_frame + 14, DROCE_L3_IPV4, len - 14 - 4),
			 0xDF61E643u);
}

/* Is bit @p bit of the l3 packet in a field the ICRC masks (A17.4.5.1)? */
static bool masked_bit(enum droce_l3 kind, size_t bit)
{
	size_t byte = bit / 8;
	size_t ip = kind == DROCE_L3_IPV4 ? 20 : 40;
	size_t bth = ip + (kind == DROCE_L3_GRH ? 0 : 8);

	if (kind == DROCE_L3_IPV4 && (byte == 1 || byte == 8 || byte == 10 || byte == 11))
		return true;
	if (kind != DROCE_L3_IPV4 && ((bit >= 4 && bit < 32) || byte == 7))
		return true;
	if (kind != DROCE_L3_GRH && (byte == ip + 6 || byte == ip + 7))
		return true;
	return byte == bth + 4;
}

static void flip_all_bits(struct wt_rng *r, uint8_t op, enum wt_l3 l3, bool vlan, uint32_t plen,
			  unsigned *bad_icrc, unsigned *kept)
{
	struct droce_hdrs h;
	struct droce_pkt p, q;
	uint8_t payload[64];
	size_t len;

	wt_random_hdrs(r, &h, op, l3, vlan, plen);
	wt_rng_fill(r, payload, plen);
	uint8_t *f = wt_build(&h, payload, &len);
	assert_non_null(f);
	assert_int_equal(droce_parse(f, len, &p, 0), DROCE_PARSE_OK);
	enum droce_l3 kind = kind_of(&p);
	size_t bth = p.bth_off - p.l3_off;

	for (size_t bit = 0; bit < (len - p.l3_off) * 8; bit++) {
		uint8_t *b = f + p.l3_off + bit / 8, mask = (uint8_t)(0x80u >> (bit % 8));
		*b ^= mask;
		enum droce_parse_result res = droce_parse(f, len, &q, 0);
		enum droce_parse_result structural = droce_parse(f, len, &q, DROCE_PARSE_F_NO_ICRC);
		if (masked_bit(kind, bit)) {
			if (res != DROCE_PARSE_OK)
				fail_msg("%s %s: flipping masked bit %zu gives %s",
					 droce_opcode_name(op), wt_l3_name[l3], bit,
					 droce_parse_result_name(res));
			(*kept)++;
		} else {
			if (res == DROCE_PARSE_OK)
				fail_msg("%s %s: flipping bit %zu goes unnoticed",
					 droce_opcode_name(op), wt_l3_name[l3], bit);
			/* structurally fine: it is the ICRC that catches it; from
			 * the BTH's P_Key on (but FECN/BECN) nothing is structural,
			 * nor are the IP addresses */
			size_t byte = bit / 8;
			size_t addr = kind == DROCE_L3_IPV4 ? 12 : 8;
			bool must = byte >= bth + 2 || (byte >= addr && byte < bth - (kind == DROCE_L3_GRH ? 0 : 8));
			if (structural == DROCE_PARSE_OK || must) {
				if (res != DROCE_PARSE_BAD_ICRC)
					fail_msg("%s %s: flipping bit %zu gives %s",
						 droce_opcode_name(op), wt_l3_name[l3], bit,
						 droce_parse_result_name(res));
				(*bad_icrc)++;
			}
		}
		*b ^= mask;
	}
	free(f);
}

static void test_single_bit_flips(void **state)
{
	struct wt_rng r = { wt_seed("bit_flips", 0x5EED0006) };
	unsigned bad = 0, kept = 0;
	static const uint8_t ops[] = {
		DROCE_OP_RC_SEND_ONLY, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
		DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, DROCE_OP_RC_COMPARE_SWAP,
		DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, DROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE,
		DROCE_OP_CNP,
	};
	for (size_t i = 0; i < sizeof(ops); i++)
		for (int l3 = WT_IPV4; l3 <= WT_ROCEV1; l3++) {
			uint32_t plen = droce_opcode_info(ops[i])->flags & DROCE_OPF_PAYLOAD
						? 33 + (uint32_t)i : 0;
			flip_all_bits(&r, ops[i], (enum wt_l3)l3, i & 1, plen, &bad, &kept);
		}
	printf("# %u flips caught by the ICRC, %u masked flips kept it good\n", bad, kept);
	assert_true(bad > 5000);
	assert_true(kept > 500);
}

/* Rewriting the variant fields as a router or switch would (TTL, DSCP,
 * ECN marking, UDP checksum, FECN/BECN) keeps the ICRC good, and the
 * parser reports the new values. */
static void test_variant_fields_keep_icrc(void **state)
{
	struct wt_rng r = { 11 };
	for (int l3 = WT_IPV4; l3 <= WT_ROCEV1; l3++) {
		struct droce_hdrs h;
		struct droce_pkt p;
		size_t len;
		wt_random_hdrs(&r, &h, DROCE_OP_RC_RDMA_WRITE_FIRST, (enum wt_l3)l3, true, 100);
		h.net.ecn = 1;
		h.bth.fecn = h.bth.becn = false;
		uint8_t payload[100] = { 0 };
		uint8_t *f = wt_build(&h, payload, &len);
		assert_non_null(f);
		size_t l3o = 18;
		uint8_t *ip = f + l3o;
		size_t bth = l3 == WT_IPV4 ? 28 : l3 == WT_IPV6 ? 48 : 40;
		if (l3 == WT_IPV4) {
			ip[1] = (uint8_t)(46 << 2 | 3); /* DSCP EF, CE */
			ip[8] = (uint8_t)(ip[8] - 1);
			ip[10] ^= 0x5A;
			ip[11] ^= 0xA5;
		} else {
			uint32_t w = droce_get_be32(ip);
			w = (w & 0xF0000000u) | (uint32_t)(46 << 2 | 3) << 20 | 0x12345u;
			droce_put_be32(ip, w);
			ip[7] = (uint8_t)(ip[7] - 1);
		}
		if (l3 != WT_ROCEV1)
			droce_put_be16(ip + bth - 2, 0xBEEF); /* UDP checksum */
		ip[bth + 4] = DROCE_BTH_FECN | DROCE_BTH_BECN;
		assert_int_equal(droce_parse(f, len, &p, 0), DROCE_PARSE_OK);
		assert_int_equal(p.h.net.dscp, 46);
		assert_int_equal(p.h.net.ecn, 3);
		assert_int_equal(p.h.net.ttl, (uint8_t)(h.net.ttl - 1));
		assert_true(p.h.bth.fecn && p.h.bth.becn);
		if (l3 != WT_IPV4)
			assert_int_equal(p.h.net.flow_label, 0x12345);
		free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32_check_value),
		cmocka_unit_test(test_update_equals_zlib),
		cmocka_unit_test(test_begin_equals_reference),
		cmocka_unit_test(test_corpus_reference),
		cmocka_unit_test(test_scapy_vector),
		cmocka_unit_test(test_single_bit_flips),
		cmocka_unit_test(test_variant_fields_keep_icrc),
	};
	return cmocka_run_group_tests_name("wire_icrc", tests, NULL, NULL);
}
