/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A CQ's stash and its completion events, below both backends (cq.c's
 * file comment says why completions pass through a stash): filling it from
 * the model's completion source, handing it out, the arm check of IBTA
 * 11.4.2.2, and the count of empty polls after which a spinning caller
 * yields its CPU (dv.h, inline).
 */
#include "verbs/dv.h"

#include <unistd.h>

#include "verbs/backend.h"

unsigned dv_stash_fill(struct dv_cq *cq, int (*src)(void *from, int n, struct droce_wc *wc),
		       void *from)
{
	unsigned moved = 0;
	while (cq->stash_n < cq->stash_cap) {
		struct droce_wc d[32];
		unsigned room = cq->stash_cap - cq->stash_n;
		int r = src(from, room < 32 ? (int)room : 32, d);
		if (r <= 0) {
			if (r < 0)
				cq->overflowed = r;
			break;
		}
		for (int i = 0; i < r; i++) {
			unsigned slot = cq->stash_head + cq->stash_n;
			if (slot >= cq->stash_cap)
				slot -= cq->stash_cap;
			dv_wc_convert(&d[i], &cq->stash[slot]);
			cq->stash_n++;
		}
		moved += (unsigned)r;
	}
	cq->stash_in += moved;
	return moved;
}

int dv_stash_take(struct dv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;
	while (got < n && cq->stash_n) {
		wc[got++] = cq->stash[cq->stash_head];
		if (++cq->stash_head == cq->stash_cap)
			cq->stash_head = 0;
		cq->stash_n--;
	}
	return got;
}

static void raise_event(struct dv_cq *cq)
{
	cq->armed = false;
	cq->c->n_armed--;
	cq->events++;
	uint64_t one = 1;
	if (write(cq->chan->ch.fd, &one, sizeof(one)) != sizeof(one)) {
		/* An eventfd only refuses at 2^64-2 unread events. */
	}
}

/*
 * IBTA 11.4.2.2 / rdma-core: an armed CQ raises one event for the next
 * completion added after it was armed. Completions already queued when it
 * was armed do not count: perftest -e re-arms a CQ before it polls it, and
 * an event for what it is about to poll would be taken, later, for another
 * CQ's completion. dv_lock held (the backend's pull takes what else its
 * source needs).
 */
unsigned dv_armed_pull(struct dv_cq *cq)
{
	unsigned moved = cq->c->be->pull(cq);
	if (cq->stash_in != cq->arm_mark || cq->overflowed)
		raise_event(cq);
	return moved;
}

unsigned dv_scan_armed(struct dv_context *c)
{
	if (!c->n_armed)
		return 0;
	unsigned moved = 0;
	for (struct dv_cq *cq = c->cqs; cq; cq = cq->next)
		moved += dv_armed_check(cq);
	return moved;
}
