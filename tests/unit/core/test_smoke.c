/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Back-to-back smoke test of the engine: two contexts through the static
 * in-memory link of pair.h on a virtual clock. Every opcode, multi-packet
 * messages, zero-length messages, PSN wrap, and a few losses, with every
 * byte verified.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pair.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

#define BUF 65536

struct mem {
	uint8_t *a, *b;        /* side 0 and side 1 buffers */
	struct droce_mr *ma, *mb;
};

static void mem_init(struct bed *bd, struct mem *m)
{
	m->a = calloc(1, BUF);
	m->b = calloc(1, BUF);
	for (unsigned i = 0; i < BUF; i++)
		m->a[i] = (uint8_t)(i * 7 + 3);
	unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
		       DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;
	m->ma = droce_reg_mr(bd->s[0].ctx, m->a, BUF, acc);
	m->mb = droce_reg_mr(bd->s[1].ctx, m->b, BUF, acc);
	assert_non_null(m->ma);
	assert_non_null(m->mb);
}

static void mem_free(struct mem *m)
{
	droce_dereg_mr(m->ma);
	droce_dereg_mr(m->mb);
	free(m->a);
	free(m->b);
}

static int post_recv(struct bed *bd, struct mem *m, uint64_t id, uint32_t off, uint32_t len)
{
	struct droce_sge sge = { (uintptr_t)(m->b + off), len, m->mb->lkey };
	struct droce_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct droce_recv_wr *bad;
	return droce_post_recv(bd->s[1].qp, &wr, &bad);
}

static int post(struct bed *bd, struct mem *m, enum droce_wr_opcode op, uint64_t id,
		uint32_t loff, uint32_t len, uint32_t roff, uint32_t rkey)
{
	struct droce_sge sge = { (uintptr_t)(m->a + loff), len, m->ma->lkey };
	struct droce_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = DROCE_SEND_SIGNALED;
	wr.imm_data = 0x11223344;
	wr.wr.rdma.remote_addr = (uintptr_t)(m->b + roff);
	wr.wr.rdma.rkey = rkey;
	struct droce_send_wr *bad;
	return droce_post_send(bd->s[0].qp, &wr, &bad);
}

static void expect_wc(struct droce_cq *cq, uint64_t id, enum droce_wc_status st,
		      enum droce_wc_opcode op, uint32_t len)
{
	struct droce_wc wc;
	int n = droce_poll_cq(cq, 1, &wc);
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, id);
	if (wc.status != st)
		fail_msg("status %s, expected %s", droce_wc_status_str(wc.status),
			 droce_wc_status_str(st));
	if (st == DROCE_WC_SUCCESS) {
		assert_int_equal(wc.opcode, op);
		if (op >= DROCE_WC_RECV || op == DROCE_WC_RDMA_READ)
			assert_int_equal(wc.byte_len, len);
	}
}

static void expect_empty(struct droce_cq *cq)
{
	struct droce_wc wc;
	assert_int_equal(droce_poll_cq(cq, 1, &wc), 0);
}

static void test_send_sizes(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 100, 200);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	const uint32_t sizes[] = { 0, 1, 1023, 1024, 1025, 5000, 40000 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(m.b, 0, BUF);
		assert_int_equal(post_recv(bd, &m, 50 + i, 0, BUF), 0);
		assert_int_equal(post(bd, &m, DROCE_WR_SEND, i, 16, sizes[i], 0, 0), 0);
		bed_run(bd, 10000, UINT64_MAX);
		expect_wc(bd->s[0].scq, i, DROCE_WC_SUCCESS, DROCE_WC_SEND, sizes[i]);
		expect_wc(bd->s[1].rcq, 50 + i, DROCE_WC_SUCCESS, DROCE_WC_RECV, sizes[i]);
		if (sizes[i])
			assert_memory_equal(m.b, m.a + 16, sizes[i]);
		assert_int_equal(m.b[sizes[i]], 0);
	}
	mem_free(&m);
	bed_free(bd);
}

