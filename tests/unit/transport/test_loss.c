/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Recovery from loss, duplication, reordering and corruption, one impairment
 * at a time, each with the exact packets that must follow it:
 *   - a lost request packet that leaves a gap -> one PSN-sequence NAK and a
 *     go-back-N resend from the NAK'd PSN (IBTA 9.7.5.2.1, 9.9.2.1.1);
 *   - a lost last packet or a lost ACK -> the local ACK timeout and a resend
 *     from the first unacknowledged PSN (9.7.6.1.3), duplicates re-ACKed
 *     (9.9.2.1.2) and never executed twice;
 *   - lost READ request / responses -> the READ re-issued for the remaining
 *     bytes at the PSN of the first missing response (9.7.5.2.1 note, o9-21);
 *   - a duplicated or retried atomic answered from the replay cache, executed
 *     once (9.9.2.1.2.4 / C9-130);
 *   - a corrupted byte -> ICRC drop, counted (A17.4.5.1), then recovered.
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

#define BUF (1u << 20)
#define TIMEOUT 10 /* 4.19 ms */

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;        /* A's first PSN */
	uint8_t *a, *b;
	uint64_t rb;       /* remote base address */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.timeout = TIMEOUT;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = f->o.sq_psn[SIDE_A];
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

static void wait_ok(struct fx *f, struct droce_cq *cq, uint64_t wr_id)
{
	struct droce_wc wc;
	if (pair_wait(&f->p, cq, 1, &wc, 10ull * 1000 * 1000 * 1000) != 1) {
		rec_dump(&f->p, 0);
		fail_msg("no completion for wr_id %llu", (unsigned long long)wr_id);
	}
	if (wc.status != DROCE_WC_SUCCESS || wc.wr_id != wr_id) {
		rec_dump(&f->p, 0);
		fail_msg("wr_id %llu status %s, want wr_id %llu SUCCESS",
			 (unsigned long long)wc.wr_id, droce_wc_status_str(wc.status),
			 (unsigned long long)wr_id);
	}
}

/* Index of the first record in @p dir after record @p after, or -1. */
static int next_in_dir(const struct pair *p, int after, int dir)
{
	return rec_find(p, (unsigned)(after + 1), dir, -1);
}

/* Index of the last ACK-or-NAK B sent before record @p before that A received, or -1. */
static int last_ack_before(const struct pair *p, int before)
{
	int last = -1;
	for (int i = 0; i < before; i++)
		if (p->rec[i].dir == B_TO_A && p->rec[i].opcode == DROCE_OP_RC_ACKNOWLEDGE &&
		    syn_is_ack(p->rec[i].syndrome) && p->rec[i].fate != DROCE_IMPAIR_DROP)
			last = i;
	return last;
}

/*
 * A 3-packet message (F P, M P+1, L P+2) with packet @p pos lost once.
 * Before the last packet a gap shows: exactly one NAK and a NAK-driven
 * resend from the lost PSN, no timeout. The last packet leaves no gap:
 * the ACK timer resends from the first unacknowledged PSN.
 */
