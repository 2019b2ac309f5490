/* SPDX-License-Identifier: BSD-3-Clause */
#include "spsc_link.h"

#include "slot_link.h" /* bench_frame_copy */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Burst operations on stack/comm's ring, with its discipline: the producer
 * writes slots at head + k and publishes them with one release store of
 * head; the consumer reads slots at tail + k after an acquire load of head
 * and frees them with one release store of tail. droce_spsc_reserve/push
 * and peek/pop do the same one slot at a time.
 */
static inline uint8_t *slot_at(const struct droce_spsc *r, uint32_t i)
{
	return r->slots + (size_t)(i & r->mask) * r->slot_size;
}

static int sl_tx(void *priv, const struct droce_tx_frame *f, uint64_t now)
{
	(void)now;
	struct spsc_end *e = priv;
	struct spsc_link_dir *d = &e->l->d[e->side];
	struct droce_spsc *r = &d->r;
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed) + d->pending;
	if (h - r->tail_cache > r->mask) {
		r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (h - r->tail_cache > r->mask)
			return -ENOBUFS;
	}
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	if (len > r->slot_size - 4)
		return -EINVAL;
	uint8_t *s = slot_at(r, h);
	bench_frame_copy(s + 4, f);
	memcpy(s, &len, 4);
	d->pending++;
	return 0;
}

/* The doorbell: everything tx() queued in this poll becomes visible at once. */
static void sl_flush(void *priv, uint64_t now)
{
	(void)now;
	struct spsc_end *e = priv;
	struct spsc_link_dir *d = &e->l->d[e->side];
	if (!d->pending)
		return;
	uint32_t h = atomic_load_explicit(&d->r.head, memory_order_relaxed);
	atomic_store_explicit(&d->r.head, h + d->pending, memory_order_release);
	d->pending = 0;
}

static unsigned sl_rx(void *priv, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	(void)now;
	struct spsc_end *e = priv;
	struct spsc_link_dir *d = &e->l->d[1 - e->side];
	struct droce_spsc *r = &d->r;
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t avail = r->head_cache - t;
	if (avail < n) {
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
		avail = r->head_cache - t;
	}
	unsigned k = avail < n ? avail : n;
	for (unsigned i = 0; i < k; i++) {
		const uint8_t *s = slot_at(r, t + i);
		uint32_t len;
		memcpy(&len, s, 4);
		f[i].data = s + 4;
		f[i].len = len;
		f[i].handle = NULL;
	}
	return k;
}

static void sl_release(void *priv, struct droce_rx_frame *f, unsigned n)
{
	(void)f;
	struct spsc_end *e = priv;
	struct spsc_link_dir *d = &e->l->d[1 - e->side];
	uint32_t t = atomic_load_explicit(&d->r.tail, memory_order_relaxed);
	atomic_store_explicit(&d->r.tail, t + n, memory_order_release);
}

int spsc_link_init(struct spsc_link *l, uint32_t frame_max)
{
	memset(l, 0, sizeof(*l));
	if (frame_max == 0 || frame_max > SPSC_LINK_SLOT_MAX - 4)
		return -EINVAL;
	uint32_t slot = (4 + frame_max + 63) & ~63u; /* a frame starts on its own cache line */
	size_t bytes = (size_t)SPSC_LINK_SLOTS * slot;
	for (int i = 0; i < 2; i++) {
		void *mem = aligned_alloc(64, bytes);
		if (!mem || droce_spsc_init(&l->d[i].r, mem, SPSC_LINK_SLOTS, slot)) {
			free(mem);
			spsc_link_fini(l);
			return -ENOMEM;
		}
		memset(mem, 0, bytes); /* fault it in now */
	}
	return 0;
}

void spsc_link_fini(struct spsc_link *l)
{
	for (int i = 0; i < 2; i++) {
		free(l->d[i].r.slots);
		l->d[i].r.slots = NULL;
	}
}

const struct droce_link_ops spsc_link_ops = {
	.tx = sl_tx, .tx_flush = sl_flush, .rx_burst = sl_rx, .rx_release = sl_release,
};
