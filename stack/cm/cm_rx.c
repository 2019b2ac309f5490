/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM's incoming messages (IBTA vol 1 12.6, 12.9): one function per
 * message, each checking the states it is valid in (docs/cm.md has the
 * diagram), and droce_cm_input() that decodes a MAD and dispatches it.
 */
#include <errno.h>
#include <string.h>

#include "cm/cm.h"
#include "cm/cm_int.h"
#include "wire/bytes.h"

/* ---- incoming messages, one function each ---- */

static void req_to_remote(const struct droce_cm_req *r, struct droce_cm_qp_attr *q)
{
	memset(q, 0, sizeof(*q));
	q->qpn = r->local_qpn;
	q->start_psn = r->starting_psn;
	q->path_mtu = r->path_mtu;
	q->responder_resources = r->responder_resources;
	q->initiator_depth = r->initiator_depth;
	q->retry_count = r->retry_count;
	q->rnr_retry_count = r->rnr_retry_count;
	q->local_ack_timeout = r->primary.local_ack_timeout;
	q->srq = r->srq;
}

/* A REJ for a REQ that made no connection, within the REJ rate of its
 * source and of all sources: such answers cost us nothing to be asked for,
 * so a flood must not turn them into a flood of our own. */
static enum droce_cm_rx rej_unmatched(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				      const struct droce_cm_msg *m, uint16_t reason)
{
	if (!droce_cm_rej_allowed(cm, src, now))
		return DROCE_CM_RX_RATE_LIMITED;
	droce_cm_send_rej_unmatched(cm, src, m, reason);
	return DROCE_CM_RX_REJECTED;
}

static bool half_open(const struct cm_id *c)
{
	return !c->active && (c->state == DROCE_CM_REQ_RCVD || c->state == DROCE_CM_MRA_REQ_SENT ||
			      c->state == DROCE_CM_REP_SENT || c->state == DROCE_CM_MRA_REP_RCVD);
}

/* Make room for a new REQ: @p c, the oldest half-open connection (of the
 * REQ's source, or of all), ends as if its wait had run out: TIMEOUT to
 * the consumer, REJ 3 to its peer (within the REJ rate). A real peer
 * completes its handshake within a round trip and a consumer answers in
 * microseconds, so under a flood the oldest are the flood's own: dropping
 * them, not the newcomer, is what lets a real client in (the SYN queue's
 * rule). */
static void evict(struct droce_cm *cm, struct cm_id *c, uint64_t now)
{
	struct droce_cm_event ev;
	droce_cm_event_init(&ev, DROCE_CM_EV_TIMEOUT, cm, c);
	ev.reason = DROCE_CM_REJ_NO_RESOURCES;
	if (droce_cm_rej_allowed(cm, &c->peer, now))
		droce_cm_send_rej(cm, c, c->state == DROCE_CM_REP_SENT || c->state == DROCE_CM_MRA_REP_RCVD
					 ? DROCE_CM_MSG_REP : DROCE_CM_MSG_REQ,
				  DROCE_CM_REJ_NO_RESOURCES, NULL, 0);
	cm->st.evicted++;
	droce_cm_push_event(cm, &ev);
	droce_cm_free_id(c);
}

/* REQ_RCVD: the consumer answers within the service timeout an MRA would
 * promise; a resent REQ (answered with that MRA) moves the deadline on, but
 * never past four such spans after the first REQ. */
static void arm_req_rcvd(struct droce_cm *cm, struct cm_id *c, uint64_t now)
{
	uint64_t span = droce_cm_timeout_ns(cm->p.mra_service_timeout) + 2 * cm->p.packet_lifetime_ns;
	uint64_t end = c->born + 4 * span;
	droce_cm_arm(cm, c, now, cm->p.mra_service_timeout);
	if (c->deadline > end)
		c->deadline = end > now ? end : now + 1;
}

static enum droce_cm_rx rx_req(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *m)
{
	const struct droce_cm_req *r = &m->u.req;

