/* SPDX-License-Identifier: BSD-3-Clause */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/hdr.h"

/* Link-layer header types (https://www.tcpdump.org/linktypes.html); older
 * libpcap headers may lack the newer ones. */
#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

#define SLL_HDR_LEN 16u  /* pkttype, hatype, halen, addr[8], protocol */
#define SLL_PROTO_OFF 14u
#define SLL_HALEN_OFF 4u
#define SLL_ADDR_OFF 6u
#define SLL2_HDR_LEN 20u /* protocol, resv, ifindex, hatype, pkttype, halen, addr[8] */
#define SLL2_PROTO_OFF 0u
#define SLL2_HALEN_OFF 11u
#define SLL2_ADDR_OFF 12u
#define ETH_HDR_LEN 14u

static int supported(int dlt)
{
	return dlt == DLT_EN10MB || dlt == DLT_LINUX_SLL || dlt == DLT_LINUX_SLL2 ||
	       dlt == DLT_RAW || dlt == DLT_IPV4 || dlt == DLT_IPV6;
}

int droce_dump_capture_open(struct droce_dump_capture *c, const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE];

	memset(c, 0, sizeof(*c));
	errbuf[0] = '\0';
	/* Nanosecond timestamps whatever the file holds: pcapng and
	 * nanosecond pcap keep their precision, microsecond files are scaled. */
	c->pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO,
						       errbuf);
	if (!c->pc) {
		snprintf(c->err, sizeof(c->err), "%s", errbuf);
		return -1;
	}
	c->dlt = pcap_datalink(c->pc);
	if (!supported(c->dlt)) {
		const char *name = pcap_datalink_val_to_name(c->dlt);
		snprintf(c->err, sizeof(c->err),
			 "unsupported link type %d (%s): droce-dump reads Ethernet, "
			 "Linux SLL/SLL2 and raw IP captures",
			 c->dlt, name ? name : "unknown");
		pcap_close(c->pc);
		c->pc = NULL;
		return -1;
	}
	return 0;
}

/* Make room for an Ethernet header plus @p body bytes. */
static int reserve(struct droce_dump_capture *c, size_t body)
{
	size_t need = ETH_HDR_LEN + body;
	if (need <= c->buf_cap)
		return 0;
	uint8_t *b = realloc(c->buf, need);
	if (!b) {
		snprintf(c->err, sizeof(c->err), "out of memory for a %zu-byte frame", need);
		return -1;
	}
	c->buf = b;
	c->buf_cap = need;
	return 0;
}

/*
 * Rebuild an Ethernet frame: zero destination MAC, the link-layer source
 * address when it is a 6-byte MAC, the given ethertype, then the body.
 * Cooked captures drop the Ethernet header; the protocol field is the
 * ethertype, so the parser sees the same bytes it would on the wire. A
 * header too short to hold the protocol yields an empty frame, which the
 * parser rejects as truncated.
 */
static int synthesise(struct droce_dump_capture *c, struct droce_dump_raw *out,
		      const uint8_t *data, size_t caplen, size_t hdr_len,
		      uint16_t ethertype, const uint8_t *src_mac)
{
	if (caplen < hdr_len) {
		out->frame = data;
		out->len = 0;
		return 1;
	}
	size_t body = caplen - hdr_len;
	if (reserve(c, body) < 0)
		return -1;
	memset(c->buf, 0, 6);
	if (src_mac)
		memcpy(c->buf + 6, src_mac, 6);
	else
		memset(c->buf + 6, 0, 6);
	droce_put_be16(c->buf + 12, ethertype);
	if (body)
		memcpy(c->buf + ETH_HDR_LEN, data + hdr_len, body);
	out->frame = c->buf;
	out->len = ETH_HDR_LEN + body;
	return 1;
}

static uint16_t raw_ethertype(const uint8_t *data, size_t caplen)
{
	if (caplen < 1)
		return 0;
	switch (data[0] >> 4) {
	case 4: return DROCE_ETHERTYPE_IPV4;
	case 6: return DROCE_ETHERTYPE_IPV6;
	default: return 0; /* not IP: the parser classifies it NOT_ROCE */
	}
}

int droce_dump_capture_next(struct droce_dump_capture *c, struct droce_dump_raw *out)
{
	struct pcap_pkthdr *h;
	const u_char *data;

	int rc = pcap_next_ex(c->pc, &h, &data);
	if (rc == PCAP_ERROR_BREAK)
		return 0;
	if (rc != 1) {
		snprintf(c->err, sizeof(c->err), "%s", pcap_geterr(c->pc));
		return -1;
	}
	out->wire_len = h->len;
	/* With PCAP_TSTAMP_PRECISION_NANO, tv_usec holds nanoseconds. */
	out->ts_ns = (int64_t)h->ts.tv_sec * 1000000000 + (int64_t)h->ts.tv_usec;

	size_t caplen = h->caplen;
	const uint8_t *d = data;
	if (c->dlt == DLT_EN10MB) {
		out->frame = d;
		out->len = caplen;
		return 1;
	}
	if (c->dlt == DLT_LINUX_SLL) {
		if (caplen < SLL_HDR_LEN)
			return synthesise(c, out, d, caplen, SLL_HDR_LEN, 0, NULL);
		uint16_t halen = droce_get_be16(d + SLL_HALEN_OFF);
		return synthesise(c, out, d, caplen, SLL_HDR_LEN,
				  droce_get_be16(d + SLL_PROTO_OFF),
				  halen == 6 ? d + SLL_ADDR_OFF : NULL);
	}
	if (c->dlt == DLT_LINUX_SLL2) {
		if (caplen < SLL2_HDR_LEN)
			return synthesise(c, out, d, caplen, SLL2_HDR_LEN, 0, NULL);
		return synthesise(c, out, d, caplen, SLL2_HDR_LEN,
				  droce_get_be16(d + SLL2_PROTO_OFF),
				  d[SLL2_HALEN_OFF] == 6 ? d + SLL2_ADDR_OFF : NULL);
	}
	if (c->dlt == DLT_IPV4)
		return synthesise(c, out, d, caplen, 0, DROCE_ETHERTYPE_IPV4, NULL);
	if (c->dlt == DLT_IPV6)
		return synthesise(c, out, d, caplen, 0, DROCE_ETHERTYPE_IPV6, NULL);
	/* DLT_RAW: the IP version nibble says which. */
	return synthesise(c, out, d, caplen, 0, raw_ethertype(d, caplen), NULL);
}

void droce_dump_capture_close(struct droce_dump_capture *c)
{
	if (c->pc)
		pcap_close(c->pc);
	free(c->buf);
	c->pc = NULL;
	c->buf = NULL;
	c->buf_cap = 0;
}
