/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_getaddrinfo over getaddrinfo(3): the node and service become the
 * destination (the source with RAI_PASSIVE), as librdmacm does when no
 * IB ACM service answers, and addresses the hints carry fill in what the
 * node did not give (or everything, with no node and service: libfabric's
 * verbs provider asks so); RC over the TCP port space.
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"

static struct sockaddr *sa_dup(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *d = malloc(len);
	if (d)
		memcpy(d, sa, len);
	return d;
}

CMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	/* as rdma-core: the node/service, or else the hints' addresses */
	bool addrs = hints && (hints->ai_src_len || hints->ai_dst_len);
	if (!res || (!node && !service && !addrs))
		return cma_fail(EINVAL);
	if (hints && hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP)
		return cma_fail(ENOSYS);
	struct rdma_addrinfo *ra = calloc(1, sizeof(*ra));
	if (!ra)
		return cma_fail(ENOMEM);
	ra->ai_flags = hints ? hints->ai_flags : 0;
	ra->ai_qp_type = IBV_QPT_RC;
	ra->ai_port_space = RDMA_PS_TCP;
	if (node || service) {
		/* droce0 has an IPv4 address only: "any" is 0.0.0.0, not :: */
		struct addrinfo h = {.ai_socktype = SOCK_STREAM, .ai_family = AF_INET};
		if (hints) {
			if (hints->ai_family)
				h.ai_family = hints->ai_family;
			if (hints->ai_flags & RAI_PASSIVE)
				h.ai_flags |= AI_PASSIVE;
			if (hints->ai_flags & RAI_NUMERICHOST)
				h.ai_flags |= AI_NUMERICHOST;
		}
		struct addrinfo *ai;
		int r = getaddrinfo(node, service, &h, &ai);
		if (r) {
			free(ra);
			return cma_fail(r == EAI_SYSTEM ? errno : EADDRNOTAVAIL);
		}
		struct sockaddr *sa = sa_dup(ai->ai_addr, ai->ai_addrlen);
		ra->ai_family = ai->ai_family;
		if (ra->ai_flags & RAI_PASSIVE) {
			ra->ai_src_addr = sa;
			ra->ai_src_len = sa ? ai->ai_addrlen : 0;
		} else {
			ra->ai_dst_addr = sa;
			ra->ai_dst_len = sa ? ai->ai_addrlen : 0;
		}
		freeaddrinfo(ai);
		if (!sa) {
			free(ra);
			return cma_fail(ENOMEM);
		}
	}
	/* what the node did not give, the hints do (rdma-core: a source
	 * address in the hints stays the source of an active lookup) */
	if (!ra->ai_src_len && hints && hints->ai_src_len) {
		ra->ai_src_addr = sa_dup(hints->ai_src_addr, hints->ai_src_len);
		ra->ai_src_len = ra->ai_src_addr ? hints->ai_src_len : 0;
	}
	if (!ra->ai_dst_len && hints && hints->ai_dst_len) {
		ra->ai_dst_addr = sa_dup(hints->ai_dst_addr, hints->ai_dst_len);
		ra->ai_dst_len = ra->ai_dst_addr ? hints->ai_dst_len : 0;
	}
	if (!ra->ai_family)
		ra->ai_family = ra->ai_src_len ? ra->ai_src_addr->sa_family
					       : ra->ai_dst_len ? ra->ai_dst_addr->sa_family : AF_INET;
	if (!ra->ai_src_len && !ra->ai_dst_len) {
		rdma_freeaddrinfo(ra);
		return cma_fail(ENOMEM);
	}
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
