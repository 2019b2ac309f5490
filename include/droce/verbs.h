/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Verbs-shaped objects: memory regions, completion queues, RC and UD queue
 * pairs, UD address handles, work requests and work completions. Shaped
 * after rdma-core's verbs.h so RDMA users feel at home; all functions are driven from the context's poll
 * thread (or through the comm-core rings, include/droce/comm.h).
 *
 * Control-path functions return 0 or a negative errno; constructors return
 * NULL and set errno; poll functions return a count. Protocol errors are
 * reported as droce_wc.status, never as return values.
 */
#ifndef DROCE_VERBS_H
#define DROCE_VERBS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_ctx;
struct droce_cq;
struct droce_qp;
struct droce_ah;
struct droce_srq;
struct droce_pd;

/* ---------------------------------------------------------------- PD -- */

/**
 * A protection domain (IBTA 10.2.3): memory regions, QPs and address
 * handles belong to one, and a QP reaches only the regions of its own PD,
 * by L_Key and R_Key alike (10.6.3.2). Every context has a PD of its own
 * that the calls without one use (droce_reg_mr, a QP created with
 * init_attr.pd NULL, droce_create_ah): an application with one client needs
 * no PD; a server that keeps its clients apart gives each a PD.
 */

/**
 * Allocate a protection domain.
 * @return the PD, or NULL with errno EINVAL (NULL context) or ENOMEM.
 */
struct droce_pd *droce_alloc_pd(struct droce_ctx *ctx);

/**
 * Free a protection domain (as rdma-core's ibv_dealloc_pd).
 * @return 0; -EINVAL (NULL, or the context's own PD); -EBUSY while a memory
 *         region, QP or address handle is still in it.
 */
int droce_dealloc_pd(struct droce_pd *pd);

/* ---------------------------------------------------------------- MR -- */

/** Access rights of a memory region (IBTA 10.6.3.1). */
enum droce_access_flags {
	DROCE_ACCESS_LOCAL_WRITE = 1u << 0,
	DROCE_ACCESS_REMOTE_WRITE = 1u << 1,
	DROCE_ACCESS_REMOTE_READ = 1u << 2,
	DROCE_ACCESS_REMOTE_ATOMIC = 1u << 3,
};

/** A registered memory region. Fields are read-only for the user. */
struct droce_mr {
	struct droce_ctx *ctx;
	void *addr;
	size_t length;
	uint32_t lkey;
	/** The slot's index in the low bits, the rest a keyed permutation of the
	 * slot's registration count (docs/security.md): not guessable from other
	 * keys, and a key kept after deregistration matches no later
	 * registration until its slot was registered 2^(32 - slot bits) times
	 * more (2^20 with the default 4096 MRs). Checked on every access. */
	uint32_t rkey;
	unsigned access;    /**< DROCE_ACCESS_* */
	struct droce_pd *pd; /**< its protection domain */
};

/**
 * Register @p length bytes at @p addr in the context's own PD.
 * REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE (IBTA 10.6.3.1).
 * @return the region, or NULL with errno EINVAL (bad flags, NULL addr with a
 *         non-zero length), ENOMEM (no memory or no free key).
 */
struct droce_mr *droce_reg_mr(struct droce_ctx *ctx, void *addr, size_t length,
			      unsigned access);

/** droce_reg_mr() in protection domain @p pd (EINVAL for a NULL @p pd). */
struct droce_mr *droce_reg_mr_pd(struct droce_pd *pd, void *addr, size_t length,
				 unsigned access);

/**
 * Deregister a region. Its rkey and lkey are invalid from now on, and a
 * message already under way stops (IBTA 10.6.3.2): a WRITE's later packets
 * and a READ's later responses get NAK remote access, a WQE whose local
 * buffer it was completes with LOC_PROT_ERR, a SEND into a receive buffer
 * in it completes that receive with LOC_PROT_ERR (NAK remote operational
 * error). No byte of it is read or written after this returns.
 * @return 0, or -EINVAL for NULL.
 */
int droce_dereg_mr(struct droce_mr *mr);

/* ---------------------------------------------------------------- CQ -- */

/**
 * Completion status: exactly ibverbs' numbers (enum ibv_wc_status in
 * rdma-core's <infiniband/verbs.h>; tests/unit/core/test_wc_abi.c checks each),
 * so a status passes to and from verbs code unchanged. droce produces
 * SUCCESS, LOC_LEN_ERR, LOC_PROT_ERR, WR_FLUSH_ERR, BAD_RESP_ERR,
 * REM_INV_REQ_ERR, REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR and
 * RNR_RETRY_EXC_ERR; the others (EE contexts, memory windows, reliable
 * datagram) name verbs' values so no number is reused.
 */
