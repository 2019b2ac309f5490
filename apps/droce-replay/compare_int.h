/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What compare.c and compare_psn.c share: the frames of either side as
 * parsed items, the stream key (destination QP and direction), one frame's
 * field-by-field difference and its printed form.
 */
#ifndef DROCE_REPLAY_COMPARE_INT_H
#define DROCE_REPLAY_COMPARE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "wire/hdr.h"
#include "wire/opcode.h"
#include "wire/parse.h"
#include "wire/psn.h"

struct item {
	const uint8_t *data;
	uint32_t len;
	struct droce_pkt p;
	enum droce_parse_result r;
	unsigned num;      /* capture frame number, or droce's frame index (1-based) */
	uint64_t t_ns;
	bool dropped;      /* coalesced away */
	bool lost;         /* droce's match of a frame lost before the capture point */
	bool late;         /* compared out of place ("late") */
};

struct list {
	struct item *it;
	size_t n;
};

static inline bool is_cnp(const struct item *i)
{
	return i->p.op && (i->p.op->flags & DROCE_OPF_CNP);
}

static inline bool is_ack_frame(const struct item *i)
{
	return i->p.op && i->p.h.bth.opcode == DROCE_OP_RC_ACKNOWLEDGE;
}

static inline bool is_pos_ack(const struct item *i)
{
	return is_ack_frame(i) && (i->p.h.ext.aeth.syndrome & DROCE_AETH_TYPE_MASK) == DROCE_AETH_ACK;
}

struct key {
	bool cnp;
	bool req;
	uint32_t dqpn;
	uint8_t ip[16];
};

void droce_rp_key_of(const struct item *i, struct key *k);
/** @p i belongs to stream @p k and is compared (not coalesced away, lost or late). */
bool droce_rp_in_stream(const struct item *i, const struct key *k);

struct sbuf {
	char b[1024];
	size_t n;
};

/** Differences of @p g from @p e, appended to @p d; @return how many fields differ. */
unsigned droce_rp_diff(const struct item *e, const struct item *g, unsigned checks, struct sbuf *d);
void droce_rp_print_item(FILE *out, const char *tag, const char *who, const struct item *i);

/** a before b in 24-bit PSN space (IBTA 9.7.1) */
static inline bool droce_rp_psn_before(uint32_t a, uint32_t b)
{
	return droce_psn_diff(b, a) > 0;
}

/**
 * "compare by-psn" for one stream (compare_psn.c): what the protocol
 * defines of a conversation on a lossy link, not the order or number of
 * its retransmissions. @return the number of differences.
 */
unsigned droce_rp_compare_psn(const struct droce_rp_scenario *s, const struct list *e,
			      const struct list *g, const struct key *k, FILE *out,
			      uint64_t *sent_at, size_t nsent_at);

#endif
