/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MR table's slot and the lookup every memory access goes through.
 * core/ (mr.c) writes the slots at register and deregister; transport/
 * resolves keys with droce_mr_lookup() before it touches a byte.
 */
#ifndef DROCE_MODEL_MR_H
#define DROCE_MODEL_MR_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "model/ctx.h"

struct droce_mr_slot {
	struct droce_mr mr;   /* public part, handed out */
	bool used;
	uint8_t last_key;     /* key bits of the previous registration in this slot */
};


/* Resolve (key, va, len) to a host pointer: slot, full key, access bits,
 * bounds (no overflow), before any byte is touched (principle 5, docs/architecture.md). */
static inline uint8_t *droce_mr_lookup(struct droce_ctx *ctx, uint32_t key, uint64_t va,
				       uint64_t len, unsigned access)
{
	uint32_t i = key >> 8;
	if (i >= ctx->p.max_mrs)
		return NULL;
	const struct droce_mr_slot *s = &ctx->mrs[i];
	if (!s->used || s->mr.lkey != key)
		return NULL;
	if ((s->mr.access & access) != access)
		return NULL;
	uint64_t base = (uintptr_t)s->mr.addr;
	if (va < base || va + len < va || va + len > base + s->mr.length)
		return NULL;
	return (uint8_t *)s->mr.addr + (va - base);
}

#endif
