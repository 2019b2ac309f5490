/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Everything else libibverbs.so.1 exports, so that every program and
 * provider linked against rdma-core's library loads ours (perftest links
 * libmlx5, libefa and librdmacm, all built with BIND_NOW: one missing
 * symbol and the loader refuses the program).
 *
 * Public verbs droce does not implement (multicast, import, ECE, dma-buf,
 * resize/rereg) fail the way rdma-core fails for a device without them: NULL with errno EOPNOTSUPP, or
 * EOPNOTSUPP returned. The IBVERBS_PRIVATE_34 entry points are the provider
 * interface (kernel commands, driver registration); no droce path reaches
 * them, and a provider that calls one gets EOPNOTSUPP. Their real argument
 * lists live in rdma-core's driver.h, which Debian does not ship, and do not
 * matter for functions that ignore them.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------ public, not supported -- */

DV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

DV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

DV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return EOPNOTSUPP;
}

/* rdma-core: a negative enum ibv_rereg_mr_err_code with errno set, for a
 * device without rereg (was +EOPNOTSUPP and no errno). Bad flags are the
 * caller's error (EINVAL), as rdma-core checks them before the device. */
DV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	if (!mr || (flags & ~(int)IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

DV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *ic, uint32_t handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *ic, uint32_t handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

DV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

DV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

DV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

DV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

/* droce places the data of one message in order (RX copies in PSN order). */
DV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 1;
}

/* rdma-core's fails with a negative errno (-EINVAL, -EHOSTUNREACH), or
 * ibv_query_gid()'s -1. */
DV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *ic, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP;
}

/* From rdma-core's driver.h / marshall.h (not shipped by Debian). */
DV_EXPORT int ibv_dofork_range(void *base, size_t size);
DV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

DV_EXPORT int ibv_dontfork_range(void *base, size_t size);
DV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

/* Kernel ABI struct converters librdmacm imports; nothing to convert. */
#define NOOP(name)                          \
	DV_EXPORT void name(void *a, void *b); \
	DV_EXPORT void name(void *a, void *b) {}
NOOP(ibv_copy_ah_attr_from_kern)
NOOP(ibv_copy_path_rec_from_kern)
NOOP(ibv_copy_path_rec_to_kern)
NOOP(ibv_copy_qp_attr_from_kern)

/* ------------------------------------------------- IBVERBS_PRIVATE_34 -- */

DV_EXPORT bool verbs_allow_disassociate_destroy;

/* A provider's constructor registers itself; we keep no provider. */
DV_EXPORT void verbs_register_driver_34(const void *ops);
DV_EXPORT void verbs_register_driver_34(const void *ops)
{
}

DV_EXPORT void __verbs_log(void *ctx, const char *fmt, ...);
DV_EXPORT void __verbs_log(void *ctx, const char *fmt, ...)
{
}

DV_EXPORT void *_verbs_init_and_alloc_context(void);
DV_EXPORT void *_verbs_init_and_alloc_context(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

DV_EXPORT void *verbs_open_device(void);
DV_EXPORT void *verbs_open_device(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

#define UNSUP(name)                 \
	DV_EXPORT int name(void);   \
	DV_EXPORT int name(void)    \
	{                           \
		return EOPNOTSUPP;  \
	}
UNSUP(__ioctl_final_num_attrs)
UNSUP(execute_ioctl)
UNSUP(verbs_init_cq)
UNSUP(verbs_set_ops)
UNSUP(verbs_uninit_context)
UNSUP(ibv_read_ibdev_sysfs_file)
UNSUP(ibv_cmd_advise_mr)
UNSUP(ibv_cmd_alloc_dm)
UNSUP(ibv_cmd_alloc_mw)
UNSUP(ibv_cmd_alloc_pd)
UNSUP(ibv_cmd_attach_mcast)
UNSUP(ibv_cmd_close_xrcd)
UNSUP(ibv_cmd_create_ah)
UNSUP(ibv_cmd_create_counters)
UNSUP(ibv_cmd_create_cq)
UNSUP(ibv_cmd_create_cq_ex)
UNSUP(ibv_cmd_create_flow)
UNSUP(ibv_cmd_create_flow_action_esp)
UNSUP(ibv_cmd_create_qp)
UNSUP(ibv_cmd_create_qp_ex)
UNSUP(ibv_cmd_create_qp_ex2)
UNSUP(ibv_cmd_create_rwq_ind_table)
UNSUP(ibv_cmd_create_srq)
UNSUP(ibv_cmd_create_srq_ex)
UNSUP(ibv_cmd_create_wq)
UNSUP(ibv_cmd_dealloc_mw)
UNSUP(ibv_cmd_dealloc_pd)
UNSUP(ibv_cmd_dereg_mr)
UNSUP(ibv_cmd_destroy_ah)
UNSUP(ibv_cmd_destroy_counters)
UNSUP(ibv_cmd_destroy_cq)
UNSUP(ibv_cmd_destroy_flow)
UNSUP(ibv_cmd_destroy_flow_action)
UNSUP(ibv_cmd_destroy_qp)
UNSUP(ibv_cmd_destroy_rwq_ind_table)
UNSUP(ibv_cmd_destroy_srq)
UNSUP(ibv_cmd_destroy_wq)
UNSUP(ibv_cmd_detach_mcast)
UNSUP(ibv_cmd_free_dm)
UNSUP(ibv_cmd_get_context)
UNSUP(ibv_cmd_modify_cq)
UNSUP(ibv_cmd_modify_flow_action_esp)
UNSUP(ibv_cmd_modify_qp)
UNSUP(ibv_cmd_modify_qp_ex)
UNSUP(ibv_cmd_modify_srq)
UNSUP(ibv_cmd_modify_wq)
UNSUP(ibv_cmd_open_qp)
UNSUP(ibv_cmd_open_xrcd)
UNSUP(ibv_cmd_poll_cq)
UNSUP(ibv_cmd_post_recv)
UNSUP(ibv_cmd_post_send)
UNSUP(ibv_cmd_post_srq_recv)
UNSUP(ibv_cmd_query_context)
UNSUP(ibv_cmd_query_device_any)
UNSUP(ibv_cmd_query_mr)
UNSUP(ibv_cmd_query_port)
UNSUP(ibv_cmd_query_qp)
UNSUP(ibv_cmd_query_srq)
UNSUP(ibv_cmd_read_counters)
UNSUP(ibv_cmd_reg_dm_mr)
UNSUP(ibv_cmd_reg_dmabuf_mr)
UNSUP(ibv_cmd_reg_mr)
UNSUP(ibv_cmd_req_notify_cq)
UNSUP(ibv_cmd_rereg_mr)
UNSUP(ibv_cmd_resize_cq)
