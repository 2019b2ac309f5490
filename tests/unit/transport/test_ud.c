/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unreliable Datagram QPs (IBTA vol 1 9.8.4, 10.2.4): two
 * contexts over the in-memory link. A UD SEND is one SEND_ONLY packet with a
 * DETH (Q_Key, source QP), never acknowledged; the receiver checks the
 * Q_Key, needs a receive WQE (else a silent drop) and places the 40-byte
 * GRH area in front of the payload as verbs/rxe do for RoCEv2 (IPv4: 20
 * zero bytes and the IPv4 header; IPv6: the IPv6 header). The GSI QP has
 * QPN 1 and Q_Key 0x80010000.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "base/splitmix64.h"
#include "cm/mad.h"
#include "pair.h"
#include "wire/bytes.h"
#include "wire/opcode.h"

#define BUF 16384
#define QKEY_A 0x11111111u
#define QKEY_B 0x22222222u
#define GRH 40u

struct ud {
	struct droce_cq *cq[2];
	struct droce_qp *qp[2];
	struct droce_ah *ah[2];   /* ah[s]: side s's handle for the other side */
	struct droce_mr *mr[2];
	uint8_t *buf[2];
};

struct fx {
	struct pair p;
	struct ud u;
};

static struct droce_qp *ud_qp(struct pair *p, int s, struct droce_cq *cq, enum droce_qp_type t,
			      uint32_t qkey, enum droce_mtu mtu)
{
	struct droce_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = t};
	struct droce_qp *qp = droce_create_qp(p->ctx[s], &ia);
	assert_non_null(qp);
	p->qps[p->nqps++] = qp;
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .qkey = qkey, .path_mtu = mtu};
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_QKEY | DROCE_QP_PATH_MTU), 0);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0x100u + (uint32_t)s;
	assert_int_equal(droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), 0);
	return qp;
}

static struct droce_ah *ah_to(struct pair *p, int s)
{
	struct droce_ah_attr a = {.ip_version = p->ip_version, .dscp = 26, .ttl = 64};
	pair_side_ip(p->ip_version, 1 - s, a.dst_ip);
	memcpy(a.dst_mac, "\x02\x00\x00\x00\x00\x00", 6);
	a.dst_mac[5] = (uint8_t)(2 - s);
	struct droce_ah *ah = droce_create_ah(p->ctx[s], &a);
	assert_non_null(ah);
	return ah;
}

static void ud_setup(struct fx *f, uint8_t ipv, enum droce_qp_type t)
{
	struct pair_opts o = {.ip_version = ipv};
	pair_init(&f->p, &o);
	for (int s = 0; s < 2; s++) {
		f->u.cq[s] = droce_create_cq(f->p.ctx[s], 256);
		assert_non_null(f->u.cq[s]);
		f->p.cqs[f->p.ncqs++] = f->u.cq[s];
		f->u.qp[s] = ud_qp(&f->p, s, f->u.cq[s], t, s ? QKEY_B : QKEY_A, DROCE_MTU_1024);
		f->u.ah[s] = ah_to(&f->p, s);
		f->u.mr[s] = pair_mr(&f->p, s, BUF, DROCE_ACCESS_LOCAL_WRITE, (uint8_t)(0x70 + s));
		f->u.buf[s] = f->u.mr[s]->addr;
	}
}

static int setup4(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	ud_setup(f, 4, DROCE_QPT_UD);
	*state = f;
	return 0;
}

