/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Event channels: a queue of events and an eventfd in semaphore mode that
 * counts them, so a blocking rdma_get_cm_event() sleeps in read(2) and an
 * application polling channel->fd sees it readable while events wait
 * (O_NONBLOCK on the fd makes rdma_get_cm_event() fail with EAGAIN, as the
 * kernel's does).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmacm/cma.h"

struct cma cma = {.mu = PTHREAD_MUTEX_INITIALIZER, .acked = PTHREAD_COND_INITIALIZER};

int cma_fail(int e)
{
	errno = e;
	return -1;
}

CMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	return &c->ch;
}

CMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct cma_channel *c = (struct cma_channel *)ch;
	if (!c)
		return;
	pthread_mutex_lock(&cma.mu);
	while (c->head) {
		struct cma_event *e = c->head;
		c->head = e->next;
		free(e);
	}
	/* A thread still inside rdma_get_cm_event on it (rping's CM thread,
	 * never joined, while its main thread tears down and exits) must
	 * not wake to freed memory or to a reused fd number: the channel
	 * and its fd stay for it, and it waits for ever, as a read of the
	 * kernel's closed ucma fd does. */
	bool keep = c->readers != 0;
	c->dead = keep;
	pthread_mutex_unlock(&cma.mu);
	if (keep)
		return;
	close(c->ch.fd);
	free(c);
}

static void wake(struct cma_channel *c)
{
	uint64_t one = 1;
	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one)) {
		/* an eventfd counter does not overflow at our rates */
	}
}

/* Whose event it is: a CONNECT_REQUEST belongs to its listener (it is
 * reported on the listener's channel and moves with it, as the kernel's
 * ucma keeps it on the listener's context), any other to its id. */
static const struct rdma_cm_id *owner(const struct cma_event *e)
{
	return e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST ? e->ev.listen_id : e->ev.id;
}

void cma_move_events(struct cma_id *id, struct cma_channel *to)
{
	struct cma_channel *from = (struct cma_channel *)id->id.channel;
	if (from == to)
		return;
	for (struct cma_event **p = &from->head; *p;) {
		struct cma_event *e = *p;
		if (owner(e) != &id->id) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		e->next = NULL;
		if (to->tail)
			to->tail->next = e;
		else
			to->head = e;
		to->tail = e;
		wake(to); /* the count left on the old channel reads as a spurious wakeup there */
	}
	from->tail = NULL;
	for (struct cma_event *e = from->head; e; e = e->next)
		from->tail = e;
	from->n_ids--;
	to->n_ids++;
	id->id.channel = &to->ch;
}

int cma_complete(struct cma_id *c)
{
	if (!c->sync)
		return 0;
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &c->id.event))
		return -1;
	const struct rdma_cm_event *e = c->id.event;
	if (!e->status)
		return 0;
	/* rdma-core's mapping: a reject is ECONNREFUSED, else the status as an errno */
	if (e->event == RDMA_CM_EVENT_REJECTED)
		return cma_fail(ECONNREFUSED);
	return cma_fail(e->status < 0 ? -e->status : e->status);
}

void cma_post(struct cma_id *id, enum rdma_cm_event_type type, int status,
	      const struct droce_conn_event *src)
{
	struct rdma_event_channel *ch = type == RDMA_CM_EVENT_CONNECT_REQUEST && id->listener
						? id->listener->id.channel
						: id->id.channel;
	struct cma_channel *c = (struct cma_channel *)ch;
	struct cma_event *e = calloc(1, sizeof(*e));
	if (!c || !e) {
		free(e);
		return;
	}
	e->ev.id = &id->id;
	/* as rdma-core: listen_id names the listener on CONNECT_REQUEST only */
	e->ev.listen_id = type == RDMA_CM_EVENT_CONNECT_REQUEST && id->listener ? &id->listener->id
										 : NULL;
	e->ev.event = type;
	e->ev.status = status;
	if (src) {
		size_t n = src->private_data_len < sizeof(e->pd) ? src->private_data_len : sizeof(e->pd);
		memcpy(e->pd, src->private_data, n);
		struct rdma_conn_param *cp = &e->ev.param.conn;
		cp->private_data = n ? e->pd : NULL;
		cp->private_data_len = (uint8_t)(n > 255 ? 255 : n);
		cp->responder_resources = src->responder_resources;
		cp->initiator_depth = src->initiator_depth;
		/* the peer's QPN (rdma-core reports it on CONNECT_REQUEST and
		 * CONNECT_RESPONSE); the REQ's retry count is the connection's */
		cp->qp_num = src->remote_qpn;
	}
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	wake(c);
}

CMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct cma_channel *c = (struct cma_channel *)ch;
	if (!c || !event)
		return cma_fail(EINVAL);
	uint64_t v;
	struct cma_event *e = NULL;
	pthread_mutex_lock(&cma.mu);
	c->readers++;
	pthread_mutex_unlock(&cma.mu);
	while (!e) {
		ssize_t n = read(c->ch.fd, &v, sizeof(v));
		if (n < 0 && errno == EINTR)
			continue;
		pthread_mutex_lock(&cma.mu);
		if (c->dead) {
			pthread_mutex_unlock(&cma.mu);
			for (;;)
				pause(); /* rdma_destroy_event_channel above */
		}
		if (n != sizeof(v)) {
			int err = errno;
			c->readers--;
			pthread_mutex_unlock(&cma.mu);
			return cma_fail(err); /* EAGAIN on a non-blocking fd */
		}
		e = c->head;
		if (e) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			/* counted until acked: the id it names stays until then */
			e->out = (struct cma_id *)e->ev.id;
			e->out->events_out++;
			c->readers--;
		}
		pthread_mutex_unlock(&cma.mu);
		/* no event: the count was for one rdma_destroy_id dropped with
		 * its id; wait for the next */
	}
	*event = &e->ev;
	return 0;
}

CMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return cma_fail(EINVAL);
	struct cma_event *e = (struct cma_event *)event;
	if (e->out) {
		pthread_mutex_lock(&cma.mu);
		e->out->events_out--;
		pthread_cond_broadcast(&cma.acked);
		pthread_mutex_unlock(&cma.mu);
	}
	free(e);
	return 0;
}

CMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event]
								  : "UNKNOWN EVENT";
}
