/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: the side's own requests: start PSNs, go-backs, messages (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drv_start_psns(struct dctx *d)
{
	bool own_seen[MAX_CONNS] = { false }, peer_seen[MAX_CONNS] = { false };
	for (size_t i = 0; i < d->nfr; i++) {
		const struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || a->gone ||
		    (a->p.op->flags & DROCE_OPF_CNP))
			continue;
		struct conn *c = &d->conns[a->conn];
		uint32_t psn = a->p.h.bth.psn;
		bool req = (a->p.op->flags & DROCE_OPF_REQ) != 0;
		bool seq_nak = a->role == DROCE_RP_OWN && !req && (a->p.op->hdrs & DROCE_HDR_AETH) &&
			       a->p.h.ext.aeth.syndrome == (DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR);
		if (!c->any_peer || (!req && !seq_nak))
			continue;
		bool own = a->role == DROCE_RP_OWN && req;
		bool *seen = own ? &own_seen[a->conn] : &peer_seen[a->conn];
		uint32_t *min = own ? &c->sq_min : &c->rq_min;
		if (!*seen) {
			if (seq_nak)
				continue; /* a NAK before any request: nothing to place it against */
			*seen = true;
			*min = psn;
			continue;
		}
		if (psn_lt(psn, *min) && ((*min - psn) & DROCE_PSN_MASK) <= EARLY_MAX) {
			*min = psn;
			*(own ? &c->sq_early : &c->rq_early) = true;
		}
	}
}

/*
 * The side's request packet at @p idx, in capture order: where it lies in
 * the side's PSN sequence. A packet at the cursor continues it; one behind
 * is a retransmission (go-back-N after a NAK or a timeout, 9.7.6.1.3, or a
 * READ re-requested from mid-message, 9.7.5.1.5: its RETH moved on by the
 * packets already received); one ahead leaves a gap: the packets between
 * were sent and lost before the capture point (netem in front of tcpdump),
 * and droce will send them. A new packet sent after the peer NAKed an
 * earlier PSN and before the side went back crossed the NAK on the wire
 * (a capture far from the side), and so did a resend of a packet before
 * the NAK's PSN: droce gets that NAK only after them ("deliver").
 */