static int setup6(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	ud_setup(f, 6, DROCE_QPT_UD);
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

/* A signaled UD SEND from @p qp of @p len bytes at @p off of side @p s's
 * buffer (key @p lkey) to @p dqpn through side @p s's address handle. */
static int ud_post(struct fx *f, struct droce_qp *qp, int s, uint64_t wr_id, size_t off,
		   uint32_t len, uint32_t lkey, uint32_t dqpn, uint32_t qkey,
		   enum droce_wr_opcode op, uint32_t imm)
{
	struct droce_sge sge = {.addr = (uintptr_t)f->u.buf[s] + off, .length = len, .lkey = lkey};
	struct droce_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = DROCE_SEND_SIGNALED;
	wr.imm_data = imm;
	wr.wr.ud.ah = f->u.ah[s];
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	return droce_post_send(qp, &wr, &bad);
}

/* The same from side @p s's UD QP with its MR's key. */
static int ud_send(struct fx *f, int s, uint64_t wr_id, size_t off, uint32_t len, uint32_t dqpn,
		   uint32_t qkey, enum droce_wr_opcode op, uint32_t imm)
{
	return ud_post(f, f->u.qp[s], s, wr_id, off, len, f->u.mr[s]->lkey, dqpn, qkey, op, imm);
}

static void ud_recv(struct fx *f, int s, uint64_t wr_id, size_t off, uint32_t len)
{
	assert_int_equal(post_recv_buf(f->u.qp[s], wr_id, f->u.mr[s], off, len), 0);
}

/* Every completion until the pair is quiet, from side @p s's CQ. */
static int drain(struct fx *f, int s, struct droce_wc *wc, int n)
{
	pair_run(&f->p, 1000000000ull);
	return cq_drain(f->u.cq[s], wc, n);
}

static uint16_t ip_csum(const uint8_t *b, unsigned n)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The GRH area of a datagram of @p len bytes from side @p from (RoCEv2). */
static void check_grh(const struct pair *p, const uint8_t *g, int from, uint32_t len, bool imm)
{
	uint8_t src[16], dst[16];
	pair_side_ip(p->ip_version, from, src);
	pair_side_ip(p->ip_version, 1 - from, dst);
	uint32_t udp_len = 8 + DROCE_BTH_LEN + DROCE_DETH_LEN + len + ((4 - (len & 3)) & 3) + 4 +
			   (imm ? DROCE_IMM_LEN : 0);
	if (p->ip_version == 4) {
		for (unsigned i = 0; i < 20; i++)
			assert_int_equal(g[i], 0);
		const uint8_t *ip = g + 20;
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[1] >> 2, 26);                    /* DSCP */
		assert_int_equal(droce_get_be16(ip + 2), 20 + udp_len); /* total length */
		assert_int_equal(ip[8], 64);                         /* TTL */
		assert_int_equal(ip[9], 17);                         /* UDP */
		assert_int_equal(ip_csum(ip, 20), 0);                /* as received: checksum holds */
		assert_memory_equal(ip + 12, src, 4);
		assert_memory_equal(ip + 16, dst, 4);
	} else {
		assert_int_equal(g[0] >> 4, 6);
		assert_int_equal(droce_get_be16(g + 4), udp_len);   /* payload length */
		assert_int_equal(g[6], 17);                          /* next header UDP */
		assert_int_equal(g[7], 64);                          /* hop limit */
		assert_memory_equal(g + 8, src, 16);
		assert_memory_equal(g + 24, dst, 16);
	}
}

static void send_recv(struct fx *f)
{
	struct pair *p = &f->p;
	const uint32_t lens[] = {1, 100, 1023, 1024};
	for (unsigned i = 0; i < 5; i++)
		ud_recv(f, SIDE_B, 10 + i, i * 2048, 2048);
	for (unsigned i = 0; i < 4; i++) {
		fill_pattern(f->u.buf[SIDE_A] + 8192 + i * 1024, lens[i], i);
		assert_int_equal(ud_send(f, SIDE_A, i, 8192 + i * 1024, lens[i],
					 droce_qp_num(f->u.qp[SIDE_B]), QKEY_B, DROCE_WR_SEND, 0), 0);
	}
	assert_int_equal(ud_send(f, SIDE_A, 4, 8192, 8, droce_qp_num(f->u.qp[SIDE_B]), QKEY_B,
				 DROCE_WR_SEND_WITH_IMM, 0xA1B2C3D4u), 0);
	struct droce_wc wc[8];
	assert_int_equal(drain(f, SIDE_A, wc, 8), 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, DROCE_WC_SEND);
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	}
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 8), 5);
	for (unsigned i = 0; i < 5; i++) {
		uint32_t len = i < 4 ? lens[i] : 8;
		const uint8_t *b = f->u.buf[SIDE_B] + i * 2048;
		assert_int_equal(wc[i].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[i].opcode, DROCE_WC_RECV);
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(wc[i].byte_len, GRH + len);
		assert_int_equal(wc[i].src_qp, droce_qp_num(f->u.qp[SIDE_A]));
		assert_int_equal(wc[i].qp_num, droce_qp_num(f->u.qp[SIDE_B]));
		assert_true(wc[i].wc_flags & DROCE_WC_GRH);
		assert_memory_equal(b + GRH, f->u.buf[SIDE_A] + 8192 + (i < 4 ? i * 1024 : 0), len);
		if (i < 4)
			assert_int_equal(check_pattern(b + GRH, len, i), -1);
		assert_int_equal(b[GRH + len], 0x71); /* nothing written past the datagram */
		check_grh(p, b, SIDE_A, len, i == 4);
		uint8_t from[16], want[16];
		pair_side_ip(p->ip_version, SIDE_A, want);
		assert_int_equal(droce_grh_src_ip(b, from), p->ip_version);
		assert_memory_equal(from, want, p->ip_version == 4 ? 4 : 16);
	}
	assert_false(wc[0].wc_flags & DROCE_WC_WITH_IMM);
	assert_true(wc[4].wc_flags & DROCE_WC_WITH_IMM);
	assert_int_equal(wc[4].imm_data, 0xA1B2C3D4u);

	/* The wire: five SEND_ONLY, PSN +1 each, DETH, nothing back (no ACK). */
	assert_int_equal(rec_count(p, 0, B_TO_A, -1), 0);
	assert_int_equal(rec_count(p, 0, A_TO_B, -1), 5);
	for (unsigned i = 0; i < 5; i++) {
		const struct pkt_rec *r = &p->rec[i];
		assert_int_equal(r->pr, DROCE_PARSE_OK);
		assert_int_equal(r->opcode, i < 4 ? DROCE_OP_UD_SEND_ONLY : DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
		assert_int_equal(r->psn, 0x100 + i);
		assert_int_equal(r->dqpn, droce_qp_num(f->u.qp[SIDE_B]));
		assert_int_equal(r->qkey, QKEY_B);
		assert_int_equal(r->sqpn, droce_qp_num(f->u.qp[SIDE_A]));
		assert_int_equal(r->payload_len, i < 4 ? lens[i] : 8);
		assert_false(r->ackreq);
		assert_true(r->sport >= 0xC000);
	}
	struct droce_qp_attr qa;
	assert_int_equal(droce_query_qp(f->u.qp[SIDE_A], &qa, 0), 0);
	assert_int_equal(qa.sq_psn, 0x105);
	assert_int_equal(qa.qkey, QKEY_A);
	assert_int_equal(qa.qp_type, DROCE_QPT_UD);
}

