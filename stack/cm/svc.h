/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM service of one context (include/droce/cm.h): a droce_cm state
 * machine (cm/cm.h), a MAD datagram path (QP1 by default, cm/qp1.c) and the
 * connections' QPs, run from droce_ctx_poll() through model/service.h.
 *
 *   svc.c       open/close, the poll: MADs in, CM timers, events, MADs out
 *   svc_conn.c  connect/accept/reject/disconnect, the CM's events turned into
 *               QP transitions and public events
 *   svc_qp.c    the QP side: RESET->INIT, RTR/RTS from the REQ/REP, ERR
 *
 * The MAD path is an interface so the unit tests can run the service over
 * an in-memory datagram channel (lossy on demand) as well as over QP1.
 */
#ifndef DROCE_CM_SVC_H
#define DROCE_CM_SVC_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/cm.h>
#include <droce/verbs.h>

#include "cm/cm.h"

/** A MAD that arrived, with what the datagram path knows of its sender. */
struct droce_mad_in {
	struct droce_cm_addr src;
	bool has_src_hw;              /* src_hw: the frame's Ethernet source */
	uint8_t src_hw[6];
	uint32_t qkey;                /* DETH Q_Key */
	uint32_t len;
	uint8_t mad[DROCE_MAD_LEN];
};

/** How MADs move: QP1 (cm/qp1.c) or a test channel. */
struct droce_mad_path_ops {
	/** Send one MAD. @return 0; -EAGAIN: no room, offer it (and every
	 * later MAD) again next poll; -EINPROGRESS: its destination's MAC is
	 * being resolved: the service parks it with the destination's other
	 * MADs and goes on with the rest; another -errno: dropped (counted). */
	int (*send)(void *priv, const struct droce_cm_out *out, uint64_t now);
	/** Take one received MAD. @return 1 (filled @p in) or 0. */
	int (*recv)(void *priv, struct droce_mad_in *in, uint64_t now);
	/** Free it. May be NULL. */
	void (*close)(void *priv);
};

struct droce_mad_path {
	const struct droce_mad_path_ops *ops;
	void *priv;
};

/* MADs waiting for their destination's MAC (-EINPROGRESS), per destination,
 * so one address that never answers ARP holds up nothing else. */
#define SVC_PARK_DESTS 16u
#define SVC_PARK_MADS 8u

struct svc_park {
	struct droce_cm_addr dst;
	uint64_t since;               /* first -EINPROGRESS; 0: slot free */
	unsigned head, len;
	struct droce_cm_out q[SVC_PARK_MADS];
};

/** Where a connection is, as the service sees it (the CM has its own states). */
enum svc_conn_state {
	SVC_FREE,
	SVC_RESOLVING,    /* active: the peer's MAC is being resolved, no REQ yet */
	SVC_CONNECTING,   /* active: REQ sent */
	SVC_REQUESTED,    /* passive: REQUEST delivered, waiting for accept/reject */
	SVC_ACCEPTING,    /* passive: accepted, the peer's MAC is being resolved */
	SVC_ACCEPTED,     /* passive: QP in RTS, REP sent */
	SVC_ESTABLISHED,
	SVC_DISCONNECTING,
	SVC_TIMEWAIT,     /* DISCONNECTED reported, the QP held until TIMEWAIT_EXIT */
};

struct svc_conn {
	enum svc_conn_state state;
	int cm_id;                    /* the droce_cm id, -1 before the REQ */
	bool cm_active;               /* we sent the REQ */
	bool no_qp;                   /* droce_connect_qpn / accept without a QP: the
					 application moves its own (param.qp_num) */
	bool have_rep;                /* active: the REP's attributes are in remote */
	struct droce_qp *qp;          /* followed only through qp_of() (svc_conn.c) */
	uint32_t qp_index;            /* where the context's table holds it */
	uint64_t qp_uid;              /* and which QP that was (never reused, unlike
					 the pointer, the index and the QPN) */
	struct droce_addr peer;       /* IP and port (our destination / its source port) */
	uint16_t local_port;
	uint64_t resolve_deadline;
	uint64_t rx_base;             /* ACCEPTED: the QP's rx_pkts when the REP left */
	uint8_t mac[6];
	struct droce_conn_param param; /* private_data points into pd[] */
	uint8_t pd[DROCE_CONN_REP_PD_MAX];
	struct droce_cm_qp_attr local;  /* what our REQ / REP says */
	struct droce_cm_qp_attr remote; /* what the peer's REQ / REP says */
	/* the transport-mode extension (cm/xt.h): active, what our REQ
	 * offered; passive, what the peer's REQ did (0: no offer, or gbn) */
	uint8_t xt_offer;
	uint8_t transport;            /* the mode the QP was set to at RTR */
};