enum droce_wc_status {
	DROCE_WC_SUCCESS = 0,
	DROCE_WC_LOC_LEN_ERR = 1,
	DROCE_WC_LOC_QP_OP_ERR = 2,
	DROCE_WC_LOC_EEC_OP_ERR = 3,
	DROCE_WC_LOC_PROT_ERR = 4,
	DROCE_WC_WR_FLUSH_ERR = 5,
	DROCE_WC_MW_BIND_ERR = 6,
	DROCE_WC_BAD_RESP_ERR = 7,
	DROCE_WC_LOC_ACCESS_ERR = 8,
	DROCE_WC_REM_INV_REQ_ERR = 9,
	DROCE_WC_REM_ACCESS_ERR = 10,
	DROCE_WC_REM_OP_ERR = 11,
	DROCE_WC_RETRY_EXC_ERR = 12,
	DROCE_WC_RNR_RETRY_EXC_ERR = 13,
	DROCE_WC_LOC_RDD_VIOL_ERR = 14,
	DROCE_WC_REM_INV_RD_REQ_ERR = 15,
	DROCE_WC_REM_ABORT_ERR = 16,
	DROCE_WC_INV_EECN_ERR = 17,
	DROCE_WC_INV_EEC_STATE_ERR = 18,
	DROCE_WC_FATAL_ERR = 19,
	DROCE_WC_RESP_TIMEOUT_ERR = 20,
	DROCE_WC_GENERAL_ERR = 21,
};

/**
 * The sender's address of a UD receive, from the GRH area at the front of
 * its buffer (DROCE_WC_GRH): RoCEv2 over IPv4 has 20 zero bytes and then the
 * IPv4 header (source at byte 32), IPv6 (or a RoCEv1 GRH) the IPv6 header
 * (source at byte 8). @p ip gets it (IPv4: the first 4 bytes, the rest 0).
 * @return 4 or 6, or 0 when the 40 bytes are neither (@p ip untouched).
 */
static inline int droce_grh_src_ip(const uint8_t grh[40], uint8_t ip[16])
{
	unsigned zero = 0;
	for (unsigned i = 0; i < 20; i++)
		zero |= grh[i];
	if (!zero && (grh[20] >> 4) == 4) {
		for (unsigned i = 0; i < 16; i++)
			ip[i] = i < 4 ? grh[32 + i] : 0;
		return 4;
	}
	if ((grh[0] >> 4) == 6) {
		for (unsigned i = 0; i < 16; i++)
			ip[i] = grh[8 + i];
		return 6;
	}
	return 0;
}

/** Human-readable status, like ibv_wc_status_str(). Never NULL. */
const char *droce_wc_status_str(enum droce_wc_status status);

/** Completion opcode: ibverbs' numbers (enum ibv_wc_opcode). */
enum droce_wc_opcode {
	DROCE_WC_SEND = 0,
	DROCE_WC_RDMA_WRITE = 1,
	DROCE_WC_RDMA_READ = 2,
	DROCE_WC_COMP_SWAP = 3,
	DROCE_WC_FETCH_ADD = 4,
	DROCE_WC_RECV = 128,                /**< a SEND arrived */
	DROCE_WC_RECV_RDMA_WITH_IMM = 129,  /**< an RDMA WRITE with immediate arrived */
};

enum droce_wc_flags {
	DROCE_WC_WITH_IMM = 1u << 0,
	DROCE_WC_WITH_INV = 1u << 1,
	/** UD receive: the first 40 bytes of the buffer hold the GRH area
	 * (RoCEv2 IPv4: zeros, then the IPv4 header in bytes 20..39; IPv6:
	 * the IPv6 header), as verbs/rxe place it; byte_len counts them. */
	DROCE_WC_GRH = 1u << 2,
	/** UD receive: smac holds the frame's Ethernet source (the kernel's
	 * IB_WC_WITH_SMAC): what an answer to an unresolved sender goes to. */
	DROCE_WC_WITH_SMAC = 1u << 3,
};