static void test_send_recv(void **state) { send_recv(*state); }
static void test_send_recv_ipv6(void **state) { send_recv(*state); }

/* 10.2.4: a datagram whose Q_Key is not the QP's is dropped and counted;
 * a WR Q_Key with the high bit set sends the QP's own. */
static void test_qkey(void **state)
{
	struct fx *f = *state;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	ud_recv(f, SIDE_B, 1, 0, 2048);
	assert_int_equal(ud_send(f, SIDE_A, 1, 4096, 64, bqpn, QKEY_B ^ 1, DROCE_WR_SEND, 0), 0);
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS); /* the sender cannot know */
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "BAD_QKEY"), 1);
	assert_int_equal(qp_stats(f->u.qp[SIDE_B]).drops, 1);

	/* Controlled Q_Key: A's QP Q_Key goes out; B takes it once its own is A's. */
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_RTS, .qkey = QKEY_A};
	assert_int_equal(droce_modify_qp(f->u.qp[SIDE_B], &a, DROCE_QP_STATE | DROCE_QP_QKEY), 0);
	rec_clear(&f->p);
	assert_int_equal(ud_send(f, SIDE_A, 2, 4096, 64, bqpn, 0x80000000u, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(f->p.rec[0].qkey, QKEY_A);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 1); /* the WQE the bad datagram left posted */
	assert_int_equal(wc[0].byte_len, GRH + 64);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "BAD_QKEY"), 1);
}

/* No receive WQE: dropped without an RNR NAK (UD has none), counted. */
static void test_no_rwqe(void **state)
{
	struct fx *f = *state;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ud_send(f, SIDE_A, (uint64_t)i, 0, 32, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 3);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "UD_NO_RWQE"), 3);
	assert_int_equal(rec_count(&f->p, 0, B_TO_A, -1), 0);
	assert_int_equal(rec_count(&f->p, 0, A_TO_B, DROCE_OP_UD_SEND_ONLY), 3); /* sent once each */
	assert_int_equal(qp_state(f->u.qp[SIDE_B]), DROCE_QPS_RTS);
	/* and the next one with a WQE lands */
	ud_recv(f, SIDE_B, 9, 0, 2048);
	assert_int_equal(ud_send(f, SIDE_A, 3, 0, 32, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 9);
}

/* Too long: longer than the MTU (1024 here) sends nothing and completes
 * successfully (C10-93.1.1); longer than the receive WQE is dropped with
 * the WQE left for the next datagram. */
