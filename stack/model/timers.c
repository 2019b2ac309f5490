/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Binary min-heap of per-QP deadlines with a position index (model/timers.h).
 * Ties are broken by id so the order in which equal deadlines come out does
 * not depend on the history of the heap (runs repeat: the simulator and the
 * pcap replays compare frame orders).
 */
#include <errno.h>
#include <stdlib.h>

#include "model/timers.h"

int droce_timers_init(struct droce_timers *t, uint32_t cap)
{
	t->n = 0;
	t->cap = cap;
	t->heap = calloc(cap ? cap : 1, sizeof(*t->heap));
	t->pos = malloc((size_t)(cap ? cap : 1) * sizeof(*t->pos));
	if (!t->heap || !t->pos) {
		droce_timers_fini(t);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cap; i++)
		t->pos[i] = DROCE_TIMERS_NONE;
	return 0;
}

void droce_timers_fini(struct droce_timers *t)
{
	free(t->heap);
	free(t->pos);
	t->heap = NULL;
	t->pos = NULL;
	t->n = t->cap = 0;
}

static inline bool before(const struct droce_timer_ent *a, const struct droce_timer_ent *b)
{
	return a->at < b->at || (a->at == b->at && a->id < b->id);
}

static inline void place(struct droce_timers *t, uint32_t i, struct droce_timer_ent e)
{
	t->heap[i] = e;
	t->pos[e.id] = i;
}

/* Move the entry at slot i toward the root until its parent is earlier. */
static void sift_up(struct droce_timers *t, uint32_t i)
{
	struct droce_timer_ent e = t->heap[i];
	while (i) {
		uint32_t up = (i - 1) / 2;
		if (!before(&e, &t->heap[up]))
			break;
		place(t, i, t->heap[up]);
		i = up;
	}
	place(t, i, e);
}

/* Move the entry at slot i toward the leaves until no child is earlier. */
static void sift_down(struct droce_timers *t, uint32_t i)
{
	struct droce_timer_ent e = t->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= t->n)
			break;
		if (c + 1 < t->n && before(&t->heap[c + 1], &t->heap[c]))
			c++;
		if (!before(&t->heap[c], &e))
			break;
		place(t, i, t->heap[c]);
		i = c;
	}
	place(t, i, e);
}

static void remove_at(struct droce_timers *t, uint32_t i)
{
	t->pos[t->heap[i].id] = DROCE_TIMERS_NONE;
	if (--t->n == i)
		return;
	/* The last entry fills the hole and goes whichever way it must. */
	t->heap[i] = t->heap[t->n];
	t->pos[t->heap[i].id] = i;
	if (i && before(&t->heap[i], &t->heap[(i - 1) / 2]))
		sift_up(t, i);
	else
		sift_down(t, i);
}

void droce_timers_move(struct droce_timers *t, uint32_t id, uint64_t at)
{
	if (id >= t->cap)
		return;
	uint32_t p = t->pos[id];
	if (at == UINT64_MAX) {
		if (p != DROCE_TIMERS_NONE)
			remove_at(t, p);
		return;
	}
	if (p == DROCE_TIMERS_NONE) {
		p = t->n++;
		place(t, p, (struct droce_timer_ent){ .at = at, .id = id });
		sift_up(t, p);
		return;
	}
	uint64_t old = t->heap[p].at;
	t->heap[p].at = at;
	if (at < old)
		sift_up(t, p);
	else
		sift_down(t, p);
}

uint32_t droce_timers_pop_due(struct droce_timers *t, uint64_t now)
{
	if (!t->n || t->heap[0].at > now)
		return DROCE_TIMERS_NONE;
	uint32_t id = t->heap[0].id;
	remove_at(t, 0);
	return id;
}
