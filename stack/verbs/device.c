/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices and contexts: the device list (one device, droce0, when the
 * environment is valid), open/close, and the query verbs with the values an
 * RoCEv2 port reports (Ethernet link layer, GID 0 = the IPv4-mapped address,
 * one P_Key).
 */
#include "verbs/dv.h"

#include "verbs/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <endian.h>

struct dv_device dv_dev = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* The node GUID: EUI-64 style from the IPv4 address, stable across runs
 * (the MAC is only known once the port is open). */
static uint64_t node_guid(const struct dv_device *d)
{
	return ((uint64_t)0x02 << 56) | ((uint64_t)'d' << 48) | ((uint64_t)'r' << 40) |
	       ((uint64_t)d->cfg.ip[0] << 24) | ((uint64_t)d->cfg.ip[1] << 16) |
	       ((uint64_t)d->cfg.ip[2] << 8) | d->cfg.ip[3];
}

DV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct dv_device *d = &dv_dev;
	struct ibv_device **list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&d->mu);
	if (!d->configured) {
		char err[256];
		if (dv_config_parse(&d->cfg, env_get, err, sizeof(err))) {
			fprintf(stderr, "droce: %s\n", err);
		} else {
			d->configured = true;
			d->stats = getenv("DROCE_VERBS_STATS") != NULL;
			d->ibdev.node_type = IBV_NODE_CA;
			d->ibdev.transport_type = IBV_TRANSPORT_IB;
			strcpy(d->ibdev.name, "droce0");
			strcpy(d->ibdev.dev_name, "uverbs0");
			strcpy(d->ibdev.dev_path, "/dev/null");
			strcpy(d->ibdev.ibdev_path, "/dev/null");
			dv_sysfs_init(d, node_guid(d)); /* ibdev_path into it (sysfs.c) */
		}
	}
	int n = d->configured ? 1 : 0;
	if (n)
		list[0] = &d->ibdev;
	pthread_mutex_unlock(&d->mu);
	if (num)
		*num = n;
	return list;
}

DV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

DV_EXPORT const char *ibv_get_device_name(struct ibv_device *dev)
{
	if (!dev) {
		errno = EINVAL;
		return NULL;
	}
	return dev->name;
}

DV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	if (dev != &dv_dev.ibdev)
		return 0;
	return htobe64(node_guid(&dv_dev));
}

DV_EXPORT int ibv_get_device_index(struct ibv_device *dev)
{
	return dev == &dv_dev.ibdev ? 0 : -1;
}

static int dv_query_port_compat(struct ibv_context *ctx, uint8_t port,
				struct _compat_ibv_port_attr *a)
{
	return dv_query_port_ex(ctx, port, (struct ibv_port_attr *)a, sizeof(struct ibv_port_attr));
}

static int dv_query_device_compat(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	return ibv_query_device(ctx, a);
}

/* The context ops, the same for every open of the device (verbs.h's
 * inlines read them through the ibv_context the application holds): the
 * data path's are the execution model's own (backend.h). */
static void init_vctx(struct verbs_context *v, struct ibv_device *dev, int async_fd,
		      const struct dv_backend *be)
{
	struct ibv_context *ic = &v->context;
	v->sz = sizeof(*v);
	v->query_port = dv_query_port_ex;
	v->query_device_ex = dv_query_device_ex;
	v->create_srq_ex = dv_create_srq_ex;
	ic->device = dev;
	ic->cmd_fd = -1;
	ic->async_fd = async_fd;
	ic->num_comp_vectors = 1;
	ic->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ic->mutex, NULL);
	ic->ops._compat_query_device = dv_query_device_compat;
	ic->ops._compat_query_port = dv_query_port_compat;
	ic->ops.poll_cq = be->poll_cq;
	ic->ops.req_notify_cq = dv_req_notify_cq;
	ic->ops.post_send = be->post_send;
	ic->ops.post_recv = be->post_recv;
	ic->ops.post_srq_recv = be->post_srq_recv;
}

