/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello_cm: the seed's example, connecting by address. A server listens on
 * port 7471; a client creates an RC QP and connects it to (10.0.0.2, 7471)
 * with a line of private data; the server accepts with its own. Then:
 *   register memory, post a receive, post a send, poll the completions,
 *   and the client disconnects.
 * The connection is made by the IB CM over QP1 (UD MADs, as rdma_cm does on
 * RoCEv2), and nothing blocks: both sides are small state machines stepped
 * by one loop that also runs both contexts' poll. The two contexts share
 * one process over the frame FIFO link of fifo_link.h; a DPDK port or memif
 * is the same code with another droce_link and an ARP resolver.
 * Exit 0 when every check passes. Built by meson and run by the unit suite.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <droce/droce.h>

#include "fifo_link.h"

#define PORT 7471

struct host {
	const char *name;
	uint8_t ip[4], mac[6];
	const struct host *peer;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	char buf[256];
	int conn;
	int step; /* where its state machine is */
};

/* What ARP would answer: on this two-host link, the peer's MAC. */
static int resolve(void *arg, uint8_t ip_version, const uint8_t ip[16], uint8_t mac[6], uint64_t now)
{
	const struct host *h = arg;
	(void)now; /* nothing to time out: the answer is known */
	if (ip_version != 4 || memcmp(ip, h->peer->ip, 4) != 0)
		return -EHOSTUNREACH;
	memcpy(mac, h->peer->mac, 6);
	return 0;
}

static int open_host(struct host *h, struct fifo_end *e)
{
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = 4;
	memcpy(p.ip, h->ip, 4);
	memcpy(p.mac, h->mac, 6);
	p.link.ops = &fifo_ops;
	p.link.priv = e;
	h->ctx = droce_ctx_create(&p);
	if (!h->ctx)
		return -1;
	struct droce_cm_conf cm;
	droce_cm_conf_init(&cm);
	cm.resolve = resolve;
	cm.resolve_arg = h;
	if (droce_cm_open(h->ctx, &cm) != 0) /* QP1 and the CM, run by droce_ctx_poll */
		return -1;
	h->cq = droce_create_cq(h->ctx, 16);
	h->mr = droce_reg_mr(h->ctx, h->buf, sizeof(h->buf), DROCE_ACCESS_LOCAL_WRITE);
	struct droce_qp_init_attr ia = {.send_cq = h->cq, .recv_cq = h->cq, .qp_type = DROCE_QPT_RC};
	h->qp = h->cq && h->mr ? droce_create_qp(h->ctx, &ia) : NULL;
	return h->qp ? 0 : -1;
}

static int post_recv(struct host *h)
{
	struct droce_sge sge = {(uintptr_t)h->buf, sizeof(h->buf), h->mr->lkey};
	struct droce_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
	return droce_post_recv(h->qp, &wr, &bad);
}

static int post_send(struct host *h, const char *msg)
{
	snprintf(h->buf, sizeof(h->buf), "%s", msg);
	struct droce_sge sge = {(uintptr_t)h->buf, (uint32_t)strlen(msg) + 1, h->mr->lkey};
	struct droce_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	return droce_post_send(h->qp, &wr, &bad);
}

/* One completion of @p h, if there is one: 1 (success), 0 (none), -1 (error). */
static int completion(struct host *h, enum droce_wc_opcode op)
{
	struct droce_wc wc;
	int n = droce_poll_cq(h->cq, 1, &wc);
	if (n != 1)
		return n < 0 ? -1 : 0;
	return wc.status == DROCE_WC_SUCCESS && wc.opcode == op ? 1 : -1;
}

/* One CM event of @p h, if there is one, of type @p want: 1, 0 (none), -1 (another). */
static int cm_event(struct host *h, enum droce_conn_event_type want, struct droce_conn_event *ev)
{
	if (droce_get_cm_event(h->ctx, ev) != 1)
		return 0;
	printf("%s: %s", h->name, droce_conn_event_str(ev->type));
	if (ev->private_data_len && ev->private_data[0]) /* MADs pad it with zeros */
		printf(" \"%s\"", (const char *)ev->private_data);
	printf("\n");
	return ev->type == want ? 1 : -1;
}

#define TRY(c) do { int r_ = (c); if (r_ < 0) return -1; if (!r_) return 0; } while (0)

