/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tamper_msn IN OUT [SRC_IP]: copy a capture, adding 1 to the AETH MSN of
 * its first ACKNOWLEDGE frame (from SRC_IP when given) and recomputing that
 * frame's ICRC, so the copy is a valid capture of a peer that answered
 * differently. Prints the tampered frame's number. Used by tamper.sh to
 * prove that droce-replay's comparison bites. Exit 0 done, 1 no ACK found,
 * 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "frames.h"
#include "wire/bytes.h"

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: tamper_msn IN OUT [SRC_IP]\n");
		return 2;
	}
	uint8_t want[16];
	int wantv = argc == 4 ? droce_rp_parse_ip(argv[3], want) : 0;
	if (argc == 4 && !wantv) {
		fprintf(stderr, "tamper_msn: bad address %s\n", argv[3]);
		return 2;
	}
	char eb[PCAP_ERRBUF_SIZE];
	pcap_t *in = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!in) {
		fprintf(stderr, "tamper_msn: %s\n", eb);
		return 2;
	}
	pcap_t *dead = pcap_open_dead_with_tstamp_precision(pcap_datalink(in), 65535,
							    PCAP_TSTAMP_PRECISION_NANO);
	pcap_dumper_t *out = dead ? pcap_dump_open(dead, argv[2]) : NULL;
	if (!out) {
		fprintf(stderr, "tamper_msn: cannot write %s\n", argv[2]);
		pcap_close(in);
		return 2;
	}
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned num = 0, done = 0;
	while (pcap_next_ex(in, &h, &data) == 1) {
		num++;
		uint8_t *b = malloc(h->caplen ? h->caplen : 1);
		if (!b)
			return 2;
		memcpy(b, data, h->caplen);
		struct droce_pkt p;
		if (!done && droce_parse(b, h->caplen, &p, 0) == DROCE_PARSE_OK &&
		    p.h.bth.opcode == DROCE_OP_RC_ACKNOWLEDGE &&
		    (!wantv || (p.h.net.ip_version == wantv &&
				!memcmp(p.h.net.src_ip, want, wantv == 4 ? 4 : 16)))) {
			uint8_t *aeth = b + p.bth_off + p.op->off_aeth;
			droce_put_be24(aeth + 1, (droce_get_be24(aeth + 1) + 1) & 0xFFFFFF);
			droce_rp_fix_icrc(b, h->caplen);
			done = num;
		}
		pcap_dump((u_char *)out, h, b);
		free(b);
	}
	pcap_dump_close(out);
	pcap_close(dead);
	pcap_close(in);
	if (!done) {
		fprintf(stderr, "tamper_msn: no ACKNOWLEDGE frame in %s\n", argv[1]);
		return 1;
	}
	printf("%u\n", done);
	return 0;
}
