/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation, the IBTA 11.2.5.1 state transitions with their
 * attribute masks, posting (UD's own rows and checks: core/ud_qp.c). The protocol state lives in the transport's own
 * object (qp->tp, transport/tp.h): transitions call the transport's hooks
 * (reset, RTR, RTS, to ERR, header template); nothing here writes it.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/rand.h"
#include "core/ring_mem.h"
#include "wire/icrc_fast.h"
#include "wire/psn.h"
#include "wire/build.h"
#include "wire/build_bth.h"
#include "wire/bytes.h"
#include "wire/opcode.h"
#include "wire/icrc.h"

static const char *const state_names[] = {
	[DROCE_QPS_RESET] = "RESET", [DROCE_QPS_INIT] = "INIT", [DROCE_QPS_RTR] = "RTR",
	[DROCE_QPS_RTS] = "RTS",     [DROCE_QPS_SQD] = "SQD",   [DROCE_QPS_SQE] = "SQE",
	[DROCE_QPS_ERR] = "ERR",
};

const char *droce_qp_state_str(enum droce_qp_state s)
{
	return (unsigned)s <= DROCE_QPS_ERR ? state_names[s] : "UNKNOWN";
}

/*
 * A QPN is not guessable (docs/security.md): its low ctx->qpn_bits are the
 * table index + DROCE_QPN_BASE (the receive path's O(1) lookup), the bits
 * above them of the 24 (IBTA 9.2: a 24-bit QPN) a keyed permutation of the
 * slot's creation count under the context's secret. A QPN is seen by whoever
 * sees the connection's frames, so this keeps off-path hosts out: one that
 * must guess PSN, QPN and the peer's address now guesses the tag too. And a
 * slot's next 2^tag - 1 QPNs all differ, so a late packet for a destroyed
 * QP never reaches a new one in its slot. 0xFFFFFF (the multicast QPN,
 * 10.5.2.5) is never given.
 */
static uint32_t qpn_make(struct droce_ctx *ctx, uint32_t idx)
{
	unsigned tbits = 24u - ctx->qpn_bits;
	uint32_t low = idx + DROCE_QPN_BASE, qpn;
	do {
		uint32_t n = ctx->qp_gen[idx]++, tag = 0;
		if (tbits >= 8)
			tag = droce_key_permute(ctx->key_secret, 0x51500000u | idx,
						n & ((1u << tbits) - 1u), tbits);
		else if (tbits)
			tag = (uint32_t)droce_siphash64(ctx->key_secret, (uint64_t)idx << 32 | n) &
			      ((1u << tbits) - 1u);
		qpn = tag << ctx->qpn_bits | low;
	} while (qpn == DROCE_QPN_MASK);
	return qpn;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

struct droce_qp *droce_create_qp(struct droce_ctx *ctx, const struct droce_qp_init_attr *ia)
{
	if (!ctx || !ia || !ia->send_cq || !ia->recv_cq || ia->send_cq->ctx != ctx ||
	    ia->recv_cq->ctx != ctx || (unsigned)ia->qp_type > DROCE_QPT_GSI ||
	    (ia->pd && ia->pd->ctx != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	bool gsi = ia->qp_type == DROCE_QPT_GSI;
	if (gsi && ctx->gsi) {
		errno = EBUSY; /* one GSI QP per port (IBTA 13.5.1) */
		return NULL;
	}
	if (ia->srq && (ia->srq->ctx != ctx || gsi)) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_qp_cap cap = ia->cap;
	if (ia->srq) {
		/* IBTA 10.2.9: the QP's receives come from the SRQ; its own RQ
		 * is one slot, the WQE of the message in progress. */
		cap.max_recv_wr = 1;
		cap.max_recv_sge = DROCE_QP_MAX_SGE;
	}
	if (!cap.max_send_wr)
		cap.max_send_wr = DROCE_DEFAULT_MAX_SEND_WR;
	if (!cap.max_recv_wr)
		cap.max_recv_wr = DROCE_DEFAULT_MAX_RECV_WR;
	if (!cap.max_send_sge)
		cap.max_send_sge = DROCE_DEFAULT_MAX_SGE;
	if (!cap.max_recv_sge)
		cap.max_recv_sge = DROCE_DEFAULT_MAX_SGE;
	if (!cap.max_inline_data)
		cap.max_inline_data = DROCE_DEFAULT_MAX_INLINE;
	if (cap.max_send_wr > DROCE_QP_MAX_WR || cap.max_recv_wr > DROCE_QP_MAX_WR ||
	    cap.max_send_sge > DROCE_QP_MAX_SGE || cap.max_recv_sge > DROCE_QP_MAX_SGE ||
	    cap.max_inline_data > 4096) {
		errno = EINVAL;
		return NULL;
	}
	/* The first free index from the rotating cursor: a destroyed QP's
	 * number comes back only after every other free one was handed out,
	 * so a late packet for the old QP (the peer's retransmission, a CM
	 * message of the old connection) finds no QP, or a long-lived one,
	 * instead of the next QP created (the lowest-free rule reused it at
	 * once). */
	uint32_t idx = ctx->p.max_qps, n = ctx->p.max_qps;
	if (gsi)
		idx = n; /* its own slot past the table (ctx.c), QPN 1 */
	else if (ctx->nqps - (ctx->gsi != NULL) < n) {
		uint32_t i = ctx->qp_next < n ? ctx->qp_next : 0;
		while (ctx->qps[i])
			i = i + 1 < n ? i + 1 : 0;
		idx = i;
	} else {
		errno = ENOMEM;
		return NULL;
	}
	struct droce_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	uint32_t sqn = pow2_at_least(cap.max_send_wr), rqn = pow2_at_least(cap.max_recv_wr);
	qp->sq = droce_ring_calloc(sqn, sizeof(*qp->sq));
	qp->rq = droce_ring_calloc(rqn, sizeof(*qp->rq));
	qp->inline_buf = droce_ring_calloc(sqn, cap.max_inline_data);
	if (!qp->sq || !qp->rq || !qp->inline_buf) {
		free(qp->sq);
		free(qp->rq);
		free(qp->inline_buf);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->pd = ia->pd ? ia->pd : &ctx->pd0;
	qp->pd_id = qp->pd->id;
	qp->pd->users++;
	qp->index = idx;
	qp->uid = ++ctx->qp_uids;
	qp->qpn = gsi ? DROCE_GSI_QPN : qpn_make(ctx, idx);
	qp->type = (uint8_t)ia->qp_type;
	qp->state = DROCE_QPS_RESET;
	qp->scq = ia->send_cq;
	qp->rcq = ia->recv_cq;
	qp->scq->users++;
	qp->rcq->users++;
	qp->cap = cap;
	qp->srq = ia->srq;
	qp->user = ia->qp_context;
	if (qp->srq) {
		qp->srq->users++;
		qp->cap.max_recv_wr = qp->cap.max_recv_sge = 0; /* what verbs reports */
	}
	qp->sq_sig_all = ia->sq_sig_all != 0;
	qp->sq_mask = sqn - 1;
	qp->rq_mask = rqn - 1;
	qp->cc = ctx->cc;
	/* Defaults a verbs user would get from a fresh QP. */
	qp->attr.qp_state = DROCE_QPS_RESET;
	qp->attr.path_mtu = DROCE_MTU_4096;
	qp->attr.pkey = DROCE_DEFAULT_PKEY;
	qp->attr.timeout = DROCE_DEFAULT_TIMEOUT;
	qp->attr.retry_cnt = DROCE_DEFAULT_RETRY_CNT;
	qp->attr.rnr_retry = DROCE_DEFAULT_RNR_RETRY;
	qp->attr.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
	qp->attr.max_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
	qp->attr.max_dest_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
	qp->attr.ah_attr.ip_version = ctx->p.ip_version;
	qp->attr.ah_attr.dscp = DROCE_DEFAULT_DSCP;
	qp->attr.ah_attr.ttl = DROCE_DEFAULT_TTL;
	qp->mtu = droce_mtu_bytes(qp->attr.path_mtu);
	qp->mtu_shift = (uint8_t)__builtin_ctz(qp->mtu);
	qp->mig_state = DROCE_MIG_MIGRATED; /* verbs' default; droce has no APM to arm */
	qp->attr.qp_type = ia->qp_type;
	ctx->qps[idx] = qp;
	ctx->nqps++;
	if (gsi) {
		qp->attr.qkey = DROCE_GSI_QKEY;
		ctx->gsi = qp;
		return qp;
	}
	ctx->qp_next = idx + 1;
	if (idx + 1 > ctx->qp_hi)
		ctx->qp_hi = idx + 1;
	return qp;
}

/* O(1): the transmit list is doubly linked (10 k QPs destroyed with work
 * queued walked it 10 k times each). */
static void ready_remove(struct droce_qp *qp)
{
	struct droce_ctx *ctx = qp->ctx;
	if (!qp->in_ready)
		return;
	if (qp->ready_prev)
		qp->ready_prev->ready_next = qp->ready_next;
	else
		ctx->ready_head = qp->ready_next;
	if (qp->ready_next)
		qp->ready_next->ready_prev = qp->ready_prev;
	else
		ctx->ready_tail = qp->ready_prev;
	qp->in_ready = false;
	qp->ready_next = qp->ready_prev = NULL;
}

int droce_destroy_qp(struct droce_qp *qp)
{
	if (!qp)
		return -EINVAL;
	struct droce_ctx *ctx = qp->ctx;
	ready_remove(qp);
	droce_timers_set(&ctx->timers, qp->index, UINT64_MAX); /* its timers die with it */
	ctx->qps[qp->index] = NULL;
	if (qp == ctx->gsi)
		ctx->gsi = NULL;
	ctx->nqps--;
	qp->pd->users--;
	droce_ud_swqes_release(qp, qp->sq_una, qp->sq_tail); /* dropped: their handles go */
	qp->scq->users--;
	qp->rcq->users--;
	if (qp->srq)
		qp->srq->users--;
	droce_event_forget(ctx, qp);
	droce_tp_release(qp);
	free(qp->sq);
	free(qp->rq);
	free(qp->inline_buf);
	free(qp);
	return 0;
}

uint32_t droce_qp_num(const struct droce_qp *qp)
{
	return qp ? qp->qpn : 0;
}

int droce_qp_get_stats(const struct droce_qp *qp, struct droce_qp_stats *out)
{
	if (!qp || !out)
		return -EINVAL;
	*out = qp->stats;
	/* RTT and what it drives: computed, not counted. */
	out->rtt_samples = qp->rtt.samples;
	out->rtt_min_ns = qp->rtt.min_ns;
	out->rtt_srtt_ns = qp->rtt.srtt_ns;
	out->rtt_var_ns = qp->rtt.rttvar_ns;
	out->rto_ns = droce_tp_rto(qp);
	out->window_bytes = qp->ccs.wnd_bytes;
	out->window_pkts = qp->ccs.wnd_pkts;
	out->timeout_mode = qp->timeout_mode ? qp->timeout_mode : qp->ctx->p.timeout_mode;
	out->delivery_mbps = (uint64_t)(qp->rtt.rate_bpns * 8000.0);
	out->qp_state = (uint8_t)qp->state;
	out->psn_next = qp->tp.npsn;
	out->psn_una = qp->tp.una_psn;
	out->psn_expected = qp->tp.epsn;
	out->cc_rate_mbps = qp->cc && !strcmp(qp->cc->name, "dcqcn")
				    ? (uint64_t)(qp->ccs.u.dcqcn.rc * 8000.0) : 0;
	out->transport = qp->transport;
	return 0;
}

int droce_qp_set_transport(struct droce_qp *qp, int mode)
{
	/* Before RTR: the responder's first packet already follows the mode. */
	if (!qp || qp->type != DROCE_QPT_RC || mode < DROCE_TRANSPORT_GBN ||
	    mode > DROCE_TRANSPORT_SR_SPRAY ||
	    (qp->state != DROCE_QPS_RESET && qp->state != DROCE_QPS_INIT))
		return -EINVAL;
	if (droce_tp_fit(qp, (uint8_t)mode, qp->attr.max_dest_rd_atomic) < 0)
		return -ENOMEM;
	qp->transport = (uint8_t)mode;
	return 0;
}

int droce_qp_set_timeout_mode(struct droce_qp *qp, int mode)
{
	if (!qp || mode < DROCE_TIMEOUT_DEFAULT || mode > DROCE_TIMEOUT_ADAPTIVE)
		return -EINVAL;
	qp->timeout_mode = (uint8_t)mode;
	return 0;
}

int droce_qp_set_cc(struct droce_qp *qp, const char *name)
{
	const struct droce_cc_algo *a = qp ? droce_cc_find(name) : NULL;
	if (!a || !name || (qp->state != DROCE_QPS_RESET && qp->state != DROCE_QPS_INIT &&
			    qp->state != DROCE_QPS_RTR))
		return -EINVAL;
	qp->cc = a;
	return 0;
}

int droce_query_qp(struct droce_qp *qp, struct droce_qp_attr *attr, unsigned mask)
{
	if (!qp || !attr)
		return -EINVAL;
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cap = qp->cap;
	if (qp->state >= DROCE_QPS_RTS && qp->state != DROCE_QPS_ERR)
		attr->sq_psn = qp->tp.npsn;
	if (qp->state >= DROCE_QPS_RTR && qp->state != DROCE_QPS_ERR)
		attr->rq_psn = qp->tp.epsn;
	return 0;
}

/* ------------------------------------------------------------- modify -- */

#define M(x) DROCE_QP_##x

struct transition {
	unsigned req, opt;
};

/* IBTA 11.2.5.1 (table 93 / the verbs qp_state_table) for RC. Index
 * [cur][next]; a zero entry with valid == false is illegal. */
static bool transition(enum droce_qp_state cur, enum droce_qp_state next,
		       struct transition *t)
{
	t->req = t->opt = 0;
	if (next == DROCE_QPS_RESET || next == DROCE_QPS_ERR)
		return true; /* any -> RESET, any -> ERR, no attributes */
	switch (cur) {
	case DROCE_QPS_RESET:
		if (next != DROCE_QPS_INIT)
			return false;
		t->req = M(ACCESS_FLAGS);
		t->opt = M(PKEY);
		return true;
	case DROCE_QPS_INIT:
		if (next == DROCE_QPS_INIT) {
			t->opt = M(ACCESS_FLAGS) | M(PKEY);
			return true;
		}
		if (next != DROCE_QPS_RTR)
			return false;
		t->req = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
			 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER);
		t->opt = M(ACCESS_FLAGS) | M(PKEY);
		return true;
	case DROCE_QPS_RTR:
		if (next != DROCE_QPS_RTS)
			return false;
		t->req = M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
			 M(MAX_QP_RD_ATOMIC);
		t->opt = M(ACCESS_FLAGS) | M(MIN_RNR_TIMER);
		return true;
	case DROCE_QPS_RTS:
		if (next == DROCE_QPS_RTS) {
			t->opt = M(ACCESS_FLAGS) | M(MIN_RNR_TIMER);
			return true;
		}
		return next == DROCE_QPS_SQD;
	case DROCE_QPS_SQD:
		if (next == DROCE_QPS_RTS) {
			t->opt = M(ACCESS_FLAGS) | M(MIN_RNR_TIMER);
			return true;
		}
		if (next == DROCE_QPS_SQD) {
			t->opt = M(AV) | M(PATH_MTU) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
				 M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | M(ACCESS_FLAGS) |
				 M(PKEY) | M(MIN_RNR_TIMER);
			return true;
		}
		return false;
	case DROCE_QPS_SQE:
		if (next != DROCE_QPS_RTS)
			return false;
		t->opt = M(ACCESS_FLAGS) | M(MIN_RNR_TIMER);
		return true;
	case DROCE_QPS_ERR:
	default:
		return false;
	}
}

static bool values_ok(const struct droce_qp_attr *a, unsigned mask, const struct droce_ctx *ctx)
{
	const unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			     DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;
	if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~acc))
		return false;
	/* Not above what the link carries: its full-size frames would be
	 * dropped, every message over one packet would retry and fail. */
	if ((mask & M(PATH_MTU)) && (!droce_mtu_bytes(a->path_mtu) || a->path_mtu > ctx->p.max_mtu))
		return false;
	if ((mask & M(RQ_PSN)) && a->rq_psn > DROCE_PSN_MASK)
		return false;
	if ((mask & M(SQ_PSN)) && a->sq_psn > DROCE_PSN_MASK)
		return false;
	if ((mask & M(DEST_QPN)) && a->dest_qp_num > DROCE_QPN_MASK)
		return false;
	if ((mask & M(TIMEOUT)) && a->timeout > 31)
		return false;
	if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
		return false;
	if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
		return false;
	if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return false;
	if ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > DROCE_QP_MAX_RD_ATOMIC)
		return false;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > DROCE_QP_MAX_RD_ATOMIC)
		return false;
	if ((mask & M(AV)) && a->ah_attr.ip_version != ctx->p.ip_version)
		return false;
	if ((mask & M(AV)) && a->ah_attr.dscp > 63)
		return false;
	return true;
}