DV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct dv_device *d = &dv_dev;
	if (dev != &d->ibdev || !d->configured) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&d->mu);
	struct dv_context *c = NULL;
	struct ibv_context *out = NULL;
	int e = 0;
	if (d->open) {
		/* The port queue has one owner, the first open's engine: a
		 * further open is a context of its own over it (dv_alias). */
		struct dv_alias *a = calloc(1, sizeof(*a));
		if (!a) {
			e = ENOMEM;
			goto out;
		}
		a->shared = d->open;
		init_vctx(&a->vctx, dev, d->open->async_fd, d->open->be);
		d->open->opens++;
		out = &a->vctx.context;
		goto out;
	}
	if ((e = dv_engine_start(d)))
		goto out;
	c = calloc(1, sizeof(*c));
	if (!c) {
		e = ENOMEM;
		goto out;
	}
	c->dev = d;
	c->shared = c;
	c->opens = 1;
	/* The execution model, once for the life of the open (docs/verbs.md). */
	c->be = d->cfg.comm_core >= 0 ? &dv_backend_comm : &dv_backend_thread;
	c->async_fd = dv_async_open(c);
	init_vctx(&c->vctx, dev, c->async_fd, c->be);
	if ((e = dv_engine_open(c))) {
		close(c->async_fd);
		dv_async_close(c);
		free(c);
		c = NULL;
		goto out;
	}
	d->open = c;
	out = &c->vctx.context;
out:
	pthread_mutex_unlock(&d->mu);
	if (!out)
		errno = e;
	return out;
}

DV_EXPORT int ibv_close_device(struct ibv_context *ic)
{
	if (!ic)
		return EINVAL; /* an errno value, as every int verb of rdma-core's */
	struct dv_context *c = dv_ctx(ic);
	struct dv_device *d = c->dev;
	pthread_mutex_lock(&d->mu);
	bool alias = ic != &c->vctx.context;
	bool last = --c->opens == 0;
	if (last) {
		/* the last open, whichever it was: the engine goes */
		dv_engine_close(c);
		if (d->open == c)
			d->open = NULL;
	}
	pthread_mutex_unlock(&d->mu);
	if (alias) {
		pthread_mutex_destroy(&ic->mutex);
		free((struct dv_alias *)((char *)ic - offsetof(struct dv_alias, vctx.context)));
	}
	if (last) {
		if (c->async_fd >= 0)
			close(c->async_fd);
		dv_async_close(c);
		pthread_mutex_destroy(&c->vctx.context.mutex);
		free(c);
	}
	return 0;
}

DV_EXPORT int ibv_query_device(struct ibv_context *ic, struct ibv_device_attr *a)
{
	if (!ic || !a)
		return EINVAL;
	struct dv_device *d = dv_ctx(ic)->dev;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "droce 0.1.0");
	a->node_guid = htobe64(node_guid(d));
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000u;
	/* No IEEE OUI: the value rxe reports (0xFFFFFF) rather than 0, which
	 * programs read as "no device". */
	a->vendor_id = DV_VENDOR_ID;
	a->vendor_part_id = 0;
	a->hw_ver = 0;
	a->max_qp = DV_MAX_QP;
	a->max_qp_wr = DV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SRQ_RESIZE;
	/* A comm-core ring carries at most DROCE_CHAN_MAX_SGE SGEs per WR. */
	unsigned sge = dv_ctx(ic)->be->max_sge;
	a->max_sge = (int)sge;
	a->max_sge_rd = (int)sge;
	a->max_cq = 1u << 16;
	a->max_cqe = DV_MAX_CQE;
	a->max_mr = DV_MAX_MR;
	a->max_pd = 1u << 16;
	a->max_qp_rd_atom = DV_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = DV_MAX_RD_ATOMIC;
	a->max_res_rd_atom = DV_MAX_RD_ATOMIC * DV_MAX_QP;
	a->atomic_cap = IBV_ATOMIC_HCA;
	/* srq.c, in both execution models (posted under the context lock). */
	a->max_srq = DV_MAX_SRQ;
	a->max_srq_wr = DV_MAX_SRQ_WR;
	a->max_srq_sge = DV_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 0;
	a->phys_port_cnt = 1;
	return 0;
}

