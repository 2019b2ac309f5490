/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-bench-memif-tx: the port's two ways of sending a 4 KB RoCE frame on
 * memif, side by side in one process on one thread:
 *  - zero copy: the ICRC computed over the payload first (the context's
 *    droce_icrc_tx does that, with the dispatched CRC), then tx(): a header
 *    mbuf, the payload attached as an external buffer, a trailer mbuf;
 *  - fold: tx_fold(): one direct mbuf, the payload's ICRC folded into the
 *    port's copy of it (droce_crc32_copy).
 * Two memif pairs (server + client on their own socket) live in this
 * process; each round sends FRAMES frames from the client of one pair and
 * receives them on its server (memif's TX copy into the ring, its RX copy
 * out of it, the frees), the rounds alternating between the pairs. The
 * receive side is the same work for both, so differences are the sender's.
 * Prints per side the median and the best TSC cycles per frame.
 *
 *   droce-bench-memif-tx [ROUNDS [MODE_A DEVARGS_A MODE_B DEVARGS_B]]
 *
 * MODE is zc or fold, DEVARGS memif's (default: 15 zc bsize=8192 fold
 * bsize=8192); e.g. "21 fold bsize=8192 fold bsize=8192,rsize=8" compares
 * two ring sizes with the same TX path.
 *
 * The payload rotates through 8 MB, as droce-perf's 128 slots of 64 KB.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>

#include "net/port/port.h"
#include "wire/crc32.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

#include "links_up.h"

#define PAYLOAD_AREA (8u << 20)
#define FRAMES 20000u
#define MAX_ROUNDS 64

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static unsigned drain(struct droce_link rx, uint64_t now)
{
	struct droce_rx_frame rf[32];
	unsigned k, got = 0;
	while ((k = rx.ops->rx_burst(rx.priv, rf, 32, now)) != 0) {
		rx.ops->rx_release(rx.priv, rf, k);
		got += k;
	}
	return got;
}

