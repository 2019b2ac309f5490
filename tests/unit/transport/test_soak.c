/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded soak (issue 3 item 6): N messages of random operations (SEND,
 * SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, READ, FETCH_ADD, CMP_SWP) and random
 * sizes (0 .. 8000 bytes at MTU 1024), up to 16 in flight, over 1% loss,
 * 1% reordering and 0.1% duplication in both directions. Every completion
 * must be SUCCESS and in order, every byte written, read or received is
 * verified against the pattern of its message, every atomic against a model
 * executed in post order.
 *
 *   test_transport_soak [MESSAGES [SEED]]     (default 100000 1; env DROCE_SOAK_MESSAGES)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "check.h"
#include "pair.h"

#define SLOTS 16
#define SLOT 8192u
#define NRECV 64
#define NATOMIC 16
#define MAXLEN 8000u

static unsigned long g_messages = 100000;
static uint64_t g_seed = 1;

struct msg {
	uint64_t id;
	enum droce_wr_opcode op;
	uint32_t len;
	unsigned slot;
	unsigned counter;      /* atomics */
	uint64_t expect_orig;  /* atomics */
	uint32_t imm;
};

/* Messages that consume a receive WQE at B, in post order. */
struct rq_model {
	struct msg q[64];
	unsigned head, count;
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static enum droce_wr_opcode pick_op(uint64_t r)
{
	unsigned x = (unsigned)(r % 100);
	if (x < 30) return DROCE_WR_RDMA_WRITE;
	if (x < 50) return DROCE_WR_SEND;
	if (x < 70) return DROCE_WR_RDMA_READ;
	if (x < 80) return DROCE_WR_RDMA_WRITE_WITH_IMM;
	if (x < 85) return DROCE_WR_SEND_WITH_IMM;
	if (x < 95) return DROCE_WR_ATOMIC_FETCH_AND_ADD;
	return DROCE_WR_ATOMIC_CMP_AND_SWP;
}

static uint32_t pick_len(uint64_t r)
{
	unsigned x = (unsigned)(r % 100);
	uint32_t v = (uint32_t)(r >> 32);
	if (x < 40) return v % 65;
	if (x < 75) return 65 + v % (1100 - 65);
	return 1100 + v % (MAXLEN - 1100 + 1);
}

static void test_soak(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct pair_opts po;
	char spec[2][128];
	struct droce_mr *amr, *bmr;
	uint8_t *a, *b;
	/* B memory: SLOTS write/read slots, NRECV receive buffers, NATOMIC counters */
	const size_t b_recv = SLOTS * SLOT, b_atomic = b_recv + NRECV * SLOT;
	const size_t blen = b_atomic + NATOMIC * 8, alen = SLOTS * SLOT + SLOTS * 8;
	uint64_t model[NATOMIC];
	struct msg inflight[SLOTS];      /* FIFO in post order */
	unsigned fhead = 0, fcount = 0;
	bool slot_busy[SLOTS] = {false};
	struct rq_model rq = {.head = 0, .count = 0};
	uint64_t rng = g_seed * 0x1000193u + 7, bytes = 0;
	unsigned long posted = 0, done = 0, recvd = 0;
	struct droce_wc wc[32];
	struct timespec t0, t1;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	snprintf(spec[0], sizeof(spec[0]), "drop=0.01,reorder=0.01,dup=0.001,seed=%llu",
		 (unsigned long long)(g_seed * 2 + 1));
	snprintf(spec[1], sizeof(spec[1]), "drop=0.01,reorder=0.01,dup=0.001,seed=%llu",
		 (unsigned long long)(g_seed * 2 + 2));
	memset(&po, 0, sizeof(po));
	po.impair[0] = spec[0];
	po.impair[1] = spec[1];
	pair_init(&p, &po);
	p.record = false;
	p.max_iters = UINT64_MAX;
	conn_opts_default(&o);
	o.timeout = 8;
	pair_connect(&p, &c, &o);
	amr = pair_mr(&p, SIDE_A, alen, o.access, 0);
	bmr = pair_mr(&p, SIDE_B, blen, o.access, 0);
	a = amr->addr;
	b = bmr->addr;
	for (unsigned i = 0; i < NATOMIC; i++) {
		model[i] = rng_next(&rng);
		memcpy(b + b_atomic + i * 8, &model[i], 8);
	}
	for (unsigned i = 0; i < NRECV; i++)
		assert_int_equal(post_recv_buf(c.qp[SIDE_B], i, bmr, b_recv + i * SLOT, SLOT), 0);

	uint64_t last_progress = p.now;
	while (done < g_messages) {
		/* post while there is room */
		while (fcount < SLOTS && posted < g_messages) {
			struct msg m;
			unsigned s = 0;
			uint64_t r1 = rng_next(&rng), r2 = rng_next(&rng);
			while (slot_busy[s])
				s++;
			memset(&m, 0, sizeof(m));
			m.id = posted;
			m.op = pick_op(r1);
			m.len = pick_len(r2);
			m.slot = s;
			m.imm = (uint32_t)(r1 >> 32);
			uint64_t raddr = (uint64_t)(uintptr_t)(b + s * SLOT);
			int rc;
			switch (m.op) {
			case DROCE_WR_RDMA_READ:
				fill_pattern(b + s * SLOT, m.len, m.id);
				memset(a + s * SLOT, 0, m.len);
				rc = post_rdma(c.qp[SIDE_A], m.op, m.id, amr, s * SLOT, m.len, raddr,
					       bmr->rkey, DROCE_SEND_SIGNALED, 0);
				break;
			case DROCE_WR_ATOMIC_FETCH_AND_ADD:
			case DROCE_WR_ATOMIC_CMP_AND_SWP: {
				uint64_t add = rng_next(&rng), swap = rng_next(&rng);
				m.counter = (unsigned)(r2 % NATOMIC);
				m.len = 8;
				m.expect_orig = model[m.counter];
				uint64_t cmp = (r2 >> 8) & 1 ? model[m.counter] : add;
				if (m.op == DROCE_WR_ATOMIC_FETCH_AND_ADD)
					model[m.counter] += add;
				else if (model[m.counter] == cmp)
					model[m.counter] = swap;
				rc = post_atomic(c.qp[SIDE_A], m.op, m.id, amr, SLOTS * SLOT + s * 8,
						 (uint64_t)(uintptr_t)(b + b_atomic + m.counter * 8),
						 bmr->rkey,
						 m.op == DROCE_WR_ATOMIC_FETCH_AND_ADD ? add : cmp, swap);
				break;
			}
			default:
				fill_pattern(a + s * SLOT, m.len, m.id);
				rc = post_rdma(c.qp[SIDE_A], m.op, m.id, amr, s * SLOT, m.len, raddr,
					       bmr->rkey, DROCE_SEND_SIGNALED, m.imm);
				assert_true(rq.count < 64);
				if (m.op != DROCE_WR_RDMA_WRITE)
					rq.q[(rq.head + rq.count++) % 64] = m;
				break;
			}
			if (rc)
				fail_msg("post of message %lu (%d) failed: %d", posted, m.op, rc);
			slot_busy[s] = true;
			inflight[(fhead + fcount++) % SLOTS] = m;
			posted++;
		}

		unsigned moved = pair_step(&p);
		int progress = 0;

		/* receives at B, in order */
		int n = cq_drain(c.rcq[SIDE_B], wc, 32);
		for (int i = 0; i < n; i++) {
			struct msg *m = &rq.q[rq.head];
			uint8_t *buf = b + b_recv + wc[i].wr_id * SLOT;
			if (rq.count == 0)
				fail_msg("receive completion with no message expected");
			if (wc[i].status != DROCE_WC_SUCCESS)
				fail_msg("message %llu: receive status %s", (unsigned long long)m->id,
					 droce_wc_status_str(wc[i].status));
			assert_int_equal(wc[i].byte_len, m->len);
			if (m->op == DROCE_WR_RDMA_WRITE_WITH_IMM) {
				assert_int_equal(wc[i].opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
			} else {
				long bad;
				assert_int_equal(wc[i].opcode, DROCE_WC_RECV);
				bad = check_pattern(buf, m->len, m->id);
				if (bad >= 0)
					fail_msg("message %llu (SEND, %u bytes): byte %ld wrong",
						 (unsigned long long)m->id, m->len, bad);
				bytes += m->len;
			}
			if (m->op != DROCE_WR_SEND) {
				assert_true(wc[i].wc_flags & DROCE_WC_WITH_IMM);
				assert_int_equal(wc[i].imm_data, m->imm);
			}
			rq.head = (rq.head + 1) % 64;
			rq.count--;
			recvd++;
			assert_int_equal(post_recv_buf(c.qp[SIDE_B], wc[i].wr_id, bmr,
						       b_recv + wc[i].wr_id * SLOT, SLOT), 0);
			progress = 1;
		}

		/* completions at A, in post order */
		n = cq_drain(c.scq[SIDE_A], wc, 32);
		for (int i = 0; i < n; i++) {
			struct msg *m = &inflight[fhead];
			long bad = -1;
			if (fcount == 0)
				fail_msg("completion with nothing in flight");
			if (wc[i].wr_id != m->id || wc[i].status != DROCE_WC_SUCCESS)
				fail_msg("completion wr_id %llu status %s; want message %llu SUCCESS",
					 (unsigned long long)wc[i].wr_id,
					 droce_wc_status_str(wc[i].status),
					 (unsigned long long)m->id);
			switch (m->op) {
			case DROCE_WR_RDMA_READ:
				bad = check_pattern(a + m->slot * SLOT, m->len, m->id);
				bytes += m->len;
				break;
			case DROCE_WR_RDMA_WRITE:
			case DROCE_WR_RDMA_WRITE_WITH_IMM:
				bad = check_pattern(b + m->slot * SLOT, m->len, m->id);
				bytes += m->len;
				break;
			case DROCE_WR_ATOMIC_FETCH_AND_ADD:
			case DROCE_WR_ATOMIC_CMP_AND_SWP: {
				uint64_t got;
				memcpy(&got, a + SLOTS * SLOT + m->slot * 8, 8);
				if (got != m->expect_orig)
					fail_msg("message %llu: atomic returned %llx, want %llx",
						 (unsigned long long)m->id, (unsigned long long)got,
						 (unsigned long long)m->expect_orig);
				bytes += 8;
				break;
			}
			default:
				break;
			}
			if (bad >= 0)
				fail_msg("message %llu (op %d, %u bytes): byte %ld wrong",
					 (unsigned long long)m->id, m->op, m->len, bad);
			slot_busy[m->slot] = false;
			fhead = (fhead + 1) % SLOTS;
			fcount--;
			done++;
			progress = 1;
		}
		if (progress)
			last_progress = p.now;
		if (moved || progress)
			continue;
		if (!pair_advance(&p, UINT64_MAX) || p.now - last_progress > 60ull * 1000 * 1000 * 1000)
			fail_msg("stalled after %lu of %lu messages (%lu posted, %u in flight)", done,
				 g_messages, posted, fcount);
	}
	pair_run(&p, 10ull * 1000 * 1000 * 1000);
	assert_int_equal(cq_drain(c.rcq[SIDE_B], wc, 32), 0);
	assert_int_equal(rq.count, 0);
	for (unsigned i = 0; i < NATOMIC; i++) {
		uint64_t v;
		memcpy(&v, b + b_atomic + i * 8, 8);
		if (v != model[i])
			fail_msg("counter %u is %llx, the model says %llx", i,
				 (unsigned long long)v, (unsigned long long)model[i]);
	}

	struct droce_impair_stats is[2];
	struct droce_qp_stats sa = qp_stats(c.qp[SIDE_A]), sb = qp_stats(c.qp[SIDE_B]);
	droce_impair_get_stats(p.imp[0], &is[0]);
	droce_impair_get_stats(p.imp[1], &is[1]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("soak: %lu messages (%lu receives), %llu bytes verified, seed %llu\n", done, recvd,
	       (unsigned long long)bytes, (unsigned long long)g_seed);
	printf("soak: A->B %llu frames, %llu dropped, %llu held, %llu duplicated; "
	       "B->A %llu frames, %llu dropped, %llu held, %llu duplicated\n",
	       (unsigned long long)is[0].frames, (unsigned long long)is[0].dropped,
	       (unsigned long long)is[0].held, (unsigned long long)is[0].duplicated,
	       (unsigned long long)is[1].frames, (unsigned long long)is[1].dropped,
	       (unsigned long long)is[1].held, (unsigned long long)is[1].duplicated);
	printf("soak: A retrans: %llu timeout rounds, %llu NAK rounds, %llu packets; "
	       "B dup %llu, out-of-seq %llu, NAKs %llu\n",
	       (unsigned long long)sa.retrans_timeout, (unsigned long long)sa.retrans_nak,
	       (unsigned long long)sa.retrans_pkts, (unsigned long long)sb.dup_reqs,
	       (unsigned long long)sb.out_of_seq,
	       (unsigned long long)sb.nak_sent[DROCE_NAK_PSN_SEQ_ERR]);
	printf("soak: virtual time %.3f s, wall time %.2f s\n", (double)(p.now - 1000000) / 1e9, wall);
	/* the impairment did happen, and was recovered from */
	if (g_messages >= 1000) {
		assert_true(is[0].dropped > 0 && is[1].dropped > 0);
		assert_true(is[0].held > 0 && is[0].duplicated > 0);
		assert_true(sa.retrans_pkts > 0);
	}
	pair_fini(&p);
}

int main(int argc, char **argv)
{
	const char *env = getenv("DROCE_SOAK_MESSAGES");
	if (env)
		g_messages = strtoul(env, NULL, 0);
	if (argc > 1)
		g_messages = strtoul(argv[1], NULL, 0);
	if (argc > 2)
		g_seed = strtoull(argv[2], NULL, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
