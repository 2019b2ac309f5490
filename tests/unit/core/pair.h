/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper: two contexts back to back through a tiny static in-memory
 * link (one FIFO per direction, frames copied contiguous), a virtual clock,
 * and a connected RC QP on each side. A drop hook lets a test lose frames.
 */
#ifndef DROCE_TEST_PAIR_H
#define DROCE_TEST_PAIR_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "wire/parse.h"

#define TL_DEPTH 256
#define TL_FRAME 4400

struct tl_dir {
	uint8_t buf[TL_DEPTH][TL_FRAME];
	uint32_t len[TL_DEPTH];
	unsigned head, count;
};

struct tl_pair;
/* Return true to drop the frame. */
typedef bool (*tl_drop_fn)(struct tl_pair *p, int dir, const uint8_t *f, uint32_t len);

struct tl_end {
	struct tl_pair *pair;
	int side;
};

struct tl_pair {
	struct tl_dir dir[2];   /* dir[0]: side 0 -> side 1 */
	struct tl_end end[2];
	tl_drop_fn drop;
	bool ecn_mark;          /* set ECN CE on every IPv4 frame side 0 sends */
	void *arg;
	uint64_t sent[2];
	uint64_t dropped;
};

static int tl_tx(void *link, const struct droce_tx_frame *f, uint64_t now)
{
	struct tl_end *e = link;
	struct tl_pair *p = e->pair;
	struct tl_dir *d = &p->dir[e->side];
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	if (d->count == TL_DEPTH)
		return -ENOBUFS;
	if (len > TL_FRAME)
		return -EMSGSIZE;
	uint8_t *b = d->buf[(d->head + d->count) % TL_DEPTH];
	uint32_t o = 0;
	memcpy(b, f->hdr, f->hdr_len);
	o += f->hdr_len;
	for (unsigned i = 0; i < f->nseg; i++) {
		memcpy(b + o, f->seg[i].addr, f->seg[i].len);
		o += f->seg[i].len;
	}
	memcpy(b + o, f->trailer, f->trailer_len);
	p->sent[e->side]++;
	if (p->ecn_mark && e->side == 0 && b[12] == 0x08 && b[13] == 0x00)
		b[15] |= 3; /* IPv4 TOS: ECN CE (the ICRC masks it, A17.4.5) */
	if (p->drop && p->drop(p, e->side, b, len)) {
		p->dropped++;
		return 0;
	}
	d->len[(d->head + d->count) % TL_DEPTH] = len;
	d->count++;
	return 0;
}

static unsigned tl_rx(void *link, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct tl_end *e = link;
	struct tl_dir *d = &e->pair->dir[1 - e->side];
	unsigned k = 0;
	while (k < n && k < d->count) {
		unsigned s = (d->head + k) % TL_DEPTH;
		f[k].data = d->buf[s];
		f[k].len = d->len[s];
		f[k].handle = NULL;
		k++;
	}
	return k;
}

static void tl_release(void *link, struct droce_rx_frame *f, unsigned n)
{
	struct tl_end *e = link;
	struct tl_dir *d = &e->pair->dir[1 - e->side];
	d->head = (d->head + n) % TL_DEPTH;
	d->count -= n;
}

static const struct droce_link_ops tl_ops = {
	.tx = tl_tx,
	.rx_burst = tl_rx,
	.rx_release = tl_release,
};

/* Both sides: context, CQs, one QP, clock. */
struct side {
	struct droce_ctx *ctx;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
};

struct bed {
	struct tl_pair *link;
	struct side s[2];
	uint64_t now;
	enum droce_mtu mtu;
};

static const char *bed_cc; /* congestion control for the next bed_new() */
static int bed_ipv = 4;    /* IP version for the next bed_new() */

static inline struct droce_ctx *bed_ctx(struct tl_pair *l, int side)
{
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = (uint8_t)bed_ipv;
	p.ip[0] = bed_ipv == 4 ? 10 : 0xFD;
	p.ip[bed_ipv == 4 ? 3 : 15] = (uint8_t)(1 + side);
	p.mac[0] = 2;
	p.mac[5] = (uint8_t)(1 + side);
	p.seed = 1234 + (uint64_t)side;
	p.cc = bed_cc;
	l->end[side].pair = l;
	l->end[side].side = side;
	p.link.ops = &tl_ops;
	p.link.priv = &l->end[side];
	return droce_ctx_create(&p);
}

