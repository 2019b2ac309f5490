/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibv <-> droce translations (xlate.h; the completion tables are
 * inline there): one switch per enum, one case per value, so a value added on either side is a compiler warning
 * (-Wswitch) or a refusal, never a silent wrong number.
 */
#include "verbs/xlate.h"

#include <errno.h>
#include <string.h>

/* SGE lists go to droce as they are: the two layouts are one. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct droce_sge), "sge size");
_Static_assert(offsetof(struct ibv_sge, addr) == offsetof(struct droce_sge, addr), "sge addr");
_Static_assert(offsetof(struct ibv_sge, length) == offsetof(struct droce_sge, length), "sge len");
_Static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct droce_sge, lkey), "sge lkey");

static inline int wr_opcode(enum ibv_wr_opcode o, enum droce_wr_opcode *out)
{
	switch (o) {
	case IBV_WR_RDMA_WRITE: *out = DROCE_WR_RDMA_WRITE; return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM: *out = DROCE_WR_RDMA_WRITE_WITH_IMM; return 0;
	case IBV_WR_SEND: *out = DROCE_WR_SEND; return 0;
	case IBV_WR_SEND_WITH_IMM: *out = DROCE_WR_SEND_WITH_IMM; return 0;
	case IBV_WR_RDMA_READ: *out = DROCE_WR_RDMA_READ; return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP: *out = DROCE_WR_ATOMIC_CMP_AND_SWP; return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: *out = DROCE_WR_ATOMIC_FETCH_AND_ADD; return 0;
	default: return EINVAL; /* invalidate, MW bind, TSO, atomic write, flush */
	}
}

int dv_wr_opcode_to_droce(enum ibv_wr_opcode o, enum droce_wr_opcode *out)
{
	return wr_opcode(o, out);
}

int dv_send_flags_to_droce(unsigned f, unsigned *out)
{
	if (f & ~(unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE))
		return EINVAL;
	unsigned d = 0;
	if (f & IBV_SEND_FENCE)
		d |= DROCE_SEND_FENCE;
	if (f & IBV_SEND_SIGNALED)
		d |= DROCE_SEND_SIGNALED;
	if (f & IBV_SEND_SOLICITED)
		d |= DROCE_SEND_SOLICITED;
	if (f & IBV_SEND_INLINE)
		d |= DROCE_SEND_INLINE;
	*out = d;
	return 0;
}

int dv_send_to_droce(const struct ibv_send_wr *w, bool ud, struct droce_send_wr *d)
{
	memset(d, 0, sizeof(*d));
	d->wr_id = w->wr_id;
	d->sg_list = (struct droce_sge *)w->sg_list;
	d->num_sge = w->num_sge;
	d->imm_data = w->imm_data;
	if (wr_opcode(w->opcode, &d->opcode) ||
	    dv_send_flags_to_droce(w->send_flags, &d->send_flags))
		return EINVAL;
	if (ud) {
		d->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		d->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
	} else if (d->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP ||
		   d->opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD) {
		d->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		d->wr.atomic.compare_add = w->wr.atomic.compare_add;
		d->wr.atomic.swap = w->wr.atomic.swap;
		d->wr.atomic.rkey = w->wr.atomic.rkey;
	} else {
		d->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		d->wr.rdma.rkey = w->wr.rdma.rkey;
	}
	return 0;
}

unsigned dv_access_to_droce(unsigned a)
{
	unsigned d = 0;
	if (a & IBV_ACCESS_LOCAL_WRITE)
		d |= DROCE_ACCESS_LOCAL_WRITE;
	if (a & IBV_ACCESS_REMOTE_WRITE)
		d |= DROCE_ACCESS_REMOTE_WRITE;
	if (a & IBV_ACCESS_REMOTE_READ)
		d |= DROCE_ACCESS_REMOTE_READ;
	if (a & IBV_ACCESS_REMOTE_ATOMIC)
		d |= DROCE_ACCESS_REMOTE_ATOMIC;
	return d;
}

