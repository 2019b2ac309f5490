/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The opcode table: the single source of truth for every BTH opcode droce
 * knows (IBTA vol 1 9.2.1 table 38, A17.9.3 for the CNP). One X-macro line
 * per opcode gives its name, the extension headers it carries (in wire order,
 * IBTA 9.3: DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH) and its
 * flags. The enum, the name strings, header lengths and offsets, the parser,
 * the builder and droce-dump are all generated from it.
 */
#ifndef DROCE_WIRE_OPCODE_H
#define DROCE_WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/* Extension headers, one bit each, listed in wire order. */
#define DROCE_HDR_DETH   (1u << 0)
#define DROCE_HDR_RETH   (1u << 1)
#define DROCE_HDR_ATOMIC (1u << 2)
#define DROCE_HDR_AETH   (1u << 3)
#define DROCE_HDR_AACK   (1u << 4)
#define DROCE_HDR_IMM    (1u << 5)
#define DROCE_HDR_IETH   (1u << 6)
#define DROCE_HDR_CNP    (1u << 7) /* the CNP's 16 reserved bytes */

/* Opcode flags. ONLY is FIRST|LAST. */
#define DROCE_OPF_FIRST   (1u << 0)
#define DROCE_OPF_MIDDLE  (1u << 1)
#define DROCE_OPF_LAST    (1u << 2)
#define DROCE_OPF_ONLY    (DROCE_OPF_FIRST | DROCE_OPF_LAST)
#define DROCE_OPF_PAYLOAD (1u << 3)  /* carries a (possibly empty) payload */
#define DROCE_OPF_REQ     (1u << 4)  /* sent by a requester */
#define DROCE_OPF_RESP    (1u << 5)  /* sent by a responder */
#define DROCE_OPF_IMM     (1u << 6)  /* carries immediate data */
#define DROCE_OPF_RWQE    (1u << 7)  /* consumes a receive WQE at the responder */
#define DROCE_OPF_SEND    (1u << 8)
#define DROCE_OPF_WRITE   (1u << 9)
#define DROCE_OPF_READ    (1u << 10)
#define DROCE_OPF_ATOMIC  (1u << 11)
#define DROCE_OPF_ACK     (1u << 12) /* ACKNOWLEDGE (AETH only) */
#define DROCE_OPF_INV     (1u << 13) /* carries IETH (send with invalidate) */
#define DROCE_OPF_CNP     (1u << 14)

