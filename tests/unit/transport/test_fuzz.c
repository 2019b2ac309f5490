/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile peer with a valid ICRC: seeded random frames (any RC opcode,
 * PSNs near and far from the expected one, RETH/AtomicETH addresses, keys
 * and lengths inside, across and outside the registered region, AETH
 * syndromes of every kind, payloads up to past the MTU), each built with a
 * correct ICRC so it reaches the transport, aimed at the responder and at
 * the requester of a live connection that also carries real traffic.
 *
 * Bad input is counted, never trusted (principle 5, docs/architecture.md): nothing may
 * crash (the sanitizer build runs this), no byte outside a registered
 * region may change, and after the storm both contexts still work: fresh
 * QPs connect and move verified data.
 *
 *   test_transport_fuzz [FRAMES [SEED]]   (default 50000 1)
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

#define LEN 65536u
#define GUARD 4096u

static unsigned long g_frames = 50000;
static uint64_t g_seed = 1;

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static const uint8_t rc_ops[] = {
	DROCE_OP_RC_SEND_FIRST, DROCE_OP_RC_SEND_MIDDLE, DROCE_OP_RC_SEND_LAST,
	DROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE, DROCE_OP_RC_SEND_ONLY,
	DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, DROCE_OP_RC_RDMA_WRITE_FIRST,
	DROCE_OP_RC_RDMA_WRITE_MIDDLE, DROCE_OP_RC_RDMA_WRITE_LAST,
	DROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, DROCE_OP_RC_RDMA_WRITE_ONLY,
	DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, DROCE_OP_RC_RDMA_READ_REQUEST,
	DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE,
	DROCE_OP_RC_RDMA_READ_RESPONSE_LAST, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY,
	DROCE_OP_RC_ACKNOWLEDGE, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, DROCE_OP_RC_COMPARE_SWAP,
	DROCE_OP_RC_FETCH_ADD, DROCE_OP_RC_SEND_LAST_WITH_INVALIDATE,
	DROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, DROCE_OP_UC_SEND_ONLY, DROCE_OP_UD_SEND_ONLY,
	DROCE_OP_CNP,
};

struct side_mem {
	uint8_t *raw;       /* GUARD | LEN registered | GUARD */
	struct droce_mr *mr;
};

static void side_mem_init(struct pair *p, int side, struct side_mem *m, unsigned access)
{
	m->raw = aligned_alloc(64, LEN + 2 * GUARD);
	assert_non_null(m->raw);
	memset(m->raw, 0x5C, LEN + 2 * GUARD);
	m->mr = droce_reg_mr(p->ctx[side], m->raw + GUARD, LEN, access);
	assert_non_null(m->mr);
}

static void guards_intact(const struct side_mem *m, const char *who)
{
	for (size_t i = 0; i < GUARD; i++)
		if (m->raw[i] != 0x5C || m->raw[GUARD + LEN + i] != 0x5C)
			fail_msg("%s: a byte outside the registered region changed", who);
}

/* A random address: inside, straddling either end, or far away. */
static uint64_t pick_va(uint64_t r, const struct side_mem *m)
{
	uint64_t base = (uint64_t)(uintptr_t)m->mr->addr;
	switch (r % 6) {
	case 0: return base + (r >> 8) % LEN;
	case 1: return base + LEN - (r >> 8) % 64;
	case 2: return base - (r >> 8) % 64;
	case 3: return base + ((r >> 8) % (LEN / 8)) * 8;
	case 4: return r;
	default: return base;
	}
}

static uint32_t pick_len(uint64_t r)
{
	switch (r % 5) {
	case 0: return 0;
	case 1: return (uint32_t)(r >> 8) % 64;
	case 2: return (uint32_t)(r >> 8) % (LEN + 128);
	case 3: return 0xFFFFFFFFu - (uint32_t)(r >> 8) % 16;
	default: return 1024;
	}
}

