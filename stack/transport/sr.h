/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Selective repeat between two droce peers that agreed to it
 * (droce_qp_set_transport; docs/transport.md "Selective repeat", the wire
 * format in docs/wire.md). IRN's design (Mittal et al., SIGCOMM 2018) on
 * IBTA's headers:
 *   - every RDMA WRITE packet is a WRITE_ONLY with its own RETH, so the
 *     responder places a packet that arrives before its predecessors;
 *     SENDs, READs, atomics and WRITE with immediate are taken in PSN order
 *     only (they consume a receive WQE or answer in order), a copy that
 *     arrives early is dropped and resent;
 *   - the responder keeps a bitmap of what it placed past its ePSN and
 *     reports it in a SACK block behind the AETH of its cumulative ACK;
 *   - the requester resends only the PSNs the SACK shows missing (a hole is
 *     lost once the responder has seen DROCE_DEFAULT_SR_DUPTHRESH PSNs past
 *     it), skips the SACKed ones on any go-back, and keeps at most a BDP in
 *     flight (the line rate times the minimum RTT, at most the bitmap's
 *     reach), so a lossy fabric needs no PFC.
 * Completions stay in order: a WQE completes only when the cumulative ACK
 * passes its last PSN (IBTA 9.7.5.1.1, 10.8.3). With the mode GBN none of
 * this runs.
 */
#ifndef DROCE_TRANSPORT_SR_H
#define DROCE_TRANSPORT_SR_H

#include "transport/tp_int.h"
#include "wire/sack.h"

/* ---- responder ---- */
/** A request with PSN past ePSN arrived: @return true when it may be placed
 * now (a plain WRITE_ONLY within the bitmap, not placed before). */
bool droce_sr_resp_ooo(struct droce_qp *qp, const struct droce_pkt *pkt);
/** The out-of-order packet was placed (@p pkt: a WRITE with immediate
 * keeps its immediate and message length until it completes in order). */
void droce_sr_resp_placed(struct droce_qp *qp, const struct droce_pkt *pkt);
/** A WRITE with immediate placed ahead, now at ePSN: its receive WQE is owed. */
struct droce_sr_imm {
	uint32_t imm, len;
};
/**
 * ePSN may have moved: take in the packets placed beyond it, up to one that
 * consumes a receive WQE. @return true when ePSN moved (an ACK is owed);
 * *@p imm_at is then true when ePSN stops at a placed WRITE with immediate
 * (@p imm): the caller consumes a receive WQE, completes it and calls
 * droce_sr_resp_take(), or answers RNR for ePSN.
 */
bool droce_sr_resp_advance(struct droce_qp *qp, bool *imm_at, struct droce_sr_imm *imm);
/** The placed packet at ePSN is executed: ePSN past it. */
void droce_sr_resp_take(struct droce_qp *qp);
/** Whether the ACK for @p ack_psn carries a SACK block; if so, write it to @p out. */
bool droce_sr_resp_sack(struct droce_qp *qp, uint32_t ack_psn, uint8_t out[DROCE_SACK_LEN]);

/* ---- requester ---- */
/** A SACK block came with the ACK for @p ack_psn (after the ACK itself was taken). */
void droce_sr_on_sack(struct droce_qp *qp, uint32_t ack_psn, const struct droce_sack *s, uint64_t now);
/** The requester is at the first PSN never sent: a resend round, which
 * only covers PSNs sent before, is over (one whose last hole was the last
 * PSN sent never met its end in droce_sr_tx_check). */
static inline void droce_sr_tx_new(struct droce_qp *qp)
{
	qp->tp.sr->round = false;
}
/** The ACK timer expired: forget every SACK (RFC 2018 section 8, RFC 6675
 * section 5.1: the timeout may mean the responder did not keep what it
 * SACKed; droce's never drops what it placed, a lying or restarted peer
 * might, and without this each timeout would repair one PSN). */
void droce_sr_renege(struct droce_qp *qp);
/** A go-back to @p psn (timeout, NAK, RNR, READ response gap): resend every
 * PSN not SACKed, and @p psn whatever the SACKs said. */
void droce_sr_go_back(struct droce_qp *qp, uint32_t psn);
/** Packets the QP may keep in flight (IRN's BDP cap). */
uint32_t droce_sr_flight(const struct droce_qp *qp);

enum droce_sr_tx { DROCE_SR_SEND, DROCE_SR_SKIP, DROCE_SR_JUMP };
/** The requester is about to resend PSN @p psn (< snd_max): send it, skip
 * it (SACKed), or jump to snd_max (the SACK round's holes are all resent). */
enum droce_sr_tx droce_sr_tx_check(struct droce_qp *qp, uint32_t psn);

#endif
