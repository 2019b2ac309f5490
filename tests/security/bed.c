/* SPDX-License-Identifier: BSD-3-Clause */
/* The flood and spoofing test bed (bed.h). */
#include "bed.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/build.h"
#include "wire/opcode.h"

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

uint32_t bed_rand(struct bed *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return (uint32_t)(b->rng >> 16);
}

void bed_inject(struct bed *b, int to, const uint8_t *f, uint32_t len)
{
	struct inbox *q = &b->h[to].in;
	if (q->n == BED_SLOTS || len > BED_SLOT_LEN) {
		q->dropped++;
		return;
	}
	unsigned i = (q->head + q->n++) % BED_SLOTS;
	memcpy(q->buf[i], f, len);
	q->len[i] = len;
}

/* ---- the link of a host: switched by destination MAC ---- */

static int link_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	struct host *h = priv;
	struct bed *b = h->b;
	uint8_t buf[BED_SLOT_LEN];
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	(void)now;
	assert_true(len <= sizeof(buf));
	memcpy(buf, f->hdr, f->hdr_len);
	uint32_t off = f->hdr_len;
	for (unsigned i = 0; i < f->nseg; i++) {
		memcpy(buf + off, f->seg[i].addr, f->seg[i].len);
		off += f->seg[i].len;
	}
	memcpy(buf + off, f->trailer, f->trailer_len);
	if (b->on_wire)
		b->on_wire(b, h->idx, buf, len);
	for (int i = 0; i < NHOSTS; i++) {
		if (i == h->idx || !b->h[i].ctx)
			continue;
		if (memcmp(buf, bcast, 6) == 0 || memcmp(buf, b->h[i].mac, 6) == 0)
			bed_inject(b, i, buf, len);
	}
	return 0;
}

static unsigned link_rx(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct inbox *q = &((struct host *)priv)->in;
	(void)now;
	unsigned k = 0;
	while (k < n && q->out + k < q->n) {
		unsigned i = (q->head + q->out + k) % BED_SLOTS;
		f[k].data = q->buf[i];
		f[k].len = q->len[i];
		f[k].handle = NULL;
		k++;
	}
	q->out += k;
	return k;
}

static void link_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	struct inbox *q = &((struct host *)priv)->in;
	(void)f;
	q->head = (q->head + n) % BED_SLOTS;
	q->n -= n;
	q->out -= n;
}

static const struct droce_link_ops link_ops = {
	.tx = link_tx, .rx_burst = link_rx, .rx_release = link_release};

/* ARP as the CM sees it: the three hosts answer, nobody else ever does. */
static int resolve(void *arg, uint8_t ipv, const uint8_t ip[16], uint8_t mac[6], uint64_t now)
{
	struct host *me = arg;
	(void)now;
	if (ipv != 4)
		return -EAFNOSUPPORT;
	for (int i = 0; i < NHOSTS; i++)
		if (memcmp(me->b->h[i].ip, ip, 4) == 0) {
			memcpy(mac, me->b->h[i].mac, 6);
			return 0;
		}
	return -EAGAIN;
}

static void host_open(struct bed *b, int i, const struct droce_cm_conf *cf)
{
	struct host *h = &b->h[i];
	h->b = b;
	h->idx = i;
	h->ip[0] = 198, h->ip[1] = 18, h->ip[2] = 0, h->ip[3] = (uint8_t)(i + 1);
	uint8_t mac[6] = {0x02, 0x5e, 0, 0, 0, (uint8_t)(i + 1)};
	memcpy(h->mac, mac, 6);
	h->in.buf = calloc(BED_SLOTS, BED_SLOT_LEN);
	h->in.len = calloc(BED_SLOTS, sizeof(*h->in.len));
	assert_non_null(h->in.buf);
	assert_non_null(h->in.len);
	if (i == ATK)
		return; /* an address and a MAC, no stack */
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	memcpy(p.ip, h->ip, 4);
	memcpy(p.mac, h->mac, 6);
	p.max_qps = BED_MAX_QPS;
	p.link = (struct droce_link){&link_ops, h};
	h->ctx = droce_ctx_create(&p);
	assert_non_null(h->ctx);
	h->cq = droce_create_cq(h->ctx, 8192);
	h->mem = calloc(1, 65536);
	h->mr = droce_reg_mr(h->ctx, h->mem, 65536,
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ);
	assert_non_null(h->cq);
	assert_non_null(h->mr);
	struct droce_cm_conf c;
	if (cf)
		c = *cf;
	else
		droce_cm_conf_init(&c);
	c.resolve = resolve;
	c.resolve_arg = h;
	assert_int_equal(droce_cm_open(h->ctx, &c), 0);
}

