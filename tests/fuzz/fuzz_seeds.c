/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the parser fuzzer's seed corpus at run time:
 *   fuzz_seeds OUTDIR [PCAP...]
 * one frame made by the builder for every opcode of the table over IPv4,
 * IPv6 and RoCEv1, with and without a VLAN tag, and every frame of the
 * given pcap files (the shared interop corpus, read where it lives, never
 * copied into the project). Exit 0, or 2 with a message on an I/O error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "wire/build.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

static int write_seed(const char *dir, const char *name, const uint8_t *p, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int built_seeds(const char *dir)
{
	static const char *const l3name[] = { "ipv4", "ipv6", "rocev1" };
	uint8_t frame[256], payload[64];
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 37u + 11u);
	for (unsigned op = 0; op < 256; op++) {
		const struct droce_opcode_info *oi = droce_opcode_info((uint8_t)op);
		if (!oi)
			continue;
		for (unsigned l3 = 0; l3 < 3; l3++) {
			for (unsigned vlan = 0; vlan < 2; vlan++) {
				struct droce_hdrs h;
				memset(&h, 0, sizeof(h));
				for (int k = 0; k < 6; k++) {
					h.net.dst_mac[k] = (uint8_t)(0x02 + k);
					h.net.src_mac[k] = (uint8_t)(0x12 + k);
				}
				h.net.has_vlan = vlan;
				h.net.vlan_tci = 0x2064;
				h.net.ip_version = l3 == 0 ? 4 : 6;
				h.net.rocev1 = l3 == 2;
				for (int k = 0; k < 16; k++) {
					h.net.src_ip[k] = (uint8_t)(10 + k);
					h.net.dst_ip[k] = (uint8_t)(20 + k);
				}
				h.net.dscp = 26;
				h.net.ecn = 2;
				h.net.ttl = 64;
				h.net.flow_label = 0x12345;
				h.net.sport = (uint16_t)(0xC000 + op);
				h.bth.opcode = (uint8_t)op;
				h.bth.pkey = 0xFFFF;
				h.bth.dqpn = 0x11 + op;
				h.bth.ack_req = op & 1;
				h.bth.psn = 0xFFFFF0 + op % 16;
				h.ext.reth.va = 0x7F0000001000ull;
				h.ext.reth.rkey = 0x1234;
				h.ext.reth.dma_len = 4096;
				h.ext.atomic.va = 0x7F0000002000ull;
				h.ext.atomic.rkey = 0x4321;
				h.ext.atomic.swap_add = 1;
				h.ext.atomic.compare = 2;
				h.ext.aeth.syndrome = (uint8_t)(op * 0x11); /* ACK, RNR, NAK kinds */
				h.ext.aeth.msn = 7;
				h.ext.atomic_ack = 3;
				h.ext.imm = 0xDEADBEEF;
				h.ext.ieth_rkey = 0x5678;
				h.ext.deth.qkey = 0x80010000;
				h.ext.deth.sqpn = 1;
				if (oi->flags & DROCE_OPF_PAYLOAD)
					h.payload_len = (op + l3 * 3 + vlan) % 9 * 7;
				size_t len = droce_build_frame(frame, sizeof(frame), &h, payload);
				if (len == 0) {
					fprintf(stderr, "fuzz_seeds: cannot build %s\n", oi->name);
					return -1;
				}
				char name[96];
				snprintf(name, sizeof(name), "built-%02x-%s-%s", op, l3name[l3],
					 vlan ? "vlan" : "untagged");
				if (write_seed(dir, name, frame, len))
					return -1;
				n++;
			}
		}
	}
	printf("fuzz_seeds: %u built frames\n", n);
	return 0;
}

static int pcap_seeds(const char *dir, const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *ph;
	const u_char *data;
	unsigned n = 0;

	if (!pc) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, err);
		return -1;
	}
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	while (pcap_next_ex(pc, &ph, &data) == 1) {
		char name[512];
		snprintf(name, sizeof(name), "pcap-%s-%u", base, ++n);
		if (write_seed(dir, name, data, ph->caplen)) {
			pcap_close(pc);
			return -1;
		}
	}
	pcap_close(pc);
	printf("fuzz_seeds: %u frames from %s\n", n, base);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fuzz_seeds OUTDIR [PCAP...]\n");
		return 2;
	}
	if (built_seeds(argv[1]))
		return 2;
	for (int i = 2; i < argc; i++)
		if (pcap_seeds(argv[1], argv[i]))
			return 2;
	return 0;
}