/* One round on pair @p srv / @p cli; @return TSC cycles per frame. */
static double round_once(struct droce_port *srv, struct droce_port *cli, bool fold,
			 const uint8_t *mem, unsigned long *received)
{
	struct droce_link tx = droce_port_link(cli), rx = droce_port_link(srv);
	struct droce_port_info si, ci;
	droce_port_get_info(srv, &si);
	droce_port_get_info(cli, &ci);
	/* Ethernet + IPv4 + UDP to 4791 + room for BTH/RETH: the receiving
	 * port hands it up as RoCE (its bytes are not checked here). */
	uint8_t hdr[58] = {0};
	memcpy(hdr, si.mac, 6);
	memcpy(hdr + 6, ci.mac, 6);
	hdr[12] = 0x08;
	hdr[14] = 0x45;
	hdr[23] = 17;
	hdr[36] = 0x12;
	hdr[37] = 0xB7;
	struct droce_tx_frame f;
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = sizeof(hdr);
	f.nseg = 1;
	f.seg[0].len = 4096;
	f.payload_len = 4096;
	f.trailer_len = DROCE_ICRC_LEN;
	const uint32_t hdr_crc = 0x12345678; /* the headers' part: the same in both */
	uint64_t t0 = rte_rdtsc();
	for (unsigned i = 0; i < FRAMES; i++) {
		f.seg[0].addr = mem + ((size_t)i * 4096u) % PAYLOAD_AREA;
		for (;;) {
			int rc;
			if (fold) {
				rc = tx.ops->tx_fold(tx.priv, &f, hdr_crc, i);
			} else {
				droce_icrc_store(f.trailer, droce_crc32(hdr_crc, f.seg[0].addr, 4096));
				rc = tx.ops->tx(tx.priv, &f, i);
			}
			if (rc == 0)
				break;
			*received += drain(rx, i);
		}
		if ((i & 31) == 31) {
			tx.ops->tx_flush(tx.priv, i);
			*received += drain(rx, i);
		}
	}
	tx.ops->tx_flush(tx.priv, FRAMES);
	*received += drain(rx, FRAMES);
	return (double)(rte_rdtsc() - t0) / FRAMES;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	const char *mode_s[2] = {"zc", "fold"}, *dev[2] = {"bsize=8192", "bsize=8192"};
	if (argc == 6) {
		mode_s[0] = argv[2];
		dev[0] = argv[3];
		mode_s[1] = argv[4];
		dev[1] = argv[5];
	}
	bool fold[2];
	int bad = rounds < 1 || rounds > MAX_ROUNDS || (argc != 6 && argc > 2);
	for (int k = 0; k < 2; k++) {
		fold[k] = strcmp(mode_s[k], "fold") == 0;
		bad |= !fold[k] && strcmp(mode_s[k], "zc") != 0;
	}
	if (bad) {
		fprintf(stderr, "usage: %s [ROUNDS 1..%d [zc|fold DEVARGS zc|fold DEVARGS]]\n", argv[0],
			MAX_ROUNDS);
		return 2;
	}
	char vdev[4][256], sock[2][64];
	for (int k = 0; k < 2; k++) {
		snprintf(sock[k], sizeof(sock[k]), "/tmp/droce-bench-memif-%d-%d.sock", (int)getpid(), k);
		snprintf(vdev[2 * k], sizeof(vdev[0]), "--vdev=net_memif%d,role=server,socket=%s,%s",
			 2 * k, sock[k], dev[k]);
		snprintf(vdev[2 * k + 1], sizeof(vdev[0]), "--vdev=net_memif%d,role=client,socket=%s,%s",
			 2 * k + 1, sock[k], dev[k]);
	}
	char *eal[] = {argv[0], "--no-huge", "--no-pci", "--no-shconf", "-m", "768",
		       "--log-level=*:error", vdev[0], vdev[1], vdev[2], vdev[3], NULL};
	if (rte_eal_init(11, eal) < 0)
		return 1;
	/* ports 0/1: side A's pair, 2/3: side B's; a zero-copy client is
	 * forced (memif defaults to copy) */
	struct droce_port *pp[4];
	for (int i = 0; i < 4; i++) {
		struct droce_port_conf c;
		droce_port_conf_init(&c);
		c.port_id = (uint16_t)i;
		c.gratuitous_arp = false;
		c.promiscuous = true;
		c.ip[0] = 10;
		c.ip[3] = (uint8_t)(1 + i);
		c.force_zero_copy = (i & 1) && !fold[i / 2];
		pp[i] = droce_port_open(&c);
		if (pp[i] == NULL) {
			fprintf(stderr, "memif port %d: cannot open\n", i);
			return 1;
		}
	}
	if (!bench_links_up(4)) {
		fprintf(stderr, "memif links did not come up\n");
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		struct droce_link l = droce_port_link(pp[2 * k + 1]);
		if ((l.ops->tx_fold != NULL) != fold[k]) {
			fprintf(stderr, "side %c: the client's TX mode is not %s\n", 'A' + k, mode_s[k]);
			return 1;
		}
	}
	uint8_t *mem = malloc(PAYLOAD_AREA);
	if (mem == NULL)
		return 1;
	memset(mem, 7, PAYLOAD_AREA);
	static double res[2][MAX_ROUNDS];
	unsigned long got[2] = {0, 0};
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < 2; m++)
			res[m][r] = round_once(pp[2 * m], pp[2 * m + 1], fold[m], mem, &got[m]);
	double med[2], best[2];
	printf("4 KB frames over memif, %d alternated rounds of %u, TSC %.2f GHz, CRC %s\n", rounds,
	       FRAMES, (double)rte_get_tsc_hz() / 1e9, droce_crc32_name(droce_crc32_select()));
	for (int m = 0; m < 2; m++) {
		qsort(res[m], (size_t)rounds, sizeof(double), cmp_double);
		med[m] = res[m][rounds / 2];
		best[m] = res[m][0];
		printf("%c: %-4s %-24s median %6.0f best %6.0f cycles/frame; %lu of %lu received\n",
		       'A' + m, mode_s[m], dev[m], med[m], best[m], got[m],
		       (unsigned long)rounds * FRAMES);
	}
	printf("A / B cycles: median %.2fx best %.2fx\n", med[0] / med[1], best[0] / best[1]);
	int lost = got[0] != (unsigned long)rounds * FRAMES || got[1] != (unsigned long)rounds * FRAMES;
	for (int k = 0; k < 2; k++)
		unlink(sock[k]);
	fflush(stdout);
	/* No port close or EAL cleanup: memif's disconnect handling on the
	 * interrupt thread races them at exit (docs/usage.md, quirks). */
	_exit(lost ? 1 : 0);
}
