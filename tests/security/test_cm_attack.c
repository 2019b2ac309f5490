/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connection manager under attack (docs/security.md, "Connection
 * management"): while an attacker floods the server with REQs (from one
 * address, from spoofed ones, from addresses that never answer ARP) or
 * spoofs MRAs, REQs, DREQs and REJs with predicted, observed and random
 * IDs, a legitimate client connects and moves 4 KB by RDMA WRITE and a
 * SEND. Each test runs the same connection unattacked first, in a fresh
 * bed on the same virtual clock, and requires the attacked one to connect
 * within a millisecond of it (a lost or blocked handshake costs a 4 s CM
 * retry or never ends) with every byte intact. Each prints its figures:
 * connect time attacked and not, and what the server holds (connections,
 * QPs at the peak, MADs waiting, what was evicted, dropped, rate limited).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bed.h"
#include "cm/cm_int.h"
#include "cm/mad.h"
#include "cm/svc.h"
#include "wire/opcode.h"
#include "wire/parse.h"

#define MS 1000000ull
#define SEC 1000000000ull
/* how much later than unattacked the attacked client may connect */
#define SLACK_NS (1 * MS)

static uint64_t baseline_ns;

static uint64_t baseline(void)
{
	if (baseline_ns)
		return baseline_ns;
	struct bed *b = bed_new(NULL);
	struct legit l = bed_legit(b, 10 * SEC);
	assert_true(l.connected);
	assert_true(l.data_ok);
	baseline_ns = l.connect_ns;
	bed_free(b);
	return baseline_ns;
}

/* What the CM service of a context holds, all of it allocated when it
 * opens (nothing grows with what arrives): its connection table, the CM's
 * ids, MAD and event queues, and the MADs parked for a MAC. */
static size_t svc_bytes(const struct droce_ctx *ctx)
{
	const struct droce_cm_svc *s = droce_cm_svc_of(ctx);
	const struct droce_cm *cm = s->cm;
	return sizeof(*s) + s->conf.max_conns * sizeof(struct svc_conn) +
	       s->n_cm_ids * (sizeof(struct cm_id) + sizeof(int)) +
	       s->conf.event_queue * sizeof(struct droce_conn_event) + sizeof(*cm) +
	       cm->p.mad_queue * sizeof(struct droce_cm_out) +
	       cm->p.event_queue * sizeof(struct droce_cm_event) + SVC_PARK_DESTS * sizeof(struct svc_park);
}

static void report(const char *what, struct bed *b, const struct legit *l)
{
	struct droce_cm_counters k;
	assert_int_equal(droce_cm_get_counters(b->h[SRV].ctx, &k), 0);
	printf("security: %-26s connect %8.3f ms (unattacked %.3f ms), data %s; %llu MADs injected;"
	       " server holds %u conns, %llu QPs (peak %llu), %u MADs waiting; evicted %llu,"
	       " rate-limited %llu, MADs dropped waiting for a MAC %llu; the CM service's memory %zu KB"
	       " (fixed at open)\n",
	       what, l->connect_ns / 1e6, baseline() / 1e6, l->data_ok ? "intact" : "BAD",
	       (unsigned long long)b->injected, k.conns, (unsigned long long)b->srv_qps_live,
	       (unsigned long long)b->srv_qps_peak, k.mads_pending, (unsigned long long)k.evicted,
	       (unsigned long long)k.reqs_limited, (unsigned long long)k.mad_park_drop,
	       svc_bytes(b->h[SRV].ctx) / 1024);
	fflush(stdout);
}

static void expect_normal(const char *what, struct bed *b, const struct legit *l)
{
	report(what, b, l);
	if (!l->connected)
		fail_msg("%s: the legitimate client did not connect (event %d)", what, l->fail_event);
	if (l->connect_ns > baseline() + SLACK_NS)
		fail_msg("%s: connected after %.3f ms, unattacked %.3f ms", what, l->connect_ns / 1e6,
			 baseline() / 1e6);
	assert_true(l->data_ok);
}

/* Run the attack for @p warmup before the client connects and on until
 * @p total, then the legitimate pair. */
static struct legit attacked(struct bed *b, void (*fn)(struct bed *), uint64_t every, uint64_t warmup,
			     uint64_t total)
{
	b->attack = fn;
	b->attack_every = every;
	b->next_attack = b->now;
	b->attack_until = b->now + total;
	uint64_t start = b->now + warmup;
	while (b->now < start)
		bed_turn(b);
	return bed_legit(b, 10 * SEC);
}

