/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC throughput, the same computation (masked header copy, then a CRC-32
 * chained over the rest) with four CRCs, on the same packets, same machine,
 * same run, interleaved (-r rounds, best round kept: the machine is shared):
 *  - vpclmul: droce's own VPCLMULQDQ/AVX2 folding (stack/wire/crc32_vpclmul.c)
 *  - vpclmul512: the same folding on AVX-512 registers, where the CPU has them
 *  - isal: ISA-L's crc32_gzip_refl as dispatched on this CPU
 *  - by8: ISA-L's crc32_gzip_refl_by8_02, the 128-bit PCLMULQDQ path it
 *    dispatches to on a CPU without AVX-512 (some AMD EPYC)
 *  - zlib: zlib's crc32
 *
 *   droce-bench-icrc [-t SECONDS_PER_CASE] [-n PACKETS] [-r ROUNDS]
 *
 * Packets are IPv4 RoCEv2 RC SEND_ONLY frames; "size" is the IPv4 total
 * length (IP header through ICRC: what the ICRC is computed over, plus the
 * ICRC itself), 64 B to 4 KB. Both paths are checked against the ICRC the
 * builder wrote before anything is timed. GB/s counts size bytes per packet.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "wire/build.h"
#include "wire/crc32.h"
#include "wire/hdr.h"
#include "wire/icrc.h"
#include "wire/opcode.h"

#define L3_OFF 14u
#define PREFIX (20u + 8u + 12u) /* IPv4 + UDP + BTH: the masked part */

static const unsigned sizes[] = { 64, 128, 256, 512, 1024, 2048, 4096 };

/* ISA-L's 128-bit path, exported by libisal under its own name. */
extern uint32_t crc32_gzip_refl_by8_02(uint32_t crc, const unsigned char *buf, uint64_t len);

static uint32_t by8_crc(uint32_t crc, const void *p, size_t n)
{
	return crc32_gzip_refl_by8_02(crc, p, n);
}

static uint32_t zlib_crc(uint32_t crc, const void *p, size_t n)
{
	return (uint32_t)crc32(crc, p, (uInt)n);
}

enum { P_VPCLMUL, P_V512, P_ISAL, P_BY8, P_ZLIB, P__COUNT };
static const char *const pname[P__COUNT] = { "vpclmul", "vpclmul512", "isal", "by8", "zlib" };
static droce_crc32_fn *const pfn[P__COUNT] = { droce_crc32_vpclmul, droce_crc32_vpclmul512,
					       droce_crc32_isal, by8_crc, zlib_crc };

/* Is path @p k runnable here (and not switched off for a comparison)? */
static bool runs(int k)
{
	if (k == P_VPCLMUL)
		return droce_crc32_have_vpclmul() && !getenv("DROCE_BENCH_NO_VPCLMUL");
	if (k == P_V512)
		return droce_crc32_have_vpclmul512() && !getenv("DROCE_BENCH_NO_VPCLMUL");
	return true;
}

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : 0;
}

