/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Places where a correct rxe or ConnectX peer on a healthy link, or
 * a forged frame, could drive a droce QP wrong. Each test crafts the peer's
 * frames with the wire builder (or drops a real answer with the shim and
 * injects another in its place) and asserts droce's exact answer:
 *   - duplicate SEND/WRITE after a READ: re-ACKed with the PSN of the last
 *     SEND/WRITE/atomic, never a READ's PSN (rxe's resp.ack_psn) (item 3);
 *   - a NAK past a READ that has no response yet: re-issue from the READ, the
 *     NAK's error is not the READ's (rxe check_psn, hfi1) (item 4);
 *   - bad responses: no placement, no retransmission, ERR at once with an
 *     error completion (item 5);
 *   - the responder's checks in rxe's order and with its NAK codes (item 6);
 *   - SE on the last packet of a solicited WRITE with immediate (item 7);
 *   - no path MTU change while requests are outstanding (item 8);
 *   - an RC packet from another source IP than the QP's peer is dropped
 *     and counted (item 9).
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
#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/icrc.h"

#define BUF 65536
#define RUN_NS (100ull * 1000 * 1000)

struct fx {
	struct pair p;
	struct conn c;
	struct conn_opts o;
	struct droce_mr *amr, *bmr;
	uint32_t E;        /* B's expected PSN (A's first) */
	uint32_t P;        /* A's first PSN */
	uint32_t bqpn, aqpn;
	uint8_t *b;
	uint64_t rb;
	uint8_t payload[4096];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	pair_init(&f->p, NULL);
	conn_opts_default(&f->o);
	f->o.timeout = 10;
	pair_connect(&f->p, &f->c, &f->o);
	f->amr = pair_mr(&f->p, SIDE_A, BUF, f->o.access, 0xAA);
	f->bmr = pair_mr(&f->p, SIDE_B, BUF, f->o.access, 0xBB);
	f->b = f->bmr->addr;
	f->rb = (uint64_t)(uintptr_t)f->b;
	f->E = f->P = f->o.sq_psn[SIDE_A];
	f->bqpn = f->c.qpn[SIDE_B];
	f->aqpn = f->c.qpn[SIDE_A];
	f->p.allow_bad_frames = true;
	fill_pattern(f->payload, sizeof(f->payload), 77);
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

/* A request from "A" straight at B's responder. */
static void inject_req(struct fx *f, uint8_t opcode, uint32_t psn, uint32_t plen, uint64_t va,
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

/* A response from "B" to A's requester. */
static void inject_resp(struct fx *f, uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t plen)
{
	struct droce_hdrs h;
	pair_hdrs(&f->p, SIDE_B, &h, opcode, f->aqpn, psn);
	h.bth.ack_req = false;
	h.ext.aeth.syndrome = syndrome;
	h.ext.aeth.msn = 1;
	h.payload_len = plen;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, f->payload), 0);
}

static void steps(struct fx *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pair_step(&f->p);
}

static const struct pkt_rec *last_from_b(struct fx *f, unsigned mark)
{
	unsigned idx[64], n = rec_dir(&f->p, mark, B_TO_A, idx, 64);
	if (!n) {
		rec_dump(&f->p, 0);
		fail_msg("B sent nothing");
	}
	return &f->p.rec[idx[n - 1]];
}

static void expect_nak(struct fx *f, unsigned mark, unsigned code, uint32_t psn)
{
	pair_run(&f->p, RUN_NS);
	unsigned idx[8], n = rec_dir(&f->p, mark, B_TO_A, idx, 8);
	if (n != 1 || f->p.rec[idx[0]].opcode != DROCE_OP_RC_ACKNOWLEDGE ||
	    !syn_is_nak(f->p.rec[idx[0]].syndrome, code) || f->p.rec[idx[0]].psn != PSN(psn)) {
		rec_dump(&f->p, mark);
		fail_msg("want exactly one NAK code %u for PSN %06x", code, PSN(psn));
	}
}

/* -------------------------------------------------------------- item 3 -- */

