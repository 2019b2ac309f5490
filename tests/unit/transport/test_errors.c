/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Errors: retries exhausted (IBTA 9.7.6.1.3 -> RETRY_EXC_ERR, QP to ERR,
 * flush, 10.3.1), remote access violations (9.7.5.2.4 / C9-95: rkey, bounds
 * and access rights checked before a byte is written, NAK remote access
 * error), a SEND longer than the receive buffer (NAK invalid request),
 * posting in the wrong state (10.8.1), packets reaching a QP in INIT
 * (10.3.1: discarded), state transitions (11.2.5.1), CQ overflow.
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

#include "check.h"
#include "pair.h"

#define BUF 65536
#define TIMEOUT 8 /* 1.05 ms */

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;
	uint8_t *a, *b;
	uint64_t rb;
};

static struct fx *fx_new(uint8_t retry_cnt, bool connect)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.timeout = TIMEOUT;
	f->o.retry_cnt = retry_cnt;
	if (connect)
		pair_connect(&f->p, &f->c, &f->o);
	else
		conn_create(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = f->o.sq_psn[SIDE_A];
	return f;
}

static int setup(void **state) { *state = fx_new(7, true); return 0; }
static int setup_retry2(void **state) { *state = fx_new(2, true); return 0; }
static int setup_reset(void **state) { *state = fx_new(7, false); return 0; }

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

static void expect_untouched(const uint8_t *b, size_t len, uint8_t fill)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != fill)
			fail_msg("byte %zu was written (%02x) by a rejected request", i, b[i]);
}

/* ---------------------------------------------------------- retry_cnt -- */

static void test_retry_exhausted_then_flush(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_A], 80, f->amr, 8192, 100), 0);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, -1, 0); /* A -> B is dead */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 100, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 0, 100, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 2, wc, 10ull * 1000 * 1000 * 1000), 2);
	assert_true(wc[0].wr_id == 1);
	assert_int_equal(wc[0].status, DROCE_WC_RETRY_EXC_ERR);
	assert_true(wc[1].wr_id == 2);
	assert_int_equal(wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_A], 1, wc, 1000000ull), 1);
	assert_true(wc[0].wr_id == 80);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);

	/* retry_cnt 2: the first PSN went out 1 + 2 times, a timeout apart */
	unsigned idx[16], n = 0;
	for (unsigned i = 0; i < p->nrec && n < 16; i++)
		if (p->rec[i].dir == A_TO_B && p->rec[i].psn == f->P)
			idx[n++] = i;
	if (n != 3) {
		rec_dump(p, 0);
		fail_msg("PSN %06x sent %u times, want 3", f->P, n);
	}
	for (unsigned i = 1; i < n; i++)
		assert_true(p->rec[idx[i]].now - p->rec[idx[i - 1]].now >= ack_timeout_ns(TIMEOUT));
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 2);

	/* a WR posted in ERR is flushed (10.8.1: not an error to post) */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 3, f->amr, 0, 100, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000ull), 1);
	assert_true(wc[0].wr_id == 3);
	assert_int_equal(wc[0].status, DROCE_WC_WR_FLUSH_ERR);
	unsigned before = rec_count(p, 0, A_TO_B, -1);
	pair_run(p, 1000000000ull);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), before); /* nothing more sent */
	/* RESET brings it back: ERR -> RESET -> INIT -> RTR -> RTS */
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_RESET};
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), 0);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RESET);
}

/* ---------------------------------------------------- remote access -- */

/* Post @p op against B with @p rkey / @p raddr / @p len; expect one NAK
 * @p code for it, completion @p want, and nothing written. */
