/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One decoded frame as droce-dump reports it: the parser's view plus which
 * layers it got through before a rejection (so a malformed frame still shows
 * the fields decoded before the failure) and whether its ICRC verified.
 */
#ifndef DROCE_DUMP_FRAME_H
#define DROCE_DUMP_FRAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mad_view.h"
#include "wire/parse.h"

struct droce_dump_frame {
	uint64_t number;      /**< 1-based within its file */
	int64_t rel_ns;       /**< time since the file's first frame */
	uint32_t wire_len;    /**< length on the wire */
	enum droce_parse_result result;
	struct droce_pkt pkt;
	bool roce;            /**< result != NOT_ROCE */
	bool has_ip;          /**< ip_version, src, dst, dscp, ecn are valid */
	bool has_udp;         /**< sport is valid (never for RoCEv1) */
	bool has_bth;         /**< the BTH fields and opcode are valid */
	bool has_ext;         /**< the opcode's extension headers are valid */
	bool has_payload;     /**< payload_len is valid */
	bool icrc_ok;         /**< ICRC located and matching */
	struct droce_dump_mad mad; /**< the CM MAD of a UD SEND to QP1 */
};

/**
 * Parse @p len bytes of an Ethernet frame into @p f (number, rel_ns and
 * wire_len are left to the caller). For a rejected RoCE frame whose ICRC can
 * still be located from the IP length (a bad UDP length, an unknown opcode,
 * a pad count too large, ...), the ICRC is checked anyway so that "icrc"
 * reports what is on the wire; where it cannot be located it is not ok.
 */
void droce_dump_decode(struct droce_dump_frame *f, const uint8_t *frame, size_t len);

/** Longest address droce_dump_addr() writes, NUL included (INET6_ADDRSTRLEN). */
#define DROCE_DUMP_ADDR_LEN 46

/**
 * Format the source (@p src true) or destination IP address of @p f:
 * IPv4 dotted quad, IPv6 / RoCEv1 GID in RFC 5952 form (inet_ntop).
 * @p buf holds DROCE_DUMP_ADDR_LEN bytes. @return @p buf ("?" without IP).
 */
const char *droce_dump_addr(const struct droce_dump_frame *f, bool src, char *buf);

/** Print @p f as one compact JSON object and a newline (droce-dump --json). */
void droce_dump_print_json(FILE *out, const struct droce_dump_frame *f);

/** Print @p f as one human-readable summary line (droce-dump's default). */
void droce_dump_print_text(FILE *out, const struct droce_dump_frame *f);

#endif
