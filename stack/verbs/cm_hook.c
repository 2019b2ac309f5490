/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table the librdmacm drop-in reaches this library through
 * (cm_hook.h, docs/rdmacm.md).
 */
#include <errno.h>
#include <string.h>

#include "net/port/port.h"
#include "verbs/cm_hook.h"
#include "verbs/dv.h"

static struct droce_ctx *h_dctx(struct ibv_context *ic)
{
	return ic && ic->device == &dv_dev.ibdev ? dv_ctx(ic)->dctx : NULL;
}

static struct droce_qp *h_dqp(struct ibv_qp *qp)
{
	return qp && h_dctx(qp->context) ? ((struct dv_qp *)qp)->dqp : NULL;
}

static void h_lock(struct ibv_context *ic)
{
	dv_lock(dv_ctx(ic));
}

static void h_unlock(struct ibv_context *ic)
{
	dv_unlock(dv_ctx(ic));
}

static uint64_t h_now(struct ibv_context *ic)
{
	return dv_now(dv_ctx(ic));
}

static int h_resolve(void *arg, uint8_t ipv, const uint8_t ip[16], uint8_t mac[6], uint64_t now)
{
	struct dv_context *c = dv_ctx(arg);
	return ipv == 4 ? droce_port_resolve(c->port, ip, mac, now) : -EAFNOSUPPORT;
}

static void h_local_ip(struct ibv_context *ic, uint8_t ip[4])
{
	memcpy(ip, dv_ctx(ic)->dev->cfg.ip, 4);
}

static struct ibv_context *h_open_context(void)
{
	pthread_mutex_lock(&dv_dev.mu);
	struct ibv_context *ic = dv_dev.open ? &dv_dev.open->vctx.context : NULL;
	pthread_mutex_unlock(&dv_dev.mu);
	return ic;
}

static const struct droce_verbs_cm_hooks hooks = {
	.version = 1,
	.dctx = h_dctx,
	.dqp = h_dqp,
	.lock = h_lock,
	.unlock = h_unlock,
	.now = h_now,
	.resolve = h_resolve,
	.local_ip = h_local_ip,
	.open_context = h_open_context,
};

DV_EXPORT const struct droce_verbs_cm_hooks *droce_verbs_cm_hooks(void)
{
	return &hooks;
}
