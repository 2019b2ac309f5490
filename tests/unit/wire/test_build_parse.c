/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Builder -> parser round trip for every opcode of the table (iterated, not
 * listed), over IPv4, IPv6 and RoCEv1, with and without an 802.1Q tag,
 * random fields and payloads of 0..4096 bytes (every pad count 0..3); plus
 * the table's own consistency, the builder's refusals and the comparison
 * helper the round trip relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/compare.h"
#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

/* Build one frame, parse it, compare every field and the payload bytes. */
static void roundtrip_one(struct wt_rng *r, uint8_t opc, enum wt_l3 l3, bool vlan,
			  uint32_t plen)
{
	const struct droce_opcode_info *oi = droce_opcode_info(opc);
	struct droce_hdrs h;
	struct droce_pkt p;
	size_t len;

	wt_random_hdrs(r, &h, opc, l3, vlan, plen);
	uint8_t *payload = malloc(plen ? plen : 1);
	assert_non_null(payload);
	wt_rng_fill(r, payload, plen);
	uint8_t *f = wt_build(&h, payload, &len);
	if (!f)
		fail_msg("builder refused %s over %s vlan=%d payload %u", oi->name,
			 wt_l3_name[l3], vlan, plen);

	enum droce_parse_result res = droce_parse(f, len, &p, 0);
	if (res != DROCE_PARSE_OK)
		fail_msg("%s over %s vlan=%d payload %u: %s", oi->name, wt_l3_name[l3],
			 vlan, plen, droce_parse_result_name(res));
	const char *d = droce_hdrs_diff(&h, &p.h);
	if (!d)
		d = droce_hdrs_diff(&p.h, &h);
	if (d)
		fail_msg("%s over %s vlan=%d payload %u: field %s differs", oi->name,
			 wt_l3_name[l3], vlan, plen, d);
	assert_ptr_equal(p.op, oi);
	assert_int_equal(p.payload_off - p.bth_off, oi->hdr_len);
	assert_int_equal(p.h.bth.pad, droce_pad_count(plen));
	/* payload + pad + ICRC end exactly at the end of the frame */
	assert_int_equal((size_t)p.payload_off + plen + p.h.bth.pad + DROCE_ICRC_LEN, len);
	assert_int_equal(p.l3_off + p.l3_len, len);
	assert_ptr_equal(p.payload, f + p.payload_off);
	if (plen)
		assert_memory_equal(p.payload, payload, plen);
	for (unsigned i = 0; i < p.h.bth.pad; i++)
		assert_int_equal(f[p.payload_off + plen + i], 0);
	assert_int_equal(p.icrc, droce_icrc_load(f + len - 4));
	if (l3 == WT_IPV4) {
		/* RFC 1071: the header sums to 0xFFFF with its checksum; DF set,
		 * never fragmented */
		uint32_t sum = 0;
		for (unsigned i = 0; i < 20; i += 2)
			sum += droce_get_be16(f + p.l3_off + i);
		while (sum >> 16)
			sum = (sum & 0xFFFFu) + (sum >> 16);
		assert_int_equal(sum, 0xFFFF);
		assert_int_equal(droce_get_be16(f + p.l3_off + 6), 0x4000);
	}
	if (l3 != WT_ROCEV1)
		assert_int_equal(droce_get_be16(f + p.bth_off - 2), 0); /* UDP checksum */
	free(f);
	free(payload);
}