int dv_query_device_ex(struct ibv_context *ic, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *a, size_t len)
{
	if (in && in->comp_mask)
		return EINVAL;
	if (len < sizeof(a->orig_attr))
		return EINVAL;
	memset(a, 0, len);
	int r = ibv_query_device(ic, &a->orig_attr);
	if (r)
		return r;
	/* The rest stays zero (no ODP, TSO, RSS, packet pacing, DM, ...). */
	/* rdma-core fills phys_port_cnt_ex for every device: the same port count. */
	if (len >= offsetof(struct ibv_device_attr_ex, phys_port_cnt_ex) + sizeof(a->phys_port_cnt_ex))
		a->phys_port_cnt_ex = a->orig_attr.phys_port_cnt;
	return 0;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	if (bytes >= 4096)
		return IBV_MTU_4096;
	if (bytes >= 2048)
		return IBV_MTU_2048;
	if (bytes >= 1024)
		return IBV_MTU_1024;
	if (bytes >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

int dv_query_port_ex(struct ibv_context *ic, uint8_t port, struct ibv_port_attr *a, size_t len)
{
	if (!ic || !a)
		return EINVAL;
	if (port != 1)
		return EINVAL;
	struct dv_device *d = dv_ctx(ic)->dev;
	/* rdma-core zeroes the caller's whole buffer, of the size the caller
	 * was built with: NCCL's struct is 56 bytes and reads active_speed_ex
	 * (offset 52) as the link speed when it is not 0; rdma-core 44's is 52. */
	memset(a, 0, len);
	struct ibv_port_attr p;
	memset(&p, 0, sizeof(p));
	p.state = IBV_PORT_ACTIVE;
	p.max_mtu = mtu_enum(d->roce_mtu);
	p.active_mtu = p.max_mtu;
	p.gid_tbl_len = 1;
	p.port_cap_flags = 0;
	p.max_msg_sz = DV_MAX_MSG;
	p.pkey_tbl_len = 1;
	p.lid = 0;
	p.sm_lid = 0;
	p.lmc = 0;
	p.max_vl_num = 1;
	p.active_width = 2;   /* 4X */
	p.active_speed = 32;  /* EDR, 25 Gbit/s per lane: what memif carries is higher */
	p.phys_state = 5;     /* LinkUp */
	p.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(a, &p, len < sizeof(p) ? len : sizeof(p));
	return 0;
}

/* The exported compat entry: inline ibv_query_port() comes here only when
 * the context has no query_port op (never ours) or from old binaries. */
#undef ibv_query_port
DV_EXPORT int ibv_query_port(struct ibv_context *ic, uint8_t port, struct _compat_ibv_port_attr *a)
{
	return dv_query_port_ex(ic, port, (struct ibv_port_attr *)a, sizeof(struct ibv_port_attr));
}

DV_EXPORT int ibv_query_gid(struct ibv_context *ic, uint8_t port, int index, union ibv_gid *gid)
{
	if (!ic || !gid || port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	dv_gid_from_ip(dv_ctx(ic)->dev->cfg.ip, gid);
	return 0;
}

DV_EXPORT int _ibv_query_gid_ex(struct ibv_context *ic, uint32_t port, uint32_t index,
				struct ibv_gid_entry *e, uint32_t flags, size_t size)
{
	if (!ic || !e || flags || size < sizeof(*e))
		return EINVAL;
	if (port != 1 || index != 0)
		return ENODATA;
	memset(e, 0, size);
	dv_gid_from_ip(dv_ctx(ic)->dev->cfg.ip, &e->gid);
	e->gid_index = 0;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0;
	return 0;
}

DV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ic, struct ibv_gid_entry *e,
				       size_t max, uint32_t flags, size_t size)
{
	if (!ic || (!e && max) || flags || size < sizeof(*e))
		return -EINVAL;
	if (max < 1)
		return -EINVAL;
	int r = _ibv_query_gid_ex(ic, 1, 0, e, 0, size);
	return r ? -r : 1;
}

DV_EXPORT int ibv_query_pkey(struct ibv_context *ic, uint8_t port, int index, __be16 *pkey)
{
	if (!ic || !pkey || port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(DROCE_DEFAULT_PKEY);
	return 0;
}

/* rdma-core walks ibv_query_pkey() and returns its -1 (errno set) past
 * the table's end: -1, not a negative errno. */
DV_EXPORT int ibv_get_pkey_index(struct ibv_context *ic, uint8_t port, __be16 pkey)
{
	if (!ic || port != 1) {
		errno = EINVAL;
		return -1;
	}
	if (be16toh(pkey) != DROCE_DEFAULT_PKEY) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* driver.h's private helper ibv_devinfo uses: index 0 is RoCE v2 (1).
 * rdma-core's fails with -1 and errno set. */
DV_EXPORT int ibv_query_gid_type(struct ibv_context *ic, uint8_t port, unsigned index, int *type)
{
	if (!ic || port != 1 || index != 0 || !type) {
		errno = EINVAL;
		return -1;
	}
	*type = 1;
	return 0;
}
