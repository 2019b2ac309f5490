/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Work queue entries: a send WQE and a receive WQE. core/ writes a WQE
 * when the application posts it (qp.c, ud_qp.c); transport/ fills the
 * transmission fields (first_psn .. bseq) and reads the rest.
 */
#ifndef DROCE_MODEL_WQE_H
#define DROCE_MODEL_WQE_H

#include <stdint.h>

#include <droce/droce.h>

#include "model/ah.h"
#include "model/seg.h"

/** Largest WQE ring accepted (power of two). */
#define DROCE_QP_MAX_WR 65536u
/** IBTA 9.4.x: largest message, 2^31 bytes. */
#define DROCE_MAX_MSG (1u << 31)

/** A send WQE. UD WQEs keep their destination in the RC fields (no room
 * spent on every RC WQE): remote_addr the address handle, rkey the remote
 * QPN, compare_add the DETH Q_Key (droce_swqe_ud_*). */
struct droce_swqe {
	uint64_t wr_id;
	uint8_t opcode;         /* enum droce_wr_opcode */
	uint8_t nseg;
	uint8_t flags;          /* DROCE_SEND_* */
	uint8_t status;         /* enum droce_wc_status found at post (LOC_PROT_ERR) */
	uint32_t imm;           /* wire value (host order of the big-endian bytes) */
	uint32_t length;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add, swap;
	/* Assigned on first transmission. */
	uint32_t first_psn, last_psn, npkts;
	uint32_t rd_next_psn;   /* READ/atomic: next response PSN expected */
	uint64_t bseq;          /* byte sequence of the first byte (window accounting) */
	struct droce_seg seg[DROCE_QP_MAX_SGE];
};

/** A receive WQE. */
struct droce_rwqe {
	uint64_t wr_id;
	uint8_t nseg;
	uint8_t status;         /* SUCCESS, or LOC_PROT_ERR for a bad lkey found at post */
	uint32_t length;
	struct droce_seg seg[DROCE_QP_MAX_SGE];
};



/* UD WQE destination (see struct droce_swqe). */
static inline const struct droce_ah *droce_swqe_ud_ah(const struct droce_swqe *w)
{
	return (const struct droce_ah *)(uintptr_t)w->remote_addr;
}
static inline uint32_t droce_swqe_ud_qpn(const struct droce_swqe *w) { return w->rkey; }
static inline uint32_t droce_swqe_ud_qkey(const struct droce_swqe *w) { return (uint32_t)w->compare_add; }


/** Keep a UD send WR's destination in the WQE (no reference taken yet). */
static inline void droce_ud_swqe_set(struct droce_swqe *w, const struct droce_send_wr *wr)
{
	w->remote_addr = (uintptr_t)wr->wr.ud.ah;
	w->rkey = wr->wr.ud.remote_qpn;
	w->compare_add = wr->wr.ud.remote_qkey;
	w->swap = 0;
}
/** A UD WQE joined the send queue: it holds its handle until released. */
static inline void droce_ud_swqe_hold(struct droce_swqe *w)
{
	((struct droce_ah *)(uintptr_t)w->remote_addr)->refs++;
}
/** A UD WQE left the send queue (sent, completed in error, flushed or
 * dropped): the handle may go. */
static inline void droce_ud_swqe_release(struct droce_swqe *w)
{
	droce_ah_put((struct droce_ah *)(uintptr_t)w->remote_addr);
}


/** The completion opcode of a send WQE's work request opcode (verbs' mapping). */
static inline enum droce_wc_opcode droce_wc_opcode_of(uint8_t wr_op)
{
	switch (wr_op) {
	case DROCE_WR_RDMA_WRITE:
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		return DROCE_WC_RDMA_WRITE;
	case DROCE_WR_RDMA_READ:
		return DROCE_WC_RDMA_READ;
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
		return DROCE_WC_COMP_SWAP;
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		return DROCE_WC_FETCH_ADD;
	default:
		return DROCE_WC_SEND;
	}
}

#endif
