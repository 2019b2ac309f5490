/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A replay scenario: the droce side of a capture (address, QPs, MRs, posted
 * receives, work requests) and what to check (frames, memory, completions).
 * The text format is documented in pcap/README.md; this is its parsed form.
 * Values that name things in the capture (QPNs, rkeys, addresses) are the
 * capture's values: the runner maps them onto the ones droce assigns.
 */
#ifndef DROCE_REPLAY_SCENARIO_H
#define DROCE_REPLAY_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DROCE_RP_NAME_MAX 32
#define DROCE_RP_MAX_QPS 64
#define DROCE_RP_MAX_MRS 64
/* The latest time a scenario holds (at=, gap, deliver, drain): 1e18 ns,
 * about 31.7 years after the capture's first frame. --derive refuses a
 * capture whose frames lie past it, so what it writes always reads. */
#define DROCE_RP_TIME_MAX_NS 1000000000000000000ull

/* Access letters in the text: lw, rw, rr, ra (verbs LOCAL_WRITE, ...). */
#define DROCE_RP_ACC_LW 1u
#define DROCE_RP_ACC_RW 2u
#define DROCE_RP_ACC_RR 4u
#define DROCE_RP_ACC_RA 8u

/* Fields compared only when the scenario asks ("check NAME"). */
#define DROCE_RP_CHECK_CREDITS 1u  /* AETH credit count of ACKs */
#define DROCE_RP_CHECK_ACKREQ  2u  /* BTH AckReq bit */
#define DROCE_RP_CHECK_MAC     4u  /* Ethernet addresses */
#define DROCE_RP_CHECK_ECN     8u  /* IP ECN field */
#define DROCE_RP_CHECK_SPORT   16u /* UDP source port */
#define DROCE_RP_CHECK_MIGREQ  32u /* BTH MigReq bit */
/*
 * The requester's policy, ignored by default and compared by
 * `droce-replay --strict`: MigReq (the sender's path migration state,
 * ConnectX and HiRoCE send 1), where AckReq is set, and the credit count
 * of ACKs. None of them changes what a message does (pcap/README.md).
 */
#define DROCE_RP_CHECK_STRICT (DROCE_RP_CHECK_CREDITS | DROCE_RP_CHECK_ACKREQ | DROCE_RP_CHECK_MIGREQ)

struct droce_rp_qp_spec {
	char name[DROCE_RP_NAME_MAX];
	unsigned line;
	uint32_t local_qpn;      /**< droce side's QPN in the capture */
	uint32_t peer_qpn;
	uint8_t peer_ip[16];
	uint8_t peer_mac[6];
	uint32_t sq_psn, rq_psn;
	unsigned mtu;            /**< bytes: 256..4096 */
	uint8_t timeout, retry, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	unsigned access;         /**< DROCE_RP_ACC_R*: what the responder grants */
};

struct droce_rp_mr_spec {
	char name[DROCE_RP_NAME_MAX];
	unsigned line;
	uint64_t addr;           /**< as in the capture (RETH VA) */
	uint64_t len;
	uint32_t rkey;           /**< as in the capture */
	bool has_rkey;           /**< false: a local buffer the peer never names */
	unsigned access;
	uint8_t *init;           /**< len bytes, initial contents (zero by default) */
};

enum droce_rp_op {
	DROCE_RP_OP_SEND, DROCE_RP_OP_SEND_IMM, DROCE_RP_OP_WRITE, DROCE_RP_OP_WRITE_IMM,
	DROCE_RP_OP_READ, DROCE_RP_OP_CAS, DROCE_RP_OP_FAA,
};

#define DROCE_RP_WR_UNSIGNALED 1u
#define DROCE_RP_WR_FENCE      2u
#define DROCE_RP_WR_SOLICITED  4u
#define DROCE_RP_WR_INLINE     8u

/** A receive (is_recv) or a send work request, posted at time at_ns. */
struct droce_rp_wr_spec {
	unsigned line;
	bool is_recv;
	int qp;                  /**< index into qps */
	uint64_t wr_id;
	uint64_t at_ns;          /**< since the capture's first frame */
	enum droce_rp_op op;
	int mr;                  /**< -1: no SGE */
	uint64_t off;
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;
	uint64_t compare, swap_add;
	unsigned flags;
};

/** Bytes a region must hold at the end. */
struct droce_rp_mem_expect {
	unsigned line;
	int mr;
	uint64_t off;
	uint8_t *bytes;
	size_t len;
};

/** A completion the replay must see (per QP and queue, in order). */
struct droce_rp_wc_expect {
	unsigned line;
	int qp;
	bool recv;
	uint64_t wr_id;
	int status;              /**< enum droce_wc_status */
	int opcode;              /**< enum droce_wc_opcode, -1: not checked */
	bool has_len, has_imm;
	uint32_t len, imm;
};

