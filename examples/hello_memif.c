/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello_memif: the seed's example between two processes over a real DPDK
 * port (memif), with nothing but the installed library:
 *
 *   hello_memif server [SOCKET]     # 198.18.0.1, listens on port 7471
 *   hello_memif client [SOCKET]     # 198.18.0.2, connects to it
 *
 * droce_dpdk_init() starts DPDK, droce_dpdk_port_open() opens the memif
 * port (include/droce/dpdk.h); the CM resolves the peer with the port's ARP
 * (droce_dpdk_port_resolve). The server
 * accepts with its buffer's address and rkey as private data; the client
 * RDMA WRITEs 4 KB WITH IMMEDIATE into it and SENDs a message; the server
 * checks every byte and the immediate, and the client disconnects.
 * Start the server first. Exit 0 when every check passed, 1 otherwise
 * (30 s at most). Build it outside the tree with
 *   cc -o hello_memif hello_memif.c $(pkg-config --cflags --libs droce)
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <droce/droce.h>
#include <droce/dpdk.h>

#define PORT 7471
#define LEN 4096u
#define IMM 0x5eed1234u

struct side {
	int server;
	struct droce_dpdk_port *port;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t buf[LEN + 256];
	int conn, step;
	uint64_t peer_addr;
	uint32_t peer_rkey;
};

/* What the server's accept carries: where the client may write. */
struct grant {
	uint64_t addr;
	uint32_t rkey;
};

/* The application reads the clock (the port's TSC); droce takes it as an argument. */
static uint64_t now_ns(void)
{
	return droce_dpdk_now();
}

static uint8_t pattern(unsigned i)
{
	return (uint8_t)(i * 7u + 3u);
}

static int open_side(struct side *s, const char *socket)
{
	char spec[256];
	snprintf(spec, sizeof(spec), "memif:%s,socket=%s", s->server ? "server" : "client", socket);
	struct droce_dpdk_port_conf pc = {.spec = spec, .ip_version = 4, .ip = {198, 18, 0, s->server ? 1 : 2},
					  .link_wait_ns = 5000000000u}; /* the client's memif comes up */
	int r = droce_dpdk_init(NULL);
	s->port = r == 0 ? droce_dpdk_port_open(&pc) : NULL;
	if (!s->port) {
		fprintf(stderr, "hello_memif: port %s: %s\n", spec, strerror(r ? -r : errno));
		return -1;
	}
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = 4;
	memcpy(p.ip, pc.ip, 4);
	droce_dpdk_port_mac(s->port, p.mac);
	p.link = droce_dpdk_port_link(s->port);
	s->ctx = droce_ctx_create(&p);
	if (!s->ctx)
		return -1;
	struct droce_cm_conf cm;
	droce_cm_conf_init(&cm);
	cm.resolve = droce_dpdk_port_resolve; /* ARP on the port */
	cm.resolve_arg = s->port;
	cm.resolve_timeout_ns = 10000000000u; /* a loaded machine answers late */
	if (droce_cm_open(s->ctx, &cm) != 0)
		return -1;
	s->cq = droce_create_cq(s->ctx, 16);
	s->mr = droce_reg_mr(s->ctx, s->buf, sizeof(s->buf),
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	struct droce_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = DROCE_QPT_RC};
	s->qp = s->cq && s->mr ? droce_create_qp(s->ctx, &ia) : NULL;
	return s->qp ? 0 : -1;
}

static int post_recv(struct side *s, uint64_t id, void *at, uint32_t len)
{
	struct droce_sge sge = {(uintptr_t)at, len, s->mr->lkey};
	struct droce_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;
	return droce_post_recv(s->qp, &wr, &bad);
}

/* One completion: 1 (success, *wc filled), 0 (none yet), -1 (an error). */
static int completion(struct side *s, struct droce_wc *wc)
{
	int n = droce_poll_cq(s->cq, 1, wc);
	if (n != 1)
		return n < 0 ? -1 : 0;
	if (wc->status != DROCE_WC_SUCCESS) {
		fprintf(stderr, "hello_memif: completion %" PRIu64 ": %s\n", wc->wr_id,
			droce_wc_status_str(wc->status));
		return -1;
	}
	return 1;
}

/* One CM event of type @p want: 1, 0 (none yet), -1 (another one). */
static int cm_event(struct side *s, enum droce_conn_event_type want, struct droce_conn_event *ev)
{
	if (droce_get_cm_event(s->ctx, ev) != 1)
		return 0;
	printf("%s: %s\n", s->server ? "server" : "client", droce_conn_event_str(ev->type));
	return ev->type == want ? 1 : -1;
}

#define TRY(c) do { int r_ = (c); if (r_ < 0) return -1; if (!r_) return 0; } while (0)

