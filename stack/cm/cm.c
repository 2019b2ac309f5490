/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM connection state machine (IBTA vol 1 12.9; docs/cm.md): creation, the
 * consumer calls, the output queue, the timers. One function per incoming
 * message lives in cm_rx.c, one per consumer call here; each checks the
 * state it is valid in and returns what it did. The last MAD sent for a
 * connection is kept encoded: the retry timer resends it and a duplicate
 * of the peer's previous message is answered with it (12.9: a resent REQ
 * gets the REP again, a resent REP the RTU, a resent DREQ the DREP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "cm/cm.h"
#include "cm/cm_int.h"
#include "wire/bytes.h"

static const char *const state_names[] = {
#define X(n) #n,
	DROCE_CM_STATES(X)
#undef X
};

const char *droce_cm_state_name(enum droce_cm_state s)
{
	return (unsigned)s < DROCE_CM__STATE_COUNT ? state_names[s] : "INVALID";
}

static const char *const rx_names[] = {
#define X(n, s) #n,
	DROCE_CM_RX_RESULTS(X)
#undef X
};

const char *droce_cm_rx_name(enum droce_cm_rx r)
{
	return (unsigned)r < DROCE_CM_RX__COUNT ? rx_names[r] : "INVALID";
}

const char *droce_cm_event_name(enum droce_cm_event_type t)
{
	static const char *const n[] = { "CONNECT_REQUEST", "CONNECT_RESPONSE", "ESTABLISHED",
					 "REJECTED", "DISCONNECTED", "TIMEOUT", "TIMEWAIT_EXIT" };
	return (unsigned)t < sizeof(n) / sizeof(n[0]) ? n[t] : "INVALID";
}

/* Communication IDs and TIDs from the caller's seed (base/splitmix64.h). */
static uint64_t rng_next(uint64_t *s)
{
	return droce_splitmix64(s);
}

bool droce_cm_addr_ok(const struct droce_cm_addr *a)
{
	return a->ip_version == 4 || a->ip_version == 6;
}

bool droce_cm_addr_eq(const struct droce_cm_addr *a, const struct droce_cm_addr *b)
{
	return a->ip_version == b->ip_version &&
	       memcmp(a->ip, b->ip, a->ip_version == 4 ? 4 : 16) == 0;
}

/* RoCEv2 GID of an IP address: IPv4-mapped IPv6 for IPv4 (Annex A17). */
static void addr_to_gid(const struct droce_cm_addr *a, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (a->ip_version == 4) {
		gid[10] = gid[11] = 0xFF;
		memcpy(gid + 12, a->ip, 4);
	} else {
		memcpy(gid, a->ip, 16);
	}
}

struct droce_cm *droce_cm_create(const struct droce_cm_params *in)
{
	if (!in || !droce_cm_addr_ok(&in->local) || in->max_cm_retries > 15 || in->response_timeout > 31 ||
	    in->mra_service_timeout > 31 || in->target_ack_delay > 31) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_cm *cm = calloc(1, sizeof(*cm));
	if (!cm) {
		errno = ENOMEM;
		return NULL;
	}
	cm->p = *in;
	struct droce_cm_params *p = &cm->p;
	if (!p->max_ids)
		p->max_ids = 64;
	if (!p->mad_queue)
		p->mad_queue = 64;
	if (!p->event_queue)
		p->event_queue = 64;
	if (!p->response_timeout)
		p->response_timeout = 20; /* rdma_cm's CMA_CM_RESPONSE_TIMEOUT */
	if (!p->max_cm_retries)
		p->max_cm_retries = 15;   /* rdma_cm's CMA_MAX_CM_RETRIES */
	if (!p->mra_service_timeout)
		p->mra_service_timeout = (uint8_t)(p->response_timeout + 2 > 31 ? 31 : p->response_timeout + 2);
	if (!p->target_ack_delay)
		p->target_ack_delay = 15;
	if (!p->packet_lifetime_ns)
		p->packet_lifetime_ns = 1000000;
	if (!p->timewait_ns)
		p->timewait_ns = 2 * p->packet_lifetime_ns + 4000000;
	cm->ids = calloc(p->max_ids, sizeof(*cm->ids));
	cm->mq = calloc(p->mad_queue, sizeof(*cm->mq));
	cm->eq = calloc(p->event_queue, sizeof(*cm->eq));
	if (!cm->ids || !cm->mq || !cm->eq) {
		droce_cm_destroy(cm);
		errno = ENOMEM;
		return NULL;
	}
	cm->rng = p->seed;
	cm->tid_hi = (uint32_t)rng_next(&cm->rng);
	return cm;
}

