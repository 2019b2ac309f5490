/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf over droce: EAL, a DPDK port (memif, af_packet or any PMD), the
 * droce context and its QPs. The context is polled from the one thread that
 * runs the test, also while the side channel waits.
 */
#include "perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include "net/diag/capture.h"
#include "net/port/eal.h"
#include "net/diag/impair.h"
#include "net/link/impair_link.h"
#include "net/port/port.h"
#include "telemetry/telemetry.h"
#include "perf_cm.h"

struct droce_be {
	struct droce_port *port;
	struct droce_capture *cap;
	struct droce_impair_link *imp;
	struct droce_impair *impair;
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp **qp;  /* o.qps of each */
	struct droce_mr **mr;
	struct droce_telemetry *tel; /* the droce commands on DPDK's telemetry socket */
	struct droce_poller *poller; /* the loop's busy/idle split and --idle policy */
};

static struct droce_be *be(const struct perf *p)
{
	return p->bk;
}

/* Our droce address: --ip, else 198.18.0.1 (server) / .2 (client), the
 * RFC 2544 benchmarking range, which no real network routes. */
static int our_address(const struct perf *p, struct droce_ctx_params *cp)
{
	const char *ip = p->o.ip ? p->o.ip : (p->server ? "198.18.0.1" : "198.18.0.2");
	if (inet_pton(AF_INET, ip, cp->ip) == 1) {
		cp->ip_version = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, ip, cp->ip) == 1) {
		cp->ip_version = 6;
		return 0;
	}
	fprintf(stderr, "droce-perf: bad --ip '%s'\n", ip);
	return -EINVAL;
}

