/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite verbs: our own rdma_cm program, built against <rdma/rdma_cma.h>
 * and run as server and client over memif (pair.sh), for what rping,
 * ucmatose and perftest do not check:
 *  - private data both ways: the REQ's reaches the server's
 *    CONNECT_REQUEST, the REP's the client's ESTABLISHED, byte for byte;
 *  - a QP destroyed right after DISCONNECTED (rping's order: ibv_destroy_qp
 *    while the connection is still in TIMEWAIT); the client's next id and
 *    QP made before that connection's TIMEWAIT_EXIT (malloc tends to put
 *    the new QP where the old one was), connected after it: each of the
 *    ROUNDS connections carries a SEND that must complete. A REQ that
 *    meets the server's TIMEWAIT of an earlier one with the same QPN is
 *    refused as stale (REJ 10): retried, at most 100 times (droce's QPNs
 *    rotate, so against droce that takes a QP table's worth of QPs; a
 *    stack that reuses a QPN at once, as droce did, meets it here).
 *  - "vanish": a server that stops dead (SIGSTOP, every thread) when the
 *    REQ arrives, never answering: the client's CM gives up after its
 *    retries (DROCE_CM_RESPONSE_TIMEOUT / DROCE_CM_RETRIES shorten them).
 *   reconnect server|client|vanish IP PORT ROUNDS
 * Exits 0 and prints "reconnect: N rounds ok", or names what failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#define MSG 64

static int fail(const char *what)
{
	fprintf(stderr, "reconnect: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int tw_exits; /* TIMEWAIT_EXITs met while waiting for something else */

static struct rdma_cm_event *wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev;
	for (;;) {
		if (rdma_get_cm_event(ch, &ev))
			fail("rdma_get_cm_event");
		if (ev->event == t)
			return ev;
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) { /* the previous connection's */
			tw_exits++;
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_REJECTED && t == RDMA_CM_EVENT_ESTABLISHED)
			return ev; /* the caller retries a stale refusal */
		fprintf(stderr, "reconnect: waited for %s, got %s (status %d)\n", rdma_event_str(t),
			rdma_event_str(ev->event), ev->status);
		exit(1);
	}
}

/* the private data each side sends: a pattern of its own */
static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 7 * i);
}

static void check_pd(const struct rdma_cm_event *ev, size_t n, uint8_t seed, const char *what)
{
	uint8_t want[256];
	pattern(want, n, seed);
	if (ev->param.conn.private_data_len < n || !ev->param.conn.private_data ||
	    memcmp(ev->param.conn.private_data, want, n)) {
		fprintf(stderr, "reconnect: %s: private data len %u, not the %zu bytes sent\n", what,
			ev->param.conn.private_data_len, n);
		exit(1);
	}
}

struct res {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[MSG];
};

static void setup(struct rdma_cm_id *id, struct res *r)
{
	if (!(r->pd = ibv_alloc_pd(id->verbs)))
		fail("ibv_alloc_pd");
	if (!(r->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0)))
		fail("ibv_create_cq");
	if (!(r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE)))
		fail("ibv_reg_mr");
	struct ibv_qp_init_attr a = {.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	if (rdma_create_qp(id, r->pd, &a))
		fail("rdma_create_qp");
}

static void teardown(struct rdma_cm_id *id, struct res *r)
{
	ibv_destroy_qp(id->qp); /* as rping: the verbs call, the connection in TIMEWAIT */
	id->qp = NULL;
	ibv_dereg_mr(r->mr);
	ibv_destroy_cq(r->cq);
	ibv_dealloc_pd(r->pd);
}

static void complete(struct res *r, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n;
	for (long spins = 0; (n = ibv_poll_cq(r->cq, 1, &wc)) == 0; spins++)
		if (spins > 200000000L) {
			fprintf(stderr, "reconnect: no completion\n");
			exit(1);
		}
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
		fprintf(stderr, "reconnect: completion %s (opcode %d)\n", ibv_wc_status_str(wc.status),
			wc.opcode);
		exit(1);
	}
}

static bool vanish;

