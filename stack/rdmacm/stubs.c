/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the drop-in does not do (docs/rdmacm.md): each fails with ENOSYS
 * (or returns nothing), so programs built with BIND_NOW against rdma-core's
 * librdmacm load and fail cleanly where they use them. UD port spaces
 * (SIDR), multicast, SRQs on ids, ECE, rdma_notify, and rsockets.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "rdmacm/cma.h"

#define NOSYS() do { errno = ENOSYS; return -1; } while (0)

CMA_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr) { NOSYS(); }
CMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr) { NOSYS(); }
CMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id) {}
CMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context) { NOSYS(); }
CMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *a,
				      void *context) { NOSYS(); }
CMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr) { NOSYS(); }
CMA_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event) { NOSYS(); }
CMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { NOSYS(); }
CMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *pd, uint8_t len) { NOSYS(); }
CMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { NOSYS(); }

/* Options (timeouts, TOS, reuse-address, ...): accepted and ignored; droce's
 * CM has its own timeouts and one address. */
CMA_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			       size_t optlen)
{
	return id ? 0 : (errno = EINVAL, -1);
}

CMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l = calloc(2, sizeof(*l));
	pthread_mutex_lock(&cma.mu);
	int r = l ? cma_device() : ENOMEM;
	if (!r)
		l[0] = cma.verbs;
	pthread_mutex_unlock(&cma.mu);
	if (num_devices)
		*num_devices = r ? 0 : 1;
	if (r) {
		free(l);
		errno = r;
		return NULL;
	}
	return l;
}

CMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
