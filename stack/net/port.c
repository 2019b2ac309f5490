/* SPDX-License-Identifier: BSD-3-Clause */
/* A DPDK ethdev queue as a droce link: ARP/ICMP, zero-copy TX (see port.h). */
#include "net/port.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_memory.h>

#include <droce/params.h>

#include "net/capture.h"
#include "net/tx_fold.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

#define MEMPOOL_CACHE 128u
/* Direct mbufs of the zero-copy path carry headers, short segments and the
 * trailer: 2 KB leaves room for a whole header plus inline payload. */
#define ZC_DIRECT_ROOM 2048u
#define MAX_INLINE 256u
#define RX_MIN_ROOM 2048u
#define STASH_MAX 64u
#define CLOSE_WAIT_MS 500u
#define CLOSE_SETTLE_US 100000u

/* Shared by the queues of one ethdev: the last to close stops it. */
struct port_dev {
	uint16_t port_id;
	unsigned open_queues, nb_queues;
	struct droce_port *q[]; /* freed with the device: the PMD holds RX mbufs */
};

/*
 * Shared info of one attached payload segment. It lives in the private area
 * of the external mbuf that carries the segment (one segment, one mbuf, one
 * reference), so it needs no pool of its own: DPDK calls free_cb while it
 * detaches that very mbuf, before the mbuf goes back to its pool. Its
 * callback and opaque pointer are set once, when the pool is made
 * (zc_shinfo_init); an attach only re-arms the reference count.
 */
struct zc_shinfo {
	struct rte_mbuf_ext_shared_info sh;
};

struct droce_port {
	struct port_dev *dev;
	uint16_t port_id, queue;
	uint32_t burst, frame_max, inline_thr;
	uint64_t drain_ns;
	bool zc, multi_seg, tx_ip_csum, rx_ip_csum;
	uint16_t seg_max;               /* PMD limit on segments per frame; 0 = none */
	bool iova_va;                   /* IOVA == VA: attach without a lookup */
	uint8_t mac[6];
	uint8_t ip_version, ip[16];

	struct rte_mempool *rx_pool, *tx_pool, *ext_pool;

	/* TX batch: sent when full, on tx_flush(), or drain_ns after batch_t0. */
	struct rte_mbuf **batch;
	unsigned n_batch, batch_cap;
	uint64_t batch_t0;

	/* RoCE frames received by resolve(), handed out by the next rx_burst. */
	struct rte_mbuf *stash[STASH_MAX];
	unsigned n_stash;

	uint8_t *scratch;               /* burst * frame_max: linearised RX */
	uint8_t *ctrl_buf;              /* frame_max: frames resolve() linearises */
	uint8_t *reply_buf;             /* frame_max: ICMP echo replies */
	struct droce_arp *arp;
	struct droce_capture *capture;
	struct droce_port_stats st;
	struct droce_port_info info;
};

void droce_port_conf_init(struct droce_port_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->nb_queues = 1;
	c->rx_desc = DROCE_PORT_DEFAULT_DESC;
	c->tx_desc = DROCE_PORT_DEFAULT_DESC;
	c->burst = DROCE_DEFAULT_BURST;
	c->frame_max = DROCE_PORT_JUMBO_FRAME;
	c->inline_threshold = DROCE_PORT_DEFAULT_INLINE;
	c->drain_ns = DROCE_PORT_DEFAULT_DRAIN_NS;
	c->zero_copy = true;
	c->gratuitous_arp = true;
	c->ip_version = 4;
}

/* ------------------------------------------------------------------ */
/* TX */

/*
 * Free callback of an external buffer: the PMD is done with the payload.
 * Nothing to count here: the external mbuf goes back to ext_pool right
 * after, so the pool's occupancy says how many segments the PMD still
 * holds (zc_held). A counter here had to be atomic (a PMD may free on
 * another lcore, a ring consumer), and on memif that locked add came right
 * after the PMD's 4 KB copy into its ring, where it waited for all of the
 * copy's stores to drain: 4.2% of a 64 KB write_bw sender (issue 11).
 */
static void zc_release(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
}

/* Attached segments the PMD has not released yet: external mbufs out of
 * their pool. Walks every lcore's pool cache: for stats and close only. */
static uint64_t zc_held(const struct droce_port *p)
{
	return p->ext_pool != NULL ? rte_mempool_in_use_count(p->ext_pool) : 0;
}

/* rte_mempool_obj_iter callback: the constant half of each shared info. */
static void zc_shinfo_init(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	(void)mp;
	(void)arg;
	(void)idx;
	struct zc_shinfo *z = rte_mbuf_to_priv(obj);
	z->sh.free_cb = zc_release;
	z->sh.fcb_opaque = NULL;
}

