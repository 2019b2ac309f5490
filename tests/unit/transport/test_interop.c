/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What other RoCE stacks do on the wire, met live in the interop suite
 * (tests/interop, droce against Linux rxe in a guest), replayed here
 * without them. Each test names the capture it came from.
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

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.min_rnr_timer = RNR_CODE;
	f->o.rnr_retry = 7;  /* forever */
	f->o.retry_cnt = 2;  /* few: a NAK counted by mistake shows soon */
	f->o.timeout = 14;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
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

/* Step (jumping to timers) until B has sent @p n RNR NAKs; bounded. */
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

/* The last record that is an RNR NAK from B. */
static int last_rnr(const struct pair *p)
{
	for (int i = (int)p->nrec - 1; i >= 0; i--)
		if (p->rec[i].dir == B_TO_A && syn_is_rnr(p->rec[i].syndrome))
			return i;
	return -1;
}

/*
 * rxe answers a burst of SENDs that finds no receive WQE with an RNR NAK for
 * the first, then a PSN-sequence NAK for the same PSN (the next SEND of the
 * burst is out of sequence to it), capture write_bw-1-droce-client of the
 * interop suite: RNR NAK psn X, NAK(PSN_SEQ_ERR) psn X, 26 us apart. The
 * second says nothing the first did not: the requester must keep its RNR
 * wait (IBTA 9.7.5.2.8) and must not charge retry_cnt for it (the counter
 * is for timeouts and sequence errors, 9.7.5.2.4/9.7.6.1.3). Before: droce
 * went back at once and counted each round, so eight rounds without
 * progress ended in RETRY_EXC_ERR with rnr_retry = 7 (forever).
 */
static void test_rnr_nak_then_seq_nak_same_psn(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	for (unsigned i = 0; i < 4; i++) {
		fill_pattern((uint8_t *)f->amr->addr + i * 64, 1, i);
		assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, i, f->amr, i * 64, 1,
					       DROCE_SEND_SIGNALED, 0), 0);
	}
	for (unsigned round = 1; round <= 8; round++) {
		until_rnr_naks(f, round);
		int r = last_rnr(p);
		assert_true(r >= 0);
		assert_int_equal(p->rec[r].psn, f->P);
		/* what rxe sends next: NAK PSN sequence error, same PSN, same MSN */
		struct droce_hdrs h;
		pair_hdrs(p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->c.qpn[SIDE_A], f->P);
		h.bth.ack_req = false;
		h.ext.aeth.syndrome = 0x60 | DROCE_NAK_PSN_SEQ_ERR;
		h.ext.aeth.msn = p->rec[r].msn;
		assert_int_equal(pair_inject(p, SIDE_B, &h, NULL), 0);
		uint64_t t_rnr = p->rec[r].now;
		/* the retry of X comes after the RNR timer, not on the NAK */
		unsigned from = (unsigned)r + 1;
		for (unsigned i = 0; i < 100000 && rec_psn_count(p, from, A_TO_B, f->P) == 0; i++) {
			if (pair_step(p))
				continue;
			uint64_t d = droce_ctx_next_deadline(p->ctx[0]);
			if (d == UINT64_MAX)
				break;
			p->now = d > p->now ? d : p->now + 1;
		}
		int retry = -1;
		for (unsigned i = from; i < p->nrec && retry < 0; i++)
			if (p->rec[i].dir == A_TO_B && p->rec[i].psn == f->P)
				retry = (int)i;
		if (retry < 0 || qp_state(f->c.qp[SIDE_A]) != DROCE_QPS_RTS) {
			rec_dump(p, 0);
			fail_msg("round %u: A sent no retry of PSN %u (QP state %d)", round, f->P,
				 qp_state(f->c.qp[SIDE_A]));
		}
		if (p->rec[retry].now - t_rnr < rnr_timer_ns(RNR_CODE)) {
			rec_dump(p, 0);
			fail_msg("round %u: retry %llu ns after the RNR NAK, want >= %llu", round,
				 (unsigned long long)(p->rec[retry].now - t_rnr),
				 (unsigned long long)rnr_timer_ns(RNR_CODE));
		}
	}
	/* receives at last: all four complete, no error on the way */
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], i, f->bmr, i * 64, 64), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 4, wc, 1000000000ull), 4);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_timeout, 0);
}


/* NAK PSN sequence error for @p psn with @p msn, as the responder B would send it. */
static void inject_seq_nak(struct fx *f, uint32_t psn, uint32_t msn)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->c.qpn[SIDE_A], psn);
	h.bth.ack_req = false;
	h.ext.aeth.syndrome = 0x60 | DROCE_NAK_PSN_SEQ_ERR;
	h.ext.aeth.msn = msn;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, NULL), 0);
}

