/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every RC operation at sizes 0, 1, MTU-1, MTU, MTU+1 and 1 MB over a clean
 * link: the exact request packets (IBTA 9.4 opcode sequences, 9.7.1 PSNs,
 * 9.2.4 AckReq), the responses (9.7.5: ACK PSN and MSN; 9.7.4.1.4 READ
 * responses), the completions (11.4.2) and every byte placed.
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

#define MB (1u << 20)
#define BUF (MB + 8192)
#define GUARD 0xEE

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	unsigned mtu;
	uint32_t psn;      /* A's next request PSN */
	uint32_t msn;      /* B's MSN: messages completed */
	uint64_t key;
};

static void fx_setup_ip(struct fx *f, enum droce_mtu mtu, uint8_t ip_version)
{
	struct pair_opts po = {{0, 0}, {NULL, NULL}, 0, ip_version, NULL};
	pair_init(&f->p, &po);
	conn_opts_default(&f->o);
	f->o.mtu = mtu;
	f->mtu = droce_mtu_bytes(mtu);
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, GUARD);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, GUARD);
	f->psn = f->o.sq_psn[SIDE_A];
	f->msn = 0;
	f->key = 1;
}

static void fx_setup(struct fx *f, enum droce_mtu mtu)
{
	fx_setup_ip(f, mtu, 4);
}

static void fx_teardown(struct fx *f)
{
	pair_fini(&f->p);
	free(f);
}

static int setup_1024(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup(f, DROCE_MTU_1024);
	*state = f;
	return 0;
}

static int setup_256(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup(f, DROCE_MTU_256);
	*state = f;
	return 0;
}

static int setup_512(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup(f, DROCE_MTU_512);
	*state = f;
	return 0;
}

static int setup_2048(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup(f, DROCE_MTU_2048);
	*state = f;
	return 0;
}

static int setup_4096(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup(f, DROCE_MTU_4096);
	*state = f;
	return 0;
}

/* RoCEv2 over IPv6 (A17.4.1): the same exchanges with IPv6 headers. */
static int setup_v6(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	fx_setup_ip(f, DROCE_MTU_1024, 6);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx_teardown(*state);
	return 0;
}

static void expect_guard(const uint8_t *b, size_t from, size_t n)
{
	for (size_t i = from; i < from + n; i++)
		if (b[i] != GUARD)
			fail_msg("byte %zu beyond the transfer changed: %02x", i, b[i]);
}

