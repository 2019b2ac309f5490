/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf set-up: EAL, the port, the context, the QPs and their buffers,
 * the side-channel exchange, RTR/RTS, and the ready handshake. Everything a
 * perftest user expects to happen before the first timed message.
 */
#include "perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include "net/capture.h"
#include "net/eal.h"
#include "net/impair.h"
#include "net/impair_link.h"
#include "net/port.h"

/* Buffers per QP are bounded: with -a and a deep queue, slots shrink. */
#define PERF_BUF_MAX (16u << 20)

uint64_t perf_now(const struct perf *p)
{
	return droce_tsc_now_ns(&p->clock);
}

void perf_check_fail(struct perf *p, const char *fmt, ...)
{
	if (p->check_failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->check_msg, sizeof(p->check_msg), fmt, ap);
	va_end(ap);
	p->check_failed = true;
	fprintf(stderr, "droce-perf: CHECK FAILED: %s\n", p->check_msg);
}

unsigned perf_sizes(const struct perf_opts *o, uint32_t *sizes, unsigned max)
{
	unsigned n = 0;
	if (!o->all_sizes) {
		sizes[n++] = o->size;
		return n;
	}
	for (uint32_t s = 2; s <= PERF_MAX_SIZE && n < max; s <<= 1)
		sizes[n++] = s;
	return n;
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

static int open_port(struct perf *p, struct droce_ctx_params *cp)
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
	p->port = droce_port_open(&pc);
	if (!p->port) {
		fprintf(stderr, "droce-perf: port %u: %s\n", port_id, strerror(errno));
		return -errno;
	}
	struct droce_port_info info;
	droce_port_get_info(p->port, &info);
	memcpy(cp->mac, info.mac, 6);
	if (info.roce_mtu < p->o.mtu) {
		fprintf(stderr, "droce-perf: port carries a RoCE MTU of %u only; using it\n", info.roce_mtu);
		p->o.mtu = info.roce_mtu;
	}
	printf(" Port: %s (port %u), zero-copy TX %s, pools %u/%u/%u mbufs, %.1f MB\n", info.driver,
	       port_id, info.zero_copy ? "on" : "off", info.rx_pool_n, info.tx_pool_n,
	       info.ext_pool_n, (double)info.footprint_bytes / 1e6);
	cp->link = droce_port_link(p->port);
	/* memif and af_packet come up asynchronously: frames sent before the
	 * link is up are lost and would cost a retransmission timeout. */
	uint64_t give_up = rte_get_tsc_cycles() + (uint64_t)(p->o.timeout * (double)rte_get_tsc_hz());
	struct rte_eth_link link = {0};
	while (rte_eth_link_get_nowait(port_id, &link) == 0 && !link.link_status &&
	       rte_get_tsc_cycles() < give_up)
		rte_delay_us_sleep(1000);
	if (!link.link_status)
		fprintf(stderr, "droce-perf: port %u link still down; going on\n", port_id);
	if (p->o.capture) {
		struct droce_capture_conf cc = {.path = p->o.capture};
		p->cap = droce_capture_open(&cc);
		if (!p->cap) {
			fprintf(stderr, "droce-perf: --capture %s: %s\n", p->o.capture, strerror(errno));
			return -errno;
		}
		droce_port_set_capture(p->port, p->cap);
	}
	if (p->o.impair) {
		struct droce_impair_spec spec;
		char err[128];
		if (droce_impair_parse(p->o.impair, &spec, err, sizeof(err))) {
			fprintf(stderr, "droce-perf: --impair: %s\n", err);
			return -EINVAL;
		}
		p->impair = droce_impair_create(&spec);
		p->imp = p->impair ? droce_impair_link_create(cp->link, p->impair) : NULL;
		if (!p->imp) {
			fprintf(stderr, "droce-perf: --impair: %s\n", strerror(errno));
			return -ENOMEM;
		}
		cp->link = droce_impair_link_get(p->imp);
	}
	return 0;
}

static enum droce_mtu mtu_enum(unsigned bytes)
{
	enum droce_mtu m = DROCE_MTU_256;
	while (m < DROCE_MTU_4096 && droce_mtu_bytes(m) < bytes)
		m++;
	return m;
}

