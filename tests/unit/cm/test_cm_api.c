/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The public CM API (include/droce/cm.h) end to end: two contexts whose
 * RC QPs talk over the in-memory link (stack/net/link/memlink.h) and whose CM
 * services exchange MADs either over QP1 on that same link (droce_cm_open:
 * UD SENDs to the GSI QP, the *_qp1 tests) or over an in-memory datagram
 * channel (droce_cm_open_path) which can drop MADs or refuse them for a
 * while; a virtual clock; a resolver that answers from a table, late, or
 * never. Every test checks the events and the QPs' attributes the
 * connection left behind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <droce/droce.h>

#include "cm/mad.h"
#include "req_mad.h"
#include "cm/svc.h"
#include "net/link/memlink.h"
#include "wire/opcode.h"
#include "wire/parse.h"

#define QLEN 64

/* One direction of the MAD channel. */
struct madq {
	struct droce_mad_in q[QLEN];
	unsigned head, len;
	unsigned drop_all;  /* drop every MAD sent this way */
	uint8_t drop_attr;  /* drop MADs of this attribute ID (low byte), 0: none */
	unsigned busy;      /* refuse (-EAGAIN) this many sends first */
	unsigned sent, refused, dropped;
	uint8_t last_attr;  /* attribute ID (low byte) of the last MAD sent */
	uint16_t last_rej_reason; /* of the last REJ sent */
	uint8_t blocked_ip[4]; /* MADs to it: -EINPROGRESS (its MAC being resolved) */
	unsigned refused_blocked;
};

struct side {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_mr *mr;
	struct droce_qp *qp;
	uint8_t buf[4096];
	uint8_t ip[16], mac[6];
	struct madq *tx, *rx;
	struct droce_cm_addr me;
	/* resolver behaviour */
	int resolve_result;      /* 0: answer, -EAGAIN: not yet, other: error */
	unsigned resolve_late;   /* answer -EAGAIN this many times first */
	unsigned resolve_calls;
	const struct side *peer;
};

struct bed {
	bool qp1;               /* MADs over the GSI QP, not the channel */
	unsigned frames_qp1[2]; /* UD SEND_ONLY frames to QPN 1 per direction, checked */
	struct droce_memlink *ml;
	struct side s[2];
	struct madq q[2];
	uint64_t now;
};

/* The starting PSNs of the last REQ and REP put on the wire (12.6.5 byte 68,
 * 12.6.8 byte 44), so a test can check which direction each one names. */
static uint32_t wire_psn[2];
static bool wire_psn_seen[2];

static void note_psn(const uint8_t *mad)
{
	unsigned attr = (unsigned)mad[16] << 8 | mad[17];
	int i = attr == 0x0010 ? 0 : attr == 0x0013 ? 1 : -1;
	unsigned off = i == 0 ? 68 : 44;
	if (i < 0)
		return;
	wire_psn[i] = (uint32_t)mad[off] << 16 | (uint32_t)mad[off + 1] << 8 | mad[off + 2];
	wire_psn_seen[i] = true;
}

static int path_send(void *priv, const struct droce_cm_out *out, uint64_t now)
{
	struct side *s = priv;
	struct madq *q = s->tx;
	if (q->busy) {
		q->busy--;
		q->refused++;
		return -EAGAIN;
	}
	static const uint8_t none[4];
	if (memcmp(q->blocked_ip, none, 4) != 0 && memcmp(out->dst.ip, q->blocked_ip, 4) == 0) {
		q->refused_blocked++;
		return -EINPROGRESS;
	}
	q->last_attr = out->mad[17];
	if (out->mad[17] == 0x12)
		q->last_rej_reason = (uint16_t)(out->mad[34] << 8 | out->mad[35]);
	q->sent++;
	note_psn(out->mad);
	if (q->drop_all || (q->drop_attr && q->drop_attr == out->mad[17])) {
		q->dropped++;
		return 0;
	}
	assert_true(q->len < QLEN);
	struct droce_mad_in *in = &q->q[(q->head + q->len++) % QLEN];
	in->src = s->me;
	in->qkey = out->qkey;
	in->len = DROCE_MAD_LEN;
	memcpy(in->mad, out->mad, DROCE_MAD_LEN);
	return 0;
}

static int path_recv(void *priv, struct droce_mad_in *in, uint64_t now)
{
	struct madq *q = ((struct side *)priv)->rx;
	if (!q->len)
		return 0;
	*in = q->q[q->head];
	q->head = (q->head + 1) % QLEN;
	q->len--;
	return 1;
}

static const struct droce_mad_path_ops path_ops = {path_send, path_recv, NULL};

static int resolver(void *arg, uint8_t ipv, const uint8_t ip[16], uint8_t mac[6], uint64_t now)
{
	struct side *s = arg;
	s->resolve_calls++;
	if (s->resolve_late) {
		s->resolve_late--;
		return -EAGAIN;
	}
	if (s->resolve_result)
		return s->resolve_result;
	if (memcmp(ip, s->peer->ip, ipv == 4 ? 4 : 16) != 0)
		return -EHOSTUNREACH;
	memcpy(mac, s->peer->mac, 6);
	return 0;
}

static void side_open(struct bed *b, unsigned i, const struct droce_cm_conf *cf)
{
	struct side *s = &b->s[i];
	s->ip[0] = 10, s->ip[3] = (uint8_t)(i + 1);
	uint8_t mac[6] = {2, 0, 0, 0, 0, (uint8_t)(i + 1)};
	memcpy(s->mac, mac, 6);
	s->tx = &b->q[i];
	s->rx = &b->q[1 - i];
	s->peer = &b->s[1 - i];
	s->me.ip_version = 4;
	memcpy(s->me.ip, s->ip, 16);
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	memcpy(p.ip, s->ip, 16);
	memcpy(p.mac, s->mac, 6);
	p.link = droce_memlink_end(b->ml, i);
	s->ctx = droce_ctx_create(&p);
	assert_non_null(s->ctx);
	s->cq = droce_create_cq(s->ctx, 64);
	s->mr = droce_reg_mr(s->ctx, s->buf, sizeof(s->buf),
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ);
	struct droce_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq};
	s->qp = droce_create_qp(s->ctx, &ia);
	assert_non_null(s->qp);
	struct droce_cm_conf c;
	if (cf)
		c = *cf;
	else
		droce_cm_conf_init(&c);
	c.resolve = resolver;
	c.resolve_arg = s;
	struct droce_mad_path path = {&path_ops, s};
	if (b->qp1)
		assert_int_equal(droce_cm_open(s->ctx, &c), 0);
	else
		assert_int_equal(droce_cm_open_path(s->ctx, &c, path), 0);
}

/* Every frame on the link: a MAD must be a UD SEND_ONLY from QP1 to QP1
 * with QP1's Q_Key (DETH), 256 bytes of payload, a CM MAD that decodes. */
