/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder (rxe_resp.c's shape): a request packet walks a fixed sequence of
 * checks, one static function per state, each returning the next state,
 * until it is executed and acknowledged or turned into a NAK:
 *
 *   CHK_PSN -> CHK_OP_SEQ -> CHK_OP_VALID -> CHK_RESOURCE -> CHK_LENGTH
 *   -> CHK_RKEY -> EXECUTE -> DONE
 *
 * in rxe_resp.c's order and with its NAK codes: an
 * operation the QP does not enable is an invalid request, a missing receive
 * WQE is an RNR NAK before any length check, a DMA length above 2^31 is an
 * invalid request before the R_Key is looked at (C9-94).
 *
 * with side exits DUPLICATE, OUT_OF_SEQ, RNR and the error states that
 * queue a NAK (IBTA 9.7.5.2, 9.9.3). Checks that can fail do so before any
 * byte of the target memory is written.
 *
 * Output (ACK/NAK, READ responses, atomic acknowledges) is queued here and
 * sent by droce_resp_tx() in PSN order: response streams first, then the
 * single coalesced ACK/NAK slot, which therefore never overtakes a READ
 * response for an earlier PSN.
 */
#include <endian.h>
#include <errno.h>

#include "wire/psn.h"
#include "transport/place.h"
#include "transport/tp_int.h"
#include "transport/sr.h"
#include "wire/opcode.h"

enum resp_state {
	RESPST_CHK_PSN,
	RESPST_CHK_OP_SEQ,
	RESPST_CHK_OP_VALID,
	RESPST_CHK_RESOURCE,
	RESPST_CHK_LENGTH,
	RESPST_CHK_RKEY,
	RESPST_EXECUTE,
	RESPST_DUPLICATE,
	RESPST_OUT_OF_SEQ,
	RESPST_SR_OOO,            /* selective repeat: past ePSN, maybe placed now (sr.h) */
	RESPST_RNR,
	RESPST_BUSY,              /* response queue full: drop, the requester retries */
	RESPST_ERR_INVALID_REQ,   /* NAK invalid request, QP -> ERR */
	RESPST_ERR_ACCESS,        /* NAK remote access, QP -> ERR */
	RESPST_ERR_DUP_ACCESS,    /* duplicate READ, R_Key no longer valid: NAK remote access */
	RESPST_ERR_LENGTH,        /* SEND too long: LOC_LEN_ERR + NAK invalid request */
	RESPST_ERR_RWQE,          /* receive WQE with a bad lkey: LOC_PROT_ERR + NAK remote op */
	RESPST_DONE,
	RESPST_EXIT,
};

struct resp_ctx {
	struct droce_qp *qp;
	const struct droce_pkt *pkt;
	uint64_t now;
	uint16_t flags;      /* opcode flags */
	uint32_t psn;
	uint32_t plen;
	uint8_t *target;     /* WRITE/READ/atomic: resolved memory */
	struct droce_mr_ref mr; /* ... and the registration it is in */
	bool ooo;            /* selective repeat: placed ahead of ePSN, nothing else done */
};

void droce_resp_reset(struct droce_qp *qp)
{
	struct droce_tp *t = &qp->tp;
	t->epsn = t->msn = 0;
	t->ack_psn = 0;
	t->in_msg = 0;
	t->recv_off = 0;
	t->wr_ptr = NULL;
	t->wr_mr.slot = DROCE_MR_REF_NONE;
	t->wr_left = t->wr_len = 0;
	t->nak_gap = false;
	t->resp_err = false;
	t->ack_pending = false;
	t->pend_ack_psn = 0;
	t->nak_pending = false;
	t->nak_syndrome = 0;
	t->nak_psn = t->nak_msn = 0;
	t->cnp_pending = false;
	t->last_cnp = 0;
	t->job_head = t->job_tail = 0;
	t->jobs_new = 0;
	t->res_next = 0;
	t->res_size = 0;
	if (t->rd)
		memset(t->rd->res, 0, sizeof(t->rd->res));
}

/* The replay ring has max_dest_rd_atomic entries; a new size (SQD -> SQD)
 * starts it afresh (the requester cannot retry across that change). */
static void res_ring_fit(struct droce_qp *qp)
{
	if (qp->tp.res_size != qp->attr.max_dest_rd_atomic) {
		if (qp->tp.rd) /* none while max_dest_rd_atomic was always 0 */
			memset(qp->tp.rd->res, 0, sizeof(qp->tp.rd->res));
		qp->tp.res_next = 0;
		qp->tp.res_size = qp->attr.max_dest_rd_atomic;
	}
}

/* ------------------------------------------------------------ output -- */

/* One ACK acknowledges every earlier PSN (9.7.5.1.1), so the responder
 * keeps a single ACK slot, for the newest PSN executed (or a duplicate's
 * re-ACK), and sends it once per QP turn, after the poll's whole receive
 * burst: one ACK per burst however many packets asked, every AckReq
 * answered in the poll that received it. droce_resp_tx() sends it behind
 * any READ responses (PSN order). A packet without AckReq is acknowledged
 * too (at the end of its burst): the requester's window may close between
 * its AckReqs, and it sends nothing more until an ACK comes. */
static void queue_ack(struct droce_qp *qp, uint32_t psn)
{
	if (!qp->tp.ack_pending || droce_psn_diff(psn, qp->tp.pend_ack_psn) >= 0) {
		qp->tp.ack_pending = true;
		qp->tp.pend_ack_psn = psn;
	}
	droce_tp_kick(qp);
}

/* A NAK has its own slot: it goes out even when later in-sequence packets
 * (a reordered gap closing within the burst) are ACKed after it. A fatal
 * NAK replaces any other; nothing replaces a fatal NAK. */
static void queue_nak(struct droce_qp *qp, uint8_t syndrome, uint32_t psn, bool fatal)
{
	if (qp->tp.resp_err)
		return;
	qp->tp.nak_pending = true;
	qp->tp.nak_syndrome = syndrome;
	qp->tp.nak_psn = psn;
	qp->tp.nak_msn = qp->tp.msn; /* what the responder had done when it refused */
	if (fatal)
		qp->tp.resp_err = true;
	droce_tp_kick(qp);
}

static struct droce_resp_job *job_push(struct droce_qp *qp)
{
	if (qp->tp.job_tail - qp->tp.job_head >= DROCE_RESP_JOBS)
		return NULL;
	struct droce_resp_job *j = &qp->tp.rd->jobs[qp->tp.job_tail % DROCE_RESP_JOBS];
	qp->tp.job_tail++;
	droce_tp_kick(qp);
	return j;
}

/* A READ response or atomic ACK implicitly acknowledges earlier PSNs
 * (9.7.5.1.3), so a plain ACK pending for them need not go out. */
static void drop_plain_ack(struct droce_qp *qp)
{
	qp->tp.ack_pending = false;
}

static void recv_wc(struct droce_qp *qp, const struct droce_rwqe *r, enum droce_wc_status st,
		    enum droce_wc_opcode op, uint32_t len, const struct droce_pkt *pkt)
{
	struct droce_wc wc = {
		.wr_id = r->wr_id,
		.status = st,
		.opcode = op,
		.byte_len = len,
		.qp_num = qp->qpn,
		.src_qp = qp->attr.dest_qp_num,
	};
	if (pkt && st == DROCE_WC_SUCCESS) {
		if (pkt->op->flags & DROCE_OPF_IMM) {
			wc.wc_flags |= DROCE_WC_WITH_IMM;
			wc.imm_data = htobe32(pkt->h.ext.imm);
		}
		if (pkt->op->flags & DROCE_OPF_INV) {
			wc.wc_flags |= DROCE_WC_WITH_INV;
			wc.invalidated_rkey = pkt->h.ext.ieth_rkey;
		}
	}
	droce_tp_complete(qp, qp->rcq, &wc);
}

/* ------------------------------------------------------------ states -- */

static enum resp_state chk_psn(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	int32_t d = droce_psn_diff(c->psn, qp->tp.epsn);
	if (d > 0)
		return qp->transport ? RESPST_SR_OOO : RESPST_OUT_OF_SEQ;
	if (d < 0)
		return RESPST_DUPLICATE;
	qp->tp.nak_gap = false;
	return RESPST_CHK_OP_SEQ;
}

/* 9.8.3: a message is FIRST MIDDLE* LAST or ONLY, of one kind. */
static enum resp_state chk_op_seq(struct resp_ctx *c)
{
	uint16_t f = c->flags;
	uint16_t kind = f & (DROCE_OPF_SEND | DROCE_OPF_WRITE);
	if (c->qp->tp.in_msg) {
		if (kind != c->qp->tp.in_msg || (f & DROCE_OPF_FIRST))
			return RESPST_ERR_INVALID_REQ;
	} else if (!(f & DROCE_OPF_FIRST)) {
		return RESPST_ERR_INVALID_REQ;
	}
	return RESPST_CHK_OP_VALID;
}

/* The QP's remote access enables (qp_access_flags) gate RDMA and atomics.
 * An operation the QP does not enable is one it does not support: NAK
 * invalid request (9.7.5.2.2 "unsupported or reserved opcode"; rxe
 * ERR_UNSUPPORTED_OPCODE, qib/hfi1 and ibv_modify_qp(3) alike), not remote
 * access, which is about an R_Key and its range. */
static enum resp_state chk_op_valid(struct resp_ctx *c)
{
	unsigned acc = c->qp->attr.qp_access_flags;
	uint16_t f = c->flags;
	if ((f & DROCE_OPF_INV) || droce_opcode_service(c->pkt->h.bth.opcode) != DROCE_SVC_RC)
		return RESPST_ERR_INVALID_REQ; /* droce has no memory windows to invalidate */
	if ((f & DROCE_OPF_WRITE) && !(acc & DROCE_ACCESS_REMOTE_WRITE))
		return RESPST_ERR_INVALID_REQ;
	if ((f & DROCE_OPF_READ) && !(acc & DROCE_ACCESS_REMOTE_READ))
		return RESPST_ERR_INVALID_REQ;
	if ((f & DROCE_OPF_ATOMIC) && !(acc & DROCE_ACCESS_REMOTE_ATOMIC))
		return RESPST_ERR_INVALID_REQ;
	return RESPST_CHK_RESOURCE;
}

/* 9.7.1 / C9-?: FIRST and MIDDLE carry exactly one PMTU, LAST 1..PMTU,
 * ONLY 0..PMTU; WRITE payloads must fit the RETH length. */
static enum resp_state chk_length(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	uint16_t f = c->flags;
	uint32_t mtu = qp->mtu;
	/* C9-94: no message is longer than 2^31 bytes; checked before the R_Key. */
	if ((f & (DROCE_OPF_WRITE | DROCE_OPF_READ)) && (c->pkt->op->hdrs & DROCE_HDR_RETH) &&
	    c->pkt->h.ext.reth.dma_len > DROCE_MAX_MSG)
		return RESPST_ERR_INVALID_REQ;
	if (!(f & DROCE_OPF_PAYLOAD))
		return RESPST_CHK_RKEY;
	if ((f & DROCE_OPF_ONLY) == DROCE_OPF_ONLY) {
		if (c->plen > mtu)
			return RESPST_ERR_INVALID_REQ;
	} else if (f & DROCE_OPF_LAST) {
		if (c->plen == 0 || c->plen > mtu)
			return RESPST_ERR_INVALID_REQ;
	} else if (c->plen != mtu) {
		return RESPST_ERR_INVALID_REQ;
	}
	/* 9.2.2: payload + PadCnt is 4-aligned: the last packet pads its own
	 * length, the others (exactly one PMTU) none. A PadCnt that does not
	 * fit the length is a malformed packet (rxe: ERR_LENGTH). */
	uint8_t want_pad = (f & DROCE_OPF_LAST) ? (uint8_t)((4u - (c->plen & 3u)) & 3u) : 0;
	if (c->pkt->h.bth.pad != want_pad)
		return RESPST_ERR_INVALID_REQ;
	if (f & DROCE_OPF_WRITE) {
		uint32_t left = (f & DROCE_OPF_FIRST) ? c->pkt->h.ext.reth.dma_len : qp->tp.wr_left;
		/* Selective repeat's last packet of a WRITE with immediate: its
		 * RETH names the whole message, the payload is the tail after
		 * whole PMTUs (docs/wire.md). */
		if (qp->transport && (f & DROCE_OPF_ONLY) == DROCE_OPF_ONLY && c->plen < left &&
		    c->plen && !((left - c->plen) & (mtu - 1)))
			left = c->plen;
		if (c->plen > left)
			return RESPST_ERR_INVALID_REQ;
		if ((f & DROCE_OPF_LAST) && c->plen != left)
			return RESPST_ERR_INVALID_REQ;
		if ((f & DROCE_OPF_FIRST) && !(f & DROCE_OPF_LAST) && left <= mtu)
			return RESPST_ERR_INVALID_REQ;
	}
	if (f & DROCE_OPF_SEND) {
		/* The receive WQE chk_resource found must hold it (rxe: in execute). */
		const struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
		if ((uint64_t)qp->tp.recv_off + c->plen > r->length)
			return RESPST_ERR_LENGTH;
	}
	return RESPST_CHK_RKEY;
}

static enum resp_state chk_resource(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	uint16_t f = c->flags;
	bool need_rwqe = (f & DROCE_OPF_SEND) ? (f & DROCE_OPF_FIRST) != 0
					       : (f & DROCE_OPF_RWQE) != 0;
	if (need_rwqe && !c->ooo) { /* placed ahead: the WQE is taken in order (sr.c) */
		if (!droce_rq_next(qp))
			return RESPST_RNR;
		const struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
		if (r->status != DROCE_WC_SUCCESS)
			return RESPST_ERR_RWQE;
		if (f & DROCE_OPF_SEND)
			qp->tp.recv_off = 0;
	}
	/* Every SEND packet writes the receive buffer: it must still be the
	 * registration it was posted under (10.6.3.2; a deregistered one is a
	 * local protection error, 10.7.3.1, NAK remote operational error). */
	if ((f & DROCE_OPF_SEND) && c->plen) {
		const struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
		if (!droce_segs_live(qp->ctx, r->seg, r->nseg))
			return RESPST_ERR_RWQE;
	}
	if (f & (DROCE_OPF_READ | DROCE_OPF_ATOMIC)) {
		/* max_dest_rd_atomic 0 takes none (rxe ERR_TOO_MANY_RDMA_ATM_REQ);
		 * more outstanding than negotiated: also NAK invalid request
		 * (droce refuses where rxe recycles its oldest resource, which
		 * would lose a duplicate's answer). */
		uint32_t max = qp->attr.max_dest_rd_atomic;
		if (qp->tp.jobs_new >= max)
			return RESPST_ERR_INVALID_REQ;
		/* Queue full of duplicate answers (output blocked): not the peer's
		 * fault; drop as if lost, the requester retries. */
		if (qp->tp.job_tail - qp->tp.job_head >= DROCE_RESP_JOBS)
			return RESPST_BUSY;
	}
	return RESPST_CHK_LENGTH;
}

/* 9.7.4.1.x / 10.6.3: R_Key, bounds and access before any byte moves.
 * A zero-length RDMA WRITE/READ does not validate its R_Key. */
static enum resp_state chk_rkey(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	const struct droce_ext_fields *e = &c->pkt->h.ext;
	uint16_t f = c->flags;
	if (f & DROCE_OPF_ATOMIC) {
		if (e->atomic.va & 7)
			return RESPST_ERR_INVALID_REQ; /* 9.4.5: misaligned atomic */
		c->target = droce_mr_lookup(qp->ctx, e->atomic.rkey, e->atomic.va, 8,
					    DROCE_ACCESS_REMOTE_ATOMIC, qp->pd_id, NULL);
		return c->target ? RESPST_EXECUTE : RESPST_ERR_ACCESS;
	}
	if ((f & (DROCE_OPF_WRITE | DROCE_OPF_READ)) && (f & DROCE_OPF_FIRST) &&
	    (c->pkt->op->hdrs & DROCE_HDR_RETH)) {
		if (e->reth.dma_len == 0) {
			c->target = NULL;
			return RESPST_EXECUTE;
		}
		unsigned acc = (f & DROCE_OPF_READ) ? DROCE_ACCESS_REMOTE_READ
						    : DROCE_ACCESS_REMOTE_WRITE;
		c->target = droce_mr_lookup(qp->ctx, e->reth.rkey, e->reth.va, e->reth.dma_len, acc,
					    qp->pd_id, &c->mr);
		return c->target ? RESPST_EXECUTE : RESPST_ERR_ACCESS;
	}
	/* A WRITE's later packets: the R_Key the FIRST was checked under must
	 * still name that registration (9.7.5.2.4; one compare). */
	if ((f & DROCE_OPF_WRITE) && c->plen && !droce_mr_ref_live(qp->ctx, qp->tp.wr_mr))
		return RESPST_ERR_ACCESS;
	return RESPST_EXECUTE;
}

/* The replay ring holds the last max_dest_rd_atomic READs/atomics (9.7.5.1.x:
 * the responder keeps what the requester may still retry; the requester never
 * has more than that outstanding). modify_qp clears it when the size changes. */
static struct droce_rd_res *record_res(struct droce_qp *qp, uint8_t type, uint32_t first,
				       uint32_t last, uint64_t orig)
{
	struct droce_rd_res *r = &qp->tp.rd->res[qp->tp.res_next % qp->attr.max_dest_rd_atomic];
	qp->tp.res_next++;
	r->type = type;
	r->first_psn = first;
	r->last_psn = last;
	r->orig = orig;
	r->rkey = 0;
	r->va = 0;
	r->len = 0;
	return r;
}

static enum resp_state execute(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	const struct droce_pkt *pkt = c->pkt;
	uint16_t f = c->flags;

	if (f & DROCE_OPF_SEND) {
		struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
		droce_seg_copy_in(r->seg, r->nseg, qp->tp.recv_off, pkt->payload, c->plen);
		qp->tp.recv_off += c->plen;
		qp->tp.epsn = qp->tp.ack_psn = droce_psn_add(c->psn, 1);
		if (f & DROCE_OPF_LAST) {
			/* The WQE is consumed before its completion is posted (as
			 * rxe): a completion that overruns the CQ moves the QP to
			 * ERR, which flushes what is still queued and resets the
			 * transport; this step then ends here. */
			qp->rq_head++;
			qp->tp.msn = (qp->tp.msn + 1) & DROCE_MSN_MASK;
			qp->tp.in_msg = 0;
			recv_wc(qp, r, DROCE_WC_SUCCESS, DROCE_WC_RECV, qp->tp.recv_off, pkt);
			if (qp->state == DROCE_QPS_ERR)
				return RESPST_EXIT;
		} else {
			qp->tp.in_msg = DROCE_OPF_SEND;
		}
		queue_ack(qp, c->psn);
		return RESPST_DONE;
	}
	if (f & DROCE_OPF_WRITE) {
		if (c->ooo) {
			/* Selective repeat, ahead of ePSN: placed, remembered
			 * (sr.c); executed when ePSN reaches it. */
			if (c->plen) /* a tail: the RETH may name the whole message */
				droce_place(c->target + (pkt->h.ext.reth.dma_len - c->plen), pkt->payload,
					    c->plen);
			droce_sr_resp_placed(qp, pkt);
			queue_ack(qp, droce_psn_add(qp->tp.ack_psn, DROCE_PSN_MASK));
			return RESPST_DONE;
		}
		if (f & DROCE_OPF_FIRST) {
			qp->tp.wr_ptr = c->target;
			qp->tp.wr_mr = c->mr;
			qp->tp.wr_len = qp->tp.wr_left = pkt->h.ext.reth.dma_len;
			if (qp->transport && (f & DROCE_OPF_ONLY) == DROCE_OPF_ONLY &&
			    c->plen < qp->tp.wr_len) {
				/* the tail of a selective-repeat WRITE with immediate */
				qp->tp.wr_ptr += qp->tp.wr_len - c->plen;
				qp->tp.wr_left = c->plen;
			}
		}
		if (c->plen) {
			/* In ascending address order: peers poll flags a WRITE
			 * stores last (place.h). rx_fused.c has copied it
			 * already (in order too) while checking the ICRC. */
			if (!pkt->placed)
				droce_place(qp->tp.wr_ptr, pkt->payload, c->plen);
			qp->tp.wr_ptr += c->plen;
			qp->tp.wr_left -= c->plen;
		}
		qp->tp.epsn = qp->tp.ack_psn = droce_psn_add(c->psn, 1);
		if (f & DROCE_OPF_LAST) {
			qp->tp.msn = (qp->tp.msn + 1) & DROCE_MSN_MASK;
			qp->tp.in_msg = 0;
			if (f & DROCE_OPF_RWQE) {
				struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
				qp->rq_head++;
				recv_wc(qp, r, DROCE_WC_SUCCESS, DROCE_WC_RECV_RDMA_WITH_IMM, qp->tp.wr_len, pkt);
				if (qp->state == DROCE_QPS_ERR)
					return RESPST_EXIT;
			}
		} else {
			qp->tp.in_msg = DROCE_OPF_WRITE;
		}
		queue_ack(qp, c->psn);
		return RESPST_DONE;
	}
	if (f & DROCE_OPF_READ) {
		uint32_t len = pkt->h.ext.reth.dma_len;
		uint32_t n = len ? (uint32_t)(((uint64_t)len + qp->mtu - 1) / qp->mtu) : 1;
		uint32_t last = droce_psn_add(c->psn, n - 1);
		struct droce_resp_job *j = job_push(qp);
		j->type = DROCE_RES_READ;
		j->started = false;
		j->dup = false;
		j->psn = c->psn;
		j->last_psn = last;
		j->ptr = c->target;
		j->mr = c->mr;
		j->left = len;
		qp->tp.jobs_new++;
		struct droce_rd_res *res = record_res(qp, DROCE_RES_READ, c->psn, last, 0);
		res->rkey = pkt->h.ext.reth.rkey;
		res->va = pkt->h.ext.reth.va;
		res->len = len;
		qp->tp.epsn = droce_psn_add(last, 1);
		qp->tp.msn = (qp->tp.msn + 1) & DROCE_MSN_MASK;
		j->msn = qp->tp.msn;
		drop_plain_ack(qp);
		return RESPST_DONE;
	}
	/* Atomic (9.4.5): executed once here; duplicates replay the result. */
	uint64_t orig, val;
	memcpy(&orig, c->target, 8);
	if (pkt->h.bth.opcode == DROCE_OP_RC_COMPARE_SWAP)
		val = orig == pkt->h.ext.atomic.compare ? pkt->h.ext.atomic.swap_add : orig;
	else
		val = orig + pkt->h.ext.atomic.swap_add;
	memcpy(c->target, &val, 8);
	struct droce_resp_job *j = job_push(qp);
	j->type = DROCE_RES_ATOMIC;
	j->dup = false;
	j->psn = j->last_psn = c->psn;
	j->orig = orig;
	qp->tp.jobs_new++;
	record_res(qp, DROCE_RES_ATOMIC, c->psn, c->psn, orig);
	qp->tp.epsn = qp->tp.ack_psn = droce_psn_add(c->psn, 1);
	qp->tp.msn = (qp->tp.msn + 1) & DROCE_MSN_MASK;
	j->msn = qp->tp.msn;
	drop_plain_ack(qp);
	return RESPST_DONE;
}

static const struct droce_rd_res *find_res(const struct droce_qp *qp, uint8_t type, uint32_t psn)
{
	/* Newest first: after a PSN wrap an entry 2^24 PSNs old may alias. */
	uint32_t n = qp->attr.max_dest_rd_atomic;
	for (unsigned k = 1; k <= n && k <= qp->tp.res_next; k++) {
		const struct droce_rd_res *r = &qp->tp.rd->res[(qp->tp.res_next - k) % n];
		if (r->type == type && droce_psn_diff(psn, r->first_psn) >= 0 &&
		    droce_psn_diff(psn, r->last_psn) <= 0)
			return r;
	}
	return NULL;
}

/* 9.7.5.1.x duplicates: SEND/WRITE are re-ACKed (never re-executed); a READ
 * is answered again from its original resources, with the address and
 * length the (possibly re-issued, shorter) request carries; an atomic is
 * answered from the replay ring and never executed twice. */
static enum resp_state duplicate(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	const struct droce_pkt *pkt = c->pkt;
	uint16_t f = c->flags;
	qp->stats.dup_reqs++;

	if (f & DROCE_OPF_READ) {
		const struct droce_rd_res *r = find_res(qp, DROCE_RES_READ, c->psn);
		if (!r) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_DUP_NO_RES);
			return RESPST_EXIT;
		}
		uint32_t len = pkt->h.ext.reth.dma_len;
		uint32_t n = len ? (uint32_t)(((uint64_t)len + qp->mtu - 1) / qp->mtu) : 1;
		uint32_t last = droce_psn_add(c->psn, n - 1);
		const uint8_t *p = NULL;
		uint64_t va = pkt->h.ext.reth.va;
		/* A retry of that READ asks for the same R_Key and a tail of
		 * its range, ending where it ended; anything else is not a
		 * retry of it: class D, dropped (rxe duplicate_request). */
		if (droce_psn_diff(last, r->last_psn) != 0 || pkt->h.ext.reth.rkey != r->rkey ||
		    va < r->va || va + len > r->va + r->len ||
		    !(qp->attr.qp_access_flags & DROCE_ACCESS_REMOTE_READ)) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_DUP_NO_RES);
			return RESPST_EXIT;
		}
		/* The R_Key may have been invalidated since: the replay is a
		 * new access, NAK remote access (rxe rechecks the MR). */
		struct droce_mr_ref mr = {DROCE_MR_REF_NONE, 0};
		if (len && !(p = droce_mr_lookup(qp->ctx, r->rkey, va, len, DROCE_ACCESS_REMOTE_READ,
						  qp->pd_id, &mr)))
			return RESPST_ERR_DUP_ACCESS;
		struct droce_resp_job *j = job_push(qp);
		if (!j) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_RESP_BUSY);
			return RESPST_EXIT;
		}
		j->type = DROCE_RES_READ;
		j->started = false;
		j->dup = true;
		j->psn = c->psn;
		j->last_psn = last;
		j->ptr = p;
		j->mr = mr;
		j->left = len;
		j->msn = qp->tp.msn; /* a re-executed READ carries the current MSN (rxe does too) */
		return RESPST_EXIT;
	}
	if (f & DROCE_OPF_ATOMIC) {
		const struct droce_rd_res *r = find_res(qp, DROCE_RES_ATOMIC, c->psn);
		if (!r || r->first_psn != c->psn) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_DUP_NO_RES);
			return RESPST_EXIT;
		}
		struct droce_resp_job *j = job_push(qp);
		if (!j) {
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_RESP_BUSY);
			return RESPST_EXIT;
		}
		j->type = DROCE_RES_ATOMIC;
		j->dup = true;
		j->psn = j->last_psn = c->psn;
		j->orig = r->orig;
		j->msn = qp->tp.msn;
		return RESPST_EXIT;
	}
	/* C9-105: ACK again, with the current MSN and the PSN of the last
	 * SEND/WRITE/atomic executed (rxe's ack_psn - 1), not ePSN - 1: that
	 * may be a READ's PSN, and a plain ACK there could complete the READ
	 * with no data at an rxe requester. */
	queue_ack(qp, droce_psn_add(qp->tp.ack_psn, DROCE_PSN_MASK));
	return RESPST_EXIT;
}

