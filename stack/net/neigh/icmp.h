/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * ICMPv4 echo reply (RFC 792), so `ping` to droce's address works.
 * DPDK-free: a request frame in, the reply frame out.
 */
#ifndef DROCE_NET_NEIGH_ICMP_H
#define DROCE_NET_NEIGH_ICMP_H

#include <stddef.h>
#include <stdint.h>

/** Counters, one instance per port queue. */
struct droce_icmp_stats {
	uint64_t rx_echo;      /**< echo requests for us, answered */
	uint64_t rx_bad;       /**< bad length or checksum, fragments */
	uint64_t rx_ignored;   /**< other ICMP types, or not addressed to us */
};

/**
 * Answer an ICMPv4 echo request (Ethernet header included, optionally
 * 802.1Q-tagged, tag kept). The reply swaps the addresses, keeps the
 * identifier, sequence and data, and drops any IPv4 options.
 *
 * @param our_ip  our IPv4 address: requests to any other address are ignored
 * @param out     where the reply is written (at most @p len bytes, at least 60)
 * @return the reply length, or 0 when nothing is to be sent (counted in
 *         @p st: not an echo request for us, malformed, or @p cap too small).
 */
size_t droce_icmp_echo_reply(const uint8_t *frame, size_t len, const uint8_t our_mac[6],
			     const uint8_t our_ip[4], uint8_t *out, size_t cap,
			     struct droce_icmp_stats *st);

#endif
