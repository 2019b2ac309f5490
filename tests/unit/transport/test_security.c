/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile network and a careless application, over the in-memory link on
 * the virtual clock (docs/security.md lists each defence with its test):
 *   - deregistering a memory region stops a message already under way: an
 *     RDMA WRITE's MIDDLE/LAST packets after the R_Key went away are NAKed
 *     remote access (IBTA 9.7.5.2.4, 9.7.4.1.x), a READ's response stream
 *     stops with the same NAK, a local SGE deregistered under a posted WQE
 *     completes it with LOC_PROT_ERR (10.7.3.1), a receive buffer
 *     deregistered under a SEND likewise (NAK remote operational error);
 *     run under AddressSanitizer these also prove no byte of freed memory is
 *     read or written;
 *   - protection domains (10.6.3, 10.2.3): an R_Key or L_Key of a region in
 *     another PD than the QP's is refused; a PD in use cannot be freed;
 *   - forged WRITEs with guessed R_Keys and PSNs land nowhere and leave the
 *     connection working;
 *   - a peer that vanishes: outstanding work completes with RETRY_EXC_ERR in
 *     bounded (virtual) time and the QP goes to ERR, whether the link drops
 *     the frames or refuses them (a memif whose peer died);
 *   - CNPs are taken only from the QP's peer, with its P_Key (A17.9.3).
 */
#include <errno.h>
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

#define KB 1024u
#define MS 1000000ull
#define SEC (1000ull * MS)

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	uint32_t E;        /* B's expected PSN */
	uint32_t bqpn;
	uint8_t payload[4096];
};

static struct fx *fx_new(enum droce_mtu mtu, uint32_t depth)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct pair_opts po = {{0, 0}, {NULL, NULL}, depth, 4, NULL};
	pair_init(&f->p, &po);
	conn_opts_default(&f->o);
	f->o.mtu = mtu;
	f->o.timeout = 10; /* 4.2 ms */
	pair_connect(&f->p, &f->c, &f->o);
	f->E = f->o.sq_psn[SIDE_A];
	f->bqpn = f->c.qpn[SIDE_B];
	f->p.allow_bad_frames = true; /* injected frames */
	fill_pattern(f->payload, sizeof(f->payload), 7);
	return f;
}

static int setup(void **state) { *state = fx_new(DROCE_MTU_1024, 0); return 0; }
/* 256-byte packets stay under the fused RX placement's threshold: the
 * responder's own copy is then the one that must stop. */
static int setup_256(void **state) { *state = fx_new(DROCE_MTU_256, 0); return 0; }

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

/* A region on heap memory of its own, so a test can free it (ASan then sees
 * any later access) while pair_fini() knows nothing of it. */
static struct droce_mr *raw_mr(struct droce_ctx *ctx, size_t len, uint8_t fill, unsigned access)
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	memset(b, fill, len);
	struct droce_mr *m = droce_reg_mr(ctx, b, len, access);
	assert_non_null(m);
	return m;
}

static void raw_mr_free(struct droce_mr *m)
{
	void *b = m->addr;
	assert_int_equal(droce_dereg_mr(m), 0);
	free(b);
}

static void inject(struct fx *f, uint8_t opcode, uint32_t psn, uint32_t plen, uint64_t va,
		   uint32_t rkey, uint32_t dma_len)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_A, &h, opcode, f->bqpn, psn);
	h.payload_len = plen;
	h.ext.reth.va = va;
	h.ext.reth.rkey = rkey;
	h.ext.reth.dma_len = dma_len;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
}

static unsigned answers(struct fx *f, unsigned mark, unsigned *idx, unsigned max)
{
	pair_run(&f->p, 100 * MS);
	return rec_dir(&f->p, mark, B_TO_A, idx, max);
}

static void expect_one_nak(struct fx *f, unsigned mark, unsigned code, uint32_t psn)
{
	unsigned idx[8], n = answers(f, mark, idx, 8);
	if (n != 1 || f->p.rec[idx[0]].opcode != DROCE_OP_RC_ACKNOWLEDGE ||
	    !syn_is_nak(f->p.rec[idx[0]].syndrome, code) || f->p.rec[idx[0]].psn != psn) {
		rec_dump(&f->p, mark);
		fail_msg("want exactly one NAK code %u for PSN %06x", code, psn);
	}
}