static void lost_packet(struct fx *f, enum droce_wr_opcode op, unsigned pos)
{
	struct pair *p = &f->p;
	const uint32_t len = 3000;
	uint32_t lost = PSN(f->P + pos);
	struct droce_qp_stats sa, sb;
	uint64_t t0 = p->now;
	bool send = op == DROCE_WR_SEND;

	fill_pattern(f->a, len, 7);
	if (send) {
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 4096), 0);
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 2, f->bmr, 8192, 4096), 0);
	}
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, lost, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 42, f->amr, 0, len, f->rb, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 42);
	uint64_t t_done = p->now;
	if (send)
		wait_ok(f, f->c.rcq[SIDE_B], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, len, 7), -1);

	sa = qp_stats(f->c.qp[SIDE_A]);
	sb = qp_stats(f->c.qp[SIDE_B]);
	/* the lost packet went out twice: dropped, then resent */
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, lost), 2);
	if (pos < 2) {
		int nak = -1;
		for (unsigned i = 0; i < p->nrec; i++)
			if (p->rec[i].dir == B_TO_A && syn_is_nak(p->rec[i].syndrome, DROCE_NAK_PSN_SEQ_ERR) &&
			    p->rec[i].opcode == DROCE_OP_RC_ACKNOWLEDGE) {
				nak = (int)i;
				break;
			}
		if (nak < 0 || rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR) != 1) {
			rec_dump(p, 0);
			fail_msg("want exactly one PSN sequence NAK");
		}
		/* 9.7.5.2.1: the NAK carries the expected PSN; no message completed yet */
		assert_int_equal(p->rec[nak].psn, lost);
		assert_int_equal(p->rec[nak].msn, 0);
		/* go-back-N from the NAK'd PSN */
		int r = next_in_dir(p, nak, A_TO_B);
		assert_true(r >= 0);
		assert_int_equal(p->rec[r].psn, lost);
		assert_int_equal(sa.retrans_nak, 1);
		assert_int_equal(sa.retrans_timeout, 0);
		assert_int_equal(sb.nak_sent[DROCE_NAK_PSN_SEQ_ERR], 1);
		assert_int_equal(sa.nak_rcvd[DROCE_NAK_PSN_SEQ_ERR], 1);
		assert_true(sb.out_of_seq >= 1);
		/* recovered without waiting for the ACK timer */
		assert_true(t_done - t0 < ack_timeout_ns(TIMEOUT));
	} else {
		assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 0);
		assert_int_equal(sa.retrans_timeout, 1);
		assert_int_equal(sa.retrans_nak, 0);
		/* the resend starts right after the last PSN acknowledged before it */
		int first_resend = -1;
		for (unsigned i = 0, seen = 0; i < p->nrec; i++) {
			if (p->rec[i].dir != A_TO_B)
				continue;
			if (++seen == 4) {
				first_resend = (int)i;
				break;
			}
		}
		assert_true(first_resend >= 0);
		int ack = last_ack_before(p, first_resend);
		uint32_t want = ack < 0 ? f->P : PSN(p->rec[ack].psn + 1);
		assert_int_equal(p->rec[first_resend].psn, want);
		assert_true(p->rec[first_resend].now - p->rec[0].now >= ack_timeout_ns(TIMEOUT));
		/* every resent PSN before the lost one is a duplicate at B */
		assert_int_equal(sb.dup_reqs, psn_diff(lost, want));
	}
	/* the last ACK covers the message: PSN P+2, MSN 1 */
	int last = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && syn_is_ack(p->rec[i].syndrome))
			last = (int)i;
	assert_true(last >= 0);
	assert_int_equal(p->rec[last].psn, PSN(f->P + 2));
	assert_int_equal(p->rec[last].msn, 1);

	if (send) {
		/* the receive WQE was consumed once: the next SEND lands in WQE 2 */
		struct droce_wc wc;
		assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 0);
		fill_pattern(f->a + 4096, 10, 8);
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 43, f->amr, 4096, 10, 0, 0,
					   DROCE_SEND_SIGNALED, 0), 0);
		wait_ok(f, f->c.scq[SIDE_A], 43);
		wait_ok(f, f->c.rcq[SIDE_B], 2);
		assert_int_equal(check_pattern(f->b + 8192, 10, 8), -1);
	}
}

static void test_write_lost_first(void **s) { lost_packet(*s, DROCE_WR_RDMA_WRITE, 0); }
static void test_write_lost_middle(void **s) { lost_packet(*s, DROCE_WR_RDMA_WRITE, 1); }
static void test_write_lost_last(void **s) { lost_packet(*s, DROCE_WR_RDMA_WRITE, 2); }
static void test_send_lost_first(void **s) { lost_packet(*s, DROCE_WR_SEND, 0); }
static void test_send_lost_middle(void **s) { lost_packet(*s, DROCE_WR_SEND, 1); }
static void test_send_lost_last(void **s) { lost_packet(*s, DROCE_WR_SEND, 2); }

/* The ACK is lost: timeout, the request is resent, B re-ACKs the duplicate without executing it again. */
static void lost_ack(struct fx *f, enum droce_wr_opcode op)
{
	struct pair *p = &f->p;
	struct droce_qp_stats sa, sb;
	struct droce_wc wc;

	fill_pattern(f->a, 100, 3);
	if (op == DROCE_WR_SEND) {
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 4096), 0);
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 2, f->bmr, 8192, 4096), 0);
	}
	pair_rule(p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 5, f->amr, 0, 100, f->rb, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 5);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 100, 3), -1);
	sa = qp_stats(f->c.qp[SIDE_A]);
	sb = qp_stats(f->c.qp[SIDE_B]);
	assert_int_equal(sa.retrans_timeout, 1);
	assert_int_equal(sb.dup_reqs, 1);
	/* the request twice, at the same PSN; two ACKs, both PSN P, MSN 1 (the duplicate does not bump it) */
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, f->P), 2);
	unsigned idx[8];
	unsigned n = rec_dir(p, 0, B_TO_A, idx, 8);
	assert_int_equal(n, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(p->rec[idx[i]].opcode, DROCE_OP_RC_ACKNOWLEDGE);
		assert_true(syn_is_ack(p->rec[idx[i]].syndrome));
		assert_int_equal(p->rec[idx[i]].psn, f->P);
		assert_int_equal(p->rec[idx[i]].msn, 1);
	}
	assert_true(p->rec[idx[1]].now - p->rec[idx[0]].now >= ack_timeout_ns(TIMEOUT));
	if (op == DROCE_WR_SEND) {
		/* one receive completion; WQE 2 still posted */
		wait_ok(f, f->c.rcq[SIDE_B], 1);
		assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 0);
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 6, f->amr, 0, 1, 0, 0,
					   DROCE_SEND_SIGNALED, 0), 0);
		wait_ok(f, f->c.rcq[SIDE_B], 2);
	}
}