int drv_own_seq(struct dctx *d, size_t idx)
{
	struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	const struct droce_opcode_info *oi = a->p.op;
	uint32_t n = (oi->flags & DROCE_OPF_READ) ? drv_npkts(a->p.h.ext.reth.dma_len, c->mtu) : 1;
	if (c->own_started && psn != c->own_cur && !c->any_peer) {
		const struct fr *prev = drv_own_frame_at(d, a->conn, psn);
		if (!prev || !drv_same_request(prev, a)) {
			/* Nobody answers on this connection and its PSNs restart:
			 * the capture holds several conversations to one QPN
			 * (synthetic vectors). Each gets a droce QP of its own. */
			int nc = drv_new_conn(d);
			if (nc < 0)
				return drv_dfail(d, "more than %d connections", MAX_CONNS);
			c = &d->conns[a->conn];
			struct conn *m = &d->conns[nc];
			m->peer_qpn = c->peer_qpn;
			m->peer_known = true;
			memcpy(m->peer_ip, c->peer_ip, 16);
			memcpy(m->peer_mac, c->peer_mac, 6);
			m->mtu = c->mtu;
			m->local_qpn = drv_synth_qpn(d);
			m->local_known = true;
			for (size_t j = idx; j < d->nfr; j++)
				if (d->fr[j].conn == a->conn && d->fr[j].role == DROCE_RP_OWN)
					d->fr[j].conn = nc;
			c = m;
		}
	}
	if (!c->own_started) {
		c->own_started = true;
		c->sq_psn = c->own_cur = c->own_next = c->sq_early ? c->sq_min : psn;
	}
	if (psn_lt(psn, c->own_cur) && !drv_own_frame_at(d, a->conn, psn) && !drv_read_covering(d, a->conn, psn)) {
		struct dlost *l = drv_arrived_late(d, idx, false, c->own_cur);
		if (l) {
			/* its copy is the one counted as lost: compared out of
			 * place; the cursor, and a NAK on its way, stay */
			l->late = a->f->num;
			a->first = true;
			/* a re-request of a READ's rest from mid-message may follow */
			if ((oi->flags & DROCE_OPF_READ) && drv_add_read(d, idx))
				return -ENOMEM;
			return hput(&d->map, hkey(a->conn, HK_OWN_REQ, psn), idx);
		}
	}
	bool crossing = false;
	if (c->nak_pending) {
		/* A NAK at X acknowledges everything before X (9.7.5.2.2): a side
		 * that sends a new packet, or resends one before X, has not
		 * seen it yet. */
		if (psn != c->nak_psn && (psn == c->own_cur || psn_lt(psn, c->nak_psn)))
			crossing = true;
		else
			c->nak_pending = false;
	}
	if (crossing) {
		/* droce gets the NAK when this frame was sent, not before */
		if (drv_deliver_after(d, c->nak_frame, a))
			return -ENOMEM;
	} else if (psn != c->own_cur && !psn_lt(psn, c->own_cur)) {
		uint32_t gap = (psn - c->own_cur) & DROCE_PSN_MASK;
		if (gap > 4096)
			return drv_dfail(d, "frame %u: PSN %u on QP %#x is %u packets past the sequence "
				     "(expected %u): no loss leaves such a gap", a->f->num, psn, c->peer_qpn,
				     gap, c->own_cur);
		for (uint32_t q = c->own_cur; q != psn; q = psn_add(q, 1))
			if (drv_add_lost(d, a->conn, false, q))
				return -ENOMEM;
	}
	const struct fr *prev = drv_own_frame_at(d, a->conn, psn);
	const struct fr *rd = prev ? NULL : drv_read_covering(d, a->conn, psn);
	if (rd) {
		uint64_t k = (psn - rd->p.h.bth.psn) & DROCE_PSN_MASK;
		const struct droce_hdrs *o = &rd->p.h, *h = &a->p.h;
		if ((oi->flags & DROCE_OPF_READ) && h->ext.reth.rkey == o->ext.reth.rkey &&
		    h->ext.reth.va == o->ext.reth.va + k * c->mtu &&
		    (uint64_t)h->ext.reth.dma_len + k * c->mtu == o->ext.reth.dma_len)
			prev = rd;
		else
			return drv_dfail(d, "frame %u: PSN %u on QP %#x lies inside the READ of frame %u but is "
				     "no re-request of its remaining bytes", a->f->num, psn, c->peer_qpn,
				     rd->f->num);
	}
	if (psn_lt(psn, c->own_cur))
		c->epoch++; /* a go-back */
	if (prev && !rd && !drv_same_request(prev, a))
		return drv_dfail(d, "frame %u: PSN %u on QP %#x is resent with other contents than frame %u",
			     a->f->num, psn, c->peer_qpn, prev->f->num);
	if (prev && !crossing && !rd && c->trig_t <= prev->f->t_ns &&
	    drv_crossed_answers(d, prev, idx))
		return -ENOMEM;
	if (prev) {
		d->retrans_own++;
		if (!crossing && psn != c->own_cur &&
		    (c->trig_t <= prev->f->t_ns ||
		     (c->nak_t <= prev->f->t_ns && a->f->t_ns - c->peer_t >= TIMER_SILENCE_NS))) {
			/* Not prompted by the peer (nothing since the last copy
			 * that makes a requester go back, or a silence no
			 * answer is followed by): the local ACK timer fired.
			 * It ran from when it last restarted: after the
			 * packet's last copy went out (T <= that gap), and at the
			 * last answer that made progress, if the last answer did
			 * (T >= the gap from it; an answer the side threw away
			 * restarted nothing). Each go-back votes for every
			 * exponent (4.096 us * 2^t, 9.7.6.1.3) between the two;
			 * the one most agree on wins, the larger at a tie. */
			uint64_t t_prev = a->f->t_ns > prev->f->t_ns ? a->f->t_ns - prev->f->t_ns : 0;
			uint64_t from = prev->f->t_ns > c->ack_t ? prev->f->t_ns : c->ack_t;
			uint64_t t_ack = a->f->t_ns > from ? a->f->t_ns - from : 0;
			uint8_t lo = 0, hi = 0;
			while (lo < 31 && (4096ull << (lo + 1)) <= t_ack)
				lo++;
			while (hi < 31 && (4096ull << (hi + 1)) <= t_prev)
				hi++;
			for (unsigned k = lo ? lo : 1; k <= hi; k++)
				c->tvotes[k]++;
			if (!hi)
				c->tvotes[1]++;
			c->timeout = 1;
			for (unsigned k = 1; k < 32; k++)
				if (c->tvotes[k] >= c->tvotes[c->timeout])
					c->timeout = (uint8_t)k;
			c->timeout_retx = true;
			unsigned k = 0;
			for (size_t j = 0; j < idx; j++)
				k += d->fr[j].role == DROCE_RP_OWN && d->fr[j].conn == a->conn &&
				     d->fr[j].p.op && (d->fr[j].p.op->flags & DROCE_OPF_REQ) &&
				     d->fr[j].p.h.bth.psn == psn;
			if (k > c->max_resends)
				c->max_resends = k;
		}
	} else {
		a->first = true; /* what the packet carries comes from here */
	}
	unsigned *cnt = drv_count_of(d, a->conn, false, psn);
	if (!cnt || hput(&d->map, hkey(a->conn, HK_OWN_REQ, psn), idx))
		return -ENOMEM;
	(*cnt)++;
	if ((oi->flags & DROCE_OPF_READ) && drv_add_read(d, idx))
		return -ENOMEM;
	c->own_cur = psn_add(psn, n);
	if (psn_lt(c->own_next, c->own_cur))
		c->own_next = c->own_cur;
	return 0;
}

