/* SPDX-License-Identifier: BSD-3-Clause */
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include <droce/ctx.h>
#include <droce/params.h>
#include <droce/verbs.h>

#include "net/diag/impair.h"
#include "net/link/impair_link.h"

#include "compare.h"
#include "frames.h"
#include "pmap.h"

/* Virtual time starts at 1 s so that "0" is never a meaningful deadline. */
#define T_BASE UINT64_C(1000000000)
/* Polls with no progress before the clock is declared stuck. */
#define STUCK_LIMIT 1000000u

/* ---------------------------------------------------------- the link -- */

struct feed {
	uint64_t t_ns;               /* capture-relative */
	bool after_own;              /* the capture shows the side sending before this frame */
	uint8_t *data;
	uint32_t len;
	unsigned num;
};

struct rlink {
	struct feed *feed;
	size_t nfeed;
	size_t ready;                /* feed[0..ready) have arrived */
	size_t next_rx;              /* next to hand to droce */
	struct droce_rp_sent *sent;
	size_t nsent, capsent;
	int nomem;
	uint64_t *own_t;             /* capture times of the side's own frames, ascending */
	size_t nown;
	/* "pace requests": droce's k-th request to a QP goes out no earlier
	 * than the side's k-th did (link busy until then) */
	struct pace {
		uint32_t dqpn;
		uint8_t ip[16];
		uint64_t *t;         /* capture times, in order */
		size_t n, sent;
		struct hmap first;   /* by PSN: PSN + 1 -> the capture time of its first copy */
		struct hmap out;     /* by PSN: PSN + 1 -> droce has sent it */
	} pace[DROCE_RP_MAX_QPS];
	unsigned npace;
	bool pace_by_psn;            /* "compare by-psn": pace new PSNs, not packets */
	uint64_t pace_wait;          /* virtual time a refused frame may go (UINT64_MAX: none) */
};

/* The pacing stream of a frame droce sends, or NULL (not a request, or no such stream). */
static struct pace *pace_of(struct rlink *l, const uint8_t *b, uint32_t len)
{
	struct droce_pkt p;
	if (!l->npace || droce_parse(b, len, &p, DROCE_PARSE_F_NO_ICRC) != DROCE_PARSE_OK || !p.op ||
	    !(p.op->flags & DROCE_OPF_REQ))
		return NULL;
	size_t alen = p.h.net.ip_version == 4 ? 4 : 16;
	for (unsigned i = 0; i < l->npace; i++)
		if (l->pace[i].dqpn == p.h.bth.dqpn && !memcmp(l->pace[i].ip, p.h.net.dst_ip, alen))
			return &l->pace[i];
	return NULL;
}

static int link_tx(void *lp, const struct droce_tx_frame *f, uint64_t now)
{
	struct rlink *l = lp;
	if (l->nsent == l->capsent) {
		size_t nc = l->capsent ? l->capsent * 2 : 64;
		struct droce_rp_sent *ns = realloc(l->sent, nc * sizeof(*ns));
		if (!ns) {
			l->nomem = 1;
			return 0; /* dropped: reported at the end */
		}
		l->sent = ns;
		l->capsent = nc;
	}
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	uint8_t *b = malloc(len ? len : 1);
	if (!b) {
		l->nomem = 1;
		return 0;
	}
	uint32_t o = 0;
	memcpy(b, f->hdr, f->hdr_len);
	o += f->hdr_len;
	for (unsigned i = 0; i < f->nseg && i < DROCE_TX_MAX_SEG; i++) {
		if (!f->seg[i].len)
			continue;
		memcpy(b + o, f->seg[i].addr, f->seg[i].len);
		o += f->seg[i].len;
	}
	memcpy(b + o, f->trailer, f->trailer_len);
	o += f->trailer_len;
	struct pace *pc = pace_of(l, b, o);
	if (pc && l->pace_by_psn) {
		/* By PSN: a new PSN no earlier than the side's first copy of it;
		 * resends whenever droce's timers and NAKs say (how often a
		 * requester resends is not what a lossy capture is compared on) */
		struct droce_pkt p;
		droce_parse(b, o, &p, DROCE_PARSE_F_NO_ICRC);
		uint64_t k = (uint64_t)p.h.bth.psn + 1;
		size_t *t = hget(&pc->first, k);
		if (!hget(&pc->out, k) && t && now < T_BASE + *t) {
			free(b);
			if (T_BASE + *t < l->pace_wait)
				l->pace_wait = T_BASE + *t;
			return -ENOBUFS;
		}
		if (hput(&pc->out, k, 1))
			l->nomem = 1;
		pc = NULL;
	}
	if (pc && pc->sent < pc->n && now < T_BASE + pc->t[pc->sent]) {
		/* the side had not sent that many by now: try again then */
		free(b);
		if (T_BASE + pc->t[pc->sent] < l->pace_wait)
			l->pace_wait = T_BASE + pc->t[pc->sent];
		return -ENOBUFS;
	}
	if (pc)
		pc->sent++;
	l->sent[l->nsent++] = (struct droce_rp_sent){
		.t_ns = now >= T_BASE ? now - T_BASE : 0, .data = b, .len = o };
	return 0;
}

