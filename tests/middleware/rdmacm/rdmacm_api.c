/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite middleware: the rdma_cm calls middleware makes (librpma, libfabric's
 * verbs provider, UCX's rdmacm CM) and rping/perftest do not, as rdma-core's
 * librdmacm documents them, in one program run as server and client over
 * memif (rdmacm_api.sh):
 *  sync   synchronous ids (no channel): rdma_create_ep passive with QP
 *         attributes, rdma_get_request (its QP made by it), a blocking
 *         rdma_accept; the client: rdma_create_ep active without a QP,
 *         id->verbs and id->pd set by it, rdma_create_qp_ex with
 *         IBV_QP_INIT_ATTR_PD and no CQs (rdma_cm makes them), a blocking
 *         rdma_connect and rdma_disconnect.
 *  qpn    QPs the application creates itself (ibv_create_qp on id->pd,
 *         set after ADDR_RESOLVED / on CONNECT_REQUEST), connected with
 *         conn_param.qp_num: rdma_init_qp_attr for INIT/RTR/RTS,
 *         CONNECT_RESPONSE and rdma_establish on the client; on the server
 *         the request's id moved with rdma_migrate_id to a second channel,
 *         where its ESTABLISHED must arrive.
 *  loop   sync's server in a thread and its client in the main thread of one
 *         process, connecting to its own address: the CM's MADs and the
 *         connection's traffic both turn around in the port (loopback).sh
 *         runs it on a memif port with no peer.
 *  orphan a listener destroyed with a CONNECT_REQUEST it never handed out:
 *         the client's blocking rdma_connect must fail with ECONNREFUSED
 *         (the REQ rejected) in bounded time, not wait for the CM's
 *         retries, and the server's id is freed.
 * Each connection carries a SEND each way and an RDMA WRITE, checked byte
 * for byte.
 *   rdmacm_api sync|qpn|orphan server|client IP PORT
 *   rdmacm_api loop any IP PORT
 * Exits 0 printing "rdmacm_api: MODE ok", or names what failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define MSG 4096

static const char *mode;

static void die(const char *what)
{
	fprintf(stderr, "rdmacm_api %s: %s: %s\n", mode, what, strerror(errno));
	exit(1);
}

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "rdmacm_api %s: %s\n", mode, what);
		exit(1);
	}
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(ch, &e))
		die("rdma_get_cm_event");
	if (e->event != t) {
		fprintf(stderr, "rdmacm_api %s: waited for %s, got %s (status %d)\n", mode,
			rdma_event_str(t), rdma_event_str(e->event), e->status);
		exit(1);
	}
	return e;
}

static void pattern(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31u + seed * 7u + (i >> 8));
}

static int same(const uint8_t *b, size_t n, unsigned seed)
{
	uint8_t x[MSG];
	pattern(x, n, seed);
	return !memcmp(b, x, n);
}

static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	for (long i = 0;; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			break;
		if (i > 2000000000L)
			check(0, "no completion");
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdmacm_api %s: completion %s (opcode %d)\n", mode,
			ibv_wc_status_str(wc.status), wc.opcode);
		exit(1);
	}
	return wc;
}

/* The exchange over a connected QP. Server: a receive posted before the
 * accept; it gets the client's SEND, answers with its own SEND. Client:
 * RDMA WRITE into the server's buffer (its rkey and address in the
 * server's message), then SEND; then it waits for the server's SEND,
 * which the server only sends after it checked the WRITTEN bytes. */
struct buf {
	struct ibv_mr *mr;
	uint8_t *b; /* [0, MSG): receive; [MSG, 2 MSG): send; [2 MSG, 3 MSG): WRITE target */
};

static void buf_init(struct buf *b, struct ibv_pd *pd)
{
	b->b = aligned_alloc(4096, 3 * MSG);
	check(b->b != NULL, "alloc");
	memset(b->b, 0, 3 * MSG);
	b->mr = ibv_reg_mr(pd, b->b, 3 * MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!b->mr)
		die("ibv_reg_mr");
}

