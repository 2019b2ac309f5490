/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DROCE_COMM_CORE=N: droce's comm-core model (include/droce/comm.h) under
 * the verbs. The progress thread, pinned to CPU N, is the only thread that
 * drives the context (droce_comm_poll); the application's post and poll
 * verbs do not touch it (an SRQ's posts aside, below): they go through the lock-free rings of a channel.
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
 *  - a full command ring is not a full send queue: ibv_post_send may
 *    return ENOMEM only for the QP's own queue (max_send_wr), and a
 *    program may post every QP's whole queue before it polls (perftest
 *    -q 1024 -t 128: 131072 WRs on one send CQ, so one channel). A post
 *    that finds the ring full waits for room; the comm core takes a
 *    command only while the completion ring has a free slot (comm.c: a
 *    refusal must have somewhere to go), so while it waits the post moves
 *    that ring's completions into the CQ's stash, where poll_cq finds them
 *    first. It gives up (ENOMEM) only when the stash is full too (more
 *    completions outstanding than the CQ holds) or after
 *    DV_COMM_POST_WAIT_NS;
 *  - inline data is copied at post time by verbs rules, but the engine
 *    copies it only when the comm core takes the command; so it is first
 *    copied into a per-channel bounce slot, slot i of a ring twice as deep
 *    as the command ring: a post that writes slot i waits, at worst, for
 *    the room command i - DV_COMM_DEPTH frees, and command i -
 *    DV_COMM_BOUNCE, slot i's last user, was taken before that one could
 *    enter the ring;
 *  - UD sends name an ibv_ah: the WR carries its droce handle, and
 *    destroy_ah goes through droce_comm_destroy_ah, which refuses a
 *    command naming it that still waits in a ring;
 *  - a shared receive queue is the context's, not a channel's: its
 *    receives are posted under dv_lock(), which the comm core holds
 *    while it polls, so an SRQ post waits at most one droce_comm_poll();
 *    its completions still arrive on the QP's receive CQ's channel;
 *  - a destroyed CQ gives its channel back (droce_comm_unbind_cq) and the
 *    next CQ takes it, rings and bounce slots as they are: a context has at
 *    most DV_COMM_CHANNELS (1024) live CQs in this mode, and any number
 *    over its life (NCCL makes one per connection and destroys it with the
 *    connection). A channel's memory (rings and bounce slots, about
 *    0.5 MB) stays with the context for the next CQ.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_pause.h>

#include "telemetry/telemetry.h"
#include "verbs/backend.h"

/* Idle polls before the comm core naps. */
#define COMM_IDLE_SPIN 1000u

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

/* The comm core drives the context alone. A core of its own: spin, but
 * nap once nothing has happened for a while, so that a comm core that
 * shares its CPU after all does not starve who it shares with. It holds
 * dv_lock() while it polls: the control verbs (and SRQ posts) take turns
 * with it. */
static void comm_run(struct dv_context *c)
{
	dv_progress_begin(c, c->dev->cfg.comm_core);
	unsigned idle = 0;
	bool adaptive = c->dev->cfg.idle == DROCE_IDLE_ADAPTIVE;
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		bool qps = atomic_load_explicit(&c->n_qps, memory_order_relaxed);
		if (!dv_try_take(c)) {
			dv_sleep_ns(PACE_IDLE_NAP_NS);
			continue;
		}
		uint64_t now = dv_now(c);
		unsigned n = (qps ? droce_comm_poll(c->comm, now) : droce_ctx_poll(c->dctx, now)) +
			     dv_scan_armed(c);
		droce_telemetry_publish(c->tel, now);
		uint64_t deadline = droce_ctx_next_deadline(c->dctx);
		dv_give_back(c);
		if (!qps) {
			/* No QP yet: answer ARP now and then (backend_thread.c). */
			dv_sleep_ns(1000000);
			continue;
		}
		/* Out of the lock: DROCE_IDLE=adaptive sleeps here, until the
		 * next timer or a post through the rings (which wakes it). */
		droce_poller_step(c->poller, now, n, deadline);
		if (adaptive)
			continue;
		idle = n ? 0 : idle + 1;
		if (idle >= COMM_IDLE_SPIN)
			dv_sleep_ns(PACE_IDLE_NAP_NS);
	}
	dv_progress_end();
}