	/* 12.9: a REQ we already have a connection for is a resend */
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *c = &cm->ids[i];
		if (c->state == DROCE_CM_IDLE || c->state == DROCE_CM_LISTEN || c->active ||
		    c->rcid != r->local_comm_id || c->remote_guid != r->local_ca_guid ||
		    !droce_cm_addr_eq(&c->peer, src))
			continue;
		switch (c->state) {
		case DROCE_CM_REQ_RCVD: {
			/* the consumer has not answered yet: ask the active side
			 * to wait (12.6.6) instead of resending */
			droce_cm_send_mra(cm, c, DROCE_CM_MSG_REQ);
			c->state = DROCE_CM_MRA_REQ_SENT;
			arm_req_rcvd(cm, c, now);
			cm->st.dup_answers++;
			return DROCE_CM_RX_DUPLICATE;
		}
		case DROCE_CM_MRA_REQ_SENT:
			arm_req_rcvd(cm, c, now);
			droce_cm_resend_last(cm, c);
			cm->st.dup_answers++;
			return DROCE_CM_RX_DUPLICATE;
		case DROCE_CM_REP_SENT:
		case DROCE_CM_MRA_REP_RCVD:
			/* the MRA or the REP was lost: send it again */
			droce_cm_resend_last(cm, c);
			cm->st.dup_answers++;
			return DROCE_CM_RX_DUPLICATE;
		case DROCE_CM_TIMEWAIT:
			/* 12.6.7.2 reason 10, 12.9: the connection is gone; a REQ for it is stale */
			return rej_unmatched(cm, now, src, m, DROCE_CM_REJ_STALE_CONN);
		default:
			return DROCE_CM_RX_DUPLICATE;
		}
	}

	/* 12.6.7.2 reason 10, 12.9: a new REQ from a QP we still hold a connection with (the
	 * peer restarted and lost it): refuse it as stale and end the old,
	 * half-open one, as the kernel's cm_match_req does */
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *c = &cm->ids[i];
		bool remote_known = c->state != DROCE_CM_IDLE && c->state != DROCE_CM_LISTEN &&
				    (!c->active || c->state >= DROCE_CM_REP_RCVD);
		if (!remote_known || c->remote.qpn != r->local_qpn || c->remote_guid != r->local_ca_guid ||
		    !droce_cm_addr_eq(&c->peer, src))
			continue;
		enum droce_cm_rx res = rej_unmatched(cm, now, src, m, DROCE_CM_REJ_STALE_CONN);
		if (c->state == DROCE_CM_ESTABLISHED)
			droce_cm_send_dreq(cm, c, now);
		return res;
	}

	uint16_t port;
	struct cm_id *l = NULL;
	if (droce_cm_sid_tcp_port(r->service_id, &port)) {
		for (unsigned i = 0; i < cm->p.max_ids && !l; i++)
			if (cm->ids[i].state == DROCE_CM_LISTEN && cm->ids[i].port == port)
				l = &cm->ids[i];
	}
	/* 12.6.7.2: nobody listens on that service ID -> reason 8, which
	 * rdma_cm turns into ECONNREFUSED */
	if (!l)
		return rej_unmatched(cm, now, src, m, DROCE_CM_REJ_INVALID_SERVICE_ID);
	if (r->transport_type != 0)
		return rej_unmatched(cm, now, src, m, DROCE_CM_REJ_INVALID_TRANSPORT_TYPE);
	/* A11: a TCP port-space REQ must start with the rdma_cm header
	 * naming our address; the kernel rejects others as consumer rejects */
	struct droce_cma_hdr h;
	if (droce_cma_hdr_decode(r->private_data, sizeof(r->private_data), &h) != 0 ||
	    h.ip_version != src->ip_version || memcmp(h.dst_ip, cm->p.local.ip, 16) != 0)
		return rej_unmatched(cm, now, src, m, DROCE_CM_REJ_CONSUMER_DEFINED);
	/* One source holds at most max_per_source of the max_half_open
	 * connections not yet established; a REQ beyond either limit takes
	 * the place of the oldest (of its source, or of all), so a flood, from
	 * one address or from spoofed ones, holds a bounded share for a
	 * bounded time and never locks a real client out (docs/security.md) */
	unsigned all = 0, mine = 0;
	struct cm_id *old_all = NULL, *old_mine = NULL;
	for (unsigned i = 0; i < cm->p.max_ids; i++) {
		struct cm_id *h = &cm->ids[i];
		if (!half_open(h))
			continue;
		all++;
		if (!old_all || h->born < old_all->born)
			old_all = h;
		if (droce_cm_addr_eq(&h->peer, src)) {
			mine++;
			if (!old_mine || h->born < old_mine->born)
				old_mine = h;
		}
	}
	if (mine >= cm->p.max_per_source) {
		evict(cm, old_mine, now);
		cm->st.evicted_source++;
	} else if (all >= cm->p.max_half_open) {
		evict(cm, old_all, now);
	}
	struct cm_id *c = droce_cm_alloc_id(cm, DROCE_CM_REQ_RCVD);
	/* 12.6.7.2 reason 3: no room (listeners, established connections and
	 * TIMEWAIT fill the table) */
	if (!c)
		return rej_unmatched(cm, now, src, m, DROCE_CM_REJ_NO_RESOURCES);
	c->active = false;
	c->peer = *src;
	c->port = port;
	c->src_port = h.src_port;
	c->rcid = r->local_comm_id;
	c->tid = m->hdr.tid;
	c->remote_guid = r->local_ca_guid;
	req_to_remote(r, &c->remote);
	/* our REP and DREQ are answered within the active side's local
	 * CM response timeout, and resent as often as it allows (12.6.5),
	 * within our own limits: a REQ asking for 2^31 * 4 us and 15 retries
	 * would hold the slot for hours */
	c->peer_timeout = droce_cm_peer_timeout(cm, r->local_cm_response_timeout);
	c->max_retries = r->max_cm_retries < cm->p.max_cm_retries ? r->max_cm_retries : cm->p.max_cm_retries;
	c->born = now;
	arm_req_rcvd(cm, c, now);

	struct droce_cm_event ev;
	droce_cm_event_init(&ev, DROCE_CM_EV_CONNECT_REQUEST, cm, c);
	ev.listen_id = droce_cm_id_index(cm, l);
	memcpy(ev.private_data, r->private_data + DROCE_CMA_HDR_LEN, DROCE_CMA_REQ_USER_PD_LEN);
	ev.private_data_len = DROCE_CMA_REQ_USER_PD_LEN;
	droce_cm_push_event(cm, &ev);
	return DROCE_CM_RX_OK;
}