static void test_roundtrip_every_opcode(void **state)
{
	struct wt_rng r = { wt_seed("roundtrip", 0x5EED0001) };
	unsigned opcodes = 0, frames = 0;

	for (unsigned c = 0; c < 256; c++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)c);
		if (!oi)
			continue;
		opcodes++;
		for (int l3 = WT_IPV4; l3 <= WT_ROCEV1; l3++) {
			for (int vlan = 0; vlan <= 1; vlan++) {
				if (!(oi->flags & DROCE_OPF_PAYLOAD)) {
					roundtrip_one(&r, (uint8_t)c, (enum wt_l3)l3, vlan, 0);
					frames++;
					continue;
				}
				/* every pad count at both ends, then random lengths */
				static const uint32_t fixed[] = { 0, 1, 2, 3, 4, 5, 6, 7,
								  4093, 4094, 4095, 4096 };
				for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
					roundtrip_one(&r, (uint8_t)c, (enum wt_l3)l3, vlan, fixed[i]);
					frames++;
				}
				for (int i = 0; i < 8; i++) {
					roundtrip_one(&r, (uint8_t)c, (enum wt_l3)l3, vlan,
						      wt_rng_below(&r, 4097));
					frames++;
				}
			}
		}
	}
	/* RC 0x00-0x14, 0x16, 0x17 (23), UC 0x20-0x2b (12), UD (2), CNP (1). */
	assert_int_equal(opcodes, 38);
	assert_true(frames > 1000);
}

/* The table agrees with IBTA 9.2 / 9.3: lengths, wire order, flags. */
static void test_opcode_table_consistent(void **state)
{
	static const struct { unsigned bit, len; } order[] = {
		{ DROCE_HDR_DETH, DROCE_DETH_LEN },     { DROCE_HDR_RETH, DROCE_RETH_LEN },
		{ DROCE_HDR_ATOMIC, DROCE_ATOMIC_LEN }, { DROCE_HDR_AETH, DROCE_AETH_LEN },
		{ DROCE_HDR_AACK, DROCE_AACK_LEN },     { DROCE_HDR_IMM, DROCE_IMM_LEN },
		{ DROCE_HDR_IETH, DROCE_IETH_LEN },     { DROCE_HDR_CNP, DROCE_CNP_LEN },
	};
	for (unsigned c = 0; c < 256; c++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)c);
		if (!oi) {
			assert_string_equal(droce_opcode_name((uint8_t)c), "UNKNOWN");
			continue;
		}
		assert_string_equal(droce_opcode_name((uint8_t)c), oi->name);
		/* headers laid out back to back in wire order after the BTH */
		unsigned off = DROCE_BTH_LEN;
		const uint8_t offs[] = { oi->off_deth, oi->off_reth, oi->off_atomic,
					 oi->off_aeth, oi->off_aack, oi->off_imm,
					 oi->off_ieth };
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			if (i < sizeof(offs))
				assert_int_equal(offs[i], off);
			if (oi->hdrs & order[i].bit)
				off += order[i].len;
		}
		assert_int_equal(oi->hdr_len, off);
		/* exactly one position: FIRST, MIDDLE, LAST or ONLY */
		unsigned pos = oi->flags & (DROCE_OPF_ONLY | DROCE_OPF_MIDDLE);
		assert_true(pos == DROCE_OPF_FIRST || pos == DROCE_OPF_MIDDLE ||
			    pos == DROCE_OPF_LAST || pos == DROCE_OPF_ONLY);
		/* requester xor responder, except the CNP */
		bool req = oi->flags & DROCE_OPF_REQ, resp = oi->flags & DROCE_OPF_RESP;
		if (oi->flags & DROCE_OPF_CNP)
			assert_true(!req && !resp && c == 0x81);
		else
			assert_true(req != resp);
		/* IBTA 9.3: which operations carry which header */
		assert_int_equal(!!(oi->flags & DROCE_OPF_IMM), !!(oi->hdrs & DROCE_HDR_IMM));
		assert_int_equal(!!(oi->flags & DROCE_OPF_INV), !!(oi->hdrs & DROCE_HDR_IETH));
		assert_int_equal(droce_opcode_service((uint8_t)c) == DROCE_SVC_UD,
				 !!(oi->hdrs & DROCE_HDR_DETH));
		if ((oi->flags & DROCE_OPF_WRITE) && (oi->flags & DROCE_OPF_FIRST))
			assert_true(oi->hdrs & DROCE_HDR_RETH);
		if ((oi->flags & DROCE_OPF_WRITE) && (oi->flags & DROCE_OPF_MIDDLE))
			assert_int_equal(oi->hdrs, 0);
		if ((oi->flags & DROCE_OPF_READ) && (oi->flags & DROCE_OPF_RESP))
			assert_int_equal(!!(oi->hdrs & DROCE_HDR_AETH),
					 !(oi->flags & DROCE_OPF_MIDDLE));
		if (oi->flags & DROCE_OPF_ATOMIC)
			assert_true(oi->hdrs & (DROCE_HDR_ATOMIC | DROCE_HDR_AACK));
		/* payload-less operations: READ request, ACKs, atomics, CNP */
		bool payload = oi->flags & DROCE_OPF_PAYLOAD;
		assert_int_equal(payload, !(c == 0x0C || c == 0x11 || c == 0x12 || c == 0x13 ||
					    c == 0x14 || c == 0x81));
	}
	assert_int_equal(droce_opcode_info(DROCE_OP_RC_ATOMIC_ACKNOWLEDGE)->hdr_len, 24);
	assert_int_equal(droce_opcode_info(DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)->off_imm,
			 28);
	assert_int_equal(droce_opcode_info(DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE)->off_imm, 20);
	assert_int_equal(droce_opcode_info(DROCE_OP_CNP)->hdr_len, 28);
	assert_null(droce_opcode_info(0x15));
	assert_null(droce_opcode_info(0x2C));
	assert_null(droce_opcode_info(0x66));
}