/* One message of @p op, @p len bytes, checked end to end. Offsets vary with the key. */
static void one_msg(struct fx *f, enum droce_wr_opcode op, uint32_t len)
{
	struct pair *p = &f->p;
	uint8_t *a = f->amr->addr, *b = f->bmr->addr;
	size_t aoff = (f->key * 24) % 512, boff = (f->key * 40) % 512 + 1;
	uint64_t wr_id = 0xABC00000u + f->key;
	uint32_t imm = 0x01020304u * (uint32_t)f->key;
	unsigned mark = p->nrec, n = npkts(len, f->mtu);
	unsigned *req = calloc(2 * n + 64, sizeof(*req)), *rsp = calloc(2 * n + 64, sizeof(*rsp));
	unsigned nreq, nrsp;
	bool rwqe = op == DROCE_WR_SEND || op == DROCE_WR_SEND_WITH_IMM ||
		    op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	struct droce_wc wc[4];
	struct droce_qp_stats sa0 = qp_stats(f->c.qp[SIDE_A]), sa1;

	memset(a, GUARD, BUF);
	memset(b, GUARD, BUF);
	if (op == DROCE_WR_RDMA_READ)
		fill_pattern(b + boff, len, f->key);
	else
		fill_pattern(a + aoff, len, f->key);
	if (rwqe)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 77 + f->key, f->bmr,
					       op == DROCE_WR_RDMA_WRITE_WITH_IMM ? 0 : boff,
					       op == DROCE_WR_RDMA_WRITE_WITH_IMM ? 0 : len + 100), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, wr_id, f->amr, aoff, len,
				   (uint64_t)(uintptr_t)(b + boff), f->bmr->rkey,
				   DROCE_SEND_SIGNALED, imm), 0);

	/* requester completion (11.4.2.1) */
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 10ull * 1000 * 1000 * 1000), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_true(wc[0].wr_id == wr_id);
	assert_int_equal(wc[0].opcode, op == DROCE_WR_RDMA_READ ? DROCE_WC_RDMA_READ
				       : (op == DROCE_WR_SEND || op == DROCE_WR_SEND_WITH_IMM)
				       ? DROCE_WC_SEND : DROCE_WC_RDMA_WRITE);
	assert_int_equal(wc[0].qp_num, f->c.qpn[SIDE_A]);
	/* responder completion for receive-consuming operations */
	if (rwqe) {
		assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, wc, 1000000), 1);
		assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
		assert_true(wc[0].wr_id == 77 + f->key);
		assert_int_equal(wc[0].opcode, op == DROCE_WR_RDMA_WRITE_WITH_IMM
					       ? DROCE_WC_RECV_RDMA_WITH_IMM : DROCE_WC_RECV);
		assert_int_equal(wc[0].byte_len, len);
		assert_int_equal(wc[0].qp_num, f->c.qpn[SIDE_B]);
		if (op != DROCE_WR_SEND) {
			assert_true(wc[0].wc_flags & DROCE_WC_WITH_IMM);
			assert_int_equal(wc[0].imm_data, imm);
		} else {
			assert_false(wc[0].wc_flags & DROCE_WC_WITH_IMM);
		}
	}
	pair_run(p, 1000000000ull);
	/* nothing else completed */
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 4), 0);
	assert_int_equal(cq_drain(f->c.rcq[SIDE_B], wc, 4), 0);

	/* the bytes */
	if (op == DROCE_WR_RDMA_READ) {
		long bad = check_pattern(a + aoff, len, f->key);
		if (bad >= 0)
			fail_msg("READ of %u: byte %ld wrong", len, bad);
		expect_guard(a, 0, aoff);
		expect_guard(a, aoff + len, 64);
	} else {
		long bad = check_pattern(b + boff, len, f->key);
		if (bad >= 0)
			fail_msg("%u bytes: byte %ld wrong at the responder", len, bad);
		expect_guard(b, boff > 0 ? boff - 1 : 0, boff > 0 ? 1 : 0);
		expect_guard(b, boff + len, 64);
	}

	/* the packets */
	nreq = rec_dir(p, mark, A_TO_B, req, 2 * n + 64);
	nrsp = rec_dir(p, mark, B_TO_A, rsp, 2 * n + 64);
	if (op == DROCE_WR_RDMA_READ) {
		if (nreq != 1) {
			rec_dump(p, mark);
			fail_msg("READ of %u: %u request packets, want 1", len, nreq);
		}
		expect_msg(p, req, nreq, op, f->psn, 0, f->mtu, 0, 0, 0, f->c.qpn[SIDE_B]);
		assert_true(p->rec[req[0]].va == (uint64_t)(uintptr_t)(b + boff));
		assert_int_equal(p->rec[req[0]].rkey, f->bmr->rkey);
		assert_int_equal(p->rec[req[0]].dma_len, len);
		if (nrsp != n) {
			rec_dump(p, mark);
			fail_msg("READ of %u: %u responses, want %u", len, nrsp, n);
		}
		f->msn++;
		expect_read_resp(p, rsp, nrsp, f->psn, len, f->mtu, f->msn, f->c.qpn[SIDE_A]);
	} else {
		if (nreq != n) {
			rec_dump(p, mark);
			fail_msg("%u bytes: %u request packets, want %u", len, nreq, n);
		}
		expect_msg(p, req, nreq, op, f->psn, len, f->mtu, (uint64_t)(uintptr_t)(b + boff),
			   f->bmr->rkey, imm, f->c.qpn[SIDE_B]);
		/* IBTA 9.7.2: AckReq at least every DROCE_DEFAULT_ACK_REQ_EVERY packets */
		for (unsigned i = 0, since = 0; i < nreq; i++) {
			since = p->rec[req[i]].ackreq ? 0 : since + 1;
			if (since >= DROCE_DEFAULT_ACK_REQ_EVERY)
				fail_msg("%u packets in a row without AckReq", since);
		}
		f->msn++;
		expect_acks(p, rsp, nrsp, f->psn, PSN(f->psn + n - 1), f->msn);
		/* coalesced, but never more ACKs than request packets */
		assert_true(nrsp <= n);
	}
	sa1 = qp_stats(f->c.qp[SIDE_A]);
	assert_int_equal(sa1.retrans_pkts - sa0.retrans_pkts, 0);
	assert_int_equal(sa1.retrans_timeout - sa0.retrans_timeout, 0);
	f->psn = PSN(f->psn + n);
	f->key++;
	free(req);
	free(rsp);
}

