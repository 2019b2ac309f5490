/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: finding frames and messages, counting copies, late and lost packets (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- the walk -- */

int drv_find_msg(struct dctx *d, int conn, bool own, uint32_t psn, bool range)
{
	for (size_t i = d->nmsgs; i-- > 0;) {
		struct msg *m = &d->msgs[i];
		if (m->conn != conn || m->own != own || m->dropped)
			continue;
		if (m->first_psn == psn)
			return (int)i;
		if (range && !psn_lt(psn, m->first_psn) && !psn_lt(m->last_psn, psn))
			return (int)i;
	}
	return -1;
}

/*
 * The peer's message the side refused at @p psn, its LAST, with an RNR NAK
 * before (its FIRST and MIDDLE placed, the message waiting for the LAST's
 * resend; drv_own_response()), or -1. The side refuses that LAST again for
 * every copy of it that reaches it before it has a receive (9.7.5.2.8):
 * the resend after the RNR wait, or a copy netem delayed behind the capture
 * point, of which no frame shows between the two NAKs.
 */
int drv_find_refused(struct dctx *d, int conn, uint32_t psn)
{
	for (size_t i = d->nmsgs; i-- > 0;) {
		const struct msg *m = &d->msgs[i];
		if (m->conn == conn && !m->own && !m->dropped && m->rnr && !m->complete &&
		    psn_add(m->last_psn, 1) == psn)
			return (int)i;
	}
	return -1;
}

/* The side's latest request frame on this connection with this PSN before the one drv_own_seq() is at. */
const struct fr *drv_own_frame_at(struct dctx *d, int conn, uint32_t psn)
{
	size_t *v = hget(&d->map, hkey(conn, HK_OWN_REQ, psn));
	return v ? &d->fr[*v] : NULL;
}

/* The same packet sent again: what the protocol defines is equal (a
 * FETCH_ADD's compare field is not: rxe sends whatever it holds, 9.4.5). */
bool drv_same_request(const struct fr *a, const struct fr *b)
{
	struct droce_ext_fields x = a->p.h.ext, y = b->p.h.ext;
	if (a->p.h.bth.opcode == DROCE_OP_RC_FETCH_ADD)
		x.atomic.compare = y.atomic.compare = 0;
	return a->p.h.bth.opcode == b->p.h.bth.opcode && a->p.h.payload_len == b->p.h.payload_len &&
	       !memcmp(a->p.payload, b->p.payload, a->p.h.payload_len) && !memcmp(&x, &y, sizeof(x));
}

enum mkind drv_kind_of(const struct droce_opcode_info *oi, uint8_t opcode)
{
	if (oi->flags & DROCE_OPF_SEND)
		return M_SEND;
	if (oi->flags & DROCE_OPF_WRITE)
		return M_WRITE;
	if (oi->flags & DROCE_OPF_READ)
		return M_READ;
	return opcode == DROCE_OP_RC_COMPARE_SWAP ? M_CAS : M_FAA;
}

unsigned *drv_count_of(struct dctx *d, int conn, bool resp, uint32_t psn)
{
	uint64_t k = hkey(conn, resp ? HK_COUNT_RESP : HK_COUNT_REQ, psn);
	size_t *v = hget(&d->map, k);
	if (v)
		return &d->pc[*v].n;
	if (d->npc == d->cappc) {
		size_t nc = d->cappc ? 2 * d->cappc : 256;
		struct pcount *np = realloc(d->pc, nc * sizeof(*np));
		if (!np)
			return NULL;
		d->pc = np;
		d->cappc = nc;
	}
	if (hput(&d->map, k, d->npc))
		return NULL;
	d->pc[d->npc] = (struct pcount){ .conn = conn, .resp = resp, .psn = psn, .n = 0 };
	return &d->pc[d->npc++].n;
}

/* The side sent a copy of this packet the capture lacks (lost before the capture point). */
int drv_add_lost(struct dctx *d, int conn, bool resp, uint32_t psn)
{
	unsigned *n = drv_count_of(d, conn, resp, psn);
	struct dlost *nl = n ? realloc(d->lost, (d->nlost + 1) * sizeof(*nl)) : NULL;
	if (!nl)
		return -ENOMEM;
	d->lost = nl;
	d->lost[d->nlost++] = (struct dlost){ .conn = conn, .resp = resp, .psn = psn, .copy = (*n)++,
					      .epoch = resp ? d->conns[conn].resp_epoch
							    : d->conns[conn].epoch };
	return 0;
}

/*
 * The side's packet at @p idx (a request, or with @p resp a READ response)
 * lies behind its cursor @p cur and was never seen before, but it is
 * missing from a gap the side has not gone back over since, and the side's
 * next packet of that kind does not continue after this one: it was not
 * lost but delayed on the wire (netem's reorder in front of tcpdump).
 * @return that gap's entry, or NULL.
 */
struct dlost *drv_arrived_late(struct dctx *d, size_t idx, bool resp, uint32_t cur)
{
	const struct fr *a = &d->fr[idx];
	struct conn *c = &d->conns[a->conn];
	uint32_t psn = a->p.h.bth.psn;
	struct dlost *l = NULL;
	for (size_t i = d->nlost; i-- > 0 && !l;)
		if (d->lost[i].resp == resp && !d->lost[i].late && d->lost[i].conn == a->conn &&
		    d->lost[i].psn == psn)
			l = &d->lost[i];
	if (!l || l->epoch != (resp ? c->resp_epoch : c->epoch))
		return NULL;
	for (size_t j = idx + 1; j < d->nfr; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_OWN || b->conn != a->conn || !b->p.op ||
		    !(b->p.op->flags & DROCE_OPF_REQ) != resp || (b->p.op->flags & DROCE_OPF_CNP) ||
		    (resp && !(b->p.op->flags & DROCE_OPF_READ)))
			continue;
		/* a READ request takes a PSN per response packet (9.7.4.1.2):
		 * the side continues after it there */
		uint32_t next = psn_add(psn, !resp && (a->p.op->flags & DROCE_OPF_READ)
						     ? drv_npkts(a->p.h.ext.reth.dma_len, c->mtu) : 1);
		return b->p.h.bth.psn == next && next != cur ? NULL : l;
	}
	return l;
}

