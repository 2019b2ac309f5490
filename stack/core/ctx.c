/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context and its poll loop: RX burst -> parse -> QP lookup -> the
 * QP's transport (droce_tp_rx); timers due (droce_tp_timers, from the
 * deadline heap model/timers.h: no poll scans the QP table); round-robin TX
 * over QPs with work (droce_tp_tx); flush. core/ dispatches and schedules:
 * after each call it reads what the transport asked for (a turn on the
 * link: tp.kick; a deadline: droce_tp_deadline) instead of being called back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/rand.h"
#include "wire/icrc_fast.h"
#include "transport/rx_fused.h"
#include "wire/opcode.h"

static const char *const drop_names[] = {
#define X(n, s) [DROCE_DROP_PARSE_##n] = #n,
	DROCE_PARSE_REASONS(X)
#undef X
#define X(n, s) [DROCE_DROP_##n] = #n,
	DROCE_DROP_TRANSPORT_REASONS(X)
#undef X
};

const char *droce_drop_reason_name(unsigned reason)
{
	return reason < DROCE_DROP__COUNT ? drop_names[reason] : NULL;
}

void droce_ctx_params_init(struct droce_ctx_params *p)
{
	memset(p, 0, sizeof(*p));
	p->ip_version = 4;
	p->max_qps = 1024;
	p->max_mrs = 4096;
	p->burst = DROCE_DEFAULT_BURST;
	p->cc = NULL;
	p->window_pkts = DROCE_DEFAULT_WINDOW_PKTS;
	p->window_bytes = DROCE_DEFAULT_WINDOW_BYTES;
	p->timeout_mode = DROCE_DEFAULT_TIMEOUT_MODE;
	p->rto_min_ns = DROCE_DEFAULT_RTO_MIN_NS;
	p->rto_high_ns = DROCE_DEFAULT_RTO_HIGH_NS;
	p->window_min_bytes = DROCE_DEFAULT_WINDOW_MIN_BYTES;
	p->line_rate_gbps = 100;
}

