/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Impairment shim (see impair.h). Decisions come from rules first, then
 * from a splitmix64 stream: one draw per probability per frame, always in
 * the same order, so a seed reproduces a run exactly.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/diag/impair.h"
#include "base/splitmix64.h"
#include "wire/bytes.h"
#include "wire/hdr.h"
#include "wire/opcode.h"

struct held {
	void *handle;
	uint32_t left;          /* later frames still to pass */
};

struct rule_slot {
	struct droce_impair_rule r;
	uint64_t hits;
};

struct droce_impair {
	struct droce_impair_spec spec;
	uint64_t rng;
	uint64_t rng_ecn;       /* its own stream: ecn=P leaves the other draws unchanged */
	struct rule_slot rules[DROCE_IMPAIR_MAX_RULES];
	unsigned nrules;
	/* Held handles in arrival order: a small array, compacted on release. */
	struct held held[DROCE_IMPAIR_MAX_HELD];
	unsigned nheld;
	struct droce_impair_stats st;
};

/* The shim's stream: base/splitmix64.h, seedable with any value. */
static uint64_t next_u64(uint64_t *s)
{
	return droce_splitmix64(s);
}

/* Uniform in [0, 1) with 53 bits. */
static double next_unit(uint64_t *s)
{
	return droce_splitmix64_unit(s);
}

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0; /* also false for NaN */
}

static bool spec_ok(const struct droce_impair_spec *s)
{
	return prob_ok(s->drop) && prob_ok(s->reorder) && prob_ok(s->dup) &&
	       prob_ok(s->corrupt) && prob_ok(s->ecn) && s->reorder_depth >= 1 &&
	       s->reorder_depth <= DROCE_IMPAIR_MAX_HELD;
}

/* ------------------------------------------------------------ parsing -- */

static int fail(char *err, size_t errlen, const char *fmt, const char *a, size_t alen)
{
	if (err && errlen) {
		char tok[64];
		size_t n = alen < sizeof(tok) - 1 ? alen : sizeof(tok) - 1;
		memcpy(tok, a, n);
		tok[n] = '\0';
		snprintf(err, errlen, fmt, tok);
	}
	return -EINVAL;
}

int droce_impair_parse(const char *s, struct droce_impair_spec *out, char *err, size_t errlen)
{
	static const char *const keys[] = {"drop", "reorder", "dup", "corrupt", "seed",
					   "reorder_depth", "ecn"};
	struct droce_impair_spec sp = {.reorder_depth = DROCE_IMPAIR_DEFAULT_REORDER_DEPTH};
	unsigned seen = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	if (!s)
		s = "";
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		size_t klen, vlen;
		unsigned k;
		char val[64];

		if (len == 0)
			return fail(err, errlen, "impair: empty item in spec%s", "", 0);
		if (!eq)
			return fail(err, errlen, "impair: '%s' is not key=value", s, len);
		klen = (size_t)(eq - s);
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strlen(keys[k]) == klen && !memcmp(keys[k], s, klen))
				break;
		if (k == sizeof(keys) / sizeof(keys[0]))
			return fail(err, errlen,
				    "impair: unknown key '%s' (drop, reorder, dup, corrupt, ecn, seed, reorder_depth)",
				    s, klen);
		if (seen & (1u << k))
			return fail(err, errlen, "impair: key '%s' given twice", s, klen);
		seen |= 1u << k;
		vlen = len - klen - 1;
		if (vlen == 0 || vlen >= sizeof(val))
			return fail(err, errlen, "impair: bad value for '%s'", s, klen);
		memcpy(val, eq + 1, vlen);
		val[vlen] = '\0';
		if (k <= 3 || k == 6) {
			char *e;
			double p;
			if (val[0] == '-' || val[0] == '+' || val[0] == ' ')
				return fail(err, errlen,
					    "impair: '%s' needs a probability in [0, 1]", s, len);
			p = strtod(val, &e);
			if (*e != '\0' || !prob_ok(p))
				return fail(err, errlen,
					    "impair: '%s' needs a probability in [0, 1]", s, len);
			if (k == 0)
				sp.drop = p;
			else if (k == 1)
				sp.reorder = p;
			else if (k == 2)
				sp.dup = p;
			else if (k == 3)
				sp.corrupt = p;
			else
				sp.ecn = p;
		} else {
			char *e;
			unsigned long long v;
			if (val[0] < '0' || val[0] > '9')
				return fail(err, errlen,
					    "impair: '%s' needs an unsigned integer", s, len);
			errno = 0;
			v = strtoull(val, &e, 0);
			if (*e != '\0' || errno == ERANGE)
				return fail(err, errlen,
					    "impair: '%s' needs an unsigned integer", s, len);
			if (k == 4) {
				sp.seed = v;
			} else {
				if (v < 1 || v > DROCE_IMPAIR_MAX_HELD)
					return fail(err, errlen,
						    "impair: '%s' out of range (1..64)", s, len);
				sp.reorder_depth = (uint32_t)v;
			}
		}
		s += len;
		if (*s == ',') {
			s++;
			if (*s == '\0')
				return fail(err, errlen, "impair: trailing ','%s", "", 0);
		}
	}
	*out = sp;
	return 0;
}