/** "expect-gap A B TIME": droce's match of capture frame B comes >= TIME after frame A. */
struct droce_rp_gap {
	unsigned line;
	unsigned a, b;           /**< capture frame numbers */
	uint64_t min_ns;
};

/*
 * "lost QP req|resp PSN [copy=K]": the side sent its K-th copy (0: the first
 * transmission) of the request or response packet with that PSN, but the
 * capture lacks it: it was lost between the side and the capture point
 * (tcpdump on a bridge behind a lossy link). droce's matching frame is
 * sent, and not compared.
 */
struct droce_rp_lost {
	unsigned line;
	int qp;
	bool resp;
	uint32_t psn;
	unsigned copy;
};

/*
 * "deliver N at=TIME": the peer's frame N reaches droce at TIME rather than
 * at its capture time: the capture was taken far from the side, which got
 * the frame only after sending frames the capture shows after it.
 */
struct droce_rp_deliver {
	unsigned line;
	unsigned frame;
	uint64_t at_ns;
};

/*
 * "late N [copy=K]": the side's capture frame N (its K-th copy of that
 * packet) was delayed on the wire and arrived after later ones (netem's
 * reorder in front of tcpdump): it is compared with droce's K-th copy of
 * the same PSN wherever droce sent it.
 */
struct droce_rp_late {
	unsigned line;
	unsigned frame;
	unsigned copy;
};

struct droce_rp_scenario {
	char path[4096];         /**< the scenario file */
	char capture[4096];      /**< resolved against the scenario's directory */
	unsigned capture_line;
	uint8_t ip_version;
	uint8_t ip[16];
	uint8_t mac[6];
	bool has_mac;
	struct droce_rp_qp_spec qps[DROCE_RP_MAX_QPS];
	unsigned nqps;
	struct droce_rp_mr_spec mrs[DROCE_RP_MAX_MRS];
	unsigned nmrs;
	struct droce_rp_wr_spec *wrs;    /**< receives and sends, file order */
	unsigned nwrs;
	struct droce_rp_mem_expect *mems;
	unsigned nmems;
	struct droce_rp_wc_expect *wcs;
	unsigned nwcs;
	bool check_wcs;          /**< "expect-wc" lines present, or "expect-wc none" */
	bool expect_capture;     /**< expected frames: what the capture shows this side send */
	unsigned *skip;          /**< capture frame numbers not expected */
	unsigned nskip;
	struct droce_rp_gap *gaps;
	unsigned ngaps;
	bool allow_ack_coalescing;
	bool allow_send_ahead;   /**< first copies of requests may go out earlier (compare.h) */
	bool by_psn;             /**< "compare by-psn": a lossy link's conversation, compared per PSN (compare_psn.c) */
	bool pace_requests;      /**< "pace requests": droce's k-th request to a QP no earlier than the side's */
	unsigned checks;         /**< DROCE_RP_CHECK_* */
	struct droce_rp_lost *lost;
	unsigned nlost;
	struct droce_rp_deliver *delivers;
	unsigned ndelivers;
	struct droce_rp_late *lates;
	unsigned nlates;
	/** "impair SPEC": the side received through droce's seeded receive-side
	 *  shim behind the capture point (droce-perf --impair SPEC); the replay
	 *  passes the peer's frames through the same shim. Empty: none. */
	char impair[128];
	uint64_t drain_ns;       /**< run on after the last event */
};

/**
 * Parse a scenario file. On error, @p err holds "FILE:LINE: reason".
 * @return 0, or -EINVAL (a bad line), -ENOENT (the file cannot be read),
 *         -ENOMEM.
 */
int droce_rp_scenario_load(const char *path, struct droce_rp_scenario **out,
			   char *err, size_t errlen);

/** Parse scenario text held in memory; @p path names it in errors and anchors relative paths. */
int droce_rp_scenario_parse(const char *text, const char *path,
			    struct droce_rp_scenario **out, char *err, size_t errlen);

void droce_rp_scenario_free(struct droce_rp_scenario *s);

/** Find an MR or QP by name; -1 when absent. */
int droce_rp_find_mr(const struct droce_rp_scenario *s, const char *name);
int droce_rp_find_qp(const struct droce_rp_scenario *s, const char *name);

/** Names used in the text for enum droce_wc_status / droce_wc_opcode values; NULL if unknown. */
const char *droce_rp_status_name(int status);
const char *droce_rp_wc_opcode_name(int opcode);
const char *droce_rp_op_name(enum droce_rp_op op);

/** Parse an address ("192.0.2.1" or an IPv6 text form). @return 4, 6, or 0 if invalid. */
int droce_rp_parse_ip(const char *s, uint8_t ip[16]);
/** Format an address of the given version into @p buf (>= 64 bytes). */
const char *droce_rp_fmt_ip(int version, const uint8_t ip[16], char *buf, size_t len);

#endif
