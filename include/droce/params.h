/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Every tunable's default, in one place (principle 7, docs/architecture.md). Each is settable
 * per context (struct droce_ctx_params) or per QP (struct droce_qp_attr,
 * struct droce_qp_init_attr) and documented in docs/tuning.md.
 */
#ifndef DROCE_PARAMS_H
#define DROCE_PARAMS_H

/** Default path MTU in bytes (IBTA 9.7.7: 256..4096). */
#define DROCE_DEFAULT_MTU_BYTES 4096u
/** Default send and receive queue depths. */
#define DROCE_DEFAULT_MAX_SEND_WR 256u
#define DROCE_DEFAULT_MAX_RECV_WR 256u
#define DROCE_DEFAULT_MAX_SGE 4u
/** Largest inline payload (copied at post time). */
#define DROCE_DEFAULT_MAX_INLINE 256u
/** Requester asks for an ACK at least every this many packets (IBTA 9.7.2: AckReq). */
#define DROCE_DEFAULT_ACK_REQ_EVERY 16u
/** Per-QP send window: packets and bytes in flight (congestion control moves it). */
#define DROCE_DEFAULT_WINDOW_PKTS 512u
/** Selective repeat: packets a QP keeps in flight at most (the SACK bitmap's
 * reach); below it, the BDP from the line rate and the minimum RTT (IRN). */
#define DROCE_DEFAULT_SR_FLIGHT_PKTS 256u
/** Selective repeat: a hole counts as lost once the peer has seen this many
 * PSNs past it (reordering up to this depth resends nothing). */
#define DROCE_DEFAULT_SR_DUPTHRESH 3u
#define DROCE_DEFAULT_WINDOW_BYTES (2u * 1024u * 1024u)
/** Local ACK timeout exponent: 4.096 us * 2^timeout (IBTA 9.7.6.1.3). 14 = ~67 ms. */
#define DROCE_DEFAULT_TIMEOUT 14u
/** ACK timeout mode (enum droce_timeout_mode): IBTA, the attribute as the
 * application set it (docs/cc.md says why). */
#define DROCE_DEFAULT_TIMEOUT_MODE 1u
/** Adaptive timeout floor: a few fabric RTTs, above host poll jitter. */
#define DROCE_DEFAULT_RTO_MIN_NS 16000u
/** Adaptive timeout before the first RTT sample (RFC 6298 2.1, datacenter scale). */
#define DROCE_DEFAULT_RTO_INIT_NS 1000000u
/** Adaptive timeout with more than DROCE_RTO_LOW_MAX_PKTS outstanding, or
 * the link paused (PFC) within this time: IRN's RTO_high (docs/cc.md). */
#define DROCE_DEFAULT_RTO_HIGH_NS 100000u
/** The RFC 6298 timeout (IRN's RTO_low) only up to this many packets outstanding. */
#define DROCE_RTO_LOW_MAX_PKTS 3u
/** Window tuning's lower bound (the upper is DROCE_DEFAULT_WINDOW_BYTES). */
#define DROCE_DEFAULT_WINDOW_MIN_BYTES (16u * 1024u)
#define DROCE_DEFAULT_RETRY_CNT 7u
#define DROCE_DEFAULT_RNR_RETRY 7u      /* 7 = retry forever (IBTA 9.7.5.2.8) */
#define DROCE_DEFAULT_MIN_RNR_TIMER 12u /* encoded, table 45: 0.64 ms */
#define DROCE_DEFAULT_MAX_RD_ATOMIC 16u
/** Default RoCEv2 DSCP and IP TTL. */
#define DROCE_DEFAULT_DSCP 26u
#define DROCE_DEFAULT_TTL 64u
/** Default P_Key (IBTA 10.9.1.1: full-membership default partition). */
#define DROCE_DEFAULT_PKEY 0xFFFFu
/** Frames moved per RX/TX burst. */
#define DROCE_DEFAULT_BURST 32u
/** Idle policy of a poll loop (poll.h): busy-poll this long after the last
 * work before backing off, so a ping-pong's round trips never sleep. */
#define DROCE_DEFAULT_IDLE_SPIN_NS 100000u
/** ... then sleep, starting at this and doubling ... */
#define DROCE_DEFAULT_IDLE_SLEEP_MIN_NS 10000u
/** ... up to this (also the longest a frame waits for a backed-off loop). */
#define DROCE_DEFAULT_IDLE_SLEEP_MAX_NS 2000000u

#endif
