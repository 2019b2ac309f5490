/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ethdev port link (stack/net/port/port.c) on a net_ring device made from
 * two rte_rings in this process (EAL with --no-huge --no-pci --in-memory):
 * frames injected into the RX ring, frames the port sends read from the
 * TX ring. Checks that the port answers ARP and ICMP echo itself, counts
 * and drops other traffic, hands RoCE (IPv4 and IPv6) to the caller, that
 * zero-copy TX produces the bytes droce_build_frame() would (header mbuf
 * + external payload mbufs + trailer) and that the external buffers are
 * released, that short payloads are copied, that resolve() sends a request
 * and learns the reply, and that the capture mirror writes readable pcap.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcap/pcap.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "net/neigh/arp.h"
#include "net/diag/capture.h"
#include "net/neigh/classify.h"
#include "net/port/port.h"
#include "wire/build.h"
#include "wire/bytes.h"
#include "wire/icrc.h"
#include "wire/parse.h"

static const uint8_t our_ip[4] = {192, 168, 7, 1};
static const uint8_t peer_ip[4] = {192, 168, 7, 2};
static const uint8_t peer_mac[6] = {0x02, 0xaa, 0, 0, 0, 0x02};

struct fixture {
	struct rte_ring *rx, *tx;        /* rx: we inject; tx: the port sends */
	struct rte_mempool *inj;         /* mbufs for injected frames */
	struct droce_port *port;
	struct droce_link link;
	uint8_t mac[6];
};

static struct fixture fx;
static int port_serial;

/* Put one frame on the port's RX ring. */
static void inject(const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(fx.inj);
	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), f, len);
	assert_int_equal(rte_ring_enqueue(fx.rx, m), 0);
}

/* Take the next frame the port sent, linearised into @p buf. */
static size_t sent(uint8_t *buf, size_t cap, struct rte_mbuf **keep)
{
	void *obj;
	if (rte_ring_dequeue(fx.tx, &obj) != 0)
		return 0;
	struct rte_mbuf *m = obj;
	assert_true(m->pkt_len <= cap);
	const void *d = rte_pktmbuf_read(m, 0, m->pkt_len, buf);
	if (d != buf)
		memcpy(buf, d, m->pkt_len);
	size_t n = m->pkt_len;
	if (keep != NULL)
		*keep = m;
	else
		rte_pktmbuf_free(m);
	return n;
}

static void drain_tx(void)
{
	uint8_t b[9000];
	while (sent(b, sizeof(b), NULL) != 0)
		;
}

static int setup(void **state)
{
	(void)state;
	char name[32];
	int s = port_serial++;
	snprintf(name, sizeof(name), "trx%d", s);
	fx.rx = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ttx%d", s);
	fx.tx = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "tinj%d", s);
	fx.inj = rte_pktmbuf_pool_create(name, 512, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (fx.rx == NULL || fx.tx == NULL || fx.inj == NULL)
		return -1;
	snprintf(name, sizeof(name), "droce_ring%d", s);
	int pid = rte_eth_from_rings(name, &fx.rx, 1, &fx.tx, 1, SOCKET_ID_ANY);
	if (pid < 0)
		return -1;
	struct droce_port_conf c;
	droce_port_conf_init(&c);
	c.port_id = (uint16_t)pid;
	c.rx_desc = 256;
	c.tx_desc = 256;
	c.force_multi_seg = true; /* net_ring advertises chains anyway; belt and braces */
	memcpy(c.ip, our_ip, 4);
	fx.port = droce_port_open(&c);
	if (fx.port == NULL)
		return -1;
	fx.link = droce_port_link(fx.port);
	struct droce_port_info in;
	droce_port_get_info(fx.port, &in);
	memcpy(fx.mac, in.mac, 6);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	drain_tx();
	droce_port_close(fx.port);
	rte_ring_free(fx.rx);
	rte_ring_free(fx.tx);
	rte_mempool_free(fx.inj);
	memset(&fx, 0, sizeof(fx));
	return 0;
}

static void test_gratuitous_arp_at_start(void **state)
{
	(void)state;
	uint8_t b[256];
	size_t n = sent(b, sizeof(b), NULL);
	assert_int_equal(n, DROCE_ARP_FRAME_LEN);
	assert_int_equal(droce_net_classify(b, n), DROCE_NET_ARP);
	assert_memory_equal(b + 14 + 14, our_ip, 4);
	assert_memory_equal(b + 14 + 24, our_ip, 4);
	struct droce_port_info in;
	droce_port_get_info(fx.port, &in);
	assert_true(in.zero_copy);
	assert_int_equal(in.roce_mtu, 4096);
	assert_true(in.footprint_bytes > 0);
}