static void refused(struct fx *f, enum droce_wr_opcode op, uint32_t rkey, uint64_t raddr,
		    uint32_t len, unsigned code, enum droce_wc_status want)
{
	struct pair *p = &f->p;
	struct droce_wc wc[2];

	fill_pattern(f->a, 4096, 3);
	memset(f->a + 8192, 0xAA, 4096);
	if (op == DROCE_WR_ATOMIC_FETCH_AND_ADD)
		assert_int_equal(post_atomic(f->c.qp[SIDE_A], op, 1, f->amr, 8192, raddr, rkey, 1, 0), 0);
	else
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 1, f->amr,
					   op == DROCE_WR_RDMA_READ ? 8192 : 0, len, raddr, rkey,
					   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	if (wc[0].status != want) {
		rec_dump(p, 0);
		fail_msg("status %s, want %s", droce_wc_status_str(wc[0].status), droce_wc_status_str(want));
	}
	assert_true(wc[0].wr_id == 1);
	pair_run(p, 1000000000ull);
	/* exactly one NAK, for the request's first PSN */
	assert_int_equal(rec_naks(p, 0, B_TO_A, code), 1);
	int nak = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_nak(p->rec[i].syndrome, code))
			nak = (int)i;
	assert_int_equal(p->rec[nak].psn, f->P);
	/* no READ response, no atomic ACK */
	assert_int_equal(rec_count(p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST), 0);
	assert_int_equal(rec_count(p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY), 0);
	assert_int_equal(rec_count(p, 0, B_TO_A, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE), 0);
	/* nothing written at B, nothing read into A */
	expect_untouched(f->b, BUF, 0xBB);
	expect_untouched(f->a + 8192, 4096, 0xAA);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).nak_rcvd[code], 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).nak_sent[code], 1);
}

static void access_violation(struct fx *f, enum droce_wr_opcode op, uint32_t rkey, uint64_t raddr,
			     uint32_t len)
{
	refused(f, op, rkey, raddr, len, DROCE_NAK_REMOTE_ACCESS, DROCE_WC_REM_ACCESS_ERR);
}

static void test_bad_rkey_write(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_RDMA_WRITE, f->bmr->rkey ^ 0x100u, f->rb, 3000);
}

static void test_bad_rkey_read(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_RDMA_READ, f->bmr->rkey + 1, f->rb, 100);
}

static void test_bad_rkey_atomic(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_ATOMIC_FETCH_AND_ADD, f->bmr->rkey ^ 0x80000000u, f->rb, 8);
}

/* Multi-packet WRITE running past the end: refused at the first packet, nothing written. */
static void test_write_out_of_bounds(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_RDMA_WRITE, f->bmr->rkey, f->rb + BUF - 2000, 3000);
}

static void test_write_below_start(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_RDMA_WRITE, f->bmr->rkey, f->rb - 8, 100);
}

static void test_read_out_of_bounds(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_RDMA_READ, f->bmr->rkey, f->rb + BUF - 10, 100);
}

static void test_atomic_out_of_bounds(void **s)
{
	struct fx *f = *s;
	access_violation(f, DROCE_WR_ATOMIC_FETCH_AND_ADD, f->bmr->rkey, f->rb + BUF, 8);
}

/* An MR registered without REMOTE_WRITE / REMOTE_READ / REMOTE_ATOMIC. */
static void test_mr_missing_access(void **s)
{
	struct fx *f = *s;
	/* a new MR over the same memory with only local write + remote read */
	struct droce_mr *ro = droce_reg_mr(f->p.ctx[SIDE_B], f->b, BUF,
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_READ);
	assert_non_null(ro);
	access_violation(f, DROCE_WR_RDMA_WRITE, ro->rkey, f->rb, 100);
	assert_int_equal(droce_dereg_mr(ro), 0);
}

static void test_mr_missing_read(void **s)
{
	struct fx *f = *s;
	struct droce_mr *wo = droce_reg_mr(f->p.ctx[SIDE_B], f->b, BUF,
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	assert_non_null(wo);
	access_violation(f, DROCE_WR_RDMA_READ, wo->rkey, f->rb, 100);
	assert_int_equal(droce_dereg_mr(wo), 0);
}

static void test_mr_missing_atomic(void **s)
{
	struct fx *f = *s;
	struct droce_mr *m = droce_reg_mr(f->p.ctx[SIDE_B], f->b, BUF,
					  DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
					  DROCE_ACCESS_REMOTE_READ);
	assert_non_null(m);
	access_violation(f, DROCE_WR_ATOMIC_FETCH_AND_ADD, m->rkey, f->rb, 8);
	assert_int_equal(droce_dereg_mr(m), 0);
}

/* The QP's own access flags (qp_access_flags) also gate remote operations:
 * an operation the QP does not enable is an invalid request (rxe, qib/hfi1),
 * not a remote access error. */
static void test_qp_missing_access(void **state)
{
	struct fx *f = *state;
	struct droce_qp_attr at;

	/* B grants remote read only */
	f->o.access = DROCE_ACCESS_REMOTE_READ;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_B, DROCE_QPS_INIT, &f->o), 0);
	conn_opts_default(&f->o);
	f->o.timeout = TIMEOUT;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_B, DROCE_QPS_RTR, &f->o), 0);
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_B, DROCE_QPS_RTS, &f->o), 0);
	for (int st = DROCE_QPS_INIT; st <= DROCE_QPS_RTS; st++)
		assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, st, &f->o), 0);
	memset(&at, 0, sizeof(at));
	assert_int_equal(droce_query_qp(f->c.qp[SIDE_B], &at, 0), 0);
	assert_int_equal(at.qp_access_flags, DROCE_ACCESS_REMOTE_READ);
	refused(f, DROCE_WR_RDMA_WRITE, f->bmr->rkey, f->rb, 100, DROCE_NAK_INVALID_REQ,
		DROCE_WC_REM_INV_REQ_ERR);
}

