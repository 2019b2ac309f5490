/* SPDX-License-Identifier: BSD-3-Clause */
/* Expected packet sequences (see check.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "wire/bytes.h"

uint8_t req_opcode(enum droce_wr_opcode op, unsigned i, unsigned n)
{
	bool first = i == 0, last = i + 1 == n;

	switch (op) {
	case DROCE_WR_SEND:
		return n == 1 ? DROCE_OP_RC_SEND_ONLY : first ? DROCE_OP_RC_SEND_FIRST
			: last ? DROCE_OP_RC_SEND_LAST : DROCE_OP_RC_SEND_MIDDLE;
	case DROCE_WR_SEND_WITH_IMM:
		return n == 1 ? DROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE : first ? DROCE_OP_RC_SEND_FIRST
			: last ? DROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE : DROCE_OP_RC_SEND_MIDDLE;
	case DROCE_WR_RDMA_WRITE:
		return n == 1 ? DROCE_OP_RC_RDMA_WRITE_ONLY : first ? DROCE_OP_RC_RDMA_WRITE_FIRST
			: last ? DROCE_OP_RC_RDMA_WRITE_LAST : DROCE_OP_RC_RDMA_WRITE_MIDDLE;
	case DROCE_WR_RDMA_WRITE_WITH_IMM:
		return n == 1 ? DROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
			: first ? DROCE_OP_RC_RDMA_WRITE_FIRST
			: last ? DROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE
			: DROCE_OP_RC_RDMA_WRITE_MIDDLE;
	case DROCE_WR_RDMA_READ:
		return DROCE_OP_RC_RDMA_READ_REQUEST;
	case DROCE_WR_ATOMIC_CMP_AND_SWP:
		return DROCE_OP_RC_COMPARE_SWAP;
	case DROCE_WR_ATOMIC_FETCH_AND_ADD:
		return DROCE_OP_RC_FETCH_ADD;
	}
	return 0xFF;
}

uint8_t read_resp_opcode(unsigned i, unsigned n)
{
	return n == 1 ? DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY
		: i == 0 ? DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST
		: i + 1 == n ? DROCE_OP_RC_RDMA_READ_RESPONSE_LAST
		: DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
}

unsigned rec_dir(const struct pair *p, unsigned from, int dir, unsigned *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned i = from; i < p->nrec && n < max; i++)
		if (p->rec[i].dir == (unsigned)dir)
			out[n++] = i;
	return n;
}

#define REC_FAIL(p, i, ...)                                                              \
	do {                                                                             \
		fprintf(stderr, "packet #%u: ", (i));                                    \
		fprintf(stderr, __VA_ARGS__);                                            \
		fprintf(stderr, "\n");                                                   \
		rec_dump((p), (i) > 8 ? (i) - 8 : 0);                                    \
		fail();                                                                  \
	} while (0)

unsigned expect_msg(const struct pair *p, const unsigned *idx, unsigned avail, enum droce_wr_opcode op,
		    uint32_t psn, uint32_t len, unsigned mtu, uint64_t va, uint32_t rkey,
		    uint32_t imm, uint32_t dqpn)
{
	unsigned n = npkts(len, mtu);
	bool write = op == DROCE_WR_RDMA_WRITE || op == DROCE_WR_RDMA_WRITE_WITH_IMM;
	bool with_imm = op == DROCE_WR_RDMA_WRITE_WITH_IMM || op == DROCE_WR_SEND_WITH_IMM;

	for (unsigned i = 0; i < n; i++) {
		unsigned k;
		const struct pkt_rec *r;
		uint32_t plen = i + 1 < n ? mtu : len - (n - 1) * mtu;
		bool last = i + 1 == n;

		if (i >= avail) {
			rec_dump(p, 0);
			fail_msg("packet %u of %u of the message is missing", i, n);
		}
		k = idx[i];
		r = &p->rec[k];
		if (r->pr != DROCE_PARSE_OK)
			REC_FAIL(p, k, "does not parse: %s", droce_parse_result_name(r->pr));
		if (r->ip_version != p->ip_version)
			REC_FAIL(p, k, "IPv%u frame on an IPv%u pair", r->ip_version, p->ip_version);
		if (r->opcode != req_opcode(op, i, n))
			REC_FAIL(p, k, "opcode %s, want %s (packet %u of %u)",
				 droce_opcode_name(r->opcode),
				 droce_opcode_name(req_opcode(op, i, n)), i, n);
		if (r->psn != PSN(psn + i))
			REC_FAIL(p, k, "psn %06x, want %06x", r->psn, PSN(psn + i));
		if (r->dqpn != dqpn)
			REC_FAIL(p, k, "dqpn %06x, want %06x", r->dqpn, dqpn);
		if (r->payload_len != plen)
			REC_FAIL(p, k, "payload %u, want %u", r->payload_len, plen);
		/* 9.2.4: the last packet of a message must ask for an ACK (and droce's every N) */
		if (last && !r->ackreq)
			REC_FAIL(p, k, "last packet without AckReq");
		if (write && i == 0 && (r->va != va || r->rkey != rkey || r->dma_len != len))
			REC_FAIL(p, k, "RETH va %llx rkey %x len %u, want %llx %x %u",
				 (unsigned long long)r->va, r->rkey, r->dma_len,
				 (unsigned long long)va, rkey, len);
		/*
		 * imm_data is posted as verbs has it, already in network order:
		 * its bytes in memory are the bytes on the wire.
		 */
		uint8_t ib[4];
		memcpy(ib, &imm, 4);
		if (with_imm && last && r->imm != droce_get_be32(ib))
			REC_FAIL(p, k, "imm %08x on the wire, want %08x", r->imm, droce_get_be32(ib));
	}
	return n;
}

