/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD and GSI queue pairs' part of modify_qp and post_send (IBTA 9.8.4,
 * 10.2.4, 11.2.5.1). A UD QP has no peer: no address vector, destination
 * QPN or PSNs to agree on at RTR; each send WR names its destination
 * (address handle, QPN, Q_Key). Everything else (rings, states, posting,
 * flush) is the RC code in qp.c.
 */
#include <errno.h>

#include "core/core_int.h"

#define M(x) DROCE_QP_##x

/* The UD rows of IBTA 11.2.5.1 table 93 (verbs' qp_state_table for
 * IB_QPT_UD / IB_QPT_GSI). PATH_MTU is droce's: the largest message the QP
 * sends (verbs takes it from the port). */
bool droce_ud_transition(enum droce_qp_state cur, enum droce_qp_state next, bool gsi,
			 unsigned *req, unsigned *opt)
{
	*req = *opt = 0;
	if (next == DROCE_QPS_RESET || next == DROCE_QPS_ERR)
		return true;
	switch (cur) {
	case DROCE_QPS_RESET:
		if (next != DROCE_QPS_INIT)
			return false;
		/* The GSI QP's Q_Key is the well-known one (set at create). */
		*req = gsi ? 0 : M(QKEY);
		*opt = M(PKEY) | M(PATH_MTU) | (gsi ? M(QKEY) : 0);
		return true;
	case DROCE_QPS_INIT:
		if (next != DROCE_QPS_INIT && next != DROCE_QPS_RTR)
			return false;
		*opt = M(PKEY) | M(QKEY) | M(PATH_MTU);
		return true;
	case DROCE_QPS_RTR:
		if (next != DROCE_QPS_RTS)
			return false;
		*req = M(SQ_PSN);
		*opt = M(QKEY);
		return true;
	case DROCE_QPS_RTS:
		if (next == DROCE_QPS_RTS) {
			*opt = M(QKEY);
			return true;
		}
		return next == DROCE_QPS_SQD;
	case DROCE_QPS_SQD:
		if (next == DROCE_QPS_RTS) {
			*opt = M(QKEY);
			return true;
		}
		if (next == DROCE_QPS_SQD) {
			*opt = M(PKEY) | M(QKEY);
			return true;
		}
		return false;
	case DROCE_QPS_SQE:
		if (next != DROCE_QPS_RTS)
			return false;
		*opt = M(QKEY);
		return true;
	case DROCE_QPS_ERR:
	default:
		return false;
	}
}

int droce_ud_wr_check(const struct droce_qp *qp, const struct droce_send_wr *wr)
{
	/* 9.8.4: UD carries SEND (with or without immediate) only. */
	if (wr->opcode != DROCE_WR_SEND && wr->opcode != DROCE_WR_SEND_WITH_IMM)
		return -EINVAL;
	/* 10.2.3 / 11.4.1.1: the handle must be of the QP's own PD. */
	if (!wr->wr.ud.ah || wr->wr.ud.ah->ctx != qp->ctx || wr->wr.ud.ah->pd != qp->pd ||
	    wr->wr.ud.remote_qpn > DROCE_QPN_MASK)
		return -EINVAL;
	return 0;
}

void droce_ud_swqes_release(struct droce_qp *qp, uint32_t from, uint32_t to)
{
	if (qp->type == DROCE_QPT_RC)
		return;
	for (uint32_t i = from; i != to; i++)
		droce_ud_swqe_release(&qp->sq[i & qp->sq_mask]);
}
