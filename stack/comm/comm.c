/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Comm-core rings: each channel is two SPSC rings, commands (application ->
 * comm core: a copied send or receive WR) and completions (comm core ->
 * application). The comm core is the only thread that touches the context.
 */
#include <droce/comm.h>
#include <droce/ctx.h>
#include <droce/poll.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm/spsc.h"

/* Commands taken from one channel per poll. Each poll also transmits what
 * the link takes (one droce_ctx_poll: up to 64 frames), so a channel whose
 * program posts far ahead (perftest: 131072 WRs before its first poll) has
 * its posts wait on the data before them when this is small: at 32, the
 * first pass of ib_write_bw -q 1024 -s 65536 moved 3.4 GB before it ended,
 * and -D 1 counted 0 iterations. A quarter of the default ring: 256 posts
 * cost some 25-50 us of the comm core's time per poll. */
#define COMM_BATCH 256

enum cmd_kind { CMD_SEND, CMD_RECV, CMD_DEAD };

/* One ring slot: a WR and its SGEs copied by value. CMD_DEAD: its QP was
 * destroyed while it waited (dropped, no completion); refuse: its address
 * handle was destroyed while it waited (completes LOC_QP_OP_ERR). */
struct cmd {
	enum cmd_kind kind;
	int refuse;
	struct droce_qp *qp;
	union {
		struct droce_send_wr send;
		struct droce_recv_wr recv;
	} wr;
	struct droce_sge sge[DROCE_CHAN_MAX_SGE];
};

struct droce_chan {
	struct droce_spsc cmd;
	struct droce_spsc wc;
	void *mem;
	const struct droce_comm *comm; /* for its poller, read by the posting thread */
};

/* Channels are allocated on first use (droce_comm_chan), never move (the
 * application holds their pointers) and go with the comm; the poll looks
 * at channels [0, n_used) only. */
struct droce_comm {
	struct droce_ctx *ctx;
	unsigned n_chan, n_used, depth;
	unsigned n_cq, cap_cq;
	struct droce_chan **chan;
	struct { struct droce_cq *cq; struct droce_chan *chan; } *cq;
	struct droce_poller *poller; /* droce_comm_set_poller: stepped by every poll */
};

struct droce_comm *droce_comm_create(struct droce_ctx *ctx, unsigned n_chan, unsigned depth)
{
	if (depth == 0)
		depth = 1024;
	if (!ctx || n_chan == 0 || n_chan > DROCE_COMM_MAX_CHAN || depth < 2 || (depth & (depth - 1))) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_comm *c = calloc(1, sizeof(*c));
	if (c)
		c->chan = calloc(n_chan, sizeof(*c->chan));
	if (!c || !c->chan) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->ctx = ctx;
	c->n_chan = n_chan;
	c->depth = depth;
	return c;
}

void droce_comm_destroy(struct droce_comm *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_chan; i++)
		if (c->chan[i]) {
			free(c->chan[i]->mem);
			free(c->chan[i]);
		}
	free(c->chan);
	free(c->cq);
	free(c);
}

struct droce_chan *droce_comm_chan(struct droce_comm *c, unsigned i)
{
	if (!c || i >= c->n_chan)
		return NULL;
	if (c->chan[i])
		return c->chan[i];
	struct droce_chan *ch = calloc(1, sizeof(*ch));
	size_t cmd_bytes = (size_t)c->depth * sizeof(struct cmd);
	/* aligned_alloc wants a multiple of the alignment (C11 7.22.3.1). */
	size_t bytes = (cmd_bytes + (size_t)c->depth * sizeof(struct droce_wc) + 63) & ~(size_t)63;
	if (ch)
		ch->mem = aligned_alloc(64, bytes);
	if (!ch || !ch->mem) {
		free(ch);
		errno = ENOMEM;
		return NULL;
	}
	droce_spsc_init(&ch->cmd, ch->mem, c->depth, sizeof(struct cmd));
	droce_spsc_init(&ch->wc, (uint8_t *)ch->mem + cmd_bytes, c->depth, sizeof(struct droce_wc));
	ch->comm = c;
	c->chan[i] = ch;
	if (i >= c->n_used)
		c->n_used = i + 1;
	return ch;
}

