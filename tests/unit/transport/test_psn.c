/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PSN arithmetic (IBTA 9.7.1: 24-bit PSNs wrap; 9.7.5.1.3: a PSN up to 2^23
 * behind the expected one is a duplicate, ahead of it out of sequence) and
 * the NAK discipline of 9.7.5.2.1: exactly one PSN-sequence NAK per gap,
 * however many out-of-sequence packets follow it.
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

#define BUF (1u << 18)

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;
	uint8_t *a, *b;
	uint64_t rb;
};

static int setup_psn(void **state, uint32_t psn_a, uint32_t psn_b)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.timeout = 10;
	f->o.sq_psn[SIDE_A] = psn_a;
	f->o.sq_psn[SIDE_B] = psn_b;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = psn_a;
	*state = f;
	return 0;
}

static int setup_wrap(void **state) { return setup_psn(state, 0xFFFFFD, 0xFFFFFF); }
static int setup_plain(void **state) { return setup_psn(state, 0x1000, 0x2000); }

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

static void wait_ok(struct fx *f, uint64_t wr_id)
{
	struct droce_wc wc;
	if (pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000) != 1 ||
	    wc.status != DROCE_WC_SUCCESS || wc.wr_id != wr_id) {
		rec_dump(&f->p, 0);
		fail_msg("wr %llu did not complete successfully", (unsigned long long)wr_id);
	}
}

/* A 5-packet WRITE from 0xFFFFFD: PSNs FFFFFD FFFFFE FFFFFF 000000 000001, ACK 000001. */
static void test_write_across_wrap(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	unsigned req[16], rsp[16], nreq, nrsp;

	fill_pattern(f->a, 5 * 1024, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 5 * 1024,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 5 * 1024, 1), -1);
	nreq = rec_dir(p, 0, A_TO_B, req, 16);
	nrsp = rec_dir(p, 0, B_TO_A, rsp, 16);
	assert_int_equal(nreq, 5);
	expect_msg(p, req, nreq, DROCE_WR_RDMA_WRITE, 0xFFFFFD, 5 * 1024, 1024, f->rb, f->bmr->rkey,
		   0, f->c.qpn[SIDE_B]);
	assert_int_equal(p->rec[req[3]].psn, 0);
	expect_acks(p, rsp, nrsp, 0xFFFFFD, 1, 1);

	/* then a READ of 3 responses at PSN 2, and a SEND at 5 */
	unsigned mark = p->nrec;
	fill_pattern(f->b + 65536, 3000, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 2, f->amr, 65536, 3000,
				   f->rb + 65536, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 2);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->a + 65536, 3000, 2), -1);
	nrsp = rec_dir(p, mark, B_TO_A, rsp, 16);
	nreq = rec_dir(p, mark, A_TO_B, req, 16);
	assert_int_equal(nreq, 1);
	assert_int_equal(p->rec[req[0]].psn, 2);
	expect_read_resp(p, rsp, nrsp, 2, 3000, 1024, 2, f->c.qpn[SIDE_A]);
}

/* A READ whose responses wrap: request at 0xFFFFFD, responses FFFFFD..000001. */
static void test_read_across_wrap(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	unsigned rsp[16], nrsp;

	fill_pattern(f->b, 5000, 3);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 5000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->a, 5000, 3), -1);
	nrsp = rec_dir(p, 0, B_TO_A, rsp, 16);
	assert_int_equal(nrsp, 5);
	expect_read_resp(p, rsp, nrsp, 0xFFFFFD, 5000, 1024, 1, f->c.qpn[SIDE_A]);
	/* the next request uses PSN 2 */
	unsigned mark = p->nrec, req[4];
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 2);
	assert_int_equal(rec_dir(p, mark, A_TO_B, req, 4), 1);
	assert_int_equal(p->rec[req[0]].psn, 2);
}

