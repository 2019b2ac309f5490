/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibv <-> droce translations of the drop-in, in one leaf: work
 * completion status and opcode, send WR opcode and flags, access flags, QP
 * states, path MTU, the address vector (GRH-routed RoCEv2, IBTA A17.4) and
 * QP capabilities. Explicit tables (one case per value): they stay right
 * whatever numbers either enum carries. Only <infiniband/verbs.h> and
 * droce's public headers: nothing of the drop-in's own objects, so the
 * tables are tested alone (tests/unit/verbs/test_xlate.c).
 */
#ifndef DROCE_VERBS_XLATE_H
#define DROCE_VERBS_XLATE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <droce/droce.h>

/** ibv_wc.sl of a UD receive: the RoCE L3 header type as mlx5 reports it. */
#define DV_WC_SL_ROCE_IPV4 2u

/** The access flags droce's QPs and MRs know (others: EINVAL). */
#define DV_ACCESS_KNOWN                                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* The completion tables are inline: they run once per completion on
 * the poll path, in the backends' loops (one call each otherwise). */

/** droce's completion status as IBV_WC_*; a value droce adds later is
 *  IBV_WC_GENERAL_ERR, never success. */
static inline enum ibv_wc_status dv_wc_status(enum droce_wc_status s)
{
	switch (s) {
	case DROCE_WC_SUCCESS: return IBV_WC_SUCCESS;
	case DROCE_WC_LOC_LEN_ERR: return IBV_WC_LOC_LEN_ERR;
	case DROCE_WC_LOC_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case DROCE_WC_LOC_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case DROCE_WC_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case DROCE_WC_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
	case DROCE_WC_LOC_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
	case DROCE_WC_REM_INV_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case DROCE_WC_REM_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case DROCE_WC_REM_OP_ERR: return IBV_WC_REM_OP_ERR;
	case DROCE_WC_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case DROCE_WC_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case DROCE_WC_REM_ABORT_ERR: return IBV_WC_REM_ABORT_ERR;
	case DROCE_WC_GENERAL_ERR: return IBV_WC_GENERAL_ERR;
	case DROCE_WC_LOC_EEC_OP_ERR: return IBV_WC_LOC_EEC_OP_ERR;
	case DROCE_WC_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	case DROCE_WC_LOC_RDD_VIOL_ERR: return IBV_WC_LOC_RDD_VIOL_ERR;
	case DROCE_WC_REM_INV_RD_REQ_ERR: return IBV_WC_REM_INV_RD_REQ_ERR;
	case DROCE_WC_INV_EECN_ERR: return IBV_WC_INV_EECN_ERR;
	case DROCE_WC_INV_EEC_STATE_ERR: return IBV_WC_INV_EEC_STATE_ERR;
	case DROCE_WC_FATAL_ERR: return IBV_WC_FATAL_ERR;
	case DROCE_WC_RESP_TIMEOUT_ERR: return IBV_WC_RESP_TIMEOUT_ERR;
	}
	return IBV_WC_GENERAL_ERR;
}

/** droce's completion opcode as IBV_WC_*. */
static inline enum ibv_wc_opcode dv_wc_opcode(enum droce_wc_opcode o)
{
	switch (o) {
	case DROCE_WC_SEND: return IBV_WC_SEND;
	case DROCE_WC_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case DROCE_WC_RDMA_READ: return IBV_WC_RDMA_READ;
	case DROCE_WC_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case DROCE_WC_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case DROCE_WC_RECV: return IBV_WC_RECV;
	case DROCE_WC_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	}
	return IBV_WC_SEND;
}

