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
	uint32_t max_pkts;      /**< configured ceiling (params.h), or window tuning's */
	uint64_t max_bytes;
	double line_bpns;       /**< link rate in bytes per ns (set before init; 0 = 100 Gbit/s) */
	bool wnd_is_ceiling;    /**< the algorithm keeps no window of its own: wnd = max */
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
			uint64_t last_cnp;  /**< time of the last CNP */
			uint64_t last_alpha;/**< start of the alpha-update period (K) */
			uint64_t last_inc;  /**< start of the rate-increase timer period (T) */
			uint64_t bytes;     /**< bytes sent toward the next byte-counter event (B) */
			uint32_t t_cnt;     /**< timer events since the last cut */
			uint32_t bc_cnt;    /**< byte-counter events since the last cut */
			bool cut;           /**< a CNP has arrived: increase until line rate */
		} dcqcn;
		struct {
			double cwnd;        /**< window in bytes (may be below one packet) */
			double rtt;         /**< smoothed delay, ns (pacing) */
			uint64_t acked;     /**< bytes ACKed since the last delay sample */
			uint64_t last_dec;  /**< time of the last decrease */
			uint64_t next_tx;   /**< pacing below one packet per RTT */
			uint32_t pkt;       /**< largest payload sent (a packet's size) */
			uint64_t delay;     /**< last delay sample, ns */
		} swift;
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
	/** An RTT sample (cc/rtt.h: AckReq sent -> covering ACK). May be NULL. */
	void (*on_rtt)(struct droce_cc_state *s, uint64_t rtt_ns, uint64_t now);
};

/**
 * Window tuning moved the ceiling (transport/window.c): the window never exceeds
 * it, and an algorithm without a window of its own (wnd_is_ceiling) uses it.
 */
static inline void droce_cc_set_ceiling(struct droce_cc_state *s, uint32_t pkts, uint64_t bytes)
{
	s->max_pkts = pkts;
	s->max_bytes = bytes;
	if (s->wnd_is_ceiling || s->wnd_pkts > pkts)
		s->wnd_pkts = pkts;
	if (s->wnd_is_ceiling || s->wnd_bytes > bytes)
		s->wnd_bytes = bytes;
}

/** Find an algorithm by name; NULL (the argument) gives the default ("fixed"). */
const struct droce_cc_algo *droce_cc_find(const char *name);

/** The registry, NULL-terminated (for --help listings). */
extern const struct droce_cc_algo *const droce_cc_registry[];

extern const struct droce_cc_algo droce_cc_fixed;
extern const struct droce_cc_algo droce_cc_aimd;
extern const struct droce_cc_algo droce_cc_dcqcn;
extern const struct droce_cc_algo droce_cc_swift;

/*
 * DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.1 and its
 * parameter choices; docs/cc.md compares them with mlx5's documented
 * defaults). Rates in bytes per ns (1 Gbit/s = 0.125).
 */
#define DROCE_DCQCN_LINE_RATE_BPNS 12.5  /* 100 Gbit/s: the default line rate */
#define DROCE_DCQCN_MIN_RATE_BPNS 0.0125 /* 100 Mbit/s floor */
#define DROCE_DCQCN_G (1.0 / 256.0)      /* alpha gain g */
#define DROCE_DCQCN_ALPHA_NS 55000u      /* K: alpha decays once per K without a CNP */
#define DROCE_DCQCN_PERIOD_NS 55000u     /* T: rate-increase timer */
#define DROCE_DCQCN_BYTES (10u * 1024u * 1024u) /* B: byte counter, 10 MB */
#define DROCE_DCQCN_FAST_ROUNDS 5u       /* F: fast-recovery events before increase */
#define DROCE_DCQCN_RAI_BPNS 0.005       /* R_AI: 40 Mbit/s per additive step */
#define DROCE_DCQCN_RHAI_BPNS 0.05       /* R_HAI: 400 Mbit/s per hyper step (10 x R_AI) */

/*
 * Swift (Kumar et al., SIGCOMM 2020, section 3): delay-based window with a
 * target delay, additive increase, multiplicative decrease proportional to
 * the excess delay, and pacing once the window is below one packet.
 */
#define DROCE_SWIFT_BASE_TARGET_NS 15000u /* base target delay */
#define DROCE_SWIFT_FS_RANGE_NS 10000.0   /* flow scaling: extra target at tiny windows */
#define DROCE_SWIFT_FS_MIN_CWND 0.1       /* ... between these windows, in packets */
#define DROCE_SWIFT_FS_MAX_CWND 100.0
#define DROCE_SWIFT_AI_BYTES 4096.0       /* additive increase per RTT: one packet */
#define DROCE_SWIFT_BETA 0.8              /* multiplicative decrease factor */
#define DROCE_SWIFT_MAX_MDF 0.5           /* most one decrease may take */
#define DROCE_SWIFT_MIN_CWND 64.0         /* bytes: 1/64 of a 4 KB packet */
#define DROCE_SWIFT_INIT_CWND 32768.0     /* bytes */

#endif