static void test_write_read_sizes(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 0xFFFFF0, 0xFFFFFA); /* wraps 2^24 */
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	const uint32_t sizes[] = { 0, 1, 1023, 1024, 1025, 5000, 30000 };
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		memset(m.b, 0, BUF);
		assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, i, 5, n, 100, m.mb->rkey), 0);
		bed_run(bd, 10000, UINT64_MAX);
		expect_wc(bd->s[0].scq, i, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE, n);
		if (n)
			assert_memory_equal(m.b + 100, m.a + 5, n);
		assert_int_equal(m.b[100 + n], 0);
		assert_int_equal(m.b[99], 0);
		/* READ it back into another place on side 0. */
		memset(m.a + 32768, 0, 32768);
		assert_int_equal(post(bd, &m, DROCE_WR_RDMA_READ, 100 + i, 32768, n, 100, m.mb->rkey), 0);
		bed_run(bd, 10000, UINT64_MAX);
		expect_wc(bd->s[0].scq, 100 + i, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ, n);
		if (n)
			assert_memory_equal(m.a + 32768, m.a + 5, n);
		assert_int_equal(m.a[32768 + n], 0);
		expect_empty(bd->s[1].rcq);
	}
	mem_free(&m);
	bed_free(bd);
}

static void test_write_imm_and_send_imm(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_256, 7, 9);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	assert_int_equal(post_recv(bd, &m, 1, 0, 0), 0);
	assert_int_equal(post_recv(bd, &m, 2, 8192, 4096), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE_WITH_IMM, 10, 0, 1000, 0, m.mb->rkey), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_SEND_WITH_IMM, 11, 0, 700, 0, 0), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 10, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE, 1000);
	expect_wc(bd->s[0].scq, 11, DROCE_WC_SUCCESS, DROCE_WC_SEND, 700);
	struct droce_wc wc[2];
	assert_int_equal(droce_poll_cq(bd->s[1].rcq, 2, wc), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc[0].byte_len, 1000);
	assert_true(wc[0].wc_flags & DROCE_WC_WITH_IMM);
	assert_int_equal(wc[0].imm_data, 0x11223344);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].opcode, DROCE_WC_RECV);
	assert_int_equal(wc[1].byte_len, 700);
	assert_int_equal(wc[1].imm_data, 0x11223344);
	assert_memory_equal(m.b, m.a, 1000);
	assert_memory_equal(m.b + 8192, m.a, 700);
	mem_free(&m);
	bed_free(bd);
}

