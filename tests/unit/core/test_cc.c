/* SPDX-License-Identifier: BSD-3-Clause */
/* Congestion control plug-ins: registry, fixed, aimd, dcqcn; and dcqcn pacing end to end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cc/cc.h"
#include "pair.h"

static void test_registry(void **state)
{
	assert_ptr_equal(droce_cc_find(NULL), &droce_cc_fixed);
	assert_ptr_equal(droce_cc_find("fixed"), &droce_cc_fixed);
	assert_ptr_equal(droce_cc_find("aimd"), &droce_cc_aimd);
	assert_ptr_equal(droce_cc_find("dcqcn"), &droce_cc_dcqcn);
	assert_ptr_equal(droce_cc_find("swift"), &droce_cc_swift);
	assert_null(droce_cc_find("reno"));
	unsigned n = 0;
	for (unsigned i = 0; droce_cc_registry[i]; i++, n++)
		assert_non_null(droce_cc_registry[i]->can_send);
	assert_int_equal(n, 4);
}

static void test_fixed_window(void **state)
{
	struct droce_cc_state s = {0}; /* line_bpns (0: 100 Gbit/s) is read by init */
	droce_cc_fixed.init(&s, 4, 10000, 0);
	assert_true(droce_cc_fixed.can_send(&s, 3, 0, 100, 0));
	assert_false(droce_cc_fixed.can_send(&s, 4, 0, 100, 0));
	assert_false(droce_cc_fixed.can_send(&s, 1, 9950, 100, 0));
	droce_cc_fixed.on_loss(&s, true, 5);
	droce_cc_fixed.on_cnp(&s, 5);
	assert_true(droce_cc_fixed.can_send(&s, 3, 0, 100, 10));
	assert_int_equal(droce_cc_fixed.next_send_time(&s, 77), 77);
	assert_int_equal(s.losses, 1);
	assert_int_equal(s.cnps, 1);
}

static void test_aimd(void **state)
{
	struct droce_cc_state s = {0}; /* line_bpns (0: 100 Gbit/s) is read by init */
	droce_cc_aimd.init(&s, 64, 1 << 20, 0);
	droce_cc_aimd.on_loss(&s, false, 1000);
	assert_int_equal(s.wnd_pkts, 32);
	droce_cc_aimd.on_cnp(&s, 2000); /* within 50 us: one event, one cut */
	assert_int_equal(s.wnd_pkts, 32);
	droce_cc_aimd.on_cnp(&s, 100000);
	assert_int_equal(s.wnd_pkts, 16);
	/* Additive increase: one packet per window of ACKed packets (a round
	 * trip), however the ACKs are cut: 16 ACKs of one packet give +1. */
	for (int i = 0; i < 16; i++)
		droce_cc_aimd.on_ack(&s, 1, 1024, 150000 + (uint64_t)i);
	assert_int_equal(s.wnd_pkts, 17);
	for (int i = 0; i < 16; i++)
		droce_cc_aimd.on_ack(&s, 1, 1024, 160000 + (uint64_t)i);
	assert_int_equal(s.wnd_pkts, 17); /* 16 of the 17 needed for the next step */
	droce_cc_aimd.on_ack(&s, 1, 1024, 170000);
	assert_int_equal(s.wnd_pkts, 18);
	for (int i = 0; i < 1000; i++)
		droce_cc_aimd.on_ack(&s, 16, 16 * 1024, 200000 + (uint64_t)i);
	assert_int_equal(s.wnd_pkts, 64); /* back to the ceiling, never above */
	assert_true(s.wnd_bytes <= (1u << 20));
}