static void tap(void *arg, enum droce_memlink_dir dir, const uint8_t *f, uint32_t len,
		enum droce_impair_action fate, int corrupted)
{
	struct bed *b = arg;
	struct droce_pkt pkt;
	assert_int_equal(droce_parse(f, len, &pkt, 0), DROCE_PARSE_OK);
	if (pkt.h.bth.dqpn != DROCE_GSI_QPN)
		return;
	assert_int_equal(pkt.h.bth.opcode, DROCE_OP_UD_SEND_ONLY);
	assert_int_equal(pkt.h.ext.deth.qkey, DROCE_GSI_QKEY);
	assert_int_equal(pkt.h.ext.deth.sqpn, DROCE_GSI_QPN);
	assert_int_equal(pkt.h.payload_len, DROCE_MAD_LEN);
	struct droce_cm_msg m;
	assert_int_equal(droce_mad_decode(pkt.payload, pkt.h.payload_len, &m), DROCE_MAD_OK);
	note_psn(pkt.payload);
	b->frames_qp1[dir]++;
}

static struct bed *bed_new_on(const struct droce_cm_conf *cf, bool qp1)
{
	static struct bed b;
	memset(&b, 0, sizeof(b));
	b.qp1 = qp1;
	b.ml = droce_memlink_create(NULL);
	assert_non_null(b.ml);
	droce_memlink_set_tap(b.ml, tap, &b);
	side_open(&b, 0, cf);
	side_open(&b, 1, cf);
	b.now = 1000;
	return &b;
}

static bool over_qp1;
static struct bed *bed_new(const struct droce_cm_conf *cf)
{
	return bed_new_on(cf, over_qp1);
}

static void bed_free(struct bed *b)
{
	droce_ctx_destroy(b->s[0].ctx); /* the CM service with it */
	droce_ctx_destroy(b->s[1].ctx);
	droce_memlink_destroy(b->ml);
}

/* One turn of both poll loops; the clock moves to the next deadline when idle. */
static void turn(struct bed *b)
{
	unsigned n = droce_ctx_poll(b->s[0].ctx, b->now) + droce_ctx_poll(b->s[1].ctx, b->now);
	if (n || b->q[0].len || b->q[1].len) {
		b->now += 1000;
		return;
	}
	uint64_t t0 = droce_ctx_next_deadline(b->s[0].ctx), t1 = droce_ctx_next_deadline(b->s[1].ctx);
	uint64_t t = t0 < t1 ? t0 : t1;
	b->now = t != UINT64_MAX && t > b->now ? t : b->now + 1000;
}

/* Run until side @p i has an event (within a bound), return it. */
static struct droce_conn_event next_event(struct bed *b, unsigned i)
{
	struct droce_conn_event ev;
	for (int k = 0; k < 100000; k++) {
		int r = droce_get_cm_event(b->s[i].ctx, &ev);
		assert_true(r >= 0);
		if (r == 1)
			return ev;
		turn(b);
	}
	fail_msg("side %u: no CM event", i);
	return ev;
}

static void no_event(struct bed *b, unsigned i)
{
	struct droce_conn_event ev;
	assert_int_equal(droce_get_cm_event(b->s[i].ctx, &ev), 0);
}

static struct droce_addr addr_of(const struct side *s, uint16_t port)
{
	struct droce_addr a = {.ip_version = 4, .port = port};
	memcpy(a.ip, s->ip, 16);
	return a;
}

static enum droce_qp_state qp_state(struct droce_qp *qp)
{
	struct droce_qp_attr a;
	assert_int_equal(droce_query_qp(qp, &a, 0), 0);
	return a.qp_state;
}

/* Connect A's QP to B's listener; B accepts with @p bp. Both ESTABLISHED. */
static void handshake(struct bed *b, const struct droce_conn_param *ap,
		      const struct droce_conn_param *bp, int *aconn, int *bconn)
{
	int l = droce_listen(b->s[1].ctx, 7471);
	assert_true(l >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	*aconn = droce_connect(b->s[0].qp, &dst, ap, b->now);
	assert_true(*aconn >= 0);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(ev.listen_id, l);
	*bconn = ev.conn;
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, bp, b->now), 0);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, *aconn);
	assert_ptr_equal(ev.qp, b->s[0].qp);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, *bconn);
	assert_ptr_equal(ev.qp, b->s[1].qp);
}