/* 9.7.5.2.2: one PSN-sequence NAK per gap, then silence until the expected
 * PSN arrives (no NAK storms). */
static enum resp_state out_of_seq(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	qp->stats.out_of_seq++;
	if (qp->tp.nak_gap) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_OUT_OF_SEQ);
		return RESPST_EXIT;
	}
	qp->tp.nak_gap = true;
	queue_nak(qp, DROCE_AETH_NAK | DROCE_NAK_PSN_SEQ_ERR, qp->tp.epsn, false);
	return RESPST_EXIT;
}

/* Selective repeat: no sequence NAK; a packet the responder can place now
 * goes through the checks (an error there drops it: it is NAKed when it
 * comes again in order), any other waits to be resent. Either way the ACK,
 * with its SACK block, tells the requester. */
static enum resp_state sr_ooo(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	qp->stats.out_of_seq++;
	bool place = droce_sr_resp_ooo(qp, c->pkt);
	queue_ack(qp, droce_psn_add(qp->tp.ack_psn, DROCE_PSN_MASK));
	if (!place) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_OUT_OF_SEQ);
		return RESPST_EXIT;
	}
	c->ooo = true;
	return RESPST_CHK_OP_VALID;
}

/* 9.7.5.2.8: no receive WQE: RNR NAK with our min_rnr_timer; the packet is
 * not executed and the expected PSN stays. Later packets of the burst are
 * out of sequence and silently dropped (nak_gap). */