static int make_qps(struct perf *p)
{
	uint32_t sizes[32];
	unsigned n = perf_sizes(&p->o, sizes, 32);
	p->slot_size = sizes[n - 1];
	/* At least two slots: latency tests receive into slot 0 and send from slot 1. */
	p->slots = p->o.tx_depth < 2 ? 2 : p->o.tx_depth;
	while (p->slots > 2 && (uint64_t)p->slots * p->slot_size > PERF_BUF_MAX)
		p->slots >>= 1;

	unsigned cq_depth = p->o.qps * (p->o.tx_depth * 2 + p->slots) + 64;
	p->cq = droce_create_cq(p->ctx, cq_depth);
	if (!p->cq) {
		fprintf(stderr, "droce-perf: create CQ: %s\n", strerror(errno));
		return -errno;
	}
	unsigned access = DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
			  DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC;
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct perf_qp *q = &p->qp[i];
		size_t len = (size_t)p->slots * p->slot_size;
		if (len < 64)
			len = 64; /* room for the atomic target and the latency marker */
		q->buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
		if (!q->buf)
			return -ENOMEM;
		memset(q->buf, 0, len);
		q->mr = droce_reg_mr(p->ctx, q->buf, len, access);
		struct droce_qp_init_attr ia = {
			.send_cq = p->cq,
			.recv_cq = p->cq,
			.cap = {.max_send_wr = p->o.tx_depth, .max_recv_wr = p->slots + 16,
				.max_send_sge = 1, .max_recv_sge = 1},
		};
		q->qp = q->mr ? droce_create_qp(p->ctx, &ia) : NULL;
		if (!q->qp) {
			fprintf(stderr, "droce-perf: QP %u: %s\n", i, strerror(errno));
			return -errno ? -errno : -ENOMEM;
		}
		struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .qp_access_flags = access,
					  .pkey = DROCE_DEFAULT_PKEY};
		int r = droce_modify_qp(q->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
		if (r) {
			fprintf(stderr, "droce-perf: QP %u to INIT: %s\n", i, strerror(-r));
			return r;
		}
	}
	return 0;
}

static int connect_qps(struct perf *p, const struct droce_ctx_params *cp)
{
	int r;
	droce_sc_init(&p->sc, (int)(p->o.timeout * 1000));
	if (p->server) {
		r = droce_sc_listen(&p->sc, NULL, p->o.port);
		if (!r) {
			printf(" Waiting for a client on TCP port %u\n", p->o.port);
			fflush(stdout);
			/* A server waits for its client much longer than for progress. */
			p->sc.timeout_ms = (int)(p->o.timeout * 6000);
			r = droce_sc_accept(&p->sc);
			p->sc.timeout_ms = (int)(p->o.timeout * 1000);
		}
	} else {
		r = droce_sc_connect(&p->sc, p->o.server, p->o.port);
	}
	if (r) {
		fprintf(stderr, "droce-perf: side channel: %s\n", p->sc.err);
		return r;
	}
	uint32_t mtu = p->o.mtu;
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct perf_qp *q = &p->qp[i];
		struct droce_sc_info me = {0}, peer;
		me.qpn = droce_qp_num(q->qp);
		me.psn = (uint32_t)(rte_get_tsc_cycles() * 2654435761u + i) & 0xFFFFFFu;
		me.ip_version = cp->ip_version;
		memcpy(me.ip, cp->ip, 16);
		memcpy(me.mac, cp->mac, 6);
		me.mtu = (uint16_t)p->o.mtu;
		me.n_mr = 1;
		me.mr[0].addr = (uint64_t)(uintptr_t)q->buf;
		me.mr[0].rkey = q->mr->rkey;
		me.mr[0].len = q->mr->length;
		r = droce_sc_exchange(&p->sc, &me, &peer);
		if (r) {
			fprintf(stderr, "droce-perf: side channel: %s\n", p->sc.err);
			return r;
		}
		if (peer.n_mr < 1 || peer.ip_version != cp->ip_version) {
			fprintf(stderr, "droce-perf: peer sent no buffer or another IP family\n");
			droce_sc_ready(&p->sc, EPROTO);
			return -EPROTO;
		}
		if (peer.mtu < mtu)
			mtu = peer.mtu;
		q->remote = peer.mr[0];
		q->peer_qpn = peer.qpn;
		if (peer.ip_version == 4) /* the ARP table is IPv4; IPv6 peers come from here only */
			droce_port_add_neighbour(p->port, peer.ip, peer.mac);

		struct droce_qp_attr a = {0};
		a.qp_state = DROCE_QPS_RTR;
		a.path_mtu = mtu_enum(mtu < p->o.mtu ? mtu : p->o.mtu);
		a.dest_qp_num = peer.qpn;
		a.rq_psn = peer.psn;
		a.max_dest_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
		a.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
		a.ah_attr.ip_version = peer.ip_version;
		memcpy(a.ah_attr.dst_ip, peer.ip, 16);
		memcpy(a.ah_attr.dst_mac, peer.mac, 6);
		a.ah_attr.dscp = DROCE_DEFAULT_DSCP;
		a.ah_attr.ttl = DROCE_DEFAULT_TTL;
		r = droce_modify_qp(q->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				    DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				    DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
		if (!r) {
			struct droce_qp_attr s = {0};
			s.qp_state = DROCE_QPS_RTS;
			s.sq_psn = me.psn;
			/* 4.096 us * 2^10 = 4 ms: short, so loss recovers fast on a
			 * local link and a dead peer is noticed within the timeout. */
			s.timeout = 14;
			s.retry_cnt = 7;
			s.rnr_retry = 7;
			s.max_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
			r = droce_modify_qp(q->qp, &s, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					    DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					    DROCE_QP_MAX_QP_RD_ATOMIC);
		}
		if (r) {
			fprintf(stderr, "droce-perf: QP %u to RTR/RTS: %s\n", i, strerror(-r));
			droce_sc_ready(&p->sc, -r);
			return r;
		}
	}
	p->mtu = droce_mtu_bytes(mtu_enum(mtu < p->o.mtu ? mtu : p->o.mtu));
	return 0;
}