static void post_recv(struct ibv_qp *qp, struct buf *b)
{
	struct ibv_sge sg = {(uintptr_t)b->b, MSG, b->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad;
	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct ibv_qp *qp, struct buf *b, enum ibv_wr_opcode op, uint64_t raddr,
		      uint32_t rkey, size_t off)
{
	struct ibv_sge sg = {(uintptr_t)b->b + off, MSG, b->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
}

static void serve(struct ibv_qp *qp, struct ibv_cq *scq, struct ibv_cq *rcq, struct buf *b)
{
	struct ibv_wc wc = wait_wc(rcq);
	check(wc.opcode == IBV_WC_RECV && wc.byte_len == MSG, "server: not the client's SEND");
	check(same(b->b, MSG, 1), "server: the SEND's bytes differ");
	check(same(b->b + 2 * MSG, MSG, 2), "server: the RDMA WRITE's bytes differ");
	pattern(b->b + MSG, MSG, 3);
	post_send(qp, b, IBV_WR_SEND, 0, 0, MSG);
	wait_wc(scq);
}

/* The client's half: the server's buffer address and rkey come in the
 * connection's private data (CONNECT_REQUEST / ESTABLISHED / RESPONSE). */
static void ask(struct ibv_qp *qp, struct ibv_cq *scq, struct ibv_cq *rcq, struct buf *b,
		uint64_t raddr, uint32_t rkey)
{
	pattern(b->b + MSG, MSG, 2);
	post_send(qp, b, IBV_WR_RDMA_WRITE, raddr, rkey, MSG);
	wait_wc(scq);
	pattern(b->b + MSG, MSG, 1);
	post_send(qp, b, IBV_WR_SEND, 0, 0, MSG);
	wait_wc(scq);
	struct ibv_wc wc = wait_wc(rcq);
	check(wc.opcode == IBV_WC_RECV && wc.byte_len == MSG && same(b->b, MSG, 3),
	      "client: the server's SEND differs");
}

struct where {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

static struct rdma_addrinfo *addr(const char *ip, const char *port, int passive)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP,
				      .ai_flags = passive ? RAI_PASSIVE : 0}, *res;
	if (rdma_getaddrinfo(ip, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

/* ---------------------------------------------------------------- sync -- */

static void sync_server(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 1);
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					      .max_recv_sge = 1},
				      .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
	struct rdma_cm_id *l, *id;
	if (rdma_create_ep(&l, res, NULL, &qa))
		die("rdma_create_ep (passive)");
	check(l->verbs && l->pd, "bound: id->verbs / id->pd not set");
	if (rdma_listen(l, 1))
		die("rdma_listen");
	if (rdma_get_request(l, &id))
		die("rdma_get_request");
	check(id->qp && id->send_cq && id->recv_cq && id->event &&
		      id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST,
	      "rdma_get_request: no QP, CQs or CONNECT_REQUEST on the new id");
	struct buf b;
	buf_init(&b, id->pd);
	post_recv(id->qp, &b);
	struct where w = {(uintptr_t)(b.b + 2 * MSG), b.mr->rkey};
	struct rdma_conn_param cp = {.private_data = &w, .private_data_len = sizeof(w),
				     .responder_resources = 1, .initiator_depth = 1};
	if (rdma_accept(id, &cp)) /* blocks until ESTABLISHED */
		die("rdma_accept");
	check(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED,
	      "rdma_accept returned before ESTABLISHED");
	serve(id->qp, id->send_cq, id->recv_cq, &b);
	/* the client disconnects: DISCONNECTED on the id's own channel */
	struct rdma_cm_event *e = expect(id->channel, RDMA_CM_EVENT_DISCONNECTED);
	rdma_ack_cm_event(e);
	ibv_dereg_mr(b.mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(l);
	rdma_freeaddrinfo(res);
}

static void sync_client(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 0);
	struct rdma_cm_id *id;
	if (rdma_create_ep(&id, res, NULL, NULL)) /* resolves, blocking */
		die("rdma_create_ep (active)");
	check(id->verbs && id->pd, "resolved: id->verbs / id->pd not set");
	struct ibv_qp_init_attr_ex qa = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1},
					 .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
					 .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = id->pd};
	if (rdma_create_qp_ex(id, &qa)) /* no CQs given: rdma_cm makes them */
		die("rdma_create_qp_ex");
	check(id->qp && id->send_cq && id->recv_cq && id->send_cq_channel,
	      "rdma_create_qp_ex: no QP or CQs on the id");
	struct buf b;
	buf_init(&b, id->pd);
	post_recv(id->qp, &b);
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};
	if (rdma_connect(id, &cp)) /* blocks until ESTABLISHED */
		die("rdma_connect");
	check(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED &&
		      id->event->param.conn.private_data_len >= sizeof(struct where),
	      "rdma_connect returned before ESTABLISHED, or without the REP's data");
	struct where w;
	memcpy(&w, id->event->param.conn.private_data, sizeof(w));
	ask(id->qp, id->send_cq, id->recv_cq, &b, w.addr, w.rkey);
	if (rdma_disconnect(id)) /* blocks until DISCONNECTED */
		die("rdma_disconnect");
	check(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED,
	      "rdma_disconnect returned before DISCONNECTED");
	ibv_dereg_mr(b.mr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

/* ----------------------------------------------------------------- qpn -- */

struct own {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void own_qp(struct rdma_cm_id *id, struct own *o)
{
	check(id->verbs && id->pd, "id->verbs / id->pd not set");
	o->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	if (!o->cq)
		die("ibv_create_cq");
	struct ibv_qp_init_attr qa = {.send_cq = o->cq, .recv_cq = o->cq,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					      .max_recv_sge = 1},
				      .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
	o->qp = ibv_create_qp(id->pd, &qa);
	if (!o->qp)
		die("ibv_create_qp");
}

static void move(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = {.qp_state = st};
	int mask;
	if (rdma_init_qp_attr(id, &a, &mask))
		die("rdma_init_qp_attr");
	check(a.qp_state == st, "rdma_init_qp_attr changed the state asked for");
	if (st == IBV_QPS_RTR)
		check(a.dest_qp_num && a.ah_attr.is_global && a.path_mtu, "RTR attributes incomplete");
	if (ibv_modify_qp(qp, &a, mask))
		die("ibv_modify_qp");
}

static void qpn_server(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 1);
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2 = rdma_create_event_channel();
	struct rdma_cm_id *l;
	if (!ch || !ch2 || rdma_create_id(ch, &l, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(l, res->ai_src_addr) || rdma_listen(l, 1))
		die("rdma_bind_addr / rdma_listen");
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *id = e->id;
	check(e->listen_id == l && e->param.conn.qp_num != 0, "CONNECT_REQUEST without the peer's QPN");
	rdma_ack_cm_event(e);
	if (rdma_migrate_id(id, ch2))
		die("rdma_migrate_id");
	check(id->channel == ch2, "rdma_migrate_id: the id kept its channel");
	struct own o;
	own_qp(id, &o);
	struct buf b;
	buf_init(&b, id->pd);
	move(id, o.qp, IBV_QPS_INIT);
	post_recv(o.qp, &b);
	move(id, o.qp, IBV_QPS_RTR);
	move(id, o.qp, IBV_QPS_RTS);
	struct where w = {(uintptr_t)(b.b + 2 * MSG), b.mr->rkey};
	struct rdma_conn_param cp = {.private_data = &w, .private_data_len = sizeof(w),
				     .responder_resources = 1, .initiator_depth = 1,
				     .qp_num = o.qp->qp_num};
	if (rdma_accept(id, &cp))
		die("rdma_accept (conn_param.qp_num)");
	/* the RTU: ESTABLISHED on the channel the id moved to */
	rdma_ack_cm_event(expect(ch2, RDMA_CM_EVENT_ESTABLISHED));
	serve(o.qp, o.cq, o.cq, &b);
	rdma_ack_cm_event(expect(ch2, RDMA_CM_EVENT_DISCONNECTED));
	ibv_destroy_qp(o.qp);
	ibv_destroy_cq(o.cq);
	ibv_dereg_mr(b.mr);
	rdma_destroy_id(id);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
	rdma_freeaddrinfo(res);
}

static void qpn_client(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	struct own o;
	own_qp(id, &o); /* on id->pd, set by the resolution */
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	struct buf b;
	buf_init(&b, id->pd);
	move(id, o.qp, IBV_QPS_INIT);
	post_recv(o.qp, &b);
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7, .qp_num = o.qp->qp_num};
	if (rdma_connect(id, &cp))
		die("rdma_connect (conn_param.qp_num)");
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	check(e->param.conn.qp_num != 0 && e->param.conn.private_data_len >= sizeof(struct where),
	      "CONNECT_RESPONSE without the peer's QPN or private data");
	struct where w;
	memcpy(&w, e->param.conn.private_data, sizeof(w));
	rdma_ack_cm_event(e);
	move(id, o.qp, IBV_QPS_RTR);
	move(id, o.qp, IBV_QPS_RTS);
	if (rdma_establish(id)) /* the RTU */
		die("rdma_establish");
	ask(o.qp, o.cq, o.cq, &b, w.addr, w.rkey);
	if (rdma_disconnect(id))
		die("rdma_disconnect");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	ibv_destroy_qp(o.qp);
	ibv_destroy_cq(o.cq);
	ibv_dereg_mr(b.mr);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	rdma_freeaddrinfo(res);
}

/* -------------------------------------------------------------- orphan -- */

static void orphan_server(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 1);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l;
	if (!ch || rdma_create_id(ch, &l, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(l, res->ai_src_addr) || rdma_listen(l, 1))
		die("rdma_bind_addr / rdma_listen");
	/* the REQ is in when the channel is readable; never take it */
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	check(poll(&p, 1, 20000) == 1, "no CONNECT_REQUEST within 20 s");
	if (rdma_destroy_id(l))
		die("rdma_destroy_id");
	/* give the held REQ its time, then report (DROCE_VERBS_STATS at exit
	 * prints the ids in use: the test wants 0) */
	sleep(3);
	rdma_destroy_event_channel(ch);
	rdma_freeaddrinfo(res);
}

static void orphan_client(const char *ip, const char *port)
{
	struct rdma_addrinfo *res = addr(ip, port, 0);
	struct ibv_qp_init_attr qa = {.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					      .max_recv_sge = 1},
				      .qp_type = IBV_QPT_RC};
	struct rdma_cm_id *id;
	if (rdma_create_ep(&id, res, NULL, &qa))
		die("rdma_create_ep");
	/* blocking: returns with the REJ (ECONNREFUSED), or with the CM's
	 * timeout (ETIMEDOUT) when nobody answers the REQ */
	check(rdma_connect(id, NULL) != 0, "rdma_connect to a destroyed listener succeeded");
	if (errno != ECONNREFUSED)
		die("rdma_connect: expected ECONNREFUSED");
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

struct loop_args {
	const char *ip, *port;
};

static void *loop_server(void *arg)
{
	const struct loop_args *a = arg;
	sync_server(a->ip, a->port);
	return NULL;
}

/* The server's listener must be up before the client's REQ: it listens,
 * then blocks in rdma_get_request; a REQ before that meets REJ 8 and the
 * client asks again (bounded). */
static void loop(const char *ip, const char *port)
{
	struct loop_args a = {ip, port};
	pthread_t t;
	if (pthread_create(&t, NULL, loop_server, &a))
		check(0, "pthread_create");
	for (int i = 0;; i++) {
		struct rdma_addrinfo *res = addr(ip, port, 0);
		struct rdma_cm_id *id;
		if (rdma_create_ep(&id, res, NULL, NULL))
			die("rdma_create_ep (active)");
		struct ibv_qp_init_attr_ex qa = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
							 .max_send_sge = 1, .max_recv_sge = 1},
						 .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
						 .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = id->pd};
		if (rdma_create_qp_ex(id, &qa))
			die("rdma_create_qp_ex");
		struct buf b;
		buf_init(&b, id->pd);
		post_recv(id->qp, &b);
		struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
					     .retry_count = 7, .rnr_retry_count = 7};
		if (rdma_connect(id, &cp)) {
			check(errno == ECONNREFUSED && i < 50, "rdma_connect to ourselves");
			ibv_dereg_mr(b.mr);
			rdma_destroy_ep(id);
			rdma_freeaddrinfo(res);
			usleep(100000); /* the listener is not up yet */
			continue;
		}
		struct where w;
		memcpy(&w, id->event->param.conn.private_data, sizeof(w));
		ask(id->qp, id->send_cq, id->recv_cq, &b, w.addr, w.rkey);
		if (rdma_disconnect(id))
			die("rdma_disconnect");
		ibv_dereg_mr(b.mr);
		rdma_destroy_ep(id);
		rdma_freeaddrinfo(res);
		break;
	}
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: rdmacm_api sync|qpn|orphan server|client IP PORT\n");
		return 2;
	}
	mode = argv[1];
	alarm(60);
	int server = !strcmp(argv[2], "server");
	if (!strcmp(mode, "sync"))
		(server ? sync_server : sync_client)(argv[3], argv[4]);
	else if (!strcmp(mode, "qpn"))
		(server ? qpn_server : qpn_client)(argv[3], argv[4]);
	else if (!strcmp(mode, "loop"))
		loop(argv[3], argv[4]);
	else if (!strcmp(mode, "orphan"))
		(server ? orphan_server : orphan_client)(argv[3], argv[4]);
	else
		return 2;
	printf("rdmacm_api: %s %s ok\n", mode, argv[2]);
	return 0;
}
