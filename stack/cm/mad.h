/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IB CM MADs on bytes: the MAD common header (IBTA vol 1 13.4.2), the CM
 * messages REQ, MRA, REJ, REP, RTU, DREQ and DREP (IBTA vol 1 12.6) and
 * rdma_cm's private-data header for the IP port spaces (IBTA Annex A11,
 * "RDMA IP CM Service"). No DPDK: (const uint8_t *, size_t) in, a decoded
 * struct out, and the inverse. The packed *_wire structs document the layout
 * and give the offsets; the codec never casts a buffer to them (frames may be
 * unaligned), it reads each field with wire/bytes.h at offsetof().
 */
#ifndef DROCE_CM_MAD_H
#define DROCE_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DROCE_MAD_LEN 256u    /* every MAD is 256 bytes (13.4.1) */
#define DROCE_MAD_HDR_LEN 24u
#define DROCE_CM_DATA_LEN (DROCE_MAD_LEN - DROCE_MAD_HDR_LEN)

#define DROCE_MAD_BASE_VERSION 1u
#define DROCE_MAD_CLASS_CM 0x07u   /* Communication Management (13.4.4) */
#define DROCE_MAD_CM_CLASS_VERSION 2u
#define DROCE_MAD_METHOD_GET 0x01u
#define DROCE_MAD_METHOD_SET 0x02u
#define DROCE_MAD_METHOD_SEND 0x03u /* every CM message is a Send (12.6) */
#define DROCE_MAD_METHOD_GET_RESP 0x81u

/* QP1 is addressed with this Q_Key (the GSI's well-known Q_Key, IBTA ch. 13). */
#define DROCE_QP1_QKEY 0x80010000u
#define DROCE_QP1 1u

/* rdma_cm port spaces (Annex A11 service IDs 0x0000000001PPpppp). */
#define DROCE_RDMA_PS_TCP 0x0106u
#define DROCE_RDMA_PS_UDP 0x0111u
#define DROCE_RDMA_PS_IB  0x013Fu
#define DROCE_CM_SID_PREFIX 0x0000000001000000ull

/** Service ID of an rdma_cm listener on TCP-space @p port (A11). */
static inline uint64_t droce_cm_tcp_service_id(uint16_t port)
{
	return DROCE_CM_SID_PREFIX | (uint64_t)DROCE_RDMA_PS_TCP << 16 | port;
}

/** True when @p sid is in the TCP port space; *port is its port. */
static inline bool droce_cm_sid_tcp_port(uint64_t sid, uint16_t *port)
{
	if ((sid & ~0xFFFFull) != droce_cm_tcp_service_id(0))
		return false;
	*port = (uint16_t)sid;
	return true;
}

/* CM attribute IDs (12.6). One list: enum and names. */
#define DROCE_CM_ATTRS(X)          \
	X(CLASS_PORT_INFO, 0x0001) \
	X(REQ, 0x0010)             \
	X(MRA, 0x0011)             \
	X(REJ, 0x0012)             \
	X(REP, 0x0013)             \
	X(RTU, 0x0014)             \
	X(DREQ, 0x0015)            \
	X(DREP, 0x0016)            \
	X(SIDR_REQ, 0x0017)        \
	X(SIDR_REP, 0x0018)        \
	X(LAP, 0x0019)             \
	X(APR, 0x001A)

enum droce_cm_attr {
#define X(n, v) DROCE_CM_ATTR_##n = v,
	DROCE_CM_ATTRS(X)
#undef X
};

/** Name of a CM attribute ID ("REQ"), or NULL when unknown. */
const char *droce_cm_attr_name(uint16_t attr_id);

