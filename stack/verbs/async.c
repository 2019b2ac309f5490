/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events (IBTA 11.6.3): ibv_get_async_event() and
 * ibv_ack_async_event() over droce's event ring (droce_ctx_get_event) and
 * the DPDK link state.
 *
 * The engine raises QP, CQ and SRQ events as data; after each poll the
 * thread that drove the context moves them here (dv_async_collect, lock
 * held), each as an ibv_async_event naming the application's object, and
 * counts each on context->async_fd: an eventfd in semaphore mode, so that
 * poll()/epoll() on it says "an event is waiting" as on a kernel device
 * (UCX and rdma_cm programs watch the fd), a blocking read takes exactly
 * one, and an fd the application made non-blocking gives EAGAIN.
 *
 * Port events: the progress thread looks at the link now and then
 * (dv_async_link); a change from up to down is IBV_EVENT_PORT_ERR (a memif
 * peer that left), down to up IBV_EVENT_PORT_ACTIVE.
 *
 * Destroying a QP, CQ or SRQ drops its events not yet taken (the engine's
 * and ours), so an event never names freed memory; ibv_destroy_* then waits,
 * as rdma-core does, until every event of the object that was handed out
 * has been acknowledged (events_completed).
 */
#include "verbs/dv.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_ethdev.h>

/** How often the progress thread looks at the link (ns). */
#define LINK_CHECK_NS 50000000ull

int dv_async_open(struct dv_context *c)
{
	struct dv_async *a = &c->async;
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->mu, NULL);
	a->link_up = -1;
	return eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
}

void dv_async_close(struct dv_context *c)
{
	pthread_mutex_destroy(&c->async.mu);
}

static void push(struct dv_context *c, const struct ibv_async_event *ev)
{
	struct dv_async *a = &c->async;
	pthread_mutex_lock(&a->mu);
	if (a->n == DV_ASYNC_DEPTH) {
		a->lost++;
		pthread_mutex_unlock(&a->mu);
		return;
	}
	a->q[(a->head + a->n) % DV_ASYNC_DEPTH] = *ev;
	a->n++;
	pthread_mutex_unlock(&a->mu);
	uint64_t one = 1;
	if (write(c->async_fd, &one, sizeof(one)) != sizeof(one))
		a->lost++;
}

static struct ibv_cq *find_cq(struct dv_context *c, const struct droce_cq *dcq)
{
	for (struct dv_cq *cq = c->cqs; cq; cq = cq->next)
		if (cq->dcq == dcq)
			return &cq->ibcq;
	return NULL;
}

unsigned dv_async_collect(struct dv_context *c)
{
	struct droce_event e;
	unsigned n = 0;
	while (droce_ctx_get_event(c->dctx, &e) == 1) {
		struct ibv_async_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.event_type = (enum ibv_event_type)e.type; /* the same numbers (verbs.h) */
		if (e.qp && e.context)
			ev.element.qp = &((struct dv_qp *)e.context)->ibqp;
		else if (e.srq && e.context)
			ev.element.srq = &((struct dv_srq *)e.context)->ibsrq;
		else if (e.cq && (ev.element.cq = find_cq(c, e.cq)))
			;
		else
			continue; /* an object of droce's own (the CM's QP1) */
		push(c, &ev);
		n++;
	}
	return n;
}

void dv_async_link(struct dv_context *c, uint64_t now)
{
	struct dv_async *a = &c->async;
	if (now < a->link_next)
		return;
	a->link_next = now + LINK_CHECK_NS;
	struct rte_eth_link link;
	if (rte_eth_link_get_nowait(c->dev->port_id, &link) != 0)
		return;
	int up = link.link_status != 0;
	if (a->link_up >= 0 && up != a->link_up) {
		struct ibv_async_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
		ev.element.port_num = 1;
		push(c, &ev);
	}
	a->link_up = up;
}

