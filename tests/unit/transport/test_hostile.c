/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile or broken peer: frames crafted with the wire builder and put on
 * the link as if side A had sent them, straight at B's responder (A's own QP
 * stays idle). Each test asserts B's exact answer (or its silence and the
 * drop counter), and that no byte of B's memory changed when it must not:
 *   - opcode sequence errors (FIRST/MIDDLE/LAST out of order, 9.7.5.1 responder
 *     checks) and length errors (FIRST/MIDDLE exactly PMTU, LAST/ONLY at most
 *     PMTU, payload total equal to the RETH DMA length) -> NAK invalid request
 *     (9.7.5.2.2), nothing written;
 *   - misaligned atomics -> NAK invalid request (9.4.5);
 *   - a zero-length RDMA needs no valid R_Key (C9-88);
 *   - out-of-sequence requests -> one PSN-sequence NAK per gap (9.7.5.2.1);
 *   - unknown QPN, wrong P_Key, wrong service, bad ICRC, truncation, another
 *     host's address -> dropped silently, counted (principle 5, docs/architecture.md);
 *   - ghost ACKs and NAKs for PSNs never sent -> ignored by the requester.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "pair.h"
#include "wire/bytes.h"

#define BUF 65536

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t E;        /* B's expected PSN */
	uint32_t bqpn;
	uint8_t *b;
	uint64_t rb;
	uint8_t payload[4096];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.timeout = 10;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->E = f->o.sq_psn[SIDE_A];
	f->bqpn = f->c.qpn[SIDE_B];
	f->p.allow_bad_frames = true; /* the tests inject broken frames */
	fill_pattern(f->payload, sizeof(f->payload), 99);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

static void untouched(const struct fx *f)
{
	for (size_t i = 0; i < BUF; i++)
		if (f->b[i] != 0xBB)
			fail_msg("byte %zu of B's memory was written", i);
}

static void inject(struct fx *f, uint8_t opcode, uint32_t psn, uint32_t plen, uint64_t va,
		   uint32_t dma_len)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_A, &h, opcode, f->bqpn, psn);
	h.payload_len = plen;
	h.ext.reth.va = va;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = dma_len;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
}

/* B's answers since record @p mark. */
static unsigned answers(struct fx *f, unsigned mark, unsigned *idx, unsigned max)
{
	pair_run(&f->p, 100ull * 1000 * 1000);
	return rec_dir(&f->p, mark, B_TO_A, idx, max);
}

/* A FIRST packet may be ACKed (coalescing is the responder's choice) but never NAKed. */
static void expect_no_nak(struct fx *f, unsigned n, const unsigned *idx)
{
	for (unsigned i = 0; i < n; i++)
		if (!syn_is_ack(f->p.rec[idx[i]].syndrome) ||
		    f->p.rec[idx[i]].opcode != DROCE_OP_RC_ACKNOWLEDGE) {
			rec_dump(&f->p, 0);
			fail_msg("a valid FIRST packet was refused");
		}
}

static void expect_one_nak(struct fx *f, unsigned mark, unsigned code, uint32_t psn)
{
	unsigned idx[8], n = answers(f, mark, idx, 8);
	if (n != 1 || f->p.rec[idx[0]].opcode != DROCE_OP_RC_ACKNOWLEDGE ||
	    !syn_is_nak(f->p.rec[idx[0]].syndrome, code) || f->p.rec[idx[0]].psn != psn) {
		rec_dump(&f->p, 0);
		fail_msg("want exactly one NAK code %u for PSN %06x", code, psn);
	}
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).nak_sent[code], 1);
}

static uint64_t total_drops(struct pair *p, int side)
{
	struct droce_ctx_stats st;
	uint64_t n = 0;
	assert_int_equal(droce_ctx_get_stats(p->ctx[side], &st), 0);
	for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++)
		n += st.drop[i];
	return n;
}

/* ---------------------------------------------------- opcode sequence -- */

