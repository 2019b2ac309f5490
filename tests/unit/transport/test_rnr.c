/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver Not Ready (IBTA 9.7.5.2.8): a SEND (or WRITE with immediate)
 * reaching a responder with no receive WQE is answered by an RNR NAK
 * carrying the responder's min_rnr_timer; the requester waits that long and
 * retries the same PSN, up to rnr_retry times (7 = forever), then completes
 * with RNR_RETRY_EXC_ERR and moves to ERR, flushing what follows.
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

#define BUF 65536
#define RNR_CODE 4 /* 0.04 ms */

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;
};

static int setup_retry(void **state, uint8_t rnr_retry)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.min_rnr_timer = RNR_CODE;
	f->o.rnr_retry = rnr_retry;
	f->o.timeout = 12;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->P = f->o.sq_psn[SIDE_A];
	*state = f;
	return 0;
}

static int setup7(void **state) { return setup_retry(state, 7); }
static int setup2(void **state) { return setup_retry(state, 2); }
static int setup0(void **state) { return setup_retry(state, 0); }

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

/* Step until @p n RNR NAKs have been sent by B (bounded). */
static void until_rnr_naks(struct fx *f, unsigned n)
{
	struct pair *p = &f->p;
	for (unsigned i = 0; i < 1000000 && rec_naks(p, 0, B_TO_A, -1) < n; i++) {
		if (pair_step(p))
			continue;
		uint64_t d0 = droce_ctx_next_deadline(p->ctx[0]), d1 = droce_ctx_next_deadline(p->ctx[1]);
		uint64_t d = d0 < d1 ? d0 : d1;
		if (d == UINT64_MAX)
			break;
		p->now = d > p->now ? d : p->now + 1;
	}
	if (rec_naks(p, 0, B_TO_A, -1) < n) {
		rec_dump(p, 0);
		fail_msg("B sent %u RNR NAKs, want %u", rec_naks(p, 0, B_TO_A, -1), n);
	}
}

/* Check every RNR NAK and the wait before each retry. */
static void check_rnr_spacing(struct fx *f, uint8_t req_opcode)
{
	struct pair *p = &f->p;
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir != B_TO_A || !syn_is_rnr(r->syndrome))
			continue;
		/* table 43: RNR NAK = 001 + timer code; PSN of the refused request; no message done */
		assert_int_equal(r->opcode, DROCE_OP_RC_ACKNOWLEDGE);
		assert_int_equal(r->syndrome, 0x20 | RNR_CODE);
		assert_int_equal(r->psn, f->P);
		assert_int_equal(r->msn, 0);
		int retry = rec_find(p, i + 1, A_TO_B, req_opcode);
		if (retry >= 0 && p->rec[retry].now - r->now < rnr_timer_ns(RNR_CODE)) {
			rec_dump(p, 0);
			fail_msg("retry %llu ns after the RNR NAK, want >= %llu",
				 (unsigned long long)(p->rec[retry].now - r->now),
				 (unsigned long long)rnr_timer_ns(RNR_CODE));
		}
		if (retry >= 0)
			assert_int_equal(p->rec[retry].psn, f->P);
	}
}

static void test_rnr_then_success(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	fill_pattern(f->amr->addr, 300, 1);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 300,
				       DROCE_SEND_SIGNALED, 0), 0);
	until_rnr_naks(f, 1);
	/* the receive arrives while A waits out the RNR timer */
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 1000), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, &wc, 1000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_true(wc.wr_id == 9);
	assert_int_equal(wc.byte_len, 300);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->bmr->addr, 300, 1), -1);

	assert_int_equal(rec_naks(p, 0, B_TO_A, -1), 1);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 2);
	check_rnr_spacing(f, DROCE_OP_RC_SEND_ONLY);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).rnr_nak_sent, 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).rnr_nak_rcvd, 1);
	/* the final ACK: PSN P, MSN 1 */
	int ack = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_ack(p->rec[i].syndrome))
			ack = (int)i;
	assert_true(ack >= 0);
	assert_int_equal(p->rec[ack].psn, f->P);
	assert_int_equal(p->rec[ack].msn, 1);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
}

/* RDMA WRITE with immediate consumes a receive WQE too: RNR without one. */
static void test_rnr_write_imm(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	fill_pattern(f->amr->addr, 64, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE_WITH_IMM, 1, f->amr, 0, 64,
				   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0x11223344u), 0);
	until_rnr_naks(f, 1);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, &wc, 1000000ull), 1);
	assert_int_equal(wc.opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 0x11223344u);
	assert_int_equal(check_pattern(f->bmr->addr, 64, 2), -1);
	check_rnr_spacing(f, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
}

/* rnr_retry = 2: the SEND goes out 3 times, 3 RNR NAKs, then RNR_RETRY_EXC_ERR, ERR, flush. */
static void test_rnr_retry_exhausted(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_A], 70, f->amr, 4096, 100), 0);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 100,
				       DROCE_SEND_SIGNALED, 0), 0);
	until_rnr_naks(f, 1);
	/* posted while A waits: never sent, flushed when the QP fails */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 0, 10,
				   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 2, wc, 10ull * 1000 * 1000 * 1000), 2);
	assert_true(wc[0].wr_id == 1);
	assert_int_equal(wc[0].status, DROCE_WC_RNR_RETRY_EXC_ERR);
	assert_true(wc[1].wr_id == 2);
	assert_int_equal(wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	pair_run(p, 1000000000ull);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	/* the receive queue is flushed too (10.3.1 Error state) */
	assert_int_equal(cq_drain(f->c.rcq[SIDE_A], wc, 4), 1);
	assert_true(wc[0].wr_id == 70);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);

	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 3);
	assert_int_equal(rec_naks(p, 0, B_TO_A, -1), 3);
	check_rnr_spacing(f, DROCE_OP_RC_SEND_ONLY);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).rnr_nak_rcvd, 3);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).rnr_nak_sent, 3);
	/* nothing placed at B */
	assert_int_equal(((uint8_t *)f->bmr->addr)[0], 0xBB);
}

/* rnr_retry = 0: no retry at all. */
static void test_rnr_retry_zero(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 8,
				       DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, -1), 1);
}

/* rnr_retry = 7 retries forever: 12 RNR NAKs, then a receive, then success. */
static void test_rnr_infinite(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 8,
				       DROCE_SEND_SIGNALED, 0), 0);
	until_rnr_naks(f, 12);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], &wc, 1), 0);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 5, f->bmr, 0, 100), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(rec_naks(p, 0, B_TO_A, -1), 12);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 13);
	check_rnr_spacing(f, DROCE_OP_RC_SEND_ONLY);
}


/* A 3-packet SEND meets no receive WQE: one RNR NAK for its first PSN, the rest dropped
 * quietly (no NAK storm), then the whole message again after the RNR wait. */
static void test_rnr_multi_packet_send(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	fill_pattern(f->amr->addr, 3000, 3);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 3000,
				       DROCE_SEND_SIGNALED, 0), 0);
	until_rnr_naks(f, 1);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 4096), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, &wc, 1000000ull), 1);
	assert_int_equal(wc.byte_len, 3000);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->bmr->addr, 3000, 3), -1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, -1), 1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 0);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_FIRST), 2);
	check_rnr_spacing(f, DROCE_OP_RC_SEND_FIRST);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rnr_then_success, setup7, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_write_imm, setup7, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_exhausted, setup2, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_zero, setup0, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_infinite, setup7, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_multi_packet_send, setup7, teardown),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