static void test_answers_arp(void **state)
{
	(void)state;
	drain_tx();
	uint8_t req[60], b[256];
	const uint8_t bc[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, z[6] = {0};
	droce_arp_build(req, sizeof(req), 1, bc, peer_mac, peer_ip, z, our_ip);
	inject(req, sizeof(req));
	struct droce_rx_frame f[8];
	assert_int_equal(fx.link.ops->rx_burst(fx.link.priv, f, 8, 1000), 0);
	size_t n = sent(b, sizeof(b), NULL);
	assert_int_equal(n, DROCE_ARP_FRAME_LEN);
	assert_memory_equal(b, peer_mac, 6);
	assert_memory_equal(b + 6, fx.mac, 6);
	assert_int_equal(droce_get_be16(b + 14 + 6), 2);
	assert_memory_equal(b + 14 + 8, fx.mac, 6);
	/* and the requester is now known */
	uint8_t mac[6];
	assert_int_equal(droce_port_resolve(fx.port, peer_ip, mac, 2000), 0);
	assert_memory_equal(mac, peer_mac, 6);
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.rx_class[DROCE_NET_ARP], 1);
	assert_int_equal(st.arp.tx_replies, 1);
}

static size_t echo_request(uint8_t *f, size_t data_len)
{
	memcpy(f, fx.mac, 6);
	memcpy(f + 6, peer_mac, 6);
	droce_put_be16(f + 12, 0x0800);
	uint8_t *ip = f + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	droce_put_be16(ip + 2, (uint16_t)(28 + data_len));
	ip[8] = 64;
	ip[9] = 1;
	memcpy(ip + 12, peer_ip, 4);
	memcpy(ip + 16, our_ip, 4);
	droce_put_be16(ip + 10, droce_inet_csum(ip, 20));
	uint8_t *ic = ip + 20;
	memset(ic, 0, 8);
	ic[0] = 8;
	droce_put_be16(ic + 4, 0x77);
	droce_put_be16(ic + 6, 1);
	for (size_t i = 0; i < data_len; i++)
		ic[8 + i] = (uint8_t)(i ^ 0x5a);
	droce_put_be16(ic + 2, droce_inet_csum(ic, 8 + data_len));
	return 14 + 28 + data_len;
}

static void test_answers_ping_drops_other(void **state)
{
	(void)state;
	drain_tx();
	uint8_t f[256], b[256];
	size_t len = echo_request(f, 56);
	inject(f, len);
	/* plus a TCP segment and an LLDP frame: counted and dropped */
	uint8_t t[64];
	memcpy(t, f, 64);
	t[14 + 9] = 6;
	inject(t, sizeof(t));
	droce_put_be16(t + 12, 0x88cc);
	inject(t, sizeof(t));
	struct droce_rx_frame fr[8];
	assert_int_equal(fx.link.ops->rx_burst(fx.link.priv, fr, 8, 1000), 0);
	size_t n = sent(b, sizeof(b), NULL);
	assert_int_equal(n, len);
	assert_memory_equal(b, peer_mac, 6);
	assert_memory_equal(b + 14 + 12, our_ip, 4);
	assert_memory_equal(b + 14 + 16, peer_ip, 4);
	assert_int_equal(b[14 + 20], 0); /* echo reply */
	assert_int_equal(droce_inet_csum(b + 14 + 20, 8 + 56), 0);
	assert_memory_equal(b + 14 + 28, f + 14 + 28, 56);
	assert_int_equal(sent(b, sizeof(b), NULL), 0);
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.icmp.rx_echo, 1);
	assert_int_equal(st.rx_other, 2);
	assert_int_equal(st.rx_frames, 3);
}

