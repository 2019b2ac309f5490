/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Frame capture to a pcap file. DPDK-free: it takes bytes
 * and a timestamp, so the port (stack/net/port/port.c), an in-memory link or a
 * test can all mirror frames into it.
 *
 * The file is classic pcap with nanosecond timestamps (magic 0xa1b23c4d,
 * written by libpcap's pcap_open_dead_with_tstamp_precision + pcap_dump_open),
 * link type Ethernet. Wireshark and tshark read it and decode RoCEv2 on UDP
 * 4791. Classic pcap carries no direction: RX and TX frames are interleaved
 * in the order they were written (the counters below keep them apart).
 *
 * Timestamps: droce never reads a clock (principle 2, docs/architecture.md); the caller
 * passes @p now as it runs (the poll loop's time) and the writer adds
 * droce_capture_conf.ts_offset_ns, so an application that knows
 * wall-clock minus loop-clock gets real dates in the file.
 *
 * A capture is driven by one thread (the context's poll thread).
 */
#ifndef DROCE_NET_DIAG_CAPTURE_H
#define DROCE_NET_DIAG_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <droce/link.h>

struct droce_capture;

/** Capture settings. */
struct droce_capture_conf {
	const char *path;        /**< file to create (truncated if it exists) */
	uint64_t max_bytes;      /**< file size limit incl. headers; 0 = no limit */
	uint32_t snaplen;        /**< bytes kept per frame; 0 = 65535 */
	int64_t ts_offset_ns;    /**< added to every @p now before it is written */
};

/** Counters: what was written and what the size limit turned away. */
struct droce_capture_stats {
	uint64_t rx_frames;      /**< RX frames written */
	uint64_t tx_frames;      /**< TX frames written */
	uint64_t bytes;          /**< file bytes written (record headers included) */
	uint64_t dropped_limit;  /**< frames not written: max_bytes reached */
	uint64_t truncated;      /**< frames cut to snaplen */
};

/** Direction of a mirrored frame (counted; classic pcap does not record it). */
enum droce_capture_dir { DROCE_CAPTURE_RX, DROCE_CAPTURE_TX };

/**
 * Create a capture file and write its pcap header.
 * @return the capture, or NULL with errno: EINVAL (no conf or path),
 *         ENOMEM, or the errno of the failed open (EACCES, ENOENT, ...;
 *         EIO when libpcap gives none).
 */
struct droce_capture *droce_capture_open(const struct droce_capture_conf *conf);

/**
 * Append one contiguous frame.
 * @return 0; -ENOSPC when the size limit turned it away (counted);
 *         -EINVAL on a NULL capture or frame.
 */
int droce_capture_write(struct droce_capture *cap, enum droce_capture_dir dir,
			const uint8_t *frame, size_t len, uint64_t now);

/**
 * Append one TX frame given as header, payload segments and trailer (the
 * zero-copy description of include/droce/link.h); it is gathered into the
 * capture's own buffer first, the payload memory is only read.
 * @return as droce_capture_write().
 */
int droce_capture_write_tx(struct droce_capture *cap, const struct droce_tx_frame *f,
			   uint64_t now);

/** Push buffered records to the file. @return 0, -EINVAL, or -EIO. */
int droce_capture_flush(struct droce_capture *cap);

/** Copy the counters. @return 0 or -EINVAL. */
int droce_capture_get_stats(const struct droce_capture *cap, struct droce_capture_stats *out);

/** Flush and close the file, free the capture. NULL is a no-op. @return 0 or -EIO. */
int droce_capture_close(struct droce_capture *cap);

#endif
