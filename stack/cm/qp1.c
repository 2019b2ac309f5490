/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM's datagram path over the context's GSI QP (QPN 1, Q_Key
 * 0x80010000, IBTA 13.5.1): every MAD a UD SEND to QP1 of the peer
 * (Annex A11/A16: on RoCEv2 the GSI's MADs are ordinary UD datagrams with
 * DETH). Built on the public UD API like any application (verbs.h:
 * DROCE_QPT_GSI, address handles, wr.ud, the GRH area in receive buffers).
 *
 * Receive: a ring of buffers of 40 (GRH area) + 256 bytes, each reposted
 * once its MAD is copied out; the sender's IP comes from the GRH area
 * (IPv4: the IPv4 header in bytes 20..39, source at 32; IPv6: the IPv6
 * header, source at 8). The transport already dropped datagrams with
 * another Q_Key (counted there), so what arrives carries QP1's.
 * Send: a slot per MAD in flight, each with its own address handle
 * (destroyed when the send completes: an AH must outlive its WRs). The
 * MAC comes from the service's resolver; while it is unknown the send says
 * -EINPROGRESS and the service parks the MAD with its destination's others
 * (svc.c: bounded by resolve_timeout_ns). A REJ to a REQ that made no
 * connection carries the REQ frame's Ethernet source (the WC's smac) and
 * goes there unresolved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <droce/droce.h>

#include "cm/svc.h"

#define QP1_RECV 64u
#define QP1_SEND 32u
#define GRH_LEN 40u
#define RECV_LEN (GRH_LEN + DROCE_MAD_LEN)

struct qp1 {
	struct droce_ctx *ctx;
	struct droce_cq *scq, *rcq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *mem;                 /* QP1_RECV receive buffers, then QP1_SEND send buffers */
	struct droce_ah *ah[QP1_SEND];
	bool busy[QP1_SEND];
	droce_resolve_fn resolve;
	void *resolve_arg;
};

static uint8_t *recv_buf(struct qp1 *q, unsigned i)
{
	return q->mem + (size_t)i * RECV_LEN;
}

static uint8_t *send_buf(struct qp1 *q, unsigned i)
{
	return q->mem + (size_t)QP1_RECV * RECV_LEN + (size_t)i * DROCE_MAD_LEN;
}

static int post_recv(struct qp1 *q, unsigned i)
{
	struct droce_sge sge = {(uintptr_t)recv_buf(q, i), RECV_LEN, q->mr->lkey};
	struct droce_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
	return droce_post_recv(q->qp, &wr, &bad);
}

static void reap_sends(struct qp1 *q)
{
	struct droce_wc wc[8];
	int n;
	while ((n = droce_poll_cq(q->scq, 8, wc)) > 0)
		for (int k = 0; k < n; k++) {
			unsigned i = (unsigned)wc[k].wr_id;
			if (i < QP1_SEND && q->busy[i]) {
				droce_destroy_ah(q->ah[i]);
				q->ah[i] = NULL;
				q->busy[i] = false;
			}
		}
}

static int qp1_send(void *priv, const struct droce_cm_out *out, uint64_t now)
{
	struct qp1 *q = priv;
	reap_sends(q);
	unsigned i = 0;
	while (i < QP1_SEND && q->busy[i])
		i++;
	if (i == QP1_SEND)
		return -EAGAIN;
	struct droce_ah_attr aa = {.ip_version = out->dst.ip_version,
				   .dscp = DROCE_DEFAULT_DSCP, .ttl = DROCE_DEFAULT_TTL};
	memcpy(aa.dst_ip, out->dst.ip, 16);
	int r = 0;
	if (out->has_dst_hw)
		memcpy(aa.dst_mac, out->dst_hw, 6);
	else
		r = q->resolve(q->resolve_arg, out->dst.ip_version, out->dst.ip, aa.dst_mac, now);
	if (r == -EAGAIN)
		return -EINPROGRESS; /* this destination waits; the service goes on */
	if (r)
		return r;
	q->ah[i] = droce_create_ah(q->ctx, &aa);
	if (!q->ah[i])
		return -errno;
	memcpy(send_buf(q, i), out->mad, DROCE_MAD_LEN);
	struct droce_sge sge = {(uintptr_t)send_buf(q, i), DROCE_MAD_LEN, q->mr->lkey};
	struct droce_send_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1,
				   .opcode = DROCE_WR_SEND, .send_flags = DROCE_SEND_SIGNALED}, *bad;
	wr.wr.ud.ah = q->ah[i];
	wr.wr.ud.remote_qpn = out->dqpn;
	wr.wr.ud.remote_qkey = out->qkey;
	r = droce_post_send(q->qp, &wr, &bad);
	if (r) {
		droce_destroy_ah(q->ah[i]);
		q->ah[i] = NULL;
		return r;
	}
	q->busy[i] = true;
	return 0;
}

