/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's own QP object and the small API core/ drives it through
 * core/ owns the QP (rings, attributes, CQs, header
 * template) and only dispatches and schedules: it hands received packets to
 * droce_tp_rx(), gives the QP its turn on the link with droce_tp_tx(), fires
 * droce_tp_timers() when droce_tp_deadline() is due, and calls
 * droce_tp_reset() / droce_tp_to_err() / droce_tp_connect() on state
 * changes. The transport never calls back into core/: it asks to be
 * scheduled by setting `kick`, and core reads the QP's deadline after each
 * call (one-way flow, nothing below core/ calls up).
 *
 * Inside, the requester's send cursor moves only through the requester's
 * advance (a packet left), droce_req_rewind() (go back to a PSN) and
 * droce_req_wqe_done() (the completer retired the WQE at sq_una), and one
 * timer state machine per QP (timer.c) holds the ACK timeout, the RNR wait and
 * the pacing gate.
 */
#ifndef DROCE_TRANSPORT_TP_H
#define DROCE_TRANSPORT_TP_H

#include <stdbool.h>
#include <stdint.h>

#include <droce/droce.h>

#include "wire/fields.h"
#include "wire/parse.h"

struct droce_qp;

/* ------------------------------------------------------- core -> transport -- */

enum droce_tx_result { DROCE_TX_IDLE, DROCE_TX_MORE, DROCE_TX_BUSY };

/**
 * The state @p qp will need with selective repeat mode @p transport and
 * @p max_dest_rd_atomic READ/atomic resources (model/tp.h: sr, rd),
 * allocated if it is not yet (before the attributes change: a failure
 * leaves the QP as it was). @return 0, or -ENOMEM.
 */
int droce_tp_fit(struct droce_qp *qp, uint8_t transport, uint8_t max_dest_rd_atomic);
/** The QP is destroyed: what droce_tp_fit() allocated goes. */
void droce_tp_release(struct droce_qp *qp);
/** Everything the transport holds for @p qp back to its RESET value (RESET and ERR alike). */
void droce_tp_reset(struct droce_qp *qp);
/** INIT -> RTR: the responder starts at rq_psn. */
void droce_tp_rtr(struct droce_qp *qp);
/** RTR -> RTS: the requester starts at sq_psn with full retry counters. */
void droce_tp_rts(struct droce_qp *qp);
/** Move to ERR (11.4.2 / 10.3.1): flush every outstanding WQE with WR_FLUSH_ERR, reset the transport. */
void droce_tp_to_err(struct droce_qp *qp);
/** A packet for @p qp (after the context's checks): responder, completer or cc. */
void droce_tp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now);
/** The QP's turn on the link: up to @p quota frames, requester and responder sharing it. */
enum droce_tx_result droce_tp_tx(struct droce_qp *qp, uint64_t now, unsigned quota, unsigned *sent);
/** The ACK timeout the QP arms now (ns; 0 = none): IBTA's, or adaptive (rtt.h). */
uint64_t droce_tp_rto(const struct droce_qp *qp);
/** Timers due at @p now (ACK timeout, RNR wait end, pacing). */
void droce_tp_timers(struct droce_qp *qp, uint64_t now);
/** Rebuild the header template after the AV, destination QPN or P_Key changed. */
void droce_tp_build_template(struct droce_qp *qp);
/** Headers of one of @p qp's frames into @p buf (DROCE_HDR_SCRATCH bytes): droce_build_hdrs, faster. */
size_t droce_qp_build_hdrs(const struct droce_qp *qp, uint8_t *buf, const struct droce_hdrs *h);

/** RNR timer code (IBTA table 45) -> nanoseconds. */
uint64_t droce_rnr_timer_ns(uint8_t code);

#endif