/* The connection a reply names: its Remote Communication ID is our local ID. */
static enum droce_cm_rx match(struct droce_cm *cm, const struct droce_cm_addr *src, uint32_t our_id,
			      uint32_t their_id, bool their_id_known, struct cm_id **out)
{
	struct cm_id *c = droce_cm_find_lcid(cm, our_id);
	if (!c)
		return DROCE_CM_RX_NO_MATCH;
	if (!droce_cm_addr_eq(&c->peer, src) || (their_id_known && c->rcid != their_id))
		return DROCE_CM_RX_WRONG_PEER;
	*out = c;
	return DROCE_CM_RX_OK;
}

static enum droce_cm_rx rx_rep(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *m)
{
	const struct droce_cm_rep *r = &m->u.rep;
	struct cm_id *c;
	enum droce_cm_rx res = match(cm, src, r->remote_comm_id, 0, false, &c);
	if (res != DROCE_CM_RX_OK)
		return res;
	/* the first REP tells us the peer's ID (an MRA does not: see rx_mra) */
	bool first = c->state == DROCE_CM_REQ_SENT || c->state == DROCE_CM_MRA_REQ_RCVD;
	if (!first && c->rcid != r->local_comm_id)
		return DROCE_CM_RX_WRONG_PEER;
	if (!c->active)
		return DROCE_CM_RX_BAD_STATE;
	switch (c->state) {
	case DROCE_CM_REQ_SENT:
	case DROCE_CM_MRA_REQ_RCVD:
		break;
	case DROCE_CM_REP_RCVD: {
		/* the consumer has not confirmed yet: ask the passive side to
		 * wait (12.6.6, message REP) instead of resending */
		droce_cm_send_mra(cm, c, DROCE_CM_MSG_REP);
		c->state = DROCE_CM_MRA_REP_SENT;
		cm->st.dup_answers++;
		return DROCE_CM_RX_DUPLICATE;
	}
	case DROCE_CM_MRA_REP_SENT:
		droce_cm_resend_last(cm, c); /* the MRA was lost */
		cm->st.dup_answers++;
		return DROCE_CM_RX_DUPLICATE;
	case DROCE_CM_ESTABLISHED:
		/* 12.9: our RTU was lost; the REP comes again */
		if (c->last_attr == DROCE_CM_ATTR_RTU) {
			droce_cm_resend_last(cm, c);
			cm->st.dup_answers++;
		}
		return DROCE_CM_RX_DUPLICATE;
	default:
		return DROCE_CM_RX_DUPLICATE;
	}
	c->rcid = r->local_comm_id;
	c->remote_guid = r->local_ca_guid;
	memset(&c->remote, 0, sizeof(c->remote));
	c->remote.qpn = r->local_qpn;
	c->remote.start_psn = r->starting_psn;
	c->remote.path_mtu = c->local.path_mtu;
	c->remote.responder_resources = r->responder_resources;
	c->remote.initiator_depth = r->initiator_depth;
	c->remote.rnr_retry_count = r->rnr_retry_count;
	c->remote.srq = r->srq;
	c->state = DROCE_CM_REP_RCVD;
	c->deadline = 0;
	droce_cm_event_simple(cm, c, DROCE_CM_EV_CONNECT_RESPONSE, r->private_data,
			      sizeof(r->private_data));
	return DROCE_CM_RX_OK;
}

