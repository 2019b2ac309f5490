/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Selective repeat (transport/sr.h, docs/transport.md): two droce QPs that
 * both chose DROCE_TRANSPORT_SR, on the virtual-clock bed, under drops and
 * reordering:
 *   - one lost packet of a long WRITE is the only one resent, after a SACK,
 *     with no timeout; the packets behind it were placed on arrival;
 *   - every WRITE packet is a WRITE_ONLY with its own RETH, and the SACK
 *     rides behind the AETH of a standard ACK;
 *   - seeded random drops and reordering on both directions with WRITE,
 *     WRITE with immediate, SEND, READ and atomics: every byte placed, every
 *     WQE completed once and in order, resends counted;
 *   - a QP that did not agree (GBN) sends IBTA's FIRST/MIDDLE/LAST and a
 *     sequence NAK, and drops an ACK that carries a SACK block;
 *   - a resend round ends at the last PSN sent (the next loss is repaired
 *     on its SACK);
 *   - a SACK is not trusted: bits past what was sent are refused and
 *     counted, and an ACK timeout forgets the scoreboard (a peer that SACKed
 *     what it did not keep costs a timeout, not the QP);
 *   - droce_qp_set_transport()'s checks and the mode names.
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

#include "pair.h"
#include "wire/opcode.h"
#include "wire/sack.h"

#define BUF (1u << 20)
#define SEC 1000000000ull

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint8_t *a, *b;
	uint32_t P;
};

static void fx_init(struct fx *f, int mode, const char *imp_ab, const char *imp_ba)
{
	struct pair_opts po = {.seed = {11, 12}, .impair = {imp_ab, imp_ba}};
	pair_init(&f->p, &po);
	conn_opts_default(&f->o);
	f->o.timeout = 10;
	f->o.max_send_wr = 256;
	f->o.max_recv_wr = 256;
	f->o.cq_depth = 1024;
	conn_create(&f->p, &f->c, &f->o);
	for (int s = 0; s < 2; s++)
		assert_int_equal(droce_qp_set_transport(f->c.qp[s], mode), 0);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(conn_modify(&f->p, &f->c, s, DROCE_QPS_INIT, &f->o), 0);
		assert_int_equal(conn_modify(&f->p, &f->c, s, DROCE_QPS_RTR, &f->o), 0);
		assert_int_equal(conn_modify(&f->p, &f->c, s, DROCE_QPS_RTS, &f->o), 0);
	}
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->a = f->amr->addr;
	f->b = f->bmr->addr;
	f->P = f->o.sq_psn[SIDE_A];
}

static void wait_ok(struct fx *f, struct droce_cq *cq, uint64_t wr_id, struct droce_wc *out)
{
	struct droce_wc wc;
	if (pair_wait(&f->p, cq, 1, &wc, 20 * SEC) != 1) {
		rec_dump(&f->p, 0);
		fail_msg("no completion for wr_id %llu", (unsigned long long)wr_id);
	}
	if (wc.status != DROCE_WC_SUCCESS || wc.wr_id != wr_id)
		fail_msg("wr_id %llu status %s, want wr_id %llu SUCCESS", (unsigned long long)wc.wr_id,
			 droce_wc_status_str(wc.status), (unsigned long long)wr_id);
	if (out)
		*out = wc;
}

/* One lost packet in the middle of a 16-packet WRITE: SR resends it alone,
 * on a SACK, before any timeout; go-back-N (the same drop) resends it and
 * everything after it. */
