/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress-thread model (backend.h): the application drives the droce
 * context inside its verbs calls, under dv_lock(), and the progress thread
 * keeps the port and the responder going while it is away (dv.h's file
 * comment; the pacing of its looks is pace.c's).
 */
#include "verbs/dv.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>

#include "telemetry/telemetry.h"
#include "verbs/backend.h"

/* A poll made by a verbs call, lock held: telemetry's snapshot (an
 * application that drives keeps it fresh). The poller is the progress
 * thread's alone (it steps it out of the lock): these polls are not in
 * its busy/idle split. */
static unsigned app_polled(struct dv_context *c, uint64_t now, unsigned n)
{
	droce_telemetry_publish(c->tel, now);
	return n;
}

static unsigned poll_inline(struct dv_context *c)
{
	uint64_t now = dv_now(c);
	return app_polled(c, now, droce_ctx_poll(c->dctx, now));
}

/* An ACK this poll produces may wait for the application's next request
 * (ack_hold.c): it polls again soon. */
static unsigned poll_app(struct dv_context *c)
{
	dv_link_app_polling(&c->link, true);
	uint64_t now = dv_now(c);
	unsigned n = droce_ctx_poll(c->dctx, now);
	dv_link_app_polling(&c->link, false);
	return app_polled(c, now, n);
}

static unsigned thread_drive(struct dv_context *c, bool app_polls)
{
	c->posts_unpolled = 0; /* a verbs call that waits: as poll_cq */
	return app_polls ? poll_app(c) : poll_inline(c);
}

static void thread_run(struct dv_context *c)
{
	dv_progress_begin(c, c->dev->cfg.lcore);
	struct dv_pace *pace = &c->pace;
	dv_pace_init(pace);
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		if (!atomic_load_explicit(&c->n_qps, memory_order_relaxed)) {
			/* No QP yet: still answer the port's ARP requests now and
			 * then, so that a peer resolving us in modify_qp(RTR) is not
			 * kept waiting until this side creates its QPs. */
			if (dv_try_take(c)) {
				droce_ctx_poll(c->dctx, dv_now(c));
				dv_give_back(c);
			}
			dv_sleep_ns(1000000);
			continue;
		}
		uint64_t away = dv_away_ns(c);
		/* Inside a verbs call (a post or a poll that moves a window's
		 * worth of frames can take tens of microseconds), or out of one
		 * for less than the window: the application drives. */
		bool in_call = atomic_load_explicit(&c->lock, memory_order_relaxed) ||
			       atomic_load_explicit(&c->want, memory_order_relaxed);
		if (in_call || dv_pace_app_drives(pace, away)) {
			/* ACKs it held for its next request must still leave if
			 * it stopped calling (ack_hold.c). */
			uint64_t held = dv_link_held_since(&c->link), now = dv_now(c), due_in = 0;
			bool flushed = false;
			if (held && now - held >= c->link.hold_ns) {
				if (dv_try_take(c)) {
					flushed = dv_link_held_since(&c->link) != 0;
					droce_ctx_poll(c->dctx, dv_now(c));
					dv_give_back(c);
				}
			} else if (held) {
				due_in = held + c->link.hold_ns - now;
			}
			dv_sleep_ns((long)dv_pace_driving(pace, away, flushed, due_in));
			continue;
		}
		if (!dv_try_take(c)) {
			/* The application has it or wants it: get out of its way
			 * (it may be waiting for this very CPU). */
			dv_sleep_ns(PACE_IDLE_NAP_NS);
			continue;
		}
		bool recent = away < PACE_RECENT_NS;
		dv_link_app_polling(&c->link, recent);
		uint64_t now = dv_now(c);
		unsigned n = droce_ctx_poll(c->dctx, now);
		dv_link_app_polling(&c->link, false);
		n += dv_scan_armed(c);
		droce_telemetry_publish(c->tel, now);
		uint64_t deadline = droce_ctx_next_deadline(c->dctx);
		dv_give_back(c);
		bool held = dv_link_held_since(&c->link) != 0;
		uint64_t nap = dv_pace_stepped_in(pace, n, recent, held, c->link.hold_ns);
		/* DROCE_IDLE=adaptive: an idle poll with no ACK held backs off
		 * by the poller (longer sleeps, bounded by the next timer)
		 * instead of the pace's short nap; else accounting only. */
		if (c->dev->cfg.idle == DROCE_IDLE_ADAPTIVE && !n && !held) {
			droce_poller_step(c->poller, now, 0, deadline);
			continue;
		}
		droce_poller_step(c->poller, now, n, 0);
		if (nap)
			dv_sleep_ns((long)nap);
	}
	dv_progress_end();
}

static int thread_open(struct dv_context *c)
{
	(void)c;
	return 0;
}

static void thread_close(struct dv_context *c)
{
	(void)c;
}

static void thread_report(const struct dv_context *c, bool opened)
{
	if (opened) {
		fprintf(stderr, "droce: droce0 open, progress: in verbs calls + progress thread\n");
		return;
	}
	fprintf(stderr, "droce: progress thread: %llu looks while the application drove, "
		"%llu polls while it was away (%llu found work)\n",
		(unsigned long long)c->pace.looks, (unsigned long long)c->pace.polls,
		(unsigned long long)c->pace.busy_polls);
}

