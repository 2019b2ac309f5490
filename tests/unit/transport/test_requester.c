/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester policies seen on the wire:
 *   - at most max_rd_atomic READ/atomic requests outstanding (IBTA 9.5.1, o9-?);
 *   - a FENCEd WR waits for earlier READs and atomics (10.8.3.3);
 *   - implicit acknowledgement: a READ response or a later ACK completes the
 *     earlier messages whose own ACK was lost (9.7.5.1.2 coalescing, 9.7.8);
 *   - the send window bounds the packets in flight;
 *   - the local ACK timeout is 4.096 us * 2^timeout, between 1x and 4x
 *     (9.7.6.1.3 / C9-141);
 *   - retry and RNR counters count consecutive failures, reset by progress
 *     (9.7.6.1.3, 9.7.5.2.8).
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

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t P;
	uint8_t *a, *b;
	uint64_t rb;
};

static struct fx *fx_new(const struct conn_opts *o)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	f->o = *o;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = f->o.sq_psn[SIDE_A];
	return f;
}

static void fx_free(struct fx *f)
{
	pair_fini(&f->p);
	free(f);
}

static void wait_all_ok(struct fx *f, int n)
{
	struct droce_wc wc[64];
	int got = pair_wait(&f->p, f->c.scq[SIDE_A], n, wc, 10ull * 1000 * 1000 * 1000);
	if (got != n) {
		rec_dump(&f->p, 0);
		fail_msg("%d of %d completions", got, n);
	}
	for (int i = 0; i < n; i++)
		if (wc[i].status != DROCE_WC_SUCCESS || wc[i].wr_id != (uint64_t)i) {
			rec_dump(&f->p, 0);
			fail_msg("completion %d: wr_id %llu %s", i, (unsigned long long)wc[i].wr_id,
				 droce_wc_status_str(wc[i].status));
		}
}

static bool is_last_rd_response(uint8_t op)
{
	return op == DROCE_OP_RC_RDMA_READ_RESPONSE_LAST || op == DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY ||
	       op == DROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
}

static void test_max_rd_atomic(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.max_rd_atomic = 2;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;
	int outstanding = 0, peak = 0;

	for (int i = 0; i < 8; i++) {
		fill_pattern(f->b + i * 4096, 2000, 10 + (uint64_t)i);
		if (i % 2)
			assert_int_equal(post_atomic(f->c.qp[SIDE_A], DROCE_WR_ATOMIC_FETCH_AND_ADD,
						     (uint64_t)i, f->amr, 65536 + i * 8,
						     f->rb + 65536, f->bmr->rkey, 1, 0), 0);
		else
			assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, (uint64_t)i,
						   f->amr, i * 4096, 2000, f->rb + i * 4096,
						   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	}
	wait_all_ok(f, 8);
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir == A_TO_B && (r->opcode == DROCE_OP_RC_RDMA_READ_REQUEST ||
					 r->opcode == DROCE_OP_RC_FETCH_ADD))
			outstanding++;
		else if (r->dir == B_TO_A && is_last_rd_response(r->opcode))
			outstanding--;
		if (outstanding > peak)
			peak = outstanding;
		if (outstanding > 2) {
			rec_dump(p, 0);
			fail_msg("%d READ/atomic requests outstanding, max_rd_atomic 2", outstanding);
		}
	}
	assert_int_equal(peak, 2); /* and it does use what it may */
	for (int i = 0; i < 8; i += 2)
		assert_int_equal(check_pattern(f->a + i * 4096, 2000, 10 + (uint64_t)i), -1);
	fx_free(f);
}

static void test_fence_waits_for_read(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;

	fill_pattern(f->b, 8192, 1);
	fill_pattern(f->a + 65536, 100, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 0, f->amr, 0, 8192, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 65536, 100,
				   f->rb + 65536, f->bmr->rkey,
				   DROCE_SEND_SIGNALED | DROCE_SEND_FENCE, 0), 0);
	wait_all_ok(f, 2);
	int w = rec_find(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY);
	int last = -1;
	for (unsigned i = 0; i < p->nrec; i++)
		if (p->rec[i].dir == B_TO_A && p->rec[i].opcode == DROCE_OP_RC_RDMA_READ_RESPONSE_LAST)
			last = (int)i;
	assert_true(w >= 0 && last >= 0);
	if (w < last) {
		rec_dump(p, 0);
		fail_msg("the fenced WRITE left before the READ's last response");
	}
	assert_int_equal(check_pattern(f->a, 8192, 1), -1);
	assert_int_equal(check_pattern(f->b + 65536, 100, 2), -1);
	fx_free(f);
}

/* Every ACK lost: the READ response behind the WRITE acknowledges it (9.7.8 implicit ACK). */
static void test_implicit_ack_by_read_response(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.timeout = 10;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;

	pair_rule(p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 0);
	fill_pattern(f->a, 3000, 3);
	fill_pattern(f->b + 8192, 500, 4);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 8192, 500,
				   f->rb + 8192, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	uint64_t t0 = p->now;
	wait_all_ok(f, 2);
	assert_true(p->now - t0 < ack_timeout_ns(10));
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
	assert_int_equal(check_pattern(f->b, 3000, 3), -1);
	assert_int_equal(check_pattern(f->a + 8192, 500, 4), -1);
	fx_free(f);
}