static void test_dcqcn_rate(void **state)
{
	struct droce_cc_state s = {0}; /* line_bpns (0: 100 Gbit/s) is read by init */
	const struct droce_cc_algo *a = &droce_cc_dcqcn;
	a->init(&s, 512, 1 << 21, 0);
	/* At line rate: unpaced. */
	a->on_sent(&s, 1000, 10);
	assert_int_equal(a->next_send_time(&s, 10), 10);
	a->on_cnp(&s, 100);
	double r1 = s.u.dcqcn.rc;
	assert_true(r1 < DROCE_DCQCN_LINE_RATE_BPNS * 0.6); /* alpha 1: halved */
	/* Paced: a 1000-byte packet now takes (1000 + 70) / rate ns. */
	a->on_sent(&s, 1000, 200);
	uint64_t t = a->next_send_time(&s, 200);
	assert_true(t > 200);
	assert_int_equal(t - 200, (uint64_t)(1070.0 / r1));
	a->on_cnp(&s, 300);
	assert_true(s.u.dcqcn.rc < r1);
	/* Recovery: after enough quiet periods the rate is back at line rate. */
	a->on_ack(&s, 1, 100, 300 + 2000ull * DROCE_DCQCN_PERIOD_NS);
	assert_true(s.u.dcqcn.rc > r1);
	a->on_ack(&s, 1, 100, 300 + 200000ull * DROCE_DCQCN_PERIOD_NS);
	assert_true(s.u.dcqcn.rc >= DROCE_DCQCN_LINE_RATE_BPNS * 0.99);
	assert_int_equal(s.cnps, 2);
}

/* Every request side 0 sends is ECN-marked: B answers with CNPs, A's dcqcn
 * slows down (paced by timers on the virtual clock) yet everything arrives. */
static uint64_t run_writes(const char *cc, bool mark, uint64_t *cnps)
{
	bed_cc = cc;
	struct bed *bd = bed_new(DROCE_MTU_1024, 5, 6);
	bed_cc = NULL;
	assert_non_null(bd);
	bd->link->ecn_mark = mark;
	enum { LEN = 1024 * 1024 };
	uint8_t *src = malloc(LEN), *dst = calloc(1, LEN);
	for (unsigned i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 17 + 1);
	struct droce_mr *ms = droce_reg_mr(bd->s[0].ctx, src, LEN, 0);
	struct droce_mr *md = droce_reg_mr(bd->s[1].ctx, dst, LEN,
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	for (int m = 0; m < 8; m++) {
		struct droce_sge sge = { (uintptr_t)(src + m * (LEN / 8)), LEN / 8, ms->lkey };
		struct droce_send_wr wr, *bad;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uint64_t)m;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = DROCE_WR_RDMA_WRITE;
		wr.send_flags = DROCE_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)(dst + m * (LEN / 8));
		wr.wr.rdma.rkey = md->rkey;
		assert_int_equal(droce_post_send(bd->s[0].qp, &wr, &bad), 0);
	}
	uint64_t t0 = bd->now;
	bed_run(bd, 1000000, UINT64_MAX);
	struct droce_wc wc[9];
	assert_int_equal(droce_poll_cq(bd->s[0].scq, 9, wc), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
	assert_memory_equal(dst, src, LEN);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	*cnps = st.cnp_rcvd;
	uint64_t el = bd->now - t0;
	droce_dereg_mr(ms);
	droce_dereg_mr(md);
	free(src);
	free(dst);
	bed_free(bd);
	return el;
}

static void test_dcqcn_paces_end_to_end(void **state)
{
	uint64_t c0, c1;
	uint64_t plain = run_writes("dcqcn", false, &c0);
	uint64_t marked = run_writes("dcqcn", true, &c1);
	assert_int_equal(c0, 0);
	assert_true(c1 >= 1);
	print_message("dcqcn: %llu ns unmarked, %llu ns marked, %llu CNPs\n", (unsigned long long)plain,
		      (unsigned long long)marked, (unsigned long long)c1);
	assert_true(marked > plain); /* slowed down by pacing, still complete */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_fixed_window),
		cmocka_unit_test(test_aimd),
		cmocka_unit_test(test_dcqcn_rate),
		cmocka_unit_test(test_dcqcn_paces_end_to_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
