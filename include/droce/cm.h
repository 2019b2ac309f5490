/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Connection management: connect an RC QP to (IP, port), listen, accept or
 * reject, disconnect, as rdma_cm does on RoCEv2 (IB CM MADs as UD SENDs to
 * QP1, IBTA vol 1 ch. 12, Annex A11 TCP port space), so droce talks to
 * itself, to Linux rdma_cm peers (rping, perftest -R) and to anything
 * speaking the same MADs. docs/cm.md has the state machine; docs/api.md the
 * walk-through.
 *
 * droce_cm_open() gives a context its CM service: QP1 and the CM state
 * machine, run from droce_ctx_poll() (no thread, nothing blocks). Every call
 * below returns at once; what happens later comes out of
 * droce_get_cm_event(), filled by the poll loop. When a connection is
 * established its QP is in RTS with the attributes the REQ and REP carried:
 * the peer's QPN and start PSN, the path MTU, responder resources /
 * initiator depth (max_dest_rd_atomic / max_rd_atomic, 12.6.8), retry and
 * RNR retry counts, the local ACK timeout, and the peer's address with its
 * MAC from the resolver (ARP on a DPDK port).
 *
 * Time is an argument: calls that start a timer take @p now (ns, the clock
 * droce_ctx_poll() is given).
 *
 * Ids: a connection id (>= 0) names one connection from droce_connect() or
 * its REQUEST event to its last event: REJECTED, TIMEOUT, UNREACHABLE,
 * ERROR, or TIMEWAIT_EXIT (which follows DISCONNECTED once stale packets of
 * the connection can no longer arrive, IBTA 12.9). After the last event the
 * id may name a new connection and the QP may be reset and connected again
 * (before it, droce_connect() with it is -EBUSY; a peer would answer a REQ
 * from the same QP with REJ 10 "stale connection"). The CM moves the
 * connection's QP to ERR on REJECTED, DISCONNECTED, TIMEOUT, UNREACHABLE,
 * ERROR. The application may destroy the QP at any time: the CM follows its
 * pointer only while the context's QP table still holds it (a connection
 * whose QP is gone ends with its next event; an event's qp may then name a
 * destroyed QP).
 */
#ifndef DROCE_CM_API_H
#define DROCE_CM_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_ctx;
struct droce_qp;

/** Largest private data an event carries (an RTU's or DREP's: 224 bytes). */
#define DROCE_CONN_PD_MAX 224u
/** Private data limits per message (IBTA 12.6; the REQ's 92 bytes less rdma_cm's 36-byte header). */
#define DROCE_CONN_REQ_PD_MAX 56u
#define DROCE_CONN_REP_PD_MAX 196u
#define DROCE_CONN_REJ_PD_MAX 148u

/**
 * Find the MAC of the next hop to @p ip (IPv4 in ip[0..3]). Non-blocking:
 * 0 with @p mac filled, -EAGAIN to be asked again on a later poll (an ARP
 * request is on its way), another -errno when it cannot be reached.
 */
typedef int (*droce_resolve_fn)(void *arg, uint8_t ip_version, const uint8_t ip[16],
				uint8_t mac[6], uint64_t now);

/** CM service settings; droce_cm_conf_init() fills the defaults. */
struct droce_cm_conf {
	droce_resolve_fn resolve;    /**< required: MACs for QPs and MADs */
	void *resolve_arg;
	uint64_t resolve_timeout_ns; /**< give up resolving (UNREACHABLE), and on a MAD waiting
					  for its destination's MAC; default 2 s */
	unsigned max_conns;          /**< connections + listeners; default 64 */
	unsigned event_queue;        /**< events held for droce_get_cm_event(); default 64 */
	uint8_t response_timeout;    /**< CM response timeout exponent, 4.096 us * 2^t; default 20 */
	uint8_t max_cm_retries;      /**< REQ/REP/DREQ resends, <= 15; default 15 */
	uint64_t timewait_ns;        /**< TIMEWAIT after a disconnect; default ~6 ms */
	uint64_t seed;               /**< communication IDs, start PSNs, source ports: a fixed
					  sequence from this seed (replay, simulation); 0 (the
					  default) = each drawn from getrandom() */
	unsigned max_half_open;      /**< passive connections not yet established (REQUEST
					  delivered, accepting, REP sent); a REQ beyond takes the
					  place of the oldest (TIMEOUT for it, REJ 3 "no resources"
					  to its peer); 0 = 3/4 of max_conns */
	unsigned max_per_source;     /**< of those, from one IP address (beyond, the source's
					  oldest makes room); 0 = half of max_conns */
	uint8_t max_peer_timeout;    /**< cap on the waits a peer asks for (its REQ's response
					  timeout, an MRA's service timeout); 0 = 21 (~8.6 s) */
	uint64_t accept_resolve_timeout_ns; /**< resolve_timeout_ns for the peer of an accepted
					  REQ, which has just sent it (a spoofed source never
					  answers); default 500 ms */
	uint8_t transport_max;       /**< passive side: the highest loss-recovery mode (enum
					  droce_transport, droce/verbs.h) agreed to when a REQ
					  offers one (docs/cm.md, "Transport-mode extension");
					  default DROCE_TRANSPORT_SR_SPRAY, 0 = always go-back-N */
};

