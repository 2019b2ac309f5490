/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's internal objects: context, MR table, CQ, QP with its send
 * and receive rings; the QP embeds the transport's own object (struct
 * droce_tp, transport/tp.h). The MR lookup and the CQ push are inline data
 * operations here, so the transport uses the objects without calling into
 * core/ (which calls the transport: one way). Nothing outside the engine
 * includes it.
 *
 * Counters (sq_* / rq_*) are free-running uint32_t; a slot is counter & mask.
 */
#ifndef DROCE_CORE_CORE_H
#define DROCE_CORE_CORE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <droce/droce.h>

#include "cc/cc.h"
#include "core/drop.h"
#include "core/icrc_fast.h"
#include "core/service.h"
#include "core/timers.h"
#include "transport/rtt.h"
#include "transport/tp.h"
#include "wire/fields.h"
#include "wire/hdr.h"
#include "wire/parse.h"

/** Most SGEs per WQE (a frame references at most DROCE_TX_MAX_SEG segments). */
#define DROCE_QP_MAX_SGE DROCE_TX_MAX_SEG
/** Largest WQE ring accepted (power of two). */
#define DROCE_QP_MAX_WR 65536u
/** IBTA 9.4.x: largest message, 2^31 bytes. */
#define DROCE_MAX_MSG (1u << 31)
/** Header scratch: Ethernet + VLAN + IPv6 + UDP + BTH + largest ext. */
#define DROCE_HDR_SCRATCH 160u
/** CNP rate limit per QP (A17.9.2 leaves it open; DCQCN uses 50 us). */
#define DROCE_CNP_INTERVAL_NS 50000u

/* Two addresses equal, IPv4 in the first 4 bytes: a fixed-size compare per
 * packet on the receive path, not a libc memcmp call. */
