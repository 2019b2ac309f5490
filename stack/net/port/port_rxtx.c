/* SPDX-License-Identifier: BSD-3-Clause */
/* A DPDK ethdev queue as a droce link: ARP/ICMP, zero-copy TX (see port.h). */
#include "net/port/port_int.h"

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

#include "net/diag/capture.h"
#include "net/link/tx_fold.h"
#include "net/port/port_guard.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/icrc.h"

/* ------------------------------------------------------------------ */
/* TX */

/*
 * Free callback of an external buffer: the PMD is done with the payload.
 * Nothing to count here: the external mbuf goes back to ext_pool right
 * after, so the pool's occupancy says how many segments the PMD still
 * holds (droce_port_zc_held). A counter here had to be atomic (a PMD may free on
 * another lcore, a ring consumer), and on memif that locked add came right
 * after the PMD's 4 KB copy into its ring, where it waited for all of the
 * copy's stores to drain: 4.2% of a 64 KB write_bw sender.
 */
static void zc_release(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
}

/* Attached segments the PMD has not released yet: external mbufs out of
 * their pool. Walks every lcore's pool cache: for stats and close only. */
uint64_t droce_port_zc_held(const struct droce_port *p)
{
	return p->ext_pool != NULL ? rte_mempool_in_use_count(p->ext_pool) : 0;
}

/* rte_mempool_obj_iter callback: the constant half of each shared info. */
void droce_port_zc_shinfo_init(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	(void)mp;
	(void)arg;
	(void)idx;
	struct zc_shinfo *z = rte_mbuf_to_priv(obj);
	z->sh.free_cb = zc_release;
	z->sh.fcb_opaque = NULL;
}

uint16_t droce_port_rx_pmd(struct droce_port *p, struct rte_mbuf **pkts, uint16_t n)
{
	if (!p->guard)
		return rte_eth_rx_burst(p->port_id, p->queue, pkts, n);
	int r = droce_port_guard_rx(p->port_id, p->queue, pkts, n);
	if (likely(r >= 0))
		return (uint16_t)r;
	/* Cut short as in droce_port_batch_send: the mbufs the PMD had
	 * taken for this burst are forgotten. */
	p->st.rx_faulted++;
	return 0;
}