const char *droce_impair_action_name(enum droce_impair_action a)
{
	switch (a) {
	case DROCE_IMPAIR_PASS: return "PASS";
	case DROCE_IMPAIR_DROP: return "DROP";
	case DROCE_IMPAIR_DUP: return "DUP";
	case DROCE_IMPAIR_HOLD: return "HOLD";
	case DROCE_IMPAIR_CORRUPT: return "CORRUPT";
	case DROCE_IMPAIR_MARK_ECN: return "MARK_ECN";
	}
	return "UNKNOWN";
}

/* ----------------------------------------------------------- lifetime -- */

struct droce_impair *droce_impair_create(const struct droce_impair_spec *spec)
{
	struct droce_impair_spec none = {.reorder_depth = DROCE_IMPAIR_DEFAULT_REORDER_DEPTH};
	struct droce_impair *imp;

	if (!spec)
		spec = &none;
	if (!spec_ok(spec)) {
		errno = EINVAL;
		return NULL;
	}
	imp = calloc(1, sizeof(*imp));
	if (!imp) {
		errno = ENOMEM;
		return NULL;
	}
	imp->spec = *spec;
	imp->rng = spec->seed;
	imp->rng_ecn = spec->seed ^ 0xEC0EC0EC0EC0EC0Eull;
	return imp;
}

void droce_impair_destroy(struct droce_impair *imp)
{
	free(imp);
}

int droce_impair_set_spec(struct droce_impair *imp, const struct droce_impair_spec *spec)
{
	if (!imp || !spec || !spec_ok(spec))
		return -EINVAL;
	imp->spec = *spec;
	imp->rng = spec->seed;
	imp->rng_ecn = spec->seed ^ 0xEC0EC0EC0EC0EC0Eull;
	return 0;
}