/* Loss at the wrap: PSN 0 lost once -> NAK with PSN 0, resend from 0. */
static void test_loss_at_wrap(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;

	fill_pattern(f->a, 6 * 1024, 4);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, 0, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 6 * 1024,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 6 * 1024, 4), -1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
	int nak = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_nak(p->rec[i].syndrome, DROCE_NAK_PSN_SEQ_ERR))
			nak = (int)i;
	assert_int_equal(p->rec[nak].psn, 0);
	int r = rec_find(p, (unsigned)nak + 1, A_TO_B, -1);
	assert_true(r >= 0);
	assert_int_equal(p->rec[r].psn, 0);
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, 0), 2);
	/* nothing before the wrap was sent again */
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, 0xFFFFFD), 1);
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, 0xFFFFFF), 1);
}

/* A duplicate of PSN 0xFFFFFF arriving when 0 is expected is a duplicate, not out of sequence. */
static void test_duplicate_at_wrap(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;

	fill_pattern(f->a, 4 * 1024, 5);
	/* two copies of PSN FFFFFF back to back: the second arrives when 000000 is expected */
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DUP, -1, 0xFFFFFF, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 4 * 1024,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 4 * 1024, 5), -1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 0);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_pkts, 0);
}

/* One gap, 14 out-of-sequence packets behind it: one NAK. */
static void test_one_nak_per_gap(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_qp_stats sb;

	fill_pattern(f->a, 16 * 1024, 6);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + 1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 16 * 1024,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 16 * 1024, 6), -1);
	sb = qp_stats(f->c.qp[SIDE_B]);
	if (rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR) != 1) {
		rec_dump(p, 0);
		fail_msg("want one PSN sequence NAK");
	}
	assert_int_equal(sb.nak_sent[DROCE_NAK_PSN_SEQ_ERR], 1);
	/* every packet after the gap in the first round was out of sequence */
	unsigned first_round_after_gap = 0;
	for (unsigned i = 0, seen = 0; i < p->nrec && seen < 16; i++)
		if (p->rec[i].dir == A_TO_B && ++seen > 2)
			first_round_after_gap++;
	assert_true(sb.out_of_seq >= 1);
	assert_true(sb.out_of_seq <= first_round_after_gap);
}

/* Two gaps in turn (PSN P+1, then P+4 on the resend): two NAKs, one for each. */
static void test_two_gaps_two_naks(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint32_t naks[4];
	unsigned n = 0;

	fill_pattern(f->a, 8 * 1024, 7);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + 1, 1);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + 4, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 8 * 1024,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 8 * 1024, 7), -1);
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_nak(p->rec[i].syndrome, DROCE_NAK_PSN_SEQ_ERR) &&
		    n < 4)
			naks[n++] = p->rec[i].psn;
	if (n != 2) {
		rec_dump(p, 0);
		fail_msg("%u PSN sequence NAKs, want 2", n);
	}
	assert_int_equal(naks[0], f->P + 1);
	assert_int_equal(naks[1], f->P + 4);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_nak, 2);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
}

/* 40 two-packet SENDs with one packet lost in the middle: every receive once, in order. */
static void test_send_psn_sequence_many(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[64];

	for (int i = 0; i < 40; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], (uint64_t)i, f->bmr, (size_t)i * 2048,
					       2048), 0);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + 20, 1);
	for (int i = 0; i < 40; i++) {
		fill_pattern(f->a + i * 2048, 1500, 100 + (uint64_t)i);
		assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, (uint64_t)i, f->amr,
					       (size_t)i * 2048, 1500, DROCE_SEND_SIGNALED, 0), 0);
	}
	/* 1500 bytes at MTU 1024 = 2 packets each: PSN P+20 is the first packet of SEND 10 */
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 40, wc, 10ull * 1000 * 1000 * 1000), 40);
	for (int i = 0; i < 40; i++) {
		assert_true(wc[i].wr_id == (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[i].byte_len, 1500);
		assert_int_equal(check_pattern(f->b + i * 2048, 1500, 100 + (uint64_t)i), -1);
	}
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 40, wc, 1000000000ull), 40);
	for (int i = 0; i < 40; i++)
		assert_true(wc[i].wr_id == (uint64_t)i && wc[i].status == DROCE_WC_SUCCESS);
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.rcq[SIDE_B], wc, 64), 0);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
	/* the last ACK: PSN P+79, MSN 40 */
	int last = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_ack(p->rec[i].syndrome))
			last = (int)i;
	assert_int_equal(p->rec[last].psn, PSN(f->P + 79));
	assert_int_equal(p->rec[last].msn, 40);
}