/** A work completion. */
struct droce_wc {
	uint64_t wr_id;
	enum droce_wc_status status;
	enum droce_wc_opcode opcode;
	uint32_t byte_len;     /**< receive completions: bytes placed */
	uint32_t imm_data;     /**< immediate data as carried on the wire (network order value) */
	uint32_t invalidated_rkey;
	uint32_t qp_num;
	uint32_t src_qp;       /**< UD receive: the sender's QPN (DETH source QP) */
	unsigned wc_flags;     /**< DROCE_WC_WITH_*, DROCE_WC_GRH */
	uint32_t vendor_err;   /**< droce detail (e.g. the NAK code received) */
	uint8_t smac[6];       /**< UD receive, DROCE_WC_WITH_SMAC: the sender's MAC */
};

/**
 * Create a completion queue of @p depth entries. The CQ never overwrites:
 * when full, the next completion sets the overflow flag, is counted, and the
 * QPs that tried to complete into it move to ERR (IBTA 11.4.2.1 CQ overrun).
 * @return the CQ, or NULL with errno EINVAL (depth < 1) or ENOMEM.
 */
struct droce_cq *droce_create_cq(struct droce_ctx *ctx, unsigned depth);

/** Destroy a CQ. @return 0, -EINVAL for NULL, -EBUSY while a QP uses it. */
int droce_destroy_cq(struct droce_cq *cq);

/**
 * Take up to @p n completions, oldest first.
 * @return how many were written to @p wc (0 when empty), or -EOVERFLOW once
 *         the CQ has overflowed (completions were lost).
 */
int droce_poll_cq(struct droce_cq *cq, int n, struct droce_wc *wc);

/* ---------------------------------------------------------------- QP -- */

/** Path MTU, numbered as verbs (IBV_MTU_*). */
enum droce_mtu {
	DROCE_MTU_256 = 1,
	DROCE_MTU_512 = 2,
	DROCE_MTU_1024 = 3,
	DROCE_MTU_2048 = 4,
	DROCE_MTU_4096 = 5,
};

static inline unsigned droce_mtu_bytes(enum droce_mtu m)
{
	return (m >= DROCE_MTU_256 && m <= DROCE_MTU_4096) ? 128u << m : 0u;
}

/** The largest path MTU of at most @p bytes (DROCE_MTU_256 below 512). */
static inline enum droce_mtu droce_mtu_of_bytes(unsigned bytes)
{
	enum droce_mtu m = DROCE_MTU_4096;
	while (m > DROCE_MTU_256 && droce_mtu_bytes(m) > bytes)
		m = (enum droce_mtu)(m - 1);
	return m;
}

/** IBTA 10.3.1 QP states. */
enum droce_qp_state {
	DROCE_QPS_RESET,
	DROCE_QPS_INIT,
	DROCE_QPS_RTR,
	DROCE_QPS_RTS,
	DROCE_QPS_SQD,
	DROCE_QPS_SQE,
	DROCE_QPS_ERR,
};

/** Name of a QP state, e.g. "RTS". Never NULL. */
const char *droce_qp_state_str(enum droce_qp_state s);

/** Where the peer is: the RoCEv2 address vector. */
struct droce_ah_attr {
	uint8_t ip_version;    /**< 4 or 6 */
	uint8_t dst_ip[16];    /**< IPv4: first 4 bytes */
	uint8_t dst_mac[6];    /**< resolved next hop (ARP), or set statically */
	uint8_t dscp;
	uint8_t ttl;
	uint16_t udp_sport;    /**< entropy for ECMP (A17.5.1.1); 0: derived from QPNs */
};

struct droce_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/** Transport service of a QP (IBTA 9.8 RC, 9.8.4 UD). */
enum droce_qp_type {
	DROCE_QPT_RC = 0,   /**< reliable connected (the default: a zeroed init attr) */
	DROCE_QPT_UD = 1,   /**< unreliable datagram: SEND only, one packet per message */
	/** The context's GSI QP (IBTA 13.5.1): UD with QPN 1 and the well-known
	 * Q_Key 0x80010000 (DROCE_GSI_QKEY), one per context; what the CM's MADs
	 * travel on. */
	DROCE_QPT_GSI = 2,
};

/** The GSI QP's QPN and Q_Key (IBTA 13.5.1 / 13.4.6.1, Linux IB_QP1_QKEY). */
#define DROCE_GSI_QPN 1u
#define DROCE_GSI_QKEY 0x80010000u

struct droce_qp_init_attr {
	struct droce_cq *send_cq;
	struct droce_cq *recv_cq;
	struct droce_qp_cap cap;  /**< zeros take the params.h defaults */
	int sq_sig_all;           /**< every send WR completes, as if SIGNALED */
	enum droce_qp_type qp_type; /**< 0 = RC */
	struct droce_pd *pd;      /**< its protection domain; NULL = the context's own */
	/** RC or UD: take receives from this shared receive queue instead of
	 * an RQ of the QP's own (cap.max_recv_wr/sge are then ignored and
	 * read back 0; droce_post_recv on the QP fails -EINVAL). */
	struct droce_srq *srq;
	void *qp_context;         /**< handed back in the QP's asynchronous events */
};

