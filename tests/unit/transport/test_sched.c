/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Scheduling, timers and re-entrancy.
 *   - item 1: a QP serving a stream of READ responses still sends its own
 *     requests (requester and responder share the link fairly, as rxe runs
 *     them as independent tasks), and an ACK timeout never counts a retry for
 *     a retransmission that never left; and a QP that filled the link goes
 *     to the back of the ready list, so another QP's ACK is not held behind
 *     a bulk stream;
 *   - item 2: one timer per QP: during an RNR wait the ACK timer does not
 *     run, so an RNR NAK followed by a PSN-sequence NAK for the same PSN (rxe's
 *     answer to SEND P, P+1 with no receive WQE) waits the RNR time and
 *     resends, it does not run out of retries;
 *   - item 11: a completion that moves the QP to ERR inside the responder's
 *     execute step ends that step (no ACK queued, no receive-queue advance
 *     after the flush), and the ERR path resets the transport state RESET
 *     resets. These look inside the QP (stack/model/): the effects are not on
 *     the wire.
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
#include "core/core_int.h"
#include "pair.h"

#define MS 1000000ull

/* ------------------------------------------------------------- item 1 -- */

/* A reads from B without pause (16 READs of 16 KB outstanding, within the
 * send window); B's one WRITE to A loses its first copy. B must retransmit it between its READ responses and complete
 * it; each ACK timeout B counts must be a retransmission on the wire. */