/* A stale rkey after deregistration. */
static void test_stale_rkey(void **s)
{
	struct fx *f = *s;
	struct droce_mr *m = droce_reg_mr(f->p.ctx[SIDE_B], f->b, BUF, f->o.access);
	uint32_t rkey;
	assert_non_null(m);
	rkey = m->rkey;
	assert_int_equal(droce_dereg_mr(m), 0);
	access_violation(f, DROCE_WR_RDMA_WRITE, rkey, f->rb, 100);
}

/* ----------------------------------------------------- invalid request -- */

/* A SEND longer than the posted receive buffer: NAK invalid request (9.7.5.2.2), LOC_LEN_ERR at B. */
static void test_send_too_long(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 100), 0);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 200,
				       DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_REM_INV_REQ_ERR);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, &wc, 1000000ull), 1);
	assert_true(wc.wr_id == 1);
	assert_int_equal(wc.status, DROCE_WC_LOC_LEN_ERR);
	pair_run(p, 1000000000ull);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_INVALID_REQ), 1);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	/* nothing beyond the buffer written */
	expect_untouched(f->b + 100, BUF - 100, 0xBB);
}

/* ----------------------------------------------------- posting rules -- */

static void test_post_in_reset_init_rtr(void **state)
{
	struct fx *f = *state;
	struct droce_sge sge = {(uint64_t)(uintptr_t)f->a, 8, f->amr->lkey};
	struct droce_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED};
	struct droce_send_wr wr2 = wr, *bad = NULL;
	struct droce_recv_wr rwr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1}, *rbad = NULL;

	wr.next = &wr2;
	/* RESET: neither queue takes work (10.8.1) */
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RESET);
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(droce_post_recv(f->c.qp[SIDE_A], &rwr, &rbad), -EINVAL);
	assert_ptr_equal(rbad, &rwr);
	/* INIT: receives yes, sends no */
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_INIT, &f->o), 0);
	rbad = NULL;
	assert_int_equal(droce_post_recv(f->c.qp[SIDE_A], &rwr, &rbad), 0);
	bad = NULL;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	/* RTR: still no sends */
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTR, &f->o), 0);
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	/* RTS: both */
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTS, &f->o), 0);
	bad = NULL;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), 0);
	/* nothing went on the wire for the refused posts: run; A's two SENDs are all there is */
	for (int st = DROCE_QPS_INIT; st <= DROCE_QPS_RTS; st++)
		assert_int_equal(conn_modify(&f->p, &f->c, SIDE_B, st, &f->o), 0);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 10, f->bmr, 0, 64), 0);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 11, f->bmr, 64, 64), 0);
	struct droce_wc wc[4];
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 2, wc, 1000000000ull), 2);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(wc[1].status, DROCE_WC_SUCCESS);
	pair_run(&f->p, 1000000000ull);
	assert_int_equal(rec_count(&f->p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 2);
}

/* Packets reaching a QP still in INIT are dropped (10.3.1); once it is in RTR, the retry gets through. */
static void test_receive_in_init(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	for (int st = DROCE_QPS_INIT; st <= DROCE_QPS_RTS; st++)
		assert_int_equal(conn_modify(p, &f->c, SIDE_A, st, &f->o), 0);
	assert_int_equal(conn_modify(p, &f->c, SIDE_B, DROCE_QPS_INIT, &f->o), 0);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 256), 0); /* allowed in INIT */
	fill_pattern(f->a, 50, 9);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 50,
				       DROCE_SEND_SIGNALED, 0), 0);
	/* run short of the ACK timeout: B must stay silent and keep its WQE */
	pair_run(p, ack_timeout_ns(TIMEOUT) / 2);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 1);
	assert_int_equal(rec_count(p, 0, B_TO_A, -1), 0);
	assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 0);
	assert_int_equal(ctx_drops(p, SIDE_B, "QP_STATE"), 1);
	expect_untouched(f->b, 256, 0xBB);
	/* B to RTR: the retransmission lands */
	assert_int_equal(conn_modify(p, &f->c, SIDE_B, DROCE_QPS_RTR, &f->o), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, &wc, 1000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 50);
	assert_int_equal(check_pattern(f->b, 50, 9), -1);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_ONLY), 2);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 1);
}