/* A SEND from A reaches B's posted receive. */
static void send_works(struct bed *b)
{
	struct side *a = &b->s[0], *c = &b->s[1];
	struct droce_sge rs = {(uintptr_t)c->buf, 64, c->mr->lkey};
	struct droce_recv_wr rwr = {.wr_id = 7, .sg_list = &rs, .num_sge = 1}, *bad_r;
	assert_int_equal(droce_post_recv(c->qp, &rwr, &bad_r), 0);
	memcpy(a->buf, "over the CM", 12);
	struct droce_sge ss = {(uintptr_t)a->buf, 12, a->mr->lkey};
	struct droce_send_wr swr = {.wr_id = 8, .sg_list = &ss, .num_sge = 1,
				    .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	assert_int_equal(droce_post_send(a->qp, &swr, &bad), 0);
	struct droce_wc wc;
	int got = 0;
	for (int k = 0; k < 10000 && !got; k++) {
		turn(b);
		got = droce_poll_cq(c->cq, 1, &wc);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, DROCE_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 12);
	assert_memory_equal(c->buf, "over the CM", 12);
}

static void test_handshake_attributes(void **st)
{
	struct bed *b = bed_new(NULL);
	struct droce_conn_param ap, bp;
	droce_conn_param_init(&ap);
	ap.private_data = "hello from A";
	ap.private_data_len = 13;
	ap.responder_resources = 3;
	ap.initiator_depth = 5;
	ap.retry_count = 6;
	ap.rnr_retry_count = 4;
	ap.path_mtu = DROCE_MTU_2048;
	ap.ack_timeout = 12;
	ap.src_port = 40000;
	droce_conn_param_init(&bp);
	bp.private_data = "welcome, A";
	bp.private_data_len = 11;
	bp.responder_resources = 8; /* clamped to A's initiator depth 5 */
	bp.initiator_depth = 2;     /* under A's responder resources 3: kept */
	bp.rnr_retry_count = 5;

	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, &ap, b->now);
	assert_true(ac >= 0);
	/* INIT at once: receives may be posted before the connection is up */
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_INIT);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_string_equal(droce_conn_event_str(ev.type), "REQUEST");
	assert_null(ev.qp);
	assert_int_equal(ev.peer.ip_version, 4);
	assert_memory_equal(ev.peer.ip, b->s[0].ip, 4);
	assert_int_equal(ev.peer.port, 40000);
	assert_int_equal(ev.local_port, 7471);
	assert_int_equal(ev.responder_resources, 3);
	assert_int_equal(ev.initiator_depth, 5);
	assert_int_equal(ev.path_mtu, DROCE_MTU_2048);
	assert_true(ev.private_data_len >= 13); /* the REQ's 56 bytes, zero-padded */
	assert_string_equal((char *)ev.private_data, "hello from A");
	int bc = ev.conn;
	assert_int_equal(droce_accept(b->s[1].ctx, bc, b->s[1].qp, &bp, b->now), 0);
	/* the passive QP is in RTS before its REP leaves (rdma_cm's cma_accept_ib) */
	assert_int_equal(qp_state(b->s[1].qp), DROCE_QPS_RTS);

	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, ac);
	assert_string_equal((char *)ev.private_data, "welcome, A"); /* the REP's */
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, bc);

	struct droce_qp_attr qa, qb;
	assert_int_equal(droce_query_qp(b->s[0].qp, &qa, 0), 0);
	assert_int_equal(droce_query_qp(b->s[1].qp, &qb, 0), 0);
	assert_int_equal(qa.qp_state, DROCE_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, droce_qp_num(b->s[1].qp));
	assert_int_equal(qb.dest_qp_num, droce_qp_num(b->s[0].qp));
	assert_int_equal(qa.sq_psn, qb.rq_psn);
	assert_int_equal(qb.sq_psn, qa.rq_psn);
	/* The REP's starting PSN is the one the active side sends with, the
	 * REQ's the one the passive side sends with (Linux ib_cm: ib_send_cm_req
	 * rq_psn = REQ's, cm_req_handler sq_psn = REQ's, ib_send_cm_rep rq_psn
	 * = REP's, cm_rep_handler sq_psn = REP's; rxe's first WRITE in the
	 * corpus capture carries its peer's REP PSN): */
	assert_true(wire_psn_seen[0] && wire_psn_seen[1]);
	assert_int_equal(qa.sq_psn, wire_psn[1]);
	assert_int_equal(qa.rq_psn, wire_psn[0]);
	assert_int_equal(qb.sq_psn, wire_psn[0]);
	assert_int_equal(qb.rq_psn, wire_psn[1]);
	assert_int_equal(qa.path_mtu, DROCE_MTU_2048);
	assert_int_equal(qb.path_mtu, DROCE_MTU_2048); /* the REQ's */
	/* 12.6.8: B accepts 5 (A's depth), issues 2; A accepts 2, issues 5 */
	assert_int_equal(qb.max_dest_rd_atomic, 5);
	assert_int_equal(qb.max_rd_atomic, 2);
	assert_int_equal(qa.max_dest_rd_atomic, 2);
	assert_int_equal(qa.max_rd_atomic, 5);
	assert_int_equal(qa.retry_cnt, 6);
	assert_int_equal(qb.retry_cnt, 6);     /* the REQ's for both */
	assert_int_equal(qa.rnr_retry, 5);     /* what B's REP allows */
	assert_int_equal(qb.rnr_retry, 4);     /* what A's REQ allows */
	assert_int_equal(qa.timeout, 12);
	assert_int_equal(qb.timeout, 12);
	assert_memory_equal(qa.ah_attr.dst_ip, b->s[1].ip, 4);
	assert_memory_equal(qa.ah_attr.dst_mac, b->s[1].mac, 6);
	assert_memory_equal(qb.ah_attr.dst_ip, b->s[0].ip, 4);
	assert_memory_equal(qb.ah_attr.dst_mac, b->s[0].mac, 6);
	send_works(b);

	struct droce_cm_counters c;
	assert_int_equal(droce_cm_get_counters(b->s[0].ctx, &c), 0);
	assert_int_equal(c.mads_tx, 2); /* REQ, RTU */
	assert_int_equal(c.mads_rx, 1); /* REP */
	assert_int_equal(c.conns, 1);
	assert_int_equal(droce_cm_get_counters(b->s[1].ctx, &c), 0);
	assert_int_equal(c.mads_tx, 1);
	assert_int_equal(c.mads_rx, 2);
	if (b->qp1) { /* REQ, RTU one way, REP the other: UD to QP1 on the wire */
		assert_int_equal(b->frames_qp1[0], 2);
		assert_int_equal(b->frames_qp1[1], 1);
	}
	bed_free(b);
}

static void test_reject(void **st)
{
	struct bed *b = bed_new(NULL);
	assert_true(droce_listen(b->s[1].ctx, 9000) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 9000);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_reject(b->s[1].ctx, ev.conn, "go away", 8, b->now), 0);
	/* the REJ waits for the next poll, and says so */
	struct droce_cm_counters k;
	assert_int_equal(droce_cm_get_counters(b->s[1].ctx, &k), 0);
	assert_int_equal(k.mads_pending, 1);
	assert_int_equal(droce_ctx_next_deadline(b->s[1].ctx), 0);
	droce_ctx_poll(b->s[1].ctx, b->now);
	assert_int_equal(droce_cm_get_counters(b->s[1].ctx, &k), 0);
	assert_int_equal(k.mads_pending, 0);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), -EINVAL);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_REJECTED);
	assert_int_equal(ev.conn, ac);
	assert_int_equal(ev.status, 28); /* consumer defined */
	assert_string_equal((char *)ev.private_data, "go away");
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	for (int k = 0; k < 50; k++)
		turn(b);
	no_event(b, 0);
	no_event(b, 1);
	bed_free(b);
}

static void test_no_listener(void **st)
{
	struct bed *b = bed_new(NULL);
	struct droce_addr dst = addr_of(&b->s[1], 1234);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	struct droce_conn_event ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_REJECTED);
	assert_int_equal(ev.status, 8); /* invalid service ID: rdma_cm's ECONNREFUSED */
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	no_event(b, 1);
	bed_free(b);
}

static void test_unlisten(void **st)
{
	/* a listener stopped: REQs for its port get REJ 8; the port can be listened on again */
	struct bed *b = bed_new(NULL);
	int l = droce_listen(b->s[1].ctx, 7471);
	assert_true(l >= 0);
	assert_int_equal(droce_unlisten(b->s[1].ctx, l), 0);
	assert_int_equal(droce_unlisten(b->s[1].ctx, l), -EINVAL);
	assert_int_equal(droce_unlisten(b->s[1].ctx, -1), -EINVAL);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	assert_true(droce_connect(b->s[0].qp, &dst, NULL, b->now) >= 0);
	struct droce_conn_event ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_REJECTED);
	assert_int_equal(ev.status, 8);
	no_event(b, 1);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0); /* free again */
	bed_free(b);
}

