/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A DPDK ethdev port queue as a struct droce_link (include/droce/link.h):
 * what a context binds to move frames on any PMD (a real NIC, memif,
 * af_packet, net_pcap, net_ring).
 *
 * One struct droce_port is one RX/TX queue pair of one ethdev, with its own
 * mempools, TX batch, ARP table and counters, driven by exactly one thread
 * (principle 1, docs/architecture.md). Several contexts on several lcores: open the device
 * with droce_port_open_queues() and nb_queues = number of contexts, give
 * each context the link of one queue, and run each context's poll loop on
 * its own lcore. RSS spreads RoCE flows (the UDP source port is the entropy,
 * A17.5.1.1); ARP and ICMP arrive wherever the NIC puts them, usually queue
 * 0, and each queue answers what it receives.
 *
 * RX: the link's rx_burst() answers ARP (arp.c) and ICMP echo (icmp.c)
 * itself, counts and drops what is neither RoCE nor for our MAC, and hands
 * RoCE frames (RoCEv2 over IPv4 and IPv6, RoCEv1) to the context as
 * contiguous bytes; rx_release() frees the mbufs. Mbufs are sized for the
 * largest frame, so frames are contiguous; a PMD that chains anyway is
 * linearised into a per-queue scratch buffer.
 *
 * TX: zero-copy for payload. A header mbuf (a copy of droce_tx_frame.hdr)
 * is chained with one mbuf per payload segment attached as an external
 * buffer (rte_pktmbuf_attach_extbuf; the registered memory is read by the
 * PMD and released through a shared info kept in the external mbuf's private
 * area; the mbufs back in their pool count the releases), then the trailer
 * (pad + ICRC) copied into the last direct mbuf. Segments shorter than the
 * inline threshold are copied, as is the whole frame when its payload is
 * that short or the PMD cannot send chained mbufs (no
 * RTE_ETH_TX_OFFLOAD_MULTI_SEGS).
 *
 * Copy mode (zero_copy off, or a PMD that copies every frame into its own
 * ring anyway: memif): each frame is one direct mbuf; the link offers
 * tx_fold(), so the context leaves the ICRC of payloads over 1 KB to the
 * port, which folds it into its copy of the payload (droce_crc32_copy: one
 * read of the registered memory instead of the ICRC's and the copy's).
 *
 * Frames are batched and
 * sent when the batch is full, when the engine calls tx_flush(), or when a
 * frame has waited drain_ns (the l2fwd timed drain).
 *
 * Capture: droce_port_set_capture() mirrors every RX and TX frame into a
 * pcap file (capture.h); off by default, one predictable branch when off.
 */
#ifndef DROCE_NET_PORT_PORT_H
#define DROCE_NET_PORT_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/link.h>

#include "net/neigh/arp.h"
#include "net/neigh/classify.h"
#include "net/neigh/icmp.h"

struct droce_capture;
struct droce_port;

/**
 * Largest Ethernet frame (FCS excluded) a 4096-byte RoCE MTU needs:
 * Ethernet 14 + 802.1Q 4 + IPv6 40 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 +
 * 4096 payload + ICRC 4 = 4198, rounded up.
 */
#define DROCE_PORT_JUMBO_FRAME 4224u
/** Defaults of struct droce_port_conf. */
#define DROCE_PORT_DEFAULT_DESC 1024u
#define DROCE_PORT_DEFAULT_INLINE 256u
#define DROCE_PORT_DEFAULT_DRAIN_NS 100000u

/** Port settings; droce_port_conf_init() fills the defaults. */
struct droce_port_conf {
	uint16_t port_id;          /**< ethdev port */
	uint16_t nb_queues;        /**< queue pairs (one per context); droce_port_open() wants 1 */
	uint16_t rx_desc, tx_desc; /**< ring sizes per queue */
	uint32_t burst;            /**< RX burst and TX batch size */
	uint32_t frame_max;        /**< largest frame to carry; sets the MTU */
	uint32_t inline_threshold; /**< payload segments shorter than this are copied (<= 256) */
	uint64_t drain_ns;         /**< a batched frame waits at most this long */
	bool zero_copy;            /**< attach payload as external buffers (default true),
				        except on a PMD that copies every frame into its own
				        ring (memif): there the port copies and folds the
				        ICRC into that copy (droce_link_ops.tx_fold) */
	bool force_zero_copy;      /**< attach on such a PMD too (tests of that path) */
	bool force_multi_seg;      /**< trust the PMD with chained mbufs although it does not
				        advertise RTE_ETH_TX_OFFLOAD_MULTI_SEGS (for a PMD known
				        to pass chains intact) */
	bool promiscuous;          /**< accept frames for any MAC (default false) */
	bool gratuitous_arp;       /**< announce our address at start (default true) */
	bool set_mac;              /**< use @p mac instead of the port's own */
	uint8_t mac[6];
	uint8_t ip_version;        /**< 4 or 6 */
	uint8_t ip[16];            /**< our address; ARP and ICMP answer for IPv4 */
	unsigned arp_entries;      /**< ARP table size per queue; 0 = 64 */
	uint64_t arp_ttl_ns;       /**< ARP entry lifetime; 0 = 60 s */
	/** Starting the port may fail until its link partner is there (a memif
	 * client before its server made the socket): retry every few ms for
	 * this long before giving up; 0 = one try. */
	uint64_t start_wait_ns;
	/** The port is the client end of its link (a memif client): within
	 * start_wait_ns it is also started again until its link comes up. A
	 * memif server listens from EAL's start but turns clients away until
	 * its own port starts, and DPDK's client never asks again. */
	bool start_needs_link;
};

