/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet spraying for an sr-spray QP (docs/transport.md "Selective repeat"):
 * request PSN p leaves on path p % DROCE_SR_PATHS, each path a UDP source
 * port (ECMP entropy, IBTA A17.5.1.1); loss by time (RFC 8985's RACK) from
 * a per-PSN send-time ring, which also times the QP's RTT; a path whose
 * packets are lost by time is moved to a new source port.
 */
#ifndef DROCE_TRANSPORT_SPRAY_H
#define DROCE_TRANSPORT_SPRAY_H

#include "transport/tp_int.h"

/** RTS: the paths of an sr-spray QP (path 0 is the template's source port). */
void droce_sr_rts(struct droce_qp *qp);
/** sr-spray: the UDP source port of the request packet @p psn, which
 * leaves at @p now (counted; its send time kept for loss detection). */
uint16_t droce_sr_sport(struct droce_qp *qp, uint32_t psn, uint64_t now);

/**
 * sr-spray, a SACK was taken (una_psn and the SACKed bits are current):
 * take the newly delivered PSNs as RTT samples (per path, for RACK, and
 * the newest sent once for the QP's RTT), and move a path that delivers
 * nothing while the others do.
 */
void droce_spray_on_sack(struct droce_qp *qp, uint64_t now);

/**
 * sr-spray, after droce_spray_on_sack() (the QP has a min RTT): @return
 * one past the last PSN from sr.resent_to on that is SACKed or lost by
 * time (RFC 8985): sent before a packet that was delivered, and out for
 * longer than that packet's RTT plus the reordering window.
 * @p stuck: nothing new can go out, so no later SACK may come: a hole below
 * the responder's highest PSN is then lost without the window.
 */
uint32_t droce_spray_lost_end(struct droce_qp *qp, bool stuck, uint64_t now);

/** The requester resends @p psn: counted against its path, which moves
 * after a streak of them. */
void droce_spray_resent(struct droce_qp *qp, uint32_t psn);

/** sr-spray: a loss round starts (the reordering window decays). */
void droce_spray_round(struct droce_qp *qp);

#endif
