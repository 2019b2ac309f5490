/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Corners of the libibverbs drop-in that no unmodified program reaches,
 * through the verbs API, two processes over memif (this one forks; the
 * QP numbers go over a socketpair as a verbs program would send them on TCP):
 *
 *   verbs_corners ud_srq   two UD QPs of the server take their receives
 *                          from one SRQ (ibv_post_srq_recv); the client's
 *                          datagrams must arrive whole, each completion
 *                          with IBV_WC_GRH, the GRH area holding the IPv4
 *                          header of the datagram (IBTA A17.4.5.1: 20
 *                          bytes of zeros, then the IPv4 header), src_qp
 *                          the client's QPN, qp_num the QP it was sent to
 *   verbs_corners port     the server's port events when its memif peer
 *                          leaves and another comes: IBV_EVENT_PORT_ACTIVE
 *                          as a client connects, IBV_EVENT_PORT_ERR when it
 *                          exits, twice over (IBTA 11.6.3.1), from
 *                          ibv_get_async_event with async_fd readable
 *
 * Every wait is for a condition and bounded (alarm); exit 0 when every
 * check passed.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>

#include "vtest.h"

static void use_port(const char *role, const char *sock, const char *ip)
{
	char spec[200];
	snprintf(spec, sizeof(spec), "memif:%s,socket=%s", role, sock);
	setenv("DROCE_PORT", spec, 1);
	setenv("DROCE_IP", ip, 1);
}

/* ------------------------------------------------------------- ud_srq -- */

#define UD_QKEY 0x11111111u
#define UD_MSGS 16       /* datagrams, alternately to the server's two QPs */
#define UD_LEN 200       /* payload bytes of each */
#define UD_SLOT (40 + UD_LEN)

struct ud_info {
	uint32_t qpn[2];
	union ibv_gid gid;
};

static uint8_t ud_byte(unsigned msg, unsigned k)
{
	return (uint8_t)(msg * 31 + k * 7 + 1);
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = UD_MSGS, .max_recv_wr = srq ? 0 : 1, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("create_qp(UD)");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				.qkey = UD_QKEY};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD RTS");
	return qp;
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int seconds)
{
	time_t end = time(NULL) + seconds;
	while (time(NULL) <= end) {
		int n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	}
	return 0;
}