/* The peer's NAKs in capture order: the side goes back when it gets one. */
static void peer_nak_seen(struct dctx *d, const struct fr *a, size_t idx)
{
	struct conn *c = &d->conns[a->conn];
	if (a->gone || !(a->p.op->hdrs & DROCE_HDR_AETH) || (a->p.op->flags & DROCE_OPF_REQ))
		return;
	uint8_t syn = a->p.h.ext.aeth.syndrome, k = syn & DROCE_AETH_TYPE_MASK;
	bool back = k == DROCE_AETH_RNR_NAK ||
		    (k == DROCE_AETH_NAK && (syn & DROCE_AETH_VALUE_MASK) == DROCE_NAK_PSN_SEQ_ERR);
	if (back && c->own_started && psn_lt(a->p.h.bth.psn, c->own_cur)) {
		c->nak_pending = true;
		c->nak_psn = a->p.h.bth.psn;
		c->nak_frame = idx;
	}
}

/* One of the side's messages from the first visible copy of each packet. */
static int own_build(struct dctx *d, size_t idx)
{
	struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	const struct droce_opcode_info *oi = a->p.op;
	unsigned fl = oi->flags;
	int mi;
	if (fl & DROCE_OPF_FIRST) {
		if ((mi = drv_new_msg(d, a->conn, true, drv_kind_of(oi, a->p.h.bth.opcode), a)) < 0)
			return -ENOMEM;
		c->cur_own = mi;
	} else {
		mi = c->cur_own;
		if (mi < 0)
			return drv_dfail(d, "frame %u: %s without a FIRST", a->f->num, oi->name);
	}
	struct msg *m = &d->msgs[mi];
	m->last_psn = psn;
	if (a->f->t_ns < m->t_ns)
		m->t_ns = a->f->t_ns;
	drv_msg_take_ext(m, a, oi);
	if (oi->hdrs & DROCE_HDR_IETH)
		return drv_dfail(d, "frame %u: %s: droce's API has no SEND with invalidate", a->f->num, oi->name);
	if (a->p.h.bth.se)
		m->solicited = true;
	if ((fl & DROCE_OPF_PAYLOAD) && drv_msg_append(m, a->p.payload, a->p.h.payload_len))
		return -ENOMEM;
	if (fl & DROCE_OPF_READ) {
		/* A READ takes one PSN per response packet (9.7.4.1.2). */
		m->last_psn = psn_add(psn, drv_npkts(m->dma_len, c->mtu) - 1);
		free(m->data);
		m->data = calloc(1, m->dma_len + 1);
		m->cap = m->dma_len;
		m->len = 0;
		if (!m->data)
			return -ENOMEM;
	}
	if (fl & DROCE_OPF_LAST) {
		m->complete = true;
		c->cur_own = -1;
	}
	return 0;
}

