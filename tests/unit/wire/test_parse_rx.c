/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce_parse_rx (the engine's receive parse) against droce_parse with
 * DROCE_PARSE_F_NO_ICRC: the same result on every frame, and on an accepted
 * frame the same view apart from the fields it documents as not decoded
 * (MACs, source IP, the unused bytes of an IPv4 destination), with unused
 * extension fields zero. The view is poisoned first, so a field the fast
 * path forgets to set shows up as a difference. Frames: every opcode built
 * over IPv4, IPv6 and RoCEv1, with and without VLAN; then each of them
 * truncated, and with random bytes flipped; then the shared corpus.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/compare.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

static unsigned long compared, accepted;

static void same(const uint8_t *f, size_t len)
{
	struct droce_pkt a, b;
	enum droce_parse_result ra = droce_parse(f, len, &a, DROCE_PARSE_F_NO_ICRC);
	memset(&b, 0xA5, sizeof(b));
	enum droce_parse_result rb = droce_parse_rx(f, len, &b);
	compared++;
	if (ra != rb)
		fail_msg("len %zu: droce_parse %s, droce_parse_rx %s", len, droce_parse_result_name(ra),
			 droce_parse_result_name(rb));
	if (ra != DROCE_PARSE_OK)
		return;
	accepted++;
	/* The fields droce_parse_rx leaves alone, taken from the full parse. */
	memcpy(b.h.net.dst_mac, a.h.net.dst_mac, 6);
	memcpy(b.h.net.src_mac, a.h.net.src_mac, 6);
	if (a.h.net.ip_version == 4) { /* IPv4 addresses fill 4 of the 16 bytes */
		memcpy(b.h.net.src_ip + 4, a.h.net.src_ip + 4, 12);
		memcpy(b.h.net.dst_ip + 4, a.h.net.dst_ip + 4, 12);
	}
	const char *d = droce_hdrs_diff(&a.h, &b.h);
	if (d)
		fail_msg("len %zu opcode 0x%02x: %s differs", len, a.h.bth.opcode, d);
	/* Fields droce_hdrs_diff skips for this kind of frame are still set
	 * the same (the engine may read them). */
	assert_int_equal(a.h.net.has_vlan, b.h.net.has_vlan);
	assert_int_equal(a.h.net.vlan_tci, b.h.net.vlan_tci);
	assert_int_equal(a.h.net.flow_label, b.h.net.flow_label);
	assert_int_equal(a.h.net.ip_id, b.h.net.ip_id);
	assert_int_equal(a.h.net.sport, b.h.net.sport);
	assert_int_equal(a.h.net.dport, b.h.net.dport);
	assert_memory_equal(&a.h.ext, &b.h.ext, sizeof(a.h.ext));
	assert_int_equal(a.h.payload_len, b.h.payload_len);
	assert_ptr_equal(a.op, b.op);
	assert_ptr_equal(a.frame, b.frame);
	assert_int_equal(a.frame_len, b.frame_len);
	assert_int_equal(a.l3_off, b.l3_off);
	assert_int_equal(a.bth_off, b.bth_off);
	assert_int_equal(a.payload_off, b.payload_off);
	assert_ptr_equal(a.payload, b.payload);
	assert_int_equal(a.icrc, b.icrc);
	assert_int_equal(a.l3_len, b.l3_len);
}

static void test_built_frames(void **state)
{
	(void)state;
	struct wt_rng r = { wt_seed("parse_rx", 0x5EED0201) };
	uint8_t payload[300];
	wt_rng_fill(&r, payload, sizeof(payload));
	unsigned ops = 0;
	for (unsigned opc = 0; opc < 256; opc++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)opc);
		if (!oi)
			continue;
		ops++;
		for (int l3 = 0; l3 < 3; l3++)
			for (int vlan = 0; vlan < 2; vlan++) {
				struct droce_hdrs h;
				uint32_t plen = (oi->flags & DROCE_OPF_PAYLOAD) ? wt_rng_below(&r, 257) : 0;
				wt_random_hdrs(&r, &h, (uint8_t)opc, (enum wt_l3)l3, vlan, plen);
				size_t len;
				uint8_t *f = wt_build(&h, payload, &len);
				if (!f)
					continue;
				same(f, len);
				for (size_t cut = 0; cut < len; cut++)
					same(f, cut);
				uint8_t *g = malloc(len);
				assert_non_null(g);
				for (int k = 0; k < 200; k++) {
					memcpy(g, f, len);
					for (unsigned m = 1 + wt_rng_below(&r, 3); m; m--)
						g[wt_rng_below(&r, (uint32_t)len)] ^= (uint8_t)(1 + wt_rng_below(&r, 255));
					same(g, len);
				}
				free(g);
				free(f);
			}
	}
	assert_true(ops > 30);
	assert_true(accepted > 1000);
	printf("parse_rx: %lu frames compared, %lu accepted\n", compared, accepted);
}

static void on_frame(const struct wt_frame *f, void *arg)
{
	(void)arg;
	same(f->data, f->len);
}

static void test_corpus(void **state)
{
	(void)state;
	if (!wt_corpus_dir()) {
		skip();
		return;
	}
	unsigned long before = compared;
	assert_true(wt_corpus_for_each(on_frame, NULL) > 0);
	printf("parse_rx: %lu corpus frames compared\n", compared - before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_frames),
		cmocka_unit_test(test_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