static void expect_fill(const uint8_t *b, size_t from, size_t to, uint8_t fill)
{
	for (size_t i = from; i < to; i++)
		if (b[i] != fill)
			fail_msg("byte %zu was written (%02x) after deregistration", i, b[i]);
}

/* -------------------------------------------- deregistration in flight -- */

/* WRITE FIRST placed, the region deregistered, then MIDDLE: NAK remote
 * access for the MIDDLE's PSN, nothing written past the FIRST's bytes, the
 * responder in ERR (9.9.3 class C). The memory stays allocated here, so the
 * bytes can be checked without a sanitizer. */
static void write_middle_after_dereg(struct fx *f, bool release)
{
	struct droce_ctx *b = f->p.ctx[SIDE_B];
	uint32_t mtu = droce_mtu_bytes(f->o.mtu);
	struct droce_mr *m = raw_mr(b, 4 * mtu, 0xCC, f->o.access);
	uint8_t *buf = m->addr;
	uint32_t rkey = m->rkey;
	uint64_t va = (uintptr_t)buf;

	inject(f, DROCE_OP_RC_RDMA_WRITE_FIRST, f->E, mtu, va, rkey, 3 * mtu);
	pair_run(&f->p, 10 * MS);
	assert_memory_equal(buf, f->payload, mtu);
	if (release) {
		raw_mr_free(m); /* under ASan, any later byte written is a report */
		buf = NULL;
	} else {
		assert_int_equal(droce_dereg_mr(m), 0);
	}
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->E + 1, mtu, 0, 0, 0);
	inject(f, DROCE_OP_RC_RDMA_WRITE_LAST, f->E + 2, mtu, 0, 0, 0);
	expect_one_nak(f, mark, DROCE_NAK_REMOTE_ACCESS, PSN(f->E + 1));
	assert_int_equal(qp_state(f->c.qp[SIDE_B]), DROCE_QPS_ERR);
	if (buf) {
		expect_fill(buf, mtu, 4 * mtu, 0xCC);
		free(buf);
	}
}

static void test_dereg_stops_write(void **state) { write_middle_after_dereg(*state, false); }
static void test_dereg_stops_write_freed(void **state) { write_middle_after_dereg(*state, true); }

/* A re-registration of the same memory is a new region: a message begun
 * under the old R_Key does not continue under the new one. */
static void test_rereg_does_not_resume_write(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *b = f->p.ctx[SIDE_B];
	uint32_t mtu = droce_mtu_bytes(f->o.mtu);
	struct droce_mr *m = raw_mr(b, 4 * mtu, 0xCC, f->o.access);
	uint8_t *buf = m->addr;
	inject(f, DROCE_OP_RC_RDMA_WRITE_FIRST, f->E, mtu, (uintptr_t)buf, m->rkey, 3 * mtu);
	pair_run(&f->p, 10 * MS);
	assert_int_equal(droce_dereg_mr(m), 0);
	/* The one free slot: a new registration takes it at once. */
	struct droce_mr *n = droce_reg_mr(b, buf, 4 * mtu, f->o.access);
	assert_non_null(n);
	unsigned mark = f->p.nrec;
	inject(f, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->E + 1, mtu, 0, 0, 0);
	expect_one_nak(f, mark, DROCE_NAK_REMOTE_ACCESS, PSN(f->E + 1));
	expect_fill(buf, mtu, 4 * mtu, 0xCC);
	assert_int_equal(droce_dereg_mr(n), 0);
	free(buf);
}

/* A 1 MB region on each side (A's filled 0xAA, B's 0xBB) and one signaled
 * @p op of all of it from A to B. */
#define BIG (1024 * KB)
static void big_op(struct fx *f, enum droce_wr_opcode op, struct droce_mr **am, struct droce_mr **bm)
{
	struct pair *p = &f->p;
	*am = raw_mr(p->ctx[SIDE_A], BIG, 0xAA, f->o.access);
	*bm = raw_mr(p->ctx[SIDE_B], BIG, 0xBB, f->o.access);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], op, 1, *am, 0, BIG, (uintptr_t)(*bm)->addr,
				   (*bm)->rkey, DROCE_SEND_SIGNALED, 0), 0);
}

/* A READ whose responses are being sent when the region goes: the stream
 * stops (no byte of the region read after deregistration) and the
 * requester completes the READ with REM_ACCESS_ERR. */
