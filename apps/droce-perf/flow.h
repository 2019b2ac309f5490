/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How many messages a bandwidth client keeps in flight per QP and how many
 * receives the server keeps posted, so that with --check no message lands
 * in a slot whose previous message the server has not verified yet.
 */
#ifndef DROCE_PERF_FLOW_H
#define DROCE_PERF_FLOW_H

#include <stdint.h>

#include "opts.h"

struct perf_flow {
	unsigned inflight;  /* client: outstanding messages per QP */
	unsigned recvs;     /* server: receives kept posted per QP (0: none) */
};

/**
 * For @p o with @p slots message slots per QP buffer.
 * write_bw --check: a WRITE with immediate places its data packet by packet
 * and needs a receive only at its last packet (IBTA 9.4.3; rxe RNR-NAKs the
 * last packet after the others were written). The server verifies a slot
 * before it reposts the receive, so a message k can complete only after
 * message k - recvs was verified; the client posts message k only after
 * message k - inflight completed. inflight + recvs <= slots keeps message k
 * out of the slot of message k - slots until that one was verified.
 */
struct perf_flow perf_bw_flow(const struct perf_opts *o, unsigned slots);

/* A QP's buffer is at most this: with -a or a deep queue slots shrink. */
#define PERF_BUF_MAX (16u << 20)

/**
 * Message slots per QP buffer for @p o with messages up to @p slot_size:
 * tx_depth (at least 2), shrunk by halves while one QP's buffer exceeds
 * PERF_BUF_MAX or all o->qps buffers together exceed one QP's, down to 2
 * (the latency tests receive into slot 0 and send from slot 1).
 */
unsigned perf_bw_slots(const struct perf_opts *o, uint32_t slot_size);

#endif