static void test_fuzz(void **state)
{
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct side_mem ma, mb;
	uint64_t s = g_seed;
	uint8_t payload[1200];
	unsigned long sent = 0;

	(void)state;
	pair_init(&p, NULL);
	p.record = false;
	p.allow_bad_frames = true;
	conn_opts_default(&o);
	o.timeout = 8;
	o.retry_cnt = 2;
	o.rnr_retry = 1;
	pair_connect(&p, &c, &o);
	side_mem_init(&p, SIDE_A, &ma, o.access);
	side_mem_init(&p, SIDE_B, &mb, o.access);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;

	for (unsigned long k = 0; k < g_frames; k++) {
		uint64_t r = rnd(&s), r2 = rnd(&s), r3 = rnd(&s);
		int to = (int)(r & 1);            /* 1: at B (from A), 0: at A (from B) */
		int from = to ? SIDE_A : SIDE_B;
		struct droce_qp_attr at;
		struct droce_hdrs h;
		uint32_t expect;

		/* keep real traffic and receives going, so every path has state */
		if (k % 4 == 0) {
			for (int sd = 0; sd < 2; sd++) {
				struct droce_wc wc[64];
				while (droce_poll_cq(c.scq[sd], 64, wc) > 0 || droce_poll_cq(c.rcq[sd], 64, wc) > 0)
					;
				if (qp_state(c.qp[sd]) == DROCE_QPS_ERR) {
					/* bring it back: ERR -> RESET -> INIT -> RTR -> RTS */
					memset(&at, 0, sizeof(at));
					at.qp_state = DROCE_QPS_RESET;
					assert_int_equal(droce_modify_qp(c.qp[sd], &at, DROCE_QP_STATE), 0);
					o.sq_psn[sd] = (uint32_t)rnd(&s) & 0xFFFFFF;
					assert_int_equal(conn_modify(&p, &c, sd, DROCE_QPS_INIT, &o), 0);
					assert_int_equal(conn_modify(&p, &c, sd, DROCE_QPS_RTR, &o), 0);
					assert_int_equal(conn_modify(&p, &c, sd, DROCE_QPS_RTS, &o), 0);
				}
			}
		}
		if (k % 64 == 0) {
			post_recv_buf(c.qp[SIDE_B], k, mb.mr, (r2 >> 8) % (LEN - 2048), 2048);
			post_recv_buf(c.qp[SIDE_A], k, ma.mr, (r2 >> 8) % (LEN - 2048), 2048);
			post_rdma(c.qp[SIDE_A], (enum droce_wr_opcode)(r3 % 5), k, ma.mr, 0, (uint32_t)(r3 >> 8) % 4096,
				  (uint64_t)(uintptr_t)mb.mr->addr + 4096, mb.mr->rkey, DROCE_SEND_SIGNALED, 0);
			post_atomic(c.qp[SIDE_B], DROCE_WR_ATOMIC_FETCH_AND_ADD, k, mb.mr, 64,
				    (uint64_t)(uintptr_t)ma.mr->addr + 128, ma.mr->rkey, 1, 0);
		}

		memset(&at, 0, sizeof(at));
		droce_query_qp(c.qp[to ? SIDE_B : SIDE_A], &at, 0);
		expect = to ? at.rq_psn : at.sq_psn;
		pair_hdrs(&p, from, &h, rc_ops[r % sizeof(rc_ops)], c.qpn[to ? SIDE_B : SIDE_A], 0);
		switch ((r >> 8) % 4) {
		case 0: h.bth.psn = expect; break;
		case 1: h.bth.psn = (expect + (uint32_t)(r2 % 8)) & 0xFFFFFF; break;
		case 2: h.bth.psn = (expect - (uint32_t)(r2 % 8)) & 0xFFFFFF; break;
		default: h.bth.psn = (uint32_t)r2 & 0xFFFFFF; break;
		}
		if (r2 % 50 == 0)
			h.bth.dqpn = (uint32_t)r3 & 0xFFFFFF;
		h.bth.ack_req = (r2 >> 8) & 1;
		h.bth.se = (r2 >> 9) & 1;
		h.bth.migreq = (r2 >> 10) & 1;
		h.bth.becn = (r2 >> 11) & 1;
		const struct side_mem *tm = to ? &mb : &ma;
		uint32_t rkey = tm->mr->rkey;
		if (r3 % 7 == 0)
			rkey ^= (uint32_t)(r3 >> 16);
		h.ext.reth.va = pick_va(r3, tm);
		h.ext.reth.rkey = rkey;
		h.ext.reth.dma_len = pick_len(r2 >> 12);
		h.ext.atomic.va = pick_va(r3 >> 3, tm);
		h.ext.atomic.rkey = rkey;
		h.ext.atomic.swap_add = r;
		h.ext.atomic.compare = r2;
		h.ext.aeth.syndrome = (uint8_t)(r3 >> 24);
		h.ext.aeth.msn = (uint32_t)(r3 >> 32) & 0xFFFFFF;
		h.ext.atomic_ack = r3;
		h.ext.imm = (uint32_t)r;
		h.ext.ieth_rkey = rkey;
		h.ext.deth.qkey = (uint32_t)r2;
		h.ext.deth.sqpn = (uint32_t)r3 & 0xFFFFFF;
		const struct droce_opcode_info *oi = droce_opcode_info(h.bth.opcode);
		h.payload_len = (oi && (oi->flags & DROCE_OPF_PAYLOAD))
			? ((r3 >> 40) % 3 == 0 ? 1024 : (uint32_t)(r3 >> 44) % 1100) : 0;
		if (pair_inject(&p, from, &h, payload) == 0)
			sent++;
		for (int i = 0; i < 3; i++)
			if (!pair_step(&p))
				pair_advance(&p, p.now + 10ull * 1000 * 1000);
	}
	pair_run(&p, 1000000000ull);
	guards_intact(&ma, "A");
	guards_intact(&mb, "B");

	struct droce_ctx_stats st[2];
	uint64_t drops[2] = {0, 0};
	for (int sd = 0; sd < 2; sd++) {
		assert_int_equal(droce_ctx_get_stats(p.ctx[sd], &st[sd]), 0);
		for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++)
			drops[sd] += st[sd].drop[i];
	}
	printf("fuzz: %lu crafted frames; A dropped %llu, B dropped %llu\n", sent,
	       (unsigned long long)drops[0], (unsigned long long)drops[1]);
	for (int sd = 0; sd < 2; sd++)
		for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++)
			if (st[sd].drop[i])
				printf("fuzz:   %s %s %llu\n", sd ? "B" : "A", droce_drop_reason_name(i),
				       (unsigned long long)st[sd].drop[i]);
	assert_true(drops[0] > 0 && drops[1] > 0);

	/* the contexts still work: a fresh QP pair moves verified data */
	struct conn c2;
	struct droce_wc wc;
	conn_opts_default(&o);
	o.sq_psn[0] = 0x42;
	o.sq_psn[1] = 0x4242;
	pair_connect(&p, &c2, &o);
	fill_pattern(ma.mr->addr, 5000, 77);
	memset(mb.mr->addr, 0, 5000);
	assert_int_equal(post_rdma(c2.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, ma.mr, 0, 5000,
				   (uint64_t)(uintptr_t)mb.mr->addr, mb.mr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&p, c2.scq[SIDE_A], 1, &wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(mb.mr->addr, 5000, 77), -1);

	pair_fini(&p); /* destroys QPs, CQs, contexts (and with them the MRs) */
	free(ma.raw);
	free(mb.raw);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		g_frames = strtoul(argv[1], NULL, 0);
	if (argc > 2)
		g_seed = strtoull(argv[2], NULL, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