static void test_dereg_stops_read_responses(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	const uint32_t len = BIG;
	struct droce_mr *am, *bm;
	struct droce_wc wc;

	big_op(f, DROCE_WR_RDMA_READ, &am, &bm);
	uint8_t *bbuf = bm->addr;
	unsigned guard = 0;
	while (rec_count(p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE) == 0 && guard++ < 100)
		pair_step(p);
	assert_true(guard < 100);
	unsigned before = rec_count(p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
	assert_int_equal(droce_dereg_mr(bm), 0);
	free(bbuf); /* under ASan, a response sent from it is a report */
	unsigned mark = p->nrec;
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10 * SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_REM_ACCESS_ERR);
	assert_int_equal(rec_count(p, mark, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE), 0);
	assert_int_equal(rec_count(p, mark, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_LAST), 0);
	assert_true(before < len / KB);
	assert_true(rec_naks(p, mark, B_TO_A, DROCE_NAK_REMOTE_ACCESS) >= 1);
	raw_mr_free(am);
}

/* The local SGEs of a WRITE deregistered while it is being sent: no packet
 * of it leaves after that, it completes with LOC_PROT_ERR and the QP goes
 * to ERR (10.7.3.1: a local protection error is a QP error). */
static void test_dereg_local_write_source(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_mr *am, *bm;
	struct droce_wc wc;

	big_op(f, DROCE_WR_RDMA_WRITE, &am, &bm);
	uint8_t *abuf = am->addr;
	pair_step(p);
	assert_true(rec_count(p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_MIDDLE) > 0);
	assert_int_equal(droce_dereg_mr(am), 0);
	free(abuf); /* under ASan, a packet built from it is a report */
	unsigned mark = p->nrec;
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10 * SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	assert_int_equal(rec_count(p, mark, A_TO_B, DROCE_OP_RC_RDMA_WRITE_MIDDLE), 0);
	assert_int_equal(rec_count(p, mark, A_TO_B, DROCE_OP_RC_RDMA_WRITE_LAST), 0);
	raw_mr_free(bm);
}

/* The local SGEs of a READ deregistered while its responses arrive: no
 * response is placed after that; LOC_PROT_ERR. */
static void test_dereg_local_read_target(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	const uint32_t len = BIG;
	struct droce_mr *am, *bm;
	uint8_t *snap = malloc(len);
	struct droce_wc wc;

	assert_non_null(snap);
	big_op(f, DROCE_WR_RDMA_READ, &am, &bm);
	uint8_t *abuf = am->addr;
	unsigned guard = 0;
	while (abuf[0] == 0xAA && guard++ < 100)
		pair_step(p);
	assert_true(guard < 100);
	assert_int_equal(droce_dereg_mr(am), 0);
	memcpy(snap, abuf, len);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, 10 * SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	assert_memory_equal(snap, abuf, len);
	free(snap);
	free(abuf);
	raw_mr_free(bm);
}

/* A receive buffer deregistered between a SEND's FIRST and MIDDLE: the
 * receive completes with LOC_PROT_ERR, the requester gets NAK remote
 * operational error (9.7.5.2.5), no byte past the FIRST's is written. */
static void test_dereg_recv_buffer(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint32_t mtu = droce_mtu_bytes(f->o.mtu);
	struct droce_mr *m = raw_mr(p->ctx[SIDE_B], 4 * mtu, 0xCC, f->o.access);
	uint8_t *buf = m->addr;
	struct droce_wc wc;

	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 5, m, 0, 4 * mtu), 0);
	inject(f, DROCE_OP_RC_SEND_FIRST, f->E, mtu, 0, 0, 0);
	pair_run(p, 10 * MS);
	assert_memory_equal(buf, f->payload, mtu);
	assert_int_equal(droce_dereg_mr(m), 0);
	unsigned mark = p->nrec;
	inject(f, DROCE_OP_RC_SEND_MIDDLE, f->E + 1, mtu, 0, 0, 0);
	expect_one_nak(f, mark, DROCE_NAK_REMOTE_OP, PSN(f->E + 1));
	assert_int_equal(cq_drain(f->c.rcq[SIDE_B], &wc, 1), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	expect_fill(buf, mtu, 4 * mtu, 0xCC);
	free(buf);
}

