/* SPDX-License-Identifier: BSD-3-Clause */
#include "capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

int droce_rp_capture_load(const char *path, struct droce_rp_capture *cap,
			  char *err, size_t errlen)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	memset(cap, 0, sizeof(*cap));
	/* Nanosecond precision: libpcap scales microsecond files up. */
	pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, ebuf);
	if (!p) {
		snprintf(err, errlen, "%s", ebuf);
		return -ENOENT;
	}
	cap->linktype = pcap_datalink(p);
	if (cap->linktype != DLT_EN10MB) {
		snprintf(err, errlen, "link type %d is not Ethernet", cap->linktype);
		pcap_close(p);
		return -EPROTONOSUPPORT;
	}
	size_t cap_n = 0;
	uint64_t t0 = 0;
	struct pcap_pkthdr *h;
	const u_char *data;
	int r;
	while ((r = pcap_next_ex(p, &h, &data)) == 1) {
		if (cap->n == cap_n) {
			size_t nn = cap_n ? cap_n * 2 : 64;
			struct droce_rp_frame *nf = realloc(cap->f, nn * sizeof(*nf));
			if (!nf)
				goto nomem;
			cap->f = nf;
			cap_n = nn;
		}
		struct droce_rp_frame *f = &cap->f[cap->n];
		uint64_t t = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
		if (cap->n == 0)
			t0 = t;
		f->num = (unsigned)cap->n + 1;
		f->t_ns = t >= t0 ? t - t0 : 0;
		f->len = h->caplen;
		f->orig_len = h->len;
		f->data = malloc(h->caplen ? h->caplen : 1);
		if (!f->data)
			goto nomem;
		memcpy(f->data, data, h->caplen);
		cap->n++;
	}
	if (r == -1) {
		snprintf(err, errlen, "%s", pcap_geterr(p));
		pcap_close(p);
		droce_rp_capture_free(cap);
		return -EIO;
	}
	pcap_close(p);
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	pcap_close(p);
	droce_rp_capture_free(cap);
	return -ENOMEM;
}

void droce_rp_capture_free(struct droce_rp_capture *cap)
{
	for (size_t i = 0; i < cap->n; i++)
		free(cap->f[i].data);
	free(cap->f);
	memset(cap, 0, sizeof(*cap));
}
