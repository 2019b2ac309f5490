/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive placement in one pass over the payload: for an
 * RDMA WRITE MIDDLE or LAST whose destination comes from responder state
 * (wr_ptr, set by a verified FIRST), fold the ICRC over the payload while
 * copying it to its place (droce_crc32_copy), instead of verifying the frame
 * and then copying it.
 *
 * Safety (IBTA: a frame with a bad ICRC is dropped, 9.3 / A17.4.5; so
 * it may only touch bytes a retransmission overwrites before a completion
 * covers them). The frame's headers are not yet verified when the copy
 * starts, so nothing in them may choose where bytes go or what happens
 * next:
 *  - the target is wr_ptr and at most wr_left bytes: the rest of the WRITE
 *    message in progress, which the message's own packets (the expected
 *    one and its successors, retransmitted or not) write again before the
 *    responder ACKs its LAST, so before the requester's completion;
 *  - it is taken only after the context's header checks passed
 *    (destination IP, QP, P_Key, source: they have no side effects) and
 *    when every check of the responder's up to its execute step is known
 *    to pass for these header values (QP state, PSN == ePSN, a WRITE in
 *    progress, access, the PMTU / bytes-left length rules); anything else
 *    is verified first, on the ordinary path, so a corrupt header never
 *    reaches a check with side effects (chk_psn's nak_gap, NAKs, ECN);
 *  - no state moves (PSN, wr_ptr, MSN, ACK) until the CRC matched: then the
 *    frame continues on the normal path, marked pkt->placed so the
 *    responder skips its copy.
 * tests/unit/transport/test_corrupt_write.c corrupts RETH, PSN, opcode and
 * payload bytes and checks the MR and the completions.
 */
#ifndef DROCE_TRANSPORT_RX_FUSED_H
#define DROCE_TRANSPORT_RX_FUSED_H

#include <stdint.h>

#include "model/model.h"
#include "wire/parse.h"

/** Payloads from this size on are placed by the fused path (smaller ones
 * are CRCed in one gathered call: wire/icrc_fast.h). */
#define DROCE_RX_FUSED_MIN 512u

/**
 * Try the fused placement of @p pkt for @p qp (parsed by droce_parse_rx,
 * passed the context's header checks, ICRC not yet checked). @return 0 when not taken (verify the ICRC as usual), 1 when the
 * payload was placed and the ICRC matched (pkt->placed is set; do not check
 * the ICRC again), -1 when the ICRC did not match (drop it as BAD_ICRC; the
 * bytes written lie in the WRITE's remaining range).
 */
int droce_tp_rx_fused(struct droce_qp *qp, struct droce_pkt *pkt, enum droce_l3 kind);

#endif
