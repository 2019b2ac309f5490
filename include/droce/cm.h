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
	uint64_t resolve_timeout_ns; /**< give up resolving (UNREACHABLE); default 2 s */
	unsigned max_conns;          /**< connections + listeners; default 64 */
	unsigned event_queue;        /**< events held for droce_get_cm_event(); default 64 */
	uint8_t response_timeout;    /**< CM response timeout exponent, 4.096 us * 2^t; default 20 */
	uint8_t max_cm_retries;      /**< REQ/REP/DREQ resends, <= 15; default 15 */
	uint64_t timewait_ns;        /**< TIMEWAIT after a disconnect; default ~6 ms */
	uint64_t seed;               /**< communication IDs, start PSNs; 0 = from the address */
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
	uint16_t src_port;           /**< rdma_cm header's source port; 0 = drawn from the seed */
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
	DROCE_CONN_REQUEST,      /**< passive: a REQ on a listener; droce_accept or droce_reject */
	DROCE_CONN_ESTABLISHED,  /**< both: the QP is in RTS, connected */
	DROCE_CONN_REJECTED,     /**< the peer sent a REJ: status = its reason (8: nobody
				      listens, 28: the consumer), private data set. Last. */
	DROCE_CONN_DISCONNECTED, /**< DREQ received, or ours answered or out of retries; status 0,
				      or the REJ reason that ended an established connection */
	DROCE_CONN_TIMEOUT,      /**< REQ or REP unanswered after every retry. Last. */
	DROCE_CONN_UNREACHABLE,  /**< the peer's MAC could not be resolved: status = -errno. Last. */
	DROCE_CONN_ERROR,        /**< the QP refused its RTR/RTS attributes: status = -errno;
				      the peer got a REJ. Last. */
	DROCE_CONN_TIMEWAIT_EXIT, /**< after DISCONNECTED: the QP may be reused. Last.
				       (qp names it, but it may have been destroyed since) */
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
	/** REQUEST: what the REQ offers (the REP is clamped to these) */
	uint8_t responder_resources, initiator_depth;
	/** REQUEST: the REQ's path MTU (enum droce_mtu), the connection's on both
	 * sides (the REP has none: reject a REQ whose MTU this side cannot carry) */
	uint8_t path_mtu;
	size_t private_data_len;
	uint8_t private_data[DROCE_CONN_PD_MAX];
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
};

/** @return 0 or -EINVAL (no CM). */
int droce_cm_get_counters(const struct droce_ctx *ctx, struct droce_cm_counters *out);

#ifdef __cplusplus
}
#endif

#endif
