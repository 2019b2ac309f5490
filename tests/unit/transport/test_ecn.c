/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion notification on the wire (IBTA Annex A17.9): droce sends
 * ECN-capable packets; a packet arriving marked CE (here by the impairment
 * shim standing in for a congested switch) makes its receiver (the
 * notification point) send a CNP to the QP that sent it (A17.9.3: opcode
 * 0x81, DestQP = the sender's QP, BECN set, 16 reserved bytes), rate-limited,
 * and the sender counts it. Data is unaffected.
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
	uint8_t *a, *b;
	uint64_t rb;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
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

static void mark_all(struct pair *p, int dir)
{
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_MARK_ECN};
	assert_int_equal(droce_impair_add_rule(p->imp[dir], &r), 0);
}

/* Check the CNPs sent in direction @p dir; @return how many. */
static unsigned check_cnps(struct pair *p, int dir, uint32_t dqpn)
{
	unsigned n = 0;
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir != (unsigned)dir || r->opcode != DROCE_OP_CNP)
			continue;
		n++;
		assert_int_equal(r->pr, DROCE_PARSE_OK);
		assert_int_equal(r->dqpn, dqpn);
		assert_true(r->becn);
		assert_int_equal(r->payload_len, 0);
		assert_int_not_equal(r->ecn, 3);
	}
	return n;
}

/* Data packets are ECN-capable (ECT) so that switches mark instead of dropping. */
static void test_data_is_ect(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc;

	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	for (unsigned i = 0; i < f->p.nrec; i++)
		if (f->p.rec[i].dir == A_TO_B)
			assert_true(f->p.rec[i].ecn == 1 || f->p.rec[i].ecn == 2);
}

/* WRITE packets marked CE: the responder sends CNPs to A's QP, A counts them. */
static void test_marked_requests_cnp(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;
	struct droce_memlink_stats ms;

	mark_all(p, A_TO_B);
	fill_pattern(f->a, BUF, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, BUF, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->b, BUF, 1), -1);
	droce_memlink_get_stats(p->ml, DROCE_MEMLINK_0_TO_1, &ms);
	unsigned n = check_cnps(p, B_TO_A, f->c.qpn[SIDE_A]);
	struct droce_qp_stats sa = qp_stats(f->c.qp[SIDE_A]), sb = qp_stats(f->c.qp[SIDE_B]);
	printf("ecn: %llu packets marked, %u CNPs\n", (unsigned long long)ms.ecn_marked, n);
	assert_true(ms.ecn_marked >= BUF / 1024);
	assert_int_equal(sb.ecn_marked, ms.ecn_marked);
	assert_true(n >= 1);
	assert_true(n <= ms.ecn_marked);
	assert_int_equal(sb.cnp_sent, n);
	assert_int_equal(sa.cnp_rcvd, n);
	/* no retransmission: marking is not loss */
	assert_int_equal(sa.retrans_pkts, 0);
}

/* Unmarked traffic: no CNP. */
static void test_no_mark_no_cnp(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc;

	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 65536, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	pair_run(&f->p, 1000000000ull);
	assert_int_equal(rec_count(&f->p, 0, -1, DROCE_OP_CNP), 0);
}

/* READ responses marked CE on their way to A: A is the notification point and sends CNPs to B's QP. */
static void test_marked_read_responses_cnp(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc;

	mark_all(p, B_TO_A);
	fill_pattern(f->b, 65536, 2);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 0, f->amr, 0, 65536, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	pair_run(p, 1000000000ull);
	assert_int_equal(check_pattern(f->a, 65536, 2), -1);
	unsigned n = check_cnps(p, A_TO_B, f->c.qpn[SIDE_B]);
	if (n == 0) {
		fail_msg("A received %llu CE-marked READ responses and sent no CNP",
			 (unsigned long long)qp_stats(f->c.qp[SIDE_A]).ecn_marked);
	}
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).cnp_rcvd, n);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_data_is_ect),
		T(test_marked_requests_cnp),
		T(test_no_mark_no_cnp),
		T(test_marked_read_responses_cnp),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