static void test_atomics(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_4096, 1, 2);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	uint64_t v = 40;
	memcpy(m.b + 64, &v, 8);
	struct droce_sge sge = { (uintptr_t)(m.a + 128), 8, m.ma->lkey };
	struct droce_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = DROCE_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = DROCE_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)(m.b + 64);
	wr.wr.atomic.rkey = m.mb->rkey;
	wr.wr.atomic.compare_add = 2;
	assert_int_equal(droce_post_send(bd->s[0].qp, &wr, &bad), 0);
	bed_run(bd, 1000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_SUCCESS, DROCE_WC_FETCH_ADD, 8);
	uint64_t r;
	memcpy(&r, m.a + 128, 8);
	assert_int_equal(r, 40);
	memcpy(&r, m.b + 64, 8);
	assert_int_equal(r, 42);
	/* CAS that matches, then one that does not. */
	wr.opcode = DROCE_WR_ATOMIC_CMP_AND_SWP;
	wr.wr_id = 2;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 7;
	assert_int_equal(droce_post_send(bd->s[0].qp, &wr, &bad), 0);
	bed_run(bd, 1000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_SUCCESS, DROCE_WC_COMP_SWAP, 8);
	memcpy(&r, m.a + 128, 8);
	assert_int_equal(r, 42);
	memcpy(&r, m.b + 64, 8);
	assert_int_equal(r, 7);
	wr.wr_id = 3;
	assert_int_equal(droce_post_send(bd->s[0].qp, &wr, &bad), 0);
	bed_run(bd, 1000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 3, DROCE_WC_SUCCESS, DROCE_WC_COMP_SWAP, 8);
	memcpy(&r, m.a + 128, 8);
	assert_int_equal(r, 7);
	memcpy(&r, m.b + 64, 8);
	assert_int_equal(r, 7);
	/* Misaligned atomic is a post error. */
	wr.wr.atomic.remote_addr = (uintptr_t)(m.b + 65);
	assert_int_equal(droce_post_send(bd->s[0].qp, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	mem_free(&m);
	bed_free(bd);
}

/* Drop rule: drop frames from side `dir` whose BTH PSN is psn, once per entry. */
struct drop_rule {
	int dir;
	int opcode;       /* -1 any */
	uint32_t psn;
	unsigned times;
};
static struct drop_rule rules[4];
static unsigned nrules;

static bool drop_by_rule(struct tl_pair *p, int dir, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	if (droce_parse(f, len, &pkt, 0) != DROCE_PARSE_OK)
		return false;
	for (unsigned i = 0; i < nrules; i++) {
		struct drop_rule *r = &rules[i];
		if (r->times && r->dir == dir && pkt.h.bth.psn == r->psn &&
		    (r->opcode < 0 || r->opcode == pkt.h.bth.opcode)) {
			r->times--;
			return true;
		}
	}
	return false;
}

static void test_loss_recovery(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 1000, 5000);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	bd->link->drop = drop_by_rule;
	/* Lose the middle packet of a 5-packet WRITE, the last packet of a
	 * SEND, the ACK of the SEND, and a middle READ response. */
	nrules = 3;
	rules[0] = (struct drop_rule){ 0, -1, 1002, 1 };
	rules[1] = (struct drop_rule){ 0, -1, 1007, 1 };
	rules[2] = (struct drop_rule){ 1, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 1010, 1 };
	assert_int_equal(post_recv(bd, &m, 77, 40000, 20000), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 1, 0, 5000, 0, m.mb->rkey), 0); /* 1000..1004 */
	assert_int_equal(post(bd, &m, DROCE_WR_SEND, 2, 100, 3000, 0, 0), 0);              /* 1005..1007 */
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_READ, 3, 20000, 4000, 0, m.mb->rkey), 0); /* 1008..1011 */
	bed_run(bd, 100000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE, 5000);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_SUCCESS, DROCE_WC_SEND, 3000);
	expect_wc(bd->s[0].scq, 3, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ, 4000);
	expect_wc(bd->s[1].rcq, 77, DROCE_WC_SUCCESS, DROCE_WC_RECV, 3000);
	expect_empty(bd->s[1].rcq);
	assert_memory_equal(m.b, m.a, 5000);
	assert_memory_equal(m.b + 40000, m.a + 100, 3000);
	assert_memory_equal(m.a + 20000, m.a, 4000);
	for (unsigned i = 0; i < nrules; i++)
		if (rules[i].times)
			fail_msg("rule %u never matched", i);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	assert_true(st.retrans_pkts > 0);
	assert_true(st.retrans_nak + st.retrans_timeout > 0);
	droce_qp_get_stats(bd->s[1].qp, &st);
	assert_true(st.dup_reqs > 0);
	nrules = 0;
	mem_free(&m);
	bed_free(bd);
}

/* The only ACK of a WRITE is lost: the ACK timer fires, the WRITE goes
 * again, the responder sees a duplicate, re-ACKs and writes nothing twice. */
