/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions. Keys are (slot index << 8) | 8 random bits from the
 * context's PRNG; a slot's new key bits always differ from its previous
 * registration's, so an rkey kept after deregistration never matches again
 * (until the slot has been reused 255 times with that exact draw, which the
 * "differ from the last" rule makes impossible for the immediate successor).
 * Remote virtual addresses are the host addresses (zero-based = false, as
 * rxe). Every lookup checks key, bounds (with overflow) and access before a
 * byte is touched (principle 5, docs/architecture.md).
 */
#include <errno.h>
#include <string.h>

#include "core/core_int.h"

#define ACCESS_ALL (DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | \
		    DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC)

struct droce_mr *droce_reg_mr(struct droce_ctx *ctx, void *addr, size_t length,
			      unsigned access)
{
	if (!ctx || (access & ~ACCESS_ALL) || (!addr && length)) {
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
	/* Start the free-slot search at a random point: keys not sequential. */
	uint32_t n = ctx->p.max_mrs;
	uint32_t start = (uint32_t)(droce_ctx_rand(ctx) % n);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (start + k) % n;
		struct droce_mr_slot *s = &ctx->mrs[i];
		if (s->used)
			continue;
		uint8_t key;
		do
			key = (uint8_t)(droce_ctx_rand(ctx) >> 24);
		while (key == s->last_key);
		s->last_key = key;
		s->used = true;
		s->mr.ctx = ctx;
		s->mr.addr = addr;
		s->mr.length = length;
		s->mr.lkey = s->mr.rkey = i << 8 | key;
		s->mr.access = access;
		ctx->nmrs_used++;
		return &s->mr;
	}
	errno = ENOMEM;
	return NULL;
}

int droce_dereg_mr(struct droce_mr *mr)
{
	if (!mr || !mr->ctx)
		return -EINVAL;
	struct droce_ctx *ctx = mr->ctx;
	uint32_t i = mr->lkey >> 8;
	if (i >= ctx->p.max_mrs || &ctx->mrs[i].mr != mr || !ctx->mrs[i].used)
		return -EINVAL;
	ctx->mrs[i].used = false;
	ctx->nmrs_used--;
	/* Keep last_key; clear the rest so a stale pointer finds nothing. */
	memset(&ctx->mrs[i].mr, 0, sizeof(ctx->mrs[i].mr));
	return 0;
}