/*
 * The side's requests: first their place in its PSN sequence, in capture
 * order (gaps, retransmissions, crossings, the ACK timeout), then its
 * messages from the first visible copy of each packet in PSN order, since
 * a packet lost before the capture point shows up only in a later
 * retransmission. A message is posted when its first visible packet went
 * out, and never after a message behind it.
 */
int drv_own_requests(struct dctx *d)
{
	int r;
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op || a->r != DROCE_PARSE_OK || (a->p.op->flags & DROCE_OPF_CNP))
			continue;
		if (a->role == DROCE_RP_PEER) {
			peer_nak_seen(d, a, i);
			if (!a->gone)
				d->conns[a->conn].peer_t = a->t_seen ? a->t_seen : a->f->t_ns;
			if (drv_is_trigger(a)) {
				d->conns[a->conn].trig_t = a->t_seen ? a->t_seen : a->f->t_ns;
				d->conns[a->conn].trig_frame = i;
				if (!(a->p.op->flags & DROCE_OPF_READ))
					d->conns[a->conn].nak_t = d->conns[a->conn].trig_t;
			}
			if (!a->gone && !(a->p.op->flags & DROCE_OPF_REQ) &&
			    (!(a->p.op->hdrs & DROCE_HDR_AETH) ||
			     (a->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK))
				d->conns[a->conn].ack_t = a->t_seen ? a->t_seen : a->f->t_ns;
		}
		else if (a->role == DROCE_RP_OWN && (a->p.op->flags & DROCE_OPF_REQ) && (r = drv_own_seq(d, i)))
			return r;
	}
	size_t *ord = calloc(d->nfr + 1, sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	for (unsigned ci = 0; ci < d->nconns; ci++) {
		struct conn *c = &d->conns[ci];
		size_t n = 0;
		for (size_t i = 0; i < d->nfr; i++)
			if (d->fr[i].first && d->fr[i].conn == (int)ci)
				ord[n++] = i;
		/* insertion sort by distance from the first PSN: small captures */
		for (size_t i = 1; i < n; i++) {
			size_t v = ord[i], j = i;
			uint32_t dv = (d->fr[v].p.h.bth.psn - c->sq_psn) & DROCE_PSN_MASK;
			while (j > 0 && ((d->fr[ord[j - 1]].p.h.bth.psn - c->sq_psn) & DROCE_PSN_MASK) > dv) {
				ord[j] = ord[j - 1];
				j--;
			}
			ord[j] = v;
		}
		size_t first_msg = d->nmsgs;
		uint32_t expect = c->sq_psn;
		for (size_t i = 0; i < n; i++) {
			struct fr *a = &d->fr[ord[i]];
			uint32_t psn = a->p.h.bth.psn;
			if (psn != expect) {
				/* Never seen on the wire: the message around it is
				 * not known whole, droce is not asked to send it. */
				c->cur_own = -1;
				if (!(a->p.op->flags & DROCE_OPF_FIRST)) {
					expect = psn_add(psn, 1);
					continue;
				}
			}
			if ((r = own_build(d, ord[i]))) {
				free(ord);
				return r;
			}
			expect = (a->p.op->flags & DROCE_OPF_READ)
					 ? psn_add(psn, drv_npkts(a->p.h.ext.reth.dma_len, c->mtu))
					 : psn_add(psn, 1);
		}
		if (c->cur_own >= 0) /* the capture stops in the middle of a message */
			c->cur_own = -1;
		for (size_t i = d->nmsgs; i-- > first_msg + 1;)
			if (d->msgs[i].t_ns < d->msgs[i - 1].t_ns)
				d->msgs[i - 1].t_ns = d->msgs[i].t_ns;
	}
	free(ord);
	return 0;
}