struct droce_ctx *droce_ctx_create(const struct droce_ctx_params *p)
{
	if (!p || !p->link.ops || !p->link.ops->tx || !p->link.ops->rx_burst ||
	    (p->ip_version != 4 && p->ip_version != 6) || p->max_qps == 0 ||
	    p->max_qps > (DROCE_QPN_MASK - DROCE_QPN_BASE) || p->max_mrs == 0 ||
	    p->max_mrs > (1u << 24) || p->burst == 0 || p->burst > 4096 ||
	    (p->max_mtu && !droce_mtu_bytes((enum droce_mtu)p->max_mtu))) {
		errno = EINVAL;
		return NULL;
	}
	const struct droce_cc_algo *cc = droce_cc_find(p->cc);
	if (!cc) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	int rc = droce_ctx_seed(ctx, p->seed); /* before anything else needs freeing */
	if (rc) {
		free(ctx);
		errno = -rc;
		return NULL;
	}
	ctx->p = *p;
	if (!ctx->p.window_pkts)
		ctx->p.window_pkts = DROCE_DEFAULT_WINDOW_PKTS;
	if (!ctx->p.window_bytes)
		ctx->p.window_bytes = DROCE_DEFAULT_WINDOW_BYTES;
	if (!ctx->p.timeout_mode || ctx->p.timeout_mode > DROCE_TIMEOUT_ADAPTIVE)
		ctx->p.timeout_mode = DROCE_DEFAULT_TIMEOUT_MODE;
	if (!ctx->p.rto_min_ns)
		ctx->p.rto_min_ns = DROCE_DEFAULT_RTO_MIN_NS;
	if (!ctx->p.rto_high_ns)
		ctx->p.rto_high_ns = DROCE_DEFAULT_RTO_HIGH_NS;
	if (!ctx->p.window_min_bytes)
		ctx->p.window_min_bytes = DROCE_DEFAULT_WINDOW_MIN_BYTES;
	if (!(ctx->p.line_rate_gbps > 0))
		ctx->p.line_rate_gbps = 100;
	if (!ctx->p.max_mtu)
		ctx->p.max_mtu = DROCE_MTU_4096;
	ctx->link = p->link;
	ctx->cc = cc;
	/* One slot more than max_qps: the GSI QP's (QPN 1, index max_qps). */
	ctx->qps = calloc(p->max_qps + 1u, sizeof(*ctx->qps));
	ctx->qp_gen = calloc(p->max_qps, sizeof(*ctx->qp_gen));
	ctx->qpn_bits = 1;
	while ((1u << ctx->qpn_bits) < p->max_qps + DROCE_QPN_BASE)
		ctx->qpn_bits++;
	ctx->qpn_low_mask = (1u << ctx->qpn_bits) - 1u;
	ctx->mrs = calloc(p->max_mrs, sizeof(*ctx->mrs));
	ctx->rxf = calloc(p->burst, sizeof(*ctx->rxf));
	ctx->due = malloc(((size_t)p->max_qps + 1u) * sizeof(*ctx->due));
	if (!ctx->qps || !ctx->qp_gen || !ctx->mrs || !ctx->rxf || !ctx->due ||
	    droce_timers_init(&ctx->timers, p->max_qps + 1u) != 0) {
		free(ctx->qps);
		free(ctx->qp_gen);
		free(ctx->mrs);
		free(ctx->rxf);
		free(ctx->due);
		droce_timers_fini(&ctx->timers);
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	/* Keys: the slot in the low bits (one mask per lookup), the rest the
	 * slot's registration count permuted under the context's secret
	 * (core/mr.c): at least 8 bits, 20 with the default 4096 MRs. */
	ctx->mr_bits = 1;
	while ((1u << ctx->mr_bits) < p->max_mrs)
		ctx->mr_bits++;
	ctx->mr_mask = (1u << ctx->mr_bits) - 1;
	ctx->pd0.ctx = ctx;
	ctx->pd0.id = 1;
	ctx->pd_next = 2;
	droce_icrc_seeds_init(&ctx->icrc_seeds);
	return ctx;
}

int droce_ctx_destroy(struct droce_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->svc.destroy) /* it owns QPs of its own: before they go */
		ctx->svc.destroy(ctx->svc.arg);
	for (uint32_t i = 0; i <= ctx->p.max_qps; i++) /* the GSI QP's slot too */
		if (ctx->qps[i])
			droce_destroy_qp(ctx->qps[i]);
	while (ctx->ahs)
		droce_destroy_ah(ctx->ahs);
	for (uint32_t i = 0; i < ctx->p.max_mrs; i++)
		if (ctx->mrs[i].used)
			droce_dereg_mr(&ctx->mrs[i].mr);
	while (ctx->srqs) /* no QP uses it any more; before its PD */
		droce_destroy_srq(ctx->srqs);
	while (ctx->pds) /* nothing is in them any more */
		droce_dealloc_pd(ctx->pds);
	while (ctx->cqs)
		droce_destroy_cq(ctx->cqs); /* no QP uses it any more */
	free(ctx->qps);
	free(ctx->qp_gen);
	free(ctx->mrs);
	free(ctx->rxf);
	free(ctx->due);
	droce_timers_fini(&ctx->timers);
	free(ctx);
	return 0;
}

int droce_ctx_get_stats(const struct droce_ctx *ctx, struct droce_ctx_stats *out)
{
	if (!ctx || !out)
		return -EINVAL;
	*out = ctx->stats;
	return 0;
}

int droce_ctx_get_stage_stats(const struct droce_ctx *ctx, struct droce_stage_stats *out)
{
	if (!ctx || !out)
		return -EINVAL;
#ifdef DROCE_STAGE_TRACE
	*out = ctx->stage.s;
	return 0;
#else
	return -ENOTSUP;
#endif
}

int droce_ctx_reset_stage_stats(struct droce_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
#ifdef DROCE_STAGE_TRACE
	memset(&ctx->stage.s, 0, sizeof(ctx->stage.s));
	return 0;
#else
	return -ENOTSUP;
#endif
}

const char *droce_stage_name(enum droce_stage s)
{
	static const char *const names[DROCE_STAGE_COUNT] = {
		[DROCE_STAGE_CALLER] = "caller",   [DROCE_STAGE_LINK_RX] = "link_rx",
		[DROCE_STAGE_RX_REQ] = "rx_req",   [DROCE_STAGE_RX_RESP] = "rx_resp",
		[DROCE_STAGE_TIMERS] = "timers",   [DROCE_STAGE_BUILD] = "build",
		[DROCE_STAGE_ACK] = "ack",         [DROCE_STAGE_LINK_TX] = "link_tx",
		[DROCE_STAGE_IDLE] = "idle",
	};
	return (unsigned)s < DROCE_STAGE_COUNT ? names[s] : NULL;
}