/* ------------------------------------------------------ transitions -- */

static void test_illegal_transitions(void **state)
{
	struct fx *f = *state;
	struct droce_qp_attr at;

	/* RESET -> RTR and RESET -> RTS skip a state */
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTR, &f->o), -EINVAL);
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTS, &f->o), -EINVAL);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RESET);
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_INIT, &f->o), 0);
	/* INIT -> RTR without the required attributes */
	memset(&at, 0, sizeof(at));
	at.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), -EINVAL);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_INIT);
	/* path MTU out of range */
	f->o.mtu = (enum droce_mtu)6;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTR, &f->o), -EINVAL);
	f->o.mtu = DROCE_MTU_1024;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTR, &f->o), 0);
	/* retry_cnt above 7 */
	f->o.retry_cnt = 8;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTS, &f->o), -EINVAL);
	f->o.retry_cnt = 7;
	assert_int_equal(conn_modify(&f->p, &f->c, SIDE_A, DROCE_QPS_RTS, &f->o), 0);
	/* read back what was set */
	memset(&at, 0, sizeof(at));
	assert_int_equal(droce_query_qp(f->c.qp[SIDE_A], &at, 0), 0);
	assert_int_equal(at.qp_state, DROCE_QPS_RTS);
	assert_int_equal(at.path_mtu, DROCE_MTU_1024);
	assert_int_equal(at.sq_psn, f->o.sq_psn[SIDE_A]);
	assert_int_equal(at.rq_psn, f->o.sq_psn[SIDE_B]);
	assert_int_equal(at.dest_qp_num, f->c.qpn[SIDE_B]);
	assert_int_equal(at.timeout, TIMEOUT);
	assert_int_equal(at.retry_cnt, 7);
	/* any -> ERR, ERR -> RESET */
	memset(&at, 0, sizeof(at));
	at.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), 0);
	at.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), -EINVAL);
	at.qp_state = DROCE_QPS_RESET;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), 0);
}

/* ------------------------------------------------------ CQ overflow -- */

/* A CQ of depth 2 given 3 completions reports the overflow (11.4.2.1), never silently. */
static void test_cq_overflow(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_cq *cq = droce_create_cq(p->ctx[SIDE_A], 2);
	struct droce_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq};
	struct droce_qp *qp;
	struct droce_wc wc[4];
	int r;

	assert_non_null(cq);
	qp = droce_create_qp(p->ctx[SIDE_A], &ia);
	assert_non_null(qp);
	/* a QP in RESET moved to ERR flushes nothing; use posted receives flushed by ERR */
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_INIT, .pkey = 0xFFFF};
	assert_int_equal(droce_modify_qp(qp, &at, DROCE_QP_STATE | DROCE_QP_PKEY | DROCE_QP_ACCESS_FLAGS), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv_buf(qp, (uint64_t)i, f->amr, 0, 16), 0);
	at.qp_state = DROCE_QPS_ERR;
	assert_int_equal(droce_modify_qp(qp, &at, DROCE_QP_STATE), 0);
	pair_run(p, 1000000ull);
	r = droce_poll_cq(cq, 4, wc);
	if (r >= 0) {
		/* the first ones may be handed out, but the loss must be reported */
		int r2 = droce_poll_cq(cq, 4, wc);
		assert_int_equal(r2, -EOVERFLOW);
	} else {
		assert_int_equal(r, -EOVERFLOW);
	}
	assert_int_equal(droce_destroy_cq(cq), -EBUSY);
	assert_int_equal(droce_destroy_qp(qp), 0);
	assert_int_equal(droce_destroy_cq(cq), 0);
}


/* ------------------------------------------------- flush and locals -- */

