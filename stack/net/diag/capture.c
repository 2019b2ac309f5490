/* SPDX-License-Identifier: BSD-3-Clause */
/* Frame capture to pcap with nanosecond timestamps (see capture.h). */
#include "net/diag/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

/* Classic pcap sizes: 24-byte file header, 16-byte record header. */
#define PCAP_FILE_HDR_LEN 24u
#define PCAP_REC_HDR_LEN 16u
#define DEFAULT_SNAPLEN 65535u

struct droce_capture {
	pcap_t *dead;
	pcap_dumper_t *dumper;
	uint64_t max_bytes;
	uint32_t snaplen;
	int64_t ts_offset_ns;
	struct droce_capture_stats st;
	uint8_t *gather;          /* snaplen bytes: TX frames made contiguous */
};

struct droce_capture *droce_capture_open(const struct droce_capture_conf *conf)
{
	if (conf == NULL || conf->path == NULL || conf->path[0] == '\0') {
		errno = EINVAL;
		return NULL;
	}
	struct droce_capture *cap = calloc(1, sizeof(*cap));
	if (cap == NULL)
		return NULL;
	cap->snaplen = conf->snaplen ? conf->snaplen : DEFAULT_SNAPLEN;
	cap->max_bytes = conf->max_bytes;
	cap->ts_offset_ns = conf->ts_offset_ns;
	cap->gather = malloc(cap->snaplen);
	if (cap->gather == NULL)
		goto fail_nomem;
	cap->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)cap->snaplen,
							  PCAP_TSTAMP_PRECISION_NANO);
	if (cap->dead == NULL)
		goto fail_nomem;
	errno = 0;
	cap->dumper = pcap_dump_open(cap->dead, conf->path);
	if (cap->dumper == NULL) {
		int err = errno ? errno : EIO;
		pcap_close(cap->dead);
		free(cap->gather);
		free(cap);
		errno = err;
		return NULL;
	}
	cap->st.bytes = PCAP_FILE_HDR_LEN;
	return cap;

fail_nomem:
	free(cap->gather);
	free(cap);
	errno = ENOMEM;
	return NULL;
}

/* The record that goes into the file, or -ENOSPC when the limit is hit. */
static int put_record(struct droce_capture *cap, enum droce_capture_dir dir,
		      const uint8_t *frame, size_t len, uint64_t now)
{
	uint32_t caplen = len > cap->snaplen ? cap->snaplen : (uint32_t)len;
	uint64_t rec = PCAP_REC_HDR_LEN + caplen;
	if (cap->max_bytes != 0 && cap->st.bytes + rec > cap->max_bytes) {
		cap->st.dropped_limit++;
		return -ENOSPC;
	}
	int64_t t = (int64_t)now + cap->ts_offset_ns;
	if (t < 0)
		t = 0;
	struct pcap_pkthdr ph;
	memset(&ph, 0, sizeof(ph));
	/* With nanosecond precision libpcap stores tv_usec as nanoseconds. */
	ph.ts.tv_sec = (time_t)(t / 1000000000);
	ph.ts.tv_usec = (suseconds_t)(t % 1000000000);
	ph.caplen = caplen;
	ph.len = (uint32_t)len;
	pcap_dump((u_char *)cap->dumper, &ph, frame);
	cap->st.bytes += rec;
	if (caplen < len)
		cap->st.truncated++;
	if (dir == DROCE_CAPTURE_RX)
		cap->st.rx_frames++;
	else
		cap->st.tx_frames++;
	return 0;
}

int droce_capture_write(struct droce_capture *cap, enum droce_capture_dir dir,
			const uint8_t *frame, size_t len, uint64_t now)
{
	if (cap == NULL || frame == NULL)
		return -EINVAL;
	return put_record(cap, dir, frame, len, now);
}

/* Append up to the snaplen; returns the new fill. */
static size_t gather(uint8_t *dst, size_t fill, size_t cap, const void *src, size_t len)
{
	if (fill >= cap || len == 0)
		return fill;
	size_t n = len < cap - fill ? len : cap - fill;
	memcpy(dst + fill, src, n);
	return fill + n;
}

int droce_capture_write_tx(struct droce_capture *cap, const struct droce_tx_frame *f,
			   uint64_t now)
{
	if (cap == NULL || f == NULL || f->nseg > DROCE_TX_MAX_SEG)
		return -EINVAL;
	size_t total = (size_t)f->hdr_len + f->trailer_len;
	size_t fill = gather(cap->gather, 0, cap->snaplen, f->hdr, f->hdr_len);
	for (unsigned i = 0; i < f->nseg; i++) {
		fill = gather(cap->gather, fill, cap->snaplen, f->seg[i].addr, f->seg[i].len);
		total += f->seg[i].len;
	}
	fill = gather(cap->gather, fill, cap->snaplen, f->trailer, f->trailer_len);
	/* fill == min(total, snaplen): put_record() keeps exactly that many
	 * bytes and records the original length. */
	(void)fill;
	return put_record(cap, DROCE_CAPTURE_TX, cap->gather, total, now);
}

int droce_capture_flush(struct droce_capture *cap)
{
	if (cap == NULL)
		return -EINVAL;
	return pcap_dump_flush(cap->dumper) == 0 ? 0 : -EIO;
}

int droce_capture_get_stats(const struct droce_capture *cap, struct droce_capture_stats *out)
{
	if (cap == NULL || out == NULL)
		return -EINVAL;
	*out = cap->st;
	return 0;
}

int droce_capture_close(struct droce_capture *cap)
{
	if (cap == NULL)
		return 0;
	int rc = pcap_dump_flush(cap->dumper) == 0 ? 0 : -EIO;
	pcap_dump_close(cap->dumper);
	pcap_close(cap->dead);
	free(cap->gather);
	free(cap);
	return rc;
}