static void test_disconnect(void **st)
{
	struct bed *b = bed_new(NULL);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	/* a receive posted on B flushes when B's QP goes to ERR */
	struct droce_sge rs = {(uintptr_t)b->s[1].buf, 64, b->s[1].mr->lkey};
	struct droce_recv_wr rwr = {.wr_id = 99, .sg_list = &rs, .num_sge = 1}, *bad_r;
	assert_int_equal(droce_post_recv(b->s[1].qp, &rwr, &bad_r), 0);
	assert_int_equal(droce_disconnect(b->s[0].ctx, ac, b->now), 0);
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	assert_int_equal(droce_disconnect(b->s[0].ctx, ac, b->now), -EBADFD);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(ev.conn, bc);
	assert_int_equal(qp_state(b->s[1].qp), DROCE_QPS_ERR);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(ev.conn, ac);
	struct droce_wc wc;
	int n = droce_poll_cq(b->s[1].cq, 1, &wc);
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 99);
	assert_int_equal(wc.status, DROCE_WC_WR_FLUSH_ERR);
	/* the QPs are held through TIMEWAIT: no reuse yet */
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	struct droce_qp_attr r = {.qp_state = DROCE_QPS_RESET};
	assert_int_equal(droce_modify_qp(b->s[0].qp, &r, DROCE_QP_STATE), 0);
	assert_int_equal(droce_connect(b->s[0].qp, &dst, NULL, b->now), -EBUSY);
	assert_int_equal(droce_disconnect(b->s[0].ctx, ac, b->now), -EBADFD);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(ev.conn, ac);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(ev.conn, bc);
	/* the ids are free again: the same QPs connect once more */
	assert_int_equal(droce_modify_qp(b->s[1].qp, &r, DROCE_QP_STATE), 0);
	ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_ESTABLISHED);
	send_works(b);
	bed_free(b);
}

static void test_qp_destroyed_in_timewait(void **st)
{
	/* rping destroys its QP right after DISCONNECTED: the CM must not
	 * touch it again at TIMEWAIT_EXIT (the sanitizer run sees a touch) */
	struct bed *b = bed_new(NULL);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	assert_int_equal(droce_disconnect(b->s[0].ctx, ac, b->now), 0);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(droce_destroy_qp(b->s[0].qp), 0);
	assert_int_equal(droce_destroy_qp(b->s[1].qp), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_TIMEWAIT_EXIT);
	bed_free(b);
}

static void test_qp_destroyed_while_connected(void **st)
{
	/* perftest destroys the QPs of connections still up, then disconnects:
	 * neither side may touch them (the sanitizer run sees a touch) */
	struct bed *b = bed_new(NULL);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	assert_int_equal(droce_destroy_qp(b->s[0].qp), 0);
	assert_int_equal(droce_destroy_qp(b->s[1].qp), 0);
	assert_int_equal(droce_disconnect(b->s[0].ctx, ac, b->now), 0);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_TIMEWAIT_EXIT);
	bed_free(b);
}

static void test_unreachable(void **st)
{
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.resolve_timeout_ns = 50000000; /* 50 ms */
	struct bed *b = bed_new(&cf);
	/* no answer ever: UNREACHABLE once the resolve timeout passed, no MAD sent */
	b->s[0].resolve_result = -EAGAIN;
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	uint64_t t0 = b->now;
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	struct droce_conn_event ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_UNREACHABLE);
	assert_int_equal(ev.conn, ac);
	assert_int_equal(ev.status, -ETIMEDOUT);
	assert_true(b->now >= t0 + 50000000);
	assert_true(b->s[0].resolve_calls > 10); /* asked again, not once */
	assert_int_equal(b->q[0].sent, 0);
	assert_int_equal(b->frames_qp1[0], 0);
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	/* a resolver that knows at once it cannot: UNREACHABLE with its error */
	struct droce_qp_attr r = {.qp_state = DROCE_QPS_RESET};
	assert_int_equal(droce_modify_qp(b->s[0].qp, &r, DROCE_QP_STATE), 0);
	b->s[0].resolve_result = -ENETUNREACH;
	ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_UNREACHABLE);
	assert_int_equal(ev.status, -ENETUNREACH);
	struct droce_cm_counters c;
	assert_int_equal(droce_cm_get_counters(b->s[0].ctx, &c), 0);
	assert_int_equal(c.resolve_failed, 2);
	assert_int_equal(c.conns, 0);
	bed_free(b);
}

static void test_resolve_late(void **st)
{
	struct bed *b = bed_new(NULL);
	b->s[0].resolve_late = 5; /* ARP answers after a few polls */
	b->s[1].resolve_late = 3; /* and on the passive side too */
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	assert_true(b->s[0].resolve_calls >= 6);
	assert_true(b->s[1].resolve_calls >= 4);
	send_works(b);
	bed_free(b);
}

static void test_peer_vanishes(void **st)
{
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.response_timeout = 10; /* ~4 ms per try */
	cf.max_cm_retries = 3;
	struct bed *b = bed_new(&cf);
	b->q[0].drop_all = 1; /* nothing of A's reaches B */
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	struct droce_conn_event ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_TIMEOUT);
	assert_int_equal(ev.conn, ac);
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	assert_int_equal(b->q[0].sent, 1 + 3 + 1); /* REQ, 3 resends, the timeout REJ */
	struct droce_cm_counters c;
	assert_int_equal(droce_cm_get_counters(b->s[0].ctx, &c), 0);
	assert_int_equal(c.retransmits, 3);
	assert_int_equal(c.conns, 0);
	bed_free(b);
}

static void test_passive_timeout(void **st)
{
	/* the link dies once B has the REQ: B's REP and A's resent REQs are
	 * lost, each side times out by itself and neither keeps a QP in RTS */
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.response_timeout = 10;
	cf.max_cm_retries = 2;
	struct bed *b = bed_new(&cf);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	b->q[0].drop_all = 1;
	b->q[1].drop_all = 1;
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_TIMEOUT);
	assert_int_equal(qp_state(b->s[1].qp), DROCE_QPS_ERR);
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_TIMEOUT);
	assert_int_equal(ev.conn, ac);
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_ERR);
	bed_free(b);
}

static void test_path_busy(void **st)
{
	/* the datagram path refuses for a while: MADs are held, in order */
	struct bed *b = bed_new(NULL);
	b->q[0].busy = 4;
	b->q[1].busy = 4;
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	assert_int_equal(b->q[0].refused, 4);
	assert_int_equal(b->q[1].refused, 4);
	assert_int_equal(b->q[0].sent, 2); /* REQ, RTU: nothing lost, nothing resent */
	assert_int_equal(b->q[1].sent, 1);
	send_works(b);
	bed_free(b);
}