void droce_cm_destroy(struct droce_cm *cm)
{
	if (!cm)
		return;
	free(cm->ids);
	free(cm->mq);
	free(cm->eq);
	free(cm);
}

const struct droce_cm_stats *droce_cm_stats(const struct droce_cm *cm)
{
	return &cm->st;
}

static struct cm_id *get_id(const struct droce_cm *cm, int id)
{
	if (id < 0 || (unsigned)id >= cm->p.max_ids || cm->ids[id].state == DROCE_CM_IDLE)
		return NULL;
	return &cm->ids[id];
}

enum droce_cm_state droce_cm_id_state(const struct droce_cm *cm, int id)
{
	const struct cm_id *c = get_id(cm, id);
	return c ? c->state : DROCE_CM_IDLE;
}

int droce_cm_id_index(const struct droce_cm *cm, const struct cm_id *c)
{
	return (int)(c - cm->ids);
}

struct cm_id *droce_cm_find_lcid(const struct droce_cm *cm, uint32_t lcid)
{
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *c = &cm->ids[i];
		if (c->state != DROCE_CM_IDLE && c->state != DROCE_CM_LISTEN && c->lcid == lcid)
			return c;
	}
	return NULL;
}

static bool lcid_taken(const struct droce_cm *cm, const struct cm_id *c)
{
	for (unsigned i = 0; i < cm->p.max_ids; i++)
		if (&cm->ids[i] != c && cm->ids[i].state != DROCE_CM_IDLE && cm->ids[i].lcid == c->lcid)
			return true;
	return false;
}

/* A fresh slot with a communication ID unique among live ones and never 0. */
struct cm_id *droce_cm_alloc_id(struct droce_cm *cm, enum droce_cm_state st)
{
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *c = &cm->ids[i];
		if (c->state != DROCE_CM_IDLE)
			continue;
		memset(c, 0, sizeof(*c));
		c->state = st;
		do
			c->lcid = (uint32_t)rng_next(&cm->rng);
		while (c->lcid == 0 || lcid_taken(cm, c));
		return c;
	}
	return NULL;
}

void droce_cm_free_id(struct cm_id *c)
{
	c->state = DROCE_CM_IDLE;
	c->deadline = 0;
}

/* ---- output ---- */

void droce_cm_push_event(struct droce_cm *cm, const struct droce_cm_event *ev)
{
	if (cm->eq_len == cm->p.event_queue) {
		cm->st.event_queue_full++;
		return;
	}
	cm->eq[(cm->eq_head + cm->eq_len++) % cm->p.event_queue] = *ev;
}

void droce_cm_event_init(struct droce_cm_event *ev, enum droce_cm_event_type t,
			 const struct droce_cm *cm, const struct cm_id *c)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = t;
	ev->id = droce_cm_id_index(cm, c);
	ev->listen_id = -1;
	ev->peer = c->peer;
	ev->src_port = c->src_port;
	ev->dst_port = c->port;
	ev->remote = c->remote;
	ev->state = c->state;
}

void droce_cm_event_simple(struct droce_cm *cm, const struct cm_id *c, enum droce_cm_event_type t,
			 const uint8_t *pd, size_t pd_len)
{
	struct droce_cm_event ev;
	droce_cm_event_init(&ev, t, cm, c);
	if (pd) {
		memcpy(ev.private_data, pd, pd_len);
		ev.private_data_len = pd_len;
	}
	droce_cm_push_event(cm, &ev);
}