/* Moving to ERR flushes every outstanding send and receive WR, in order, with its wr_id (10.3.1, 11.4.2.1). */
static void test_modify_to_err_flushes(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[16];
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_ERR};

	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_A], 100 + i, f->amr, 8192, 64), 0);
	for (uint64_t i = 0; i < 5; i++)
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, f->amr, 0, 64,
					   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &at, DROCE_QP_STATE), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 5, wc, 1000000000ull), 5);
	for (int i = 0; i < 5; i++) {
		assert_true(wc[i].wr_id == (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].qp_num, f->c.qpn[SIDE_A]);
	}
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_A], 3, wc, 1000000ull), 3);
	for (int i = 0; i < 3; i++) {
		assert_true(wc[i].wr_id == 100 + (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_WR_FLUSH_ERR);
	}
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 16), 0);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 0); /* nothing left once in ERR */
}

/* A failing WR completes even when unsignaled (errors always complete, 10.8.3). */
static void test_unsignaled_error_completes(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 7, f->amr, 0, 64, f->rb,
				   f->bmr->rkey ^ 0x40u, 0, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_true(wc[0].wr_id == 7);
	assert_int_equal(wc[0].status, DROCE_WC_REM_ACCESS_ERR);
	expect_untouched(f->b, BUF, 0xBB);
}

/* A bad lkey is not a post error: the WR completes with LOC_PROT_ERR and nothing reaches the wire. */
static void test_bad_lkey(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_sge sge = {(uint64_t)(uintptr_t)f->a, 64, f->amr->lkey ^ 0x1234u};
	struct droce_send_wr wr = {.wr_id = 3, .sg_list = &sge, .num_sge = 1,
				   .opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED};
	struct droce_send_wr *bad = NULL;
	struct droce_wc wc[2];

	wr.wr.rdma.remote_addr = f->rb;
	wr.wr.rdma.rkey = f->bmr->rkey;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_true(wc[0].wr_id == 3);
	assert_int_equal(wc[0].status, DROCE_WC_LOC_PROT_ERR);
	pair_run(p, 1000000000ull);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY), 0);
	expect_untouched(f->b, BUF, 0xBB);
}

/* An SGE running past the end of its MR: LOC_PROT_ERR, nothing sent. */
static void test_sge_past_mr(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[2];

	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 4, f->amr, BUF - 10, 64,
				   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_true(wc[0].wr_id == 4);
	assert_int_equal(wc[0].status, DROCE_WC_LOC_PROT_ERR);
	pair_run(p, 1000000000ull);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 0);
	expect_untouched(f->b, BUF, 0xBB);
}

/* Post-time checks of droce_post_send (include/droce/verbs.h). */
static void test_post_send_rejects(void **state)
{
	struct fx *f = *state;
	struct droce_sge sge[8];
	struct droce_send_wr wr, *bad = NULL;
	uint8_t big[512];

	for (int i = 0; i < 8; i++)
		sge[i] = (struct droce_sge){(uint64_t)(uintptr_t)f->a + i * 8, 8, f->amr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.opcode = DROCE_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = f->rb;
	wr.wr.rdma.rkey = f->bmr->rkey;
	/* more SGEs than max_send_sge (4) */
	wr.num_sge = 5;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	/* inline longer than max_inline_data (64) */
	struct droce_sge ib = {(uint64_t)(uintptr_t)big, sizeof(big), 0};
	wr.sg_list = &ib;
	wr.num_sge = 1;
	wr.send_flags = DROCE_SEND_INLINE;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	/* atomic: length not 8, remote address not 8-byte aligned */
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.rkey = f->bmr->rkey;
	wr.wr.atomic.remote_addr = f->rb + 4;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	wr.wr.atomic.remote_addr = f->rb;
	sge[0].length = 4;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	/* a bad opcode */
	sge[0].length = 8;
	wr.opcode = (enum droce_wr_opcode)99;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), -EINVAL);
	/* a full send queue: -ENOMEM at the WR that did not fit */
	struct droce_send_wr *chain = calloc(300, sizeof(*chain));
	for (int i = 0; i < 300; i++) {
		chain[i].wr_id = (uint64_t)i;
		chain[i].sg_list = sge;
		chain[i].num_sge = 1;
		chain[i].opcode = DROCE_WR_RDMA_WRITE;
		chain[i].wr.rdma.remote_addr = f->rb;
		chain[i].wr.rdma.rkey = f->bmr->rkey;
		chain[i].next = i < 299 ? &chain[i + 1] : NULL;
	}
	bad = NULL;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], chain, &bad), -ENOMEM);
	assert_ptr_equal(bad, &chain[256]); /* max_send_wr 256 */
	free(chain);
	/* nothing refused reached the wire; the 256 accepted WRITEs did */
	pair_run(&f->p, 1000000000ull);
	assert_int_equal(rec_count(&f->p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY), 256);
}