static int open_port(struct perf *p, struct droce_be *b, struct droce_ctx_params *cp,
		     uint32_t *roce_mtu)
{
	uint16_t port_id = (uint16_t)rte_eth_find_next(0);
	if (port_id >= RTE_MAX_ETHPORTS) {
		fprintf(stderr, "droce-perf: no DPDK port (give --memif, --iface or an EAL --vdev/-a)\n");
		return -ENODEV;
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	pc.port_id = port_id;
	pc.ip_version = cp->ip_version;
	memcpy(pc.ip, cp->ip, sizeof(pc.ip));
	pc.start_wait_ns = (uint64_t)(p->o.port_wait * 1e9);
	pc.start_needs_link = p->o.memif && !strncmp(p->o.memif, "client", 6);
	b->port = droce_port_open(&pc);
	if (!b->port) {
		fprintf(stderr, "droce-perf: port %u: %s\n", port_id, strerror(errno));
		return -errno;
	}
	struct droce_port_info info;
	droce_port_get_info(b->port, &info);
	memcpy(cp->mac, info.mac, 6);
	*roce_mtu = info.roce_mtu;
	printf(" Port: %s (port %u), zero-copy TX %s, pools %u/%u/%u mbufs, %.1f MB\n", info.driver,
	       port_id, info.zero_copy ? "on" : "off", info.rx_pool_n, info.tx_pool_n,
	       info.ext_pool_n, (double)info.footprint_bytes / 1e6);
	cp->link = droce_port_link(b->port);
	/* memif and af_packet come up asynchronously: frames sent before the
	 * link is up are lost and would cost a retransmission timeout. A memif
	 * server's link comes up only when its client connects, after the
	 * server says it waits (what a test or a rank waits for before it
	 * starts the client), and the server sends nothing before its client
	 * has: it does not wait here. */
	bool memif_server = p->o.memif && !strncmp(p->o.memif, "server", 6);
	uint64_t give_up = rte_get_tsc_cycles() + (uint64_t)(p->o.timeout * (double)rte_get_tsc_hz());
	struct rte_eth_link link = {0};
	while (!memif_server && rte_eth_link_get_nowait(port_id, &link) == 0 && !link.link_status &&
	       rte_get_tsc_cycles() < give_up)
		rte_delay_us_sleep(1000);
	if (!memif_server && !link.link_status)
		fprintf(stderr, "droce-perf: port %u link still down; going on\n", port_id);
	if (p->o.capture) {
		struct droce_capture_conf cc = {.path = p->o.capture};
		b->cap = droce_capture_open(&cc);
		if (!b->cap) {
			fprintf(stderr, "droce-perf: --capture %s: %s\n", p->o.capture, strerror(errno));
			return -errno;
		}
		droce_port_set_capture(b->port, b->cap);
	}
	if (p->o.impair) {
		struct droce_impair_spec spec;
		char err[128];
		if (droce_impair_parse(p->o.impair, &spec, err, sizeof(err))) {
			fprintf(stderr, "droce-perf: --impair: %s\n", err);
			return -EINVAL;
		}
		b->impair = droce_impair_create(&spec);
		b->imp = b->impair ? droce_impair_link_create(cp->link, b->impair) : NULL;
		if (!b->imp) {
			fprintf(stderr, "droce-perf: --impair: %s\n", strerror(errno));
			return -ENOMEM;
		}
		cp->link = droce_impair_link_get(b->imp);
	}
	return 0;
}

static int d_open(struct perf *p, int eal_argc, char **eal_argv, const char *prog,
		  unsigned cq_depth, struct perf_local *me)
{
	struct droce_be *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	p->bk = b;
	b->qp = calloc(p->o.qps, sizeof(*b->qp));
	b->mr = calloc(p->o.qps, sizeof(*b->mr));
	if (!b->qp || !b->mr)
		return -ENOMEM;
	struct droce_eal_opts eo = {.memif = p->o.memif, .iface = p->o.iface};
	int r = droce_eal_init(prog, eal_argc, eal_argv, &eo);
	if (r) {
		fprintf(stderr, "droce-perf: EAL start failed: %s\n", strerror(-r));
		return r;
	}
	p->tsc_hz = rte_get_tsc_hz();

	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	if ((r = our_address(p, &cp)) || (r = open_port(p, b, &cp, &me->mtu)))
		return r;
	/* No seed: keys from getrandom(2), not from a guessable clock. */
	cp.max_mtu = (uint8_t)droce_mtu_of_bytes(me->mtu);
	if (cp.max_qps < p->o.qps)
		cp.max_qps = p->o.qps;
	if (cp.max_mrs < p->o.qps + 64)
		cp.max_mrs = p->o.qps + 64;
	cp.cc = p->o.cc;
	if (p->o.timeout_mode)
		cp.timeout_mode = p->o.timeout_mode;
	cp.window_tune = p->o.window_tune;
	if (p->o.window) {
		cp.window_pkts = p->o.window;
		cp.window_bytes = (uint64_t)p->o.window * p->o.mtu;
	}
	b->ctx = droce_ctx_create(&cp);
	if (!b->ctx) {
		fprintf(stderr, "droce-perf: context: %s%s\n", strerror(errno),
			p->o.cc ? " (is --cc a known algorithm?)" : "");
		return -errno;
	}
	struct droce_poller_conf plc;
	droce_poller_conf_init(&plc);
	plc.idle = p->o.idle;
	b->poller = droce_poller_create(&plc);
	if (!b->poller) {
		fprintf(stderr, "droce-perf: poller: %s\n", strerror(errno));
		return -errno;
	}
	/* Readable with dpdk-telemetry.py while the test runs (NULL: without). */
	b->tel = droce_telemetry_open(b->ctx, b->port, "droce0");
	droce_telemetry_set_poller(b->tel, b->poller);
	b->cq = droce_create_cq(b->ctx, cq_depth);
	if (!b->cq) {
		fprintf(stderr, "droce-perf: create CQ: %s\n", strerror(errno));
		return -errno;
	}
	me->ip_version = cp.ip_version;
	memcpy(me->ip, cp.ip, 16);
	memcpy(me->mac, cp.mac, 6);
	return 0;
}

static const unsigned access_all = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
				   DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;

static int d_create_qp(struct perf *p, unsigned i)
{
	struct droce_be *b = be(p);
	struct perf_qp *q = &p->qp[i];
	b->mr[i] = droce_reg_mr(b->ctx, q->buf, q->buf_len, access_all);
	struct droce_qp_init_attr ia = {
		.send_cq = b->cq,
		.recv_cq = b->cq,
		.cap = {.max_send_wr = p->o.tx_depth, .max_recv_wr = p->slots + 16,
			.max_send_sge = 1, .max_recv_sge = 1},
	};
	b->qp[i] = b->mr[i] ? droce_create_qp(b->ctx, &ia) : NULL;
	if (!b->qp[i]) {
		fprintf(stderr, "droce-perf: QP %u: %s\n", i, strerror(errno));
		return -errno ? -errno : -ENOMEM;
	}
	int r = droce_qp_set_transport(b->qp[i], p->o.transport);
	if (r) {
		fprintf(stderr, "droce-perf: QP %u transport: %s\n", i, strerror(-r));
		return r;
	}
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .qp_access_flags = access_all,
				  .pkey = DROCE_DEFAULT_PKEY};
	r = droce_modify_qp(b->qp[i], &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
	if (r) {
		fprintf(stderr, "droce-perf: QP %u to INIT: %s\n", i, strerror(-r));
		return r;
	}
	q->qpn = droce_qp_num(b->qp[i]);
	q->lkey = b->mr[i]->lkey;
	q->rkey = b->mr[i]->rkey;
	return 0;
}

static enum droce_mtu mtu_enum(unsigned bytes)
{
	enum droce_mtu m = DROCE_MTU_256;
	while (m < DROCE_MTU_4096 && droce_mtu_bytes(m) < bytes)
		m++;
	return m;
}

static int d_connect_qp(struct perf *p, unsigned i, const struct droce_sc_info *peer,
			uint32_t psn, uint32_t mtu)
{
	struct droce_be *b = be(p);
	/* The peer's MAC goes into this QP's address vector only, never into
	 * the port's ARP table: the side channel is unauthenticated, and a
	 * static entry there would let whoever answered it first claim any IP
	 * for every later connection of the process (docs/security.md). */
	struct droce_qp_attr a = {0};
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = mtu_enum(mtu);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
	a.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
	a.ah_attr.ip_version = peer->ip_version;
	memcpy(a.ah_attr.dst_ip, peer->ip, 16);
	memcpy(a.ah_attr.dst_mac, peer->mac, 6);
	a.ah_attr.dscp = DROCE_DEFAULT_DSCP;
	a.ah_attr.ttl = DROCE_DEFAULT_TTL;
	int r = droce_modify_qp(b->qp[i], &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
	if (!r) {
		struct droce_qp_attr s = {0};
		s.qp_state = DROCE_QPS_RTS;
		s.sq_psn = psn;
		/* -u, default 14: 4.096 us * 2^14 = 67 ms: short, so loss
		 * recovers fast on a local link and a dead peer is noticed. */
		s.timeout = p->o.qp_timeout;
		s.retry_cnt = 7;
		s.rnr_retry = 7;
		s.max_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
		r = droce_modify_qp(b->qp[i], &s, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
				    DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
				    DROCE_QP_MAX_QP_RD_ATOMIC);
	}
	if (r)
		fprintf(stderr, "droce-perf: QP %u to RTR/RTS: %s\n", i, strerror(-r));
	return r;
}

/* --cm's resolver: the port's ARP (IPv4; an IPv6 peer needs a neighbour
 * table droce does not have). */
static int d_resolve(void *arg, uint8_t ipv, const uint8_t ip[16], uint8_t mac[6], uint64_t now)
{
	struct perf *p = arg;
	return ipv == 4 ? droce_port_resolve(be(p)->port, ip, mac, now) : -EAFNOSUPPORT;
}

static int d_cm_open(struct perf *p)
{
	return perf_cm_open(p, be(p)->ctx, d_resolve, p);
}

static int d_cm_connect(struct perf *p)
{
	return perf_cm_connect(p, be(p)->ctx, be(p)->qp);
}

static int d_post_send(struct perf *p, unsigned i, struct droce_send_wr *wr)
{
	struct droce_send_wr *bad;
	return droce_post_send(be(p)->qp[i], wr, &bad);
}

static int d_post_recv(struct perf *p, unsigned i, struct droce_recv_wr *wr)
{
	struct droce_recv_wr *bad;
	return droce_post_recv(be(p)->qp[i], wr, &bad);
}

static int d_poll(struct perf *p, uint64_t now, struct droce_wc *wc, int max)
{
	struct droce_be *b = be(p);
	unsigned n = droce_ctx_poll(b->ctx, now);
	int m = droce_poll_cq(b->cq, max, wc);
	droce_telemetry_publish(b->tel, now);
	/* One call per turn of every test loop: its busy/idle split, and
	 * under --idle adaptive a sleep once nothing happened for a while. */
	droce_poller_step(b->poller, now, n + (m > 0 ? (unsigned)m : 0u),
			  droce_ctx_next_deadline(b->ctx));
	return m;
}

static void d_idle(void *arg)
{
	struct perf *p = arg;
	uint64_t now = perf_now(p);
	unsigned n = droce_ctx_poll(be(p)->ctx, now);
	droce_telemetry_publish(be(p)->tel, now);
	droce_poller_step(be(p)->poller, now, n, droce_ctx_next_deadline(be(p)->ctx));
}

static void d_flush(struct perf *p)
{
	struct droce_be *b = be(p);
	if (!b || !b->ctx || !b->port)
		return;
	uint64_t end = perf_now(p) + 100000000u;
	while (droce_port_tx_pending(b->port) && perf_now(p) < end)
		droce_ctx_poll(b->ctx, perf_now(p));
}

static void d_counters(const struct perf *p, struct perf_counters *c)
{
	const struct droce_be *b = be(p);
	if (!b || !b->qp)
		return;
	c->path = calloc(p->o.qps, sizeof(*c->path));
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct droce_qp_stats s;
		if (!b->qp[i] || droce_qp_get_stats(b->qp[i], &s))
			continue;
		if (c->path) {
			struct perf_qp_path *q = &c->path[c->n_path++];
			q->rtt_samples = s.rtt_samples;
			q->rtt_min_ns = s.rtt_min_ns;
			q->rtt_srtt_ns = s.rtt_srtt_ns;
			q->rtt_var_ns = s.rtt_var_ns;
			q->rto_ns = s.rto_ns;
			q->window_pkts = s.window_pkts;
			q->window_bytes = s.window_bytes;
			q->timeout_mode = s.timeout_mode == DROCE_TIMEOUT_ADAPTIVE ? "adaptive" : "ibta";
		}
		c->retrans_timeout += s.retrans_timeout;
		c->retrans_nak += s.retrans_nak;
		c->retrans_pkts += s.retrans_pkts;
		c->nak_psn_seq += s.nak_rcvd[0];
		c->nak_invalid_req += s.nak_rcvd[1];
		c->nak_remote_access += s.nak_rcvd[2];
		c->nak_remote_op += s.nak_rcvd[3];
		c->rnr_nak_sent += s.rnr_nak_sent;
		c->rnr_nak_rcvd += s.rnr_nak_rcvd;
		c->dup_reqs += s.dup_reqs;
		c->out_of_seq += s.out_of_seq;
		c->transport = s.transport;
		c->sr_ooo_placed += s.sr_ooo_placed;
		c->sr_ooo_dropped += s.sr_ooo_dropped;
		c->sack_sent += s.sack_sent;
		c->sack_rcvd += s.sack_rcvd;
		c->sr_rounds += s.sr_rounds;
		c->sr_skipped += s.sr_skipped;
		for (unsigned k = 0; k < 8 && k < DROCE_SPRAY_PATHS; k++) {
			c->spray_pkts[k] += s.spray_pkts[k];
			c->spray_resent[k] += s.spray_resent[k];
		}
		c->spray_moves += s.spray_moves;
	}
	if (b->impair) {
		struct droce_impair_stats is;
		droce_impair_get_stats(b->impair, &is);
		c->impaired = true;
		c->imp_frames = is.frames;
		c->imp_dropped = is.dropped;
		c->imp_held = is.held;
		c->imp_duplicated = is.duplicated;
		c->imp_corrupted = is.corrupted;
	}
	c->has_loop = b->poller && !droce_poller_get_stats(b->poller, &c->loop);
	struct droce_port_stats ps;
	c->has_port = b->port && !droce_port_get_stats(b->port, &ps);
	if (c->has_port) {
		c->port_tx_faulted = ps.tx_faulted;
		c->port_tx_abandoned = ps.tx_abandoned;
		c->port_rx_faulted = ps.rx_faulted;
	}
	c->tsc_hz = p->tsc_hz;
	struct droce_ctx_stats cs;
	if (b->ctx && !droce_ctx_get_stats(b->ctx, &cs)) {
		for (unsigned i = 0; i < DROCE_DROP_REASON_MAX && c->n_drop < 64; i++) {
			const char *name = droce_drop_reason_name(i);
			if (!name)
				break;
			if (cs.drop[i]) {
				c->drop[c->n_drop].reason = name;
				c->drop[c->n_drop].count = cs.drop[i];
				c->n_drop++;
			}
		}
	}
}

static void d_print_port(const struct perf *p)
{
	struct droce_port_stats s;
	const struct droce_be *b = be(p);
	if (!b || !b->port || droce_port_get_stats(b->port, &s))
		return;
	printf(" Port: rx %llu frames (RoCE %llu, not ours %llu, other %llu), tx %llu frames "
	       "(zero-copy %llu, copied %llu), tx busy %llu, zc attached/released %llu/%llu, "
	       "bursts cut short by the peer's unmap tx %llu (%llu frames) rx %llu\n",
	       (unsigned long long)s.rx_frames, (unsigned long long)s.rx_roce,
	       (unsigned long long)s.rx_not_ours, (unsigned long long)s.rx_other,
	       (unsigned long long)s.tx_frames, (unsigned long long)s.tx_zc_frames,
	       (unsigned long long)s.tx_copied_frames, (unsigned long long)s.tx_nobufs,
	       (unsigned long long)s.zc_attached, (unsigned long long)s.zc_released,
	       (unsigned long long)s.tx_faulted, (unsigned long long)s.tx_abandoned,
	       (unsigned long long)s.rx_faulted);
}

static void d_stage_mark(struct perf *p, bool start, uint64_t ops)
{
	struct droce_be *b = be(p);
	if (!b || !b->ctx)
		return;
	if (start) {
		p->have_stages = !droce_ctx_reset_stage_stats(b->ctx);
		return;
	}
	if (p->have_stages && !droce_ctx_get_stage_stats(b->ctx, &p->stages))
		p->stage_ops = ops;
}

static void d_close(struct perf *p)
{
	struct droce_be *b = be(p);
	if (!b)
		return;
	for (unsigned i = 0; b->qp && b->mr && i < p->o.qps; i++) {
		if (b->qp[i])
			droce_destroy_qp(b->qp[i]);
		if (b->mr[i])
			droce_dereg_mr(b->mr[i]);
	}
	if (b->cq)
		droce_destroy_cq(b->cq);
	droce_telemetry_close(b->tel);
	droce_poller_destroy(b->poller);
	if (b->ctx)
		droce_ctx_destroy(b->ctx);
	droce_impair_link_destroy(b->imp);
	droce_impair_destroy(b->impair);
	if (b->port)
		droce_port_close(b->port);
	droce_capture_close(b->cap);
	/* No rte_eal_cleanup(): in DPDK 22.11 it unmaps memory and frees
	 * interrupt handles while the EAL interrupt thread may still dispatch a
	 * memif peer's disconnect (SIGSEGV in rte_intr_fd_get after a good run);
	 * EAL runs without shared files here, so the kernel frees all at exit. */
	free(b->qp);
	free(b->mr);
	free(b);
	p->bk = NULL;
}

const struct perf_backend perf_backend_droce = {
	.name = "droce",
	.open = d_open,
	.create_qp = d_create_qp,
	.connect_qp = d_connect_qp,
	.cm_open = d_cm_open,
	.cm_connect = d_cm_connect,
	.post_send = d_post_send,
	.post_recv = d_post_recv,
	.poll = d_poll,
	.idle = d_idle,
	.flush = d_flush,
	.counters = d_counters,
	.print_port = d_print_port,
	.stage_mark = d_stage_mark,
	.close = d_close,
};