static void test_lost_ack(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 300, 400);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	bd->link->drop = drop_by_rule;
	nrules = 1;
	rules[0] = (struct drop_rule){ 1, DROCE_OP_RC_ACKNOWLEDGE, 301, 1 };
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 1, 0, 2000, 0, m.mb->rkey), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE, 2000);
	assert_int_equal(rules[0].times, 0);
	assert_memory_equal(m.b, m.a, 2000);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	assert_int_equal(st.retrans_timeout, 1);
	droce_qp_get_stats(bd->s[1].qp, &st);
	assert_int_equal(st.dup_reqs, 2);
	nrules = 0;
	mem_free(&m);
	bed_free(bd);
}

static void test_rnr_then_success(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 10, 20);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	assert_int_equal(post(bd, &m, DROCE_WR_SEND, 1, 0, 3000, 0, 0), 0);
	bed_run(bd, 50, bd->now + 1000);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	assert_true(st.rnr_nak_rcvd >= 1);
	expect_empty(bd->s[0].scq);
	assert_int_equal(post_recv(bd, &m, 9, 0, 4096), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_SUCCESS, DROCE_WC_SEND, 3000);
	expect_wc(bd->s[1].rcq, 9, DROCE_WC_SUCCESS, DROCE_WC_RECV, 3000);
	assert_memory_equal(m.b, m.a, 3000);
	mem_free(&m);
	bed_free(bd);
}

static void test_rnr_exhausted(void **state)
{
	struct bed *bd = bed_new_ex(DROCE_MTU_1024, 10, 20, 10, 7, 2);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	assert_int_equal(post(bd, &m, DROCE_WR_SEND, 1, 0, 100, 0, 0), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 2, 0, 100, 0, m.mb->rkey), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_RNR_RETRY_EXC_ERR, 0, 0);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_WR_FLUSH_ERR, 0, 0);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	assert_int_equal(st.rnr_nak_rcvd, 3);
	struct droce_qp_attr a;
	droce_query_qp(bd->s[0].qp, &a, 0);
	assert_int_equal(a.qp_state, DROCE_QPS_ERR);
	mem_free(&m);
	bed_free(bd);
}

static void test_remote_access_error(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 10, 20);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	memset(m.b, 0, BUF);
	/* rkey with wrong key bits; then a WRITE that would be fine. */
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 1, 0, 3000, 0, m.mb->rkey ^ 1), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 2, 0, 100, 0, m.mb->rkey), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_REM_ACCESS_ERR, 0, 0);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_WR_FLUSH_ERR, 0, 0);
	for (unsigned i = 0; i < BUF; i++)
		if (m.b[i])
			fail_msg("byte %u written", i);
	mem_free(&m);
	bed_free(bd);
}

/* A receive WQE whose lkey is bad: the SEND that meets it gets NAK remote
 * operational error (REM_OP_ERR at the requester), the receive completes
 * LOC_PROT_ERR, both QPs end in ERR. */
static void test_bad_recv_lkey(void **state)
{
	struct bed *bd = bed_new(DROCE_MTU_1024, 10, 20);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	struct droce_sge sge = { (uintptr_t)m.b, 100, m.mb->lkey ^ 0x5A };
	struct droce_recv_wr rw = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	struct droce_recv_wr *rbad;
	assert_int_equal(droce_post_recv(bd->s[1].qp, &rw, &rbad), 0); /* not a post error */
	assert_int_equal(post(bd, &m, DROCE_WR_SEND, 1, 0, 50, 0, 0), 0);
	bed_run(bd, 1000, UINT64_MAX);
	struct droce_wc wc;
	assert_int_equal(droce_poll_cq(bd->s[0].scq, 1, &wc), 1);
	assert_int_equal(wc.status, DROCE_WC_REM_OP_ERR);
	assert_int_equal(droce_poll_cq(bd->s[1].rcq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[1].qp, &st);
	assert_int_equal(st.nak_sent[DROCE_NAK_REMOTE_OP], 1);
	struct droce_qp_attr a;
	droce_query_qp(bd->s[0].qp, &a, 0);
	assert_int_equal(a.qp_state, DROCE_QPS_ERR);
	droce_query_qp(bd->s[1].qp, &a, 0);
	assert_int_equal(a.qp_state, DROCE_QPS_ERR);
	mem_free(&m);
	bed_free(bd);
}

static bool drop_all_from_0(struct tl_pair *p, int dir, const uint8_t *f, uint32_t len)
{
	return dir == 0;
}

static void test_retry_exhausted(void **state)
{
	struct bed *bd = bed_new_ex(DROCE_MTU_1024, 10, 20, 5, 3, 7);
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	bd->link->drop = drop_all_from_0;
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 1, 0, 100, 0, m.mb->rkey), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 2, 0, 100, 0, m.mb->rkey), 0);
	bed_run(bd, 10000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_RETRY_EXC_ERR, 0, 0);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_WR_FLUSH_ERR, 0, 0);
	struct droce_qp_stats st;
	droce_qp_get_stats(bd->s[0].qp, &st);
	assert_int_equal(st.retrans_timeout, 3);
	mem_free(&m);
	bed_free(bd);
}