static enum resp_state rnr(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	qp->tp.nak_gap = true;
	queue_nak(qp, DROCE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & DROCE_AETH_VALUE_MASK),
		  c->psn, false);
	return RESPST_EXIT;
}

/* Class C errors (9.9.3): NAK, then the responder QP goes to ERR once the
 * NAK is out. A receive WQE already consumed completes in error. */
static enum resp_state err_nak(struct resp_ctx *c, uint8_t code)
{
	queue_nak(c->qp, DROCE_AETH_NAK | code, c->psn, true);
	return RESPST_EXIT;
}

static enum resp_state err_length(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
	qp->rq_head++;
	recv_wc(qp, r, DROCE_WC_LOC_LEN_ERR, DROCE_WC_RECV, qp->tp.recv_off, NULL);
	if (qp->state == DROCE_QPS_ERR)
		return RESPST_EXIT;
	return err_nak(c, DROCE_NAK_INVALID_REQ);
}

static enum resp_state err_rwqe(struct resp_ctx *c)
{
	struct droce_qp *qp = c->qp;
	struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
	qp->rq_head++;
	recv_wc(qp, r, DROCE_WC_LOC_PROT_ERR, DROCE_WC_RECV, 0, NULL);
	if (qp->state == DROCE_QPS_ERR)
		return RESPST_EXIT;
	return err_nak(c, DROCE_NAK_REMOTE_OP);
}