void droce_port_batch_send(struct droce_port *p)
{
	if (p->n_batch == 0)
		return;
	uint16_t sent;
	p->st.tx_bursts++;
	if (p->guard) {
		int r = droce_port_guard_tx(p->port_id, p->queue, p->batch, (uint16_t)p->n_batch);
		if (unlikely(r < 0)) {
			/* The peer went away while the PMD copied the batch into
			 * its ring: which of the mbufs it freed is unknown, so
			 * none is freed here (port_guard.c). The link is down;
			 * the engine's timers see the frames as lost. */
			p->st.tx_faulted++;
			p->st.tx_abandoned += p->n_batch;
			p->n_batch = 0;
			return;
		}
		sent = (uint16_t)r;
	} else {
		sent = rte_eth_tx_burst(p->port_id, p->queue, p->batch, (uint16_t)p->n_batch);
	}
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

/* A frame for ourselves: our MAC and our IP. Both, since the two ends of
 * a link may share a MAC (memif ports of processes forked after DPDK's
 * PRNG was seeded draw the same "random" one): such a frame for the
 * peer's IP goes to the link. */
static bool to_self(const struct droce_port *p, const struct droce_tx_frame *f)
{
	if (f->hdr_len < 14 || memcmp(f->hdr, p->mac, 6) != 0)
		return false;
	size_t l3 = droce_get_be16(f->hdr + 12) == DROCE_ETHERTYPE_VLAN ? 18 : 14;
	uint16_t et = droce_get_be16(f->hdr + l3 - 2);
	if (et == DROCE_ETHERTYPE_IPV4 && p->ip_version == 4 && f->hdr_len >= l3 + 20)
		return memcmp(f->hdr + l3 + 16, p->ip, 4) == 0;
	if (et == DROCE_ETHERTYPE_IPV6 && p->ip_version == 6 && f->hdr_len >= l3 + 40)
		return memcmp(f->hdr + l3 + 24, p->ip, 16) == 0;
	return false;
}

/* tx() and tx_fold(): @p fold says whether the ICRC is still to be folded
 * over the payload from @p crc (build_fold) or is in f->trailer. */
static int port_send(struct droce_port *p, const struct droce_tx_frame *f, bool fold,
		     uint32_t crc, uint64_t now)
{
	if (p->n_batch != 0 && now - p->batch_t0 >= p->drain_ns)
		droce_port_batch_send(p);
	if (p->n_batch >= p->batch_cap) {
		droce_port_batch_send(p);
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
	bool self = to_self(p, f);
	if (unlikely(self) && p->loop_n >= LOOP_MAX) {
		p->st.tx_nobufs++; /* the engine sends it again after our next rx_burst */
		return -ENOBUFS;
	}
	struct rte_mbuf *m = fold ? build_fold(p, f, crc) : build_tx(p, f);
	if (m == NULL) {
		droce_port_batch_send(p); /* completions may return mbufs */
		p->st.tx_nobufs++;
		return -ENOBUFS;
	}
	if (unlikely(self)) {
		/* the IP checksum as built (no offload: no NIC sees it) */
		if (unlikely(p->capture != NULL))
			droce_capture_write(p->capture, DROCE_CAPTURE_TX,
					    rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, now);
		p->loop[(p->loop_head + p->loop_n++) % LOOP_MAX] = m;
		p->st.tx_loopback++;
		return 0;
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
		droce_port_batch_send(p);
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
	droce_port_batch_send(link);
}

/* Queue an ARP/ICMP frame of ours (copied; chained when longer than a
 * direct mbuf of the zero-copy configuration). */
void droce_port_send_ctrl(struct droce_port *p, const uint8_t *frame, size_t len, uint64_t now)
{
	if (p->n_batch >= p->batch_cap)
		droce_port_batch_send(p);
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
				droce_port_send_ctrl(p, out, n, now);
		}
		return false;
	case DROCE_NET_ICMP:
		if (p->ip_version == 4 && mac_ours(p, b)) {
			size_t n = droce_icmp_echo_reply(b, m->pkt_len, p->mac, p->ip, p->reply_buf,
							 p->frame_max, &p->st.icmp);
			if (n != 0)
				droce_port_send_ctrl(p, p->reply_buf, n, now);
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

/* One frame off the ring (or the loopback queue) through rx_one: 1 when it
 * is the context's, in @p f (linearised, if chained, straight into slot
 * @p k of the scratch), else 0 and freed. */
static unsigned take(struct droce_port *p, struct rte_mbuf *m, struct droce_rx_frame *f, unsigned k,
		     uint64_t now)
{
	const uint8_t *b = rx_bytes(p, m, p->scratch + (size_t)k * p->frame_max);
	if (!rx_one(p, m, b, now)) {
		rte_pktmbuf_free(m);
		return 0;
	}
	f->data = b;
	f->len = m->pkt_len;
	f->handle = m;
	return 1;
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
	/* Then our own frames (loopback), through the same checks as the link's. */
	while (p->loop_n != 0 && k < n) {
		struct rte_mbuf *m = p->loop[p->loop_head];
		p->loop_head = (p->loop_head + 1) % LOOP_MAX;
		p->loop_n--;
		k += take(p, m, &f[k], k, now);
	}
	if (k == n)
		return k;
	struct rte_mbuf *pkts[n];
	uint64_t ctrl0 = p->st.tx_ctrl;
	uint16_t got = droce_port_rx_pmd(p, pkts, (uint16_t)(n - k));
	for (uint16_t i = 0; i < got; i++) {
		k += take(p, pkts[i], &f[k], k, now);
	}
	/* Answer pings and ARP now, not when the engine next transmits. */
	if (p->st.tx_ctrl != ctrl0)
		droce_port_batch_send(p);
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
		droce_port_send_ctrl(p, req, req_len, now);
	droce_port_batch_send(p);
	/* Take a burst off the ring for the reply, keeping RoCE frames for the
	 * next rx_burst: never more than the stash has room for, so no frame
	 * the context would have received is lost to a resolution (a caller
	 * asks again each poll while an address does not answer, and the poll
	 * drains only a burst of the stash at a time). A full stash leaves
	 * the reply on the ring until the poll has taken the frames. */
	struct rte_mbuf *pkts[STASH_MAX];
	uint16_t room = (uint16_t)(STASH_MAX - p->n_stash);
	uint16_t got = room ? droce_port_rx_pmd(p, pkts, room) : 0;
	for (uint16_t i = 0; i < got; i++) {
		const uint8_t *b = rx_bytes(p, pkts[i], p->ctrl_buf);
		if (rx_one(p, pkts[i], b, now)) {
			p->stash[p->n_stash++] = pkts[i]; /* room was counted above */
			continue;
		}
		rte_pktmbuf_free(pkts[i]);
	}
	droce_port_batch_send(p);
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
	out->zc_released = p->st.zc_attached - droce_port_zc_held(p);
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

