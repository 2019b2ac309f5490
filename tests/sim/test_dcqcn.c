/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DCQCN reaction point against the paper (Zhu et al., SIGCOMM 2015, 3.1):
 * alpha has its own timer K and decays whatever the rate; the rate
 * increases on timer (T) and byte-counter (B) events; fast recovery for F
 * events, then additive, then hyper increase; the line rate is the link's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cc/cc.h"

static const struct droce_cc_algo *A = &droce_cc_dcqcn;

static void cut_once(struct droce_cc_state *s)
{
	A->init(s, 512, 1 << 21, 0);
	A->on_cnp(s, 1000);
}

/* Alpha decays every K without a CNP, also once the rate is back at line
 * rate: 100 ms after one CNP alpha is (1 - g)^1818, about 0.0008. */
static void test_alpha_decays_at_line_rate(void **state)
{
	struct droce_cc_state s = {0};
	cut_once(&s);
	assert_true(s.u.dcqcn.alpha > 0.99);
	A->on_ack(&s, 1, 4096, 100000000ull);
	assert_true(s.u.dcqcn.rc > DROCE_DCQCN_LINE_RATE_BPNS * 0.999);
	printf("alpha after 100 ms: %g\n", s.u.dcqcn.alpha);
	assert_true(s.u.dcqcn.alpha < 0.01);
	assert_true(s.u.dcqcn.alpha > 0.0);
}

/* The byte counter: B bytes sent after a cut are one increase event even
 * before the timer T expires (fast recovery: Rc = (Rc + Rt) / 2). */
static void test_byte_counter_increases(void **state)
{
	struct droce_cc_state s = {0};
	cut_once(&s);
	double after_cut = s.u.dcqcn.rc;
	for (uint64_t sent = 0; sent < DROCE_DCQCN_BYTES + 4096; sent += 4096)
		A->on_sent(&s, 4096, 2000);
	printf("rate after cut %g, after B bytes %g\n", after_cut, s.u.dcqcn.rc);
	/* one fast-recovery step towards Rt (the line rate the cut kept):
	 * exactly half way, not "faster" */
	double want = (after_cut + s.u.dcqcn.rt) / 2;
	assert_true(s.u.dcqcn.rt == DROCE_DCQCN_LINE_RATE_BPNS);
	assert_true(s.u.dcqcn.rc > want * 0.999999 && s.u.dcqcn.rc < want * 1.000001);
}

/* A cut: Rt = Rc, Rc *= 1 - alpha/2, alpha = (1 - g) alpha + g. */
static void test_cut(void **state)
{
	struct droce_cc_state s = {0};
	cut_once(&s);
	assert_true(s.u.dcqcn.rc > DROCE_DCQCN_LINE_RATE_BPNS * 0.499);
	assert_true(s.u.dcqcn.rc < DROCE_DCQCN_LINE_RATE_BPNS * 0.501);
	double a = s.u.dcqcn.alpha, rc = s.u.dcqcn.rc;
	A->on_cnp(&s, 2000);
	assert_true(s.u.dcqcn.rt == rc);
	double want = rc * (1 - a / 2);
	assert_true(s.u.dcqcn.rc > want * 0.999999 && s.u.dcqcn.rc < want * 1.000001);
	/* and alpha moved towards 1 by g: (1 - g) alpha + g (DCQCN, eq. 1) */
	double wa = (1 - DROCE_DCQCN_G) * a + DROCE_DCQCN_G;
	assert_true(s.u.dcqcn.alpha > wa * 0.999999 && s.u.dcqcn.alpha < wa * 1.000001);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_alpha_decays_at_line_rate),
		cmocka_unit_test(test_byte_counter_increases),
		cmocka_unit_test(test_cut),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