static inline bool droce_ip_eq(const uint8_t *a, const uint8_t *b, bool v4)
{
	uint64_t x[2], y[2];
	if (v4) {
		uint32_t u, v;
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		return u == v;
	}
	memcpy(x, a, 16);
	memcpy(y, b, 16);
	return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

struct droce_seg {
	uint8_t *ptr;
	uint32_t len;
};

/** Copy @p len bytes from @p src into the segments, starting @p off bytes in. */
static inline void droce_seg_copy_in(const struct droce_seg *s, unsigned n, uint32_t off,
				     const uint8_t *src, uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		uint32_t k = s[i].len - off < len ? s[i].len - off : len;
		memcpy(s[i].ptr + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
}

/** Describe bytes [off, off+len) of the segments as at most n segments in @p out. @return count. */
static inline unsigned droce_seg_slice(const struct droce_seg *s, unsigned n, uint32_t off,
				       uint32_t len, struct droce_seg *out)
{
	/* The usual packet: inside the first segment (what the loop below
	 * gives then, without walking it). */
	if (n && len && (uint64_t)off + len <= s[0].len) {
		out[0].ptr = s[0].ptr + off;
		out[0].len = len;
		return 1;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < n && len; i++) {
		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		uint32_t c = s[i].len - off < len ? s[i].len - off : len;
		out[k].ptr = s[i].ptr + off;
		out[k].len = c;
		k++;
		len -= c;
		off = 0;
	}
	return k;
}

/* ------------------------------------------------------------------ MR -- */

struct droce_mr_slot {
	struct droce_mr mr;   /* public part, handed out */
	bool used;
	uint8_t last_key;     /* key bits of the previous registration in this slot */
};

/**
 * Resolve (key, va, len) to a host pointer, checking key, bounds and
 * @p access (DROCE_ACCESS_* bits all required). @p remote: key is an rkey.
 * @return the pointer, or NULL (wrong/stale key, out of bounds, no access).
 */
static inline uint8_t *droce_mr_lookup(struct droce_ctx *ctx, uint32_t key, uint64_t va,
				       uint64_t len, unsigned access);

/* ------------------------------------------------------------------ CQ -- */

struct droce_cq {
	struct droce_ctx *ctx;
	struct droce_wc *ring;
	uint32_t depth, head, count;
	uint32_t users;        /* QPs attached */
	struct droce_cq *prev, *next; /* the context's list (destroyed with it) */
	bool overflow;
	uint64_t overflows;    /* completions lost */
};

/** Append a completion. @return 0, or -EOVERFLOW (CQ full: flagged and counted). */
static inline int droce_cq_push(struct droce_cq *cq, const struct droce_wc *wc)
{
	if (cq->count == cq->depth) {
		cq->overflow = true;
		cq->overflows++;
		return -EOVERFLOW;
	}
	uint32_t slot = cq->head + cq->count;
	if (slot >= cq->depth)
		slot -= cq->depth;
	cq->ring[slot] = *wc;
	cq->count++;
	return 0;
}

/* ------------------------------------------------------------------ AH -- */

/** A UD address handle (core/ah.c): the network fields of its datagrams,
 * filled once at create from the attributes and the context's address. */
struct droce_ah {
	struct droce_ctx *ctx;
	struct droce_ah_attr attr;
	struct droce_net_fields net;  /* sport 0: derived per datagram from the QPNs */
	struct droce_ah *prev, *next; /* the context's list (destroyed with it) */
};

/* ------------------------------------------------------------------ QP -- */

/** A send WQE. UD WQEs keep their destination in the RC fields (no room
 * spent on every RC WQE): remote_addr the address handle, rkey the remote
 * QPN, compare_add the DETH Q_Key (droce_swqe_ud_*). */
struct droce_swqe {
	uint64_t wr_id;
	uint8_t opcode;         /* enum droce_wr_opcode */
	uint8_t nseg;
	uint8_t flags;          /* DROCE_SEND_* */
	uint8_t status;         /* enum droce_wc_status found at post (LOC_PROT_ERR) */
	uint32_t imm;           /* wire value (host order of the big-endian bytes) */
	uint32_t length;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add, swap;
	/* Assigned on first transmission. */
	uint32_t first_psn, last_psn, npkts;
	uint32_t rd_next_psn;   /* READ/atomic: next response PSN expected */
	uint64_t bseq;          /* byte sequence of the first byte (window accounting) */
	struct droce_seg seg[DROCE_QP_MAX_SGE];
};

/** A receive WQE. */
struct droce_rwqe {
	uint64_t wr_id;
	uint8_t nseg;
	uint8_t status;         /* SUCCESS, or LOC_PROT_ERR for a bad lkey found at post */
	uint32_t length;
	struct droce_seg seg[DROCE_QP_MAX_SGE];
};


/** Path migration state (IBTA 17.2.8; verbs' IBV_MIG_*). */
enum droce_mig_state { DROCE_MIG_MIGRATED, DROCE_MIG_REARM, DROCE_MIG_ARMED };

struct droce_qp {
	struct droce_ctx *ctx;
	uint32_t qpn, index;
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

	/* ---- the transport's own object (requester, responder, timers) ---- */
	struct droce_tp tp;

	/* ---- congestion control ---- */
	const struct droce_cc_algo *cc;
	struct droce_cc_state ccs;
	/* ---- RTT, adaptive timeout, window tuning (transport/rtt.h, issue 12) ---- */
	struct droce_rtt rtt;
	uint8_t timeout_mode;         /* enum droce_timeout_mode; DEFAULT = the context's */

	/* ---- scheduling ---- */
	struct droce_qp *ready_next, *ready_prev; /* doubly linked: destroy unlinks in O(1) */
	bool in_ready;
};

/* --------------------------------------------------------------- context -- */

struct droce_ctx {
	struct droce_ctx_params p;
	struct droce_link link;
	const struct droce_cc_algo *cc;
	uint64_t rng;
	struct droce_ctx_stats stats;
	struct droce_qp **qps;        /* by index; QPN = index + DROCE_QPN_BASE */
	uint32_t nqps;
	uint32_t qp_hi;               /* one past the highest index ever used */
	uint32_t qp_free;             /* every index below it is in use (create starts here) */
	struct droce_mr_slot *mrs;
	uint32_t nmrs_used;
	struct droce_qp *ready_head, *ready_tail;
	struct droce_cq *cqs;         /* every live CQ */
	struct droce_ah *ahs;         /* every live address handle */
	struct droce_qp *gsi;         /* the GSI QP (QPN 1), at index max_qps, or NULL */
	struct droce_timers timers;   /* every QP's deadline, by index (core/timers.h) */
	uint32_t *due;                /* run_timers' scratch: indexes due this poll */
	struct droce_rx_frame *rxf;
	struct droce_icrc_seeds icrc_seeds;
	uint8_t scratch[DROCE_HDR_SCRATCH];
	struct droce_ctx_service svc; /* the CM service, run from the poll (core/service.h) */
};

/** QPNs 0 and 1 are the IBTA's special QPs; droce's start here. */
#define DROCE_QPN_BASE 2u

/* UD WQE destination (see struct droce_swqe). */
static inline const struct droce_ah *droce_swqe_ud_ah(const struct droce_swqe *w)
{
	return (const struct droce_ah *)(uintptr_t)w->remote_addr;
}
static inline uint32_t droce_swqe_ud_qpn(const struct droce_swqe *w) { return w->rkey; }
static inline uint32_t droce_swqe_ud_qkey(const struct droce_swqe *w) { return (uint32_t)w->compare_add; }

/* core/ud_qp.c: UD and GSI QPs' part of modify and post. */
/** IBTA 11.2.5.1 for UD: required and optional attributes of cur -> next. @return false if illegal. */
bool droce_ud_transition(enum droce_qp_state cur, enum droce_qp_state next, bool gsi,
			 unsigned *req, unsigned *opt);
/** Check a UD send WR (opcode, address handle, QPN). @return 0 or -EINVAL. */
int droce_ud_wr_check(const struct droce_qp *qp, const struct droce_send_wr *wr);
/** Keep a UD send WR's destination in the WQE. */
static inline void droce_ud_swqe_set(struct droce_swqe *w, const struct droce_send_wr *wr)
{
	w->remote_addr = (uintptr_t)wr->wr.ud.ah;
	w->rkey = wr->wr.ud.remote_qpn;
	w->compare_add = wr->wr.ud.remote_qkey;
	w->swap = 0;
}

uint64_t droce_ctx_rand(struct droce_ctx *ctx);

/** Put @p qp on the context's transmit list (idempotent). */
void droce_qp_kick_list(struct droce_qp *qp);
/* Inline: every post and every received frame asks, and the QP is mostly
 * on the list already (one test, no call). */
static inline void droce_qp_kick(struct droce_qp *qp)
{
	if (!qp->in_ready)
		droce_qp_kick_list(qp);
}

/** Fold @p qp's transport deadline into the context's timers (after every
 * call into the transport; one compare when it did not move). */
static inline void droce_ctx_timer_fold(struct droce_ctx *ctx, struct droce_qp *qp)
{
	droce_timers_set(&ctx->timers, qp->index, droce_tp_deadline(&qp->tp));
}

static inline void droce_ctx_drop(struct droce_ctx *ctx, struct droce_qp *qp,
				  enum droce_drop_reason r)
{
	ctx->stats.drop[r]++;
	if (qp)
		qp->stats.drops++;
}

/* cc/window.c: an ACK moved una_psn, @p bytes newly acknowledged: take the
 * RTT sample (cc's on_rtt) and, with window_tune, follow the measured BDP. */
void droce_qp_rtt_ack(struct droce_qp *qp, uint64_t bytes, uint64_t now);

/** The completion opcode of a send WQE's work request opcode (verbs' mapping). */
static inline enum droce_wc_opcode droce_wc_opcode_of(uint8_t wr_op)
{
	switch (wr_op) {
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		return DROCE_WC_RDMA_WRITE;
	case DROCE_WR_RDMA_READ:
		return DROCE_WC_RDMA_READ;
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
		return DROCE_WC_COMP_SWAP;
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		return DROCE_WC_FETCH_ADD;
	default:
		return DROCE_WC_SEND;
	}
}

/* Resolve (key, va, len) to a host pointer: slot, full key, access bits,
 * bounds (no overflow), before any byte is touched (GUIDE principle 5). */
static inline uint8_t *droce_mr_lookup(struct droce_ctx *ctx, uint32_t key, uint64_t va,
				       uint64_t len, unsigned access)
{
	uint32_t i = key >> 8;
	if (i >= ctx->p.max_mrs)
		return NULL;
	const struct droce_mr_slot *s = &ctx->mrs[i];
	if (!s->used || s->mr.lkey != key)
		return NULL;
	if ((s->mr.access & access) != access)
		return NULL;
	uint64_t base = (uintptr_t)s->mr.addr;
	if (va < base || va + len < va || va + len > base + s->mr.length)
		return NULL;
	return (uint8_t *)s->mr.addr + (va - base);
}

#endif