/* Selective repeat: ePSN moved up to packets placed ahead of it; a WRITE
 * with immediate among them takes its receive WQE now, in PSN order, or is
 * refused with an RNR NAK (and resent: the requester forgets its SACK). */
static void sr_advance(struct droce_qp *qp)
{
	bool imm_at, owe = false;
	struct droce_sr_imm im;
	while (droce_sr_resp_advance(qp, &imm_at, &im)) {
		owe = true;
		if (!imm_at)
			break;
		if (!droce_rq_next(qp)) {
			qp->tp.nak_gap = true;
			queue_nak(qp, DROCE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & DROCE_AETH_VALUE_MASK),
				  qp->tp.epsn, false);
			break;
		}
		struct droce_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
		qp->rq_head++;
		if (r->status != DROCE_WC_SUCCESS) {
			recv_wc(qp, r, DROCE_WC_LOC_PROT_ERR, DROCE_WC_RECV, 0, NULL);
			if (qp->state != DROCE_QPS_ERR)
				queue_nak(qp, DROCE_AETH_NAK | DROCE_NAK_REMOTE_OP, qp->tp.epsn, true);
			return;
		}
		droce_sr_resp_take(qp);
		struct droce_wc wc = {
			.wr_id = r->wr_id,
			.status = DROCE_WC_SUCCESS,
			.opcode = DROCE_WC_RECV_RDMA_WITH_IMM,
			.byte_len = im.len,
			.qp_num = qp->qpn,
			.src_qp = qp->attr.dest_qp_num,
			.wc_flags = DROCE_WC_WITH_IMM,
			.imm_data = htobe32(im.imm),
		};
		droce_tp_complete(qp, qp->rcq, &wc);
		if (qp->state == DROCE_QPS_ERR)
			return;
	}
	if (owe)
		queue_ack(qp, droce_psn_add(qp->tp.ack_psn, DROCE_PSN_MASK));
}

