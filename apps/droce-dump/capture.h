/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capture reader: pcap or pcapng through libpcap, every supported link type
 * presented as an Ethernet frame (no FCS) so that droce_parse() sees one
 * format. Ethernet frames are passed through untouched; Linux cooked
 * captures (SLL, SLL2, as `tcpdump -i any` writes) and raw IP captures get a
 * synthetic 14-byte Ethernet header built from their protocol field in a
 * buffer the reader owns.
 */
#ifndef DROCE_DUMP_CAPTURE_H
#define DROCE_DUMP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <pcap/pcap.h>

/** One open capture file. */
struct droce_dump_capture {
	pcap_t *pc;
	int dlt;            /**< pcap_datalink() of the file */
	uint8_t *buf;       /**< synthetic Ethernet frame for non-Ethernet link types */
	size_t buf_cap;
	char err[PCAP_ERRBUF_SIZE + 64]; /**< last error, for the caller to print */
};

/** One frame as droce_parse() wants it. */
struct droce_dump_raw {
	const uint8_t *frame; /**< Ethernet frame; valid until the next call */
	size_t len;           /**< captured bytes of @c frame */
	uint32_t wire_len;    /**< original length on the wire, as the file records it */
	int64_t ts_ns;        /**< capture time, nanoseconds since the epoch */
};

/**
 * Open a pcap or pcapng file ("-" reads standard input).
 * @return 0, or -1 with the reason in @p c->err: the file cannot be opened
 *         or read, is not a capture, or has a link type droce-dump does not
 *         decode (anything but Ethernet, Linux SLL/SLL2, raw IPv4/IPv6).
 */
int droce_dump_capture_open(struct droce_dump_capture *c, const char *path);

/**
 * Read the next frame.
 * @return 1 with @p out filled, 0 at the end of the file, -1 on a read error
 *         (truncated or corrupt file; reason in @p c->err) or when out of memory.
 */
int droce_dump_capture_next(struct droce_dump_capture *c, struct droce_dump_raw *out);

/** Close the file and free the buffer. Safe on a capture that failed to open. */
void droce_dump_capture_close(struct droce_dump_capture *c);

#endif
