/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Workloads: each becomes a list of flows (src, dst, bytes, start). A flow
 * is carried by RDMA WRITEs of at most 64 KB (one signaled WR each, the way
 * perftest posts), on a connection (a QP pair) per source/destination; flows
 * sharing a connection go in FIFO order, as one QP sends them. A flow is
 * done when the send completion of its last WR arrives (the ACK of its last
 * byte); FCT is that time minus its start.
 *
 * Ring allreduce (as NCCL runs it): the data is cut into N chunks; in
 * 2(N-1) steps every host writes one chunk (WRITE with immediate, so the
 * receiver gets a completion) to its successor, and starts step k+1 once
 * its step-k write completed and the step-k chunk of its predecessor has
 * arrived (the data it reduces and forwards).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define WR_BYTES (64u * 1024u)
#define MAX_OUT 128u /* WRs posted per connection, as perftest's default tx depth */

static int add_flow(struct sim *s, unsigned *cap, unsigned src, unsigned dst, uint64_t bytes,
		    uint64_t start, bool short_msg, bool imm)
{
	if (s->nflows == *cap) {
		unsigned c = *cap ? *cap * 2 : 64;
		struct flow *f = realloc(s->flows, c * sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->flows = f;
		*cap = c;
	}
	struct flow *f = &s->flows[s->nflows];
	memset(f, 0, sizeof(*f));
	f->id = s->nflows++;
	f->src = src;
	f->dst = dst;
	f->bytes = bytes ? bytes : 1;
	f->start = start;
	f->short_msg = short_msg;
	f->with_imm = imm;
	return 0;
}

/* Sattolo's shuffle: a random cyclic permutation, so nobody sends to itself. */
static void derangement(struct sim *s, unsigned *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(sim_rand(s) % i);
		unsigned t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
}

int workload_build(struct sim *s)
{
	const struct sim_opts *o = &s->o;
	unsigned cap = 0, n = s->nhosts;
	int rc = 0;
	switch (o->wl) {
	case WL_INCAST:
		for (unsigned i = 0; i < o->wl_n && !rc; i++)
			rc = add_flow(s, &cap, i + 1, 0, o->wl_bytes, i * o->wl_stagger, false, false);
		break;
	case WL_PERMUTATION:
	case WL_MIX: {
		unsigned *p = malloc(n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		derangement(s, p, n);
		for (unsigned i = 0; i < n && !rc; i++)
			rc = add_flow(s, &cap, i, p[i], o->wl_bytes, 0, false, false);
		free(p);
		if (o->wl == WL_MIX && !rc) {
			/* Poisson arrivals of short messages, random pairs. */
			double t = 0;
			for (;;) {
				double u = sim_uniform(s);
				t += -log(u > 0 ? u : 1e-12) / o->wl_rate * 1e9;
				if (t >= (double)o->duration)
					break;
				unsigned a = (unsigned)(sim_rand(s) % n);
				unsigned b = (unsigned)(sim_rand(s) % (n - 1));
				if (b >= a)
					b++;
				if ((rc = add_flow(s, &cap, a, b, o->wl_short, (uint64_t)t, true, false)))
					break;
			}
		}
		break;
	}
	case WL_ALLTOALL:
		for (unsigned i = 0; i < n && !rc; i++)
			for (unsigned j = 0; j < n && !rc; j++)
				if (i != j)
					rc = add_flow(s, &cap, i, j, o->wl_bytes, 0, false, false);
		break;
	case WL_ALLREDUCE: {
		uint64_t chunk = (o->wl_bytes + n - 1) / n;
		unsigned steps = 2 * (n - 1);
		for (unsigned i = 0; i < n && !rc; i++)
			for (unsigned k = 0; k < steps && !rc; k++)
				rc = add_flow(s, &cap, i, (i + 1) % n, chunk, 0, false, true);
		break;
	}
	}
	if (rc)
		return rc;
	for (unsigned i = 0; i < s->nflows; i++) {
		struct flow *f = &s->flows[i];
		f->conn = conn_get(s, f->src, f->dst, f->short_msg);
		if (!f->conn)
			return -ENOMEM;
		if (!f->conn->tail_set) {
			/* The PSN of the flow's last packet: PSNs start at 0 and every
			 * WR takes ceil(len / mtu) of them. */
			uint64_t pk = 0;
			for (uint64_t off = 0; off < f->bytes; off += WR_BYTES) {
				uint64_t l = f->bytes - off < WR_BYTES ? f->bytes - off : WR_BYTES;
				pk += (l + o->mtu - 1) / o->mtu;
			}
			f->conn->tail_psn = (uint32_t)((pk - 1) & 0xFFFFFFu);
			f->conn->tail_set = true;
		}
		if (o->wl != WL_ALLREDUCE)
			evq_push(&s->q, f->start, EV_START, f, NULL, 0);
	}
	return 0;
}

static uint64_t qp_retrans(struct droce_qp *qp)
{
	struct droce_qp_stats st;
	droce_qp_get_stats(qp, &st);
	return st.retrans_pkts;
}

void conn_pump(struct sim *s, struct conn *c)
{
	while (c->qhead < c->nq && c->outstanding < MAX_OUT) {
		struct flow *f = c->q[c->qhead];
		if (!c->posted)
			f->retrans0 = qp_retrans(c->sqp);
		uint64_t left = f->bytes - c->posted;
		uint32_t len = left < WR_BYTES ? (uint32_t)left : WR_BYTES;
		bool last = c->posted + len == f->bytes;
		struct droce_sge sge = {.addr = (uintptr_t)c->src->buf, .length = len,
					.lkey = c->src->mr->lkey};
		struct droce_send_wr wr = {
			.wr_id = (uint64_t)f->id << 20 | len,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = f->with_imm && last ? DROCE_WR_RDMA_WRITE_WITH_IMM : DROCE_WR_RDMA_WRITE,
			.send_flags = DROCE_SEND_SIGNALED,
			.imm_data = f->id,
		}, *bad;
		wr.wr.rdma.remote_addr = (uintptr_t)c->dst->buf;
		wr.wr.rdma.rkey = c->dst->mr->rkey;
		if (droce_post_send(c->sqp, &wr, &bad))
			break; /* SQ full: a completion will pump again */
		c->outstanding++;
		c->posted += len;
		if (last) {
			c->qhead++;
			c->posted = 0;
		}
	}
	host_wake(s, c->src, s->now);
}

void workload_start(struct sim *s, struct flow *f)
{
	struct conn *c = f->conn;
	if (c->nq == c->qcap) {
		unsigned cap = c->qcap ? 2 * c->qcap : 4;
		struct flow **q = realloc(c->q, cap * sizeof(*q));
		if (!q)
			return;
		c->q = q;
		c->qcap = cap;
	}
	f->start = s->now;
	c->q[c->nq++] = f;
	conn_pump(s, c);
}

/* Allreduce: start every step host @p h may start now. */
static void ar_advance(struct sim *s, struct host *h)
{
	unsigned steps = 2 * (s->nhosts - 1);
	while (h->ar_step < steps) {
		unsigned k = h->ar_step;
		if (k > 0) {
			const struct flow *prev = &s->flows[h->id * steps + k - 1];
			if (!prev->end || h->ar_recvd_n < k)
				break;
		}
		h->ar_step++;
		workload_start(s, &s->flows[h->id * steps + k]);
	}
}

void workload_kickoff(struct sim *s)
{
	if (s->o.wl != WL_ALLREDUCE)
		return;
	s->ar_start = s->now;
	for (unsigned i = 0; i < s->nhosts; i++)
		ar_advance(s, &s->hosts[i]);
}

static void flow_done(struct sim *s, struct flow *f)
{
	f->end = s->now;
	f->retrans = qp_retrans(f->conn->sqp) - f->retrans0;
	s->flows_done++;
	if (s->o.wl == WL_ALLREDUCE) {
		if (s->flows_done == s->nflows) {
			s->ar_end = s->now;
			s->ar_done = true;
		}
		ar_advance(s, &s->hosts[f->src]);
	}
}

void workload_on_send_wc(struct sim *s, struct host *h, const struct droce_wc *wc)
{
	struct flow *f = &s->flows[wc->wr_id >> 20];
	if (wc->status != DROCE_WC_SUCCESS) {
		if (!s->o.quiet)
			fprintf(stderr, "droce-sim: flow %u (%u->%u): %s at %llu ns\n", f->id, f->src,
				f->dst, droce_wc_status_str(wc->status), (unsigned long long)s->now);
		s->wc_errors++;
		return;
	}
	f->done_bytes += wc->wr_id & 0xFFFFFu;
	f->conn->outstanding--;
	if (f->done_bytes >= f->bytes && !f->end)
		flow_done(s, f);
	conn_pump(s, f->conn);
}

void workload_on_recv_wc(struct sim *s, struct host *h, const struct droce_wc *wc)
{
	if (wc->status != DROCE_WC_SUCCESS)
		return;
	struct droce_recv_wr wr = {.wr_id = 0, .num_sge = 0}, *bad;
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (c->dst == h && droce_qp_num(c->rqp) == wc->qp_num) {
			droce_post_recv(c->rqp, &wr, &bad);
			break;
		}
	}
	if (s->o.wl == WL_ALLREDUCE) {
		h->ar_recvd_n++;
		ar_advance(s, h);
	}
}