static int thread_check_caps(const struct ibv_qp_cap *cap)
{
	(void)cap; /* droce_create_qp checks them against the engine's limits */
	return 0;
}

static int thread_cq_bind(struct dv_cq *cq)
{
	(void)cq;
	return 0;
}

static void thread_cq_unbind(struct dv_cq *cq)
{
	(void)cq;
}

static int thread_destroy_qp(struct dv_qp *qp)
{
	return droce_destroy_qp(qp->dqp);
}

static int thread_destroy_ah(struct dv_context *c, struct droce_ah *ah)
{
	(void)c;
	return droce_destroy_ah(ah);
}

static int thread_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct dv_context *c = qp->c;
	int r = 0;
	dv_lock(c);
	for (; wr; wr = wr->next) {
		struct droce_send_wr d;
		struct droce_send_wr *dbad;
		r = dv_send_to_droce(wr, qp->ud, &d);
		if (!r && qp->ud)
			d.wr.ud.ah = wr->wr.ud.ah ? ((struct dv_ah *)wr->wr.ud.ah)->dah : NULL;
		if (!r)
			r = -droce_post_send(qp->dqp, &d, &dbad);
		if (r) {
			*bad = wr;
			break;
		}
	}
	/* Hand the new work to the requester now rather than on the next
	 * poll; but not on every post of a long run with no poll between.
	 * Such a poll transmits whatever the link takes (64 frames), so a
	 * program that fills every queue before it polls (perftest's bw
	 * loop: -q 1024 x -t 128 = 131072 WRs) would move most of its data
	 * inside that first pass, its completions unpolled: perftest -D,
	 * which counts only those polled in its window, then printed 0
	 * iterations. Past DV_POST_DRIVES the WRs wait in their queues for
	 * the program's next poll_cq (which polls the engine when the CQ is
	 * empty), or the progress thread once it is away. */
	if (c->posts_unpolled < DV_POST_DRIVES) {
		c->posts_unpolled++;
		poll_inline(c);
	}
	dv_unlock(c);
	return r;
}

static int post_qp(void *qp, struct droce_recv_wr *wr, struct droce_recv_wr **bad)
{
	return droce_post_recv(qp, wr, bad);
}

static int thread_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	return dv_post_recv_locked(qp->c, wr, bad, post_qp, qp->dqp);
}

/* Take up to @p n completions out of the droce CQ. Lock held. */
static int drain(struct dv_cq *cq, int n, struct ibv_wc *wc)
{
	struct droce_wc d[32];
	int got = 0;
	while (got < n) {
		int k = n - got < 32 ? n - got : 32;
		int r = droce_poll_cq(cq->dcq, k, d);
		if (r < 0)
			return got ? got : r;
		for (int i = 0; i < r; i++)
			dv_wc_convert(&d[i], &wc[got + i]);
		got += r;
		if (r < k)
			break;
	}
	return got;
}

static int thread_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	struct dv_context *c = cq->c;
	if (n < 0 || (n && !wc))
		return -EINVAL;
	dv_lock(c);
	c->posts_unpolled = 0;
	/* An armed CQ's completions pass through the stash, so that one the
	 * application takes before the progress thread's scan still raises
	 * its event (hardware raises it when the CQE is written). */
	dv_armed_check(cq);
	int got = dv_stash_take(cq, n, wc);
	int r = 0;
	if (got < n) {
		r = drain(cq, n - got, wc + got);
		if (r > 0)
			got += r;
		if (got == 0 && r == 0 && poll_app(c)) {
			dv_armed_check(cq);
			got = dv_stash_take(cq, n, wc);
			r = drain(cq, n - got, wc + got);
			if (r > 0)
				got += r;
		}
	}
	bool yield = dv_poll_idle(cq, got) && !c->app_pinned;
	dv_unlock(c);
	if (yield)
		sched_yield();
	return got ? got : (r < 0 ? r : 0);
}

static int cq_source(void *dcq, int n, struct droce_wc *wc)
{
	return droce_poll_cq(dcq, n, wc);
}

/* The droce CQ into the stash. Lock held. */
static unsigned thread_pull(struct dv_cq *cq)
{
	return dv_stash_fill(cq, cq_source, cq->dcq);
}

const struct dv_backend dv_backend_thread = {
	.name = "thread",
	.max_sge = DV_MAX_SGE,
	.hold_acks = true,
	.open = thread_open,
	.close = thread_close,
	.run = thread_run,
	.report = thread_report,
	.drive = thread_drive,
	.check_caps = thread_check_caps,
	.cq_bind = thread_cq_bind,
	.cq_unbind = thread_cq_unbind,
	.destroy_qp = thread_destroy_qp,
	.destroy_ah = thread_destroy_ah,
	.post_send = thread_post_send,
	.post_recv = thread_post_recv,
	.post_srq_recv = dv_post_srq_locked,
	.poll_cq = thread_poll_cq,
	.pull = thread_pull,
};
