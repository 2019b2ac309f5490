/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs' link: the port's link with pure ACKs held, while the
 * application polls, for its next request to carry out (ack_hold.c).
 * No DPDK types: unit-tested over a fake inner link (tests/verbs/test_link.c).
 */
#ifndef DROCE_VERBS_ACK_HOLD_H
#define DROCE_VERBS_ACK_HOLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <droce/link.h>

/** How long an ACK may wait for a request to ride with (ns). A ping-pong
 *  program answers within a microsecond or two; a droce peer's adaptive
 *  ACK timeout can be as short as DROCE_DEFAULT_RTO_MIN_NS (16 us), and a
 *  hold near it would have the peer retransmit for nothing. */
#define DV_ACK_HOLD_NS 4000u

struct dv_link {
	struct droce_link inner;  /**< the port's */
	uint64_t hold_ns;
	bool app_polling;         /**< the application is inside poll_cq/get_cq_event */
	bool app_held;            /**< a flush was held back since the last one */
	unsigned acks, others;    /**< frames queued since the last flush */
	uint64_t acks_t0;         /**< when the first of those ACKs was queued */
	/** acks_t0 while a flush is held back, else 0: the progress thread
	 *  reads it without the context lock to send them in time. */
	atomic_uint_fast64_t held_since;
	/* Counters (DROCE_VERBS_STATS). */
	uint64_t held_polls;      /**< flushes held back */
	uint64_t piggybacked;     /**< held ACKs that left with a request */
	uint64_t expired;         /**< held ACKs that left alone (hold over, other caller) */
};

/** Wrap @p inner; @return the link to give droce_ctx_create(). */
struct droce_link dv_link_init(struct dv_link *l, struct droce_link inner, uint64_t hold_ns);
/** The application starts (true) or ends (false) a poll from poll_cq/get_cq_event. */
void dv_link_app_polling(struct dv_link *l, bool on);
/** @return when the ACKs held back were queued (dv_now ns), 0 if none are. */
static inline uint64_t dv_link_held_since(struct dv_link *l)
{
	return atomic_load_explicit(&l->held_since, memory_order_relaxed);
}
/** @return true for an RC ACKNOWLEDGE whose AETH says ACK (not a NAK). */
bool dv_frame_is_ack(const struct droce_tx_frame *f);

#endif