int droce_comm_bind_cq(struct droce_comm *c, struct droce_cq *cq, struct droce_chan *chan)
{
	if (!c || !cq || !chan)
		return -EINVAL;
	for (unsigned i = 0; i < c->n_cq; i++)
		if (c->cq[i].cq == cq)
			return -EBUSY;
	if (c->n_cq == c->cap_cq) {
		unsigned cap = c->cap_cq ? 2 * c->cap_cq : 16;
		void *p = realloc(c->cq, cap * sizeof(*c->cq));
		if (!p)
			return -ENOMEM;
		c->cq = p;
		c->cap_cq = cap;
	}
	c->cq[c->n_cq].cq = cq;
	c->cq[c->n_cq].chan = chan;
	c->n_cq++;
	return 0;
}

int droce_comm_unbind_cq(struct droce_comm *c, struct droce_cq *cq)
{
	if (!c || !cq)
		return -EINVAL;
	for (unsigned i = 0; i < c->n_cq; i++)
		if (c->cq[i].cq == cq) {
			c->cq[i] = c->cq[--c->n_cq];
			return 0;
		}
	return -ENOENT;
}

/* A WR the QP refused: the application learns it from its completion ring. */
static void refuse(struct droce_chan *ch, const struct cmd *m, int err)
{
	struct droce_wc *wc;
	while (!(wc = droce_spsc_reserve(&ch->wc)))
		; /* unreachable in practice: see the bound in drain_cmds() */
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = m->kind == CMD_SEND ? m->wr.send.wr_id : m->wr.recv.wr_id;
	wc->status = DROCE_WC_LOC_QP_OP_ERR;
	wc->opcode = m->kind == CMD_SEND ? DROCE_WC_SEND : DROCE_WC_RECV;
	wc->qp_num = droce_qp_num(m->qp);
	wc->vendor_err = (uint32_t)-err;
	droce_spsc_push(&ch->wc);
}

static unsigned drain_cmds(struct droce_chan *ch)
{
	unsigned n = 0;
	struct cmd *m;

	/* Only take a command while a completion slot is free, so a refusal
	 * always has somewhere to go. */
	while (n < COMM_BATCH && droce_spsc_reserve(&ch->wc) && (m = droce_spsc_peek(&ch->cmd))) {
		int r;
		if (m->kind == CMD_DEAD) {
			r = 0;
		} else if (m->refuse) {
			r = m->refuse;
		} else if (m->kind == CMD_SEND) {
			struct droce_send_wr *bad;
			m->wr.send.sg_list = m->sge;
			m->wr.send.next = NULL;
			r = droce_post_send(m->qp, &m->wr.send, &bad);
		} else {
			struct droce_recv_wr *bad;
			m->wr.recv.sg_list = m->sge;
			m->wr.recv.next = NULL;
			r = droce_post_recv(m->qp, &m->wr.recv, &bad);
		}
		if (r)
			refuse(ch, m, r);
		droce_spsc_pop(&ch->cmd);
		n++;
	}
	return n;
}

static unsigned drain_cq(struct droce_cq *cq, struct droce_chan *ch)
{
	unsigned n = 0;
	struct droce_wc *wc;

	while ((wc = droce_spsc_reserve(&ch->wc))) {
		int got = droce_poll_cq(cq, 1, wc);
		if (got <= 0)
			break;
		droce_spsc_push(&ch->wc);
		n++;
	}
	return n;
}

unsigned droce_comm_poll(struct droce_comm *c, uint64_t now)
{
	unsigned work = 0;
	for (unsigned i = 0; i < c->n_used; i++)
		if (c->chan[i])
			work += drain_cmds(c->chan[i]);
	work += droce_ctx_poll(c->ctx, now);
	for (unsigned i = 0; i < c->n_cq; i++)
		work += drain_cq(c->cq[i].cq, c->cq[i].chan);
	/* The comm core's loop is calls of this: its accounting and idle
	 * policy (a sleep ends at the next timer or an application's post). */
	droce_poller_step(c->poller, now, work, droce_ctx_next_deadline(c->ctx));
	return work;
}