/* hdr.h's structs put every field at the IBTA / RFC offset, and the
 * opcode table's lengths are the structs' sizes. */
static void test_hdr_layout(void **state)
{
	assert_int_equal(offsetof(struct droce_eth_hdr, ethertype), 12);
	assert_int_equal(offsetof(struct droce_vlan_hdr, ethertype), 2);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, total_len), 2);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, frag), 6);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, ttl), 8);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, csum), 10);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, src), 12);
	assert_int_equal(offsetof(struct droce_ipv4_hdr, dst), 16);
	assert_int_equal(offsetof(struct droce_ipv6_hdr, payload_len), 4);
	assert_int_equal(offsetof(struct droce_ipv6_hdr, hop_limit), 7);
	assert_int_equal(offsetof(struct droce_ipv6_hdr, src), 8);
	assert_int_equal(offsetof(struct droce_ipv6_hdr, dst), 24);
	assert_int_equal(offsetof(struct droce_udp_hdr, len), 4);
	assert_int_equal(offsetof(struct droce_udp_hdr, csum), 6);
	assert_int_equal(offsetof(struct droce_bth, pkey), 2);
	assert_int_equal(offsetof(struct droce_bth, resv8a), 4);
	assert_int_equal(offsetof(struct droce_bth, dqpn), 5);
	assert_int_equal(offsetof(struct droce_bth, ack_resv), 8);
	assert_int_equal(offsetof(struct droce_bth, psn), 9);
	assert_int_equal(offsetof(struct droce_reth, rkey), 8);
	assert_int_equal(offsetof(struct droce_reth, dma_len), 12);
	assert_int_equal(offsetof(struct droce_atomic_eth, rkey), 8);
	assert_int_equal(offsetof(struct droce_atomic_eth, swap_add), 12);
	assert_int_equal(offsetof(struct droce_atomic_eth, compare), 20);
	assert_int_equal(offsetof(struct droce_aeth, msn), 1);
	assert_int_equal(offsetof(struct droce_deth, sqpn), 5);
	assert_int_equal(sizeof(struct droce_bth), DROCE_BTH_LEN);
	assert_int_equal(sizeof(struct droce_deth), DROCE_DETH_LEN);
	assert_int_equal(sizeof(struct droce_reth), DROCE_RETH_LEN);
	assert_int_equal(sizeof(struct droce_atomic_eth), DROCE_ATOMIC_LEN);
	assert_int_equal(sizeof(struct droce_aeth), DROCE_AETH_LEN);
	assert_int_equal(sizeof(struct droce_atomic_ack_eth), DROCE_AACK_LEN);
	assert_int_equal(sizeof(struct droce_immdt), DROCE_IMM_LEN);
	assert_int_equal(sizeof(struct droce_ieth), DROCE_IETH_LEN);
	assert_int_equal(DROCE_CNP_RESV_LEN, DROCE_CNP_LEN);
}

