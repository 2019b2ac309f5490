/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-replay --derive: the memory regions the capture shows (derive_int.h). */
#include "derive_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ regions -- */

struct region *drv_region_of(struct dctx *d, uint32_t rkey)
{
	for (unsigned i = 0; i < d->nregions; i++)
		if (d->regions[i].rkey == rkey)
			return &d->regions[i];
	return NULL;
}

/* The side NAKed the peer's request at this PSN on this connection with an access error. */
static bool access_naked(struct dctx *d, int conn, uint32_t psn)
{
	if (!d->acc_naks_known) {
		d->acc_naks_known = true;
		for (size_t i = 0; i < d->nfr; i++) {
			struct fr *a = &d->fr[i];
			if (a->role == DROCE_RP_OWN && a->conn >= 0 && a->p.op &&
			    (a->p.op->hdrs & DROCE_HDR_AETH) &&
			    a->p.h.ext.aeth.syndrome == (DROCE_AETH_NAK | DROCE_NAK_REMOTE_ACCESS) &&
			    hput(&d->map, hkey(a->conn, HK_ACC_NAK, a->p.h.bth.psn), i))
				return false; /* out of memory: the replay will tell */
		}
	}
	return hget(&d->map, hkey(conn, HK_ACC_NAK, psn)) != NULL;
}

int drv_collect_regions(struct dctx *d)
{
	for (size_t i = 0; i < d->nfr; i++) {
		struct fr *a = &d->fr[i];
		if (a->role != DROCE_RP_PEER || a->conn < 0 || !a->p.op)
			continue;
		unsigned hd = a->p.op->hdrs, fl = a->p.op->flags;
		uint64_t va;
		uint32_t rkey, len;
		unsigned acc;
		if (hd & DROCE_HDR_RETH) {
			va = a->p.h.ext.reth.va;
			rkey = a->p.h.ext.reth.rkey;
			len = a->p.h.ext.reth.dma_len;
			acc = (fl & DROCE_OPF_READ) ? DROCE_RP_ACC_RR : DROCE_RP_ACC_RW | DROCE_RP_ACC_LW;
		} else if (hd & DROCE_HDR_ATOMIC) {
			va = a->p.h.ext.atomic.va;
			rkey = a->p.h.ext.atomic.rkey;
			len = 8;
			acc = DROCE_RP_ACC_RA | DROCE_RP_ACC_LW;
		} else {
			continue;
		}
		/* A request the side refused for access must stay refused. */
		if (access_naked(d, a->conn, a->p.h.bth.psn))
			continue;
		struct region *r = drv_region_of(d, rkey);
		if (!r) {
			if (d->nregions == MAX_REGIONS)
				return drv_dfail(d, "more than %d rkeys", MAX_REGIONS);
			r = &d->regions[d->nregions++];
			memset(r, 0, sizeof(*r));
			r->rkey = rkey;
			r->lo = va;
			r->hi = va + len;
		}
		if (va < r->lo)
			r->lo = va;
		if (va + len > r->hi)
			r->hi = va + len;
		r->access |= acc;
		if (r->hi - r->lo > MAX_REGION_LEN)
			return drv_dfail(d, "rkey %#x: addresses span more than %u MB", rkey,
				     MAX_REGION_LEN >> 20);
	}
	for (unsigned i = 0; i < d->nregions; i++) {
		struct region *r = &d->regions[i];
		r->lo &= ~(uint64_t)7; /* keep atomics 8-byte aligned */
		size_t n = (size_t)(r->hi - r->lo) + 1;
		r->init = calloc(1, n);
		r->shadow = calloc(1, n);
		r->known = calloc(1, n);
		r->written = calloc(1, n);
		r->iset = calloc(1, n);
		r->kseq = calloc(n, sizeof(*r->kseq));
		r->wseq = calloc(n, sizeof(*r->wseq));
		if (!r->init || !r->shadow || !r->known || !r->written || !r->iset || !r->kseq || !r->wseq)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The side's memory at [va, va+n) was @p b when a request that executed at
 * store count @p req_seq read it (a READ response, an atomic's original
 * value). Bytes nothing had put there by then give the initial contents.
 * Bytes something had put there and nothing overwrote since must match:
 * otherwise the memory changed off the wire (a local store by the
 * application), which no replay can reproduce. Bytes overwritten after the
 * request may show either value (IBTA lets a later WRITE pass an earlier
 * READ's data without a fence) and are not checked.
 * @return the offset of the first conflicting byte in @p b, or -1.
 */
long drv_learn(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n,
		  uint32_t req_seq)
{
	if (!r || va < r->lo || va + n > r->hi)
		return -1;
	size_t o = (size_t)(va - r->lo);
	for (size_t k = 0; k < n; k++) {
		size_t x = o + k;
		bool known_then = r->known[x] && r->kseq[x] <= req_seq;
		if (!known_then) {
			if (!r->iset[x]) {
				r->init[x] = b[k];
				r->iset[x] = 1;
			}
			if (!r->known[x]) {
				r->shadow[x] = b[k];
				r->known[x] = 1;
				r->kseq[x] = d->seq;
			}
		} else if (r->wseq[x] <= req_seq && r->shadow[x] != b[k]) {
			return (long)k;
		}
	}
	return -1;
}

int drv_off_wire(struct dctx *d, const struct fr *a, const struct region *r, uint64_t va, long k)
{
	return drv_dfail(d, "frame %u: the side's memory at %#" PRIx64 " (rkey %#x) reads %#04x, but the "
		     "capture put %#04x there before: it changed off the wire (a local store), "
		     "which a replay cannot reproduce", a->f->num, va + (uint64_t)k, r->rkey,
		     a->p.payload ? a->p.payload[k] : 0, r->shadow[va + (uint64_t)k - r->lo]);
}

void drv_store(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n)
{
	if (!r || !n || va < r->lo || va + n > r->hi)
		return;
	size_t o = (size_t)(va - r->lo);
	d->seq++;
	memcpy(r->shadow + o, b, n);
	for (size_t k = 0; k < n; k++) {
		if (!r->known[o + k])
			r->kseq[o + k] = d->seq;
		r->wseq[o + k] = d->seq;
	}
	memset(r->known + o, 1, n);
	memset(r->written + o, 1, n);
}

uint64_t drv_le64(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

void drv_put_le64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}