/* REJ reasons (12.6.7.2; the numbers of Linux's ib_cm_rej_reason). */
#define DROCE_CM_REJ_REASONS(X)                           \
	X(NO_QP, 1, "no QP available")                    \
	X(NO_EEC, 2, "no EE context available")           \
	X(NO_RESOURCES, 3, "no resources available")      \
	X(TIMEOUT, 4, "timeout")                          \
	X(UNSUPPORTED, 5, "unsupported request")          \
	X(INVALID_COMM_ID, 6, "invalid communication ID") \
	X(INVALID_COMM_INSTANCE, 7, "invalid communication instance") \
	X(INVALID_SERVICE_ID, 8, "invalid service ID")    \
	X(INVALID_TRANSPORT_TYPE, 9, "invalid transport service type") \
	X(STALE_CONN, 10, "stale connection")             \
	X(RDC_NOT_EXIST, 11, "RDC does not exist")        \
	X(INVALID_GID, 12, "invalid primary GID")         \
	X(INVALID_LID, 13, "invalid primary LID")         \
	X(INVALID_SL, 14, "invalid primary SL")           \
	X(INVALID_TRAFFIC_CLASS, 15, "invalid primary traffic class") \
	X(INVALID_HOP_LIMIT, 16, "invalid primary hop limit") \
	X(INVALID_PACKET_RATE, 17, "invalid primary packet rate") \
	X(INVALID_ALT_GID, 18, "invalid alternate GID")   \
	X(INVALID_ALT_LID, 19, "invalid alternate LID")   \
	X(INVALID_ALT_SL, 20, "invalid alternate SL")     \
	X(INVALID_ALT_TRAFFIC_CLASS, 21, "invalid alternate traffic class") \
	X(INVALID_ALT_HOP_LIMIT, 22, "invalid alternate hop limit") \
	X(INVALID_ALT_PACKET_RATE, 23, "invalid alternate packet rate") \
	X(PORT_CM_REDIRECT, 24, "port and CM redirection") \
	X(PORT_REDIRECT, 25, "port redirection")          \
	X(INVALID_MTU, 26, "invalid path MTU")            \
	X(INSUFFICIENT_RESP_RESOURCES, 27, "insufficient responder resources") \
	X(CONSUMER_DEFINED, 28, "consumer reject")        \
	X(INVALID_RNR_RETRY, 29, "invalid RNR NAK retry count") \
	X(DUPLICATE_LOCAL_COMM_ID, 30, "duplicate local communication ID") \
	X(INVALID_CLASS_VERSION, 31, "unsupported class version") \
	X(INVALID_FLOW_LABEL, 32, "invalid primary flow label") \
	X(INVALID_ALT_FLOW_LABEL, 33, "invalid alternate flow label")

enum droce_cm_rej_reason {
#define X(n, v, s) DROCE_CM_REJ_##n = v,
	DROCE_CM_REJ_REASONS(X)
#undef X
};

/** Text of a REJ reason, or "unknown reason". Never NULL. */
const char *droce_cm_rej_reason_str(uint16_t reason);

/* The "Message REJected" / "Message MRAed" codes (12.6.6, 12.6.7). */
enum droce_cm_msg_code { DROCE_CM_MSG_REQ = 0, DROCE_CM_MSG_REP = 1, DROCE_CM_MSG_OTHER = 2 };

/* Why a MAD was not accepted. Each is a counter in the CM (cm.h). */
#define DROCE_MAD_RESULTS(X)                                                 \
	X(OK, "ok")                                                          \
	X(TRUNCATED, "shorter than a 256-byte MAD")                          \
	X(TOO_LONG, "longer than a 256-byte MAD")                            \
	X(BAD_BASE_VERSION, "MAD base version is not 1")                     \
	X(NOT_CM, "management class is not CM (0x07)")                       \
	X(BAD_CLASS_VERSION, "CM class version is not 2")                    \
	X(BAD_METHOD, "method is not Send")                                  \
	X(BAD_STATUS, "status is not 0 on a Send")                           \
	X(UNKNOWN_ATTR, "unknown CM attribute ID")                           \
	X(UNSUPPORTED_ATTR, "CM attribute droce does not implement (SIDR, LAP, APR, ClassPortInfo)") \
	X(BAD_TRANSPORT, "REQ transport service type is reserved (3)")      \
	X(BAD_MTU, "REQ path MTU is not 256..4096 (1..5)")                   \
	X(BAD_MSG_CODE, "MRA/REJ message code is reserved (3)")             \
	X(BAD_REJ_INFO_LEN, "REJ info length beyond the 72-byte ARI")        \
	X(BAD_COMM_ID, "local communication ID 0")

enum droce_mad_result {
#define X(n, s) DROCE_MAD_##n,
	DROCE_MAD_RESULTS(X)
#undef X
	DROCE_MAD__COUNT
};

/** Short name of a result ("UNKNOWN_ATTR"). Never NULL. */
const char *droce_mad_result_name(enum droce_mad_result r);
/** One-line description of a result. Never NULL. */
const char *droce_mad_result_str(enum droce_mad_result r);

/* ---- wire layouts (big-endian, byte arrays: no alignment assumed) ---- */

/** MAD common header (13.4.2). */
struct droce_mad_hdr_wire {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;          /* R bit 7 | method 6:0 */
	uint8_t status[2];
	uint8_t class_specific[2];
	uint8_t tid[8];
	uint8_t attr_id[2];
	uint8_t rsvd[2];
	uint8_t attr_mod[4];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_mad_hdr_wire) == DROCE_MAD_HDR_LEN, "MAD header");

