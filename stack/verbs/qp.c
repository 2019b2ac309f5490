/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC and UD queue pairs: create/modify/query/destroy with rdma-core's attribute
 * masks translated to droce's (xlate.h; IBTA 11.2.5.1 table 93 is enforced
 * by droce_modify_qp). The post verbs the inline ibv_post_send() /
 * ibv_post_recv() of verbs.h reach through context->ops are the backend's
 * (backend.h).
 *
 * Addressing (RoCEv2, IBTA A17.4): the AV's GRH carries the peer's GID,
 * which for droce is its IPv4-mapped address; the Ethernet next hop comes
 * from ARP on the port, resolved while modify_qp(RTR) runs.
 */
#include "verbs/dv.h"

#include "verbs/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

DV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	if (!pd || !ia) {
		errno = EINVAL;
		return NULL;
	}
	if (ia->qp_type != IBV_QPT_RC && ia->qp_type != IBV_QPT_UD) {
		/* UC, XRC and raw packet QPs are not in droce. */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!ia->send_cq || !ia->recv_cq || ia->send_cq->context != pd->context ||
	    ia->recv_cq->context != pd->context || (ia->srq && ia->srq->context != pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_context *c = dv_ctx(pd->context);
	int e = c->be->check_caps(&ia->cap);
	if (e) {
		errno = e;
		return NULL;
	}
	struct dv_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct droce_qp_init_attr d = {
		.send_cq = ((struct dv_cq *)ia->send_cq)->dcq,
		.recv_cq = ((struct dv_cq *)ia->recv_cq)->dcq,
		.sq_sig_all = ia->sq_sig_all,
		.qp_type = ia->qp_type == IBV_QPT_UD ? DROCE_QPT_UD : DROCE_QPT_RC,
		.pd = ((struct dv_pd *)pd)->dpd,
		.srq = ia->srq ? ((struct dv_srq *)ia->srq)->dsrq : NULL,
		.qp_context = qp, /* its async events name it (async.c) */
	};
	dv_caps_to_droce(&ia->cap, &d.cap);
	dv_lock(c);
	qp->dqp = droce_create_qp(c->dctx, &d);
	if (qp->dqp && d.qp_type == DROCE_QPT_RC) /* both ends must set the same (docs/verbs.md) */
		droce_qp_set_transport(qp->dqp, c->dev->cfg.transport);
	e = errno;
	struct droce_qp_attr qa;
	if (qp->dqp) {
		droce_query_qp(qp->dqp, &qa, 0);
		((struct dv_cq *)ia->send_cq)->users++;
		((struct dv_cq *)ia->recv_cq)->users++;
	}
	dv_unlock(c);
	if (!qp->dqp) {
		free(qp);
		errno = e;
		return NULL;
	}
	/* rdma-core writes the capabilities granted back into the request. */
	dv_caps_from_droce(&qa.cap, &ia->cap);
	qp->cap = ia->cap;
	qp->sq_sig_all = ia->sq_sig_all;
	qp->ud = ia->qp_type == IBV_QPT_UD;
	qp->c = c;
	struct ibv_qp *q = &qp->ibqp;
	q->context = pd->context;
	q->qp_context = ia->qp_context;
	q->pd = pd;
	q->send_cq = ia->send_cq;
	q->recv_cq = ia->recv_cq;
	q->srq = ia->srq;
	q->qp_num = droce_qp_num(qp->dqp);
	q->state = IBV_QPS_RESET;
	q->qp_type = ia->qp_type;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	atomic_fetch_add(&c->n_qps, 1);
	return q;
}

/* DROCE_VERBS_STATS=1: a QP's counters on stderr when it goes away. */
static void print_stats(const struct dv_qp *qp)
{
	struct droce_qp_stats s;
	if (droce_qp_get_stats(qp->dqp, &s))
		return;
	fprintf(stderr,
		"droce: QP 0x%06x: tx %llu pkts, rx %llu pkts, retransmits %llu (timeout %llu, NAK %llu), "
		"RNR sent/rcvd %llu/%llu, dup %llu, out-of-seq %llu, drops %llu\n",
		qp->ibqp.qp_num, (unsigned long long)s.tx_pkts, (unsigned long long)s.rx_pkts,
		(unsigned long long)s.retrans_pkts, (unsigned long long)s.retrans_timeout,
		(unsigned long long)s.retrans_nak, (unsigned long long)s.rnr_nak_sent,
		(unsigned long long)s.rnr_nak_rcvd, (unsigned long long)s.dup_reqs,
		(unsigned long long)s.out_of_seq, (unsigned long long)s.drops);
}

DV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	if (!ibqp)
		return EINVAL;
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct dv_context *c = qp->c;
	dv_lock(c);
	if (c->dev->stats)
		print_stats(qp);
	int r = c->be->destroy_qp(qp);
	if (!r) {
		((struct dv_cq *)ibqp->send_cq)->users--;
		((struct dv_cq *)ibqp->recv_cq)->users--;
		dv_async_forget(c, ibqp);
	}
	dv_unlock(c);
	if (r)
		return -r;
	dv_async_wait_acked(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
			    &qp->events_reported);
	atomic_fetch_sub(&c->n_qps, 1);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}