int droce_impair_add_rule(struct droce_impair *imp, const struct droce_impair_rule *r)
{
	if (!imp || !r)
		return -EINVAL;
	switch (r->action) {
	case DROCE_IMPAIR_DROP:
	case DROCE_IMPAIR_DUP:
	case DROCE_IMPAIR_CORRUPT:
	case DROCE_IMPAIR_MARK_ECN:
		break;
	case DROCE_IMPAIR_HOLD:
		if (r->hold < 1 || r->hold > DROCE_IMPAIR_MAX_HELD)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (r->psn > DROCE_PSN_MASK || r->dqpn > DROCE_QPN_MASK)
		return -EINVAL;
	if (imp->nrules == DROCE_IMPAIR_MAX_RULES)
		return -ENOSPC;
	imp->rules[imp->nrules].r = *r;
	imp->rules[imp->nrules].hits = 0;
	imp->nrules++;
	return 0;
}

void droce_impair_clear_rules(struct droce_impair *imp)
{
	if (imp)
		imp->nrules = 0;
}

/* ----------------------------------------------------------- deciding -- */

/* Where the BTH of a RoCEv2 frame starts, or 0 (A17.4: UDP port 4791). */
static uint32_t bth_offset(const uint8_t *f, uint32_t len)
{
	uint32_t off = 14;
	uint16_t et;
	uint8_t proto;

	if (len < 14)
		return 0;
	et = droce_get_be16(f + 12);
	if (et == DROCE_ETHERTYPE_VLAN) {
		if (len < 18)
			return 0;
		et = droce_get_be16(f + 16);
		off = 18;
	}
	if (et == DROCE_ETHERTYPE_IPV4) {
		uint32_t ihl;
		if (len < off + 20)
			return 0;
		ihl = (f[off] & 0x0Fu) * 4u;
		proto = f[off + 9];
		if (ihl < 20)
			return 0;
		off += ihl;
	} else if (et == DROCE_ETHERTYPE_IPV6) {
		if (len < off + 40)
			return 0;
		proto = f[off + 6];
		off += 40;
	} else {
		return 0;
	}
	if (proto != DROCE_IPPROTO_UDP || len < off + 8 ||
	    droce_get_be16(f + off + 2) != DROCE_UDP_PORT)
		return 0;
	off += 8;
	return len >= off + DROCE_BTH_LEN ? off : 0;
}

/*
 * Mark an ECN-capable IP packet Congestion Experienced, as a congested
 * switch would (RFC 3168; A17.9 for RoCEv2). Not-ECT packets are left
 * alone. IPv4: the header checksum is updated. @return 1 if marked.
 */
static int mark_ce(uint8_t *f, uint32_t len)
{
	uint32_t off = 14;
	uint16_t et;

	if (len < 14)
		return 0;
	et = droce_get_be16(f + 12);
	if (et == DROCE_ETHERTYPE_VLAN) {
		if (len < 18)
			return 0;
		et = droce_get_be16(f + 16);
		off = 18;
	}
	if (et == DROCE_ETHERTYPE_IPV4) {
		uint32_t ihl, sum = 0;
		if (len < off + 20 || (f[off + 1] & 3u) == 0 || (f[off + 1] & 3u) == 3u)
			return 0;
		ihl = (f[off] & 0x0Fu) * 4u;
		if (ihl < 20 || len < off + ihl)
			return 0;
		f[off + 1] |= 3u;
		f[off + 10] = f[off + 11] = 0;
		for (uint32_t i = 0; i < ihl; i += 2)
			sum += droce_get_be16(f + off + i);
		while (sum >> 16)
			sum = (sum & 0xFFFFu) + (sum >> 16);
		droce_put_be16(f + off + 10, (uint16_t)~sum);
		return 1;
	}
	if (et == DROCE_ETHERTYPE_IPV6) {
		/* traffic class: low nibble of byte 0, high nibble of byte 1; ECN is its low 2 bits */
		uint8_t ecn;
		if (len < off + 40)
			return 0;
		ecn = (uint8_t)((f[off + 1] >> 4) & 3u);
		if (ecn == 0 || ecn == 3)
			return 0;
		f[off + 1] |= 0x30u;
		return 1;
	}
	return 0;
}

static bool rule_matches(const struct droce_impair_rule *r, uint64_t nth,
			 const uint8_t *f, uint32_t bth)
{
	if ((r->match & DROCE_IMPAIR_M_NTH) && r->nth != nth)
		return false;
	if (r->match & (DROCE_IMPAIR_M_OPCODE | DROCE_IMPAIR_M_PSN | DROCE_IMPAIR_M_DQPN)) {
		if (!bth)
			return false;
		if ((r->match & DROCE_IMPAIR_M_OPCODE) && f[bth] != r->opcode)
			return false;
		if ((r->match & DROCE_IMPAIR_M_DQPN) && droce_get_be24(f + bth + 5) != r->dqpn)
			return false;
		if ((r->match & DROCE_IMPAIR_M_PSN) && droce_get_be24(f + bth + 9) != r->psn)
			return false;
	}
	return true;
}

static void age_held(struct droce_impair *imp)
{
	for (unsigned i = 0; i < imp->nheld; i++)
		if (imp->held[i].left)
			imp->held[i].left--;
}

struct droce_impair_verdict droce_impair_decide(struct droce_impair *imp, uint8_t *frame,
						uint32_t len, void *handle)
{
	struct droce_impair_verdict v = {.action = DROCE_IMPAIR_PASS};
	bool decided = false;
	uint64_t nth;
	uint32_t bth;

	/* Frames already held wait for this one to pass. */
	age_held(imp);
	nth = ++imp->st.frames;
	bth = imp->nrules ? bth_offset(frame, len) : 0;

	for (unsigned i = 0; i < imp->nrules; i++) {
		struct rule_slot *rs = &imp->rules[i];
		const struct droce_impair_rule *r = &rs->r;

		if (r->count && rs->hits >= r->count)
			continue;
		if (r->action != DROCE_IMPAIR_CORRUPT && r->action != DROCE_IMPAIR_MARK_ECN && decided)
			continue;
		if (!rule_matches(r, nth, frame, bth))
			continue;
		rs->hits++;
		imp->st.rule_hits++;
		if (r->action == DROCE_IMPAIR_CORRUPT) {
			if (r->offset < len) {
				frame[r->offset] ^= r->xor_mask ? r->xor_mask : 0xFFu;
				v.corrupted = 1;
			}
			continue;
		}
		if (r->action == DROCE_IMPAIR_MARK_ECN) {
			v.ecn_marked |= mark_ce(frame, len);
			continue;
		}
		v.action = r->action;
		v.hold = r->hold;
		decided = true;
	}

	/*
	 * Probabilities: always four draws in the same order (when any is
	 * non-zero), whatever the rules decided, so rules do not shift the
	 * random stream of a seeded run.
	 */
	if (imp->spec.drop > 0 || imp->spec.dup > 0 || imp->spec.reorder > 0 ||
	    imp->spec.corrupt > 0) {
		double d = next_unit(&imp->rng), u = next_unit(&imp->rng);
		double o = next_unit(&imp->rng), c = next_unit(&imp->rng);
		uint64_t x = next_u64(&imp->rng);

		if (c < imp->spec.corrupt && len > 14) {
			/*
			 * Flip a byte past the Ethernet header: an Ethernet FCS
			 * would catch damage there, the ICRC is what guards the
			 * rest end to end (A17.4.5.1).
			 */
			frame[14 + (uint32_t)(x % (len - 14))] ^= (uint8_t)((x >> 32) | 1u);
			v.corrupted = 1;
		}
		if (!decided) {
			if (d < imp->spec.drop) {
				v.action = DROCE_IMPAIR_DROP;
			} else if (u < imp->spec.dup) {
				v.action = DROCE_IMPAIR_DUP;
			} else if (o < imp->spec.reorder) {
				v.action = DROCE_IMPAIR_HOLD;
				v.hold = 1 + (uint32_t)((x >> 40) % imp->spec.reorder_depth);
			}
		}
	}

	if (v.action == DROCE_IMPAIR_HOLD) {
		if (imp->nheld == DROCE_IMPAIR_MAX_HELD) {
			imp->st.hold_overflow++;
			v.action = DROCE_IMPAIR_PASS;
			v.hold = 0;
		} else {
			imp->held[imp->nheld].handle = handle;
			imp->held[imp->nheld].left = v.hold;
			imp->nheld++;
		}
	}
	if (imp->spec.ecn > 0 && next_unit(&imp->rng_ecn) < imp->spec.ecn)
		v.ecn_marked |= mark_ce(frame, len);
	if (v.corrupted)
		imp->st.corrupted++;
	if (v.ecn_marked)
		imp->st.ecn_marked++;
	switch (v.action) {
	case DROCE_IMPAIR_DROP: imp->st.dropped++; break;
	case DROCE_IMPAIR_DUP: imp->st.duplicated++; break;
	case DROCE_IMPAIR_HOLD: imp->st.held++; break;
	default: imp->st.passed++; break;
	}
	return v;
}

static unsigned take(struct droce_impair *imp, void **out, unsigned n, bool all)
{
	unsigned got = 0, keep = 0;

	for (unsigned i = 0; i < imp->nheld; i++) {
		if (got < n && (all || imp->held[i].left == 0)) {
			out[got++] = imp->held[i].handle;
		} else {
			imp->held[keep++] = imp->held[i];
		}
	}
	imp->nheld = keep;
	imp->st.released += got;
	return got;
}

unsigned droce_impair_release(struct droce_impair *imp, void **out, unsigned n)
{
	return take(imp, out, n, false);
}

unsigned droce_impair_flush(struct droce_impair *imp, void **out, unsigned n)
{
	return take(imp, out, n, true);
}

unsigned droce_impair_held(const struct droce_impair *imp)
{
	return imp->nheld;
}

void droce_impair_get_stats(const struct droce_impair *imp, struct droce_impair_stats *out)
{
	*out = imp->st;
}

uint64_t droce_impair_rule_hits(const struct droce_impair *imp, unsigned idx)
{
	return idx < imp->nrules ? imp->rules[idx].hits : 0;
}