static void batch_send(struct droce_port *p)
{
	if (p->n_batch == 0)
		return;
	uint16_t sent = rte_eth_tx_burst(p->port_id, p->queue, p->batch, (uint16_t)p->n_batch);
	p->st.tx_bursts++;
	if (sent < p->n_batch)
		memmove(p->batch, p->batch + sent, (p->n_batch - sent) * sizeof(p->batch[0]));
	p->n_batch -= sent;
}

static void batch_add(struct droce_port *p, struct rte_mbuf *m, uint64_t now)
{
	if (p->n_batch == 0)
		p->batch_t0 = now;
	p->batch[p->n_batch++] = m;
	p->st.tx_frames++;
	p->st.tx_bytes += m->pkt_len;
}

/* Copy @p len bytes to the end of the chain, adding direct mbufs as needed. */
static int chain_copy(struct droce_port *p, struct rte_mbuf *head, struct rte_mbuf **last,
		      const uint8_t *src, uint32_t len)
{
	while (len != 0) {
		struct rte_mbuf *l = *last;
		uint32_t room = RTE_MBUF_HAS_EXTBUF(l) ? 0 : rte_pktmbuf_tailroom(l);
		if (room == 0) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(p->tx_pool);
			if (m == NULL)
				return -ENOBUFS;
			l->next = m;
			head->nb_segs++;
			*last = l = m;
			room = rte_pktmbuf_tailroom(l);
		}
		uint32_t n = len < room ? len : room;
		memcpy(rte_pktmbuf_mtod_offset(l, uint8_t *, l->data_len), src, n);
		l->data_len = (uint16_t)(l->data_len + n);
		head->pkt_len += n;
		src += n;
		len -= n;
	}
	return 0;
}

/* IOVA of a payload segment, or RTE_BAD_IOVA when it cannot be attached. */
static rte_iova_t seg_iova(const struct droce_port *p, const void *addr, uint32_t len)
{
	if (p->iova_va)
		return (rte_iova_t)(uintptr_t)addr;
	const struct rte_memseg *ms = rte_mem_virt2memseg(addr, NULL);
	if (ms == NULL || (uintptr_t)addr + len > (uintptr_t)ms->addr + ms->len)
		return RTE_BAD_IOVA;
	return ms->iova + ((uintptr_t)addr - (uintptr_t)ms->addr);
}

/* Attach one payload segment as an external buffer at the end of the chain. */
static int chain_attach(struct droce_port *p, struct rte_mbuf *head, struct rte_mbuf **last,
			const void *addr, uint32_t len, rte_iova_t iova)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->ext_pool);
	if (m == NULL)
		return -ENOBUFS;
	struct zc_shinfo *z = rte_mbuf_to_priv(m);
	rte_mbuf_ext_refcnt_set(&z->sh, 1);
	/* The PMD only reads the payload; DPDK's attach takes a non-const pointer. */
	rte_pktmbuf_attach_extbuf(m, (void *)(uintptr_t)addr, iova, (uint16_t)len, &z->sh);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	(*last)->next = m;
	*last = m;
	head->nb_segs++;
	head->pkt_len += len;
	p->st.zc_attached++;
	return 0;
}

/* Build the mbuf chain of one frame; NULL when out of mbufs. */
static struct rte_mbuf *build_tx(struct droce_port *p, const struct droce_tx_frame *f)
{
	struct rte_mbuf *head = rte_pktmbuf_alloc(p->tx_pool);
	if (head == NULL)
		return NULL;
	struct rte_mbuf *last = head;
	bool zc = p->zc && f->payload_len > p->inline_thr;
	bool attached = false;
	int rc = chain_copy(p, head, &last, f->hdr, f->hdr_len);
	for (unsigned i = 0; rc == 0 && i < f->nseg; i++) {
		const struct droce_tx_seg *s = &f->seg[i];
		rte_iova_t iova = RTE_BAD_IOVA;
		if (zc && s->len >= p->inline_thr && s->len <= UINT16_MAX &&
		    (p->seg_max == 0 || head->nb_segs + 2u < p->seg_max))
			iova = seg_iova(p, s->addr, s->len);
		if (iova != RTE_BAD_IOVA) {
			rc = chain_attach(p, head, &last, s->addr, s->len, iova);
			attached = true;
		} else {
			if (zc)
				p->st.tx_inline_segs++;
			rc = chain_copy(p, head, &last, s->addr, s->len);
		}
	}
	if (rc == 0)
		rc = chain_copy(p, head, &last, f->trailer, f->trailer_len);
	if (rc != 0) {
		rte_pktmbuf_free(head); /* releases attached segments too */
		return NULL;
	}
	if (attached)
		p->st.tx_zc_frames++;
	else
		p->st.tx_copied_frames++;
	return head;
}

/*
 * Build one frame by copy into one direct mbuf, folding the ICRC over the
 * payload and the pad as they are copied (droce_link_ops.tx_fold): each
 * payload byte is read once, by droce_crc32_copy, instead of once by the
 * context's ICRC and again by the copy. Copy mode sizes the TX mbufs for
 * frame_max (queue_pools), which port_send() checked. NULL when out of
 * mbufs.
 */
