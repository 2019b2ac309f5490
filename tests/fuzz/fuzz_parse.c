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
 *    from its parsed fields parses OK, with the same fields and payload;
 *  - droce_parse_rx (the engine's parse) gives the same result, and on an
 *    accepted frame the same view but for the fields it does not decode.
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

/* droce_parse_rx against droce_parse(F_NO_ICRC): result, then the view. */
static void check_rx(const uint8_t *data, size_t size, enum droce_parse_result want,
		     const struct droce_pkt *a)
{
	struct droce_pkt b;
	memset(&b, 0xA5, sizeof(b));
	enum droce_parse_result got = droce_parse_rx(data, size, &b);
	CHECK(got == want, "droce_parse_rx %s, droce_parse %s", droce_parse_result_name(got),
	      droce_parse_result_name(want));
	if (want != DROCE_PARSE_OK)
		return;
	memcpy(b.h.net.dst_mac, a->h.net.dst_mac, 6);
	memcpy(b.h.net.src_mac, a->h.net.src_mac, 6);
	memcpy(b.h.net.src_ip, a->h.net.src_ip, 16);
	if (a->h.net.ip_version == 4)
		memcpy(b.h.net.dst_ip + 4, a->h.net.dst_ip + 4, 12);
	const char *d = droce_hdrs_diff(&a->h, &b.h);
	CHECK(d == NULL, "droce_parse_rx: %s differs", d);
	CHECK(memcmp(&a->h.ext, &b.h.ext, sizeof(b.h.ext)) == 0, "droce_parse_rx: unused ext fields");
	CHECK(a->op == b.op && a->payload == b.payload && a->l3_off == b.l3_off &&
	      a->bth_off == b.bth_off && a->payload_off == b.payload_off && a->icrc == b.icrc &&
	      a->l3_len == b.l3_len && a->h.payload_len == b.h.payload_len,
	      "droce_parse_rx: offsets");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct droce_pkt p;
	enum droce_parse_result full = droce_parse(data, size, &p, 0);
	CHECK((unsigned)full < DROCE_PARSE__COUNT, "result %d", (int)full);
	enum droce_parse_result structural = droce_parse(data, size, &p, DROCE_PARSE_F_NO_ICRC);
	check_rx(data, size, structural, &p);

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
