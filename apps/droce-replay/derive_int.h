/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-replay --derive: the state of one derivation (struct dctx: the
 * capture's frames, the connections, messages and regions it finds) and the
 * calls between its files, one job each:
 *   derive.c         entry points, the frames of the side
 *   derive_util.c    bookkeeping: the error message, new connections and messages
 *   derive_pair.c    pairing QPs, the path MTU
 *   derive_region.c  memory regions and what the capture shows of them
 *   derive_track.c   frames, messages, copies, late and lost packets
 *   derive_own.c     the side's own requests
 *   derive_walk.c    the walk over the capture in order
 *   derive_emit.c    the scenario written out
 */
#ifndef DROCE_RP_DERIVE_INT_H
#define DROCE_RP_DERIVE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cm/mad.h"
#include "derive_cm.h"
#include "frames.h"
#include "pmap.h"
#include "scenario.h"
#include "wire/hdr.h"
#include "wire/psn.h"

#define MAX_CONNS DROCE_RP_MAX_QPS
#define MAX_REGIONS (DROCE_RP_MAX_MRS - 3)
#define MAX_REGION_LEN (16u << 20)
/* Silence before a resend that no NAK explains: the ACK timer, whatever READ responses came before it. */
#define TIMER_SILENCE_NS 1000000u
/* How far before the first PSN seen a sequence may start: a gap no loss leaves is refused anyway. */
#define EARLY_MAX 4096u

/* a < b in 24-bit PSN space (IBTA 9.7.1: half the space is "behind"). */
static inline bool psn_lt(uint32_t a, uint32_t b)
{
	return droce_psn_diff(b, a) > 0;
}

static inline uint32_t psn_add(uint32_t a, uint32_t n)
{
	return droce_psn_add(a, n);
}

static inline uint64_t hkey(int conn, unsigned kind, uint32_t psn)
{
	return ((uint64_t)(unsigned)conn << 32 | (uint64_t)kind << 24 | psn) + 1;
}

/* hkey kinds */
#define HK_COUNT_REQ  0u             /* pcount index, requests */
#define HK_COUNT_RESP 1u             /* pcount index, responses */
#define HK_OWN_REQ    2u             /* the side's latest request frame at a PSN */
#define HK_ACC_NAK    3u             /* the side NAKed a request at a PSN for access */

struct fr {
	const struct droce_rp_frame *f;
	struct droce_pkt p;
	enum droce_parse_result r;
	enum droce_rp_role role;
	int conn;
	bool first;                  /* the first visible copy of an own request PSN */
	bool gone;                   /* a peer frame the side's receive shim dropped */
	uint64_t t_seen;             /* a peer NAK: when the side got it (0: its capture time) */
};

struct conn {
	uint32_t local_qpn, peer_qpn;
	bool local_known, peer_known;
	uint8_t peer_ip[16];
	uint8_t peer_mac[6];
	bool any_peer;               /* frames to the side on this connection */
	bool own_started, peer_started;
	uint32_t sq_psn, rq_psn, own_next, peer_next;
	bool sq_early, rq_early;     /* a PSN before the first seen starts the sequence */
	uint32_t sq_min, rq_min;     /* that PSN (start_psns) */
	uint32_t own_cur;            /* PSN after the side's last request packet */
	uint32_t epoch;              /* how often the side went back (go-back-N) */
	uint32_t resp_epoch;         /* how often it answered a READ again */
	bool nak_pending;            /* the peer NAKed nak_psn; the side has not gone back yet */
	uint32_t nak_psn;
	size_t nak_frame;            /* that NAK */
	uint64_t trig_t;             /* when the side last got a NAK or a READ response (0: never) */
	uint64_t ack_t;              /* when the side last got a positive answer (its timer restarts) */
	uint64_t peer_t;             /* when the side last got anything on this connection */
	uint64_t nak_t;              /* when it last got a NAK or an RNR NAK */
	size_t trig_frame;
	uint32_t acked_by_peer;      /* highest PSN the peer acknowledged */
	bool any_acked_by_peer;
	uint32_t acked_by_own;
	bool any_acked_by_own;
	bool error_nak;              /* an error NAK either way: completions not derived */
	bool resp_dead;              /* the side NAKed an error: its responder QP is in ERR */
	bool timeout_retx;           /* the side resent a request on its own: a timeout */
	uint8_t timeout;             /* the timeout exponent its gaps agree on */
	unsigned tvotes[32];         /* timer-driven go-backs per exponent */
	unsigned max_resends;        /* most timer-driven resends of one PSN */
	bool gave_up;                /* retries exhausted: completions not derived */
	bool rnr_seen;
	uint8_t min_rnr_timer;
	bool any_msn;                /* the side has answered with an AETH */
	uint32_t msn_max;            /* the highest MSN it sent so far, in capture order */
	unsigned mtu;
	unsigned seg_max, max_payload;
	int cur_own, cur_peer;       /* message being assembled, -1 none */
};

enum mkind { M_SEND, M_WRITE, M_READ, M_CAS, M_FAA };

struct msg {
	int conn;
	bool own;                    /* sent by the side (droce as requester) */
	enum mkind kind;
	bool has_imm, complete, dropped, has_orig, applied;
	bool err_recv;               /* dropped for an error NAK the side sent where it had a receive */
	uint32_t imm;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, dma_len;
	uint64_t compare, swap_add, orig;
	uint8_t *data;               /* payload (send/write) or response bytes (own read) */
	size_t len, cap;
	uint64_t t_ns;
	uint64_t rnr_t;              /* the side RNR-NAKed this SEND: post its receive after */
	bool rnr;
	uint64_t local_off;          /* in src / dst / rq */
	uint64_t wr_id;
	uint32_t req_seq;            /* region store count when the request executed */
	bool solicited;
	size_t first_idx;            /* its first frame */
	uint32_t resp_next;          /* peer READ: the side's next response PSN */
	bool resp_started;
	bool dup_pending;            /* the peer asked again (from dup_psn); the side has not answered */
	uint32_t dup_psn;
};

/* How many copies of a request/response PSN the side sent (visible or lost). */
struct pcount {
	int conn;
	bool resp;
	uint32_t psn;
	unsigned n;
};

/* A packet of the side's the capture lacks: its copy-th transmission was lost. */
struct dlost {
	int conn;
	bool resp;
	uint32_t psn;
	unsigned copy;
	uint32_t epoch;              /* the side's go-backs on the connection when it went missing */
	unsigned late;               /* it showed up after all, delayed on the wire: that frame (0: lost) */
};

struct region {
	uint32_t rkey;
	uint64_t lo, hi;
	unsigned access;
	uint8_t *init, *shadow;
	uint8_t *known, *written;    /* one byte per byte: simple and small enough */
	uint8_t *iset;               /* init[] holds a value seen on the wire */
	uint32_t *kseq, *wseq;       /* store sequence when first known / last written */
};

struct dctx {
	const struct droce_rp_capture *cap;
	int ipv;
	uint8_t ip[16];
	uint8_t mac[6];
	bool has_mac;
	struct fr *fr;
	size_t nfr;
	struct conn conns[MAX_CONNS];
	unsigned nconns;
	struct msg *msgs;
	size_t nmsgs;
	struct region regions[MAX_REGIONS];
	unsigned nregions;
	unsigned ignored_ud, skipped_cnp[64], nskipped_cnp, retrans_own;
	struct droce_rp_cm cm;       /* the rdma_cm handshakes the side took part in */
	int cm_of[MAX_CONNS];        /* conns[i]'s handshake in cm.c[], or -1 */
	uint32_t seq;                /* counts stores into the regions */
	struct pcount *pc;
	size_t npc, cappc;
	struct hmap map;             /* HK_* */
	size_t *reads;               /* the side's READ request frames */
	size_t nreads;
	bool acc_naks_known;
	size_t capmsgs;
	struct dlost *lost;
	size_t nlost;
	/* a NAK the side got after frames of its own, or a request of the
	 * peer's it took later than captured (held behind the capture point) */
	struct { unsigned frame; uint64_t at; bool req; } *cross;
	const char *impair;          /* the side's receive-side shim, or NULL */
	size_t ncross;
	char *err;
	size_t errlen;
};

/* derive_util.c: the derivation's bookkeeping */
int drv_dfail(struct dctx *d, const char *fmt, ...);
size_t drv_alen(const struct dctx *d);
int drv_new_conn(struct dctx *d);
int drv_new_msg(struct dctx *d, int conn, bool own, enum mkind k, const struct fr *f);
int drv_msg_append(struct msg *m, const uint8_t *p, size_t n);
/** What a request frame @p a says of its message @p m: RETH, AtomicETH, ImmDt. */
void drv_msg_take_ext(struct msg *m, const struct fr *a, const struct droce_opcode_info *oi);

/* derive_pair.c: pairing the side's QPs with the peer's, the path MTU */
int drv_pair_qps(struct dctx *d);
uint32_t drv_synth_qpn(struct dctx *d);
int drv_infer_mtu(struct dctx *d);
unsigned drv_npkts(uint32_t len, unsigned mtu);

/* derive_region.c: the memory regions the capture shows */
struct region *drv_region_of(struct dctx *d, uint32_t rkey);
int drv_collect_regions(struct dctx *d);
long drv_learn(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n,
		  uint32_t req_seq);
int drv_off_wire(struct dctx *d, const struct fr *a, const struct region *r, uint64_t va, long k);
void drv_store(struct dctx *d, struct region *r, uint64_t va, const uint8_t *b, size_t n);
uint64_t drv_le64(const uint8_t *b);
void drv_put_le64(uint8_t *b, uint64_t v);

/* derive_track.c: finding frames and messages, counting copies, late and lost packets */
int drv_find_msg(struct dctx *d, int conn, bool own, uint32_t psn, bool range);
int drv_find_refused(struct dctx *d, int conn, uint32_t psn);
const struct fr *drv_own_frame_at(struct dctx *d, int conn, uint32_t psn);
bool drv_same_request(const struct fr *a, const struct fr *b);
enum mkind drv_kind_of(const struct droce_opcode_info *oi, uint8_t opcode);
unsigned *drv_count_of(struct dctx *d, int conn, bool resp, uint32_t psn);
int drv_add_lost(struct dctx *d, int conn, bool resp, uint32_t psn);
struct dlost *drv_arrived_late(struct dctx *d, size_t idx, bool resp, uint32_t cur);
int drv_add_read(struct dctx *d, size_t idx);
const struct fr *drv_read_covering(struct dctx *d, int conn, uint32_t psn);
bool drv_is_trigger(const struct fr *b);
int drv_set_deliver(struct dctx *d, size_t j, uint64_t at, bool req);
int drv_deliver_after(struct dctx *d, size_t j, const struct fr *a);
int drv_crossed_answers(struct dctx *d, const struct fr *prev, size_t idx);

/* derive_own.c: the side's own requests: start PSNs, go-backs, messages */
void drv_start_psns(struct dctx *d);
int drv_own_seq(struct dctx *d, size_t idx);
int drv_own_requests(struct dctx *d);

/* derive_walk.c: the walk over the capture: the peer's requests and responses, the side's answers */
bool drv_prompted(struct dctx *d, const struct fr *a, size_t since);
int drv_own_response(struct dctx *d, struct fr *a);
int drv_check_msns(struct dctx *d);
int drv_walk(struct dctx *d);

/* derive_emit.c: writing the scenario */
bool drv_lossy(struct dctx *d);
int drv_cm_attrs(struct dctx *d);
int drv_cm_psns(struct dctx *d);
void drv_emit(struct dctx *d, const char *cap_path, const char *side, FILE *out);

#endif
