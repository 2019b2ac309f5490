/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rdma_cm handshakes of a capture, as --derive reads them: the CM MADs
 * (UD SEND_ONLY to QP1, IBTA vol 1 ch. 12) a side sent or received, decoded
 * with the CM's own codec (stack/cm/mad.h), grouped into connections by
 * their communication IDs and checked for consistency. What a handshake
 * fixes for the RC conversation that follows it (QPNs, starting PSNs, path
 * MTU) is what derive takes where the RC frames alone do not show it, and
 * what it checks them against where they do.
 */
#ifndef DROCE_RP_DERIVE_CM_H
#define DROCE_RP_DERIVE_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct droce_pkt;

#define DROCE_RP_CM_MAX 16

/** One rdma_cm connection the side took part in. */
struct droce_rp_cm_conn {
	bool active;              /**< the side sent the REQ */
	uint8_t peer_ip[16];
	unsigned req_frame, rep_frame, rtu_frame, dreq_frame, drep_frame, rej_frame; /**< 0: none */
	uint32_t req_comm_id, rep_comm_id; /**< the REQ sender's and the REP sender's */
	uint64_t tid;             /**< the REQ's transaction ID (the REP and RTU repeat it) */
	uint32_t side_qpn, peer_qpn;
	/* Linux's CM (and so rxe and every rdma_cm peer) starts the active
	 * side's receive queue at the REQ's starting PSN and its send queue at
	 * the REP's; the passive side the other way round (cm_req_handler,
	 * cm_rep_handler, ib_send_cm_req/rep; the rxe corpus shows it). */
	uint32_t side_sq_psn, side_rq_psn;
	uint8_t path_mtu;         /**< the REQ's, 1..5 */
	uint16_t rej_reason;
};

struct droce_rp_cm {
	struct droce_rp_cm_conn c[DROCE_RP_CM_MAX];
	unsigned n;
	unsigned mads;            /**< CM MADs read */
};

/**
 * Read frame @p num (@p p, parsed) when it is a CM MAD between the side
 * (@p side_ip) and another address. A MAD that does not fit the
 * handshake (a REP for no REQ, an RTU or DREQ with other comm IDs, a DREQ
 * naming another QPN, a second REQ's QPN) is an error.
 * @return 0 (also for frames that are not CM MADs), or -EINVAL with @p err.
 */
int droce_rp_cm_add(struct droce_rp_cm *cm, const struct droce_pkt *p, unsigned num,
		    const uint8_t side_ip[16], char *err, size_t errlen);

/** Whether @p c has both the REQ and the REP (the RC attributes are fixed). */
static inline bool droce_rp_cm_complete(const struct droce_rp_cm_conn *c)
{
	return c->req_frame && c->rep_frame;
}

#endif
