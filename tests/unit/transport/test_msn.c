/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MSN in a response is the responder's MSN once that request was
 * executed (IBTA 9.7.5.1.1, 9.7.6.1.1): READ responses and atomic ACKs
 * queued in one burst each carry their own request's MSN, as rxe answers
 * (1, 2, 3, 4 for three FETCH_ADDs and a READ), not the MSN at the time the
 * queue drains.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "pair.h"

static void test_burst_responses_carry_their_own_msn(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 0, 4, NULL};
	pair_init(&p, &po);
	conn_opts_default(&o);
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 8192, o.access, 0);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 8192, o.access, 0);
	uint64_t bva = (uint64_t)(uintptr_t)bmr->addr;

	/* One SEND first so the MSN does not start at 0. */
	assert_int_equal(post_recv_buf(c.qp[SIDE_B], 9, bmr, 4096, 64), 0);
	assert_int_equal(post_send_msg(c.qp[SIDE_A], DROCE_WR_SEND, 1, amr, 0, 16, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc[8];
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 1, wc, 100000000), 1);
	rec_clear(&p);

	/* Three FETCH_ADDs and a READ posted together reach B in one burst. */
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(post_atomic(c.qp[SIDE_A], DROCE_WR_ATOMIC_FETCH_AND_ADD, 10 + i, amr,
					     64 + 8 * i, bva, bmr->rkey, 1, 0), 0);
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_READ, 20, amr, 256, 32, bva + 512,
				   bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 4, wc, 100000000), 4);

	uint32_t msns[4];
	unsigned n = 0;
	for (unsigned i = 0; i < p.nrec && n < 4; i++) {
		const struct pkt_rec *r = &p.rec[i];
		if (r->dir == B_TO_A && (r->opcode == DROCE_OP_RC_ATOMIC_ACKNOWLEDGE ||
					 r->opcode == DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY))
			msns[n++] = r->msn;
	}
	assert_int_equal(n, 4);
	assert_int_equal(msns[0], 2);
	assert_int_equal(msns[1], 3);
	assert_int_equal(msns[2], 4);
	assert_int_equal(msns[3], 5);
	pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_responses_carry_their_own_msn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
