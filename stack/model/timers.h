/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's timers: one deadline per QP (droce_tp_deadline, the
 * transport's single timer state machine), kept in a binary min-heap with
 * an index per QP, so that
 *   - the earliest deadline (droce_ctx_next_deadline) is the root: O(1);
 *   - a QP whose deadline moved (the ACK timer pushed on by every ACK, the
 *     pacing gate) is sifted in O(log n), and one whose deadline did not
 *     move costs one compare (the common case: core folds after every call
 *     into the transport);
 *   - the timers due at `now` are popped in O(log n) each.
 * No poll scans the QP table. Why a heap and not a wheel:
 * docs/architecture.md, "Timers".
 *
 * Ids are QP indexes (QPN - DROCE_QPN_BASE) below the capacity; a deadline
 * of UINT64_MAX means "none" and takes the id out of the heap. Nothing here
 * knows what a QP is (tested alone: tests/unit/core/test_timers.c).
 */
#ifndef DROCE_MODEL_TIMERS_H
#define DROCE_MODEL_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

#define DROCE_TIMERS_NONE UINT32_MAX

struct droce_timer_ent {
	uint64_t at;  /* deadline; the heap's key */
	uint32_t id;  /* whose (QP index) */
};

struct droce_timers {
	struct droce_timer_ent *heap; /* heap[0] is the earliest; n used */
	uint32_t *pos;                /* by id: slot in heap, or DROCE_TIMERS_NONE */
	uint32_t n, cap;
};

/** Room for ids 0..cap-1. @return 0 or -ENOMEM. */
int droce_timers_init(struct droce_timers *t, uint32_t cap);
void droce_timers_fini(struct droce_timers *t);

/** Move @p id's deadline to @p at (UINT64_MAX: cancel), in O(log n). */
void droce_timers_move(struct droce_timers *t, uint32_t id, uint64_t at);

/** Set @p id's deadline to @p at; one compare when it did not move. */
static inline void droce_timers_set(struct droce_timers *t, uint32_t id, uint64_t at)
{
	uint32_t p = t->pos[id];
	if (p == DROCE_TIMERS_NONE ? at == UINT64_MAX : t->heap[p].at == at)
		return;
	droce_timers_move(t, id, at);
}

/** @p id's deadline, or UINT64_MAX. */
static inline uint64_t droce_timers_get(const struct droce_timers *t, uint32_t id)
{
	uint32_t p = t->pos[id];
	return p == DROCE_TIMERS_NONE ? UINT64_MAX : t->heap[p].at;
}

/** The earliest deadline, or UINT64_MAX: O(1). */
static inline uint64_t droce_timers_min(const struct droce_timers *t)
{
	return t->n ? t->heap[0].at : UINT64_MAX;
}

/** Take out the earliest entry if it is due at @p now. @return its id, or DROCE_TIMERS_NONE. */
uint32_t droce_timers_pop_due(struct droce_timers *t, uint64_t now);

#endif
