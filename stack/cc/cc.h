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
		} aimd;
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
};

/** Find an algorithm by name; NULL (the argument) gives the default ("fixed"). */
const struct droce_cc_algo *droce_cc_find(const char *name);

/** The registry, NULL-terminated (for --help listings). */
extern const struct droce_cc_algo *const droce_cc_registry[];

extern const struct droce_cc_algo droce_cc_fixed;
extern const struct droce_cc_algo droce_cc_aimd;

#endif