/* ------------------------------------------------- protection domains -- */

/* B's QP is in its own PD; a region of another PD of the same context is
 * out of its reach whatever the R_Key (10.6.3.2): NAK remote access. */
static void test_pd_rkey_other_pd(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *b = f->p.ctx[SIDE_B];
	struct droce_pd *other = droce_alloc_pd(b);
	assert_non_null(other);
	uint8_t *buf = malloc(4096);
	memset(buf, 0xCC, 4096);
	struct droce_mr *m = droce_reg_mr_pd(other, buf, 4096, f->o.access);
	assert_non_null(m);
	assert_ptr_equal(m->pd, other);
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 64, (uintptr_t)buf, m->rkey, 64);
	expect_one_nak(f, 0, DROCE_NAK_REMOTE_ACCESS, f->E);
	expect_fill(buf, 0, 4096, 0xCC);
	assert_int_equal(droce_dealloc_pd(other), -EBUSY);
	assert_int_equal(droce_dereg_mr(m), 0);
	assert_int_equal(droce_dealloc_pd(other), 0);
	free(buf);
}

/* The same QP, a region of its own PD: accepted (the check is not a
 * blanket refusal). */
static void test_pd_rkey_same_pd(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *b = f->p.ctx[SIDE_B];
	uint8_t *buf = malloc(4096);
	memset(buf, 0xCC, 4096);
	/* droce_reg_mr: the context's own PD, the one the pair's QPs use. */
	struct droce_mr *m = droce_reg_mr(b, buf, 4096, f->o.access);
	assert_non_null(m);
	unsigned idx[8];
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 64, (uintptr_t)buf, m->rkey, 64);
	unsigned n = answers(f, 0, idx, 8);
	assert_int_equal(n, 1);
	assert_true(syn_is_ack(f->p.rec[idx[0]].syndrome));
	assert_memory_equal(buf, f->payload, 64);
	assert_int_equal(droce_dereg_mr(m), 0);
	free(buf);
}

/* An L_Key of a region in another PD than the QP's: LOC_PROT_ERR (10.6.3.1). */
static void test_pd_lkey_other_pd(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_pd *other = droce_alloc_pd(p->ctx[SIDE_A]);
	assert_non_null(other);
	uint8_t *abuf = calloc(1, 4096);
	struct droce_mr *am = droce_reg_mr_pd(other, abuf, 4096, f->o.access);
	struct droce_mr *bm = pair_mr(p, SIDE_B, 4096, f->o.access, 0xBB);
	struct droce_wc wc;
	assert_non_null(am);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, am, 0, 64,
				   (uintptr_t)bm->addr, bm->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_LOC_PROT_ERR);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 0);
	assert_int_equal(droce_dereg_mr(am), 0);
	assert_int_equal(droce_dealloc_pd(other), 0);
	free(abuf);
}

/* rdma-core's ibv_dealloc_pd: EBUSY while a QP, MR or AH uses the PD. */
static void test_pd_dealloc_busy(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *a = f->p.ctx[SIDE_A];
	struct droce_pd *pd = droce_alloc_pd(a);
	assert_non_null(pd);
	struct droce_cq *cq = droce_create_cq(a, 16);
	struct droce_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .pd = pd};
	struct droce_qp *qp = droce_create_qp(a, &ia);
	assert_non_null(qp);
	assert_int_equal(droce_dealloc_pd(pd), -EBUSY);
	assert_int_equal(droce_destroy_qp(qp), 0);
	struct droce_ah_attr aa = {.ip_version = 4};
	struct droce_ah *ah = droce_create_ah_pd(pd, &aa);
	assert_non_null(ah);
	assert_int_equal(droce_dealloc_pd(pd), -EBUSY);
	assert_int_equal(droce_destroy_ah(ah), 0);
	uint8_t buf[64];
	struct droce_mr *m = droce_reg_mr_pd(pd, buf, sizeof(buf), 0);
	assert_non_null(m);
	assert_int_equal(droce_dealloc_pd(pd), -EBUSY);
	assert_int_equal(droce_dereg_mr(m), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);
	assert_int_equal(droce_dealloc_pd(NULL), -EINVAL);
	/* A QP of another context's PD is refused. */
	struct droce_pd *bpd = droce_alloc_pd(f->p.ctx[SIDE_B]);
	ia.pd = bpd;
	errno = 0;
	assert_null(droce_create_qp(a, &ia));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(droce_dealloc_pd(bpd), 0);
	assert_int_equal(droce_destroy_cq(cq), 0);
}