static void push_raw(struct droce_cm *cm, const struct droce_cm_addr *dst, const uint8_t *mad)
{
	if (cm->mq_len == cm->p.mad_queue) {
		/* as good as lost on the wire: the retry timers cover it */
		cm->st.mad_queue_full++;
		return;
	}
	struct droce_cm_out *o = &cm->mq[(cm->mq_head + cm->mq_len++) % cm->p.mad_queue];
	o->dst = *dst;
	o->dqpn = DROCE_QP1;
	o->qkey = DROCE_QP1_QKEY;
	memcpy(o->mad, mad, DROCE_MAD_LEN);
	cm->st.tx[mad[17] & 0xF]++;
}

/* Encode @p m, remember it as the connection's last MAD and queue it. */
void droce_cm_send_msg(struct droce_cm *cm, struct cm_id *c, const struct droce_cm_msg *m)
{
	droce_mad_encode(c->last_mad, sizeof(c->last_mad), m);
	c->last_attr = m->hdr.attr_id;
	push_raw(cm, &c->peer, c->last_mad);
}

void droce_cm_resend_last(struct droce_cm *cm, struct cm_id *c)
{
	push_raw(cm, &c->peer, c->last_mad);
}

/* MRA for message @p mraed (REQ or REP) the consumer has not answered yet:
 * the peer waits our service timeout instead of resending (12.6.6). */
void droce_cm_send_mra(struct droce_cm *cm, struct cm_id *c, uint8_t mraed)
{
	struct droce_cm_msg a;
	memset(&a, 0, sizeof(a));
	droce_mad_hdr_init(&a.hdr, DROCE_CM_ATTR_MRA, c->tid);
	a.u.mra.local_comm_id = c->lcid;
	a.u.mra.remote_comm_id = c->rcid;
	a.u.mra.msg_mraed = mraed;
	a.u.mra.service_timeout = cm->p.mra_service_timeout;
	droce_cm_send_msg(cm, c, &a);
}

/* 12.9: wait for the peer's response timeout plus the round trip. */
void droce_cm_arm(struct droce_cm *cm, struct cm_id *c, uint64_t now, uint8_t timeout_exp)
{
	c->deadline = now + droce_cm_timeout_ns(timeout_exp) + 2 * cm->p.packet_lifetime_ns;
	if (c->deadline == 0)
		c->deadline = 1;
}

static void copy_pd(uint8_t *dst, size_t cap, const void *pd, size_t len)
{
	memset(dst, 0, cap);
	if (pd && len)
		memcpy(dst, pd, len);
}

/* REJ for a connection we know (12.6.7). */
static void send_rej(struct droce_cm *cm, struct cm_id *c, uint8_t msg, uint16_t reason,
		     const void *pd, size_t pd_len)
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REJ, c->tid);
	m.u.rej.local_comm_id = c->lcid;
	m.u.rej.remote_comm_id = c->rcid;
	m.u.rej.msg_rejected = msg;
	m.u.rej.reason = reason;
	if (reason == DROCE_CM_REJ_TIMEOUT) {
		/* 12.6.7.2: a timeout REJ's ARI is the sender's CA
		 * GUID; the peer may not know our ID yet but knows that */
		m.u.rej.rej_info_len = 8;
		droce_put_be64(m.u.rej.ari, cm->p.ca_guid);
	}
	copy_pd(m.u.rej.private_data, sizeof(m.u.rej.private_data), pd, pd_len);
	droce_cm_send_msg(cm, c, &m);
}

/* REJ of a REQ no connection was made for: local communication ID 0. */
void droce_cm_send_rej_unmatched(struct droce_cm *cm, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *req, uint16_t reason)
{
	struct droce_cm_msg m;
	uint8_t buf[DROCE_MAD_LEN];
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REJ, req->hdr.tid);
	m.u.rej.remote_comm_id = req->u.req.local_comm_id;
	m.u.rej.msg_rejected = DROCE_CM_MSG_REQ;
	m.u.rej.reason = reason;
	droce_mad_encode(buf, sizeof(buf), &m);
	push_raw(cm, src, buf);
}

/* ---- consumer calls ---- */

int droce_cm_listen(struct droce_cm *cm, uint16_t port)
{
	for (unsigned i = 0; i < cm->p.max_ids; i++)
		if (cm->ids[i].state == DROCE_CM_LISTEN && cm->ids[i].port == port)
			return -EADDRINUSE;
	struct cm_id *c = droce_cm_alloc_id(cm, DROCE_CM_LISTEN);
	if (!c)
		return -ENOSPC;
	c->port = port;
	return droce_cm_id_index(cm, c);
}

