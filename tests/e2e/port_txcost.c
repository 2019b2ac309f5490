/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port_txcost: CPU cost of the port's TX path per frame, zero-copy against
 * copy, on an in-process net_ring (tx() + the PMD's free of the mbufs, i.e.
 * the external-buffer release too). Payload either hot (one buffer, always
 * in cache) or cold (rotating through 64 MB, as registered memory usually
 * is). Not a test: a measurement quoted in docs/usage.md.
 *
 *   port_txcost [FRAMES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "net/port/port.h"

#define BIG (64u << 20)

static void drain(struct rte_ring *tx)
{
	void *objs[64];
	unsigned k;
	while ((k = rte_ring_dequeue_burst(tx, objs, 64, NULL)) != 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, k);
}

static double run(bool zc, bool cold, unsigned size, unsigned n, uint8_t *mem, int serial)
{
	char name[32];
	snprintf(name, sizeof(name), "crx%d", serial);
	struct rte_ring *rx = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ctx%d", serial);
	struct rte_ring *tx = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "cring%d", serial);
	int pid = rte_eth_from_rings(name, &rx, 1, &tx, 1, SOCKET_ID_ANY);
	struct droce_port_conf c;
	droce_port_conf_init(&c);
	c.port_id = (uint16_t)pid;
	c.zero_copy = zc;
	c.gratuitous_arp = false;
	c.ip[0] = 10;
	c.ip[3] = 1;
	struct droce_port *p = pid >= 0 ? droce_port_open(&c) : NULL;
	if (p == NULL) {
		fprintf(stderr, "port_txcost: cannot open a ring port\n");
		exit(1);
	}
	struct droce_link l = droce_port_link(p);
	uint8_t hdr[58];
	memset(hdr, 1, sizeof(hdr));
	struct droce_tx_frame f;
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = sizeof(hdr);
	f.nseg = 1;
	f.seg[0].addr = mem;
	f.seg[0].len = size;
	f.payload_len = size;
	f.trailer_len = 4;
	uint64_t t0 = rte_rdtsc();
	for (unsigned i = 0; i < n; i++) {
		if (cold)
			f.seg[0].addr = mem + ((size_t)i * 4096u) % (BIG - 4096u);
		while (l.ops->tx(l.priv, &f, i) != 0)
			drain(tx);
		if ((i & 31) == 31)
			drain(tx);
	}
	l.ops->tx_flush(l.priv, n);
	drain(tx);
	double per = (double)(rte_rdtsc() - t0) / n;
	droce_port_close(p);
	rte_ring_free(rx);
	rte_ring_free(tx);
	return per;
}

int main(int argc, char **argv)
{
	char *eal[] = {"port_txcost", "--no-huge", "--no-pci", "--no-shconf", "-m", "256",
		       "--log-level=*:error", NULL};
	if (rte_eal_init(7, eal) < 0)
		return 1;
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 300000;
	uint8_t *mem = malloc(BIG);
	if (mem == NULL)
		return 1;
	memset(mem, 7, BIG);
	int s = 0;
	const unsigned sizes[] = {64, 1024, 4096};
	printf("cycles per frame (tx + PMD free), TSC %.2f GHz, %u frames each\n",
	       (double)rte_get_tsc_hz() / 1e9, n);
	printf("payload   hot zc   hot copy   cold zc   cold copy\n");
	for (unsigned i = 0; i < 3; i++) {
		double hz = run(true, false, sizes[i], n, mem, s++);
		double hc = run(false, false, sizes[i], n, mem, s++);
		double cz = run(true, true, sizes[i], n, mem, s++);
		double cc = run(false, true, sizes[i], n, mem, s++);
		printf("%5u B  %7.0f  %9.0f  %8.0f  %10.0f\n", sizes[i], hz, hc, cz, cc);
	}
	free(mem);
	rte_eal_cleanup();
	return 0;
}