/* ------------------------------------------------ forged packets -- */

/* An off-path attacker who knows B's QPN but not the PSN, sending WRITEs
 * with guessed R_Keys: from an address that is not A's (all dropped,
 * SRC_IP), and spoofing A's address with PSNs it cannot know (ahead: one
 * sequence NAK per gap, the rest dropped; behind: duplicates, re-ACKed,
 * never executed). None lands, B's QP stays in RTS, and A's own transfer
 * afterwards completes with its data intact. (One that guessed the PSN
 * too, with a wrong R_Key, would move B's QP to ERR: 9.9.3 class C; the
 * PSN is the CM's secret, docs/security.md.) */
static void test_forged_packets_do_not_land(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_mr *bm = pair_mr(p, SIDE_B, 64 * KB, f->o.access, 0xBB);
	struct droce_mr *am = pair_mr(p, SIDE_A, 64 * KB, f->o.access, 0xAA);
	uint64_t rnd = 0x5eedULL;
	uint64_t drops0 = ctx_drops(p, SIDE_B, "SRC_IP");
	for (unsigned i = 0; i < 3 * 256; i++) {
		rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
		uint32_t rkey = (uint32_t)(rnd >> 32);
		struct droce_hdrs h;
		uint32_t psn = f->E;
		if (i >= 256)
			psn = PSN(f->E + (i < 512 ? 1 : -1) * (int32_t)(1u << 20) + (int32_t)(rnd & 0xFFFF));
		pair_hdrs(p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, psn);
		if (i < 256)
			h.net.src_ip[3] = 66; /* not A */
		h.payload_len = 64;
		h.ext.reth.va = (uintptr_t)bm->addr + (rnd & 0x3FC0);
		h.ext.reth.rkey = rkey;
		h.ext.reth.dma_len = 64;
		assert_int_equal(pair_inject(p, SIDE_A, &h, f->payload), 0);
		if ((i & 63) == 63)
			pair_run(p, MS);
	}
	pair_run(p, 10 * MS);
	assert_int_equal(ctx_drops(p, SIDE_B, "SRC_IP") - drops0, 256);
	expect_fill(bm->addr, 0, 64 * KB, 0xBB);
	assert_int_equal(qp_state(f->c.qp[SIDE_B]), DROCE_QPS_RTS);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).nak_sent[DROCE_NAK_REMOTE_ACCESS], 0);
	/* A's own WRITE still goes through, byte for byte. */
	struct droce_wc wc;
	fill_pattern(am->addr, 64 * KB, 11);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 9, am, 0, 64 * KB,
				   (uintptr_t)bm->addr, bm->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(pair_wait(p, f->c.scq[SIDE_A], 1, &wc, SEC), 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(bm->addr, 64 * KB, 11), -1);
}

/* ---------------------------------------------------- peer vanishes -- */

/* B stops polling for good. A's WRITEs go unanswered: each ACK timeout is
 * a retry, and after retry_cnt of them the WQE completes RETRY_EXC_ERR, the
 * rest are flushed, the QP is in ERR, all within (retry_cnt + 1) x 4 ACK
 * timeouts (9.7.6.1.3 allows up to 4x the nominal one). */
static void peer_vanishes(struct fx *f)
{
	struct pair *p = &f->p;
	struct droce_mr *am = pair_mr(p, SIDE_A, 256 * KB, f->o.access, 0xAA);
	struct droce_wc wc[8];
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, am, i * 64 * KB,
					   64 * KB, 0x1000, 0x1234, DROCE_SEND_SIGNALED, 0), 0);
	uint64_t t0 = p->now;
	uint64_t bound = (uint64_t)(f->o.retry_cnt + 1) * 4 * ack_timeout_ns(f->o.timeout);
	int got = 0;
	for (unsigned it = 0; it < 100000 && got < 4 && p->now - t0 <= bound; it++) {
		droce_ctx_poll(p->ctx[SIDE_A], p->now);
		got += droce_poll_cq(f->c.scq[SIDE_A], 8, wc + got);
		uint64_t d = droce_ctx_next_deadline(p->ctx[SIDE_A]);
		if (d != UINT64_MAX && d > p->now)
			p->now = d;
	}
	if (got < 1)
		fail_msg("no completion %llu ns after the peer vanished (bound %llu)",
			 (unsigned long long)(p->now - t0), (unsigned long long)bound);
	assert_int_equal(wc[0].status, DROCE_WC_RETRY_EXC_ERR);
	assert_int_equal(got, 4);
	for (int i = 1; i < got; i++)
		assert_int_equal(wc[i].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
}

