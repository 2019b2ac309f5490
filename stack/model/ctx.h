/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context: its tables (QPs, MRs, CQs, AHs), the link, the deadline
 * heap, counters and the service hook. Written by core/ (ctx.c, mr.c,
 * cq.c, qp.c, ah.c); transport/ counts drops (droce_ctx_drop) and reads
 * the parameters, the link and the MR table.
 */
#ifndef DROCE_MODEL_CTX_H
#define DROCE_MODEL_CTX_H

#include <stdint.h>

#include <droce/droce.h>

#include "model/stage.h"
#include "model/drop.h"
#include "model/pd.h"
#include "model/qp.h"
#include "model/service.h"
#include "model/timers.h"
#include "wire/icrc_fast.h"
#include "wire/parse.h"

struct droce_mr_slot;
struct droce_cq;
struct droce_ah;
struct droce_srq;

/** Asynchronous events held for the application (model/event.h). */
#define DROCE_EVENT_RING 256u

/** Header scratch: Ethernet + VLAN + IPv6 + UDP + BTH + largest ext. */
#define DROCE_HDR_SCRATCH 160u

struct droce_ctx {
	struct droce_ctx_params p;
	struct droce_link link;
	uint64_t link_paused_ns;      /* the link's paused_ns() at this poll (0: no such op) */
	uint64_t link_paused_at;      /* the last poll that found it paused, or 0 */
	const struct droce_cc_algo *cc;
	uint64_t rng;                 /* xorshift64*: spread only (UDP ports, MR slot start) */
	uint64_t key_secret[2];       /* the key permutation's secret (core/rand.c) */
	struct droce_ctx_stats stats;
	struct droce_qp **qps;        /* by index; QPN's low qpn_bits = index + DROCE_QPN_BASE */
	uint32_t *qp_gen;             /* per index: QPs created there so far (the tag's input) */
	uint32_t qpn_low_mask;        /* the QPN bits that give the index (core/qp.c qpn_make) */
	uint8_t qpn_bits;
	uint32_t nqps;
	uint32_t qp_hi;               /* one past the highest index ever used */
	uint32_t qp_next;             /* create looks for a free index from here (rotating:
					 a QPN comes back only after every other free one) */
	uint64_t qp_uids;             /* the last QP uid handed out (QPNs wrap; uids do not) */
	struct droce_mr_slot *mrs;
	uint32_t nmrs_used;
	uint8_t mr_bits;              /* low key bits naming the slot; the rest is the
					 slot's registration count, permuted (core/mr.c) */
	uint32_t mr_mask;             /* (1 << mr_bits) - 1 */
	struct droce_pd pd0;          /* the PD of objects made without one */
	struct droce_pd *pds;         /* every PD allocated but pd0 */
	uint32_t pd_next;             /* the next PD's id */
	struct droce_qp *ready_head, *ready_tail;
	struct droce_cq *cqs;         /* every live CQ */
	struct droce_ah *ahs;         /* every live address handle */
	struct droce_qp *gsi;         /* the GSI QP (QPN 1), at index max_qps, or NULL */
	struct droce_timers timers;   /* every QP's deadline, by index (model/timers.h) */
	uint32_t *due;                /* run_timers' scratch: indexes due this poll */
	struct droce_rx_frame *rxf;
	struct droce_icrc_seeds icrc_seeds;
	uint8_t scratch[DROCE_HDR_SCRATCH];
	struct droce_ctx_service svc; /* the CM service, run from the poll (model/service.h) */
	struct droce_srq *srqs;       /* every live SRQ (model/srq.h) */
	/* Events not taken yet, oldest at ev_head (model/event.h). */
	struct droce_event ev[DROCE_EVENT_RING];
	uint32_t ev_head, ev_count;
	uint64_t ev_lost;             /* raised while the ring was full */
	struct droce_stage_acc stage; /* the poll-stage trace (model/stage.h; read only when built in) */
};



static inline void droce_ctx_drop(struct droce_ctx *ctx, struct droce_qp *qp,
				  enum droce_drop_reason r)
{
	ctx->stats.drop[r]++;
	if (qp)
		qp->stats.drops++;
}

#endif