/** Attributes for droce_modify_qp()/droce_query_qp(). */
struct droce_qp_attr {
	enum droce_qp_state qp_state;
	enum droce_mtu path_mtu;
	uint32_t rq_psn;          /**< expected PSN of the responder (24 bits) */
	uint32_t sq_psn;          /**< first PSN of the requester (24 bits) */
	uint32_t dest_qp_num;
	unsigned qp_access_flags; /**< REMOTE_* rights the responder grants */
	uint16_t pkey;
	struct droce_ah_attr ah_attr;
	uint8_t timeout;          /**< local ACK timeout: 4.096 us * 2^timeout; 0 = infinite */
	uint8_t retry_cnt;        /**< 0..7 */
	uint8_t rnr_retry;        /**< 0..7, 7 = infinite */
	uint8_t min_rnr_timer;    /**< 0..31, IBTA table 45 encoding, sent in RNR NAKs */
	uint8_t max_rd_atomic;    /**< outstanding READ/atomic as requester */
	uint8_t max_dest_rd_atomic; /**< outstanding READ/atomic accepted as responder */
	struct droce_qp_cap cap;  /**< query only */
	uint32_t qkey;            /**< UD: the Q_Key received datagrams must carry (IBTA 10.2.4) */
	enum droce_qp_type qp_type; /**< query only */
};

/** Which droce_qp_attr fields droce_modify_qp() applies (IBTA 11.2.5.1). */
enum droce_qp_attr_mask {
	DROCE_QP_STATE = 1u << 0,
	DROCE_QP_ACCESS_FLAGS = 1u << 1,
	DROCE_QP_PKEY = 1u << 2,
	DROCE_QP_AV = 1u << 3,
	DROCE_QP_PATH_MTU = 1u << 4,
	DROCE_QP_TIMEOUT = 1u << 5,
	DROCE_QP_RETRY_CNT = 1u << 6,
	DROCE_QP_RNR_RETRY = 1u << 7,
	DROCE_QP_RQ_PSN = 1u << 8,
	DROCE_QP_MAX_QP_RD_ATOMIC = 1u << 9,
	DROCE_QP_MIN_RNR_TIMER = 1u << 10,
	DROCE_QP_SQ_PSN = 1u << 11,
	DROCE_QP_MAX_DEST_RD_ATOMIC = 1u << 12,
	DROCE_QP_DEST_QPN = 1u << 13,
	DROCE_QP_QKEY = 1u << 14,
};

/**
 * Create a QP in RESET: RC (attr->qp_type 0), UD, or the context's GSI QP
 * (QPN 1, Q_Key DROCE_GSI_QKEY already set).
 * @return the QP, or NULL with errno EINVAL (missing CQ, caps over the
 *         context's limits, unknown qp_type, a PD of another context),
 *         EBUSY (a second GSI QP) or ENOMEM. QPNs rotate: a destroyed QP's
 *         number comes back only after every other free one was used.
 */
struct droce_qp *droce_create_qp(struct droce_ctx *ctx, const struct droce_qp_init_attr *attr);

/** Destroy a QP; outstanding WQEs are dropped without completions. @return 0 or -EINVAL. */
int droce_destroy_qp(struct droce_qp *qp);

/** The QP number (24 bits; 1 only for the GSI QP, never 0: droce has no SMI). */
uint32_t droce_qp_num(const struct droce_qp *qp);

/**
 * Modify a QP. Transitions and the attributes each requires or allows follow
 * IBTA 11.2.5.1 table 93. RC: RESET->INIT: ACCESS_FLAGS, PKEY; INIT->RTR: AV,
 * PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER; RTR->RTS:
 * SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC; any->RESET;
 * any->ERR; SQE->RTS.
 * UD and GSI (verbs' UD table): RESET->INIT: QKEY required (GSI: optional,
 * it has DROCE_GSI_QKEY), PKEY and PATH_MTU optional; INIT->INIT and
 * INIT->RTR: PKEY, QKEY, PATH_MTU optional (no AV, destination QPN or PSN:
 * each send WR names its destination); RTR->RTS: SQ_PSN required, QKEY
 * optional; RTS->RTS, SQD->RTS, SQE->RTS: QKEY optional; SQD->SQD: PKEY,
 * QKEY. PATH_MTU on a UD QP is a droce extension (verbs takes the port's):
 * the largest message it sends, default 4096.
 * @return 0; -EINVAL for an illegal transition, a missing required attribute,
 *         an attribute not allowed on this transition (QKEY on an RC QP), or
 *         a value out of range (a PATH_MTU above the context's max_mtu: the
 *         link would drop its full-size frames); -ENOMEM when the first
 *         MAX_DEST_RD_ATOMIC above 0 finds no memory for the READ/atomic
 *         resources (the QP is left as it was).
 */