static unsigned link_rx(void *lp, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct rlink *l = lp;
	unsigned k = 0;
	while (k < n && l->next_rx < l->ready) {
		struct feed *fd = &l->feed[l->next_rx++];
		f[k].data = fd->data;
		f[k].len = fd->len;
		f[k].handle = fd;
		k++;
	}
	return k;
}

static const struct droce_link_ops rlink_ops = {
	.tx = link_tx,
	.tx_flush = NULL,
	.rx_burst = link_rx,
	.rx_release = NULL,
};

/* ------------------------------------------------------------ runner -- */

struct runner {
	const struct droce_rp_scenario *s;
	FILE *out;
	struct droce_ctx *ctx;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp[DROCE_RP_MAX_QPS];
	struct droce_mr *mr[DROCE_RP_MAX_MRS];
	void *mem[DROCE_RP_MAX_MRS];
	uint8_t *maddr[DROCE_RP_MAX_MRS];
	struct droce_rp_map map;
	struct rlink link;
	struct droce_impair *imp;            /* "impair SPEC": the side's receive shim */
	struct droce_impair_link *imp_link;
	uint64_t now;
	struct droce_wc *wcs;
	size_t nwcs, capwcs;
	unsigned failures;
	int cq_overflow;
};

static unsigned to_access(unsigned a)
{
	unsigned r = 0;
	if (a & DROCE_RP_ACC_LW)
		r |= DROCE_ACCESS_LOCAL_WRITE;
	if (a & DROCE_RP_ACC_RW)
		r |= DROCE_ACCESS_REMOTE_WRITE;
	if (a & DROCE_RP_ACC_RR)
		r |= DROCE_ACCESS_REMOTE_READ;
	if (a & DROCE_RP_ACC_RA)
		r |= DROCE_ACCESS_REMOTE_ATOMIC;
	return r;
}

static enum droce_mtu to_mtu(unsigned bytes)
{
	switch (bytes) {
	case 256: return DROCE_MTU_256;
	case 512: return DROCE_MTU_512;
	case 1024: return DROCE_MTU_1024;
	case 2048: return DROCE_MTU_2048;
	default: return DROCE_MTU_4096;
	}
}

static void drain_cqs(struct runner *r)
{
	struct droce_cq *cqs[2] = { r->scq, r->rcq };
	for (int i = 0; i < 2; i++) {
		for (;;) {
			struct droce_wc wc[16];
			int n = droce_poll_cq(cqs[i], 16, wc);
			if (n == -EOVERFLOW) {
				r->cq_overflow = 1;
				break;
			}
			if (n <= 0)
				break;
			for (int k = 0; k < n; k++) {
				if (r->nwcs == r->capwcs) {
					size_t nc = r->capwcs ? r->capwcs * 2 : 64;
					struct droce_wc *nw = realloc(r->wcs, nc * sizeof(*nw));
					if (!nw)
						return;
					r->wcs = nw;
					r->capwcs = nc;
				}
				r->wcs[r->nwcs++] = wc[k];
			}
		}
	}
}

/* Poll at r->now until droce has nothing more to do right now. */
static int poll_now(struct runner *r)
{
	for (unsigned k = 0; k < STUCK_LIMIT; k++) {
		r->link.pace_wait = UINT64_MAX;
		if (!droce_ctx_poll(r->ctx, r->now))
			return 0;
		drain_cqs(r);
	}
	fprintf(r->out, "droce keeps working at t=%" PRIu64 "ns without settling\n", r->now - T_BASE);
	return -1;
}

