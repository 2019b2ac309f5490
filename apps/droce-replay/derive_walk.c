/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: the walk over the capture: the peer's requests and responses, the side's answers (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ack_by_peer(struct conn *c, uint32_t psn)
{
	if (!c->any_acked_by_peer || psn_lt(c->acked_by_peer, psn))
		c->acked_by_peer = psn;
	c->any_acked_by_peer = true;
}

/* The peer's response to the side's request. */
static int peer_response(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (oi->hdrs & DROCE_HDR_AETH) {
		uint8_t syn = a->p.h.ext.aeth.syndrome;
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK &&
		    (syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR)
			c->error_nak = true;
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK && oi->flags & DROCE_OPF_ACK)
			ack_by_peer(c, psn);
		if ((syn & DROCE_AETH_TYPE_MASK) == DROCE_AETH_NAK &&
		    (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR)
			ack_by_peer(c, psn_add(psn, DROCE_PSN_MASK)); /* 9.7.5.2.2: acks up to PSN-1 */
	}
	if (oi->flags & DROCE_OPF_READ) {
		int mi = drv_find_msg(d, a->conn, true, psn, true);
		if (mi < 0 || d->msgs[mi].kind != M_READ)
			return 0; /* a response to nothing we know: droce will drop it */
		struct msg *m = &d->msgs[mi];
		size_t off = (size_t)((psn - m->first_psn) & DROCE_PSN_MASK) * c->mtu;
		size_t n = a->p.h.payload_len;
		if (off <= m->dma_len && n <= m->dma_len - off) {
			memcpy(m->data + off, a->p.payload, n);
			if (off + n > m->len)
				m->len = off + n;
		}
		if (oi->flags & DROCE_OPF_LAST)
			ack_by_peer(c, psn);
	}
	if (oi->hdrs & DROCE_HDR_AACK) {
		int mi = drv_find_msg(d, a->conn, true, psn, false);
		if (mi >= 0) {
			d->msgs[mi].orig = a->p.h.ext.atomic_ack;
			d->msgs[mi].has_orig = true;
		}
		ack_by_peer(c, psn);
	}
	return 0;
}

/*
 * Did the side prompt the peer's resend @p a of a request whose first frame
 * is @p since (a NAK, an RNR NAK, a READ response or atomic ACK out of order
 * for it)? If not, the peer's ACK timer fired: the side's answer to the
 * original, which the capture does not show, was lost on the way.
 */
bool drv_prompted(struct dctx *d, const struct fr *a, size_t since)
{
	for (size_t j = since; j < d->nfr && &d->fr[j] != a; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_OWN || b->conn != a->conn || !b->p.op ||
		    (b->p.op->flags & (DROCE_OPF_REQ | DROCE_OPF_CNP)))
			continue;
		bool nak = (b->p.op->hdrs & DROCE_HDR_AETH) &&
			   (b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK;
		if (nak || b->p.h.bth.opcode != DROCE_OP_RC_ACKNOWLEDGE)
			return true; /* a NAK, a READ response, an atomic ACK */
	}
	return false;
}

/*
 * The peer asks again for a READ or an atomic the side has answered: every
 * response packet of it the capture has not shown was sent and lost before
 * the capture point (the side answers a READ whole, 9.7.4.1.2, before it
 * takes the next request). droce sends them; they are not compared.
 */
static int lost_answers(struct dctx *d, const struct fr *a)
{
	int mi = drv_find_msg(d, a->conn, false, a->p.h.bth.psn, true);
	if (mi < 0 || (d->msgs[mi].kind != M_READ && d->msgs[mi].kind != M_CAS &&
		       d->msgs[mi].kind != M_FAA))
		return 0;
	/* Only when the side had begun to answer the original: one it has
	 * not answered yet (a slow responder, a capture far from it) is
	 * answered now, nothing of it was lost. Settled when the side starts
	 * answering the duplicate: answers to the original may still follow
	 * in the capture (they crossed the request on the wire). */
	struct msg *m = &d->msgs[mi];
	if (m->resp_started || !drv_prompted(d, a, m->first_idx)) {
		m->dup_pending = true;
		m->dup_psn = a->p.h.bth.psn;
	}
	return 0;
}

/* The side starts answering a duplicate of message @p m: whatever it never showed of the original was lost. */
static int settle_dup(struct dctx *d, struct msg *m, uint32_t psn)
{
	if (!m->dup_pending || psn != m->dup_psn)
		return 0;
	m->dup_pending = false;
	uint32_t from = m->resp_started ? m->resp_next : m->first_psn;
	for (uint32_t q = from; !psn_lt(m->last_psn, q) && !psn_lt(q, m->first_psn); q = psn_add(q, 1)) {
		unsigned *n = drv_count_of(d, m->conn, true, q);
		if (!n)
			return -ENOMEM;
		if (!*n && drv_add_lost(d, m->conn, true, q))
			return -ENOMEM;
		if (q == m->last_psn)
			break;
	}
	m->resp_next = psn;
	return 0;
}

/* The peer's request to the side: droce answers it as a responder. */
static int peer_request(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (!c->peer_started) {
		c->peer_started = true;
		c->rq_psn = c->peer_next = c->rq_early ? c->rq_min : psn;
	}
	if (c->resp_dead)
		return 0; /* after an error NAK the QP is in ERR: nothing executes (9.7.5.2.x class C) */
	if (psn != c->peer_next && psn_lt(psn, c->peer_next) &&
	    (oi->flags & (DROCE_OPF_READ | DROCE_OPF_ATOMIC)))
		return lost_answers(d, a);
	if (psn != c->peer_next)
		return 0; /* duplicate or out of sequence: no new work for the side */
	unsigned fl = oi->flags;
	int mi;
	if (fl & DROCE_OPF_FIRST) {
		if ((mi = drv_new_msg(d, a->conn, false, drv_kind_of(oi, a->p.h.bth.opcode), a)) < 0)
			return -ENOMEM;
		c->cur_peer = mi;
	} else {
		mi = c->cur_peer;
		if (mi < 0)
			return 0; /* droce will NAK it as an invalid request */
	}
	struct msg *m = &d->msgs[mi];
	m->last_psn = psn;
	c->peer_next = psn_add(psn, 1);
	drv_msg_take_ext(m, a, oi);
	/* A SEND with invalidate is still a SEND for the receive queue; how the
	 * side answered it (droce NAKs it: no memory windows) is in the capture. */
	if (fl & DROCE_OPF_WRITE)
		drv_store(d, drv_region_of(d, m->rkey), m->va + m->len, a->p.payload, a->p.h.payload_len);
	if ((fl & DROCE_OPF_PAYLOAD) && drv_msg_append(m, a->p.payload, a->p.h.payload_len))
		return -ENOMEM;
	m->req_seq = d->seq;
	if (fl & DROCE_OPF_READ) {
		c->peer_next = psn_add(psn, drv_npkts(m->dma_len, c->mtu));
		m->last_psn = psn_add(psn, drv_npkts(m->dma_len, c->mtu) - 1);
	}
	if (fl & DROCE_OPF_LAST) {
		m->complete = true;
		c->cur_peer = -1;
	}
	return 0;
}

/*
 * The side answers @p a (an ACK of its PSN, or a NAK or RNR NAK at it) and
 * so had taken every PSN up to @p upto, but the walk is behind: the side
 * took copies the capture showed earlier, when the walk, as the side then,
 * could not (refused for want of a receive, out of sequence). netem held
 * them behind the capture point until after the side's last refusal. Take
 * the latest copy of each missing PSN (all copies are the same packet,
 * 9.7.1) as the side did, just before its answer, and have the replay
 * deliver it then: fed when captured, droce would refuse it again.
 */
static int peer_request(struct dctx *d, struct fr *a);

static int catch_up(struct dctx *d, const struct fr *a, uint32_t upto)
{
	struct conn *c = &d->conns[a->conn];
	size_t idx = (size_t)(a - d->fr);
	while (c->peer_started && !c->resp_dead && !psn_lt(upto, c->peer_next) &&
	       ((upto - c->peer_next) & DROCE_PSN_MASK) <= EARLY_MAX) {
		size_t j = idx;
		while (j-- > 0) {
			const struct fr *b = &d->fr[j];
			if (b->conn == a->conn && b->role == DROCE_RP_PEER && b->p.op &&
			    b->r == DROCE_PARSE_OK && !b->gone && (b->p.op->flags & DROCE_OPF_REQ) &&
			    b->p.h.bth.psn == c->peer_next)
				break;
		}
		if (j == (size_t)-1)
			return 0; /* no copy to take: the MSN check says what is missing */
		uint32_t was = c->peer_next;
		int r = peer_request(d, &d->fr[j]);
		if (r)
			return r;
		if (c->peer_next == was)
			return 0;
		if (drv_set_deliver(d, j, a->f->t_ns, true))
			return -ENOMEM;
	}
	return 0;
}

/* The side's own response: what droce must answer. */
int drv_own_response(struct dctx *d, struct fr *a)
{
	struct conn *c = &d->conns[a->conn];
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t psn = a->p.h.bth.psn;
	if (oi->hdrs & DROCE_HDR_AETH) {
		uint8_t syn = a->p.h.ext.aeth.syndrome;
		uint8_t kind = syn & DROCE_AETH_TYPE_MASK;
		uint32_t msn = a->p.h.ext.aeth.msn & DROCE_PSN_MASK;
		/* MSN counts the messages the side completed (9.7.5.1.1). An RNR
		 * NAK with less than the side already sent was overtaken on the
		 * wire (netem reorders in front of the capture): the message it
		 * refused was taken since, the NAK changes nothing now. */
		bool stale = c->any_msn && psn_lt(msn, c->msn_max);
		if (!c->any_msn || psn_lt(c->msn_max, msn))
			c->msn_max = msn;
		c->any_msn = true;
		if (a->p.h.bth.opcode == DROCE_OP_RC_ACKNOWLEDGE && !stale &&
		    (kind != DROCE_AETH_NAK || (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR)) {
			int r = catch_up(d, a, kind == DROCE_AETH_ACK ? psn : psn_add(psn, DROCE_PSN_MASK));
			if (r)
				return r;
		}
		if (kind == DROCE_AETH_RNR_NAK && stale) {
			c->rnr_seen = true;
			c->min_rnr_timer = syn & DROCE_AETH_VALUE_MASK;
		} else if (kind == DROCE_AETH_RNR_NAK) {
			/* The side had no receive posted: the message at this PSN
			 * was not taken; its retry is new work and its receive
			 * must be posted only after this NAK (9.7.5.2.8). */
			int mi = drv_find_msg(d, a->conn, false, psn, true);
			if (mi < 0)
				mi = drv_find_refused(d, a->conn, psn);
			struct msg *rm = mi >= 0 ? &d->msgs[mi] : NULL;
			if (rm && rm->first_psn != psn) {
				/* a WRITE with immediate refused at its LAST: its
				 * FIRST and MIDDLE were placed, the message goes on
				 * with the LAST's resend (9.7.5.2.8: the WQE is
				 * needed only there) */
				rm->rnr = true;
				rm->complete = false;
				rm->last_psn = psn_add(psn, DROCE_PSN_MASK);
				size_t placed = (size_t)((psn - rm->first_psn) & DROCE_PSN_MASK) * c->mtu;
				if (placed < rm->len)
					rm->len = placed;
			} else if (rm) {
				rm->dropped = true;
				rm->rnr = true;
			}
			/* Nor were the messages after it that the capture shows
			 * reaching the side before its NAK: out of sequence now
			 * (9.7.5.2.8), their resends are the messages. */
			for (size_t k = 0; k < d->nmsgs; k++) {
				struct msg *o = &d->msgs[k];
				if (!o->own && o->conn == a->conn && !o->dropped && psn_lt(psn, o->first_psn) &&
				    ((o->first_psn - psn) & DROCE_PSN_MASK) <= EARLY_MAX)
					o->dropped = true;
			}
			c->rnr_seen = true;
			c->min_rnr_timer = syn & DROCE_AETH_VALUE_MASK;
			c->peer_next = psn;
			c->cur_peer = rm && !rm->dropped ? mi : -1;
			if (mi >= 0)
				d->msgs[mi].rnr_t = a->f->t_ns;
		} else if (kind == DROCE_AETH_NAK) {
			if ((syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR) {
				c->error_nak = true;
				c->resp_dead = true;
				int mi = drv_find_msg(d, a->conn, false, psn, true);
				if (mi >= 0) {
					struct msg *m = &d->msgs[mi];
					m->dropped = true;
					/* responders look for the receive before the
					 * length (rxe's order, droce's): an error NAK at a
					 * packet that needs one means it had one */
					m->err_recv = psn == m->last_psn && m->complete &&
						      (m->kind == M_SEND || (m->kind == M_WRITE && m->has_imm));
				}
			}
		} else if (oi->flags & DROCE_OPF_ACK) {
			if (!c->any_acked_by_own || psn_lt(c->acked_by_own, psn))
				c->acked_by_own = psn;
			c->any_acked_by_own = true;
		}
	}
	if (oi->flags & DROCE_OPF_READ) {
		int mi = drv_find_msg(d, a->conn, false, psn, true);
		if (mi < 0 || d->msgs[mi].kind != M_READ)
			return 0;
		struct msg *m = &d->msgs[mi];
		/* Response packets skipped within the READ were lost before
		 * the capture point (a READ is answered in order, 9.7.4.1.2). */
		if (!m->resp_started) {
			m->resp_started = true;
			m->resp_next = m->first_psn;
		}
		size_t off = (size_t)((psn - m->first_psn) & DROCE_PSN_MASK) * c->mtu;
		struct region *r = drv_region_of(d, m->rkey);
		if (psn_lt(psn, m->resp_next)) {
			/* before taking it as the answer to a duplicate */
			struct dlost *l = drv_arrived_late(d, (size_t)(a - d->fr), true, m->resp_next);
			if (l) {
				l->late = a->f->num; /* delayed, not lost: its copy is counted */
				long k = drv_learn(d, r, m->va + off, a->p.payload, a->p.h.payload_len,
					       m->req_seq);
				return k >= 0 ? drv_off_wire(d, a, r, m->va + off, k) : 0;
			}
			c->resp_epoch++; /* answered again */
		}
		if (settle_dup(d, m, psn))
			return -ENOMEM;
		if (psn != m->resp_next && !psn_lt(psn, m->resp_next))
			for (uint32_t q = m->resp_next; q != psn; q = psn_add(q, 1))
				if (drv_add_lost(d, a->conn, true, q))
					return -ENOMEM;
		unsigned *cnt = drv_count_of(d, a->conn, true, psn);
		if (!cnt)
			return -ENOMEM;
		(*cnt)++;
		if (!psn_lt(psn_add(psn, 1), m->resp_next))
			m->resp_next = psn_add(psn, 1);
		long k = drv_learn(d, r, m->va + off, a->p.payload, a->p.h.payload_len, m->req_seq);
		if (k >= 0)
			return drv_off_wire(d, a, r, m->va + off, k);
	}
	if (oi->hdrs & DROCE_HDR_AACK) {
		int mi = drv_find_msg(d, a->conn, false, psn, false);
		if (mi < 0)
			return 0;
		struct msg *m = &d->msgs[mi];
		if (settle_dup(d, m, psn))
			return -ENOMEM;
		if (!m->resp_started) {
			m->resp_started = true;
			m->resp_next = psn_add(psn, 1);
		}
		unsigned *cnt = drv_count_of(d, a->conn, true, psn);
		if (!cnt)
			return -ENOMEM;
		(*cnt)++;
		struct region *r = drv_region_of(d, m->rkey);
		uint8_t b[8];
		drv_put_le64(b, a->p.h.ext.atomic_ack);
		if (!m->applied && drv_learn(d, r, m->va, b, 8, m->req_seq) >= 0)
			return drv_dfail(d, "frame %u: the atomic's original value %#" PRIx64 " is not what the "
				     "capture left at %#" PRIx64 " (rkey %#x): memory changed off the wire, "
				     "which a replay cannot reproduce", a->f->num, a->p.h.ext.atomic_ack,
				     m->va, m->rkey);
		if (!m->applied && r && m->va >= r->lo && m->va + 8 <= r->hi) {
			/* Execute once, duplicates answer from the cache (9.4.5). */
			uint64_t cur = drv_le64(r->shadow + (m->va - r->lo));
			uint64_t nv = m->kind == M_CAS ? (cur == m->compare ? m->swap_add : cur)
						       : cur + m->swap_add;
			drv_put_le64(b, nv);
			drv_store(d, r, m->va, b, 8);
			m->applied = true;
		}
	}
	return 0;
}

/*
 * What the side's acknowledgements say it completed must be what the model
 * holds. Each ACK, RNR NAK and PSN-sequence NAK carries the side's MSN: the
 * number of the peer's messages it had completed (9.7.5.1.1), all of them
 * ending at or before an ACK's PSN (before a NAK's: 9.7.5.2.2). A receive
 * is posted for each completed SEND and WRITE with immediate, so a count
 * that disagrees means the walk lost or invented a message, whose receive
 * would be missing or extra in the scenario; say where instead of writing
 * a scenario droce cannot replay. The first such frame on a connection
 * gives the MSN the capture starts from (a capture may begin mid-way).
 */
int drv_check_msns(struct dctx *d)
{
	for (unsigned ci = 0; ci < d->nconns; ci++) {
		bool based = false;
		uint32_t base = 0;
		for (size_t i = 0; i < d->nfr; i++) {
			const struct fr *a = &d->fr[i];
			if (a->conn != (int)ci || a->role != DROCE_RP_OWN || !a->p.op ||
			    a->r != DROCE_PARSE_OK || a->p.h.bth.opcode != DROCE_OP_RC_ACKNOWLEDGE)
				continue;
			uint8_t syn = a->p.h.ext.aeth.syndrome;
			uint8_t kind = syn & DROCE_AETH_TYPE_MASK;
			bool nak = kind != DROCE_AETH_ACK;
			if (kind == DROCE_AETH_NAK && (syn & DROCE_AETH_VALUE_MASK) != DROCE_NAK_PSN_SEQ_ERR)
				continue; /* an error NAK: the flow stops there, completions are not derived */
			/* A duplicate's re-ACK names the last SEND, WRITE or atomic
			 * executed, and its MSN counts the READs after it too (C9-105;
			 * rxe and droce): those may be counted, nothing else. */
			uint32_t psn = a->p.h.bth.psn, n = 0, reads = 0;
			bool more = !nak;
			for (size_t k = 0; k < d->nmsgs; k++) {
				const struct msg *m = &d->msgs[k];
				if (m->own || m->conn != (int)ci || m->dropped || !m->complete)
					continue;
				if (psn_lt(m->last_psn, psn) || (!nak && m->last_psn == psn))
					n++;
				else if (more && m->kind == M_READ)
					reads++;
				else
					more = false;
			}
			uint32_t msn = a->p.h.ext.aeth.msn & DROCE_PSN_MASK;
			if (!based) {
				base = (msn - n) & DROCE_PSN_MASK;
				based = true;
			}
			uint32_t done = (msn - base) & DROCE_PSN_MASK;
			if (done < n || done > n + reads)
				return drv_dfail(d, "frame %u: the side's %s of PSN %u carries MSN %u: it had "
					     "completed %u of the peer's messages, the capture shows %u "
					     "(9.7.5.1.1)", a->f->num,
					     kind == DROCE_AETH_ACK ? "ACK" :
					     kind == DROCE_AETH_RNR_NAK ? "RNR NAK" : "NAK", psn, msn, done, n);
		}
	}
	return 0;
}

int drv_walk(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || a->gone)
			continue;
		unsigned fl = a->p.op->flags;
		int r = 0;
		if (fl & DROCE_OPF_CNP) {
			if (a->role == DROCE_RP_OWN) {
				/* droce notifies only on CE-marked frames (A17.9.2). */
				bool ce = false;
				for (size_t j = 0; j < i; j++)
					ce |= d->fr[j].role == DROCE_RP_PEER && d->fr[j].conn == a->conn &&
					      d->fr[j].p.h.net.ecn == 3;
				if (!ce && d->nskipped_cnp < 64)
					d->skipped_cnp[d->nskipped_cnp++] = a->f->num;
			}
			continue;
		}
		if (a->role == DROCE_RP_OWN && (fl & DROCE_OPF_REQ))
			r = 0; /* drv_own_requests() */
		else if (a->role == DROCE_RP_OWN)
			r = drv_own_response(d, a);
		else if (fl & DROCE_OPF_REQ)
			r = peer_request(d, a);
		else
			r = peer_response(d, a);
		if (r)
			return r;
	}
	return 0;
}