#define F_(x) DROCE_OPF_##x
#define H_(x) DROCE_HDR_##x
/*      name                               code  headers            flags */
#define DROCE_OPCODE_LIST(X) \
	X(RC_SEND_FIRST,                     0x00, 0,                 F_(REQ)|F_(PAYLOAD)|F_(FIRST)|F_(SEND)|F_(RWQE)) \
	X(RC_SEND_MIDDLE,                    0x01, 0,                 F_(REQ)|F_(PAYLOAD)|F_(MIDDLE)|F_(SEND)|F_(RWQE)) \
	X(RC_SEND_LAST,                      0x02, 0,                 F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(SEND)|F_(RWQE)) \
	X(RC_SEND_LAST_WITH_IMMEDIATE,       0x03, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(SEND)|F_(RWQE)|F_(IMM)) \
	X(RC_SEND_ONLY,                      0x04, 0,                 F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)) \
	X(RC_SEND_ONLY_WITH_IMMEDIATE,       0x05, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)|F_(IMM)) \
	X(RC_RDMA_WRITE_FIRST,               0x06, H_(RETH),          F_(REQ)|F_(PAYLOAD)|F_(FIRST)|F_(WRITE)) \
	X(RC_RDMA_WRITE_MIDDLE,              0x07, 0,                 F_(REQ)|F_(PAYLOAD)|F_(MIDDLE)|F_(WRITE)) \
	X(RC_RDMA_WRITE_LAST,                0x08, 0,                 F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(WRITE)) \
	X(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x09, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(WRITE)|F_(RWQE)|F_(IMM)) \
	X(RC_RDMA_WRITE_ONLY,                0x0A, H_(RETH),          F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(WRITE)) \
	X(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x0B, H_(RETH)|H_(IMM),  F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(WRITE)|F_(RWQE)|F_(IMM)) \
	X(RC_RDMA_READ_REQUEST,              0x0C, H_(RETH),          F_(REQ)|F_(ONLY)|F_(READ)) \
	X(RC_RDMA_READ_RESPONSE_FIRST,       0x0D, H_(AETH),          F_(RESP)|F_(PAYLOAD)|F_(FIRST)|F_(READ)) \
	X(RC_RDMA_READ_RESPONSE_MIDDLE,      0x0E, 0,                 F_(RESP)|F_(PAYLOAD)|F_(MIDDLE)|F_(READ)) \
	X(RC_RDMA_READ_RESPONSE_LAST,        0x0F, H_(AETH),          F_(RESP)|F_(PAYLOAD)|F_(LAST)|F_(READ)) \
	X(RC_RDMA_READ_RESPONSE_ONLY,        0x10, H_(AETH),          F_(RESP)|F_(PAYLOAD)|F_(ONLY)|F_(READ)) \
	X(RC_ACKNOWLEDGE,                    0x11, H_(AETH),          F_(RESP)|F_(ONLY)|F_(ACK)) \
	X(RC_ATOMIC_ACKNOWLEDGE,             0x12, H_(AETH)|H_(AACK), F_(RESP)|F_(ONLY)|F_(ATOMIC)) \
	X(RC_COMPARE_SWAP,                   0x13, H_(ATOMIC),        F_(REQ)|F_(ONLY)|F_(ATOMIC)) \
	X(RC_FETCH_ADD,                      0x14, H_(ATOMIC),        F_(REQ)|F_(ONLY)|F_(ATOMIC)) \
	X(RC_SEND_LAST_WITH_INVALIDATE,      0x16, H_(IETH),          F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(SEND)|F_(RWQE)|F_(INV)) \
	X(RC_SEND_ONLY_WITH_INVALIDATE,      0x17, H_(IETH),          F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)|F_(INV)) \
	X(UC_SEND_FIRST,                     0x20, 0,                 F_(REQ)|F_(PAYLOAD)|F_(FIRST)|F_(SEND)|F_(RWQE)) \
	X(UC_SEND_MIDDLE,                    0x21, 0,                 F_(REQ)|F_(PAYLOAD)|F_(MIDDLE)|F_(SEND)|F_(RWQE)) \
	X(UC_SEND_LAST,                      0x22, 0,                 F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(SEND)|F_(RWQE)) \
	X(UC_SEND_LAST_WITH_IMMEDIATE,       0x23, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(SEND)|F_(RWQE)|F_(IMM)) \
	X(UC_SEND_ONLY,                      0x24, 0,                 F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)) \
	X(UC_SEND_ONLY_WITH_IMMEDIATE,       0x25, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)|F_(IMM)) \
	X(UC_RDMA_WRITE_FIRST,               0x26, H_(RETH),          F_(REQ)|F_(PAYLOAD)|F_(FIRST)|F_(WRITE)) \
	X(UC_RDMA_WRITE_MIDDLE,              0x27, 0,                 F_(REQ)|F_(PAYLOAD)|F_(MIDDLE)|F_(WRITE)) \
	X(UC_RDMA_WRITE_LAST,                0x28, 0,                 F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(WRITE)) \
	X(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x29, H_(IMM),           F_(REQ)|F_(PAYLOAD)|F_(LAST)|F_(WRITE)|F_(RWQE)|F_(IMM)) \
	X(UC_RDMA_WRITE_ONLY,                0x2A, H_(RETH),          F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(WRITE)) \
	X(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x2B, H_(RETH)|H_(IMM),  F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(WRITE)|F_(RWQE)|F_(IMM)) \
	X(UD_SEND_ONLY,                      0x64, H_(DETH),          F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)) \
	X(UD_SEND_ONLY_WITH_IMMEDIATE,       0x65, H_(DETH)|H_(IMM),  F_(REQ)|F_(PAYLOAD)|F_(ONLY)|F_(SEND)|F_(RWQE)|F_(IMM)) \
	X(CNP,                               0x81, H_(CNP),           F_(CNP)|F_(ONLY))