static void test_lost_rtu(void **st)
{
	/* every RTU lost: B's REP is resent, A answers it with the RTU again */
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.response_timeout = 10;
	struct bed *b = bed_new(&cf);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	struct droce_conn_event ev = next_event(b, 1);
	int bc = ev.conn;
	assert_int_equal(droce_accept(b->s[1].ctx, bc, b->s[1].qp, NULL, b->now), 0);
	b->q[0].drop_attr = 0x14; /* the first RTU is lost */
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, ac);
	assert_int_equal(b->q[0].last_attr, 0x14);
	assert_int_equal(b->q[0].dropped, 1);
	b->q[0].drop_attr = 0;
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, bc);
	assert_int_equal(b->q[1].sent, 2);  /* the REP, once more */
	assert_int_equal(b->q[0].sent, 3);  /* REQ, RTU, RTU again */
	send_works(b);
	bed_free(b);
}

static void test_all_rtus_lost_data_flows(void **st)
{
	/* every RTU lost, but A sends at once: B's QP receives, which is
	 * COMM_EST (IBTA 12.9): B is ESTABLISHED without an RTU, its REP
	 * retries stop, nothing times out, A stays connected */
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.response_timeout = 10;
	cf.max_cm_retries = 2;
	struct bed *b = bed_new(&cf);
	b->q[0].drop_attr = 0x14;
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	struct droce_conn_event ev = next_event(b, 1);
	int bc = ev.conn;
	assert_int_equal(droce_accept(b->s[1].ctx, bc, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	send_works(b);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.conn, bc);
	uint64_t until = b->now + 200000000; /* past every REP retry */
	while (b->now < until)
		turn(b);
	no_event(b, 0);
	no_event(b, 1);
	assert_int_equal(qp_state(b->s[0].qp), DROCE_QPS_RTS);
	assert_int_equal(qp_state(b->s[1].qp), DROCE_QPS_RTS);
	assert_int_equal(droce_disconnect(b->s[1].ctx, bc, b->now), 0); /* and it ends cleanly */
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_DISCONNECTED);
	(void)ac;
	bed_free(b);
}

static void test_errors(void **st)
{
	struct bed *b = bed_new(NULL);
	struct droce_ctx *a = b->s[0].ctx;
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	struct droce_conn_param p;
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.resolve = resolver;
	struct droce_mad_path path = {&path_ops, &b->s[0]};
	assert_int_equal(droce_cm_open_path(a, &cf, path), -EEXIST);
	assert_int_equal(droce_cm_open(NULL, &cf), -EINVAL);
	cf.resolve = NULL;
	assert_int_equal(droce_cm_open(a, &cf), -EINVAL);

	assert_true(droce_listen(a, 80) >= 0);
	assert_int_equal(droce_listen(a, 80), -EADDRINUSE);
	assert_int_equal(droce_connect(NULL, &dst, NULL, b->now), -EINVAL);
	assert_int_equal(droce_connect(b->s[0].qp, NULL, NULL, b->now), -EINVAL);
	droce_conn_param_init(&p);
	p.private_data = b->s[0].buf;
	p.private_data_len = 57;
	assert_int_equal(droce_connect(b->s[0].qp, &dst, &p, b->now), -EINVAL);
	p.private_data_len = 56;
	p.path_mtu = 6;
	assert_int_equal(droce_connect(b->s[0].qp, &dst, &p, b->now), -EINVAL);
	p.path_mtu = DROCE_MTU_1024;
	p.retry_count = 8;
	assert_int_equal(droce_connect(b->s[0].qp, &dst, &p, b->now), -EINVAL);
	struct droce_addr v6 = dst;
	v6.ip_version = 6;
	assert_int_equal(droce_connect(b->s[0].qp, &v6, NULL, b->now), -EINVAL);
	assert_int_equal(droce_get_cm_event(a, NULL), -EINVAL);
	assert_int_equal(droce_accept(a, 0, b->s[0].qp, NULL, b->now), -EINVAL); /* no such id */
	assert_int_equal(droce_accept(a, -1, b->s[0].qp, NULL, b->now), -EINVAL);
	assert_int_equal(droce_reject(a, 5, NULL, 0, b->now), -EINVAL);
	assert_int_equal(droce_disconnect(a, 63, b->now), -EINVAL);

	/* a QP with a connection under way is busy; an active id is not passive */
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	assert_int_equal(droce_connect(b->s[0].qp, &dst, NULL, b->now), -EBUSY);
	assert_int_equal(droce_accept(a, ac, b->s[0].qp, NULL, b->now), -EBADFD);
	assert_int_equal(droce_reject(a, ac, NULL, 0, b->now), -EBADFD);
	assert_int_equal(droce_disconnect(a, ac, b->now), -EBADFD); /* not established yet */
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	/* accept: the QP must be RESET/INIT, of this context, with pd <= 196 */
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[0].qp, NULL, b->now), -EINVAL);
	p.private_data_len = 197;
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, &p, b->now), -EINVAL);
	assert_int_equal(droce_reject(b->s[1].ctx, ev.conn, b->s[1].buf, 149, b->now), -EINVAL);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), -EBADFD);
	assert_int_equal(droce_reject(b->s[1].ctx, ev.conn, NULL, 0, b->now), -EBADFD);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_ESTABLISHED);
	/* a QP in RTS can not connect again */
	struct droce_qp_init_attr ia = {.send_cq = b->s[0].cq, .recv_cq = b->s[0].cq};
	struct droce_qp *q2 = droce_create_qp(a, &ia);
	assert_non_null(q2);
	assert_int_equal(droce_connect(b->s[0].qp, &dst, NULL, b->now), -EBUSY);
	assert_int_equal(droce_disconnect(a, ac, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(droce_connect(b->s[0].qp, &dst, NULL, b->now), -EBUSY); /* TIMEWAIT */
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(droce_connect(b->s[0].qp, &dst, NULL, b->now), -EINVAL); /* in ERR */
	assert_string_equal(droce_conn_event_str(99), "UNKNOWN");

	/* close: the calls say there is no CM */
	assert_int_equal(droce_cm_close(a), 0);
	assert_int_equal(droce_cm_close(a), -EINVAL);
	assert_int_equal(droce_listen(a, 81), -EINVAL);
	assert_int_equal(droce_connect(q2, &dst, NULL, b->now), -EINVAL);
	struct droce_cm_counters c;
	assert_int_equal(droce_cm_get_counters(a, &c), -EINVAL);
	bed_free(b);
}

static void test_full(void **st)
{
	/* max_conns 1: one connection a side (listeners are not counted); a
	 * second connect is -ENOSPC */
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.max_conns = 1;
	struct bed *b = bed_new(&cf);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	struct droce_qp_init_attr ia = {.send_cq = b->s[0].cq, .recv_cq = b->s[0].cq};
	struct droce_qp *q2 = droce_create_qp(b->s[0].ctx, &ia);
	assert_int_equal(droce_connect(q2, &dst, NULL, b->now), -ENOSPC);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_ESTABLISHED);
	bed_free(b);
}