static void lost_middle(int mode, unsigned *resent, unsigned *sacks, uint64_t *timeouts)
{
	struct fx f;
	fx_init(&f, mode, NULL, NULL);
	uint32_t len = 16 * 1024;
	fill_pattern(f.a, len, 7);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + 5), 1);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, len,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	assert_int_equal(check_pattern(f.b, len, 7), -1);
	*resent = 0;
	for (unsigned k = 0; k < 16; k++) {
		unsigned n = rec_psn_count(&f.p, 0, A_TO_B, PSN(f.P + k));
		if (n > 1)
			(*resent)++;
	}
	*sacks = 0;
	for (unsigned i = 0; i < f.p.nrec; i++)
		if (f.p.rec[i].dir == B_TO_A && f.p.rec[i].opcode == DROCE_OP_RC_ACKNOWLEDGE &&
		    f.p.rec[i].payload_len == DROCE_SACK_LEN)
			(*sacks)++;
	if (mode != DROCE_TRANSPORT_GBN) {
		/* every WRITE packet is self-describing */
		assert_int_equal(rec_count(&f.p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_FIRST), 0);
		assert_int_equal(rec_count(&f.p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_MIDDLE), 0);
		assert_int_equal(rec_count(&f.p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_LAST), 0);
		assert_int_equal(rec_naks(&f.p, 0, B_TO_A, 0), 0);
		struct droce_qp_stats sb = qp_stats(f.c.qp[SIDE_B]);
		assert_true(sb.sr_ooo_placed >= 10);
	} else {
		assert_int_equal(rec_count(&f.p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_FIRST), 1);
		assert_int_equal(rec_naks(&f.p, 0, B_TO_A, 0), 1); /* PSN sequence error */
	}
	struct droce_qp_stats sa = qp_stats(f.c.qp[SIDE_A]);
	*timeouts = sa.retrans_timeout;
	pair_fini(&f.p);
}

static void test_sr_resends_only_the_lost(void **state)
{
	(void)state;
	unsigned resent, sacks;
	uint64_t to;
	lost_middle(DROCE_TRANSPORT_SR, &resent, &sacks, &to);
	assert_int_equal(resent, 1);
	assert_true(sacks >= 1);
	assert_int_equal(to, 0);
	lost_middle(DROCE_TRANSPORT_GBN, &resent, &sacks, &to);
	assert_int_equal(resent, 11); /* PSNs 5..15 again */
	assert_int_equal(sacks, 0);
}

/* Reordering alone (a packet held behind three others) resends nothing. */
static void test_sr_reorder_no_resend(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	uint32_t len = 16 * 1024;
	fill_pattern(f.a, len, 9);
	pair_hold(&f.p, A_TO_B, -1, PSN(f.P + 3), 2);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, len,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	assert_int_equal(check_pattern(f.b, len, 9), -1);
	struct droce_qp_stats sa = qp_stats(f.c.qp[SIDE_A]), sb = qp_stats(f.c.qp[SIDE_B]);
	assert_int_equal(sa.retrans_pkts, 0);
	assert_true(sb.sr_ooo_placed >= 2);
	pair_fini(&f.p);
}

/* Random loss and reordering both ways, every operation: all bytes, every
 * completion once and in order. */
