/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-pass placement's safety rule (transport/rx_fused.h), for any receive path (verify-then-copy, or
 * the fused CRC-and-copy of stack/transport/rx_fused.c): a WRITE frame whose ICRC
 * is bad may touch only bytes that the retransmission overwrites before a
 * completion covers them, so a corrupted RETH, PSN or opcode never steers a
 * write. Each case corrupts one byte of a 4 KB RDMA WRITE (MTU 1024: FIRST,
 * MIDDLE x2, LAST) on the wire and checks, when the requester's completion
 * arrives: the target bytes equal the source, every other byte of the 1 MB
 * MR still holds its fill, the frame was dropped for its ICRC (or as an
 * unknown opcode), exactly one successful completion on each side that
 * should have one, and the responder's QP still RTS.
 *
 * Frame offsets (IPv4, no VLAN): BTH at 42 (opcode 42, PSN 51..53), RETH at
 * 54 (VA 54..61, R_Key 62..65, length 66..69); payload at 70 on FIRST, 54 on
 * MIDDLE/LAST.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pair.h"

#define BUF (1u << 20)
#define OFF 0x1000u /* target offset in B's MR */
#define LEN 4096u
#define FILL 0xBB

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;
	uint8_t *a, *b;
};

static int setup_ip(void **state, uint8_t ipv)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct pair_opts po = {.ip_version = ipv};
	pair_init(&f->p, &po);
	conn_opts_default(&f->o); /* MTU 1024 */
	f->o.timeout = 10;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, FILL);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->P = f->o.sq_psn[SIDE_A];
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_ip(state, 4);
}

static int setup6(void **state)
{
	return setup_ip(state, 6);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

/* Flip @p mask at @p offset of the first A->B frame with @p opcode (and
 * @p psn when >= 0). */
static void corrupt(struct fx *f, uint8_t opcode, int64_t psn, uint32_t offset, uint8_t mask)
{
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_CORRUPT, .count = 1, .offset = offset,
				      .xor_mask = mask, .match = DROCE_IMPAIR_M_OPCODE, .opcode = opcode};
	if (psn >= 0) {
		r.match |= DROCE_IMPAIR_M_PSN;
		r.psn = (uint32_t)psn & 0xFFFFFFu;
	}
	assert_int_equal(droce_impair_add_rule(f->p.imp[A_TO_B], &r), 0);
}

/* Every byte of B's MR outside the target still holds the fill. */
static void untouched_outside(struct fx *f)
{
	for (size_t i = 0; i < BUF; i++) {
		if (i >= OFF && i < OFF + LEN)
			continue;
		if (f->b[i] != FILL)
			fail_msg("byte %zu of the MR outside the target was written (0x%02x)", i, f->b[i]);
	}
}

/* Post the WRITE (with immediate when @p imm), wait for A's completion and
 * check the MR at that moment, then let everything settle. */
static void run_write(struct fx *f, bool imm)
{
	struct droce_wc wc;
	fill_pattern(f->a, LEN, 77);
	if (imm)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A],
				   imm ? DROCE_WR_RDMA_WRITE_WITH_IMM : DROCE_WR_RDMA_WRITE, 1, f->amr, 0,
				   LEN, (uint64_t)(uintptr_t)(f->b + OFF), f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0x1234),
			 0);
	if (pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000) != 1) {
		rec_dump(&f->p, 0);
		fail_msg("no completion");
	}
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	/* When the completion covers the bytes, they are the source's. */
	assert_int_equal(check_pattern(f->b + OFF, LEN, 77), -1);
	untouched_outside(f);
	pair_run(&f->p, 1000000000ull);
	assert_int_equal(check_pattern(f->b + OFF, LEN, 77), -1);
	untouched_outside(f);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], &wc, 1), 0); /* exactly one */
	if (imm) {
		assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 1);
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
		assert_int_equal(wc.byte_len, LEN);
		assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 0);
	}
	assert_int_equal(qp_state(f->c.qp[SIDE_B]), DROCE_QPS_RTS);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
}