/* The GRH area as the UD transport writes it (verbs.h DROCE_WC_GRH). An
 * IPv6 header starts with version 6; IPv4 leaves 20 zero bytes before its
 * header. Testing byte 20 first read an IPv6 sender whose source address
 * has a byte 0x4? at offset 12 (byte 20 of the header) as IPv4. */
int droce_qp1_grh_src(const uint8_t grh[40], struct droce_cm_addr *src)
{
	memset(src, 0, sizeof(*src));
	if ((grh[0] >> 4) == 6) {
		src->ip_version = 6;
		memcpy(src->ip, grh + 8, 16);
		return 0;
	}
	static const uint8_t zero[20];
	if (memcmp(grh, zero, 20) == 0 && (grh[20] >> 4) == 4) {
		src->ip_version = 4;
		memcpy(src->ip, grh + 32, 4);
		return 0;
	}
	return -EPROTO;
}

static int qp1_recv(void *priv, struct droce_mad_in *in, uint64_t now)
{
	struct qp1 *q = priv;
	struct droce_wc wc;
	while (droce_poll_cq(q->rcq, 1, &wc) == 1) {
		unsigned i = (unsigned)wc.wr_id;
		if (i >= QP1_RECV)
			continue;
		const uint8_t *b = recv_buf(q, i);
		bool ok = wc.status == DROCE_WC_SUCCESS && (wc.wc_flags & DROCE_WC_GRH) &&
			  wc.byte_len >= GRH_LEN;
		struct droce_cm_addr src;
		ok = ok && droce_qp1_grh_src(b, &src) == 0;
		if (ok) {
			memset(in, 0, sizeof(*in));
			in->src = src;
			if (wc.wc_flags & DROCE_WC_WITH_SMAC) {
				in->has_src_hw = true;
				memcpy(in->src_hw, wc.smac, 6);
			}
			in->qkey = DROCE_GSI_QKEY; /* the transport checked it */
			in->len = wc.byte_len - GRH_LEN;
			if (in->len > DROCE_MAD_LEN)
				in->len = DROCE_MAD_LEN;
			memcpy(in->mad, b + GRH_LEN, in->len);
		}
		if (wc.status != DROCE_WC_WR_FLUSH_ERR)
			post_recv(q, i);
		if (ok)
			return 1;
	}
	return 0;
}

static void qp1_close(void *priv)
{
	struct qp1 *q = priv;
	if (!q)
		return;
	if (q->qp)
		droce_destroy_qp(q->qp);
	for (unsigned i = 0; i < QP1_SEND; i++)
		if (q->ah[i])
			droce_destroy_ah(q->ah[i]);
	if (q->mr)
		droce_dereg_mr(q->mr);
	if (q->scq)
		droce_destroy_cq(q->scq);
	if (q->rcq)
		droce_destroy_cq(q->rcq);
	free(q->mem);
	free(q);
}

static const struct droce_mad_path_ops qp1_ops = {qp1_send, qp1_recv, qp1_close};

/* GSI QP to RTS, every receive posted. */
static int qp1_start(struct qp1 *q)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.pkey = DROCE_DEFAULT_PKEY;
	int r = droce_modify_qp(q->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY);
	a.qp_state = DROCE_QPS_RTR;
	r = r ? r : droce_modify_qp(q->qp, &a, DROCE_QP_STATE);
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0;
	r = r ? r : droce_modify_qp(q->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN);
	for (unsigned i = 0; !r && i < QP1_RECV; i++)
		r = post_recv(q, i);
	return r;
}

int droce_cm_open(struct droce_ctx *ctx, const struct droce_cm_conf *c)
{
	if (!ctx || !c || !c->resolve)
		return -EINVAL;
	if (droce_cm_svc_of(ctx))
		return -EEXIST;
	struct qp1 *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ctx = ctx;
	q->resolve = c->resolve;
	q->resolve_arg = c->resolve_arg;
	size_t len = (size_t)QP1_RECV * RECV_LEN + (size_t)QP1_SEND * DROCE_MAD_LEN;
	q->mem = calloc(1, len);
	q->scq = droce_create_cq(ctx, QP1_SEND);
	q->rcq = droce_create_cq(ctx, QP1_RECV);
	q->mr = q->mem ? droce_reg_mr(ctx, q->mem, len, DROCE_ACCESS_LOCAL_WRITE) : NULL;
	struct droce_qp_init_attr ia = {
		.send_cq = q->scq, .recv_cq = q->rcq, .qp_type = DROCE_QPT_GSI,
		.cap = {.max_send_wr = QP1_SEND, .max_recv_wr = QP1_RECV,
			.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 0}};
	q->qp = q->mr && q->scq && q->rcq ? droce_create_qp(ctx, &ia) : NULL;
	int r;
	if (!q->qp)
		r = errno == EBUSY ? -EEXIST : -ENOMEM; /* EBUSY: the GSI QP is someone's */
	else
		r = qp1_start(q);
	if (r) {
		qp1_close(q);
		return r;
	}
	struct droce_mad_path path = {&qp1_ops, q};
	return droce_cm_open_path(ctx, c, path);
}