static void test_too_long(void **state)
{
	struct fx *f = *state;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	ud_recv(f, SIDE_B, 1, 0, GRH + 10);
	assert_int_equal(ud_send(f, SIDE_A, 1, 0, 1025, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(rec_count(&f->p, 0, -1, -1), 0);
	assert_int_equal(qp_stats(f->u.qp[SIDE_A]).ud_oversize, 1);

	assert_int_equal(ud_send(f, SIDE_A, 2, 0, 11, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 0);
	assert_int_equal(ctx_drops(&f->p, SIDE_B, "UD_TOO_LONG"), 1);
	assert_int_equal(f->u.buf[SIDE_B][0], 0x71); /* not a byte written */

	fill_pattern(f->u.buf[SIDE_A] + 100, 10, 5);
	assert_int_equal(ud_send(f, SIDE_A, 3, 100, 10, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, GRH + 10);
	assert_int_equal(check_pattern(f->u.buf[SIDE_B] + GRH, 10, 5), -1);
}

/* The GSI QP: QPN 1, Q_Key 0x80010000, one per context; MADs to QPN 1
 * reach it (the CM's datagram endpoint). */
static void test_gsi(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_qp *g[2];
	for (int s = 0; s < 2; s++) {
		struct droce_qp_init_attr ia = {.send_cq = f->u.cq[s], .recv_cq = f->u.cq[s],
						.qp_type = DROCE_QPT_GSI};
		g[s] = droce_create_qp(p->ctx[s], &ia);
		assert_non_null(g[s]);
		p->qps[p->nqps++] = g[s];
		assert_int_equal(droce_qp_num(g[s]), 1);
		errno = 0;
		assert_null(droce_create_qp(p->ctx[s], &ia));
		assert_int_equal(errno, EBUSY);
		struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT};
		assert_int_equal(droce_modify_qp(g[s], &a, DROCE_QP_STATE), 0); /* Q_Key already set */
		a.qp_state = DROCE_QPS_RTR;
		assert_int_equal(droce_modify_qp(g[s], &a, DROCE_QP_STATE), 0);
		a.qp_state = DROCE_QPS_RTS;
		assert_int_equal(droce_modify_qp(g[s], &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), 0);
		assert_int_equal(droce_query_qp(g[s], &a, 0), 0);
		assert_int_equal(a.qkey, DROCE_GSI_QKEY);
		assert_int_equal(a.qp_type, DROCE_QPT_GSI);
	}
	struct droce_recv_wr rw;
	struct droce_sge rs = {.addr = (uintptr_t)f->u.buf[SIDE_B], .length = GRH + 256,
			       .lkey = f->u.mr[SIDE_B]->lkey};
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 77;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	struct droce_recv_wr *rbad;
	assert_int_equal(droce_post_recv(g[SIDE_B], &rw, &rbad), 0);
	/* A CM RTU MAD (256 bytes) from A's GSI QP, Q_Key "the QP's" (high bit). */
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_RTU, 0x1234567800000042ull);
	m.u.rtu.local_comm_id = 0x11223344;
	m.u.rtu.remote_comm_id = 0x55667788;
	assert_int_equal(droce_mad_encode(f->u.buf[SIDE_A] + 4096, 256, &m), 256);
	const uint32_t alkey = f->u.mr[SIDE_A]->lkey;
	assert_int_equal(ud_post(f, g[SIDE_A], SIDE_A, 5, 4096, 256, alkey, DROCE_GSI_QPN, 0x80000000u,
				 DROCE_WR_SEND, 0), 0);
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(wc[0].qp_num, 1);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].qp_num, 1);
	assert_int_equal(wc[0].src_qp, 1);
	assert_int_equal(wc[0].byte_len, GRH + 256);
	assert_memory_equal(f->u.buf[SIDE_B] + GRH, f->u.buf[SIDE_A] + 4096, 256);
	assert_int_equal(p->rec[0].dqpn, 1);
	assert_int_equal(p->rec[0].sqpn, 1);
	assert_int_equal(p->rec[0].qkey, DROCE_GSI_QKEY);
	/* Once destroyed, QPN 1 is unknown again and a new GSI QP may be made. */
	assert_int_equal(droce_destroy_qp(g[SIDE_B]), 0);
	p->nqps--;
	assert_int_equal(ud_post(f, g[SIDE_A], SIDE_A, 5, 4096, 256, alkey, DROCE_GSI_QPN, 0x80000000u,
				 DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(ctx_drops(p, SIDE_B, "UNKNOWN_QPN"), 1);
	struct droce_qp_init_attr ia = {.send_cq = f->u.cq[SIDE_B], .recv_cq = f->u.cq[SIDE_B],
					.qp_type = DROCE_QPT_GSI};
	g[SIDE_B] = droce_create_qp(p->ctx[SIDE_B], &ia);
	assert_non_null(g[SIDE_B]);
	p->qps[p->nqps++] = g[SIDE_B];
}

/* Datagrams the receiver refuses before any WQE: the wrong service, the
 * wrong P_Key, a QP not yet in RTR. */
static void test_refused(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	ud_recv(f, SIDE_B, 1, 0, 2048);
	struct droce_hdrs h;
	uint8_t pl[16] = {0};
	/* RC to a UD QP */
	pair_hdrs(p, SIDE_A, &h, DROCE_OP_RC_SEND_ONLY, bqpn, 0);
	assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
	/* wrong P_Key */
	pair_hdrs(p, SIDE_A, &h, DROCE_OP_UD_SEND_ONLY, bqpn, 0);
	h.bth.ack_req = false;
	h.bth.pkey = 0x1234;
	h.ext.deth.qkey = QKEY_B;
	h.ext.deth.sqpn = 77;
	h.payload_len = 16;
	assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
	pair_run(p, 1000000);
	assert_int_equal(ctx_drops(p, SIDE_B, "NOT_UD"), 1);
	assert_int_equal(ctx_drops(p, SIDE_B, "BAD_PKEY"), 1);
	/* the good one (P_Key 0x7FFF: a limited member matches a full one) */
	h.bth.pkey = 0x7FFF;
	assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
	pair_run(p, 1000000);
	struct droce_wc wc[2];
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 2), 1);
	assert_int_equal(wc[0].src_qp, 77);
	assert_int_equal(wc[0].byte_len, GRH + 16);

	/* UD to an RC QP */
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	pair_connect(p, &c, &o);
	pair_hdrs(p, SIDE_A, &h, DROCE_OP_UD_SEND_ONLY, c.qpn[SIDE_B], 0);
	h.ext.deth.qkey = QKEY_B;
	h.payload_len = 16;
	assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
	pair_run(p, 1000000);
	assert_int_equal(ctx_drops(p, SIDE_B, "NOT_RC"), 1);

	/* a UD QP in INIT takes no datagram */
	struct droce_qp_init_attr ia = {.send_cq = f->u.cq[SIDE_B], .recv_cq = f->u.cq[SIDE_B],
					.qp_type = DROCE_QPT_UD};
	struct droce_qp *q = droce_create_qp(p->ctx[SIDE_B], &ia);
	assert_non_null(q);
	p->qps[p->nqps++] = q;
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .qkey = QKEY_B};
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_QKEY), 0);
	assert_int_equal(post_recv_buf(q, 1, f->u.mr[SIDE_B], 4096, 2048), 0);
	pair_hdrs(p, SIDE_A, &h, DROCE_OP_UD_SEND_ONLY, droce_qp_num(q), 0);
	h.ext.deth.qkey = QKEY_B;
	h.payload_len = 16;
	assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
	pair_run(p, 1000000);
	assert_int_equal(ctx_drops(p, SIDE_B, "QP_STATE"), 1);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 2), 0);
}