static uint64_t lcg;
static bool drop_random(struct tl_pair *p, int dir, const uint8_t *f, uint32_t len)
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (lcg >> 33) % 100 < 3; /* 3 % loss both ways */
}

/* Several QP pairs on the same two contexts, all busy at once over a lossy
 * link: the ready list, timers and QPN dispatch keep every connection apart. */
static void test_many_qps_lossy(void **state)
{
	enum { NQ = 5, MSGS = 40, LEN = 3000 };
	struct bed *bd = bed_new(DROCE_MTU_1024, 10, 20);
	assert_non_null(bd);
	struct droce_qp *qa[NQ], *qb[NQ];
	qa[0] = bd->s[0].qp;
	qb[0] = bd->s[1].qp;
	for (int i = 1; i < NQ; i++) {
		struct droce_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = bd->s[0].scq;
		ia.recv_cq = bd->s[0].rcq;
		qa[i] = droce_create_qp(bd->s[0].ctx, &ia);
		ia.send_cq = bd->s[1].scq;
		ia.recv_cq = bd->s[1].rcq;
		qb[i] = droce_create_qp(bd->s[1].ctx, &ia);
		assert_non_null(qa[i]);
		assert_non_null(qb[i]);
		bd->s[0].qp = qa[i];
		bd->s[1].qp = qb[i];
		unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE;
		assert_int_equal(bed_connect_qp(bd, 0, acc, 100u * i, 200u * i, 8, 7, 7), 0);
		assert_int_equal(bed_connect_qp(bd, 1, acc, 200u * i, 100u * i, 8, 7, 7), 0);
	}
	uint8_t *src = malloc(NQ * LEN), *dst = calloc(NQ * MSGS, LEN);
	for (unsigned i = 0; i < NQ * LEN; i++)
		src[i] = (uint8_t)(i * 31 + 7);
	struct droce_mr *ms = droce_reg_mr(bd->s[0].ctx, src, NQ * LEN, 0);
	struct droce_mr *md = droce_reg_mr(bd->s[1].ctx, dst, (size_t)NQ * MSGS * LEN,
					   DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	lcg = 42;
	bd->link->drop = drop_random;
	for (int m = 0; m < MSGS; m++)
		for (int q = 0; q < NQ; q++) {
			struct droce_sge sge = { (uintptr_t)(src + q * LEN), LEN, ms->lkey };
			struct droce_send_wr wr, *bad;
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = (uint64_t)q << 32 | (uint64_t)m;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = DROCE_WR_RDMA_WRITE;
			wr.send_flags = DROCE_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = (uintptr_t)(dst + ((size_t)q * MSGS + m) * LEN);
			wr.wr.rdma.rkey = md->rkey;
			assert_int_equal(droce_post_send(qa[q], &wr, &bad), 0);
		}
	bed_run(bd, 1000000, UINT64_MAX);
	struct droce_wc wc[NQ * MSGS + 1];
	assert_int_equal(droce_poll_cq(bd->s[0].scq, NQ * MSGS + 1, wc), NQ * MSGS);
	int next[NQ] = { 0 };
	for (int i = 0; i < NQ * MSGS; i++) {
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		int q = (int)(wc[i].wr_id >> 32), m = (int)(wc[i].wr_id & 0xFFFFFFFF);
		assert_int_equal(m, next[q]); /* in order per QP */
		next[q]++;
		assert_int_equal(wc[i].qp_num, droce_qp_num(qa[q]));
	}
	for (int q = 0; q < NQ; q++)
		for (int m = 0; m < MSGS; m++)
			assert_memory_equal(dst + ((size_t)q * MSGS + m) * LEN, src + q * LEN, LEN);
	assert_true(bd->link->dropped > 10);
	bd->link->drop = NULL;
	droce_dereg_mr(ms);
	droce_dereg_mr(md);
	for (int i = 1; i < NQ; i++) {
		droce_destroy_qp(qa[i]);
		droce_destroy_qp(qb[i]);
	}
	bd->s[0].qp = qa[0];
	bd->s[1].qp = qb[0];
	free(src);
	free(dst);
	bed_free(bd);
}

/* The same operations over IPv6 contexts (40-byte header, ICRC masks the
 * traffic class, flow label and hop limit), with a loss to exercise the
 * retransmission path too. */
static void test_ipv6(void **state)
{
	bed_ipv = 6;
	struct bed *bd = bed_new(DROCE_MTU_2048, 77, 88);
	bed_ipv = 4;
	assert_non_null(bd);
	struct mem m;
	mem_init(bd, &m);
	bd->link->drop = drop_by_rule;
	nrules = 1;
	rules[0] = (struct drop_rule){ 0, -1, 78, 1 };
	assert_int_equal(post_recv(bd, &m, 5, 30000, 10000), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_WRITE, 1, 0, 7000, 0, m.mb->rkey), 0); /* 77..80 */
	assert_int_equal(post(bd, &m, DROCE_WR_SEND, 2, 9, 5000, 0, 0), 0);
	assert_int_equal(post(bd, &m, DROCE_WR_RDMA_READ, 3, 40000, 6000, 100, m.mb->rkey), 0);
	bed_run(bd, 100000, UINT64_MAX);
	expect_wc(bd->s[0].scq, 1, DROCE_WC_SUCCESS, DROCE_WC_RDMA_WRITE, 7000);
	expect_wc(bd->s[0].scq, 2, DROCE_WC_SUCCESS, DROCE_WC_SEND, 5000);
	expect_wc(bd->s[0].scq, 3, DROCE_WC_SUCCESS, DROCE_WC_RDMA_READ, 6000);
	expect_wc(bd->s[1].rcq, 5, DROCE_WC_SUCCESS, DROCE_WC_RECV, 5000);
	assert_memory_equal(m.b, m.a, 7000);
	assert_memory_equal(m.b + 30000, m.a + 9, 5000);
	assert_memory_equal(m.a + 40000, m.a + 100, 6000);
	assert_int_equal(rules[0].times, 0);
	nrules = 0;
	bd->link->drop = NULL;
	mem_free(&m);
	bed_free(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_sizes),
		cmocka_unit_test(test_write_read_sizes),
		cmocka_unit_test(test_write_imm_and_send_imm),
		cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_loss_recovery),
		cmocka_unit_test(test_lost_ack),
		cmocka_unit_test(test_rnr_then_success),
		cmocka_unit_test(test_rnr_exhausted),
		cmocka_unit_test(test_remote_access_error),
		cmocka_unit_test(test_bad_recv_lkey),
		cmocka_unit_test(test_retry_exhausted),
		cmocka_unit_test(test_many_qps_lossy),
		cmocka_unit_test(test_ipv6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