static void mixed_run(int mode, const char *imp)
{
	struct fx f;
	fx_init(&f, mode, imp, imp);
	struct droce_qp *qa = f.c.qp[SIDE_A], *qb = f.c.qp[SIDE_B];
	uint64_t rb = (uint64_t)(uintptr_t)f.b;
	enum { N = 120 };
	uint32_t off = 0, lens[N], offs[N];
	unsigned nrecv = 0;
	fill_pattern(f.a, BUF, 3);
	for (unsigned i = 0; i < N; i++) {
		lens[i] = 1 + (i * 2654435761u) % 6000u;
		offs[i] = off;
		off += (lens[i] + 63) & ~63u;
		if (i % 5 == 1 || i % 5 == 3)
			assert_int_equal(post_recv_buf(qb, 1000 + i, f.bmr, offs[i], lens[i]), 0);
	}
	assert_true(off < BUF / 2);
	for (unsigned i = 0; i < N; i++) {
		int rc;
		switch (i % 5) {
		case 0:
			rc = post_rdma(qa, DROCE_WR_RDMA_WRITE, i, f.amr, offs[i], lens[i], rb + offs[i],
				       f.bmr->rkey, DROCE_SEND_SIGNALED, 0);
			break;
		case 1:
			rc = post_send_msg(qa, DROCE_WR_SEND, i, f.amr, offs[i], lens[i], DROCE_SEND_SIGNALED, 0);
			break;
		case 2:
			/* READ back into the top half what B holds (0xBB) */
			rc = post_rdma(qa, DROCE_WR_RDMA_READ, i, f.amr, BUF / 2 + offs[i], lens[i],
				       rb + BUF / 2 + offs[i], f.bmr->rkey, DROCE_SEND_SIGNALED, 0);
			break;
		case 3:
			rc = post_rdma(qa, DROCE_WR_RDMA_WRITE_WITH_IMM, i, f.amr, offs[i], lens[i],
				       rb + offs[i], f.bmr->rkey, DROCE_SEND_SIGNALED, 0x1000 + i);
			break;
		default:
			rc = post_atomic(qa, DROCE_WR_ATOMIC_FETCH_AND_ADD, i, f.amr, BUF - 64, rb + BUF - 64,
					 f.bmr->rkey, 1, 0);
			break;
		}
		assert_int_equal(rc, 0);
	}
	struct droce_wc wc[N];
	int got = pair_wait(&f.p, f.c.scq[SIDE_A], N, wc, 60 * SEC);
	if (got != N)
		fail_msg("%d of %d send completions", got, N);
	for (unsigned i = 0; i < N; i++) {
		if (wc[i].status != DROCE_WC_SUCCESS || wc[i].wr_id != i)
			fail_msg("completion %u: wr_id %llu %s", i, (unsigned long long)wc[i].wr_id,
				 droce_wc_status_str(wc[i].status));
	}
	struct droce_wc rw[N];
	int rgot = pair_wait(&f.p, f.c.rcq[SIDE_B], N / 5 * 2, rw, 10 * SEC);
	assert_int_equal(rgot, N / 5 * 2);
	for (unsigned i = 0; i < N; i++) {
		if (i % 5 == 2) {
			for (uint32_t k = 0; k < lens[i]; k++)
				if (f.a[BUF / 2 + offs[i] + k] != 0xBB)
					fail_msg("READ %u byte %u", i, k);
		} else if (i % 5 != 4) {
			long bad = check_pattern(f.b + offs[i], lens[i], 0);
			(void)bad;
			if (memcmp(f.b + offs[i], f.a + offs[i], lens[i]))
				fail_msg("message %u (%u bytes) differs", i, lens[i]);
		}
		if (i % 5 == 1 || i % 5 == 3) {
			const struct droce_wc *r = &rw[nrecv++];
			assert_int_equal(r->status, DROCE_WC_SUCCESS);
			assert_int_equal(r->wr_id, 1000 + i);
			assert_int_equal(r->byte_len, lens[i]);
			if (i % 5 == 3) {
				assert_int_equal(r->opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
				assert_true(r->wc_flags & DROCE_WC_WITH_IMM);
			}
		}
	}
	uint64_t sum;
	memcpy(&sum, f.b + BUF - 64, 8);
	assert_int_equal(sum, 0xBBBBBBBBBBBBBBBBull + N / 5);
	assert_int_equal(cq_drain(f.c.scq[SIDE_A], wc, N), 0); /* no duplicate completions */
	assert_int_equal(cq_drain(f.c.rcq[SIDE_B], rw, N), 0);
	struct droce_qp_stats sa = qp_stats(qa), sb = qp_stats(qb);
	assert_true(sa.retrans_pkts > 0);
	if (mode != DROCE_TRANSPORT_GBN) {
		assert_true(sb.sr_ooo_placed > 0);
		assert_true(sa.sack_rcvd > 0);
		assert_true(sa.sr_rounds > 0);
	}
	if (getenv("DROCE_TEST_DUMP"))
		printf("%s: resent %llu timeouts %llu rounds %llu placed ooo %llu\n",
		       droce_transport_name(mode), (unsigned long long)sa.retrans_pkts,
		       (unsigned long long)sa.retrans_timeout, (unsigned long long)sa.sr_rounds,
		       (unsigned long long)sb.sr_ooo_placed);
	pair_fini(&f.p);
}

static void test_sr_mixed_loss_reorder(void **state)
{
	(void)state;
	mixed_run(DROCE_TRANSPORT_SR, "drop=0.02,reorder=0.05,seed=5");
	mixed_run(DROCE_TRANSPORT_SR, "drop=0.05,reorder=0.1,dup=0.01,seed=9");
}

/* A WRITE with immediate placed ahead of a hole takes its receive WQE in
 * order: none posted when the hole fills -> RNR NAK, the requester resends
 * it (its SACK forgotten), and it completes once a WQE is there. */
static void test_sr_imm_ahead_rnr(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	uint64_t rb = (uint64_t)(uintptr_t)f.b;
	fill_pattern(f.a, 8192, 4);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P), 1);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, 4096, rb,
				   f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE_WITH_IMM, 2, f.amr, 4096, 3000,
				   rb + 4096, f.bmr->rkey, DROCE_SEND_SIGNALED, 0x77), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	pair_run(&f.p, 2000000);
	struct droce_qp_stats sb = qp_stats(f.c.qp[SIDE_B]);
	assert_true(sb.sr_ooo_placed >= 3); /* P+1..P+3 and the tail P+6 .. */
	assert_true(sb.rnr_nak_sent >= 1);
	struct droce_wc wc;
	assert_int_equal(cq_drain(f.c.scq[SIDE_A], &wc, 1), 0);
	assert_int_equal(post_recv_buf(f.c.qp[SIDE_B], 9, f.bmr, 0, 0), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 2, NULL);
	wait_ok(&f, f.c.rcq[SIDE_B], 9, &wc);
	assert_int_equal(wc.opcode, DROCE_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.imm_data, 0x77);
	assert_int_equal(memcmp(f.b, f.a, 7096), 0);
	assert_int_equal(cq_drain(f.c.rcq[SIDE_B], &wc, 1), 0);
	pair_fini(&f.p);
}

