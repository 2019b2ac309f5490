/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC throughput: droce's ISA-L path (droce_icrc_begin: masked header copy
 * + crc32_gzip_refl chained over the rest) against zlib's crc32 over the
 * same masked bytes, on the same packets, same machine, same run.
 *
 *   droce-bench-icrc [-t SECONDS_PER_CASE] [-n PACKETS]
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
#include "wire/hdr.h"
#include "wire/icrc.h"
#include "wire/opcode.h"

#define L3_OFF 14u
#define PREFIX (20u + 8u + 12u) /* IPv4 + UDP + BTH: the masked part */

static const unsigned sizes[] = { 64, 128, 256, 512, 1024, 2048, 4096 };

/* The same computation as droce_icrc_begin with zlib doing the CRC. */
static uint32_t zlib_icrc(const uint8_t *ip, size_t covered)
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
	uLong crc = crc32(0L, m, sizeof(m));
	return (uint32_t)crc32(crc, ip + PREFIX, (uInt)(covered - PREFIX));
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
static struct result run(int use_zlib, uint8_t **pkts, unsigned npkts, unsigned size,
			 double secs, uint32_t *sink)
{
	size_t covered = size - DROCE_ICRC_LEN;
	uint64_t count = 0;
	uint32_t acc = 0;
	double t0 = now_s(), t;

	do {
		for (unsigned rep = 0; rep < 256; rep++) {
			const uint8_t *ip = pkts[rep % npkts] + L3_OFF;
			acc += use_zlib ? zlib_icrc(ip, covered)
					: droce_icrc_begin(ip, DROCE_L3_IPV4, covered);
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
	unsigned npkts = 64;
	int c;

	while ((c = getopt(argc, argv, "t:n:h")) != -1) {
		switch (c) {
		case 't':
			secs = atof(optarg);
			break;
		case 'n':
			npkts = (unsigned)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS_PER_CASE] [-n PACKETS]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (secs <= 0 || npkts == 0 || npkts > 4096) {
		fprintf(stderr, "%s: -t must be > 0, -n in 1..4096\n", argv[0]);
		return 2;
	}

	printf("# droce-bench-icrc: ICRC of IPv4 RoCEv2 packets, mask copy + CRC-32,\n"
	       "# ISA-L crc32_gzip_refl (droce_icrc_begin) vs zlib %s crc32, %.2f s per case, "
	       "%u packets in rotation\n", zlibVersion(), secs, npkts);
	print_cpu();
	printf("# size = IPv4 total length in bytes; GB/s = size x packets/s\n");
	printf("%6s %10s %10s %9s %10s %10s %9s %8s\n", "size", "isal_ns", "isal_Mpps",
	       "isal_GB/s", "zlib_ns", "zlib_Mpps", "zlib_GB/s", "speedup");

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
			if (droce_icrc_begin(ip, DROCE_L3_IPV4, size - 4u) != wire ||
			    zlib_icrc(ip, size - 4u) != wire) {
				fprintf(stderr, "ICRC mismatch at size %u\n", size);
				return 1;
			}
		}
		struct result is = run(0, pkts, npkts, size, secs, &sink);
		struct result zl = run(1, pkts, npkts, size, secs, &sink);
		printf("%6u %10.1f %10.2f %9.2f %10.1f %10.2f %9.2f %7.2fx\n", size, is.ns, is.mpps,
		       is.gbps, zl.ns, zl.mpps, zl.gbps, zl.ns / is.ns);
		for (unsigned i = 0; i < npkts; i++)
			free(pkts[i]);
		free(payload);
	}
	free(pkts);
	printf("# checksum of all results (keeps the work alive): %08x\n", sink);
	return 0;
}
