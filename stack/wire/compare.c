/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/compare.h"

#include <string.h>

#include "wire/opcode.h"

/* PFX is defined before each helper: the struct the names are relative to. */
#define DIFF(field)                                   \
	do {                                          \
		if (a->field != b->field)             \
			return PFX #field;            \
	} while (0)

#define DIFF_BYTES(field, n)                          \
	do {                                          \
		if (memcmp(a->field, b->field, (n)))  \
			return PFX #field;            \
	} while (0)

#define PFX "net."
static const char *diff_net(const struct droce_net_fields *a,
			    const struct droce_net_fields *b)
{
	DIFF(ip_version);
	DIFF(rocev1);
	DIFF(has_vlan);
	DIFF_BYTES(dst_mac, 6);
	DIFF_BYTES(src_mac, 6);
	if (a->has_vlan)
		DIFF(vlan_tci);
	size_t alen = a->ip_version == 4 ? 4u : 16u;
	DIFF_BYTES(src_ip, alen);
	DIFF_BYTES(dst_ip, alen);
	DIFF(dscp);
	DIFF(ecn);
	DIFF(ttl);
	if (a->ip_version == 4)
		DIFF(ip_id);
	else
		DIFF(flow_label);
	if (!a->rocev1) {
		DIFF(sport);
		DIFF(dport);
	}
	return NULL;
}

#undef PFX
#define PFX "bth."
static const char *diff_bth(const struct droce_bth_fields *a,
			    const struct droce_bth_fields *b)
{
	DIFF(opcode);
	DIFF(se);
	DIFF(migreq);
	DIFF(pad);
	DIFF(tver);
	DIFF(pkey);
	DIFF(fecn);
	DIFF(becn);
	DIFF(dqpn);
	DIFF(ack_req);
	DIFF(psn);
	return NULL;
}

#undef PFX
#define PFX "ext."
static const char *diff_ext(unsigned hdrs, const struct droce_ext_fields *a,
			    const struct droce_ext_fields *b)
{
	if (hdrs & DROCE_HDR_DETH) {
		DIFF(deth.qkey);
		DIFF(deth.sqpn);
	}
	if (hdrs & DROCE_HDR_RETH) {
		DIFF(reth.va);
		DIFF(reth.rkey);
		DIFF(reth.dma_len);
	}
	if (hdrs & DROCE_HDR_ATOMIC) {
		DIFF(atomic.va);
		DIFF(atomic.rkey);
		DIFF(atomic.swap_add);
		DIFF(atomic.compare);
	}
	if (hdrs & DROCE_HDR_AETH) {
		DIFF(aeth.syndrome);
		DIFF(aeth.msn);
	}
	if (hdrs & DROCE_HDR_AACK)
		DIFF(atomic_ack);
	if (hdrs & DROCE_HDR_IMM)
		DIFF(imm);
	if (hdrs & DROCE_HDR_IETH)
		DIFF(ieth_rkey);
	return NULL;
}

#undef PFX

const char *droce_hdrs_diff(const struct droce_hdrs *a, const struct droce_hdrs *b)
{
	const char *d;
	const struct droce_opcode_info *oi;

	if ((d = diff_net(&a->net, &b->net)))
		return d;
	if ((d = diff_bth(&a->bth, &b->bth)))
		return d;
	oi = droce_opcode_info(a->bth.opcode);
	if (oi && (d = diff_ext(oi->hdrs, &a->ext, &b->ext)))
		return d;
	if (a->payload_len != b->payload_len)
		return "payload_len";
	return NULL;
}
