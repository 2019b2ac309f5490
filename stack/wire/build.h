/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame builder: the parser's inverse. Writes Ethernet (+802.1Q), IPv4 or
 * IPv6, UDP (checksum 0, allowed for RoCEv2 by A17.4.2), BTH and the
 * extension headers the opcode's table entry names; pads the payload to a
 * multiple of 4 (IBTA 9.2.2) and appends the ICRC.
 */
#ifndef DROCE_WIRE_BUILD_H
#define DROCE_WIRE_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "wire/fields.h"
#include "wire/icrc.h"

/** Pad count for a payload length (IBTA 9.2.2: payload + pad is 4-aligned). */
static inline uint8_t droce_pad_count(uint32_t payload_len)
{
	return (uint8_t)((4u - (payload_len & 3u)) & 3u);
}

/** Offset of the IP header in a built frame. */
static inline size_t droce_build_l3_off(const struct droce_hdrs *h)
{
	return 14u + (h->net.has_vlan ? 4u : 0u);
}

/** ICRC network-layer kind of a frame built from @p h. */
static inline enum droce_l3 droce_build_l3_kind(const struct droce_hdrs *h)
{
	return h->net.rocev1 ? DROCE_L3_GRH
	       : h->net.ip_version == 4 ? DROCE_L3_IPV4 : DROCE_L3_IPV6;
}

/**
 * Write every header of a frame, Ethernet through the last extension header,
 * sized for h->payload_len payload bytes, the pad (computed, h->bth.pad is
 * ignored) and the ICRC that follow. The UDP destination port is always
 * 4791; RoCEv1 (h->net.rocev1) writes a GRH and no UDP header.
 *
 * @return header length, or 0 if @p cap is too small, the opcode is unknown,
 *         ip_version is neither 4 nor 6 (or is 4 with rocev1), or the IP
 *         length field (IPv4 total length, IPv6 / GRH payload length) would
 *         exceed 65535.
 */
size_t droce_build_hdrs(uint8_t *buf, size_t cap, const struct droce_hdrs *h);

/**
 * Write the pad and ICRC after the payload. @p crc is the running ICRC
 * (droce_icrc_begin over the headers, then droce_icrc_update over the
 * payload). Writes droce_pad_count(payload_len) + 4 bytes.
 * @return bytes written.
 */
size_t droce_build_trailer(uint8_t *out, uint32_t crc, uint32_t payload_len);

/**
 * Build a complete contiguous frame: headers, a copy of @p payload
 * (h->payload_len bytes; may be NULL when that is 0), pad and ICRC.
 * @return frame length, or 0 on the errors of droce_build_hdrs().
 */
size_t droce_build_frame(uint8_t *buf, size_t cap, const struct droce_hdrs *h,
			 const void *payload);

/** Frame length droce_build_frame() would produce. */
size_t droce_frame_len(const struct droce_hdrs *h);

#endif