int droce_cm_unlisten(struct droce_cm *cm, int id)
{
	struct cm_id *c = get_id(cm, id);
	if (!c || c->state != DROCE_CM_LISTEN)
		return -EINVAL;
	droce_cm_free_id(c);
	return 0;
}

static bool qp_attr_ok(const struct droce_cm_qp_attr *q, bool req)
{
	return q->qpn <= 0xFFFFFF && q->start_psn <= 0xFFFFFF && q->rnr_retry_count <= 7 &&
	       (!req || (q->path_mtu >= 1 && q->path_mtu <= 5 && q->retry_count <= 7 &&
			 q->local_ack_timeout <= 31));
}

int droce_cm_connect(struct droce_cm *cm, uint64_t now, const struct droce_cm_connect_param *cp)
{
	if (!cp || !droce_cm_addr_ok(&cp->dst) || cp->dst.ip_version != cm->p.local.ip_version ||
	    cp->private_data_len > DROCE_CMA_REQ_USER_PD_LEN || !qp_attr_ok(&cp->qp, true))
		return -EINVAL;
	struct cm_id *c = droce_cm_alloc_id(cm, DROCE_CM_REQ_SENT);
	if (!c)
		return -ENOSPC;
	c->active = true;
	c->peer = cp->dst;
	c->port = cp->dst_port;
	c->src_port = cp->src_port;
	c->local = cp->qp;
	/* the kernel's cm_form_tid: the local ID in the low half */
	c->tid = (uint64_t)cm->tid_hi << 32 | c->lcid;
	c->peer_timeout = cm->p.response_timeout;
	c->max_retries = cm->p.max_cm_retries;

	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REQ, c->tid);
	struct droce_cm_req *r = &m.u.req;
	r->local_comm_id = c->lcid;
	r->service_id = droce_cm_tcp_service_id(cp->dst_port);
	r->local_ca_guid = cm->p.ca_guid;
	r->local_qpn = cp->qp.qpn;
	r->responder_resources = cp->qp.responder_resources;
	r->initiator_depth = cp->qp.initiator_depth;
	r->remote_cm_response_timeout = cm->p.response_timeout;
	r->transport_type = 0; /* RC */
	r->starting_psn = cp->qp.start_psn;
	r->local_cm_response_timeout = cm->p.response_timeout;
	r->retry_count = cp->qp.retry_count;
	r->pkey = 0xFFFF;
	r->path_mtu = cp->qp.path_mtu;
	r->rnr_retry_count = cp->qp.rnr_retry_count;
	r->max_cm_retries = cm->p.max_cm_retries;
	r->srq = cp->qp.srq;
	/* RoCE has no LIDs: rxe and the kernel send the permissive LID */
	r->primary.local_lid = 0xFFFF;
	r->primary.remote_lid = 0xFFFF;
	addr_to_gid(&cm->p.local, r->primary.local_gid);
	addr_to_gid(&cp->dst, r->primary.remote_gid);
	r->primary.flow_label = cm->p.flow_label & 0xFFFFF;
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = cp->qp.local_ack_timeout;
	struct droce_cma_hdr h = { .version = DROCE_CMA_VERSION, .ip_version = cm->p.local.ip_version,
				   .src_port = cp->src_port };
	memcpy(h.src_ip, cm->p.local.ip, 16);
	memcpy(h.dst_ip, cp->dst.ip, 16);
	droce_cma_hdr_encode(r->private_data, &h);
	if (cp->private_data_len)
		memcpy(r->private_data + DROCE_CMA_HDR_LEN, cp->private_data, cp->private_data_len);
	droce_cm_send_msg(cm, c, &m);
	droce_cm_arm(cm, c, now, c->peer_timeout);
	return droce_cm_id_index(cm, c);
}

