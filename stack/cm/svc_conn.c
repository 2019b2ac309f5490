/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections of the CM service: the consumer's calls (connect, accept,
 * reject, disconnect) and the CM's events, each turned into the QP
 * transition rdma_cm makes at that point (cma.c's cma_modify_qp_rtr/rts,
 * cma_ib_handler) and the public event (include/droce/cm.h).
 *
 * Which side uses what (IBTA vol 1 12.6.5 REQ, 12.6.8 REP; Linux ib_cm's
 * cm_req_handler / cm_rep_handler keep the same):
 * A starting PSN names the direction toward its sender: the REQ's is what
 * the active side receives first, the REP's what the passive side does
 * (ib_send_cm_req / cm_req_handler / ib_send_cm_rep / cm_rep_handler; the
 * corpus capture's first WRITE carries the REP's PSN).
 *   active  RTR: dest QPN = REP's, RQ PSN = our REQ's; max_dest_rd_atomic = REP's initiator depth
 *           RTS: SQ PSN = the REP's; max_rd_atomic = REP's responder resources;
 *                retry count, ACK timeout = our REQ's; RNR retry = REP's
 *   passive RTR: dest QPN = REQ's, RQ PSN = our REP's; max_dest_rd_atomic = our REP's
 *                responder resources (clamped to the REQ's initiator depth)
 *           RTS: SQ PSN = the REQ's; max_rd_atomic = our REP's initiator depth
 *                (clamped to the REQ's responder resources); retry count,
 *                ACK timeout, RNR retry = the REQ's
 *   both    path MTU = the REQ's
 */
#include <errno.h>
#include <string.h>

#include <droce/droce.h>

#include "cm/svc.h"
#include "cm/xt.h"
#include "model/model.h"

static struct svc_conn *conn_get(struct droce_cm_svc *s, int id)
{
	return id >= 0 && (unsigned)id < s->conf.max_conns && s->conns[id].state != SVC_FREE
		       ? &s->conns[id]
		       : NULL;
}

static int conn_index(const struct droce_cm_svc *s, const struct svc_conn *c)
{
	return (int)(c - s->conns);
}

static struct svc_conn *conn_alloc(struct droce_cm_svc *s, enum svc_conn_state st)
{
	for (unsigned i = 0; i < s->conf.max_conns; i++)
		if (s->conns[i].state == SVC_FREE) {
			struct svc_conn *c = &s->conns[i];
			memset(c, 0, sizeof(*c));
			c->state = st;
			c->cm_id = -1;
			return c;
		}
	return NULL;
}

static void conn_map(struct droce_cm_svc *s, struct svc_conn *c, int cm_id)
{
	c->cm_id = cm_id;
	if (cm_id >= 0 && (unsigned)cm_id < s->n_cm_ids)
		s->by_cm_id[cm_id] = conn_index(s, c);
}

static void conn_free(struct droce_cm_svc *s, struct svc_conn *c)
{
	if (c->cm_id >= 0 && (unsigned)c->cm_id < s->n_cm_ids)
		s->by_cm_id[c->cm_id] = -1;
	c->state = SVC_FREE;
	c->qp = NULL;
}

/* The connection's QP, or NULL once the application destroyed it
 * (perftest destroys QPs of connections still up; the CM must then neither
 * move nor read them). The table slot at the QP's index is read, never the
 * pointer we kept, and it must hold the very QP the connection was made
 * with: its uid. A pointer (malloc hands the address out again), an index
 * and a QPN (the allocator reuses both) would name a new QP created after
 * the old one went, and the old connection's DISCONNECTED would then move
 * that QP to ERR. */
static struct droce_qp *qp_of(const struct droce_cm_svc *s, const struct svc_conn *c)
{
	const struct droce_ctx *ctx = s->ctx;
	if (!c->qp || c->qp_index >= ctx->p.max_qps)
		return NULL;
	struct droce_qp *qp = ctx->qps[c->qp_index];
	return qp && qp->uid == c->qp_uid ? qp : NULL;
}

static void conn_set_qp(struct svc_conn *c, struct droce_qp *qp)
{
	c->qp = qp;
	c->qp_index = qp->index;
	c->qp_uid = qp->uid;
}

/* Some live connection uses @p qp (by uid: see qp_of). */
static bool qp_busy(const struct droce_cm_svc *s, const struct droce_qp *qp)
{
	for (unsigned i = 0; i < s->conf.max_conns; i++)
		if (s->conns[i].state != SVC_FREE && s->conns[i].qp && s->conns[i].qp_uid == qp->uid)
			return true;
	return false;
}

/* A QP a connection may start on: no connection of its own, RESET or INIT. */
static int qp_usable(const struct droce_cm_svc *s, struct droce_qp *qp)
{
	if (qp_busy(s, qp))
		return -EBUSY;
	struct droce_qp_attr qa;
	if (droce_query_qp(qp, &qa, 0) || qa.qp_type != DROCE_QPT_RC ||
	    (qa.qp_state != DROCE_QPS_RESET && qa.qp_state != DROCE_QPS_INIT))
		return -EINVAL;
	return 0;
}

static void ev_init(struct droce_conn_event *ev, enum droce_conn_event_type t,
		    const struct droce_cm_svc *s, const struct svc_conn *c)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = t;
	ev->conn = conn_index(s, c);
	ev->listen_id = -1;
	ev->qp = c->qp;
	ev->peer = c->peer;
	ev->local_port = c->local_port;
}

/* The connection's last event: its QP to ERR (TIMEWAIT_EXIT: it went at
 * DISCONNECTED, and the application may have destroyed it since), the id
 * freed. */
static void conn_end(struct droce_cm_svc *s, struct svc_conn *c, enum droce_conn_event_type t,
		     int status, const uint8_t *pd, size_t pd_len)
{
	struct droce_conn_event ev;
	ev_init(&ev, t, s, c);
	ev.status = status;
	if (pd && pd_len) {
		size_t n = pd_len < DROCE_CONN_PD_MAX ? pd_len : DROCE_CONN_PD_MAX;
		memcpy(ev.private_data, pd, n);
		ev.private_data_len = n;
	}
	if (t != DROCE_CONN_TIMEWAIT_EXIT)
		droce_svc_qp_error(qp_of(s, c));
	conn_free(s, c);
	droce_svc_push_event(s, &ev);
}

static bool param_ok(const struct droce_conn_param *p, size_t pd_max)
{
	return p->private_data_len <= pd_max && (p->private_data || !p->private_data_len) &&
	       p->retry_count <= 7 && p->rnr_retry_count <= 7 && p->path_mtu >= DROCE_MTU_256 &&
	       p->path_mtu <= DROCE_MTU_4096 && p->ack_timeout <= 31 &&
	       p->responder_resources <= DROCE_QP_MAX_RD_ATOMIC &&
	       p->initiator_depth <= DROCE_QP_MAX_RD_ATOMIC;
}

static void param_keep(struct svc_conn *c, const struct droce_conn_param *p)
{
	c->param = *p;
	if (p->private_data_len)
		memcpy(c->pd, p->private_data, p->private_data_len);
	c->param.private_data = c->pd;
}

/* Start PSNs (and source ports) from the CM's generator: getrandom()
 * unless the application gave a seed. A predictable PSN lets a blind
 * spoofer forge packets the responder takes as in sequence (9.7.3). */
static uint32_t psn_draw(struct droce_cm_svc *s)
{
	return droce_cm_random(s->cm) & 0xFFFFFF;
}

static struct droce_cm_addr cm_addr(const struct droce_addr *a)
{
	struct droce_cm_addr r = {.ip_version = a->ip_version};
	memcpy(r.ip, a->ip, 16);
	return r;
}

/* 0: resolved; -EAGAIN: not yet (conn->resolve_deadline not passed); other: give up. */
static int resolve(struct droce_cm_svc *s, struct svc_conn *c, uint64_t now)
{
	int r = s->conf.resolve(s->conf.resolve_arg, c->peer.ip_version, c->peer.ip, c->mac, now);
	if (r == -EAGAIN && now >= c->resolve_deadline)
		return -ETIMEDOUT;
	return r;
}

static void unreachable(struct droce_cm_svc *s, struct svc_conn *c, int err, uint64_t now)
{
	s->cnt.resolve_failed++;
	if (c->cm_id >= 0 && c->state == SVC_ACCEPTING) /* the peer waits: tell it */
		droce_cm_reject(s->cm, now, c->cm_id, NULL, 0);
	conn_end(s, c, DROCE_CONN_UNREACHABLE, err, NULL, 0);
}

/* ------------------------------------------------------------ active -- */

static void send_req(struct droce_cm_svc *s, struct svc_conn *c, uint64_t now)
{
	struct droce_cm_connect_param cp;
	memset(&cp, 0, sizeof(cp));
	cp.dst = cm_addr(&c->peer);
	cp.dst_port = c->local_port;
	cp.src_port = c->peer.port;
	cp.qp = c->local;
	cp.private_data = c->pd;
	cp.private_data_len = c->param.private_data_len;
	int id = droce_cm_connect(s->cm, now, &cp);
	if (id < 0) {
		conn_end(s, c, DROCE_CONN_ERROR, id, NULL, 0);
		return;
	}
	conn_map(s, c, id);
	c->state = SVC_CONNECTING;
}

/* The active side's common part: @p qp NULL for droce_connect_qpn(). */
static int connect_on(struct droce_cm_svc *s, struct droce_qp *qp, const struct droce_addr *dst,
		      const struct droce_conn_param *p, uint64_t now)
{
	if (!dst || dst->ip_version != s->local.ip_version || !param_ok(p, DROCE_CONN_REQ_PD_MAX))
		return -EINVAL;
	if (!qp && (!p->qp_num || p->qp_num > 0xFFFFFF))
		return -EINVAL;
	int r = qp ? qp_usable(s, qp) : 0;
	if (r)
		return r;
	struct svc_conn *c = conn_alloc(s, SVC_RESOLVING);
	if (!c)
		return -ENOSPC;
	if (qp) {
		r = droce_svc_qp_init(qp);
		if (r) {
			conn_free(s, c);
			return r;
		}
		conn_set_qp(c, qp);
	}
	c->no_qp = !qp;
	c->cm_active = true;
	c->peer = *dst;
	c->local_port = dst->port;
	/* rdma_cm's source port: an ephemeral port of the TCP space */
	c->peer.port = p->src_port ? p->src_port : (uint16_t)(32768 + (psn_draw(s) & 0x7FFF));
	param_keep(c, p);
	/* a QP set to selective repeat offers it in the REQ (cm/xt.h); one
	 * at go-back-N sends today's REQ, byte for byte. No room behind the
	 * consumer's data: no offer, and on_response sets go-back-N. */
	if (qp && qp->transport != DROCE_TRANSPORT_GBN) {
		size_t n = droce_cm_xt_put(c->pd, DROCE_CONN_REQ_PD_MAX, p->private_data_len,
					   qp->transport);
		if (n) {
			c->param.private_data_len = n;
			c->xt_offer = qp->transport;
		}
	}
	c->local.qpn = qp ? droce_qp_num(qp) : p->qp_num;
	c->local.start_psn = psn_draw(s);
	c->local.path_mtu = p->path_mtu;
	c->local.responder_resources = p->responder_resources;
	c->local.initiator_depth = p->initiator_depth;
	c->local.retry_count = p->retry_count;
	c->local.rnr_retry_count = p->rnr_retry_count;
	c->local.local_ack_timeout = p->ack_timeout;
	c->resolve_deadline = now + s->conf.resolve_timeout_ns;
	int id = conn_index(s, c);
	r = resolve(s, c, now);
	if (r == 0)
		send_req(s, c, now);
	else if (r == -EAGAIN)
		s->resolving = true;
	else
		unreachable(s, c, r, now);
	return id; /* an early end is an event, as for a REQ that fails later */
}

int droce_connect(struct droce_qp *qp, const struct droce_addr *dst,
		  const struct droce_conn_param *p, uint64_t now)
{
	struct droce_conn_param def;
	if (!p) {
		droce_conn_param_init(&def);
		p = &def;
	}
	struct droce_cm_svc *s = qp ? droce_cm_svc_of(qp->ctx) : NULL;
	return s ? connect_on(s, qp, dst, p, now) : -EINVAL;
}

int droce_connect_qpn(struct droce_ctx *ctx, const struct droce_addr *dst,
		      const struct droce_conn_param *p, uint64_t now)
{
	struct droce_cm_svc *s = ctx ? droce_cm_svc_of(ctx) : NULL;
	return s && p ? connect_on(s, NULL, dst, p, now) : -EINVAL;
}

/* RTR/RTS along the REQ and REP (the table at the top of this file). */
static void path_of(const struct svc_conn *c, struct droce_svc_path *path)
{
	memset(path, 0, sizeof(*path));
	path->peer = c->peer;
	memcpy(path->mac, c->mac, 6);
	if (c->cm_active) {
		/* the REP's PSN is the one we send with; ours (the REQ's) the
		 * one the passive side sends with (ib_cm's cm_rep_handler) */
		path->dest_qpn = c->remote.qpn;
		path->rq_psn = c->local.start_psn;
		path->sq_psn = c->remote.start_psn;
		path->path_mtu = c->local.path_mtu;
		path->max_dest_rd_atomic = c->remote.initiator_depth;
		path->max_rd_atomic = c->remote.responder_resources;
		path->timeout = c->local.local_ack_timeout;
		path->retry_cnt = c->local.retry_count;
		path->rnr_retry = c->remote.rnr_retry_count;
	} else {
		/* we send with the REQ's PSN and expect our REP's (ib_cm's
		 * cm_req_handler / ib_send_cm_rep) */
		const struct droce_cm_qp_attr *rq = &c->remote;
		path->dest_qpn = rq->qpn;
		path->rq_psn = c->local.start_psn;
		path->sq_psn = rq->start_psn;
		path->path_mtu = rq->path_mtu;
		path->max_dest_rd_atomic = c->local.responder_resources;
		path->max_rd_atomic = c->local.initiator_depth;
		path->timeout = rq->local_ack_timeout;
		path->retry_cnt = rq->retry_count;
		path->rnr_retry = rq->rnr_retry_count;
	}
}

/* 12.6.8: the clamps droce_cm_accept applies to the REP */
static void clamp_rep(struct svc_conn *c)
{
	const struct droce_cm_qp_attr *rq = &c->remote;
	c->local.rnr_retry_count = c->param.rnr_retry_count;
	c->local.responder_resources = c->param.responder_resources < rq->initiator_depth
					       ? c->param.responder_resources
					       : rq->initiator_depth;
	c->local.initiator_depth = c->param.initiator_depth < rq->responder_resources
					   ? c->param.initiator_depth
					   : rq->responder_resources;
}

int droce_conn_get_qp_attr(struct droce_ctx *ctx, int conn, struct droce_conn_qp_attr *out)
{
	struct droce_cm_svc *s = ctx ? droce_cm_svc_of(ctx) : NULL;
	struct svc_conn *c = s ? conn_get(s, conn) : NULL;
	if (!c || !out)
		return -EINVAL;
	struct svc_conn tmp = *c;
	if (!c->cm_active && c->state == SVC_REQUESTED) {
		/* before the accept, the REQ's offer (as ib_cm's
		 * cm_req_handler keeps it until the REP says otherwise) */
		tmp.param.responder_resources = c->remote.initiator_depth;
		tmp.param.initiator_depth = c->remote.responder_resources;
		tmp.param.rnr_retry_count = c->remote.rnr_retry_count;
		clamp_rep(&tmp);
	}
	struct droce_svc_path p;
	path_of(&tmp, &p);
	memset(out, 0, sizeof(*out));
	out->peer = c->peer;
	out->rq_psn = p.rq_psn;
	out->path_mtu = p.path_mtu;
	out->timeout = p.timeout;
	out->retry_cnt = p.retry_cnt;
	out->sq_valid = !c->cm_active || c->have_rep;
	if (out->sq_valid) {
		out->dest_qpn = p.dest_qpn;
		out->sq_psn = p.sq_psn;
		out->max_dest_rd_atomic = p.max_dest_rd_atomic;
		out->max_rd_atomic = p.max_rd_atomic;
		out->rnr_retry = p.rnr_retry;
	}
	return 0;
}

int droce_conn_establish(struct droce_ctx *ctx, int conn, uint64_t now)
{
	struct droce_cm_svc *s = ctx ? droce_cm_svc_of(ctx) : NULL;
	struct svc_conn *c = s ? conn_get(s, conn) : NULL;
	if (!c || !c->no_qp || !c->cm_active)
		return -EINVAL;
	if (!c->have_rep || c->state != SVC_CONNECTING)
		return -EBADFD;
	return droce_cm_establish(s->cm, now, c->cm_id); /* ESTABLISHED follows in the poll */
}

/* The loss-recovery mode for @p qp before its RTR (the responder's first
 * packet already follows it): the agreed one, or go-back-N. */
static int set_transport(struct droce_cm_svc *s, struct svc_conn *c, struct droce_qp *qp,
			 unsigned mode)
{
	c->transport = (uint8_t)mode;
	if (mode != DROCE_TRANSPORT_GBN)
		s->cnt.transport_agreed++;
	return qp ? droce_qp_set_transport(qp, (int)mode) : 0;
}

/* Active: the REP's answer to our offer. Only an offer is answered, so
 * a REP is read only after one; no answer (a peer that is not droce,
 * whose consumer's data these bytes are) is go-back-N, and so is an answer
 * above the offer or a malformed one (counted). */
static unsigned rep_transport(struct droce_cm_svc *s, struct svc_conn *c)
{
	unsigned m = DROCE_TRANSPORT_GBN;
	if (!c->xt_offer)
		return m;
	int r = droce_cm_xt_get(c->pd, c->param.private_data_len, &m);
	if (r == 1 && m <= c->xt_offer) {
		droce_cm_xt_clear(c->pd, c->param.private_data_len);
		return m;
	}
	if (r != 0)
		s->cnt.transport_ext_bad++;
	return DROCE_TRANSPORT_GBN;
}

static void on_response(struct droce_cm_svc *s, struct svc_conn *c, const struct droce_cm_event *ev,
			uint64_t now)
{
	c->remote = ev->remote;
	c->have_rep = true;
	/* our REQ is sent (the CM resends its own copy): pd[] now keeps the
	 * REP's private data for the ESTABLISHED event, as rdma_cm reports it */
	c->param.private_data_len = ev->private_data_len < sizeof(c->pd) ? ev->private_data_len
									  : sizeof(c->pd);
	memcpy(c->pd, ev->private_data, c->param.private_data_len);
	if (c->no_qp) {
		/* no QP of ours, no offer: the application's QP keeps its own
		 * mode. It sets the QP up and sends the RTU itself
		 * (rdma_cm's CONNECT_RESPONSE, then rdma_establish) */
		struct droce_conn_event out;
		ev_init(&out, DROCE_CONN_RESPONSE, s, c);
		out.responder_resources = ev->remote.responder_resources;
		out.initiator_depth = ev->remote.initiator_depth;
		out.remote_qpn = ev->remote.qpn;
		out.private_data_len = c->param.private_data_len;
		memcpy(out.private_data, c->pd, out.private_data_len);
		droce_svc_push_event(s, &out);
		return;
	}
	struct droce_svc_path path;
	path_of(c, &path);
	struct droce_qp *qp = qp_of(s, c);
	int r = qp ? set_transport(s, c, qp, rep_transport(s, c)) : -ENOENT;
	if (!r)
		r = droce_svc_qp_connect(qp, &path);
	if (r) {
		droce_cm_reject(s->cm, now, c->cm_id, NULL, 0);
		conn_end(s, c, DROCE_CONN_ERROR, r, NULL, 0);
		return;
	}
	/* the RTU; the CM's ESTABLISHED event follows in this poll */
	r = droce_cm_establish(s->cm, now, c->cm_id);
	if (r)
		conn_end(s, c, DROCE_CONN_ERROR, r, NULL, 0);
}

/* ----------------------------------------------------------- passive -- */

static void on_request(struct droce_cm_svc *s, const struct droce_cm_event *ev, uint64_t now)
{
	struct svc_conn *c = conn_alloc(s, SVC_REQUESTED);
	if (!c) { /* the CM had room, we do not: 12.6.7.2 reason 3, "no resources" */
		droce_cm_reject_reason(s->cm, now, ev->id, DROCE_CM_REJ_NO_RESOURCES, NULL, 0);
		return;
	}
	conn_map(s, c, ev->id);
	c->peer.ip_version = ev->peer.ip_version;
	memcpy(c->peer.ip, ev->peer.ip, 16);
	c->peer.port = ev->src_port;
	c->local_port = ev->dst_port;
	c->remote = ev->remote;
	/* drawn now, not at accept: an application that sets its own QP up
	 * (droce_conn_get_qp_attr) needs its RQ PSN before it accepts */
	c->local.start_psn = psn_draw(s);
	struct droce_conn_event out;
	ev_init(&out, DROCE_CONN_REQUEST, s, c);
	out.remote_qpn = ev->remote.qpn;
	out.listen_id = ev->listen_id;
	out.responder_resources = ev->remote.responder_resources;
	out.initiator_depth = ev->remote.initiator_depth;
	out.path_mtu = ev->remote.path_mtu;
	out.private_data_len = ev->private_data_len;
	memcpy(out.private_data, ev->private_data, ev->private_data_len);
	/* the peer's offer (cm/xt.h), taken out of what the consumer sees; a
	 * malformed one is counted and left as the peer's data */
	unsigned m;
	int r = droce_cm_xt_get(out.private_data, out.private_data_len, &m);
	if (r == 1) {
		c->xt_offer = (uint8_t)m;
		droce_cm_xt_clear(out.private_data, out.private_data_len);
	} else if (r < 0) {
		s->cnt.transport_ext_bad++;
	}
	droce_svc_push_event(s, &out);
}

/* QP to RTS with the REQ's attributes, then the REP. On failure the REQ
 * is rejected and the QP put in ERR; the caller ends the connection. */
static int send_rep(struct droce_cm_svc *s, struct svc_conn *c, uint64_t now)
{
	struct droce_qp *qp = c->no_qp ? NULL : qp_of(s, c);
	c->local.qpn = c->no_qp ? c->param.qp_num : qp ? droce_qp_num(qp) : 0;
	clamp_rep(c);
	/* an offer is answered with the lower of it and transport_max, in the
	 * REP's last bytes; no offer (rxe, a NIC, a droce QP at go-back-N) or
	 * no room behind the consumer's data: go-back-N, the REP unchanged */
	unsigned mode = DROCE_TRANSPORT_GBN;
	if (c->xt_offer && !c->no_qp) {
		unsigned want = c->xt_offer < s->conf.transport_max ? c->xt_offer
								      : s->conf.transport_max;
		size_t n = droce_cm_xt_put(c->pd, DROCE_CONN_REP_PD_MAX,
					   c->param.private_data_len, want);
		if (n) {
			c->param.private_data_len = n;
			mode = want;
		}
	}
	struct droce_svc_path path;
	path_of(c, &path);
	int r = c->no_qp ? 0 : qp ? set_transport(s, c, qp, mode) : -ENOENT;
	if (!r && !c->no_qp)
		r = droce_svc_qp_connect(qp, &path);
	if (!r)
		r = droce_cm_accept(s->cm, now, c->cm_id, &c->local, c->pd, c->param.private_data_len);
	if (r) {
		droce_cm_reject(s->cm, now, c->cm_id, NULL, 0);
		droce_svc_qp_error(qp_of(s, c));
		return r;
	}
	struct droce_qp_stats st;
	c->rx_base = !qp || droce_qp_get_stats(qp, &st) ? 0 : st.rx_pkts;
	c->state = SVC_ACCEPTED;
	s->accepting = !c->no_qp || s->accepting; /* COMM_EST needs our QP */
	return 0;
}

int droce_accept(struct droce_ctx *ctx, int conn, struct droce_qp *qp,
		 const struct droce_conn_param *p, uint64_t now)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	struct droce_conn_param def;
	if (!p) {
		droce_conn_param_init(&def);
		p = &def;
	}
	struct svc_conn *c = s ? conn_get(s, conn) : NULL;
	if (!c || (qp && qp->ctx != ctx) || !param_ok(p, DROCE_CONN_REP_PD_MAX) ||
	    (!qp && (!p->qp_num || p->qp_num > 0xFFFFFF)))
		return -EINVAL;
	if (c->state != SVC_REQUESTED)
		return -EBADFD;
	int r = qp ? qp_usable(s, qp) : 0;
	if (r)
		return r;
	if (qp) {
		r = droce_svc_qp_init(qp);
		if (r)
			return r;
		conn_set_qp(c, qp);
	}
	c->no_qp = !qp;
	param_keep(c, p);
	/* the peer sent us a REQ a moment ago: a live one answers ARP at once
	 * (and has usually just asked for ours, which taught us its MAC), so
	 * an address that stays silent is a spoofed one holding a slot */
	c->resolve_deadline = now + s->conf.accept_resolve_timeout_ns;
	r = resolve(s, c, now);
	if (r == 0) {
		r = send_rep(s, c, now);
		if (r)
			conn_free(s, c); /* said here, no event */
		return r;
	}
	if (r != -EAGAIN) {
		unreachable(s, c, r, now);
		return 0;
	}
	c->state = SVC_ACCEPTING;
	s->resolving = true;
	return 0;
}