static enum droce_cm_rx rx_rtu(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *m)
{
	struct cm_id *c;
	enum droce_cm_rx res = match(cm, src, m->u.rtu.remote_comm_id, m->u.rtu.local_comm_id, true, &c);
	if (res != DROCE_CM_RX_OK)
		return res;
	if (c->active)
		return DROCE_CM_RX_BAD_STATE;
	if (c->state != DROCE_CM_REP_SENT && c->state != DROCE_CM_MRA_REP_RCVD)
		return c->state == DROCE_CM_ESTABLISHED ? DROCE_CM_RX_DUPLICATE : DROCE_CM_RX_BAD_STATE;
	c->state = DROCE_CM_ESTABLISHED;
	c->deadline = 0;
	droce_cm_event_simple(cm, c, DROCE_CM_EV_ESTABLISHED, NULL, 0);
	return DROCE_CM_RX_OK;
}

static enum droce_cm_rx rx_rej(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *m)
{
	const struct droce_cm_rej *r = &m->u.rej;
	struct cm_id *c = r->remote_comm_id ? droce_cm_find_lcid(cm, r->remote_comm_id) : NULL;
	if (!c && r->reason == DROCE_CM_REJ_TIMEOUT && r->rej_info_len >= 8) {
		/* an active side that timed out before it heard from us names
		 * us by nothing but its own ID and CA GUID (the ARI) */
		uint64_t guid = droce_get_be64(r->ari);
		for (unsigned i = 0; i < cm->p.max_ids && !c; i++) {
			struct cm_id *p = &cm->ids[i];
			if ((p->state == DROCE_CM_REQ_RCVD || p->state == DROCE_CM_MRA_REQ_SENT ||
			     p->state == DROCE_CM_REP_SENT || p->state == DROCE_CM_MRA_REP_RCVD) &&
			    p->rcid == r->local_comm_id && p->remote_guid == guid && droce_cm_addr_eq(&p->peer, src))
				c = p;
		}
	}
	if (!c)
		return DROCE_CM_RX_NO_MATCH;
	if (!droce_cm_addr_eq(&c->peer, src))
		return DROCE_CM_RX_WRONG_PEER;
	/* a REJ of our REQ comes before we know the peer's ID (it may be 0) */
	bool before_rep = c->state == DROCE_CM_REQ_SENT || c->state == DROCE_CM_MRA_REQ_RCVD;
	if (!before_rep && r->local_comm_id != c->rcid)
		return DROCE_CM_RX_WRONG_PEER;
	switch (c->state) {
	case DROCE_CM_REQ_SENT:
	case DROCE_CM_MRA_REQ_RCVD:
	case DROCE_CM_REP_RCVD:
	case DROCE_CM_MRA_REP_SENT:
	case DROCE_CM_REP_SENT:
	case DROCE_CM_MRA_REP_RCVD:
	case DROCE_CM_MRA_REQ_SENT:
	case DROCE_CM_REQ_RCVD: {
		struct droce_cm_event ev;
		droce_cm_event_init(&ev, DROCE_CM_EV_REJECTED, cm, c);
		ev.reason = r->reason;
		memcpy(ev.private_data, r->private_data, sizeof(r->private_data));
		ev.private_data_len = sizeof(r->private_data);
		droce_cm_push_event(cm, &ev);
		droce_cm_free_id(c);
		return DROCE_CM_RX_OK;
	}
	case DROCE_CM_ESTABLISHED:
		/* every RTU was lost and the passive side gave up on its REP
		 * (12.9: REJ, timeout), or it holds the connection stale:
		 * leaving would be a half-open QP, so we disconnect too */
		if (c->active && r->msg_rejected == DROCE_CM_MSG_REP &&
		    (r->reason == DROCE_CM_REJ_TIMEOUT || r->reason == DROCE_CM_REJ_STALE_CONN)) {
			struct droce_cm_event ev;
			droce_cm_enter_timewait(cm, c, now);
			droce_cm_event_init(&ev, DROCE_CM_EV_DISCONNECTED, cm, c);
			ev.reason = r->reason;
			droce_cm_push_event(cm, &ev);
			return DROCE_CM_RX_OK;
		}
		return DROCE_CM_RX_BAD_STATE;
	default:
		return DROCE_CM_RX_BAD_STATE;
	}
}

