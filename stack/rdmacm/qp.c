/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP helpers of rdma_cm: rdma_create_qp / rdma_create_qp_ex (the QP in
 * INIT when they return, CQs made for the id when none are given, as
 * rdma-core's ucma_create_cqs), rdma_destroy_qp, and rdma_init_qp_attr: the
 * attributes the CM would give the QP, for an application that moves a QP
 * of its own (conn_param.qp_num, then CONNECT_RESPONSE / rdma_establish).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"

/* What INIT gives a connected QP: every remote right (the MRs guard
 * memory, as droce's own CM does) on the id's port, P_Key index 0. */
#define CMA_INIT_ACCESS \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

static void destroy_cqs(struct rdma_cm_id *id)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c->own_cqs)
		return;
	if (id->send_cq && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	c->own_cqs = false;
}

/* rdma-core's ucma_create_cqs: a completion channel and CQ per direction
 * the caller left out, sized by the QP's queues. */
static int create_cqs(struct rdma_cm_id *id, unsigned send_wr, unsigned recv_wr)
{
	struct cma_id *c = (struct cma_id *)id;
	c->own_cqs = true;
	if (recv_wr) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		id->recv_cq = id->recv_cq_channel ? ibv_create_cq(id->verbs, (int)recv_wr, id,
								  id->recv_cq_channel, 0)
						  : NULL;
		if (!id->recv_cq)
			goto fail;
	}
	if (send_wr) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		id->send_cq = id->send_cq_channel ? ibv_create_cq(id->verbs, (int)send_wr, id,
								  id->send_cq_channel, 0)
						  : NULL;
		if (!id->send_cq)
			goto fail;
	}
	return 0;
fail:
	destroy_cqs(id);
	return -1;
}

CMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || !attr || !id->verbs)
		return cma_fail(EINVAL);
	/* the extended attributes we carry: the PD and (ignored) send ops */
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return cma_fail(EOPNOTSUPP);
	if (id->qp)
		return cma_fail(EINVAL);
	struct ibv_pd *pd = attr->comp_mask & IBV_QP_INIT_ATTR_PD ? attr->pd : id->pd;
	/* rdma-core wants the id's own context; every droce context shares
	 * one engine, so a PD of any of them (the application's) will do */
	if (!pd || pd->context->device != id->verbs->device)
		return cma_fail(EINVAL);
	/* ibv_qp_init_attr_ex starts with ibv_qp_init_attr's fields (verbs.h
	 * keeps them so; rdma-core's rdma_create_qp copies them the same way) */
	struct ibv_qp_init_attr ia;
	memcpy(&ia, attr, sizeof(ia));
	if (!ia.send_cq || !ia.recv_cq) {
		if (create_cqs(id, ia.send_cq ? 0 : ia.cap.max_send_wr,
			       ia.recv_cq || ia.srq ? 0 : ia.cap.max_recv_wr))
			return -1;
		if (!ia.send_cq)
			ia.send_cq = id->send_cq;
		if (!ia.recv_cq)
			ia.recv_cq = id->recv_cq ? id->recv_cq : ia.send_cq;
	}
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		int e = errno;
		destroy_cqs(id);
		return cma_fail(e);
	}
	/* as librdmacm's ucma_init_conn_qp: the QP is in INIT when this
	 * returns, so receives can be posted before the connection is up */
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = CMA_INIT_ACCESS};
	if (ia.qp_type == IBV_QPT_RC &&
	    ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		int e = errno;
		ibv_destroy_qp(qp);
		destroy_cqs(id);
		return cma_fail(e);
	}
	attr->cap = ia.cap; /* what the QP got, as ibv_create_qp_ex reports it */
	id->qp = qp;
	if (!id->send_cq)
		id->send_cq = ia.send_cq;
	if (!id->recv_cq)
		id->recv_cq = ia.recv_cq;
	id->qp_type = ia.qp_type;
	return 0;
}

CMA_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	if (!id || !attr)
		return cma_fail(EINVAL);
	struct ibv_qp_init_attr_ex ax;
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr)); /* the same leading fields (above) */
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd; /* NULL: the device's PD on the id (rdma-core) */
	int r = rdma_create_qp_ex(id, &ax);
	if (!r)
		attr->cap = ax.cap;
	return r;
}

CMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

/* rdma_init_qp_attr: what the CM would set (stack/cm/svc_conn.c, IBTA vol 1
 * 12.6.5 / 12.6.8 and rdma-core's ucma_modify_qp_rtr/rts): INIT from the
 * id, RTR and RTS from the connection's REQ and REP. */
CMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c || !a || !mask || !id->verbs)
		return cma_fail(EINVAL);
	enum ibv_qp_state want = a->qp_state;
	if (want == IBV_QPS_INIT) {
		memset(a, 0, sizeof(*a));
		a->qp_state = IBV_QPS_INIT;
		a->port_num = id->port_num ? id->port_num : 1;
		a->pkey_index = 0;
		a->qp_access_flags = CMA_INIT_ACCESS;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	}
	if (want != IBV_QPS_RTR && want != IBV_QPS_RTS)
		return cma_fail(EINVAL);
	struct droce_conn_qp_attr q;
	pthread_mutex_lock(&cma.mu);
	int r = -EINVAL;
	if (c->conn >= 0) {
		cma.h->lock(cma.verbs);
		r = droce_conn_get_qp_attr(cma.ctx, c->conn, &q);
		cma.h->unlock(cma.verbs);
	}
	pthread_mutex_unlock(&cma.mu);
	if (r || !q.sq_valid)
		return cma_fail(EINVAL); /* no connection, or (active) no REP yet */
	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	if (want == IBV_QPS_RTR) {
		a->path_mtu = (enum ibv_mtu)q.path_mtu; /* enum droce_mtu has IBTA's codes */
		a->dest_qp_num = q.dest_qpn;
		a->rq_psn = q.rq_psn;
		a->max_dest_rd_atomic = q.max_dest_rd_atomic;
		a->min_rnr_timer = 0; /* ib_cm's */
		/* RoCEv2: the peer's GID, its IPv4-mapped address (sgid 0 is ours) */
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = id->port_num ? id->port_num : 1;
		uint8_t *g = a->ah_attr.grh.dgid.raw;
		g[10] = g[11] = 0xff;
		memcpy(g + 12, q.peer.ip, 4);
		a->ah_attr.grh.sgid_index = 0;
		a->ah_attr.grh.hop_limit = 64;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	} else {
		a->sq_psn = q.sq_psn;
		a->timeout = q.timeout;
		a->retry_cnt = q.retry_cnt;
		a->rnr_retry = q.rnr_retry;
		a->max_rd_atomic = q.max_rd_atomic;
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return 0;
}
