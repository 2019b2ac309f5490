/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues: ibv_create_srq (and ibv_create_srq_ex for basic
 * SRQs), modify (max_wr, srq_limit), query and destroy over droce's SRQ
 * (stack/core/srq.c); post_srq_recv is the backend's (backend.h), in both
 * execution models. A QP created with ia->srq takes its
 * receives from it (qp.c). Behaviour as rxe's: a QP on an empty SRQ answers
 * RNR NAK, the limit raises IBV_EVENT_SRQ_LIMIT_REACHED once (async.c), and
 * destroying an SRQ that QPs still use fails with EBUSY.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct ibv_srq *srq_create(struct ibv_pd *pd, void *srq_context, struct ibv_srq_attr *a)
{
	struct dv_context *c = dv_ctx(pd->context);
	/* Both models post an SRQ's receives under the context lock
	 * (backend.h), not through a ring: the engine's SGE limit holds. */
	if (a->max_wr == 0 || a->max_wr > DV_MAX_SRQ_WR || a->max_sge == 0 ||
	    a->max_sge > DV_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_srq *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	/* Created unarmed (verbs: srq_limit is ignored at create). */
	struct droce_srq_attr d = {.max_wr = a->max_wr, .max_sge = a->max_sge};
	dv_lock(c);
	s->dsrq = droce_create_srq(c->dctx, ((struct dv_pd *)pd)->dpd, &d, s);
	int e = errno;
	dv_unlock(c);
	if (!s->dsrq) {
		free(s);
		errno = e;
		return NULL;
	}
	s->c = c;
	struct ibv_srq *q = &s->ibsrq;
	q->context = pd->context;
	q->srq_context = srq_context;
	q->pd = pd;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	a->srq_limit = 0;
	return q;
}

DV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *ia)
{
	if (!pd || !ia) {
		errno = EINVAL;
		return NULL;
	}
	return srq_create(pd, ia->srq_context, &ia->attr);
}

/* verbs_context op: what the inline ibv_create_srq_ex() does not hand to
 * ibv_create_srq() itself (a CQ named, other comp_mask bits): basic only. */
struct ibv_srq *dv_create_srq_ex(struct ibv_context *ic, struct ibv_srq_init_attr_ex *ia)
{
	if (!ic || !ia) {
		errno = EINVAL;
		return NULL;
	}
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
	if (ia->comp_mask & ~known) {
		errno = EOPNOTSUPP; /* XRC domain, tag matching */
		return NULL;
	}
	if ((ia->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && ia->srq_type != IBV_SRQT_BASIC) {
		errno = EOPNOTSUPP; /* XRC, tag matching */
		return NULL;
	}
	if (!(ia->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !ia->pd || ia->pd->context != ic) {
		errno = EINVAL;
		return NULL;
	}
	return srq_create(ia->pd, ia->srq_context, &ia->attr);
}

DV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *a, int mask)
{
	if (!ibsrq || !a)
		return EINVAL;
	struct dv_srq *s = (struct dv_srq *)ibsrq;
	if ((unsigned)mask & ~(unsigned)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	struct droce_srq_attr d = {.max_wr = a->max_wr, .srq_limit = a->srq_limit};
	unsigned dm = ((mask & IBV_SRQ_MAX_WR) ? DROCE_SRQ_MAX_WR : 0) |
		      ((mask & IBV_SRQ_LIMIT) ? DROCE_SRQ_LIMIT : 0);
	dv_lock(s->c);
	int r = -droce_modify_srq(s->dsrq, &d, dm);
	dv_unlock(s->c);
	return r;
}

DV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *a)
{
	if (!ibsrq || !a)
		return EINVAL;
	struct dv_srq *s = (struct dv_srq *)ibsrq;
	struct droce_srq_attr d;
	dv_lock(s->c);
	int r = -droce_query_srq(s->dsrq, &d);
	dv_unlock(s->c);
	if (r)
		return r;
	a->max_wr = d.max_wr;
	a->max_sge = d.max_sge;
	a->srq_limit = d.srq_limit;
	return 0;
}

DV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	if (!ibsrq)
		return EINVAL;
	struct dv_srq *s = (struct dv_srq *)ibsrq;
	struct dv_context *c = s->c;
	dv_lock(c);
	int r = -droce_destroy_srq(s->dsrq);
	if (!r)
		dv_async_forget(c, ibsrq);
	dv_unlock(c);
	if (r)
		return r;
	dv_async_wait_acked(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
			    &s->events_reported);
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(s);
	return 0;
}