/* Headers built separately, payload chained in segments (the zero-copy TX
 * path), give the same bytes as the one-shot builder. */
static void test_build_segments_equal_frame(void **state)
{
	struct wt_rng r = { wt_seed("segments", 0x5EED0002) };
	for (int iter = 0; iter < 200; iter++) {
		struct droce_hdrs h;
		uint8_t payload[1500], one[1700], seg[1700];
		uint32_t plen = wt_rng_below(&r, sizeof(payload) + 1);
		wt_random_hdrs(&r, &h, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
			       (enum wt_l3)wt_rng_below(&r, 3), wt_rng_below(&r, 2), plen);
		wt_rng_fill(&r, payload, plen);
		size_t flen = droce_build_frame(one, sizeof(one), &h, payload);
		assert_int_equal(flen, droce_frame_len(&h));

		size_t hlen = droce_build_hdrs(seg, sizeof(seg), &h);
		assert_true(hlen > 0);
		size_t l3 = droce_build_l3_off(&h);
		uint32_t crc = droce_icrc_begin(seg + l3, droce_build_l3_kind(&h), hlen - l3);
		uint32_t done = 0;
		while (done < plen) {
			uint32_t n = 1 + wt_rng_below(&r, plen - done);
			crc = droce_icrc_update(crc, payload + done, n);
			memcpy(seg + hlen + done, payload + done, n);
			done += n;
		}
		size_t tl = droce_build_trailer(seg + hlen + plen, crc, plen);
		assert_int_equal(tl, droce_pad_count(plen) + DROCE_ICRC_LEN);
		assert_int_equal(hlen + plen + tl, flen);
		assert_memory_equal(one, seg, flen);
	}
}

static void test_build_refusals(void **state)
{
	struct wt_rng r = { 42 };
	struct droce_hdrs h;
	uint8_t buf[256];

	wt_random_hdrs(&r, &h, DROCE_OP_RC_SEND_ONLY, WT_IPV4, false, 8);
	size_t flen = droce_frame_len(&h);
	assert_int_equal(flen, 14 + 20 + 8 + 12 + 8 + 4);
	assert_int_equal(droce_build_frame(buf, flen - 1, &h, buf), 0);
	assert_int_equal(droce_build_hdrs(buf, flen - 8 - 4 - 1, &h), 0);
	assert_int_equal(droce_build_hdrs(buf, flen - 8 - 4, &h), flen - 12);
	assert_int_equal(droce_build_frame(buf, flen, &h, buf + 200), flen);

	h.bth.opcode = 0x15; /* reserved */
	assert_int_equal(droce_frame_len(&h), 0);
	assert_int_equal(droce_build_hdrs(buf, sizeof(buf), &h), 0);
	assert_int_equal(droce_build_frame(buf, sizeof(buf), &h, buf), 0);

	h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
	h.net.ip_version = 5;
	assert_int_equal(droce_build_hdrs(buf, sizeof(buf), &h), 0);
	h.net.ip_version = 4;
	h.net.rocev1 = true; /* a GRH is IPv6-shaped */
	assert_int_equal(droce_build_hdrs(buf, sizeof(buf), &h), 0);

	/* an IP packet cannot exceed 65535 bytes */
	h.net.rocev1 = false;
	h.payload_len = 70000;
	assert_int_equal(droce_build_hdrs(buf, sizeof(buf), &h), 0);
}

/* The only size limit is the 16-bit IP length field (IPv4 total length,
 * IPv6 / GRH payload length): the largest payloads that fit build and parse,
 * one byte more is refused. payload + pad is a multiple of 4, so IPv4 tops
 * out at a total length of 65532 and IPv6 at a payload length of 65532. */