int droce_reject(struct droce_ctx *ctx, int conn, const void *pd, size_t pd_len, uint64_t now)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	struct svc_conn *c = s ? conn_get(s, conn) : NULL;
	if (!c || pd_len > DROCE_CONN_REJ_PD_MAX || (pd_len && !pd))
		return -EINVAL;
	if (c->state != SVC_REQUESTED && c->state != SVC_ACCEPTING)
		return -EBADFD;
	int r = droce_cm_reject(s->cm, now, c->cm_id, pd, pd_len);
	droce_svc_qp_error(qp_of(s, c));
	conn_free(s, c);
	return r;
}

int droce_disconnect(struct droce_ctx *ctx, int conn, uint64_t now)
{
	struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	struct svc_conn *c = s ? conn_get(s, conn) : NULL;
	if (!c)
		return -EINVAL;
	if (c->state != SVC_ESTABLISHED && c->state != SVC_ACCEPTED)
		return -EBADFD;
	int r = droce_cm_disconnect(s->cm, now, c->cm_id);
	if (r)
		return r;
	/* rdma_disconnect: the QP stops now, its WRs flush (cma_modify_qp_err) */
	droce_svc_qp_error(qp_of(s, c));
	c->state = SVC_DISCONNECTING;
	return 0;
}

