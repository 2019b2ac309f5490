/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's timer heap (model/timers.h) against a brute-force reference:
 * thousands of ids with random deadlines moved, cancelled and fired in order
 * on a virtual clock; and the engine's droce_ctx_next_deadline() against a
 * scan of every QP's transport deadline while many QPs write over a lossy
 * link (the heap must follow every deadline the transport sets).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/core_int.h"
#include "model/timers.h"
#include "pair.h"

#define NIDS 4096u

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The reference: the earliest (deadline, id) by scanning. */
static uint32_t ref_min(const uint64_t *ref, uint32_t n)
{
	uint32_t best = DROCE_TIMERS_NONE;
	for (uint32_t i = 0; i < n; i++)
		if (ref[i] != UINT64_MAX && (best == DROCE_TIMERS_NONE || ref[i] < ref[best]))
			best = i; /* strict <: the lowest id wins a tie, as in the heap */
	return best;
}

/* Every slot's back index is right and every parent is earlier than its child. */
static void check_heap(const struct droce_timers *t, const uint64_t *ref)
{
	uint32_t count = 0;
	for (uint32_t i = 0; i < t->cap; i++) {
		if (ref[i] == UINT64_MAX) {
			assert_int_equal(t->pos[i], DROCE_TIMERS_NONE);
			continue;
		}
		count++;
		assert_true(t->pos[i] < t->n);
		assert_int_equal(t->heap[t->pos[i]].id, i);
		assert_true(t->heap[t->pos[i]].at == ref[i]);
	}
	assert_int_equal(count, t->n);
	for (uint32_t i = 1; i < t->n; i++) {
		const struct droce_timer_ent *c = &t->heap[i], *p = &t->heap[(i - 1) / 2];
		assert_true(p->at < c->at || (p->at == c->at && p->id < c->id));
	}
}

static void test_random_against_reference(void **state)
{
	(void)state;
	struct droce_timers t;
	assert_int_equal(droce_timers_init(&t, NIDS), 0);
	uint64_t *ref = malloc(NIDS * sizeof(*ref));
	for (uint32_t i = 0; i < NIDS; i++)
		ref[i] = UINT64_MAX;
	uint64_t now = 1000;
	unsigned fired = 0, moved = 0, cancelled = 0;
	for (unsigned step = 0; step < 200000; step++) {
		uint32_t id = (uint32_t)(rnd() % NIDS);
		unsigned op = (unsigned)(rnd() % 16);
		if (op < 9) { /* arm or move, earlier or later, sometimes to the same time */
			uint64_t at = now + rnd() % 100000;
			if (op == 8 && ref[id] != UINT64_MAX)
				at = ref[id];
			droce_timers_set(&t, id, at);
			ref[id] = at;
			moved++;
		} else if (op < 12) { /* cancel (also ids that are not armed) */
			droce_timers_set(&t, id, UINT64_MAX);
			ref[id] = UINT64_MAX;
			cancelled++;
		} else if (op < 15) { /* time passes: what is due fires in order */
			now += rnd() % 2000;
			uint64_t last = 0;
			uint32_t got;
			while ((got = droce_timers_pop_due(&t, now)) != DROCE_TIMERS_NONE) {
				uint32_t want = ref_min(ref, NIDS);
				assert_int_equal(got, want);
				assert_true(ref[got] <= now);
				assert_true(ref[got] >= last);
				last = ref[got];
				ref[got] = UINT64_MAX;
				fired++;
			}
			uint32_t m = ref_min(ref, NIDS);
			assert_true(m == DROCE_TIMERS_NONE || ref[m] > now);
		}
		uint32_t m = ref_min(ref, NIDS);
		assert_true(droce_timers_min(&t) == (m == DROCE_TIMERS_NONE ? UINT64_MAX : ref[m]));
		assert_true(droce_timers_get(&t, id) == ref[id]);
		if (step % 4096 == 0)
			check_heap(&t, ref);
	}
	check_heap(&t, ref);
	assert_true(fired > 10000 && moved > 10000 && cancelled > 10000);
	free(ref);
	droce_timers_fini(&t);
}