/* ---- stale QP identity, full tables, parked MADs, the GRH area ---- */

/* A's QP is destroyed while its connection is up and, later, a new one
 * gets the same index (they rotate, but come back; its QPN's random tag
 * differs), and from malloc most likely the same address. The old connection's DISCONNECTED must leave
 * the new QP alone; before, the CM compared pointer, index and QPN, all
 * three reused, and moved the new QP to ERR. */
static void test_stale_qp_not_touched(void **st)
{
	struct bed *b = bed_new(NULL);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	uint32_t qpn = droce_qp_num(b->s[0].qp);
	assert_int_equal(droce_destroy_qp(b->s[0].qp), 0);
	/* indexes rotate: create and destroy until the old table slot (the
	 * QPN's low 11 bits with 1024 QPs) comes back, as it does once the
	 * others have been used */
	struct droce_qp_init_attr ia = {.send_cq = b->s[0].cq, .recv_cq = b->s[0].cq};
	struct droce_qp *fresh = NULL;
	for (int k = 0; k < 70000 && !fresh; k++) {
		struct droce_qp *q = droce_create_qp(b->s[0].ctx, &ia);
		assert_non_null(q);
		if (((droce_qp_num(q) ^ qpn) & 0x7FFu) == 0)
			fresh = q;
		else
			assert_int_equal(droce_destroy_qp(q), 0);
	}
	assert_non_null(fresh);
	/* in use by the application (a QP in RESET the CM leaves alone anyway) */
	struct droce_qp_attr qa = {.qp_state = DROCE_QPS_INIT, .pkey = DROCE_DEFAULT_PKEY,
				   .qp_access_flags = DROCE_ACCESS_REMOTE_WRITE};
	assert_int_equal(droce_modify_qp(fresh, &qa, DROCE_QP_STATE | DROCE_QP_PKEY | DROCE_QP_ACCESS_FLAGS), 0);
	assert_int_equal(droce_disconnect(b->s[1].ctx, bc, b->now), 0);
	struct droce_conn_event ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_DISCONNECTED);
	assert_int_equal(qp_state(fresh), DROCE_QPS_INIT);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_TIMEWAIT_EXIT);
	assert_int_equal(qp_state(fresh), DROCE_QPS_INIT);
	b->s[0].qp = fresh; /* freed with the context */
	bed_free(b);
}

/* B's QP is destroyed while its connection is up and a new one is made
 * for the next connection: accepting on it must work (before: -EBUSY when
 * malloc gave the new QP the old one's address). */
static void test_new_qp_not_busy(void **st)
{
	struct bed *b = bed_new(NULL);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	assert_int_equal(droce_destroy_qp(b->s[1].qp), 0);
	struct droce_qp_init_attr ib = {.send_cq = b->s[1].cq, .recv_cq = b->s[1].cq};
	struct droce_qp *fresh = droce_create_qp(b->s[1].ctx, &ib);
	assert_non_null(fresh);
	b->s[1].qp = fresh;
	struct droce_qp_init_attr ia = {.send_cq = b->s[0].cq, .recv_cq = b->s[0].cq};
	struct droce_qp *a2 = droce_create_qp(b->s[0].ctx, &ia);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	assert_true(droce_connect(a2, &dst, NULL, b->now) >= 0);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, fresh, NULL, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(next_event(b, 1).type, DROCE_CONN_ESTABLISHED);
	bed_free(b);
}

/* A REQ with the communication ID @p lcid from @p ip, into B's channel. */
static void inject_req(struct bed *b, const uint8_t ip[4], uint32_t lcid, uint16_t port)
{
	struct madq *q = b->s[1].rx;
	assert_true(q->len < QLEN);
	struct droce_mad_in *in = &q->q[(q->head + q->len++) % QLEN];
	memset(in, 0, sizeof(*in));
	in->src.ip_version = 4;
	memcpy(in->src.ip, ip, 4);
	in->qkey = DROCE_GSI_QKEY;
	in->len = DROCE_MAD_LEN;
	test_req_mad(in->mad, ip, b->s[1].ip, port, lcid);
}

/* B's connection table is full while its CM still has room: a REQ gets
 * REJ 3 "no resources" (12.6.7.2), which rdma_cm reports as such; before,
 * REJ 28, a consumer's refusal. */
static void test_full_rejects_no_resources(void **st)
{
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.max_conns = 1;
	struct bed *b = bed_new(&cf);
	int ac, bc;
	handshake(b, NULL, NULL, &ac, &bc);
	static const uint8_t stranger[4] = {10, 0, 0, 99};
	inject_req(b, stranger, 0x4242, 7471);
	for (int k = 0; k < 10; k++)
		turn(b);
	assert_int_equal(b->q[1].last_attr, 0x12);
	assert_int_equal(b->q[1].last_rej_reason, 3);
	bed_free(b);
}

/* While the MAC of one destination is being resolved (the path answers
 * -EINPROGRESS), its MADs wait apart: the MRA to a REQ's address that
 * never answers ARP must not hold up the REP and the RTU of a connection
 * to somebody else. Once the MAC comes the parked MAD goes; one that
 * waits resolve_timeout_ns is dropped and counted. */
static void test_mads_parked_per_destination(void **st)
{
	struct droce_cm_conf cf;
	droce_cm_conf_init(&cf);
	cf.resolve_timeout_ns = 10000000; /* 10 ms */
	struct bed *b = bed_new(&cf);
	static const uint8_t silent[4] = {10, 0, 0, 77};
	memcpy(b->q[1].blocked_ip, silent, 4);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	inject_req(b, silent, 0x77, 7471);
	turn(b);
	inject_req(b, silent, 0x77, 7471); /* a resend: answered with an MRA, to silent */
	turn(b);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	int silent_conn = ev.conn;
	struct droce_cm_counters k;
	droce_cm_get_counters(b->s[1].ctx, &k);
	assert_int_equal(k.mads_pending, 1);
	/* A connects meanwhile: REP and ESTABLISHED at once */
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	uint64_t t0 = b->now;
	int ac = droce_connect(b->s[0].qp, &dst, NULL, b->now);
	assert_true(ac >= 0);
	ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(next_event(b, 0).type, DROCE_CONN_ESTABLISHED);
	assert_true(b->now - t0 < 1000000);
	assert_int_equal(b->q[1].refused_blocked > 0, 1);
	/* the MAC comes: the parked MRA goes */
	unsigned sent = b->q[1].sent;
	memset(b->q[1].blocked_ip, 0, 4);
	for (int i = 0; i < 5; i++)
		turn(b);
	assert_true(b->q[1].sent > sent);
	droce_cm_get_counters(b->s[1].ctx, &k);
	assert_int_equal(k.mad_park_drop, 0);
	/* and one that never comes (a REJ 8 of a REQ for a closed port,
	 * whose frame source the channel does not tell): dropped after 10 ms */
	memcpy(b->q[1].blocked_ip, silent, 4);
	inject_req(b, silent, 0x78, 9);
	turn(b);
	uint64_t end = b->now + 20000000;
	while (b->now < end)
		turn(b);
	droce_cm_get_counters(b->s[1].ctx, &k);
	assert_int_equal(k.mad_park_drop, 1);
	(void)silent_conn;
	bed_free(b);
}