static void test_write_lost_ack(void **s) { lost_ack(*s, DROCE_WR_RDMA_WRITE); }
static void test_send_lost_ack(void **s) { lost_ack(*s, DROCE_WR_SEND); }

static void test_read_lost_request(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_qp_stats sa;

	fill_pattern(f->b, 2000, 11);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_REQUEST, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 9, f->amr, 0, 2000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 9);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->a, 2000, 11), -1);
	sa = qp_stats(f->c.qp[SIDE_A]);
	assert_int_equal(sa.retrans_timeout, 1);
	/* the same request twice: PSN P, same RETH */
	unsigned idx[8], rsp[8];
	assert_int_equal(rec_dir(p, 0, A_TO_B, idx, 8), 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct pkt_rec *r = &p->rec[idx[i]];
		assert_int_equal(r->opcode, DROCE_OP_RC_RDMA_READ_REQUEST);
		assert_int_equal(r->psn, f->P);
		assert_true(r->va == f->rb);
		assert_int_equal(r->dma_len, 2000);
	}
	assert_int_equal(p->rec[idx[0]].fate, DROCE_IMPAIR_DROP);
	/* responses only to the second: FIRST P, LAST P+1 */
	unsigned n = rec_dir(p, 0, B_TO_A, rsp, 8);
	assert_int_equal(n, 2);
	expect_read_resp(p, rsp, n, f->P, 2000, 1024, 1, f->c.qpn[SIDE_A]);
}

/*
 * A READ of 3 MTUs with response @p pos lost: the requester re-issues the
 * READ for what is missing (IBTA 9.7.4.1.4, o9-21): PSN of the first missing
 * response, the address and length of the remaining bytes.
 */
static void read_lost_response(struct fx *f, unsigned pos)
{
	struct pair *p = &f->p;
	const uint32_t len = 3 * 1024;
	static const uint8_t ops[3] = {DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST,
				       DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE,
				       DROCE_OP_RC_RDMA_READ_RESPONSE_LAST};
	struct droce_qp_stats sa;
	struct droce_wc wc;

	fill_pattern(f->b, len, 12);
	pair_rule(p, B_TO_A, DROCE_IMPAIR_DROP, ops[pos], -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 10, f->amr, 0, len, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 10);
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], &wc, 1), 0);
	assert_int_equal(check_pattern(f->a, len, 12), -1);
	sa = qp_stats(f->c.qp[SIDE_A]);

	unsigned req[8], n = rec_dir(p, 0, A_TO_B, req, 8);
	if (n != 2) {
		rec_dump(p, 0);
		fail_msg("want the READ request and one re-issued READ, got %u requests", n);
	}
	const struct pkt_rec *r = &p->rec[req[1]];
	assert_int_equal(r->opcode, DROCE_OP_RC_RDMA_READ_REQUEST);
	assert_int_equal(r->psn, PSN(f->P + pos));
	assert_true(r->va == f->rb + pos * 1024u);
	assert_int_equal(r->dma_len, len - pos * 1024u);
	assert_int_equal(r->rkey, f->bmr->rkey);
	/* the re-issued READ is a duplicate to B, answered from its original request (9.9.2.1.2.3) */
	unsigned rsp[16], m = 0, idx[16];
	unsigned nall = rec_dir(p, req[1], B_TO_A, idx, 16);
	for (unsigned i = 0; i < nall; i++)
		rsp[m++] = idx[i];
	expect_read_resp(p, rsp, m, PSN(f->P + pos), len - pos * 1024u, 1024, 1, f->c.qpn[SIDE_A]);
	assert_int_equal(m, 3 - pos);
	if (pos == 2)
		assert_int_equal(sa.retrans_timeout, 1); /* no gap to see: the timer found it */
}

static void test_read_lost_first_response(void **s) { read_lost_response(*s, 0); }
static void test_read_lost_middle_response(void **s) { read_lost_response(*s, 1); }
static void test_read_lost_last_response(void **s) { read_lost_response(*s, 2); }

