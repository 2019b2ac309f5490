/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port_vanish: a memif peer that goes away while the other end is in the
 * middle of a TX burst. DPDK 22.11's memif handles the end of its control
 * connection on the EAL interrupt thread (memif_disconnect), which unmaps
 * the shared regions while the poll thread may be copying frames into
 * them. Killing a peer hits that window seldom (a killed peer stops
 * reading first, the ring fills and the sender mostly finds it full); here
 * the sink keeps draining until the very moment it shuts its end of the
 * control connection, so the sender is copying into free slots when its
 * regions go.
 *
 *   port_vanish [EAL args --] --memif ROLE --ip ADDR
 *               (--send PEER_IP | --sink) [--ms DRAIN_MS] [--seconds S]
 *               [--linger FILE]
 *
 * --sink: drains DRAIN_MS after the first frame, then shuts the control
 *         connection (the memif socket's connected end) and stops polling.
 * --send: 4 KB RoCE frames as fast as the port takes them until its link
 *         has been down for half a second. Exit 0 when it got there (it
 *         did not crash) and its link went down.
 * --linger: the sender then puts its port on DPDK's telemetry socket
 *         (/droce/port, under a context made for it and never polled),
 *         says "telemetry: up" and waits until FILE exists (at most 10 s),
 *         so that the script reads the counters as an operator would.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>

#include <droce/ctx.h>

#include "net/port/eal.h"
#include "net/port/port.h"
#include "wire/build.h"
#include "telemetry/telemetry.h"
#include "wire/icrc.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: port_vanish [EAL args --] --memif ROLE --ip ADDR "
			"(--send PEER_IP | --sink) [--ms DRAIN_MS] [--seconds S] [--linger FILE]\n");
	exit(2);
}

/* Shut the connected end(s) of the memif socket @p path (named or abstract):
 * the peer's interrupt thread reads EOF and disconnects. Returns how many. */
static int shut_control(const char *path)
{
	int n = 0;
	for (int fd = 3; fd < 4096; fd++) {
		struct sockaddr_un a;
		socklen_t al = sizeof(a);
		memset(&a, 0, sizeof(a));
		if (getsockname(fd, (struct sockaddr *)&a, &al) != 0 || a.sun_family != AF_UNIX)
			continue;
		const char *name = a.sun_path[0] == '\0' ? a.sun_path + 1 : a.sun_path;
		int listening = 0;
		socklen_t ll = sizeof(listening);
		if (strcmp(name, path) != 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) != 0 || listening)
			continue;
		if (shutdown(fd, SHUT_RDWR) == 0)
			n++;
	}
	return n;
}

/* The port's counters on the telemetry socket until @p done exists (the
 * handle's first snapshot is taken when it opens: the counters as they
 * are now, the link down and the sender stopped). */
