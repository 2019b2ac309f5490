/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * ARP (RFC 826) for the port: a bounded neighbour cache with expiry and
 * static entries, answers to requests for our address, requests for
 * addresses we want to reach, and a gratuitous ARP at port start. DPDK-free:
 * frames in and out are bytes, time is an argument, so every rule here is
 * unit-tested without EAL.
 *
 * Learning follows RFC 826's merge rule: a frame's sender is recorded when
 * the frame is addressed to us (its target IP is ours) or when the sender is
 * already in the table; strangers chatting among themselves do not fill it.
 * A full table evicts the dynamic entry closest to expiry; static entries
 * are never evicted nor expire. A different MAC for an address we hold
 * does not replace it: the entry is disputed (unusable, asked again) until
 * one claim has stood lock_ns unchallenged (arp.c learn()).
 *
 * One instance per port queue, driven by that queue's thread.
 */
#ifndef DROCE_NET_NEIGH_ARP_H
#define DROCE_NET_NEIGH_ARP_H

#include <stddef.h>
#include <stdint.h>

/** Frame length the builders write: 42 bytes padded to the 60-byte minimum. */
#define DROCE_ARP_FRAME_LEN 60u

/** ARP settings; zeros take the defaults. */
struct droce_arp_conf {
	uint8_t mac[6];        /**< our MAC */
	uint8_t ip[4];         /**< our IPv4 address */
	unsigned entries;      /**< table size; 0 = 64 */
	uint64_t ttl_ns;       /**< lifetime of a learnt entry; 0 = 60 s */
	uint64_t retry_ns;     /**< least gap between requests for one address; 0 = 100 ms */
	uint64_t lock_ns;      /**< a disputed address (two MACs claimed it) is unusable until
				    one claim stood this long; 0 = 1 s */
};

/** Counters. */
struct droce_arp_stats {
	uint64_t rx_requests, rx_replies;
	uint64_t rx_bad;         /**< malformed or not Ethernet/IPv4 ARP */
	uint64_t tx_replies, tx_requests, tx_gratuitous;
	uint64_t learned;        /**< entries created or refreshed from the wire */
	uint64_t evicted;        /**< dynamic entries pushed out by a full table */
	uint64_t expired;        /**< lookups that found only an expired entry */
	uint64_t conflicts;      /**< someone else claims our IP */
	uint64_t mac_conflicts;  /**< a second MAC claimed an address we held (a disputed entry) */
};

struct droce_arp;

/**
 * Create an ARP instance.
 * @return it, or NULL with errno EINVAL (NULL conf, zero IP, multicast MAC)
 *         or ENOMEM.
 */
struct droce_arp *droce_arp_create(const struct droce_arp_conf *conf);

/** Free an ARP instance. NULL is a no-op. */
void droce_arp_destroy(struct droce_arp *arp);

/**
 * Handle a received ARP frame (Ethernet header included, optionally
 * 802.1Q-tagged: the reply carries the same tag). Learns per the merge rule
 * and, for a request for our IP, writes the reply into @p out.
 * @return the reply length (DROCE_ARP_FRAME_LEN, 4 more when tagged), or 0
 *         when nothing is to be sent (a reply, a request for someone else,
 *         a malformed frame: counted in rx_bad, or @p cap too small).
 */
size_t droce_arp_input(struct droce_arp *arp, const uint8_t *frame, size_t len,
		       uint64_t now, uint8_t *out, size_t cap);

/**
 * Look @p ip up without sending anything.
 * @return 0 with @p mac filled; -ENOENT when absent, incomplete or expired;
 *         -EINVAL on NULL arguments.
 */
int droce_arp_lookup(struct droce_arp *arp, const uint8_t ip[4], uint8_t mac[6], uint64_t now);

/**
 * Resolve @p ip: the cache answer, or a request to send.
 * @param req     where a broadcast request is written (DROCE_ARP_FRAME_LEN bytes)
 * @param req_len set to the request length, or 0 when none is due (one was
 *                sent less than retry_ns ago)
 * @return 0 with @p mac filled; -EAGAIN when unresolved (send @p req if
 *         *req_len != 0 and ask again later); -ENOSPC when the table is full
 *         of static entries; -EINVAL on NULL arguments or a zero address.
 */
int droce_arp_resolve(struct droce_arp *arp, const uint8_t ip[4], uint8_t mac[6], uint64_t now,
		      uint8_t *req, size_t cap, size_t *req_len);

/**
 * Add or replace a static entry (never expires, never evicted, not
 * overwritten by the wire).
 * @return 0; -ENOSPC when every slot is static; -EINVAL on NULL or zero IP.
 */
int droce_arp_add_static(struct droce_arp *arp, const uint8_t ip[4], const uint8_t mac[6]);

/** Remove an entry, static or not. @return 0, -ENOENT, or -EINVAL. */
int droce_arp_delete(struct droce_arp *arp, const uint8_t ip[4]);

/**
 * Write a gratuitous ARP (a broadcast request with sender and target IP
 * both ours, RFC 5227 "ARP announcement") so neighbours learn our MAC.
 * @return DROCE_ARP_FRAME_LEN, or 0 if @p cap is too small.
 */
size_t droce_arp_gratuitous(struct droce_arp *arp, uint8_t *out, size_t cap);

/**
 * Write an ARP frame: @p oper 1 (request) or 2 (reply), Ethernet from
 * @p sha to @p eth_dst. @return DROCE_ARP_FRAME_LEN, or 0 if @p cap is too
 * small or @p oper is neither.
 */
size_t droce_arp_build(uint8_t *out, size_t cap, uint16_t oper, const uint8_t eth_dst[6],
		       const uint8_t sha[6], const uint8_t spa[4], const uint8_t tha[6],
		       const uint8_t tpa[4]);

/** Copy the counters. @return 0 or -EINVAL. */
int droce_arp_get_stats(const struct droce_arp *arp, struct droce_arp_stats *out);

#endif