static void test_edges(void **state)
{
	(void)state;
	struct droce_timers t;
	assert_int_equal(droce_timers_init(&t, 4), 0);
	assert_true(droce_timers_min(&t) == UINT64_MAX);
	assert_int_equal(droce_timers_pop_due(&t, UINT64_MAX - 1), DROCE_TIMERS_NONE);
	droce_timers_move(&t, 4, 10); /* out of range: ignored */
	assert_int_equal(t.n, 0);
	droce_timers_set(&t, 2, UINT64_MAX); /* cancel what is not armed */
	assert_int_equal(t.n, 0);
	/* Equal deadlines come out by id whatever the order they were set in. */
	droce_timers_set(&t, 3, 50);
	droce_timers_set(&t, 1, 50);
	droce_timers_set(&t, 0, 60);
	droce_timers_set(&t, 2, 50);
	assert_int_equal(droce_timers_pop_due(&t, 49), DROCE_TIMERS_NONE);
	assert_int_equal(droce_timers_pop_due(&t, 50), 1);
	assert_int_equal(droce_timers_pop_due(&t, 50), 2);
	assert_int_equal(droce_timers_pop_due(&t, 50), 3);
	assert_int_equal(droce_timers_pop_due(&t, 50), DROCE_TIMERS_NONE);
	assert_true(droce_timers_min(&t) == 60);
	droce_timers_set(&t, 0, 5); /* moved earlier */
	assert_true(droce_timers_min(&t) == 5);
	assert_int_equal(droce_timers_pop_due(&t, 5), 0);
	assert_int_equal(t.n, 0);
	droce_timers_fini(&t);
}

/* ---------------------------------------------------------- the engine -- */

#define NPAIRS 48u
#define BUF (64u * 1024u)

static uint64_t scan_deadline(const struct droce_ctx *ctx)
{
	uint64_t d = UINT64_MAX;
	for (uint32_t i = 0; i < ctx->p.max_qps; i++)
		if (ctx->qps[i] && droce_tp_deadline(&ctx->qps[i]->tp) < d)
			d = droce_tp_deadline(&ctx->qps[i]->tp);
	return d;
}

static unsigned drop_every;
static bool lossy(struct tl_pair *p, int dir, const uint8_t *f, uint32_t len)
{
	(void)p;
	(void)dir;
	(void)f;
	(void)len;
	return drop_every && rnd() % drop_every == 0;
}

/* Many QP pairs write at once over a link that loses 1 frame in 20: ACK
 * timeouts, retransmissions and pacing move every QP's deadline, QPs are
 * destroyed and moved to ERR half-way; after every poll the context's
 * next deadline is exactly the earliest of its QPs' (a heap that missed a
 * move would answer late or early). */