/** One droce completion as an ibv_wc (the whole struct written). */
static inline void dv_wc_convert(const struct droce_wc *in, struct ibv_wc *out)
{
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->status = dv_wc_status(in->status);
	out->opcode = dv_wc_opcode(in->opcode);
	out->vendor_err = in->vendor_err;
	out->byte_len = in->byte_len;
	out->qp_num = in->qp_num;
	out->src_qp = in->src_qp;
	if (in->wc_flags & DROCE_WC_WITH_IMM) {
		out->wc_flags |= IBV_WC_WITH_IMM;
		out->imm_data = in->imm_data; /* network order value, both sides */
	}
	if (in->wc_flags & DROCE_WC_WITH_INV) {
		out->wc_flags |= IBV_WC_WITH_INV;
		out->invalidated_rkey = in->invalidated_rkey;
	}
	if (in->wc_flags & DROCE_WC_GRH) {
		out->wc_flags |= IBV_WC_GRH; /* the 40-byte GRH area leads the buffer */
		/* RoCE has no SL on the wire (A17.4.5.1: the CQE says which L3
		 * header the frame had). mlx5 reports that packet type in sl
		 * (2: IPv4), and UCX's ud_verbs reads sl & 7 so to find the
		 * destination address in the GRH area; droce0 is IPv4 only.
		 * docs/verbs.md, "UD receive completions". */
		out->sl = DV_WC_SL_ROCE_IPV4;
	}
	out->pkey_index = 0;
}


/** The opcode of a send WR. @return 0, or EINVAL for one droce lacks
 *  (invalidate, MW bind, TSO, atomic write, flush). */
int dv_wr_opcode_to_droce(enum ibv_wr_opcode o, enum droce_wr_opcode *out);
/** The send flags. @return 0, or EINVAL for a flag droce lacks. */
int dv_send_flags_to_droce(unsigned f, unsigned *out);
/**
 * An ibv_send_wr as droce's: opcode, flags, SGEs (the two layouts are one),
 * immediate, and the remote address (RDMA, atomic) or, for @p ud, the
 * remote QPN and Q_Key; the caller sets wr.ud.ah (its own handle's).
 * @return 0 or EINVAL.
 */
int dv_send_to_droce(const struct ibv_send_wr *w, bool ud, struct droce_send_wr *d);

unsigned dv_access_to_droce(unsigned a);
unsigned dv_access_from_droce(unsigned d);

/** @return 0, or EINVAL for a state droce lacks (IBV_QPS_UNKNOWN). */
int dv_qps_to_droce(enum ibv_qp_state s, enum droce_qp_state *out);
enum ibv_qp_state dv_qps_from_droce(enum droce_qp_state s);

/** @return 0, or EINVAL for a value that is no IBTA MTU. */
int dv_mtu_to_droce(enum ibv_mtu m, enum droce_mtu *out);
enum ibv_mtu dv_mtu_from_droce(enum droce_mtu m);

/** The IPv4-mapped GID (::ffff:a.b.c.d) of @p ip, and back. */
void dv_gid_from_ip(const uint8_t ip[4], union ibv_gid *gid);
/** @return 0 with @p ip filled, -EINVAL when @p gid is not IPv4-mapped. */
int dv_ip_from_gid(const union ibv_gid *gid, uint8_t ip[4]);

/**
 * A GRH-routed RoCEv2 AV (IBTA A17.4: the GID is the peer's IPv4-mapped
 * address, the traffic class DSCP << 2 | ECN, the hop limit the TTL) as
 * droce's; the next hop's MAC is left zero for the caller to resolve.
 * @return 0, or EINVAL (no GRH, sgid index or port other than droce0's
 * one, a GID that is not IPv4-mapped).
 */
int dv_av_to_droce(const struct ibv_ah_attr *ah, struct droce_ah_attr *d);
/** droce's AV as the ibv_ah_attr query_qp reports. */
void dv_av_from_droce(const struct droce_ah_attr *d, struct ibv_ah_attr *ah);

void dv_caps_to_droce(const struct ibv_qp_cap *c, struct droce_qp_cap *d);
void dv_caps_from_droce(const struct droce_qp_cap *d, struct ibv_qp_cap *c);

#endif
