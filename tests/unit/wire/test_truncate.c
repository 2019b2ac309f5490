/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every truncation (every length 0..len-1) of every corpus frame and of
 * built frames for every opcode is rejected as a truncation, never OK.
 * Each truncation is copied into a malloc'd buffer of exactly that size, so
 * the sanitizer build catches any read past the end.
 *
 * One exception is by design: bytes after the end of the IP packet are
 * Ethernet trailer padding (the 60-byte minimum frame), not part of the
 * RoCE packet, so cutting them off leaves a valid frame; those lengths must
 * parse OK with the same fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/build.h"
#include "wire/compare.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

static bool is_truncation(enum droce_parse_result r)
{
	return r == DROCE_PARSE_TRUNC_ETH || r == DROCE_PARSE_TRUNC_VLAN ||
	       r == DROCE_PARSE_TRUNC_IP || r == DROCE_PARSE_TRUNC_UDP ||
	       r == DROCE_PARSE_LEN_BEYOND_FRAME;
}

struct count {
	unsigned frames, cuts, trailer_ok;
};

static void truncate_all(const struct wt_frame *f, void *arg)
{
	struct count *c = arg;
	struct droce_pkt full, p;
	enum droce_parse_result r0 = droce_parse(f->data, f->len, &full, 0);
	size_t end = r0 == DROCE_PARSE_OK ? full.l3_off + full.l3_len : f->len;

	c->frames++;
	for (size_t len = 0; len < f->len; len++) {
		uint8_t *cut = malloc(len ? len : 1);
		assert_non_null(cut);
		memcpy(cut, f->data, len);
		enum droce_parse_result r = droce_parse(cut, len, &p, 0);
		if (len >= end) {
			/* only trailer padding was cut off */
			assert_int_equal(r, DROCE_PARSE_OK);
			assert_null(droce_hdrs_diff(&full.h, &p.h));
			c->trailer_ok++;
		} else if (r0 == DROCE_PARSE_NOT_ROCE) {
			assert_true(r == DROCE_PARSE_NOT_ROCE || is_truncation(r));
		} else if (!is_truncation(r)) {
			fail_msg("%s #%u cut to %zu of %zu bytes: %s", f->file, f->index, len,
				 f->len, droce_parse_result_name(r));
		}
		c->cuts++;
		free(cut);
	}
}

static void test_truncate_corpus(void **state)
{
	struct count c = { 0 };
	int n = wt_corpus_for_each(truncate_all, &c);
	if (n < 0 && !wt_corpus_dir())
		skip();
	assert_true(n > 0);
	assert_true(wt_vectors_for_each(truncate_all, &c) > 0);
	assert_true(c.trailer_ok >= 2); /* the 60-byte frame's 2 trailer bytes */
	printf("# %u corpus frames, %u truncations\n", c.frames, c.cuts);
}

static void test_truncate_built(void **state)
{
	struct wt_rng r = { wt_seed("truncate", 0x5EED0003) };
	struct count c = { 0 };
	uint8_t payload[4096];

	for (unsigned op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		if (!oi)
			continue;
		for (int l3 = WT_IPV4; l3 <= WT_ROCEV1; l3++) {
			for (int vlan = 0; vlan <= 1; vlan++) {
				uint32_t plen = 0;
				if (oi->flags & DROCE_OPF_PAYLOAD)
					plen = wt_rng_below(&r, 64);
				/* one large frame per network layer */
				if (op == DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE && vlan)
					plen = 4096;
				struct droce_hdrs h;
				size_t len;
				wt_random_hdrs(&r, &h, (uint8_t)op, (enum wt_l3)l3, vlan, plen);
				wt_rng_fill(&r, payload, plen);
				uint8_t *f = wt_build(&h, payload, &len);
				assert_non_null(f);
				struct wt_frame fr = { oi->name, (unsigned)l3, f, len };
				truncate_all(&fr, &c);
				free(f);
			}
		}
	}
	assert_int_equal(c.trailer_ok, 0);
	printf("# %u built frames, %u truncations\n", c.frames, c.cuts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncate_corpus),
		cmocka_unit_test(test_truncate_built),
	};
	return cmocka_run_group_tests_name("wire_truncate", tests, NULL, NULL);
}