/* The capture shows the side sending something in [@p a, @p b) (capture-relative ns). */
static bool side_sent_between(const struct rlink *l, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = l->nown;
	while (lo < hi) { /* first own frame at or after a */
		size_t mid = lo + (hi - lo) / 2;
		if (l->own_t[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nown && l->own_t[lo] < b;
}

/*
 * Advance the virtual clock to @p t, firing every timer due before it.
 * With @p event (a frame arrives or a request is posted at @p t), a timer
 * due so shortly before it (within 1/32 of how long it ran since the last
 * event), while the capture shows the side sending nothing from that
 * deadline to the event, is left to the poll at @p t, which takes the
 * frames in first: the side got them before its timer fired, or its
 * resend would be in the capture before them (droce's timer starts from
 * droce's sends, which the replay makes as soon as it may, so it runs a
 * little ahead of the side's).
 */
static int advance(struct runner *r, uint64_t t, bool event)
{
	unsigned stuck = 0;
	for (;;) {
		uint64_t dl = droce_ctx_next_deadline(r->ctx);
		if (r->link.pace_wait < dl)
			dl = r->link.pace_wait; /* a paced frame may go then */
		if (dl > t)
			break;
		if (event && dl > r->now && t - dl <= (dl - r->now) / 32 &&
		    !side_sent_between(&r->link, dl - T_BASE, t - T_BASE)) {
			r->now = t;
			return 0; /* the caller delivers and polls at t */
		}
		if (dl > r->now) {
			r->now = dl;
			stuck = 0;
		} else if (++stuck > STUCK_LIMIT) {
			fprintf(r->out, "droce's next deadline stays at t=%" PRIu64 "ns: clock stuck\n",
				dl - T_BASE);
			return -1;
		} else if (stuck > 16) {
			r->now++; /* a deadline that polling does not clear: creep forward */
		}
		if (poll_now(r))
			return -1;
	}
	if (t > r->now)
		r->now = t;
	return poll_now(r);
}

static int setup(struct runner *r)
{
	const struct droce_rp_scenario *s = r->s;
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = s->ip_version;
	memcpy(p.ip, s->ip, 16);
	memcpy(p.mac, s->mac, 6);
	p.link.ops = &rlink_ops;
	p.link.priv = &r->link;
	r->link.pace_wait = UINT64_MAX;
	if (s->impair[0]) {
		/* The side received through droce's seeded shim behind the
		 * capture point (droce-perf --impair): the capture shows the
		 * frames before it. The same shim, seed and frame order give
		 * the same drops, duplicates and corruptions (reorder holds
		 * depend on how frames were batched, which the capture's
		 * timestamps keep: one timestamp, one burst). */
		struct droce_impair_spec spec;
		char err[160];
		if (droce_impair_parse(s->impair, &spec, err, sizeof(err))) {
			fprintf(r->out, "%s: impair %s: %s\n", s->path, s->impair, err);
			return -1;
		}
		r->imp = droce_impair_create(&spec);
		r->imp_link = r->imp ? droce_impair_link_create(p.link, r->imp) : NULL;
		if (!r->imp_link) {
			fprintf(r->out, "%s: impair: %s\n", s->path, strerror(errno));
			return -1;
		}
		p.link = droce_impair_link_get(r->imp_link);
	}
	p.seed = 1; /* fixed: the same scenario replays the same way */
	if (p.max_qps < s->nqps + 2)
		p.max_qps = s->nqps + 2;
	if (p.max_mrs < s->nmrs + 2)
		p.max_mrs = s->nmrs + 2;
	r->ctx = droce_ctx_create(&p);
	if (!r->ctx) {
		fprintf(r->out, "%s: droce_ctx_create: %s\n", s->path, strerror(errno));
		return -1;
	}
	for (unsigned i = 0; i < s->nmrs; i++) {
		const struct droce_rp_mr_spec *m = &s->mrs[i];
		/* Same offset within a page as in the capture, so alignment
		 * (atomics need 8 bytes) is what the peer saw. */
		size_t off = (size_t)(m->addr & 4095u);
		if (posix_memalign(&r->mem[i], 4096, m->len + off + 64)) {
			fprintf(r->out, "%s:%u: out of memory\n", s->path, m->line);
			return -1;
		}
		memset(r->mem[i], 0, m->len + off + 64);
		r->maddr[i] = (uint8_t *)r->mem[i] + off;
		memcpy(r->maddr[i], m->init, m->len);
		r->mr[i] = droce_reg_mr(r->ctx, r->maddr[i], m->len, to_access(m->access));
		if (!r->mr[i]) {
			fprintf(r->out, "%s:%u: droce_reg_mr(%s): %s\n", s->path, m->line, m->name,
				strerror(errno));
			return -1;
		}
		r->map.rkey[i] = r->mr[i]->rkey;
		r->map.addr[i] = (uint64_t)(uintptr_t)r->maddr[i];
	}
	unsigned depth = 256 + 2 * s->nwrs;
	r->scq = droce_create_cq(r->ctx, depth);
	r->rcq = droce_create_cq(r->ctx, depth);
	if (!r->scq || !r->rcq) {
		fprintf(r->out, "%s: droce_create_cq: %s\n", s->path, strerror(errno));
		return -1;
	}
	for (unsigned i = 0; i < s->nqps; i++) {
		const struct droce_rp_qp_spec *q = &s->qps[i];
		unsigned nsend = 0, nrecv = 0;
		for (unsigned k = 0; k < s->nwrs; k++)
			if (s->wrs[k].qp == (int)i) {
				nsend += !s->wrs[k].is_recv;
				nrecv += s->wrs[k].is_recv;
			}
		struct droce_qp_init_attr ia = { .send_cq = r->scq, .recv_cq = r->rcq };
		ia.cap.max_send_wr = nsend > DROCE_DEFAULT_MAX_SEND_WR ? nsend : 0;
		ia.cap.max_recv_wr = nrecv > DROCE_DEFAULT_MAX_RECV_WR ? nrecv : 0;
		r->qp[i] = droce_create_qp(r->ctx, &ia);
		if (!r->qp[i]) {
			fprintf(r->out, "%s:%u: droce_create_qp(%s): %s\n", s->path, q->line, q->name,
				strerror(errno));
			return -1;
		}
		r->map.qpn[i] = droce_qp_num(r->qp[i]);
		struct droce_qp_attr a;
		memset(&a, 0, sizeof(a));
		a.qp_state = DROCE_QPS_INIT;
		a.qp_access_flags = to_access(q->access);
		a.pkey = DROCE_DEFAULT_PKEY;
		int rc = droce_modify_qp(r->qp[i], &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
		const char *step = "INIT";
		if (!rc) {
			a.qp_state = DROCE_QPS_RTR;
			a.path_mtu = to_mtu(q->mtu);
			a.dest_qp_num = q->peer_qpn;
			a.rq_psn = q->rq_psn;
			a.max_dest_rd_atomic = q->max_dest_rd_atomic;
			a.min_rnr_timer = q->min_rnr_timer;
			a.ah_attr.ip_version = s->ip_version;
			memcpy(a.ah_attr.dst_ip, q->peer_ip, 16);
			memcpy(a.ah_attr.dst_mac, q->peer_mac, 6);
			a.ah_attr.dscp = DROCE_DEFAULT_DSCP;
			a.ah_attr.ttl = DROCE_DEFAULT_TTL;
			step = "RTR";
			rc = droce_modify_qp(r->qp[i], &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					     DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					     DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
		}
		if (!rc) {
			a.qp_state = DROCE_QPS_RTS;
			a.sq_psn = q->sq_psn;
			a.timeout = q->timeout;
			a.retry_cnt = q->retry;
			a.rnr_retry = q->rnr_retry;
			a.max_rd_atomic = q->max_rd_atomic;
			step = "RTS";
			rc = droce_modify_qp(r->qp[i], &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					     DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					     DROCE_QP_MAX_QP_RD_ATOMIC);
		}
		if (rc) {
			fprintf(r->out, "%s:%u: droce_modify_qp(%s) to %s: %s\n", s->path, q->line, q->name,
				step, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static int post(struct runner *r, const struct droce_rp_wr_spec *w)
{
	const struct droce_rp_scenario *s = r->s;
	struct droce_sge sge = { 0 };
	int nsge = 0;
	if (w->mr >= 0) {
		sge.addr = (uint64_t)(uintptr_t)(r->maddr[w->mr] + w->off);
		sge.length = w->len;
		sge.lkey = r->mr[w->mr]->lkey;
		nsge = 1;
	}
	int rc;
	if (w->is_recv) {
		struct droce_recv_wr rw = { .wr_id = w->wr_id, .sg_list = nsge ? &sge : NULL, .num_sge = nsge };
		struct droce_recv_wr *bad = NULL;
		rc = droce_post_recv(r->qp[w->qp], &rw, &bad);
	} else {
		static const enum droce_wr_opcode ops[] = {
			[DROCE_RP_OP_SEND] = DROCE_WR_SEND,
			[DROCE_RP_OP_SEND_IMM] = DROCE_WR_SEND_WITH_IMM,
			[DROCE_RP_OP_WRITE] = DROCE_WR_RDMA_WRITE,
			[DROCE_RP_OP_WRITE_IMM] = DROCE_WR_RDMA_WRITE_WITH_IMM,
			[DROCE_RP_OP_READ] = DROCE_WR_RDMA_READ,
			[DROCE_RP_OP_CAS] = DROCE_WR_ATOMIC_CMP_AND_SWP,
			[DROCE_RP_OP_FAA] = DROCE_WR_ATOMIC_FETCH_AND_ADD,
		};
		struct droce_send_wr sw;
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = w->wr_id;
		sw.sg_list = nsge ? &sge : NULL;
		sw.num_sge = nsge;
		sw.opcode = ops[w->op];
		/* imm= is the value as read off the wire (big-endian), as tshark
		 * shows it; verbs carries imm_data in network order. */
		sw.imm_data = htonl(w->imm);
		if (!(w->flags & DROCE_RP_WR_UNSIGNALED))
			sw.send_flags |= DROCE_SEND_SIGNALED;
		if (w->flags & DROCE_RP_WR_FENCE)
			sw.send_flags |= DROCE_SEND_FENCE;
		if (w->flags & DROCE_RP_WR_SOLICITED)
			sw.send_flags |= DROCE_SEND_SOLICITED;
		if (w->flags & DROCE_RP_WR_INLINE)
			sw.send_flags |= DROCE_SEND_INLINE;
		if (w->op == DROCE_RP_OP_CAS || w->op == DROCE_RP_OP_FAA) {
			sw.wr.atomic.remote_addr = w->raddr;
			sw.wr.atomic.rkey = w->rkey;
			sw.wr.atomic.compare_add = w->op == DROCE_RP_OP_CAS ? w->compare : w->swap_add;
			sw.wr.atomic.swap = w->op == DROCE_RP_OP_CAS ? w->swap_add : 0;
		} else {
			sw.wr.rdma.remote_addr = w->raddr;
			sw.wr.rdma.rkey = w->rkey;
		}
		struct droce_send_wr *bad = NULL;
		rc = droce_post_send(r->qp[w->qp], &sw, &bad);
	}
	if (rc) {
		fprintf(r->out, "  FAIL     %s:%u: droce_post_%s refused wr %" PRIu64 ": %s\n", s->path,
			w->line, w->is_recv ? "recv" : "send", w->wr_id, strerror(-rc));
		r->failures++;
	}
	return 0;
}

/* One more request of the side's, at capture time @p t, to the stream of its destination QP. */
static int pace_add(struct rlink *l, const struct droce_pkt *p, uint64_t t, size_t most)
{
	size_t alen = p->h.net.ip_version == 4 ? 4 : 16;
	unsigned i;
	for (i = 0; i < l->npace; i++)
		if (l->pace[i].dqpn == p->h.bth.dqpn && !memcmp(l->pace[i].ip, p->h.net.dst_ip, alen))
			break;
	if (i == l->npace) {
		if (i == DROCE_RP_MAX_QPS)
			return 0; /* beyond the scenario's QPs: not paced */
		l->pace[i].dqpn = p->h.bth.dqpn;
		memcpy(l->pace[i].ip, p->h.net.dst_ip, 16);
		l->pace[i].t = malloc((most + 1) * sizeof(uint64_t));
		if (!l->pace[i].t)
			return -1;
		l->npace++;
	}
	l->pace[i].t[l->pace[i].n++] = t;
	uint64_t k = (uint64_t)p->h.bth.psn + 1;
	if (l->pace_by_psn && !hget(&l->pace[i].first, k) && hput(&l->pace[i].first, k, (size_t)t))
		return -1;
	return 0;
}

static int load_feed(struct runner *r, const struct droce_rp_capture *cap)
{
	const struct droce_rp_scenario *s = r->s;
	struct rlink *l = &r->link;
	l->feed = calloc(cap->n + 1, sizeof(*l->feed));
	if (!l->feed)
		return -1;
	bool own_since = false;
	l->own_t = calloc(cap->n + 1, sizeof(*l->own_t));
	if (!l->own_t)
		return -1;
	l->pace_by_psn = s->by_psn;
	for (size_t i = 0; i < cap->n; i++) {
		struct droce_pkt p;
		enum droce_parse_result pr;
		enum droce_rp_role role = droce_rp_classify(&cap->f[i], s->ip_version, s->ip, &p, &pr);
		if (role == DROCE_RP_OWN && s->pace_requests && p.op && (p.op->flags & DROCE_OPF_REQ) &&
		    !(p.op->flags & DROCE_OPF_CNP) && pace_add(l, &p, cap->f[i].t_ns, cap->n))
			return -1;
		if (role == DROCE_RP_OWN) {
			own_since = true;
			uint64_t t = cap->f[i].t_ns;
			size_t k = l->nown++;
			while (k > 0 && l->own_t[k - 1] > t) { /* captures are nearly in time order */
				l->own_t[k] = l->own_t[k - 1];
				k--;
			}
			l->own_t[k] = t;
		}
		if (role != DROCE_RP_PEER)
			continue;
		struct feed *fd = &l->feed[l->nfeed];
		fd->after_own = own_since;
		own_since = false;
		fd->data = malloc(cap->f[i].len);
		if (!fd->data)
			return -1;
		memcpy(fd->data, cap->f[i].data, cap->f[i].len);
		fd->len = cap->f[i].len;
		fd->t_ns = cap->f[i].t_ns;
		fd->num = cap->f[i].num;
		droce_rp_rewrite(fd->data, fd->len, s, &r->map);
		l->nfeed++;
	}
	/* "deliver N at=TIME": later than captured (a capture far from the
	 * side). The peer's frames reach the side in the order they were
	 * captured (one path, first in first out), so the ones after N come
	 * no earlier either. */
	for (unsigned i = 0; i < s->ndelivers; i++) {
		size_t k;
		for (k = 0; k < l->nfeed && l->feed[k].num != s->delivers[i].frame; k++)
			;
		if (k == l->nfeed) {
			fprintf(r->out, "%s:%u: deliver: frame %u is no frame of the peer's\n", s->path,
				s->delivers[i].line, s->delivers[i].frame);
			return -1;
		}
		l->feed[k].t_ns = s->delivers[i].at_ns;
	}
	for (size_t i = 1; s->ndelivers && i < l->nfeed; i++)
		if (l->feed[i].t_ns < l->feed[i - 1].t_ns)
			l->feed[i].t_ns = l->feed[i - 1].t_ns;
	return 0;
}

/* Events in time order: frames arrive, work requests are posted (file order at equal times). */
static int replay(struct runner *r)
{
	const struct droce_rp_scenario *s = r->s;
	struct rlink *l = &r->link;
	unsigned *order = calloc(s->nwrs + 1, sizeof(*order));
	if (!order)
		return -1;
	for (unsigned i = 0; i < s->nwrs; i++)
		order[i] = i;
	/* stable insertion sort by time: scenarios are small */
	for (unsigned i = 1; i < s->nwrs; i++) {
		unsigned v = order[i], j = i;
		while (j > 0 && s->wrs[order[j - 1]].at_ns > s->wrs[v].at_ns) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
	r->now = T_BASE;
	unsigned iw = 0;
	uint64_t last = 0;
	int rc = 0;
	while (!rc && (iw < s->nwrs || l->ready < l->nfeed)) {
		uint64_t tw = iw < s->nwrs ? s->wrs[order[iw]].at_ns : UINT64_MAX;
		uint64_t tf = l->ready < l->nfeed ? l->feed[l->ready].t_ns : UINT64_MAX;
		uint64_t t = tw <= tf ? tw : tf;
		last = t;
		if ((rc = advance(r, T_BASE + t, true)))
			break;
		/* Posts first at equal times, and droce acts on them before the
		 * frames of that instant arrive: a receive posted "at" a frame's
		 * time is there when the frame arrives, and a request posted at
		 * the time its packet was captured goes out before an answer
		 * captured in the same instant (capture order). */
		bool posted = false;
		while (iw < s->nwrs && s->wrs[order[iw]].at_ns == t) {
			post(r, &s->wrs[order[iw++]]);
			posted = true;
		}
		if (posted && (rc = poll_now(r)))
			break;
		/* Frames of one instant arrive together, except where the
		 * capture shows the side answering between them: then droce
		 * gets to answer too before the next ones arrive (timestamps
		 * are often coarser than the exchange). */
		while (!rc && l->ready < l->nfeed && l->feed[l->ready].t_ns == t) {
			l->ready++;
			while (l->ready < l->nfeed && l->feed[l->ready].t_ns == t &&
			       !l->feed[l->ready].after_own)
				l->ready++;
			rc = poll_now(r);
		}
	}
	if (!rc)
		rc = advance(r, T_BASE + last + s->drain_ns, false);
	drain_cqs(r);
	free(order);
	return rc;
}

static unsigned check_memory(struct runner *r)
{
	const struct droce_rp_scenario *s = r->s;
	unsigned bad = 0;
	for (unsigned i = 0; i < s->nmems; i++) {
		const struct droce_rp_mem_expect *m = &s->mems[i];
		const uint8_t *have = r->maddr[m->mr] + m->off;
		size_t k;
		for (k = 0; k < m->len && have[k] == m->bytes[k]; k++)
			;
		if (k == m->len) {
			fprintf(r->out, "  ok       %s:%u: memory %s+%" PRIu64 " (%zu bytes)\n", s->path, m->line,
				s->mrs[m->mr].name, m->off, m->len);
			continue;
		}
		bad++;
		fprintf(r->out, "  DIFF     %s:%u: memory %s+%" PRIu64 ": byte %zu expected %#04x, got %#04x\n",
			s->path, m->line, s->mrs[m->mr].name, m->off, k, m->bytes[k], have[k]);
	}
	return bad;
}

static void fmt_wc(char *b, size_t n, const struct droce_wc *w)
{
	const char *st = droce_rp_status_name((int)w->status);
	const char *op = droce_rp_wc_opcode_name((int)w->opcode);
	snprintf(b, n, "wr=%" PRIu64 " status=%s opcode=%s len=%u", w->wr_id, st ? st : "?",
		 op ? op : "?", w->byte_len);
	if (w->wc_flags & DROCE_WC_WITH_IMM)
		snprintf(b + strlen(b), n - strlen(b), " imm=%#x", ntohl(w->imm_data));
}

static unsigned check_wcs(struct runner *r)
{
	const struct droce_rp_scenario *s = r->s;
	unsigned bad = 0;
	if (r->cq_overflow) {
		fprintf(r->out, "  FAIL     a completion queue overflowed\n");
		bad++;
	}
	if (!s->check_wcs)
		return bad;
	bool *used = calloc(r->nwcs + 1, sizeof(*used));
	if (!used)
		return bad + 1;
	for (unsigned qi = 0; qi < s->nqps; qi++) {
		for (int recv = 0; recv < 2; recv++) {
			size_t g = 0;
			for (unsigned i = 0; i < s->nwcs; i++) {
				const struct droce_rp_wc_expect *e = &s->wcs[i];
				if (e->qp != (int)qi || e->recv != (bool)recv)
					continue;
				/* next completion of this QP and queue */
				while (g < r->nwcs && (r->wcs[g].qp_num != r->map.qpn[qi] ||
						       (r->wcs[g].opcode >= DROCE_WC_RECV) != (bool)recv))
					g++;
				if (g == r->nwcs) {
					fprintf(r->out, "  MISSING  %s:%u: completion wr=%" PRIu64 " status=%s\n",
						s->path, e->line, e->wr_id, droce_rp_status_name(e->status));
					bad++;
					continue;
				}
				const struct droce_wc *w = &r->wcs[g];
				used[g++] = true;
				char gb[160];
				fmt_wc(gb, sizeof(gb), w);
				bool ok = w->wr_id == e->wr_id && (int)w->status == e->status &&
					  (e->opcode < 0 || (int)w->opcode == e->opcode) &&
					  (!e->has_len || w->byte_len == e->len) &&
					  (!e->has_imm || ((w->wc_flags & DROCE_WC_WITH_IMM) && ntohl(w->imm_data) == e->imm));
				if (ok) {
					fprintf(r->out, "  ok       %s:%u: completion %s\n", s->path, e->line, gb);
				} else {
					bad++;
					fprintf(r->out, "  DIFF     %s:%u: completion expected wr=%" PRIu64
						" status=%s", s->path, e->line, e->wr_id,
						droce_rp_status_name(e->status));
					if (e->opcode >= 0)
						fprintf(r->out, " opcode=%s", droce_rp_wc_opcode_name(e->opcode));
					if (e->has_len)
						fprintf(r->out, " len=%u", e->len);
					if (e->has_imm)
						fprintf(r->out, " imm=%#x", e->imm);
					fprintf(r->out, "\n                got %s\n", gb);
				}
			}
		}
	}
	for (size_t g = 0; g < r->nwcs; g++) {
		if (used[g])
			continue;
		char gb[160];
		fmt_wc(gb, sizeof(gb), &r->wcs[g]);
		fprintf(r->out, "  EXTRA    completion on QPN %#x: %s\n", r->wcs[g].qp_num, gb);
		bad++;
	}
	free(used);
	return bad;
}

static void print_drops(struct runner *r)
{
	struct droce_ctx_stats st;
	if (droce_ctx_get_stats(r->ctx, &st))
		return;
	fprintf(r->out, "droce: %" PRIu64 " frames in, %" PRIu64 " out", st.rx_frames, st.tx_frames);
	for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++) {
		const char *n = droce_drop_reason_name(i);
		if (!n)
			break;
		if (st.drop[i])
			fprintf(r->out, ", dropped %" PRIu64 " %s", st.drop[i], n);
	}
	fputc('\n', r->out);
}

/* The conversation as replayed, merged by virtual time (peer frames first at a tie). */
static int write_conversation(const struct runner *r, const char *path)
{
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
	pcap_dumper_t *d = dead ? pcap_dump_open(dead, path) : NULL;
	if (!d) {
		fprintf(r->out, "cannot write %s: %s\n", path, dead ? pcap_geterr(dead) : "libpcap");
		if (dead)
			pcap_close(dead);
		return -1;
	}
	const struct rlink *l = &r->link;
	size_t i = 0, j = 0;
	while (i < l->ready || j < l->nsent) {
		bool peer = j == l->nsent || (i < l->ready && l->feed[i].t_ns <= l->sent[j].t_ns);
		uint64_t t = peer ? l->feed[i].t_ns : l->sent[j].t_ns;
		const uint8_t *data = peer ? l->feed[i].data : l->sent[j].data;
		uint32_t len = peer ? l->feed[i].len : l->sent[j].len;
		struct pcap_pkthdr h = { .caplen = len, .len = len };
		h.ts.tv_sec = (time_t)(t / 1000000000u);
		h.ts.tv_usec = (suseconds_t)(t % 1000000000u); /* nanoseconds: the file says so */
		pcap_dump((u_char *)d, &h, data);
		if (peer)
			i++;
		else
			j++;
	}
	pcap_dump_close(d);
	pcap_close(dead);
	fprintf(r->out, "wrote the replayed conversation to %s\n", path);
	return 0;
}

int droce_rp_run(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap, FILE *out)
{
	return droce_rp_run_write(s, cap, out, NULL);
}

int droce_rp_run_write(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
		       FILE *out, const char *pcap_out)
{
	struct runner *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(out, "out of memory\n");
		return DROCE_RP_BAD_INPUT;
	}
	r->s = s;
	r->out = out;
	int ret = DROCE_RP_BAD_INPUT;
	if (setup(r) || load_feed(r, cap))
		goto out;
	fprintf(out, "replaying %s: %zu frames to droce, %u work requests\n", s->path, r->link.nfeed,
		s->nwrs);
	int rc = replay(r);
	unsigned bad = r->failures + (rc ? 1u : 0u);
	bad += droce_rp_compare(s, cap, r->link.sent, r->link.nsent, out);
	bad += check_memory(r);
	bad += check_wcs(r);
	if (r->link.nomem) {
		fprintf(out, "  FAIL     out of memory recording droce's frames\n");
		bad++;
	}
	print_drops(r);
	if (r->imp) {
		struct droce_impair_stats ist;
		droce_impair_get_stats(r->imp, &ist);
		fprintf(out, "impair %s: %" PRIu64 " frames, %" PRIu64 " dropped, %" PRIu64
			" duplicated, %" PRIu64 " held, %" PRIu64 " corrupted\n", s->impair, ist.frames,
			ist.dropped, ist.duplicated, ist.held, ist.corrupted);
	}
	if (pcap_out && write_conversation(r, pcap_out))
		bad++;
	fprintf(out, "%s: %s (%u difference%s)\n", s->path, bad ? "MISMATCH" : "MATCH", bad,
		bad == 1 ? "" : "s");
	ret = bad ? DROCE_RP_MISMATCH : DROCE_RP_MATCH;
out:
	for (unsigned i = 0; i < DROCE_RP_MAX_QPS; i++)
		if (r->qp[i])
			droce_destroy_qp(r->qp[i]);
	if (r->scq)
		droce_destroy_cq(r->scq);
	if (r->rcq)
		droce_destroy_cq(r->rcq);
	for (unsigned i = 0; i < DROCE_RP_MAX_MRS; i++)
		if (r->mr[i])
			droce_dereg_mr(r->mr[i]);
	if (r->ctx)
		droce_ctx_destroy(r->ctx);
	droce_impair_link_destroy(r->imp_link);
	droce_impair_destroy(r->imp);
	for (unsigned i = 0; i < DROCE_RP_MAX_MRS; i++)
		free(r->mem[i]);
	for (size_t i = 0; i < r->link.nfeed; i++)
		free(r->link.feed[i].data);
	free(r->link.feed);
	free(r->link.own_t);
	for (unsigned i = 0; i < r->link.npace; i++) {
		free(r->link.pace[i].t);
		hfree(&r->link.pace[i].first);
		hfree(&r->link.pace[i].out);
	}
	for (size_t i = 0; i < r->link.nsent; i++)
		free(r->link.sent[i].data);
	free(r->link.sent);
	free(r->wcs);
	free(r);
	return ret;
}

int droce_rp_impair_mask(const char *spec, const struct droce_rp_capture *cap, int ipv,
			 const uint8_t ip[16], bool *gone, char *err, size_t errlen)
{
	struct droce_impair_spec sp;
	if (droce_impair_parse(spec, &sp, err, errlen))
		return -EINVAL;
	struct droce_impair *imp = droce_impair_create(&sp);
	uint8_t *buf = malloc(65536);
	if (!imp || !buf) {
		droce_impair_destroy(imp);
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap->n; i++) {
		struct droce_pkt p;
		enum droce_parse_result pr;
		gone[i] = false;
		if (droce_rp_classify(&cap->f[i], ipv, ip, &p, &pr) != DROCE_RP_PEER)
			continue;
		/* the shim corrupts in place: decide on a copy */
		uint32_t len = cap->f[i].len < 65536 ? cap->f[i].len : 65536;
		memcpy(buf, cap->f[i].data, len);
		struct droce_impair_verdict v = droce_impair_decide(imp, buf, len, &gone[i]);
		gone[i] = v.action == DROCE_IMPAIR_DROP;
		void *held[DROCE_IMPAIR_MAX_HELD];
		droce_impair_flush(imp, held, DROCE_IMPAIR_MAX_HELD); /* delivered late, not lost */
	}
	droce_impair_destroy(imp);
	free(buf);
	return 0;
}