int perf_setup(struct perf *p, int eal_argc, char **eal_argv, const char *prog)
{
	struct droce_eal_opts eo = {.memif = p->o.memif, .iface = p->o.iface};
	int r = droce_eal_init(prog, eal_argc, eal_argv, &eo);
	if (r) {
		fprintf(stderr, "droce-perf: EAL start failed: %s\n", strerror(-r));
		return r;
	}
	droce_tsc_init_eal(&p->clock);

	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	if ((r = our_address(p, &cp)) || (r = open_port(p, &cp)))
		return r;
	cp.seed = rte_get_tsc_cycles();
	cp.cc = p->o.cc;
	if (p->o.window) {
		cp.window_pkts = p->o.window;
		cp.window_bytes = (uint64_t)p->o.window * p->o.mtu;
	}
	p->ctx = droce_ctx_create(&cp);
	if (!p->ctx) {
		fprintf(stderr, "droce-perf: context: %s%s\n", strerror(errno),
			p->o.cc ? " (is --cc a known algorithm?)" : "");
		return -errno;
	}
	if ((r = make_qps(p)) || (r = connect_qps(p, &cp)))
		return r;
	return 0;
}

/* Side channel events while the poll loop runs: "done" from the peer
 * (its READY, read by droce_sc_ready() later) or its disappearance. */
int perf_peer_event(struct perf *p)
{
	struct pollfd pfd = {.fd = p->sc.fd, .events = POLLIN};
	if (p->sc.fd < 0)
		return -ECONNRESET;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
		return -ECONNRESET;
	char c;
	ssize_t n = recv(p->sc.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return -ECONNRESET;
	return n > 0 ? 1 : 0;
}

void perf_counters(const struct perf *p, struct perf_counters *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct droce_qp_stats s;
		if (!p->qp[i].qp || droce_qp_get_stats(p->qp[i].qp, &s))
			continue;
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
	}
	struct droce_ctx_stats cs;
	if (p->ctx && !droce_ctx_get_stats(p->ctx, &cs)) {
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

void perf_print_port(const struct perf *p)
{
	struct droce_port_stats s;
	if (!p->port || droce_port_get_stats(p->port, &s))
		return;
	printf(" Port: rx %llu frames (RoCE %llu, not ours %llu, other %llu), tx %llu frames "
	       "(zero-copy %llu, copied %llu), tx busy %llu, zc attached/released %llu/%llu\n",
	       (unsigned long long)s.rx_frames, (unsigned long long)s.rx_roce,
	       (unsigned long long)s.rx_not_ours, (unsigned long long)s.rx_other,
	       (unsigned long long)s.tx_frames, (unsigned long long)s.tx_zc_frames,
	       (unsigned long long)s.tx_copied_frames, (unsigned long long)s.tx_nobufs,
	       (unsigned long long)s.zc_attached, (unsigned long long)s.zc_released);
}

void perf_teardown(struct perf *p)
{
	/* Shutdown order (docs/usage.md): push out what is batched, stop
	 * polling, give the peer time to stop too, then close. DPDK 22.11's
	 * memif unmaps its rings on the interrupt thread when the peer leaves,
	 * and a side still polling then can crash. */
	if (p->ctx && p->port) {
		uint64_t end = perf_now(p) + 100000000u;
		while (droce_port_tx_pending(p->port) && perf_now(p) < end)
			droce_ctx_poll(p->ctx, perf_now(p));
	}
	droce_sc_close(&p->sc);
	rte_delay_us_sleep(p->server ? 50000 : 150000); /* the server closes first */
	for (unsigned i = 0; i < p->o.qps; i++) {
		if (p->qp[i].qp)
			droce_destroy_qp(p->qp[i].qp);
		if (p->qp[i].mr)
			droce_dereg_mr(p->qp[i].mr);
	}
	if (p->cq)
		droce_destroy_cq(p->cq);
	if (p->ctx)
		droce_ctx_destroy(p->ctx);
	droce_impair_link_destroy(p->imp);
	droce_impair_destroy(p->impair);
	if (p->port)
		droce_port_close(p->port);
	droce_capture_close(p->cap);
	for (unsigned i = 0; i < p->o.qps; i++)
		free(p->qp[i].buf);
	rte_eal_cleanup();
}