static uint64_t ack_timeout_ns(uint8_t t)
{
	/* IBTA 9.7.6.1.3: 4.096 us * 2^timeout; 0 disables the timer. */
	return t ? 4096ull << t : 0;
}

static void qp_reset(struct droce_qp *qp)
{
	droce_ud_swqes_release(qp, qp->sq_una, qp->sq_tail); /* RESET drops them */
	qp->sq_tail = qp->sq_una = 0;
	qp->rq_tail = qp->rq_head = 0;
	qp->comm_est = false;
	droce_tp_reset(qp);
	memset(&qp->stats, 0, sizeof(qp->stats));
}

int droce_modify_qp(struct droce_qp *qp, const struct droce_qp_attr *attr, unsigned mask)
{
	if (!qp || !attr)
		return -EINVAL;
	enum droce_qp_state cur = qp->state;
	enum droce_qp_state next = (mask & M(STATE)) ? attr->qp_state : cur;
	if ((unsigned)next > DROCE_QPS_ERR)
		return -EINVAL;
	struct transition t;
	if (qp->type == DROCE_QPT_RC ? !transition(cur, next, &t)
				     : !droce_ud_transition(cur, next, qp->type == DROCE_QPT_GSI,
							    &t.req, &t.opt))
		return -EINVAL;
	unsigned given = mask & ~M(STATE);
	if ((given & t.req) != t.req || (given & ~(t.req | t.opt)))
		return -EINVAL;
	if (!values_ok(attr, given, qp->ctx))
		return -EINVAL;
	/* A rewind resegments what was sent at the MTU it was sent with: no
	 * new path MTU while requests are outstanding (SQD is for draining
	 * first, 11.2.5.1). */
	if ((given & M(PATH_MTU)) && attr->path_mtu != qp->attr.path_mtu &&
	    qp->sq_una != qp->tp.sq_new)
		return -EBUSY;
	/* READ/atomic resources are allocated when the QP first takes any,
	 * before anything changes (a failure leaves the QP as it was). */
	if (qp->type == DROCE_QPT_RC && (given & M(MAX_DEST_RD_ATOMIC)) &&
	    droce_tp_fit(qp, qp->transport, attr->max_dest_rd_atomic) < 0)
		return -ENOMEM;

	struct droce_qp_attr *a = &qp->attr;
	if (given & M(ACCESS_FLAGS))
		a->qp_access_flags = attr->qp_access_flags;
	if (given & M(PKEY))
		a->pkey = attr->pkey;
	if (given & M(AV))
		a->ah_attr = attr->ah_attr;
	if (given & M(PATH_MTU))
		a->path_mtu = attr->path_mtu;
	if (given & M(TIMEOUT))
		a->timeout = attr->timeout;
	if (given & M(RETRY_CNT))
		a->retry_cnt = attr->retry_cnt;
	if (given & M(RNR_RETRY))
		a->rnr_retry = attr->rnr_retry;
	if (given & M(RQ_PSN))
		a->rq_psn = attr->rq_psn;
	if (given & M(SQ_PSN))
		a->sq_psn = attr->sq_psn;
	if (given & M(MAX_QP_RD_ATOMIC))
		a->max_rd_atomic = attr->max_rd_atomic;
	if (given & M(MAX_DEST_RD_ATOMIC))
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (given & M(MIN_RNR_TIMER))
		a->min_rnr_timer = attr->min_rnr_timer;
	if (given & M(DEST_QPN))
		a->dest_qp_num = attr->dest_qp_num;
	if (given & M(QKEY))
		a->qkey = attr->qkey;
	qp->mtu = droce_mtu_bytes(a->path_mtu);
	qp->mtu_shift = (uint8_t)__builtin_ctz(qp->mtu); /* values_ok: a valid MTU, never 0 */
	qp->timeout_ns = ack_timeout_ns(a->timeout);
	/* A UD QP has no connection template: its headers come from each WR's
	 * address handle (transport/ud.c). */
	if (qp->type == DROCE_QPT_RC && (given & (M(AV) | M(DEST_QPN) | M(PKEY))))
		droce_tp_build_template(qp);

	if (next == DROCE_QPS_RESET) {
		qp->state = DROCE_QPS_RESET;
		qp_reset(qp);
	} else if (next == DROCE_QPS_ERR) {
		if (cur != DROCE_QPS_ERR)
			droce_tp_to_err(qp);
	} else {
		if (cur == DROCE_QPS_INIT && next == DROCE_QPS_RTR)
			droce_tp_rtr(qp);
		if (cur == DROCE_QPS_RTR && next == DROCE_QPS_RTS)
			droce_tp_rts(qp);
		qp->state = next;
		if (next == DROCE_QPS_RTS)
			droce_qp_kick(qp);
	}
	droce_ctx_timer_fold(qp->ctx, qp); /* a reset or ERR cancelled its timers */
	a->qp_state = qp->state;
	return 0;
}