unsigned expect_read_resp(const struct pair *p, const unsigned *idx, unsigned avail, uint32_t psn, uint32_t len,
			  unsigned mtu, uint32_t msn, uint32_t dqpn)
{
	unsigned n = npkts(len, mtu);

	for (unsigned i = 0; i < n; i++) {
		unsigned k;
		const struct pkt_rec *r;
		uint32_t plen = i + 1 < n ? mtu : len - (n - 1) * mtu;
		uint8_t op = read_resp_opcode(i, n);

		if (i >= avail) {
			rec_dump(p, 0);
			fail_msg("READ response %u of %u is missing", i, n);
		}
		k = idx[i];
		r = &p->rec[k];
		if (r->pr != DROCE_PARSE_OK)
			REC_FAIL(p, k, "does not parse: %s", droce_parse_result_name(r->pr));
		if (r->ip_version != p->ip_version)
			REC_FAIL(p, k, "IPv%u frame on an IPv%u pair", r->ip_version, p->ip_version);
		if (r->opcode != op)
			REC_FAIL(p, k, "opcode %s, want %s", droce_opcode_name(r->opcode),
				 droce_opcode_name(op));
		if (r->psn != PSN(psn + i))
			REC_FAIL(p, k, "psn %06x, want %06x", r->psn, PSN(psn + i));
		if (r->dqpn != dqpn)
			REC_FAIL(p, k, "dqpn %06x, want %06x", r->dqpn, dqpn);
		if (r->payload_len != plen)
			REC_FAIL(p, k, "payload %u, want %u", r->payload_len, plen);
		if (op != DROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE && !syn_is_ack(r->syndrome))
			REC_FAIL(p, k, "AETH syndrome %02x is not an ACK", r->syndrome);
		if ((op == DROCE_OP_RC_RDMA_READ_RESPONSE_LAST ||
		     op == DROCE_OP_RC_RDMA_READ_RESPONSE_ONLY) && r->msn != PSN(msn))
			REC_FAIL(p, k, "MSN %u, want %u", r->msn, msn);
		if (op == DROCE_OP_RC_RDMA_READ_RESPONSE_FIRST && r->msn != PSN(msn) &&
		    r->msn != PSN(msn - 1))
			REC_FAIL(p, k, "MSN %u, want %u or %u", r->msn, PSN(msn - 1), msn);
	}
	return n;
}

void expect_acks(const struct pair *p, const unsigned *idx, unsigned n, uint32_t first_psn,
		 uint32_t last_psn, uint32_t msn)
{
	uint32_t span = psn_diff(last_psn, first_psn), prev = 0;

	if (n == 0) {
		rec_dump(p, 0);
		fail_msg("no ACK for PSNs %06x..%06x", first_psn, last_psn);
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned k = idx[i];
		const struct pkt_rec *r = &p->rec[k];
		uint32_t d = psn_diff(r->psn, first_psn);

		if (r->opcode != DROCE_OP_RC_ACKNOWLEDGE)
			REC_FAIL(p, k, "%s where an ACK was expected", droce_opcode_name(r->opcode));
		if (!syn_is_ack(r->syndrome))
			REC_FAIL(p, k, "syndrome %02x is not an ACK", r->syndrome);
		if (d > span || d < prev)
			REC_FAIL(p, k, "ACK psn %06x outside %06x..%06x or going back", r->psn,
				 first_psn, last_psn);
		prev = d;
	}
	if (p->rec[idx[n - 1]].psn != last_psn || p->rec[idx[n - 1]].msn != PSN(msn))
		REC_FAIL(p, idx[n - 1], "last ACK psn %06x msn %u, want %06x msn %u",
			 p->rec[idx[n - 1]].psn, p->rec[idx[n - 1]].msn, last_psn, msn);
}
