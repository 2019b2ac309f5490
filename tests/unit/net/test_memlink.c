/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The in-memory link's tx_fold (stack/net/link/memlink.c): given the running
 * ICRC over the headers, it folds the payload and the pad into it while it
 * copies them, and the frame the other end receives is byte for byte what
 * droce_build_frame() makes (ICRC included), for every pad (0-3), payloads
 * from just over DROCE_ICRC_FAST_MAX to 4 KB, one to three segments.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/link/memlink.h"
#include "wire/build.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

static size_t write_frame(uint8_t *b, size_t cap, uint8_t ipv, uint32_t plen,
			  const uint8_t *payload)
{
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	memset(h.net.dst_mac, 0x02, 6);
	memset(h.net.src_mac, 0x04, 6);
	h.net.ip_version = ipv;
	h.net.src_ip[0] = 10;
	h.net.dst_ip[0] = 11;
	h.net.ttl = 64;
	h.net.sport = 0xc123;
	h.bth.opcode = 0x0A; /* RC RDMA WRITE ONLY */
	h.bth.pkey = 0xffff;
	h.bth.dqpn = 0x11;
	h.bth.psn = 0x100;
	h.ext.reth.va = 0x1000;
	h.ext.reth.rkey = 0x22;
	h.ext.reth.dma_len = plen;
	h.payload_len = plen;
	return droce_build_frame(b, cap, &h, payload);
}

static void test_fold_matches_build(void **state)
{
	(void)state;
	struct droce_memlink *ml = droce_memlink_create(NULL);
	assert_non_null(ml);
	struct droce_link a = droce_memlink_end(ml, 0), b = droce_memlink_end(ml, 1);
	assert_non_null(a.ops->tx_fold);
	static uint8_t payload[4096], ref[4400];
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	const uint32_t lens[] = {1025, 1026, 1027, 1028, 2049, 4093, 4096};
	unsigned frames = 0;
	for (unsigned v = 0; v < 2; v++) {
		uint8_t ipv = v ? 6 : 4;
		size_t l3_hdr = (ipv == 4 ? 20u : 40u) + 8u + 12u + 16u; /* IP UDP BTH RETH */
		for (unsigned li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			uint32_t plen = lens[li];
			unsigned pad = (4u - (plen & 3u)) & 3u;
			size_t flen = write_frame(ref, sizeof(ref), ipv, plen, payload);
			assert_int_equal(flen, 14 + l3_hdr + plen + pad + DROCE_ICRC_LEN);
			for (unsigned nseg = 1; nseg <= 3; nseg++) {
				struct droce_tx_frame f;
				memset(&f, 0, sizeof(f));
				f.hdr = ref;
				f.hdr_len = (uint32_t)(14 + l3_hdr);
				f.nseg = (uint8_t)nseg;
				uint32_t off = 0;
				for (unsigned i = 0; i < nseg; i++) {
					uint32_t end = i + 1 == nseg ? plen : plen * (i + 1) / nseg + i;
					f.seg[i].addr = payload + off;
					f.seg[i].len = end - off;
					off = end;
				}
				f.payload_len = plen;
				f.trailer_len = (uint8_t)(pad + DROCE_ICRC_LEN);
				uint32_t crc = droce_icrc_begin(ref + 14, ipv == 4 ? DROCE_L3_IPV4
									   : DROCE_L3_IPV6,
								l3_hdr);
				assert_int_equal(a.ops->tx_fold(a.priv, &f, crc, 0), 0);
				struct droce_rx_frame r;
				assert_int_equal(b.ops->rx_burst(b.priv, &r, 1, 0), 1);
				assert_int_equal(r.len, flen);
				assert_memory_equal(r.data, ref, flen);
				b.ops->rx_release(b.priv, &r, 1);
				frames++;
			}
		}
	}
	assert_int_equal(frames, 2 * 7 * 3);
	droce_memlink_destroy(ml);
}

/* A frame whose trailer cannot hold the ICRC is refused, not overrun. */
static void test_fold_refuses_short_trailer(void **state)
{
	(void)state;
	struct droce_memlink *ml = droce_memlink_create(NULL);
	assert_non_null(ml);
	struct droce_link a = droce_memlink_end(ml, 0);
	uint8_t hdr[64] = {0}, pl[2048] = {0};
	struct droce_tx_frame f;
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = sizeof(hdr);
	f.nseg = 1;
	f.seg[0].addr = pl;
	f.seg[0].len = sizeof(pl);
	f.payload_len = sizeof(pl);
	f.trailer_len = 2;
	assert_int_equal(a.ops->tx_fold(a.priv, &f, 0, 0), -EMSGSIZE);
	assert_int_equal(droce_memlink_pending(ml, DROCE_MEMLINK_0_TO_1), 0);
	droce_memlink_destroy(ml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_matches_build),
		cmocka_unit_test(test_fold_refuses_short_trailer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