static void test_build_size_limit(void **state)
{
	static const struct { enum wt_l3 l3; uint32_t max_payload; } cases[] = {
		{ WT_IPV4, 65535u - 20u - 8u - 12u - 4u - 3u },   /* 65488 */
		{ WT_IPV6, 65535u - 8u - 12u - 4u - 3u },         /* 65508 */
		{ WT_ROCEV1, 65535u - 12u - 4u - 3u },            /* 65516 */
	};
	struct wt_rng r = { 99 };
	uint8_t *payload = calloc(1, 70000);
	assert_non_null(payload);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct droce_hdrs h;
		struct droce_pkt p;
		size_t len;
		wt_random_hdrs(&r, &h, DROCE_OP_RC_SEND_ONLY, cases[i].l3, true,
			       cases[i].max_payload);
		uint8_t *f = wt_build(&h, payload, &len);
		if (!f)
			fail_msg("%s: a %u-byte payload fits the IP length but is refused",
				 wt_l3_name[cases[i].l3], cases[i].max_payload);
		assert_int_equal(droce_parse(f, len, &p, 0), DROCE_PARSE_OK);
		assert_int_equal(p.h.payload_len, cases[i].max_payload);
		assert_true(p.l3_len - (cases[i].l3 == WT_IPV4 ? 0u : 40u) <= 0xFFFFu);
		free(f);
		h.payload_len++;
		assert_null(wt_build(&h, payload, &len));
		uint8_t hdr[128];
		assert_int_equal(droce_build_hdrs(hdr, sizeof(hdr), &h), 0);
	}
	free(payload);
}

/* droce_hdrs_diff notices a change in every field a frame carries and
 * ignores fields it does not carry. */
static void test_hdrs_diff(void **state)
{
	struct wt_rng r = { 7 };
	struct droce_hdrs a, b;

	wt_random_hdrs(&r, &a, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, WT_IPV4, true, 9);
	b = a;
	assert_null(droce_hdrs_diff(&a, &b));
#define CHANGED(stmt, name)                                      \
	do {                                                     \
		b = a;                                           \
		stmt;                                            \
		const char *d_ = droce_hdrs_diff(&a, &b);        \
		assert_non_null(d_);                             \
		assert_string_equal(d_, name);                   \
	} while (0)
#define IGNORED(stmt)                                            \
	do {                                                     \
		b = a;                                           \
		stmt;                                            \
		assert_null(droce_hdrs_diff(&a, &b));            \
	} while (0)
	CHANGED(b.net.src_mac[5] ^= 1, "net.src_mac");
	CHANGED(b.net.vlan_tci ^= 1, "net.vlan_tci");
	CHANGED(b.net.src_ip[3] ^= 1, "net.src_ip");
	CHANGED(b.net.ecn ^= 1, "net.ecn");
	CHANGED(b.net.ip_id ^= 1, "net.ip_id");
	CHANGED(b.net.sport ^= 1, "net.sport");
	CHANGED(b.bth.psn ^= 1, "bth.psn");
	CHANGED(b.bth.ack_req = !b.bth.ack_req, "bth.ack_req");
	CHANGED(b.ext.reth.rkey ^= 1, "ext.reth.rkey");
	CHANGED(b.ext.imm ^= 1, "ext.imm");
	CHANGED(b.payload_len++, "payload_len");
	IGNORED(b.net.src_ip[4] ^= 1);    /* beyond an IPv4 address */
	IGNORED(b.net.flow_label ^= 1);   /* IPv6 only */
	IGNORED(b.ext.aeth.msn ^= 1);     /* no AETH on a WRITE */
	IGNORED(b.ext.deth.qkey ^= 1);
	a.net.has_vlan = false;
	IGNORED(b.net.vlan_tci ^= 1);
	a.net.ip_version = 6;
	a.net.rocev1 = true;
	CHANGED(b.net.src_ip[4] ^= 1, "net.src_ip");
	CHANGED(b.net.flow_label ^= 1, "net.flow_label");
	IGNORED(b.net.sport ^= 1);        /* no UDP under a GRH */
	IGNORED(b.net.ip_id ^= 1);
#undef CHANGED
#undef IGNORED
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_layout),
		cmocka_unit_test(test_opcode_table_consistent),
		cmocka_unit_test(test_hdrs_diff),
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_build_segments_equal_frame),
		cmocka_unit_test(test_build_refusals),
		cmocka_unit_test(test_build_size_limit),
	};
	return cmocka_run_group_tests_name("wire_build_parse", tests, NULL, NULL);
}
