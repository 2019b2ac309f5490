/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Where a poll's time goes, stage by stage: a diagnostic build
 * (`meson setup -Dstage_trace=true`) reads the cycle counter at every
 * change of stage in droce_ctx_poll() and charges the cycles since the
 * previous change to the stage that was running. Without that option
 * (the default) the marks compile to nothing and
 * droce_ctx_get_stage_stats() says -ENOTSUP.
 *
 * A poll that found nothing to do (no frame in, none out, no service
 * work) is charged whole to DROCE_STAGE_IDLE, so the other stages are the
 * cost of work; DROCE_STAGE_CALLER is the time between polls (the
 * application's own loop: posting, polling its CQs, and its waiting).
 * Divided by the operations a run did, they give a per-operation cost per
 * stage, e.g. nanoseconds per round trip of a ping-pong.
 *
 * Cycles are the CPU's invariant time-stamp counter on x86-64 (rdtsc),
 * the virtual counter on AArch64, nanoseconds elsewhere: convert with the
 * counter's rate, which the caller knows (DPDK's rte_get_tsc_hz(); @ref
 * droce_stage_stats.hz is filled where droce knows it, 0 otherwise).
 */
#ifndef DROCE_TRACE_H
#define DROCE_TRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_ctx;

/** What a poll is doing. */
enum droce_stage {
	DROCE_STAGE_CALLER = 0, /**< outside droce_ctx_poll() */
	DROCE_STAGE_LINK_RX,    /**< the link's receive burst and buffer release */
	DROCE_STAGE_RX_REQ,     /**< request frames: parse, checks, ICRC, placement, execution */
	DROCE_STAGE_RX_RESP,    /**< ACKs, NAKs, READ and atomic responses: the completer */
	DROCE_STAGE_TIMERS,     /**< due timers and the context's service (the CM) */
	DROCE_STAGE_BUILD,      /**< the transmit turn: requests, READ and atomic responses
				     built (headers, ICRC) and queued to the link */
	DROCE_STAGE_ACK,        /**< ACKs and NAKs (RC_ACKNOWLEDGE) built and queued (not in BUILD) */
	DROCE_STAGE_LINK_TX,    /**< the link's transmit flush (the PMD's burst) */
	DROCE_STAGE_IDLE,       /**< polls that found nothing, whole */
	DROCE_STAGE_COUNT
};

struct droce_stage_stats {
	uint64_t cycles[DROCE_STAGE_COUNT]; /**< charged to each stage */
	uint64_t entries[DROCE_STAGE_COUNT]; /**< times each stage was entered */
	uint64_t work_polls, idle_polls;    /**< polls that did work / found none */
	uint64_t hz;                        /**< counter rate if droce knows it, else 0 */
};

/**
 * Copy the context's stage counters (from its poll thread, or while no
 * poll runs).
 * @return 0, -EINVAL (a NULL argument) or -ENOTSUP (built without
 *         -Dstage_trace=true).
 */
int droce_ctx_get_stage_stats(const struct droce_ctx *ctx, struct droce_stage_stats *out);

/** Reset them to zero (e.g. after a warm-up); same return values. */
int droce_ctx_reset_stage_stats(struct droce_ctx *ctx);

/** "caller", "link_rx", "rx_req", "rx_resp", "timers", "build", "ack", "link_tx", "idle"; NULL past the last. */
const char *droce_stage_name(enum droce_stage s);

#ifdef __cplusplus
}
#endif

#endif
