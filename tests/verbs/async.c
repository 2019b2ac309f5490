/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events through the verbs (IBTA 11.6.3): one process on a
 * memif server port (no peer needed). An RC QP on an SRQ moved to ERR
 * raises IBV_EVENT_QP_LAST_WQE_REACHED naming that QP; context->async_fd
 * is readable exactly while an event waits (poll), a non-blocking read
 * with none gives EAGAIN, ibv_ack_async_event lets ibv_destroy_qp finish;
 * a QP without an SRQ raises nothing; a destroyed QP's event not taken yet
 * goes with it. Built against <infiniband/verbs.h>, linked with droce's
 * libibverbs.so.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(c, ...)                                                     \
	do {                                                              \
		if (!(c)) {                                               \
			failures++;                                       \
			fprintf(stderr, "FAIL (%s:%d): ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fprintf(stderr, "\n");                            \
		}                                                         \
	} while (0)

static int readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static struct ibv_qp *qp_on(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = srq ? 0 : 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return NULL;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return NULL;
	return qp;
}

static int to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int main(void)
{
	/* A memif server of its own (DPDK's memif socket is abstract: no
	 * file), unique per process. */
	char port[128];
	snprintf(port, sizeof(port), "memif:server,socket=/tmp/droce-verbs-async-%d.sock", (int)getpid());
	setenv("DROCE_PORT", port, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n != 1) {
		fprintf(stderr, "no droce0\n");
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "open: %s\n", strerror(errno));
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	if (!pd || !cq || !srq) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	int fd = ctx->async_fd;
	CHECK(!readable(fd, 0), "async_fd readable with no event");
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	struct ibv_async_event ev;
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN,
	      "non-blocking get_async_event with none: -1, EAGAIN (%s)", strerror(errno));

	/* No SRQ: ERR raises no event. */
	struct ibv_qp *plain = qp_on(pd, cq, NULL);
	CHECK(plain && to_err(plain) == 0, "plain QP to ERR");
	CHECK(!readable(fd, 100), "an event for a QP without an SRQ");

	/* On an SRQ: LAST_WQE_REACHED for that QP. */
	struct ibv_qp *q = qp_on(pd, cq, srq);
	CHECK(q != NULL, "QP on an SRQ: %s", strerror(errno));
	if (q) {
		CHECK(to_err(q) == 0, "QP on an SRQ to ERR");
		CHECK(readable(fd, 1000), "async_fd not readable after LAST_WQE_REACHED");
		CHECK(ibv_get_async_event(ctx, &ev) == 0, "get_async_event: %s", strerror(errno));
		CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev.element.qp == q,
		      "event %d (%s) for %p, want LAST_WQE_REACHED for %p", ev.event_type,
		      ibv_event_type_str(ev.event_type), (void *)ev.element.qp, (void *)q);
		CHECK(!readable(fd, 0), "async_fd still readable after the only event");
		ibv_ack_async_event(&ev);
		CHECK(ibv_destroy_qp(q) == 0, "destroy_qp after ack");
	}
	/* An event not taken goes with its QP. */
	struct ibv_qp *q2 = qp_on(pd, cq, srq);
	CHECK(q2 && to_err(q2) == 0 && readable(fd, 1000), "second QP on the SRQ: event");
	if (q2)
		CHECK(ibv_destroy_qp(q2) == 0, "destroy_qp with its event not taken");
	CHECK(!readable(fd, 0), "a destroyed QP's event still counted on async_fd");
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN, "its event still handed out");

	if (plain)
		ibv_destroy_qp(plain);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