int droce_comm_set_poller(struct droce_comm *c, struct droce_poller *p)
{
	if (!c)
		return -EINVAL;
	c->poller = p;
	return 0;
}

static int post(struct droce_chan *ch, struct droce_qp *qp, enum cmd_kind kind,
		const void *wr, const struct droce_sge *sg, int num_sge)
{
	if (!ch || !qp || !wr || num_sge < 0 || num_sge > DROCE_CHAN_MAX_SGE || (num_sge && !sg))
		return -EINVAL;
	struct cmd *m = droce_spsc_reserve(&ch->cmd);
	if (!m)
		return -EAGAIN;
	m->kind = kind;
	m->refuse = 0;
	m->qp = qp;
	if (kind == CMD_SEND)
		m->wr.send = *(const struct droce_send_wr *)wr;
	else
		m->wr.recv = *(const struct droce_recv_wr *)wr;
	if (num_sge)
		memcpy(m->sge, sg, (size_t)num_sge * sizeof(*sg));
	droce_spsc_push(&ch->cmd);
	droce_poller_wake(ch->comm->poller); /* a sleeping comm core takes it now */
	return 0;
}

/* Every command waiting in a channel's ring, oldest first: the comm core
 * is the rings' consumer, and what the application published (head, read
 * with acquire) is the consumer's to rewrite until it pops it. */
static void each_cmd(struct droce_comm *c, void (*fn)(struct cmd *, const void *), const void *arg)
{
	for (unsigned i = 0; i < c->n_chan; i++) {
		if (!c->chan[i])
			continue; /* never used: nothing queued */
		struct droce_spsc *r = &c->chan[i]->cmd;
		uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
		uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
		for (; t != h; t++)
			fn((struct cmd *)(void *)(r->slots + (size_t)(t & r->mask) * r->slot_size), arg);
	}
}

static void kill_qp(struct cmd *m, const void *qp)
{
	if (m->qp == qp)
		m->kind = CMD_DEAD;
}

static void refuse_ah(struct cmd *m, const void *ah)
{
	struct droce_qp_attr a;
	if (m->kind != CMD_SEND || m->wr.send.wr.ud.ah != ah || droce_query_qp(m->qp, &a, 0))
		return;
	if (a.qp_type != DROCE_QPT_RC) /* wr.ud is an RC WR's remote address */
		m->refuse = -EINVAL;
}

int droce_comm_destroy_qp(struct droce_comm *c, struct droce_qp *qp)
{
	if (!c || !qp)
		return -EINVAL;
	each_cmd(c, kill_qp, qp);
	return droce_destroy_qp(qp);
}

int droce_comm_destroy_ah(struct droce_comm *c, struct droce_ah *ah)
{
	if (!c || !ah)
		return -EINVAL;
	each_cmd(c, refuse_ah, ah);
	return droce_destroy_ah(ah);
}

int droce_chan_post_send(struct droce_chan *ch, struct droce_qp *qp, const struct droce_send_wr *wr)
{
	if (!wr)
		return -EINVAL;
	return post(ch, qp, CMD_SEND, wr, wr->sg_list, wr->num_sge);
}

int droce_chan_post_recv(struct droce_chan *ch, struct droce_qp *qp, const struct droce_recv_wr *wr)
{
	if (!wr)
		return -EINVAL;
	return post(ch, qp, CMD_RECV, wr, wr->sg_list, wr->num_sge);
}

int droce_chan_poll_cq(struct droce_chan *ch, int n, struct droce_wc *out)
{
	int got = 0;
	struct droce_wc *wc;

	if (!ch || n < 0 || (n && !out))
		return -EINVAL;
	while (got < n && (wc = droce_spsc_peek(&ch->wc))) {
		out[got++] = *wc;
		droce_spsc_pop(&ch->wc);
	}
	/* Room in a ring that was full: completions the comm core left in
	 * their CQ (backpressure) can move again. */
	if (got)
		droce_poller_wake(ch->comm->poller);
	return got;
}
