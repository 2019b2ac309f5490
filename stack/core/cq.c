/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: a fixed ring that never overwrites. A completion that
 * finds it full is lost, flagged and counted (IBTA 11.4.2.1 CQ overrun);
 * droce_poll_cq() then reports -EOVERFLOW, and the QP that tried to complete
 * goes to ERR (droce_tp_complete, transport/error.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core_int.h"
#include "core/ring_mem.h"

struct droce_cq *droce_create_cq(struct droce_ctx *ctx, unsigned depth)
{
	if (!ctx || depth < 1 || depth > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_cq *cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->ring = droce_ring_calloc(depth, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = ctx;
	cq->depth = depth;
	cq->next = ctx->cqs;
	if (ctx->cqs)
		ctx->cqs->prev = cq;
	ctx->cqs = cq;
	return cq;
}

int droce_destroy_cq(struct droce_cq *cq)
{
	if (!cq)
		return -EINVAL;
	if (cq->users)
		return -EBUSY;
	droce_event_forget(cq->ctx, cq);
	if (cq->prev)
		cq->prev->next = cq->next;
	else
		cq->ctx->cqs = cq->next;
	if (cq->next)
		cq->next->prev = cq->prev;
	free(cq->ring);
	free(cq);
	return 0;
}

int droce_poll_cq(struct droce_cq *cq, int n, struct droce_wc *wc)
{
	if (!cq || n < 0 || (n > 0 && !wc))
		return -EINVAL;
	if (cq->overflow)
		return -EOVERFLOW;
	int k = 0;
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		if (++cq->head == cq->depth)
			cq->head = 0;
		cq->count--;
	}
	return k;
}

static const char *const wc_status_names[] = {
	[DROCE_WC_SUCCESS] = "success",
	[DROCE_WC_LOC_LEN_ERR] = "local length error",
	[DROCE_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[DROCE_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[DROCE_WC_LOC_PROT_ERR] = "local protection error",
	[DROCE_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[DROCE_WC_MW_BIND_ERR] = "memory management operation error",
	[DROCE_WC_BAD_RESP_ERR] = "bad response error",
	[DROCE_WC_LOC_ACCESS_ERR] = "local access error",
	[DROCE_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[DROCE_WC_REM_ACCESS_ERR] = "remote access error",
	[DROCE_WC_REM_OP_ERR] = "remote operation error",
	[DROCE_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[DROCE_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[DROCE_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[DROCE_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[DROCE_WC_REM_ABORT_ERR] = "aborted error",
	[DROCE_WC_INV_EECN_ERR] = "invalid EE context number",
	[DROCE_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[DROCE_WC_FATAL_ERR] = "fatal error",
	[DROCE_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[DROCE_WC_GENERAL_ERR] = "general error",
};

const char *droce_wc_status_str(enum droce_wc_status status)
{
	if ((unsigned)status < sizeof(wc_status_names) / sizeof(wc_status_names[0]) &&
	    wc_status_names[status])
		return wc_status_names[status];
	return "unknown";
}
