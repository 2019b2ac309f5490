/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The poll-stage trace (include/droce/trace.h): built without
 * -Dstage_trace=true the counters are refused (-ENOTSUP); built with it
 * (scripts/test's sanitizer build), a WRITE and its ACK between two
 * contexts charge their cycles to the stages that did the work: the
 * requester's to build, link TX and response RX, the responder's to
 * request RX and ACK, and a poll that found nothing to idle only.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pair.h"

#define SEC 1000000000ull

static void test_names(void **state)
{
	(void)state;
	for (unsigned s = 0; s < DROCE_STAGE_COUNT; s++)
		assert_non_null(droce_stage_name((enum droce_stage)s));
	assert_string_equal(droce_stage_name(DROCE_STAGE_ACK), "ack");
	assert_null(droce_stage_name(DROCE_STAGE_COUNT));
	struct droce_stage_stats st;
	assert_int_equal(droce_ctx_get_stage_stats(NULL, &st), -EINVAL);
	assert_int_equal(droce_ctx_reset_stage_stats(NULL), -EINVAL);
}

static void test_stages_of_a_write(void **state)
{
	(void)state;
	struct pair p;
	struct pair_opts po = {.seed = {3, 4}};
	pair_init(&p, &po);
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	pair_connect(&p, &c, &o);
	struct droce_mr *amr = pair_mr(&p, SIDE_A, 65536, o.access, 0xAA);
	struct droce_mr *bmr = pair_mr(&p, SIDE_B, 65536, o.access, 0xBB);
	struct droce_stage_stats st[2];
	int r = droce_ctx_reset_stage_stats(p.ctx[0]);
#ifndef DROCE_STAGE_TRACE
	assert_int_equal(r, -ENOTSUP);
	assert_int_equal(droce_ctx_get_stage_stats(p.ctx[0], &st[0]), -ENOTSUP);
	pair_fini(&p); /* built without the trace: refused, nothing more to see */
	return;
#endif
	assert_int_equal(r, 0);
	assert_int_equal(droce_ctx_reset_stage_stats(p.ctx[1]), 0);
	/* polls with nothing to do: idle only */
	for (int i = 0; i < 10; i++)
		pair_step(&p);
	assert_int_equal(droce_ctx_get_stage_stats(p.ctx[0], &st[0]), 0);
	assert_int_equal(st[0].idle_polls, 10);
	assert_int_equal(st[0].work_polls, 0);
	assert_true(st[0].cycles[DROCE_STAGE_IDLE] > 0);
	for (unsigned s = DROCE_STAGE_LINK_RX; s < DROCE_STAGE_IDLE; s++)
		assert_int_equal(st[0].cycles[s], 0);
	/* one 16 KB WRITE, its ACK */
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, amr, 0, 16384,
				   (uint64_t)(uintptr_t)bmr->addr, bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 1, &wc, SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	for (int s = 0; s < 2; s++)
		assert_int_equal(droce_ctx_get_stage_stats(p.ctx[s], &st[s]), 0);
	const struct droce_stage_stats *a = &st[0], *b = &st[1];
	assert_true(a->work_polls > 0 && b->work_polls > 0);
	assert_true(a->cycles[DROCE_STAGE_BUILD] > 0);     /* the WRITE's packets */
	assert_true(a->cycles[DROCE_STAGE_LINK_TX] > 0);
	assert_true(a->cycles[DROCE_STAGE_RX_RESP] > 0);   /* the ACK */
	assert_int_equal(a->cycles[DROCE_STAGE_RX_REQ], 0); /* A received no request */
	assert_int_equal(a->cycles[DROCE_STAGE_ACK], 0);    /* and sent no ACK */
	assert_true(b->cycles[DROCE_STAGE_RX_REQ] > 0);
	assert_true(b->cycles[DROCE_STAGE_ACK] > 0);
	assert_int_equal(b->cycles[DROCE_STAGE_RX_RESP], 0);
	assert_true(b->entries[DROCE_STAGE_ACK] >= 1);
	assert_true(b->cycles[DROCE_STAGE_CALLER] > 0); /* between B's polls */
	pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_stages_of_a_write),
	};
	return droce_test_run("stage_trace", tests, sizeof(tests) / sizeof(tests[0]));
}
