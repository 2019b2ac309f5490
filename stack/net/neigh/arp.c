/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP: neighbour cache, replies, requests, announcements (see arp.h). */
#include "net/neigh/arp.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "net/neigh/classify.h"
#include "wire/bytes.h"
#include "wire/hdr.h"

#define ARP_HTYPE_ETHER 1u
#define ARP_OP_REQUEST 1u
#define ARP_OP_REPLY 2u
#define ARP_BODY_LEN 28u
#define DEFAULT_ENTRIES 64u
#define DEFAULT_TTL_NS (60ull * 1000000000ull)
#define DEFAULT_RETRY_NS (100ull * 1000000ull)
#define DEFAULT_LOCK_NS 1000000000ull

/* DISPUTED: two MACs claimed the address while we held it; unusable until
 * one claim has stood lock_ns and a request asked after it went
 * uncontradicted (see learn()). */
enum entry_state { ENTRY_FREE, ENTRY_INCOMPLETE, ENTRY_VALID, ENTRY_STATIC, ENTRY_DISPUTED };

struct entry {
	uint8_t ip[4];
	uint8_t mac[6];
	uint8_t state;
	uint64_t expires;      /* VALID: end of life */
	uint64_t last_request; /* INCOMPLETE, DISPUTED: when the last request went out */
	uint64_t disputed_until; /* DISPUTED: lock_ns after the last change of claim */
	uint64_t changed_at;     /* DISPUTED: when the claim last changed */
};

struct droce_arp {
	uint8_t mac[6];
	uint8_t ip[4];
	uint64_t ttl_ns, retry_ns, lock_ns;
	unsigned n;
	struct droce_arp_stats st;
	struct entry e[];
};

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t zero_mac[6];

static bool ip_zero(const uint8_t ip[4])
{
	return (ip[0] | ip[1] | ip[2] | ip[3]) == 0;
}

struct droce_arp *droce_arp_create(const struct droce_arp_conf *conf)
{
	if (conf == NULL || ip_zero(conf->ip) || (conf->mac[0] & 1u)) {
		errno = EINVAL;
		return NULL;
	}
	unsigned n = conf->entries ? conf->entries : DEFAULT_ENTRIES;
	struct droce_arp *arp = calloc(1, sizeof(*arp) + n * sizeof(struct entry));
	if (arp == NULL)
		return NULL;
	memcpy(arp->mac, conf->mac, 6);
	memcpy(arp->ip, conf->ip, 4);
	arp->ttl_ns = conf->ttl_ns ? conf->ttl_ns : DEFAULT_TTL_NS;
	arp->retry_ns = conf->retry_ns ? conf->retry_ns : DEFAULT_RETRY_NS;
	arp->lock_ns = conf->lock_ns ? conf->lock_ns : DEFAULT_LOCK_NS;
	arp->n = n;
	return arp;
}

void droce_arp_destroy(struct droce_arp *arp)
{
	free(arp);
}

static struct entry *find(struct droce_arp *arp, const uint8_t ip[4])
{
	for (unsigned i = 0; i < arp->n; i++)
		if (arp->e[i].state != ENTRY_FREE && memcmp(arp->e[i].ip, ip, 4) == 0)
			return &arp->e[i];
	return NULL;
}

/*
 * A slot for a new dynamic entry: a free one, else the non-static entry
 * that matters least (incomplete or expired first, then the one closest to
 * expiry). NULL when every slot is static.
 */
static struct entry *alloc_slot(struct droce_arp *arp, uint64_t now)
{
	struct entry *victim = NULL;
	uint64_t best = UINT64_MAX;
	for (unsigned i = 0; i < arp->n; i++) {
		struct entry *e = &arp->e[i];
		if (e->state == ENTRY_FREE)
			return e;
		if (e->state == ENTRY_STATIC)
			continue;
		uint64_t rank = e->state != ENTRY_VALID || e->expires <= now ? 0 : e->expires;
		if (victim == NULL || rank < best) {
			victim = e;
			best = rank;
		}
	}
	if (victim != NULL) {
		arp->st.evicted++;
		memset(victim, 0, sizeof(*victim));
	}
	return victim;
}