/* A RoCE frame for us over IPv4 or IPv6. */
static size_t roce_frame(uint8_t *b, size_t cap, uint8_t ipv, const uint8_t *dst_mac,
			 uint32_t plen, const uint8_t *payload, struct droce_hdrs *out)
{
	struct droce_hdrs h;
	memset(&h, 0, sizeof(h));
	memcpy(h.net.dst_mac, dst_mac, 6);
	memcpy(h.net.src_mac, peer_mac, 6);
	h.net.ip_version = ipv;
	memcpy(h.net.src_ip, peer_ip, 4);
	memcpy(h.net.dst_ip, our_ip, 4);
	h.net.ttl = 64;
	h.net.sport = 0xc000;
	h.bth.opcode = 0x0A; /* RC RDMA WRITE ONLY */
	h.bth.pkey = 0xffff;
	h.bth.dqpn = 0x11;
	h.bth.psn = 0x100;
	h.ext.reth.va = 0x1000;
	h.ext.reth.rkey = 0x22;
	h.ext.reth.dma_len = plen;
	h.payload_len = plen;
	if (out != NULL)
		*out = h;
	return droce_build_frame(b, cap, &h, payload);
}

static void test_roce_to_context(void **state)
{
	(void)state;
	drain_tx();
	uint8_t b[5000], pl[4096];
	for (unsigned i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 3);
	const uint8_t other_mac[6] = {0x02, 0xbb, 0, 0, 0, 9};
	size_t n4 = roce_frame(b, sizeof(b), 4, fx.mac, 64, pl, NULL);
	inject(b, n4);
	size_t n6 = roce_frame(b, sizeof(b), 6, fx.mac, 100, pl, NULL);
	inject(b, n6);
	size_t nx = roce_frame(b, sizeof(b), 4, other_mac, 64, pl, NULL);
	inject(b, nx);
	struct droce_rx_frame fr[8];
	unsigned k = fx.link.ops->rx_burst(fx.link.priv, fr, 8, 1000);
	assert_int_equal(k, 2);
	struct droce_pkt p;
	assert_int_equal(droce_parse(fr[0].data, fr[0].len, &p, 0), DROCE_PARSE_OK);
	assert_int_equal(fr[0].len, n4);
	assert_int_equal(droce_parse(fr[1].data, fr[1].len, &p, 0), DROCE_PARSE_OK);
	assert_int_equal(p.h.net.ip_version, 6);
	fx.link.ops->rx_release(fx.link.priv, fr, k);
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.rx_roce, 2);
	assert_int_equal(st.rx_class[DROCE_NET_ROCEV2_IPV6], 1);
	assert_int_equal(st.rx_not_ours, 1);
	/* the RX pool got every mbuf back */
	assert_int_equal(rte_mempool_in_use_count(fx.inj), 0);
}

/* Describe a frame as link.h does: header bytes, payload segments, trailer. */
static void tx_desc(struct droce_tx_frame *f, const uint8_t *frame, size_t flen, size_t hdr_len,
		    const uint8_t *payload, uint32_t plen, const uint32_t *cuts, unsigned ncuts)
{
	memset(f, 0, sizeof(*f));
	f->hdr = frame;
	f->hdr_len = (uint32_t)hdr_len;
	uint32_t off = 0;
	for (unsigned i = 0; i <= ncuts; i++) {
		uint32_t end = i < ncuts ? cuts[i] : plen;
		f->seg[i].addr = payload + off;
		f->seg[i].len = end - off;
		off = end;
	}
	f->nseg = (uint8_t)(ncuts + 1);
	f->payload_len = plen;
	f->trailer_len = (uint8_t)(flen - hdr_len - plen);
	memcpy(f->trailer, frame + hdr_len + plen, f->trailer_len);
}