/* WRITE E, READ E+1, then the WRITE again: rxe acknowledges the duplicate
 * with its ack_psn - 1 = E (the last request that was not a READ); E+1
 * would be the READ's PSN and an rxe requester could take that plain ACK as
 * the READ's completion with no data. */
static void test_dup_write_after_read_acks_write_psn(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, f->bmr->rkey, 8);
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E + 1, 0, f->rb + 1024, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	unsigned mark = f->p.nrec;
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, f->bmr->rkey, 8);
	pair_run(&f->p, RUN_NS);
	const struct pkt_rec *r = last_from_b(f, mark);
	assert_int_equal(r->opcode, DROCE_OP_RC_ACKNOWLEDGE);
	assert_true(syn_is_ack(r->syndrome));
	assert_int_equal(r->psn, PSN(f->E));
	assert_int_equal(r->msn, 2);
}

/* No SEND/WRITE/atomic executed yet, only a READ: the re-ACK of a stale
 * duplicate carries rq_psn - 1, acknowledging nothing the requester waits for. */
static void test_dup_after_only_read_acks_before_read(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	unsigned mark = f->p.nrec;
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E - 3, 8, f->rb, f->bmr->rkey, 8);
	pair_run(&f->p, RUN_NS);
	const struct pkt_rec *r = last_from_b(f, mark);
	assert_int_equal(r->opcode, DROCE_OP_RC_ACKNOWLEDGE);
	assert_int_equal(r->psn, PSN(f->E - 1));
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(f->b[i], 0xBB);
}

/* -------------------------------------------------------------- item 4 -- */

/* READ P + WRITE P+1; the READ response and the ACK are lost; a remote
 * access NAK for P+1 arrives. It lies past the READ, which has no response:
 * the response was lost, so re-issue from the READ; the READ succeeds. */
static void test_nak_past_read_reissues_read(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[4];
	fill_pattern(f->b + 4096, 16, 3);
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, -1, 1);
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 16, f->rb + 4096,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 2, f->amr, 64, 8, f->rb + 8192,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 6);
	assert_int_equal(rec_psn_count(&f->p, 0, A_TO_B, f->P), 1);
	inject_resp(f, DROCE_OP_RC_ACKNOWLEDGE, f->P + 1, 0x60 | DROCE_NAK_REMOTE_ACCESS, 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 2, wc, RUN_NS), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern((uint8_t *)f->amr->addr, 16, 3), -1);
	assert_int_equal(wc[1].status, DROCE_WC_SUCCESS);
	assert_true(rec_psn_count(&f->p, 0, A_TO_B, f->P) >= 2);
}

/* -------------------------------------------------------------- item 5 -- */

static void expect_bad_resp(struct fx *f, uint64_t wr_id, enum droce_wc_status st)
{
	struct droce_wc wc[4];
	pair_run(&f->p, RUN_NS);
	int n = cq_drain(f->c.scq[SIDE_A], wc, 4);
	if (n < 1 || wc[0].wr_id != wr_id || wc[0].status != st) {
		rec_dump(&f->p, 0);
		fail_msg("want wr %llu to complete with %s, got %d completions (first %s)",
			 (unsigned long long)wr_id, droce_wc_status_str(st), n,
			 n > 0 ? droce_wc_status_str(wc[0].status) : "-");
	}
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_ERR);
	/* no retransmission: every request PSN went out once */
	assert_int_equal(rec_psn_count(&f->p, 0, A_TO_B, f->P), 1);
}

/* A READ response where the oldest outstanding request is a WRITE. */
static void test_read_response_for_write(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, f->P, 0x1F, 8);
	expect_bad_resp(f, 1, DROCE_WC_BAD_RESP_ERR);
}

/* An atomic acknowledge for a READ. */
static void test_atomic_ack_for_read(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, -1, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE, f->P, 0x1F, 0);
	expect_bad_resp(f, 1, DROCE_WC_BAD_RESP_ERR);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(((uint8_t *)f->amr->addr)[i], 0xAA);
}

