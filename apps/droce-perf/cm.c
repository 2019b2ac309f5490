/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf --cm: the connect step through droce's CM (include/droce/cm.h,
 * IB CM MADs over QP1, as rdma_cm) instead of the side channel's INFO
 * exchange. The client connects every QP to (--cm ADDR, -p PORT); the REQ's
 * private data names the QP's index and its buffer, the REP's the server's
 * buffer for it; the CM carries QPN, PSN, MTU, RDMA depths and retry
 * counts and leaves both QPs in RTS. The TCP side channel still carries
 * the READY/verdict handshake around the run (main.c): only connecting
 * moved.
 */
#include "perf.h"
#include "perf_cm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wire/bytes.h"

/* Private data: "DPRF", version, QP index, buffer address, rkey, length. */
#define PD_MAGIC 0x44505246u
#define PD_VERSION 1u
#define PD_LEN 27u
/* REQs in flight at once: a burst of thousands would overrun the peer's
 * QP1 receive ring and cost a CM retry timeout. */
#define CM_WINDOW 16u

static void pd_encode(uint8_t *b, unsigned idx, const struct perf_qp *q)
{
	droce_put_be32(b, PD_MAGIC);
	b[4] = PD_VERSION;
	droce_put_be16(b + 5, (uint16_t)idx);
	droce_put_be64(b + 7, (uint64_t)(uintptr_t)q->buf);
	droce_put_be32(b + 15, q->rkey);
	droce_put_be64(b + 19, q->buf_len);
}

/* @return the QP index, or -1 when the private data is not ours. */
static int pd_decode(const uint8_t *b, size_t len, unsigned qps, struct droce_sc_mr *mr)
{
	if (len < PD_LEN || droce_get_be32(b) != PD_MAGIC || b[4] != PD_VERSION)
		return -1;
	unsigned idx = droce_get_be16(b + 5);
	if (idx >= qps)
		return -1;
	mr->addr = droce_get_be64(b + 7);
	mr->rkey = droce_get_be32(b + 15);
	mr->len = droce_get_be64(b + 19);
	return (int)idx;
}

static uint8_t mtu_code(unsigned bytes)
{
	uint8_t m = DROCE_MTU_256;
	while (m < DROCE_MTU_4096 && droce_mtu_bytes((enum droce_mtu)m) < bytes)
		m++;
	return m;
}

int perf_cm_open(struct perf *p, struct droce_ctx *ctx, droce_resolve_fn resolve, void *arg)
{
	struct droce_cm_conf c;
	droce_cm_conf_init(&c);
	c.resolve = resolve;
	c.resolve_arg = arg;
	c.resolve_timeout_ns = (uint64_t)(p->o.timeout * 1e9);
	c.max_conns = p->o.qps + 1;
	/* The server expects all -q connections from its one client at once:
	 * the flood limits (half of max_conns per source by default) would
	 * turn the second half away. */
	c.max_half_open = p->o.qps;
	c.max_per_source = p->o.qps;
	c.event_queue = 2 * p->o.qps + 64;
	/* 4.096 us * 2^16 = 268 ms per try: a MAD lost on a local link costs
	 * a fraction of a second, not rdma_cm's 4 s */
	c.response_timeout = 16;
	int r = droce_cm_open(ctx, &c);
	if (!r && p->server) {
		r = droce_listen(ctx, p->o.port);
		r = r < 0 ? r : 0;
	}
	if (r)
		fprintf(stderr, "droce-perf: --cm: %s\n", strerror(-r));
	return r;
}

static int fail_event(const struct droce_conn_event *ev)
{
	fprintf(stderr, "droce-perf: --cm: QP connection %s", droce_conn_event_str(ev->type));
	if (ev->type == DROCE_CONN_REJECTED) {
		fprintf(stderr, " (reason %d", ev->status);
		if (ev->private_data[0] >= ' ')
			fprintf(stderr, ": %.60s", (const char *)ev->private_data);
		fprintf(stderr, ")");
	} else if (ev->status) {
		fprintf(stderr, " (%s)", strerror(-ev->status));
	}
	fprintf(stderr, "\n");
	return ev->type == DROCE_CONN_TIMEOUT ? -ETIMEDOUT : -ECONNREFUSED;
}

static void reject(struct droce_ctx *ctx, const struct droce_conn_event *ev, const char *why,
		   uint64_t now)
{
	fprintf(stderr, "droce-perf: --cm: rejecting a REQ: %s\n", why);
	droce_reject(ctx, ev->conn, why, strlen(why) + 1, now);
}

/* Server: one REQUEST, answered. @return 0, or -errno to give up. */
static int on_request(struct perf *p, struct droce_ctx *ctx, struct droce_qp **qp, bool *taken,
		      const struct droce_conn_event *ev, uint64_t now)
{
	struct droce_sc_mr mr;
	int i = pd_decode(ev->private_data, ev->private_data_len, p->o.qps, &mr);
	if (i < 0 || taken[i]) {
		reject(ctx, ev, i < 0 ? "not droce-perf's REQ, or a QP index out of range"
				      : "QP index connected already", now);
		return 0; /* a stray REQ is not our run's failure */
	}
	if (droce_mtu_bytes((enum droce_mtu)ev->path_mtu) > p->o.mtu) {
		reject(ctx, ev, "path MTU above the server's", now);
		return -EPROTO;
	}
	uint8_t pd[PD_LEN];
	pd_encode(pd, (unsigned)i, &p->qp[i]);
	struct droce_conn_param cp;
	droce_conn_param_init(&cp);
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	int r = droce_accept(ctx, ev->conn, qp[i], &cp, now);
	if (r) {
		fprintf(stderr, "droce-perf: --cm: accept QP %d: %s\n", i, strerror(-r));
		return r;
	}
	taken[i] = true;
	p->qp[i].remote = mr;
	p->mtu = droce_mtu_bytes((enum droce_mtu)ev->path_mtu);
	return 0;
}