void droce_resp_rx(struct droce_qp *qp, const struct droce_pkt *pkt, uint64_t now)
{
	if (qp->state < DROCE_QPS_RTR || qp->state == DROCE_QPS_ERR || qp->tp.resp_err) {
		droce_ctx_drop(qp->ctx, qp, DROCE_DROP_QP_STATE);
		return;
	}
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += pkt->h.payload_len;
	if (pkt->h.net.ecn == 3)
		droce_tp_ecn_ce(qp, now);
	if (pkt->op->flags & (DROCE_OPF_READ | DROCE_OPF_ATOMIC))
		res_ring_fit(qp); /* only READ/atomics use the replay ring */
	struct resp_ctx c = {
		.qp = qp,
		.pkt = pkt,
		.now = now,
		.flags = pkt->op->flags,
		.psn = pkt->h.bth.psn,
		.plen = pkt->h.payload_len,
	};
	enum resp_state s = RESPST_CHK_PSN;
	while (s != RESPST_DONE && s != RESPST_EXIT) {
		if (c.ooo && s >= RESPST_RNR) {
			/* out of order and refused: dropped, no NAK (sr_ooo) */
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_OUT_OF_SEQ);
			qp->stats.sr_ooo_dropped++;
			break;
		}
		switch (s) {
		case RESPST_CHK_PSN: s = chk_psn(&c); break;
		case RESPST_CHK_OP_SEQ: s = chk_op_seq(&c); break;
		case RESPST_CHK_OP_VALID: s = chk_op_valid(&c); break;
		case RESPST_CHK_LENGTH: s = chk_length(&c); break;
		case RESPST_CHK_RESOURCE: s = chk_resource(&c); break;
		case RESPST_CHK_RKEY: s = chk_rkey(&c); break;
		case RESPST_EXECUTE: s = execute(&c); break;
		case RESPST_DUPLICATE: s = duplicate(&c); break;
		case RESPST_OUT_OF_SEQ: s = out_of_seq(&c); break;
		case RESPST_SR_OOO: s = sr_ooo(&c); break;
		case RESPST_RNR: s = rnr(&c); break;
		case RESPST_BUSY:
			droce_ctx_drop(qp->ctx, qp, DROCE_DROP_RESP_BUSY);
			s = RESPST_EXIT;
			break;
		case RESPST_ERR_INVALID_REQ: s = err_nak(&c, DROCE_NAK_INVALID_REQ); break;
		case RESPST_ERR_ACCESS: s = err_nak(&c, DROCE_NAK_REMOTE_ACCESS); break;
		case RESPST_ERR_DUP_ACCESS: s = err_nak(&c, DROCE_NAK_REMOTE_ACCESS); break;
		case RESPST_ERR_LENGTH: s = err_length(&c); break;
		case RESPST_ERR_RWQE: s = err_rwqe(&c); break;
		default: s = RESPST_EXIT; break;
		}
	}
	if (qp->transport && qp->state != DROCE_QPS_ERR)
		sr_advance(qp);
}

