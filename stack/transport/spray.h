/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet spraying for an sr-spray QP (docs/transport.md "Selective repeat"):
 * request PSN p leaves on path p % DROCE_SR_PATHS, each path a UDP source
 * port (ECMP entropy, IBTA A17.5.1.1); a path whose packets keep being
 * resent is moved to a new source port.
 */
#ifndef DROCE_TRANSPORT_SPRAY_H
#define DROCE_TRANSPORT_SPRAY_H

#include "transport/tp_int.h"

/** RTS: the paths of an sr-spray QP (path 0 is the template's source port). */
void droce_sr_rts(struct droce_qp *qp);
/** sr-spray: the UDP source port of the request packet @p psn (counted). */
uint16_t droce_sr_sport(struct droce_qp *qp, uint32_t psn);

/** The requester resends @p psn: counted against its path, which moves
 * after a streak of them. */
void droce_spray_resent(struct droce_qp *qp, uint32_t psn);

#endif