static void test_middle_without_first(void **state)
{
	struct fx *f = *state;
	inject(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->E, 1024, 0, 0);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

static void test_last_without_first(void **state)
{
	struct fx *f = *state;
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 4096), 0);
	inject(f, DROCE_OP_RC_SEND_LAST, f->E, 100, 0, 0);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

static void test_write_first_then_send_last(void **state)
{
	struct fx *f = *state;
	unsigned idx[8];
	struct droce_hdrs h;

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 8192, 4096), 0);
	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_FIRST, f->bqpn, f->E);
	h.bth.ack_req = false;
	h.payload_len = 1024;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 2048;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_no_nak(f, answers(f, 0, idx, 8), idx);
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_SEND_LAST, f->E + 1, 100, 0, 0);
	expect_one_nak(f, mark, DROCE_NAK_INVALID_REQ, PSN(f->E + 1));
}

static void test_send_first_then_write_only(void **state)
{
	struct fx *f = *state;
	unsigned idx[8];
	struct droce_hdrs h;

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 4096), 0);
	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_SEND_FIRST, f->bqpn, f->E);
	h.bth.ack_req = false;
	h.payload_len = 1024;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_no_nak(f, answers(f, 0, idx, 8), idx);
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 1, 16, f->rb + 8192, 16);
	expect_one_nak(f, mark, DROCE_NAK_INVALID_REQ, PSN(f->E + 1));
	for (size_t i = 8192; i < 8192 + 16; i++)
		assert_int_equal(f->b[i], 0xBB);
}

/* ------------------------------------------------------------ lengths -- */

/* A FIRST packet shorter than the PMTU (9.7.5.2.2 length check). */
static void test_short_first(void **state)
{
	struct fx *f = *state;
	inject(f, DROCE_OP_RC_RDMA_WRITE_FIRST, f->E, 1000, f->rb, 3000);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

/* An ONLY packet with more payload than the PMTU. */
static void test_payload_over_mtu(void **state)
{
	struct fx *f = *state;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 1025, f->rb, 1025);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

/* WRITE_ONLY whose payload does not match its RETH DMA length. */
static void test_write_only_length_mismatch(void **state)
{
	struct fx *f = *state;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 50, f->rb, 100);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

/* FIRST ... LAST carrying more than the RETH said. */
static void test_write_last_overruns_dma_len(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	unsigned idx[8];

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_FIRST, f->bqpn, f->E);
	h.bth.ack_req = false;
	h.payload_len = 1024;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 1100;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_no_nak(f, answers(f, 0, idx, 8), idx);
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_LAST, f->E + 1, 200, 0, 0); /* 76 expected */
	expect_one_nak(f, mark, DROCE_NAK_INVALID_REQ, PSN(f->E + 1));
	/* nothing past the DMA length */
	for (size_t i = 1100; i < BUF; i++)
		assert_int_equal(f->b[i], 0xBB);
}

/* ------------------------------------------------------------ atomics -- */

static void test_misaligned_atomic(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_FETCH_ADD, f->bqpn, f->E);
	h.ext.atomic.va = f->rb + 4;
	h.ext.atomic.rkey = f->bmr->rkey;
	h.ext.atomic.swap_add = 1;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, NULL), 0);
	expect_one_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	untouched(f);
}

/* ------------------------------------------------ zero length (C9-88) -- */

/* A zero-length WRITE or READ needs no valid R_Key or address. */
static void test_zero_length_ignores_rkey(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[2];

	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 0, 0,
				   0xDEADBEEFu, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 2, f->amr, 0, 0, 0,
				   0xDEADBEEFu, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 2, wc, 1000000000ull), 2);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(wc[1].status, DROCE_WC_SUCCESS);
	assert_int_equal(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_REMOTE_ACCESS), 0);
	untouched(f);
}

/* ---------------------------------------------------- out of sequence -- */

/*
 * E+5, E+5, E+6: one NAK for E. Then E itself: accepted, ACKed. Then E+3:
 * a new gap, one new NAK for E+1.
 */