/* A duplicated FETCH_ADD is executed once; B answers the copy from its replay cache. */
static void test_atomic_duplicate_once(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint64_t *remote = (uint64_t *)f->b, *local = (uint64_t *)f->a;

	*remote = 1000;
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DUP, DROCE_OP_RC_FETCH_ADD, -1, 1);
	assert_int_equal(post_atomic(f->c.qp[SIDE_A], DROCE_WR_ATOMIC_FETCH_AND_ADD, 1, f->amr, 0,
				     f->rb, f->bmr->rkey, 7, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_true(*remote == 1007);
	assert_true(*local == 1000);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
	unsigned idx[8], n = rec_dir(p, 0, B_TO_A, idx, 8);
	assert_int_equal(n, 2);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(p->rec[idx[i]].opcode, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
		assert_int_equal(p->rec[idx[i]].psn, f->P);
		assert_true(p->rec[idx[i]].orig == 1000);
		assert_int_equal(p->rec[idx[i]].msn, 1);
	}
	/* a later atomic still works and sees the single add */
	assert_int_equal(post_atomic(f->c.qp[SIDE_A], DROCE_WR_ATOMIC_FETCH_AND_ADD, 2, f->amr, 8,
				     f->rb, f->bmr->rkey, 1, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 2);
	assert_true(((uint64_t *)f->a)[1] == 1007);
	assert_true(*remote == 1008);
}

/* The ATOMIC ACK is lost: the requester retries, B replays, the add happens once. */
static void test_atomic_lost_ack_once(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint64_t *remote = (uint64_t *)f->b, *local = (uint64_t *)f->a;

	*remote = 50;
	pair_rule(p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, -1, 1);
	assert_int_equal(post_atomic(f->c.qp[SIDE_A], DROCE_WR_ATOMIC_CMP_AND_SWP, 1, f->amr, 0,
				     f->rb, f->bmr->rkey, 50, 60), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_true(*remote == 60);
	assert_true(*local == 50);   /* the original value, not 60 from a second execution */
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_COMPARE_SWAP), 2);
}

/* A flipped payload byte fails the ICRC: dropped and counted, then recovered. */
static void test_corrupt_icrc_dropped(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;

	fill_pattern(f->a, 3000, 21);
	/* offset 100: inside the payload of a middle packet (54 bytes of headers) */
	pair_corrupt(p, A_TO_B, DROCE_OP_RC_RDMA_WRITE_MIDDLE, -1, 100);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 3000, 21), -1);
	assert_int_equal(ctx_drops(p, SIDE_B, "BAD_ICRC"), 1);
	assert_int_equal(rec_psn_count(p, 0, A_TO_B, PSN(f->P + 1)), 2);
	int first = rec_find(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_MIDDLE);
	assert_true(first >= 0 && p->rec[first].corrupted);
	/* the next packet showed the gap: one NAK */
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
}

/* A packet delivered late (reordered) behind its successor: one NAK, data intact. */
static void test_reorder_one(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;

	fill_pattern(f->a, 3000, 22);
	pair_hold(p, A_TO_B, -1, PSN(f->P + 1), 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, 3000, 22), -1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
}

/* A duplicated middle packet: counted as a duplicate, no NAK, one completion. */
static void test_duplicate_write_packet(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	fill_pattern(f->a, 3000, 23);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DUP, -1, PSN(f->P + 1), 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], &wc, 1), 0);
	assert_int_equal(check_pattern(f->b, 3000, 23), -1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 0);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 3);
}

/* A duplicated SEND_ONLY consumes one receive WQE, not two. */
static void test_duplicate_send_consumes_once(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[2];

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 1, f->bmr, 0, 4096), 0);
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 2, f->bmr, 8192, 4096), 0);
	fill_pattern(f->a, 64, 24);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DUP, DROCE_OP_RC_SEND_ONLY, -1, 1);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 64,
				       DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.rcq[SIDE_B], wc, 2), 1);
	assert_true(wc[0].wr_id == 1);
	assert_int_equal(wc[0].byte_len, 64);
	assert_int_equal(check_pattern(f->b, 64, 24), -1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).dup_reqs, 1);
}

/* Lost first packet of a 1 MB WRITE: one NAK for the whole burst behind the gap. */
static void test_big_write_lost_first(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	const uint32_t len = BUF;

	fill_pattern(f->a, len, 25);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_WRITE_FIRST, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, len, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 1);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, len, 25), -1);
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).nak_sent[DROCE_NAK_PSN_SEQ_ERR], 1);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_write_lost_first),
		T(test_write_lost_middle),
		T(test_write_lost_last),
		T(test_send_lost_first),
		T(test_send_lost_middle),
		T(test_send_lost_last),
		T(test_write_lost_ack),
		T(test_send_lost_ack),
		T(test_read_lost_request),
		T(test_read_lost_first_response),
		T(test_read_lost_middle_response),
		T(test_read_lost_last_response),
		T(test_atomic_duplicate_once),
		T(test_atomic_lost_ack_once),
		T(test_corrupt_icrc_dropped),
		T(test_reorder_one),
		T(test_duplicate_write_packet),
		T(test_duplicate_send_consumes_once),
		T(test_big_write_lost_first),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
