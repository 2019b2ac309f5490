/* SPDX-License-Identifier: BSD-3-Clause */
/* core/icrc_fast must equal the wire layer's ICRC for every size, L3 kind and segmentation,
 * whatever the variant fields hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/icrc_fast.h"
#include "wire/build.h"
#include "wire/opcode.h"
#include "wire/parse.h"

static void one(struct droce_icrc_seeds *zs, int ipv, bool v1, uint8_t opcode, uint32_t plen,
		const uint8_t *payload)
{
	static uint8_t frame[9000];
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	h.net.ip_version = (uint8_t)ipv;
	h.net.rocev1 = v1;
	h.net.dscp = 26;
	h.net.ecn = 2;
	h.net.ttl = 64;
	h.net.sport = 0xC123;
	h.net.src_ip[0] = 10;
	h.net.dst_ip[0] = 11;
	h.bth.opcode = opcode;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = 0x123456;
	h.bth.psn = 0xABCDEF;
	h.ext.reth.va = 0x1122334455667788ull;
	h.ext.reth.rkey = 0x99;
	h.ext.reth.dma_len = plen;
	h.ext.imm = 0xDEADBEEF;
	h.payload_len = plen;
	size_t flen = droce_build_frame(frame, sizeof(frame), &h, payload);
	assert_true(flen > 0);
	struct droce_pkt pkt;
	assert_int_equal(droce_parse(frame, flen, &pkt, 0), DROCE_PARSE_OK);
	enum droce_l3 kind = droce_build_l3_kind(&h);
	/* The variant fields (A17.4.5) changed as a network would (and then
	 * some): the ICRC must not move. */
	uint8_t *ip = frame + pkt.l3_off;
	uint8_t x = (uint8_t)(plen * 7 + opcode + ipv);
	if (kind == DROCE_L3_IPV4) {
		ip[1] ^= x;
		ip[8] ^= (uint8_t)(x + 1);
		ip[10] ^= (uint8_t)(x + 2);
		ip[11] ^= (uint8_t)(x + 3);
		ip[20 + 6] ^= (uint8_t)(x + 4);
		ip[20 + 7] ^= (uint8_t)(x + 5);
		ip[20 + 8 + 4] ^= (uint8_t)(x | 0xC0);
	} else {
		ip[0] ^= (uint8_t)(x & 0x0F);
		ip[1] ^= x;
		ip[2] ^= (uint8_t)(x + 1);
		ip[3] ^= (uint8_t)(x + 2);
		ip[7] ^= (uint8_t)(x + 3);
		size_t udp = v1 ? 0 : 8;
		if (udp) {
			ip[40 + 6] ^= (uint8_t)(x + 4);
			ip[40 + 7] ^= (uint8_t)(x + 5);
		}
		ip[40 + udp + 4] ^= (uint8_t)(x | 0xC0);
	}
	assert_int_equal(droce_icrc_rx(zs, frame + pkt.l3_off, kind, pkt.l3_len - 4), pkt.icrc);
	/* TX: headers + the payload split into up to 3 segments. */
	size_t l3 = droce_build_l3_off(&h);
	size_t hl = pkt.payload_off;
	struct droce_tx_seg seg[3];
	uint32_t a = plen / 3, b = plen / 2;
	seg[0].addr = payload;
	seg[0].len = a;
	seg[1].addr = payload + a;
	seg[1].len = b - a;
	seg[2].addr = payload + b;
	seg[2].len = plen - b;
	assert_int_equal(droce_icrc_tx(zs, frame + l3, kind, hl - l3, seg, 3, plen, droce_pad_count(plen)),
			 pkt.icrc);
}

static void test_equal_to_wire(void **state)
{
	struct droce_icrc_seeds zs;
	droce_icrc_seeds_init(&zs);
	uint8_t *payload = malloc(4096);
	for (unsigned i = 0; i < 4096; i++)
		payload[i] = (uint8_t)(i * 13 + 5);
	const uint32_t sizes[] = { 0, 1, 2, 3, 4, 63, 64, 100, 150, 200, 255, 256, 511, 1000, 1023,
				   1024, 1025, 2000, 4096 };
	const uint8_t ops[] = { DROCE_OP_RC_SEND_ONLY, DROCE_OP_RC_RDMA_WRITE_ONLY,
				DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY };
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (unsigned o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
			one(&zs, 4, false, ops[o], sizes[s], payload);
			one(&zs, 6, false, ops[o], sizes[s], payload);
			one(&zs, 6, true, ops[o], sizes[s], payload);
		}
	/* Every payload length across the in-register limit of short frames
	 * (DROCE_CRC32_OR_MAX bytes from the IP header), and the ACK. */
	for (uint32_t n = 0; n <= 300; n++) {
		one(&zs, 4, false, DROCE_OP_RC_RDMA_WRITE_ONLY, n, payload);
		one(&zs, 4, false, DROCE_OP_RC_RDMA_WRITE_MIDDLE, n, payload);
		one(&zs, 6, false, DROCE_OP_RC_SEND_ONLY, n, payload);
		one(&zs, 6, true, DROCE_OP_RC_SEND_ONLY, n, payload);
	}
	one(&zs, 4, false, DROCE_OP_RC_ACKNOWLEDGE, 0, payload);
	one(&zs, 6, false, DROCE_OP_RC_ACKNOWLEDGE, 0, payload);
	one(&zs, 6, true, DROCE_OP_RC_ACKNOWLEDGE, 0, payload);
	free(payload);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_to_wire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
