/* SPDX-License-Identifier: BSD-3-Clause */
/* A context's QPs for the tools that report on them (telemetry, stats). */
#include "core/core_int.h"

unsigned droce_ctx_qps(const struct droce_ctx *ctx, struct droce_qp **out, unsigned max)
{
	if (!ctx)
		return 0;
	unsigned n = 0;
	for (uint32_t i = 0; i < ctx->qp_hi; i++) {
		struct droce_qp *qp = ctx->qps[i];
		if (!qp)
			continue;
		if (n < max && out)
			out[n] = qp;
		n++;
	}
	return n;
}

const char *droce_qp_cc_name(const struct droce_qp *qp)
{
	return qp && qp->cc ? qp->cc->name : "none";
}