static void test_zero_copy_tx_bytes_and_release(void **state)
{
	(void)state;
	drain_tx();
	uint8_t *payload = malloc(4096);
	assert_non_null(payload);
	for (unsigned i = 0; i < 4096; i++)
		payload[i] = (uint8_t)(i * 13 + 1);
	uint8_t ref[5000], got[5000];
	struct droce_hdrs h;
	/* 4093 bytes: pad 3; three segments, the middle one short (copied) */
	uint32_t plen = 4093;
	size_t flen = roce_frame(ref, sizeof(ref), 4, peer_mac, plen, payload, &h);
	assert_true(flen > 0);
	size_t hdr_len = flen - plen - droce_pad_count(plen) - 4;
	struct droce_tx_frame f;
	const uint32_t cuts[2] = {2000, 2100};
	tx_desc(&f, ref, flen, hdr_len, payload, plen, cuts, 2);
	assert_int_equal(fx.link.ops->tx(fx.link.priv, &f, 10), 0);
	fx.link.ops->tx_flush(fx.link.priv, 11);
	struct rte_mbuf *m = NULL;
	size_t n = sent(got, sizeof(got), &m);
	assert_int_equal(n, flen);
	assert_memory_equal(got, ref, flen);
	struct droce_pkt p;
	assert_int_equal(droce_parse(got, n, &p, 0), DROCE_PARSE_OK);
	/* header, 2 external segments (the middle 100 bytes were copied into
	 * the header mbuf's tailroom ... or their own), and the trailer */
	assert_true(m->nb_segs >= 3);
	unsigned ext = 0;
	for (struct rte_mbuf *s = m; s != NULL; s = s->next)
		if (RTE_MBUF_HAS_EXTBUF(s)) {
			ext++;
			/* attached, not copied: the mbuf points into our memory */
			assert_true(rte_pktmbuf_mtod(s, uint8_t *) >= payload &&
				    rte_pktmbuf_mtod(s, uint8_t *) < payload + 4096);
		}
	assert_int_equal(ext, 2);
	/* a zero-copy port does not copy: it leaves the ICRC to the context */
	assert_null(fx.link.ops->tx_fold);
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.zc_attached, 2);
	assert_int_equal(st.zc_released, 0); /* the "PMD" (our ring) still holds it */
	assert_int_equal(st.tx_inline_segs, 1);
	rte_pktmbuf_free(m);
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.zc_released, 2);
	assert_int_equal(st.tx_zc_frames, 1);
	free(payload);
}

static void test_short_payload_copied(void **state)
{
	(void)state;
	drain_tx();
	uint8_t payload[200], ref[512], got[512];
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	size_t flen = roce_frame(ref, sizeof(ref), 6, peer_mac, 200, payload, NULL);
	size_t hdr_len = flen - 200 - 4;
	struct droce_tx_frame f;
	tx_desc(&f, ref, flen, hdr_len, payload, 200, NULL, 0);
	assert_int_equal(fx.link.ops->tx(fx.link.priv, &f, 10), 0);
	/* not flushed yet: batched */
	assert_int_equal(rte_ring_count(fx.tx), 0);
	/* the timed drain sends it when the next frame comes drain_ns later */
	assert_int_equal(fx.link.ops->tx(fx.link.priv, &f, 10 + DROCE_PORT_DEFAULT_DRAIN_NS), 0);
	assert_int_equal(rte_ring_count(fx.tx), 1);
	fx.link.ops->tx_flush(fx.link.priv, 10 + DROCE_PORT_DEFAULT_DRAIN_NS);
	struct rte_mbuf *m;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sent(got, sizeof(got), &m), flen);
		assert_memory_equal(got, ref, flen);
		assert_int_equal(m->nb_segs, 1);
		rte_pktmbuf_free(m);
	}
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.tx_copied_frames, 2);
	assert_int_equal(st.zc_attached, 0);
}

static void test_resolve_sends_request(void **state)
{
	(void)state;
	drain_tx();
	uint8_t mac[6], b[256];
	assert_int_equal(droce_port_resolve(fx.port, peer_ip, mac, 1000), -EAGAIN);
	size_t n = sent(b, sizeof(b), NULL);
	assert_int_equal(n, DROCE_ARP_FRAME_LEN);
	assert_int_equal(droce_get_be16(b + 14 + 6), 1);
	assert_memory_equal(b + 14 + 24, peer_ip, 4);
	/* the reply arrives together with a RoCE frame: the frame is kept */
	uint8_t rep[60], r[512], pl[32] = {0};
	droce_arp_build(rep, sizeof(rep), 2, fx.mac, peer_mac, peer_ip, fx.mac, our_ip);
	size_t rn = roce_frame(r, sizeof(r), 4, fx.mac, 32, pl, NULL);
	inject(r, rn);
	inject(rep, sizeof(rep));
	assert_int_equal(droce_port_resolve(fx.port, peer_ip, mac, 2000), 0);
	assert_memory_equal(mac, peer_mac, 6);
	struct droce_rx_frame fr[4];
	assert_int_equal(fx.link.ops->rx_burst(fx.link.priv, fr, 4, 3000), 1);
	assert_int_equal(fr[0].len, rn);
	fx.link.ops->rx_release(fx.link.priv, fr, 1);
	/* static neighbours answer at once */
	const uint8_t ip2[4] = {192, 168, 7, 99};
	assert_int_equal(droce_port_add_neighbour(fx.port, ip2, peer_mac), 0);
	assert_int_equal(droce_port_resolve(fx.port, ip2, mac, 4000), 0);
}