/* --------------------------------------------------------- completion -- */

/* A WR posted to a QP in SQE/ERR, or a receive posted in ERR, completes at
 * once as flushed (verbs: flushed WRs always generate a completion). */
static void flush_wr(struct droce_qp *qp, struct droce_cq *cq, uint64_t wr_id,
		     enum droce_wc_opcode op, uint32_t len)
{
	struct droce_wc wc = {
		.wr_id = wr_id,
		.status = DROCE_WC_WR_FLUSH_ERR,
		.opcode = op,
		.byte_len = len,
		.qp_num = qp->qpn,
	};
	if (droce_cq_push(cq, &wc) != 0) {
		droce_tp_to_err(qp); /* 11.4.2.1: CQ overrun (no-op when already ERR) */
		droce_ctx_timer_fold(qp->ctx, qp);
	}
}

/* ------------------------------------------------------------ posting -- */

static int prepare_swqe(struct droce_qp *qp, const struct droce_send_wr *wr,
			struct droce_swqe *w, uint32_t slot)
{
	if ((unsigned)wr->opcode > DROCE_WR_ATOMIC_FETCH_AND_ADD || wr->num_sge < 0 ||
	    (uint32_t)wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (qp->type != DROCE_QPT_RC && droce_ud_wr_check(qp, wr))
		return -EINVAL;
	bool atomic = wr->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ||
		      wr->opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD;
	bool read = wr->opcode == DROCE_WR_RDMA_READ;
	uint64_t total = 0;
	for (int i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > DROCE_MAX_MSG)
		return -EINVAL;
	if (atomic && (wr->num_sge != 1 || total != 8 || (wr->wr.atomic.remote_addr & 7)))
		return -EINVAL;
	bool inl_ok = (wr->send_flags & DROCE_SEND_INLINE) && !atomic && !read;
	if (inl_ok && total > qp->cap.max_inline_data)
		return -EINVAL;

	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = (uint8_t)wr->send_flags;
	w->status = DROCE_WC_SUCCESS;
	w->imm = be32toh(wr->imm_data);
	w->length = (uint32_t)total;
	if (atomic) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (qp->type != DROCE_QPT_RC) {
		droce_ud_swqe_set(w, wr);
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	w->nseg = 0;
	if (inl_ok) {
		uint8_t *inl = qp->inline_buf + (size_t)slot * qp->cap.max_inline_data;
		uint32_t off = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			const struct droce_sge *s = &wr->sg_list[i];
			if (s->length)
				memcpy(inl + off, (const void *)(uintptr_t)s->addr, s->length);
			off += s->length;
		}
		if (off) {
			w->seg[0].ptr = inl;
			w->seg[0].len = off;
			w->seg[0].mr.slot = DROCE_MR_REF_NONE; /* the QP's own copy */
			w->nseg = 1;
		}
		return 0;
	}
	/* Resolve lkeys now; a bad one is not a post error but completes
	 * with LOC_PROT_ERR when the WQE's turn comes (verbs semantics). */
	unsigned need = (read || atomic) ? DROCE_ACCESS_LOCAL_WRITE : 0;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct droce_sge *s = &wr->sg_list[i];
		if (!s->length)
			continue;
		struct droce_seg *g = &w->seg[w->nseg];
		uint8_t *p = droce_mr_lookup(qp->ctx, s->lkey, s->addr, s->length, need, qp->pd_id,
					     &g->mr);
		if (!p) {
			w->status = DROCE_WC_LOC_PROT_ERR;
			w->nseg = 0;
			return 0;
		}
		g->ptr = p;
		g->len = s->length;
		w->nseg++;
	}
	return 0;
}

