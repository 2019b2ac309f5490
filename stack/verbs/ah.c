/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD address handles (verbs: ibv_create_ah, ibv_destroy_ah and the two
 * "from a work completion" helpers) over droce_create_ah(). RoCEv2 needs a
 * GRH-routed AH (IBTA A17.4): the destination GID is the peer's IPv4-mapped
 * address, the next hop's MAC comes from ARP on the port (qp.c's AV path).
 * In comm-core mode a handle goes through droce_comm_destroy_ah
 * (backend_comm.c), so a send still queued in a ring cannot name it freed.
 */
#include "verbs/dv.h"

#include "verbs/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

DV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	struct dv_context *c = dv_ctx(pd->context);
	struct dv_ah *ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	struct droce_ah_attr d;
	dv_lock(c);
	int r = dv_av_resolve(c, attr, &d);
	if (!r) {
		ah->dah = droce_create_ah_pd(((struct dv_pd *)pd)->dpd, &d);
		if (!ah->dah)
			r = errno;
	}
	dv_unlock(c);
	if (r) {
		free(ah);
		errno = r;
		return NULL;
	}
	ah->c = c;
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	return &ah->ibah;
}

DV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	if (!ibah)
		return EINVAL;
	struct dv_ah *ah = (struct dv_ah *)ibah;
	dv_lock(ah->c);
	int r = ah->c->be->destroy_ah(ah->c, ah->dah);
	dv_unlock(ah->c);
	if (r)
		return -r;
	free(ah);
	return 0;
}

/* The reply address of a UD receive: the sender's IP from the GRH area
 * (RoCEv2 IPv4: the IPv4 header in its last 20 bytes, source at +12), its
 * QPN from the completion. As rdma-core's: -1 with errno on failure; a
 * completion without IBV_WC_GRH gives an attribute without a GRH (0),
 * which ibv_create_ah() then refuses (RoCE needs one). */
DV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *ic, uint8_t port_num, struct ibv_wc *wc,
				  struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	if (!ic || !wc || !ah_attr || port_num != 1 || ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->port_num = 1;
	ah_attr->sl = wc->sl;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	const uint8_t *g = (const uint8_t *)grh;
	if ((g[20] >> 4) != 4) {
		errno = EPROTONOSUPPORT; /* droce's ports are IPv4 */
		return -1;
	}
	ah_attr->is_global = 1;
	ah_attr->grh.hop_limit = g[20 + 8];
	ah_attr->grh.traffic_class = g[20 + 1];
	ah_attr->grh.sgid_index = 0;
	dv_gid_from_ip(g + 20 + 12, &ah_attr->grh.dgid);
	return 0;
}

DV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}