struct bed *bed_new(const struct droce_cm_conf *cf)
{
	struct bed *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	for (int i = 0; i < NHOSTS; i++)
		host_open(b, i, cf);
	b->now = 1000000;
	b->rng = 0x5eed5eed12345ull;
	b->legit_srv_conn = -1;
	b->server_accepts = true;
	assert_true(droce_listen(b->h[SRV].ctx, 7471) >= 0);
	return b;
}

void bed_free(struct bed *b)
{
	for (int i = 0; i < NHOSTS; i++) {
		if (b->h[i].ctx)
			droce_ctx_destroy(b->h[i].ctx);
		free(b->h[i].mem);
		free(b->h[i].in.buf);
		free(b->h[i].in.len);
	}
	free(b);
}

/* ---- frames and MADs the attacker writes ---- */

void bed_inject_mad(struct bed *b, int to, const uint8_t src_ip[4], const uint8_t src_mac[6],
		    const uint8_t mad[DROCE_MAD_LEN])
{
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	memcpy(h.net.dst_mac, b->h[to].mac, 6);
	memcpy(h.net.src_mac, src_mac, 6);
	h.net.ip_version = 4;
	memcpy(h.net.src_ip, src_ip, 4);
	memcpy(h.net.dst_ip, b->h[to].ip, 4);
	h.net.ttl = 64;
	h.net.sport = 0xc000;
	h.net.dport = 4791;
	h.bth.opcode = DROCE_OP_UD_SEND_ONLY;
	h.bth.pkey = 0xFFFF;
	h.bth.dqpn = DROCE_GSI_QPN;
	h.bth.psn = bed_rand(b) & 0xFFFFFF;
	h.ext.deth.qkey = DROCE_GSI_QKEY;
	h.ext.deth.sqpn = DROCE_GSI_QPN;
	h.payload_len = DROCE_MAD_LEN;
	uint8_t f[BED_SLOT_LEN];
	size_t n = droce_build_frame(f, sizeof(f), &h, mad);
	assert_true(n > 0);
	bed_inject(b, to, f, (uint32_t)n);
	b->injected++;
}

void bed_req_mad(struct bed *b, int to, const uint8_t src_ip[4], uint16_t port, uint32_t lcid,
		 uint32_t qpn, uint8_t mad[DROCE_MAD_LEN])
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REQ, (uint64_t)bed_rand(b) << 32 | lcid);
	struct droce_cm_req *r = &m.u.req;
	r->local_comm_id = lcid;
	r->service_id = droce_cm_tcp_service_id(port);
	r->local_ca_guid = 0x025e00fffe000000ull | bed_rand(b);
	r->local_qpn = qpn & 0xFFFFFF;
	r->responder_resources = 4;
	r->initiator_depth = 4;
	/* what a flood would ask for: the longest waits and most retries */
	r->remote_cm_response_timeout = 31;
	r->local_cm_response_timeout = 31;
	r->max_cm_retries = 15;
	r->starting_psn = bed_rand(b) & 0xFFFFFF;
	r->retry_count = 7;
	r->pkey = 0xFFFF;
	r->path_mtu = 3;
	r->rnr_retry_count = 7;
	r->primary.local_lid = 0xFFFF;
	r->primary.remote_lid = 0xFFFF;
	r->primary.local_gid[10] = r->primary.local_gid[11] = 0xFF;
	memcpy(r->primary.local_gid + 12, src_ip, 4);
	r->primary.remote_gid[10] = r->primary.remote_gid[11] = 0xFF;
	memcpy(r->primary.remote_gid + 12, b->h[to].ip, 4);
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = 14;
	struct droce_cma_hdr ch = {.version = DROCE_CMA_VERSION, .ip_version = 4,
				   .src_port = (uint16_t)(32768 + (bed_rand(b) & 0x7FFF))};
	memcpy(ch.src_ip, src_ip, 4);
	memcpy(ch.dst_ip, b->h[to].ip, 4);
	droce_cma_hdr_encode(r->private_data, &ch);
	assert_int_equal(droce_mad_encode(mad, DROCE_MAD_LEN, &m), DROCE_MAD_LEN);
}