struct droce_cm_svc {
	struct droce_ctx *ctx;
	struct droce_cm_conf conf;
	struct droce_cm *cm;
	struct droce_mad_path path;
	struct droce_cm_addr local;
	struct svc_conn *conns;       /* conf.max_conns */
	int *by_cm_id;                /* droce_cm id -> conn index, -1 */
	unsigned n_cm_ids;
	struct droce_conn_event *evq; /* conf.event_queue */
	unsigned ev_head, ev_len;
	struct droce_cm_out held;     /* a MAD the path refused with -EAGAIN */
	bool have_held;
	struct svc_park *park;        /* SVC_PARK_DESTS */
	unsigned parked;              /* MADs in park[] */
	bool resolving;               /* some conn waits for a MAC: poll again soon */
	bool accepting;               /* some conn is ACCEPTED (waits for RTU or COMM_EST) */
	uint64_t last_poll;
	struct droce_cm_counters cnt;
};

/** The service of @p ctx, or NULL. */
struct droce_cm_svc *droce_cm_svc_of(const struct droce_ctx *ctx);

/**
 * droce_cm_open() over @p path instead of QP1 (the unit tests' in-memory
 * channel). The service owns @p path from here (ops->close at the end,
 * also on failure).
 */
int droce_cm_open_path(struct droce_ctx *ctx, const struct droce_cm_conf *c,
		       struct droce_mad_path path);

/** Queue a public event (counted when the queue is full). */
void droce_svc_push_event(struct droce_cm_svc *s, const struct droce_conn_event *ev);

/** One event of the CM, turned into QP transitions and public events (svc_conn.c). */
void droce_svc_on_cm_event(struct droce_cm_svc *s, const struct droce_cm_event *ev, uint64_t now);

/** Accepted connections whose QP has heard from the peer: ESTABLISHED (svc_conn.c). */
void droce_svc_comm_est(struct droce_cm_svc *s, uint64_t now);

/** The sender of a MAD in a QP1 receive buffer's 40-byte GRH area (qp1.c):
 * IPv6 when the area holds an IPv6 header, IPv4 when it holds 20 zero bytes
 * and an IPv4 header. @return 0 or -EPROTO (neither). */
int droce_qp1_grh_src(const uint8_t grh[40], struct droce_cm_addr *src);

/** Retry the MAC resolutions of connections waiting for one (svc_conn.c). */
void droce_svc_resolve_pending(struct droce_cm_svc *s, uint64_t now);

/* ---- svc_qp.c ---- */

/** RESET -> INIT with every REMOTE_* right; INIT stays. @return 0, -EINVAL (other state / not RC). */
int droce_svc_qp_init(struct droce_qp *qp);

/** What RTR and RTS need, from the REQ and REP. */
struct droce_svc_path {
	struct droce_addr peer;
	uint8_t mac[6];
	uint32_t dest_qpn, rq_psn, sq_psn;
	uint8_t path_mtu;             /* enum droce_mtu */
	uint8_t max_dest_rd_atomic, max_rd_atomic;
	uint8_t timeout, retry_cnt, rnr_retry;
};

/** INIT -> RTR -> RTS along @p p. @return 0 or the modify error. */
int droce_svc_qp_connect(struct droce_qp *qp, const struct droce_svc_path *p);

/** Any state -> ERR (outstanding WRs flush); a QP in RESET stays. */
void droce_svc_qp_error(struct droce_qp *qp);

#endif
