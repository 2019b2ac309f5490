/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues (IBTA 10.2.9, verbs 11.2.3 / 11.4.1.2): a ring of
 * receive WQEs that the QPs created on it consume in the order posted.
 * Posting checks each buffer as droce_post_recv() does; the transport moves
 * one WQE at a time into the consuming QP's one-slot RQ (droce_rq_next), so
 * the responder, the UD receive path and the flush at ERR see a WQE of the
 * QP's own. The limit event and the events of destroyed objects live here
 * and in the context's event ring (core.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/ring_mem.h"

static uint32_t ring_size(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

struct droce_srq *droce_create_srq(struct droce_ctx *ctx, struct droce_pd *pd,
				   const struct droce_srq_attr *attr, void *srq_context)
{
	if (!pd && ctx)
		pd = &ctx->pd0;
	if (!ctx || !attr || pd->ctx != ctx || !attr->max_wr || attr->max_wr > DROCE_SRQ_WR_LIMIT || !attr->max_sge ||
	    attr->max_sge > DROCE_QP_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_srq *s = calloc(1, sizeof(*s));
	uint32_t n = ring_size(attr->max_wr);
	if (s)
		s->ring = droce_ring_calloc(n, sizeof(*s->ring));
	if (!s || !s->ring) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->ctx = ctx;
	s->pd = pd;
	s->pd_id = pd->id;
	pd->users++;
	s->mask = n - 1;
	s->max_wr = attr->max_wr;
	s->max_sge = attr->max_sge;
	s->user = srq_context;
	s->next = ctx->srqs;
	if (ctx->srqs)
		ctx->srqs->prev = s;
	ctx->srqs = s;
	return s;
}

uint32_t droce_srq_count(const struct droce_srq *srq)
{
	return srq ? srq->tail - srq->head : 0;
}

int droce_modify_srq(struct droce_srq *srq, const struct droce_srq_attr *attr, unsigned mask)
{
	if (!srq || !attr || (mask & ~(unsigned)(DROCE_SRQ_MAX_WR | DROCE_SRQ_LIMIT)))
		return -EINVAL;
	uint32_t max_wr = (mask & DROCE_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
	if (!max_wr || max_wr > DROCE_SRQ_WR_LIMIT || max_wr < droce_srq_count(srq))
		return -EINVAL;
	if ((mask & DROCE_SRQ_LIMIT) && attr->srq_limit > max_wr)
		return -EINVAL;
	if ((mask & DROCE_SRQ_MAX_WR) && ring_size(max_wr) != srq->mask + 1) {
		uint32_t n = ring_size(max_wr);
		struct droce_rwqe *r = droce_ring_calloc(n, sizeof(*r));
		if (!r)
			return -ENOMEM;
		uint32_t k = 0;
		for (uint32_t i = srq->head; i != srq->tail; i++)
			r[k++] = srq->ring[i & srq->mask];
		free(srq->ring);
		srq->ring = r;
		srq->mask = n - 1;
		srq->head = 0;
		srq->tail = k;
	}
	srq->max_wr = max_wr;
	if (mask & DROCE_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	return 0;
}

int droce_query_srq(const struct droce_srq *srq, struct droce_srq_attr *attr)
{
	if (!srq || !attr)
		return -EINVAL;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

/* Events not taken yet that name @p qp, @p cq or @p srq go with it, so no
 * event taken later points at freed memory. */
void droce_event_forget(struct droce_ctx *ctx, const void *obj)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < ctx->ev_count; i++) {
		const struct droce_event *e = &ctx->ev[(ctx->ev_head + i) % DROCE_EVENT_RING];
		if ((const void *)e->qp == obj || (const void *)e->cq == obj ||
		    (const void *)e->srq == obj)
			continue;
		ctx->ev[(ctx->ev_head + k) % DROCE_EVENT_RING] = *e;
		k++;
	}
	ctx->ev_count = k;
}

int droce_destroy_srq(struct droce_srq *srq)
{
	if (!srq)
		return -EINVAL;
	if (srq->users)
		return -EBUSY;
	struct droce_ctx *ctx = srq->ctx;
	droce_event_forget(ctx, srq);
	srq->pd->users--;
	if (srq->prev)
		srq->prev->next = srq->next;
	else
		ctx->srqs = srq->next;
	if (srq->next)
		srq->next->prev = srq->prev;
	free(srq->ring);
	free(srq);
	return 0;
}

int droce_post_srq_recv(struct droce_srq *srq, struct droce_recv_wr *wr,
			struct droce_recv_wr **bad_wr)
{
	if (!srq || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			if (bad_wr)
				*bad_wr = wr;
			return -EINVAL;
		}
		if (srq->tail - srq->head >= srq->max_wr) {
			if (bad_wr)
				*bad_wr = wr;
			return -ENOMEM;
		}
		droce_rwqe_fill(srq->ctx, srq->pd_id, &srq->ring[srq->tail & srq->mask], wr);
		srq->tail++;
	}
	return 0;
}

int droce_ctx_get_event(struct droce_ctx *ctx, struct droce_event *ev)
{
	if (!ctx || !ev || !ctx->ev_count)
		return 0;
	*ev = ctx->ev[ctx->ev_head];
	ctx->ev_head = (ctx->ev_head + 1) % DROCE_EVENT_RING;
	ctx->ev_count--;
	return 1;
}