/* sr-spray: request packets spread over DROCE_SPRAY_PATHS source ports
 * (ACKs keep the responder's one); the packets of one path lost in a row
 * (a dead path, as every 8th PSN) move that path to a new source port. */
static void test_spray_paths(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR_SPRAY, NULL, NULL);
	uint64_t rb = (uint64_t)(uintptr_t)f.b;
	uint32_t len = 64 * 1024;
	fill_pattern(f.a, len, 5);
	for (unsigned k = 3; k < 64; k += 8) /* path 3 (PSN % 8 == P % 8 + 3) dies */
		pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + k), 1);
	struct droce_qp_stats s0 = qp_stats(f.c.qp[SIDE_A]);
	unsigned dead = (f.P + 3) % DROCE_SPRAY_PATHS;
	uint16_t dead_sport = s0.spray_sport[dead];
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, len, rb,
				   f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	assert_int_equal(check_pattern(f.b, len, 5), -1);
	uint16_t seen[64];
	unsigned nseen = 0, acks_other = 0;
	uint16_t ack_sport = 0;
	for (unsigned i = 0; i < f.p.nrec; i++) {
		const struct pkt_rec *r = &f.p.rec[i];
		if (r->dir == A_TO_B && r->opcode == DROCE_OP_RC_RDMA_WRITE_ONLY) {
			unsigned k;
			for (k = 0; k < nseen && seen[k] != r->sport; k++)
				;
			if (k == nseen && nseen < 64)
				seen[nseen++] = r->sport;
			assert_true(r->sport >= 0xC000);
		} else if (r->dir == B_TO_A) {
			if (!ack_sport)
				ack_sport = r->sport;
			acks_other += r->sport != ack_sport;
		}
	}
	assert_true(nseen >= DROCE_SPRAY_PATHS + 1); /* eight paths, and path 3 moved */
	assert_int_equal(acks_other, 0);
	struct droce_qp_stats sa = qp_stats(f.c.qp[SIDE_A]);
	uint64_t sent = 0;
	for (unsigned k = 0; k < DROCE_SPRAY_PATHS; k++)
		sent += sa.spray_pkts[k];
	assert_int_equal(sent, sa.tx_pkts);
	assert_true(sa.spray_resent[dead] >= 8);
	assert_true(sa.spray_moves >= 1);
	assert_int_not_equal(sa.spray_sport[dead], dead_sport);
	pair_fini(&f.p);
}

