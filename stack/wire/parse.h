/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame parser: (bytes, length) -> a view of one RoCE frame. Every length is
 * checked before it is read; a rejection names its reason. The view points
 * into the caller's buffer and is valid as long as the buffer is.
 */
#ifndef DROCE_WIRE_PARSE_H
#define DROCE_WIRE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "wire/fields.h"
#include "wire/opcode.h"

/*
 * Parse results. NOT_ROCE is a classification (ARP, ICMP, other UDP), not a
 * defect; every other non-OK reason is a malformed or corrupt RoCE frame.
 */
#define DROCE_PARSE_REASONS(X)                                                         \
	X(OK, "ok")                                                                    \
	X(NOT_ROCE, "not a RoCE frame")                                                \
	X(TRUNC_ETH, "truncated Ethernet header")                                      \
	X(TRUNC_VLAN, "truncated 802.1Q tag")                                          \
	X(TRUNC_IP, "truncated IP header")                                             \
	X(BAD_IP_VERSION, "IP version does not match the ethertype")                   \
	X(BAD_IHL, "IPv4 header length below 20 bytes")                                \
	X(IPV4_OPTIONS, "IPv4 options on a RoCEv2 packet")                             \
	X(IP_FRAGMENT, "fragmented IP packet")                                         \
	X(IP_LEN, "IP length shorter than its own headers")                            \
	X(LEN_BEYOND_FRAME, "IP length beyond the end of the frame")                   \
	X(TRUNC_UDP, "truncated UDP header")                                           \
	X(UDP_LEN, "UDP length does not match the IP payload length")                  \
	X(BAD_GRH_NEXT, "RoCEv1 GRH next header is not an IBA transport")              \
	X(TRUNC_BTH, "truncated BTH")                                                  \
	X(UNKNOWN_OPCODE, "unknown BTH opcode")                                        \
	X(BAD_TVER, "BTH transport version is not 0")                                  \
	X(TRUNC_EXT, "truncated extension header")                                     \
	X(TRUNC_ICRC, "no room for the ICRC")                                          \
	X(UNEXPECTED_PAYLOAD, "payload on an opcode that carries none")                \
	X(PAD_TOO_LONG, "pad count larger than the payload")                           \
	X(BAD_ICRC, "ICRC mismatch")

enum droce_parse_result {
#define X(n, s) DROCE_PARSE_##n,
	DROCE_PARSE_REASONS(X)
#undef X
	DROCE_PARSE__COUNT
};

/** Short name of a result, e.g. "BAD_ICRC". Never NULL. */
const char *droce_parse_result_name(enum droce_parse_result r);
/** One-line description of a result. Never NULL. */
const char *droce_parse_result_str(enum droce_parse_result r);

/** A parsed frame. */
struct droce_pkt {
	struct droce_hdrs h;
	const struct droce_opcode_info *op; /**< NULL before the BTH was parsed */
	const uint8_t *frame;
	size_t frame_len;
	uint32_t l3_off;       /**< IP header / GRH */
	uint32_t bth_off;
	uint32_t payload_off;
	const uint8_t *payload;
	uint32_t icrc;         /**< as found on the wire (little-endian decoded) */
	uint32_t l3_len;       /**< IP total length (IPv6/GRH: 40 + payload length) */
	bool placed;           /**< the engine already copied the payload to its target
				    (transport/rx_fused.h); the parsers set it false */
};

/** Skip the ICRC check (the caller verifies it some other way). */
#define DROCE_PARSE_F_NO_ICRC 0x1u

/**
 * Parse one Ethernet frame (no FCS).
 *
 * Checks run in wire order and stop at the first failure; the fields decoded
 * before it are valid in @p pkt. A BAD_ICRC result has every field decoded.
 * The ICRC is located from the IP length, never the frame length: short
 * frames carry Ethernet trailer padding after it.
 *
 * @return DROCE_PARSE_OK, DROCE_PARSE_NOT_ROCE, or the reason for rejecting it.
 */
enum droce_parse_result droce_parse(const uint8_t *frame, size_t len,
				    struct droce_pkt *pkt, unsigned flags);

/**
 * The receive path's parse: the same checks in the same order and the same
 * result as droce_parse(frame, len, pkt, DROCE_PARSE_F_NO_ICRC) (the caller
 * checks the ICRC: wire/icrc_fast.h), without clearing the whole view and
 * without decoding what the engine never reads: h.net.dst_mac and src_mac
 * are left as they were (undefined); src_ip is decoded (the context drops an
 * RC packet whose source is not the QP's peer). Everything else is as
 * droce_parse() sets it, unused extension fields zero
 * (tests/unit/wire/test_parse_rx.c, tests/fuzz/fuzz_parse.c). On any other
 * result than DROCE_PARSE_OK the view is undefined (the engine drops the
 * frame): unlike droce_parse(), fields decoded before the failure are not
 * promised.
 */
enum droce_parse_result droce_parse_rx(const uint8_t *frame, size_t len, struct droce_pkt *pkt);

#endif
