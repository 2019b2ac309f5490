/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_getaddrinfo over getaddrinfo(3): the node and service become the
 * destination (the source with RAI_PASSIVE), as librdmacm does when no
 * IB ACM service answers; RC over the TCP port space.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"

CMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	if (!res || (!node && !service))
		return cma_fail(EINVAL);
	/* droce0 has an IPv4 address only: "any" is 0.0.0.0, not :: */
	struct addrinfo h = {.ai_socktype = SOCK_STREAM, .ai_family = AF_INET};
	if (hints) {
		if (hints->ai_family)
			h.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP)
			return cma_fail(ENOSYS);
	}
	struct addrinfo *ai;
	int r = getaddrinfo(node, service, &h, &ai);
	if (r)
		return cma_fail(r == EAI_SYSTEM ? errno : EADDRNOTAVAIL);
	struct rdma_addrinfo *ra = calloc(1, sizeof(*ra));
	struct sockaddr *sa = ra ? malloc(ai->ai_addrlen) : NULL;
	if (!sa) {
		free(ra);
		freeaddrinfo(ai);
		return cma_fail(ENOMEM);
	}
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	ra->ai_flags = hints ? hints->ai_flags : 0;
	ra->ai_family = ai->ai_family;
	ra->ai_qp_type = IBV_QPT_RC;
	ra->ai_port_space = RDMA_PS_TCP;
	if (ra->ai_flags & RAI_PASSIVE) {
		ra->ai_src_addr = sa;
		ra->ai_src_len = ai->ai_addrlen;
	} else {
		ra->ai_dst_addr = sa;
		ra->ai_dst_len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	*res = ra;
	return 0;
}

CMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *n = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = n;
	}
}
