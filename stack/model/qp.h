/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A queue pair. core/ writes the identity, attributes, rings and the
 * header template (qp.c, ud_qp.c: create, modify, post) and the scheduling
 * links (ctx.c); transport/ writes `tp` (model/tp.h) and the statistics;
 * cc/ writes `ccs` (its plug-in's state) and `rtt` (cc/rtt.c, called by
 * transport/window.c).
 */
#ifndef DROCE_MODEL_QP_H
#define DROCE_MODEL_QP_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "cc/cc.h"
#include "cc/rtt.h"
#include "model/tp.h"
#include "model/wqe.h"
#include "wire/fields.h"

struct droce_srq;

/** CNP rate limit per QP (A17.9.2 leaves it open; DCQCN uses 50 us). */
#define DROCE_CNP_INTERVAL_NS 50000u
/** QPNs 0 and 1 are the IBTA's special QPs; droce's start here. */
#define DROCE_QPN_BASE 2u

/** Path migration state (IBTA 17.2.8; verbs' IBV_MIG_*). */
enum droce_mig_state { DROCE_MIG_MIGRATED, DROCE_MIG_REARM, DROCE_MIG_ARMED };

struct droce_qp {
	struct droce_ctx *ctx;
	struct droce_pd *pd;
	uint32_t pd_id;               /* pd->id: what the key checks compare (10.6.3.2) */
	uint32_t qpn, index;
	uint64_t uid;                 /* this context's QPs numbered from 1, never reused
					 (the CM's test for "still the same QP") */
	enum droce_qp_state state;
	uint8_t type;                 /* enum droce_qp_type: RC, UD or GSI */
	struct droce_qp_attr attr;
	struct droce_cq *scq, *rcq;
	struct droce_qp_cap cap;
	bool sq_sig_all;
	uint32_t mtu;                 /* path MTU in bytes (a power of two, 256..4096) */
	uint8_t mtu_shift;            /* log2(mtu): packets per message without a divide */
	uint8_t mig_state;            /* enum droce_mig_state: MIGRATED, droce loads no alternate path */
	uint64_t timeout_ns;          /* local ACK timeout; 0 = never */
	struct droce_hdrs tmpl;       /* header template for this connection */
	uint8_t img[64];              /* Ethernet + IP + UDP bytes of tmpl (fast build) */
	uint8_t img_len;              /* 0: no image, use droce_build_hdrs */
	uint32_t img_csum;            /* IPv4: header sum without length and checksum */
	struct droce_qp_stats stats;

	/* ---- send queue / requester ---- */
	struct droce_swqe *sq;
	uint8_t *inline_buf;          /* max_inline bytes per SQ slot */
	uint32_t sq_mask;
	uint32_t sq_tail;             /* next slot to post */
	uint32_t sq_una;              /* oldest not completed */

	/* ---- receive queue / responder ---- */
	struct droce_rwqe *rq;
	uint32_t rq_mask, rq_tail, rq_head;
	struct droce_srq *srq;        /* receives come from here (rq: one slot, model/srq.h) */
	void *user;                   /* qp_context, handed back in its events */
	bool comm_est;                /* COMM_EST raised (the first packet in RTR) */

	/* ---- the transport's own object (requester, responder, timers) ---- */
	struct droce_tp tp;

	/* ---- congestion control ---- */
	const struct droce_cc_algo *cc;
	struct droce_cc_state ccs;
	/* ---- RTT, adaptive timeout, window tuning (cc/rtt.h) ---- */
	struct droce_rtt rtt;
	uint8_t timeout_mode;         /* enum droce_timeout_mode; DEFAULT = the context's */
	uint8_t transport;            /* enum droce_transport: GBN, or selective repeat agreed
					 with the peer (transport/sr.h); set before RTR */

	/* ---- scheduling ---- */
	struct droce_qp *ready_next, *ready_prev; /* doubly linked: destroy unlinks in O(1) */
	bool in_ready;
};

#endif