/* ------------------------------------------------------------ floods -- */

static void flood_one_source(struct bed *b)
{
	uint8_t mad[DROCE_MAD_LEN];
	bed_req_mad(b, SRV, b->h[ATK].ip, 7471, bed_rand(b) | 1, bed_rand(b), mad);
	bed_inject_mad(b, SRV, b->h[ATK].ip, b->h[ATK].mac, mad);
}

/* 10 000 REQs a second from the attacker's own (resolvable) address, each
 * a new connection the server application accepts; the REPs go to a host
 * that never answers. */
static void test_req_flood_one_source(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	struct legit l = attacked(b, flood_one_source, 100000, 200 * MS, 2 * SEC);
	expect_normal("REQ flood, one source", b, &l);
	struct droce_cm_counters k;
	droce_cm_get_counters(b->h[SRV].ctx, &k);
	assert_true(k.conns <= 64);
	assert_true(k.evicted > 0);
	bed_free(b);
}

static void flood_spoofed(struct bed *b)
{
	uint8_t ip[4] = {10, (uint8_t)(bed_rand(b) % 250 + 1), (uint8_t)bed_rand(b),
			 (uint8_t)(bed_rand(b) % 250 + 1)};
	uint8_t mad[DROCE_MAD_LEN];
	bed_req_mad(b, SRV, ip, 7471, bed_rand(b) | 1, bed_rand(b), mad);
	bed_inject_mad(b, SRV, ip, b->h[ATK].mac, mad);
}

/* The same from random spoofed addresses that never answer ARP: the
 * accepted ones wait for a MAC that never comes. */
static void test_req_flood_spoofed_sources(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	struct legit l = attacked(b, flood_spoofed, 100000, 200 * MS, 2 * SEC);
	expect_normal("REQ flood, spoofed sources", b, &l);
	bed_free(b);
}

/* --------------------------------------- addresses that never answer -- */

static unsigned rej_to_attacker;
static uint64_t first_rej_at, req_at;

static void watch_rej(struct bed *b, int from, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	if (from != SRV || droce_parse(f, len, &pkt, 0) != DROCE_PARSE_OK ||
	    pkt.h.bth.dqpn != DROCE_GSI_QPN || pkt.h.payload_len != DROCE_MAD_LEN)
		return;
	struct droce_cm_msg m;
	if (droce_mad_decode(pkt.payload, DROCE_MAD_LEN, &m) == DROCE_MAD_OK &&
	    m.hdr.attr_id == DROCE_CM_ATTR_REJ && memcmp(f, b->h[ATK].mac, 6) == 0) {
		if (!rej_to_attacker++)
			first_rej_at = b->now;
	}
}

/* REQs from addresses that never answer ARP, one every 10 ms: to the
 * listened port (accepted: the server resolves the peer for its REP), each
 * sent twice (the second is answered with an MRA, to that same address),
 * and to a port nobody listens on (REJ 8). Before, each answer waited 2 s
 * for ARP at the head of the one MAD queue and every MAD to the legitimate
 * client waited behind it. */
static void unresolvable(struct bed *b)
{
	uint8_t ip[4] = {10, 77, (uint8_t)bed_rand(b), (uint8_t)(bed_rand(b) % 250 + 1)};
	uint8_t mad[DROCE_MAD_LEN];
	uint32_t id = bed_rand(b) | 1;
	bed_req_mad(b, SRV, ip, 7471, id, bed_rand(b), mad);
	bed_inject_mad(b, SRV, ip, b->h[ATK].mac, mad);
	bed_inject_mad(b, SRV, ip, b->h[ATK].mac, mad);
	bed_req_mad(b, SRV, ip, 9, bed_rand(b) | 1, bed_rand(b), mad);
	bed_inject_mad(b, SRV, ip, b->h[ATK].mac, mad);
}

static void test_unresolvable_sources(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	b->on_wire = watch_rej;
	rej_to_attacker = 0;
	req_at = b->now;
	struct legit l = attacked(b, unresolvable, 10 * MS, 1 * SEC, 4 * SEC);
	expect_normal("REQs from unresolvable IPs", b, &l);
	/* the REJs of the REQs to the closed port went back to the frame's
	 * source MAC at once, without waiting for ARP */
	assert_true(rej_to_attacker > 0);
	assert_true(first_rej_at - req_at < 1 * MS);
	bed_free(b);
}