int droce_modify_qp(struct droce_qp *qp, const struct droce_qp_attr *attr, unsigned mask);

/** Read back a QP's attributes (all of them; @p mask is accepted for verbs parity). @return 0 or -EINVAL. */
int droce_query_qp(struct droce_qp *qp, struct droce_qp_attr *attr, unsigned mask);

/* ---------------------------------------------------------------- WR -- */

struct droce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum droce_wr_opcode {
	DROCE_WR_RDMA_WRITE,
	DROCE_WR_RDMA_WRITE_WITH_IMM,
	DROCE_WR_SEND,
	DROCE_WR_SEND_WITH_IMM,
	DROCE_WR_RDMA_READ,
	DROCE_WR_ATOMIC_CMP_AND_SWP,
	DROCE_WR_ATOMIC_FETCH_AND_ADD,
};

enum droce_send_flags {
	DROCE_SEND_FENCE = 1u << 0,     /**< wait for earlier READ/atomics (IBTA 10.8.3.3) */
	DROCE_SEND_SIGNALED = 1u << 1,  /**< generate a completion on success */
	DROCE_SEND_SOLICITED = 1u << 2, /**< set SE on the last packet */
	DROCE_SEND_INLINE = 1u << 3,    /**< copy the data at post time */
};

/**
 * A UD address handle: where datagrams go (IBTA 10.2.2.1, 11.2.2). The
 * attributes are copied; a send WR refers to the handle. A handle destroyed
 * while WRs posted with it are outstanding stays valid for them: its memory
 * goes when the last of them has left or was flushed.
 */

/**
 * Create an address handle for @p attr (ip_version must be the context's,
 * dscp 0..63; dst_mac is the resolved next hop; ttl 0 = the default) in the
 * context's own PD.
 * @return the handle, or NULL with errno EINVAL (NULL argument, another IP
 *         version, dscp > 63) or ENOMEM.
 */
struct droce_ah *droce_create_ah(struct droce_ctx *ctx, const struct droce_ah_attr *attr);

/** droce_create_ah() in protection domain @p pd; a UD QP takes only the
 * handles of its own PD (IBTA 10.2.3). */
struct droce_ah *droce_create_ah_pd(struct droce_pd *pd, const struct droce_ah_attr *attr);

/** Destroy an address handle. @return 0, or -EINVAL for NULL. */
int droce_destroy_ah(struct droce_ah *ah);

struct droce_send_wr {
	uint64_t wr_id;
	struct droce_send_wr *next;
	struct droce_sge *sg_list;
	int num_sge;
	enum droce_wr_opcode opcode;
	unsigned send_flags;
	uint32_t imm_data;        /**< carried as is (network order value, as verbs) */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;  /**< 8-byte aligned */
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		/** UD: destination of the datagram (IBTA 9.8.4). */
		struct {
			struct droce_ah *ah;
			uint32_t remote_qpn;   /**< 24 bits */
			/** The DETH Q_Key; with the high bit set the QP's own Q_Key
			 * is sent instead (IBTA 10.2.4: controlled Q_Keys). */
			uint32_t remote_qkey;
		} ud;
	} wr;
};

struct droce_recv_wr {
	uint64_t wr_id;
	struct droce_recv_wr *next;
	struct droce_sge *sg_list;
	int num_sge;
};

/**
 * Post a list of send work requests.
 *
 * UD QPs take SEND and SEND_WITH_IMM only, each WR with wr.ud (address
 * handle of this context, remote QPN, Q_Key). A UD message is one packet
 * (IBTA 9.8.4); one longer than the QP's MTU sends nothing and completes
 * with SUCCESS (IBTA C10-93.1.1: no packet, no error; rxe does the same),
 * counted in droce_qp_stats.ud_oversize. A UD send completes when its packet
 * has left (no ACK, no retransmission).
 *
 * @return 0; or a negative errno with *bad_wr at the first WR not posted:
 *         -EINVAL (bad opcode, too many SGEs, inline too long, atomic not
 *         8-byte aligned or length != 8, QP in RESET/INIT/RTR... per IBTA
 *         10.8.1: posting to the SQ needs RTS or SQD; UD: an opcode other
 *         than SEND/SEND_WITH_IMM, no address handle or one of another
 *         context or PD, remote QPN over 24 bits), -ENOMEM (SQ full).
 *         A bad lkey is not a post error: it completes with LOC_PROT_ERR.
 */