static void sweep(struct fx *f, enum droce_wr_opcode op)
{
	const uint32_t sizes[] = {0, 1, f->mtu - 1, f->mtu, f->mtu + 1, MB};
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		one_msg(f, op, sizes[i]);
}

static void test_send(void **state) { sweep(*state, DROCE_WR_SEND); }
static void test_send_imm(void **state) { sweep(*state, DROCE_WR_SEND_WITH_IMM); }
static void test_write(void **state) { sweep(*state, DROCE_WR_RDMA_WRITE); }
static void test_write_imm(void **state) { sweep(*state, DROCE_WR_RDMA_WRITE_WITH_IMM); }
static void test_read(void **state) { sweep(*state, DROCE_WR_RDMA_READ); }

/* Every operation in turn on one QP pair: PSNs and MSNs carry across messages. */
static void test_mixed_sequence(void **state)
{
	struct fx *f = *state;
	const enum droce_wr_opcode ops[] = {DROCE_WR_SEND, DROCE_WR_RDMA_READ, DROCE_WR_RDMA_WRITE,
		DROCE_WR_SEND_WITH_IMM, DROCE_WR_RDMA_READ, DROCE_WR_RDMA_WRITE_WITH_IMM};
	for (unsigned i = 0; i < 6; i++)
		one_msg(f, ops[i], 3 * f->mtu + 7);
	for (unsigned i = 0; i < 6; i++)
		one_msg(f, ops[i], 5);
}