/* The application never answers (a slow or stuck server): the REQs of a
 * flood hold their slots only until the REQ_RCVD deadline (the MRA service
 * timeout, ~17 s); the peers hear REJ 4 and the slots are free again. */
static void test_unanswered_reqs_expire(void **st)
{
	(void)st;
	struct bed *b = bed_new(NULL);
	b->server_accepts = false;
	uint8_t mad[DROCE_MAD_LEN];
	for (int i = 0; i < 20; i++) {
		bed_req_mad(b, SRV, b->h[ATK].ip, 7471, bed_rand(b) | 1, bed_rand(b), mad);
		bed_inject_mad(b, SRV, b->h[ATK].ip, b->h[ATK].mac, mad);
	}
	b->horizon = b->now + 10 * MS;
	while (b->now < b->horizon)
		bed_turn(b);
	b->horizon = 0;
	struct droce_cm_counters k0, k1;
	droce_cm_get_counters(b->h[SRV].ctx, &k0);
	assert_int_equal(k0.conns, 20);
	uint64_t end = b->now + 60 * SEC;
	while (b->now < end)
		bed_turn(b);
	droce_cm_get_counters(b->h[SRV].ctx, &k1);
	printf("security: %-26s %u conns held after the REQs, %u after 60 s\n", "unanswered REQs",
	       k0.conns, k1.conns);
	assert_int_equal(k1.conns, 0);
	bed_free(b);
}

/* ------------------------------------------------------ spoofed MADs -- */

/* The communication ID droce used to give a context's first connect: a
 * splitmix64 of a seed derived from the MAC alone (what an off-path
 * attacker computes from an address it has seen). */