static int client_step(struct side *s, uint64_t now)
{
	struct droce_conn_event ev;
	struct droce_wc wc;
	switch (s->step) {
	case 0: {
		struct droce_addr dst = {.ip_version = 4, .ip = {198, 18, 0, 1}, .port = PORT};
		struct droce_conn_param cp;
		droce_conn_param_init(&cp);
		s->conn = droce_connect(s->qp, &dst, &cp, now);
		if (s->conn < 0)
			return -1;
		s->step++;
		return 0;
	}
	case 1: {
		TRY(cm_event(s, DROCE_CONN_ESTABLISHED, &ev));
		struct grant g;
		if (ev.private_data_len < sizeof(g))
			return -1;
		memcpy(&g, ev.private_data, sizeof(g));
		for (unsigned i = 0; i < LEN; i++)
			s->buf[i] = pattern(i);
		snprintf((char *)s->buf + LEN, 256, "hello over memif");
		struct droce_sge data = {(uintptr_t)s->buf, LEN, s->mr->lkey};
		struct droce_sge msg = {(uintptr_t)s->buf + LEN, 17, s->mr->lkey};
		struct droce_send_wr send = {.wr_id = 2, .sg_list = &msg, .num_sge = 1,
					     .opcode = DROCE_WR_SEND,
					     .send_flags = DROCE_SEND_SIGNALED};
		struct droce_send_wr write = {.wr_id = 1, .next = &send, .sg_list = &data,
					      .num_sge = 1, .opcode = DROCE_WR_RDMA_WRITE_WITH_IMM,
					      .send_flags = DROCE_SEND_SIGNALED,
					      .imm_data = IMM}, *bad;
		write.wr.rdma.remote_addr = g.addr;
		write.wr.rdma.rkey = g.rkey;
		if (droce_post_send(s->qp, &write, &bad) != 0)
			return -1;
		s->step++;
		return 0;
	}
	case 2: /* the WRITE's completion, then the SEND's */
	case 3:
		TRY(completion(s, &wc));
		if (wc.wr_id != (uint64_t)s->step - 1)
			return -1;
		if (s->step == 3 && droce_disconnect(s->ctx, s->conn, now) != 0)
			return -1;
		s->step++;
		return 0;
	case 4:
		TRY(cm_event(s, DROCE_CONN_DISCONNECTED, &ev));
		s->step++;
		return 0;
	default:
		return 1;
	}
}

static int server_step(struct side *s, uint64_t now)
{
	struct droce_conn_event ev;
	struct droce_wc wc;
	switch (s->step) {
	case 0:
		if (droce_listen(s->ctx, PORT) < 0)
			return -1;
		s->step++;
		return 0;
	case 1: {
		TRY(cm_event(s, DROCE_CONN_REQUEST, &ev));
		struct grant g = {(uintptr_t)s->buf, s->mr->rkey};
		struct droce_conn_param cp;
		droce_conn_param_init(&cp);
		cp.private_data = &g;
		cp.private_data_len = sizeof(g);
		memset(s->buf, 0, sizeof(s->buf));
		/* Two receives before the REP leaves: the WRITE's immediate
		 * and the SEND never meet an RNR NAK. */
		if (droce_accept(s->ctx, ev.conn, s->qp, &cp, now) != 0 ||
		    post_recv(s, 1, s->buf, 0) != 0 || post_recv(s, 2, s->buf + LEN, 256) != 0)
			return -1;
		s->conn = ev.conn;
		s->step++;
		return 0;
	}
	case 2:
		TRY(cm_event(s, DROCE_CONN_ESTABLISHED, &ev));
		s->step++;
		return 0;
	case 3:
		TRY(completion(s, &wc));
		if (wc.opcode != DROCE_WC_RECV_RDMA_WITH_IMM || wc.imm_data != IMM ||
		    wc.byte_len != LEN) {
			fprintf(stderr, "hello_memif: want the WRITE's immediate first\n");
			return -1;
		}
		for (unsigned i = 0; i < LEN; i++)
			if (s->buf[i] != pattern(i)) {
				fprintf(stderr, "hello_memif: byte %u is %u, want %u\n", i, s->buf[i],
					pattern(i));
				return -1;
			}
		s->step++;
		return 0;
	case 4:
		TRY(completion(s, &wc));
		printf("server: %u bytes written, immediate 0x%x, received \"%s\"\n", LEN, IMM,
		       (const char *)s->buf + LEN);
		if (wc.opcode != DROCE_WC_RECV || strcmp((const char *)s->buf + LEN, "hello over memif"))
			return -1;
		s->step++;
		return 0;
	case 5:
		TRY(cm_event(s, DROCE_CONN_DISCONNECTED, &ev));
		s->step++;
		return 0;
	default:
		return 1;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: hello_memif server|client [SOCKET]\n");
		return 2;
	}
	static struct side s;
	s.server = !strcmp(argv[1], "server");
	if (open_side(&s, argc > 2 ? argv[2] : "/tmp/droce-hello.sock") != 0) {
		fprintf(stderr, "hello_memif: setup failed\n");
		return 1;
	}
	uint64_t end = now_ns() + 30000000000u;
	int r = 0;
	while (r == 0 && now_ns() < end) {
		uint64_t now = now_ns();
		droce_ctx_poll(s.ctx, now); /* the port, the transport and the CM */
		r = s.server ? server_step(&s, now) : client_step(&s, now);
	}
	/* memif on DPDK 22.11: send what is queued, then stop polling before
	 * the peer leaves (docs/usage.md, DPDK 22.11 quirks). */
	while (droce_dpdk_port_tx_pending(s.port) && now_ns() < end + 1000000000u)
		droce_ctx_poll(s.ctx, now_ns());
	struct timespec nap = {0, 300000000};
	nanosleep(&nap, NULL);
	struct droce_ctx_stats st;
	droce_ctx_get_stats(s.ctx, &st);
	printf("%s: %s at step %d; %" PRIu64 " frames received, %" PRIu64 " sent\n",
	       s.server ? "server" : "client", r == 1 ? "done" : "FAILED", s.step, st.rx_frames,
	       st.tx_frames);
	droce_ctx_destroy(s.ctx);
	droce_dpdk_port_close(s.port);
	return r == 1 ? 0 : 1;
}