static inline int bed_connect_qp(struct bed *b, int i, unsigned access, uint32_t rq_psn,
				 uint32_t sq_psn, uint8_t timeout, uint8_t retry, uint8_t rnr_retry)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = access;
	a.pkey = 0xFFFF;
	int rc = droce_modify_qp(b->s[i].qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
	if (rc)
		return rc;
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = b->mtu;
	a.dest_qp_num = droce_qp_num(b->s[1 - i].qp);
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.ip_version = (uint8_t)bed_ipv;
	a.ah_attr.dst_ip[0] = bed_ipv == 4 ? 10 : 0xFD;
	a.ah_attr.dst_ip[bed_ipv == 4 ? 3 : 15] = (uint8_t)(2 - i);
	a.ah_attr.dst_mac[0] = 2;
	a.ah_attr.dst_mac[5] = (uint8_t)(2 - i);
	a.ah_attr.dscp = 26;
	a.ah_attr.ttl = 64;
	rc = droce_modify_qp(b->s[i].qp, &a,
			     DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN |
				     DROCE_QP_RQ_PSN | DROCE_QP_MAX_DEST_RD_ATOMIC |
				     DROCE_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 16;
	return droce_modify_qp(b->s[i].qp, &a,
			       DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
				       DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC);
}

static inline struct bed *bed_new_ex(enum droce_mtu mtu, uint32_t psn0, uint32_t psn1,
				     uint8_t timeout, uint8_t retry, uint8_t rnr_retry)
{
	struct bed *b = calloc(1, sizeof(*b));
	b->link = calloc(1, sizeof(*b->link));
	b->mtu = mtu;
	b->now = 1000;
	for (int i = 0; i < 2; i++) {
		struct side *s = &b->s[i];
		s->ctx = bed_ctx(b->link, i);
		s->scq = droce_create_cq(s->ctx, 4096);
		s->rcq = droce_create_cq(s->ctx, 4096);
		struct droce_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = s->scq;
		ia.recv_cq = s->rcq;
		ia.cap.max_send_wr = 512;
		ia.cap.max_recv_wr = 512;
		s->qp = droce_create_qp(s->ctx, &ia);
	}
	unsigned acc = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
		       DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;
	/* side 0 sends from psn0 (side 1 expects psn0), and vice versa. */
	if (bed_connect_qp(b, 0, acc, psn1, psn0, timeout, retry, rnr_retry) ||
	    bed_connect_qp(b, 1, acc, psn0, psn1, timeout, retry, rnr_retry)) {
		return NULL;
	}
	return b;
}

static inline struct bed *bed_new(enum droce_mtu mtu, uint32_t psn0, uint32_t psn1)
{
	return bed_new_ex(mtu, psn0, psn1, 10, 7, 7);
}

static inline void bed_free(struct bed *b)
{
	for (int i = 0; i < 2; i++) {
		droce_destroy_qp(b->s[i].qp);
		droce_destroy_cq(b->s[i].scq);
		droce_destroy_cq(b->s[i].rcq);
		droce_ctx_destroy(b->s[i].ctx);
	}
	free(b->link);
	free(b);
}

/* Poll both sides until idle; when idle, jump the clock to the next
 * deadline. Stops after max_rounds or when the clock passes until. */
static inline void bed_run(struct bed *b, unsigned max_rounds, uint64_t until)
{
	for (unsigned r = 0; r < max_rounds; r++) {
		unsigned w = droce_ctx_poll(b->s[0].ctx, b->now) + droce_ctx_poll(b->s[1].ctx, b->now);
		if (w) {
			b->now += 100;
			continue;
		}
		uint64_t d0 = droce_ctx_next_deadline(b->s[0].ctx);
		uint64_t d1 = droce_ctx_next_deadline(b->s[1].ctx);
		uint64_t d = d0 < d1 ? d0 : d1;
		if (d == UINT64_MAX || d > until)
			return;
		b->now = d > b->now ? d : b->now + 1;
	}
}

#endif