static void test_requester_not_starved_by_read_responses(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	/* a link that holds one burst: B's responses wait in B, as on a wire
	 * slower than B's CPU */
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 32, 4, NULL};
	pair_init(&p, &po);
	conn_opts_default(&o);
	o.timeout = 8;      /* 1.05 ms */
	o.retry_cnt = 3;
	pair_connect(&p, &c, &o);
	const uint32_t big = 16 * 1024;
	struct droce_mr *amr = pair_mr(&p, SIDE_A, big + 4096, o.access, 0);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, big + 4096, o.access, 0x5A);
	uint64_t aaddr = (uint64_t)(uintptr_t)amr->addr, baddr = (uint64_t)(uintptr_t)bmr->addr;
	uint32_t bpsn = o.sq_psn[SIDE_B];

	/* B's WRITE goes out first and is lost */
	pair_rule(&p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_WRITE_ONLY, -1, 1);
	assert_int_equal(post_rdma(c.qp[SIDE_B], DROCE_WR_RDMA_WRITE, 77, bmr, big, 64, aaddr + big,
				   amr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_step(&p);
	assert_int_equal(rec_psn_count(&p, 0, B_TO_A, bpsn), 1);

	/* then A keeps 16 READs outstanding */
	unsigned posted = 0, done = 0;
	for (; posted < 16; posted++)
		assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_READ, posted, amr, 0, big, baddr,
					   bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc[16];
	int bdone = 0;
	enum droce_wc_status bst = DROCE_WC_GENERAL_ERR;
	/* the clock moves 20 us per poll: 50 polls an ACK timeout */
	for (unsigned it = 0; it < 4000 && !bdone; it++) {
		pair_step(&p);
		p.now += 20000;
		int n = droce_poll_cq(c.scq[SIDE_A], 16, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
			done++;
			assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_READ, posted++, amr, 0, big,
						   baddr, bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
		}
		if (droce_poll_cq(c.scq[SIDE_B], 1, wc) == 1) {
			bdone = 1;
			bst = wc[0].status;
		}
	}
	if (!bdone || bst != DROCE_WC_SUCCESS)
		fail_msg("B's WRITE: %s after %u READs served", bdone ? droce_wc_status_str(bst) : "not done", done);
	assert_true(done >= 1); /* B was serving READs all along */
	struct droce_qp_stats st = qp_stats(c.qp[SIDE_B]);
	unsigned copies = rec_psn_count(&p, 0, B_TO_A, bpsn);
	assert_true(copies >= 2);
	assert_true(st.retrans_timeout <= copies - 1);
	pair_fini(&p);
}

/* A's one QP streams a WRITE to B over a link that holds 8 frames; B's
 * WRITE to A on a second connection needs A's ACK. A QP that filled the
 * link goes to the back of the ready list, so A's ACK leaves between its
 * own bulk frames, not after the whole stream: kept at the head, the bulk
 * QP took every slot the link freed and B's ACK timer ran out on a link
 * that lost nothing. */
static void test_ack_not_held_behind_bulk_sender(void **state)
{
	struct pair p;
	struct conn bulk, back;
	struct conn_opts o;
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 8, 4, NULL};
	pair_init(&p, &po);
	conn_opts_default(&o);
	pair_connect(&p, &bulk, &o);
	pair_connect(&p, &back, &o);
	const uint32_t big = 256 * 1024; /* 256 packets at MTU 1024, inside the window */
	struct droce_mr *amr = pair_mr(&p, SIDE_A, big, o.access, 0x11);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, big, o.access, 0x22);
	uint64_t aaddr = (uint64_t)(uintptr_t)amr->addr, baddr = (uint64_t)(uintptr_t)bmr->addr;

	/* B's short WRITE is out first; A's stream starts in the same poll */
	assert_int_equal(post_rdma(back.qp[SIDE_B], DROCE_WR_RDMA_WRITE, 2, bmr, 0, 1024, aaddr,
				   amr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(bulk.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, amr, 0, big, baddr,
				   bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&p, bulk.scq[SIDE_A], 1, &wc, 100 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(pair_wait(&p, back.scq[SIDE_B], 1, &wc, 100 * MS), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);

	int ack = rec_find(&p, 0, A_TO_B, DROCE_OP_RC_ACKNOWLEDGE);
	int last = rec_find(&p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_LAST);
	assert_true(ack >= 0 && last >= 0);
	unsigned before = 0;
	for (int i = 0; i < ack; i++)
		before += p.rec[i].dir == A_TO_B;
	/* a few polls' worth of A's frames at most, not the 256 of the stream */
	if (ack > last || before > 64)
		fail_msg("A's ACK left after %u of its %u bulk frames", before, 256);
	assert_int_equal(qp_stats(back.qp[SIDE_B]).retrans_timeout, 0);
	pair_fini(&p);
}

/* ------------------------------------------------------------- item 2 -- */

/* SEND P and P+1 to a QP with no receive WQE; rxe answers RNR NAK at P
 * (5.12 ms) and then a PSN-sequence NAK at P (P+1 was out of sequence). With
 * an ACK timeout of 1 ms and retry_cnt 2, droce must wait the RNR time and
 * resend, not fail with RETRY_EXC_ERR after 3 ms. */
static void test_rnr_wait_stops_ack_timer(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_hdrs h;
	struct droce_wc wc[4];
	pair_init(&p, NULL);
	p.allow_bad_frames = true;
	conn_opts_default(&o);
	o.timeout = 8;
	o.retry_cnt = 2;
	o.rnr_retry = 7;
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 8192, o.access, 1);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 8192, o.access, 0);
	uint32_t P = o.sq_psn[SIDE_A];

	pair_rule(&p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1); /* B's own RNR NAK */
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 1, amr, 0, 64, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 2, amr, 64, 64, DROCE_SEND_SIGNALED, 0), 0);
	for (int i = 0; i < 4; i++)
		pair_step(&p);
	uint64_t t0 = p.now;
	pair_hdrs(&p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, c.qpn[SIDE_A], P);
	h.bth.ack_req = false;
	h.ext.aeth.syndrome = 0x20 | 18; /* RNR NAK, 5.12 ms */
	assert_int_equal(pair_inject(&p, SIDE_B, &h, NULL), 0);
	h.ext.aeth.syndrome = 0x60 | DROCE_NAK_PSN_SEQ_ERR;
	assert_int_equal(pair_inject(&p, SIDE_B, &h, NULL), 0);
	for (int i = 0; i < 4; i++)
		pair_step(&p);
	assert_int_equal(post_recv_buf(c.qp[SIDE_B], 10, bmr, 0, 64), 0);
	assert_int_equal(post_recv_buf(c.qp[SIDE_B], 11, bmr, 64, 64), 0);
	int n = pair_wait(&p, c.scq[SIDE_A], 2, wc, 100 * MS);
	if (n != 2 || wc[0].status != DROCE_WC_SUCCESS || wc[1].status != DROCE_WC_SUCCESS) {
		rec_dump(&p, 0);
		fail_msg("%d completions, first %s", n, n ? droce_wc_status_str(wc[0].status) : "-");
	}
	/* the first resend of P waited the RNR time */
	int first = -1;
	for (unsigned i = 0, k = 0; i < p.nrec; i++)
		if (p.rec[i].dir == A_TO_B && p.rec[i].psn == P && ++k == 2) {
			first = (int)i;
			break;
		}
	assert_true(first >= 0);
	assert_true(p.rec[first].now >= t0 + rnr_timer_ns(18));
	pair_fini(&p);
}