/** One path of a REQ (12.6.5, bytes 52-95 / 96-139). */
struct droce_cm_path_wire {
	uint8_t local_lid[2];
	uint8_t remote_lid[2];
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint8_t flow_rate[4];    /* flow label 31:12 | rsvd 11:6 | packet rate 5:0 */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl_subnet;       /* SL 7:4 | subnet local 3 | rsvd */
	uint8_t ack_timeout;     /* local ACK timeout 7:3 | rsvd */
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_path_wire) == 44, "REQ path");

/** REQ (12.6.5). */
struct droce_cm_req_wire {
	uint8_t local_comm_id[4];
	uint8_t rsvd0[4];
	uint8_t service_id[8];
	uint8_t local_ca_guid[8];
	uint8_t rsvd1[4];
	uint8_t local_qkey[4];
	uint8_t qpn_resp_res[4];   /* local QPN 31:8 | responder resources */
	uint8_t eecn_init_depth[4]; /* local EECN 31:8 | initiator depth */
	uint8_t reecn_rto[4];      /* remote EECN 31:8 | remote CM resp timeout 7:3 |
				      transport service type 2:1 | E2E flow ctl 0 */
	uint8_t psn_lto_retry[4];  /* starting PSN 31:8 | local CM resp timeout 7:3 |
				      retry count 2:0 */
	uint8_t pkey[2];
	uint8_t mtu_rdc_rnr;       /* path MTU 7:4 | RDC exists 3 | RNR retry 2:0 */
	uint8_t maxretry_srq_ext;  /* max CM retries 7:4 | SRQ 3 | ext transport 2:0 */
	struct droce_cm_path_wire primary;
	struct droce_cm_path_wire alternate;
	uint8_t private_data[92];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_req_wire) == DROCE_CM_DATA_LEN, "REQ");

/** MRA (12.6.6). */
struct droce_cm_mra_wire {
	uint8_t local_comm_id[4];
	uint8_t remote_comm_id[4];
	uint8_t msg_mraed;         /* 7:6 */
	uint8_t service_timeout;   /* 7:3 */
	uint8_t private_data[222];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_mra_wire) == DROCE_CM_DATA_LEN, "MRA");

/** REJ (12.6.7). */
struct droce_cm_rej_wire {
	uint8_t local_comm_id[4];
	uint8_t remote_comm_id[4];
	uint8_t msg_rejected;      /* 7:6 */
	uint8_t rej_info_len;      /* 7:1 */
	uint8_t reason[2];
	uint8_t ari[72];
	uint8_t private_data[148];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_rej_wire) == DROCE_CM_DATA_LEN, "REJ");

/** REP (12.6.8). */
struct droce_cm_rep_wire {
	uint8_t local_comm_id[4];
	uint8_t remote_comm_id[4];
	uint8_t local_qkey[4];
	uint8_t local_qpn[4];      /* 31:8 | rsvd */
	uint8_t local_eecn[4];     /* 31:8 | rsvd */
	uint8_t starting_psn[4];   /* 31:8 | rsvd */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t tad_fo_e2e;        /* target ACK delay 7:3 | failover 2:1 | E2E 0 */
	uint8_t rnr_srq;           /* RNR retry 7:5 | SRQ 4 | rsvd */
	uint8_t local_ca_guid[8];
	uint8_t private_data[196];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_rep_wire) == DROCE_CM_DATA_LEN, "REP");

/** RTU (12.6.9) and DREP (12.6.11): the two IDs and private data. */
struct droce_cm_rtu_wire {
	uint8_t local_comm_id[4];
	uint8_t remote_comm_id[4];
	uint8_t private_data[224];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_rtu_wire) == DROCE_CM_DATA_LEN, "RTU/DREP");

/** DREQ (12.6.10). */
struct droce_cm_dreq_wire {
	uint8_t local_comm_id[4];
	uint8_t remote_comm_id[4];
	uint8_t remote_qpn[4];     /* remote QPN/EECN 31:8 | rsvd */
	uint8_t private_data[220];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cm_dreq_wire) == DROCE_CM_DATA_LEN, "DREQ");

/** rdma_cm's header at the start of a REQ's private data (A11, cma_hdr). */
struct droce_cma_hdr_wire {
	uint8_t version;           /* 0 */
	uint8_t ip_version;        /* 7:4 = 4 or 6 */
	uint8_t src_port[2];
	uint8_t src_ip[16];        /* IPv4: the last 4 bytes */
	uint8_t dst_ip[16];
} __attribute__((packed));
_Static_assert(sizeof(struct droce_cma_hdr_wire) == 36, "cma_hdr");

#define DROCE_CMA_HDR_LEN 36u
#define DROCE_CM_REQ_PD_LEN 92u
#define DROCE_CM_REP_PD_LEN 196u
#define DROCE_CM_REJ_PD_LEN 148u
#define DROCE_CM_MRA_PD_LEN 222u
#define DROCE_CM_RTU_PD_LEN 224u
#define DROCE_CM_DREQ_PD_LEN 220u
#define DROCE_CM_DREP_PD_LEN 224u
#define DROCE_CM_PD_MAX 224u
/* What an rdma_cm consumer may put after the header in a REQ (A11). */
#define DROCE_CMA_REQ_USER_PD_LEN (DROCE_CM_REQ_PD_LEN - DROCE_CMA_HDR_LEN)