static int comm_open(struct dv_context *c)
{
	c->comm = droce_comm_create(c->dctx, DV_COMM_CHANNELS, DV_COMM_DEPTH);
	return c->comm ? 0 : (errno ? errno : ENOMEM);
}

static void comm_close(struct dv_context *c)
{
	for (unsigned i = 0; i < c->n_chan; i++)
		free(c->chan[i].bounce);
	c->n_chan = 0;
	droce_comm_destroy(c->comm);
	c->comm = NULL;
}

static void comm_report(const struct dv_context *c, bool opened)
{
	if (opened)
		fprintf(stderr, "droce: droce0 open, progress: comm core %d (comm.h rings)\n",
			c->dev->cfg.comm_core);
}

/* The application's verbs calls never poll: the comm core does. */
static unsigned comm_drive(struct dv_context *c, bool app_polls)
{
	(void)c;
	(void)app_polls;
	return 0;
}

static int comm_check_caps(const struct ibv_qp_cap *cap)
{
	/* What a WR can carry through a comm-core ring. */
	if (cap->max_send_sge > DROCE_CHAN_MAX_SGE || cap->max_recv_sge > DROCE_CHAN_MAX_SGE ||
	    cap->max_inline_data > DV_COMM_MAX_INLINE)
		return EINVAL;
	return 0;
}

static int comm_cq_bind(struct dv_cq *cq)
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
		ch->bounce = malloc((size_t)DV_COMM_BOUNCE * DV_COMM_MAX_INLINE);
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

static void comm_cq_unbind(struct dv_cq *cq)
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

static int comm_destroy_qp(struct dv_qp *qp)
{
	struct dv_context *c = qp->c;
	/* Commands for this QP may still wait in a ring: let the comm poll
	 * take them (we hold the context, so we run it) before the droce QP
	 * goes. Bounded: other QPs' traffic keeps it busy; what a full
	 * completion ring left behind, droce_comm_destroy_qp drops (it would
	 * run against the freed QP). */
	for (unsigned i = 0; i < 1000 && droce_comm_poll(c->comm, dv_now(c)); i++)
		;
	return droce_comm_destroy_qp(c->comm, qp->dqp);
}

static int comm_destroy_ah(struct dv_context *c, struct droce_ah *ah)
{
	return droce_comm_destroy_ah(c->comm, ah);
}

static int chan_source(void *ch, int n, struct droce_wc *wc)
{
	return droce_chan_poll_cq(ch, n, wc);
}

/* @p cq's ring into its stash (the consumer side's lock). */
static unsigned comm_pull(struct dv_cq *cq)
{
	spin_lock(&cq->cc->clock);
	unsigned moved = dv_stash_fill(cq, chan_source, cq->cc->ch);
	spin_unlock(&cq->cc->clock);
	return moved;
}

static int comm_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	if (n < 0 || (n && !wc))
		return -EINVAL;
	struct dv_chan *ch = cq->cc;
	if (cq->armed) {
		/* Event mode: completions pass the arm check first (cq.c). The
		 * flag is only read here; it changes under the context lock. */
		dv_lock(cq->c);
		dv_armed_check(cq);
		dv_unlock(cq->c);
	}
	spin_lock(&ch->clock);
	int got = dv_stash_take(cq, n, wc);
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
	/* As the thread model's poll: here the thread waited for is the comm
	 * core, which shares the two CPUs with both processes' spinning
	 * applications. */
	if (yield)
		sched_yield();
	return got;
}

/* A post found @p cq's command ring full (the file comment): free the
 * completion slots the comm core needs to take commands, by moving the
 * ring's completions into the stash (an armed CQ through its arm check,
 * as poll_cq), and give the CPU to the comm core, which may share it.
 * @p t0: when the wait began (0 before the first call).
 * @return true to try again, false to give up (ENOMEM). */
