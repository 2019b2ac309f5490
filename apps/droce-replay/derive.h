/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-replay --derive: infer a scenario for one side of a capture. The
 * side becomes droce: its QPs (QPNs, start PSNs, MTU from the traffic), the
 * regions the peer's RETH/AtomicETH name (READ responses and atomic ACKs
 * give their initial contents, WRITE payloads and atomics their expected
 * final contents), a posted receive for each SEND from the peer, and a work
 * request for each request the side sent itself. QP1/UD frames (the
 * rdma_cm's MADs) are left out: droce is RC only.
 */
#ifndef DROCE_REPLAY_DERIVE_H
#define DROCE_REPLAY_DERIVE_H

#include <stdbool.h>
#include <stdio.h>

#include "capture.h"

/**
 * Write a scenario for side @p ip of @p cap (read from @p cap_path) to @p out.
 * @return 0, or -EINVAL with the reason in @p err when the capture gives
 *         nothing to derive from (no RoCE traffic for that address, a
 *         conversation droce cannot play: UC, RoCEv1, unpaired QPs, an MTU
 *         that is not one of 256..4096) or -ENOMEM.
 */
int droce_rp_derive(const struct droce_rp_capture *cap, const char *cap_path, const char *ip,
		    FILE *out, char *err, size_t errlen);

/**
 * The same for a side that received through a seeded impairment shim
 * behind the capture point (droce-perf --impair @p impair). @p gone[i]
 * says capture frame i (0-based) never reached the side (the shim dropped
 * it: the caller runs the shim, which lives in the engine): derivation
 * ignores it, and the scenario says "impair SPEC" so that the replay
 * drops it too. NULL/NULL: droce_rp_derive().
 */
int droce_rp_derive_impaired(const struct droce_rp_capture *cap, const char *cap_path,
			     const char *ip, const char *impair, const bool *gone, FILE *out,
			     char *err, size_t errlen);

#endif