static uint32_t predicted_first_lcid(const uint8_t mac[6])
{
	uint8_t g[8] = {(uint8_t)(mac[0] ^ 2), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
	uint64_t s = 0;
	for (int i = 0; i < 8; i++)
		s = s << 8 | g[i];
	s ^= 0x9E3779B97F4A7C15ull;
	uint32_t out = 0;
	for (int i = 0; i < 2; i++) { /* the TID's high half, then the first ID */
		uint64_t z = (s += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		out = (uint32_t)(z ^ (z >> 31));
	}
	return out;
}

static void mra_mad(struct bed *b, uint32_t remote_id, uint8_t mad[DROCE_MAD_LEN])
{
	struct droce_cm_msg m;
	memset(&m, 0, sizeof(m));
	droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_MRA, (uint64_t)bed_rand(b) << 32 | remote_id);
	m.u.mra.local_comm_id = bed_rand(b) | 1;
	m.u.mra.remote_comm_id = remote_id;
	m.u.mra.msg_mraed = DROCE_CM_MSG_REQ;
	m.u.mra.service_timeout = 31; /* 2.4 hours */
	assert_int_equal(droce_mad_encode(mad, DROCE_MAD_LEN, &m), DROCE_MAD_LEN);
}

/* The attacker reads the client's REQ off the wire and answers it first,
 * as the server, with an MRA: the real server's REP must still connect. */
static void observe(struct bed *b, int from, const uint8_t *f, uint32_t len)
{
	struct droce_pkt pkt;
	if (droce_parse(f, len, &pkt, 0) != DROCE_PARSE_OK || pkt.h.bth.dqpn != DROCE_GSI_QPN ||
	    pkt.h.payload_len != DROCE_MAD_LEN)
		return;
	struct droce_cm_msg m;
	if (droce_mad_decode(pkt.payload, DROCE_MAD_LEN, &m) != DROCE_MAD_OK)
		return;
	if (from == CLI && m.hdr.attr_id == DROCE_CM_ATTR_REQ && !b->seen.req_seen) {
		b->seen.req_seen = true;
		b->seen.cli_lcid = m.u.req.local_comm_id;
		b->seen.cli_tid = m.hdr.tid;
		b->seen.cli_qpn = m.u.req.local_qpn;
		memcpy(b->seen.req_mad, pkt.payload, DROCE_MAD_LEN);
		uint8_t mad[DROCE_MAD_LEN];
		mra_mad(b, m.u.req.local_comm_id, mad);
		bed_inject_mad(b, CLI, b->h[SRV].ip, b->h[SRV].mac, mad);
	}
	if (from == SRV && m.hdr.attr_id == DROCE_CM_ATTR_REP && !b->seen.rep_seen) {
		b->seen.rep_seen = true;
		b->seen.srv_lcid = m.u.rep.local_comm_id;
	}
}

static void mra_random(struct bed *b)
{
	uint8_t mad[DROCE_MAD_LEN];
	mra_mad(b, bed_rand(b), mad);
	bed_inject_mad(b, CLI, b->h[SRV].ip, b->h[SRV].mac, mad);
	/* and one with the ID the MAC used to predict */
	mra_mad(b, predicted_first_lcid(b->h[CLI].mac), mad);
	bed_inject_mad(b, CLI, b->h[SRV].ip, b->h[SRV].mac, mad);
}

static void test_spoofed_mra(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	b->on_wire = observe;
	struct legit l = attacked(b, mra_random, 100000, 10 * MS, 2 * SEC);
	assert_true(b->seen.req_seen);
	/* nobody computes the client's communication ID from its MAC any more */
	assert_int_not_equal(b->seen.cli_lcid, predicted_first_lcid(b->h[CLI].mac));
	expect_normal("spoofed MRAs", b, &l);
	bed_free(b);
}

static void req_spoofed(struct bed *b)
{
	uint8_t mad[DROCE_MAD_LEN];
	/* new connections in the client's name, random IDs and QPNs ... */
	bed_req_mad(b, SRV, b->h[CLI].ip, 7471, bed_rand(b) | 1, bed_rand(b), mad);
	bed_inject_mad(b, SRV, b->h[CLI].ip, b->h[ATK].mac, mad);
	/* ... and the client's own REQ replayed once seen */
	if (b->seen.req_seen)
		bed_inject_mad(b, SRV, b->h[CLI].ip, b->h[ATK].mac, b->seen.req_mad);
}

/* REQs claiming the client's address: they must neither crowd the client
 * out (they count against its address's share) nor end its connection. */
static void test_spoofed_req(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	b->on_wire = observe;
	struct legit l = attacked(b, req_spoofed, 100000, 200 * MS, 2 * SEC);
	expect_normal("spoofed REQs", b, &l);
	bed_free(b);
}

static void dreq_rej_random(struct bed *b)
{
	uint8_t mad[DROCE_MAD_LEN];
	struct droce_cm_msg m;
	for (int to = SRV; to <= CLI; to++) {
		int as = to == SRV ? CLI : SRV;
		memset(&m, 0, sizeof(m));
		droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_DREQ, bed_rand(b));
		m.u.dreq.local_comm_id = bed_rand(b) | 1;
		/* the side's own ID when an on-path attacker saw one, else
		 * random: the peer's half is still a guess (12.6.10) */
		uint32_t known = to == CLI ? b->seen.cli_lcid : b->seen.srv_lcid;
		m.u.dreq.remote_comm_id = known && (bed_rand(b) & 1) ? known : bed_rand(b);
		droce_mad_encode(mad, DROCE_MAD_LEN, &m);
		bed_inject_mad(b, to, b->h[as].ip, b->h[as].mac, mad);
		memset(&m, 0, sizeof(m));
		droce_mad_hdr_init(&m.hdr, DROCE_CM_ATTR_REJ, bed_rand(b));
		m.u.rej.local_comm_id = bed_rand(b) | 1;
		m.u.rej.remote_comm_id = bed_rand(b); /* a REJ of a REQ needs only the one ID */
		m.u.rej.msg_rejected = DROCE_CM_MSG_REP;
		m.u.rej.reason = DROCE_CM_REJ_STALE_CONN;
		droce_mad_encode(mad, DROCE_MAD_LEN, &m);
		bed_inject_mad(b, to, b->h[as].ip, b->h[as].mac, mad);
	}
}

/* DREQs and REJs claiming each side's peer, with random IDs (or one
 * observed ID and a guessed other), through the connect and the transfer. */
static void test_spoofed_dreq_rej(void **st)
{
	(void)st;
	baseline();
	struct bed *b = bed_new(NULL);
	b->on_wire = observe;
	struct legit l = attacked(b, dreq_rej_random, 100000, 10 * MS, 3 * SEC);
	expect_normal("spoofed DREQs and REJs", b, &l);
	bed_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_flood_one_source),
		cmocka_unit_test(test_req_flood_spoofed_sources),
		cmocka_unit_test(test_unresolvable_sources),
		cmocka_unit_test(test_unanswered_reqs_expire),
		cmocka_unit_test(test_spoofed_mra),
		cmocka_unit_test(test_spoofed_req),
		cmocka_unit_test(test_spoofed_dreq_rej),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
