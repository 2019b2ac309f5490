/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues (IBTA 10.2.9) and the asynchronous events
 * (11.6.3): two RC QPs of side B on one SRQ take its WQEs in the order
 * posted, a multi-packet SEND keeps the WQE it took at its first packet, an
 * empty SRQ answers RNR NAK and the retry succeeds once a WQE is posted, the
 * limit fires once when fewer WQEs than the limit are left and disarms, a
 * QP on an SRQ going to ERR raises LAST_WQE_REACHED and flushes the WQE it
 * held, the SRQ verbs' argument checks, COMM_EST for the first packet in
 * RTR, and the responder's access violation as QP_ACCESS_ERR.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pair.h"

#define BUF 65536
#define MS 1000000ull

struct fx {
	struct pair p;
	struct conn c[2];             /* A's QP i <-> B's QP i, both B QPs on srq */
	struct conn_opts o;
	struct droce_srq *srq;
	struct droce_mr *amr, *bmr;
};

static struct fx *fx_new(uint32_t max_wr)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	struct droce_srq_attr sa = {.max_wr = max_wr, .max_sge = 2};
	f->srq = droce_create_srq(f->p.ctx[SIDE_B], NULL, &sa, f);
	assert_non_null(f->srq);
	f->o.srq[SIDE_B] = f->srq;
	pair_connect(&f->p, &f->c[0], &f->o);
	f->o.sq_psn[0] = 0x3000;
	f->o.sq_psn[1] = 0x7000;
	pair_connect(&f->p, &f->c[1], &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	return f;
}

static int setup(void **state) { *state = fx_new(16); return 0; }

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

static int post_srq(struct droce_srq *srq, uint64_t wr_id, struct droce_mr *mr, size_t off,
		    uint32_t len)
{
	struct droce_sge sge = {.addr = (uint64_t)(uintptr_t)mr->addr + off, .length = len,
				.lkey = mr->lkey};
	struct droce_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
	return droce_post_srq_recv(srq, &wr, &bad);
}

/* Events of side @p s until none is left; @return how many of @p type (last one in @p ev). */
static unsigned take_events(struct fx *f, int s, enum droce_event_type type, struct droce_event *ev)
{
	struct droce_event e;
	unsigned n = 0;
	while (droce_ctx_get_event(f->p.ctx[s], &e))
		if (e.type == type) {
			n++;
			if (ev)
				*ev = e;
		}
	return n;
}

static void test_shared_in_order(void **state)
{
	struct fx *f = *state;
	uint8_t *a = f->amr->addr, *b = f->bmr->addr;
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_srq(f->srq, 100 + i, f->bmr, i * 4096, 4096), 0);
	assert_int_equal(droce_srq_count(f->srq), 4);
	/* Posting to the QP's own RQ is refused: it has none (verbs: EINVAL). */
	assert_int_equal(post_recv_buf(f->c[0].qp[SIDE_B], 1, f->bmr, 0, 64), -EINVAL);
	fill_pattern(a, 4 * 4096, 7);
	/* QP 1 first, then QP 0, then QP 1 (a 3000-byte SEND: three packets at
	 * MTU 1024 into one WQE), then QP 0. */
	const int order[4] = {1, 0, 1, 0};
	const uint32_t len[4] = {100, 200, 3000, 300};
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(post_send_msg(f->c[order[i]].qp[SIDE_A], DROCE_WR_SEND, i, f->amr,
					       i * 4096, len[i], DROCE_SEND_SIGNALED, 0), 0);
		struct droce_wc wc;
		assert_int_equal(pair_wait(&f->p, f->c[order[i]].rcq[SIDE_B], 1, &wc, 100 * MS), 1);
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + i);       /* the SRQ's order, whichever QP */
		assert_int_equal(wc.qp_num, f->c[order[i]].qpn[SIDE_B]);
		assert_int_equal(wc.byte_len, len[i]);
		assert_memory_equal(b + i * 4096, a + i * 4096, len[i]);
	}
	assert_int_equal(droce_srq_count(f->srq), 0);
	struct droce_qp_attr qa;
	assert_int_equal(droce_query_qp(f->c[0].qp[SIDE_B], &qa, 0), 0);
	assert_int_equal(qa.cap.max_recv_wr, 0);
}

