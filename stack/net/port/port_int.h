/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK port's own object, shared by its two halves: port.c (setup and
 * teardown: pools, queues, the ethdev) and port_rxtx.c (the datapath: the
 * link's tx / tx_flush / rx_burst / rx_release, ARP and ICMP answered in
 * the port, resolve). Nothing outside stack/net/port includes it.
 */
#ifndef DROCE_NET_PORT_PORT_INT_H
#define DROCE_NET_PORT_PORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "net/diag/capture.h"
#include "net/neigh/arp.h"
#include "net/port/port.h"

#define MEMPOOL_CACHE 128u
/* Direct mbufs of the zero-copy path carry headers, short segments and the
 * trailer: 2 KB leaves room for a whole header plus inline payload. */
#define ZC_DIRECT_ROOM 2048u
#define MAX_INLINE 256u
#define RX_MIN_ROOM 2048u
#define STASH_MAX 64u
/* Frames to our own MAC and IP waiting for the next rx_burst (loopback). */
#define LOOP_MAX 512u
/* How often a port that would not start is asked again (start_wait_ns). */
#define START_RETRY_US 10000u
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
	bool guard;                     /* bursts fault-contained (memif: port_guard.c) */
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

	/* Loopback: frames sent to our own MAC and IP (two QPs of this port talking
	 * to each other, one context or two), received by the next rx_burst
	 * in the order sent, as a NIC or rxe turns them around; the link
	 * never sees them, so no peer is needed. */
	struct rte_mbuf *loop[LOOP_MAX];
	unsigned loop_head, loop_n;

	uint8_t *scratch;               /* burst * frame_max: linearised RX */
	uint8_t *ctrl_buf;              /* frame_max: frames resolve() linearises */
	uint8_t *reply_buf;             /* frame_max: ICMP echo replies */
	struct droce_arp *arp;
	struct droce_capture *capture;
	struct droce_port_stats st;
	struct droce_port_info info;
};
/* port_rxtx.c: the pool's object initialiser of the external-buffer mbufs
 * (their shared info's callback, set once). */
void droce_port_zc_shinfo_init(struct rte_mempool *mp, void *arg, void *obj, unsigned idx);

/* port_rxtx.c: extern buffers the PMD still holds (the pool's occupancy). */
uint64_t droce_port_zc_held(const struct droce_port *p);
/* port_rxtx.c: the PMD's RX burst (fault-contained on a guarded port). */
uint16_t droce_port_rx_pmd(struct droce_port *p, struct rte_mbuf **pkts, uint16_t n);
/* port_rxtx.c: send the TX batch now. */
void droce_port_batch_send(struct droce_port *p);
/* port_rxtx.c: send one control frame (ARP, ICMP) built in @p frame. */
void droce_port_send_ctrl(struct droce_port *p, const uint8_t *frame, size_t len, uint64_t now);

#endif
