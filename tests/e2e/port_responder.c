/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port_responder: open one droce port (EAL shortcuts of stack/net/port/eal.h),
 * poll it as a context would, and let it answer ARP and ICMP echo. Exits 0
 * after answering --pings echo requests, 1 when --seconds pass first.
 * Used by tests/e2e/ping_veth.sh (the kernel's ping from another network
 * namespace, over af_packet on a veth pair).
 *
 *   port_responder [EAL args --] --iface IF | --memif ROLE  --ip A.B.C.D
 *                  [--pings N] [--seconds S] [--capture FILE]
 *                  [--ping ADDR [--size BYTES]]
 *
 * With --ping it is the other side: it resolves ADDR through the port's
 * ARP, then sends --pings echo requests of --size data bytes (the data
 * attached zero-copy when the port can), and exits 0 once every reply came
 * back (the port counts replies addressed to it as rx_ignored ICMP).
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

#include "net/diag/capture.h"
#include "net/neigh/classify.h"
#include "wire/bytes.h"
#include "net/port/eal.h"
#include "net/port/port.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Header of an ICMP echo request (Ethernet + IPv4 + ICMP, 42 bytes) whose
 * data is @p data (@p len bytes, which stay where they are: zero copy). */
static void echo_hdr(uint8_t *h, const uint8_t *dmac, const uint8_t *smac, const uint8_t *sip,
		     const uint8_t *dip, uint16_t seq, const uint8_t *data, uint32_t len)
{
	memcpy(h, dmac, 6);
	memcpy(h + 6, smac, 6);
	droce_put_be16(h + 12, 0x0800);
	uint8_t *ip = h + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	droce_put_be16(ip + 2, (uint16_t)(28 + len));
	droce_put_be16(ip + 4, seq);
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, sip, 4);
	memcpy(ip + 16, dip, 4);
	droce_put_be16(ip + 10, droce_inet_csum(ip, 20));
	uint8_t *ic = ip + 20;
	memset(ic, 0, 8);
	ic[0] = 8;
	droce_put_be16(ic + 4, 0x4452);
	droce_put_be16(ic + 6, seq);
	/* checksum over header + data: sum the data once, fold with the header */
	uint32_t sum = (uint16_t)~droce_inet_csum(data, len);
	sum += (uint16_t)~droce_inet_csum(ic, 8);
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	droce_put_be16(ic + 2, (uint16_t)~sum);
}