/* The sender's address in a QP1 receive buffer's GRH area: an IPv6 source
 * whose 13th byte has the high nibble 4 (byte 20 of the header) is IPv6
 * (before, QP1 tested byte 20 first and read it as an IPv4 sender); IPv4
 * needs the 20 zero bytes in front of its header. */
static void test_qp1_grh_src(void **st)
{
	uint8_t g[40] = {0};
	struct droce_cm_addr a;
	g[0] = 0x60;
	g[6] = 17; /* next header UDP */
	static const uint8_t v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x45, 0, 0, 1};
	memcpy(g + 8, v6, 16);
	assert_int_equal(droce_qp1_grh_src(g, &a), 0);
	assert_int_equal(a.ip_version, 6);
	assert_memory_equal(a.ip, v6, 16);
	memset(g, 0, sizeof(g));
	g[20] = 0x45;
	g[29] = 17;
	static const uint8_t v4[4] = {198, 18, 0, 1};
	memcpy(g + 32, v4, 4);
	assert_int_equal(droce_qp1_grh_src(g, &a), 0);
	assert_int_equal(a.ip_version, 4);
	assert_memory_equal(a.ip, v4, 4);
	g[3] = 1; /* not the zeros an IPv4 area starts with */
	assert_int_equal(droce_qp1_grh_src(g, &a), -EPROTO);
}

/* The same tests with the MADs over QP1 on the context's link. */
#define OVER_QP1(t)                  \
	static void t##_qp1(void **st) \
	{                              \
		over_qp1 = true;       \
		t(st);                 \
		over_qp1 = false;      \
	}
OVER_QP1(test_handshake_attributes)
OVER_QP1(test_reject)
OVER_QP1(test_no_listener)
OVER_QP1(test_disconnect)
OVER_QP1(test_unreachable)
OVER_QP1(test_resolve_late)
OVER_QP1(test_full)

static void test_qp1_gsi_taken(void **st)
{
	/* the GSI QP is the CM's: one already made elsewhere means -EEXIST */
	struct droce_memlink *ml = droce_memlink_create(NULL);
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip[0] = 10, p.ip[3] = 1;
	p.link = droce_memlink_end(ml, 0);
	struct droce_ctx *ctx = droce_ctx_create(&p);
	struct droce_cq *cq = droce_create_cq(ctx, 8);
	struct droce_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = DROCE_QPT_GSI};
	struct droce_qp *gsi = droce_create_qp(ctx, &ia);
	assert_non_null(gsi);
	struct droce_cm_conf c;
	droce_cm_conf_init(&c);
	c.resolve = resolver;
	assert_int_equal(droce_cm_open(ctx, &c), -EEXIST);
	assert_int_equal(droce_destroy_qp(gsi), 0);
	assert_int_equal(droce_cm_open(ctx, &c), 0);
	assert_int_equal(droce_cm_open(ctx, &c), -EEXIST);
	assert_null(droce_create_qp(ctx, &ia)); /* and now it is taken */
	assert_int_equal(droce_cm_close(ctx), 0);
	gsi = droce_create_qp(ctx, &ia);       /* close gave it back */
	assert_non_null(gsi);
	droce_ctx_destroy(ctx);
	droce_memlink_destroy(ml);
}

/* ---- the transport-mode extension (docs/cm.md) ---- */

static unsigned qp_transport(struct droce_qp *qp)
{
	struct droce_qp_stats st;
	assert_int_equal(droce_qp_get_stats(qp, &st), 0);
	return st.transport;
}

