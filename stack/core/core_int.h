/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Calls between core/'s own files (context, QP, UD rows). Only core/
 * includes it.
 */
#ifndef DROCE_CORE_CORE_INT_H
#define DROCE_CORE_CORE_INT_H

#include "core/sched.h"
#include "model/model.h"
#include "transport/tp.h"

/* core/ud_qp.c: UD and GSI QPs' part of modify and post. */
/** IBTA 11.2.5.1 for UD: required and optional attributes of cur -> next. @return false if illegal. */
bool droce_ud_transition(enum droce_qp_state cur, enum droce_qp_state next, bool gsi,
			 unsigned *req, unsigned *opt);
/** Check a UD send WR (opcode, address handle, QPN). @return 0 or -EINVAL. */
int droce_ud_wr_check(const struct droce_qp *qp, const struct droce_send_wr *wr);

/** Release the handles of UD WQEs [from, to) of @p qp (no-op for RC). */
void droce_ud_swqes_release(struct droce_qp *qp, uint32_t from, uint32_t to);

/* core/rand.c: the context's random draws. */
uint64_t droce_ctx_rand(struct droce_ctx *ctx);

/* core/qp.c: a receive WR as a WQE (lkeys resolved now), for a QP's RQ and an SRQ's. */
void droce_rwqe_fill(struct droce_ctx *ctx, uint32_t pd_id, struct droce_rwqe *r,
		     const struct droce_recv_wr *wr);
/* core/srq.c: drop the events not taken yet that name @p obj (a QP, CQ or SRQ being destroyed). */
void droce_event_forget(struct droce_ctx *ctx, const void *obj);

#endif
