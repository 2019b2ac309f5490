/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which captured frames are the peer's (fed to droce) and which are the
 * droce side's own (expected from droce); and the rewriting of the peer's
 * frames from the capture's QPNs, rkeys and addresses onto the ones droce
 * assigned (the public API cannot choose them).
 */
#ifndef DROCE_REPLAY_FRAMES_H
#define DROCE_REPLAY_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "scenario.h"
#include "wire/parse.h"

/** How a captured frame relates to the scenario's side. */
enum droce_rp_role {
	DROCE_RP_OTHER,      /**< not RoCE, or between other hosts */
	DROCE_RP_PEER,       /**< RoCE to the side: fed to droce */
	DROCE_RP_OWN,        /**< RoCE from the side: expected from droce */
	DROCE_RP_IGNORED,    /**< RoCE but QP1/UD (CM MADs): droce is RC only */
};

/**
 * Classify frame @p f for a side with address @p ip (version @p ipv).
 * Fills @p pkt (with @p pr the parse result) when the frame is RoCE.
 */
enum droce_rp_role droce_rp_classify(const struct droce_rp_frame *f, int ipv, const uint8_t ip[16],
				     struct droce_pkt *pkt, enum droce_parse_result *pr);

/** True when a parse result means "a RoCE frame" (good or with a defect found after the BTH). */
bool droce_rp_is_roce(enum droce_parse_result r);

/** droce's names for the capture's objects. */
struct droce_rp_map {
	uint32_t qpn[DROCE_RP_MAX_QPS];    /**< droce QPN of scenario qp i */
	uint32_t rkey[DROCE_RP_MAX_MRS];   /**< droce rkey of scenario mr i */
	uint64_t addr[DROCE_RP_MAX_MRS];   /**< droce address of scenario mr i */
};

/**
 * Rewrite a peer frame in place: the BTH destination QPN, RETH, AtomicETH
 * and IETH rkeys and addresses from the capture's values to droce's (by the
 * scenario's qp/mr lines). The ICRC is recomputed when it was valid before
 * (a frame captured with a bad ICRC keeps a bad one).
 * @return the number of fields changed, or -EINVAL if the frame is not RoCE.
 */
int droce_rp_rewrite(uint8_t *frame, size_t len, const struct droce_rp_scenario *s,
		     const struct droce_rp_map *map);

/** Recompute the ICRC of a parsed frame in place (tamper tests, rewriting). @return 0 or -EINVAL. */
int droce_rp_fix_icrc(uint8_t *frame, size_t len);

#endif