/* Destroying a QP with work outstanding: no completions; the peer's packets for it are dropped. */
static void test_destroy_qp_outstanding(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, -1, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 64, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_step(p);
	/* destroy B's QP: A's packets to it are dropped as UNKNOWN_QPN once the link works */
	assert_int_equal(droce_destroy_qp(f->c.qp[SIDE_B]), 0);
	for (unsigned i = 0; i < p->nqps; i++)
		if (p->qps[i] == f->c.qp[SIDE_B])
			p->qps[i] = p->qps[--p->nqps];
	droce_impair_clear_rules(p->imp[A_TO_B]);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc[0].status, DROCE_WC_RETRY_EXC_ERR);
	assert_true(ctx_drops(p, SIDE_B, "UNKNOWN_QPN") >= 1);
	expect_untouched(f->b, BUF, 0xBB);
}

/* A QP destroyed with a WR in flight: the WR never completes (verbs.h: dropped without completions). */
static void test_destroy_qp_in_flight(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, -1, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 64, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_step(p);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY), 1);
	assert_int_equal(droce_destroy_qp(f->c.qp[SIDE_A]), 0);
	for (unsigned i = 0; i < p->nqps; i++)
		if (p->qps[i] == f->c.qp[SIDE_A])
			p->qps[i] = p->qps[--p->nqps];
	pair_run(p, 10ull * 1000 * 1000 * 1000);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 4), 0);
	/* no timer of the dead QP keeps firing: nothing more was sent */
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 1);
	assert_int_equal(droce_ctx_next_deadline(p->ctx[SIDE_A]), UINT64_MAX);
}


/* A send CQ too small for the traffic: the overflow is reported and the QP that overflowed it goes to ERR. */
static void test_cq_overflow_in_traffic(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct conn c2;
	struct conn_opts o = f->o;
	struct droce_wc wc[16];

	o.cq_depth = 4;
	o.sq_psn[0] = 0x3000;
	o.sq_psn[1] = 0x4000;
	pair_connect(p, &c2, &o);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(post_rdma(c2.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, f->amr, 0, 16, f->rb,
					   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_run(p, 1000000000ull);
	/* the WRITEs themselves went through and were acknowledged */
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 0);
	int r = droce_poll_cq(c2.scq[SIDE_A], 16, wc);
	if (r >= 0)
		r = droce_poll_cq(c2.scq[SIDE_A], 16, wc);
	assert_int_equal(r, -EOVERFLOW);
	assert_int_equal(qp_state(c2.qp[SIDE_A]), DROCE_QPS_ERR);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_retry_exhausted_then_flush, setup_retry2, teardown),
		T(test_bad_rkey_write),
		T(test_bad_rkey_read),
		T(test_bad_rkey_atomic),
		T(test_write_out_of_bounds),
		T(test_write_below_start),
		T(test_read_out_of_bounds),
		T(test_atomic_out_of_bounds),
		T(test_mr_missing_access),
		T(test_mr_missing_read),
		T(test_mr_missing_atomic),
		cmocka_unit_test_setup_teardown(test_qp_missing_access, setup_reset, teardown),
		T(test_stale_rkey),
		T(test_send_too_long),
		cmocka_unit_test_setup_teardown(test_post_in_reset_init_rtr, setup_reset, teardown),
		cmocka_unit_test_setup_teardown(test_receive_in_init, setup_reset, teardown),
		cmocka_unit_test_setup_teardown(test_illegal_transitions, setup_reset, teardown),
		T(test_cq_overflow),
		T(test_modify_to_err_flushes),
		T(test_cq_overflow_in_traffic),
		T(test_unsignaled_error_completes),
		T(test_bad_lkey),
		T(test_sge_past_mr),
		T(test_post_send_rejects),
		cmocka_unit_test_setup_teardown(test_destroy_qp_outstanding, setup_retry2, teardown),
		T(test_destroy_qp_in_flight),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