/* A READ response ONLY with a NAK syndrome in its AETH: not data. */
static void test_read_response_with_nak_syndrome(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, -1, 1); /* B's own answer; the injected one passes */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 16, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, f->P, 0x60 | DROCE_NAK_REMOTE_ACCESS, 16);
	expect_bad_resp(f, 1, DROCE_WC_BAD_RESP_ERR);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(((uint8_t *)f->amr->addr)[i], 0xAA);
}

/* A two-packet READ answered by an ONLY at its first PSN: wrong opcode. */
static void test_read_response_wrong_opcode(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, -1, 0);
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_LAST, -1, 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 2048, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, f->P, 0x1F, 1024);
	expect_bad_resp(f, 1, DROCE_WC_BAD_RESP_ERR);
	for (size_t i = 0; i < 2048; i++)
		assert_int_equal(((uint8_t *)f->amr->addr)[i], 0xAA);
}

/* A READ response ONLY shorter than the READ: a length error. */
static void test_read_response_wrong_length(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, -1, 1); /* B's own answer; the injected one passes */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 1, f->amr, 0, 16, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, f->P, 0x1F, 8);
	expect_bad_resp(f, 1, DROCE_WC_LOC_LEN_ERR);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(((uint8_t *)f->amr->addr)[i], 0xAA);
}

/* A NAK code IBTA reserves (table 44: 5..31): rxe completes the WQE with
 * REM_OP_ERR and moves to ERR; droce does the same. */
static void test_reserved_nak_code(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1); /* B's own answer; the injected one passes */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_ACKNOWLEDGE, f->P, 0x60 | 7, 0);
	expect_bad_resp(f, 1, DROCE_WC_REM_OP_ERR);
}

/* An ACKNOWLEDGE whose AETH type is the reserved 01b: no answer droce can
 * take (rxe: COMPST_ERROR): BAD_RESP_ERR, ERR, nothing resent. */
static void test_reserved_aeth_type(void **state)
{
	struct fx *f = *state;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1); /* B's own ACK */
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	inject_resp(f, DROCE_OP_RC_ACKNOWLEDGE, f->P, 0x40 | 0x1F, 0);
	expect_bad_resp(f, 1, DROCE_WC_BAD_RESP_ERR);
}

/* -------------------------------------------------------------- item 6 -- */

static void set_b_access(struct fx *f, unsigned access)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTS;
	a.qp_access_flags = access;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_B], &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS), 0);
}

/* An operation the QP's access flags do not enable: NAK invalid request
 * (rxe ERR_UNSUPPORTED_OPCODE, qib/hfi1, ibv_modify_qp(3)), not remote access. */
static void test_qp_access_refuses_with_invalid_request(void **state)
{
	struct fx *f = *state;
	set_b_access(f, DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC);
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, f->bmr->rkey, 8);
	expect_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(f->b[i], 0xBB);
}

/* C9-94: a DMA length above 2^31 is an invalid request, found before the
 * R_Key is looked at (here the R_Key is wrong too). */
static void test_dma_len_over_2g_before_rkey(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey ^ 0x55, 0x80000001u);
	expect_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
}

/* C9-?/9.2.2: payload plus PadCnt is a multiple of 4, so the last packet's
 * PadCnt is (-length) & 3 and the others' 0 (rxe checks it on WRITEs). A
 * WRITE ONLY of 7 bytes that says PadCnt 0 (the frame cut to 7 payload
 * bytes, lengths and ICRC made right) is a length error: NAK invalid
 * request, nothing written. */