int droce_post_send(struct droce_qp *qp, struct droce_send_wr *wr, struct droce_send_wr **bad_wr);

/**
 * Post a list of receive work requests (allowed from INIT on, IBTA 10.8.1).
 * UD: each buffer needs 40 bytes for the GRH area in front of the payload
 * (DROCE_WC_GRH); a datagram that does not fit is dropped and counted
 * (UD_TOO_LONG), the WQE stays posted (IBTA class D, as rxe).
 * @return 0; or -EINVAL (RESET, too many SGEs) / -ENOMEM (RQ full) with *bad_wr set.
 */
int droce_post_recv(struct droce_qp *qp, struct droce_recv_wr *wr, struct droce_recv_wr **bad_wr);

/* ---------------------------------------------------------------- SRQ -- */

/**
 * A shared receive queue (IBTA 10.2.9): receive WQEs any QP created with it
 * consumes, in the order posted. A QP takes a WQE when the first packet of
 * a message that needs one arrives; from then on the WQE is the QP's (it
 * completes on the QP's receive CQ, or is flushed with the QP).
 */
struct droce_srq_attr {
	uint32_t max_wr;     /**< WQEs it holds (1..65535; create grants at least this) */
	uint32_t max_sge;    /**< SGEs per WQE (1..DROCE_QP_MAX_SGE of the engine: 8) */
	/** The limit (IBTA 10.2.9.3, o10-38): armed when non-zero; when a WQE
	 * taken leaves fewer than srq_limit queued, DROCE_EVENT_SRQ_LIMIT_REACHED
	 * is raised once and the limit goes back to 0 (disarmed). Ignored at
	 * create (an SRQ is created unarmed, as verbs). */
	uint32_t srq_limit;
};

/** Which droce_srq_attr fields droce_modify_srq() applies (verbs' IBV_SRQ_*). */
enum droce_srq_attr_mask {
	DROCE_SRQ_MAX_WR = 1u << 0,
	DROCE_SRQ_LIMIT = 1u << 1,
};

/**
 * Create a shared receive queue in @p pd (NULL: the context's own): the
 * lkeys of the WQEs posted to it are checked against that PD (10.6.3.2),
 * and the QPs created on it must be in it.
 * @return the SRQ, or NULL with errno EINVAL (NULL argument, max_wr 0 or over
 *         65535, max_sge 0 or over 8, a PD of another context) or ENOMEM.
 */
struct droce_srq *droce_create_srq(struct droce_ctx *ctx, struct droce_pd *pd,
				   const struct droce_srq_attr *attr, void *srq_context);

/**
 * Resize (DROCE_SRQ_MAX_WR: WQEs queued are kept, in order) and/or arm the
 * limit (DROCE_SRQ_LIMIT).
 * @return 0; -EINVAL for an unknown mask bit, max_wr 0, over 65535 or below
 *         the WQEs queued now, a limit over max_wr; -ENOMEM.
 */
int droce_modify_srq(struct droce_srq *srq, const struct droce_srq_attr *attr, unsigned mask);

/** Read max_wr, max_sge and the limit (0 once it fired). @return 0 or -EINVAL. */
int droce_query_srq(const struct droce_srq *srq, struct droce_srq_attr *attr);

/** Destroy an SRQ; queued WQEs are dropped. @return 0, -EINVAL, -EBUSY while a QP uses it. */
int droce_destroy_srq(struct droce_srq *srq);

/**
 * Post receive WQEs to the SRQ (each buffer checked as droce_post_recv does:
 * a bad lkey completes with LOC_PROT_ERR on the QP that takes it).
 * @return 0; or -EINVAL (too many SGEs, NULL list) / -ENOMEM (full), *bad_wr set.
 */
int droce_post_srq_recv(struct droce_srq *srq, struct droce_recv_wr *wr,
			struct droce_recv_wr **bad_wr);

/** WQEs queued on the SRQ now (not yet taken by a QP). */
uint32_t droce_srq_count(const struct droce_srq *srq);

/* ------------------------------------------------------------- events -- */