static void test_empty_srq_rnr(void **state)
{
	struct fx *f = *state;
	struct droce_qp *qa = f->c[0].qp[SIDE_A];
	assert_int_equal(post_send_msg(qa, DROCE_WR_SEND, 1, f->amr, 0, 64, DROCE_SEND_SIGNALED, 0), 0);
	for (int i = 0; i < 10 && qp_stats(f->c[0].qp[SIDE_B]).rnr_nak_sent == 0; i++)
		pair_step(&f->p);
	assert_true(qp_stats(f->c[0].qp[SIDE_B]).rnr_nak_sent >= 1);
	assert_int_equal(post_srq(f->srq, 9, f->bmr, 0, 64), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&f->p, f->c[0].rcq[SIDE_B], 1, &wc, 1000 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(pair_wait(&f->p, f->c[0].scq[SIDE_A], 1, &wc, 100 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
}

static void test_limit_event(void **state)
{
	struct fx *f = *state;
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(post_srq(f->srq, i, f->bmr, i * 64, 64), 0);
	struct droce_srq_attr sa = {.srq_limit = 3};
	assert_int_equal(droce_modify_srq(f->srq, &sa, DROCE_SRQ_LIMIT), 0);
	struct droce_wc wc;
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(post_send_msg(f->c[i & 1].qp[SIDE_A], DROCE_WR_SEND, i, f->amr, 0, 8,
					       DROCE_SEND_SIGNALED, 0), 0);
		assert_int_equal(pair_wait(&f->p, f->c[i & 1].rcq[SIDE_B], 1, &wc, 100 * MS), 1);
		struct droce_event ev;
		unsigned n = take_events(f, SIDE_B, DROCE_EVENT_SRQ_LIMIT_REACHED, &ev);
		/* 4 left, then 3 (not below the limit), then 2: the event, once. */
		assert_int_equal(n, i == 2 ? 1 : 0);
		if (n) {
			assert_ptr_equal(ev.srq, f->srq);
			assert_ptr_equal(ev.context, f);
			assert_null(ev.qp);
		}
	}
	assert_int_equal(droce_query_srq(f->srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0); /* disarmed */
	assert_int_equal(sa.max_wr, 16);
	assert_int_equal(sa.max_sge, 2);
}

static void test_last_wqe_reached(void **state)
{
	struct fx *f = *state;
	assert_int_equal(post_srq(f->srq, 5, f->bmr, 0, 4096), 0);
	assert_int_equal(post_srq(f->srq, 6, f->bmr, 4096, 4096), 0);
	/* Only the first packet of a 3-packet SEND arrives: QP B0 holds WQE 5. */
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_SEND_MIDDLE, -1, 0);
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_SEND_LAST, -1, 0);
	assert_int_equal(post_send_msg(f->c[0].qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 3000,
				       DROCE_SEND_SIGNALED, 0), 0);
	for (int i = 0; i < 4; i++)
		pair_step(&f->p);
	assert_int_equal(droce_srq_count(f->srq), 1);
	take_events(f, SIDE_B, DROCE_EVENT_COMM_EST, NULL);
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_ERR};
	assert_int_equal(droce_modify_qp(f->c[0].qp[SIDE_B], &at, DROCE_QP_STATE), 0);
	struct droce_event ev;
	assert_int_equal(take_events(f, SIDE_B, DROCE_EVENT_QP_LAST_WQE_REACHED, &ev), 1);
	assert_ptr_equal(ev.qp, f->c[0].qp[SIDE_B]);
	struct droce_wc wc;
	assert_int_equal(cq_drain(f->c[0].rcq[SIDE_B], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, DROCE_WC_WR_FLUSH_ERR);
	/* The other WQE stays on the SRQ for the other QP. */
	assert_int_equal(droce_srq_count(f->srq), 1);
	/* The other QP, not in ERR, raised nothing. */
	assert_int_equal(take_events(f, SIDE_B, DROCE_EVENT_QP_LAST_WQE_REACHED, NULL), 0);
}

static void test_srq_verbs(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *ctx = f->p.ctx[SIDE_B];
	struct droce_srq_attr sa = {.max_wr = 0, .max_sge = 1};
	errno = 0;
	assert_null(droce_create_srq(ctx, NULL, &sa, NULL));
	assert_int_equal(errno, EINVAL);
	sa.max_wr = 4;
	sa.max_sge = 9;
	assert_null(droce_create_srq(ctx, NULL, &sa, NULL));
	sa.max_wr = 65536;
	sa.max_sge = 1;
	assert_null(droce_create_srq(ctx, NULL, &sa, NULL));
	sa.max_wr = 4;
	struct droce_srq *s = droce_create_srq(ctx, NULL, &sa, NULL);
	assert_non_null(s);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_srq(s, i, f->bmr, 0, 8), 0);
	assert_int_equal(post_srq(s, 4, f->bmr, 0, 8), -ENOMEM);
	struct droce_sge sg[2] = {{0}};
	struct droce_recv_wr wr = {.sg_list = sg, .num_sge = 2}, *bad = NULL;
	assert_int_equal(droce_post_srq_recv(s, &wr, &bad), -EINVAL); /* max_sge 1 */
	assert_ptr_equal(bad, &wr);
	/* Shrinking below what is queued, a limit over max_wr, unknown bits. */
	sa.max_wr = 3;
	assert_int_equal(droce_modify_srq(s, &sa, DROCE_SRQ_MAX_WR), -EINVAL);
	sa.srq_limit = 5;
	assert_int_equal(droce_modify_srq(s, &sa, DROCE_SRQ_LIMIT), -EINVAL);
	assert_int_equal(droce_modify_srq(s, &sa, 4), -EINVAL);
	/* Growing keeps the WQEs, in order. */
	sa.max_wr = 100;
	assert_int_equal(droce_modify_srq(s, &sa, DROCE_SRQ_MAX_WR), 0);
	assert_int_equal(droce_srq_count(s), 4);
	for (unsigned i = 4; i < 100; i++)
		assert_int_equal(post_srq(s, i, f->bmr, 0, 8), 0);
	assert_int_equal(post_srq(s, 100, f->bmr, 0, 8), -ENOMEM);
	assert_int_equal(droce_query_srq(s, &sa), 0);
	assert_int_equal(sa.max_wr, 100);
	/* In use: a QP on it keeps it. */
	assert_int_equal(droce_destroy_srq(f->srq), -EBUSY);
	assert_int_equal(droce_destroy_srq(s), 0);
	assert_int_equal(droce_destroy_srq(NULL), -EINVAL);
}