void droce_qp_kick_list(struct droce_qp *qp)
{
	struct droce_ctx *ctx = qp->ctx;
	if (qp->in_ready)
		return;
	qp->in_ready = true;
	qp->ready_next = NULL;
	qp->ready_prev = ctx->ready_tail;
	if (ctx->ready_tail)
		ctx->ready_tail->ready_next = qp;
	else
		ctx->ready_head = qp;
	ctx->ready_tail = qp;
}

/* What the transport asked for during a call into it: a turn on the link,
 * a timer. */
static inline void after_tp(struct droce_ctx *ctx, struct droce_qp *qp)
{
	if (qp->tp.kick) {
		qp->tp.kick = false;
		droce_qp_kick(qp);
	}
	droce_ctx_timer_fold(ctx, qp);
}

/* The receive path's part of it: the turn now, the timer once the burst's
 * run of frames for this QP is over (ctx_poll folds it: the heap is read
 * only after the burst, by run_timers). */
static inline void after_rx(struct droce_qp *qp)
{
	if (qp->tp.kick) {
		qp->tp.kick = false;
		droce_qp_kick(qp);
	}
}

static struct droce_qp *ready_pop(struct droce_ctx *ctx)
{
	struct droce_qp *qp = ctx->ready_head;
	ctx->ready_head = qp->ready_next;
	if (ctx->ready_head)
		ctx->ready_head->ready_prev = NULL;
	else
		ctx->ready_tail = NULL;
	qp->ready_next = NULL;
	qp->in_ready = false;
	return qp;
}

static bool dst_ip_ok(const struct droce_ctx *ctx, const struct droce_pkt *pkt)
{
	if (pkt->h.net.ip_version != ctx->p.ip_version)
		return false;
	return droce_ip_eq(pkt->h.net.dst_ip, ctx->p.ip, ctx->p.ip_version == 4);
}

/* IBTA 10.9.3: P_Keys match when the low 15 bits agree and at least one
 * side is a full member (bit 15). */
static bool pkey_ok(uint16_t a, uint16_t b)
{
	return (a & 0x7FFFu) == (b & 0x7FFFu) && ((a | b) & 0x8000u);
}

static bool icrc_ok(struct droce_ctx *ctx, const struct droce_rx_frame *f,
		    const struct droce_pkt *pkt, enum droce_l3 kind)
{
	return droce_icrc_rx(&ctx->icrc_seeds, f->data + pkt->l3_off, kind,
			     pkt->l3_len - DROCE_ICRC_LEN) == pkt->icrc;
}

/*
 * One received frame, in rxe's order (rxe_rcv -> hdr_check -> ICRC):
 *  1. parse;
 *  2. the header checks, which have no side effects (the ICRC is not yet
 *     verified, so nothing here may move state): destination IP, the QP,
 *     then per service the QP's type, its P_Key (IBTA 10.9.3) and, for RC,
 *     the source (an RC QP talks to one peer, its address vector, 11.2.5.1
 *     RTR: a packet from any other address is not its peer's, whatever its
 *     PSN; rxe checks the source GID the same way). A datagram (9.8.4) for
 *     a UD or GSI QP goes on to transport/ud.c (state, Q_Key, receive WQE);
 *     any other service to a UD QP, or UD to an RC QP, is dropped. CNPs go
 *     to their QP's congestion control whatever its type, after the same
 *     P_Key and (RC) source checks;
 *  3. the responder's one-pass placement (transport/rx_fused.h) or the
 *     ICRC (A17.4.5: a frame whose ICRC fails is dropped);
 *  4. the transport.
 * A frame the header checks refuse is counted BAD_ICRC when its ICRC is
 * wrong too, as if the ICRC came first: corruption is told apart from a
 * well-formed frame for another QP or peer (the drop path pays for it).
 * @return the QP whose transport took it (its timer still to fold), or NULL.
 */
