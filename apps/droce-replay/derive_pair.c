/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: pairing the side's QPs with the peer's, the path MTU (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ pairing -- */

static int conn_by_local(struct dctx *d, uint32_t qpn)
{
	for (unsigned i = 0; i < d->nconns; i++)
		if (d->conns[i].local_known && d->conns[i].local_qpn == qpn)
			return (int)i;
	return -1;
}

/* The latest connection (generation) to a peer QPN. */
static int conn_by_peer(struct dctx *d, uint32_t qpn, const uint8_t *ip)
{
	for (unsigned i = d->nconns; i-- > 0;)
		if (d->conns[i].peer_known && d->conns[i].peer_qpn == qpn &&
		    !memcmp(d->conns[i].peer_ip, ip, drv_alen(d)))
			return (int)i;
	return -1;
}

/*
 * Pair the side's local QPNs (named by the peer's frames) with the peer's
 * QPNs (named by the side's frames): a request and its response carry the
 * same PSN (IBTA 9.7.5.1), one in each direction.
 */
int drv_pair_qps(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->role != DROCE_RP_OWN && a->role != DROCE_RP_PEER)
			continue;
		uint32_t q = a->p.h.bth.dqpn;
		const uint8_t *pip = a->role == DROCE_RP_OWN ? a->p.h.net.dst_ip : a->p.h.net.src_ip;
		int c = a->role == DROCE_RP_OWN ? conn_by_peer(d, q, pip) : conn_by_local(d, q);
		if (c >= 0)
			continue;
		/* Find the frame the other way with the same PSN and the opposite
		 * role: a response after its request, a request before its
		 * response, nearest first, on QPNs not paired elsewhere. */
		bool req = a->p.op && (a->p.op->flags & DROCE_OPF_REQ);
		bool cnp = a->p.op && (a->p.op->flags & DROCE_OPF_CNP);
		int other = -1;
		for (size_t k = 1; k <= d->nfr && other < 0 && !cnp && a->p.op; k++) {
			if (req ? i + k >= d->nfr : k > i)
				break;
			size_t j = req ? i + k : i - k;
			struct fr *b = &d->fr[j];
			if (b->role == a->role || (b->role != DROCE_RP_OWN && b->role != DROCE_RP_PEER) ||
			    !b->p.op || b->p.h.bth.psn != a->p.h.bth.psn ||
			    (b->p.op->flags & DROCE_OPF_CNP))
				continue;
			bool breq = (b->p.op->flags & DROCE_OPF_REQ) != 0;
			if (breq == req)
				continue;
			int bc = b->role == DROCE_RP_OWN
					 ? conn_by_peer(d, b->p.h.bth.dqpn, b->p.h.net.dst_ip)
					 : conn_by_local(d, b->p.h.bth.dqpn);
			if (bc >= 0)
				continue; /* already paired with another QP */
			other = (int)j;
		}
		uint32_t local = 0, peer = 0;
		bool lk = false, pk = false;
		if (a->role == DROCE_RP_OWN) {
			peer = q;
			pk = true;
			if (other >= 0) {
				local = d->fr[other].p.h.bth.dqpn;
				lk = true;
			}
		} else {
			local = q;
			lk = true;
			if (other >= 0) {
				peer = d->fr[other].p.h.bth.dqpn;
				pk = true;
			}
		}
		/* The other half may already have a connection of its own. */
		int ca = lk ? conn_by_local(d, local) : -1;
		int cb = pk ? conn_by_peer(d, peer, pip) : -1;
		c = ca >= 0 ? ca : cb;
		if (c < 0 && (c = drv_new_conn(d)) < 0)
			return drv_dfail(d, "more than %d connections", MAX_CONNS);
		struct conn *cn = &d->conns[c];
		if (lk && !cn->local_known) {
			cn->local_qpn = local;
			cn->local_known = true;
		}
		if (pk && !cn->peer_known) {
			cn->peer_qpn = peer;
			cn->peer_known = true;
		}
		memcpy(cn->peer_ip, pip, drv_alen(d));
	}
	/* Leftovers: one unpaired local QPN and one unpaired peer QPN to the
	 * same peer are the two halves of one connection. */
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *a = &d->conns[i];
		if (a->local_known && a->peer_known)
			continue;
		for (unsigned j = i + 1; j < d->nconns; j++) {
			struct conn *b = &d->conns[j];
			if (b->local_known == a->local_known || b->peer_known == b->local_known ||
			    memcmp(a->peer_ip, b->peer_ip, drv_alen(d)))
				continue;
			if (!a->local_known) {
				a->local_qpn = b->local_qpn;
				a->local_known = true;
			} else {
				a->peer_qpn = b->peer_qpn;
				a->peer_known = true;
			}
			*b = d->conns[--d->nconns];
			break;
		}
	}
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (!c->peer_known)
			return drv_dfail(d, "frames reach local QPN %#x but the side never sends on that "
				     "connection: the peer's QPN cannot be inferred", c->local_qpn);
	}
	/* Assign frames. */
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		a->conn = -1;
		if (a->role == DROCE_RP_OWN)
			a->conn = conn_by_peer(d, a->p.h.bth.dqpn, a->p.h.net.dst_ip);
		else if (a->role == DROCE_RP_PEER)
			a->conn = conn_by_local(d, a->p.h.bth.dqpn);
		if (a->conn >= 0 && a->role == DROCE_RP_PEER)
			d->conns[a->conn].any_peer = true;
	}
	return 0;
}

/* A local QPN for a connection the peer never addresses: unused by any. */
uint32_t drv_synth_qpn(struct dctx *d)
{
	for (uint32_t q = 0x100;; q++) {
		bool used = false;
		for (unsigned i = 0; i < d->nconns; i++)
			used |= d->conns[i].local_known && d->conns[i].local_qpn == q;
		if (!used)
			return q;
	}
}

static bool valid_mtu(unsigned m)
{
	return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096;
}

int drv_infer_mtu(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->conn < 0 || !a->p.op)
			continue;
		struct conn *c = &d->conns[a->conn];
		unsigned fl = a->p.op->flags, pl = a->p.h.payload_len;
		if (pl > c->max_payload)
			c->max_payload = pl;
		/* FIRST and MIDDLE packets carry exactly one path MTU (9.7.7). */
		if ((fl & DROCE_OPF_PAYLOAD) && (fl & (DROCE_OPF_FIRST | DROCE_OPF_MIDDLE)) &&
		    !(fl & DROCE_OPF_LAST)) {
			if (c->seg_max && pl != c->seg_max)
				return drv_dfail(d, "frame %u: FIRST/MIDDLE payload %u differs from an earlier "
					     "%u: no single path MTU", a->f->num, pl, c->seg_max);
			c->seg_max = pl;
		}
	}
	for (unsigned i = 0; i < d->nconns; i++) {
		struct conn *c = &d->conns[i];
		if (c->seg_max) {
			if (!valid_mtu(c->seg_max))
				return drv_dfail(d, "QP %#x: segments of %u bytes: not a path MTU (256..4096)",
					     c->peer_qpn, c->seg_max);
			c->mtu = c->seg_max;
		} else {
			c->mtu = 4096; /* nothing was segmented: any MTU >= the largest packet */
			if (c->max_payload > 4096)
				return drv_dfail(d, "QP %#x: a %u-byte packet is larger than any path MTU",
					     c->peer_qpn, c->max_payload);
		}
	}
	return 0;
}

unsigned drv_npkts(uint32_t len, unsigned mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}