unsigned dv_access_from_droce(unsigned d)
{
	unsigned a = 0;
	if (d & DROCE_ACCESS_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (d & DROCE_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (d & DROCE_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (d & DROCE_ACCESS_REMOTE_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

int dv_qps_to_droce(enum ibv_qp_state s, enum droce_qp_state *out)
{
	switch (s) {
	case IBV_QPS_RESET: *out = DROCE_QPS_RESET; return 0;
	case IBV_QPS_INIT: *out = DROCE_QPS_INIT; return 0;
	case IBV_QPS_RTR: *out = DROCE_QPS_RTR; return 0;
	case IBV_QPS_RTS: *out = DROCE_QPS_RTS; return 0;
	case IBV_QPS_SQD: *out = DROCE_QPS_SQD; return 0;
	case IBV_QPS_SQE: *out = DROCE_QPS_SQE; return 0;
	case IBV_QPS_ERR: *out = DROCE_QPS_ERR; return 0;
	default: return EINVAL;
	}
}

enum ibv_qp_state dv_qps_from_droce(enum droce_qp_state s)
{
	switch (s) {
	case DROCE_QPS_RESET: return IBV_QPS_RESET;
	case DROCE_QPS_INIT: return IBV_QPS_INIT;
	case DROCE_QPS_RTR: return IBV_QPS_RTR;
	case DROCE_QPS_RTS: return IBV_QPS_RTS;
	case DROCE_QPS_SQD: return IBV_QPS_SQD;
	case DROCE_QPS_SQE: return IBV_QPS_SQE;
	case DROCE_QPS_ERR: return IBV_QPS_ERR;
	}
	return IBV_QPS_UNKNOWN;
}

int dv_mtu_to_droce(enum ibv_mtu m, enum droce_mtu *out)
{
	switch (m) {
	case IBV_MTU_256: *out = DROCE_MTU_256; return 0;
	case IBV_MTU_512: *out = DROCE_MTU_512; return 0;
	case IBV_MTU_1024: *out = DROCE_MTU_1024; return 0;
	case IBV_MTU_2048: *out = DROCE_MTU_2048; return 0;
	case IBV_MTU_4096: *out = DROCE_MTU_4096; return 0;
	}
	return EINVAL;
}

enum ibv_mtu dv_mtu_from_droce(enum droce_mtu m)
{
	switch (m) {
	case DROCE_MTU_256: return IBV_MTU_256;
	case DROCE_MTU_512: return IBV_MTU_512;
	case DROCE_MTU_1024: return IBV_MTU_1024;
	case DROCE_MTU_2048: return IBV_MTU_2048;
	case DROCE_MTU_4096: return IBV_MTU_4096;
	}
	return IBV_MTU_1024;
}

void dv_gid_from_ip(const uint8_t ip[4], union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], ip, 4);
}

int dv_ip_from_gid(const union ibv_gid *gid, uint8_t ip[4])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (memcmp(gid->raw, prefix, sizeof(prefix)))
		return -EINVAL;
	memcpy(ip, &gid->raw[12], 4);
	return 0;
}

int dv_av_to_droce(const struct ibv_ah_attr *ah, struct droce_ah_attr *d)
{
	if (!ah->is_global || ah->grh.sgid_index != 0 || (ah->port_num && ah->port_num != 1))
		return EINVAL;
	uint8_t ip[4];
	if (dv_ip_from_gid(&ah->grh.dgid, ip))
		return EINVAL;
	memset(d, 0, sizeof(*d));
	d->ip_version = 4;
	memcpy(d->dst_ip, ip, 4);
	/* Traffic class is DSCP << 2 | ECN; 0 (what most programs pass) keeps
	 * droce's RoCE DSCP so congestion marking still works. */
	d->dscp = ah->grh.traffic_class ? ah->grh.traffic_class >> 2 : DROCE_DEFAULT_DSCP;
	d->ttl = ah->grh.hop_limit ? ah->grh.hop_limit : DROCE_DEFAULT_TTL;
	return 0;
}

void dv_av_from_droce(const struct droce_ah_attr *d, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.hop_limit = d->ttl;
	ah->grh.traffic_class = (uint8_t)(d->dscp << 2);
	dv_gid_from_ip(d->dst_ip, &ah->grh.dgid);
}

void dv_caps_to_droce(const struct ibv_qp_cap *c, struct droce_qp_cap *d)
{
	d->max_send_wr = c->max_send_wr;
	d->max_recv_wr = c->max_recv_wr;
	d->max_send_sge = c->max_send_sge;
	d->max_recv_sge = c->max_recv_sge;
	d->max_inline_data = c->max_inline_data;
}

void dv_caps_from_droce(const struct droce_qp_cap *d, struct ibv_qp_cap *c)
{
	c->max_send_wr = d->max_send_wr;
	c->max_recv_wr = d->max_recv_wr;
	c->max_send_sge = d->max_send_sge;
	c->max_recv_sge = d->max_recv_sge;
	c->max_inline_data = d->max_inline_data;
}