/* ------------------------------------------------------------ transmit -- */

static int send_cnp(struct droce_qp *qp, uint64_t now)
{
	struct droce_hdrs h = qp->tmpl;
	h.net.ecn = 0;
	h.bth.opcode = DROCE_OP_CNP;
	h.bth.becn = true; /* A17.9.3 */
	h.bth.psn = 0;
	h.payload_len = 0;
	return droce_tp_xmit(qp, &h, NULL, 0, now);
}

static int send_job_pkt(struct droce_qp *qp, struct droce_resp_job *j, uint64_t now, bool *done)
{
	struct droce_hdrs h = qp->tmpl;
	struct droce_seg seg;
	unsigned nseg = 0;
	h.bth.psn = j->psn;
	h.ext.aeth.syndrome = DROCE_AETH_ACK | DROCE_AETH_CREDIT_INVALID;
	h.ext.aeth.msn = j->msn;
	if (j->type == DROCE_RES_ATOMIC) {
		h.bth.opcode = DROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
		h.ext.atomic_ack = j->orig;
		h.payload_len = 0;
		*done = true;
		return droce_tp_xmit(qp, &h, NULL, 0, now);
	}
	uint32_t n = j->left < qp->mtu ? j->left : qp->mtu;
	bool first = !j->started, last = j->left <= qp->mtu;
	if (n && !droce_mr_ref_live(qp->ctx, j->mr))
		return -EACCES; /* deregistered under the stream: droce_resp_tx NAKs */
	h.bth.opcode = first && last ? DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY
		       : first       ? DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST
		       : last        ? DROCE_OP_RC_RDMA_READ_RESPONSE_LAST
				     : DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
	h.payload_len = n;
	if (n) {
		seg.ptr = (uint8_t *)(uintptr_t)j->ptr;
		seg.len = n;
		nseg = 1;
	}
	int rc = droce_tp_xmit(qp, &h, &seg, nseg, now);
	if (rc == -ENOBUFS)
		return rc;
	j->started = true;
	j->ptr += n;
	j->left -= n;
	j->psn = droce_psn_add(j->psn, 1);
	*done = last;
	return 0;
}

