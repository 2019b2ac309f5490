/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf --cm (cm.c): QPs connected through droce's CM over QP1.
 */
#ifndef DROCE_PERF_CM_H
#define DROCE_PERF_CM_H

#include <droce/droce.h>

struct perf;

/** Start @p ctx's CM (and, on the server, listen on -p PORT). @return 0 or -errno (printed). */
int perf_cm_open(struct perf *p, struct droce_ctx *ctx, droce_resolve_fn resolve, void *arg);

/**
 * Client: connect qp[0..qps) to the server; server: accept them. Fills
 * p->qp[i].remote and peer_qpn and p->mtu; every QP is in RTS after.
 * @return 0 or -errno (printed).
 */
int perf_cm_connect(struct perf *p, struct droce_ctx *ctx, struct droce_qp **qp);

#endif
