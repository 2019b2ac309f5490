/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive-path cost per small frame, stage by stage, side by side in one
 * run (best of -r interleaved rounds: the machine is shared):
 *  - parse: droce_parse (full view, memset) vs droce_parse_rx (engine view);
 *  - icrc: droce_icrc_rx with ISA-L, with the 256-bit VPCLMULQDQ CRC, and
 *    with what the context picks on this CPU (default).
 * Frames are IPv4 RDMA WRITE_ONLY with PAYLOAD bytes (default 64).
 *
 *   droce-bench-parse [-t SECONDS_PER_CASE] [-r ROUNDS] [-p PAYLOAD]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/icrc_fast.h"
#include "wire/build.h"
#include "wire/crc32.h"
#include "wire/parse.h"

#define NPKT 64

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { C_PARSE, C_PARSE_RX, C_ICRC_ISAL, C_ICRC_VPCLMUL, C_ICRC_BEST, C__COUNT };
static const char *const cname[C__COUNT] = { "droce_parse", "droce_parse_rx", "icrc_rx isal",
					     "icrc_rx vpclmul", "icrc_rx default" };

static uint8_t *pkt[NPKT];
static size_t plen_of[NPKT];

static double run(int c, struct droce_icrc_seeds *zs, double secs, uint32_t *sink)
{
	struct droce_pkt p;
	uint64_t n = 0;
	uint32_t acc = 0;
	double t0 = now_s(), t;
	do {
		for (int rep = 0; rep < 1024; rep++) {
			unsigned i = rep % NPKT;
			switch (c) {
			case C_PARSE:
				acc += droce_parse(pkt[i], plen_of[i], &p, DROCE_PARSE_F_NO_ICRC);
				acc += p.h.bth.psn;
				break;
			case C_PARSE_RX:
				acc += droce_parse_rx(pkt[i], plen_of[i], &p);
				acc += p.h.bth.psn;
				break;
			default:
				acc += droce_icrc_rx(zs, pkt[i] + 14, DROCE_L3_IPV4, plen_of[i] - 14 - 4);
			}
		}
		n += 1024;
		t = now_s() - t0;
	} while (t < secs);
	*sink += acc;
	return t * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
	double secs = 0.2;
	unsigned rounds = 5, payload = 64;
	int c;
	while ((c = getopt(argc, argv, "t:r:p:h")) != -1) {
		switch (c) {
		case 't': secs = atof(optarg); break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 'p': payload = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS_PER_CASE] [-r ROUNDS] [-p PAYLOAD]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (secs <= 0 || rounds == 0 || rounds > 100 || payload > 4096)
		return fprintf(stderr, "%s: -t > 0, -r 1..100, -p 0..4096\n", argv[0]), 2;

	uint8_t *data = calloc(1, payload + 1);
	if (!data)
		return 1;
	for (int i = 0; i < NPKT; i++) {
		struct droce_hdrs h;
		memset(&h, 0, sizeof(h));
		h.net.ip_version = 4;
		h.net.ttl = 64;
		h.net.sport = (uint16_t)(0xC000 + i);
		h.bth.opcode = DROCE_OP_RC_RDMA_WRITE_ONLY;
		h.bth.pkey = 0xFFFF;
		h.bth.psn = (uint32_t)i;
		h.bth.dqpn = 0x11;
		h.ext.reth.va = 0x1000;
		h.ext.reth.rkey = 7;
		h.ext.reth.dma_len = payload;
		h.payload_len = payload;
		plen_of[i] = droce_frame_len(&h);
		pkt[i] = malloc(plen_of[i]);
		if (!pkt[i] || droce_build_frame(pkt[i], plen_of[i], &h, data) != plen_of[i])
			return fprintf(stderr, "cannot build a frame\n"), 1;
	}
	struct droce_icrc_seeds *isal = malloc(sizeof(*isal)), *vp = malloc(sizeof(*vp)),
				*best_zs = malloc(sizeof(*best_zs));
	if (!isal || !vp || !best_zs)
		return 1;
	setenv("DROCE_CRC", "isal", 1);
	droce_icrc_seeds_init(isal);
	setenv("DROCE_CRC", "vpclmul", 1);
	droce_icrc_seeds_init(vp);
	unsetenv("DROCE_CRC");
	droce_icrc_seeds_init(best_zs);
	bool have_vp = vp->crc == droce_crc32_vpclmul;

	printf("# droce-bench-parse: IPv4 WRITE_ONLY, %u B payload (%zu B frame), %.2f s per case, "
	       "best of %u interleaved rounds\n# load average at start: ", payload, plen_of[0], secs,
	       rounds);
	FILE *f = fopen("/proc/loadavg", "r");
	char line[128];
	if (f && fgets(line, sizeof(line), f))
		fputs(line, stdout);
	if (f)
		fclose(f);
	double best[C__COUNT];
	for (int k = 0; k < C__COUNT; k++)
		best[k] = 1e30;
	uint32_t sink = 0;
	for (unsigned r = 0; r < rounds; r++)
		for (int k = 0; k < C__COUNT; k++) {
			if (k == C_ICRC_VPCLMUL && !have_vp)
				continue;
			double ns = run(k, k == C_ICRC_ISAL ? isal : k == C_ICRC_VPCLMUL ? vp : best_zs, secs,
					&sink);
			if (ns < best[k])
				best[k] = ns;
		}
	for (int k = 0; k < C__COUNT; k++)
		if (k != C_ICRC_VPCLMUL || have_vp)
			printf("%-16s %8.1f ns/frame%s%s\n", cname[k], best[k], k == C_ICRC_BEST ? ": " : "",
			       k == C_ICRC_BEST ? droce_crc32_name(best_zs->crc) : "");
	printf("parse_rx vs parse: %.2fx faster; icrc vpclmul vs isal: %.2fx faster\n",
	       best[C_PARSE] / best[C_PARSE_RX], have_vp ? best[C_ICRC_ISAL] / best[C_ICRC_VPCLMUL] : 0);
	printf("# checksum (keeps the work alive): %08x\n", sink);
	return 0;
}