static void test_write_pad_mismatch(void **state)
{
	struct fx *f = *state;
	struct droce_hdrs h;
	uint8_t buf[256];
	pair_hdrs(&f->p, SIDE_A, &h, DROCE_OP_RC_RDMA_WRITE_ONLY, f->bqpn, f->E);
	h.payload_len = 8;
	h.ext.reth.va = f->rb;
	h.ext.reth.rkey = f->bmr->rkey;
	h.ext.reth.dma_len = 7;
	size_t hl = droce_build_hdrs(buf, sizeof(buf), &h);
	assert_true(hl > 0);
	memcpy(buf + hl, f->payload, 7);
	size_t l3 = droce_build_l3_off(&h);
	uint8_t *ip = buf + l3, *udp = ip + 20;
	assert_int_equal(ip[0] >> 4, 4);
	droce_put_be16(ip + 2, (uint16_t)(droce_get_be16(ip + 2) - 1));
	droce_put_be16(udp + 4, (uint16_t)(droce_get_be16(udp + 4) - 1));
	ip[10] = ip[11] = 0;
	uint32_t sum = 0;
	for (unsigned i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	droce_put_be16(ip + 10, (uint16_t)~sum);
	assert_int_equal(buf[hl - 12 - 16 + 1] & 0x30, 0); /* BTH byte 1: PadCnt 0 */
	uint32_t crc = droce_icrc_begin(ip, DROCE_L3_IPV4, hl + 7 - l3);
	droce_icrc_store(buf + hl + 7, crc);
	assert_int_equal(pair_inject_raw(&f->p, SIDE_A, buf, (uint32_t)(hl + 7 + 4)), 0);
	expect_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(f->b[i], 0xBB);
}

static void set_b_max_dest(struct fx *f, uint8_t n)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_B], &a, DROCE_QP_STATE), 0);
	a.max_dest_rd_atomic = n;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_B], &a, DROCE_QP_STATE | DROCE_QP_MAX_DEST_RD_ATOMIC), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_B], &a, DROCE_QP_STATE), 0);
}

/* max_dest_rd_atomic 0: the responder takes no READ or atomic at all. */
static void test_max_dest_rd_atomic_zero_refuses_read(void **state)
{
	struct fx *f = *state;
	set_b_max_dest(f, 0);
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey, 16);
	expect_nak(f, 0, DROCE_NAK_INVALID_REQ, f->E);
}

/* A duplicate READ must ask for the original's R_Key and a part of its
 * range; anything else is not a retry of that READ: dropped (class D, rxe). */
static void test_dup_read_other_range_dropped(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	unsigned mark = f->p.nrec;
	uint64_t d0 = ctx_drops(&f->p, SIDE_B, "DUP_NO_RES");
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb + 8192, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	assert_int_equal(rec_count(&f->p, mark, B_TO_A, -1), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "DUP_NO_RES"), d0 + 1);
	/* the same range with a subset of it is answered */
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb + 8, f->bmr->rkey, 8);
	pair_run(&f->p, RUN_NS);
	assert_int_equal(rec_count(&f->p, mark, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY), 1);
}

/* The replay ring holds max_dest_rd_atomic READs/atomics, not more. */
static void test_replay_ring_sized_by_max_dest(void **state)
{
	struct fx *f = *state;
	set_b_max_dest(f, 2);
	for (unsigned i = 0; i < 3; i++) {
		inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E + i, 0, f->rb, f->bmr->rkey, 16);
		pair_run(&f->p, RUN_NS);
	}
	unsigned mark = f->p.nrec;
	uint64_t d0 = ctx_drops(&f->p, SIDE_B, "DUP_NO_RES");
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	assert_int_equal(rec_count(&f->p, mark, B_TO_A, -1), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "DUP_NO_RES"), d0 + 1);
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E + 1, 0, f->rb, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	assert_int_equal(rec_count(&f->p, mark, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY), 1);
}

/* A duplicate READ whose R_Key was deregistered since: NAK remote access
 * (rxe re-checks the MR when it replays), not silence. */
static void test_dup_read_after_dereg_naks(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, f->bmr->rkey, 16);
	pair_run(&f->p, RUN_NS);
	unsigned mark = f->p.nrec;
	uint32_t rkey = f->bmr->rkey;
	struct droce_mr *m = pair_mr(&f->p, SIDE_B, 64, f->o.access, 0); /* keeps the test's MR count */
	(void)m;
	assert_int_equal(droce_dereg_mr(f->bmr), 0);
	inject_req(f, DROCE_OP_RC_RDMA_READ_REQUEST, f->E, 0, f->rb, rkey, 16);
	expect_nak(f, mark, DROCE_NAK_REMOTE_ACCESS, f->E);
}