static void test_nak_once_per_gap_crafted(void **state)
{
	struct fx *f = *state;
	unsigned idx[16], n;

	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 5, 8, f->rb, 8);
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 5, 8, f->rb, 8);
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 6, 8, f->rb, 8);
	n = answers(f, 0, idx, 16);
	if (n != 1 || !syn_is_nak(f->p.rec[idx[0]].syndrome, DROCE_NAK_PSN_SEQ_ERR) ||
	    f->p.rec[idx[0]].psn != f->E) {
		rec_dump(&f->p, 0);
		fail_msg("want one PSN sequence NAK for %06x", f->E);
	}
	untouched(f);
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, 8);
	n = answers(f, mark, idx, 16);
	assert_int_equal(n, 1);
	assert_true(syn_is_ack(f->p.rec[idx[0]].syndrome));
	assert_int_equal(f->p.rec[idx[0]].psn, f->E);
	assert_int_equal(f->p.rec[idx[0]].msn, 1);
	assert_memory_equal(f->b, f->payload, 8);
	mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 3, 8, f->rb + 64, 8);
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 4, 8, f->rb + 64, 8);
	n = answers(f, mark, idx, 16);
	if (n != 1 || !syn_is_nak(f->p.rec[idx[0]].syndrome, DROCE_NAK_PSN_SEQ_ERR) ||
	    f->p.rec[idx[0]].psn != PSN(f->E + 1)) {
		rec_dump(&f->p, 0);
		fail_msg("want one PSN sequence NAK for %06x", PSN(f->E + 1));
	}
	assert_int_equal(f->p.rec[idx[0]].msn, 1);
	assert_int_equal(f->b[64], 0xBB);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).nak_sent[DROCE_NAK_PSN_SEQ_ERR], 2);
}

/* A duplicate of an executed WRITE_ONLY is re-ACKed with the current MSN, not written again. */
static void test_duplicate_reacked(void **state)
{
	struct fx *f = *state;
	unsigned idx[8], n;

	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, 8);
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 1, 8, f->rb + 8, 8);
	n = answers(f, 0, idx, 8);
	assert_true(n >= 1);
	assert_int_equal(f->p.rec[idx[n - 1]].psn, PSN(f->E + 1));
	assert_int_equal(f->p.rec[idx[n - 1]].msn, 2);
	memset(f->b, 0x77, 16); /* a re-execution would overwrite this */
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, 8);
	n = answers(f, mark, idx, 8);
	assert_int_equal(n, 1);
	assert_true(syn_is_ack(f->p.rec[idx[0]].syndrome));
	/* 9.7.5.1.2: the ACK of a duplicate carries the current MSN */
	assert_int_equal(f->p.rec[idx[0]].msn, 2);
	for (int i = 0; i < 16; i++)
		assert_int_equal(f->b[i], 0x77);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
}

/* ------------------------------------------------------ silent drops -- */

static void expect_silent_drop(struct fx *f, unsigned mark, uint64_t drops_before, const char *reason)
{
	unsigned idx[8];
	assert_int_equal(answers(f, mark, idx, 8), 0);
	assert_int_equal(total_drops(&f->p, SIDE_B), drops_before + 1);
	if (reason)
		assert_int_equal(ctx_drops(&f->p, SIDE_B, reason), 1);
	untouched(f);
}

static void test_unknown_qpn(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn ^ 0x5A5A, f->E);
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_silent_drop(f, 0, d0, "UNKNOWN_QPN");
}

static void test_bad_pkey(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.bth.pkey = 0x1234;
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_silent_drop(f, 0, d0, "BAD_PKEY");
}

static void test_uc_opcode_to_rc_qp(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_UC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_silent_drop(f, 0, d0, NULL);
}

static void test_other_host(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.net.dst_ip[3] = 99;
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	expect_silent_drop(f, 0, d0, "DST_IP");
}

/* The header checks run before the ICRC (rxe's order), yet a frame whose
 * corruption hit a header they read (the destination QPN, the P_Key) is
 * counted as corrupt, BAD_ICRC, not as a frame for another QP or partition:
 * and a corrupted payload placed by no one. */
