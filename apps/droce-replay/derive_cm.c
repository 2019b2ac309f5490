/* SPDX-License-Identifier: BSD-3-Clause */
#include "derive_cm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cm/mad.h"
#include "wire/opcode.h"
#include "wire/parse.h"

/* The connection a MAD names by a comm ID (either side's), or NULL. */
static struct droce_rp_cm_conn *by_ids(struct droce_rp_cm *cm, const uint8_t *peer,
				       uint32_t local, uint32_t remote)
{
	for (unsigned i = 0; i < cm->n; i++) {
		struct droce_rp_cm_conn *c = &cm->c[i];
		if (memcmp(c->peer_ip, peer, 16))
			continue;
		if ((c->req_comm_id == local && c->rep_comm_id == remote) ||
		    (c->rep_comm_id == local && c->req_comm_id == remote))
			return c;
	}
	return NULL;
}

int droce_rp_cm_add(struct droce_rp_cm *cm, const struct droce_pkt *p, unsigned num,
		    const uint8_t side_ip[16], char *err, size_t errlen)
{
	const struct droce_net_fields *n = &p->h.net;
	struct droce_cm_msg m;

	if (!p->op || p->h.bth.opcode != DROCE_OP_UD_SEND_ONLY || p->h.bth.dqpn != DROCE_QP1 ||
	    !p->payload)
		return 0;
	bool from_side = !memcmp(n->src_ip, side_ip, 16);
	if (!from_side && memcmp(n->dst_ip, side_ip, 16))
		return 0;
	/* A MAD the CM would drop (counted, 13.4) leaves no trace in the
	 * handshake: the retry that follows it does. */
	if (droce_mad_decode(p->payload, p->h.payload_len, &m) != DROCE_MAD_OK)
		return 0;
	cm->mads++;
	const uint8_t *peer = from_side ? n->dst_ip : n->src_ip;
	struct droce_rp_cm_conn *c;

	switch (m.hdr.attr_id) {
	case DROCE_CM_ATTR_REQ: /* 12.6.5; a resent REQ (12.9.7) repeats the first */
		for (unsigned i = 0; i < cm->n; i++) {
			c = &cm->c[i];
			if (!memcmp(c->peer_ip, peer, 16) && c->req_comm_id == m.u.req.local_comm_id &&
			    c->active == from_side) {
				if ((from_side ? c->side_qpn : c->peer_qpn) != m.u.req.local_qpn)
					goto bad_resend;
				return 0;
			}
		}
		if (cm->n == DROCE_RP_CM_MAX) {
			snprintf(err, errlen, "frame %u: more than %d rdma_cm connections", num,
				 DROCE_RP_CM_MAX);
			return -EINVAL;
		}
		c = &cm->c[cm->n++];
		memset(c, 0, sizeof(*c));
		c->active = from_side;
		memcpy(c->peer_ip, peer, 16);
		c->req_frame = num;
		c->req_comm_id = m.u.req.local_comm_id;
		c->tid = m.hdr.tid;
		c->path_mtu = m.u.req.path_mtu;
		if (from_side) {
			c->side_qpn = m.u.req.local_qpn;
			c->side_rq_psn = m.u.req.starting_psn;
		} else {
			c->peer_qpn = m.u.req.local_qpn;
			c->side_sq_psn = m.u.req.starting_psn;
		}
		return 0;
	case DROCE_CM_ATTR_REP: /* 12.6.8: answers the REQ its remote comm ID names */
		c = NULL;
		for (unsigned i = 0; i < cm->n; i++)
			if (!memcmp(cm->c[i].peer_ip, peer, 16) &&
			    cm->c[i].req_comm_id == m.u.rep.remote_comm_id &&
			    cm->c[i].active != from_side)
				c = &cm->c[i];
		if (!c) {
			snprintf(err, errlen, "frame %u: a REP for comm ID %#x, which no REQ of the "
				 "capture sent", num, m.u.rep.remote_comm_id);
			return -EINVAL;
		}
		if (m.hdr.tid != c->tid) {
			snprintf(err, errlen, "frame %u: the REP's transaction ID %#llx is not its "
				 "REQ's (frame %u, %#llx)", num, (unsigned long long)m.hdr.tid,
				 c->req_frame, (unsigned long long)c->tid);
			return -EINVAL;
		}
		if (c->rep_frame) {
			if (c->rep_comm_id != m.u.rep.local_comm_id ||
			    (from_side ? c->side_qpn : c->peer_qpn) != m.u.rep.local_qpn)
				goto bad_resend;
			return 0;
		}
		c->rep_frame = num;
		c->rep_comm_id = m.u.rep.local_comm_id;
		if (from_side) {
			c->side_qpn = m.u.rep.local_qpn;
			c->side_rq_psn = m.u.rep.starting_psn;
		} else {
			c->peer_qpn = m.u.rep.local_qpn;
			c->side_sq_psn = m.u.rep.starting_psn;
		}
		return 0;
	case DROCE_CM_ATTR_REJ: /* 12.6.7: may answer a REQ before any REP */
		for (unsigned i = 0; i < cm->n; i++)
			if (!memcmp(cm->c[i].peer_ip, peer, 16) &&
			    (cm->c[i].req_comm_id == m.u.rej.remote_comm_id ||
			     cm->c[i].rep_comm_id == m.u.rej.remote_comm_id)) {
				cm->c[i].rej_frame = num;
				cm->c[i].rej_reason = m.u.rej.reason;
				return 0;
			}
		return 0; /* a REJ for a REQ outside the capture */
	case DROCE_CM_ATTR_RTU:
	case DROCE_CM_ATTR_DREQ:
	case DROCE_CM_ATTR_DREP: {
		/* RTU, DREQ and DREP share the two comm IDs' offsets (12.6.9-11) */
		uint32_t l = m.u.rtu.local_comm_id, r = m.u.rtu.remote_comm_id;
		if (m.hdr.attr_id == DROCE_CM_ATTR_DREQ)
			l = m.u.dreq.local_comm_id, r = m.u.dreq.remote_comm_id;
		c = by_ids(cm, peer, l, r);
		if (!c || !c->rep_frame) {
			snprintf(err, errlen, "frame %u: %s with comm IDs %#x/%#x, which no REQ/REP "
				 "of the capture set up", num, droce_cm_attr_name(m.hdr.attr_id), l, r);
			return -EINVAL;
		}
		if (m.hdr.attr_id == DROCE_CM_ATTR_RTU) {
			c->rtu_frame = num;
		} else if (m.hdr.attr_id == DROCE_CM_ATTR_DREP) {
			c->drep_frame = num;
		} else {
			/* 12.6.10: the DREQ names the receiver's QP */
			uint32_t want = from_side ? c->peer_qpn : c->side_qpn;
			if (m.u.dreq.remote_qpn != want) {
				snprintf(err, errlen, "frame %u: a DREQ for QPN %#x; its connection's "
					 "QP there is %#x (frames %u/%u)", num, m.u.dreq.remote_qpn,
					 want, c->req_frame, c->rep_frame);
				return -EINVAL;
			}
			c->dreq_frame = num;
		}
		return 0;
	}
	default:
		return 0; /* MRA: only timing */
	}
bad_resend:
	snprintf(err, errlen, "frame %u: a resent %s that differs from the first (frame %u)", num,
		 droce_cm_attr_name(m.hdr.attr_id),
		 m.hdr.attr_id == DROCE_CM_ATTR_REQ ? c->req_frame : c->rep_frame);
	return -EINVAL;
}