/* --------------------------------------------------------- CM events -- */

void droce_svc_resolve_pending(struct droce_cm_svc *s, uint64_t now)
{
	bool more = false;
	for (unsigned i = 0; i < s->conf.max_conns; i++) {
		struct svc_conn *c = &s->conns[i];
		if (c->state != SVC_RESOLVING && c->state != SVC_ACCEPTING)
			continue;
		int r = resolve(s, c, now);
		if (r == -EAGAIN)
			more = true;
		else if (r)
			unreachable(s, c, r, now);
		else if (c->state == SVC_RESOLVING)
			send_req(s, c, now);
		else if ((r = send_rep(s, c, now)))
			conn_end(s, c, DROCE_CONN_ERROR, r, NULL, 0);
	}
	s->resolving = more;
}

/* COMM_EST (IBTA 12.9, 11.6.3): an accepted connection whose QP has
 * received from the peer is established even when no RTU came (all of them
 * lost): the first packet proves the REP arrived. The kernel does the same
 * on IB_EVENT_COMM_EST; without it the REP's retries would run out and end
 * a connection whose data already flows. */
void droce_svc_comm_est(struct droce_cm_svc *s, uint64_t now)
{
	bool more = false;
	for (unsigned i = 0; i < s->conf.max_conns; i++) {
		struct svc_conn *c = &s->conns[i];
		struct droce_qp_stats st;
		if (c->state != SVC_ACCEPTED || c->no_qp)
			continue;
		struct droce_qp *qp = qp_of(s, c);
		if (qp && !droce_qp_get_stats(qp, &st) && st.rx_pkts > c->rx_base)
			droce_cm_comm_est(s->cm, now, c->cm_id); /* ESTABLISHED follows */
		else
			more = true;
	}
	s->accepting = more;
}