/** Fill @p c with the defaults (no resolver). */
void droce_cm_conf_init(struct droce_cm_conf *c);

/**
 * Start the CM service of @p ctx: QP1 (the GSI QP, Q_Key 0x80010000) with
 * its CQ and MAD buffers, driven from droce_ctx_poll(). droce_ctx_destroy()
 * ends it.
 * @return 0; -EINVAL (NULL, no resolver, max_cm_retries > 15), -EEXIST (the
 *         context has a CM or another service already), -EOPNOTSUPP (no UD
 *         QP1 in this build), -ENOMEM.
 */
int droce_cm_open(struct droce_ctx *ctx, const struct droce_cm_conf *c);

/** End the CM service: connections are dropped without a DREQ. @return 0 or -EINVAL (no CM). */
int droce_cm_close(struct droce_ctx *ctx);

/** Where to connect. */
struct droce_addr {
	uint8_t ip_version;          /**< 4 or 6, the context's family */
	uint8_t ip[16];              /**< IPv4 in ip[0..3] */
	uint16_t port;               /**< TCP port-space port (service ID 0x1060000 | port) */
};

/** What a connection asks for / agrees to; droce_conn_param_init() fills the defaults. */
struct droce_conn_param {
	const void *private_data;    /**< REQ <= 56, REP <= 196 bytes */
	size_t private_data_len;
	uint8_t responder_resources; /**< READ/atomics we accept at once; default DROCE_DEFAULT_MAX_RD_ATOMIC */
	uint8_t initiator_depth;     /**< READ/atomics we issue at once; default DROCE_DEFAULT_MAX_RD_ATOMIC */
	uint8_t retry_count;         /**< 0..7, REQ only (both sides use it); default 7 */
	uint8_t rnr_retry_count;     /**< 0..7, what the peer may retry after our RNR NAK; default 7 */
	uint8_t path_mtu;            /**< enum droce_mtu, REQ only; default DROCE_MTU_1024 */
	uint8_t ack_timeout;         /**< local ACK timeout exponent, REQ only; default DROCE_DEFAULT_TIMEOUT */
	uint16_t src_port;           /**< rdma_cm header's source port; 0 = drawn at random */
	/** Without a QP (droce_connect_qpn(), droce_accept() with a NULL QP):
	 * the QPN the REQ / REP names. The CM then moves no QP: the
	 * application sets its own up from droce_conn_get_qp_attr(). */
	uint32_t qp_num;
};

void droce_conn_param_init(struct droce_conn_param *p);

/**
 * Listen on @p port of the context's address.
 * @return a listener id (>= 0, the REQUEST events' listen_id); -EINVAL (no
 *         CM), -EADDRINUSE, -ENOSPC (max_conns in use).
 */
int droce_listen(struct droce_ctx *ctx, uint16_t port);

/**
 * Stop listener @p listen_id: REQs for its port get REJ 8 from now on;
 * connections it made go on.
 * @return 0, -EINVAL (no CM, not a listener).
 */
int droce_unlisten(struct droce_ctx *ctx, int listen_id);

/**
 * Connect @p qp (an RC QP in RESET or INIT) to @p dst. A QP in RESET is
 * moved to INIT (all REMOTE_* access: the MRs guard memory) before this
 * returns, so receives may be posted at once. The MAC of @p dst is
 * resolved first (UNREACHABLE when that fails), then a REQ is sent with
 * @p p (NULL = the defaults); ESTABLISHED, REJECTED, TIMEOUT or ERROR follow.
 * @return the connection id; -EINVAL (no CM, NULL, QP not RC or not
 *         RESET/INIT, QP of another context, other address family, private
 *         data > 56 bytes, a field out of range), -EBUSY (the QP has a
 *         connection), -ENOSPC (max_conns in use).
 */
int droce_connect(struct droce_qp *qp, const struct droce_addr *dst,
		  const struct droce_conn_param *p, uint64_t now);

