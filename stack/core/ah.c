/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD address handles (IBTA 10.2.2.1, 11.2.2): the RoCEv2 address vector of
 * a datagram's destination. The network fields of every datagram sent
 * through a handle are computed once, here; a UD send WR only names the
 * handle (transport/ud.c builds its headers from them). A handle is
 * reference counted: each UD WQE naming it holds a reference until it has
 * left or was flushed (core/qp.c, transport/ud.c, transport/error.c), so an
 * application that destroys a handle with datagrams still queued frees
 * nothing they use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

static struct droce_ah *create(struct droce_ctx *ctx, struct droce_pd *pd,
			       const struct droce_ah_attr *attr)
{
	if (!attr || attr->ip_version != ctx->p.ip_version || attr->dscp > 63) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_ah *ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ctx = ctx;
	ah->pd = pd;
	ah->refs = 1;
	pd->users++;
	ah->attr = *attr;
	struct droce_net_fields *n = &ah->net;
	memcpy(n->dst_mac, attr->dst_mac, 6);
	memcpy(n->src_mac, ctx->p.mac, 6);
	n->ip_version = ctx->p.ip_version;
	memcpy(n->src_ip, ctx->p.ip, 16);
	memcpy(n->dst_ip, attr->dst_ip, 16);
	n->dscp = attr->dscp;
	/* Not-ECT, as rxe sends datagrams (TOS = the AH's traffic class): a UD
	 * QP has no CNP loop to answer a mark with. */
	n->ecn = 0;
	n->ttl = attr->ttl ? attr->ttl : DROCE_DEFAULT_TTL;
	n->sport = attr->udp_sport;
	ah->next = ctx->ahs;
	if (ctx->ahs)
		ctx->ahs->prev = ah;
	ctx->ahs = ah;
	return ah;
}

struct droce_ah *droce_create_ah(struct droce_ctx *ctx, const struct droce_ah_attr *attr)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	return create(ctx, &ctx->pd0, attr);
}

struct droce_ah *droce_create_ah_pd(struct droce_pd *pd, const struct droce_ah_attr *attr)
{
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	return create(pd->ctx, pd, attr);
}

int droce_destroy_ah(struct droce_ah *ah)
{
	if (!ah)
		return -EINVAL;
	struct droce_ctx *ctx = ah->ctx;
	if (ah->prev)
		ah->prev->next = ah->next;
	else
		ctx->ahs = ah->next;
	if (ah->next)
		ah->next->prev = ah->prev;
	ah->prev = ah->next = NULL;
	ah->pd->users--;
	ah->pd = NULL; /* the PD may go now; what is queued needs only the fields */
	droce_ah_put(ah);
	return 0;
}
