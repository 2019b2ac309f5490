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
#include <rte_log.h>
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
	for (; p->loop_n != 0; p->loop_n--, p->loop_head = (p->loop_head + 1) % LOOP_MAX)
		rte_pktmbuf_free(p->loop[p->loop_head]);
	/* Give the PMD a chance to return attached payload before the
	 * external-mbuf pool goes away (bounded: a PMD may hold mbufs). */
	for (unsigned i = 0; p->zc && i < CLOSE_WAIT_MS; i++) {
		droce_port_batch_send(p);
		if (p->n_batch == 0 && droce_port_zc_held(p) == 0)
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
		rte_mempool_obj_iter(p->ext_pool, droce_port_zc_shinfo_init, NULL);
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

/*
 * PMDs whose shared memory another thread unmaps while the poll thread
 * may be inside a burst: DPDK 22.11's memif, on its EAL interrupt thread,
 * when the peer's control connection ends. Their bursts run
 * fault-contained (port_guard.c).
 */
static bool pmd_unmaps_under_burst(const char *driver)
{
	return strcmp(driver, "net_memif") == 0;
}

/*
 * DROCE_MEMIF_GUARD=off leaves such a port's bursts unguarded: only to
 * measure what the guard costs (docs/benchmarks.md, "The memif burst
 * guard"); a peer vanishing mid-burst can then crash the process again.
 * Read once per port open, so the bursts pay nothing for the choice.
 */
static bool guard_wanted(const char *driver)
{
	const char *e = getenv("DROCE_MEMIF_GUARD");
	return pmd_unmaps_under_burst(driver) && (e == NULL || strcmp(e, "off") != 0);
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

/* rte_eth_dev_start(), asked again every few ms for conf->start_wait_ns
 * while it fails (a memif client whose server has not made its socket:
 * ranks of one job start at the same instant) and, for the client end of
 * a link, while its link does not come up (its server turned it away). */
static int start(uint16_t pid, const struct droce_port_conf *conf, const char *driver,
		 uint64_t *tries)
{
	const uint64_t hz = rte_get_tsc_hz(), t0 = rte_get_tsc_cycles();
	const uint64_t wait = (uint64_t)((double)conf->start_wait_ns * (double)hz / 1e9);
	int log = -1, level = 0, rc;
	for (;;) {
		rc = rte_eth_dev_start(pid);
		bool late = rte_get_tsc_cycles() - t0 >= wait;
		if (rc == 0 && (!conf->start_needs_link || late))
			break;
		if (rc == 0) {
			/* up within a second, or the server sent us away */
			struct rte_eth_link link = {0};
			uint64_t until = rte_get_tsc_cycles() + hz;
			while (rte_eth_link_get_nowait(pid, &link) == 0 && !link.link_status &&
			       rte_get_tsc_cycles() < until && rte_get_tsc_cycles() - t0 < wait)
				rte_delay_us_sleep(1000);
			if (link.link_status || rte_get_tsc_cycles() - t0 >= wait)
				break;
			rte_eth_dev_stop(pid);
		} else if (late) {
			break;
		}
		if ((*tries)++ == 0) {
			fprintf(stderr, "droce: port %u (%s) does not start yet: asking again for up "
				"to %.1f s\n", pid, driver, (double)conf->start_wait_ns / 1e9);
			/* one line from us, not one per try from the PMD */
			log = rte_log_register("pmd.net.memif");
			if (log >= 0) {
				level = rte_log_get_level((uint32_t)log);
				rte_log_set_level((uint32_t)log, RTE_LOG_CRIT);
			}
		}
		rte_delay_us_sleep(START_RETRY_US);
	}
	if (log >= 0)
		rte_log_set_level((uint32_t)log, (uint32_t)level);
	return rc;
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
	bool guard = guard_wanted(di.driver_name);
	if (guard) {
		rc = droce_port_guard_init();
		if (rc != 0)
			return rc;
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
		p->guard = guard;
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
	uint64_t starts = 0;
	rc = start(pid, conf, di.driver_name, &starts);
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
			} else {
				/* our own address is our MAC: a QP connected to
				 * another of this port resolves at once (loopback) */
				droce_arp_add_static(p->arp, p->ip, p->mac);
			}
		}
		p->st.start_retries = starts;
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
			droce_port_send_ctrl(out[0], g, n, 0);
			droce_port_batch_send(out[0]);
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
