/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport test bed: two contexts back to back over an in-memory link
 * (stack/net/link/memlink.h) with an impairment shim in each direction, a virtual
 * clock, and a tap that records every frame on the wire (parsed with the
 * wire layer) so tests can assert the exact packet sequence.
 *
 * Side 0 ("A") and side 1 ("B"); direction 0 is A -> B, direction 1 B -> A.
 * Helpers assert (cmocka) on setup failures: a test only sees working
 * objects.
 */
#ifndef DROCE_TEST_PAIR_H
#define DROCE_TEST_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <droce/droce.h>

#include "net/diag/capture.h"
#include "net/diag/impair.h"
#include "net/link/memlink.h"
#include "wire/build.h"
#include "wire/hdr.h"
#include "wire/parse.h"

#define SIDE_A 0
#define SIDE_B 1
#define A_TO_B 0
#define B_TO_A 1

/** One frame seen on the wire. */
struct pkt_rec {
	unsigned dir;                  /**< A_TO_B or B_TO_A */
	enum droce_impair_action fate; /**< what the shim did with it */
	int corrupted;
	enum droce_parse_result pr;    /**< parse of the bytes as sent */
	uint64_t now;                  /**< virtual time it was sent */
	uint8_t ip_version;
	uint8_t dscp, ecn, ttl;
	uint16_t sport, dport;
	uint8_t opcode;
	bool ackreq, se, becn, migreq;
	uint32_t psn, dqpn;
	uint32_t payload_len;
	uint8_t syndrome;              /**< AETH */
	uint32_t msn;
	uint64_t va;                   /**< RETH or AtomicETH */
	uint32_t rkey, dma_len;
	uint64_t swap_add, compare, orig;
	uint32_t imm;
	uint32_t qkey, sqpn;           /**< DETH (UD) */
};

struct pair {
	struct droce_memlink *ml;
	struct droce_impair *imp[2];   /**< per direction, always present (no impairment by default) */
	struct droce_ctx *ctx[2];
	uint64_t now;                  /**< virtual clock, ns */
	struct pkt_rec *rec;
	unsigned nrec, caprec;
	bool record;                   /**< tap on (default) */
	uint8_t ip_version;            /**< 4 (10.0.0.1, 10.0.0.2) or 6 (fd00::1, fd00::2) */
	bool allow_bad_frames;         /**< pair_fini() otherwise asserts every frame sent parsed (ICRC included) */
	uint64_t max_iters;            /**< poll iterations one run may take before it fails */
	void *bufs[64];                /**< memory behind pair_mr(), freed by pair_fini() */
	unsigned nbufs;
	/* Objects the helpers made, destroyed by pair_fini() before the contexts. */
	struct droce_qp *qps[16];
	unsigned nqps;
	struct droce_cq *cqs[32];
	unsigned ncqs;
	struct droce_capture *pcap;    /**< DROCE_TEST_PCAP=prefix: every frame sent, to prefix.N.pcap */
};

struct pair_opts {
	uint64_t seed[2];              /**< context seeds */
	const char *impair[2];         /**< spec per direction, NULL = none */
	uint32_t depth;                /**< memlink FIFO depth, 0 = default */
	uint8_t ip_version;            /**< 4 (default) or 6 */
	const char *cc;                /**< congestion control by name; NULL = the context default */
};

/** The address of side @p side (0 or 1) in @p ip_version. */
void pair_side_ip(uint8_t ip_version, int side, uint8_t ip[16]);

/** Create both contexts and the link. @p o may be NULL. */
void pair_init(struct pair *p, const struct pair_opts *o);
/** Destroy everything pair_init() and the helpers made. */
void pair_fini(struct pair *p);

/** A connected pair of QPs with their CQs. */
struct conn {
	struct droce_cq *scq[2], *rcq[2];
	struct droce_qp *qp[2];
	uint32_t qpn[2];
};

struct conn_opts {
	enum droce_mtu mtu;
	uint32_t sq_psn[2];            /**< first PSN each side sends (the other's rq_psn) */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic;
	unsigned access;               /**< qp_access_flags on both sides */
	unsigned cq_depth;
	uint32_t max_send_wr, max_recv_wr, max_sge;
	int sq_sig_all;
	uint16_t udp_sport;            /**< AV UDP source port, 0: the engine derives one */
	struct droce_srq *srq[2];      /**< per side: the QP takes its receives from it (NULL: its own RQ) */
};

/** Defaults: MTU 1024, PSNs 0x100 / 0x800, timeout 14, retry 7, rnr_retry 7, min_rnr_timer 1, all access. */
void conn_opts_default(struct conn_opts *o);

/** Create CQs and QPs on both sides (RESET), no transition. */
void conn_create(struct pair *p, struct conn *c, const struct conn_opts *o);
/** Move side @p s of @p c one transition forward to @p to (INIT, RTR or RTS) with @p o. @return droce_modify_qp's result. */
int conn_modify(struct pair *p, struct conn *c, int s, enum droce_qp_state to, const struct conn_opts *o);
/** conn_create + RESET -> INIT -> RTR -> RTS on both sides (asserting success). */
void pair_connect(struct pair *p, struct conn *c, const struct conn_opts *o);

/** Allocate @p len bytes (plus 64 guard bytes) filled with @p fill and register them. */
struct droce_mr *pair_mr(struct pair *p, int side, size_t len, unsigned access, uint8_t fill);

/**
 * Idle: jump the clock to the earliest deadline of either context (or keep
 * it when frames are still queued). @return false when no timer is armed or
 * the deadline is past @p end (then the clock is set to @p end).
 */
