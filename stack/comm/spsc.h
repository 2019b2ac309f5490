/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bounded single-producer/single-consumer ring of fixed-size slots, C11
 * atomics only (acquire/release on the two indices, each on its own cache
 * line; each side caches the other's index to touch the shared line only
 * when it must). No locks: the comm-core hot path never blocks.
 */
#ifndef DROCE_COMM_SPSC_H
#define DROCE_COMM_SPSC_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct droce_spsc {
	alignas(64) _Atomic uint32_t head;  /* next slot the producer writes */
	uint32_t tail_cache;                /* producer's view of tail */
	alignas(64) _Atomic uint32_t tail;  /* next slot the consumer reads */
	uint32_t head_cache;                /* consumer's view of head */
	alignas(64) uint32_t mask;          /* slots - 1 (slots is a power of two) */
	uint32_t slot_size;
	uint8_t *slots;
};

/**
 * Initialise @p r over @p mem (slots * slot_size bytes). @p slots must be a
 * power of two >= 2. @return 0 or -EINVAL.
 */
int droce_spsc_init(struct droce_spsc *r, void *mem, uint32_t slots, uint32_t slot_size);

/** Producer: a slot to fill, or NULL when full. Publish it with droce_spsc_push(). */
static inline void *droce_spsc_reserve(struct droce_spsc *r)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (h - r->tail_cache > r->mask) {
		r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (h - r->tail_cache > r->mask)
			return NULL;
	}
	return r->slots + (size_t)(h & r->mask) * r->slot_size;
}

static inline void droce_spsc_push(struct droce_spsc *r)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/** Consumer: the oldest slot, or NULL when empty. Release it with droce_spsc_pop(). */
static inline void *droce_spsc_peek(struct droce_spsc *r)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (t == r->head_cache) {
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
		if (t == r->head_cache)
			return NULL;
	}
	return r->slots + (size_t)(t & r->mask) * r->slot_size;
}

static inline void droce_spsc_pop(struct droce_spsc *r)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

#endif
