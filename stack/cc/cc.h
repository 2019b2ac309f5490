/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control plug-ins (quicly cc.h shape): a const table of callbacks
 * per algorithm, a registry to find one by name, and per-QP state in a union
 * that lives inside the QP. The requester asks can_send() before every packet
 * and next_send_time() for pacing; the completer reports ACKs, losses and
 * CNPs. Every callback takes `now` (ns); none reads a clock.
 */
#ifndef DROCE_CC_H
#define DROCE_CC_H

#include <stdbool.h>
#include <stdint.h>

/** Per-QP congestion state: one member per algorithm. */
struct droce_cc_state {
	uint32_t wnd_pkts;      /**< current window, packets */
	uint64_t wnd_bytes;     /**< current window, bytes */
	uint32_t max_pkts;      /**< configured ceiling (params.h) */
	uint64_t max_bytes;
	union {
		struct {
			uint64_t last_cut;  /**< time of the last decrease */
			uint32_t acked;     /**< packets ACKed toward the next +1 */
			uint64_t acked_bytes; /**< bytes ACKed toward the next +4096 */
		} aimd;
		struct {
			double rc, rt;      /**< current and target rate, bytes per ns */
			double alpha;       /**< congestion estimate */
			uint64_t next_tx;   /**< pacing: earliest time of the next packet */
			uint64_t last_cnp;  /**< time of the last CNP (alpha decay, increase) */
			uint64_t last_inc;  /**< time of the last rate-increase step */
			uint32_t inc_rounds;/**< increase steps since the last cut */
		} dcqcn;
	} u;
	uint64_t losses, cnps;  /**< events seen, for stats */
};

struct droce_cc_algo {
	const char *name;
	/** Set the initial window from the configured ceilings. */
	void (*init)(struct droce_cc_state *s, uint32_t max_pkts, uint64_t max_bytes,
		     uint64_t now);
	/** Packets/bytes newly acknowledged (cumulative ACK, READ response, ...). */
	void (*on_ack)(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes, uint64_t now);
	/** A retransmission round started (ACK timeout or PSN-sequence NAK). */
	void (*on_loss)(struct droce_cc_state *s, bool timeout, uint64_t now);
	/** A CNP arrived (A17.9) or an ACK carried ECN feedback. */
	void (*on_cnp)(struct droce_cc_state *s, uint64_t now);
	/** May one more packet of @p bytes go out with this much in flight? */
	bool (*can_send)(const struct droce_cc_state *s, uint32_t inflight_pkts,
			 uint64_t inflight_bytes, uint32_t bytes, uint64_t now);
	/** Earliest time the next packet may leave (pacing); <= now = at once. */
	uint64_t (*next_send_time)(const struct droce_cc_state *s, uint64_t now);
	/** A packet of @p bytes (payload) left at @p now. May be NULL. */
	void (*on_sent)(struct droce_cc_state *s, uint32_t bytes, uint64_t now);
};

/** Find an algorithm by name; NULL (the argument) gives the default ("fixed"). */
const struct droce_cc_algo *droce_cc_find(const char *name);

/** The registry, NULL-terminated (for --help listings). */
extern const struct droce_cc_algo *const droce_cc_registry[];

extern const struct droce_cc_algo droce_cc_fixed;
extern const struct droce_cc_algo droce_cc_aimd;
extern const struct droce_cc_algo droce_cc_dcqcn;

/** DCQCN parameters (Zhu et al., SIGCOMM 2015; the defaults of mlx5). */
#define DROCE_DCQCN_LINE_RATE_BPNS 12.5  /* 100 Gbit/s in bytes per ns */
#define DROCE_DCQCN_MIN_RATE_BPNS 0.0125 /* 100 Mbit/s */
#define DROCE_DCQCN_G (1.0 / 256.0)
#define DROCE_DCQCN_PERIOD_NS 55000u     /* alpha decay and rate-increase period */
#define DROCE_DCQCN_FAST_ROUNDS 5u       /* fast-recovery steps before additive increase */
#define DROCE_DCQCN_RAI_BPNS 0.005       /* additive increase: 40 Mbit/s per step */

#endif
