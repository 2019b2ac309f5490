/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC on the engine's hot path with as few CRC calls as possible: a frame's
 * masked header prefix (A17.4.5 / 7.8.1 variant fields set to ones, exactly
 * as stack/wire/icrc.c does) and, for small frames, its payload and pad are
 * gathered into one stack buffer and fed to the CRC in one call. ISA-L's
 * CRC has a fixed cost per call that dominated 64-byte packets (half the
 * engine's time with 4-6 calls per frame). Below 256 bytes ISA-L folds 16
 * bytes per step and costs more than at 256, so a short stream is CRCed as
 * k leading zero bytes + the stream, 256 bytes in all, starting from a seed
 * that k zero bytes turn into the CRC's initial register (droce_icrc_seeds;
 * CRC steps over zero bytes are invertible). The result is bit-identical to
 * droce_icrc_begin()/droce_icrc_update() (tests/unit/core/test_icrc_fast.c).
 *
 * The CRC itself is chosen once per context (droce_crc32_select): our
 * VPCLMULQDQ folding has no such step below 256 bytes and is called on the
 * gathered bytes as they are; ISA-L gets the zero-padded 256-byte block.
 * With VPCLMULQDQ, a frame whose covered bytes are fewer than
 * DROCE_CRC32_OR_MAX (every 64 B WRITE, every ACK) is not masked by a copy
 * at all: droce_crc32_or_vpclmul() ORs the variant fields' ones into its
 * first 64 bytes in registers, and the 8 bytes of ones in front are a
 * seed (c8). Received frames are then read in place; frames to send are
 * the built headers with the payload gathered behind them (one call).
 */
#ifndef DROCE_WIRE_ICRC_FAST_H
#define DROCE_WIRE_ICRC_FAST_H

#include <stddef.h>
#include <stdint.h>

#include <droce/link.h>

#include "wire/crc32.h"
#include "wire/icrc.h"

/** Payloads up to this size are CRCed in the same call as the headers. */
#define DROCE_ICRC_FAST_MAX 1024u

/**
 * Seeds for k = 0..255 leading zero bytes, and a scratch buffer whose first
 * 256 bytes stay zero (so no memset per frame). Per context: no globals, one
 * thread.
 */
struct droce_icrc_seeds {
	droce_crc32_fn *crc; /**< droce_crc32_select() at init */
	uint32_t c8;         /**< the CRC of the 8 bytes of ones standing for the LRH */
	/** By enum droce_l3: ones at the variant bits of the first 64 bytes
	 *  from the IP header (A17.4.5), then 16 zero bytes (droce_crc32_or_vpclmul). */
	uint8_t mask[3][80];
	uint32_t seed[256];
	uint8_t mem[256 + 8 + 256 + DROCE_ICRC_FAST_MAX + 4];
};

/** Pick the CRC and fill the seed table. */
void droce_icrc_seeds_init(struct droce_icrc_seeds *s);

/**
 * ICRC of a frame to send: @p l3 points at the IP header (or GRH) inside the
 * built headers, @p l3_hdr_len bytes from there to the end of the extension
 * headers; then the payload segments and @p pad zero bytes.
 */
uint32_t droce_icrc_tx(struct droce_icrc_seeds *zs, const uint8_t *l3, enum droce_l3 kind, size_t l3_hdr_len,
		       const struct droce_tx_seg *seg, unsigned nseg, uint32_t payload_len,
		       unsigned pad);

/**
 * ICRC of a received frame: @p l3 .. @p l3 + @p len (IP header through the
 * pad, the ICRC itself excluded).
 */
uint32_t droce_icrc_rx(struct droce_icrc_seeds *zs, const uint8_t *l3, enum droce_l3 kind, size_t len);

#endif