bool pair_advance(struct pair *p, uint64_t end);
/** One poll of both contexts at the current time. @return frames moved. */
unsigned pair_step(struct pair *p);
/**
 * Poll both sides until nothing moves and no timer is armed, jumping the
 * clock to the next deadline when idle; stop after @p max_ns of virtual
 * time. @return virtual ns elapsed.
 */
uint64_t pair_run(struct pair *p, uint64_t max_ns);
/**
 * Run until @p n completions were taken from @p cq into @p wc or @p max_ns
 * of virtual time passed / the pair went quiet. @return completions taken.
 */
int pair_wait(struct pair *p, struct droce_cq *cq, int n, struct droce_wc *wc, uint64_t max_ns);
/** Take whatever completions @p cq has (no polling of the contexts). */
int cq_drain(struct droce_cq *cq, struct droce_wc *wc, int n);

/* ------------------------------------------------------------ posting -- */

int post_rdma(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id, struct droce_mr *lmr,
	      size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey, unsigned flags, uint32_t imm);
int post_send_msg(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id,
		  struct droce_mr *lmr, size_t loff, uint32_t len, unsigned flags, uint32_t imm);
int post_atomic(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id, struct droce_mr *lmr,
		size_t loff, uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap);
int post_recv_buf(struct droce_qp *qp, uint64_t wr_id, struct droce_mr *mr, size_t off, uint32_t len);

/* ------------------------------------------------------------ the tap -- */

/** Forget the records so far. */
void rec_clear(struct pair *p);
/** Records from index @p from on in direction @p dir (all directions: -1) with @p opcode (any: -1). */
unsigned rec_count(const struct pair *p, unsigned from, int dir, int opcode);
/** Index of the first such record at or after @p from, or -1. */
int rec_find(const struct pair *p, unsigned from, int dir, int opcode);
/** Print the records (for a failing test; also when DROCE_TEST_DUMP is set). */
void rec_dump(const struct pair *p, unsigned from);

/** AETH syndrome helpers (IBTA 9.7.5.1.2 table 43). */
static inline bool syn_is_ack(uint8_t s) { return (s & 0x60u) == 0x00u; }
static inline bool syn_is_rnr(uint8_t s) { return (s & 0x60u) == 0x20u; }
static inline bool syn_is_nak(uint8_t s, unsigned code) { return s == (0x60u | code); }

/** RNR timer encoding (IBTA 9.7.5.2.8 table 45) in ns. */
uint64_t rnr_timer_ns(unsigned code);
/** Local ACK timeout 4.096 us * 2^t in ns (IBTA 9.7.6.1.3). */
static inline uint64_t ack_timeout_ns(unsigned t) { return 4096ull << t; }

/** Index of the context drop reason called @p name, asserting it exists. */
unsigned drop_reason(const char *name);
/** A context drop counter by name. */
uint64_t ctx_drops(struct pair *p, int side, const char *name);
struct droce_qp_stats qp_stats(struct droce_qp *qp);
enum droce_qp_state qp_state(struct droce_qp *qp);

/** Deterministic pattern: byte i of message @p key. */
void fill_pattern(uint8_t *dst, size_t len, uint64_t key);
/** Index of the first byte that differs from the pattern, or -1. */
long check_pattern(const uint8_t *src, size_t len, uint64_t key);

#define PSN(x) ((uint32_t)(x) & 0xFFFFFFu)

/* ------------------------------------------------------- impair rules -- */

/** Add a rule on direction @p dir: @p action on frames with @p opcode (-1: any) and @p psn (-1: any), first @p count matches (0: all). */
void pair_rule(struct pair *p, int dir, enum droce_impair_action action, int opcode, int64_t psn,
	       uint32_t count);
/** Hold the first frame with @p opcode/@p psn in @p dir until @p hold later frames passed. */
void pair_hold(struct pair *p, int dir, int opcode, int64_t psn, uint32_t hold);
/** Flip the byte at @p offset of the first frame with @p opcode/@p psn in @p dir. */
void pair_corrupt(struct pair *p, int dir, int opcode, int64_t psn, uint32_t offset);

/** Records in @p dir from @p from that are NAKs with @p code (or RNR NAKs with code -1). */
unsigned rec_naks(const struct pair *p, unsigned from, int dir, int code);
/** Times a request PSN appears in direction @p dir from @p from (any opcode). */
unsigned rec_psn_count(const struct pair *p, unsigned from, int dir, uint32_t psn);

/* ---------------------------------------------------------- injection -- */

/** Headers of a frame from side @p from to the other side's context (addresses as pair_init set them), AckReq set. */
void pair_hdrs(const struct pair *p, int from, struct droce_hdrs *h, uint8_t opcode, uint32_t dqpn,
	       uint32_t psn);
/** Put a frame built from @p h and @p payload on the wire as if side @p from had sent it (the tap sees it). */
int pair_inject(struct pair *p, int from, const struct droce_hdrs *h, const void *payload);
/** Put raw bytes on the wire from side @p from. */
int pair_inject_raw(struct pair *p, int from, const uint8_t *frame, uint32_t len);

/**
 * Run a cmocka group, minus the tests named in DROCE_TEST_SKIP and, when
 * DROCE_TEST_ONLY is set, only those named there (comma-separated names).
 * meson uses it to park single tests in the 'transport-pending' suite.
 */

struct CMUnitTest;
int droce_test_run(const char *group, const struct CMUnitTest *tests, size_t n);

#endif