/* IBTA 9.4.5 / 9.5.3: one request, one ATOMIC ACKNOWLEDGE with the original value. */
static void one_atomic(struct fx *f, enum droce_wr_opcode op, uint64_t cmp_add, uint64_t swap,
		       uint64_t before, uint64_t after)
{
	struct pair *p = &f->p;
	uint64_t *remote = (uint64_t *)((uint8_t *)f->bmr->addr + 64);
	uint64_t *local = (uint64_t *)((uint8_t *)f->amr->addr + 128);
	unsigned mark = p->nrec, req[8], rsp[8], nreq, nrsp;
	struct droce_wc wc[2];

	*remote = before;
	*local = 0xDEADBEEFull;
	assert_int_equal(post_atomic(f->c.qp[SIDE_A], op, 900 + f->key, f->amr, 128,
				     (uint64_t)(uintptr_t)remote, f->bmr->rkey, cmp_add, swap), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_true(wc[0].wr_id == 900 + f->key);
	assert_int_equal(wc[0].opcode, op == DROCE_WR_ATOMIC_CMP_AND_SWP ? DROCE_WC_COMP_SWAP
							       : DROCE_WC_FETCH_ADD);
	pair_run(p, 1000000000ull);
	assert_true(*local == before);
	assert_true(*remote == after);

	nreq = rec_dir(p, mark, A_TO_B, req, 8);
	nrsp = rec_dir(p, mark, B_TO_A, rsp, 8);
	if (nreq != 1 || nrsp != 1) {
		rec_dump(p, mark);
		fail_msg("atomic: %u requests and %u responses, want 1 and 1", nreq, nrsp);
	}
	const struct pkt_rec *q = &p->rec[req[0]], *r = &p->rec[rsp[0]];
	assert_int_equal(q->opcode, op == DROCE_WR_ATOMIC_CMP_AND_SWP ? DROCE_OP_RC_COMPARE_SWAP
								  : DROCE_OP_RC_FETCH_ADD);
	assert_int_equal(q->psn, f->psn);
	assert_true(q->ackreq);
	assert_true(q->va == (uint64_t)(uintptr_t)remote);
	assert_int_equal(q->rkey, f->bmr->rkey);
	assert_true(q->swap_add == (op == DROCE_WR_ATOMIC_CMP_AND_SWP ? swap : cmp_add));
	if (op == DROCE_WR_ATOMIC_CMP_AND_SWP)
		assert_true(q->compare == cmp_add);
	f->msn++;
	assert_int_equal(r->opcode, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	assert_int_equal(r->psn, f->psn);
	assert_true(syn_is_ack(r->syndrome));
	assert_int_equal(r->msn, f->msn);
	assert_true(r->orig == before);
	f->psn = PSN(f->psn + 1);
	f->key++;
}

static void test_atomics(void **state)
{
	struct fx *f = *state;
	one_atomic(f, DROCE_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 100, 105);
	one_atomic(f, DROCE_WR_ATOMIC_FETCH_AND_ADD, UINT64_MAX, 0, 0, UINT64_MAX); /* wraps */
	one_atomic(f, DROCE_WR_ATOMIC_CMP_AND_SWP, 105, 7, 105, 7);             /* swaps */
	one_atomic(f, DROCE_WR_ATOMIC_CMP_AND_SWP, 1, 9, 7, 7);                 /* compare fails */
	/* a WRITE after the atomics continues the PSN sequence */
	one_msg(f, DROCE_WR_RDMA_WRITE, 10);
}

/* Inline data is copied at post time. */
static void test_inline(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint8_t data[48];
	uint8_t *b = f->bmr->addr;
	struct droce_sge sge = {.addr = (uint64_t)(uintptr_t)data, .length = sizeof(data), .lkey = 0};
	struct droce_send_wr wr, *bad = NULL;
	struct droce_wc wc[2];

	memset(b, GUARD, 256);
	fill_pattern(data, sizeof(data), 4242);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = DROCE_WR_RDMA_WRITE;
	wr.send_flags = DROCE_SEND_INLINE | DROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b;
	wr.wr.rdma.rkey = f->bmr->rkey;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), 0);
	memset(data, 0, sizeof(data)); /* the caller may reuse the buffer at once */
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(b, 48, 4242), -1);
	expect_guard(b, 48, 64);
}

/* Unsignaled WRs complete silently (11.4.2.1); a later signaled one completes. */
static void test_unsignaled(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint8_t *b = f->bmr->addr;
	struct droce_wc wc[4];

	fill_pattern(f->amr->addr, 300, 5);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 100,
				   (uint64_t)(uintptr_t)b, f->bmr->rkey, 0, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 100, 100,
				   (uint64_t)(uintptr_t)b + 100, f->bmr->rkey, 0, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 3, f->amr, 200, 100,
				   (uint64_t)(uintptr_t)b + 200, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_true(wc[0].wr_id == 3);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	pair_run(p, 1000000000ull);
	assert_int_equal(cq_drain(f->c.scq[SIDE_A], wc, 4), 0);
	assert_int_equal(check_pattern(b, 300, 5), -1);
	/* three messages, three request packets, PSNs in order */
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY), 3);
}

