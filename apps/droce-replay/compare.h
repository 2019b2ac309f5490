/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Semantic comparison of the frames droce sent with the frames expected of
 * it: opcode, QPN, PSN, SE, P_Key, AETH syndrome and MSN, RETH, AtomicETH,
 * AtomicAckETH, immediate data, IETH, payload bytes, addresses and a valid
 * ICRC. UDP source port, IP ID, TTL, DSCP and the AETH credit count differ
 * legitimately between implementations and are ignored unless the scenario
 * says "check ...". Prints a frame-by-frame diff a person can read.
 */
#ifndef DROCE_REPLAY_COMPARE_H
#define DROCE_REPLAY_COMPARE_H

#include <stdio.h>

#include "capture.h"
#include "scenario.h"

/** A frame droce transmitted, made contiguous. */
struct droce_rp_sent {
	uint64_t t_ns;           /**< capture-relative virtual time */
	uint8_t *data;
	uint32_t len;
};

/**
 * Compare @p got (droce's frames, in transmission order) with the frames
 * the scenario expects (the capture's frames from the side, minus QP1/UD
 * and skip-frame ones), printing the diff to @p out (NULL: silent).
 * With "allow ack-coalescing", a positive ACK followed by a later ACK, RNR
 * NAK or NAK for the same QP, with no other frame for that QP in between,
 * may be absent on either side: only the last of each such run of
 * ACKNOWLEDGE frames, and every NAK, is compared in order; and an ACK droce
 * sent for a PSN the capture also ACKs must say the same (syndrome, MSN).
 * Frames are compared in order per destination QP (address and QPN) and
 * direction (requests, responses), CNPs as a stream of their own: IBTA
 * orders packets per QP and direction, and when a CNP goes
 * out relative to the ACKs is a rate decision, not a protocol one.
 * @return the number of differences (0: match).
 */
unsigned droce_rp_compare(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
			  const struct droce_rp_sent *got, size_t ngot, FILE *out);

#endif