static struct rte_mbuf *build_fold(struct droce_port *p, const struct droce_tx_frame *f,
				   uint32_t crc)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->tx_pool);
	if (m == NULL)
		return NULL;
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	memcpy(d, f->hdr, f->hdr_len);
	droce_tx_fold_copy(d + f->hdr_len, f, crc);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	p->st.tx_copied_frames++;
	return m;
}

/* The IPv4 header checksum, left to a PMD that offers to fill it. */
static void tx_ip_offload(struct rte_mbuf *head, const struct droce_tx_frame *f)
{
	if (f->hdr_len < 34)
		return;
	size_t l3 = droce_get_be16(f->hdr + 12) == DROCE_ETHERTYPE_VLAN ? 18 : 14;
	if (droce_get_be16(f->hdr + l3 - 2) == DROCE_ETHERTYPE_IPV4) {
		uint8_t *ip = rte_pktmbuf_mtod_offset(head, uint8_t *, l3);
		head->l2_len = l3;
		head->l3_len = (ip[0] & 0x0Fu) * 4u;
		head->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		droce_put_be16(ip + 10, 0); /* the NIC fills it */
	}
}

/* tx() and tx_fold(): @p fold says whether the ICRC is still to be folded
 * over the payload from @p crc (build_fold) or is in f->trailer. */
static int port_send(struct droce_port *p, const struct droce_tx_frame *f, bool fold,
		     uint32_t crc, uint64_t now)
{
	if (p->n_batch != 0 && now - p->batch_t0 >= p->drain_ns)
		batch_send(p);
	if (p->n_batch >= p->batch_cap) {
		batch_send(p);
		if (p->n_batch >= p->batch_cap) {
			p->st.tx_nobufs++;
			return -ENOBUFS;
		}
	}
	uint32_t len = f->hdr_len + f->payload_len + f->trailer_len;
	if (unlikely(len > p->frame_max || f->nseg > DROCE_TX_MAX_SEG ||
		     (fold && (f->trailer_len < DROCE_ICRC_LEN ||
			       f->trailer_len > DROCE_ICRC_LEN + 3u)))) {
		/* The engine was told the port's roce_mtu, so this is a bug
		 * upstream. Refusing with -ENOBUFS would have it retry forever;
		 * the frame is dropped and counted instead, and the transport's
		 * retry limit turns it into an error completion. */
		p->st.tx_too_long++;
		return 0;
	}
	struct rte_mbuf *m = fold ? build_fold(p, f, crc) : build_tx(p, f);
	if (m == NULL) {
		batch_send(p); /* completions may return mbufs */
		p->st.tx_nobufs++;
		return -ENOBUFS;
	}
	if (unlikely(p->capture != NULL)) {
		if (fold) /* the ICRC exists only in the mbuf */
			droce_capture_write(p->capture, DROCE_CAPTURE_TX,
					    rte_pktmbuf_mtod(m, const uint8_t *), len, now);
		else
			droce_capture_write_tx(p->capture, f, now);
	}
	if (p->tx_ip_csum)
		tx_ip_offload(m, f);
	batch_add(p, m, now);
	if (p->n_batch >= p->burst)
		batch_send(p);
	return 0;
}

static int port_tx(void *link, const struct droce_tx_frame *f, uint64_t now)
{
	return port_send(link, f, false, 0, now);
}

static int port_tx_fold(void *link, const struct droce_tx_frame *f, uint32_t crc, uint64_t now)
{
	return port_send(link, f, true, crc, now);
}

static void port_tx_flush(void *link, uint64_t now)
{
	(void)now;
	batch_send(link);
}

/* Queue an ARP/ICMP frame of ours (copied; chained when longer than a
 * direct mbuf of the zero-copy configuration). */
static void send_ctrl(struct droce_port *p, const uint8_t *frame, size_t len, uint64_t now)
{
	if (p->n_batch >= p->batch_cap)
		batch_send(p);
	struct rte_mbuf *m = p->n_batch < p->batch_cap ? rte_pktmbuf_alloc(p->tx_pool) : NULL;
	if (m == NULL) {
		p->st.tx_ctrl_drop++;
		return;
	}
	struct rte_mbuf *last = m;
	if ((!p->multi_seg && rte_pktmbuf_tailroom(m) < len) ||
	    chain_copy(p, m, &last, frame, (uint32_t)len) != 0) {
		rte_pktmbuf_free(m);
		p->st.tx_ctrl_drop++;
		return;
	}
	if (unlikely(p->capture != NULL))
		droce_capture_write(p->capture, DROCE_CAPTURE_TX, frame, len, now);
	batch_add(p, m, now);
	p->st.tx_ctrl++;
}

/* ------------------------------------------------------------------ */
/* RX */

