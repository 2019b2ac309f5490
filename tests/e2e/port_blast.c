/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port_blast: the port alone, without the transport: one process sends N
 * RoCE frames (RC RDMA WRITE ONLY, PSN = sequence number, payload attached
 * zero-copy), the other receives them through the port's link, parses each
 * (ICRC checked) and counts gaps. Shows whether the port (and the PMD under
 * it) loses, reorders or corrupts frames, and how fast it moves them.
 *
 *   port_blast [EAL args --] --memif ROLE|--iface IF --ip ADDR
 *              (--send PEER_IP | --recv) [--count N] [--size BYTES] [--seconds S]
 *
 * Exit 0: sender sent everything; receiver got all N frames intact, in order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_ethdev.h>

#include "net/port/eal.h"
#include "net/port/port.h"
#include "wire/build.h"
#include "wire/icrc.h"
#include "wire/parse.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: port_blast [EAL args --] --memif ROLE|--iface IF --ip ADDR "
			"(--send PEER_IP | --recv) [--count N] [--size BYTES] [--seconds S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int split = 0;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			split = i;
	struct droce_eal_opts eo;
	memset(&eo, 0, sizeof(eo));
	const char *ip = NULL, *peer = NULL;
	bool recv_mode = false;
	unsigned long count = 100000;
	unsigned size = 4096;
	double seconds = 20;
	for (int i = split + 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--recv") == 0) {
			recv_mode = true;
			continue;
		}
		const char *v = i + 1 < argc ? argv[++i] : NULL;
		if (v == NULL)
			usage();
		if (strcmp(a, "--iface") == 0)
			eo.iface = v;
		else if (strcmp(a, "--memif") == 0)
			eo.memif = v;
		else if (strcmp(a, "--ip") == 0)
			ip = v;
		else if (strcmp(a, "--send") == 0)
			peer = v;
		else if (strcmp(a, "--count") == 0)
			count = strtoul(v, NULL, 0);
		else if (strcmp(a, "--size") == 0)
			size = (unsigned)atoi(v);
		else if (strcmp(a, "--seconds") == 0)
			seconds = atof(v);
		else
			usage();
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	uint8_t dip[4];
	if (ip == NULL || inet_pton(AF_INET, ip, pc.ip) != 1 || (peer == NULL) == !recv_mode ||
	    (peer != NULL && inet_pton(AF_INET, peer, dip) != 1) || size > 4096)
		usage();
	int rc = droce_eal_init(argv[0], split ? split - 1 : 0, argv + 1, &eo);
	if (rc != 0 || rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "port_blast: EAL or port: %s\n", strerror(rc ? -rc : ENODEV));
		return 1;
	}
	struct droce_port *port = droce_port_open(&pc);
	if (port == NULL) {
		fprintf(stderr, "port_blast: port open: %s\n", strerror(errno));
		return 1;
	}
	struct droce_port_info info;
	droce_port_get_info(port, &info);
	/* the test's cue to start the peer: the port is started */
	printf("port_blast: port %u up\n", info.port_id);
	fflush(stdout);
	struct droce_link link = droce_port_link(port);
	/* memif and af_packet come up asynchronously. */
	struct rte_eth_link el = {0};
	uint64_t t0 = now_ns();
	while (rte_eth_link_get_nowait(info.port_id, &el) == 0 && !el.link_status &&
	       now_ns() - t0 < 5000000000ull)
		;
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	int result = 1;
	unsigned long done = 0, lost = 0, ooo = 0, bad = 0;
	uint64_t first = 0, last = 0;
	if (!recv_mode) {
		uint8_t *payload = malloc(size ? size : 1);
		for (unsigned i = 0; i < size; i++)
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
		h.ext.reth.dma_len = size;
		h.payload_len = size;
		uint8_t hdr[128];
		first = now_ns();
		while (done < count && now_ns() < end) {
			h.bth.psn = (uint32_t)(done & 0xFFFFFFu);
			size_t hl = droce_build_hdrs(hdr, sizeof(hdr), &h);
			size_t l3 = droce_build_l3_off(&h);
			uint32_t crc = droce_icrc_begin(hdr + l3, droce_build_l3_kind(&h), hl - l3);
			crc = droce_icrc_update(crc, payload, size);
			struct droce_tx_frame f;
			memset(&f, 0, sizeof(f));
			f.hdr = hdr;
			f.hdr_len = (uint32_t)hl;
			f.nseg = size ? 1 : 0;
			f.seg[0].addr = payload;
			f.seg[0].len = size;
			f.payload_len = size;
			f.trailer_len = (uint8_t)droce_build_trailer(f.trailer, crc, size);
			uint64_t now = now_ns();
			if (link.ops->tx(link.priv, &f, now) == 0) {
				done++;
			} else {
				link.ops->tx_flush(link.priv, now);
				struct droce_rx_frame r[32];
				unsigned n = link.ops->rx_burst(link.priv, r, 32, now);
				link.ops->rx_release(link.priv, r, n);
			}
		}
		/* Hand everything to the PMD, then stop polling: the receiver
		 * reads the ring and leaves; a memif peer leaving while we poll
		 * can crash DPDK 22.11's memif. */
		while (droce_port_tx_pending(port) != 0 && now_ns() < end)
			link.ops->tx_flush(link.priv, now_ns());
		last = now_ns();
		result = done == count ? 0 : 1;
		struct timespec nap = {1, 0};
		nanosleep(&nap, NULL);
		free(payload);
	} else {
		unsigned long expect = 0;
		uint64_t idle_end = end;
		while (done + lost < count && now_ns() < idle_end) {
			struct droce_rx_frame r[32];
			uint64_t now = now_ns();
			unsigned n = link.ops->rx_burst(link.priv, r, 32, now);
			link.ops->tx_flush(link.priv, now);
			for (unsigned i = 0; i < n; i++) {
				struct droce_pkt p;
				if (droce_parse(r[i].data, r[i].len, &p, 0) != DROCE_PARSE_OK ||
				    p.h.payload_len != size) {
					bad++;
					continue;
				}
				if (done == 0)
					first = now;
				last = now;
				done++;
				unsigned long psn = p.h.bth.psn;
				if (psn > expect)
					lost += psn - expect;
				else if (psn < expect)
					ooo++;
				if (psn >= expect)
					expect = psn + 1;
			}
			link.ops->rx_release(link.priv, r, n);
			if (done != 0)
				idle_end = now + 2000000000ull < end ? now + 2000000000ull : end;
		}
		result = done == count && lost == 0 && ooo == 0 && bad == 0 ? 0 : 1;
		/* Stop polling before the sender closes its end. */
		struct timespec nap = {0, 300000000};
		nanosleep(&nap, NULL);
	}
	struct droce_port_stats st;
	droce_port_get_stats(port, &st);
	double secs = last > first ? (double)(last - first) / 1e9 : 0;
	printf("%s: %lu of %lu frames of %u B payload, lost %lu, out-of-order %lu, bad %lu; "
	       "%.3f Mpps %.2f Gb/s payload; port: tx %lu (zc %lu, copied %lu, nobufs %lu), "
	       "rx roce %lu other %lu\n",
	       recv_mode ? "recv" : "send", done, count, size, lost, ooo, bad,
	       secs > 0 ? (double)done / secs / 1e6 : 0,
	       secs > 0 ? (double)done * size * 8 / secs / 1e9 : 0, (unsigned long)st.tx_frames,
	       (unsigned long)st.tx_zc_frames, (unsigned long)st.tx_copied_frames,
	       (unsigned long)st.tx_nobufs, (unsigned long)st.rx_roce, (unsigned long)st.rx_other);
	droce_port_close(port);
	/* No rte_eal_cleanup(): in DPDK 22.11 it races the EAL interrupt thread
	 * (docs/usage.md, DPDK 22.11 quirks); the kernel frees all at exit. */
	return result;
}
