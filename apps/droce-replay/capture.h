/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A capture read into memory: every frame of a pcap or pcapng file (libpcap
 * reads both) with its timestamp in nanoseconds. droce-replay reads whole
 * captures: they are small test fixtures, and the replay, the derivation and
 * the comparison all walk them more than once.
 */
#ifndef DROCE_REPLAY_CAPTURE_H
#define DROCE_REPLAY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

/** One captured frame. */
struct droce_rp_frame {
	unsigned num;        /**< 1-based frame number, as Wireshark counts */
	uint64_t t_ns;       /**< nanoseconds since the first frame */
	uint8_t *data;
	uint32_t len;        /**< captured length */
	uint32_t orig_len;   /**< length on the wire */
};

struct droce_rp_capture {
	struct droce_rp_frame *f;
	size_t n;
	int linktype;        /**< DLT_*; droce-replay needs DLT_EN10MB */
};

/**
 * Read every frame of @p path.
 * @return 0; -ENOENT/-EIO (libpcap cannot open or read it: the reason is in
 *         @p err), -EPROTONOSUPPORT (not Ethernet), -ENOMEM.
 */
int droce_rp_capture_load(const char *path, struct droce_rp_capture *cap,
			  char *err, size_t errlen);

/** Free what droce_rp_capture_load() allocated. */
void droce_rp_capture_free(struct droce_rp_capture *cap);

#endif
