/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Context drop reasons: every frame the context does not hand to a QP, or a
 * QP throws away, is counted under one of these (principle 5, docs/architecture.md). The
 * wire parser's reasons come first (same order, same names) so a parse
 * result maps to a drop reason by a constant offset; transport reasons follow.
 */
#ifndef DROCE_MODEL_DROP_H
#define DROCE_MODEL_DROP_H

#include "wire/parse.h"

#define DROCE_DROP_TRANSPORT_REASONS(X)                                          \
	X(UNKNOWN_QPN, "no QP with the BTH destination QPN")                   \
	X(QP_STATE, "the QP's state does not accept this packet")              \
	X(DST_IP, "destination IP is not this context's")                     \
	X(BAD_PKEY, "P_Key does not match the QP's partition")                 \
	X(NOT_RC, "transport service other than RC")                           \
	X(CNP_HANDLED, "CNP consumed by congestion control")                   \
	X(GHOST_RESP, "response for a PSN never sent")                         \
	X(STALE_RESP, "response older than the oldest unacknowledged PSN")     \
	X(UNEXPECTED_RESP, "response that matches no outstanding request")    \
	X(BAD_RESP_LEN, "READ response of the wrong length or opcode")         \
	X(OUT_OF_SEQ, "request beyond the expected PSN (after the one NAK)")   \
	X(DUP_NO_RES, "duplicate READ/atomic older than the replay ring")      \
	X(RESP_BUSY, "response queue full")                                  \
	X(SRC_IP, "RC packet from an address other than the QP's peer")         \
	X(NOT_UD, "packet of another transport service to a UD QP")           \
	X(BAD_QKEY, "UD datagram whose Q_Key is not the QP's (IBTA 10.2.4)")    \
	X(UD_NO_RWQE, "UD datagram with no receive WQE posted (no RNR for UD)") \
	X(UD_TOO_LONG, "UD datagram longer than the receive WQE (40 B GRH + payload)")

enum droce_drop_reason {
#define X(n, s) DROCE_DROP_PARSE_##n,
	DROCE_PARSE_REASONS(X)
#undef X
#define X(n, s) DROCE_DROP_##n,
	DROCE_DROP_TRANSPORT_REASONS(X)
#undef X
	DROCE_DROP__COUNT
};

/* drop[] has DROCE_DROP_REASON_MAX slots (include/droce/ctx.h). */
_Static_assert(DROCE_DROP__COUNT <= 64, "drop reasons exceed DROCE_DROP_REASON_MAX");

/** Drop reason of a parse result (OK and NOT_ROCE included, for symmetry). */
static inline enum droce_drop_reason droce_drop_of_parse(enum droce_parse_result r)
{
	return (enum droce_drop_reason)r;
}

#endif