/* The side's READ request frame @p idx, for drv_read_covering(). */
int drv_add_read(struct dctx *d, size_t idx)
{
	size_t *nr = realloc(d->reads, (d->nreads + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	d->reads = nr;
	d->reads[d->nreads++] = idx;
	return 0;
}

/* An earlier visible READ request of the side's whose response PSNs cover @p psn (not its first). */
const struct fr *drv_read_covering(struct dctx *d, int conn, uint32_t psn)
{
	for (size_t r = d->nreads; r-- > 0;) {
		const struct fr *b = &d->fr[d->reads[r]];
		if (b->role != DROCE_RP_OWN || b->conn != conn || !b->p.op ||
		    b->p.h.bth.opcode != DROCE_OP_RC_RDMA_READ_REQUEST)
			continue;
		uint32_t n = drv_npkts(b->p.h.ext.reth.dma_len, d->conns[conn].mtu);
		uint32_t k = (psn - b->p.h.bth.psn) & DROCE_PSN_MASK;
		if (k > 0 && k < n)
			return b;
	}
	return NULL;
}

/*
 * A frame of the peer's that makes a requester go back: a NAK, an RNR NAK,
 * or a READ response (one out of order is an implied NAK, 9.7.5.2.2, and
 * makes rxe and droce re-request from the first missing packet; which one
 * was out of order for the side, the capture cannot always tell).
 * drv_own_requests() keeps when the side last got one (conn.trig_t).
 */
bool drv_is_trigger(const struct fr *b)
{
	if (b->role != DROCE_RP_PEER || !b->p.op || b->gone || (b->p.op->flags & DROCE_OPF_REQ))
		return false;
	return (b->p.op->flags & DROCE_OPF_READ) ||
	       ((b->p.op->hdrs & DROCE_HDR_AETH) &&
		(b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) != DROCE_AETH_ACK);
}

/* The peer's frame @p j reached the side only after it sent @p a: deliver it then. */
/* "deliver" the peer's frame @p j at @p at (one entry per frame: the latest wins). */
int drv_set_deliver(struct dctx *d, size_t j, uint64_t at, bool req)
{
	unsigned nf = d->fr[j].f->num;
	size_t k;
	for (k = 0; k < d->ncross && d->cross[k].frame != nf; k++)
		;
	if (k == d->ncross) {
		void *nc = realloc(d->cross, (d->ncross + 1) * sizeof(*d->cross));
		if (!nc)
			return -ENOMEM;
		d->cross = nc;
		d->ncross++;
	}
	d->cross[k].frame = nf;
	d->cross[k].at = at;
	d->cross[k].req = req;
	d->fr[j].t_seen = at;
	return 0;
}

int drv_deliver_after(struct dctx *d, size_t j, const struct fr *a)
{
	if (drv_set_deliver(d, j, a->f->t_ns + 1, false))
		return -ENOMEM;
	struct conn *c = &d->conns[d->fr[j].conn];
	if (c->trig_t && c->trig_frame == j)
		c->trig_t = d->fr[j].t_seen;
	return 0;
}

/*
 * The side resent @p a although the capture shows the peer acknowledging
 * it before (between the earlier copy @p prev and @p a): the side's timer
 * fired while that answer was on the wire (a capture far from the side),
 * so droce gets the answer after the resend.
 */
int drv_crossed_answers(struct dctx *d, const struct fr *prev, size_t idx)
{
	const struct fr *a = &d->fr[idx];
	size_t from = (size_t)(prev - d->fr);
	for (size_t j = from + 1; j < idx; j++) {
		const struct fr *b = &d->fr[j];
		if (b->role != DROCE_RP_PEER || b->conn != a->conn || !b->p.op || b->gone ||
		    (b->p.op->flags & (DROCE_OPF_REQ | DROCE_OPF_CNP)) ||
		    psn_lt(b->p.h.bth.psn, a->p.h.bth.psn))
			continue;
		bool pos = !(b->p.op->hdrs & DROCE_HDR_AETH) ||
			   (b->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK;
		if (pos && drv_deliver_after(d, j, a))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Where each PSN sequence starts. A capture of a lossy link may miss the
 * first packets of a conversation (lost before the capture point): the
 * first request seen is then a resend's successor, and its earlier PSNs
 * show up later, in the go-back-N resend. The sequence starts at the
 * earliest PSN of it the capture shows (within EARLY_MAX before the first
 * seen): the requests of either side, and the PSN of a sequence NAK the
 * side sent (9.7.5.2.2: the PSN it expected), which may name a packet no
 * copy of which was captured. Connections nobody answers on are left
 * alone: their PSNs may restart (several conversations, drv_own_seq()).
 */
