/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD address handles (IBTA 10.2.2.1, 11.2.2): the RoCEv2 address vector of
 * a datagram's destination. The network fields of every datagram sent
 * through a handle are computed once, here; a UD send WR only names the
 * handle (transport/ud.c builds its headers from them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

struct droce_ah *droce_create_ah(struct droce_ctx *ctx, const struct droce_ah_attr *attr)
{
	if (!ctx || !attr || attr->ip_version != ctx->p.ip_version || attr->dscp > 63) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_ah *ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ctx = ctx;
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
	free(ah);
	return 0;
}
