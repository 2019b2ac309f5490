/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ACK coalescing (IBTA 9.7.5.1.1): one ACK acknowledges
 * every earlier PSN, so the responder sends at most one per QP and poll,
 * after the whole receive burst, for the newest PSN executed; a duplicate
 * is always answered (C9-105). The requester completes every message a
 * coalesced ACK covers.
 *
 * The counts are exact on the in-memory link: the requester puts a whole
 * window of small messages on the link in one poll, the responder takes a
 * burst (DROCE_DEFAULT_BURST frames) per poll.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pair.h"

#define BUF (1u << 20)

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint8_t *b;
	uint32_t P, bqpn;
	uint8_t payload[4096];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->b = f->bmr->addr;
	f->P = f->o.sq_psn[SIDE_A];
	f->bqpn = f->c.qpn[SIDE_B];
	fill_pattern(f->payload, sizeof(f->payload), 5);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	pair_fini(&f->p);
	free(f);
	return 0;
}

/* ACKs B sent from record @p from on; each must be a plain ACK. */
static unsigned acks_from_b(struct fx *f, unsigned from, uint32_t *last_psn)
{
	unsigned n = 0;
	for (unsigned i = from; i < f->p.nrec; i++) {
		const struct pkt_rec *r = &f->p.rec[i];
		if (r->dir != B_TO_A)
			continue;
		assert_int_equal(r->opcode, DROCE_OP_RC_ACKNOWLEDGE);
		assert_true(syn_is_ack(r->syndrome));
		*last_psn = r->psn;
		n++;
	}
	return n;
}

static void wait_ok(struct fx *f, int n)
{
	struct droce_wc wc[64];
	int got = pair_wait(&f->p, f->c.scq[SIDE_A], n, wc, 1000ull * 1000 * 1000);
	if (got != n) {
		rec_dump(&f->p, 0);
		fail_msg("%d of %d completions", got, n);
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	}
}

/* 32 one-packet WRITEs, each with AckReq (the last packet of its message),
 * arrive in one burst: one ACK, for the last, completes all 32 (before:
 * one at least every 16 packets, 2). */
static void test_one_ack_per_burst(void **state)
{
	struct fx *f = *state;
	const unsigned n = DROCE_DEFAULT_BURST;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, i, f->amr, 64 * i, 64,
					   (uint64_t)(uintptr_t)f->b + 64 * i, f->bmr->rkey,
					   DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, (int)n);
	uint32_t psn = 0;
	unsigned acks = acks_from_b(f, 0, &psn);
	if (acks != 1) {
		rec_dump(&f->p, 0);
		fail_msg("%u ACKs for one burst of %u messages, want 1", acks, n);
	}
	assert_int_equal(psn, PSN(f->P + n - 1));
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_pkts, 0);
	assert_int_equal(qp_stats(f->c.qp[SIDE_B]).acks_sent, 1);
}

/* 256 small WRITEs, the application refilling the SQ a burst at a time:
 * one ACK per burst of 32 (before: 16 packets per ACK at most, 16 ACKs),
 * every message complete, in order, none retransmitted. */
static void test_acks_per_message(void **state)
{
	struct fx *f = *state;
	const unsigned n = 8 * DROCE_DEFAULT_BURST, sig = DROCE_DEFAULT_BURST;
	unsigned posted = 0, done = 0;
	struct droce_wc wc[64];
	while (done < n / sig) {
		while (posted < n && posted - done * sig < 3 * sig) {
			unsigned flags = (posted % sig == sig - 1) ? DROCE_SEND_SIGNALED : 0;
			assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, posted, f->amr,
						   64 * posted, 64, (uint64_t)(uintptr_t)f->b + 64 * posted,
						   f->bmr->rkey, flags, 0), 0);
			posted++;
		}
		int got = pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, 1000ull * 1000 * 1000);
		assert_int_equal(got, 1);
		assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[0].wr_id, (uint64_t)(done * sig + sig - 1));
		done++;
	}
	uint32_t psn = 0;
	unsigned acks = acks_from_b(f, 0, &psn);
	if (acks != n / DROCE_DEFAULT_BURST) {
		rec_dump(&f->p, 0);
		fail_msg("%u ACKs for %u messages in bursts of %u, want one per burst", acks, n,
			 DROCE_DEFAULT_BURST);
	}
	assert_int_equal(psn, PSN(f->P + n - 1));
	assert_memory_equal(f->b, f->amr->addr, 64 * n);
	assert_int_equal(qp_stats(f->c.qp[SIDE_A]).retrans_pkts, 0);
}