/* ---- the server application ---- */

static void server_app(struct bed *b)
{
	struct host *s = &b->h[SRV];
	struct droce_conn_event ev;
	while (droce_get_cm_event(s->ctx, &ev) == 1) {
		bool legit = memcmp(ev.peer.ip, b->h[CLI].ip, 4) == 0;
		assert_true(ev.conn >= 0 && ev.conn < 128);
		switch (ev.type) {
		case DROCE_CONN_REQUEST: {
			if (!b->server_accepts && !legit)
				break; /* a slow application: the REQ waits */
			struct droce_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq};
			struct droce_qp *qp = droce_create_qp(s->ctx, &ia);
			if (!qp) {
				droce_reject(s->ctx, ev.conn, NULL, 0, b->now);
				break;
			}
			b->srv_qps_live++;
			if (b->srv_qps_live > b->srv_qps_peak)
				b->srv_qps_peak = b->srv_qps_live;
			if (droce_accept(s->ctx, ev.conn, qp, NULL, b->now) != 0) {
				droce_destroy_qp(qp);
				b->srv_qps_live--;
				break;
			}
			s->conn_qp[ev.conn] = qp;
			struct droce_sge sge = {(uintptr_t)(s->mem + 8192), 64, s->mr->lkey};
			/* a wr_id of its own: a QP destroyed before may have had this QPN */
			s->conn_wr[ev.conn] = ++b->recv_ids;
			struct droce_recv_wr wr = {.wr_id = b->recv_ids, .sg_list = &sge, .num_sge = 1}, *bad;
			droce_post_recv(qp, &wr, &bad);
			break;
		}
		case DROCE_CONN_ESTABLISHED:
			if (legit) {
				b->legit_srv_conn = ev.conn;
				b->legit_srv_qp = s->conn_qp[ev.conn];
				b->legit_wr = s->conn_wr[ev.conn];
			}
			break;
		case DROCE_CONN_DISCONNECTED:
			break;
		default: /* the connection's last event */
			if (s->conn_qp[ev.conn]) {
				if (s->conn_qp[ev.conn] == b->legit_srv_qp)
					b->legit_srv_qp = NULL;
				droce_destroy_qp(s->conn_qp[ev.conn]);
				s->conn_qp[ev.conn] = NULL;
				b->srv_qps_live--;
			}
			break;
		}
	}
	/* completions of flushed QPs: drained, the legit one's read by bed_legit */
}

void bed_turn(struct bed *b)
{
	unsigned n = droce_ctx_poll(b->h[SRV].ctx, b->now) + droce_ctx_poll(b->h[CLI].ctx, b->now);
	bool attacking = b->attack && b->now < b->attack_until;
	if (attacking && b->now >= b->next_attack) {
		b->attack(b);
		b->next_attack += b->attack_every;
		if (b->next_attack <= b->now)
			b->next_attack = b->now + 1;
		n++;
	}
	server_app(b);
	if (n || b->h[SRV].in.n || b->h[CLI].in.n) {
		b->now += 1000;
		return;
	}
	uint64_t t = droce_ctx_next_deadline(b->h[SRV].ctx);
	uint64_t tc = droce_ctx_next_deadline(b->h[CLI].ctx);
	if (tc < t)
		t = tc;
	if (attacking && b->next_attack < t)
		t = b->next_attack;
	if (b->horizon && t > b->horizon)
		t = b->horizon > b->now ? b->horizon : b->now + 1000;
	b->now = t != UINT64_MAX && t > b->now ? t : b->now + 1000;
}