static int ud_server(int fd)
{
	side = "server";
	struct ibv_context *ctx = open_droce();
	char go = 1;
	xsend(fd, &go, 1); /* the port is up: the client may start */
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 2 * UD_MSGS, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = UD_MSGS, .max_sge = 1}};
	struct ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	static uint8_t buf[UD_MSGS * UD_SLOT];
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !srq || !mr)
		die("cq/srq/mr");
	struct ibv_qp *qp[2] = {ud_qp(pd, cq, srq), ud_qp(pd, cq, srq)};
	memset(buf, 0xee, sizeof(buf));
	/* every receive through the SRQ, one chain: slot i is wr_id i */
	struct ibv_sge sge[UD_MSGS];
	struct ibv_recv_wr rw[UD_MSGS], *bad = NULL;
	for (unsigned i = 0; i < UD_MSGS; i++) {
		sge[i] = (struct ibv_sge){(uintptr_t)(buf + i * UD_SLOT), UD_SLOT, mr->lkey};
		rw[i] = (struct ibv_recv_wr){.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
					     .next = i + 1 < UD_MSGS ? &rw[i + 1] : NULL};
	}
	CHECK(ibv_post_srq_recv(srq, rw, &bad) == 0, "post_srq_recv: %u receives", UD_MSGS);
	struct ud_info me = {.qpn = {qp[0]->qp_num, qp[1]->qp_num}}, peer;
	if (ibv_query_gid(ctx, 1, 0, &me.gid))
		die("query_gid");
	xsend(fd, &me, sizeof(me));
	xrecv(fd, &peer, sizeof(peer));

	unsigned per_qp[2] = {0, 0}, good = 0;
	uint8_t seen[UD_MSGS] = {0};
	for (unsigned n = 0; n < UD_MSGS; n++) {
		struct ibv_wc wc;
		if (!poll_one(cq, &wc, 10)) {
			CHECK(0, "receive %u of %u: none within 10 s", n + 1, UD_MSGS);
			break;
		}
		const uint8_t *slot = buf + (wc.wr_id < UD_MSGS ? wc.wr_id : 0) * UD_SLOT;
		const uint8_t *ip = slot + 20;
		unsigned msg = slot[40]; /* the payload's first byte numbers the datagram */
		int q = wc.qp_num == qp[0]->qp_num ? 0 : wc.qp_num == qp[1]->qp_num ? 1 : -1;
		int ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id < UD_MSGS &&
			 !seen[wc.wr_id];
		ok = ok && (wc.wc_flags & IBV_WC_GRH) && wc.byte_len == UD_SLOT;
		ok = ok && wc.src_qp == peer.qpn[0] && q >= 0;
		/* the GRH area: 20 zero bytes, then the datagram's IPv4 header */
		static const uint8_t zero[20];
		uint32_t src, dst;
		memcpy(&src, ip + 12, 4);
		memcpy(&dst, ip + 16, 4);
		ok = ok && !memcmp(slot, zero, 20) && ip[0] == 0x45 && ip[9] == 17 &&
		     src == inet_addr("198.18.0.2") && dst == inet_addr("198.18.0.1");
		ok = ok && msg < UD_MSGS && (int)(msg % 2) == q;
		for (unsigned k = 1; ok && k < UD_LEN; k++)
			ok = slot[40 + k] == ud_byte(msg, k);
		if (!ok)
			CHECK(0, "receive wr %llu: status %s, flags %#x, byte_len %u (want %u), src_qp %#x "
				 "(want %#x), qp_num %#x, GRH %02x.., datagram %u", (unsigned long long)wc.wr_id,
			      ibv_wc_status_str(wc.status), wc.wc_flags, wc.byte_len, UD_SLOT, wc.src_qp,
			      peer.qpn[0], wc.qp_num, ip[0], msg);
		if (wc.wr_id < UD_MSGS)
			seen[wc.wr_id] = 1;
		if (ok) {
			good++;
			per_qp[q]++;
		}
	}
	CHECK(good == UD_MSGS && per_qp[0] == UD_MSGS / 2 && per_qp[1] == UD_MSGS / 2,
	      "%u datagrams through one SRQ, %u and %u to the two QPs (%#x, %#x), each whole with "
	      "its GRH and src_qp %#x", good, per_qp[0], per_qp[1], qp[0]->qp_num, qp[1]->qp_num,
	      peer.qpn[0]);
	/* rxe and rdma-core: a UD QP on an SRQ posts no receives of its own */
	struct ibv_recv_wr one = {.wr_id = 99, .sg_list = sge, .num_sge = 1}, *b1 = NULL;
	CHECK(ibv_post_recv(qp[0], &one, &b1) != 0 && b1 == &one,
	      "post_recv on a UD QP with an SRQ: refused, bad_wr set");
	char done = 1;
	xsend(fd, &done, 1);
	xrecv(fd, &done, 1);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq once its QPs are gone: 0");
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}

static int ud_client(int fd)
{
	side = "client";
	struct ibv_context *ctx = open_droce();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 2 * UD_MSGS, NULL, NULL, 0);
	static uint8_t buf[UD_MSGS * UD_LEN];
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr)
		die("cq/mr");
	struct ibv_qp *qp = ud_qp(pd, cq, NULL);
	struct ud_info me = {.qpn = {qp->qp_num}}, peer;
	if (ibv_query_gid(ctx, 1, 0, &me.gid))
		die("query_gid");
	xrecv(fd, &peer, sizeof(peer));
	xsend(fd, &me, sizeof(me));
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1,
				 .grh = {.dgid = peer.gid, .sgid_index = 0, .hop_limit = 64}};
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("create_ah");
	unsigned sent = 0;
	for (unsigned i = 0; i < UD_MSGS; i++) {
		uint8_t *p = buf + i * UD_LEN;
		p[0] = (uint8_t)i;
		for (unsigned k = 1; k < UD_LEN; k++)
			p[k] = ud_byte(i, k);
		struct ibv_sge sge = {(uintptr_t)p, UD_LEN, mr->lkey};
		struct ibv_send_wr w = {.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED,
					.wr.ud = {.ah = ah, .remote_qpn = peer.qpn[i % 2],
						  .remote_qkey = UD_QKEY}};
		struct ibv_send_wr *bad = NULL;
		if (ibv_post_send(qp, &w, &bad))
			die("post_send");
		struct ibv_wc wc;
		if (poll_one(cq, &wc, 10) && wc.status == IBV_WC_SUCCESS && wc.wr_id == i)
			sent++;
	}
	CHECK(sent == UD_MSGS, "%u UD SENDs completed", sent);
	char done;
	xrecv(fd, &done, 1);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	xsend(fd, &done, 1);
	return failures ? 1 : 0;
}