/* While an address does not answer, every poll asks resolve() again: it
 * must take off the ring only what its stash can keep, so the RoCE frames
 * that arrive meanwhile all reach the context (none lost as rx_stash_drop;
 * before, each call took 64 frames into a 64-frame stash the poll drains
 * a burst at a time). */
static void test_resolve_keeps_every_frame(void **state)
{
	(void)state;
	drain_tx();
	const uint8_t silent[4] = {192, 168, 7, 77};
	uint8_t mac[6], r[512], pl[32] = {0};
	size_t rn = roce_frame(r, sizeof(r), 4, fx.mac, 32, pl, NULL);
	struct droce_port_stats st0, st;
	droce_port_get_stats(fx.port, &st0);
	enum { N = 150 };
	for (int i = 0; i < N; i++)
		inject(r, rn);
	uint64_t now = 10000000000ull;
	unsigned got = 0;
	for (int k = 0; k < 40 && got < N; k++) {
		/* the service's resolve, then the poll's burst of 32 */
		assert_int_equal(droce_port_resolve(fx.port, silent, mac, now), -EAGAIN);
		assert_int_equal(droce_port_resolve(fx.port, silent, mac, now + 1), -EAGAIN);
		struct droce_rx_frame fr[32];
		unsigned n = fx.link.ops->rx_burst(fx.link.priv, fr, 32, now + 2);
		fx.link.ops->rx_release(fx.link.priv, fr, n);
		got += n;
		now += 1000000;
	}
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.rx_stash_drop - st0.rx_stash_drop, 0);
	assert_int_equal(got, N);
	drain_tx();
}

static void test_capture_mirror(void **state)
{
	(void)state;
	drain_tx();
	char path[96];
	snprintf(path, sizeof(path), "/tmp/droce-test-port-%d.pcap", (int)getpid());
	struct droce_capture_conf cc = {.path = path};
	struct droce_capture *cap = droce_capture_open(&cc);
	assert_non_null(cap);
	droce_port_set_capture(fx.port, cap);
	uint8_t f[256], ref[5000];
	size_t len = echo_request(f, 16);
	inject(f, len);
	struct droce_rx_frame fr[4];
	fx.link.ops->rx_burst(fx.link.priv, fr, 4, 5);
	uint8_t *payload = malloc(3000);
	memset(payload, 0x3c, 3000);
	size_t flen = roce_frame(ref, sizeof(ref), 4, peer_mac, 3000, payload, NULL);
	struct droce_tx_frame t;
	tx_desc(&t, ref, flen, flen - 3004, payload, 3000, NULL, 0);
	assert_int_equal(fx.link.ops->tx(fx.link.priv, &t, 6), 0);
	fx.link.ops->tx_flush(fx.link.priv, 6);
	droce_port_set_capture(fx.port, NULL);
	drain_tx();
	free(payload);
	assert_int_equal(droce_capture_close(cap), 0);

	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	assert_non_null(pc);
	struct pcap_pkthdr *ph;
	const u_char *d;
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1); /* the echo request (RX) */
	assert_int_equal(ph->caplen, len);
	assert_memory_equal(d, f, len);
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1); /* the echo reply (TX) */
	assert_int_equal(d[14 + 20], 0);
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1); /* the RoCE frame (TX) */
	assert_int_equal(ph->caplen, flen);
	assert_memory_equal(d, ref, flen);
	struct droce_pkt p;
	assert_int_equal(droce_parse(d, ph->caplen, &p, 0), DROCE_PARSE_OK);
	assert_int_equal(pcap_next_ex(pc, &ph, &d), PCAP_ERROR_BREAK);
	pcap_close(pc);
	unlink(path);
}

