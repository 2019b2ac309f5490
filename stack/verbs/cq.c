/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues and completion channels; the stash and the arm check
 * are stash.c's, poll_cq the backend's (backend.h).
 *
 * Events: a CQ armed by req_notify_cq() raises its channel as soon as it
 * holds a completion. Whoever holds the context (the progress thread, or the
 * application inside get_cq_event()) moves the completions of armed CQs
 * into the CQ's stash (converted to ibv_wc), counts an event, and bumps the
 * channel's eventfd, so a program that poll()s channel->fd wakes up too.
 * poll_cq() hands out the stash first, then the droce CQ: order is kept.
 * An armed CQ fires for the first completion that arrives after the arm
 * (counted by stash_in against arm_mark), as hardware does; while armed,
 * poll_cq() also takes completions through the stash so none slips past
 * its event.
 */
#include "verbs/dv.h"

#include "verbs/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <endian.h>

int dv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	if (!cq->chan)
		return 0; /* no channel: an event would go nowhere (rdma-core accepts it) */
	dv_lock(cq->c);
	if (!cq->armed) {
		/* What is queued now is not news: take it in, then mark. */
		cq->c->be->pull(cq);
		cq->arm_mark = cq->stash_in;
		cq->armed = true;
		cq->c->n_armed++;
	}
	dv_unlock(cq->c);
	return 0;
}

DV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ic)
{
	if (!ic) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_channel *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	/* A semaphore eventfd: one read() per event, so events and reads pair up. */
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		int e = errno;
		free(ch);
		errno = e;
		return NULL;
	}
	ch->ch.context = ic;
	return &ch->ch;
}

DV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return EINVAL;
	struct dv_channel *ch = (struct dv_channel *)channel;
	if (ch->n_cqs)
		return EBUSY;
	close(ch->ch.fd);
	free(ch);
	return 0;
}

DV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out,
			       void **cq_context)
{
	if (!channel || !cq_out || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	struct dv_context *c = dv_ctx(channel->context);
	int fl = fcntl(channel->fd, F_GETFL);
	bool nonblock = fl >= 0 && (fl & O_NONBLOCK);
	for (;;) {
		dv_lock(c);
		dv_scan_armed(c);
		struct dv_cq *hit = NULL;
		for (struct dv_cq *cq = c->cqs; cq; cq = cq->next)
			if (cq->chan == (struct dv_channel *)channel && cq->events != cq->delivered) {
				hit = cq;
				break;
			}
		if (hit) {
			hit->delivered++;
			dv_unlock(c);
			uint64_t v;
			if (read(channel->fd, &v, sizeof(v)) != sizeof(v)) {
				/* The count was raised with the event: a read cannot block. */
			}
			*cq_out = &hit->ibcq;
			*cq_context = hit->ibcq.cq_context;
			return 0;
		}
		c->be->drive(c, true);
		dv_unlock(c);
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		/* Sleep on the channel: whoever raises the next event (the
		 * progress thread, which takes over while we are away) bumps
		 * the eventfd. Bounded, so that comm-core-less progress and a
		 * raise that raced our scan cost at most one wait. Away from
		 * now: the progress thread's next look steps in rather than
		 * taking us for an application that drives (pace.c). */
		dv_app_sleeps(c);
		struct pollfd pfd = {.fd = channel->fd, .events = POLLIN};
		(void)poll(&pfd, 1, 1);
	}
}

DV_EXPORT void ibv_ack_cq_events(struct ibv_cq *ibcq, unsigned int nevents)
{
	if (!ibcq)
		return;
	pthread_mutex_lock(&ibcq->mutex);
	ibcq->comp_events_completed += nevents;
	pthread_cond_signal(&ibcq->cond);
	pthread_mutex_unlock(&ibcq->mutex);
}

DV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ic, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	if (!ic || cqe < 1 || (unsigned)cqe > DV_MAX_CQE || comp_vector != 0 ||
	    (channel && channel->context != ic)) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_context *c = dv_ctx(ic);
	/* Like hardware providers (mlx5 rounds cqe + 1 up to a power of two),
	 * grant at least what was asked, with headroom: programs size CQs to
	 * their queue depth exactly, and a droce CQ that fills moves its QPs
	 * to ERR (IBTA 11.4.2.1). The size granted is what ibcq.cqe reports. */
	unsigned depth = DV_MIN_CQE;
	while (depth < (unsigned)cqe + 1 && depth < DV_MAX_CQE)
		depth <<= 1;
	cqe = (int)depth;
	struct dv_cq *cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->stash = calloc((size_t)cqe, sizeof(*cq->stash));
	if (!cq || !cq->stash) {
		if (cq)
			free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->stash_cap = (unsigned)cqe;
	cq->c = c;
	cq->chan = (struct dv_channel *)channel;
	dv_lock(c);
	cq->dcq = droce_create_cq(c->dctx, (unsigned)cqe);
	int e = errno;
	if (cq->dcq && (e = c->be->cq_bind(cq))) {
		droce_destroy_cq(cq->dcq);
		cq->dcq = NULL;
	}
	if (cq->dcq) {
		cq->next = c->cqs;
		c->cqs = cq;
		if (cq->chan)
			cq->chan->n_cqs++;
	}
	dv_unlock(c);
	if (!cq->dcq) {
		free(cq->stash);
		free(cq);
		errno = e;
		return NULL;
	}
	cq->ibcq.context = ic;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.cqe = cqe;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	return &cq->ibcq;
}

DV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	if (!ibcq)
		return EINVAL;
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	struct dv_context *c = cq->c;
	dv_lock(c);
	/* What the model keeps for it goes first (comm core: its channel). */
	if (!cq->users)
		c->be->cq_unbind(cq);
	int r = cq->users ? -EBUSY : droce_destroy_cq(cq->dcq);
	if (r == 0) {
		for (struct dv_cq **pp = &c->cqs; *pp; pp = &(*pp)->next)
			if (*pp == cq) {
				*pp = cq->next;
				break;
			}
		if (cq->armed)
			c->n_armed--;
		if (cq->chan)
			cq->chan->n_cqs--;
		dv_async_forget(c, ibcq);
	}
	dv_unlock(c);
	if (r)
		return -r;
	dv_async_wait_acked(&ibcq->mutex, &ibcq->cond, &ibcq->async_events_completed,
			    &cq->events_reported);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq->stash);
	free(cq);
	return 0;
}