/* Client: connect QP @p i. */
static int connect_one(struct perf *p, struct droce_qp *qp, unsigned i,
		       const struct droce_addr *dst, uint64_t now)
{
	uint8_t pd[PD_LEN];
	pd_encode(pd, i, &p->qp[i]);
	struct droce_conn_param cp;
	droce_conn_param_init(&cp);
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	cp.path_mtu = mtu_code(p->o.mtu);
	/* as the side-channel path sets them (backend_droce.c): -u's ACK
	 * timeout (the REQ carries it to both sides), 7 retries, RNR retry
	 * forever */
	cp.ack_timeout = p->o.qp_timeout;
	int r = droce_connect(qp, dst, &cp, now);
	if (r < 0)
		fprintf(stderr, "droce-perf: --cm: connect QP %u: %s\n", i, strerror(-r));
	return r < 0 ? r : 0;
}

static int peer_addr(const struct perf *p, struct droce_addr *dst)
{
	const char *ip = p->o.cm_peer ? p->o.cm_peer : "198.18.0.1";
	memset(dst, 0, sizeof(*dst));
	dst->port = p->o.port;
	if (inet_pton(AF_INET, ip, dst->ip) == 1)
		dst->ip_version = 4;
	else if (inet_pton(AF_INET6, ip, dst->ip) == 1)
		dst->ip_version = 6;
	else {
		fprintf(stderr, "droce-perf: bad --cm address '%s'\n", ip);
		return -EINVAL;
	}
	return 0;
}

int perf_cm_connect(struct perf *p, struct droce_ctx *ctx, struct droce_qp **qp)
{
	struct droce_addr dst;
	int r = !p->server ? peer_addr(p, &dst) : 0;
	if (r)
		return r;
	bool *taken = calloc(p->o.qps, sizeof(*taken));
	if (!taken)
		return -ENOMEM;
	unsigned started = 0, up = 0;
	/* the loss-recovery mode each QP came up in: the CM agrees on it
	 * (docs/cm.md), so a server without --transport follows its client */
	unsigned modes[DROCE_TRANSPORT_SR_SPRAY + 1] = {0};
	uint64_t progress = perf_now(p), limit = (uint64_t)(p->o.timeout * 1e9);
	if (p->server)
		limit *= 6; /* as the side channel: a server waits longer for its client */
	p->mtu = p->o.mtu;
	while (!r && up < p->o.qps) {
		uint64_t now = perf_now(p);
		for (; !p->server && started < p->o.qps && started - up < CM_WINDOW && !r; started++)
			r = connect_one(p, qp[started], started, &dst, now);
		droce_ctx_poll(ctx, now);
		struct droce_conn_event ev;
		while (!r && droce_get_cm_event(ctx, &ev) == 1) {
			progress = now;
			if (ev.type == DROCE_CONN_REQUEST && p->server) {
				r = on_request(p, ctx, qp, taken, &ev, now);
			} else if (ev.type == DROCE_CONN_ESTABLISHED) {
				struct droce_sc_mr mr;
				int i = p->server ? 0 : pd_decode(ev.private_data, ev.private_data_len,
								  p->o.qps, &mr);
				if (i < 0) {
					fprintf(stderr, "droce-perf: --cm: the REP's private data is not ours\n");
					r = -EPROTO;
				} else if (!p->server) {
					p->qp[i].remote = mr;
				}
				if (ev.transport <= DROCE_TRANSPORT_SR_SPRAY)
					modes[ev.transport]++;
				up++;
			} else {
				r = fail_event(&ev);
			}
		}
		if (!r && now - progress > limit) {
			fprintf(stderr, "droce-perf: --cm: %u of %u QPs connected after %.0f s\n", up,
				p->o.qps, p->o.timeout);
			r = -ETIMEDOUT;
		}
	}
	/* a REJ or REQ just queued leaves with the next polls: let it, so the
	 * peer hears why instead of timing out (bounded: 100 ms) */
	struct droce_cm_counters k;
	uint64_t end = perf_now(p) + 100000000u;
	while (r && !droce_cm_get_counters(ctx, &k) && k.mads_pending && perf_now(p) < end)
		droce_ctx_poll(ctx, perf_now(p));
	for (unsigned i = 0; !r && i < p->o.qps; i++) {
		struct droce_qp_attr a;
		droce_query_qp(qp[i], &a, 0);
		p->qp[i].peer_qpn = a.dest_qp_num;
	}
	free(taken);
	if (!r) {
		printf(" Connected through the CM (QP1): %u QP(s), port %u, transport", p->o.qps,
		       p->o.port);
		for (int m = DROCE_TRANSPORT_GBN; m <= DROCE_TRANSPORT_SR_SPRAY; m++)
			if (modes[m])
				printf(" %s x%u", droce_transport_name(m), modes[m]);
		printf("\n");
	}
	return r;
}