/**
 * Connect without a QP of droce's: as droce_connect(), but the REQ names
 * @p p->qp_num (rdma_cm's conn_param.qp_num) and no QP is moved. The REP
 * comes out as DROCE_CONN_RESPONSE; the application then brings its QP to
 * RTR/RTS (droce_conn_get_qp_attr()) and calls droce_conn_establish(),
 * which sends the RTU (no ESTABLISHED event on this side, as rdma_cm).
 * @return the connection id; -EINVAL (no CM, NULL, qp_num 0 or beyond 24
 *         bits, a field out of range), -ENOSPC.
 */
int droce_connect_qpn(struct droce_ctx *ctx, const struct droce_addr *dst,
		      const struct droce_conn_param *p, uint64_t now);

/**
 * Active side of droce_connect_qpn(), after DROCE_CONN_RESPONSE: send the
 * RTU (IBTA 12.6.10); the connection is established.
 * @return 0; -EINVAL (no CM, bad id, a connection with a QP of droce's),
 *         -EBADFD (no REP yet).
 */
int droce_conn_establish(struct droce_ctx *ctx, int conn, uint64_t now);

/** What a QP of a connection needs for RTR and RTS (rdma_init_qp_attr). */
struct droce_conn_qp_attr {
	struct droce_addr peer;      /**< the peer's IP (its GID) */
	uint32_t dest_qpn;           /**< the peer's QPN (REQ / REP) */
	uint32_t rq_psn;             /**< the first PSN we receive */
	uint32_t sq_psn;             /**< the first PSN we send */
	uint8_t path_mtu;            /**< enum droce_mtu, the REQ's */
	uint8_t max_dest_rd_atomic;  /**< READ/atomics we accept at once */
	uint8_t max_rd_atomic;       /**< READ/atomics we issue at once */
	uint8_t timeout;             /**< local ACK timeout exponent */
	uint8_t retry_cnt, rnr_retry;
	uint8_t sq_valid;            /**< 0 until the peer's start PSN is known (active: the REP) */
};

/**
 * The RTR/RTS attributes of connection @p conn, as the CM would set them on
 * its QP (the table at the top of stack/cm/svc_conn.c): passive from the
 * REQUEST event on, active from RESPONSE (before it, sq_valid is 0 and
 * dest_qpn / sq_psn are 0).
 * @return 0; -EINVAL (no CM, bad id, NULL).
 */
int droce_conn_get_qp_attr(struct droce_ctx *ctx, int conn, struct droce_conn_qp_attr *out);

/**
 * Accept connection @p conn (after its REQUEST event) on @p qp (RC, RESET or
 * INIT): @p qp goes to RTR and RTS with the REQ's attributes, then the REP
 * is sent with @p p (NULL = the defaults; responder resources and initiator
 * depth are clamped to the REQ's initiator depth and responder resources,
 * 12.6.8; path MTU, retry count and ACK timeout come from the REQ).
 * ESTABLISHED follows the RTU (or TIMEOUT, DISCONNECTED).
 * @return 0; -EINVAL (no CM, bad id, NULL QP, QP not RC, not RESET/INIT or
 *         of another context, private data > 196 bytes), -EBUSY (QP has a
 *         connection), -EBADFD (@p conn is not waiting for an answer), or
 *         the QP's modify error (the REQ is then rejected and the id freed).
 */
/* A NULL @p qp with p->qp_num set: the REP names that QPN and no QP is
 * moved (the application brought its own to RTR/RTS from
 * droce_conn_get_qp_attr() first); ESTABLISHED follows the RTU. */
int droce_accept(struct droce_ctx *ctx, int conn, struct droce_qp *qp,
		 const struct droce_conn_param *p, uint64_t now);

/**
 * Reject connection @p conn (after REQUEST) with reason 28 "consumer
 * defined" and up to 148 bytes of private data. The id is freed (no event).
 * @return 0; -EINVAL (no CM, bad id, private data too long), -EBADFD (not
 *         waiting for an answer).
 */
int droce_reject(struct droce_ctx *ctx, int conn, const void *pd, size_t pd_len, uint64_t now);

/**
 * Disconnect @p conn: its QP goes to ERR now (outstanding WRs flush), a
 * DREQ is sent, DISCONNECTED follows the DREP (or the DREQ's last retry),
 * TIMEWAIT_EXIT after it.
 * @return 0; -EINVAL (no CM, bad id), -EBADFD (not established, or a
 *         disconnect already under way).
 */
int droce_disconnect(struct droce_ctx *ctx, int conn, uint64_t now);