static struct droce_qp *rx_one(struct droce_ctx *ctx, const struct droce_rx_frame *f, uint64_t now)
{
	struct droce_pkt pkt;
	struct droce_qp *qp = NULL;
	enum droce_drop_reason why;
	enum droce_parse_result r = droce_parse_rx(f->data, f->len, &pkt);
	if (r == DROCE_PARSE_NOT_ROCE) {
		ctx->stats.not_roce++;
		return NULL;
	}
	if (r != DROCE_PARSE_OK) {
		ctx->stats.drop[droce_drop_of_parse(r)]++;
		return NULL;
	}
	DROCE_STAGE_ENTER(&ctx->stage, (pkt.op->flags & DROCE_OPF_RESP) ? DROCE_STAGE_RX_RESP
									  : DROCE_STAGE_RX_REQ);
	enum droce_l3 kind = pkt.h.net.rocev1 ? DROCE_L3_GRH
			     : pkt.h.net.ip_version == 4 ? DROCE_L3_IPV4 : DROCE_L3_IPV6;
	if (!dst_ip_ok(ctx, &pkt)) {
		why = DROCE_DROP_DST_IP;
		goto drop;
	}
	/* The low bits index the table, the rest is the QP's random tag
	 * (core/qp.c qpn_make): a guessed or stale QPN whose index holds
	 * another QP finds none. */
	uint32_t idx = (pkt.h.bth.dqpn & ctx->qpn_low_mask) - DROCE_QPN_BASE;
	qp = idx < ctx->p.max_qps ? ctx->qps[idx] : NULL;
	if (qp && qp->qpn != pkt.h.bth.dqpn)
		qp = NULL;
	if (!qp && pkt.h.bth.dqpn == DROCE_GSI_QPN)
		qp = ctx->gsi; /* MADs to QP1 (the CM's) */
	if (!qp) {
		why = DROCE_DROP_UNKNOWN_QPN;
		goto drop;
	}
	enum droce_service svc = droce_opcode_service(pkt.h.bth.opcode);
	bool cnp = svc == DROCE_SVC_CNP;
	if (!cnp && (qp->type == DROCE_QPT_RC ? svc != DROCE_SVC_RC : svc != DROCE_SVC_UD)) {
		why = qp->type == DROCE_QPT_RC ? DROCE_DROP_NOT_RC : DROCE_DROP_NOT_UD;
		goto drop;
	}
	/* A CNP passes the P_Key and source checks as the QP's other packets
	 * do: it slows the QP down, so a stranger's must not (A17.9.3). */
	if (!pkey_ok(pkt.h.bth.pkey, qp->attr.pkey)) {
		why = DROCE_DROP_BAD_PKEY;
		goto drop;
	}
	int fused = 0;
	if (qp->type == DROCE_QPT_RC) { /* an RC request or response, or a CNP */
		if (qp->state >= DROCE_QPS_RTR &&
		    !droce_ip_eq(pkt.h.net.src_ip, qp->attr.ah_attr.dst_ip, ctx->p.ip_version == 4)) {
			why = DROCE_DROP_SRC_IP;
			goto drop;
		}
		/* its size test here, not behind a call per frame */
		if (!cnp && pkt.h.payload_len >= DROCE_RX_FUSED_MIN)
			fused = droce_tp_rx_fused(qp, &pkt, kind);
	}
	if (fused < 0 || (fused == 0 && !icrc_ok(ctx, f, &pkt, kind)))
		goto bad_icrc;
	droce_tp_rx(qp, &pkt, now);
	after_rx(qp);
	if (cnp)
		ctx->stats.drop[DROCE_DROP_CNP_HANDLED]++;
	return qp;

drop:
	if (!icrc_ok(ctx, f, &pkt, kind))
		goto bad_icrc;
	droce_ctx_drop(ctx, qp, why);
	return NULL;
bad_icrc:
	ctx->stats.drop[droce_drop_of_parse(DROCE_PARSE_BAD_ICRC)]++;
	return NULL;
}

/* The QPs whose deadline is due fire once each, in deadline order (ties by
 * index): they come out of the heap (O(log n) each) before any fires, so a
 * QP that re-arms at or before `now` waits for the next poll instead of
 * spinning here, and no QP that is not due is looked at. */
static void run_timers(struct droce_ctx *ctx, uint64_t now)
{
	if (droce_timers_min(&ctx->timers) > now)
		return;
	uint32_t n = 0, id;
	while ((id = droce_timers_pop_due(&ctx->timers, now)) != DROCE_TIMERS_NONE)
		ctx->due[n++] = id;
	for (uint32_t i = 0; i < n; i++) {
		struct droce_qp *qp = ctx->qps[ctx->due[i]];
		/* The heap follows every deadline the transport set, so it is due;
		 * the check costs nothing and keeps droce_tp_timers' contract. */
		if (droce_tp_deadline(&qp->tp) <= now)
			droce_tp_timers(qp, now);
		after_tp(ctx, qp);
	}
}