static void dropped_icrc(struct fx *f)
{
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "BAD_ICRC"), 1);
	assert_int_equal(f->p.imp[A_TO_B] != NULL, 1);
	struct droce_impair_stats st;
	droce_impair_get_stats(f->p.imp[A_TO_B], &st);
	assert_int_equal(st.corrupted, 1);
}

/* One payload byte of a MIDDLE packet. */
static void test_middle_payload_byte(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 1, 54 + 300, 0x5A);
	run_write(f, false);
	dropped_icrc(f);
}

/* The same over IPv6 (BTH at 62, MIDDLE payload at 74): the ICRC's masked
 * prefix is the IPv6 one. */
static void test_middle_payload_byte_ipv6(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 1, 74 + 300, 0x5A);
	run_write(f, false);
	dropped_icrc(f);
}

/* One payload byte of the LAST packet of a WRITE with immediate: no
 * receive completion for the bad frame, one after the retransmission. */
static void test_last_payload_byte_imm(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, -1, 58 + 1000, 0x01);
	run_write(f, true);
	dropped_icrc(f);
}

/* The R_Key and the VA of the FIRST packet: a write steered elsewhere in the
 * same MR (VA moved by 0x5A bytes) or to another key must not happen. */
static void test_first_reth_va(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_FIRST, -1, 61, 0x5A);
	run_write(f, false);
	dropped_icrc(f);
}

static void test_first_reth_rkey(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_FIRST, -1, 65, 0x01);
	run_write(f, false);
	dropped_icrc(f);
	assert_int_equal(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_REMOTE_ACCESS), 0);
}

/* The RETH length: a shorter or longer message must not be believed. */
static void test_first_reth_len(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_FIRST, -1, 68, 0x04);
	run_write(f, false);
	dropped_icrc(f);
}

/* The PSN of the second MIDDLE made to read as the first's, with the first
 * lost: it arrives when its false PSN is the expected one. Its payload (the
 * bytes of PSN P+2) must not stay at P+1's place. */
static void test_middle_psn_looks_expected(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 1, 1);
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 2, 53,
		(uint8_t)((f->P + 2) ^ (f->P + 1)));
	run_write(f, false);
	dropped_icrc(f);
	/* No NAK may come from the corrupt frame; the LAST shows the gap. */
	assert_true(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR) <= 1);
	assert_int_equal(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_INVALID_REQ), 0);
}

/* The opcode of a MIDDLE turned into LAST (0x07 -> 0x08): the message must
 * not end early, and no invalid-request NAK may answer the bad frame. */
static void test_middle_opcode_to_last(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 1, 42, 0x07 ^ 0x08);
	run_write(f, false);
	dropped_icrc(f);
	assert_int_equal(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_INVALID_REQ), 0);
}

/* A MIDDLE turned into a SEND_MIDDLE (0x07 -> 0x01): nothing lands in a
 * receive buffer, no NAK for the bad frame. */
static void test_middle_opcode_to_send(void **state)
{
	struct fx *f = *state;
	corrupt(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->P + 1, 42, 0x07 ^ 0x01);
	run_write(f, false);
	dropped_icrc(f);
	assert_int_equal(rec_naks(&f->p, 0, B_TO_A, DROCE_NAK_INVALID_REQ), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_middle_payload_byte),
		cmocka_unit_test_setup_teardown(test_middle_payload_byte_ipv6, setup6, teardown),
		T(test_last_payload_byte_imm),
		T(test_first_reth_va),
		T(test_first_reth_rkey),
		T(test_first_reth_len),
		T(test_middle_psn_looks_expected),
		T(test_middle_opcode_to_last),
		T(test_middle_opcode_to_send),
	};
	return droce_test_run("corrupt_write", tests, sizeof(tests) / sizeof(tests[0]));
}
