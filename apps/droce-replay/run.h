/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run a scenario through a fresh droce context: a link of its own feeds the
 * peer's frames (rewritten onto droce's QPNs and rkeys) on a virtual clock
 * that follows the capture's timestamps and records every frame droce
 * sends; receives and work requests are posted at their scenario times;
 * then frames, memory and completions are compared.
 */
#ifndef DROCE_REPLAY_RUN_H
#define DROCE_REPLAY_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture.h"
#include "scenario.h"

/** Exit codes of droce-replay. */
enum { DROCE_RP_MATCH = 0, DROCE_RP_MISMATCH = 1, DROCE_RP_BAD_INPUT = 2 };

/**
 * Replay @p s against @p cap, printing the report to @p out.
 * @return DROCE_RP_MATCH, DROCE_RP_MISMATCH, or DROCE_RP_BAD_INPUT when
 *         droce refuses the scenario's setup (reason printed with its line).
 */
int droce_rp_run(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap, FILE *out);

/**
 * As droce_rp_run(), and write the replayed conversation to @p pcap_out
 * (NULL: none): the peer's frames as fed (QPNs and rkeys rewritten) and
 * droce's frames, on the virtual clock, for Wireshark or droce-dump.
 */
int droce_rp_run_write(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
		       FILE *out, const char *pcap_out);

/**
 * Which frames of @p cap a side at @p ip (version @p ipv) never received
 * through droce's receive-side shim @p spec (droce-perf --impair SPEC):
 * the peer's frames, in capture order, go through the same seeded shim
 * the replay uses; @p gone[i] is set for capture frame i it drops.
 * @return 0, or -EINVAL (a bad SPEC, reason in @p err), -ENOMEM, -ENOTSUP
 *         (built without the engine).
 */
int droce_rp_impair_mask(const char *spec, const struct droce_rp_capture *cap, int ipv,
			 const uint8_t ip[16], bool *gone, char *err, size_t errlen);

#endif