/* IBTA 11.6.3.1: COMM_EST for the first packet a QP in RTR receives; an
 * access violation the responder NAKs is QP_ACCESS_ERR on its side. */
static void test_comm_est_and_access_err(void **state)
{
	(void)state;
	struct pair p;
	struct conn c;
	struct conn_opts o;
	pair_init(&p, NULL);
	conn_opts_default(&o);
	conn_create(&p, &c, &o);
	for (enum droce_qp_state s = DROCE_QPS_INIT; s <= DROCE_QPS_RTS; s++)
		assert_int_equal(conn_modify(&p, &c, SIDE_A, s, &o), 0);
	assert_int_equal(conn_modify(&p, &c, SIDE_B, DROCE_QPS_INIT, &o), 0);
	assert_int_equal(conn_modify(&p, &c, SIDE_B, DROCE_QPS_RTR, &o), 0);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 4096, o.access, 1);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 4096, o.access, 2);
	struct droce_event ev;
	assert_int_equal(droce_ctx_get_event(p.ctx[SIDE_B], &ev), 0);
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, amr, 0, 64,
				   (uint64_t)(uintptr_t)bmr->addr, bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 1, &wc, 100 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(droce_ctx_get_event(p.ctx[SIDE_B], &ev), 1);
	assert_int_equal(ev.type, DROCE_EVENT_COMM_EST);
	assert_ptr_equal(ev.qp, c.qp[SIDE_B]);
	assert_int_equal(droce_ctx_get_event(p.ctx[SIDE_B], &ev), 0); /* once */
	/* A bad rkey: NAK remote access, B's QP to ERR with QP_ACCESS_ERR. */
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, amr, 0, 64,
				   (uint64_t)(uintptr_t)bmr->addr, bmr->rkey ^ 0x80, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 1, &wc, 100 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_REM_ACCESS_ERR);
	pair_run(&p, 10 * MS);
	assert_int_equal(qp_state(c.qp[SIDE_B]), DROCE_QPS_ERR);
	assert_int_equal(droce_ctx_get_event(p.ctx[SIDE_B], &ev), 1);
	assert_int_equal(ev.type, DROCE_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(ev.qp, c.qp[SIDE_B]);
	/* No SRQ: no LAST_WQE_REACHED. */
	assert_int_equal(droce_ctx_get_event(p.ctx[SIDE_B], &ev), 0);
	/* A destroyed QP's events not taken yet go with it. */
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_RESET};
	assert_int_equal(droce_modify_qp(c.qp[SIDE_B], &at, DROCE_QP_STATE), 0);
	assert_int_equal(conn_modify(&p, &c, SIDE_B, DROCE_QPS_INIT, &o), 0);
	assert_int_equal(conn_modify(&p, &c, SIDE_B, DROCE_QPS_RTR, &o), 0);
	at.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(c.qp[SIDE_A], &at, DROCE_QP_STATE), 0);
	pair_run(&p, 10 * MS);
	pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shared_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_srq_rnr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_wqe_reached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq_verbs, setup, teardown),
		cmocka_unit_test(test_comm_est_and_access_err),
	};
	return droce_test_run("srq", tests, sizeof(tests) / sizeof(tests[0]));
}