int droce_cm_accept(struct droce_cm *cm, uint64_t now, int id, const struct droce_cm_qp_attr *qp,
		    const void *pd, size_t pd_len)
{
	struct cm_id *c = get_id(cm, id);
	if (!c || !qp || pd_len > DROCE_CM_REP_PD_LEN || !qp_attr_ok(qp, false))
		return -EINVAL;
	if (c->state != DROCE_CM_REQ_RCVD && c->state != DROCE_CM_MRA_REQ_SENT)
		return -EBADFD;
	c->local = *qp;
	/* 12.6.8: what we accept can not exceed what the peer issues, and
	 * what we issue can not exceed what it accepts */
	if (c->local.responder_resources > c->remote.initiator_depth)
		c->local.responder_resources = c->remote.initiator_depth;
	if (c->local.initiator_depth > c->remote.responder_resources)
		c->local.initiator_depth = c->remote.responder_resources;
	c->local.path_mtu = c->remote.path_mtu;

	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REP, c->tid);
	struct droce_cm_rep *r = &m.u.rep;
	r->local_comm_id = c->lcid;
	r->remote_comm_id = c->rcid;
	r->local_qpn = c->local.qpn;
	r->starting_psn = c->local.start_psn;
	r->responder_resources = c->local.responder_resources;
	r->initiator_depth = c->local.initiator_depth;
	r->target_ack_delay = cm->p.target_ack_delay;
	r->rnr_retry_count = c->local.rnr_retry_count;
	r->srq = c->local.srq;
	r->local_ca_guid = cm->p.ca_guid;
	copy_pd(r->private_data, sizeof(r->private_data), pd, pd_len);
	droce_cm_send_msg(cm, c, &m);
	c->state = DROCE_CM_REP_SENT;
	c->retries = 0;
	droce_cm_arm(cm, c, now, c->peer_timeout);
	return 0;
}

int droce_cm_reject(struct droce_cm *cm, uint64_t now, int id, const void *pd, size_t pd_len)
{
	struct cm_id *c = get_id(cm, id);
	if (!c || pd_len > DROCE_CM_REJ_PD_LEN)
		return -EINVAL;
	uint8_t msg;
	if (c->state == DROCE_CM_REQ_RCVD || c->state == DROCE_CM_MRA_REQ_SENT)
		msg = DROCE_CM_MSG_REQ;
	else if (c->state == DROCE_CM_REP_RCVD || c->state == DROCE_CM_MRA_REP_SENT)
		msg = DROCE_CM_MSG_REP;
	else
		return -EBADFD;
	send_rej(cm, c, msg, DROCE_CM_REJ_CONSUMER_DEFINED, pd, pd_len);
	droce_cm_free_id(c);
	return 0;
}

int droce_cm_establish(struct droce_cm *cm, uint64_t now, int id)
{
	struct cm_id *c = get_id(cm, id);
	if (!c)
		return -EINVAL;
	if (c->state != DROCE_CM_REP_RCVD && c->state != DROCE_CM_MRA_REP_SENT)
		return -EBADFD;
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_RTU, c->tid);
	m.u.rtu.local_comm_id = c->lcid;
	m.u.rtu.remote_comm_id = c->rcid;
	droce_cm_send_msg(cm, c, &m);
	c->state = DROCE_CM_ESTABLISHED;
	c->deadline = 0;
	droce_cm_event_simple(cm, c, DROCE_CM_EV_ESTABLISHED, NULL, 0);
	return 0;
}

void droce_cm_send_dreq(struct droce_cm *cm, struct cm_id *c, uint64_t now)
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_DREQ, c->tid);
	m.u.dreq.local_comm_id = c->lcid;
	m.u.dreq.remote_comm_id = c->rcid;
	m.u.dreq.remote_qpn = c->remote.qpn;
	droce_cm_send_msg(cm, c, &m);
	c->state = DROCE_CM_DREQ_SENT;
	c->retries = 0;
	droce_cm_arm(cm, c, now, c->peer_timeout);
}

int droce_cm_comm_est(struct droce_cm *cm, uint64_t now, int id)
{
	struct cm_id *c = get_id(cm, id);
	if (!c)
		return -EINVAL;
	if (c->active || (c->state != DROCE_CM_REP_SENT && c->state != DROCE_CM_MRA_REP_RCVD))
		return -EBADFD;
	c->state = DROCE_CM_ESTABLISHED;
	c->deadline = 0;
	droce_cm_event_simple(cm, c, DROCE_CM_EV_ESTABLISHED, NULL, 0);
	return 0;
}