/* 10.3.1: a send error on a UD QP (a bad lkey) completes that WQE in error
 * and moves the QP to SQE, flushing the sends behind it; receives go on;
 * SQE -> RTS sends again. */
static void test_send_error_sqe(void **state)
{
	struct fx *f = *state;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	struct droce_qp *qa = f->u.qp[SIDE_A];
	assert_int_equal(ud_post(f, qa, SIDE_A, 1, 0, 8, f->u.mr[SIDE_A]->lkey ^ 0x55, bqpn, QKEY_B,
				 DROCE_WR_SEND, 0), 0);
	assert_int_equal(ud_send(f, SIDE_A, 2, 0, 8, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, DROCE_WC_LOC_PROT_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, DROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(qa), DROCE_QPS_SQE);
	assert_int_equal(rec_count(&f->p, 0, -1, -1), 0);
	/* receives still work in SQE */
	ud_recv(f, SIDE_A, 3, 0, 2048);
	assert_int_equal(ud_send(f, SIDE_B, 4, 0, 8, droce_qp_num(qa), QKEY_A, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	/* SQE -> RTS */
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_RTS};
	assert_int_equal(droce_modify_qp(qa, &a, DROCE_QP_STATE), 0);
	ud_recv(f, SIDE_B, 5, 0, 2048);
	assert_int_equal(ud_send(f, SIDE_A, 6, 0, 8, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(drain(f, SIDE_A, wc, 4), 1);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 2); /* B's send and its receive */
}

/* Every documented error of the UD API. */
static void test_api_errors(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	struct droce_ctx *ctx = p->ctx[SIDE_A];
	struct droce_cq *cq = f->u.cq[SIDE_A];
	struct droce_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = (enum droce_qp_type)7};
	errno = 0;
	assert_null(droce_create_qp(ctx, &ia));
	assert_int_equal(errno, EINVAL);

	struct droce_ah_attr aa = {.ip_version = 6};
	errno = 0;
	assert_null(droce_create_ah(ctx, &aa));
	assert_int_equal(errno, EINVAL);
	aa.ip_version = 4;
	aa.dscp = 64;
	errno = 0;
	assert_null(droce_create_ah(ctx, &aa));
	assert_int_equal(errno, EINVAL);
	assert_null(droce_create_ah(NULL, &aa));
	assert_int_equal(droce_destroy_ah(NULL), -EINVAL);
	aa.dscp = 0;
	struct droce_ah *spare = droce_create_ah(ctx, &aa);
	assert_non_null(spare);
	assert_int_equal(droce_destroy_ah(spare), 0);

	ia.qp_type = DROCE_QPT_UD;
	struct droce_qp *q = droce_create_qp(ctx, &ia);
	assert_non_null(q);
	p->qps[p->nqps++] = q;
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .qkey = 1};
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE), -EINVAL); /* QKEY required */
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_QKEY | DROCE_QP_ACCESS_FLAGS),
			 -EINVAL);
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_QKEY), 0);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_AV), -EINVAL);
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_DEST_QPN), -EINVAL);
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_RQ_PSN), -EINVAL);
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTS;
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE), -EINVAL); /* SQ_PSN required */
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT),
			 -EINVAL);
	assert_int_equal(droce_modify_qp(q, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN), 0);

	/* QKEY is not an RC attribute */
	struct conn c;
	struct conn_opts o;
	conn_opts_default(&o);
	conn_create(p, &c, &o);
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = 0;
	assert_int_equal(droce_modify_qp(c.qp[SIDE_A], &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS |
							     DROCE_QP_QKEY), -EINVAL);
	assert_int_equal(droce_query_qp(c.qp[SIDE_A], &a, 0), 0);
	assert_int_equal(a.qp_type, DROCE_QPT_RC);

	/* a GRH area that is neither RoCEv2 IPv4 nor IPv6 */
	uint8_t junk[40] = {1}, ip[16] = {0xEE};
	junk[20] = 0x45;
	assert_int_equal(droce_grh_src_ip(junk, ip), 0);
	assert_int_equal(ip[0], 0xEE);

	/* post_send: UD takes SEND/SEND_WITH_IMM with an AH of its context */
	struct droce_sge sge = {.addr = (uintptr_t)f->u.buf[SIDE_A], .length = 8,
				.lkey = f->u.mr[SIDE_A]->lkey};
	struct droce_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = DROCE_WR_RDMA_WRITE;
	wr.wr.ud.ah = f->u.ah[SIDE_A];
	wr.wr.ud.remote_qpn = 5;
	assert_int_equal(droce_post_send(q, &wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.opcode = DROCE_WR_SEND;
	wr.wr.ud.ah = NULL;
	assert_int_equal(droce_post_send(q, &wr, &bad), -EINVAL);
	wr.wr.ud.ah = f->u.ah[SIDE_B]; /* the other context's */
	assert_int_equal(droce_post_send(q, &wr, &bad), -EINVAL);
	wr.wr.ud.ah = f->u.ah[SIDE_A];
	wr.wr.ud.remote_qpn = 1u << 24;
	assert_int_equal(droce_post_send(q, &wr, &bad), -EINVAL);
	wr.wr.ud.remote_qpn = 5;
	assert_int_equal(droce_post_send(q, &wr, &bad), 0);
	pair_run(p, 1000000);
}

/* A seeded storm of datagrams with a valid ICRC (any Q_Key, P_Key, QPN,
 * length; RC/UC SENDs among them) at a UD QP and the GSI QP, receive WQEs
 * of random sizes posted now and then. A model of the receive rules
 * predicts each frame's fate: one completion exactly as predicted, or one
 * count under the predicted drop reason; no byte past what a completion
 * covers changes (principle 5, docs/architecture.md: bad input counted, never trusted). */
static uint64_t rnd(uint64_t *s)
{
	return droce_splitmix64(s);
}

#define SLOTS 8u
#define SLOT 2048u

struct rq_model {
	uint32_t len[64];
	unsigned slot[64];
	unsigned head, tail;
};

static uint64_t drops_total(struct pair *p, int side)
{
	struct droce_ctx_stats st;
	assert_int_equal(droce_ctx_get_stats(p->ctx[side], &st), 0);
	uint64_t n = 0;
	for (unsigned r = 0; r < DROCE_DROP_REASON_MAX; r++)
		n += st.drop[r];
	return n;
}

static void test_hostile_datagrams(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint64_t seed = 0x5EED0013u;
	struct droce_qp_init_attr ia = {.send_cq = f->u.cq[SIDE_B], .recv_cq = f->u.cq[SIDE_B],
					.qp_type = DROCE_QPT_GSI};
	struct droce_qp *gsi = droce_create_qp(p->ctx[SIDE_B], &ia);
	assert_non_null(gsi);
	p->qps[p->nqps++] = gsi;
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT};
	assert_int_equal(droce_modify_qp(gsi, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(gsi, &a, DROCE_QP_STATE), 0);
	struct droce_qp *qp[2] = {f->u.qp[SIDE_B], gsi};
	const uint32_t qkey[2] = {QKEY_B, DROCE_GSI_QKEY};
	struct rq_model rq[2];
	memset(rq, 0, sizeof(rq));
	uint8_t *buf = f->u.buf[SIDE_B];
	memset(buf, 0xCC, BUF);
	unsigned next_slot = 0, outcomes[8] = {0};
	static const char *const reasons[] = {"UNKNOWN_QPN", "NOT_UD", "BAD_PKEY", "BAD_QKEY",
					      "UD_NO_RWQE", "UD_TOO_LONG"};
	unsigned by_reason[6] = {0};
	static uint8_t pl[SLOT + 64];
	for (unsigned i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 7 + 1);

	for (unsigned n = 0; n < 3000; n++) {
		/* now and then a receive WQE of a random size in a free slot */
		int q = (int)(rnd(&seed) % 2);
		unsigned posted = (rq[0].tail - rq[0].head) + (rq[1].tail - rq[1].head);
		if (posted < SLOTS && rnd(&seed) % 4 != 0) {
			unsigned sl = next_slot++ % SLOTS;
			for (int k = 0; k < 2; k++) /* a slot still posted is skipped */
				for (unsigned j = rq[k].head; j != rq[k].tail; j++)
					if (rq[k].slot[j % 64] == sl)
						sl = SLOTS;
			if (sl < SLOTS) {
				uint32_t len = rnd(&seed) % 4 ? SLOT : (uint32_t)(rnd(&seed) % SLOT) + 1;
				memset(buf + sl * SLOT, 0xCC, SLOT);
				assert_int_equal(post_recv_buf(qp[q], 100 + sl, f->u.mr[SIDE_B], sl * SLOT, len), 0);
				rq[q].len[rq[q].tail % 64] = len;
				rq[q].slot[rq[q].tail % 64] = sl;
				rq[q].tail++;
			}
		}
		/* the datagram */
		uint64_t r = rnd(&seed);
		int target = (int)(r % 8); /* 0-4: UD QP, 5-6: GSI, 7: nobody */
		uint32_t dqpn = target < 5 ? droce_qp_num(qp[0]) : target < 7 ? 1u : 0x777u;
		int t = target < 5 ? 0 : 1;
		uint8_t op = (r >> 8) % 10 == 0 ? DROCE_OP_RC_SEND_ONLY
			     : (r >> 8) % 10 == 1 ? DROCE_OP_UC_SEND_ONLY
			     : (r >> 8) % 10 < 5 ? DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE : DROCE_OP_UD_SEND_ONLY;
		struct droce_hdrs h;
		pair_hdrs(p, SIDE_A, &h, op, dqpn, (uint32_t)(r >> 16));
		h.bth.ack_req = false;
		h.bth.pkey = (r >> 40) % 8 == 0 ? (uint16_t)(r >> 44) : DROCE_DEFAULT_PKEY;
		bool qkey_ok = (r >> 48) % 4 != 0;
		h.ext.deth.qkey = qkey_ok ? qkey[t] : (uint32_t)rnd(&seed);
		qkey_ok = h.ext.deth.qkey == qkey[t];
		h.ext.deth.sqpn = (uint32_t)(r >> 20) & 0xFFFFFFu;
		h.ext.imm = (uint32_t)(r >> 13);
		h.payload_len = (uint32_t)(rnd(&seed) % (rnd(&seed) % 2 ? 256 : SLOT + 1));
		/* the model */
		const char *want = NULL;
		bool pkey_ok = (h.bth.pkey & 0x7FFFu) == 0x7FFFu;
		if (target == 7)
			want = "UNKNOWN_QPN";
		else if (droce_opcode_service(op) != DROCE_SVC_UD)
			want = "NOT_UD";
		else if (!pkey_ok)
			want = "BAD_PKEY";
		else if (!qkey_ok)
			want = "BAD_QKEY";
		else if (rq[t].head == rq[t].tail)
			want = "UD_NO_RWQE";
		else if (GRH + h.payload_len > rq[t].len[rq[t].head % 64])
			want = "UD_TOO_LONG";
		uint64_t before = want ? ctx_drops(p, SIDE_B, want) : 0, all = drops_total(p, SIDE_B);
		assert_int_equal(pair_inject(p, SIDE_A, &h, pl), 0);
		pair_run(p, 1000000);
		struct droce_wc wc[2];
		int got = cq_drain(f->u.cq[SIDE_B], wc, 2);
		if (want) {
			outcomes[0]++;
			for (unsigned k = 0; k < 6; k++)
				by_reason[k] += strcmp(want, reasons[k]) == 0;
			assert_int_equal(got, 0);
			assert_int_equal(ctx_drops(p, SIDE_B, want), before + 1);
			assert_int_equal(drops_total(p, SIDE_B), all + 1);
			continue;
		}
		outcomes[1 + t]++;
		assert_int_equal(got, 1);
		assert_int_equal(drops_total(p, SIDE_B), all);
		unsigned sl = rq[t].slot[rq[t].head % 64];
		rq[t].head++;
		assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
		assert_int_equal(wc[0].wr_id, 100 + sl);
		assert_int_equal(wc[0].qp_num, droce_qp_num(qp[t]));
		assert_int_equal(wc[0].src_qp, h.ext.deth.sqpn);
		assert_int_equal(wc[0].byte_len, GRH + h.payload_len);
		bool imm = op == DROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE;
		assert_int_equal(!!(wc[0].wc_flags & DROCE_WC_WITH_IMM), imm);
		const uint8_t *b = buf + sl * SLOT;
		check_grh(p, b, SIDE_A, h.payload_len, imm);
		assert_memory_equal(b + GRH, pl, h.payload_len);
		for (unsigned k = GRH + h.payload_len; k < SLOT; k++)
			if (b[k] != 0xCC)
				fail_msg("frame %u: byte %u of slot %u written past the datagram", n, k, sl);
	}
	printf("hostile datagrams: %u dropped as predicted, %u to the UD QP, %u to the GSI QP\n",
	       outcomes[0], outcomes[1], outcomes[2]);
	assert_true(outcomes[0] > 500 && outcomes[1] > 100 && outcomes[2] > 100);
	for (unsigned k = 0; k < 6; k++) {
		printf("  %-12s %u\n", reasons[k], by_reason[k]);
		assert_true(by_reason[k] >= 20); /* every rule was exercised */
	}
	for (int k = 0; k < 2; k++)
		assert_int_equal(qp_state(qp[k]), k ? DROCE_QPS_RTR : DROCE_QPS_RTS);
	assert_int_equal(f->u.buf[SIDE_B][BUF], 0x71); /* the guard past the MR */
}

/* An address handle destroyed while datagrams posted with it have not
 * left (verbs programs do this: the handle of a reply, freed at once): the
 * datagrams still go to its address, and nothing reads the freed handle
 * (under ASan the first version, which kept the bare pointer, read freed
 * memory in droce_ud_tx). Also: a handle of another PD than the QP's is
 * refused at post (10.2.3), and one destroyed with its WRs still queued at
 * QP destruction is freed then (ASan's leak check). */
static void test_destroy_ah_before_sent(void **state)
{
	struct fx *f = *state;
	struct pair *p = &f->p;
	uint32_t bqpn = droce_qp_num(f->u.qp[SIDE_B]);
	ud_recv(f, SIDE_B, 1, 0, 2048);
	ud_recv(f, SIDE_B, 2, 2048, 2048);
	struct droce_ah *mine = ah_to(p, SIDE_A);
	struct droce_ah *keep = f->u.ah[SIDE_A];
	f->u.ah[SIDE_A] = mine;
	fill_pattern(f->u.buf[SIDE_A] + 8192, 100, 3);
	assert_int_equal(ud_send(f, SIDE_A, 7, 8192, 100, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(ud_send(f, SIDE_A, 8, 8192, 100, bqpn, QKEY_B, DROCE_WR_SEND, 0), 0);
	assert_int_equal(droce_destroy_ah(mine), 0);
	f->u.ah[SIDE_A] = keep;
	struct droce_wc wc[4];
	assert_int_equal(drain(f, SIDE_A, wc, 4), 2);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(wc[1].status, DROCE_WC_SUCCESS);
	assert_int_equal(cq_drain(f->u.cq[SIDE_B], wc, 4), 2);
	assert_int_equal(wc[0].status, DROCE_WC_SUCCESS);
	assert_int_equal(check_pattern(f->u.buf[SIDE_B] + GRH, 100, 3), -1);

	/* Another PD's handle. */
	struct droce_pd *pd = droce_alloc_pd(p->ctx[SIDE_A]);
	struct droce_ah_attr aa = {.ip_version = p->ip_version};
	struct droce_ah *other = droce_create_ah_pd(pd, &aa);
	assert_non_null(other);
	f->u.ah[SIDE_A] = other;
	assert_int_equal(ud_send(f, SIDE_A, 9, 8192, 100, bqpn, QKEY_B, DROCE_WR_SEND, 0), -EINVAL);
	f->u.ah[SIDE_A] = keep;
	assert_int_equal(droce_destroy_ah(other), 0);
	assert_int_equal(droce_dealloc_pd(pd), 0);

	/* Queued, the handle destroyed, then the QP: the WQE's reference goes with it. */
	struct droce_cq *cq = droce_create_cq(p->ctx[SIDE_A], 16);
	p->cqs[p->ncqs++] = cq;
	struct droce_qp *q = ud_qp(p, SIDE_A, cq, DROCE_QPT_UD, QKEY_A, DROCE_MTU_1024);
	p->nqps--; /* destroyed here */
	struct droce_ah *gone = ah_to(p, SIDE_A);
	f->u.ah[SIDE_A] = gone;
	assert_int_equal(ud_post(f, q, SIDE_A, 10, 8192, 100, f->u.mr[SIDE_A]->lkey, bqpn, QKEY_B,
				 DROCE_WR_SEND, 0), 0);
	f->u.ah[SIDE_A] = keep;
	assert_int_equal(droce_destroy_ah(gone), 0);
	assert_int_equal(droce_destroy_qp(q), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_recv, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_send_recv_ipv6, setup6, teardown),
		cmocka_unit_test_setup_teardown(test_qkey, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_no_rwqe, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_too_long, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_gsi, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_send_error_sqe, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_api_errors, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_datagrams, setup4, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_ah_before_sent, setup4, teardown),
	};
	return droce_test_run(__FILE__, tests, sizeof(tests) / sizeof(tests[0]));
}