/* The frames still leave (a switch drops them). */
static void test_peer_vanishes_frames_dropped(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, -1, -1, 0);
	peer_vanishes(f);
}

/* The link takes nothing more (a memif whose peer died: its ring is full
 * and stays full): every transmission is refused. */
static int setup_shallow(void **state) { *state = fx_new(DROCE_MTU_1024, 8); return 0; }
static void test_peer_vanishes_link_refuses(void **state)
{
	peer_vanishes(*state);
}

/* ----------------------------------------------------------------- CNP -- */

static void inject_cnp(struct fx *f, int from_side_ip, uint16_t pkey)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_CNP, f->c.qpn[SIDE_A], 0);
	h.bth.pkey = pkey;
	h.bth.ack_req = false;
	if (from_side_ip != SIDE_B) {
		h.net.src_ip[3] = 99; /* an address that is not A's peer */
	}
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, NULL), 0);
	pair_run(&f->p, MS);
}

/* A17.9.3: a CNP slows the QP it names; only its peer may send one, with
 * the QP's P_Key (10.9.3), as every other packet for the QP. */
static void test_cnp_checked(void **state)
{
	struct fx *f = *state;
	struct droce_qp *a = f->c.qp[SIDE_A];
	inject_cnp(f, 3, DROCE_DEFAULT_PKEY);
	assert_int_equal(qp_stats(a).cnp_rcvd, 0);
	inject_cnp(f, SIDE_B, 0x1234);
	assert_int_equal(qp_stats(a).cnp_rcvd, 0);
	inject_cnp(f, SIDE_B, DROCE_DEFAULT_PKEY);
	assert_int_equal(qp_stats(a).cnp_rcvd, 1);
}

/* A QPN is the table index in its low bits and a random tag above them
 * (core/qp.c): a frame to the right index with the wrong tag, as from a
 * host that guessed the index or a late packet for a QP destroyed before,
 * finds no QP; it lands nowhere and is counted. */
static void test_qpn_tag_checked(void **state)
{
	struct fx *f = *state;
	struct droce_ctx *b = f->p.ctx[SIDE_B];
	uint8_t *buf = malloc(4096);
	memset(buf, 0xCC, 4096);
	struct droce_mr *m = droce_reg_mr(b, buf, 4096, f->o.access);
	assert_non_null(m);
	uint32_t real = f->bqpn;
	/* 1024 QPs: the index is the low 11 bits; flip one bit of the tag */
	f->bqpn = real ^ (1u << 20);
	uint64_t before = ctx_drops(&f->p, SIDE_B, "UNKNOWN_QPN");
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 64, (uintptr_t)buf, m->rkey, 64);
	unsigned idx[8];
	assert_int_equal(answers(f, 0, idx, 8), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "UNKNOWN_QPN"), before + 1);
	expect_fill(buf, 0, 4096, 0xCC);
	/* the same frame to the QP's own number lands */
	f->bqpn = real;
	inject(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 64, (uintptr_t)buf, m->rkey, 64);
	assert_int_equal(answers(f, 0, idx, 8), 1);
	assert_memory_equal(buf, f->payload, 64);
	assert_int_equal(droce_dereg_mr(m), 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dereg_stops_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_stops_write_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_stops_write_freed, setup_256, teardown),
		cmocka_unit_test_setup_teardown(test_rereg_does_not_resume_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_stops_read_responses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_local_write_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_local_read_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_recv_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_rkey_other_pd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_rkey_same_pd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_lkey_other_pd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pd_dealloc_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_packets_do_not_land, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_vanishes_frames_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_vanishes_link_refuses, setup_shallow, teardown),
		cmocka_unit_test_setup_teardown(test_cnp_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qpn_tag_checked, setup, teardown),
	};
	return droce_test_run("transport_security", tests, sizeof(tests) / sizeof(tests[0]));
}
