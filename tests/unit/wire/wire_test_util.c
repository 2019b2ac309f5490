/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_test_util.h"

#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pcap/pcap.h>

#include "wire/build.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

const char *const wt_l3_name[3] = { "IPv4", "IPv6", "RoCEv1" };

uint64_t wt_rng_next(struct wt_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint32_t wt_rng_below(struct wt_rng *r, uint32_t n)
{
	return (uint32_t)(wt_rng_next(r) % n);
}

void wt_rng_fill(struct wt_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)wt_rng_next(r);
}

uint64_t wt_seed(const char *test, uint64_t dflt)
{
	const char *e = getenv("DROCE_TEST_SEED");
	uint64_t s = e ? strtoull(e, NULL, 0) : dflt;
	printf("# %s: seed 0x%llx (set DROCE_TEST_SEED to replay)\n", test,
	       (unsigned long long)s);
	return s;
}

void wt_random_hdrs(struct wt_rng *r, struct droce_hdrs *h, uint8_t opcode,
		    enum wt_l3 l3, bool vlan, uint32_t payload_len)
{
	struct droce_net_fields *n = &h->net;
	struct droce_bth_fields *b = &h->bth;
	struct droce_ext_fields *e = &h->ext;

	memset(h, 0, sizeof(*h));
	wt_rng_fill(r, n->dst_mac, 6);
	wt_rng_fill(r, n->src_mac, 6);
	n->has_vlan = vlan;
	if (vlan)
		n->vlan_tci = (uint16_t)wt_rng_next(r);
	n->ip_version = l3 == WT_IPV4 ? 4 : 6;
	n->rocev1 = l3 == WT_ROCEV1;
	wt_rng_fill(r, n->src_ip, l3 == WT_IPV4 ? 4 : 16);
	wt_rng_fill(r, n->dst_ip, l3 == WT_IPV4 ? 4 : 16);
	n->dscp = (uint8_t)wt_rng_below(r, 64);
	n->ecn = (uint8_t)wt_rng_below(r, 4);
	n->ttl = (uint8_t)wt_rng_next(r);
	if (l3 == WT_IPV4)
		n->ip_id = (uint16_t)wt_rng_next(r);
	else
		n->flow_label = (uint32_t)wt_rng_next(r) & 0xFFFFFu;
	if (l3 != WT_ROCEV1) {
		n->sport = (uint16_t)wt_rng_next(r);
		n->dport = DROCE_UDP_PORT;
	}

	uint64_t bits = wt_rng_next(r);
	b->opcode = opcode;
	b->se = bits & 1;
	b->migreq = bits & 2;
	b->fecn = bits & 4;
	b->becn = bits & 8;
	b->ack_req = bits & 16;
	b->pad = droce_pad_count(payload_len);
	b->tver = 0;
	b->pkey = (uint16_t)wt_rng_next(r);
	b->dqpn = (uint32_t)wt_rng_next(r) & DROCE_QPN_MASK;
	b->psn = (uint32_t)wt_rng_next(r) & DROCE_PSN_MASK;

	e->reth.va = wt_rng_next(r);
	e->reth.rkey = (uint32_t)wt_rng_next(r);
	e->reth.dma_len = (uint32_t)wt_rng_next(r);
	e->atomic.va = wt_rng_next(r);
	e->atomic.rkey = (uint32_t)wt_rng_next(r);
	e->atomic.swap_add = wt_rng_next(r);
	e->atomic.compare = wt_rng_next(r);
	e->aeth.syndrome = (uint8_t)wt_rng_next(r);
	e->aeth.msn = (uint32_t)wt_rng_next(r) & DROCE_MSN_MASK;
	e->atomic_ack = wt_rng_next(r);
	e->imm = (uint32_t)wt_rng_next(r);
	e->ieth_rkey = (uint32_t)wt_rng_next(r);
	e->deth.qkey = (uint32_t)wt_rng_next(r);
	e->deth.sqpn = (uint32_t)wt_rng_next(r) & DROCE_QPN_MASK;
	h->payload_len = payload_len;
}

uint8_t *wt_build(const struct droce_hdrs *h, const void *payload, size_t *len)
{
	size_t flen = droce_frame_len(h);
	*len = flen;
	if (flen == 0)
		return NULL;
	uint8_t *buf = malloc(flen);
	if (!buf)
		return NULL;
	if (droce_build_frame(buf, flen, h, payload) != flen) {
		free(buf);
		return NULL;
	}
	return buf;
}

const char *wt_corpus_dir(void)
{
	static char path[4096];
	const char *shared = getenv("DROCE_SHARED_DIR");
	struct stat st;

	if (!shared)
		shared = "../shared";
	snprintf(path, sizeof(path), "%s/pcap-corpus", shared);
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		printf("# SKIP: shared corpus %s is absent\n", path);
		return NULL;
	}
	return path;
}

static int read_pcap(const char *path, wt_frame_fn fn, void *arg)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *ph;
	const u_char *data;
	unsigned idx = 0;
	int rc;

	if (!pc) {
		printf("# cannot open %s: %s\n", path, err);
		return -1;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		printf("# %s: link type %d is not Ethernet\n", path, pcap_datalink(pc));
		pcap_close(pc);
		return -1;
	}
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	while ((rc = pcap_next_ex(pc, &ph, &data)) == 1) {
		/* An exact-size copy: ASan then catches any read past the frame. */
		uint8_t *copy = malloc(ph->caplen ? ph->caplen : 1);
		if (!copy)
			break;
		memcpy(copy, data, ph->caplen);
		struct wt_frame f = { base, ++idx, copy, ph->caplen };
		fn(&f, arg);
		free(copy);
	}
	pcap_close(pc);
	return rc == PCAP_ERROR_BREAK ? (int)idx : -1; /* -2: end of file */
}

int wt_corpus_for_each(wt_frame_fn fn, void *arg)
{
	const char *dir = wt_corpus_dir();
	char pattern[4200];
	glob_t g;
	int total = 0;

	if (!dir)
		return -1;
	snprintf(pattern, sizeof(pattern), "%s/*.pcap", dir);
	if (glob(pattern, 0, NULL, &g) != 0) {
		printf("# no pcap files in %s\n", dir);
		return -1;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int n = read_pcap(g.gl_pathv[i], fn, arg);
		if (n < 0) {
			total = -1;
			break;
		}
		total += n;
	}
	globfree(&g);
	return total;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

int wt_vectors_for_each(wt_frame_fn fn, void *arg)
{
	const char *dir = wt_corpus_dir();
	char path[4200];
	char line[8192];
	unsigned idx = 0;
	FILE *fp;

	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/icrc-vectors.txt", dir);
	fp = fopen(path, "r");
	if (!fp) {
		printf("# cannot open %s\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), fp)) {
		size_t n = strcspn(line, "\r\n");
		line[n] = 0;
		if (n == 0 || line[0] == '#')
			continue;
		for (size_t i = 0; i < n; i++)
			if (!isxdigit((unsigned char)line[i]) || n % 2) {
				printf("# %s: malformed hex line\n", path);
				fclose(fp);
				return -1;
			}
		uint8_t *buf = malloc(n / 2);
		if (!buf)
			break;
		for (size_t i = 0; i < n / 2; i++)
			buf[i] = (uint8_t)(hexval(line[2 * i]) << 4 | hexval(line[2 * i + 1]));
		struct wt_frame f = { "icrc-vectors.txt", ++idx, buf, n / 2 };
		fn(&f, arg);
		free(buf);
	}
	fclose(fp);
	return (int)idx;
}