static void test_engine_deadline_matches_scan(void **state)
{
	(void)state;
	struct bed *b = bed_new_ex(DROCE_MTU_1024, 100, 200, 8, 7, 7);
	assert_non_null(b);
	struct droce_qp *qa[NPAIRS], *qb[NPAIRS];
	qa[0] = b->s[0].qp;
	qb[0] = b->s[1].qp;
	unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE;
	for (unsigned k = 1; k < NPAIRS; k++) {
		struct droce_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.cap.max_send_wr = 64;
		ia.cap.max_recv_wr = 64;
		for (int s = 0; s < 2; s++) {
			ia.send_cq = b->s[s].scq;
			ia.recv_cq = b->s[s].rcq;
			b->s[s].qp = droce_create_qp(b->s[s].ctx, &ia);
			assert_non_null(b->s[s].qp);
		}
		assert_int_equal(bed_connect_qp(b, 0, acc, 200, 100, 8, 7, 7), 0);
		assert_int_equal(bed_connect_qp(b, 1, acc, 100, 200, 8, 7, 7), 0);
		qa[k] = b->s[0].qp;
		qb[k] = b->s[1].qp;
	}
	b->s[0].qp = qa[0];
	b->s[1].qp = qb[0];
	uint8_t *src = calloc(1, BUF), *dst = calloc(1, BUF);
	struct droce_mr *ms = droce_reg_mr(b->s[0].ctx, src, BUF, DROCE_ACCESS_LOCAL_WRITE);
	struct droce_mr *md = droce_reg_mr(b->s[1].ctx, dst, BUF, acc);
	assert_non_null(ms);
	assert_non_null(md);
	for (unsigned k = 0; k < NPAIRS; k++) {
		for (unsigned w = 0; w < 16; w++) {
			struct droce_sge sge = { .addr = (uintptr_t)src, .length = 8192, .lkey = ms->lkey };
			struct droce_send_wr wr = {
				.wr_id = k, .sg_list = &sge, .num_sge = 1,
				.opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = (uintptr_t)dst + 8192u * (k % 8), .rkey = md->rkey },
			};
			assert_int_equal(droce_post_send(qa[k], &wr, NULL), 0);
		}
	}
	b->link->drop = lossy;
	drop_every = 20;
	unsigned checks = 0, armed = 0, destroyed = 0;
	for (unsigned r = 0; r < 20000; r++) {
		unsigned w = droce_ctx_poll(b->s[0].ctx, b->now) + droce_ctx_poll(b->s[1].ctx, b->now);
		for (int s = 0; s < 2; s++) {
			uint64_t d = droce_ctx_next_deadline(b->s[s].ctx);
			assert_true(d == scan_deadline(b->s[s].ctx));
			checks++;
			armed += d != UINT64_MAX;
		}
		if (!destroyed && r >= 20 && droce_ctx_next_deadline(b->s[0].ctx) != UINT64_MAX) {
			/* QPs go away or to ERR with timers armed */
			for (unsigned k = 1; k < NPAIRS; k += 4) {
				assert_int_equal(droce_destroy_qp(qa[k]), 0);
				qa[k] = NULL;
				destroyed++;
			}
			struct droce_qp_attr e = { .qp_state = DROCE_QPS_ERR };
			for (unsigned k = 2; k < NPAIRS; k += 4)
				assert_int_equal(droce_modify_qp(qa[k], &e, DROCE_QP_STATE), 0);
			for (int s = 0; s < 2; s++)
				assert_true(droce_ctx_next_deadline(b->s[s].ctx) == scan_deadline(b->s[s].ctx));
		}
		if (w) {
			b->now += 100;
			continue;
		}
		uint64_t d0 = droce_ctx_next_deadline(b->s[0].ctx);
		uint64_t d1 = droce_ctx_next_deadline(b->s[1].ctx);
		uint64_t d = d0 < d1 ? d0 : d1;
		if (d == UINT64_MAX)
			break;
		b->now = d > b->now ? d : b->now + 1;
	}
	print_message("%u checks, %u armed, %" PRIu64 " lost, %u destroyed\n", checks, armed, b->link->dropped, destroyed);
	assert_true(armed > 100); /* the check saw timers, not only idle QPs */
	assert_int_equal(destroyed, (NPAIRS - 1 + 3) / 4);
	/* Everything finished: no timer left anywhere. */
	for (int s = 0; s < 2; s++)
		assert_true(droce_ctx_next_deadline(b->s[s].ctx) == UINT64_MAX);
	assert_true(b->link->dropped > 0);
	for (unsigned k = 1; k < NPAIRS; k++) {
		if (qa[k])
			droce_destroy_qp(qa[k]);
		droce_destroy_qp(qb[k]);
	}
	droce_dereg_mr(ms);
	droce_dereg_mr(md);
	free(src);
	free(dst);
	bed_free(b);
}

/* The context's QP table and transmit list with many QPs: a destroyed QP's
 * slot is not the next one handed out (QPNs rotate through the table, so a
 * late packet of the old QP finds no new one), and destroying QPs at the head, in the middle and at the tail of
 * the transmit list, while they wait there, leaves every other QP its turn. */
