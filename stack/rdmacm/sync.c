/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Moving ids between channels and the synchronous API over them, as
 * rdma-core's librdmacm has it (cma.c): rdma_migrate_id (to another
 * channel, or NULL: a channel of the id's own, which makes it synchronous),
 * rdma_get_request on a synchronous listener, rdma_create_ep /
 * rdma_destroy_ep. A synchronous id is one created without a channel:
 * each call that has an event waits for it (cma_complete, channel.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"

CMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = (struct cma_id *)id;
	if (!c)
		return cma_fail(EINVAL);
	if (c->sync && !channel)
		return cma_fail(EINVAL); /* rdma-core: it has a channel of its own already */
	bool sync = !channel;
	if (sync && !(channel = rdma_create_event_channel()))
		return -1;
	pthread_mutex_lock(&cma.mu);
	struct rdma_event_channel *old = id->channel;
	bool was_sync = c->sync;
	/* the kernel's ucma_migrate_id moves the id's queued events with it */
	cma_move_events(c, (struct cma_channel *)channel);
	c->sync = sync;
	pthread_mutex_unlock(&cma.mu);
	if (was_sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(old);
	}
	return 0;
}

CMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l = (struct cma_id *)listen;
	if (!l || !id || !l->sync)
		return cma_fail(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(listen->channel, &e))
		return -1;
	int err = 0;
	if (e->event == RDMA_CM_EVENT_REJECTED)
		err = ECONNREFUSED;
	else if (e->status)
		err = e->status < 0 ? -e->status : e->status;
	else if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		err = EINVAL;
	if (!err && l->ep_attr) {
		/* rdma_create_ep's listener: each request gets its QP */
		struct ibv_qp_init_attr a = *l->ep_attr;
		if (rdma_create_qp(e->id, listen->pd, &a))
			err = errno;
	}
	if (err) {
		listen->event = e; /* acked by the next call, as rdma-core */
		return cma_fail(err);
	}
	*id = e->id;
	(*id)->event = e;
	return 0;
}

CMA_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			      struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!id || !res)
		return cma_fail(EINVAL);
	struct rdma_cm_id *cm;
	if (rdma_create_id(NULL, &cm, NULL, res->ai_port_space ? res->ai_port_space : RDMA_PS_TCP))
		return -1;
	int e = 0;
	if (res->ai_flags & RAI_PASSIVE) {
		if (!res->ai_src_addr || rdma_bind_addr(cm, res->ai_src_addr)) {
			e = res->ai_src_addr ? errno : EINVAL;
			goto fail;
		}
		if (pd)
			cm->pd = pd;
		if (attr) {
			struct cma_id *c = (struct cma_id *)cm;
			c->ep_attr = malloc(sizeof(*attr));
			if (!c->ep_attr) {
				e = ENOMEM;
				goto fail;
			}
			*c->ep_attr = *attr;
		}
		*id = cm;
		return 0;
	}
	/* rdma-core's: resolve the address and route with 2 s each */
	if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm, 2000)) {
		e = errno;
		goto fail;
	}
	if (attr) {
		attr->qp_type = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : IBV_QPT_RC;
		if (rdma_create_qp(cm, pd, attr)) {
			e = errno;
			goto fail;
		}
	}
	*id = cm;
	return 0;
fail:
	rdma_destroy_id(cm);
	return cma_fail(e ? e : EINVAL);
}

CMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