enum droce_opcode {
#define X(name, code, hdrs, flags) DROCE_OP_##name = code,
	DROCE_OPCODE_LIST(X)
#undef X
};

/* Byte lengths of each extension header, wire order. */
#define DROCE_BTH_LEN       12u
#define DROCE_DETH_LEN      8u
#define DROCE_RETH_LEN      16u
#define DROCE_ATOMIC_LEN    28u
#define DROCE_AETH_LEN      4u
#define DROCE_AACK_LEN      8u
#define DROCE_IMM_LEN       4u
#define DROCE_IETH_LEN      4u
#define DROCE_CNP_LEN       16u

/* Offsets from the start of the BTH; an absent header's offset is where it would be. */
#define DROCE_HAS_(h, x) (((h) & DROCE_HDR_##x) ? DROCE_##x##_LEN : 0u)
#define DROCE_OFF_DETH(h)   DROCE_BTH_LEN
#define DROCE_OFF_RETH(h)   (DROCE_OFF_DETH(h) + DROCE_HAS_(h, DETH))
#define DROCE_OFF_ATOMIC(h) (DROCE_OFF_RETH(h) + DROCE_HAS_(h, RETH))
#define DROCE_OFF_AETH(h)   (DROCE_OFF_ATOMIC(h) + DROCE_HAS_(h, ATOMIC))
#define DROCE_OFF_AACK(h)   (DROCE_OFF_AETH(h) + DROCE_HAS_(h, AETH))
#define DROCE_OFF_IMM(h)    (DROCE_OFF_AACK(h) + DROCE_HAS_(h, AACK))
#define DROCE_OFF_IETH(h)   (DROCE_OFF_IMM(h) + DROCE_HAS_(h, IMM))
#define DROCE_OFF_CNP(h)    (DROCE_OFF_IETH(h) + DROCE_HAS_(h, IETH))
#define DROCE_HDRS_LEN(h)   (DROCE_OFF_CNP(h) + DROCE_HAS_(h, CNP))

/** What the table knows about one opcode. */
struct droce_opcode_info {
	const char *name;   /**< e.g. "RC_RDMA_WRITE_ONLY"; NULL for an unknown opcode */
	uint16_t hdrs;      /**< DROCE_HDR_* mask */
	uint16_t flags;     /**< DROCE_OPF_* mask */
	uint8_t hdr_len;    /**< BTH plus extension headers, bytes */
	uint8_t off_deth, off_reth, off_atomic, off_aeth, off_aack, off_imm, off_ieth;
};

/** Indexed by the BTH opcode byte; entries with name == NULL are unknown. */
extern const struct droce_opcode_info droce_opcode_table[256];

static inline const struct droce_opcode_info *droce_opcode_info(uint8_t opcode)
{
	const struct droce_opcode_info *oi = &droce_opcode_table[opcode];
	return oi->name ? oi : 0;
}

/** Name of an opcode, or "UNKNOWN". Never NULL. */
const char *droce_opcode_name(uint8_t opcode);

/** Transport service of an opcode (IBTA 9.2.1: bits 7:5). */
enum droce_service {
	DROCE_SVC_RC = 0,
	DROCE_SVC_UC = 1,
	DROCE_SVC_RD = 2,
	DROCE_SVC_UD = 3,
	DROCE_SVC_CNP = 4,
};

static inline enum droce_service droce_opcode_service(uint8_t opcode)
{
	return (enum droce_service)(opcode >> 5);
}

#endif
