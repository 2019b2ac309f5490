/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RTT hooks in the engine, on two real contexts over the in-memory link
 * with a one-way delay (the transport test bed): AckReq packets are timed
 * and sampled, a retransmitted packet gives no sample (Karn), a lost tail
 * is recovered by the adaptive timeout within a few RTTs and by the IBTA
 * one after its 67 ms, and the per-QP knobs reject what they must.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "../unit/transport/pair.h"
#include "cc/cc.h"
#include "wire/opcode.h"

#define DELAY 5000u
#define DROCE_CNP_INTERVAL_NS_TEST 50000u /* the paper's N; core.h DROCE_CNP_INTERVAL_NS */     /* one way: RTT 10 us */
#define LEN (64u * 1024u) /* 64 packets at MTU 1024: AckReq on 16, 32, 48, 64 */

struct bed {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *a, *b;
};

static void bed_up(struct bed *f, int mode)
{
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	pair_connect(&f->p, &f->c, &f->o);
	droce_memlink_set_delay(f->p.ml, DROCE_MEMLINK_0_TO_1, DELAY);
	droce_memlink_set_delay(f->p.ml, DROCE_MEMLINK_1_TO_0, DELAY);
	assert_int_equal(droce_qp_set_timeout_mode(f->c.qp[SIDE_A], mode), 0);
	f->a = pair_mr(&f->p, SIDE_A, LEN, DROCE_ACCESS_LOCAL_WRITE, 0x5A);
	f->b = pair_mr(&f->p, SIDE_B, LEN, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE, 0);
}

/* One 64 KB WRITE; @return virtual ns from post to its completion. */
static uint64_t write_once(struct bed *f)
{
	uint64_t t0 = f->p.now;
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->a, 0, LEN,
				   (uintptr_t)f->b->addr, f->b->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 1000ull * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	return f->p.now - t0;
}

static void test_samples(void **state)
{
	struct bed f;
	bed_up(&f, DROCE_TIMEOUT_ADAPTIVE);
	write_once(&f);
	struct droce_qp_stats st = qp_stats(f.c.qp[SIDE_A]);
	printf("samples %llu min %llu srtt %llu var %llu rto %llu\n",
	       (unsigned long long)st.rtt_samples, (unsigned long long)st.rtt_min_ns,
	       (unsigned long long)st.rtt_srtt_ns, (unsigned long long)st.rtt_var_ns,
	       (unsigned long long)st.rto_ns);
	assert_true(st.rtt_samples >= 2);
	assert_true(st.rtt_min_ns >= 2 * DELAY && st.rtt_min_ns < 2 * DELAY + 2000);
	assert_true(st.rtt_srtt_ns >= st.rtt_min_ns);
	assert_int_equal(st.timeout_mode, DROCE_TIMEOUT_ADAPTIVE);
	/* RFC 6298 with the 16 us floor, far below the IBTA 67 ms. */
	uint64_t want = st.rtt_srtt_ns + 4 * st.rtt_var_ns;
	assert_int_equal(st.rto_ns, want > DROCE_DEFAULT_RTO_MIN_NS ? want : DROCE_DEFAULT_RTO_MIN_NS);
	/* The responder times nothing: it sent no AckReq packet. */
	assert_int_equal(qp_stats(f.c.qp[SIDE_B]).rtt_samples, 0);
	pair_fini(&f.p);
}

/* The last packet of the WRITE is lost: nothing behind it, so no NAK. */
static uint64_t lost_tail(int mode, struct droce_qp_stats *st)
{
	struct bed f;
	bed_up(&f, mode);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_WRITE_LAST,
		  PSN(f.o.sq_psn[SIDE_A] + LEN / 1024 - 1), 1);
	uint64_t t = write_once(&f);
	*st = qp_stats(f.c.qp[SIDE_A]);
	pair_fini(&f.p);
	return t;
}

static void test_tail_adaptive(void **state)
{
	struct droce_qp_stats st;
	uint64_t t = lost_tail(DROCE_TIMEOUT_ADAPTIVE, &st);
	printf("adaptive: tail recovered in %llu ns, samples %llu, srtt %llu\n",
	       (unsigned long long)t, (unsigned long long)st.rtt_samples,
	       (unsigned long long)st.rtt_srtt_ns);
	assert_int_equal(st.retrans_timeout, 1);
	assert_true(t <= 10 * 2 * DELAY);
	/* Karn: the AckReq packets at 32 and 48 gave samples (the responder
	 * ACKs once per receive burst: packets 1..32 arrive in one, so the
	 * ACK at 32 also covers 16); the lost 64th was retransmitted, and its
	 * ACK (RTO + RTT after the first send) is no sample, so the smoothed
	 * RTT stays at the path's. */
	assert_int_equal(st.rtt_samples, 2);
	assert_true(st.rtt_srtt_ns < 2 * DELAY + 2000);
}