/**
 * Asynchronous events (IBTA 11.6.3): ibverbs' numbers (enum ibv_event_type),
 * so they pass to verbs code unchanged. droce raises:
 *  - CQ_ERR (with QP_FATAL for each QP that overran it): a CQ overran;
 *  - QP_REQ_ERR / QP_ACCESS_ERR: the responder found an invalid request /
 *    an access violation, NAKed it and moved the QP to ERR (no receive
 *    completion reports it);
 *  - COMM_EST: the first packet reached a QP in RTR (IBTA 11.6.3.1);
 *  - QP_LAST_WQE_REACHED: a QP on an SRQ went to ERR: it takes no more WQEs;
 *  - SRQ_LIMIT_REACHED: see droce_srq_attr.srq_limit.
 * PORT_ACTIVE / PORT_ERR are the link's (the verbs drop-in raises them).
 */
enum droce_event_type {
	DROCE_EVENT_CQ_ERR = 0,
	DROCE_EVENT_QP_FATAL = 1,
	DROCE_EVENT_QP_REQ_ERR = 2,
	DROCE_EVENT_QP_ACCESS_ERR = 3,
	DROCE_EVENT_COMM_EST = 4,
	DROCE_EVENT_PORT_ACTIVE = 9,
	DROCE_EVENT_PORT_ERR = 10,
	DROCE_EVENT_SRQ_LIMIT_REACHED = 15,
	DROCE_EVENT_QP_LAST_WQE_REACHED = 16,
};

/** One event: the object it concerns (the others NULL) and its user context. */
struct droce_event {
	enum droce_event_type type;
	struct droce_qp *qp;
	struct droce_cq *cq;
	struct droce_srq *srq;
	void *context;       /**< the QP's qp_context or the SRQ's srq_context */
};

/**
 * Take the oldest event. Destroying a QP, CQ or SRQ drops its events not
 * taken yet, so a pointer in an event taken is valid until that object is
 * destroyed.
 * @return 1 (one written to @p ev), 0 (none).
 */
int droce_ctx_get_event(struct droce_ctx *ctx, struct droce_event *ev);

/* ------------------------------------------------------------ counters -- */

/** Paths (UDP source ports) a DROCE_TRANSPORT_SR_SPRAY QP spreads its packets over. */
#define DROCE_SPRAY_PATHS 8

/** Per-QP counters (plain integers: one thread owns the QP). */
struct droce_qp_stats {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retrans_timeout;   /**< go-back-N rounds started by the ACK timer */
	uint64_t retrans_nak;       /**< rounds started by a PSN-sequence NAK */
	uint64_t retrans_pkts;      /**< packets sent again */
	uint64_t dup_reqs;          /**< duplicate requests seen as responder */
	uint64_t out_of_seq;        /**< out-of-sequence requests seen as responder */
	uint64_t rnr_nak_sent, rnr_nak_rcvd;
	uint64_t nak_sent[5], nak_rcvd[5]; /**< by enum droce_nak_code */
	uint64_t nak_seq_dup;       /**< sequence NAKs for the PSN already gone back to: ignored */
	uint64_t acks_sent, acks_rcvd;
	uint64_t cnp_sent, cnp_rcvd, ecn_marked;
	uint64_t drops;             /**< packets for this QP dropped (see ctx drop reasons) */
	/* RTT and what it drives (docs/cc.md); 0 until measured */
	uint64_t rtt_samples;       /**< RTT samples taken (AckReq packets ACKed, not retransmitted) */
	uint64_t rtt_min_ns, rtt_srtt_ns, rtt_var_ns; /**< min, smoothed, mean deviation */
	uint64_t rto_ns;            /**< the ACK timeout armed next (ibta or adaptive) */
	uint64_t window_bytes;      /**< send window in use (cc, window tuning) */
	uint32_t window_pkts;
	uint8_t timeout_mode;       /**< enum droce_timeout_mode in use */
	uint64_t delivery_mbps;     /**< measured delivery rate (window tuning), Mbit/s */
	/* UD (IBTA 9.8.4) */
	uint64_t ud_oversize;       /**< UD sends longer than the MTU: completed, not sent (C10-93.1.1) */
	/* where the QP is, when the counters were copied */
	uint8_t qp_state;           /**< enum droce_qp_state */
	uint32_t psn_next;          /**< requester: PSN of the next new packet */
	uint32_t psn_una;           /**< requester: oldest PSN not yet acknowledged */
	uint32_t psn_expected;      /**< responder: the PSN it expects next (ePSN) */
	uint64_t cc_rate_mbps;      /**< the rate the cc paces at (dcqcn's current rate);
				         0 for algorithms that keep only a window */
	/* selective repeat (droce_qp_set_transport; docs/transport.md) */
	uint8_t transport;          /**< enum droce_transport in use */
	uint64_t sr_ooo_placed;     /**< responder: packets placed out of order */
	uint64_t sr_ooo_dropped;    /**< responder: out-of-order packets it could not place
				         (not a plain WRITE, or past its bitmap): resent */
	uint64_t sack_sent, sack_rcvd; /**< ACKs carrying the SACK block */
	uint64_t sr_rounds;         /**< requester: resend rounds a SACK started */
	uint64_t sr_skipped;        /**< requester: PSNs not resent because SACKed */
	uint64_t sack_bad_bits;     /**< requester: SACK bits for PSNs it never sent: refused */
	uint64_t sack_reneged;      /**< requester: SACK scoreboards forgotten on an ACK timeout */
	/* sr-spray: per path (UDP source port, ECMP entropy, IBTA A17.5.1.1) */
	uint64_t spray_pkts[DROCE_SPRAY_PATHS];   /**< packets sent on path i */
	uint64_t spray_resent[DROCE_SPRAY_PATHS]; /**< ... of them sent again (lost, or late) */
	uint16_t spray_sport[DROCE_SPRAY_PATHS];  /**< path i's UDP source port now */
	uint64_t spray_moves;       /**< paths moved to a new source port (resends in a row on them) */
};