/* A frame that arrives as a chain of mbufs is handed over contiguous. */
static void test_rx_chained_linearised(void **state)
{
	(void)state;
	drain_tx();
	uint8_t b[5000], pl[3000];
	for (unsigned i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i ^ 0xa5);
	size_t n = roce_frame(b, sizeof(b), 4, fx.mac, sizeof(pl), pl, NULL);
	/* three segments: 1000 + 1000 + the rest */
	struct rte_mbuf *head = rte_pktmbuf_alloc(fx.inj), *prev = head;
	memcpy(rte_pktmbuf_append(head, 1000), b, 1000);
	for (size_t off = 1000; off < n; off += 1000) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(fx.inj);
		size_t len = n - off < 1000 ? n - off : 1000;
		memcpy(rte_pktmbuf_append(m, (uint16_t)len), b + off, len);
		prev->next = m;
		head->nb_segs++;
		head->pkt_len += (uint32_t)len;
		prev = m;
	}
	assert_int_equal(head->nb_segs, 4);
	assert_int_equal(rte_ring_enqueue(fx.rx, head), 0);
	struct droce_rx_frame fr[4];
	assert_int_equal(fx.link.ops->rx_burst(fx.link.priv, fr, 4, 0), 1);
	assert_int_equal(fr[0].len, n);
	assert_memory_equal(fr[0].data, b, n);
	struct droce_pkt p;
	assert_int_equal(droce_parse(fr[0].data, fr[0].len, &p, 0), DROCE_PARSE_OK);
	fx.link.ops->rx_release(fx.link.priv, fr, 1);
	struct droce_port_stats st;
	droce_port_get_stats(fx.port, &st);
	assert_int_equal(st.rx_linearised, 1);
	assert_int_equal(rte_mempool_in_use_count(fx.inj), 0);
}

/* zero_copy off: a 4 KB frame is copied into one mbuf, same bytes. */
static void test_copy_mode(void **state)
{
	(void)state;
	struct rte_ring *rx = rte_ring_create("cprx", 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	struct rte_ring *tx = rte_ring_create("cptx", 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	int pid = rte_eth_from_rings("droce_copy", &rx, 1, &tx, 1, SOCKET_ID_ANY);
	assert_true(pid >= 0);
	struct droce_port_conf c;
	droce_port_conf_init(&c);
	c.port_id = (uint16_t)pid;
	c.rx_desc = c.tx_desc = 128;
	c.zero_copy = false;
	c.gratuitous_arp = false;
	memcpy(c.ip, our_ip, 4);
	struct droce_port *port = droce_port_open(&c);
	assert_non_null(port);
	struct droce_port_info in;
	droce_port_get_info(port, &in);
	assert_false(in.zero_copy);
	assert_int_equal(in.ext_pool_n, 0);
	struct droce_link l = droce_port_link(port);
	uint8_t *payload = malloc(4096), ref[5000];
	for (unsigned i = 0; i < 4096; i++)
		payload[i] = (uint8_t)(i * 5);
	size_t flen = roce_frame(ref, sizeof(ref), 6, peer_mac, 4096, payload, NULL);
	struct droce_tx_frame f;
	const uint32_t cuts[1] = {1234};
	tx_desc(&f, ref, flen, flen - 4096 - 4, payload, 4096, cuts, 1);
	assert_int_equal(l.ops->tx(l.priv, &f, 0), 0);
	l.ops->tx_flush(l.priv, 0);
	void *obj = NULL;
	assert_int_equal(rte_ring_dequeue(tx, &obj), 0);
	struct rte_mbuf *m = obj;
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(m->pkt_len, flen);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), ref, flen);
	rte_pktmbuf_free(m);
	/* the gratuitous ARP was switched off: nothing else was sent */
	assert_int_equal(rte_ring_count(tx), 0);

	/* tx_fold: the ICRC left to the port, which folds it into its copy
	 * of the payload (4093 bytes: pad 3; three segments) from the running
	 * ICRC over the headers: the same bytes as droce_build_frame's. */
	assert_non_null(l.ops->tx_fold);
	uint32_t plen = 4093;
	flen = roce_frame(ref, sizeof(ref), 6, peer_mac, plen, payload, NULL);
	size_t hdr_len = flen - plen - 3 - 4;
	const uint32_t cuts2[2] = {1000, 3001};
	tx_desc(&f, ref, flen, hdr_len, payload, plen, cuts2, 2);
	memset(f.trailer, 0, sizeof(f.trailer));
	assert_int_equal(f.trailer_len, 7);
	uint32_t crc = droce_icrc_begin(ref + 14, DROCE_L3_IPV6, hdr_len - 14);
	assert_int_equal(l.ops->tx_fold(l.priv, &f, crc, 1), 0);
	l.ops->tx_flush(l.priv, 1);
	assert_int_equal(rte_ring_dequeue(tx, &obj), 0);
	m = obj;
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(m->pkt_len, flen);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), ref, flen);
	rte_pktmbuf_free(m);

	struct droce_port_stats st;
	droce_port_get_stats(port, &st);
	assert_int_equal(st.tx_copied_frames, 2);
	assert_int_equal(st.tx_zc_frames, 0);
	droce_port_close(port);
	rte_ring_free(rx);
	rte_ring_free(tx);
	free(payload);
}