int droce_post_send(struct droce_qp *qp, struct droce_send_wr *wr, struct droce_send_wr **bad_wr)
{
	if (!qp || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	/* IBTA 10.8.1: the SQ takes WRs in RTS and SQD; droce also takes them in
	 * SQE/ERR and flushes them at once; RESET/INIT/RTR refuse. */
	if (qp->state < DROCE_QPS_RTS) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (qp->sq_tail - qp->sq_una >= qp->cap.max_send_wr) {
			if (bad_wr)
				*bad_wr = wr;
			return -ENOMEM;
		}
		uint32_t slot = qp->sq_tail & qp->sq_mask;
		struct droce_swqe *w = &qp->sq[slot];
		int rc = prepare_swqe(qp, wr, w, slot);
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			return rc;
		}
		if (qp->state == DROCE_QPS_ERR || qp->state == DROCE_QPS_SQE) {
			flush_wr(qp, qp->scq, w->wr_id, droce_wc_opcode_of(w->opcode), w->length);
			continue;
		}
		if (qp->type != DROCE_QPT_RC)
			droce_ud_swqe_hold(w);
		qp->sq_tail++;
	}
	if (qp->state == DROCE_QPS_RTS)
		droce_qp_kick(qp);
	return 0;
}

/* A receive WR as a WQE: each SGE resolved to memory now (a bad lkey
 * marks the WQE LOC_PROT_ERR, reported when a message consumes it). */
