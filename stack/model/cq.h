/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A completion queue: a ring of droce_wc. Created and drained by core/
 * (cq.c); transport/ appends with droce_cq_push().
 */
#ifndef DROCE_MODEL_CQ_H
#define DROCE_MODEL_CQ_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

struct droce_cq {
	struct droce_ctx *ctx;
	struct droce_wc *ring;
	uint32_t depth, head, count;
	uint32_t users;        /* QPs attached */
	struct droce_cq *prev, *next; /* the context's list (destroyed with it) */
	bool overflow;
	uint64_t overflows;    /* completions lost */
};

/** Append a completion. @return 0, or -EOVERFLOW (CQ full: flagged and counted). */
static inline int droce_cq_push(struct droce_cq *cq, const struct droce_wc *wc)
{
	if (cq->count == cq->depth) {
		cq->overflow = true;
		cq->overflows++;
		return -EOVERFLOW;
	}
	uint32_t slot = cq->head + cq->count;
	if (slot >= cq->depth)
		slot -= cq->depth;
	cq->ring[slot] = *wc;
	cq->count++;
	return 0;
}

#endif