/**
 * How a RC QP recovers from loss (docs/transport.md, "Selective repeat").
 * Both ends must run the same mode: droce's CM agrees on it when it connects
 * a QP (the REQ offers this QP's mode, the REP answers, docs/cm.md);
 * otherwise the application, droce-perf's --transport or DROCE_TRANSPORT
 * sets it on both sides. A QP left at GBN, the default, is IBTA go-back-N byte for byte, as
 * any other peer (rxe, a NIC) expects.
 */
enum droce_transport {
	DROCE_TRANSPORT_GBN = 0,      /**< IBTA go-back-N (9.7.6), the default */
	DROCE_TRANSPORT_SR = 1,       /**< selective repeat, BDP-capped flight */
	DROCE_TRANSPORT_SR_SPRAY = 2, /**< selective repeat, packets sprayed over DROCE_SPRAY_PATHS
					   UDP source ports, a path with resends in a row moved */
};

/**
 * Loss recovery of a RC QP (enum droce_transport), before it reaches RTR.
 * @return 0, -EINVAL (not RC, unknown mode, QP in RTR or later), or
 * -ENOMEM (the selective-repeat state could not be allocated).
 */
int droce_qp_set_transport(struct droce_qp *qp, int mode);

/** The name of an enum droce_transport; "?" for any other value. */
static inline const char *droce_transport_name(int mode)
{
	return mode == DROCE_TRANSPORT_GBN        ? "gbn"
	       : mode == DROCE_TRANSPORT_SR       ? "sr"
	       : mode == DROCE_TRANSPORT_SR_SPRAY ? "sr-spray"
						  : "?";
}

/** enum droce_transport by name ("gbn", "sr", "sr-spray"). @return the mode, or -22 (-EINVAL). */
static inline int droce_transport_parse(const char *name)
{
	for (int m = DROCE_TRANSPORT_GBN; name && m <= DROCE_TRANSPORT_SR_SPRAY; m++) {
		const char *a = droce_transport_name(m), *b = name;
		while (*a && *a == *b)
			a++, b++;
		if (!*a && !*b)
			return m;
	}
	return -22; /* -EINVAL, without <errno.h> in a public header */
}

/**
 * ACK timeout mode of one QP (enum droce_timeout_mode in droce/ctx.h;
 * DROCE_TIMEOUT_DEFAULT = the context's). Any state.
 * @return 0 or -EINVAL.
 */
int droce_qp_set_timeout_mode(struct droce_qp *qp, int mode);

/**
 * Congestion control of one QP by name ("fixed", "aimd", "dcqcn", "swift"),
 * before it reaches RTS (the algorithm starts there).
 * @return 0, or -EINVAL (unknown name, QP already in RTS or later).
 */
int droce_qp_set_cc(struct droce_qp *qp, const char *name);

/** Copy a QP's counters. @return 0 or -EINVAL. */
int droce_qp_get_stats(const struct droce_qp *qp, struct droce_qp_stats *out);

/** The name of a QP's congestion control ("dcqcn", ...). Never NULL. */
const char *droce_qp_cc_name(const struct droce_qp *qp);

#ifdef __cplusplus
}
#endif

#endif