static enum droce_cm_rx rx_mra(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			       const struct droce_cm_msg *m)
{
	const struct droce_cm_mra *r = &m->u.mra;
	struct cm_id *c;
	enum droce_cm_rx res = match(cm, src, r->remote_comm_id, 0, false, &c);
	if (res != DROCE_CM_RX_OK)
		return res;
	/* An MRA only moves our timer, and never beyond max_peer_timeout. Its
	 * Local Communication ID is not kept as the peer's: anyone who saw
	 * (or guessed) our ID could send it, and the REP that followed from
	 * the real peer would then not match (Linux's cm_mra_handler keeps
	 * nothing of it either; the REP names the peer, 12.6.8). */
	uint8_t wait = droce_cm_peer_timeout(cm, r->service_timeout);
	if (c->state == DROCE_CM_REQ_SENT && r->msg_mraed == DROCE_CM_MSG_REQ) {
		/* 12.6.6: the passive side answers within the service timeout;
		 * stop resending the REQ until then */
		c->state = DROCE_CM_MRA_REQ_RCVD;
		droce_cm_arm(cm, c, now, wait);
		return DROCE_CM_RX_OK;
	}
	if (c->state == DROCE_CM_MRA_REQ_RCVD && r->msg_mraed == DROCE_CM_MSG_REQ) {
		droce_cm_arm(cm, c, now, wait);
		return DROCE_CM_RX_DUPLICATE;
	}
	/* the same for our REP, from an active side slow to confirm it */
	if ((c->state == DROCE_CM_REP_SENT || c->state == DROCE_CM_MRA_REP_RCVD) && !c->active &&
	    r->msg_mraed == DROCE_CM_MSG_REP && r->local_comm_id == c->rcid) {
		bool dup = c->state == DROCE_CM_MRA_REP_RCVD;
		c->state = DROCE_CM_MRA_REP_RCVD;
		droce_cm_arm(cm, c, now, wait);
		return dup ? DROCE_CM_RX_DUPLICATE : DROCE_CM_RX_OK;
	}
	return DROCE_CM_RX_BAD_STATE;
}

static void send_drep(struct droce_cm *cm, struct cm_id *c)
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_DREP, c->tid);
	m.u.drep.local_comm_id = c->lcid;
	m.u.drep.remote_comm_id = c->rcid;
	droce_cm_send_msg(cm, c, &m);
}

