/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DROCE_COMM_CORE=N: droce's comm-core model (include/droce/comm.h) under
 * the verbs. The progress thread, pinned to CPU N, is the only thread that
 * drives the context (droce_comm_poll); the application's post and poll
 * verbs never touch it: they go through the lock-free rings of a channel.
 *
 * One channel per CQ: completions of a CQ arrive on its channel's ring, so
 * ibv_poll_cq(cq) reads exactly its own; a QP's sends are queued on the
 * channel of its send CQ and its receives on that of its receive CQ, which
 * keeps each work queue in order. The rings are single-producer and
 * single-consumer; verbs allow any thread to post or poll, so each side of
 * each channel has a small lock (uncontended in the one-thread-per-queue
 * programs this mode is for).
 *
 * What the rings change, and how the verbs keep rdma-core's behaviour:
 *  - a WR the engine refuses comes back as a completion (comm.h), so the
 *    checks a caller expects synchronously are made here first: the opcode
 *    and flags, the QP state as last set by modify_qp, the SGE count;
 *  - inline data is copied at post time by verbs rules, but the engine
 *    copies it only when the comm core takes the command; so it is first
 *    copied into a per-channel bounce slot, slot i of a ring as deep as the
 *    command ring: slot i is rewritten only by the command that needs ring
 *    room freed by command i, i.e. after the engine took it;
 *  - a destroyed CQ gives its channel back (droce_comm_unbind_cq) and the
 *    next CQ takes it, rings and bounce slots as they are: a context has at
 *    most DV_COMM_CHANNELS (1024) live CQs in this mode, and any number
 *    over its life (NCCL makes one per connection and destroys it with the
 *    connection). A channel's memory (rings and bounce slots, about
 *    0.5 MB) stays with the context for the next CQ.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_pause.h>

static void spin_lock(atomic_int *l)
{
	while (atomic_exchange_explicit(l, 1, memory_order_acquire))
		while (atomic_load_explicit(l, memory_order_relaxed))
			rte_pause();
}