static void usage(void)
{
	fprintf(stderr, "usage: port_responder [EAL args --] --iface IF|--memif ROLE --ip ADDR "
			"[--pings N] [--seconds S] [--capture FILE]\n");
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
	const char *ip = NULL, *capture = NULL, *target = NULL;
	unsigned size = 56;
	unsigned pings = 3;
	double seconds = 20;
	for (int i = split + 1; i < argc; i += 2) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (v == NULL)
			usage();
		if (strcmp(a, "--iface") == 0)
			eo.iface = v;
		else if (strcmp(a, "--memif") == 0)
			eo.memif = v;
		else if (strcmp(a, "--ip") == 0)
			ip = v;
		else if (strcmp(a, "--pings") == 0)
			pings = (unsigned)atoi(v);
		else if (strcmp(a, "--seconds") == 0)
			seconds = atof(v);
		else if (strcmp(a, "--capture") == 0)
			capture = v;
		else if (strcmp(a, "--ping") == 0)
			target = v;
		else if (strcmp(a, "--size") == 0)
			size = (unsigned)atoi(v);
		else
			usage();
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	if (ip == NULL || inet_pton(AF_INET, ip, pc.ip) != 1)
		usage();
	int rc = droce_eal_init(argv[0], split ? split - 1 : 0, argv + 1, &eo);
	if (rc != 0) {
		fprintf(stderr, "port_responder: EAL: %s\n", strerror(-rc));
		return 1;
	}
	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "port_responder: no ethdev port\n");
		return 1;
	}
	pc.port_id = 0;
	/* this tool tests the zero-copy path, also on memif (where the port
	 * would copy by default) */
	pc.force_zero_copy = true;
	struct droce_port *port = droce_port_open(&pc);
	if (port == NULL) {
		fprintf(stderr, "port_responder: port open: %s\n", strerror(errno));
		return 1;
	}
	struct droce_port_info info;
	droce_port_get_info(port, &info);
	printf("port %u driver %s mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u roce_mtu %u "
	       "zero_copy %d footprint %.1f MB\n",
	       info.port_id, info.driver, info.mac[0], info.mac[1], info.mac[2], info.mac[3],
	       info.mac[4], info.mac[5], info.mtu, info.roce_mtu, info.zero_copy,
	       (double)info.footprint_bytes / 1e6);
	fflush(stdout);
	struct droce_capture *cap = NULL;
	if (capture != NULL) {
		struct droce_capture_conf cc = {.path = capture};
		cap = droce_capture_open(&cc);
		if (cap == NULL) {
			fprintf(stderr, "port_responder: capture: %s\n", strerror(errno));
			return 1;
		}
		droce_port_set_capture(port, cap);
	}
	struct droce_link link = droce_port_link(port);
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	struct droce_port_stats st;
	int result = 1;
	uint8_t dip[4], dmac[6];
	uint8_t *data = NULL;
	unsigned sent = 0;
	uint64_t next_send = 0;
	bool resolved = false;
	if (target != NULL) {
		if (inet_pton(AF_INET, target, dip) != 1 || size > info.frame_max - 42)
			usage();
		data = malloc(size ? size : 1);
		for (unsigned i = 0; i < size; i++)
			data[i] = (uint8_t)(i * 31 + 7);
	}
	for (;;) {
		if (target != NULL) {
			uint64_t now = now_ns();
			if (!resolved)
				resolved = droce_port_resolve(port, dip, dmac, now - t0) == 0;
			if (resolved && sent < pings && now >= next_send) {
				uint8_t hdr[42];
				echo_hdr(hdr, dmac, info.mac, pc.ip, dip, (uint16_t)(sent + 1), data,
					 size);
				struct droce_tx_frame f;
				memset(&f, 0, sizeof(f));
				f.hdr = hdr;
				f.hdr_len = sizeof(hdr);
				f.nseg = size ? 1 : 0;
				f.seg[0].addr = data;
				f.seg[0].len = size;
				f.payload_len = size;
				if (link.ops->tx(link.priv, &f, now - t0) == 0) {
					sent++;
					next_send = now + 100000000ull;
				}
			}
		}
		uint64_t now = now_ns();
		struct droce_rx_frame f[32];
		unsigned n = link.ops->rx_burst(link.priv, f, 32, now - t0);
		if (n != 0)
			link.ops->rx_release(link.priv, f, n);
		link.ops->tx_flush(link.priv, now - t0);
		droce_port_get_stats(port, &st);
		if (target != NULL ? st.icmp.rx_ignored >= pings : st.icmp.rx_echo >= pings) {
			result = 0;
			break;
		}
		if (now >= end)
			break;
	}
	/* Hand our last frames to the PMD, then stop polling and give the peer
	 * time to read them and leave: a memif peer that disconnects while we
	 * still poll can crash DPDK 22.11's memif. */
	while (droce_port_tx_pending(port) != 0 && now_ns() < end + 1000000000ull)
		link.ops->tx_flush(link.priv, now_ns() - t0);
	struct timespec nap = {0, 300000000};
	nanosleep(&nap, NULL);
	droce_port_get_stats(port, &st);
	printf("rx %lu frames: arp %lu icmp %lu roce %lu other %lu; answered %lu echo, %lu arp; "
	       "replies to us %lu; tx %lu frames (%lu zero-copy, %lu/%lu buffers released)\n",
	       (unsigned long)st.rx_frames, (unsigned long)st.rx_class[DROCE_NET_ARP],
	       (unsigned long)st.rx_class[DROCE_NET_ICMP], (unsigned long)st.rx_roce,
	       (unsigned long)st.rx_other, (unsigned long)st.icmp.rx_echo,
	       (unsigned long)st.arp.tx_replies, (unsigned long)st.icmp.rx_ignored,
	       (unsigned long)st.tx_frames, (unsigned long)st.tx_zc_frames,
	       (unsigned long)st.zc_released, (unsigned long)st.zc_attached);
	droce_port_set_capture(port, NULL);
	droce_capture_close(cap);
	droce_port_close(port);
	/* No rte_eal_cleanup(): in DPDK 22.11 it races the EAL interrupt thread
	 * (docs/usage.md, DPDK 22.11 quirks); the kernel frees all at exit. */
	free(data);
	if (result != 0)
		fprintf(stderr, "port_responder: %s %lu of %u pings within %.0f s\n",
			target ? "got replies to" : "answered",
			(unsigned long)(target ? st.icmp.rx_ignored : st.icmp.rx_echo), pings, seconds);
	return result;
}