/* Two queues of one device, as two contexts on two lcores would use them. */
static void test_two_queues(void **state)
{
	(void)state;
	struct rte_ring *rx[2], *tx[2];
	char name[32];
	for (int q = 0; q < 2; q++) {
		snprintf(name, sizeof(name), "mqrx%d", q);
		rx[q] = rte_ring_create(name, 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "mqtx%d", q);
		tx[q] = rte_ring_create(name, 256, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(rx[q]);
		assert_non_null(tx[q]);
	}
	int pid = rte_eth_from_rings("droce_mq", rx, 2, tx, 2, SOCKET_ID_ANY);
	assert_true(pid >= 0);
	struct rte_mempool *inj = rte_pktmbuf_pool_create("mqinj", 64, 0, 0,
							  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(inj);
	struct droce_port_conf c;
	droce_port_conf_init(&c);
	c.port_id = (uint16_t)pid;
	c.nb_queues = 2;
	c.rx_desc = c.tx_desc = 128;
	memcpy(c.ip, our_ip, 4);
	assert_null(droce_port_open(&c)); /* one-queue constructor refuses two */
	struct droce_port *p[2];
	assert_int_equal(droce_port_open_queues(&c, p), 0);
	struct droce_port_info in0, in1;
	droce_port_get_info(p[0], &in0);
	droce_port_get_info(p[1], &in1);
	assert_int_equal(in0.queue, 0);
	assert_int_equal(in1.queue, 1);
	assert_true(in0.multi_seg); /* net_ring advertises RTE_ETH_TX_OFFLOAD_MULTI_SEGS */
	assert_int_equal(in0.zero_copy, in0.multi_seg);
	/* gratuitous ARP once, on queue 0 */
	assert_int_equal(rte_ring_count(tx[0]), 1);
	assert_int_equal(rte_ring_count(tx[1]), 0);
	/* an ARP request arriving on queue 1 is answered by queue 1 */
	uint8_t req[60];
	const uint8_t bc[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, z[6] = {0};
	droce_arp_build(req, sizeof(req), 1, bc, peer_mac, peer_ip, z, our_ip);
	struct rte_mbuf *m = rte_pktmbuf_alloc(inj);
	memcpy(rte_pktmbuf_append(m, sizeof(req)), req, sizeof(req));
	assert_int_equal(rte_ring_enqueue(rx[1], m), 0);
	struct droce_link l1 = droce_port_link(p[1]);
	struct droce_rx_frame f[4];
	assert_int_equal(l1.ops->rx_burst(l1.priv, f, 4, 0), 0);
	assert_int_equal(rte_ring_count(tx[1]), 1);
	struct droce_port_stats st;
	droce_port_get_stats(p[1], &st);
	assert_int_equal(st.arp.tx_replies, 1);
	droce_port_get_stats(p[0], &st);
	assert_int_equal(st.rx_frames, 0);
	void *obj;
	for (int q = 0; q < 2; q++)
		while (rte_ring_dequeue(tx[q], &obj) == 0)
			rte_pktmbuf_free(obj);
	droce_port_close(p[1]);
	droce_port_close(p[0]);
	for (int q = 0; q < 2; q++) {
		rte_ring_free(rx[q]);
		rte_ring_free(tx[q]);
	}
	rte_mempool_free(inj);
}

int main(void)
{
	char *eal[] = {"test_port", "--no-huge", "--no-pci", "--no-shconf", "-m", "256",
		       "--log-level=*:error", NULL};
	if (rte_eal_init(7, eal) < 0) {
		fprintf(stderr, "SKIP: EAL does not start here\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gratuitous_arp_at_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answers_arp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answers_ping_drops_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roce_to_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_copy_tx_bytes_and_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_payload_copied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_sends_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_keeps_every_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capture_mirror, setup, teardown),
		cmocka_unit_test(test_two_queues),
		cmocka_unit_test_setup_teardown(test_rx_chained_linearised, setup, teardown),
		cmocka_unit_test(test_copy_mode),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