/* Contiguous bytes of @p m: its own data, or a copy in @p scratch. */
static const uint8_t *rx_bytes(struct droce_port *p, struct rte_mbuf *m, uint8_t *scratch)
{
	if (m->nb_segs == 1)
		return rte_pktmbuf_mtod(m, const uint8_t *);
	if (m->pkt_len > p->frame_max) {
		p->st.rx_too_long++;
		return NULL;
	}
	p->st.rx_linearised++;
	return rte_pktmbuf_read(m, 0, m->pkt_len, scratch);
}

static bool mac_ours(const struct droce_port *p, const uint8_t *frame)
{
	return (frame[0] & 1u) != 0 || memcmp(frame, p->mac, 6) == 0;
}

/*
 * Look at one received frame (@p b: its contiguous bytes): answer ARP and
 * ICMP, count and drop the rest; return true when it is a RoCE frame for
 * the context.
 */
static bool rx_one(struct droce_port *p, struct rte_mbuf *m, const uint8_t *b, uint64_t now)
{
	p->st.rx_frames++;
	p->st.rx_bytes += m->pkt_len;
	if (p->rx_ip_csum &&
	    (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD) {
		p->st.rx_csum_bad++;
		return false;
	}
	if (b == NULL)
		return false;
	if (unlikely(p->capture != NULL))
		droce_capture_write(p->capture, DROCE_CAPTURE_RX, b, m->pkt_len, now);
	enum droce_net_class c = droce_net_classify(b, m->pkt_len);
	p->st.rx_class[c]++;
	switch (c) {
	case DROCE_NET_ROCEV2_IPV4:
	case DROCE_NET_ROCEV2_IPV6:
	case DROCE_NET_ROCEV1:
		if (!mac_ours(p, b)) {
			p->st.rx_not_ours++;
			return false;
		}
		p->st.rx_roce++;
		return true;
	case DROCE_NET_ARP:
		if (p->arp != NULL) {
			uint8_t out[DROCE_ARP_FRAME_LEN + 4];
			size_t n = droce_arp_input(p->arp, b, m->pkt_len, now, out, sizeof(out));
			if (n != 0)
				send_ctrl(p, out, n, now);
		}
		return false;
	case DROCE_NET_ICMP:
		if (p->ip_version == 4 && mac_ours(p, b)) {
			size_t n = droce_icmp_echo_reply(b, m->pkt_len, p->mac, p->ip, p->reply_buf,
							 p->frame_max, &p->st.icmp);
			if (n != 0)
				send_ctrl(p, p->reply_buf, n, now);
		}
		return false;
	default:
		p->st.rx_other++;
		return false;
	}
}

/* Fill @p f from a kept mbuf whose bytes are @p b (NULL: drop it). */
static bool to_frame(struct rte_mbuf *m, const uint8_t *b, struct droce_rx_frame *f)
{
	if (b == NULL) {
		rte_pktmbuf_free(m);
		return false;
	}
	f->data = b;
	f->len = m->pkt_len;
	f->handle = m;
	return true;
}

static unsigned port_rx_burst(void *link, struct droce_rx_frame *f, unsigned n, uint64_t now)
{
	struct droce_port *p = link;
	if (n > p->burst)
		n = p->burst;
	unsigned k = 0;
	/* Frames resolve() had to take off the ring come first. */
	unsigned s = 0;
	for (; s < p->n_stash && k < n; s++) {
		struct rte_mbuf *m = p->stash[s];
		if (to_frame(m, rx_bytes(p, m, p->scratch + (size_t)k * p->frame_max), &f[k]))
			k++;
	}
	if (s != 0) {
		memmove(p->stash, p->stash + s, (p->n_stash - s) * sizeof(p->stash[0]));
		p->n_stash -= s;
	}
	if (k == n)
		return k;
	struct rte_mbuf *pkts[n];
	uint64_t ctrl0 = p->st.tx_ctrl;
	uint16_t got = rte_eth_rx_burst(p->port_id, p->queue, pkts, (uint16_t)(n - k));
	for (uint16_t i = 0; i < got; i++) {
		struct rte_mbuf *m = pkts[i];
		/* Linearised (if chained) straight into the slot it would take. */
		const uint8_t *b = rx_bytes(p, m, p->scratch + (size_t)k * p->frame_max);
		if (rx_one(p, m, b, now)) {
			f[k].data = b;
			f[k].len = m->pkt_len;
			f[k].handle = m;
			k++;
		} else {
			rte_pktmbuf_free(m);
		}
	}
	/* Answer pings and ARP now, not when the engine next transmits. */
	if (p->st.tx_ctrl != ctrl0)
		batch_send(p);
	return k;
}

static void port_rx_release(void *link, struct droce_rx_frame *f, unsigned n)
{
	(void)link;
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(f[i].handle);
}

static const struct droce_link_ops port_ops = {
	.tx = port_tx,
	.tx_flush = port_tx_flush,
	.rx_burst = port_rx_burst,
	.rx_release = port_rx_release,
};

/* Copy mode: the port copies every frame, so it folds the ICRC into that copy. */
static const struct droce_link_ops port_copy_ops = {
	.tx = port_tx,
	.tx_flush = port_tx_flush,
	.rx_burst = port_rx_burst,
	.rx_release = port_rx_release,
	.tx_fold = port_tx_fold,
};

struct droce_link droce_port_link(struct droce_port *p)
{
	struct droce_link l = {.ops = p->zc ? &port_ops : &port_copy_ops, .priv = p};
	return l;
}

/* ------------------------------------------------------------------ */
/* Neighbours */

int droce_port_resolve(struct droce_port *p, const uint8_t ip[4], uint8_t mac[6], uint64_t now)
{
	if (p == NULL || ip == NULL || mac == NULL || p->arp == NULL)
		return -EINVAL;
	uint8_t req[DROCE_ARP_FRAME_LEN];
	size_t req_len = 0;
	int rc = droce_arp_resolve(p->arp, ip, mac, now, req, sizeof(req), &req_len);
	if (rc != -EAGAIN)
		return rc;
	if (req_len != 0)
		send_ctrl(p, req, req_len, now);
	batch_send(p);
	/* Take one burst off the ring for the reply; keep RoCE frames. */
	struct rte_mbuf *pkts[STASH_MAX];
	uint16_t got = rte_eth_rx_burst(p->port_id, p->queue, pkts, STASH_MAX);
	for (uint16_t i = 0; i < got; i++) {
		const uint8_t *b = rx_bytes(p, pkts[i], p->ctrl_buf);
		if (rx_one(p, pkts[i], b, now)) {
			if (p->n_stash < STASH_MAX) {
				p->stash[p->n_stash++] = pkts[i];
				continue;
			}
			p->st.rx_stash_drop++;
		}
		rte_pktmbuf_free(pkts[i]);
	}
	batch_send(p);
	return droce_arp_lookup(p->arp, ip, mac, now) == 0 ? 0 : -EAGAIN;
}

int droce_port_add_neighbour(struct droce_port *p, const uint8_t ip[4], const uint8_t mac[6])
{
	if (p == NULL || p->arp == NULL)
		return -EINVAL;
	return droce_arp_add_static(p->arp, ip, mac);
}

void droce_port_set_capture(struct droce_port *p, struct droce_capture *cap)
{
	if (p != NULL)
		p->capture = cap;
}

unsigned droce_port_tx_pending(const struct droce_port *p)
{
	return p != NULL ? p->n_batch : 0;
}

int droce_port_get_stats(const struct droce_port *p, struct droce_port_stats *out)
{
	if (p == NULL || out == NULL)
		return -EINVAL;
	*out = p->st;
	out->zc_released = p->st.zc_attached - zc_held(p);
	if (p->arp != NULL)
		droce_arp_get_stats(p->arp, &out->arp);
	return 0;
}

int droce_port_get_info(const struct droce_port *p, struct droce_port_info *out)
{
	if (p == NULL || out == NULL)
		return -EINVAL;
	*out = p->info;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Open and close */

static uint64_t pool_bytes(const struct rte_mempool *mp)
{
	if (mp == NULL)
		return 0;
	return (uint64_t)mp->size * (mp->header_size + mp->elt_size + mp->trailer_size);
}

static void queue_free(struct droce_port *p)
{
	if (p == NULL)
		return;
	/* Give the PMD a chance to return attached payload before the
	 * external-mbuf pool goes away (bounded: a PMD may hold mbufs). */
	for (unsigned i = 0; p->zc && i < CLOSE_WAIT_MS; i++) {
		batch_send(p);
		if (p->n_batch == 0 && zc_held(p) == 0)
			break;
		rte_eth_tx_done_cleanup(p->port_id, p->queue, 0);
		rte_delay_us_sleep(1000);
	}
	for (unsigned i = 0; i < p->n_batch; i++)
		rte_pktmbuf_free(p->batch[i]);
	for (unsigned i = 0; i < p->n_stash; i++)
		rte_pktmbuf_free(p->stash[i]);
	droce_arp_destroy(p->arp);
	free(p->batch);
	free(p->scratch);
	free(p->ctrl_buf);
	free(p->reply_buf);
	/* Pools are freed after the device is closed (the PMD may still hold
	 * RX mbufs); see droce_port_close(). */
}

static void pools_free(struct droce_port *p)
{
	rte_mempool_free(p->rx_pool);
	rte_mempool_free(p->tx_pool);
	rte_mempool_free(p->ext_pool);
	free(p);
}

/* Mempools of one queue, sized from the ring depths and the burst:
 *  rx:  rx_desc (the ring) + 2 bursts held by the context + the cache;
 *  tx:  tx_desc + the batch (2 bursts) + the cache, direct mbufs;
 *  ext: one per attached segment (data room 0; its private area holds
 *       the segment's shared info). */
static int queue_pools(struct droce_port *p, const struct droce_port_conf *c, int socket)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	unsigned n_rx = c->rx_desc + 2 * p->burst + MEMPOOL_CACHE;
	unsigned n_tx = c->tx_desc + 2 * p->burst + MEMPOOL_CACHE;
	unsigned n_ext = p->zc ? (c->tx_desc + 2 * p->burst) * 2 + MEMPOOL_CACHE : 0;
	/* At least the standard 2 KB data room: some PMDs size their own
	 * buffers from it (af_packet wants its frame size to fit). */
	uint32_t room = RTE_ALIGN_CEIL(p->frame_max, 64);
	if (room < RX_MIN_ROOM)
		room = RX_MIN_ROOM;
	uint32_t tx_room = p->zc ? ZC_DIRECT_ROOM : room;

	snprintf(name, sizeof(name), "drx%u_%u", p->port_id, p->queue);
	p->rx_pool = rte_pktmbuf_pool_create(name, n_rx, MEMPOOL_CACHE, 0,
					     (uint16_t)(RTE_PKTMBUF_HEADROOM + room), socket);
	snprintf(name, sizeof(name), "dtx%u_%u", p->port_id, p->queue);
	p->tx_pool = rte_pktmbuf_pool_create(name, n_tx, MEMPOOL_CACHE, 0,
					     (uint16_t)(RTE_PKTMBUF_HEADROOM + tx_room), socket);
	if (p->rx_pool == NULL || p->tx_pool == NULL)
		return -ENOMEM;
	if (p->zc) {
		snprintf(name, sizeof(name), "dext%u_%u", p->port_id, p->queue);
		p->ext_pool = rte_pktmbuf_pool_create(
			name, n_ext, MEMPOOL_CACHE,
			RTE_ALIGN_CEIL(sizeof(struct zc_shinfo), RTE_MBUF_PRIV_ALIGN), 0, socket);
		if (p->ext_pool == NULL)
			return -ENOMEM;
		rte_mempool_obj_iter(p->ext_pool, zc_shinfo_init, NULL);
	}
	p->info.rx_pool_n = n_rx;
	p->info.tx_pool_n = n_tx;
	p->info.ext_pool_n = n_ext;
	return 0;
}

/* Largest IBTA path MTU whose biggest frame (4198 - 4096 = 102 bytes of
 * headers and ICRC, see DROCE_PORT_JUMBO_FRAME) fits in @p frame_max. */
static uint32_t roce_mtu_for(uint32_t frame_max)
{
	for (uint32_t mtu = 4096; mtu >= 256; mtu /= 2)
		if (mtu + 102 <= frame_max)
			return mtu;
	return 0;
}

/*
 * PMDs whose ethdev MTU limit is nominal: DPDK 22.11's memif advertises a
 * 1518-byte frame yet chains its 2 KB ring buffers for any frame length
 * (testpmd moves 4 KB frames over it), and net_ring moves mbuf pointers.
 * On those droce keeps frame_max (jumbo) whatever the MTU check says.
 */
static bool mtu_is_nominal(const char *driver)
{
	return strcmp(driver, "net_memif") == 0 || strcmp(driver, "net_ring") == 0;
}

/*
 * PMDs that copy every frame, segment by segment, into a ring of their own
 * (DPDK 22.11's memif: rte_memcpy of each mbuf into the shared buffers).
 * Attaching the payload there saves no copy; it only adds the external
 * mbuf and a segment per frame to memif's loop and its free. So the port
 * copies instead, into one mbuf, folding the ICRC into that copy
 * (tx_fold): fewer instructions per frame and faster side by side
 * (docs/benchmarks.md, "The bulk TX path over memif").
 */
static bool pmd_copies_tx(const char *driver)
{
	return strcmp(driver, "net_memif") == 0;
}

static int check_conf(const struct droce_port_conf *c)
{
	if (c == NULL || c->nb_queues == 0 || c->burst == 0 || c->rx_desc == 0 ||
	    c->tx_desc == 0 || c->frame_max < 60 || c->frame_max > 9600 ||
	    (c->ip_version != 4 && c->ip_version != 6))
		return -EINVAL;
	if (!rte_eth_dev_is_valid_port(c->port_id))
		return -ENODEV;
	return 0;
}

int droce_port_open_queues(const struct droce_port_conf *conf, struct droce_port **out)
{
	int rc = check_conf(conf);
	if (rc != 0 || out == NULL)
		return rc != 0 ? rc : -EINVAL;
	uint16_t pid = conf->port_id;
	struct rte_eth_dev_info di;
	rc = rte_eth_dev_info_get(pid, &di);
	if (rc != 0)
		return rc;
	if (conf->nb_queues > di.max_rx_queues || conf->nb_queues > di.max_tx_queues)
		return -EINVAL;

	struct rte_eth_conf ec;
	memset(&ec, 0, sizeof(ec));
	bool multi_seg = (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
	bool use_multi_seg = multi_seg || conf->force_multi_seg;
	bool rx_csum = (di.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
	bool tx_csum = (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
	if (multi_seg)
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (rx_csum)
		ec.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	if (tx_csum)
		ec.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	if (conf->nb_queues > 1) {
		/* Spread RoCE flows by their UDP ports (A17.5.1.1 entropy). */
		ec.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		ec.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP) &
			di.flow_type_rss_offloads;
	}
	/* MTU for the largest frame; a PMD that refuses gets its maximum,
	 * and the context must then use the smaller roce_mtu we report. */
	uint32_t want_mtu = conf->frame_max - RTE_ETHER_HDR_LEN;
	bool fallback = false;
	uint32_t mtu = want_mtu;
	if (di.max_mtu != 0 && mtu > di.max_mtu) {
		mtu = di.max_mtu;
		fallback = true;
	}
	ec.rxmode.mtu = mtu;
	rc = rte_eth_dev_configure(pid, conf->nb_queues, conf->nb_queues, &ec);
	if (rc != 0 && mtu > RTE_ETHER_MTU) {
		ec.rxmode.mtu = mtu = RTE_ETHER_MTU;
		fallback = true;
		rc = rte_eth_dev_configure(pid, conf->nb_queues, conf->nb_queues, &ec);
	}
	if (rc != 0)
		return rc;
	uint16_t got_mtu = 0;
	if (rte_eth_dev_get_mtu(pid, &got_mtu) == 0 && got_mtu != 0 && got_mtu < mtu) {
		mtu = got_mtu;
		fallback = true;
	}
	/* The frames we carry: the MTU's, or frame_max on a PMD whose MTU is
	 * nominal (it chains buffers and checks nothing). */
	uint32_t frame_max = mtu + RTE_ETHER_HDR_LEN;
	if (frame_max > conf->frame_max)
		frame_max = conf->frame_max;
	if (fallback && mtu_is_nominal(di.driver_name)) {
		fprintf(stderr,
			"droce: port %u (%s) advertises MTU %u but chains buffers: carrying "
			"frames up to %u bytes\n",
			pid, di.driver_name, mtu, conf->frame_max);
		frame_max = conf->frame_max;
		fallback = false;
	} else if (fallback) {
		fprintf(stderr,
			"droce: port %u (%s) refused MTU %u; using %u (RoCE path MTU <= %u)\n",
			pid, di.driver_name, want_mtu, mtu, roce_mtu_for(frame_max));
	}
	uint16_t rx_desc = conf->rx_desc, tx_desc = conf->tx_desc;
	rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rx_desc, &tx_desc);
	int socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = (int)rte_socket_id();
	if (socket < 0)
		socket = SOCKET_ID_ANY;

	struct port_dev *dev = calloc(1, sizeof(*dev) + conf->nb_queues * sizeof(dev->q[0]));
	if (dev == NULL)
		return -ENOMEM;
	dev->port_id = pid;
	dev->nb_queues = conf->nb_queues;
	for (unsigned q = 0; q < conf->nb_queues; q++)
		out[q] = NULL;
	struct droce_port_conf qc = *conf;
	qc.rx_desc = rx_desc;
	qc.tx_desc = tx_desc;
	unsigned made = 0;
	for (; made < conf->nb_queues; made++) {
		struct droce_port *p = calloc(1, sizeof(*p));
		if (p == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		out[made] = p;
		dev->q[made] = p;
		p->dev = dev;
		p->port_id = pid;
		p->queue = (uint16_t)made;
		p->burst = conf->burst;
		p->frame_max = frame_max;
		p->inline_thr = conf->inline_threshold > MAX_INLINE ? MAX_INLINE
								     : conf->inline_threshold;
		p->drain_ns = conf->drain_ns;
		p->multi_seg = use_multi_seg;
		p->zc = conf->zero_copy && use_multi_seg &&
			(conf->force_zero_copy || !pmd_copies_tx(di.driver_name));
		p->seg_max = di.tx_desc_lim.nb_mtu_seg_max;
		p->iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
		p->rx_ip_csum = rx_csum;
		p->tx_ip_csum = tx_csum;
		p->ip_version = conf->ip_version;
		memcpy(p->ip, conf->ip, 16);
		p->batch_cap = 2 * p->burst;
		p->batch = calloc(p->batch_cap, sizeof(p->batch[0]));
		p->scratch = malloc((size_t)p->burst * p->frame_max);
		p->ctrl_buf = malloc(p->frame_max);
		p->reply_buf = malloc(p->frame_max);
		if (p->batch == NULL || p->scratch == NULL || p->ctrl_buf == NULL ||
		    p->reply_buf == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		rc = queue_pools(p, &qc, socket);
		if (rc != 0)
			goto fail;
		rc = rte_eth_rx_queue_setup(pid, p->queue, rx_desc, (unsigned)socket, NULL,
					    p->rx_pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(pid, p->queue, tx_desc, (unsigned)socket, NULL);
		if (rc != 0)
			goto fail;
	}
	if (conf->set_mac) {
		struct rte_ether_addr a;
		memcpy(a.addr_bytes, conf->mac, 6);
		rc = rte_eth_dev_default_mac_addr_set(pid, &a);
		if (rc != 0)
			goto fail;
	}
	rc = rte_eth_dev_start(pid);
	if (rc != 0)
		goto fail;
	if (conf->promiscuous)
		rte_eth_promiscuous_enable(pid);
	struct rte_ether_addr addr;
	rte_eth_macaddr_get(pid, &addr);
	dev->open_queues = conf->nb_queues;

	for (unsigned q = 0; q < conf->nb_queues; q++) {
		struct droce_port *p = out[q];
		memcpy(p->mac, addr.addr_bytes, 6);
		if (p->ip_version == 4) {
			struct droce_arp_conf ac;
			memset(&ac, 0, sizeof(ac));
			memcpy(ac.mac, p->mac, 6);
			memcpy(ac.ip, p->ip, 4);
			ac.entries = conf->arp_entries;
			ac.ttl_ns = conf->arp_ttl_ns;
			p->arp = droce_arp_create(&ac);
			if (p->arp == NULL) {
				/* A zero or multicast address: no ARP, no ping. */
				fprintf(stderr, "droce: port %u: no valid IPv4 address, ARP off\n",
					pid);
			}
		}
		struct droce_port_info *in = &p->info;
		snprintf(in->driver, sizeof(in->driver), "%s", di.driver_name);
		in->port_id = pid;
		in->queue = p->queue;
		memcpy(in->mac, p->mac, 6);
		in->mtu = mtu;
		in->frame_max = p->frame_max;
		in->roce_mtu = roce_mtu_for(p->frame_max);
		in->mtu_fallback = fallback;
		in->multi_seg = use_multi_seg;
		in->zero_copy = p->zc;
		in->rx_ip_csum = rx_csum;
		in->tx_ip_csum = tx_csum;
		in->footprint_bytes = pool_bytes(p->rx_pool) + pool_bytes(p->tx_pool) +
				      pool_bytes(p->ext_pool) +
				      (uint64_t)p->burst * p->frame_max + 2ull * p->frame_max +
				      p->batch_cap * sizeof(p->batch[0]) + sizeof(*p);
	}
	/* RFC 5227 announcement so switches and peers learn our MAC now. */
	if (conf->gratuitous_arp && out[0]->arp != NULL) {
		uint8_t g[DROCE_ARP_FRAME_LEN];
		size_t n = droce_arp_gratuitous(out[0]->arp, g, sizeof(g));
		if (n != 0) {
			send_ctrl(out[0], g, n, 0);
			batch_send(out[0]);
		}
	}
	return 0;

fail:
	rte_eth_dev_stop(pid);
	rte_eth_dev_close(pid);
	for (unsigned q = 0; q <= made && q < conf->nb_queues; q++) {
		if (out[q] == NULL)
			continue;
		queue_free(out[q]);
		pools_free(out[q]);
		out[q] = NULL;
	}
	free(dev);
	return rc;
}

struct droce_port *droce_port_open(const struct droce_port_conf *conf)
{
	if (conf == NULL || conf->nb_queues != 1) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_port *p = NULL;
	int rc = droce_port_open_queues(conf, &p);
	if (rc != 0) {
		errno = -rc;
		return NULL;
	}
	return p;
}

void droce_port_close(struct droce_port *p)
{
	if (p == NULL)
		return;
	struct port_dev *dev = p->dev;
	queue_free(p);
	if (--dev->open_queues != 0)
		return;
	/* A link already down means the peer just went away (a memif peer
	 * closing its end): DPDK 22.11's memif handles that disconnect on the
	 * EAL interrupt thread, and closing the device while it does frees
	 * the control channel twice (a crash in rte_intr_fd_get, seen in the
	 * e2e suite). Give the interrupt thread time to finish first. */
	struct rte_eth_link link;
	if (rte_eth_link_get_nowait(dev->port_id, &link) == 0 && !link.link_status)
		rte_delay_us_sleep(CLOSE_SETTLE_US);
	/* The last queue: stop the device, then free every queue's pools
	 * (the PMD held RX mbufs of all of them until now). */
	rte_eth_dev_stop(dev->port_id);
	rte_eth_dev_close(dev->port_id);
	for (unsigned q = 0; q < dev->nb_queues; q++)
		pools_free(dev->q[q]);
	free(dev);
}
