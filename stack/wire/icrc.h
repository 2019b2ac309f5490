/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Invariant CRC (IBTA vol 1 Annex A17.4.5 for RoCEv2, 7.8.1 for the fields
 * it leaves out). CRC-32 (reflected 0xEDB88320, init and final xor all ones)
 * over: 8 bytes of 0xFF standing for the absent LRH; the IP header with the
 * variant fields (IPv4 TOS, TTL, checksum; IPv6 traffic class, flow label,
 * hop limit) set to ones; the UDP header with its checksum set to ones; the
 * BTH with its resv8a byte (FECN/BECN) set to ones; then the extension
 * headers, payload and pad unchanged. On the wire least significant byte
 * first. RoCEv1 (GRH over Ethernet) is the same without the UDP header.
 *
 * Only the ~60-byte header prefix is copied (to mask it); the rest is
 * chained through the CRC without a copy, so the payload may live anywhere
 * (a registered MR, for zero-copy TX).
 */
#ifndef DROCE_WIRE_ICRC_H
#define DROCE_WIRE_ICRC_H

#include <stddef.h>
#include <stdint.h>

/** Network layer under the BTH. */
enum droce_l3 {
	DROCE_L3_IPV4,
	DROCE_L3_IPV6,
	DROCE_L3_GRH, /* RoCEv1 */
};

/**
 * Start an ICRC over the headers of a frame: @p l3 points at the IP header
 * (or GRH) and @p len bytes from there are covered: the masked IP/UDP/BTH
 * prefix plus whatever follows it (extension headers, possibly payload).
 * @p len must cover at least the BTH.
 * @return the running CRC, to pass to droce_icrc_update().
 */
uint32_t droce_icrc_begin(const uint8_t *l3, enum droce_l3 kind, size_t len);

/** Continue a running ICRC over @p len more bytes (payload, pad). */
uint32_t droce_icrc_update(uint32_t crc, const void *data, size_t len);

/** The running CRC of droce_icrc_begin()/update() is the final ICRC value. */
static inline void droce_icrc_store(uint8_t *out, uint32_t icrc)
{
	out[0] = (uint8_t)icrc;
	out[1] = (uint8_t)(icrc >> 8);
	out[2] = (uint8_t)(icrc >> 16);
	out[3] = (uint8_t)(icrc >> 24);
}

static inline uint32_t droce_icrc_load(const uint8_t *in)
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
	       (uint32_t)in[3] << 24;
}

#endif
