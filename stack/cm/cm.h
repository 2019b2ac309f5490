/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IB Communication Manager's connection state machine (IBTA vol 1 12.9),
 * shaped as rdma_cm drives it on RoCEv2 (Annex A11: TCP port-space service
 * IDs, the rdma_cm header in the REQ's private data). docs/cm.md has the
 * state diagram and the sections each transition comes from.
 *
 * The CM owns no QP and no port. It sits on "a UD endpoint that can send and
 * receive a 256-byte MAD to/from (IP, QPN, Q_Key)":
 *  - the caller feeds every MAD that arrived on QP1 to droce_cm_input();
 *  - MADs to send come out of droce_cm_pop_mad() (the caller sends each as
 *    a UD SEND to QP1 of the given address with the given Q_Key);
 *  - events for the consumer come out of droce_cm_pop_event();
 *  - droce_cm_poll() runs the MAD retry and timewait timers.
 * Time is an argument (nanoseconds, any epoch, never decreasing); nothing
 * here reads a clock, allocates after creation or keeps globals. One
 * droce_cm per poll thread.
 *
 * Connection ids are small integers (slots). A slot returns to IDLE by
 * itself after REJECTED, TIMEOUT and TIMEWAIT_EXIT; the event that ends a
 * connection is the last one carrying its id.
 */
#ifndef DROCE_CM_CM_H
#define DROCE_CM_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/mad.h"

/* States of the active and passive sides (IBTA vol 1 12.9 state diagrams). */
#define DROCE_CM_STATES(X)   \
	X(IDLE)              \
	X(LISTEN)            \
	X(REQ_SENT)          \
	X(MRA_REQ_RCVD)      \
	X(REP_RCVD)          \
	X(MRA_REP_SENT)      \
	X(REQ_RCVD)          \
	X(MRA_REQ_SENT)      \
	X(REP_SENT)          \
	X(MRA_REP_RCVD)      \
	X(ESTABLISHED)       \
	X(DREQ_SENT)         \
	X(TIMEWAIT)

enum droce_cm_state {
#define X(n) DROCE_CM_##n,
	DROCE_CM_STATES(X)
#undef X
	DROCE_CM__STATE_COUNT
};

/** "REQ_SENT" etc. Never NULL. */
const char *droce_cm_state_name(enum droce_cm_state s);

/* Why droce_cm_input() did not act on a MAD (each is counted). */
#define DROCE_CM_RX_RESULTS(X)                                                   \
	X(OK, "acted on")                                                        \
	X(BAD_MAD, "malformed MAD (stats.mad_bad[] says why)")                   \
	X(BAD_QKEY, "Q_Key is not QP1's 0x80010000")                             \
	X(BAD_ADDR, "source is not a usable IPv4/IPv6 address")                  \
	X(NO_MATCH, "no connection with that communication ID")                  \
	X(WRONG_PEER, "communication IDs match a connection of another peer")    \
	X(BAD_STATE, "message not expected in the connection's state")           \
	X(DUPLICATE, "duplicate, already answered or nothing to answer")         \
	X(REJECTED, "REQ answered with a REJ (no listener, bad private data, ...)") \
	X(RATE_LIMITED, "REQ dropped: its source (or all sources) over the REJ rate")

enum droce_cm_rx {
#define X(n, s) DROCE_CM_RX_##n,
	DROCE_CM_RX_RESULTS(X)
#undef X
	DROCE_CM_RX__COUNT
};

const char *droce_cm_rx_name(enum droce_cm_rx r);

/** A peer's address: IPv4 in ip[0..3], or IPv6. */
struct droce_cm_addr {
	uint8_t ip_version; /* 4 or 6 */
	uint8_t ip[16];
};

/** The QP attributes a REQ (active) or REP (passive) carries (12.6.5, 12.6.8). */
struct droce_cm_qp_attr {
	uint32_t qpn;                /* 24 bits */
	uint32_t start_psn;          /* 24 bits */
	uint8_t path_mtu;            /* IBTA code 1..5 (256..4096); REQ only */
	uint8_t responder_resources; /* RDMA READ/atomic this side accepts */
	uint8_t initiator_depth;     /* RDMA READ/atomic this side issues */
	uint8_t retry_count;         /* 3 bits; REQ only */
	uint8_t rnr_retry_count;     /* 3 bits */
	uint8_t local_ack_timeout;   /* 5 bits; REQ primary path only */
	bool srq;
};

/** Per-instance settings. */
struct droce_cm_params {
	struct droce_cm_addr local;  /* this endpoint's IP (its GID) */
	uint64_t ca_guid;            /* Local CA GUID in REQ/REP */
	uint64_t seed;               /* communication IDs, TIDs, droce_cm_random(): a fixed
					sequence from this seed (replay, simulation); 0 = each
					drawn from getrandom() (IBTA 12.6.5: a spoofer must not
					guess them; Linux draws them from its CSPRNG too) */
	unsigned max_ids;            /* connection + listener slots; 0 = 64 */
	unsigned mad_queue;          /* outgoing MADs held; 0 = 64 */
	unsigned event_queue;        /* events held; 0 = 64 */
	uint8_t response_timeout;    /* CM response timeout exponent; 0 = 20 (rdma_cm's, ~4.3 s) */
	uint8_t max_cm_retries;      /* REQ/REP/DREQ resends; 0 = 15 (rdma_cm's); at most 15 */
	uint8_t mra_service_timeout; /* what an MRA asks for; 0 = response_timeout + 2 */
	uint8_t target_ack_delay;    /* REP field; 0 = 15 (what rxe's REP says) */
	uint64_t packet_lifetime_ns; /* one-way, added twice to every wait; 0 = 1 ms */
	uint64_t timewait_ns;        /* TIMEWAIT length; 0 = 2 * packet lifetime + 4 ms */
	uint32_t flow_label;         /* REQ primary path flow label */
	/* What a stranger may make us hold (docs/security.md "Connection
	 * management"): */
	uint8_t max_peer_timeout;    /* cap on the waits a peer asks for (a REQ's local CM
					response timeout for our REP and DREQ, an MRA's service
					timeout); 0 = 21 (~8.6 s); at most 31 */
	unsigned max_half_open;      /* passive connections not yet established (REQ_RCVD ..
					MRA_REP_RCVD); a REQ beyond takes the place of the
					oldest (TIMEOUT, REJ 3); 0 = max_ids */
	unsigned max_per_source;     /* of those, from one IP address; beyond, the source's
					oldest makes room; 0 = max_half_open */
	unsigned rej_rate;           /* REJs to REQs that made no connection, per second and
					source (as many in a burst), and 16 times that for all
					sources; beyond: the REQ is dropped, counted; 0 = 16 */
};

/** droce_cm_connect() arguments. */
struct droce_cm_connect_param {
	struct droce_cm_addr dst;
	uint16_t dst_port;           /* the listener's port (service ID) */
	uint16_t src_port;           /* rdma_cm header's source port */
	struct droce_cm_qp_attr qp;  /* our QP */
	const void *private_data;    /* consumer data after the rdma_cm header */
	size_t private_data_len;     /* <= DROCE_CMA_REQ_USER_PD_LEN (56) */
};

enum droce_cm_event_type {
	DROCE_CM_EV_CONNECT_REQUEST,  /* passive: a REQ for a listener; accept or reject */
	DROCE_CM_EV_CONNECT_RESPONSE, /* active: the REP; set the QP up, then droce_cm_establish() */
	DROCE_CM_EV_ESTABLISHED,      /* both: RTU sent (active) / received (passive) */
	DROCE_CM_EV_REJECTED,         /* the peer rejected; reason and private data set; id freed */
	DROCE_CM_EV_DISCONNECTED,     /* DREQ received, our DREQ answered / timed out, or the
					 passive side gave up on its REP (REJ timeout) */
	DROCE_CM_EV_TIMEOUT,          /* REQ or REP unanswered after every retry, or (state
					 REQ_RCVD / MRA_REQ_SENT) the consumer did not answer a
					 REQ within the MRA service timeout, or (reason 3) a
					 half-open connection made room for a newer REQ; id freed */
	DROCE_CM_EV_TIMEWAIT_EXIT,    /* TIMEWAIT over: the QP may be reused; id freed */
};

const char *droce_cm_event_name(enum droce_cm_event_type t);

struct droce_cm_event {
	enum droce_cm_event_type type;
	int id;
	int listen_id;               /* CONNECT_REQUEST: the listener's id */
	struct droce_cm_addr peer;
	uint16_t src_port, dst_port; /* CONNECT_REQUEST: from the rdma_cm header */
	struct droce_cm_qp_attr remote; /* CONNECT_REQUEST / CONNECT_RESPONSE */
	uint16_t reason;             /* REJECTED, and DISCONNECTED by a REJ: enum droce_cm_rej_reason */
	enum droce_cm_state state;   /* TIMEOUT: the state that timed out */
	size_t private_data_len;
	uint8_t private_data[DROCE_CM_PD_MAX];
};

/** One MAD to send: a UD SEND to QP @p dqpn at @p dst with @p qkey. */
struct droce_cm_out {
	struct droce_cm_addr dst;
	bool has_dst_hw;             /* a REJ to a REQ that made no connection: send it to
					dst_hw, the link address the REQ came from, unresolved */
	uint8_t dst_hw[6];
	uint32_t dqpn;
	uint32_t qkey;
	uint8_t mad[DROCE_MAD_LEN];
};

struct droce_cm_stats {
	uint64_t rx;                         /* MADs given to droce_cm_input() */
	uint64_t rx_result[DROCE_CM_RX__COUNT];
	uint64_t mad_bad[DROCE_MAD__COUNT];  /* per decode result, [OK] unused */
	uint64_t tx[16];                     /* per attribute ID & 0xF (REQ = 0x10 -> 0) */
	uint64_t retransmits;                /* timer-driven resends */
	uint64_t dup_answers;                /* MRA/REP/RTU/DREP resent for a duplicate */
	uint64_t mad_queue_full;             /* MADs lost to a full output queue */
	uint64_t event_queue_full;           /* events lost to a full event queue */
	uint64_t req_rcvd_timeouts;          /* REQs the consumer left unanswered past
						the MRA service timeout (REJ 4 sent) */
	uint64_t rng_fallback;               /* getrandom() failed: IDs from the seeded generator */
	uint64_t evicted;                    /* half-open connections that made room for a REQ */
	uint64_t evicted_source;             /* of those, for a REQ of the same source */
};

struct droce_cm;

/** @return a CM, or NULL with errno EINVAL (bad params) or ENOMEM. */
struct droce_cm *droce_cm_create(const struct droce_cm_params *p);
void droce_cm_destroy(struct droce_cm *cm);

/**
 * Listen on TCP port-space @p port (service ID 0x0000000001060000 | port).
 * @return the listener's id, or -EADDRINUSE, -ENOSPC (no free slot).
 */
int droce_cm_listen(struct droce_cm *cm, uint16_t port);

/** Stop listener @p id (LISTEN -> IDLE); connections it made are not touched.
 * @return 0 or -EINVAL (not a listener). */
int droce_cm_unlisten(struct droce_cm *cm, int id);

/**
 * Send a REQ: the active side, IDLE -> REQ_SENT.
 * @return the connection's id, or -EINVAL (private data too long, bad
 *         address, QPN/PSN beyond 24 bits, path MTU not 1..5), -ENOSPC.
 */
int droce_cm_connect(struct droce_cm *cm, uint64_t now, const struct droce_cm_connect_param *p);

/**
 * Passive side, after CONNECT_REQUEST: send a REP with our QP's attributes,
 * REQ_RCVD/MRA_REQ_SENT -> REP_SENT. Responder resources and initiator depth
 * are clamped to the REQ's initiator depth and responder resources (12.6.8).
 * @return 0, -EINVAL (bad id, private data > 196 bytes), -EBADFD (wrong state).
 */
int droce_cm_accept(struct droce_cm *cm, uint64_t now, int id, const struct droce_cm_qp_attr *qp,
		    const void *pd, size_t pd_len);

/**
 * Reject a REQ (passive, REQ_RCVD/MRA_REQ_SENT) or a REP (active, REP_RCVD/MRA_REP_SENT)
 * with reason 28 "consumer reject" and up to 148 bytes of private data. The
 * id is freed.
 * @return 0, -EINVAL, -EBADFD.
 */
int droce_cm_reject(struct droce_cm *cm, uint64_t now, int id, const void *pd, size_t pd_len);

/**
 * Active side, after CONNECT_RESPONSE (the QP is now RTR/RTS with the
 * peer's QPN and PSN): send the RTU, REP_RCVD/MRA_REP_SENT -> ESTABLISHED.
 * @return 0, -EINVAL, -EBADFD.
 */
int droce_cm_establish(struct droce_cm *cm, uint64_t now, int id);

/**
 * Passive side, REP_SENT/MRA_REP_RCVD: the QP received its first packet
 * from the peer (the transport's "communication established", IBTA 12.9 /
 * 11.6.3 COMM_EST), which proves the REP arrived: ESTABLISHED as if the RTU
 * had, the REP's retries stop. A later RTU is a duplicate.
 * @return 0, -EINVAL, -EBADFD.
 */
int droce_cm_comm_est(struct droce_cm *cm, uint64_t now, int id);

/**
 * Send a DREQ: ESTABLISHED (or REP_SENT/MRA_REP_RCVD) -> DREQ_SENT. DISCONNECTED follows
 * when the DREP arrives or the DREQ's retries run out.
 * @return 0, -EINVAL, -EBADFD.
 */
int droce_cm_disconnect(struct droce_cm *cm, uint64_t now, int id);

/**
 * One MAD that arrived on QP1 from @p src with DETH Q_Key @p qkey.
 * @return what was done with it (counted in stats.rx_result).
 */
enum droce_cm_rx droce_cm_input(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				uint32_t qkey, const uint8_t *mad, size_t len);

/** Run the timers due at @p now. */
void droce_cm_poll(struct droce_cm *cm, uint64_t now);

/** Earliest time droce_cm_poll() has work, or UINT64_MAX. */
uint64_t droce_cm_next_timer(const struct droce_cm *cm);

/** MADs queued for droce_cm_pop_mad(). */
unsigned droce_cm_mads_queued(const struct droce_cm *cm);

/** Take the next MAD to send. @return 1 (filled @p out) or 0 (none). */
int droce_cm_pop_mad(struct droce_cm *cm, struct droce_cm_out *out);

/** Take the next event. @return 1 or 0. */
int droce_cm_pop_event(struct droce_cm *cm, struct droce_cm_event *ev);

/**
 * A random 32-bit value from the CM's generator (getrandom(), or the seeded
 * sequence when params.seed was given): start PSNs and ports the caller
 * puts in its REQ/REP.
 */
uint32_t droce_cm_random(struct droce_cm *cm);

/**
 * droce_cm_input() with the link-layer source of the frame the MAD came in
 * (@p src_hw, 6 bytes, or NULL): a REJ to a REQ that made no connection
 * goes back to it (droce_cm_out.dst_hw) instead of to an address the
 * caller would have to resolve first, so a REQ from an address that never
 * answers ARP costs no wait (and the REJ reaches only the frame's sender).
 */
enum droce_cm_rx droce_cm_input_hw(struct droce_cm *cm, uint64_t now, const struct droce_cm_addr *src,
				   const uint8_t *src_hw, uint32_t qkey, const uint8_t *mad, size_t len);

/**
 * droce_cm_reject() with @p reason (enum droce_cm_rej_reason), for a
 * consumer that refuses for want of resources (3) rather than by choice.
 */
int droce_cm_reject_reason(struct droce_cm *cm, uint64_t now, int id, uint16_t reason, const void *pd,
			   size_t pd_len);

/** State of @p id (IDLE for a free or invalid id). */
enum droce_cm_state droce_cm_id_state(const struct droce_cm *cm, int id);

const struct droce_cm_stats *droce_cm_stats(const struct droce_cm *cm);

#endif
