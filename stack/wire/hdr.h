/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 wire headers: packed structs with big-endian fields, exactly as on
 * the wire. Sizes are asserted; offsets of multi-byte fields are the IBTA's.
 * Code reads and writes them through bytes.h (frames are unaligned), so the
 * structs document the layout and give sizeof() its meaning.
 *
 * References: IBTA vol 1 rel 1.4, 9.2 (BTH) and 9.3 (extended transport
 * headers); Annex A17 (RoCEv2: UDP destination port 4791, ICRC).
 */
#ifndef DROCE_WIRE_HDR_H
#define DROCE_WIRE_HDR_H

#include <stdint.h>

#define DROCE_UDP_PORT       4791u   /* A17.4.3: RoCEv2 UDP destination port */
#define DROCE_ETHERTYPE_IPV4 0x0800u
#define DROCE_ETHERTYPE_IPV6 0x86DDu
#define DROCE_ETHERTYPE_VLAN 0x8100u
#define DROCE_ETHERTYPE_ARP  0x0806u
#define DROCE_ETHERTYPE_ROCEV1 0x8915u /* RoCEv1: GRH directly over Ethernet */
#define DROCE_IPPROTO_UDP    17u
#define DROCE_IPPROTO_ICMP   1u
#define DROCE_GRH_NEXT_BTH   0x1Bu   /* IBTA 8.3: GRH NxtHdr for an IBA transport */

#define DROCE_ETH_ALEN 6

struct droce_eth_hdr {
	uint8_t dst[DROCE_ETH_ALEN];
	uint8_t src[DROCE_ETH_ALEN];
	uint16_t ethertype;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_eth_hdr) == 14, "Ethernet header is 14 bytes");

struct droce_vlan_hdr {
	uint16_t tci;        /* PCP(3) DEI(1) VID(12) */
	uint16_t ethertype;  /* inner ethertype */
} __attribute__((packed));
_Static_assert(sizeof(struct droce_vlan_hdr) == 4, "802.1Q tag is 4 bytes");

struct droce_ipv4_hdr {
	uint8_t ver_ihl;
	uint8_t tos;         /* DSCP(6) ECN(2) */
	uint16_t total_len;
	uint16_t id;
	uint16_t frag;       /* flags(3) offset(13) */
	uint8_t ttl;
	uint8_t proto;
	uint16_t csum;
	uint8_t src[4];
	uint8_t dst[4];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_ipv4_hdr) == 20, "IPv4 header is 20 bytes");

struct droce_ipv6_hdr {
	uint32_t ver_tc_flow; /* version(4) traffic class(8) flow label(20) */
	uint16_t payload_len;
	uint8_t next_hdr;
	uint8_t hop_limit;
	uint8_t src[16];
	uint8_t dst[16];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_ipv6_hdr) == 40, "IPv6 header / GRH is 40 bytes");

struct droce_udp_hdr {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_udp_hdr) == 8, "UDP header is 8 bytes");

/* IBTA 9.2: Base Transport Header. */
struct droce_bth {
	uint8_t opcode;
	uint8_t flags;       /* SE(1) MigReq(1) PadCnt(2) TVer(4) */
	uint16_t pkey;
	uint8_t resv8a;      /* RoCEv2 (A17.4.4): FECN(1) BECN(1) resv(6) */
	uint8_t dqpn[3];
	uint8_t ack_resv;    /* AckReq(1) resv(7) */
	uint8_t psn[3];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_bth) == 12, "BTH is 12 bytes");

#define DROCE_BTH_SE       0x80u
#define DROCE_BTH_MIGREQ   0x40u
#define DROCE_BTH_PAD_SHIFT 4
#define DROCE_BTH_PAD_MASK 0x30u
#define DROCE_BTH_TVER_MASK 0x0Fu
#define DROCE_BTH_FECN     0x80u
#define DROCE_BTH_BECN     0x40u
#define DROCE_BTH_ACKREQ   0x80u

/* IBTA 9.3.3: RDMA Extended Transport Header. */
struct droce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_reth) == 16, "RETH is 16 bytes");

/* IBTA 9.3.4: Atomic Extended Transport Header. */
struct droce_atomic_eth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_atomic_eth) == 28, "AtomicETH is 28 bytes");

/* IBTA 9.3.5: ACK Extended Transport Header. */
struct droce_aeth {
	uint8_t syndrome;
	uint8_t msn[3];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_aeth) == 4, "AETH is 4 bytes");

/* IBTA 9.3.6: Atomic ACK Extended Transport Header. */
struct droce_atomic_ack_eth {
	uint64_t orig;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_atomic_ack_eth) == 8, "AtomicAckETH is 8 bytes");

/* IBTA 9.3.7: Immediate data. */
struct droce_immdt {
	uint32_t imm;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_immdt) == 4, "ImmDt is 4 bytes");

/* IBTA 9.3.8: Invalidate Extended Transport Header. */
struct droce_ieth {
	uint32_t rkey;
} __attribute__((packed));
_Static_assert(sizeof(struct droce_ieth) == 4, "IETH is 4 bytes");

/* IBTA 9.3.2: Datagram Extended Transport Header. */
struct droce_deth {
	uint32_t qkey;
	uint8_t resv;
	uint8_t sqpn[3];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_deth) == 8, "DETH is 8 bytes");

/* A17.9.3: a CNP carries 16 reserved bytes after the BTH. */
#define DROCE_CNP_RESV_LEN 16u
#define DROCE_ICRC_LEN 4u

/*
 * IBTA 9.7.5.1.2 / table 43: AETH syndrome. Bits 6:5 select the kind, the
 * low 5 bits are the credit count (ACK), the RNR timer code (RNR NAK) or the
 * NAK code.
 */
#define DROCE_AETH_TYPE_MASK 0x60u
#define DROCE_AETH_ACK       0x00u
#define DROCE_AETH_RNR_NAK   0x20u
#define DROCE_AETH_RESERVED  0x40u
#define DROCE_AETH_NAK       0x60u
#define DROCE_AETH_VALUE_MASK 0x1Fu
#define DROCE_AETH_CREDIT_INVALID 0x1Fu /* 9.7.7.2.2: "invalid credit count" */

enum droce_nak_code {
	DROCE_NAK_PSN_SEQ_ERR = 0,
	DROCE_NAK_INVALID_REQ = 1,
	DROCE_NAK_REMOTE_ACCESS = 2,
	DROCE_NAK_REMOTE_OP = 3,
	DROCE_NAK_INVALID_RD_REQ = 4,
};

#define DROCE_PSN_MASK 0xFFFFFFu
#define DROCE_QPN_MASK 0xFFFFFFu
#define DROCE_MSN_MASK 0xFFFFFFu

#endif
