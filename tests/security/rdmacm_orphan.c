/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_destroy_id() on a listener whose connection requests were never
 * taken (librdmacm drop-in, stack/rdmacm): they must be refused, not
 * leaked. The server listens, waits until a CONNECT_REQUEST is queued on
 * its channel, and destroys the listener without taking it; the client's
 * connect must then be REJECTED at once (consumer reject, 28, as the
 * kernel's rdma_cm answers for the child ids it destroys with their
 * listener). Before, the request's id leaked, holding a connection slot in
 * REQ_RCVD, and the client heard nothing but MRAs until it gave up.
 *   rdmacm_orphan server|client IP PORT
 * Prints "orphan: ..." and exits 0 when the behaviour is right.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static int fail(const char *what)
{
	fprintf(stderr, "orphan: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static struct rdma_cm_event *next(struct rdma_event_channel *ch, int timeout_ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) != 1)
		return NULL;
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event");
	return ev;
}

static int server(struct rdma_event_channel *ch, struct sockaddr_in *sin)
{
	struct rdma_cm_id *l;
	if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) || rdma_bind_addr(l, (struct sockaddr *)sin) ||
	    rdma_listen(l, 4))
		fail("listen");
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	if (poll(&p, 1, 20000) != 1) {
		fprintf(stderr, "orphan: no connection request within 20 s\n");
		return 1;
	}
	/* a request is queued, not taken: destroy the listener now */
	if (rdma_destroy_id(l))
		fail("rdma_destroy_id");
	printf("orphan: listener destroyed with a request queued\n");
	fflush(stdout);
	sleep(3); /* the process (and its CM) lives on while the client waits */
	return 0;
}

static int client(struct rdma_event_channel *ch, struct sockaddr_in *sin)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000))
		fail("resolve_addr");
	if (!(ev = next(ch, 5000)) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return fprintf(stderr, "orphan: no ADDR_RESOLVED\n"), 1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		fail("resolve_route");
	if (!(ev = next(ch, 5000)) || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return fprintf(stderr, "orphan: no ROUTE_RESOLVED\n"), 1;
	rdma_ack_cm_event(ev);
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				     .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					     .max_recv_sge = 1}};
	if (!cq || rdma_create_qp(id, pd, &a))
		fail("rdma_create_qp");
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	double t0 = now_s();
	if (rdma_connect(id, &cp))
		fail("rdma_connect");
	/* the server refuses within its poll, long before a CM retry (4 s) */
	ev = next(ch, 3000);
	double dt = now_s() - t0;
	if (!ev) {
		fprintf(stderr, "orphan: no answer to the REQ within 3 s\n");
		return 1;
	}
	if (ev->event != RDMA_CM_EVENT_REJECTED) {
		fprintf(stderr, "orphan: %s (status %d), want REJECTED\n", rdma_event_str(ev->event),
			ev->status);
		return 1;
	}
	printf("orphan: REJECTED (status %d) after %.0f ms\n", ev->status, dt * 1e3);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return fprintf(stderr, "usage: rdmacm_orphan server|client IP PORT\n"), 2;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
	inet_pton(AF_INET, argv[2], &sin.sin_addr);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (!ch)
		fail("rdma_create_event_channel");
	int rc = !strcmp(argv[1], "server") ? server(ch, &sin) : client(ch, &sin);
	rdma_destroy_event_channel(ch);
	return rc;
}
