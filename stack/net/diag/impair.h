/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Impairment shim: deterministic, seeded packet loss, reordering,
 * duplication and corruption between two RoCE endpoints. This machine's
 * kernel has no netem, so every loss test and `droce-perf --impair` get
 * their misbehaving network from here.
 *
 * The shim decides, the link acts. It never owns a frame: the link hands it
 * the frame's bytes (and an opaque handle, an mbuf or a buffer slot) and
 * gets a verdict back:
 *
 *   - PASS: deliver the frame;
 *   - DROP: free it;
 *   - DUP:  deliver it twice (the link makes the copy);
 *   - HOLD: the shim has queued the handle; it comes back from
 *           droce_impair_release() once @c hold later frames have gone
 *           through droce_impair_decide() (or from droce_impair_flush()),
 *           i.e. it is delivered late, out of order.
 *
 * Corruption is done in place, before the verdict, and reported in it.
 *
 * Two sources of misbehaviour, checked in this order:
 *   1. programmable rules (tests): match the Nth frame, a BTH opcode and/or a
 *      PSN, act on the first K matches or on all of them;
 *   2. probabilities from a spec string "drop=P,reorder=P,dup=P,corrupt=P,seed=N"
 *      (plus ecn=P: a congested switch marking ECN-capable packets CE)
 *      drawn from the shim's own PRNG (splitmix64), so a seed reproduces a run.
 *
 * No globals, no clock, no rand(): one shim per direction of a link, driven by
 * the thread that drives the link. DPDK-free (bytes in, verdicts out).
 */
#ifndef DROCE_NET_DIAG_IMPAIR_H
#define DROCE_NET_DIAG_IMPAIR_H

#include <stddef.h>
#include <stdint.h>

/** Most handles one shim holds at a time; a HOLD beyond it becomes a PASS (counted). */
#define DROCE_IMPAIR_MAX_HELD 64u
/** Most programmable rules per shim. */
#define DROCE_IMPAIR_MAX_RULES 32u
/** Default for reorder_depth: a reordered frame waits for 1..3 later frames. */
#define DROCE_IMPAIR_DEFAULT_REORDER_DEPTH 3u

/** Probabilistic impairment, as parsed from a spec string. */
struct droce_impair_spec {
	double drop;            /**< probability a frame is dropped */
	double reorder;         /**< probability a frame is held back (delivered late) */
	double dup;             /**< probability a frame is delivered twice */
	double corrupt;         /**< probability one byte of the frame is flipped */
	double ecn;             /**< probability an ECN-capable IP packet is marked CE (A17.9) */
	uint64_t seed;          /**< PRNG seed (0 is a valid seed) */
	uint32_t reorder_depth; /**< a held frame waits for 1..reorder_depth later frames */
};

/**
 * Parse "drop=P,reorder=P,dup=P,corrupt=P,seed=N[,ecn=P][,reorder_depth=N]".
 * Keys may come in any order and any may be left out (then 0; seed 0;
 * reorder_depth DROCE_IMPAIR_DEFAULT_REORDER_DEPTH); the empty string is no
 * impairment. P is a decimal probability in [0, 1]; N a decimal or 0x-hex
 * unsigned 64-bit integer (reorder_depth: 1..DROCE_IMPAIR_MAX_HELD).
 *
 * @param s    the spec (NULL is treated as "")
 * @param out  filled only on success
 * @param err  when not NULL, receives a one-line reason on failure
 * @param errlen size of @p err
 * @return 0, or -EINVAL (unknown key, key without '=', empty or malformed
 *         number, probability outside [0, 1], repeated key, depth out of
 *         range) with the reason in @p err.
 */
int droce_impair_parse(const char *s, struct droce_impair_spec *out, char *err, size_t errlen);

/** What the link must do with a frame. */
enum droce_impair_action {
	DROCE_IMPAIR_PASS,
	DROCE_IMPAIR_DROP,
	DROCE_IMPAIR_DUP,
	DROCE_IMPAIR_HOLD,
	DROCE_IMPAIR_CORRUPT,   /**< rule action only: flip a byte, then go on deciding */
	DROCE_IMPAIR_MARK_ECN,  /**< rule action only: mark CE if ECN-capable, then go on deciding */
};

/** Name of an action, e.g. "DROP". Never NULL. */
const char *droce_impair_action_name(enum droce_impair_action a);

/** Rule match fields (bit mask in droce_impair_rule.match). Every set field must match. */
#define DROCE_IMPAIR_M_NTH    (1u << 0) /**< the nth frame seen by the shim (1-based) */
#define DROCE_IMPAIR_M_OPCODE (1u << 1) /**< BTH opcode */
#define DROCE_IMPAIR_M_PSN    (1u << 2) /**< BTH PSN */
#define DROCE_IMPAIR_M_DQPN   (1u << 3) /**< BTH destination QP */