/* A NAK carries the MSN at the time it was queued: E+1 arrives first (one
 * PSN-sequence NAK for E, MSN 0), then E in the same burst (executed, MSN 1).
 * The NAK still says MSN 0. */
static void test_nak_msn_when_queued(void **state)
{
	struct fx *f = *state;
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E + 1, 8, f->rb + 64, f->bmr->rkey, 8);
	inject_req(f, DROCE_OP_RC_RDMA_WRITE_ONLY, f->E, 8, f->rb, f->bmr->rkey, 8);
	pair_run(&f->p, RUN_NS);
	int i = -1;
	for (unsigned k = 0; k < f->p.nrec; k++)
		if (f->p.rec[k].dir == B_TO_A && syn_is_nak(f->p.rec[k].syndrome, DROCE_NAK_PSN_SEQ_ERR))
			i = (int)k;
	if (i < 0) {
		rec_dump(&f->p, 0);
		fail_msg("no PSN sequence NAK");
	}
	assert_int_equal(f->p.rec[i].psn, PSN(f->E));
	assert_int_equal(f->p.rec[i].msn, 0);
}

/* -------------------------------------------------------------- item 7 -- */

static void test_solicited_write_imm_sets_se(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[2];
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 64), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE_WITH_IMM, 1, f->amr, 0, 2048,
				   f->rb + 4096, f->bmr->rkey, DROCE_SEND_SIGNALED | DROCE_SEND_SOLICITED,
				   0x12345678), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, RUN_NS), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	int first = rec_find(&f->p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_FIRST);
	int last = rec_find(&f->p, 0, A_TO_B, DROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE);
	assert_true(first >= 0 && last >= 0);
	assert_false(f->p.rec[first].se);
	assert_true(f->p.rec[last].se);
	/* and not without the flag */
	unsigned mark = f->p.nrec;
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 10, f->bmr, 0, 64), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE_WITH_IMM, 2, f->amr, 0, 16,
				   f->rb + 4096, f->bmr->rkey, DROCE_SEND_SIGNALED, 1), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, RUN_NS), 1);
	int only = rec_find(&f->p, mark, A_TO_B, DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
	assert_true(only >= 0);
	assert_false(f->p.rec[only].se);
}

/* -------------------------------------------------------------- item 8 -- */

/* SQD -> SQD with a new path MTU while requests are outstanding would
 * resegment a rewind with the new MTU (PSNs no longer match what was sent):
 * refused; once everything is acknowledged it is accepted. */
static void test_mtu_change_refused_while_outstanding(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[2];
	struct droce_qp_attr a;
	pair_rule(&f->p, A_TO_B, DROCE_IMPAIR_DROP, DROCE_OP_RC_RDMA_WRITE_LAST, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 3000, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_SQD;
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &a, DROCE_QP_STATE), 0);
	a.path_mtu = DROCE_MTU_512;
	assert_true(droce_modify_qp(f->c.qp[SIDE_A], &a, DROCE_QP_STATE | DROCE_QP_PATH_MTU) < 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, 10 * RUN_NS), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(f->b, 0, 0), -1);
	assert_memory_equal(f->b, f->amr->addr, 3000);
	assert_int_equal(droce_modify_qp(f->c.qp[SIDE_A], &a, DROCE_QP_STATE | DROCE_QP_PATH_MTU), 0);
}

/* -------------------------------------------------------------- item 9 -- */

/* A remote access NAK with a PSN in range but from another source address:
 * not the peer, so not trusted: dropped and counted; the QP carries on. */
