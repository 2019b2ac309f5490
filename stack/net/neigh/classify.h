/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * What a received frame is, decided from its first bytes (DPDK-free). The
 * port uses it in its RX burst to answer ARP and ICMP itself, hand RoCE
 * frames to the context and count the rest (principle 5, docs/architecture.md). It only
 * classifies; stack/wire/parse.c validates RoCE frames in full later.
 */
#ifndef DROCE_NET_NEIGH_CLASSIFY_H
#define DROCE_NET_NEIGH_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#define DROCE_NET_CLASSES(X)                                          \
	X(ROCEV2_IPV4, "RoCEv2 over IPv4 (UDP 4791)")                 \
	X(ROCEV2_IPV6, "RoCEv2 over IPv6 (UDP 4791)")                 \
	X(ROCEV1, "RoCEv1 (ethertype 0x8915)")                        \
	X(ARP, "ARP")                                                 \
	X(ICMP, "ICMPv4")                                             \
	X(OTHER_IPV4, "other IPv4")                                   \
	X(OTHER_IPV6, "other IPv6")                                   \
	X(OTHER, "other ethertype")                                   \
	X(RUNT, "shorter than its headers")

enum droce_net_class {
#define X(n, s) DROCE_NET_##n,
	DROCE_NET_CLASSES(X)
#undef X
	DROCE_NET__COUNT
};

/** Short name of a class, e.g. "ARP". Never NULL. */
const char *droce_net_class_name(enum droce_net_class c);

/**
 * Classify one Ethernet frame (an 802.1Q tag is skipped). Reads at most
 * Ethernet + VLAN + IP (IPv4 options honoured, IPv6 without extension
 * headers) + the UDP destination port, and never past @p len.
 */
enum droce_net_class droce_net_classify(const uint8_t *frame, size_t len);

/** Offset of the L3 header of a frame: 14, or 18 behind an 802.1Q tag. */
size_t droce_net_l3_off(const uint8_t *frame, size_t len);

/** Internet checksum (RFC 1071) of @p len bytes, folded and complemented. */
uint16_t droce_inet_csum(const uint8_t *p, size_t len);

#endif
