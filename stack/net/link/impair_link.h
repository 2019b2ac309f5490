/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A link that wraps another and impairs what it receives: the receive-side
 * shim behind `droce-perf --impair`, usable over any link (a DPDK port,
 * memif, af_packet, the in-memory pair). TX passes straight through.
 *
 * Frames keep living in the inner link's buffers (mbufs) while held for
 * reordering; a duplicate is a copy in the wrapper's own small pool, since
 * the inner buffer can be released only once. Frames still held at destroy
 * time are released to the inner link.
 */
#ifndef DROCE_NET_LINK_IMPAIR_LINK_H
#define DROCE_NET_LINK_IMPAIR_LINK_H

#include <droce/link.h>

#include "net/diag/impair.h"

/** Largest frame a duplicate copy holds; longer frames are not duplicated (counted). */
#define DROCE_IMPAIR_LINK_FRAME_MAX 9216u

struct droce_impair_link;

/**
 * Wrap @p inner with @p imp (which stays the caller's).
 * @return the wrapper, or NULL with errno EINVAL (no inner ops or rx_burst, no shim) or ENOMEM.
 */
struct droce_impair_link *droce_impair_link_create(struct droce_link inner, struct droce_impair *imp);

/** Release held frames to the inner link and free the wrapper. NULL is a no-op. */
void droce_impair_link_destroy(struct droce_impair_link *il);

/** The wrapped link, for struct droce_ctx_params.link. */
struct droce_link droce_impair_link_get(struct droce_impair_link *il);

/** Duplicates skipped because no copy slot was free or the frame was too long. */
uint64_t droce_impair_link_dup_skipped(const struct droce_impair_link *il);

#endif