/* The events of @p obj not handed out yet go with it. Lock held. */
void dv_async_forget(struct dv_context *c, const void *obj)
{
	struct dv_async *a = &c->async;
	pthread_mutex_lock(&a->mu);
	unsigned k = 0, dropped = 0;
	for (unsigned i = 0; i < a->n; i++) {
		const struct ibv_async_event *e = &a->q[(a->head + i) % DV_ASYNC_DEPTH];
		bool port = e->event_type == IBV_EVENT_PORT_ACTIVE || e->event_type == IBV_EVENT_PORT_ERR;
		if (!port && (const void *)e->element.qp == obj) {
			dropped++;
			continue;
		}
		a->q[(a->head + k) % DV_ASYNC_DEPTH] = *e;
		k++;
	}
	a->n = k;
	pthread_mutex_unlock(&a->mu);
	/* Take their counts off the fd too, never blocking: a reader that
	 * took a count already finds no event and waits for the next. */
	for (; dropped; dropped--) {
		struct pollfd p = {.fd = c->async_fd, .events = POLLIN};
		uint64_t v;
		if (poll(&p, 1, 0) != 1 || read(c->async_fd, &v, sizeof(v)) != sizeof(v))
			break;
	}
}

DV_EXPORT int ibv_get_async_event(struct ibv_context *ic, struct ibv_async_event *ev)
{
	if (!ic || !ev) {
		errno = EINVAL;
		return -1;
	}
	struct dv_context *c = dv_ctx(ic);
	struct dv_async *a = &c->async;
	for (;;) {
		/* One count per event: blocks until one is raised (or EAGAIN
		 * when the application made the fd non-blocking). */
		uint64_t v;
		if (read(ic->async_fd, &v, sizeof(v)) != sizeof(v))
			return -1;
		pthread_mutex_lock(&a->mu);
		if (a->n) {
			*ev = a->q[a->head];
			a->head = (a->head + 1) % DV_ASYNC_DEPTH;
			a->n--;
			pthread_mutex_unlock(&a->mu);
			uint32_t *reported = dv_async_reported(ev);
			if (reported)
				__atomic_add_fetch(reported, 1, __ATOMIC_RELAXED);
			return 0;
		}
		/* Its event was dropped with its object in between. */
		pthread_mutex_unlock(&a->mu);
	}
}

/* The object's count of events handed out (ibv_destroy_* waits for as
 * many acknowledgements), or NULL for a port event. */
uint32_t *dv_async_reported(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return &((struct dv_cq *)ev->element.cq)->events_reported;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return &((struct dv_srq *)ev->element.srq)->events_reported;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		return NULL;
	default:
		return &((struct dv_qp *)ev->element.qp)->events_reported;
	}
}

/* Before an object goes: every event of it handed out is acknowledged
 * (rdma-core's ibv_cmd_destroy_* wait the same way). */
void dv_async_wait_acked(pthread_mutex_t *mu, pthread_cond_t *cond, const uint32_t *completed,
			 const uint32_t *reported)
{
	pthread_mutex_lock(mu);
	while (*completed != __atomic_load_n(reported, __ATOMIC_RELAXED))
		pthread_cond_wait(cond, mu);
	pthread_mutex_unlock(mu);
}

DV_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	if (!ev)
		return;
	pthread_mutex_t *mu = NULL;
	pthread_cond_t *cond = NULL;
	uint32_t *done = NULL;
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		mu = &ev->element.cq->mutex;
		cond = &ev->element.cq->cond;
		done = &ev->element.cq->async_events_completed;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		mu = &ev->element.qp->mutex;
		cond = &ev->element.qp->cond;
		done = &ev->element.qp->events_completed;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		mu = &ev->element.srq->mutex;
		cond = &ev->element.srq->cond;
		done = &ev->element.srq->events_completed;
		break;
	default:
		return; /* port and device events name no object */
	}
	pthread_mutex_lock(mu);
	++*done;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mu);
}
