/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Human names for AETH syndromes (IBTA vol 1 9.3.5 table 43): ACK with its
 * credit count (table 44), RNR NAK with its timer (table 45), and the NAK
 * codes.
 */
#ifndef DROCE_DUMP_AETH_DESC_H
#define DROCE_DUMP_AETH_DESC_H

#include <stddef.h>
#include <stdint.h>

/**
 * Describe an AETH syndrome, e.g. "ACK credits=31 (invalid)",
 * "RNR NAK timer=14 (1.28 ms)", "NAK PSN sequence error".
 * Writes at most @p n bytes including the terminating NUL (truncating).
 * @return @p buf.
 */
const char *droce_dump_aeth_describe(uint8_t syndrome, char *buf, size_t n);

/**
 * IBTA table 45: the minimum RNR NAK timer for a 5-bit timer code, in
 * microseconds (code 0 is the longest, 655.36 ms).
 */
uint32_t droce_dump_rnr_timer_us(uint8_t code);

/**
 * IBTA table 44: the number of credits a 5-bit credit code stands for;
 * -1 for code 31, "invalid" (end-to-end credits not in use).
 */
int32_t droce_dump_ack_credits(uint8_t code);

#endif