static void test_forged_source_nak_dropped(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[2];
	struct droce_hdrs h;
	pair_rule(&f->p, B_TO_A, DROCE_IMPAIR_DROP, DROCE_OP_RC_ACKNOWLEDGE, -1, 1);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_WRITE, 1, f->amr, 0, 8, f->rb,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	steps(f, 4);
	pair_hdrs(&f->p, SIDE_B, &h, DROCE_OP_RC_ACKNOWLEDGE, f->aqpn, f->P);
	h.net.src_ip[f->p.ip_version == 4 ? 3 : 15] ^= 0x40;
	h.ext.aeth.syndrome = 0x60 | DROCE_NAK_REMOTE_ACCESS;
	assert_int_equal(pair_inject(&f->p, SIDE_B, &h, NULL), 0);
	steps(f, 2);
	assert_int_equal(ctx_drops(&f->p, SIDE_A, "SRC_IP"), 1);
	assert_int_equal(qp_state(f->c.qp[SIDE_A]), DROCE_QPS_RTS);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 1, wc, 10 * RUN_NS), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
}

/* ------------------------------------------------------------- item 13 -- */

/* BTH MigReq follows the QP's path migration state (IBTA 17.2.8, 9.2.4):
 * droce loads no alternate path, so from RTR on the state is MIGRATED and
 * every packet carries MigReq = 1, as ConnectX sends it (the Mellanox frames
 * of ../shared/pcap-corpus/icrc-vectors.pcap). Requests, ACKs, READ
 * responses and atomic ACKs alike. */
static void test_migreq_set_when_migrated(void **state)
{
	struct fx *f = *state;
	struct droce_wc wc[4];
	assert_int_equal(post_recv_buf(f->c.qp[SIDE_B], 9, f->bmr, 0, 64), 0);
	assert_int_equal(post_send_msg(f->c.qp[SIDE_A], DROCE_WR_SEND, 1, f->amr, 0, 16,
				       DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_rdma(f->c.qp[SIDE_A], DROCE_WR_RDMA_READ, 2, f->amr, 64, 3000, f->rb + 4096,
				   f->bmr->rkey, DROCE_SEND_SIGNALED, 0), 0);
	assert_int_equal(post_atomic(f->c.qp[SIDE_A], DROCE_WR_ATOMIC_FETCH_AND_ADD, 3, f->amr, 8192,
				     f->rb + 8192, f->bmr->rkey, 1, 0), 0);
	assert_int_equal(pair_wait(&f->p, f->c.scq[SIDE_A], 2, wc, RUN_NS), 2);
	pair_run(&f->p, RUN_NS);
	assert_true(rec_count(&f->p, 0, B_TO_A, DROCE_OP_RC_ATOMIC_ACKNOWLEDGE) == 1);
	assert_true(rec_count(&f->p, 0, B_TO_A, DROCE_OP_RC_RDMA_READ_RESPONSE_LAST) == 1);
	for (unsigned i = 0; i < f->p.nrec; i++)
		if (!f->p.rec[i].migreq) {
			rec_dump(&f->p, 0);
			fail_msg("record %u has MigReq 0", i);
		}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_dup_write_after_read_acks_write_psn),
		T(test_dup_after_only_read_acks_before_read),
		T(test_nak_past_read_reissues_read),
		T(test_read_response_for_write),
		T(test_atomic_ack_for_read),
		T(test_read_response_with_nak_syndrome),
		T(test_read_response_wrong_opcode),
		T(test_read_response_wrong_length),
		T(test_reserved_nak_code),
		T(test_reserved_aeth_type),
		T(test_qp_access_refuses_with_invalid_request),
		T(test_dma_len_over_2g_before_rkey),
		T(test_write_pad_mismatch),
		T(test_max_dest_rd_atomic_zero_refuses_read),
		T(test_dup_read_other_range_dropped),
		T(test_replay_ring_sized_by_max_dest),
		T(test_dup_read_after_dereg_naks),
		T(test_nak_msn_when_queued),
		T(test_solicited_write_imm_sets_se),
		T(test_mtu_change_refused_while_outstanding),
		T(test_forged_source_nak_dropped),
		T(test_migreq_set_when_migrated),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