/* An RC_ACKNOWLEDGE: ACK (9.7.7.2: droce does no end-to-end credits and
 * always sends "invalid credit count"), RNR NAK or NAK. */
static int send_aeth(struct droce_qp *qp, uint8_t syndrome, uint32_t psn, uint32_t msn,
		     uint64_t now)
{
	struct droce_hdrs h = qp->tmpl;
	h.bth.opcode = DROCE_OP_RC_ACKNOWLEDGE;
	h.bth.psn = psn;
	h.ext.aeth.syndrome = syndrome;
	h.ext.aeth.msn = msn;
	h.payload_len = 0;
	uint8_t was = DROCE_STAGE_ENTER(&qp->ctx->stage, DROCE_STAGE_ACK);
	int rc = droce_tp_xmit(qp, &h, NULL, 0, now);
	DROCE_STAGE_BACK(&qp->ctx->stage, was);
	if (rc == -ENOBUFS)
		return -ENOBUFS;
	uint8_t type = syndrome & DROCE_AETH_TYPE_MASK;
	uint8_t val = syndrome & DROCE_AETH_VALUE_MASK;
	if (type == DROCE_AETH_ACK)
		qp->stats.acks_sent++;
	else if (type == DROCE_AETH_RNR_NAK)
		qp->stats.rnr_nak_sent++;
	else if (val < 5)
		qp->stats.nak_sent[val]++;
	return 0;
}