/* The ACK of message 1 is lost; the ACK of message 2 (PSN P+1, MSN 2) completes both. */
static void test_later_ack_covers_earlier(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.timeout = 10;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;

	pair_rule(p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 10, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	uint64_t t0 = p->now;
	for (int i = 0; i < 100000 && rec_count(p, 0, B_TO_A, -1) == 0; i++)
		pair_step(p);
	assert_int_equal(rec_count(p, 0, B_TO_A, -1), 1);
	assert_int_equal(p->rec[rec_find(p, 0, B_TO_A, -1)].fate, DROCE_IMPAIR_DROP);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 10, f->rb + 64,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_all_ok(f, 2);
	assert_true(p->now - t0 < ack_timeout_ns(10));
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 2);
	fx_free(f);
}

/*
 * The window bounds the packets in flight: count sent minus acknowledged
 * along the tap. With the "fixed" congestion control the window stays at
 * DROCE_DEFAULT_WINDOW_PKTS (stack/cc/fixed.c).
 */
static void test_window_bounds_inflight(void **state)
{
	struct conn_opts o;
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 0, 4, "fixed"};
	conn_opts_default(&o);
	o.mtu = DROCE_MTU_256;
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, &po);
	f->o = o;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = f->o.sq_psn[SIDE_A];
	struct pair *p = &f->p;
	uint32_t acked = PSN(f->P - 1), sent = PSN(f->P - 1);
	unsigned peak = 0;

	fill_pattern(f->a, BUF, 5);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, BUF, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_all_ok(f, 1);
	assert_int_equal(check_pattern(f->b, BUF, 5), -1);
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir == A_TO_B && psn_diff(r->psn, sent) < 0x800000u)
			sent = r->psn;
		if (r->dir == B_TO_A && syn_is_ack(r->syndrome) && psn_diff(r->psn, acked) < 0x800000u)
			acked = r->psn;
		unsigned inflight = psn_diff(sent, acked);
		if (inflight > peak)
			peak = inflight;
	}
	printf("window: peak %u packets in flight (default window %u)\n", peak,
	       DROCE_DEFAULT_WINDOW_PKTS);
	if (peak > DROCE_DEFAULT_WINDOW_PKTS) {
		fail_msg("%u packets in flight, window %u", peak, DROCE_DEFAULT_WINDOW_PKTS);
	}
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), BUF / 256);
	fx_free(f);
}

/* The local ACK timeout: retransmission between 1x and 4x of 4.096 us * 2^timeout. */
static void test_timeout_value(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.timeout = 12; /* 16.8 ms */
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;

	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 10, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_all_ok(f, 1);
	unsigned idx[4];
	assert_int_equal(rec_dir(p, 0, A_TO_B, idx, 4), 2);
	uint64_t dt = p->rec[idx[1]].now - p->rec[idx[0]].now;
	printf("timeout 12: resent after %llu ns (4.096 us * 2^12 = %llu ns)\n",
	       (unsigned long long)dt, (unsigned long long)ack_timeout_ns(12));
	assert_true(dt >= ack_timeout_ns(12));
	assert_true(dt <= 4 * ack_timeout_ns(12));
	fx_free(f);
}

/* retry_cnt 1 and two separate single losses: each recovers, the count restarts with progress. */
static void test_retry_count_resets_on_progress(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.timeout = 8;
	o.retry_cnt = 1;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;
	struct droce_wc wc;

	for (uint32_t i = 0; i < 3; i++) {
		pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + i, 1);
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, f->amr, 0, 10,
					   f->rb, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
		assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	}
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 3);
	fx_free(f);
}

/* rnr_retry 1 and two messages that each meet one RNR NAK: both succeed. */
static void test_rnr_count_resets_per_message(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.rnr_retry = 1;
	o.min_rnr_timer = 2;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;
	struct droce_wc wc;

	for (uint64_t i = 0; i < 2; i++) {
		unsigned before = rec_naks(p, 0, B_TO_A, -1);
		assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, i, f->amr, 0, 10,
					       DROCE_SEND_SIGNALED, 0), 0);
		for (int k = 0; k < 100000 && rec_naks(p, 0, B_TO_A, -1) == before; k++)
			if (!pair_step(p))
				pair_advance(p, UINT64_MAX);
		assert_int_equal(rec_naks(p, 0, B_TO_A, -1), before + 1);
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], i, f->bmr, 0, 100), 0);
		assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	}
	fx_free(f);
}