/* ---- decoded messages (host order) ---- */

struct droce_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

struct droce_cm_path {
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label;      /* 20 bits */
	uint8_t packet_rate;      /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;               /* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout; /* 5 bits */
};

struct droce_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;        /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_response_timeout; /* 5 bits: 4.096 us * 2^n */
	uint8_t transport_type;    /* 0 RC, 1 UC, 2 RD */
	bool e2e_flow_control;
	uint32_t starting_psn;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count;       /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;          /* 1..5 = 256..4096 */
	bool rdc_exists;
	uint8_t rnr_retry_count;   /* 3 bits */
	uint8_t max_cm_retries;    /* 4 bits */
	bool srq;
	uint8_t extended_transport;
	struct droce_cm_path primary, alternate;
	uint8_t private_data[DROCE_CM_REQ_PD_LEN];
};

struct droce_cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;         /* enum droce_cm_msg_code */
	uint8_t service_timeout;   /* 5 bits */
	uint8_t private_data[DROCE_CM_MRA_PD_LEN];
};

struct droce_cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected;      /* enum droce_cm_msg_code */
	uint8_t rej_info_len;      /* 0..72 */
	uint16_t reason;           /* enum droce_cm_rej_reason */
	uint8_t ari[72];
	uint8_t private_data[DROCE_CM_REJ_PD_LEN];
};

struct droce_cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t local_eecn;
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits */
	bool e2e_flow_control;
	uint8_t rnr_retry_count;
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[DROCE_CM_REP_PD_LEN];
};

/** RTU and DREP. */
struct droce_cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[DROCE_CM_RTU_PD_LEN];
};

struct droce_cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;
	uint8_t private_data[DROCE_CM_DREQ_PD_LEN];
};

/** One CM MAD; hdr.attr_id says which member of u is valid. */
struct droce_cm_msg {
	struct droce_mad_hdr hdr;
	union {
		struct droce_cm_req req;
		struct droce_cm_mra mra;
		struct droce_cm_rej rej;
		struct droce_cm_rep rep;
		struct droce_cm_rtu rtu;
		struct droce_cm_dreq dreq;
		struct droce_cm_rtu drep;
	} u;
};

/**
 * Decode one CM MAD (the UD payload after the DETH). Checks, in order: the
 * length, the common header (base version 1, class CM, class version 2,
 * method Send, status 0), the attribute ID, then the reserved encodings of
 * the message's own fields. Reserved bits are ignored (IBTA 13.4.2: a
 * receiver does not check them). On a non-OK result @p m holds what was
 * decoded before the failing check.
 */
enum droce_mad_result droce_mad_decode(const uint8_t *buf, size_t len, struct droce_cm_msg *m);

/**
 * Encode @p m (hdr.attr_id picks the message) as a 256-byte MAD; reserved
 * fields are written as zero, field values are masked to their widths.
 * @return DROCE_MAD_LEN, or 0 when @p cap is below it or the attribute is
 *         not one of REQ, MRA, REJ, REP, RTU, DREQ, DREP.
 */
size_t droce_mad_encode(uint8_t *buf, size_t cap, const struct droce_cm_msg *m);

/** Header fields every CM Send carries; the caller sets tid and attr_id. */
void droce_mad_hdr_init(struct droce_mad_hdr *h, uint16_t attr_id, uint64_t tid);

/** rdma_cm's private-data header, decoded. IPv4 addresses in the first 4 bytes. */
struct droce_cma_hdr {
	uint8_t version;
	uint8_t ip_version;        /* 4 or 6 */
	uint16_t src_port;
	uint8_t src_ip[16];
	uint8_t dst_ip[16];
};

#define DROCE_CMA_VERSION 0u

/**
 * Decode the header rdma_cm puts at the start of a REQ's private data.
 * @return 0, or -EPROTO when @p len is below 36, the version is not 0 or
 *         the IP version is neither 4 nor 6.
 */
int droce_cma_hdr_decode(const uint8_t *pd, size_t len, struct droce_cma_hdr *h);
/** Write the header (36 bytes) into @p pd; the inverse of the decoder. */
void droce_cma_hdr_encode(uint8_t *pd, const struct droce_cma_hdr *h);

/** An IBTA timeout exponent (4.096 us * 2^t) in nanoseconds; t <= 31. */
static inline uint64_t droce_cm_timeout_ns(uint8_t t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

#endif