void droce_svc_on_cm_event(struct droce_cm_svc *s, const struct droce_cm_event *ev, uint64_t now)
{
	if (ev->type == DROCE_CM_EV_CONNECT_REQUEST) {
		on_request(s, ev, now);
		return;
	}
	int i = ev->id >= 0 && (unsigned)ev->id < s->n_cm_ids ? s->by_cm_id[ev->id] : -1;
	struct svc_conn *c = i >= 0 ? &s->conns[i] : NULL;
	if (!c) /* a connection we already ended (rejected, errored) */
		return;
	switch (ev->type) {
	case DROCE_CM_EV_CONNECT_RESPONSE:
		on_response(s, c, ev, now);
		break;
	case DROCE_CM_EV_ESTABLISHED: {
		c->state = SVC_ESTABLISHED;
		struct droce_conn_event out;
		ev_init(&out, DROCE_CONN_ESTABLISHED, s, c);
		/* active: the REP's private data; passive: the RTU's */
		const uint8_t *pd = c->cm_active ? c->pd : ev->private_data;
		out.private_data_len = c->cm_active ? c->param.private_data_len : ev->private_data_len;
		memcpy(out.private_data, pd, out.private_data_len);
		out.transport = c->transport;
		droce_svc_push_event(s, &out);
		break;
	}
	case DROCE_CM_EV_REJECTED:
		conn_end(s, c, DROCE_CONN_REJECTED, ev->reason, ev->private_data, ev->private_data_len);
		break;
	case DROCE_CM_EV_DISCONNECTED: {
		struct droce_conn_event out;
		ev_init(&out, DROCE_CONN_DISCONNECTED, s, c);
		out.status = ev->reason;
		out.private_data_len = ev->private_data_len;
		memcpy(out.private_data, ev->private_data, ev->private_data_len);
		droce_svc_qp_error(qp_of(s, c));
		c->state = SVC_TIMEWAIT;
		droce_svc_push_event(s, &out);
		break;
	}
	case DROCE_CM_EV_TIMEWAIT_EXIT:
		conn_end(s, c, DROCE_CONN_TIMEWAIT_EXIT, 0, NULL, 0);
		break;
	case DROCE_CM_EV_TIMEOUT:
		conn_end(s, c, DROCE_CONN_TIMEOUT, ev->reason, NULL, 0);
		break;
	case DROCE_CM_EV_CONNECT_REQUEST:
		break;
	}
}