enum droce_conn_event_type {
	DROCE_CONN_REQUEST,      /**< passive: a REQ on a listener; droce_accept or droce_reject
				      within ~17 s (the MRA service timeout), else TIMEOUT */
	DROCE_CONN_ESTABLISHED,  /**< both: the QP is in RTS, connected */
	DROCE_CONN_REJECTED,     /**< the peer sent a REJ: status = its reason (8: nobody
				      listens, 28: the consumer), private data set. Last. */
	DROCE_CONN_DISCONNECTED, /**< DREQ received, or ours answered or out of retries; status 0,
				      or the REJ reason that ended an established connection */
	DROCE_CONN_TIMEOUT,      /**< REQ or REP unanswered after every retry, or a REQUEST
				      left unanswered (the peer got REJ 4); status 0, or 3
				      when a newer REQ took its half-open slot. Last. */
	DROCE_CONN_UNREACHABLE,  /**< the peer's MAC could not be resolved: status = -errno. Last. */
	DROCE_CONN_ERROR,        /**< the QP refused its RTR/RTS attributes: status = -errno;
				      the peer got a REJ. Last. */
	DROCE_CONN_TIMEWAIT_EXIT, /**< after DISCONNECTED: the QP may be reused. Last.
				       (qp names it, but it may have been destroyed since) */
	DROCE_CONN_RESPONSE,     /**< active, droce_connect_qpn(): the REP (responder resources,
				      initiator depth, private data); droce_conn_establish() next */
};

/** "REQUEST" etc.; never NULL. */
const char *droce_conn_event_str(enum droce_conn_event_type t);

struct droce_conn_event {
	enum droce_conn_event_type type;
	int conn;                    /**< connection id */
	int listen_id;               /**< REQUEST: the listener; else -1 */
	struct droce_qp *qp;         /**< the connection's QP (NULL for REQUEST) */
	struct droce_addr peer;      /**< the peer's IP and port (its rdma_cm source port) */
	uint16_t local_port;         /**< the listener's or the connected-to port */
	int status;                  /**< REJECTED: reason; UNREACHABLE, ERROR: -errno; else 0 */
	/** REQUEST: what the REQ offers (the REP is clamped to these); RESPONSE: what the REP says */
	uint8_t responder_resources, initiator_depth;
	/** REQUEST: the REQ's path MTU (enum droce_mtu), the connection's on both
	 * sides (the REP has none: reject a REQ whose MTU this side cannot carry) */
	uint8_t path_mtu;
	size_t private_data_len;
	uint8_t private_data[DROCE_CONN_PD_MAX];
	uint32_t remote_qpn;         /**< REQUEST, RESPONSE: the QPN the peer's REQ / REP names */
	uint8_t transport;           /**< ESTABLISHED: the QP's loss-recovery mode as agreed
					  (enum droce_transport; 0, go-back-N, unless both sides
					  are droce and the REQ offered more) */
};

/**
 * Take the oldest event of @p ctx's CM.
 * @return 1 (filled @p ev), 0 (none), -EINVAL (no CM, NULL).
 */
int droce_get_cm_event(struct droce_ctx *ctx, struct droce_conn_event *ev);

/** CM service counters. */
struct droce_cm_counters {
	uint64_t mads_rx, mads_tx;   /**< MADs received on / sent from QP1 */
	uint64_t mads_bad;           /**< received MADs the CM did not act on (any reason) */
	uint64_t mad_tx_drop;        /**< MADs not sent (the datagram path refused them) */
	uint64_t events_lost;        /**< events dropped for a full queue */
	uint64_t resolve_failed;     /**< UNREACHABLE events */
	uint64_t retransmits;        /**< REQ/REP/DREQ resent by the CM's timers */
	unsigned conns;              /**< connection ids in use */
	unsigned mads_pending;       /**< MADs queued and not yet handed to QP1: an application
					  that stops after droce_reject() polls until this is 0 */
	uint64_t mad_park_drop;      /**< MADs dropped while their destination's MAC was
					  being resolved (timed out, or too many waiting) */
	uint64_t reqs_limited;       /**< REQs dropped unanswered: over the REJ rate */
	uint64_t evicted;            /**< half-open connections ended to make room for a REQ */
	uint64_t transport_agreed;   /**< connections whose QP was set to selective repeat by
					  the REQ's offer and the REP's answer */
	uint64_t transport_ext_bad;  /**< REQs / REPs with a malformed transport-mode extension
					  (taken as go-back-N) */
};

/** @return 0 or -EINVAL (no CM). */
int droce_cm_get_counters(const struct droce_ctx *ctx, struct droce_cm_counters *out);

#ifdef __cplusplus
}
#endif

#endif
