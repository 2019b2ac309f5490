/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and memory regions.
 *
 * Keys: the low mr_bits name the slot (a mask per lookup); the other
 * 32 - mr_bits bits are the slot's registration count put through a keyed
 * permutation (core/rand.h; the secret from getrandom(2) unless the context
 * was seeded). So a key tells nothing about the other keys of the context,
 * and a key kept after deregistration matches none of its slot's next
 * 2^(32 - mr_bits) - 1 registrations: a permutation repeats no value before
 * its counter wraps (a million registrations of one slot with the default
 * 4096 MRs). L_Key and R_Key are the same value (rxe does the same).
 *
 * Every lookup checks key, PD (IBTA 10.6.3.2: the QP's and the region's
 * must be the same), bounds (with overflow) and access before a byte is
 * touched (principle 5, docs/architecture.md), and hands back the slot's
 * generation, which changes at deregistration: the engine compares it before each later
 * access to the same memory (droce_mr_ref_live), so a deregistered region
 * is never read or written again, whatever was under way.
 *
 * Remote virtual addresses are the host addresses (zero-based = false, as
 * rxe).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/rand.h"

#define ACCESS_ALL (DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | \
		    DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC)

struct droce_pd *droce_alloc_pd(struct droce_ctx *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	pd->id = ctx->pd_next++;
	if (!ctx->pd_next)
		ctx->pd_next = 2; /* 2^32 PDs later: ids of long-freed PDs come back */
	pd->next = ctx->pds;
	if (ctx->pds)
		ctx->pds->prev = pd;
	ctx->pds = pd;
	return pd;
}

int droce_dealloc_pd(struct droce_pd *pd)
{
	if (!pd || pd == &pd->ctx->pd0)
		return -EINVAL;
	if (pd->users)
		return -EBUSY;
	struct droce_ctx *ctx = pd->ctx;
	if (pd->prev)
		pd->prev->next = pd->next;
	else
		ctx->pds = pd->next;
	if (pd->next)
		pd->next->prev = pd->prev;
	free(pd);
	return 0;
}

static struct droce_mr *reg(struct droce_ctx *ctx, struct droce_pd *pd, void *addr, size_t length,
			    unsigned access)
{
	if ((access & ~ACCESS_ALL) || (!addr && length)) {
		errno = EINVAL;
		return NULL;
	}
	/* IBTA 10.6.3.1: remote write / atomic need local write. */
	if ((access & (DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & DROCE_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if ((uintptr_t)addr + length < (uintptr_t)addr) {
		errno = EINVAL;
		return NULL;
	}
	/* Start the free-slot search at a random point: slots not sequential. */
	uint32_t n = ctx->p.max_mrs;
	uint32_t start = (uint32_t)(droce_ctx_rand(ctx) % n);
	unsigned rbits = 32u - ctx->mr_bits;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (start + k) % n;
		struct droce_mr_slot *s = &ctx->mrs[i];
		if (s->used)
			continue;
		uint32_t count = s->regs++ & (uint32_t)((1ull << rbits) - 1);
		uint32_t key = droce_key_permute(ctx->key_secret, i, count, rbits);
		s->used = true;
		s->gen++;
		s->pd = pd->id;
		s->mr.ctx = ctx;
		s->mr.pd = pd;
		s->mr.addr = addr;
		s->mr.length = length;
		s->mr.lkey = s->mr.rkey = key << ctx->mr_bits | i;
		s->mr.access = access;
		ctx->nmrs_used++;
		pd->users++;
		return &s->mr;
	}
	errno = ENOMEM;
	return NULL;
}

struct droce_mr *droce_reg_mr(struct droce_ctx *ctx, void *addr, size_t length,
			      unsigned access)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	return reg(ctx, &ctx->pd0, addr, length, access);
}

struct droce_mr *droce_reg_mr_pd(struct droce_pd *pd, void *addr, size_t length,
				 unsigned access)
{
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	return reg(pd->ctx, pd, addr, length, access);
}

int droce_dereg_mr(struct droce_mr *mr)
{
	if (!mr || !mr->ctx)
		return -EINVAL;
	struct droce_ctx *ctx = mr->ctx;
	uint32_t i = mr->lkey & ctx->mr_mask;
	if (i >= ctx->p.max_mrs || &ctx->mrs[i].mr != mr || !ctx->mrs[i].used)
		return -EINVAL;
	struct droce_mr_slot *s = &ctx->mrs[i];
	s->used = false;
	s->gen++; /* every reference taken under this registration is dead now */
	s->mr.pd->users--;
	ctx->nmrs_used--;
	/* Keep regs; clear the rest so a stale pointer finds nothing. */
	memset(&s->mr, 0, sizeof(s->mr));
	return 0;
}