/*
 * A very old duplicate: the first copy of a WRITE to region X is held back
 * for 64 frames, the WRITE is recovered, a later WRITE puts new data in X,
 * then the stale copy arrives (9.7.5.1.3: a PSN behind the expected one is
 * a duplicate). It must be acknowledged, never executed again.
 */
static void test_stale_duplicate_not_executed(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[64];
	uint64_t id = 0;

	fill_pattern(f->a, 512, 1000);
	assert_int_equal(droce_memlink_set_flush_idle(p->ml, DROCE_MEMLINK_0_TO_1, 0), 0);
	pair_hold(p, A_TO_B, -1, f->P, DROCE_IMPAIR_MAX_HELD);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, id++, f->amr, 0, 512, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(droce_impair_held(p->imp[A_TO_B]), 1);
	/* new data in X */
	fill_pattern(f->a + 4096, 512, 2000);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, id++, f->amr, 4096, 512,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(check_pattern(f->b, 512, 2000), -1);
	/* traffic elsewhere until the stale copy is let go */
	for (int i = 0; i < 200 && droce_impair_held(p->imp[A_TO_B]); i++) {
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, id++, f->amr, 8192, 8,
					   f->rb + 8192, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
		assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
		assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	}
	assert_int_equal(droce_impair_held(p->imp[A_TO_B]), 0);
	pair_run(p, 1000000000ull);
	if (check_pattern(f->b, 512, 2000) != -1)
		fail_msg("a stale duplicate WRITE was executed again");
	assert_true(qp_stats(f->c.qp[SIDE_B]).dup_reqs >= 1);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
	assert_int_equal(qp_state(f->c.qp[SIDE_B]), DROCE_QPS_RTS);
}

/*
 * A very old READ response: the first response to READ #0 is held back for
 * 64 frames; the READ is re-issued and completes; a second READ fills the
 * same local buffer with new data; then the stale response arrives. The
 * requester must drop it (its PSN is no longer outstanding, 9.7.5.1.4).
 */
static void test_stale_read_response_ignored(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];
	uint64_t id = 0;

	fill_pattern(f->b, 512, 3000);
	fill_pattern(f->b + 4096, 512, 4000);
	assert_int_equal(droce_memlink_set_flush_idle(p->ml, DROCE_MEMLINK_1_TO_0, 0), 0);
	pair_hold(p, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, -1, DROCE_IMPAIR_MAX_HELD);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, id++, f->amr, 0, 512, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(f->a, 512, 3000), -1);
	assert_int_equal(droce_impair_held(p->imp[B_TO_A]), 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, id++, f->amr, 0, 512,
				   f->rb + 4096, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(check_pattern(f->a, 512, 4000), -1);
	for (int i = 0; i < 200 && droce_impair_held(p->imp[B_TO_A]); i++) {
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, id++, f->amr, 8192, 8,
					   f->rb + 8192, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
		assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
		assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	}
	assert_int_equal(droce_impair_held(p->imp[B_TO_A]), 0);
	pair_run(p, 1000000000ull);
	if (check_pattern(f->a, 512, 4000) != -1)
		fail_msg("a stale READ response was written into the local buffer");
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 4), 0);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_across_wrap, setup_wrap, teardown),
		cmocka_unit_test_setup_teardown(test_read_across_wrap, setup_wrap, teardown),
		cmocka_unit_test_setup_teardown(test_loss_at_wrap, setup_wrap, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_at_wrap, setup_wrap, teardown),
		cmocka_unit_test_setup_teardown(test_one_nak_per_gap, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_two_gaps_two_naks, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_send_psn_sequence_many, setup_wrap, teardown),
		cmocka_unit_test_setup_teardown(test_stale_duplicate_not_executed, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_stale_read_response_ignored, setup_plain, teardown),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