size_t droce_arp_build(uint8_t *out, size_t cap, uint16_t oper, const uint8_t eth_dst[6],
		       const uint8_t sha[6], const uint8_t spa[4], const uint8_t tha[6],
		       const uint8_t tpa[4])
{
	if (out == NULL || cap < DROCE_ARP_FRAME_LEN ||
	    (oper != ARP_OP_REQUEST && oper != ARP_OP_REPLY))
		return 0;
	memset(out, 0, DROCE_ARP_FRAME_LEN);
	memcpy(out, eth_dst, 6);
	memcpy(out + 6, sha, 6);
	droce_put_be16(out + 12, DROCE_ETHERTYPE_ARP);
	uint8_t *a = out + 14;
	droce_put_be16(a, ARP_HTYPE_ETHER);
	droce_put_be16(a + 2, DROCE_ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	droce_put_be16(a + 6, oper);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	return DROCE_ARP_FRAME_LEN;
}

/*
 * Record a sender's address. @p create: make a new entry if absent.
 *
 * ARP has no authentication: anyone on the segment can answer for any
 * address, and whoever answers first fills an empty entry. What we can
 * refuse is to be talked out of an answer silently: a different MAC for an
 * address we hold (not expired) is a conflict, counted, and makes the
 * entry DISPUTED: lookups fail and resolve asks again (every retry_ns)
 * until the latest claim has stood lock_ns and a request asked after it
 * drew no other answer within retry_ns. Silence does not settle it (a liar
 * answering last would win), an unanswered question does. A forged reply
 * racing the genuine one (or the reverse) then ends in a refused
 * connection while both keep answering, visible in mac_conflicts, never in
 * one quietly redirected; a real move (NIC failover, its gratuitous ARP)
 * is taken once the old MAC is silent. Connected QPs keep the MAC their
 * address vector was given.
 */
static void learn(struct droce_arp *arp, const uint8_t ip[4], const uint8_t mac[6], bool create,
		  uint64_t now)
{
	struct entry *e = find(arp, ip);
	if (e != NULL && e->state == ENTRY_STATIC)
		return; /* the administrator's word wins over the wire */
	if (e == NULL) {
		if (!create)
			return;
		e = alloc_slot(arp, now);
		if (e == NULL)
			return;
		memcpy(e->ip, ip, 4);
	} else if (e->state == ENTRY_DISPUTED ||
		   (e->state == ENTRY_VALID && e->expires > now && memcmp(e->mac, mac, 6) != 0)) {
		if (e->state == ENTRY_DISPUTED && memcmp(e->mac, mac, 6) == 0)
			return; /* the standing claim again: its lock runs on */
		arp->st.mac_conflicts++;
		memcpy(e->mac, mac, 6);
		e->state = ENTRY_DISPUTED;
		e->changed_at = now;
		e->disputed_until = now + arp->lock_ns;
		e->expires = e->disputed_until + arp->ttl_ns;
		return;
	}
	memcpy(e->mac, mac, 6);
	e->state = ENTRY_VALID;
	e->expires = now + arp->ttl_ns;
	arp->st.learned++;
}

/* A DISPUTED entry whose last claim stood lock_ns, asked about since and
 * not contradicted within retry_ns of the question: VALID with it. */
static void settle(const struct droce_arp *arp, struct entry *e, uint64_t now)
{
	if (e->state == ENTRY_DISPUTED && now >= e->disputed_until && e->last_request > e->changed_at &&
	    now - e->last_request >= arp->retry_ns)
		e->state = ENTRY_VALID;
}

size_t droce_arp_input(struct droce_arp *arp, const uint8_t *frame, size_t len,
		       uint64_t now, uint8_t *out, size_t cap)
{
	if (arp == NULL || frame == NULL)
		return 0;
	size_t l3 = droce_net_l3_off(frame, len);
	if (len < l3 + ARP_BODY_LEN || droce_get_be16(frame + l3 - 2) != DROCE_ETHERTYPE_ARP) {
		arp->st.rx_bad++;
		return 0;
	}
	const uint8_t *a = frame + l3;
	uint16_t oper = droce_get_be16(a + 6);
	const uint8_t *sha = a + 8, *spa = a + 14, *tpa = a + 24;
	if (droce_get_be16(a) != ARP_HTYPE_ETHER || droce_get_be16(a + 2) != DROCE_ETHERTYPE_IPV4 ||
	    a[4] != 6 || a[5] != 4 || (oper != ARP_OP_REQUEST && oper != ARP_OP_REPLY) ||
	    (sha[0] & 1u) || memcmp(sha, zero_mac, 6) == 0) {
		arp->st.rx_bad++;
		return 0;
	}
	if (oper == ARP_OP_REQUEST)
		arp->st.rx_requests++;
	else
		arp->st.rx_replies++;
	bool for_us = memcmp(tpa, arp->ip, 4) == 0;
	if (memcmp(spa, arp->ip, 4) == 0) {
		/* Our own announcement echoed back, or a duplicate address. */
		if (memcmp(sha, arp->mac, 6) != 0)
			arp->st.conflicts++;
		return 0;
	}
	/* RFC 5227 probes have a zero sender IP: nothing to learn. */
	if (!ip_zero(spa))
		learn(arp, spa, sha, for_us, now);
	if (oper != ARP_OP_REQUEST || !for_us || out == NULL)
		return 0;
	size_t tag = l3 - 14;
	if (cap < DROCE_ARP_FRAME_LEN + tag)
		return 0;
	/* The reply goes back to the sender (its Ethernet source, not sha). */
	uint8_t dst[6];
	memcpy(dst, frame + 6, 6);
	uint8_t body[DROCE_ARP_FRAME_LEN];
	droce_arp_build(body, sizeof(body), ARP_OP_REPLY, dst, arp->mac, arp->ip, sha, spa);
	if (tag != 0) {
		memcpy(out, body, 12);
		memcpy(out + 12, frame + 12, 4); /* 802.1Q TPID + TCI */
		memcpy(out + 16, body + 12, DROCE_ARP_FRAME_LEN - 12);
	} else {
		memcpy(out, body, DROCE_ARP_FRAME_LEN);
	}
	arp->st.tx_replies++;
	return DROCE_ARP_FRAME_LEN + tag;
}

int droce_arp_lookup(struct droce_arp *arp, const uint8_t ip[4], uint8_t mac[6], uint64_t now)
{
	if (arp == NULL || ip == NULL || mac == NULL)
		return -EINVAL;
	struct entry *e = find(arp, ip);
	if (e != NULL)
		settle(arp, e, now);
	if (e == NULL || e->state == ENTRY_INCOMPLETE || e->state == ENTRY_DISPUTED)
		return -ENOENT;
	if (e->state == ENTRY_VALID && e->expires <= now) {
		arp->st.expired++;
		return -ENOENT;
	}
	memcpy(mac, e->mac, 6);
	return 0;
}

int droce_arp_resolve(struct droce_arp *arp, const uint8_t ip[4], uint8_t mac[6], uint64_t now,
		      uint8_t *req, size_t cap, size_t *req_len)
{
	if (arp == NULL || ip == NULL || mac == NULL || req_len == NULL || ip_zero(ip))
		return -EINVAL;
	*req_len = 0;
	if (droce_arp_lookup(arp, ip, mac, now) == 0)
		return 0;
	struct entry *e = find(arp, ip);
	if (e == NULL) {
		e = alloc_slot(arp, now);
		if (e == NULL)
			return -ENOSPC;
		memcpy(e->ip, ip, 4);
		e->state = ENTRY_INCOMPLETE;
	} else if (e->state == ENTRY_VALID) {
		/* Expired: keep the slot, ask again. */
		e->state = ENTRY_INCOMPLETE;
	} else if (e->state == ENTRY_STATIC) {
		return -EAGAIN; /* not reached: lookup answered */
	} else if (e->last_request != 0 && now - e->last_request < arp->retry_ns) {
		/* INCOMPLETE, or DISPUTED: asking again lets every claimant answer */
		return -EAGAIN;
	}
	size_t n = droce_arp_build(req, cap, ARP_OP_REQUEST, bcast, arp->mac, arp->ip, zero_mac, ip);
	if (n != 0) {
		/* now == 0 would read as "never sent"; 1 ns later is the same moment. */
		e->last_request = now ? now : 1;
		arp->st.tx_requests++;
		*req_len = n;
	}
	return -EAGAIN;
}

int droce_arp_add_static(struct droce_arp *arp, const uint8_t ip[4], const uint8_t mac[6])
{
	if (arp == NULL || ip == NULL || mac == NULL || ip_zero(ip))
		return -EINVAL;
	struct entry *e = find(arp, ip);
	if (e == NULL)
		e = alloc_slot(arp, 0);
	if (e == NULL)
		return -ENOSPC;
	memcpy(e->ip, ip, 4);
	memcpy(e->mac, mac, 6);
	e->state = ENTRY_STATIC;
	e->expires = UINT64_MAX;
	return 0;
}

int droce_arp_delete(struct droce_arp *arp, const uint8_t ip[4])
{
	if (arp == NULL || ip == NULL)
		return -EINVAL;
	struct entry *e = find(arp, ip);
	if (e == NULL)
		return -ENOENT;
	memset(e, 0, sizeof(*e));
	return 0;
}

size_t droce_arp_gratuitous(struct droce_arp *arp, uint8_t *out, size_t cap)
{
	if (arp == NULL)
		return 0;
	size_t n = droce_arp_build(out, cap, ARP_OP_REQUEST, bcast, arp->mac, arp->ip, zero_mac,
				   arp->ip);
	if (n != 0)
		arp->st.tx_gratuitous++;
	return n;
}

int droce_arp_get_stats(const struct droce_arp *arp, struct droce_arp_stats *out)
{
	if (arp == NULL || out == NULL)
		return -EINVAL;
	*out = arp->st;
	return 0;
}