static void spin_unlock(atomic_int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

int dv_comm_open(struct dv_context *c)
{
	c->comm = droce_comm_create(c->dctx, DV_COMM_CHANNELS, DV_COMM_DEPTH);
	return c->comm ? 0 : (errno ? errno : ENOMEM);
}

void dv_comm_close(struct dv_context *c)
{
	for (unsigned i = 0; i < c->n_chan; i++)
		free(c->chan[i].bounce);
	c->n_chan = 0;
	droce_comm_destroy(c->comm);
	c->comm = NULL;
}

int dv_comm_bind(struct dv_cq *cq)
{
	struct dv_context *c = cq->c;
	unsigned i = 0;
	while (i < c->n_chan && c->chan[i].used)
		i++;
	if (i == DV_COMM_CHANNELS)
		return ENOSPC;
	struct dv_chan *ch = &c->chan[i];
	if (i == c->n_chan) {
		memset(ch, 0, sizeof(*ch));
		ch->ch = droce_comm_chan(c->comm, i);
		ch->bounce = malloc((size_t)DV_COMM_DEPTH * DV_COMM_MAX_INLINE);
		if (!ch->ch || !ch->bounce) {
			free(ch->bounce);
			ch->bounce = NULL;
			return ENOMEM;
		}
		c->n_chan++;
	}
	int r = droce_comm_bind_cq(c->comm, cq->dcq, ch->ch);
	if (r)
		return -r;
	ch->used = true;
	cq->cc = ch;
	return 0;
}

void dv_comm_unbind(struct dv_cq *cq)
{
	struct dv_chan *ch = cq->cc;
	droce_comm_unbind_cq(cq->c->comm, cq->dcq);
	/* Completions of the dead CQ's QPs must not reach the next CQ. */
	struct droce_wc d[32];
	while (droce_chan_poll_cq(ch->ch, 32, d) > 0)
		;
	ch->used = false;
	cq->cc = NULL;
}

/* Ring entries of @p cq into its stash. Consumer lock held. */
static unsigned pull(struct dv_cq *cq)
{
	unsigned moved = 0;
	while (cq->stash_n < cq->stash_cap) {
		struct droce_wc d[32];
		unsigned room = cq->stash_cap - cq->stash_n;
		int r = droce_chan_poll_cq(cq->cc->ch, room < 32 ? (int)room : 32, d);
		if (r <= 0)
			break;
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

unsigned dv_comm_pull(struct dv_cq *cq)
{
	spin_lock(&cq->cc->clock);
	unsigned moved = pull(cq);
	spin_unlock(&cq->cc->clock);
	return moved;
}

int dv_comm_poll_cq(struct dv_cq *cq, int n, struct ibv_wc *wc)
{
	struct dv_chan *ch = cq->cc;
	int got = 0;
	if (cq->armed) {
		/* Event mode: completions pass the arm check first (cq.c). The
		 * flag is only read here; it changes under the context lock. */
		dv_lock(cq->c);
		dv_armed_check(cq);
		dv_unlock(cq->c);
	}
	spin_lock(&ch->clock);
	while (got < n && cq->stash_n) {
		wc[got++] = cq->stash[cq->stash_head];
		if (++cq->stash_head == cq->stash_cap)
			cq->stash_head = 0;
		cq->stash_n--;
	}
	while (got < n) {
		struct droce_wc d[32];
		int k = n - got < 32 ? n - got : 32;
		int r = droce_chan_poll_cq(ch->ch, k, d);
		if (r <= 0)
			break;
		for (int i = 0; i < r; i++)
			dv_wc_convert(&d[i], &wc[got + i]);
		got += r;
		if (r < k)
			break;
	}
	bool yield = dv_poll_idle(cq, got);
	spin_unlock(&ch->clock);
	/* As dv_poll_cq: here the thread waited for is the comm core, which
	 * shares the two CPUs with both processes' spinning applications. */
	if (yield)
		sched_yield();
	return got;
}

static bool can_post(enum ibv_qp_state s)
{
	/* IBTA 10.8.1 as droce applies it (stack/core/qp.c): RTS, SQD, and
	 * SQE/ERR, where the WR is flushed. */
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

int dv_comm_post_send(struct dv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dv_chan *ch = ((struct dv_cq *)qp->ibqp.send_cq)->cc;
	int r = 0;
	spin_lock(&ch->plock);
	for (; wr; wr = wr->next) {
		struct droce_send_wr d;
		r = dv_send_to_droce(wr, &d);
		if (!r && (!can_post(qp->ibqp.state) || wr->num_sge < 0 ||
			   wr->num_sge > DROCE_CHAN_MAX_SGE ||
			   (uint32_t)wr->num_sge > qp->cap.max_send_sge))
			r = EINVAL;
		struct droce_sge inl;
		if (!r && (wr->send_flags & IBV_SEND_INLINE)) {
			uint64_t total = 0;
			for (int i = 0; i < wr->num_sge; i++)
				total += wr->sg_list[i].length;
			if (total > DV_COMM_MAX_INLINE || total > qp->cap.max_inline_data) {
				r = EINVAL;
			} else {
				uint8_t *slot = ch->bounce +
						(size_t)(ch->produced & (DV_COMM_DEPTH - 1)) * DV_COMM_MAX_INLINE;
				uint32_t off = 0;
				for (int i = 0; i < wr->num_sge; i++) {
					memcpy(slot + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
					       wr->sg_list[i].length);
					off += wr->sg_list[i].length;
				}
				inl = (struct droce_sge){.addr = (uintptr_t)slot, .length = off};
				d.sg_list = &inl;
				d.num_sge = off ? 1 : 0;
			}
		}
		if (!r) {
			int e = droce_chan_post_send(ch->ch, qp->dqp, &d);
			r = e == -EAGAIN ? ENOMEM : -e;
		}
		if (r) {
			*bad = wr;
			break;
		}
		ch->produced++;
	}
	spin_unlock(&ch->plock);
	droce_poller_wake(qp->c->poller); /* DROCE_IDLE=adaptive: end a sleeping comm core's nap */
	return r;
}

int dv_comm_post_recv(struct dv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dv_chan *ch = ((struct dv_cq *)qp->ibqp.recv_cq)->cc;
	int r = 0;
	spin_lock(&ch->plock);
	for (; wr; wr = wr->next) {
		if (qp->ibqp.state == IBV_QPS_RESET || wr->num_sge < 0 ||
		    wr->num_sge > DROCE_CHAN_MAX_SGE || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			r = EINVAL;
		} else {
			struct droce_recv_wr d = {.wr_id = wr->wr_id,
						  .sg_list = (struct droce_sge *)wr->sg_list,
						  .num_sge = wr->num_sge};
			int e = droce_chan_post_recv(ch->ch, qp->dqp, &d);
			r = e == -EAGAIN ? ENOMEM : -e;
		}
		if (r) {
			*bad = wr;
			break;
		}
		ch->produced++;
	}
	spin_unlock(&ch->plock);
	droce_poller_wake(qp->c->poller);
	return r;
}