/* Poll A alone (jumping to its timers) until it has sent PSN @p psn again
 * after record @p from: B has not seen the resend yet. */
static int until_resent(struct fx *f, unsigned from, uint32_t psn)
{
	struct pair *p = &f->p;
	for (unsigned i = 0; i < 100000 && rec_psn_count(p, from, A_TO_B, psn) == 0; i++) {
		if (droce_ctx_poll(p->ctx[0], p->now))
			continue;
		uint64_t d = droce_ctx_next_deadline(p->ctx[0]);
		if (d == UINT64_MAX)
			break;
		p->now = d > p->now ? d : p->now + 1;
	}
	for (unsigned i = from; i < p->nrec; i++)
		if (p->rec[i].dir == A_TO_B && p->rec[i].psn == psn)
			return (int)i;
	return -1;
}

/*
 * The same pair of NAKs in the other order of arrival, as the interop suite
 * saw it on a loaded host (write_bw-1-droce-client, pending `retry-exc`):
 * rxe's sequence NAK for X reached droce only after the RNR wait had ended
 * and X had been sent again. It reports the gap that the resend already
 * repairs; charged to retry_cnt, seven such rounds without progress ended
 * the QP with RETRY_EXC_ERR. A sequence NAK for the PSN the requester last
 * went back to, with nothing acknowledged since, is that same gap again
 * (a responder NAKs once per gap, 9.7.5.2.1): no second rewind, no retry.
 */
static void test_rnr_nak_then_late_seq_nak(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	for (unsigned i = 0; i < 4; i++) {
		fill_pattern((uint8_t *)f->amr->addr + i * 64, 1, i);
		assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, i, f->amr, i * 64, 1,
					       DROCE_SEND_SIGNALED, 0), 0);
	}
	for (unsigned round = 1; round <= 8; round++) {
		until_rnr_naks(f, round);
		int r = last_rnr(p);
		assert_true(r >= 0);
		int retry = until_resent(f, (unsigned)r + 1, f->P);
		if (retry < 0 || qp_state(f->c.qp[SIDE_A]) != DROCE_QPS_RTS) {
			rec_dump(p, 0);
			fail_msg("round %u: A sent no retry of PSN %u after the RNR wait", round, f->P);
		}
		inject_seq_nak(f, f->P, p->rec[r].msn); /* late: X is on its way again */
		droce_ctx_poll(p->ctx[0], p->now);        /* A takes it before B has seen X */
		if (qp_state(f->c.qp[SIDE_A]) != DROCE_QPS_RTS) {
			rec_dump(p, 0);
			fail_msg("round %u: the late sequence NAK ended the QP (state %d)", round,
				 qp_state(f->c.qp[SIDE_A]));
		}
	}
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], i, f->bmr, i * 64, 64), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 4, wc, 1000000000ull), 4);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_nak, 0);
}

/*
 * One lost packet, its gap reported once by B's NAK, then the same NAK
 * again before A's resend has been answered (a copy delayed in the network,
 * or provoked by packets A sent before it went back): A goes back once and
 * counts one retry, however many copies come. retry_cnt 2: before, the
 * third copy ended the QP with RETRY_EXC_ERR.
 */
static void test_repeated_seq_nak_counts_once(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], i, f->bmr, i * 64, 64), 0);
	pair_rule(p, A_TO_B, DROCE_IMPAIR_DROP, -1, f->P + 1, 1); /* the 2nd SEND, once */
	for (unsigned i = 0; i < 4; i++) {
		fill_pattern((uint8_t *)f->amr->addr + i * 64, 1, i);
		assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, i, f->amr, i * 64, 1,
					       DROCE_SEND_SIGNALED, 0), 0);
	}
	/* until B has NAKed the gap at P + 1 and A has gone back to it */
	unsigned i;
	for (i = 0; i < 100000 && rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR) == 0; i++)
		if (!pair_step(p))
			p->now++;
	assert_int_equal(rec_naks(p, 0, B_TO_A, DROCE_NAK_PSN_SEQ_ERR), 1);
	for (unsigned k = 0; k < 4; k++) {
		inject_seq_nak(f, f->P + 1, 1);
		pair_step(p);
		assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
	}
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 4, wc, 1000000000ull), 4);
	for (unsigned k = 0; k < 4; k++)
		assert_int_equal(wc[k].status, DROCE_WC_SUCCESS);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_nak, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rnr_nak_then_seq_nak_same_psn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_nak_then_late_seq_nak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeated_seq_nak_counts_once, setup, teardown),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