void droce_rwqe_fill(struct droce_ctx *ctx, uint32_t pd_id, struct droce_rwqe *r,
		     const struct droce_recv_wr *wr)
{
	r->wr_id = wr->wr_id;
	r->status = DROCE_WC_SUCCESS;
	r->nseg = 0;
	uint64_t total = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct droce_sge *s = &wr->sg_list[i];
		total += s->length;
		if (!s->length)
			continue;
		struct droce_seg *g = &r->seg[r->nseg];
		uint8_t *p = droce_mr_lookup(ctx, s->lkey, s->addr, s->length,
					     DROCE_ACCESS_LOCAL_WRITE, pd_id, &g->mr);
		if (!p) {
			r->status = DROCE_WC_LOC_PROT_ERR;
			continue;
		}
		g->ptr = p;
		g->len = s->length;
		r->nseg++;
	}
	r->length = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int droce_post_recv(struct droce_qp *qp, struct droce_recv_wr *wr, struct droce_recv_wr **bad_wr)
{
	/* A QP on an SRQ has no receive queue to post to (verbs: EINVAL). */
	if (!qp || !wr || qp->state == DROCE_QPS_RESET || qp->srq) {
		if (bad_wr)
			*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			if (bad_wr)
				*bad_wr = wr;
			return -EINVAL;
		}
		if (qp->state == DROCE_QPS_ERR) {
			flush_wr(qp, qp->rcq, wr->wr_id, DROCE_WC_RECV, 0);
			continue;
		}
		if (qp->rq_tail - qp->rq_head >= qp->cap.max_recv_wr) {
			if (bad_wr)
				*bad_wr = wr;
			return -ENOMEM;
		}
		droce_rwqe_fill(qp->ctx, qp->pd_id, &qp->rq[qp->rq_tail & qp->rq_mask], wr);
		qp->rq_tail++;
	}
	return 0;
}