/** A programmable rule. */
struct droce_impair_rule {
	enum droce_impair_action action; /**< DROP, DUP, HOLD, CORRUPT or MARK_ECN */
	unsigned match;      /**< DROCE_IMPAIR_M_*; 0 matches every frame */
	uint64_t nth;        /**< with M_NTH */
	uint8_t opcode;      /**< with M_OPCODE */
	uint32_t psn;        /**< with M_PSN (24 bits) */
	uint32_t dqpn;       /**< with M_DQPN (24 bits) */
	uint32_t count;      /**< act on the first @c count matches; 0 = on every match */
	uint32_t hold;       /**< HOLD: release after this many later frames (>= 1) */
	uint32_t offset;     /**< CORRUPT: byte offset in the frame (ignored past its end) */
	uint8_t xor_mask;    /**< CORRUPT: bits flipped there; 0 means 0xFF */
};

/** Counters: every frame lands in exactly one of passed/dropped/duplicated/held. */
struct droce_impair_stats {
	uint64_t frames;        /**< frames decided */
	uint64_t passed;
	uint64_t dropped;
	uint64_t duplicated;
	uint64_t held;
	uint64_t released;      /**< held frames handed back (release or flush) */
	uint64_t corrupted;     /**< frames with a flipped byte (in addition to their verdict) */
	uint64_t ecn_marked;    /**< frames marked CE (in addition to their verdict) */
	uint64_t hold_overflow; /**< HOLDs turned into PASS: too many frames held */
	uint64_t rule_hits;     /**< rule actions applied (corruptions included) */
};

/** A verdict on one frame. */
struct droce_impair_verdict {
	enum droce_impair_action action; /**< PASS, DROP, DUP or HOLD */
	uint32_t hold;                   /**< HOLD: later frames it waits for */
	int corrupted;                   /**< a byte was flipped in place */
	int ecn_marked;                  /**< the IP ECN field was set to CE in place */
};

struct droce_impair;

/**
 * Create a shim.
 * @param spec probabilities and seed; NULL: no probabilistic impairment, seed 0
 * @return the shim, or NULL with errno EINVAL (probability outside [0, 1],
 *         reorder_depth 0 or above DROCE_IMPAIR_MAX_HELD) or ENOMEM.
 */
struct droce_impair *droce_impair_create(const struct droce_impair_spec *spec);

/** Destroy a shim. Handles still held are forgotten (the link owns them). NULL is a no-op. */
void droce_impair_destroy(struct droce_impair *imp);

/**
 * Add a rule; rules are tried in the order added.
 * @return 0; -EINVAL (NULL, bad action, HOLD with hold 0 or above
 *         DROCE_IMPAIR_MAX_HELD, psn/dqpn beyond 24 bits); -ENOSPC (rule table full).
 */
int droce_impair_add_rule(struct droce_impair *imp, const struct droce_impair_rule *r);

/** Remove every rule (counters and held frames stay). */
void droce_impair_clear_rules(struct droce_impair *imp);

/** Replace the probabilities (rules, counters and held frames stay). @return 0 or -EINVAL. */
int droce_impair_set_spec(struct droce_impair *imp, const struct droce_impair_spec *spec);

/**
 * Decide the fate of one frame and count it. Corruption and ECN marking
 * are applied to @p frame in place (marking rewrites the IPv4 header
 * checksum; the ICRC does not cover the ECN bits, A17.4.5.1). On HOLD the shim keeps @p handle; every other verdict
 * leaves it with the caller. Each call also ages the frames already held by
 * one: the link should call droce_impair_release() after acting on the
 * verdict, to deliver those now due after this one.
 *
 * Rule matching reads the BTH of RoCEv2 (UDP 4791, IPv4/IPv6, optional VLAN)
 * frames; frames it cannot read match only rules without opcode/PSN/QP fields.
 */
struct droce_impair_verdict droce_impair_decide(struct droce_impair *imp, uint8_t *frame,
						uint32_t len, void *handle);

/**
 * Take back up to @p n held handles that are due, oldest first.
 * @return how many were written to @p out.
 */
unsigned droce_impair_release(struct droce_impair *imp, void **out, unsigned n);

/** Take back up to @p n held handles whether due or not, oldest first. @return the count. */
unsigned droce_impair_flush(struct droce_impair *imp, void **out, unsigned n);

/** Handles currently held. */
unsigned droce_impair_held(const struct droce_impair *imp);

/** Copy the counters. */
void droce_impair_get_stats(const struct droce_impair *imp, struct droce_impair_stats *out);

/** How many times rule @p idx (0-based, in order added) has acted; 0 past the end. */
uint64_t droce_impair_rule_hits(const struct droce_impair *imp, unsigned idx);

#endif