static void test_corrupt_header_counts_bad_icrc(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint8_t buf[256];
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	size_t len = droce_build_frame(buf, sizeof(buf), &h, f->payload);
	assert_true(len > 40);
	/* BTH: 12 bytes before the RETH (16), the payload (8) and the ICRC (4) */
	uint8_t *bth = buf + len - 4 - 8 - 16 - 12;
	assert_int_equal(bth[0], DROCE_OP_RC_RDMA_WRITE_ONLY);
	bth[7] ^= 0x40; /* destination QPN: now names no QP */
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, (uint32_t)len), 0);
	expect_silent_drop(f, 0, d0, "BAD_ICRC");
	bth[7] ^= 0x40;
	bth[2] ^= 0x12; /* P_Key: another partition */
	unsigned mark = f->p.nrec;
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, (uint32_t)len), 0);
	expect_silent_drop(f, mark, d0 + 1, NULL);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "BAD_ICRC"), 2);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "UNKNOWN_QPN"), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "BAD_PKEY"), 0);
}

static void test_bad_icrc_and_truncated(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint8_t buf[256];
	size_t len;
	uint64_t d0 = total_drops(&f->p, SIDE_B);

	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 8;
	len = droce_build_frame(buf, sizeof(buf), &h, f->payload);
	assert_true(len > 0);
	buf[len - 1] ^= 1; /* the ICRC */
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, (uint32_t)len), 0);
	expect_silent_drop(f, 0, d0, "BAD_ICRC");
	buf[len - 1] ^= 1;
	unsigned mark = f->p.nrec;
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, 50), 0); /* cut inside the BTH */
	expect_silent_drop(f, mark, d0 + 1, NULL);
	/* the intact frame is still accepted afterwards */
	mark = f->p.nrec;
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, (uint32_t)len), 0);
	unsigned idx[4];
	assert_int_equal(answers(f, mark, idx, 4), 1);
	assert_true(syn_is_ack(f->p.rec[idx[0]].syndrome));
	assert_memory_equal(f->b, f->payload, 8);
}

/* ------------------------------------------------------ ghost answers -- */

/* ACKs and NAKs for PSNs A never sent must not complete or fail anything. */
static void test_ghost_responses_ignored(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	struct droce_wc wc[2];
	uint32_t apsn = f->o.sq_psn[SIDE_A];

	/* a ghost ACK ahead of anything sent, a ghost remote access NAK, a ghost READ response */
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->c.qpn[SIDE_A], apsn + 10);
	h.ext.aeth.syndrome = 0x1F;
	h.ext.aeth.msn = 5;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, NULL), 0);
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->c.qpn[SIDE_A], apsn);
	h.ext.aeth.syndrome = 0x60 | DROCE_NAK_REMOTE_ACCESS;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, NULL), 0);
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, f->c.qpn[SIDE_A], apsn);
	h.payload_len = 16;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, f->payload), 0);
	pair_run(&f->p, 100ull * 1000 * 1000);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 2), 0);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
	assert_true(total_drops(&f->p, SIDE_A) >= 3);
	/* and A still works, from its first PSN */
	fill_pattern(f->amr->addr, 100, 5);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 100, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(f->b, 100, 5), -1);
	int r = rec_find(&f->p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY);
	assert_true(r >= 0);
	assert_int_equal(f->p.rec[r].psn, apsn);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_middle_without_first),
		T(test_last_without_first),
		T(test_write_first_then_send_last),
		T(test_send_first_then_write_only),
		T(test_short_first),
		T(test_payload_over_mtu),
		T(test_write_only_length_mismatch),
		T(test_write_last_overruns_dma_len),
		T(test_misaligned_atomic),
		T(test_zero_length_ignores_rkey),
		T(test_nak_once_per_gap_crafted),
		T(test_duplicate_reacked),
		T(test_unknown_qpn),
		T(test_bad_pkey),
		T(test_uc_opcode_to_rc_qp),
		T(test_other_host),
		T(test_corrupt_header_counts_bad_icrc),
		T(test_bad_icrc_and_truncated),
		T(test_ghost_responses_ignored),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
