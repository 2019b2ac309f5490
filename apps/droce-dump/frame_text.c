/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-dump's default output, one line per frame in the spirit of tshark's
 * summary: number, time since the first frame, addresses, length on the
 * wire, then the opcode, QPN, PSN, set flags and extension header fields.
 * A CM MAD to QP1 follows (MAD header, attribute, transaction ID, the
 * message's key fields). Problems come last in brackets: [ICRC bad],
 * [malformed REASON: why]; a MAD the CM codec refuses: [MAD RESULT: why].
 */
#include "frame.h"

#include <inttypes.h>

#include "aeth_desc.h"
#include "wire/opcode.h"

static void put_time(FILE *out, int64_t ns)
{
	char buf[32];
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%06" PRIu64, ns < 0 ? "-" : "",
		 a / 1000000000u, (a % 1000000000u) / 1000u);
	fprintf(out, " %11s", buf);
}

static void put_flags(FILE *out, const struct droce_pkt *p)
{
	const struct droce_bth_fields *b = &p->h.bth;

	if (b->se)
		fputs(" SE", out);
	if (b->migreq)
		fputs(" MigReq", out);
	if (b->ack_req)
		fputs(" AckReq", out);
	if (b->fecn)
		fputs(" FECN", out);
	if (b->becn)
		fputs(" BECN", out);
	if (p->h.net.ecn == 3) /* A17.9.1: Congestion Experienced */
		fputs(" ECN=CE", out);
	if (b->pad)
		fprintf(out, " pad=%u", b->pad);
	if (b->pkey != 0xFFFFu) /* show only a non-default partition */
		fprintf(out, " pkey=0x%04x", b->pkey);
}

static void put_ext(FILE *out, const struct droce_pkt *p)
{
	const struct droce_ext_fields *e = &p->h.ext;
	uint16_t hdrs = p->op->hdrs;
	char aeth[64];

	if (hdrs & DROCE_HDR_DETH)
		fprintf(out, " DETH qkey=0x%08" PRIx32 " sqpn=0x%06" PRIx32, e->deth.qkey,
			e->deth.sqpn);
	if (hdrs & DROCE_HDR_RETH)
		fprintf(out, " RETH va=0x%016" PRIx64 " rkey=0x%08" PRIx32 " dma_len=%" PRIu32,
			e->reth.va, e->reth.rkey, e->reth.dma_len);
	if (hdrs & DROCE_HDR_ATOMIC)
		fprintf(out,
			" AtomicETH va=0x%016" PRIx64 " rkey=0x%08" PRIx32
			" swap_add=0x%016" PRIx64 " compare=0x%016" PRIx64,
			e->atomic.va, e->atomic.rkey, e->atomic.swap_add, e->atomic.compare);
	if (hdrs & DROCE_HDR_AETH)
		fprintf(out, " AETH %s MSN=%" PRIu32,
			droce_dump_aeth_describe(e->aeth.syndrome, aeth, sizeof(aeth)),
			e->aeth.msn);
	if (hdrs & DROCE_HDR_AACK)
		fprintf(out, " AtomicAckETH orig=0x%016" PRIx64, e->atomic_ack);
	if (hdrs & DROCE_HDR_IMM)
		fprintf(out, " ImmDt=0x%08" PRIx32, e->imm);
	if (hdrs & DROCE_HDR_IETH)
		fprintf(out, " IETH rkey=0x%08" PRIx32, e->ieth_rkey);
}

/* The CM MAD of a UD SEND to QP1: header, then the message's key fields. */
static void put_mad(FILE *out, const struct droce_dump_mad *d)
{
	const struct droce_mad_hdr *h = &d->msg.hdr;
	struct droce_dump_mad_field fl[DROCE_DUMP_MAD_FIELDS_MAX];
	const char *name = droce_cm_attr_name(h->attr_id);

	if (!d->has_hdr) {
		fprintf(out, " MAD [malformed %s: %s]", droce_mad_result_name(d->result),
			droce_mad_result_str(d->result));
		return;
	}
	fprintf(out, " MAD v%u class=0x%02x cv=%u method=0x%02x", h->base_version, h->mgmt_class,
		h->class_version, h->method);
	if (h->mgmt_class == DROCE_MAD_CLASS_CM && name)
		fprintf(out, " %s", name);
	else
		fprintf(out, " attr=0x%04x", h->attr_id);
	fprintf(out, " tid=0x%016" PRIx64, h->tid);
	if (d->result != DROCE_MAD_OK) {
		fprintf(out, " [MAD %s: %s]", droce_mad_result_name(d->result),
			droce_mad_result_str(d->result));
		return;
	}
	size_t n = droce_dump_mad_fields(&d->msg, fl);
	for (size_t i = 0; i < n; i++)
		fprintf(out, fl[i].hex ? " %s=0x%" PRIx64 : " %s=%" PRIu64, fl[i].key, fl[i].v);
	if (h->attr_id == DROCE_CM_ATTR_REJ)
		fprintf(out, " (%s)", droce_cm_rej_reason_str(d->msg.u.rej.reason));
}

void droce_dump_print_text(FILE *out, const struct droce_dump_frame *f)
{
	const struct droce_pkt *p = &f->pkt;
	char src[DROCE_DUMP_ADDR_LEN], dst[DROCE_DUMP_ADDR_LEN];

	fprintf(out, "%5" PRIu64, f->number);
	put_time(out, f->rel_ns);
	if (f->has_ip)
		fprintf(out, "  %s -> %s", droce_dump_addr(f, true, src),
			droce_dump_addr(f, false, dst));
	fprintf(out, "  %" PRIu32 "  ", f->wire_len);
	if (!f->roce) {
		fputs("not RoCE\n", out);
		return;
	}
	fputs(f->pkt.h.net.rocev1 ? "RoCEv1 " : "", out);
	if (!f->has_bth)
		fputs("RoCE", out); /* rejected before its BTH: no opcode to name */
	if (f->has_bth) {
		fprintf(out, "%s QP=0x%06" PRIx32 " PSN=%" PRIu32,
			droce_opcode_name(p->h.bth.opcode), p->h.bth.dqpn, p->h.bth.psn);
		if (!p->op)
			fprintf(out, " opcode=0x%02x", p->h.bth.opcode);
		put_flags(out, p);
	}
	if (f->has_ext)
		put_ext(out, p);
	if (f->has_payload && (p->op->flags & DROCE_OPF_PAYLOAD))
		fprintf(out, " payload=%" PRIu32, p->h.payload_len);
	if (f->mad.present)
		put_mad(out, &f->mad);
	if (!f->icrc_ok)
		fputs(" [ICRC bad]", out);
	if (f->result != DROCE_PARSE_OK && f->result != DROCE_PARSE_BAD_ICRC)
		fprintf(out, " [malformed %s: %s]", droce_parse_result_name(f->result),
			droce_parse_result_str(f->result));
	fputc('\n', out);
}