/* A QP that did not agree takes no SACK: the ACK is dropped, counted. */
static void test_gbn_drops_sack(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_GBN, NULL, NULL);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, 8192,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + 7), 1);
	pair_run(&f.p, 1000000); /* the last packet lost: B has ACKed up to P + 6 */
	assert_int_equal(qp_stats(f.c.qp[SIDE_A]).psn_una, PSN(f.P + 7));
	struct droce_hdrs h;
	pair_hdrs(&f.p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f.c.qpn[SIDE_A], PSN(f.P + 7));
	h.ext.aeth.syndrome = 0x1F;
	uint8_t blk[DROCE_SACK_LEN];
	struct droce_sack s = {.hi_psn = PSN(f.P + 8)};
	droce_sack_build(blk, &s);
	h.payload_len = DROCE_SACK_LEN;
	uint64_t before = ctx_drops(&f.p, SIDE_A, "UNEXPECTED_RESP");
	struct droce_qp_stats s0 = qp_stats(f.c.qp[SIDE_A]);
	assert_int_equal(pair_inject(&f.p, SIDE_B, &h, blk), 0);
	pair_step(&f.p);
	assert_int_equal(ctx_drops(&f.p, SIDE_A, "UNEXPECTED_RESP"), before + 1);
	struct droce_qp_stats s1 = qp_stats(f.c.qp[SIDE_A]);
	assert_int_equal(s1.psn_una, s0.psn_una); /* not taken as the ACK it would be */
	assert_int_equal(s1.sack_rcvd, 0);
	struct droce_wc wc;
	assert_int_equal(cq_drain(f.c.scq[SIDE_A], &wc, 1), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL); /* the timeout recovers it */
	pair_fini(&f.p);
}

/* Inject, as if B sent it, an ACK for @p ack_psn with a SACK block whose
 * bits @p lo..@p hi (bit i: PSN ack_psn + 1 + i) say "placed". */
static void inject_sack(struct fx *f, uint32_t ack_psn, uint32_t hi_psn, unsigned lo, unsigned hi)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->c.qpn[SIDE_A], ack_psn);
	h.ext.aeth.syndrome = 0x1F;
	struct droce_sack s = {.hi_psn = hi_psn};
	for (unsigned i = lo; i <= hi; i++)
		s.map[i / 64u] |= 1ull << (i % 64u);
	uint8_t blk[DROCE_SACK_LEN];
	droce_sack_build(blk, &s);
	h.payload_len = DROCE_SACK_LEN;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, blk), 0);
}

/* WRITE 2: 16 KB behind the 8 KB of WRITE 1 (PSNs P + 8 .. P + 23), P + 10
 * lost once; every byte of both checked against pattern @p key. */
static void second_write_lost(struct fx *f, uint64_t key)
{
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f->P + 10), 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 8192, 16384,
				   (uint64_t)(uintptr_t)f->b + 8192, f->bmr->rkey,
				   DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, f->c.scq[SIDE_A], 2, NULL);
	assert_int_equal(check_pattern(f->b, 24 * 1024, key), -1);
}

/* A resend round whose last hole is the last PSN sent ends there: the next
 * message's loss starts a round of its own, on its SACK, with no timeout. */
static void test_sr_round_ends_at_snd_max(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	fill_pattern(f.a, 24 * 1024, 5);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + 5), 1);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, 8192,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	pair_run(&f.p, 1000000);
	second_write_lost(&f, 5);
	struct droce_qp_stats sa = qp_stats(f.c.qp[SIDE_A]);
	assert_int_equal(sa.sr_rounds, 2);
	assert_int_equal(sa.retrans_timeout, 0);
	pair_fini(&f.p);
}

/* A SACK is the peer's word, not the truth: bits for PSNs never sent are
 * refused and counted (they would make the requester skip those PSNs when
 * it sends them, and the QP stall until its retries ran out). */
static void test_sr_sack_past_sent_refused(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	fill_pattern(f.a, 24 * 1024, 3);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, 8192,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + 7), 1);
	pair_run(&f.p, 1000000); /* the last packet lost: B has ACKed up to P + 6 */
	struct droce_qp_stats s0 = qp_stats(f.c.qp[SIDE_A]);
	assert_int_equal(s0.psn_una, PSN(f.P + 7));
	assert_int_equal(s0.psn_next, PSN(f.P + 8));
	/* "B" says it placed P + 8 .. P + 40, none of which A has sent */
	inject_sack(&f, PSN(f.P + 6), PSN(f.P + 41), 1, 33);
	pair_step(&f.p);
	struct droce_qp_stats s1 = qp_stats(f.c.qp[SIDE_A]);
	assert_int_equal(s1.sack_rcvd, s0.sack_rcvd + 1);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL); /* P + 7 resent at once */
	/* a WRITE over those PSNs, one of them lost: the SACK that follows
	 * resends it, no timeout (a forged bit would have marked it placed) */
	second_write_lost(&f, 3);
	struct droce_qp_stats s2 = qp_stats(f.c.qp[SIDE_A]);
	if (s2.retrans_timeout)
		rec_dump(&f.p, 0);
	assert_int_equal(s2.retrans_timeout, 0);
	assert_int_equal(s1.sack_bad_bits, 33);
	pair_fini(&f.p);
}