/* The coalesced ACK; on a selective-repeat QP with packets seen past ePSN,
 * with the SACK block behind its AETH (wire/sack.h). */
static int send_ack(struct droce_qp *qp, uint64_t now)
{
	uint8_t sack[DROCE_SACK_LEN];
	if (!qp->transport || !droce_sr_resp_sack(qp, qp->tp.pend_ack_psn, sack))
		return send_aeth(qp, DROCE_AETH_ACK | DROCE_AETH_CREDIT_INVALID, qp->tp.pend_ack_psn,
				 qp->tp.msn, now);
	struct droce_hdrs h = qp->tmpl;
	h.bth.opcode = DROCE_OP_RC_ACKNOWLEDGE;
	h.bth.psn = qp->tp.pend_ack_psn;
	h.ext.aeth.syndrome = DROCE_AETH_ACK | DROCE_AETH_CREDIT_INVALID;
	h.ext.aeth.msn = qp->tp.msn;
	uint8_t was = DROCE_STAGE_ENTER(&qp->ctx->stage, DROCE_STAGE_ACK);
	int rc = droce_tp_xmit_tail(qp, &h, sack, sizeof(sack), now);
	DROCE_STAGE_BACK(&qp->ctx->stage, was);
	if (rc == -ENOBUFS)
		return -ENOBUFS;
	qp->stats.acks_sent++;
	return 0;
}

enum droce_tx_result droce_resp_tx(struct droce_qp *qp, uint64_t now, unsigned quota,
				   unsigned *sent)
{
	*sent = 0;
	if (qp->state < DROCE_QPS_RTR || qp->state == DROCE_QPS_ERR)
		return DROCE_TX_IDLE;
	if (qp->tp.cnp_pending) {
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (send_cnp(qp, now) == -ENOBUFS)
			return DROCE_TX_BUSY;
		qp->tp.cnp_pending = false;
		qp->tp.last_cnp = now ? now : 1;
		qp->stats.cnp_sent++;
		(*sent)++;
	}
	while (qp->tp.job_head != qp->tp.job_tail) {
		if (*sent >= quota)
			return DROCE_TX_MORE;
		struct droce_resp_job *j = &qp->tp.rd->jobs[qp->tp.job_head % DROCE_RESP_JOBS];
		bool done = false;
		int rc = send_job_pkt(qp, j, now, &done);
		if (rc == -ENOBUFS)
			return DROCE_TX_BUSY;
		if (rc == -EACCES) {
			/* The region went while its READ was answered: NAK remote
			 * access for the first response not sent (the requester
			 * completes the READ with REM_ACCESS_ERR), no response
			 * after it, then ERR (9.7.5.2.4, 9.9.3 class C). */
			qp->tp.job_head = qp->tp.job_tail;
			qp->tp.jobs_new = 0;
			qp->tp.ack_pending = false;
			qp->tp.nak_pending = false;
			queue_nak(qp, DROCE_AETH_NAK | DROCE_NAK_REMOTE_ACCESS, j->psn, true);
			continue;
		}
		(*sent)++;
		if (done) {
			if (!j->dup && qp->tp.jobs_new)
				qp->tp.jobs_new--;
			qp->tp.job_head++;
		}
	}
	/* ACK and NAK in PSN order (a duplicate's re-ACK may precede a NAK). */
	if (qp->tp.ack_pending && qp->tp.nak_pending && !qp->tp.resp_err &&
	    droce_psn_diff(qp->tp.pend_ack_psn, qp->tp.nak_psn) < 0) {
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (send_ack(qp, now))
			return DROCE_TX_BUSY;
		qp->tp.ack_pending = false;
		(*sent)++;
	}
	if (qp->tp.nak_pending) {
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (send_aeth(qp, qp->tp.nak_syndrome, qp->tp.nak_psn, qp->tp.nak_msn, now))
			return DROCE_TX_BUSY;
		qp->tp.nak_pending = false;
		(*sent)++;
		if (qp->tp.resp_err) {
			/* IBTA 11.6.3.1: the responder's own application learns why
			 * its QP left (invalid request / access violation WQ error). */
			uint8_t code = qp->tp.nak_syndrome & DROCE_AETH_VALUE_MASK;
			droce_event_raise(qp->ctx, code == DROCE_NAK_REMOTE_ACCESS ? DROCE_EVENT_QP_ACCESS_ERR
						   : code == DROCE_NAK_INVALID_REQ ? DROCE_EVENT_QP_REQ_ERR
						   : DROCE_EVENT_QP_FATAL, qp, NULL, NULL);
			droce_tp_to_err(qp); /* class C error: the NAK is out, now ERR */
			return DROCE_TX_IDLE;
		}
	}
	if (qp->tp.ack_pending) {
		if (*sent >= quota)
			return DROCE_TX_MORE;
		if (send_ack(qp, now))
			return DROCE_TX_BUSY;
		qp->tp.ack_pending = false;
		(*sent)++;
	}
	return DROCE_TX_IDLE;
}
