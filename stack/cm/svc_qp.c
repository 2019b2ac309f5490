/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP side of a connection: what rdma_cm's cma_modify_qp_rtr/rts do with
 * the attributes ib_cm keeps from the REQ and REP (IBTA vol 1 12.6.5,
 * 12.6.8; the transitions of 11.2.5.1 table 93), through the public
 * droce_modify_qp() like any application.
 */
#include <errno.h>
#include <string.h>

#include <droce/droce.h>

#include "cm/svc.h"

static const unsigned all_access = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
				   DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;

int droce_svc_qp_init(struct droce_qp *qp)
{
	struct droce_qp_attr a;
	int r = droce_query_qp(qp, &a, 0);
	if (r)
		return r;
	if (a.qp_state == DROCE_QPS_INIT)
		return 0;
	if (a.qp_state != DROCE_QPS_RESET)
		return -EINVAL;
	/* rdma_cm grants the remote rights the connection may use; the MRs'
	 * own access flags decide what a peer can touch (10.6.3.1) */
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = all_access;
	a.pkey = DROCE_DEFAULT_PKEY;
	return droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
}

int droce_svc_qp_connect(struct droce_qp *qp, const struct droce_svc_path *p)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = (enum droce_mtu)p->path_mtu;
	a.dest_qp_num = p->dest_qpn;
	a.rq_psn = p->rq_psn;
	a.max_dest_rd_atomic = p->max_dest_rd_atomic;
	/* the RNR NAK timer is in neither REQ nor REP: each responder's own */
	a.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
	a.ah_attr.ip_version = p->peer.ip_version;
	memcpy(a.ah_attr.dst_ip, p->peer.ip, 16);
	memcpy(a.ah_attr.dst_mac, p->mac, 6);
	a.ah_attr.dscp = DROCE_DEFAULT_DSCP;
	a.ah_attr.ttl = DROCE_DEFAULT_TTL;
	int r = droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
				DROCE_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = p->sq_psn;
	a.timeout = p->timeout;
	a.retry_cnt = p->retry_cnt;
	a.rnr_retry = p->rnr_retry;
	a.max_rd_atomic = p->max_rd_atomic;
	return droce_modify_qp(qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
			       DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC);
}

void droce_svc_qp_error(struct droce_qp *qp)
{
	struct droce_qp_attr a;
	if (!qp || droce_query_qp(qp, &a, 0) || a.qp_state == DROCE_QPS_RESET ||
	    a.qp_state == DROCE_QPS_ERR)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_ERR;
	droce_modify_qp(qp, &a, DROCE_QP_STATE);
}
