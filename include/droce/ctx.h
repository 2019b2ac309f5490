/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The context: one per poll thread (principle 1, docs/architecture.md). It owns a link (a
 * port queue or an in-memory link), its QPs, MRs, CQs and timers, and is
 * driven by exactly one thread calling droce_ctx_poll(). No globals: many
 * contexts live in one process (tests, simulation, multi-core).
 *
 * Time is an argument (principle 2, docs/architecture.md): every call that needs the time
 * takes `now` in nanoseconds; droce never reads a clock itself. The
 * production loop reads the TSC once per iteration; tests drive a virtual
 * clock and can jump to droce_ctx_next_deadline().
 */
#ifndef DROCE_CTX_H
#define DROCE_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/link.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_ctx;

/** Context parameters; droce_ctx_params_init() fills the defaults. */
struct droce_ctx_params {
	uint8_t ip_version;       /**< 4 or 6: the family of @p ip */
	uint8_t ip[16];           /**< this context's address (IPv4: first 4 bytes) */
	uint8_t mac[6];
	struct droce_link link;   /**< how frames move */
	uint32_t max_qps;         /**< QP table size */
	uint32_t max_mrs;         /**< MR table size */
	uint32_t burst;           /**< frames per RX burst */
	uint64_t seed;            /**< seeds the context's random draws (rkeys, UDP source
				       ports): a given seed repeats a run exactly (simulation,
				       replay); 0 = unpredictable, from getrandom(2) */
	const char *cc;           /**< congestion control by name (stack/cc): "fixed", "aimd",
				       "dcqcn"; NULL = "fixed" */
	uint32_t window_pkts;     /**< per-QP send window ceiling in packets; 0 = DROCE_DEFAULT_WINDOW_PKTS */
	uint64_t window_bytes;    /**< ... in bytes; 0 = DROCE_DEFAULT_WINDOW_BYTES */
	/* RTT-driven timeout and window, rate-based cc (docs/cc.md) */
	uint8_t timeout_mode;     /**< enum droce_timeout_mode; 0 = DROCE_DEFAULT_TIMEOUT_MODE */
	uint64_t rto_min_ns;      /**< adaptive timeout floor; 0 = DROCE_DEFAULT_RTO_MIN_NS */
	bool window_tune;         /**< window follows delivery rate x min RTT (x2), within
				       [window_min_bytes, window_bytes] */
	uint64_t window_min_bytes; /**< 0 = DROCE_DEFAULT_WINDOW_MIN_BYTES */
	double line_rate_gbps;    /**< where rate-based cc (dcqcn) starts; 0 = 100 */
	uint8_t max_mtu;          /**< enum droce_mtu (verbs.h): the largest path MTU the link
				       carries (a port's roce_mtu); modify_qp refuses a larger
				       one; 0 = 4096 */
	uint64_t rto_high_ns;     /**< adaptive timeout while many packets are outstanding
				       or the link was paused lately (docs/cc.md);
				       0 = DROCE_DEFAULT_RTO_HIGH_NS */
};

/** ACK timeout of a QP (docs/cc.md). */
enum droce_timeout_mode {
	DROCE_TIMEOUT_DEFAULT = 0,  /**< the context's (DROCE_DEFAULT_TIMEOUT_MODE) */
	DROCE_TIMEOUT_IBTA = 1,     /**< the IBTA Local ACK Timeout as set (9.7.6.1.3) */
	DROCE_TIMEOUT_ADAPTIVE = 2, /**< RFC 6298 from measured RTT, the IBTA value as ceiling */
};

/** Fill @p p with the defaults of include/droce/params.h (no link, no address). */
void droce_ctx_params_init(struct droce_ctx_params *p);

/**
 * Create a context.
 * @return the context, or NULL with errno EINVAL (no link ops, bad ip_version,
 *         unknown cc name, max_mtu not a droce_mtu), ENOMEM, or the errno of
 *         getrandom(2) when no seed was given and it failed.
 */
struct droce_ctx *droce_ctx_create(const struct droce_ctx_params *p);

/** Destroy a context and every QP, CQ and MR it still owns. @return 0 or -EINVAL. */
int droce_ctx_destroy(struct droce_ctx *ctx);

/**
 * One iteration of the poll loop: receive a burst and hand each frame to the
 * responder or completer, fire the timers due at @p now, let every QP with
 * work and window transmit, flush the link.
 * @return the number of frames received plus sent (0: idle).
 */
unsigned droce_ctx_poll(struct droce_ctx *ctx, uint64_t now);

/**
 * Earliest time a timer (ACK timeout, RNR wait, pacing) wants to run, or
 * UINT64_MAX when none is armed. Lets a virtual clock jump ahead.
 */
uint64_t droce_ctx_next_deadline(const struct droce_ctx *ctx);

/** Context-wide counters. drop[] is indexed by enum droce_drop_reason (stack/model/drop.h). */
#define DROCE_DROP_REASON_MAX 64
struct droce_ctx_stats {
	uint64_t rx_frames, tx_frames, tx_busy;
	uint64_t not_roce;        /**< frames that were not RoCE (ARP, ICMP ... reaching the core) */
	uint64_t drop[DROCE_DROP_REASON_MAX];
};

/** Copy the context counters. @return 0 or -EINVAL. */
int droce_ctx_get_stats(const struct droce_ctx *ctx, struct droce_ctx_stats *out);

/**
 * The context's QPs (RC and UD; not the GSI QP), in QPN order: up to @p max
 * into @p out (which may be NULL with @p max 0). From the context's thread.
 * @return how many there are (more than @p max: the first @p max written).
 */
struct droce_qp;
unsigned droce_ctx_qps(const struct droce_ctx *ctx, struct droce_qp **out, unsigned max);

/** Name of a drop reason index, e.g. "BAD_ICRC", "UNKNOWN_QPN"; NULL past the last. */
const char *droce_drop_reason_name(unsigned reason);

#ifdef __cplusplus
}
#endif

#endif