/* ------------------------------------------------------------ item 11 -- */

/* B's receive CQ holds one completion; the second SEND's completion
 * overruns it, which moves B to ERR inside the responder's execute step. */
static void test_err_inside_execute_stops_it(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	pair_init(&p, NULL);
	conn_opts_default(&o);
	o.cq_depth = 1;
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 8192, o.access, 1);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 8192, o.access, 0);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(post_recv_buf(c.qp[SIDE_B], 10 + i, bmr, 64 * i, 64), 0);
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 1, amr, 0, 16, 0, 0), 0);
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 2, amr, 16, 16, 0, 0), 0);
	pair_step(&p);
	pair_step(&p);
	struct droce_qp *qb = c.qp[SIDE_B];
	assert_int_equal(qp_state(qb), DROCE_QPS_ERR);
	/* the flush emptied the receive queue; execute did not step past it */
	assert_int_equal(qb->rq_head, qb->rq_tail);
	/* and queued no ACK on the ERR QP */
	assert_false(qb->tp.ack_pending);
	assert_int_equal(qb->tp.job_head, qb->tp.job_tail);
	pair_fini(&p);
}

/* Moving to ERR leaves the transport as RESET leaves it: no message half
 * received, no send cursor inside a WQE, no timer armed. */
static void test_err_resets_like_reset(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	pair_init(&p, NULL);
	conn_opts_default(&o);
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 8192, o.access, 1);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 8192, o.access, 0);
	assert_int_equal(post_recv_buf(c.qp[SIDE_B], 10, bmr, 0, 8192), 0);
	/* the last packet of a 3-packet SEND is lost: B is inside the message,
	 * A has the message outstanding */
	pair_rule(&p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_SEND_LAST, -1, 0);
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 1, amr, 0, 3000, 0, 0), 0);
	for (int i = 0; i < 4; i++)
		pair_step(&p);
	struct droce_qp *qa = c.qp[SIDE_A], *qb = c.qp[SIDE_B];
	assert_true(qb->tp.in_msg != 0);
	struct droce_qp_attr at = {.qp_state = DROCE_QPS_ERR};
	assert_int_equal(droce_modify_qp(qa, &at, DROCE_QP_STATE), 0);
	assert_int_equal(droce_modify_qp(qb, &at, DROCE_QP_STATE), 0);
	/* responder */
	assert_int_equal(qb->tp.in_msg, 0);
	assert_int_equal(qb->tp.recv_off, 0);
	assert_false(qb->tp.ack_pending);
	assert_false(qb->tp.nak_gap);
	/* requester */
	assert_int_equal(qa->tp.cur_pkt, 0);
	assert_int_equal(qa->tp.rd_inflight, 0);
	assert_int_equal(qa->tp.pkts_since_ackreq, 0);
	assert_int_equal(droce_ctx_next_deadline(p.ctx[SIDE_A]), UINT64_MAX);
	assert_int_equal(droce_ctx_next_deadline(p.ctx[SIDE_B]), UINT64_MAX);
	pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requester_not_starved_by_read_responses),
		cmocka_unit_test(test_ack_not_held_behind_bulk_sender),
		cmocka_unit_test(test_rnr_wait_stops_ack_timer),
		cmocka_unit_test(test_err_inside_execute_stops_it),
		cmocka_unit_test(test_err_resets_like_reset),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