/* B's view: a FIRST and two MIDDLEs without AckReq in one burst get one
 * ACK, for the newest, at the end of that burst (the requester's window
 * may have closed on them); the LAST, alone in the next burst, one more.
 * A duplicate without AckReq is answered all the same (C9-105). */
static void test_burst_without_ackreq(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	const uint32_t mtu = 1024, npk = 4;
	unsigned mark = f->p.nrec;
	for (uint32_t k = 0; k < npk; k++) {
		uint8_t op = k == 0 ? DROCE_OP_RC_RDMA_WRITE_FIRST
			     : k == npk - 1 ? DROCE_OP_RC_RDMA_WRITE_LAST
					    : DROCE_OP_RC_RDMA_WRITE_MIDDLE;
		pair_hdrs(&f->p, SIDE_A, &h, op, f->bqpn, f->P + k);
		h.bth.ack_req = k == npk - 1;
		h.payload_len = mtu;
		h.ext.reth.va = (uint64_t)(uintptr_t)f->b;
		h.ext.reth.rkey = f->bmr->rkey;
		h.ext.reth.dma_len = npk * mtu;
		assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
		if (k == npk - 2) {
			pair_step(&f->p);
			uint32_t psn = 0;
			assert_int_equal(acks_from_b(f, mark, &psn), 1);
			assert_int_equal(psn, PSN(f->P + npk - 2));
			mark = f->p.nrec;
		}
	}
	pair_step(&f->p);
	uint32_t psn = 0;
	assert_int_equal(acks_from_b(f, mark, &psn), 1);
	assert_int_equal(psn, PSN(f->P + npk - 1));
	for (uint32_t k = 0; k < npk; k++)
		assert_memory_equal(f->b + k * mtu, f->payload, mtu);

	mark = f->p.nrec;
	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_MIDDLE, f->bqpn, f->P + 1);
	h.bth.ack_req = false;
	h.payload_len = mtu;
	assert_int_equal(pair_inject(&f->p, SIDE_A, &h, f->payload), 0);
	pair_step(&f->p);
	assert_int_equal(acks_from_b(f, mark, &psn), 1);
	assert_int_equal(psn, PSN(f->P + npk - 1));
}

/* A 64-packet WRITE (AckReq on every 16th and the last) in two bursts of
 * 32: two ACKs (before: one per AckReq, 4). */
static void test_long_write_acks(void **state)
{
	struct fx *f = *state;
	const uint32_t len = 64 * 1024;
	fill_pattern(f->amr->addr, len, 9);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 0, f->amr, 0, len,
				   (uint64_t)(uintptr_t)f->b, f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	wait_ok(f, 1);
	uint32_t psn = 0;
	unsigned acks = acks_from_b(f, 0, &psn);
	if (acks != len / 1024 / DROCE_DEFAULT_BURST) {
		rec_dump(&f->p, 0);
		fail_msg("%u ACKs for a %u-packet WRITE, want %u", acks, len / 1024,
			 len / 1024 / DROCE_DEFAULT_BURST);
	}
	assert_int_equal(psn, PSN(f->P + len / 1024 - 1));
	assert_int_equal(check_pattern(f->b, len, 9), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_ack_per_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acks_per_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_burst_without_ackreq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_write_acks, setup, teardown),
	};
	return droce_test_run("transport_ack_coalesce", tests, sizeof(tests) / sizeof(tests[0]));
}
