/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Decoded header fields of one RoCE frame, host byte order. The parser fills
 * this and the builder reads it, so a build -> parse round trip can compare
 * the two structs field by field.
 */
#ifndef DROCE_WIRE_FIELDS_H
#define DROCE_WIRE_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

/** Ethernet, IP and UDP fields. */
struct droce_net_fields {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	bool has_vlan;
	uint16_t vlan_tci;
	uint8_t ip_version;   /**< 4 or 6 (6 for a RoCEv1 GRH too) */
	bool rocev1;          /**< GRH over Ethernet (ethertype 0x8915), no UDP */
	uint8_t src_ip[16];   /**< IPv4: the first 4 bytes */
	uint8_t dst_ip[16];
	uint8_t dscp;
	uint8_t ecn;          /**< A17.9: 0b11 is Congestion Experienced */
	uint8_t ttl;          /**< IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;  /**< IPv6 only */
	uint16_t ip_id;       /**< IPv4 only */
	uint16_t sport;       /**< UDP source port (entropy, A17.5.1.1) */
	uint16_t dport;       /**< 4791 for RoCEv2 */
};

/** BTH fields (IBTA 9.2). */
struct droce_bth_fields {
	uint8_t opcode;
	bool se;
	bool migreq;
	uint8_t pad;       /**< pad count 0-3 */
	uint8_t tver;      /**< must be 0 */
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint32_t dqpn;     /**< 24 bits */
	bool ack_req;
	uint32_t psn;      /**< 24 bits */
};

/** Extension header fields; only those the opcode carries are meaningful. */
struct droce_ext_fields {
	struct { uint64_t va; uint32_t rkey; uint32_t dma_len; } reth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add; uint64_t compare; } atomic;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	uint64_t atomic_ack;  /**< original remote value */
	uint32_t imm;         /**< immediate data, as the 32-bit wire value */
	uint32_t ieth_rkey;   /**< rkey to invalidate */
	struct { uint32_t qkey; uint32_t sqpn; } deth;
};

/** Every header field of one frame. */
struct droce_hdrs {
	struct droce_net_fields net;
	struct droce_bth_fields bth;
	struct droce_ext_fields ext;
	uint32_t payload_len; /**< payload bytes, pad excluded */
};

#endif
