/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the CM state machine (cm/cm.h): the connection slots and the
 * helpers cm.c (consumer calls, timers, output) and cm_rx.c (one handler
 * per incoming message) share. Nothing outside stack/cm includes it.
 */
#ifndef DROCE_CM_CM_INT_H
#define DROCE_CM_CM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/cm.h"

struct cm_id {
	enum droce_cm_state state;
	bool active;
	uint16_t port;          /* listener: its port; connection: service port */
	uint16_t src_port;
	uint32_t lcid, rcid;    /* local / remote communication IDs */
	uint64_t tid;
	uint64_t remote_guid;
	struct droce_cm_addr peer;
	struct droce_cm_qp_attr local, remote;
	uint8_t peer_timeout;   /* exponent: how long the peer may take to answer us */
	uint8_t max_retries;
	uint8_t retries;
	uint64_t deadline;      /* 0: no timer */
	uint64_t born;          /* passive: when its REQ arrived (bounds REQ_RCVD) */
	uint16_t last_attr;     /* attribute of last_mad; 0 when none */
	uint8_t last_mad[DROCE_MAD_LEN];
};

/* A token bucket of REJs to REQs that made no connection (per source, and
 * one for all): tokens in thousandths so slow rates refill smoothly. */
struct cm_bucket {
	struct droce_cm_addr src;
	uint64_t last;          /* last refill; 0: slot unused */
	uint64_t milli;         /* tokens * 1000 */
};

#define CM_SOURCES 64u    /* sources the REJ limiter remembers (least recent replaced) */
#define CM_POOL 64u       /* bytes of getrandom() drawn at once */

struct droce_cm {
	struct droce_cm_params p;
	struct cm_id *ids;
	struct droce_cm_out *mq;
	struct droce_cm_event *eq;
	unsigned mq_head, mq_len, eq_head, eq_len;
	bool seeded;            /* p.seed given: a fixed sequence */
	uint64_t rng;
	uint8_t pool[CM_POOL];  /* unseeded: getrandom() bytes not used yet */
	unsigned pool_pos;
	uint32_t tid_hi;
	const uint8_t *in_hw;   /* droce_cm_input_hw(): the frame's link source, or NULL */
	struct cm_bucket rej_src[CM_SOURCES], rej_all;
	struct droce_cm_stats st;
};

/* 32 random bits: getrandom(), or the seeded sequence */
uint32_t droce_cm_rand32(struct droce_cm *cm);
/* may a REJ to an unmatched REQ from @p src go out now? (spends a token) */
bool droce_cm_rej_allowed(struct droce_cm *cm, const struct droce_cm_addr *src, uint64_t now);
/* a peer's timeout exponent, capped at max_peer_timeout */
uint8_t droce_cm_peer_timeout(const struct droce_cm *cm, uint8_t t);

/* usable IPv4/IPv6 address */
bool droce_cm_addr_ok(const struct droce_cm_addr *a);
/* same family and address */
bool droce_cm_addr_eq(const struct droce_cm_addr *a, const struct droce_cm_addr *b);
/* the slot index of @p c (its id) */
int droce_cm_id_index(const struct droce_cm *cm, const struct cm_id *c);
/* the connection whose local communication ID is @p lcid, or NULL */
struct cm_id *droce_cm_find_lcid(const struct droce_cm *cm, uint32_t lcid);
/* a free slot in state @p st with a fresh local ID, or NULL */
struct cm_id *droce_cm_alloc_id(struct droce_cm *cm, enum droce_cm_state st);
/* back to IDLE */
void droce_cm_free_id(struct cm_id *c);
/* queue an event (counted when the queue is full) */
void droce_cm_push_event(struct droce_cm *cm, const struct droce_cm_event *ev);
/* an event of @p c with its peer, ports, remote attributes, state */
void droce_cm_event_init(struct droce_cm_event *ev, enum droce_cm_event_type t,
			 const struct droce_cm *cm, const struct cm_id *c);
/* event_init() + private data, queued */
void droce_cm_event_simple(struct droce_cm *cm, const struct cm_id *c, enum droce_cm_event_type t,
			   const uint8_t *pd, size_t pd_len);
/* encode @p m, keep it as the last MAD of @p c, queue it */
void droce_cm_send_msg(struct droce_cm *cm, struct cm_id *c, const struct droce_cm_msg *m);
/* queue the last MAD of @p c again */
void droce_cm_resend_last(struct droce_cm *cm, struct cm_id *c);
/* an MRA for message @p mraed (REQ or REP) */
void droce_cm_send_mra(struct droce_cm *cm, struct cm_id *c, uint8_t mraed);
/* the retry timer: 4.096 us * 2^t + 2 packet lifetimes from @p now */
void droce_cm_arm(struct droce_cm *cm, struct cm_id *c, uint64_t now, uint8_t timeout_exp);
/* a REJ to a REQ that made no connection (no listener, bad header, no room, stale) */
void droce_cm_send_rej_unmatched(struct droce_cm *cm, const struct droce_cm_addr *src,
				 const struct droce_cm_msg *req, uint16_t reason);
/* REJ of a known connection @p c */
void droce_cm_send_rej(struct droce_cm *cm, struct cm_id *c, uint8_t msg, uint16_t reason,
		       const void *pd, size_t pd_len);
/* DREQ, ESTABLISHED -> DREQ_SENT, timer armed */
void droce_cm_send_dreq(struct droce_cm *cm, struct cm_id *c, uint64_t now);
/* TIMEWAIT until now + timewait_ns */
void droce_cm_enter_timewait(struct droce_cm *cm, struct cm_id *c, uint64_t now);

#endif
