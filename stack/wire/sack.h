/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce's selective-acknowledgement extension (docs/wire.md, "Selective
 * repeat"): a fixed block of DROCE_SACK_LEN bytes that follows the AETH of an
 * RC_ACKNOWLEDGE between two droce peers that agreed to selective repeat.
 * The BTH PSN and the AETH keep their IBTA meaning (a cumulative ACK,
 * 9.7.5.1.1); the block adds which PSNs after it the responder already
 * placed and how far it has seen. A decoder that does not know it (Wireshark)
 * shows a well-formed ACK and ignores the bytes; droce's parser accepts an
 * ACK body only when it is exactly this block, with the magic.
 *
 *   0      2 bytes  magic 0xD5AC
 *   2      1 byte   version (1)
 *   3      1 byte   bitmap bytes (32)
 *   4      1 byte   reserved (0)
 *   5      3 bytes  one past the highest PSN the responder has seen
 *   8     32 bytes  bitmap: bit i (byte i / 8, bit i % 8 from the LSB) says
 *                   PSN (BTH PSN + 1 + i) was received and placed
 */
#ifndef DROCE_WIRE_SACK_H
#define DROCE_WIRE_SACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DROCE_SACK_MAGIC 0xD5ACu
#define DROCE_SACK_VERSION 1u
/** PSNs one SACK block describes past the cumulative ACK. */
#define DROCE_SACK_BITS 256u
#define DROCE_SACK_LEN (8u + DROCE_SACK_BITS / 8u)

/** A SACK block, decoded. */
struct droce_sack {
	uint32_t hi_psn;                      /**< one past the highest PSN seen */
	uint64_t map[DROCE_SACK_BITS / 64u];  /**< bit i: PSN ack + 1 + i placed */
};

/** Write @p s as DROCE_SACK_LEN bytes at @p out. */
void droce_sack_build(uint8_t *out, const struct droce_sack *s);
/**
 * Decode the block at @p in of @p len bytes.
 * @return true when @p len is DROCE_SACK_LEN and magic, version and bitmap
 *         size are droce's; false otherwise (@p s untouched).
 */
bool droce_sack_parse(const uint8_t *in, size_t len, struct droce_sack *s);

#endif