int droce_cm_disconnect(struct droce_cm *cm, uint64_t now, int id)
{
	struct cm_id *c = get_id(cm, id);
	if (!c)
		return -EINVAL;
	/* 12.9: a passive side still waiting for the RTU may disconnect */
	if (c->state != DROCE_CM_ESTABLISHED && c->state != DROCE_CM_REP_SENT &&
	    c->state != DROCE_CM_MRA_REP_RCVD)
		return -EBADFD;
	droce_cm_send_dreq(cm, c, now);
	return 0;
}

void droce_cm_enter_timewait(struct droce_cm *cm, struct cm_id *c, uint64_t now)
{
	c->state = DROCE_CM_TIMEWAIT;
	c->deadline = now + cm->p.timewait_ns;
	if (c->deadline == 0)
		c->deadline = 1;
}

static void expire(struct droce_cm *cm, struct cm_id *c, uint64_t now)
{
	if (c->state == DROCE_CM_TIMEWAIT) {
		/* the peer can no longer confuse an old packet with a new
		 * connection's: the QP may be reused */
		droce_cm_event_simple(cm, c, DROCE_CM_EV_TIMEWAIT_EXIT, NULL, 0);
		droce_cm_free_id(c);
		return;
	}
	if (c->retries < c->max_retries) {
		c->retries++;
		cm->st.retransmits++;
		if (c->state == DROCE_CM_MRA_REQ_RCVD)
			c->state = DROCE_CM_REQ_SENT;
		else if (c->state == DROCE_CM_MRA_REP_RCVD)
			c->state = DROCE_CM_REP_SENT;
		droce_cm_resend_last(cm, c);
		droce_cm_arm(cm, c, now, c->peer_timeout);
		return;
	}
	if (c->state == DROCE_CM_DREQ_SENT) {
		/* 12.9: no DREP is no reason to keep the QP: leave anyway */
		droce_cm_enter_timewait(cm, c, now);
		droce_cm_event_simple(cm, c, DROCE_CM_EV_DISCONNECTED, NULL, 0);
		return;
	}
	/* REQ or REP out of retries: tell the peer so it frees its side too
	 * (12.6.7.2 reason 4), then the consumer; never a half-open QP */
	struct droce_cm_event ev;
	droce_cm_event_init(&ev, DROCE_CM_EV_TIMEOUT, cm, c);
	send_rej(cm, c, c->state == DROCE_CM_REP_SENT || c->state == DROCE_CM_MRA_REP_RCVD
			 ? DROCE_CM_MSG_REP : DROCE_CM_MSG_REQ,
		 DROCE_CM_REJ_TIMEOUT, NULL, 0);
	droce_cm_push_event(cm, &ev);
	droce_cm_free_id(c);
}

void droce_cm_poll(struct droce_cm *cm, uint64_t now)
{
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *c = &cm->ids[i];
		if (c->state != DROCE_CM_IDLE && c->deadline && c->deadline <= now)
			expire(cm, c, now);
	}
}

uint64_t droce_cm_next_timer(const struct droce_cm *cm)
{
	uint64_t t = UINT64_MAX;
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		const struct cm_id *c = &cm->ids[i];
		if (c->state != DROCE_CM_IDLE && c->deadline && c->deadline < t)
			t = c->deadline;
	}
	return t;
}

unsigned droce_cm_mads_queued(const struct droce_cm *cm)
{
	return cm->mq_len;
}

int droce_cm_pop_mad(struct droce_cm *cm, struct droce_cm_out *out)
{
	if (!cm->mq_len)
		return 0;
	*out = cm->mq[cm->mq_head];
	cm->mq_head = (cm->mq_head + 1) % cm->p.mad_queue;
	cm->mq_len--;
	return 1;
}

int droce_cm_pop_event(struct droce_cm *cm, struct droce_cm_event *ev)
{
	if (!cm->eq_len)
		return 0;
	*ev = cm->eq[cm->eq_head];
	cm->eq_head = (cm->eq_head + 1) % cm->p.event_queue;
	cm->eq_len--;
	return 1;
}