static void serve(struct rdma_event_channel *ch, int rounds)
{
	uint8_t pd[56];
	struct res res[2];
	for (int done = 0, got = 0; done < rounds;) {
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(ch, &ev))
			fail("rdma_get_cm_event");
		struct rdma_cm_id *id = ev->id;
		struct res *r = id->context;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			if (vanish)
				raise(SIGSTOP); /* the REQ is in, no REP will ever leave */
			check_pd(ev, 56, (uint8_t)(0x10 + got), "CONNECT_REQUEST");
			r = &res[got % 2];
			id->context = r;
			setup(id, r);
			struct ibv_sge sge = {(uintptr_t)r->buf, MSG, r->mr->lkey};
			struct ibv_recv_wr rw = {.sg_list = &sge, .num_sge = 1}, *bad;
			if (ibv_post_recv(id->qp, &rw, &bad))
				fail("ibv_post_recv");
			pattern(pd, 56, (uint8_t)(0x80 + got));
			struct rdma_conn_param cp = {.private_data = pd, .private_data_len = 56,
						     .responder_resources = 1, .initiator_depth = 1,
						     .rnr_retry_count = 7};
			if (rdma_accept(id, &cp))
				fail("rdma_accept");
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			complete(r, IBV_WC_RECV);
			got++;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			teardown(id, r);
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			rdma_ack_cm_event(ev);
			rdma_destroy_id(id);
			done++;
			continue;
		default:
			fprintf(stderr, "reconnect: server got %s (status %d)\n",
				rdma_event_str(ev->event), ev->status);
			exit(1);
		}
		rdma_ack_cm_event(ev);
	}
}

/* A new id with its QP, the address and route resolved. */
static struct rdma_cm_id *prepare(struct rdma_event_channel *ch, struct sockaddr_in *sin,
				  struct res *r)
{
	struct rdma_cm_id *id;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000))
		fail("resolve_addr");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		fail("resolve_route");
	rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup(id, r);
	return id;
}

static void run_client(struct rdma_event_channel *ch, struct sockaddr_in *sin, int rounds)
{
	uint8_t pd[56];
	struct res res[2];
	struct rdma_cm_id *old = NULL;
	for (int i = 0; i < rounds; i++) {
		struct res *r = &res[i % 2];
		struct rdma_cm_id *id = prepare(ch, sin, r);
		printf("round %d: qp %p\n", i, (void *)id->qp);
		if (old) {
			/* the last connection's TIMEWAIT ends while this QP exists */
			if (!tw_exits)
				rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT));
			tw_exits = 0;
			rdma_destroy_id(old);
			old = NULL;
		}
		struct rdma_cm_event *ev;
		for (int tries = 0;; tries++) {
			pattern(pd, 56, (uint8_t)(0x10 + i));
			struct rdma_conn_param cp = {.private_data = pd, .private_data_len = 56,
						     .responder_resources = 1, .initiator_depth = 1,
						     .retry_count = 7, .rnr_retry_count = 7};
			if (rdma_connect(id, &cp))
				fail("rdma_connect");
			ev = wait_event(ch, RDMA_CM_EVENT_ESTABLISHED);
			if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
				break;
			if (ev->status != 10 || tries == 100) {
				fprintf(stderr, "reconnect: REJECTED, status %d\n", ev->status);
				exit(1);
			}
			/* stale (the server's TIMEWAIT of our QPN): a new id and QP */
			rdma_ack_cm_event(ev);
			teardown(id, r);
			rdma_destroy_id(id);
			id = prepare(ch, sin, r);
		}
		check_pd(ev, 56, (uint8_t)(0x80 + i), "ESTABLISHED");
		rdma_ack_cm_event(ev);
		struct ibv_sge sge = {(uintptr_t)r->buf, MSG, r->mr->lkey};
		struct ibv_send_wr sw = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED}, *bad;
		if (ibv_post_send(id->qp, &sw, &bad))
			fail("ibv_post_send");
		complete(r, IBV_WC_SEND);
		if (rdma_disconnect(id))
			fail("rdma_disconnect");
		rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_DISCONNECTED));
		teardown(id, r);
		old = id;
	}
	if (!tw_exits)
		rdma_ack_cm_event(wait_event(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT));
	rdma_destroy_id(old);
}

int main(int argc, char **argv)
{
	if (argc != 5)
		return fprintf(stderr, "usage: reconnect server|client|vanish IP PORT ROUNDS\n"), 2;
	vanish = !strcmp(argv[1], "vanish");
	bool server = vanish || !strcmp(argv[1], "server");
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
	inet_pton(AF_INET, argv[2], &sin.sin_addr);
	int rounds = atoi(argv[4]);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		fail("rdma_create_event_channel");
	struct rdma_cm_id *listen = NULL;
	if (server) {
		if (rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(listen, (struct sockaddr *)&sin) || rdma_listen(listen, 4))
			fail("listen");
		serve(ch, rounds);
		rdma_destroy_id(listen);
	} else {
		run_client(ch, &sin, rounds);
	}
	rdma_destroy_event_channel(ch);
	printf("reconnect: %d rounds ok\n", rounds);
	return 0;
}