/** Counters of one queue. */
struct droce_port_stats {
	uint64_t rx_frames, rx_bytes;
	uint64_t rx_class[DROCE_NET__COUNT]; /**< every received frame, by class */
	uint64_t rx_roce;          /**< handed to the context */
	uint64_t rx_not_ours;      /**< RoCE frames for another unicast MAC, dropped */
	uint64_t rx_other;         /**< not RoCE, ARP or ICMP: dropped */
	uint64_t rx_csum_bad;      /**< the PMD flagged a bad IPv4 header checksum */
	uint64_t rx_linearised;    /**< chained frames copied into the scratch buffer */
	uint64_t rx_too_long;      /**< chained frames longer than frame_max, dropped */
	uint64_t rx_stash_drop;    /**< RoCE frames received by resolve() with a full stash */
	uint64_t tx_frames, tx_bytes, tx_bursts;
	uint64_t tx_zc_frames;     /**< frames with at least one external payload segment */
	uint64_t tx_copied_frames; /**< frames sent as one copied mbuf chain */
	uint64_t tx_inline_segs;   /**< payload segments copied for being short */
	uint64_t tx_nobufs;        /**< tx() refused: batch full and the PMD busy, or no mbufs */
	uint64_t tx_too_long;      /**< frames over frame_max (or too many segments): dropped */
	uint64_t tx_faulted;       /**< TX bursts cut short by the PMD's regions unmapped under
				        them (a memif peer gone mid-burst; port_guard.c) */
	uint64_t tx_abandoned;     /**< ... the frames of those bursts, forgotten (not freed) */
	uint64_t rx_faulted;       /**< RX bursts cut short the same way */
	uint64_t tx_ctrl;          /**< ARP and ICMP frames sent */
	uint64_t tx_loopback;      /**< frames to our own MAC and IP, handed to our RX (never on the link) */
	uint64_t start_retries;    /**< rte_eth_dev_start() attempts before the one that worked */
	uint64_t tx_ctrl_drop;     /**< ARP/ICMP answers dropped for lack of room */
	uint64_t zc_attached;      /**< external buffers attached */
	uint64_t zc_released;      /**< ... and released by the PMD (their mbufs back in
				        the pool; read when the stats are taken) */
	struct droce_arp_stats arp;
	struct droce_icmp_stats icmp;
};

/** What the port turned out to be. */
struct droce_port_info {
	char driver[32];
	uint16_t port_id, queue;
	uint8_t mac[6];
	uint32_t mtu;              /**< ethdev (L3) MTU in effect */
	uint32_t frame_max;        /**< largest frame it carries */
	uint32_t roce_mtu;         /**< largest IBTA path MTU that fits (256..4096) */
	bool mtu_fallback;         /**< the PMD refused frame_max; see mtu */
	bool multi_seg;            /**< PMD sends chained mbufs */
	bool zero_copy;            /**< zero-copy TX in effect */
	bool rx_ip_csum, tx_ip_csum; /**< IPv4 checksum offloads in use */
	unsigned rx_pool_n, tx_pool_n, ext_pool_n; /**< mbufs per pool */
	uint64_t footprint_bytes;  /**< memory of this queue's pools and buffers */
};

/** Fill @p c with the defaults (port 0, one queue, zero copy, jumbo frames). */
void droce_port_conf_init(struct droce_port_conf *c);

/**
 * Configure and start an ethdev with conf->nb_queues queue pairs; one
 * struct droce_port per queue is written to @p out.
 * @return 0, or a negative errno: -ENODEV (no such port), -EINVAL (bad
 *         conf: zero queues, more than the PMD has, no address, ...),
 *         -ENOMEM (mempools), or the ethdev call's error. On failure
 *         nothing stays open.
 */
int droce_port_open_queues(const struct droce_port_conf *conf, struct droce_port **out);

/** droce_port_open_queues() with one queue. @return the port, or NULL with errno. */
struct droce_port *droce_port_open(const struct droce_port_conf *conf);

/**
 * Close one queue; the device is stopped and closed with its last queue.
 * Waits (bounded) for the PMD to return attached payload buffers.
 */
void droce_port_close(struct droce_port *p);

/** The link a context uses (struct droce_ctx_params.link). */
struct droce_link droce_port_link(struct droce_port *p);

/**
 * Resolve an IPv4 address to a MAC for connect-by-address: the ARP table
 * answer, else a request is sent (at most once per 100 ms) and one RX burst
 * is processed for the reply (RoCE frames it meets are kept for the
 * context's next rx_burst).
 * @return 0 with @p mac filled; -EAGAIN (ask again later); -EINVAL;
 *         -ENOSPC (ARP table full of static entries).
 */
int droce_port_resolve(struct droce_port *p, const uint8_t ip[4], uint8_t mac[6], uint64_t now);

/** Add a static neighbour. @return 0, -ENOSPC or -EINVAL. */
int droce_port_add_neighbour(struct droce_port *p, const uint8_t ip[4], const uint8_t mac[6]);

/** Mirror RX and TX frames into @p cap (NULL: stop). The caller owns @p cap. */
void droce_port_set_capture(struct droce_port *p, struct droce_capture *cap);

/**
 * Frames queued in the TX batch that the PMD has not taken yet (0 on NULL).
 * An application shutting down flushes until this is 0, then stops polling
 * before it closes: a memif peer that disconnects while this side still
 * polls can crash DPDK 22.11's memif (it unmaps the rings on the interrupt
 * thread), see docs/usage.md.
 */
unsigned droce_port_tx_pending(const struct droce_port *p);

/** Copy the counters. @return 0 or -EINVAL. */
int droce_port_get_stats(const struct droce_port *p, struct droce_port_stats *out);

/** Describe the port. @return 0 or -EINVAL. */
int droce_port_get_info(const struct droce_port *p, struct droce_port_info *out);

#endif
