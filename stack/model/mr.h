/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MR table's slot and the lookup every memory access goes through.
 * core/ (mr.c) writes the slots at register and deregister; transport/
 * resolves keys with droce_mr_lookup() before it touches a byte, and checks
 * with droce_mr_ref_live() / droce_segs_live() that the registration it
 * resolved under is still there before each later access.
 */
#ifndef DROCE_MODEL_MR_H
#define DROCE_MODEL_MR_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "model/ctx.h"
#include "model/seg.h"

struct droce_mr_slot {
	struct droce_mr mr;   /* public part, handed out */
	bool used;
	uint32_t pd;          /* the region's PD id (10.6.3.2: checked with the key) */
	uint32_t gen;         /* +1 at every registration and deregistration: a
				 reference taken under one registration matches no
				 other (until 2^32 of them) */
	uint32_t regs;        /* registrations of this slot: the key's counter (core/mr.c) */
};

/* Resolve (key, va, len) to a host pointer: slot, full key, PD, access
 * bits, bounds (no overflow), before any byte is touched (principle 5,
 * docs/architecture.md). @p pd is the QP's PD id; @p ref (may be NULL) gets the registration
 * the pointer is valid under. @return NULL for a wrong or stale key, another
 * PD, out of bounds, or access not granted. */
static inline uint8_t *droce_mr_lookup(struct droce_ctx *ctx, uint32_t key, uint64_t va,
				       uint64_t len, unsigned access, uint32_t pd,
				       struct droce_mr_ref *ref)
{
	uint32_t i = key & ctx->mr_mask;
	if (i >= ctx->p.max_mrs)
		return NULL;
	const struct droce_mr_slot *s = &ctx->mrs[i];
	if (!s->used || s->mr.lkey != key || s->pd != pd)
		return NULL;
	if ((s->mr.access & access) != access)
		return NULL;
	uint64_t base = (uintptr_t)s->mr.addr;
	if (va < base || va + len < va || va + len > base + s->mr.length)
		return NULL;
	if (ref) {
		ref->slot = i;
		ref->gen = s->gen;
	}
	return (uint8_t *)s->mr.addr + (va - base);
}

/** Is the registration @p r was taken under still the slot's? One compare. */
static inline bool droce_mr_ref_live(const struct droce_ctx *ctx, struct droce_mr_ref r)
{
	return r.slot == DROCE_MR_REF_NONE || ctx->mrs[r.slot].gen == r.gen;
}

/** Are all @p n segments still under the registrations they were resolved
 * under? Per packet: one compare per segment (mostly one). */
static inline bool droce_segs_live(const struct droce_ctx *ctx, const struct droce_seg *s,
				   unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!droce_mr_ref_live(ctx, s[i].mr))
			return false;
	return true;
}

#endif
