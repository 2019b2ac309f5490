/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event queue: a binary min-heap on (time, insertion sequence). The
 * sequence breaks ties, so events due at the same nanosecond run in the
 * order they were scheduled, whatever the heap's layout: that is half of
 * what makes a run repeat byte for byte (the other half: seeded RNGs).
 */
#include <errno.h>
#include <stdlib.h>

#include "sim.h"

static inline bool before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int evq_push(struct evq *q, uint64_t t, uint8_t type, void *obj, struct pkt *pkt, uint8_t arg)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct event *h = realloc(q->h, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		q->h = h;
		q->cap = cap;
	}
	struct event e = {.t = t, .seq = q->seq++, .type = type, .arg = arg, .obj = obj, .pkt = pkt};
	size_t i = q->n++;
	while (i) {
		size_t p = (i - 1) / 2;
		if (!before(&e, &q->h[p]))
			break;
		q->h[i] = q->h[p];
		i = p;
	}
	q->h[i] = e;
	return 0;
}

bool evq_pop(struct evq *q, struct event *out)
{
	if (!q->n)
		return false;
	*out = q->h[0];
	struct event last = q->h[--q->n];
	size_t i = 0, n = q->n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&q->h[c + 1], &q->h[c]))
			c++;
		if (!before(&q->h[c], &last))
			break;
		q->h[i] = q->h[c];
		i = c;
	}
	if (n)
		q->h[i] = last;
	return true;
}
