/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every frame of the shared interop corpus (the .pcap files of ../shared/pcap-corpus,
 * made by rxe, ConnectX NICs and scapy) and every hex vector of
 * icrc-vectors.txt parses with a good ICRC, including the 60-byte frame with
 * Ethernet trailer padding and the IPv6 vector; re-building each from its
 * parsed fields gives the same fields back. Skips when ../shared is absent.
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
#include "wire/bytes.h"
#include "wire/compare.h"
#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire_test_util.h"

struct tally {
	unsigned roce, not_roce, trailer_padded, ipv6, rocev1, cnp, reth, aeth, deth;
	unsigned identical; /* rebuilt byte for byte */
};

/* Rebuild a parsed frame from its fields: same fields, same payload. */
static void rebuild(const struct wt_frame *f, const struct droce_pkt *p, struct tally *t)
{
	size_t len;
	uint8_t *b = wt_build(&p->h, p->payload, &len);
	struct droce_pkt q;

	if (!b)
		fail_msg("%s #%u: the builder refuses the parsed fields", f->file, f->index);
	assert_int_equal(droce_parse(b, len, &q, 0), DROCE_PARSE_OK);
	const char *d = droce_hdrs_diff(&p->h, &q.h);
	if (d)
		fail_msg("%s #%u: rebuilt field %s differs", f->file, f->index, d);
	if (p->h.payload_len)
		assert_memory_equal(q.payload, p->payload, p->h.payload_len);
	size_t end = p->l3_off + p->l3_len;
	if (len == end && memcmp(b, f->data, len) == 0)
		t->identical++;
	free(b);
}

static void check_frame(const struct wt_frame *f, void *arg)
{
	struct tally *t = arg;
	struct droce_pkt p;
	enum droce_parse_result r = droce_parse(f->data, f->len, &p, 0);

	if (r == DROCE_PARSE_NOT_ROCE) {
		/* only ARP is in the corpus besides RoCE */
		assert_true(f->len >= 14);
		assert_int_equal(droce_get_be16(f->data + 12), DROCE_ETHERTYPE_ARP);
		t->not_roce++;
		return;
	}
	if (r != DROCE_PARSE_OK)
		fail_msg("%s frame %u (%zu bytes): %s", f->file, f->index, f->len,
			 droce_parse_result_name(r));
	t->roce++;
	/* the ICRC sits at the end of the IP packet, not of the frame */
	size_t end = p.l3_off + p.l3_len;
	assert_true(end <= f->len);
	assert_int_equal(p.icrc, droce_icrc_load(f->data + end - 4));
	if (end < f->len) {
		t->trailer_padded++;
		printf("# %s #%u: %zu bytes of Ethernet trailer after the ICRC\n", f->file,
		       f->index, f->len - end);
	}
	t->ipv6 += p.h.net.ip_version == 6 && !p.h.net.rocev1;
	t->rocev1 += p.h.net.rocev1;
	t->cnp += p.h.bth.opcode == DROCE_OP_CNP;
	t->reth += !!(p.op->hdrs & DROCE_HDR_RETH);
	t->aeth += !!(p.op->hdrs & DROCE_HDR_AETH);
	t->deth += !!(p.op->hdrs & DROCE_HDR_DETH);
	rebuild(f, &p, t);
}

static void test_corpus_pcaps(void **state)
{
	struct tally t = { 0 };
	int n = wt_corpus_for_each(check_frame, &t);
	if (n < 0 && !wt_corpus_dir())
		skip();
	assert_true(n > 0);
	printf("# %d frames: %u RoCE (%u IPv6, %u RoCEv1, %u CNP, %u RETH, %u AETH, "
	       "%u DETH, %u trailer-padded, %u rebuilt byte-identical), %u not RoCE\n",
	       n, t.roce, t.ipv6, t.rocev1, t.cnp, t.reth, t.aeth, t.deth,
	       t.trailer_padded, t.identical, t.not_roce);
	assert_int_equal(t.roce + t.not_roce, (unsigned)n);
	/* what the corpus README promises */
	assert_true(t.trailer_padded >= 1);
	assert_true(t.ipv6 >= 1);
	assert_true(t.rocev1 >= 2);
	assert_true(t.cnp >= 2);
	assert_true(t.reth >= 1 && t.aeth >= 1 && t.deth >= 1);
	assert_true(t.not_roce >= 4);
}

static void test_icrc_vectors(void **state)
{
	struct tally t = { 0 };
	int n = wt_vectors_for_each(check_frame, &t);
	if (n < 0 && !wt_corpus_dir())
		skip();
	assert_int_equal(n, 6);
	assert_int_equal(t.roce, 6);
	assert_int_equal(t.ipv6, 1);
	assert_int_equal(t.rocev1, 2);
	assert_int_equal(t.cnp, 1);
	printf("# %u ICRC vectors verified\n", t.roce);
}

/* The 60-byte frame: payload, pad and ICRC located from the IP length. */
struct padded {
	unsigned seen;
};

static void check_padded(const struct wt_frame *f, void *arg)
{
	struct padded *pd = arg;
	struct droce_pkt p;

	if (f->len != 60 || strcmp(f->file, "scapy-send-write-pad.pcap") != 0 || f->index != 1)
		return;
	pd->seen++;
	assert_int_equal(droce_parse(f->data, f->len, &p, 0), DROCE_PARSE_OK);
	assert_true(p.l3_off + p.l3_len < 60);
	assert_int_equal(p.payload_off + p.h.payload_len + p.h.bth.pad + 4,
			 p.l3_off + p.l3_len);
	/* reading the ICRC from the frame end instead would fail */
	assert_int_not_equal(p.icrc, droce_icrc_load(f->data + 56));
}

static void test_padded_60_byte_frame(void **state)
{
	struct padded pd = { 0 };
	int n = wt_corpus_for_each(check_padded, &pd);
	if (n < 0 && !wt_corpus_dir())
		skip();
	assert_int_equal(pd.seen, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_pcaps),
		cmocka_unit_test(test_icrc_vectors),
		cmocka_unit_test(test_padded_60_byte_frame),
	};
	return cmocka_run_group_tests_name("wire_corpus", tests, NULL, NULL);
}