static void test_tail_ibta(void **state)
{
	struct droce_qp_stats st;
	uint64_t t = lost_tail(DROCE_TIMEOUT_IBTA, &st);
	printf("ibta: tail recovered in %llu ns\n", (unsigned long long)t);
	assert_int_equal(st.retrans_timeout, 1);
	assert_true(t >= ack_timeout_ns(14));
	assert_int_equal(st.rto_ns, ack_timeout_ns(14));
}

static void test_knobs(void **state)
{
	struct pair p;
	pair_init(&p, NULL);
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	conn_create(&p, &c, &o);
	assert_int_equal(droce_qp_set_timeout_mode(c.qp[0], 3), -EINVAL);
	assert_int_equal(droce_qp_set_timeout_mode(NULL, 1), -EINVAL);
	assert_int_equal(droce_qp_set_cc(c.qp[0], "reno"), -EINVAL);
	assert_int_equal(droce_qp_set_cc(c.qp[0], "swift"), 0);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(conn_modify(&p, &c, s, DROCE_QPS_INIT, &o), 0);
		assert_int_equal(conn_modify(&p, &c, s, DROCE_QPS_RTR, &o), 0);
		assert_int_equal(conn_modify(&p, &c, s, DROCE_QPS_RTS, &o), 0);
	}
	assert_int_equal(droce_qp_set_cc(c.qp[0], "fixed"), -EINVAL); /* too late: RTS */
	/* swift starts at its own 32 KB window, the other QP at the ceiling. */
	assert_int_equal(qp_stats(c.qp[0]).window_bytes, (uint64_t)DROCE_SWIFT_INIT_CWND);
	assert_int_equal(qp_stats(c.qp[1]).window_bytes, DROCE_DEFAULT_WINDOW_BYTES);
	/* The context default is ibta: the IBTA timeout as set. */
	assert_int_equal(qp_stats(c.qp[1]).timeout_mode, DROCE_TIMEOUT_IBTA);
	assert_int_equal(qp_stats(c.qp[1]).rto_ns, ack_timeout_ns(14));
	pair_fini(&p);
}

/* DCQCN's notification point (Zhu et al. 3.1; core.h droce_qp_ecn_ce): with
 * every request marked CE, the responder sends at most one CNP per 50 us,
 * and one in every 50 us window while marked packets keep coming; the
 * reaction point, paced by them, still delivers everything. */
static void test_np_cnp_spacing(void **state)
{
	struct pair p;
	struct pair_opts po = {.cc = "dcqcn"};
	pair_init(&p, &po);
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	pair_connect(&p, &c, &o);
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_MARK_ECN};
	assert_int_equal(droce_impair_add_rule(p.imp[A_TO_B], &r), 0);
	enum { BIG = 1024 * 1024 };
	struct droce_mr *a = pair_mr(&p, SIDE_A, BIG, DROCE_ACCESS_LOCAL_WRITE, 1);
	struct droce_mr *b = pair_mr(&p, SIDE_B, BIG, DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE, 0);
	assert_int_equal(post_rdma(c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, a, 0, BIG, (uintptr_t)b->addr,
				   b->rkey, DROCE_SEND_SIGNALED, 0), 0);
	struct droce_wc wc;
	assert_int_equal(pair_wait(&p, c.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	/* The paper's NP replayed over the marked requests as sent (the link
	 * has no delay): a CNP for a marked packet unless one went out less
	 * than 50 us before. */
	uint64_t last = 0, first_req = UINT64_MAX, last_req = 0, np_last = 0;
	unsigned n = 0, expect = 0;
	for (unsigned i = 0; i < p.nrec; i++) {
		const struct pkt_rec *k = &p.rec[i];
		if (k->dir == A_TO_B && k->opcode != DROCE_OP_CNP) {
			first_req = k->now < first_req ? k->now : first_req;
			last_req = k->now;
			if (!expect || k->now - np_last >= DROCE_CNP_INTERVAL_NS_TEST) {
				expect++;
				np_last = k->now;
			}
		}
		if (k->dir != B_TO_A || k->opcode != DROCE_OP_CNP)
			continue;
		if (n)
			assert_true(k->now - last >= DROCE_CNP_INTERVAL_NS_TEST);
		last = k->now;
		n++;
	}
	uint64_t span = last_req - first_req;
	printf("%u CNPs (the paper's NP: %u) over %llu ns of marked requests\n", n, expect,
	       (unsigned long long)span);
	assert_true(n >= 2);
	assert_true(n <= span / DROCE_CNP_INTERVAL_NS_TEST + 1);
	assert_true(n + 1 >= expect && n <= expect + 1);
	assert_int_equal(qp_stats(c.qp[SIDE_A]).cnp_rcvd, n);
	pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_tail_adaptive),
		cmocka_unit_test(test_tail_ibta),
		cmocka_unit_test(test_knobs),
		cmocka_unit_test(test_np_cnp_spacing),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
