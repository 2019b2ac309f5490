/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Expected packet sequences (IBTA vol 1 9.4, 9.5, 9.7): what a requester and
 * a responder must put on the wire for one message, asserted against the
 * pair's tap records.
 */
#ifndef DROCE_TEST_CHECK_H
#define DROCE_TEST_CHECK_H

#include "pair.h"

/** Packets a SEND/WRITE of @p len bytes takes at @p mtu (a zero-length message is one packet). */
static inline unsigned npkts(uint32_t len, unsigned mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/** Opcode of packet @p i of @p n of a request message @p op (IBTA 9.4.1 / table 38). */
uint8_t req_opcode(enum droce_wr_opcode op, unsigned i, unsigned n);
/** Opcode of READ response packet @p i of @p n. */
uint8_t read_resp_opcode(unsigned i, unsigned n);

/** Indices of the records at or after @p from in direction @p dir; @return how many (at most @p max). */
unsigned rec_dir(const struct pair *p, unsigned from, int dir, unsigned *out, unsigned max);

/**
 * Assert records @p idx[0..] are, exactly, the packets of one SEND or WRITE
 * message sent once: opcodes FIRST/MIDDLE/LAST or ONLY, PSNs from @p psn,
 * MTU-sized payloads but the last, RETH (va, rkey, len) on the first WRITE
 * packet, immediate data on the last, AckReq on the last, the QPN.
 * @return the number of packets it consumed from @p idx.
 */
unsigned expect_msg(const struct pair *p, const unsigned *idx, unsigned avail, enum droce_wr_opcode op,
		    uint32_t psn, uint32_t len, unsigned mtu, uint64_t va, uint32_t rkey,
		    uint32_t imm, uint32_t dqpn);

/**
 * Assert records @p idx[0..] are the READ responses to a READ of @p len at
 * @p psn: FIRST/MIDDLE/LAST or ONLY, consecutive PSNs, MTU-sized but the
 * last, AETH ACK syndrome, MSN @p msn on the last (FIRST: msn or msn - 1).
 * @return the number of packets consumed.
 */
unsigned expect_read_resp(const struct pair *p, const unsigned *idx, unsigned avail, uint32_t psn, uint32_t len,
			  unsigned mtu, uint32_t msn, uint32_t dqpn);

/**
 * Assert records @p idx[0..n) are ACKs (RC_ACKNOWLEDGE with an ACK syndrome)
 * with PSNs non-decreasing within [@p first_psn, @p last_psn] (24-bit
 * arithmetic), the last one exactly @p last_psn with MSN @p msn.
 */
void expect_acks(const struct pair *p, const unsigned *idx, unsigned n, uint32_t first_psn,
		 uint32_t last_psn, uint32_t msn);

/** 24-bit PSN distance b - a. */
static inline uint32_t psn_diff(uint32_t b, uint32_t a)
{
	return (b - a) & 0xFFFFFFu;
}

#endif
