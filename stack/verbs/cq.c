/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues, completion channels and the work-completion tables.
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

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <endian.h>

/*
 * poll_cq calls in a row that find nothing before the caller gives up its
 * CPU once (sched_yield). A program spinning on poll_cq may share its CPU
 * with the very thread it waits for: its peer's application (two
 * processes on one machine), or a progress thread; without the yield that
 * thread only runs when the scheduler's tick or a wake-up preempts the
 * spinner. With no one else runnable the yield returns at once. On 2 cores
 * at load 14-16, 5 alternated runs, medians: ib_write_lat 8 B typical
 * 49.5 us without, 5.5 us with; ib_write_bw 64 KB 299 -> 776 MB/s.
 * A program pinned to one CPU (taskset -c N, with the progress thread
 * there too) does not yield: it has placed itself, its peer is not queued
 * behind it, and its own progress thread preempts it on waking (the short
 * slice, engine.c); a yield would only hand the CPU to whatever else runs
 * there, a time slice at a time.
 */
#define POLL_YIELD_AFTER 64u

/* droce status -> IBV_WC_*, one case per droce value (an explicit table: it
 * stays right whatever numbers droce's enum carries). */
static enum ibv_wc_status wc_status(enum droce_wc_status s)
{
	switch (s) {
	case DROCE_WC_SUCCESS: return IBV_WC_SUCCESS;
	case DROCE_WC_LOC_LEN_ERR: return IBV_WC_LOC_LEN_ERR;
	case DROCE_WC_LOC_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case DROCE_WC_LOC_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case DROCE_WC_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case DROCE_WC_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
	case DROCE_WC_LOC_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
	case DROCE_WC_REM_INV_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case DROCE_WC_REM_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case DROCE_WC_REM_OP_ERR: return IBV_WC_REM_OP_ERR;
	case DROCE_WC_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case DROCE_WC_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case DROCE_WC_REM_ABORT_ERR: return IBV_WC_REM_ABORT_ERR;
	case DROCE_WC_GENERAL_ERR: return IBV_WC_GENERAL_ERR;
	case DROCE_WC_LOC_EEC_OP_ERR: return IBV_WC_LOC_EEC_OP_ERR;
	case DROCE_WC_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	case DROCE_WC_LOC_RDD_VIOL_ERR: return IBV_WC_LOC_RDD_VIOL_ERR;
	case DROCE_WC_REM_INV_RD_REQ_ERR: return IBV_WC_REM_INV_RD_REQ_ERR;
	case DROCE_WC_INV_EECN_ERR: return IBV_WC_INV_EECN_ERR;
	case DROCE_WC_INV_EEC_STATE_ERR: return IBV_WC_INV_EEC_STATE_ERR;
	case DROCE_WC_FATAL_ERR: return IBV_WC_FATAL_ERR;
	case DROCE_WC_RESP_TIMEOUT_ERR: return IBV_WC_RESP_TIMEOUT_ERR;
	}
	return IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode wc_opcode(enum droce_wc_opcode o)
{
	switch (o) {
	case DROCE_WC_SEND: return IBV_WC_SEND;
	case DROCE_WC_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case DROCE_WC_RDMA_READ: return IBV_WC_RDMA_READ;
	case DROCE_WC_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case DROCE_WC_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case DROCE_WC_RECV: return IBV_WC_RECV;
	case DROCE_WC_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	}
	return IBV_WC_SEND;
}

void dv_wc_convert(const struct droce_wc *in, struct ibv_wc *out)
{
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->status = wc_status(in->status);
	out->opcode = wc_opcode(in->opcode);
	out->vendor_err = in->vendor_err;
	out->byte_len = in->byte_len;
	out->qp_num = in->qp_num;
	out->src_qp = in->src_qp;
	if (in->wc_flags & DROCE_WC_WITH_IMM) {
		out->wc_flags |= IBV_WC_WITH_IMM;
		out->imm_data = in->imm_data; /* network order value, both sides */
	}
	if (in->wc_flags & DROCE_WC_WITH_INV) {
		out->wc_flags |= IBV_WC_WITH_INV;
		out->invalidated_rkey = in->invalidated_rkey;
	}
	if (in->wc_flags & DROCE_WC_GRH) {
		out->wc_flags |= IBV_WC_GRH; /* the 40-byte GRH area leads the buffer */
		/* RoCE has no SL on the wire (A17.4.5.1: the CQE says which L3
		 * header the frame had). mlx5 reports that packet type in sl
		 * (2: IPv4), and UCX's ud_verbs reads sl & 7 so to find the
		 * destination address in the GRH area; droce0 is IPv4 only.
		 * docs/verbs.md, "UD receive completions". */
		out->sl = DV_WC_SL_ROCE_IPV4;
	}
	out->pkey_index = 0;
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

static int take_stash(struct dv_cq *cq, int n, struct ibv_wc *wc)
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

int dv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	struct dv_context *c = cq->c;
	if (n < 0 || (n && !wc))
		return -EINVAL;
	if (cq->cc)
		return dv_comm_poll_cq(cq, n, wc);
	dv_lock(c);
	/* An armed CQ's completions pass through the stash, so that one the
	 * application takes before the progress thread's scan still raises
	 * its event (hardware raises it when the CQE is written). */
	dv_armed_check(cq);
	int got = take_stash(cq, n, wc);
	int r = 0;
	if (got < n) {
		r = drain(cq, n - got, wc + got);
		if (r > 0)
			got += r;
		if (got == 0 && r == 0 && dv_poll_app(c)) {
			dv_armed_check(cq);
			got = take_stash(cq, n, wc);
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

bool dv_poll_idle(struct dv_cq *cq, int got)
{
	if (got) {
		cq->empty_polls = 0;
		return false;
	}
	if (++cq->empty_polls < POLL_YIELD_AFTER)
		return false;
	cq->empty_polls = 0;
	return true;
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

/* Move what the droce CQ holds into the stash. Lock held. @return how many. */
static unsigned pull(struct dv_cq *cq)
{
	unsigned moved = 0;
	while (cq->stash_n < cq->stash_cap) {
		struct droce_wc d[32];
		unsigned room = cq->stash_cap - cq->stash_n;
		int r = droce_poll_cq(cq->dcq, room < 32 ? (int)room : 32, d);
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

/*
 * IBTA 11.4.2.2 / rdma-core: an armed CQ raises one event for the next
 * completion added after it was armed. Completions already queued when it
 * was armed do not count: perftest -e re-arms a CQ before it polls it, and
 * an event for what it is about to poll would be taken, later, for another
 * CQ's completion. dv_lock held (and the consumer lock in comm mode, via
 * dv_comm_pull()).
 */
unsigned dv_armed_check(struct dv_cq *cq)
{
	if (!cq->armed)
		return 0;
	unsigned moved = cq->cc ? dv_comm_pull(cq) : pull(cq);
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

int dv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct dv_cq *cq = (struct dv_cq *)ibcq;
	if (!cq->chan)
		return 0; /* no channel: an event would go nowhere (rdma-core accepts it) */
	dv_lock(cq->c);
	if (!cq->armed) {
		/* What is queued now is not news: take it in, then mark. */
		if (cq->cc)
			dv_comm_pull(cq);
		else
			pull(cq);
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
		dv_poll_app(c);
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
	if (cq->dcq && c->comm && (e = dv_comm_bind(cq))) {
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
	/* In comm mode its channel goes back to the context first (comm.c). */
	if (!cq->users && cq->cc)
		dv_comm_unbind(cq);
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
