/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-bench-memif-guard: what the memif burst guard (port_guard.c) adds
 * to a burst. One memif pair in this process (server port 0, client port
 * 1); each round sends a burst of BURST 64 B frames from the client and
 * receives it on the server, the rounds alternating between the plain
 * rte_eth_tx_burst / rte_eth_rx_burst and the guarded calls, so both see
 * the same ring states. Every burst is behind its own non-inlined
 * function: under callgrind (bench/memif/guard_instr.sh) each function's
 * inclusive instructions over its ROUNDS calls are the figure; natively
 * the median TSC cycles per burst of each are printed (noisy here).
 *
 *   droce-bench-memif-guard [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "net/port/port.h"
#include "net/port/port_guard.h"

#include "links_up.h"

#define BURST 32
#define FRAME 64

static __attribute__((noinline)) int tx_plain(struct rte_mbuf **m, uint16_t n)
{
	return rte_eth_tx_burst(1, 0, m, n);
}

static __attribute__((noinline)) int tx_guarded(struct rte_mbuf **m, uint16_t n)
{
	return droce_port_guard_tx(1, 0, m, n);
}

static __attribute__((noinline)) int rx_plain(struct rte_mbuf **m, uint16_t n)
{
	return rte_eth_rx_burst(0, 0, m, n);
}

static __attribute__((noinline)) int rx_guarded(struct rte_mbuf **m, uint16_t n)
{
	return droce_port_guard_rx(0, 0, m, n);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One round: a burst out and back in; the cycles of each into @p c. */
static int round_trip(struct rte_mempool *mp, int guarded, uint64_t c[2])
{
	struct rte_mbuf *m[BURST], *r[BURST];
	if (rte_pktmbuf_alloc_bulk(mp, m, BURST) != 0)
		return -1;
	for (int i = 0; i < BURST; i++)
		memset(rte_pktmbuf_append(m[i], FRAME), 0x5a, FRAME);
	uint64_t t0 = rte_rdtsc();
	int sent = guarded ? tx_guarded(m, BURST) : tx_plain(m, BURST);
	uint64_t t1 = rte_rdtsc();
	int got = guarded ? rx_guarded(r, BURST) : rx_plain(r, BURST);
	uint64_t t2 = rte_rdtsc();
	c[0] = t1 - t0;
	c[1] = t2 - t1;
	for (int i = sent < 0 ? BURST : sent; i < BURST; i++)
		rte_pktmbuf_free(m[i]);
	for (int i = 0; i < got; i++)
		rte_pktmbuf_free(r[i]);
	return sent == BURST && got == BURST ? 0 : -1;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	if (rounds < 1 || rounds > 100000000 || argc > 2) {
		fprintf(stderr, "usage: %s [ROUNDS]\n", argv[0]);
		return 2;
	}
	char sock[64], vs[160], vc[160];
	snprintf(sock, sizeof(sock), "/tmp/droce-bench-guard-%d.sock", (int)getpid());
	snprintf(vs, sizeof(vs), "--vdev=net_memif0,role=server,socket=%s", sock);
	snprintf(vc, sizeof(vc), "--vdev=net_memif1,role=client,socket=%s", sock);
	char *eal[] = {argv[0], "--no-huge", "--no-pci", "--no-shconf", "-m", "512",
		       "--log-level=*:error", vs, vc, NULL};
	if (rte_eal_init(9, eal) < 0)
		return 1;
	struct droce_port *pp[2];
	for (int i = 0; i < 2; i++) {
		struct droce_port_conf c;
		droce_port_conf_init(&c);
		c.port_id = (uint16_t)i;
		c.gratuitous_arp = false;
		c.ip[0] = 10;
		c.ip[3] = (uint8_t)(1 + i);
		pp[i] = droce_port_open(&c);
		if (pp[i] == NULL) {
			fprintf(stderr, "memif port %d: cannot open\n", i);
			return 1;
		}
	}
	bool up = bench_links_up(2);
	struct rte_mempool *mp = rte_pktmbuf_pool_create("guard_bench", 4 * BURST, 0, 0,
							 RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (!up || mp == NULL) {
		fprintf(stderr, "memif links did not come up, or no mbufs\n");
		return 1;
	}
	uint64_t *cyc[4];
	for (int k = 0; k < 4; k++)
		cyc[k] = calloc((size_t)rounds, sizeof(uint64_t));
	if (!cyc[0] || !cyc[1] || !cyc[2] || !cyc[3])
		return 1;
	for (long i = 0; i < rounds; i++)
		for (int g = 0; g < 2; g++) {
			uint64_t c[2];
			if (round_trip(mp, g, c) != 0) {
				fprintf(stderr, "round %ld: a burst did not go through whole\n", i);
				return 1;
			}
			cyc[2 * g][i] = c[0];
			cyc[2 * g + 1][i] = c[1];
		}
	const char *name[4] = {"tx plain", "rx plain", "tx guarded", "rx guarded"};
	for (int k = 0; k < 4; k++) {
		qsort(cyc[k], (size_t)rounds, sizeof(uint64_t), cmp_u64);
		printf("%s: median %llu TSC cycles per burst of %d x %d B over %ld rounds\n", name[k],
		       (unsigned long long)cyc[k][rounds / 2], BURST, FRAME, rounds);
	}
	for (int i = 0; i < 2; i++)
		droce_port_close(pp[i]);
	rte_eal_cleanup();
	return 0;
}