/* ---- the legitimate pair ---- */

struct legit bed_legit(struct bed *b, uint64_t limit_ns)
{
	struct legit res = {.fail_event = -1};
	struct host *c = &b->h[CLI], *s = &b->h[SRV];
	struct droce_qp_init_attr ia = {.send_cq = c->cq, .recv_cq = c->cq};
	struct droce_qp *qp = droce_create_qp(c->ctx, &ia);
	assert_non_null(qp);
	struct droce_addr dst = {.ip_version = 4, .port = 7471};
	memcpy(dst.ip, s->ip, 4);
	uint64_t t0 = b->now, end = b->now + limit_ns;
	int conn = droce_connect(qp, &dst, NULL, b->now);
	assert_true(conn >= 0);
	while (b->now < end && !res.connected && res.fail_event < 0) {
		bed_turn(b);
		struct droce_conn_event ev;
		while (droce_get_cm_event(c->ctx, &ev) == 1) {
			if (ev.conn != conn)
				continue;
			if (ev.type == DROCE_CONN_ESTABLISHED) {
				res.connected = true;
				res.connect_ns = b->now - t0;
			} else {
				res.fail_event = (int)ev.type;
			}
		}
	}
	if (!res.connected)
		return res;
	/* the server's side is up once its RTU (or the first packet) came */
	for (int k = 0; k < 100000 && !b->legit_srv_qp; k++)
		bed_turn(b);
	assert_non_null(b->legit_srv_qp);
	/* a 4 KB WRITE then a SEND: every byte checked on the server */
	for (unsigned i = 0; i < 4096; i++)
		c->mem[i] = (uint8_t)(i * 7 + 3);
	memcpy(c->mem + 4096, "intact, in order", 16);
	memset(s->mem, 0, 4096);
	struct droce_sge ws = {(uintptr_t)c->mem, 4096, c->mr->lkey};
	struct droce_send_wr w = {.wr_id = 10, .sg_list = &ws, .num_sge = 1,
				  .opcode = DROCE_WR_RDMA_WRITE, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	w.wr.rdma.remote_addr = (uintptr_t)s->mem;
	w.wr.rdma.rkey = s->mr->rkey;
	assert_int_equal(droce_post_send(qp, &w, &bad), 0);
	struct droce_sge ss = {(uintptr_t)(c->mem + 4096), 16, c->mr->lkey};
	struct droce_send_wr sw = {.wr_id = 11, .sg_list = &ss, .num_sge = 1,
				   .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED};
	assert_int_equal(droce_post_send(qp, &sw, &bad), 0);
	unsigned cli_done = 0;
	bool srv_got = false;
	bool ok = true;
	for (int k = 0; k < 2000000 && (cli_done < 2 || !srv_got); k++) {
		bed_turn(b);
		struct droce_wc wc[16];
		int got = droce_poll_cq(c->cq, 16, wc);
		for (int i = 0; i < got; i++) {
			cli_done++;
			ok = ok && wc[i].status == DROCE_WC_SUCCESS;
		}
		got = droce_poll_cq(s->cq, 16, wc);
		for (int i = 0; i < got; i++)
			if (wc[i].wr_id == b->legit_wr) {
				srv_got = true;
				ok = ok && wc[i].status == DROCE_WC_SUCCESS && wc[i].byte_len == 16;
			}
	}
	for (unsigned i = 0; i < 4096 && ok; i++)
		ok = s->mem[i] == (uint8_t)(i * 7 + 3);
	res.data_ok = ok && cli_done == 2 && srv_got &&
		      memcmp(s->mem + 8192, "intact, in order", 16) == 0;
	return res;
}