unsigned droce_ctx_poll(struct droce_ctx *ctx, uint64_t now)
{
	const struct droce_link_ops *ops = ctx->link.ops;
	if (ops->paused_ns) { /* the ACK timers' pause credit (transport/timer.c) */
		uint64_t p = ops->paused_ns(ctx->link.priv, now);
		if (p != ctx->link_paused_ns)
			ctx->link_paused_at = now;
		ctx->link_paused_ns = p;
	}
	DROCE_STAGE_ENTER(&ctx->stage, DROCE_STAGE_LINK_RX);
	unsigned nrx = ops->rx_burst(ctx->link.priv, ctx->rxf, ctx->p.burst, now);

	/* A QP's deadline is folded once per run of its frames in the burst,
	 * not per frame (a burst is mostly one QP's). */
	struct droce_qp *fold = NULL;
	for (unsigned i = 0; i < nrx; i++) {
		struct droce_qp *qp = rx_one(ctx, &ctx->rxf[i], now);
		if (qp && qp != fold) {
			if (fold)
				droce_ctx_timer_fold(ctx, fold);
			fold = qp;
		}
	}
	if (fold)
		droce_ctx_timer_fold(ctx, fold);
	if (nrx) {
		ctx->stats.rx_frames += nrx;
		DROCE_STAGE_ENTER(&ctx->stage, DROCE_STAGE_LINK_RX);
		if (ops->rx_release)
			ops->rx_release(ctx->link.priv, ctx->rxf, nrx);
	}

	DROCE_STAGE_ENTER(&ctx->stage, DROCE_STAGE_TIMERS);
	run_timers(ctx, now);
	unsigned nsvc = ctx->svc.poll ? ctx->svc.poll(ctx->svc.arg, now) : 0;

	DROCE_STAGE_ENTER(&ctx->stage, DROCE_STAGE_BUILD);
	unsigned budget = 2 * ctx->p.burst, ntx = 0;
	while (ctx->ready_head && ntx < budget) {
		struct droce_qp *qp = ctx->ready_head;
		unsigned quota = budget - ntx < ctx->p.burst ? budget - ntx : ctx->p.burst;
		unsigned sent = 0;
		enum droce_tx_result r = droce_tp_tx(qp, now, quota, &sent);
		ntx += sent;
		/* ACK timer armed, pacing set while sending */
		droce_ctx_timer_fold(ctx, qp);
		if (r == DROCE_TX_BUSY) {
			ctx->stats.tx_busy++;
			/* A QP the link refused before it sent anything keeps its
			 * place at the head; one that filled the link had its turn
			 * and goes to the back. Kept at the head, a bulk sender
			 * would refill every slot the link frees, and the ACKs of
			 * the QPs behind it (their peers' data delivered, 9.7.5.1)
			 * would wait until its window closed: their peers' ACK
			 * timers expire on a fabric that lost nothing. */
			if (sent) {
				ready_pop(ctx);
				qp->tp.kick = false;
				droce_qp_kick(qp);
			}
			break;
		}
		ready_pop(ctx);
		qp->tp.kick = false; /* it had its turn; MORE puts it back */
		if (r == DROCE_TX_MORE) {
			droce_qp_kick(qp);
			if (!sent)
				break; /* no progress possible now: next poll */
		}
	}
	DROCE_STAGE_ENTER(&ctx->stage, DROCE_STAGE_LINK_TX);
	if (ops->tx_flush)
		ops->tx_flush(ctx->link.priv, now);
	DROCE_STAGE_POLL_END(&ctx->stage, nrx + ntx + nsvc);
	return nrx + ntx + nsvc;
}

/* The heap's root: O(1), whatever the number of QPs. */
uint64_t droce_ctx_next_deadline(const struct droce_ctx *ctx)
{
	if (!ctx)
		return UINT64_MAX;
	uint64_t t = droce_timers_min(&ctx->timers);
	if (ctx->svc.next_deadline) {
		uint64_t s = ctx->svc.next_deadline(ctx->svc.arg);
		t = s < t ? s : t;
	}
	return t;
}

int droce_ctx_set_service(struct droce_ctx *ctx, const struct droce_ctx_service *s)
{
	if (!ctx || (s && !s->poll))
		return -EINVAL;
	if (s && ctx->svc.poll)
		return -EEXIST;
	if (s)
		ctx->svc = *s;
	else
		memset(&ctx->svc, 0, sizeof(ctx->svc));
	return 0;
}

void *droce_ctx_service_arg(const struct droce_ctx *ctx, unsigned (*poll)(void *, uint64_t))
{
	return ctx && ctx->svc.poll && ctx->svc.poll == poll ? ctx->svc.arg : NULL;
}