static int on_telemetry(struct droce_port *port, struct droce_link link,
			const struct droce_port_conf *pc, const uint8_t mac[6], const char *done)
{
	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	cp.ip_version = 4;
	memcpy(cp.ip, pc->ip, 4);
	memcpy(cp.mac, mac, 6);
	cp.link = link;
	cp.seed = 1;
	struct droce_ctx *ctx = droce_ctx_create(&cp);
	struct droce_telemetry *t = ctx ? droce_telemetry_open(ctx, port, "vanish") : NULL;
	if (t == NULL) {
		fprintf(stderr, "port_vanish: telemetry: %s\n", strerror(errno));
		if (ctx)
			droce_ctx_destroy(ctx);
		return -1;
	}
	printf("telemetry: up\n");
	fflush(stdout);
	struct timespec nap = {0, 20000000};
	for (unsigned i = 0; i < 500 && access(done, F_OK) != 0; i++)
		nanosleep(&nap, NULL);
	droce_telemetry_close(t);
	droce_ctx_destroy(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int split = 0;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			split = i;
	struct droce_eal_opts eo;
	memset(&eo, 0, sizeof(eo));
	const char *ip = NULL, *peer = NULL, *linger = NULL;
	bool sink = false;
	unsigned drain_ms = 200;
	double seconds = 20;
	for (int i = split + 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--sink") == 0) {
			sink = true;
			continue;
		}
		const char *v = i + 1 < argc ? argv[++i] : NULL;
		if (v == NULL)
			usage();
		if (strcmp(a, "--memif") == 0)
			eo.memif = v;
		else if (strcmp(a, "--ip") == 0)
			ip = v;
		else if (strcmp(a, "--send") == 0)
			peer = v;
		else if (strcmp(a, "--ms") == 0)
			drain_ms = (unsigned)atoi(v);
		else if (strcmp(a, "--seconds") == 0)
			seconds = atof(v);
		else if (strcmp(a, "--linger") == 0)
			linger = v;
		else
			usage();
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	uint8_t dip[4];
	const char *sock = eo.memif ? strstr(eo.memif, "socket=") : NULL;
	if (ip == NULL || inet_pton(AF_INET, ip, pc.ip) != 1 || (peer == NULL) == !sink ||
	    (peer != NULL && inet_pton(AF_INET, peer, dip) != 1) || sock == NULL)
		usage();
	char path[108];
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(sock + 7, ","), sock + 7);
	int rc = droce_eal_init(argv[0], split ? split - 1 : 0, argv + 1, &eo);
	if (rc != 0 || rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "port_vanish: EAL or port: %s\n", strerror(rc ? -rc : ENODEV));
		return 1;
	}
	struct droce_port *port = droce_port_open(&pc);
	if (port == NULL) {
		fprintf(stderr, "port_vanish: port open: %s\n", strerror(errno));
		return 1;
	}
	struct droce_port_info info;
	droce_port_get_info(port, &info);
	printf("port_vanish: port %u up\n", info.port_id);
	fflush(stdout);
	struct droce_link link = droce_port_link(port);
	struct rte_eth_link el = {0};
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	while (rte_eth_link_get_nowait(info.port_id, &el) == 0 && !el.link_status &&
	       now_ns() - t0 < 5000000000ull)
		;
	if (!el.link_status) {
		fprintf(stderr, "port_vanish: link never came up\n");
		return 1;
	}
	if (sink) {
		uint64_t got = 0, stop = end;
		while (now_ns() < stop) {
			struct droce_rx_frame r[32];
			uint64_t now = now_ns();
			unsigned n = link.ops->rx_burst(link.priv, r, 32, now);
			link.ops->rx_release(link.priv, r, n);
			link.ops->tx_flush(link.priv, now);
			if (got == 0 && n != 0)
				stop = now + (uint64_t)drain_ms * 1000000ull;
			got += n;
		}
		/* Straight from draining to the end of the connection. Then no
		 * more polling here: our own end disconnects too. */
		int shut = shut_control(path);
		printf("sink: %lu frames, shut %d control connection(s)\n", (unsigned long)got, shut);
		fflush(stdout);
		struct timespec nap = {1, 0};
		nanosleep(&nap, NULL);
		_exit(got != 0 && shut != 0 ? 0 : 1);
	}
	uint8_t payload[4096];
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	uint8_t mac[6];
	while (droce_port_resolve(port, dip, mac, now_ns()) != 0 && now_ns() < end)
		;
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	memcpy(h.net.dst_mac, mac, 6);
	memcpy(h.net.src_mac, info.mac, 6);
	h.net.ip_version = 4;
	memcpy(h.net.src_ip, pc.ip, 4);
	memcpy(h.net.dst_ip, dip, 4);
	h.net.ttl = 64;
	h.net.sport = 0xc123;
	h.bth.opcode = 0x0A;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = 0x11;
	h.ext.reth.rkey = 1;
	h.ext.reth.dma_len = sizeof(payload);
	h.payload_len = sizeof(payload);
	uint8_t hdr[128];
	size_t hl = droce_build_hdrs(hdr, sizeof(hdr), &h);
	size_t l3 = droce_build_l3_off(&h);
	uint32_t crc = droce_icrc_begin(hdr + l3, droce_build_l3_kind(&h), hl - l3);
	crc = droce_icrc_update(crc, payload, sizeof(payload));
	struct droce_tx_frame f;
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = (uint32_t)hl;
	f.nseg = 1;
	f.seg[0].addr = payload;
	f.seg[0].len = sizeof(payload);
	f.payload_len = sizeof(payload);
	f.trailer_len = (uint8_t)droce_build_trailer(f.trailer, crc, sizeof(payload));
	unsigned long sent = 0;
	uint64_t down_at = 0;
	for (uint64_t now = now_ns(); now < end; now = now_ns()) {
		if (link.ops->tx(link.priv, &f, now) == 0)
			sent++;
		else
			link.ops->tx_flush(link.priv, now);
		if (down_at == 0 && rte_eth_link_get_nowait(info.port_id, &el) == 0 &&
		    !el.link_status)
			down_at = now;
		if (down_at != 0 && now - down_at > 500000000ull)
			break;
	}
	struct droce_port_stats st;
	droce_port_get_stats(port, &st);
	printf("send: %lu frames; link %s; port: tx bursts %lu, nobufs %lu, faulted tx %lu "
	       "(%lu frames abandoned) rx %lu\n",
	       sent, down_at ? "went down" : "stayed up", (unsigned long)st.tx_bursts,
	       (unsigned long)st.tx_nobufs, (unsigned long)st.tx_faulted,
	       (unsigned long)st.tx_abandoned, (unsigned long)st.rx_faulted);
	fflush(stdout);
	if (linger != NULL && on_telemetry(port, link, &pc, info.mac, linger) != 0)
		return 1;
	droce_port_close(port);
	return down_at != 0 ? 0 : 1;
}