/* An ACK timeout forgets the SACK scoreboard (RFC 2018 section 8, RFC 6675
 * section 5.1): a peer that SACKed what it did not keep (it lied, or lost
 * its state) costs one timeout, not the QP. */
static void test_sr_timeout_reneges(void **state)
{
	(void)state;
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	uint32_t len = 16 * 1024;
	fill_pattern(f.a, len, 9);
	for (unsigned k = 5; k <= 10; k++)
		pair_rule(&f.p, A_TO_B, DROCE_IMPAIR_DROP, -1, PSN(f.P + k), 1);
	assert_int_equal(post_rdma(f.c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f.amr, 0, len,
				   (uint64_t)(uintptr_t)f.b, f.bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	for (unsigned i = 0; i < 64 && qp_stats(f.c.qp[SIDE_A]).psn_next != PSN(f.P + 16); i++)
		pair_step(&f.p); /* no time passes: nothing reached B yet */
	assert_int_equal(qp_stats(f.c.qp[SIDE_A]).psn_next, PSN(f.P + 16));
	/* ahead of B's own answer: "P + 0..4 in order, 6..15 placed" (6..10 a lie) */
	inject_sack(&f, PSN(f.P + 4), PSN(f.P + 16), 1, 10);
	wait_ok(&f, f.c.scq[SIDE_A], 1, NULL);
	assert_int_equal(check_pattern(f.b, len, 9), -1);
	struct droce_qp_stats sa = qp_stats(f.c.qp[SIDE_A]);
	/* one timeout, then everything from una again (one PSN per timeout
	 * if only the PSN timed out were forgotten) */
	assert_int_equal(sa.retrans_timeout, 1);
	assert_int_equal(sa.sack_reneged, 1);
	pair_fini(&f.p);
}

static void test_set_transport(void **state)
{
	(void)state;
	assert_int_equal(droce_transport_parse("gbn"), DROCE_TRANSPORT_GBN);
	assert_int_equal(droce_transport_parse("sr"), DROCE_TRANSPORT_SR);
	assert_int_equal(droce_transport_parse("sr-spray"), DROCE_TRANSPORT_SR_SPRAY);
	assert_int_equal(droce_transport_parse("srx"), -EINVAL);
	assert_int_equal(droce_transport_parse(NULL), -EINVAL);
	assert_string_equal(droce_transport_name(DROCE_TRANSPORT_SR_SPRAY), "sr-spray");
	assert_string_equal(droce_transport_name(7), "?");
	struct fx f;
	fx_init(&f, DROCE_TRANSPORT_SR, NULL, NULL);
	/* in RTS: too late */
	assert_int_equal(droce_qp_set_transport(f.c.qp[SIDE_A], DROCE_TRANSPORT_GBN), -EINVAL);
	assert_int_equal(qp_stats(f.c.qp[SIDE_A]).transport, DROCE_TRANSPORT_SR);
	assert_int_equal(droce_qp_set_transport(NULL, DROCE_TRANSPORT_SR), -EINVAL);
	pair_fini(&f.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sr_resends_only_the_lost),
		cmocka_unit_test(test_sr_reorder_no_resend),
		cmocka_unit_test(test_sr_mixed_loss_reorder),
		cmocka_unit_test(test_sr_imm_ahead_rnr),
		cmocka_unit_test(test_spray_paths),
		cmocka_unit_test(test_gbn_drops_sack),
		cmocka_unit_test(test_sr_round_ends_at_snd_max),
		cmocka_unit_test(test_sr_sack_past_sent_refused),
		cmocka_unit_test(test_sr_timeout_reneges),
		cmocka_unit_test(test_set_transport),
	};
	return droce_test_run("transport_sr", tests, sizeof(tests) / sizeof(tests[0]));
}
