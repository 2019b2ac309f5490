/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf set-up, whichever backend: the buffers, the QPs, the
 * side-channel exchange, RTR/RTS. Everything a perftest user expects to
 * happen before the first timed message. The stack-specific half lives in
 * backend_droce.c and backend_verbs.c.
 */
#include "perf.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <rte_cycles.h>

#include "flow.h"


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

static unsigned mtu_floor(unsigned bytes)
{
	unsigned m = 4096;
	while (m > 256 && m > bytes)
		m >>= 1;
	return m;
}

static int make_buffers(struct perf *p)
{
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct perf_qp *q = &p->qp[i];
		size_t len = (size_t)p->slots * p->slot_size;
		if (len < 64)
			len = 64; /* room for the atomic target and the latency marker */
		len = (len + 4095) & ~(size_t)4095;
		q->buf = aligned_alloc(4096, len);
		if (!q->buf)
			return -ENOMEM;
		memset(q->buf, 0, len);
		q->buf_len = len;
	}
	return 0;
}

static int connect_qps(struct perf *p, const struct perf_local *me_addr)
{
	int r;
	droce_sc_init(&p->sc, (int)(p->o.timeout * 1000));
	/* While the side channel waits (for the client, the peer's INFO, READY),
	 * a poll-mode port goes on answering ARP and ICMP echo: a peer resolving
	 * our MAC meanwhile must get its answer. */
	if (p->be->idle)
		droce_sc_set_idle(&p->sc, p->be->idle, p);
	/* --cm: the server listens on the CM before its client can know it is
	 * up (the side channel's accept), so no REQ meets "no listener" */
	if (p->o.cm && (r = p->be->cm_open(p)))
		return r;
	if (p->server) {
		/* Only the named client (docs/security.md): the side channel
		 * carries QPNs, PSNs and rkeys, and anyone may connect to it. */
		r = p->o.peer ? droce_sc_allow_peer(&p->sc, p->o.peer) : 0;
		if (!r)
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
	if (p->o.cm) {
		r = p->be->cm_connect(p);
		if (r)
			droce_sc_ready(&p->sc, -r);
		return r;
	}
	uint32_t mtu = p->o.mtu;
	for (unsigned i = 0; i < p->o.qps; i++) {
		struct perf_qp *q = &p->qp[i];
		struct droce_sc_info me = {0}, peer;
		me.qpn = q->qpn;
		me.psn = (uint32_t)(rte_get_tsc_cycles() * 2654435761u + i) & 0xFFFFFFu;
		me.ip_version = me_addr->ip_version;
		memcpy(me.ip, me_addr->ip, 16);
		memcpy(me.mac, me_addr->mac, 6);
		me.mtu = (uint16_t)p->o.mtu;
		me.n_mr = 1;
		me.mr[0].addr = (uint64_t)(uintptr_t)q->buf;
		me.mr[0].rkey = q->rkey;
		me.mr[0].len = q->buf_len;
		r = droce_sc_exchange(&p->sc, &me, &peer);
		if (r) {
			fprintf(stderr, "droce-perf: side channel: %s\n", p->sc.err);
			return r;
		}
		if (peer.n_mr < 1 || peer.ip_version != me_addr->ip_version) {
			fprintf(stderr, "droce-perf: peer sent no buffer or another IP family\n");
			droce_sc_ready(&p->sc, EPROTO);
			return -EPROTO;
		}
		if (peer.mtu < mtu)
			mtu = peer.mtu;
		q->remote = peer.mr[0];
		q->peer_qpn = peer.qpn;
		r = p->be->connect_qp(p, i, &peer, me.psn, mtu_floor(mtu));
		if (r) {
			droce_sc_ready(&p->sc, -r);
			return r;
		}
	}
	p->mtu = mtu_floor(mtu);
	return 0;
}

int perf_setup(struct perf *p, int eal_argc, char **eal_argv, const char *prog)
{
	p->be = p->o.backend == PERF_BACKEND_VERBS ? perf_backend_verbs : &perf_backend_droce;
	if (!p->be) {
		fprintf(stderr, "droce-perf: built without libibverbs: no --backend verbs\n");
		return -ENOTSUP;
	}
	uint32_t sizes[32];
	unsigned n = perf_sizes(&p->o, sizes, 32);
	p->slot_size = sizes[n - 1];
	p->slots = perf_bw_slots(&p->o, p->slot_size);
	p->qp = calloc(p->o.qps, sizeof(*p->qp));
	if (!p->qp)
		return -ENOMEM;
	unsigned cq_depth = p->o.qps * (p->o.tx_depth * 2 + p->slots) + 64;

	struct perf_local me = {0};
	int r = p->be->open(p, eal_argc, eal_argv, prog, cq_depth, &me);
	if (r)
		return r;
	droce_tsc_init(&p->clock, p->tsc_hz, rte_rdtsc());
	if (me.mtu < p->o.mtu) {
		fprintf(stderr, "droce-perf: %s carries a RoCE MTU of %u only; using it\n", p->be->name,
			me.mtu);
		p->o.mtu = me.mtu;
	}
	if ((r = make_buffers(p)))
		return r;
	for (unsigned i = 0; i < p->o.qps; i++)
		if ((r = p->be->create_qp(p, i)))
			return r;
	if ((r = perf_qp_map_build(p)))
		return r;
	return connect_qps(p, &me);
}

int perf_qp_map_build(struct perf *p)
{
	uint32_t n = 2;
	while (n < 2 * p->o.qps)
		n <<= 1;
	free(p->qp_map);
	p->qp_map = calloc(n, sizeof(*p->qp_map));
	if (!p->qp_map)
		return -ENOMEM;
	p->qp_map_mask = n - 1;
	for (unsigned i = 0; i < p->o.qps; i++) {
		uint32_t h = (p->qp[i].qpn * 2654435761u) & p->qp_map_mask;
		while (p->qp_map[h])
			h = (h + 1) & p->qp_map_mask;
		p->qp_map[h] = i + 1;
	}
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

/* kB of a "Name:   N kB" line of /proc/self/status, as bytes (0: none). */
static uint64_t status_kb(const char *text, const char *name)
{
	const char *l = strstr(text, name);
	return l ? strtoull(l + strlen(name), NULL, 10) * 1024 : 0;
}

void perf_counters(const struct perf *p, struct perf_counters *c)
{
	memset(c, 0, sizeof(*c));
	if (p->be)
		p->be->counters(p, c);
	char text[4096];
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = 0;
	c->mem_rss_peak = status_kb(text, "\nVmHWM:");
	c->mem_hugetlb = status_kb(text, "\nHugetlbPages:");
	c->mem_qps = p->o.qps;
}

void perf_counters_free(struct perf_counters *c)
{
	free(c->path);
	c->path = NULL;
	c->n_path = 0;
}

void perf_print_port(const struct perf *p)
{
	if (p->be)
		p->be->print_port(p);
}

void perf_teardown(struct perf *p)
{
	/* Shutdown order (docs/usage.md): push out what is batched, stop
	 * polling, give the peer time to stop too, then close. DPDK 22.11's
	 * memif unmaps its rings on the interrupt thread when the peer leaves,
	 * and a side still polling then can crash. */
	if (p->be)
		p->be->flush(p);
	droce_sc_close(&p->sc);
	struct timespec ts = {0, p->server ? 50000000L : 150000000L}; /* the server closes first */
	nanosleep(&ts, NULL);
	if (p->be)
		p->be->close(p);
	for (unsigned i = 0; p->qp && i < p->o.qps; i++)
		free(p->qp[i].buf);
	free(p->qp);
	p->qp = NULL;
	free(p->qp_map);
	p->qp_map = NULL;
}