/* The same computation as droce_icrc_begin with @p fn doing the CRC. */
static uint32_t fn_icrc(droce_crc32_fn *fn, const uint8_t *ip, size_t covered)
{
	uint8_t m[8 + PREFIX];
	memset(m, 0xFF, 8);
	memcpy(m + 8, ip, PREFIX);
	uint8_t *p = m + 8;
	p[1] = 0xFF;
	p[8] = 0xFF;
	p[10] = p[11] = 0xFF;
	p[20 + 6] = p[20 + 7] = 0xFF;
	p[28 + 4] = 0xFF;
	return fn(fn(0, m, sizeof(m)), ip + PREFIX, covered - PREFIX);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct result {
	double ns, mpps, gbps;
};

/* Run one path over the ring of packets for about @p secs. */
static struct result run(droce_crc32_fn *fn, uint8_t **pkts, unsigned npkts, unsigned size,
			 double secs, uint32_t *sink)
{
	size_t covered = size - DROCE_ICRC_LEN;
	uint64_t count = 0;
	uint32_t acc = 0;
	double t0 = now_s(), t;

	do {
		for (unsigned rep = 0; rep < 256; rep++) {
			const uint8_t *ip = pkts[rep % npkts] + L3_OFF;
			acc += fn_icrc(fn, ip, covered);
		}
		count += 256;
		t = now_s() - t0;
	} while (t < secs);
	*sink += acc;
	struct result r;
	r.ns = t * 1e9 / (double)count;
	r.mpps = (double)count / t / 1e6;
	r.gbps = (double)count * size / t / 1e9;
	return r;
}

static void print_cpu(void)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "model name", 10) == 0) {
				printf("# cpu:%s", strchr(line, ':') + 1);
				break;
			}
		fclose(f);
	}
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			printf("# load average at start: %s", line);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	double secs = 0.2;
	unsigned npkts = 64, rounds = 3;
	int c;

	while ((c = getopt(argc, argv, "t:n:r:h")) != -1) {
		switch (c) {
		case 't':
			secs = atof(optarg);
			break;
		case 'n':
			npkts = (unsigned)atoi(optarg);
			break;
		case 'r':
			rounds = (unsigned)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS_PER_CASE] [-n PACKETS] [-r ROUNDS]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (secs <= 0 || npkts == 0 || npkts > 4096 || rounds == 0 || rounds > 100) {
		fprintf(stderr, "%s: -t must be > 0, -n in 1..4096, -r in 1..100\n", argv[0]);
		return 2;
	}

	printf("# droce-bench-icrc: ICRC of IPv4 RoCEv2 packets, mask copy + CRC-32; vpclmul =\n"
	       "# droce_crc32_vpclmul (%s on this CPU), vpclmul512 = its AVX-512 form (%s),\n"
	       "# isal = ISA-L crc32_gzip_refl as\n"
	       "# dispatched here, by8 = ISA-L crc32_gzip_refl_by8_02, zlib %s crc32;\n"
	       "# %.2f s per case, %u packets in rotation, best of %u interleaved rounds\n",
	       droce_crc32_have_vpclmul() ? "available" : "NOT available: falls back to ISA-L",
	       droce_crc32_have_vpclmul512() ? "available" : "not available here",
	       zlibVersion(), secs, npkts, rounds);
	print_cpu();
	printf("# size = IPv4 total length in bytes; GB/s = size x packets/s\n");
	printf("%6s %9s %10s %9s %9s %9s %10s %10s %10s\n", "size", "vpclmul", "vpclmul512", "isal",
	       "by8", "zlib", "256/isal", "256/by8", "512/isal");
	uint32_t sink = 0;
	uint8_t **pkts = calloc(npkts, sizeof(*pkts));
	if (!pkts)
		return 1;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned size = sizes[s];
		struct droce_hdrs h;
		memset(&h, 0, sizeof(h));
		h.net.ip_version = 4;
		h.net.ttl = 64;
		h.bth.opcode = DROCE_OP_RC_SEND_ONLY;
		h.bth.pkey = 0xFFFF;
		h.payload_len = size - 20u - 8u - 12u - DROCE_ICRC_LEN;
		size_t flen = droce_frame_len(&h);
		uint8_t *payload = malloc(h.payload_len);
		if (!payload)
			return 1;
		for (unsigned i = 0; i < npkts; i++) {
			for (uint32_t k = 0; k < h.payload_len; k++)
				payload[k] = (uint8_t)(k * 131u + i * 7u);
			h.bth.psn = i;
			h.net.sport = (uint16_t)(0xC000 + i);
			pkts[i] = malloc(flen);
			if (!pkts[i] || droce_build_frame(pkts[i], flen, &h, payload) != flen) {
				fprintf(stderr, "cannot build a %u-byte packet\n", size);
				return 1;
			}
			uint32_t wire = droce_icrc_load(pkts[i] + flen - DROCE_ICRC_LEN);
			const uint8_t *ip = pkts[i] + L3_OFF;
			if (droce_icrc_begin(ip, DROCE_L3_IPV4, size - 4u) != wire)
				return fprintf(stderr, "ICRC mismatch at size %u\n", size), 1;
			for (int k = 0; k < P__COUNT; k++)
				if (runs(k) && fn_icrc(pfn[k], ip, size - 4u) != wire)
					return fprintf(stderr, "%s: ICRC mismatch at size %u\n", pname[k], size), 1;
		}
		struct result best[P__COUNT] = { { 0, 0, 0 } };
		for (unsigned rd = 0; rd < rounds; rd++)
			for (int k = 0; k < P__COUNT; k++) {
				if (!runs(k))
					continue;
				struct result r = run(pfn[k], pkts, npkts, size, secs, &sink);
				if (r.gbps > best[k].gbps)
					best[k] = r;
			}
		printf("%6u %9.2f %10.2f %9.2f %9.2f %9.2f %9.2fx %9.2fx %9.2fx\n", size,
		       best[P_VPCLMUL].gbps, best[P_V512].gbps, best[P_ISAL].gbps, best[P_BY8].gbps,
		       best[P_ZLIB].gbps, ratio(best[P_VPCLMUL].gbps, best[P_ISAL].gbps),
		       ratio(best[P_VPCLMUL].gbps, best[P_BY8].gbps), ratio(best[P_V512].gbps, best[P_ISAL].gbps));
		for (unsigned i = 0; i < npkts; i++)
			free(pkts[i]);
		free(payload);
	}
	free(pkts);

	/* The CRC alone over one cache-hot buffer, each call chained on the
	 * last (latency as well as throughput), no header masking. */
	printf("# raw CRC-32 over one cache-hot buffer, GB/s (best of %u rounds)\n", rounds);
	printf("%6s %9s %10s %9s %9s %9s %10s %10s %10s\n", "len", "vpclmul", "vpclmul512", "isal", "by8",
	       "zlib", "256/isal", "256/by8", "512/isal");
	static const unsigned raw[] = { 48, 96, 138, 200, 256, 1024, 4096, 65536 };
	uint8_t *buf = malloc(65536);
	if (!buf)
		return 1;
	for (unsigned i = 0; i < 65536; i++)
		buf[i] = (uint8_t)(i * 7u + 1);
	for (size_t s = 0; s < sizeof(raw) / sizeof(raw[0]); s++) {
		double best[P__COUNT] = { 0 };
		for (unsigned rd = 0; rd < rounds; rd++)
			for (int k = 0; k < P__COUNT; k++) {
				if (!runs(k))
					continue;
				uint64_t n = 0;
				uint32_t acc = 0;
				double t0 = now_s(), t;
				do {
					for (int rep = 0; rep < 64; rep++)
						acc = pfn[k](acc, buf, raw[s]);
					n += 64;
					t = now_s() - t0;
				} while (t < secs);
				sink += acc;
				double g = (double)n * raw[s] / t / 1e9;
				if (g > best[k])
					best[k] = g;
			}
		printf("%6u %9.2f %10.2f %9.2f %9.2f %9.2f %9.2fx %9.2fx %9.2fx\n", raw[s], best[P_VPCLMUL],
		       best[P_V512], best[P_ISAL], best[P_BY8], best[P_ZLIB], ratio(best[P_VPCLMUL], best[P_ISAL]),
		       ratio(best[P_VPCLMUL], best[P_BY8]), ratio(best[P_V512], best[P_ISAL]));
	}
	free(buf);

	/* Receive placement: CRC then copy (two passes over the frame: what
	 * the responder does after the ICRC check) vs the fused CRC-and-copy,
	 * vs memcpy alone (the floor), 4 KB frames from a ring of WS bytes:
	 * 64 KB stays in cache, 16 MB does not. */
	if (droce_crc32_have_vpclmul() && !getenv("DROCE_BENCH_NO_VPCLMUL")) {
		printf("# CRC + copy of 4 KB frames into a 4 KB-slot MR ring, GB/s (best of %u rounds)\n",
		       rounds);
		printf("%9s %12s %12s %12s %9s\n", "ws", "crc+memcpy", "fused", "memcpy", "fused_vs");
		static const size_t ws[] = { 64u << 10, 16u << 20 };
		for (size_t w = 0; w < 2; w++) {
			uint8_t *src = aligned_alloc(4096, ws[w]), *dst = aligned_alloc(4096, ws[w]);
			if (!src || !dst)
				return 1;
			for (size_t i = 0; i < ws[w]; i++)
				src[i] = (uint8_t)(i * 13u + 3);
			memset(dst, 0, ws[w]);
			double best[3] = { 0, 0, 0 };
			for (unsigned rd = 0; rd < rounds; rd++)
				for (int k = 0; k < 3; k++) {
					uint64_t n = 0;
					uint32_t acc = 0;
					size_t off = 0;
					double t0 = now_s(), t;
					do {
						for (int rep = 0; rep < 64; rep++) {
							if (k == 0) {
								acc += droce_crc32_vpclmul(0, src + off, 4096);
								memcpy(dst + off, src + off, 4096);
							} else if (k == 1) {
								acc += droce_crc32_copy_vpclmul(0, dst + off, src + off, 4096);
							} else {
								memcpy(dst + off, src + off, 4096);
								acc += dst[off];
							}
							off = (off + 4096) % ws[w];
						}
						n += 64;
						t = now_s() - t0;
					} while (t < secs);
					sink += acc;
					double g = (double)n * 4096 / t / 1e9;
					if (g > best[k])
						best[k] = g;
				}
			printf("%8zuK %12.2f %12.2f %12.2f %8.2fx\n", ws[w] >> 10, best[0], best[1], best[2],
			       best[1] / best[0]);
			free(src);
			free(dst);
		}
	}
	printf("# checksum of all results (keeps the work alive): %08x\n", sink);
	return 0;
}
