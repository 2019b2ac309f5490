/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine benchmark's link between two threads (droce-bench-engine -T):
 * one single-producer/single-consumer ring per direction (stack/comm's
 * struct droce_spsc: its two indices on their own cache lines, each side
 * caching the other's), frames copied into fixed slots as a NIC would DMA
 * them. Work that can be per burst is: the producer publishes what tx()
 * queued once, on tx_flush (one release store per poll, a doorbell); the
 * consumer takes up to a burst with one acquire load and gives the slots
 * back with one release store in rx_release. Nothing is locked, so a side
 * never waits for the other inside the link.
 */
#ifndef DROCE_BENCH_SPSC_LINK_H
#define DROCE_BENCH_SPSC_LINK_H

#include <stdalign.h>
#include <stdint.h>

#include <droce/link.h>

#include "comm/spsc.h"

#define SPSC_LINK_SLOTS 1024u     /* per direction, a power of two */
#define SPSC_LINK_SLOT_MAX 4416u  /* a length word, then the frame (MTU 4096 + headers) */

struct spsc_link_dir {
	struct droce_spsc r;
	alignas(64) uint32_t pending; /* producer's: queued by tx(), not yet published */
};

struct spsc_link {
	struct spsc_link_dir d[2];    /* d[i]: frames side i sends */
};

/** One side of a link: the `priv` of spsc_link_ops. */
struct spsc_end {
	struct spsc_link *l;
	int side;
};

/**
 * Allocate both directions' slots, @p frame_max bytes of frame each (at
 * most SPSC_LINK_SLOT_MAX - 4), rounded up to whole cache lines with the
 * length word: small frames then sit next to each other, so the receiving
 * core streams through a ring that fits its cache instead of missing on
 * every frame's first line. @return 0, -EINVAL or -ENOMEM.
 */
int spsc_link_init(struct spsc_link *l, uint32_t frame_max);
void spsc_link_fini(struct spsc_link *l);

extern const struct droce_link_ops spsc_link_ops;

#endif
