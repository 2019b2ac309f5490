/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-dump --json: one object per frame, keys in the order docs/tools.md
 * lists them. Numbers are the wire values as JSON
 * integers, flags booleans, addresses strings. A non-RoCE frame carries only
 * "frame" and "roce"; a malformed RoCE frame carries the fields decoded
 * before the failure, then "icrc" and "error".
 */
#include "frame.h"

#include "json.h"
#include "wire/opcode.h"

static void put_ext(struct droce_json *j, const struct droce_pkt *p)
{
	const struct droce_ext_fields *e = &p->h.ext;
	uint16_t hdrs = p->op->hdrs;

	if (hdrs & DROCE_HDR_RETH) {
		droce_json_obj_begin(j, "reth");
		droce_json_uint(j, "va", e->reth.va);
		droce_json_uint(j, "rkey", e->reth.rkey);
		droce_json_uint(j, "dma_len", e->reth.dma_len);
		droce_json_obj_end(j);
	}
	if (hdrs & DROCE_HDR_AETH) {
		droce_json_obj_begin(j, "aeth");
		droce_json_uint(j, "syndrome", e->aeth.syndrome);
		droce_json_uint(j, "msn", e->aeth.msn);
		droce_json_obj_end(j);
	}
	if (hdrs & DROCE_HDR_IMM)
		droce_json_uint(j, "imm", e->imm);
	if (hdrs & DROCE_HDR_IETH)
		droce_json_uint(j, "ieth", e->ieth_rkey);
	if (hdrs & DROCE_HDR_DETH) {
		droce_json_obj_begin(j, "deth");
		droce_json_uint(j, "qkey", e->deth.qkey);
		droce_json_uint(j, "sqpn", e->deth.sqpn);
		droce_json_obj_end(j);
	}
	if (hdrs & DROCE_HDR_ATOMIC) {
		droce_json_obj_begin(j, "atomic");
		droce_json_uint(j, "va", e->atomic.va);
		droce_json_uint(j, "rkey", e->atomic.rkey);
		droce_json_uint(j, "swap_add", e->atomic.swap_add);
		droce_json_uint(j, "compare", e->atomic.compare);
		droce_json_obj_end(j);
	}
	if (hdrs & DROCE_HDR_AACK)
		droce_json_uint(j, "atomic_ack", e->atomic_ack);
}

/* "mad": the CM MAD of a UD SEND to QP1 (docs/tools.md lists the keys). */
static void put_mad(struct droce_json *j, const struct droce_dump_mad *d)
{
	const struct droce_mad_hdr *h = &d->msg.hdr;
	struct droce_dump_mad_field fl[DROCE_DUMP_MAD_FIELDS_MAX];
	const char *name = droce_cm_attr_name(h->attr_id);

	droce_json_obj_begin(j, "mad");
	if (d->has_hdr) {
		droce_json_uint(j, "base_version", h->base_version);
		droce_json_uint(j, "mgmt_class", h->mgmt_class);
		droce_json_uint(j, "class_version", h->class_version);
		droce_json_uint(j, "method", h->method);
		droce_json_uint(j, "status", h->status);
		droce_json_uint(j, "tid", h->tid);
		droce_json_uint(j, "attr_id", h->attr_id);
		if (h->mgmt_class == DROCE_MAD_CLASS_CM && name)
			droce_json_str(j, "attr", name);
	}
	if (d->result == DROCE_MAD_OK) {
		size_t n = droce_dump_mad_fields(&d->msg, fl);
		for (size_t i = 0; i < n; i++)
			droce_json_uint(j, fl[i].key, fl[i].v);
		if (h->attr_id == DROCE_CM_ATTR_REJ)
			droce_json_str(j, "reason_str", droce_cm_rej_reason_str(d->msg.u.rej.reason));
	} else {
		droce_json_str(j, "error", droce_mad_result_name(d->result));
	}
	droce_json_obj_end(j);
}

void droce_dump_print_json(FILE *out, const struct droce_dump_frame *f)
{
	const struct droce_pkt *p = &f->pkt;
	const struct droce_net_fields *n = &p->h.net;
	const struct droce_bth_fields *b = &p->h.bth;
	char addr[DROCE_DUMP_ADDR_LEN];
	struct droce_json j;

	droce_json_begin(&j, out);
	droce_json_uint(&j, "frame", f->number);
	droce_json_bool(&j, "roce", f->roce);
	if (!f->roce) {
		droce_json_end(&j);
		return;
	}
	if (f->has_ip) {
		droce_json_uint(&j, "ip_version", n->ip_version);
		droce_json_str(&j, "src", droce_dump_addr(f, true, addr));
		droce_json_str(&j, "dst", droce_dump_addr(f, false, addr));
		droce_json_uint(&j, "dscp", n->dscp);
		droce_json_uint(&j, "ecn", n->ecn);
	}
	if (f->has_udp)
		droce_json_uint(&j, "sport", n->sport);
	if (f->has_bth) {
		droce_json_uint(&j, "opcode", b->opcode);
		droce_json_str(&j, "op", droce_opcode_name(b->opcode));
		droce_json_bool(&j, "se", b->se);
		droce_json_bool(&j, "migreq", b->migreq);
		droce_json_uint(&j, "pad", b->pad);
		droce_json_uint(&j, "pkey", b->pkey);
		droce_json_bool(&j, "fecn", b->fecn);
		droce_json_bool(&j, "becn", b->becn);
		droce_json_uint(&j, "dqpn", b->dqpn);
		droce_json_bool(&j, "ack_req", b->ack_req);
		droce_json_uint(&j, "psn", b->psn);
	}
	if (f->has_ext)
		put_ext(&j, p);
	/* payload_len where the opcode has a payload (9.2.1 table 38), like
	 * the extension headers. */
	if (f->has_payload && (p->op->flags & DROCE_OPF_PAYLOAD))
		droce_json_uint(&j, "payload_len", p->h.payload_len);
	if (f->mad.present)
		put_mad(&j, &f->mad);
	droce_json_str(&j, "icrc", f->icrc_ok ? "ok" : "bad");
	if (f->result != DROCE_PARSE_OK)
		droce_json_str(&j, "error", droce_parse_result_name(f->result));
	droce_json_end(&j);
}