/* The client: connect, send one message, disconnect. @return 1 done, 0 not yet, -1 failed. */
static int client_step(struct host *h, uint64_t now)
{
	struct droce_conn_event ev;
	switch (h->step) {
	case 0: {
		struct droce_addr dst = {.ip_version = 4, .port = PORT};
		memcpy(dst.ip, h->peer->ip, 4);
		struct droce_conn_param cp;
		droce_conn_param_init(&cp);
		cp.private_data = "hello from the client";
		cp.private_data_len = strlen(cp.private_data) + 1;
		h->conn = droce_connect(h->qp, &dst, &cp, now); /* returns at once */
		if (h->conn < 0)
			return -1;
		h->step++;
		return 0;
	}
	case 1:
		TRY(cm_event(h, DROCE_CONN_ESTABLISHED, &ev)); /* the QP is in RTS now */
		if (post_send(h, "hello, RDMA") != 0)
			return -1;
		h->step++;
		return 0;
	case 2:
		TRY(completion(h, DROCE_WC_SEND));
		if (droce_disconnect(h->ctx, h->conn, now) != 0)
			return -1;
		h->step++;
		return 0;
	case 3:
		TRY(cm_event(h, DROCE_CONN_DISCONNECTED, &ev));
		h->step++;
		return 0;
	default:
		return 1;
	}
}

/* The server: listen, accept, receive one message, see the disconnect. */
static int server_step(struct host *h, uint64_t now)
{
	struct droce_conn_event ev;
	switch (h->step) {
	case 0:
		if (droce_listen(h->ctx, PORT) < 0)
			return -1;
		h->step++;
		return 0;
	case 1: {
		TRY(cm_event(h, DROCE_CONN_REQUEST, &ev));
		struct droce_conn_param cp;
		droce_conn_param_init(&cp);
		cp.private_data = "welcome";
		cp.private_data_len = 8;
		/* accept puts the QP in RTS and queues the REP; the receive is
		 * posted before the REP leaves on the next poll, so the client's
		 * SEND never meets an RNR NAK */
		if (droce_accept(h->ctx, ev.conn, h->qp, &cp, now) != 0 || post_recv(h) != 0)
			return -1;
		h->conn = ev.conn;
		h->step++;
		return 0;
	}
	case 2:
		TRY(cm_event(h, DROCE_CONN_ESTABLISHED, &ev));
		h->step++;
		return 0;
	case 3:
		TRY(completion(h, DROCE_WC_RECV));
		printf("%s: received \"%s\"\n", h->name, h->buf);
		if (strcmp(h->buf, "hello, RDMA") != 0)
			return -1;
		h->step++;
		return 0;
	case 4:
		TRY(cm_event(h, DROCE_CONN_DISCONNECTED, &ev));
		h->step++;
		return 0;
	default:
		return 1;
	}
}

int main(void)
{
	static struct fifo ab, ba;
	static struct fifo_end ea = {&ab, &ba}, eb = {&ba, &ab};
	static struct host client = {.name = "client", .ip = {10, 0, 0, 1}, .mac = {2, 0, 0, 0, 0, 1}},
			   server = {.name = "server", .ip = {10, 0, 0, 2}, .mac = {2, 0, 0, 0, 0, 2}};
	client.peer = &server;
	server.peer = &client;
	if (open_host(&client, &ea) || open_host(&server, &eb)) {
		fprintf(stderr, "hello_cm: setup failed\n");
		return 1;
	}
	/* Time is an argument: a virtual clock, 1 us per loop turn. */
	uint64_t now = 0;
	int c = 0, s = 0;
	for (int turn = 0; turn < 100000 && (c != 1 || s != 1); turn++) {
		now += 1000;
		droce_ctx_poll(client.ctx, now); /* runs the CM too */
		droce_ctx_poll(server.ctx, now);
		if (c == 0)
			c = client_step(&client, now);
		if (s == 0)
			s = server_step(&server, now);
		if (c < 0 || s < 0)
			break;
	}
	if (c != 1 || s != 1) {
		fprintf(stderr, "hello_cm: failed (client step %d, server step %d)\n", client.step,
			server.step);
		return 1;
	}
	struct droce_cm_counters k;
	droce_cm_get_counters(client.ctx, &k);
	printf("hello_cm: connected by address, SEND done, disconnected; the client's CM sent %llu "
	       "and received %llu MADs\n", (unsigned long long)k.mads_tx, (unsigned long long)k.mads_rx);
	droce_ctx_destroy(client.ctx); /* its CM, QPs, CQs and MRs too */
	droce_ctx_destroy(server.ctx);
	return 0;
}