static void test_qp_slots_and_ready_list(void **state)
{
	(void)state;
	struct bed *b = bed_new(DROCE_MTU_1024, 100, 200);
	assert_non_null(b);
	enum { N = 12 };
	struct droce_qp *qa[N], *qb[N], *own0 = b->s[0].qp, *own1 = b->s[1].qp;
	unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE;
	struct droce_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	for (unsigned k = 0; k < N; k++) {
		for (int s = 0; s < 2; s++) {
			ia.send_cq = b->s[s].scq;
			ia.recv_cq = b->s[s].rcq;
			b->s[s].qp = droce_create_qp(b->s[s].ctx, &ia);
			assert_non_null(b->s[s].qp);
		}
		assert_int_equal(bed_connect_qp(b, 0, acc, 200, 100, 10, 7, 7), 0);
		assert_int_equal(bed_connect_qp(b, 1, acc, 100, 200, 10, 7, 7), 0);
		qa[k] = b->s[0].qp;
		qb[k] = b->s[1].qp;
	}
	/* Slots: free 3 and 7, the next two creates get fresh ones. */
	uint32_t n3 = droce_qp_num(qa[3]), n7 = droce_qp_num(qa[7]);
	assert_int_equal(droce_destroy_qp(qa[7]), 0);
	assert_int_equal(droce_destroy_qp(qa[3]), 0);
	ia.send_cq = b->s[0].scq;
	ia.recv_cq = b->s[0].rcq;
	struct droce_qp *x = droce_create_qp(b->s[0].ctx, &ia), *y = droce_create_qp(b->s[0].ctx, &ia);
	assert_non_null(x);
	assert_non_null(y);
	assert_true(droce_qp_num(x) != n3 && droce_qp_num(x) != n7);
	assert_true(droce_qp_num(y) != n3 && droce_qp_num(y) != n7);
	assert_int_not_equal(droce_qp_num(x), droce_qp_num(y));
	assert_int_equal(droce_destroy_qp(x), 0);
	assert_int_equal(droce_destroy_qp(y), 0);
	qa[3] = qa[7] = NULL;
	/* Every live QP of side A posts one write: all wait on the transmit list. */
	uint8_t *src = calloc(1, 4096), *dst = calloc(1, 4096 * N);
	for (unsigned i = 0; i < 4096; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	struct droce_mr *ms = droce_reg_mr(b->s[0].ctx, src, 4096, DROCE_ACCESS_LOCAL_WRITE);
	struct droce_mr *md = droce_reg_mr(b->s[1].ctx, dst, 4096 * N, acc);
	assert_non_null(ms);
	assert_non_null(md);
	for (unsigned k = 0; k < N; k++) {
		if (!qa[k])
			continue;
		struct droce_sge sge = { .addr = (uintptr_t)src, .length = 4096, .lkey = ms->lkey };
		struct droce_send_wr wr = {
			.wr_id = k, .sg_list = &sge, .num_sge = 1,
			.opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)dst + 4096u * k, .rkey = md->rkey },
		};
		assert_int_equal(droce_post_send(qa[k], &wr, NULL), 0);
	}
	/* Head (QP 0 posted first), middle and tail go. */
	bool gone[N] = { false };
	const unsigned kill[] = { 0, 5, N - 1 };
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(droce_destroy_qp(qa[kill[i]]), 0);
		qa[kill[i]] = NULL;
		gone[kill[i]] = true;
	}
	gone[3] = gone[7] = true;
	bed_run(b, 10000, UINT64_MAX);
	struct droce_wc wc[2 * N];
	int got = droce_poll_cq(b->s[0].scq, 2 * N, wc);
	int want = 0;
	for (unsigned k = 0; k < N; k++) {
		bool wrote = memcmp(dst + 4096u * k, src, 4096) == 0;
		assert_true(wrote == !gone[k]);
		want += !gone[k];
	}
	assert_int_equal(got, want);
	for (int i = 0; i < got; i++)
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
	for (unsigned k = 0; k < N; k++) {
		if (qa[k])
			droce_destroy_qp(qa[k]);
		droce_destroy_qp(qb[k]);
	}
	droce_dereg_mr(ms);
	droce_dereg_mr(md);
	free(src);
	free(dst);
	b->s[0].qp = own0;
	b->s[1].qp = own1;
	bed_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_engine_deadline_matches_scan),
		cmocka_unit_test(test_qp_slots_and_ready_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
