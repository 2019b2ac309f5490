/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM MAD in a UD SEND_ONLY to QP1 (rdma_cm's handshake on RoCEv2, IBTA
 * vol 1 ch. 12 and 13.4), as droce-dump shows it. Decoding is the CM's own
 * codec (stack/cm/mad.h, droce_mad_decode): droce-dump only picks the
 * frames and lists the fields, once, for both the text and the JSON view.
 */
#ifndef DROCE_DUMP_MAD_VIEW_H
#define DROCE_DUMP_MAD_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/mad.h"

struct droce_pkt;

/** A frame's MAD, decoded (valid when present). */
struct droce_dump_mad {
	bool present;               /**< a UD SEND_ONLY to QP1 with its payload */
	bool has_hdr;               /**< 256 bytes: the common header is valid */
	enum droce_mad_result result;
	struct droce_cm_msg msg;
};

/** Decode the MAD of @p p when it is a UD SEND_ONLY to QP1 with a payload. */
void droce_dump_mad_decode(struct droce_dump_mad *d, const struct droce_pkt *p);

/** One field of a CM message, in the order both views print them. */
struct droce_dump_mad_field {
	const char *key;            /**< JSON key and text label */
	uint64_t v;
	bool hex;                   /**< text shows 0x..., JSON an integer either way */
};

#define DROCE_DUMP_MAD_FIELDS_MAX 10

/**
 * The key fields of a decoded CM message (comm IDs, service ID, QPN,
 * starting PSN, REJ reason, ...) into @p out. @return how many (0 for an
 * attribute droce does not decode).
 */
size_t droce_dump_mad_fields(const struct droce_cm_msg *m, struct droce_dump_mad_field *out);

#endif
