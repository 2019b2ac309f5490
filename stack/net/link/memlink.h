/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * In-memory link pair: two struct droce_link ends back to back, so two
 * contexts in one process talk RoCEv2 without DPDK (transport tests, the
 * engine benchmark). Frames tx'd on one end appear, in order, at the other
 * end's rx_burst().
 *
 * Each direction is a bounded FIFO of fixed-size slots. tx() copies the
 * header, the payload segments and the trailer into one contiguous slot
 * (the wire image; tx_fold() folds the ICRC into the payload's copy) and returns -ENOBUFS when @c depth frames are already
 * queued (-EMSGSIZE, counted, for a frame over max_frame: a bug upstream,
 * not congestion). Each direction may carry an impairment shim (net/diag/impair.h),
 * applied as the frame enters the FIFO, and a tap sees every frame sent
 * (before impairment) with its fate, so tests can assert the exact packets
 * on the wire.
 *
 * Held (reordered) frames come back after the frames they wait for, or, when
 * a receiver finds its FIFO empty, at that rx_burst(): a late frame is
 * never lost for lack of later traffic (droce_memlink_set_flush_idle()).
 *
 * Single-threaded: both ends are driven by the same thread (no locks).
 * DPDK-free.
 */
#ifndef DROCE_NET_LINK_MEMLINK_H
#define DROCE_NET_LINK_MEMLINK_H

#include <stdint.h>

#include <droce/link.h>

#include "net/diag/impair.h"

/** Default frames queued per direction. */
#define DROCE_MEMLINK_DEFAULT_DEPTH 1024u
/** Default slot size: a 4096-byte MTU frame with VLAN and IPv6 fits. */
#define DROCE_MEMLINK_DEFAULT_MAX_FRAME 4352u

/** Direction 0 carries end 0 -> end 1, direction 1 end 1 -> end 0. */
enum droce_memlink_dir {
	DROCE_MEMLINK_0_TO_1 = 0,
	DROCE_MEMLINK_1_TO_0 = 1,
};

struct droce_memlink_params {
	uint32_t depth;      /**< frames queued per direction before tx() says -ENOBUFS; 0 = default */
	uint32_t max_frame;  /**< largest frame in bytes; 0 = default */
};

/** Per-direction counters. */
struct droce_memlink_stats {
	uint64_t tx_frames, tx_bytes;   /**< accepted by tx() */
	uint64_t tx_nobufs;             /**< tx() refused: FIFO full */
	uint64_t tx_too_big;            /**< tx() refused: frame over max_frame (-EMSGSIZE) */
	uint64_t rx_frames, rx_bytes;   /**< handed out by rx_burst() */
	uint64_t dropped, duplicated, held, corrupted; /**< impairment verdicts applied */
	uint64_t ecn_marked;            /**< frames the shim marked CE */
	uint64_t dup_nobufs;            /**< duplicates not made: no free slot */
};

/**
 * The tap: called for every frame tx() accepts, in transmission order across
 * both directions, with the bytes as sent (before any corruption) and the
 * verdict the impairment gave it (DROCE_IMPAIR_PASS without one).
 */
typedef void (*droce_memlink_tap_fn)(void *arg, enum droce_memlink_dir dir,
				     const uint8_t *frame, uint32_t len,
				     enum droce_impair_action fate, int corrupted);

struct droce_memlink;

/**
 * Create a link pair.
 * @param p NULL for the defaults
 * @return the pair, or NULL with errno EINVAL (max_frame below 64 or above
 *         65535, depth above 2^20) or ENOMEM.
 */
struct droce_memlink *droce_memlink_create(const struct droce_memlink_params *p);

/** Destroy a pair (frames in flight are freed). NULL is a no-op. */
void droce_memlink_destroy(struct droce_memlink *ml);

/**
 * One end of the pair, for droce_ctx_params.link. End 0 transmits on
 * direction 0 and receives on direction 1; end 1 the other way round.
 * @p end must be 0 or 1 (anything else gives end 1).
 */
struct droce_link droce_memlink_end(struct droce_memlink *ml, unsigned end);

/**
 * Impair direction @p dir with @p imp (not owned; NULL removes it). Frames
 * held by a previous shim are flushed into the FIFO first.
 * @return 0 or -EINVAL (NULL link, bad direction).
 */
int droce_memlink_set_impair(struct droce_memlink *ml, enum droce_memlink_dir dir,
			     struct droce_impair *imp);

/**
 * Whether a receiver finding direction @p dir empty takes the frames its
 * shim holds (on by default, so a late frame is never stranded). Tests that
 * need a frame held for exactly K later frames, however long that takes,
 * turn it off.
 * @return 0 or -EINVAL (NULL link, bad direction).
 */
int droce_memlink_set_flush_idle(struct droce_memlink *ml, enum droce_memlink_dir dir, int on);

/** Install (or with NULL remove) the tap. */
void droce_memlink_set_tap(struct droce_memlink *ml, droce_memlink_tap_fn fn, void *arg);

/** Frames queued or held in direction @p dir, not yet received. */
unsigned droce_memlink_pending(const struct droce_memlink *ml, enum droce_memlink_dir dir);

/**
 * Earliest time at which rx_burst() on direction @p dir would return a
 * frame: the arrival time of the oldest queued frame, 0 when held frames
 * would be handed to an idle receiver at once, UINT64_MAX when nothing is
 * on the way. Lets a virtual clock jump to the next arrival.
 */
uint64_t droce_memlink_next_ready(const struct droce_memlink *ml, enum droce_memlink_dir dir);

/**
 * One-way latency of direction @p dir: a frame sent at t reaches the
 * receiver's rx_burst(now) once now >= t + @p ns (0 by default). Frames
 * keep their order; the delay applies before the shim's reordering.
 * @return 0 or -EINVAL (NULL link, bad direction).
 */
int droce_memlink_set_delay(struct droce_memlink *ml, enum droce_memlink_dir dir, uint64_t ns);

/** Frames handed out by rx_burst() on direction @p dir and not yet released. */
unsigned droce_memlink_outstanding(const struct droce_memlink *ml, enum droce_memlink_dir dir);

/** Copy the counters of direction @p dir. @return 0 or -EINVAL. */
int droce_memlink_get_stats(const struct droce_memlink *ml, enum droce_memlink_dir dir,
			    struct droce_memlink_stats *out);

#endif