/* A link that refuses frames (-ENOBUFS, link.h) slows the requester down but loses nothing. */
static void test_link_backpressure(void **state)
{
	struct conn_opts o;
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 8, 4, NULL}; /* 8 frames per direction */
	struct fx *f = calloc(1, sizeof(*f));
	struct droce_ctx_stats cs;
	struct droce_memlink_stats ms;

	pair_init(&f->p, &po);
	conn_opts_default(&o);
	f->o = o;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->P = f->o.sq_psn[SIDE_A];
	fill_pattern(f->a, BUF, 6);
	fill_pattern(f->b + BUF / 2, BUF / 2, 7);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, BUF / 2, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, BUF / 2, BUF / 2,
				   f->rb + BUF / 2, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_all_ok(f, 2);
	assert_int_equal(check_pattern(f->b, BUF / 2, 6), -1);
	assert_int_equal(check_pattern(f->a + BUF / 2, BUF / 2, 7), -1);
	assert_int_equal(droce_memlink_get_stats(f->p.ml, DROCE_MEMLINK_0_TO_1, &ms), 0);
	assert_true(ms.tx_nobufs > 0);   /* the link did push back */
	assert_int_equal(droce_ctx_get_stats(f->p.ctx[SIDE_A], &cs), 0);
	assert_true(cs.tx_busy > 0);     /* and the context counted it */
	/* every PSN sent once: a refused frame is not a lost frame */
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_pkts, 0);
	assert_int_equal(rec_count(&f->p, 0, A_TO_B, -1), BUF / 2 / 1024 + 1);
	assert_int_equal(rec_count(&f->p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE),
			 BUF / 2 / 1024 - 2);
	fx_free(f);
}

/* The responder acknowledges at least once per receive burst: one ACK never covers more than
 * the DROCE_DEFAULT_BURST packets of one poll (test_ack_coalesce.c counts them). */
static void test_ack_coalescing_bound(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;
	uint32_t prev = PSN(f->P - 1);

	fill_pattern(f->a, BUF, 8);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, BUF, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_all_ok(f, 1);
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir != B_TO_A)
			continue;
		assert_true(syn_is_ack(r->syndrome));
		if (psn_diff(r->psn, prev) > DROCE_DEFAULT_BURST) {
			rec_dump(p, i > 20 ? i - 20 : 0);
			fail_msg("one ACK covers %u packets, more than %u", psn_diff(r->psn, prev),
				 DROCE_DEFAULT_BURST);
		}
		prev = r->psn;
	}
	assert_int_equal(prev, PSN(f->P + BUF / 1024 - 1));
	fx_free(f);
}


/* Two QP pairs on one link: a dead path to one QP does not hold up the other (no head-of-line
 * blocking across QPs); each keeps its own PSN space. */
static void test_qps_independent(void **state)
{
	struct conn_opts o;
	conn_opts_default(&o);
	o.timeout = 10;
	struct fx *f = fx_new(&o);
	struct pair *p = &f->p;
	struct conn c2;
	struct droce_wc wc[2];
	struct droce_impair_rule rule = {.action = DROCE_IMPAIR_DROP, .match = DROCE_IMPAIR_M_DQPN};

	o.sq_psn[0] = 0x777;
	o.sq_psn[1] = 0x999;
	pair_connect(p, &c2, &o);
	/* everything to the first pair's B QP is lost, for now */
	rule.dqpn = f->c.qpn[SIDE_B];
	assert_int_equal(droce_impair_add_rule(p->imp[A_TO_B], &rule), 0);
	fill_pattern(f->a, 5000, 1);
	fill_pattern(f->a + 8192, 5000, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 5000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(c2.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 8192, 5000,
				   f->rb + 8192, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	uint64_t t0 = p->now;
	assert_int_equal(pair_wait(p, c2.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_true(p->now - t0 < ack_timeout_ns(10)); /* not held behind the other QP's timeouts */
	assert_int_equal(check_pattern(f->b + 8192, 5000, 2), -1);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 1), 0);
	/* the path heals: the first pair recovers on its own timer */
	droce_impair_clear_rules(p->imp[A_TO_B]);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(f->b, 5000, 1), -1);
	/* PSN spaces: each QP's packets numbered from its own start */
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir != A_TO_B)
			continue;
		uint32_t base = r->dqpn == c2.qpn[SIDE_B] ? 0x777 : f->P;
		assert_true(psn_diff(r->psn, base) < 5);
	}
	assert_true(qp_stats(f->c.qp[SIDE_A]).retrans_timeout >= 1);
	assert_int_equal(qp_stats(c2.qp[SIDE_A]).retrans_timeout, 0);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_rd_atomic),
		cmocka_unit_test(test_fence_waits_for_read),
		cmocka_unit_test(test_implicit_ack_by_read_response),
		cmocka_unit_test(test_later_ack_covers_earlier),
		cmocka_unit_test(test_window_bounds_inflight),
		cmocka_unit_test(test_timeout_value),
		cmocka_unit_test(test_retry_count_resets_on_progress),
		cmocka_unit_test(test_rnr_count_resets_per_message),
		cmocka_unit_test(test_link_backpressure),
		cmocka_unit_test(test_qps_independent),
		cmocka_unit_test(test_ack_coalescing_bound),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
