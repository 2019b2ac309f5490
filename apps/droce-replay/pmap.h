/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_REPLAY_PMAP_H
#define DROCE_REPLAY_PMAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * A map from a non-zero 64-bit key to a number, open addressing: derive and
 * the comparison look packets up by PSN for every frame, and interop
 * captures hold tens of thousands of them.
 */
struct hmap {
	uint64_t *key;               /* 0: empty slot */
	size_t *val;
	size_t cap, n;
};

static inline size_t hslot(const struct hmap *h, uint64_t k)
{
	size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (h->cap - 1);
	while (h->key[i] && h->key[i] != k)
		i = (i + 1) & (h->cap - 1);
	return i;
}

static inline size_t *hget(const struct hmap *h, uint64_t k)
{
	if (!h->cap)
		return NULL;
	size_t i = hslot(h, k);
	return h->key[i] ? &h->val[i] : NULL;
}

static inline int hput(struct hmap *h, uint64_t k, size_t v)
{
	if (2 * (h->n + 1) > h->cap) {
		struct hmap g = { .cap = h->cap ? 2 * h->cap : 1024 };
		g.key = calloc(g.cap, sizeof(*g.key));
		g.val = calloc(g.cap, sizeof(*g.val));
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -ENOMEM;
		}
		for (size_t i = 0; i < h->cap; i++)
			if (h->key[i]) {
				size_t j = hslot(&g, h->key[i]);
				g.key[j] = h->key[i];
				g.val[j] = h->val[i];
				g.n++;
			}
		free(h->key);
		free(h->val);
		*h = g;
	}
	size_t i = hslot(h, k);
	if (!h->key[i])
		h->n++;
	h->key[i] = k;
	h->val[i] = v;
	return 0;
}

static inline void hfree(struct hmap *h)
{
	free(h->key);
	free(h->val);
}

#endif