/* Gather from three SGEs into one SEND; scatter into two receive SGEs. */
static void test_sge(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint8_t *a = f->amr->addr, *b = f->bmr->addr;
	uint8_t want[3000];
	struct droce_sge ss[3] = {
		{(uint64_t)(uintptr_t)a + 10, 1000, f->amr->lkey},
		{(uint64_t)(uintptr_t)a + 5000, 1, f->amr->lkey},
		{(uint64_t)(uintptr_t)a + 9000, 1499, f->amr->lkey},
	};
	struct droce_sge rs[2] = {
		{(uint64_t)(uintptr_t)b + 100, 700, f->bmr->lkey},
		{(uint64_t)(uintptr_t)b + 20000, 2000, f->bmr->lkey},
	};
	struct droce_send_wr wr, *bad = NULL;
	struct droce_recv_wr rwr = {.wr_id = 55, .sg_list = rs, .num_sge = 2}, *rbad = NULL;
	struct droce_wc wc[2];

	fill_pattern(want, 2500, 31);
	memcpy(a + 10, want, 1000);
	memcpy(a + 5000, want + 1000, 1);
	memcpy(a + 9000, want + 1001, 1499);
	memset(b, GUARD, 30000);
	assert_int_equal(droce_post_recv(f->c.qp[SIDE_B], &rwr, &rbad), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.sg_list = ss;
	wr.num_sge = 3;
	wr.opcode = DROCE_WR_SEND;
	wr.send_flags = DROCE_SEND_SIGNALED;
	assert_int_equal(droce_post_send(f->c.qp[SIDE_A], &wr, &bad), 0);
	assert_int_equal(pair_wait(p, f->c.rcq[SIDE_B], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 2500);
	assert_memory_equal(b + 100, want, 700);
	assert_memory_equal(b + 20000, want + 700, 1800);
	expect_guard(b, 800, 64);
	expect_guard(b, 21800, 64);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, wc, 1000000000ull), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	/* 2500 bytes at MTU 1024: FIRST, MIDDLE, LAST */
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_FIRST), 1);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_MIDDLE), 1);
	assert_int_equal(rec_count(p, 0, A_TO_B, DROCE_OP_RC_SEND_LAST), 1);
}

/* Several messages posted at once complete in order (11.4.2.1). */
static void test_pipelined_in_order(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint8_t *b = f->bmr->addr;
	struct droce_wc wc[64];
	int got;

	for (unsigned i = 0; i < 32; i++) {
		fill_pattern((uint8_t *)f->amr->addr + i * 4096, 3000, 100 + i);
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], i % 3 == 2 ? DROCE_WR_RDMA_READ
							       : DROCE_WR_RDMA_WRITE,
					   i, f->amr, i * 4096, 3000,
					   (uint64_t)(uintptr_t)b + i * 4096, f->bmr->rkey,
					   DROCE_SEND_SIGNALED, 0), 0);
		if (i % 3 == 2)
			fill_pattern(b + i * 4096, 3000, 100 + i);
	}
	got = pair_wait(p, f->c.scq[SIDE_A], 32, wc, 1000000000ull);
	assert_int_equal(got, 32);
	for (int i = 0; i < 32; i++) {
		assert_true(wc[i].wr_id == (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		assert_int_equal(check_pattern(b + i * 4096, 3000, 100 + (uint64_t)i), -1);
		assert_int_equal(check_pattern((uint8_t *)f->amr->addr + i * 4096, 3000,
					       100 + (uint64_t)i), -1);
	}
	/* 22 WRITEs of 3 packets and 10 READs of 3 responses: 76 PSNs, each used once */
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 22 * 3 + 10);
	assert_int_equal(rec_count(p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST), 10);
}


/* SE (IBTA 9.2.3) on the last packet of a solicited SEND only. */
static void test_solicited(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	for (uint64_t i = 0; i < 2; i++)
		assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], i, f->bmr, i * 8192, 8192), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_SEND, 0, f->amr, 0, 2500, 0, 0,
				   DROCE_SEND_SIGNALED | DROCE_SEND_SOLICITED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 10, 0, 0,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 2, wc, 1000000000ull), 2);
	unsigned idx[8], n = rec_dir(p, 0, A_TO_B, idx, 8);
	assert_int_equal(n, 4);
	assert_false(p->rec[idx[0]].se);
	assert_false(p->rec[idx[1]].se);
	assert_true(p->rec[idx[2]].se);   /* SEND_LAST of the solicited SEND */
	assert_false(p->rec[idx[3]].se);  /* SEND_ONLY, not solicited */
}

/* Network headers: UDP to 4791 (A17.4.3), one source port per QP (A17.5.1.1: no reordering
 * across ECMP paths), the AV's DSCP and TTL, ECN-capable or not marked. */
static void test_headers(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_wc wc[4];

	fill_pattern(f->amr->addr, 5000, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 5000,
				   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 8192, 5000,
				   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 2, wc, 1000000000ull), 2);
	pair_run(p, 1000000000ull);
	uint16_t sport[2] = {0, 0};
	for (unsigned i = 0; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		assert_int_equal(r->dport, 4791);
		assert_int_equal(r->dscp, DROCE_DEFAULT_DSCP);
		assert_int_equal(r->ttl, DROCE_DEFAULT_TTL);
		assert_int_not_equal(r->ecn, 3); /* nobody marked CE here */
		if (!sport[r->dir])
			sport[r->dir] = r->sport;
		if (r->sport != sport[r->dir])
			fail_msg("QP of direction %u changed its UDP source port %04x -> %04x", r->dir,
				 sport[r->dir], r->sport);
	}
	assert_true(sport[0] != 0 && sport[1] != 0);
}