static struct droce_cm_counters cm_cnt(struct bed *b, unsigned i)
{
	struct droce_cm_counters c;
	assert_int_equal(droce_cm_get_counters(b->s[i].ctx, &c), 0);
	return c;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Connect A to B, B accepting on its QP; the REQUEST and both ESTABLISHED
 * events in @p ev[0..2]. */
static void xt_connect(struct bed *b, struct droce_conn_event ev[3])
{
	struct droce_conn_param ap, bp;
	droce_conn_param_init(&ap);
	ap.private_data = "hello";
	ap.private_data_len = 5;
	droce_conn_param_init(&bp);
	bp.private_data = "welcome";
	bp.private_data_len = 7;
	int l = droce_listen(b->s[1].ctx, 7471);
	assert_true(l >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	assert_true(droce_connect(b->s[0].qp, &dst, &ap, b->now) >= 0);
	ev[0] = next_event(b, 1);
	assert_int_equal(ev[0].type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev[0].conn, b->s[1].qp, &bp, b->now), 0);
	ev[1] = next_event(b, 0);
	assert_int_equal(ev[1].type, DROCE_CONN_ESTABLISHED);
	ev[2] = next_event(b, 1);
	assert_int_equal(ev[2].type, DROCE_CONN_ESTABLISHED);
	/* each consumer sees its peer's bytes only, the extension taken out */
	assert_memory_equal(ev[0].private_data, "hello", 5);
	assert_true(all_zero(ev[0].private_data + 5, ev[0].private_data_len - 5));
	assert_memory_equal(ev[1].private_data, "welcome", 7);
	assert_true(all_zero(ev[1].private_data + 7, ev[1].private_data_len - 7));
}

/* Both QPs and both ESTABLISHED events in @p mode, counted as agreed
 * on both sides when it is selective repeat; a SEND goes through. */
static void xt_expect(struct bed *b, const struct droce_conn_event ev[3], unsigned mode)
{
	assert_int_equal(qp_transport(b->s[0].qp), mode);
	assert_int_equal(qp_transport(b->s[1].qp), mode);
	assert_int_equal(ev[1].transport, mode);
	assert_int_equal(ev[2].transport, mode);
	assert_int_equal(cm_cnt(b, 0).transport_agreed, mode != DROCE_TRANSPORT_GBN);
	assert_int_equal(cm_cnt(b, 1).transport_agreed, mode != DROCE_TRANSPORT_GBN);
	assert_int_equal(cm_cnt(b, 0).transport_ext_bad + cm_cnt(b, 1).transport_ext_bad, 0);
	send_works(b);
	bed_free(b);
}

/* A offers sr, B (droce, the default transport_max) agrees: both QPs in
 * sr before their first packet, data flows. */
static void test_transport_offer_agreed(void **st)
{
	(void)st;
	struct bed *b = bed_new(NULL);
	assert_int_equal(droce_qp_set_transport(b->s[0].qp, DROCE_TRANSPORT_SR), 0);
	assert_int_equal(qp_transport(b->s[1].qp), DROCE_TRANSPORT_GBN);
	struct droce_conn_event ev[3];
	xt_connect(b, ev);
	xt_expect(b, ev, DROCE_TRANSPORT_SR);
}

/* The lower of the two: sr-spray offered, B agrees to sr at most; B
 * refusing (transport_max 0): both go-back-N. */
static void test_transport_lower_of_two(void **st)
{
	(void)st;
	for (unsigned cap = 0; cap <= 1; cap++) {
		struct droce_cm_conf cf;
		droce_cm_conf_init(&cf);
		cf.transport_max = (uint8_t)cap;
		struct bed *b = bed_new(&cf);
		assert_int_equal(droce_qp_set_transport(b->s[0].qp, DROCE_TRANSPORT_SR_SPRAY), 0);
		struct droce_conn_event ev[3];
		xt_connect(b, ev);
		xt_expect(b, ev, cap);
	}
}

/* No offer (A at go-back-N, as rxe or a NIC): B's QP, set to sr by its
 * application, is go-back-N; the REQ carries nothing after A's data and
 * the REP nothing after B's. */
static void test_transport_no_offer(void **st)
{
	(void)st;
	struct bed *b = bed_new(NULL);
	assert_int_equal(droce_qp_set_transport(b->s[1].qp, DROCE_TRANSPORT_SR), 0);
	struct droce_conn_event ev[3];
	xt_connect(b, ev);
	xt_expect(b, ev, DROCE_TRANSPORT_GBN);
}

/* A REQ whose last 8 bytes hold the magic with version 0: counted, left
 * to the consumer as the peer's data, and the QP accepted at go-back-N. */
static void test_transport_malformed_offer(void **st)
{
	(void)st;
	struct bed *b = bed_new(NULL);
	assert_int_equal(droce_qp_set_transport(b->s[1].qp, DROCE_TRANSPORT_SR), 0);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	inject_req(b, b->s[0].ip, 0x4242, 7471);
	struct madq *q = b->s[1].rx;
	struct droce_mad_in *in = &q->q[(q->head + q->len - 1) % QLEN];
	struct droce_cm_msg m;
	assert_int_equal(droce_mad_decode(in->mad, in->len, &m), DROCE_MAD_OK);
	uint8_t *x = m.u.req.private_data + sizeof(m.u.req.private_data) - 8;
	memcpy(x, "DRXT", 4);
	x[4] = 0; /* version 0 */
	x[5] = DROCE_TRANSPORT_SR;
	assert_int_equal(droce_mad_encode(in->mad, DROCE_MAD_LEN, &m), DROCE_MAD_LEN);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(cm_cnt(b, 1).transport_ext_bad, 1);
	assert_memory_equal(ev.private_data + ev.private_data_len - 8, x, 8);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	assert_int_equal(qp_state(b->s[1].qp), DROCE_QPS_RTS);
	assert_int_equal(qp_transport(b->s[1].qp), DROCE_TRANSPORT_GBN);
	assert_int_equal(cm_cnt(b, 1).transport_agreed, 0);
	bed_free(b);
}

/* A REP answering sr-spray to an offer of sr (above it): the active side
 * counts it and comes up at go-back-N. */
static void test_transport_answer_above_offer(void **st)
{
	(void)st;
	struct bed *b = bed_new(NULL);
	assert_int_equal(droce_qp_set_transport(b->s[0].qp, DROCE_TRANSPORT_SR), 0);
	assert_true(droce_listen(b->s[1].ctx, 7471) >= 0);
	struct droce_addr dst = addr_of(&b->s[1], 7471);
	assert_true(droce_connect(b->s[0].qp, &dst, NULL, b->now) >= 0);
	struct droce_conn_event ev = next_event(b, 1);
	assert_int_equal(ev.type, DROCE_CONN_REQUEST);
	assert_int_equal(droce_accept(b->s[1].ctx, ev.conn, b->s[1].qp, NULL, b->now), 0);
	droce_ctx_poll(b->s[1].ctx, b->now); /* the REP into B's channel, not yet to A */
	struct madq *q = b->s[1].tx;
	assert_int_equal(q->len, 1);
	struct droce_mad_in *in = &q->q[q->head];
	assert_int_equal(in->mad[17], 0x13); /* REP (12.6.8): private data at 60..255 */
	assert_memory_equal(in->mad + 248, "DRXT\1\1", 6); /* B's answer: sr */
	in->mad[253] = DROCE_TRANSPORT_SR_SPRAY;
	ev = next_event(b, 0);
	assert_int_equal(ev.type, DROCE_CONN_ESTABLISHED);
	assert_int_equal(ev.transport, DROCE_TRANSPORT_GBN);
	assert_int_equal(qp_transport(b->s[0].qp), DROCE_TRANSPORT_GBN);
	assert_int_equal(cm_cnt(b, 0).transport_ext_bad, 1);
	assert_int_equal(cm_cnt(b, 0).transport_agreed, 0);
	bed_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_attributes_qp1),
		cmocka_unit_test(test_reject_qp1),
		cmocka_unit_test(test_no_listener_qp1),
		cmocka_unit_test(test_disconnect_qp1),
		cmocka_unit_test(test_unreachable_qp1),
		cmocka_unit_test(test_resolve_late_qp1),
		cmocka_unit_test(test_full_qp1),
		cmocka_unit_test(test_qp1_gsi_taken),
		cmocka_unit_test(test_handshake_attributes),
		cmocka_unit_test(test_transport_offer_agreed),
		cmocka_unit_test(test_transport_lower_of_two),
		cmocka_unit_test(test_transport_no_offer),
		cmocka_unit_test(test_transport_malformed_offer),
		cmocka_unit_test(test_transport_answer_above_offer),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_no_listener),
		cmocka_unit_test(test_unlisten),
		cmocka_unit_test(test_disconnect),
		cmocka_unit_test(test_qp_destroyed_in_timewait),
		cmocka_unit_test(test_qp_destroyed_while_connected),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_resolve_late),
		cmocka_unit_test(test_peer_vanishes),
		cmocka_unit_test(test_passive_timeout),
		cmocka_unit_test(test_path_busy),
		cmocka_unit_test(test_lost_rtu),
		cmocka_unit_test(test_all_rtus_lost_data_flows),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_stale_qp_not_touched),
		cmocka_unit_test(test_new_qp_not_busy),
		cmocka_unit_test(test_full_rejects_no_resources),
		cmocka_unit_test(test_mads_parked_per_destination),
		cmocka_unit_test(test_qp1_grh_src),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
