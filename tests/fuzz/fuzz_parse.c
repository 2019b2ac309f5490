/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the frame parser. Any input must be parsed without a
 * crash, an out-of-bounds read or undefined behaviour (the target is built
 * with -fsanitize=fuzzer,address,undefined). On top of that it checks:
 *  - the result is a known reason, and the ICRC check only ever turns an
 *    OK into BAD_ICRC (the structural checks do not depend on it);
 *  - an accepted frame's view stays inside the frame and adds up: payload +
 *    pad + ICRC end exactly at the IP length;
 *  - an accepted frame (ICRC checked or not) rebuilt by droce_build_frame
 *    from its parsed fields parses OK, with the same fields and payload.
 * A violated check aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/build.h"
#include "wire/compare.h"
#include "wire/hdr.h"
#include "wire/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_parse: check failed: %s: ", #cond); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			abort();                                           \
		}                                                          \
	} while (0)

static void check_rebuild(const struct droce_pkt *p)
{
	struct droce_hdrs h = p->h;
	struct droce_pkt q;

	/* The builder writes the pad the payload needs; a frame whose pad
	 * count is larger than that (payload + pad not 4-aligned is accepted,
	 * as rxe does) comes back with the canonical pad. */
	h.bth.pad = droce_pad_count(h.payload_len);
	size_t flen = droce_frame_len(&h);
	CHECK(flen > 0, "frame_len refuses parsed fields");
	uint8_t *buf = malloc(flen);
	CHECK(buf != NULL, "out of memory");
	/* the parsed IP length fits its 16-bit field, so the builder,
	 * whose only size limit is that field, must accept it, unless the
	 * canonical pad made the packet longer than it was */
	size_t n = droce_build_frame(buf, flen, &h, p->payload);
	if (n == 0 && h.bth.pad > p->h.bth.pad && p->l3_len + 3u > 0xFFFFu) {
		free(buf);
		return;
	}
	CHECK(n == flen, "build_frame returned %zu, frame_len %zu", n, flen);
	enum droce_parse_result r = droce_parse(buf, n, &q, 0);
	CHECK(r == DROCE_PARSE_OK, "rebuilt frame: %s", droce_parse_result_name(r));
	const char *d = droce_hdrs_diff(&h, &q.h);
	CHECK(d == NULL, "rebuilt frame: field %s differs", d);
	CHECK(h.payload_len == 0 || memcmp(q.payload, p->payload, h.payload_len) == 0,
	      "rebuilt payload differs");
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct droce_pkt p;
	enum droce_parse_result full = droce_parse(data, size, &p, 0);
	CHECK((unsigned)full < DROCE_PARSE__COUNT, "result %d", (int)full);
	enum droce_parse_result structural = droce_parse(data, size, &p, DROCE_PARSE_F_NO_ICRC);

	if (structural != DROCE_PARSE_OK) {
		CHECK(full == structural, "%s without the ICRC check, %s with it",
		      droce_parse_result_name(structural), droce_parse_result_name(full));
		return 0;
	}
	CHECK(full == DROCE_PARSE_OK || full == DROCE_PARSE_BAD_ICRC, "%s",
	      droce_parse_result_name(full));

	size_t end = (size_t)p.l3_off + p.l3_len;
	CHECK(end <= size, "IP end %zu beyond frame %zu", end, size);
	CHECK(p.op != NULL, "no opcode info");
	CHECK(p.payload == data + p.payload_off, "payload pointer");
	CHECK((size_t)p.payload_off + p.h.payload_len + p.h.bth.pad + DROCE_ICRC_LEN == end,
	      "payload %u + pad %u + ICRC do not end at the IP end", p.h.payload_len,
	      p.h.bth.pad);
	CHECK(p.payload_off - p.bth_off == p.op->hdr_len, "header length");
	CHECK(p.h.bth.tver == 0, "tver");
	check_rebuild(&p);
	return 0;
}