/* The attribute mask bits droce has no use for but rdma-core programs
 * routinely pass: accepted and ignored. */
#define IGNORED_MASK (IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_PATH_MIG_STATE)
#define KNOWN_MASK (IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
		    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |        \
		    IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |             \
		    IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |       \
		    IBV_QP_DEST_QPN | IBV_QP_QKEY | IGNORED_MASK)

/* The AV of a GRH-routed RoCEv2 path; the MAC is resolved. Lock held. */
int dv_av_resolve(struct dv_context *c, const struct ibv_ah_attr *ah, struct droce_ah_attr *d)
{
	int r = dv_av_to_droce(ah, d);
	if (r)
		return r;
	if (!memcmp(d->dst_ip, c->dev->cfg.ip, 4)) {
		memcpy(d->dst_mac, c->dev->mac, 6);
		return 0;
	}
	return dv_resolve(c, d->dst_ip, d->dst_mac);
}

DV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	if (!ibqp || !a)
		return EINVAL;
	unsigned m = (unsigned)mask;
	if (m & ~(unsigned)KNOWN_MASK)
		return EINVAL; /* alternate path, CAP, rate limit, unknown bits */
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct dv_context *c = qp->c;
	struct droce_qp_attr d;
	memset(&d, 0, sizeof(d));
	unsigned dm = 0;
	int e;
	if (m & IBV_QP_STATE) {
		if ((e = dv_qps_to_droce(a->qp_state, &d.qp_state)))
			return e;
		dm |= DROCE_QP_STATE;
	}
	if (m & IBV_QP_ACCESS_FLAGS) {
		if (a->qp_access_flags & ~(unsigned)DV_ACCESS_KNOWN)
			return EINVAL;
		d.qp_access_flags = dv_access_to_droce(a->qp_access_flags);
		dm |= DROCE_QP_ACCESS_FLAGS;
	}
	if (m & IBV_QP_PKEY_INDEX) {
		if (a->pkey_index != 0)
			return EINVAL; /* one P_Key, the default partition */
		d.pkey = DROCE_DEFAULT_PKEY;
		dm |= DROCE_QP_PKEY;
	}
	if ((m & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if (m & IBV_QP_PATH_MTU) {
		if ((e = dv_mtu_to_droce(a->path_mtu, &d.path_mtu)))
			return e;
		if (droce_mtu_bytes(d.path_mtu) > c->dev->roce_mtu)
			return EINVAL;
		dm |= DROCE_QP_PATH_MTU;
	}
	if (m & IBV_QP_TIMEOUT) {
		d.timeout = a->timeout;
		dm |= DROCE_QP_TIMEOUT;
	}
	if (m & IBV_QP_RETRY_CNT) {
		d.retry_cnt = a->retry_cnt;
		dm |= DROCE_QP_RETRY_CNT;
	}
	if (m & IBV_QP_RNR_RETRY) {
		d.rnr_retry = a->rnr_retry;
		dm |= DROCE_QP_RNR_RETRY;
	}
	if (m & IBV_QP_RQ_PSN) {
		d.rq_psn = a->rq_psn;
		dm |= DROCE_QP_RQ_PSN;
	}
	if (m & IBV_QP_SQ_PSN) {
		d.sq_psn = a->sq_psn;
		dm |= DROCE_QP_SQ_PSN;
	}
	if (m & IBV_QP_MAX_QP_RD_ATOMIC) {
		/* The requester may always keep fewer READ/atomic outstanding
		 * than the responder accepts (IBTA 11.2.4.2: max_rd_atomic,
		 * the initiator depth, bounds what it sends): more than
		 * droce's own (query_device's max_qp_init_rd_atom) is taken
		 * as droce's. perftest sets rxe's 128 here (docs/verbs.md,
		 * "Outstanding reads"). */
		d.max_rd_atomic = a->max_rd_atomic > DV_MAX_RD_ATOMIC ? DV_MAX_RD_ATOMIC
								      : a->max_rd_atomic;
		dm |= DROCE_QP_MAX_QP_RD_ATOMIC;
	}
	if (m & IBV_QP_MAX_DEST_RD_ATOMIC) {
		d.max_dest_rd_atomic = a->max_dest_rd_atomic;
		dm |= DROCE_QP_MAX_DEST_RD_ATOMIC;
	}
	if (m & IBV_QP_MIN_RNR_TIMER) {
		d.min_rnr_timer = a->min_rnr_timer;
		dm |= DROCE_QP_MIN_RNR_TIMER;
	}
	if (m & IBV_QP_DEST_QPN) {
		d.dest_qp_num = a->dest_qp_num;
		dm |= DROCE_QP_DEST_QPN;
	}
	if (m & IBV_QP_QKEY) {
		d.qkey = a->qkey;
		dm |= DROCE_QP_QKEY; /* droce_modify_qp refuses it on RC */
	}
	if (qp->ud && (m & IBV_QP_STATE) && a->qp_state == IBV_QPS_INIT &&
	    ibqp->state == IBV_QPS_RESET) {
		/* verbs' UD messages are bounded by the port's MTU: droce's UD
		 * QPs take theirs as the path MTU. */
		enum ibv_mtu pm = IBV_MTU_256;
		for (enum ibv_mtu t = IBV_MTU_256; t <= IBV_MTU_4096; t++)
			if ((128u << t) <= c->dev->roce_mtu)
				pm = t;
		dv_mtu_to_droce(pm, &d.path_mtu);
		dm |= DROCE_QP_PATH_MTU;
	}
	dv_lock(c);
	int r = 0;
	if (m & IBV_QP_AV) {
		r = dv_av_resolve(c, &a->ah_attr, &d.ah_attr);
		dm |= DROCE_QP_AV;
	}
	if (!r)
		r = -droce_modify_qp(qp->dqp, &d, dm);
	c->be->drive(c, false);
	dv_unlock(c);
	if (!r && (m & IBV_QP_STATE))
		ibqp->state = a->qp_state;
	if (r) {
		errno = r; /* rdma-core's failed command leaves errno set too */
	}
	return r;
}

DV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
			   struct ibv_qp_init_attr *ia)
{
	if (!ibqp || !a || !ia)
		return EINVAL;
	struct dv_qp *qp = (struct dv_qp *)ibqp;
	struct droce_qp_attr d;
	dv_lock(qp->c);
	int r = droce_query_qp(qp->dqp, &d, (unsigned)mask);
	dv_unlock(qp->c);
	if (r)
		return -r;
	memset(a, 0, sizeof(*a));
	a->qp_state = dv_qps_from_droce(d.qp_state);
	a->cur_qp_state = a->qp_state;
	a->path_mtu = dv_mtu_from_droce(d.path_mtu);
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->rq_psn = d.rq_psn;
	a->sq_psn = d.sq_psn;
	a->dest_qp_num = d.dest_qp_num;
	a->qp_access_flags = dv_access_from_droce(d.qp_access_flags);
	a->cap = qp->cap;
	dv_av_from_droce(&d.ah_attr, &a->ah_attr);
	a->pkey_index = 0;
	a->timeout = d.timeout;
	a->retry_cnt = d.retry_cnt;
	a->rnr_retry = d.rnr_retry;
	a->min_rnr_timer = d.min_rnr_timer;
	a->max_rd_atomic = d.max_rd_atomic;
	a->max_dest_rd_atomic = d.max_dest_rd_atomic;
	a->qkey = d.qkey;
	a->port_num = 1;
	memset(ia, 0, sizeof(*ia));
	ia->qp_context = ibqp->qp_context;
	ia->send_cq = ibqp->send_cq;
	ia->recv_cq = ibqp->recv_cq;
	ia->srq = ibqp->srq;
	ia->cap = qp->cap;
	ia->qp_type = ibqp->qp_type;
	ia->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/* No extended QP API: programs (perftest) fall back to ibv_post_send(). */
DV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return NULL;
}