static enum droce_cm_rx rx_dreq(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				const struct droce_cm_msg *m)
{
	struct cm_id *c;
	enum droce_cm_rx res = match(cm, src, m->u.dreq.remote_comm_id, m->u.dreq.local_comm_id, true, &c);
	if (res != DROCE_CM_RX_OK)
		return res;
	switch (c->state) {
	case DROCE_CM_REP_SENT:    /* RTU lost, the active side already leaves */
	case DROCE_CM_MRA_REP_RCVD:
	case DROCE_CM_REP_RCVD:    /* the passive side left before our RTU */
	case DROCE_CM_MRA_REP_SENT:
	case DROCE_CM_ESTABLISHED:
	case DROCE_CM_DREQ_SENT:   /* both sides disconnect at once (12.9) */
		send_drep(cm, c);
		droce_cm_enter_timewait(cm, c, now);
		droce_cm_event_simple(cm, c, DROCE_CM_EV_DISCONNECTED, m->u.dreq.private_data,
			     sizeof(m->u.dreq.private_data));
		return DROCE_CM_RX_OK;
	case DROCE_CM_TIMEWAIT:
		/* 12.9: our DREP was lost; answer the resent DREQ */
		if (c->last_attr == DROCE_CM_ATTR_DREP)
			droce_cm_resend_last(cm, c);
		else
			send_drep(cm, c);
		cm->st.dup_answers++;
		return DROCE_CM_RX_DUPLICATE;
	default:
		return DROCE_CM_RX_BAD_STATE;
	}
}

static enum droce_cm_rx rx_drep(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				const struct droce_cm_msg *m)
{
	struct cm_id *c;
	enum droce_cm_rx res = match(cm, src, m->u.drep.remote_comm_id, m->u.drep.local_comm_id, true, &c);
	if (res != DROCE_CM_RX_OK)
		return res;
	if (c->state == DROCE_CM_TIMEWAIT)
		return DROCE_CM_RX_DUPLICATE;
	if (c->state != DROCE_CM_DREQ_SENT)
		return DROCE_CM_RX_BAD_STATE;
	droce_cm_enter_timewait(cm, c, now);
	droce_cm_event_simple(cm, c, DROCE_CM_EV_DISCONNECTED, NULL, 0);
	return DROCE_CM_RX_OK;
}

static enum droce_cm_rx input(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
			      uint32_t qkey, const uint8_t *mad, size_t len)
{
	/* IBTA ch. 13 (GSI): QP1 only takes datagrams with the well-known Q_Key */
	if (qkey != DROCE_QP1_QKEY)
		return DROCE_CM_RX_BAD_QKEY;
	if (!src || !droce_cm_addr_ok(src))
		return DROCE_CM_RX_BAD_ADDR;
	struct droce_cm_msg m;
	enum droce_mad_result r = droce_mad_decode(mad, len, &m);
	if (r != DROCE_MAD_OK) {
		cm->st.mad_bad[r]++;
		return DROCE_CM_RX_BAD_MAD;
	}
	switch (m.hdr.attr_id) {
	case DROCE_CM_ATTR_REQ: return rx_req(cm, now, src, &m);
	case DROCE_CM_ATTR_REP: return rx_rep(cm, now, src, &m);
	case DROCE_CM_ATTR_RTU: return rx_rtu(cm, now, src, &m);
	case DROCE_CM_ATTR_REJ: return rx_rej(cm, now, src, &m);
	case DROCE_CM_ATTR_MRA: return rx_mra(cm, now, src, &m);
	case DROCE_CM_ATTR_DREQ: return rx_dreq(cm, now, src, &m);
	default: return rx_drep(cm, now, src, &m);
	}
}

enum droce_cm_rx droce_cm_input_hw(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				   const uint8_t *src_hw, uint32_t qkey, const uint8_t *mad, size_t len)
{
	cm->in_hw = src_hw;
	enum droce_cm_rx r = input(cm, now, src, qkey, mad, len);
	cm->in_hw = NULL;
	cm->st.rx++;
	cm->st.rx_result[r]++;
	return r;
}

enum droce_cm_rx droce_cm_input(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				uint32_t qkey, const uint8_t *mad, size_t len)
{
	return droce_cm_input_hw(cm, now, src, NULL, qkey, mad, len);
}

/* ---- timers ---- */

/* A REQ, REP or DREQ went unanswered for its timeout (12.9). */
