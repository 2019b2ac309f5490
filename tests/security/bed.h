/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small in-process Ethernet for the flood and spoofing tests: a server
 * and a client context (each with its CM service over QP1), an attacker
 * host that has an address and a MAC but no stack (it answers nothing),
 * frames switched by destination MAC, and an attacker that writes any
 * frame straight into a host's inbox (spoofed IP and MAC, any MAD) and
 * reads every frame the two contexts send (an on-path observer). One
 * virtual clock; the resolver answers for the three hosts and never for
 * any other address (as ARP for a spoofed source).
 */
#ifndef DROCE_TESTS_SECURITY_BED_H
#define DROCE_TESTS_SECURITY_BED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <droce/droce.h>

#include "cm/mad.h"

enum { SRV, CLI, ATK, NHOSTS };

#define BED_SLOTS 4096u
#define BED_SLOT_LEN 1600u
#define BED_MAX_QPS 256u

struct inbox {
	uint8_t (*buf)[BED_SLOT_LEN];
	uint32_t *len;
	unsigned head, n, out;
	uint64_t dropped;
};

struct bed;

struct host {
	struct bed *b;
	int idx;
	struct droce_ctx *ctx;
	uint8_t ip[16], mac[6];
	struct inbox in;
	struct droce_cq *cq;
	struct droce_mr *mr;
	uint8_t *mem;                 /* 64 KB registered */
	struct droce_qp *conn_qp[128]; /* server: the QP of each connection id */
	uint64_t conn_wr[128];         /* and the wr_id of its one receive */
};

/* What the on-path attacker learnt from the wire. */
struct observed {
	bool req_seen;
	uint32_t cli_lcid;            /* the client's REQ */
	uint64_t cli_tid;
	uint32_t cli_qpn;
	uint8_t req_mad[DROCE_MAD_LEN];
	bool rep_seen;
	uint32_t srv_lcid;
};

struct bed {
	struct host h[NHOSTS];
	uint64_t now;
	uint64_t rng;                 /* the attacker's dice (fixed seed: same run each time) */
	struct observed seen;
	void (*on_wire)(struct bed *b, int from, const uint8_t *f, uint32_t len);
	/* the attack: called whenever the clock reaches next_attack */
	void (*attack)(struct bed *b);
	uint64_t next_attack, attack_every, attack_until;
	uint64_t injected;
	uint64_t horizon;             /* when set, an idle turn jumps no further */
	/* the server application: accepts every REQUEST (the worst case: an
	 * rping-style server), frees QPs on each connection's last event */
	bool server_accepts;
	int legit_srv_conn;           /* the client's connection as the server sees it */
	struct droce_qp *legit_srv_qp;
	uint64_t legit_wr, recv_ids;
	uint64_t srv_qps_live, srv_qps_peak;
};

/** A bed with fresh contexts and CM services; @p cf (NULL: defaults) for both. */
struct bed *bed_new(const struct droce_cm_conf *cf);
void bed_free(struct bed *b);

/** One turn: every context polled, the attack run when due, the server
 * application served; the clock moves 1 us when anything happened, else
 * to the next deadline. */
void bed_turn(struct bed *b);

/** Put a raw frame in host @p to's inbox. */
void bed_inject(struct bed *b, int to, const uint8_t *f, uint32_t len);

/** A UD SEND to QP1 of host @p to carrying @p mad, from @p src_ip / @p src_mac. */
void bed_inject_mad(struct bed *b, int to, const uint8_t src_ip[4], const uint8_t src_mac[6],
		    const uint8_t mad[DROCE_MAD_LEN]);

/** An rdma_cm REQ for host @p to's port @p port from @p src_ip (comm ID, QPN given). */
void bed_req_mad(struct bed *b, int to, const uint8_t src_ip[4], uint16_t port, uint32_t lcid,
		 uint32_t qpn, uint8_t mad[DROCE_MAD_LEN]);

uint32_t bed_rand(struct bed *b);

/** The result of one legitimate connection and transfer. */
struct legit {
	bool connected;
	uint64_t connect_ns;          /* droce_connect() to the client's ESTABLISHED */
	bool data_ok;                 /* 4 KB WRITE + SEND arrived intact */
	int fail_event;               /* the client's event when not connected, else -1 */
};

/** The client connects to the server's port 7471 and transfers; bounded by
 * @p limit_ns of virtual time. */
struct legit bed_legit(struct bed *b, uint64_t limit_ns);

#endif