/* An explicit AV UDP source port is used as is. */
static void test_explicit_udp_sport(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct droce_wc wc;

	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.udp_sport = 0xC123;
	f->mtu = 1024;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, 4096, f->o.access, 0);
	f->bmr = pair_mr(&f->p, SIDE_B, 4096, f->o.access, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, 10,
				   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, &wc, 1000000000ull), 1);
	for (unsigned i = 0; i < f->p.nrec; i++)
		assert_int_equal(f->p.rec[i].sport, 0xC123);
	fx_teardown(f);
	(void)state;
}


/* sq_sig_all: every send WR completes, signaled or not. */
static void test_sq_sig_all(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct droce_wc wc[4];

	(void)state;
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.sq_sig_all = 1;
	f->mtu = 1024;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, 4096, f->o.access, 0);
	f->bmr = pair_mr(&f->p, SIDE_B, 4096, f->o.access, 0);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, f->amr, 0, 10,
					   (uint64_t)(uintptr_t)f->bmr->addr, f->bmr->rkey, 0, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 3, wc, 1000000000ull), 3);
	for (int i = 0; i < 3; i++) {
		assert_true(wc[i].wr_id == (uint64_t)i);
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
	}
	fx_teardown(f);
}


/* Per-QP counters agree with the wire: packets each way, ACKs, no retransmits. */
static void test_counters_match_wire(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;

	one_msg(f, DROCE_WR_RDMA_WRITE, 5000);
	one_msg(f, DROCE_WR_RDMA_READ, 3000);
	one_msg(f, DROCE_WR_SEND, 100);
	struct droce_qp_stats sa = qp_stats(f->c.qp[SIDE_A]), sb = qp_stats(f->c.qp[SIDE_B]);
	unsigned ab = rec_count(p, 0, A_TO_B, -1), ba = rec_count(p, 0, B_TO_A, -1);
	unsigned acks = rec_count(p, 0, B_TO_A, DROCE_OP_RC_ACKNOWLEDGE);
	assert_int_equal(sa.tx_pkts, ab);
	assert_int_equal(sb.rx_pkts, ab);
	assert_int_equal(sb.tx_pkts, ba);
	assert_int_equal(sa.rx_pkts, ba);
	assert_int_equal(sb.acks_sent, acks);
	assert_int_equal(sa.acks_rcvd, acks);
	/* bytes each way agree between the ends and cover at least the payload moved */
	assert_int_equal(sa.tx_bytes, sb.rx_bytes);
	assert_int_equal(sb.tx_bytes, sa.rx_bytes);
	assert_true(sa.tx_bytes >= 5100);
	assert_true(sb.tx_bytes >= 3000);
	assert_int_equal(sa.retrans_pkts, 0);
	assert_int_equal(sb.dup_reqs, 0);
	assert_int_equal(sb.out_of_seq, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_send_imm, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_write_imm, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup_256, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup_256, teardown),
		cmocka_unit_test_setup_teardown(test_send, setup_512, teardown),
		cmocka_unit_test_setup_teardown(test_write_imm, setup_512, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup_2048, teardown),
		cmocka_unit_test_setup_teardown(test_send_imm, setup_2048, teardown),
		cmocka_unit_test_setup_teardown(test_send, setup_4096, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup_4096, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup_4096, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_sequence, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_inline, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_unsignaled, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_sge, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_in_order, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_sequence, setup_v6, teardown),
		cmocka_unit_test_setup_teardown(test_solicited, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_headers, setup_1024, teardown),
		cmocka_unit_test(test_explicit_udp_sport),
		cmocka_unit_test(test_sq_sig_all),
		cmocka_unit_test_setup_teardown(test_counters_match_wire, setup_1024, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_v6, teardown),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