static bool make_room(struct dv_cq *cq, uint64_t *t0)
{
	struct dv_context *c = cq->c;
	uint64_t now = dv_now(c);
	if (!*t0)
		*t0 = now;
	else if (now - *t0 > DV_COMM_POST_WAIT_NS)
		return false;
	if (cq->armed) {
		dv_lock(c);
		dv_armed_check(cq);
		dv_unlock(c);
	} else {
		comm_pull(cq);
	}
	spin_lock(&cq->cc->clock);
	bool full = cq->stash_n == cq->stash_cap;
	spin_unlock(&cq->cc->clock);
	if (full)
		return false;
	sched_yield();
	return true;
}

static bool can_post(enum ibv_qp_state s)
{
	/* IBTA 10.8.1 as droce applies it (stack/core/qp.c): RTS, SQD, and
	 * SQE/ERR, where the WR is flushed. */
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

static int comm_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct dv_chan *ch = ((struct dv_cq *)qp->ibqp.send_cq)->cc;
	int r = 0;
	spin_lock(&ch->plock);
	for (; wr; wr = wr->next) {
		struct droce_send_wr d;
		r = dv_send_to_droce(wr, qp->ud, &d);
		if (!r && qp->ud)
			d.wr.ud.ah = wr->wr.ud.ah ? ((struct dv_ah *)wr->wr.ud.ah)->dah : NULL;
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
						(size_t)(ch->produced & (DV_COMM_BOUNCE - 1)) * DV_COMM_MAX_INLINE;
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
			uint64_t t0 = 0;
			int e;
			while ((e = droce_chan_post_send(ch->ch, qp->dqp, &d)) == -EAGAIN &&
			       make_room((struct dv_cq *)qp->ibqp.send_cq, &t0))
				;
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

static int comm_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct dv_chan *ch = ((struct dv_cq *)qp->ibqp.recv_cq)->cc;
	int r = 0;
	spin_lock(&ch->plock);
	for (; wr; wr = wr->next) {
		/* A QP on an SRQ has no receive queue of its own: EINVAL now,
		 * as the thread model's droce_post_recv answers. */
		if (qp->ibqp.state == IBV_QPS_RESET || qp->ibqp.srq || wr->num_sge < 0 ||
		    wr->num_sge > DROCE_CHAN_MAX_SGE || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			r = EINVAL;
		} else {
			struct droce_recv_wr d = {.wr_id = wr->wr_id,
						  .sg_list = (struct droce_sge *)wr->sg_list,
						  .num_sge = wr->num_sge};
			uint64_t t0 = 0;
			int e;
			while ((e = droce_chan_post_recv(ch->ch, qp->dqp, &d)) == -EAGAIN &&
			       make_room((struct dv_cq *)qp->ibqp.recv_cq, &t0))
				;
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

const struct dv_backend dv_backend_comm = {
	.name = "comm",
	.max_sge = DROCE_CHAN_MAX_SGE,
	/* The ACK hold serves the application's own polls, which this model
	 * does not have: the port's link as it is. */
	.hold_acks = false,
	.open = comm_open,
	.close = comm_close,
	.run = comm_run,
	.report = comm_report,
	.drive = comm_drive,
	.check_caps = comm_check_caps,
	.cq_bind = comm_cq_bind,
	.cq_unbind = comm_cq_unbind,
	.destroy_qp = comm_destroy_qp,
	.destroy_ah = comm_destroy_ah,
	.post_send = comm_post_send,
	.post_recv = comm_post_recv,
	/* The file comment: an SRQ is the context's, so its WQEs are posted
	 * under the context lock, as in the thread model; they reach any QP
	 * on it, whatever channel that QP's CQs use. */
	.post_srq_recv = dv_post_srq_locked,
	.poll_cq = comm_poll_cq,
	.pull = comm_pull,
};