/* --------------------------------------------------------------- port -- */

/* The next async event within @p seconds: its type, or -1. */
static int next_event(struct ibv_context *ctx, int seconds)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	if (poll(&p, 1, seconds * 1000) != 1)
		return -1;
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev))
		return -1;
	int t = ev.event_type;
	int port = ev.element.port_num;
	ibv_ack_async_event(&ev);
	if ((t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR) && port != 1)
		return -2;
	return t;
}

/* A memif client (its own process) that opens droce0, says so, and
 * leaves when told. */
static void port_client(int fd, const char *sock, const char *ip)
{
	side = "client";
	use_port("client", sock, ip);
	struct ibv_context *ctx = open_droce();
	char c = 1;
	xsend(fd, &c, 1);
	xrecv(fd, &c, 1);
	ibv_close_device(ctx);
	_exit(0);
}

static int port_test(const char *sock)
{
	side = "server";
	use_port("server", sock, "198.18.0.1");
	struct ibv_context *ctx = open_droce(); /* no peer yet: the link is down */
	const char *ip[2] = {"198.18.0.2", "198.18.0.3"};
	for (int round = 0; round < 2; round++) {
		int fd;
		pid_t pid = fork_pair(&fd);
		if (pid == 0) {
			/* a process of its own: a forked child would share this
			 * one's DPDK port instead of opening one */
			char fds[16];
			snprintf(fds, sizeof(fds), "%d", fd);
			execl("/proc/self/exe", "verbs_corners", "port-client", fds, sock, ip[round],
			      (char *)NULL);
			die("exec");
		}
		char c;
		xrecv(fd, &c, 1); /* the client's port is up */
		int t = next_event(ctx, 10);
		CHECK(t == IBV_EVENT_PORT_ACTIVE, "client %d came: %s (%d)", round + 1,
		      t >= 0 ? ibv_event_type_str(t) : "no event", t);
		xsend(fd, &c, 1); /* leave */
		int st;
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d exited 0", round + 1);
		t = next_event(ctx, 10);
		CHECK(t == IBV_EVENT_PORT_ERR, "client %d left: %s (%d)", round + 1,
		      t >= 0 ? ibv_event_type_str(t) : "no event", t);
		close(fd);
	}
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	CHECK(poll(&p, 1, 0) == 0, "no other event waits");
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port with the link down: 0");
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "port-client"))
		port_client(atoi(argv[2]), argv[3], argv[4]);
	if (argc != 2 || (strcmp(argv[1], "ud_srq") && strcmp(argv[1], "port"))) {
		fprintf(stderr, "usage: %s ud_srq|port\n", argv[0]);
		return 2;
	}
	char sock[128];
	snprintf(sock, sizeof(sock), "/tmp/droce-verbs-corners-%d.sock", (int)getpid());
	alarm(80);
	if (!strcmp(argv[1], "port")) {
		int rc = port_test(sock);
		printf("%s: %d failures\n", rc ? "FAIL" : "PASS", failures);
		return rc;
	}
	int fd;
	pid_t pid = fork_pair(&fd);
	if (pid == 0) {
		use_port("server", sock, "198.18.0.1");
		_exit(ud_server(fd));
	}
	char go;
	xrecv(fd, &go, 1); /* the server's port started; a client waits for its link */
	use_port("client", sock, "198.18.0.2");
	return finish(pid, ud_client(fd));
}
