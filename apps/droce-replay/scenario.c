/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Scenario text parser. One directive per line, '#' starts a comment,
 * tokens are separated by blanks, options are key=value. Every error names
 * the file and line. The grammar is in pcap/README.md.
 */
#include "scenario.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <droce/params.h>
#include <droce/verbs.h>

#define MAX_TOK 64
#define MAX_WRS 65536
#define MAX_MEMS 4096
#define MAX_WCS 65536
#define MAX_LIST 1048576u /* skip-frame, expect-gap, lost, deliver entries */

struct pctx {
	struct droce_rp_scenario *s;
	const char *path;
	char dir[4096];
	unsigned line;
	char *err;
	size_t errlen;
	unsigned wr_cap, mem_cap, wc_cap, skip_cap, gap_cap, lost_cap, deliver_cap, late_cap;
};

/* @p rel relative to @p dir (absolute paths stay). @return 0 or -1 if too long. */
static int join_path(char *out, size_t cap, const char *dir, const char *rel)
{
	size_t dl = strlen(dir), rl = strlen(rel);
	if (rel[0] == '/') {
		if (rl + 1 > cap)
			return -1;
		memcpy(out, rel, rl + 1);
		return 0;
	}
	if (dl + rl + 2 > cap)
		return -1;
	memcpy(out, dir, dl);
	out[dl] = '/';
	memcpy(out + dl + 1, rel, rl + 1);
	return 0;
}

static int fail(struct pctx *c, const char *fmt, ...)
{
	int n = snprintf(c->err, c->errlen, "%s:%u: ", c->path, c->line);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *const status_names[] = {
	[DROCE_WC_SUCCESS] = "SUCCESS",
	[DROCE_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
	[DROCE_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
	[DROCE_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
	[DROCE_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
	[DROCE_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
	[DROCE_WC_MW_BIND_ERR] = "MW_BIND_ERR",
	[DROCE_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
	[DROCE_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
	[DROCE_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
	[DROCE_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
	[DROCE_WC_REM_OP_ERR] = "REM_OP_ERR",
	[DROCE_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
	[DROCE_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
	[DROCE_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
	[DROCE_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
	[DROCE_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
	[DROCE_WC_INV_EECN_ERR] = "INV_EECN_ERR",
	[DROCE_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
	[DROCE_WC_FATAL_ERR] = "FATAL_ERR",
	[DROCE_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
	[DROCE_WC_GENERAL_ERR] = "GENERAL_ERR",
};

const char *droce_rp_status_name(int status)
{
	if (status < 0 || (size_t)status >= sizeof(status_names) / sizeof(status_names[0]))
		return NULL;
	return status_names[status];
}

static const struct { const char *name; int op; } wc_ops[] = {
	{"send", DROCE_WC_SEND}, {"write", DROCE_WC_RDMA_WRITE}, {"read", DROCE_WC_RDMA_READ},
	{"cas", DROCE_WC_COMP_SWAP}, {"faa", DROCE_WC_FETCH_ADD}, {"recv", DROCE_WC_RECV},
	{"recv-imm", DROCE_WC_RECV_RDMA_WITH_IMM},
};

const char *droce_rp_wc_opcode_name(int opcode)
{
	for (size_t i = 0; i < sizeof(wc_ops) / sizeof(wc_ops[0]); i++)
		if (wc_ops[i].op == opcode)
			return wc_ops[i].name;
	return NULL;
}

static const char *const op_names[] = {
	[DROCE_RP_OP_SEND] = "send", [DROCE_RP_OP_SEND_IMM] = "send-imm",
	[DROCE_RP_OP_WRITE] = "write", [DROCE_RP_OP_WRITE_IMM] = "write-imm",
	[DROCE_RP_OP_READ] = "read", [DROCE_RP_OP_CAS] = "cas", [DROCE_RP_OP_FAA] = "faa",
};

const char *droce_rp_op_name(enum droce_rp_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

int droce_rp_parse_ip(const char *s, uint8_t ip[16])
{
	memset(ip, 0, 16);
	if (inet_pton(AF_INET, s, ip) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, ip) == 1)
		return 6;
	return 0;
}

const char *droce_rp_fmt_ip(int version, const uint8_t ip[16], char *buf, size_t len)
{
	if (!inet_ntop(version == 4 ? AF_INET : AF_INET6, ip, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int droce_rp_find_mr(const struct droce_rp_scenario *s, const char *name)
{
	for (unsigned i = 0; i < s->nmrs; i++)
		if (!strcmp(s->mrs[i].name, name))
			return (int)i;
	return -1;
}

int droce_rp_find_qp(const struct droce_rp_scenario *s, const char *name)
{
	for (unsigned i = 0; i < s->nqps; i++)
		if (!strcmp(s->qps[i].name, name))
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------ values -- */

static int parse_u64(struct pctx *c, const char *what, const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	if (!*v || *v == '-')
		return fail(c, "%s: '%s' is not a number", what, v);
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end)
		return fail(c, "%s: '%s' is not a number", what, v);
	if (x > max)
		return fail(c, "%s: %s is larger than %" PRIu64, what, v, max);
	*out = x;
	return 0;
}

static int parse_u32(struct pctx *c, const char *what, const char *v, uint32_t max, uint32_t *out)
{
	uint64_t x = 0; /* set on success; -O3 cannot see fail() returns non-zero */
	int r = parse_u64(c, what, v, max, &x);
	if (!r)
		*out = (uint32_t)x;
	return r;
}

static int parse_u8(struct pctx *c, const char *what, const char *v, uint8_t max, uint8_t *out)
{
	uint64_t x = 0; /* set on success; -O3 cannot see fail() returns non-zero */
	int r = parse_u64(c, what, v, max, &x);
	if (!r)
		*out = (uint8_t)x;
	return r;
}

/* "12ns", "3.5us", "1ms", "2s"; a bare number is seconds. */
static int parse_time(struct pctx *c, const char *what, const char *v, uint64_t *ns)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	double mul;
	if (errno || end == v || x < 0)
		return fail(c, "%s: '%s' is not a time (e.g. 10us, 1.5ms, 2s)", what, v);
	if (!strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s") || !*end)
		mul = 1e9;
	else
		return fail(c, "%s: '%s' has an unknown unit (ns, us, ms, s)", what, v);
	if (x * mul > (double)DROCE_RP_TIME_MAX_NS)
		return fail(c, "%s: '%s' is too long", what, v);
	*ns = (uint64_t)(x * mul + 0.5);
	return 0;
}

static int parse_mac(struct pctx *c, const char *v, uint8_t mac[6])
{
	unsigned b[6];
	char tail;
	if (sscanf(v, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return fail(c, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", v);
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return fail(c, "'%s' is not a MAC address", v);
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static int parse_access(struct pctx *c, const char *v, unsigned *out)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", v);
	*out = 0;
	if (!strcmp(v, "none"))
		return 0;
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "lw"))
			*out |= DROCE_RP_ACC_LW;
		else if (!strcmp(t, "rw"))
			*out |= DROCE_RP_ACC_RW;
		else if (!strcmp(t, "rr"))
			*out |= DROCE_RP_ACC_RR;
		else if (!strcmp(t, "ra"))
			*out |= DROCE_RP_ACC_RA;
		else
			return fail(c, "access: unknown right '%s' (lw, rw, rr, ra, none)", t);
	}
	return 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/*
 * Data: hex:00ff.. | text:STRING | file:PATH | zero:LEN | byte:V:LEN |
 * pattern:inc:LEN (byte i = i & 0xff). Allocates *out.
 */
/* The most bytes one data value may make (zero:, byte:, pattern:, file:):
 * the largest a fixture uses is 512; a reader asked for a gigabyte of
 * zeros by a hostile or mistyped file spends seconds filling it. */
#define RP_DATA_MAX (16u << 20)

static int parse_data(struct pctx *c, const char *v, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!strncmp(v, "hex:", 4)) {
		const char *h = v + 4;
		size_t n = strlen(h);
		if (n % 2)
			return fail(c, "hex data has an odd number of digits");
		uint8_t *b = malloc(n / 2 + 1);
		if (!b)
			return -ENOMEM;
		for (size_t i = 0; i < n / 2; i++) {
			int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				free(b);
				return fail(c, "hex data: '%c%c' is not a hex byte", h[2 * i], h[2 * i + 1]);
			}
			b[i] = (uint8_t)(hi << 4 | lo);
		}
		*out = b;
		*len = n / 2;
		return 0;
	}
	if (!strncmp(v, "text:", 5)) {
		*len = strlen(v + 5);
		*out = malloc(*len + 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out, v + 5, *len);
		return 0;
	}
	if (!strncmp(v, "file:", 5)) {
		char p[8192];
		if (join_path(p, sizeof(p), c->dir, v + 5))
			return fail(c, "file: path too long");
		FILE *f = fopen(p, "rb");
		if (!f)
			return fail(c, "cannot open data file %s: %s", p, strerror(errno));
		size_t cap = 4096, n = 0;
		uint8_t *b = malloc(cap);
		size_t got;
		while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
			n += got;
			if (n > RP_DATA_MAX) {
				free(b);
				fclose(f);
				return fail(c, "data file %s: more than %u bytes", p, RP_DATA_MAX);
			}
			if (n == cap) {
				uint8_t *nb = realloc(b, cap * 2);
				if (!nb) {
					free(b);
					b = NULL;
					break;
				}
				b = nb;
				cap *= 2;
			}
		}
		fclose(f);
		if (!b)
			return -ENOMEM;
		*out = b;
		*len = n;
		return 0;
	}
	uint64_t n, val = 0;
	int r;
	if (!strncmp(v, "zero:", 5)) {
		if ((r = parse_u64(c, "zero", v + 5, RP_DATA_MAX, &n)))
			return r;
	} else if (!strncmp(v, "byte:", 5)) {
		char tmp[64];
		snprintf(tmp, sizeof(tmp), "%s", v + 5);
		char *colon = strchr(tmp, ':');
		if (!colon)
			return fail(c, "byte data needs byte:VALUE:LEN");
		*colon = 0;
		if ((r = parse_u64(c, "byte value", tmp, 255, &val)) ||
		    (r = parse_u64(c, "byte length", colon + 1, RP_DATA_MAX, &n)))
			return r;
	} else if (!strncmp(v, "pattern:inc:", 12)) {
		if ((r = parse_u64(c, "pattern length", v + 12, RP_DATA_MAX, &n)))
			return r;
	} else {
		return fail(c, "'%s' is not data (hex:, text:, file:, zero:, byte:V:LEN, pattern:inc:LEN)", v);
	}
	uint8_t *b = malloc(n + 1);
	if (!b)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		b[i] = !strncmp(v, "pattern", 7) ? (uint8_t)i : (uint8_t)val;
	*out = b;
	*len = n;
	return 0;
}

/* ------------------------------------------------------------ lines -- */

struct opts {
	char *key[MAX_TOK];
	char *val[MAX_TOK];
	bool used[MAX_TOK];
	int n;
};

/* Split "k=v" tokens from @p tok[first..]; bare words get val NULL. */
static void split_opts(char **tok, int ntok, int first, struct opts *o)
{
	o->n = 0;
	for (int i = first; i < ntok && o->n < MAX_TOK; i++) {
		char *eq = strchr(tok[i], '=');
		o->key[o->n] = tok[i];
		o->val[o->n] = NULL;
		o->used[o->n] = false;
		if (eq) {
			*eq = 0;
			o->val[o->n] = eq + 1;
		}
		o->n++;
	}
}

static const char *opt(struct opts *o, const char *key)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], key)) {
			o->used[i] = true;
			return o->val[i] ? o->val[i] : "";
		}
	return NULL;
}

static bool flag(struct opts *o, const char *key)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], key) && !o->val[i]) {
			o->used[i] = true;
			return true;
		}
	return false;
}

static int unused(struct pctx *c, struct opts *o, const char *dir)
{
	for (int i = 0; i < o->n; i++)
		if (!o->used[i])
			return fail(c, "%s: unknown option '%s'", dir, o->key[i]);
	return 0;
}

static int need(struct pctx *c, struct opts *o, const char *dir, const char *key, const char **v)
{
	*v = opt(o, key);
	if (!*v || !**v)
		return fail(c, "%s: missing %s=", dir, key);
	return 0;
}

static int check_name(struct pctx *c, const char *n)
{
	if (strlen(n) >= DROCE_RP_NAME_MAX)
		return fail(c, "name '%s' is longer than %d characters", n, DROCE_RP_NAME_MAX - 1);
	return 0;
}

/*
 * "qp NAME ..." and "mr NAME ...": the name is there, short enough, new
 * (@p taken: an object of that name exists), and one more of @p n fits in
 * @p max.
 */
static int new_name(struct pctx *c, char **tok, int ntok, const char *what, bool taken, unsigned n,
		    unsigned max)
{
	int r;
	if (ntok < 2)
		return fail(c, "%s: missing name", what);
	if ((r = check_name(c, tok[1])))
		return r;
	if (taken)
		return fail(c, "%s %s defined twice", what, tok[1]);
	if (n == max)
		return fail(c, "more than %u %ss", max, what[0] == 'q' ? "QP" : "MR");
	return 0;
}

/*
 * Room for one more element of @p size after the @p n in @p arr, whose
 * capacity @p *cap doubles, at most @p max (@p what names them in the
 * error). @return the array (perhaps moved), or NULL with @p *r set.
 */
static void *grow(struct pctx *c, void *arr, unsigned n, unsigned *cap, size_t size, unsigned max,
		  const char *what, int *r)
{
	if (n == max) {
		*r = fail(c, "more than %u %s", max, what);
		return NULL;
	}
	if (n < *cap)
		return arr;
	unsigned nc = *cap ? *cap * 2 : 16;
	void *na = realloc(arr, (size_t)(nc < max ? nc : max) * size);
	if (!na) {
		*r = -ENOMEM;
		return NULL;
	}
	*cap = nc < max ? nc : max;
	return na;
}

static int line_qp(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct opts o;
	const char *v;
	int r;
	if ((r = new_name(c, tok, ntok, "qp", ntok >= 2 && droce_rp_find_qp(s, tok[1]) >= 0, s->nqps,
			  DROCE_RP_MAX_QPS)))
		return r;
	struct droce_rp_qp_spec *q = &s->qps[s->nqps];
	memset(q, 0, sizeof(*q));
	snprintf(q->name, sizeof(q->name), "%s", tok[1]);
	q->line = c->line;
	q->timeout = DROCE_DEFAULT_TIMEOUT;
	q->retry = DROCE_DEFAULT_RETRY_CNT;
	q->rnr_retry = DROCE_DEFAULT_RNR_RETRY;
	q->min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
	q->max_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
	q->max_dest_rd_atomic = DROCE_DEFAULT_MAX_RD_ATOMIC;
	q->access = DROCE_RP_ACC_RW | DROCE_RP_ACC_RR | DROCE_RP_ACC_RA;
	q->mtu = 1024;
	split_opts(tok, ntok, 2, &o);
	if ((r = need(c, &o, "qp", "local", &v)) ||
	    (r = parse_u32(c, "local", v, 0xFFFFFF, &q->local_qpn)) ||
	    (r = need(c, &o, "qp", "peer", &v)) ||
	    (r = parse_u32(c, "peer", v, 0xFFFFFF, &q->peer_qpn)) ||
	    (r = need(c, &o, "qp", "peer-ip", &v)))
		return r;
	if (droce_rp_parse_ip(v, q->peer_ip) != s->ip_version)
		return fail(c, "peer-ip '%s' is not an IPv%u address (set 'ip' first)", v,
			    s->ip_version);
	if ((r = need(c, &o, "qp", "peer-mac", &v)) || (r = parse_mac(c, v, q->peer_mac)))
		return r;
	if ((v = opt(&o, "sq-psn")) && (r = parse_u32(c, "sq-psn", v, 0xFFFFFF, &q->sq_psn)))
		return r;
	if ((v = opt(&o, "rq-psn")) && (r = parse_u32(c, "rq-psn", v, 0xFFFFFF, &q->rq_psn)))
		return r;
	if ((v = opt(&o, "mtu"))) {
		if ((r = parse_u32(c, "mtu", v, 4096, &q->mtu)))
			return r;
		if (q->mtu != 256 && q->mtu != 512 && q->mtu != 1024 && q->mtu != 2048 && q->mtu != 4096)
			return fail(c, "mtu %u: must be 256, 512, 1024, 2048 or 4096", q->mtu);
	}
	if (((v = opt(&o, "timeout")) && (r = parse_u8(c, "timeout", v, 31, &q->timeout))) ||
	    ((v = opt(&o, "retry")) && (r = parse_u8(c, "retry", v, 7, &q->retry))) ||
	    ((v = opt(&o, "rnr-retry")) && (r = parse_u8(c, "rnr-retry", v, 7, &q->rnr_retry))) ||
	    ((v = opt(&o, "min-rnr-timer")) && (r = parse_u8(c, "min-rnr-timer", v, 31, &q->min_rnr_timer))) ||
	    ((v = opt(&o, "max-rd-atomic")) && (r = parse_u8(c, "max-rd-atomic", v, 255, &q->max_rd_atomic))) ||
	    ((v = opt(&o, "max-dest-rd-atomic")) && (r = parse_u8(c, "max-dest-rd-atomic", v, 255, &q->max_dest_rd_atomic))) ||
	    ((v = opt(&o, "access")) && (r = parse_access(c, v, &q->access))))
		return r;
	if ((r = unused(c, &o, "qp")))
		return r;
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].local_qpn == q->local_qpn)
			return fail(c, "qp %s: local QPN %#x already used by qp %s", q->name,
				    q->local_qpn, s->qps[i].name);
	s->nqps++;
	return 0;
}

static int line_mr(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct opts o;
	const char *v;
	int r;
	if ((r = new_name(c, tok, ntok, "mr", ntok >= 2 && droce_rp_find_mr(s, tok[1]) >= 0, s->nmrs,
			  DROCE_RP_MAX_MRS)))
		return r;
	struct droce_rp_mr_spec *m = &s->mrs[s->nmrs];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", tok[1]);
	m->line = c->line;
	split_opts(tok, ntok, 2, &o);
	if ((r = need(c, &o, "mr", "addr", &v)) ||
	    (r = parse_u64(c, "addr", v, UINT64_MAX, &m->addr)) ||
	    (r = need(c, &o, "mr", "len", &v)) ||
	    (r = parse_u64(c, "len", v, 1u << 30, &m->len)))
		return r;
	if ((v = opt(&o, "rkey"))) {
		if ((r = parse_u32(c, "rkey", v, UINT32_MAX, &m->rkey)))
			return r;
		m->has_rkey = true;
	}
	m->access = DROCE_RP_ACC_LW | DROCE_RP_ACC_RW | DROCE_RP_ACC_RR | DROCE_RP_ACC_RA;
	if ((v = opt(&o, "access")) && (r = parse_access(c, v, &m->access)))
		return r;
	if ((m->access & (DROCE_RP_ACC_RW | DROCE_RP_ACC_RA)) && !(m->access & DROCE_RP_ACC_LW))
		return fail(c, "mr %s: rw and ra need lw (IBTA 10.6.3.1)", m->name);
	if ((r = unused(c, &o, "mr")))
		return r;
	if (m->addr + m->len < m->addr)
		return fail(c, "mr %s: addr + len wraps", m->name);
	for (unsigned i = 0; m->has_rkey && i < s->nmrs; i++)
		if (s->mrs[i].has_rkey && s->mrs[i].rkey == m->rkey)
			return fail(c, "mr %s: rkey %#x already used by mr %s", m->name, m->rkey,
				    s->mrs[i].name);
	m->init = calloc(1, m->len ? m->len : 1);
	if (!m->init)
		return -ENOMEM;
	s->nmrs++;
	return 0;
}

/* "fill MR OFF DATA" and "expect-mem MR OFF DATA". */
static int line_data(struct pctx *c, char **tok, int ntok, bool expect)
{
	struct droce_rp_scenario *s = c->s;
	const char *dir = expect ? "expect-mem" : "fill";
	uint64_t off;
	int r;
	if (ntok != 4)
		return fail(c, "%s: expected '%s MR OFFSET DATA'", dir, dir);
	int mi = droce_rp_find_mr(s, tok[1]);
	if (mi < 0)
		return fail(c, "%s: no mr named '%s'", dir, tok[1]);
	if ((r = parse_u64(c, "offset", tok[2], UINT64_MAX, &off)))
		return r;
	uint8_t *b;
	size_t n;
	if ((r = parse_data(c, tok[3], &b, &n)))
		return r;
	struct droce_rp_mr_spec *m = &s->mrs[mi];
	if (off > m->len || n > m->len - off) {
		free(b);
		return fail(c, "%s: %zu bytes at offset %" PRIu64 " overrun mr %s (%" PRIu64 " bytes)",
			    dir, n, off, m->name, m->len);
	}
	if (!expect) {
		memcpy(m->init + off, b, n);
		free(b);
		return 0;
	}
	void *nm = grow(c, s->mems, s->nmems, &c->mem_cap, sizeof(*s->mems), MAX_MEMS,
			"expect-mem lines", &r);
	if (!nm) {
		free(b);
		return r;
	}
	s->mems = nm;
	s->mems[s->nmems++] = (struct droce_rp_mem_expect){
		.line = c->line, .mr = mi, .off = off, .bytes = b, .len = n };
	return 0;
}

static int parse_op(struct pctx *c, const char *v, enum droce_rp_op *op)
{
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(v, op_names[i])) {
			*op = (enum droce_rp_op)i;
			return 0;
		}
	return fail(c, "op: unknown '%s' (send, send-imm, write, write-imm, read, cas, faa)", v);
}

/* "recv QP wr=ID [mr=M off=N len=N] [at=T]" and "post QP wr=ID op=OP ...". */
static int line_wr(struct pctx *c, char **tok, int ntok, bool recv)
{
	struct droce_rp_scenario *s = c->s;
	const char *dir = recv ? "recv" : "post";
	struct opts o;
	const char *v;
	int r;
	if (ntok < 2)
		return fail(c, "%s: missing QP name", dir);
	struct droce_rp_wr_spec w = { .line = c->line, .is_recv = recv, .mr = -1 };
	w.qp = droce_rp_find_qp(s, tok[1]);
	if (w.qp < 0)
		return fail(c, "%s: no qp named '%s'", dir, tok[1]);
	split_opts(tok, ntok, 2, &o);
	if ((r = need(c, &o, dir, "wr", &v)) || (r = parse_u64(c, "wr", v, UINT64_MAX, &w.wr_id)))
		return r;
	if ((v = opt(&o, "at")) && (r = parse_time(c, "at", v, &w.at_ns)))
		return r;
	if ((v = opt(&o, "mr"))) {
		w.mr = droce_rp_find_mr(s, v);
		if (w.mr < 0)
			return fail(c, "%s: no mr named '%s'", dir, v);
		if ((v = opt(&o, "off")) && (r = parse_u64(c, "off", v, UINT64_MAX, &w.off)))
			return r;
		if ((r = need(c, &o, dir, "len", &v)) || (r = parse_u32(c, "len", v, UINT32_MAX, &w.len)))
			return r;
		const struct droce_rp_mr_spec *m = &s->mrs[w.mr];
		if (w.off > m->len || w.len > m->len - w.off)
			return fail(c, "%s: %u bytes at offset %" PRIu64 " overrun mr %s", dir, w.len,
				    w.off, m->name);
	}
	if (!recv) {
		if ((r = need(c, &o, dir, "op", &v)) || (r = parse_op(c, v, &w.op)))
			return r;
		bool rdma = w.op == DROCE_RP_OP_WRITE || w.op == DROCE_RP_OP_WRITE_IMM ||
			    w.op == DROCE_RP_OP_READ;
		bool atomic = w.op == DROCE_RP_OP_CAS || w.op == DROCE_RP_OP_FAA;
		if (rdma || atomic) {
			if ((r = need(c, &o, dir, "raddr", &v)) ||
			    (r = parse_u64(c, "raddr", v, UINT64_MAX, &w.raddr)) ||
			    (r = need(c, &o, dir, "rkey", &v)) ||
			    (r = parse_u32(c, "rkey", v, UINT32_MAX, &w.rkey)))
				return r;
		}
		if (w.op == DROCE_RP_OP_SEND_IMM || w.op == DROCE_RP_OP_WRITE_IMM) {
			if ((r = need(c, &o, dir, "imm", &v)) ||
			    (r = parse_u32(c, "imm", v, UINT32_MAX, &w.imm)))
				return r;
		}
		if (w.op == DROCE_RP_OP_CAS) {
			if ((r = need(c, &o, dir, "compare", &v)) ||
			    (r = parse_u64(c, "compare", v, UINT64_MAX, &w.compare)) ||
			    (r = need(c, &o, dir, "swap", &v)) ||
			    (r = parse_u64(c, "swap", v, UINT64_MAX, &w.swap_add)))
				return r;
		}
		if (w.op == DROCE_RP_OP_FAA) {
			if ((r = need(c, &o, dir, "add", &v)) ||
			    (r = parse_u64(c, "add", v, UINT64_MAX, &w.swap_add)))
				return r;
		}
		if (atomic && (w.mr < 0 || w.len != 8))
			return fail(c, "post: an atomic needs mr= and len=8 (the 8-byte result buffer)");
		if (flag(&o, "unsignaled"))
			w.flags |= DROCE_RP_WR_UNSIGNALED;
		if (flag(&o, "fence"))
			w.flags |= DROCE_RP_WR_FENCE;
		if (flag(&o, "solicited"))
			w.flags |= DROCE_RP_WR_SOLICITED;
		if (flag(&o, "inline"))
			w.flags |= DROCE_RP_WR_INLINE;
	}
	if ((r = unused(c, &o, dir)))
		return r;
	void *nw = grow(c, s->wrs, s->nwrs, &c->wr_cap, sizeof(*s->wrs), MAX_WRS, "work requests", &r);
	if (!nw)
		return r;
	s->wrs = nw;
	s->wrs[s->nwrs++] = w;
	return 0;
}

/* "expect-wc QP send|recv wr=ID status=S [opcode=O] [len=N] [imm=X]" or "expect-wc none". */
static int line_wc(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct opts o;
	const char *v;
	int r;
	s->check_wcs = true;
	if (ntok == 2 && !strcmp(tok[1], "none"))
		return 0;
	if (ntok < 3)
		return fail(c, "expect-wc: expected 'expect-wc QP send|recv wr=ID status=STATUS ...'");
	struct droce_rp_wc_expect w = { .line = c->line, .opcode = -1 };
	w.qp = droce_rp_find_qp(s, tok[1]);
	if (w.qp < 0)
		return fail(c, "expect-wc: no qp named '%s'", tok[1]);
	if (!strcmp(tok[2], "recv"))
		w.recv = true;
	else if (strcmp(tok[2], "send"))
		return fail(c, "expect-wc: queue '%s' is neither send nor recv", tok[2]);
	split_opts(tok, ntok, 3, &o);
	if ((r = need(c, &o, "expect-wc", "wr", &v)) ||
	    (r = parse_u64(c, "wr", v, UINT64_MAX, &w.wr_id)) ||
	    (r = need(c, &o, "expect-wc", "status", &v)))
		return r;
	w.status = -1;
	for (int i = 0; i <= DROCE_WC_GENERAL_ERR; i++) /* verbs' numbers: no hole, but do not rely on it */
		if (droce_rp_status_name(i) && !strcmp(v, droce_rp_status_name(i)))
			w.status = i;
	if (w.status < 0)
		return fail(c, "expect-wc: unknown status '%s' (SUCCESS, REM_ACCESS_ERR, ...)", v);
	if ((v = opt(&o, "opcode"))) {
		for (size_t i = 0; i < sizeof(wc_ops) / sizeof(wc_ops[0]); i++)
			if (!strcmp(v, wc_ops[i].name))
				w.opcode = wc_ops[i].op;
		if (w.opcode < 0)
			return fail(c, "expect-wc: unknown opcode '%s'", v);
	}
	if ((v = opt(&o, "len"))) {
		if ((r = parse_u32(c, "len", v, UINT32_MAX, &w.len)))
			return r;
		w.has_len = true;
	}
	if ((v = opt(&o, "imm"))) {
		if ((r = parse_u32(c, "imm", v, UINT32_MAX, &w.imm)))
			return r;
		w.has_imm = true;
	}
	if ((r = unused(c, &o, "expect-wc")))
		return r;
	void *nw = grow(c, s->wcs, s->nwcs, &c->wc_cap, sizeof(*s->wcs), MAX_WCS, "expect-wc lines", &r);
	if (!nw)
		return r;
	s->wcs = nw;
	s->wcs[s->nwcs++] = w;
	return 0;
}

static int line_skip(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	int r;
	if (ntok < 2)
		return fail(c, "skip-frame: missing frame number");
	for (int i = 1; i < ntok; i++) {
		uint32_t n;
		if ((r = parse_u32(c, "skip-frame", tok[i], UINT32_MAX, &n)))
			return r;
		if (n == 0)
			return fail(c, "skip-frame: frames are numbered from 1");
		void *ns = grow(c, s->skip, s->nskip, &c->skip_cap, sizeof(*s->skip), MAX_LIST,
				"skipped frames", &r);
		if (!ns)
			return r;
		s->skip = ns;
		s->skip[s->nskip++] = n;
	}
	return 0;
}

/* "expect-gap A B TIME" */
static int line_gap(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct droce_rp_gap g = { .line = c->line };
	int r;
	if (ntok != 4)
		return fail(c, "expect-gap: expected 'expect-gap FRAME_A FRAME_B TIME'");
	if ((r = parse_u32(c, "frame A", tok[1], UINT32_MAX, &g.a)) ||
	    (r = parse_u32(c, "frame B", tok[2], UINT32_MAX, &g.b)) ||
	    (r = parse_time(c, "gap", tok[3], &g.min_ns)))
		return r;
	if (!g.a || !g.b || g.a >= g.b)
		return fail(c, "expect-gap: frames are numbered from 1 and A must come before B");
	void *ng = grow(c, s->gaps, s->ngaps, &c->gap_cap, sizeof(*s->gaps), MAX_LIST, "expect-gap lines", &r);
	if (!ng)
		return r;
	s->gaps = ng;
	s->gaps[s->ngaps++] = g;
	return 0;
}

/* "lost QP req|resp PSN [copy=K]" */
static int line_lost(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct droce_rp_lost l = { .line = c->line };
	int r;
	if (ntok < 4 || ntok > 5 || (strcmp(tok[2], "req") && strcmp(tok[2], "resp")))
		return fail(c, "lost: expected 'lost QP req|resp PSN [copy=K]'");
	if ((l.qp = droce_rp_find_qp(s, tok[1])) < 0)
		return fail(c, "lost: unknown qp '%s'", tok[1]);
	l.resp = !strcmp(tok[2], "resp");
	if ((r = parse_u32(c, "lost PSN", tok[3], 0xFFFFFF, &l.psn)))
		return r;
	if (ntok == 5) {
		if (strncmp(tok[4], "copy=", 5))
			return fail(c, "lost: unknown option '%s'", tok[4]);
		if ((r = parse_u32(c, "copy", tok[4] + 5, 1000000, &l.copy)))
			return r;
	}
	void *nl = grow(c, s->lost, s->nlost, &c->lost_cap, sizeof(*s->lost), MAX_LIST, "lost lines", &r);
	if (!nl)
		return r;
	s->lost = nl;
	s->lost[s->nlost++] = l;
	return 0;
}

/* "deliver N at=TIME" */
static int line_deliver(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct droce_rp_deliver v = { .line = c->line };
	int r;
	if (ntok != 3 || strncmp(tok[2], "at=", 3))
		return fail(c, "deliver: expected 'deliver FRAME at=TIME'");
	if ((r = parse_u32(c, "deliver frame", tok[1], UINT32_MAX, &v.frame)) ||
	    (r = parse_time(c, "at", tok[2] + 3, &v.at_ns)))
		return r;
	if (!v.frame)
		return fail(c, "deliver: frames are numbered from 1");
	void *nv = grow(c, s->delivers, s->ndelivers, &c->deliver_cap, sizeof(*s->delivers), MAX_LIST,
			"deliver lines", &r);
	if (!nv)
		return r;
	s->delivers = nv;
	s->delivers[s->ndelivers++] = v;
	return 0;
}

/* "late N [copy=K]" */
static int line_late(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	struct droce_rp_late v = { .line = c->line };
	int r;
	if (ntok < 2 || ntok > 3 || (ntok == 3 && strncmp(tok[2], "copy=", 5)))
		return fail(c, "late: expected 'late FRAME [copy=K]'");
	if ((r = parse_u32(c, "late frame", tok[1], UINT32_MAX, &v.frame)) ||
	    (ntok == 3 && (r = parse_u32(c, "copy", tok[2] + 5, 1000000, &v.copy))))
		return r;
	if (!v.frame)
		return fail(c, "late: frames are numbered from 1");
	void *nv = grow(c, s->lates, s->nlates, &c->late_cap, sizeof(*s->lates), MAX_LIST, "late lines", &r);
	if (!nv)
		return r;
	s->lates = nv;
	s->lates[s->nlates++] = v;
	return 0;
}

static int line_check(struct pctx *c, char **tok, int ntok)
{
	static const struct { const char *n; unsigned f; } checks[] = {
		{"credits", DROCE_RP_CHECK_CREDITS}, {"ackreq", DROCE_RP_CHECK_ACKREQ},
		{"mac", DROCE_RP_CHECK_MAC}, {"ecn", DROCE_RP_CHECK_ECN},
		{"udp-sport", DROCE_RP_CHECK_SPORT}, {"migreq", DROCE_RP_CHECK_MIGREQ},
	};
	if (ntok < 2)
		return fail(c, "check: missing field (credits, ackreq, migreq, mac, ecn, udp-sport)");
	for (int i = 1; i < ntok; i++) {
		size_t k;
		for (k = 0; k < sizeof(checks) / sizeof(checks[0]); k++)
			if (!strcmp(tok[i], checks[k].n))
				break;
		if (k == sizeof(checks) / sizeof(checks[0]))
			return fail(c, "check: unknown field '%s' (credits, ackreq, migreq, mac, ecn, udp-sport)", tok[i]);
		c->s->checks |= checks[k].f;
	}
	return 0;
}

/* ---------------------------------------------------- the directives -- */

static int line_capture(struct pctx *c, char **tok, int ntok)
{
	if (ntok != 2)
		return fail(c, "capture: expected 'capture PATH'");
	if (join_path(c->s->capture, sizeof(c->s->capture), c->dir, tok[1]))
		return fail(c, "capture: path too long");
	c->s->capture_line = c->line;
	return 0;
}

static int line_ip(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	if (ntok != 2)
		return fail(c, "ip: expected 'ip ADDRESS'");
	if (s->nqps)
		return fail(c, "ip: must come before the qp lines");
	s->ip_version = (uint8_t)droce_rp_parse_ip(tok[1], s->ip);
	if (!s->ip_version)
		return fail(c, "ip: '%s' is not an IPv4 or IPv6 address", tok[1]);
	return 0;
}

static int line_mac(struct pctx *c, char **tok, int ntok)
{
	if (ntok != 2)
		return fail(c, "mac: expected 'mac aa:bb:cc:dd:ee:ff'");
	c->s->has_mac = true;
	return parse_mac(c, tok[1], c->s->mac);
}

static int line_qp_first(struct pctx *c, char **tok, int ntok)
{
	if (!c->s->ip_version)
		return fail(c, "qp: the 'ip' line must come first");
	return line_qp(c, tok, ntok);
}

static int line_fill(struct pctx *c, char **tok, int ntok)
{
	return line_data(c, tok, ntok, false);
}

static int line_expect_mem(struct pctx *c, char **tok, int ntok)
{
	return line_data(c, tok, ntok, true);
}

static int line_recv(struct pctx *c, char **tok, int ntok)
{
	return line_wr(c, tok, ntok, true);
}

static int line_post(struct pctx *c, char **tok, int ntok)
{
	return line_wr(c, tok, ntok, false);
}

static int line_impair(struct pctx *c, char **tok, int ntok)
{
	struct droce_rp_scenario *s = c->s;
	/* checked by the runner, which owns the shim's parser */
	if (ntok != 2 || strlen(tok[1]) >= sizeof(s->impair))
		return fail(c, "impair: expected 'impair SPEC' (as droce-perf --impair, < %zu characters)",
			    sizeof(s->impair));
	snprintf(s->impair, sizeof(s->impair), "%s", tok[1]);
	return 0;
}

static int line_drain(struct pctx *c, char **tok, int ntok)
{
	if (ntok != 2)
		return fail(c, "drain: expected 'drain TIME'");
	return parse_time(c, "drain", tok[1], &c->s->drain_ns);
}

/* The directives that are one word out of a fixed set: each word sets a
 * flag of the scenario (or clears expect_capture, for 'none'). */
struct flag_word {
	const char *dir, *word;
	size_t off;            /* offsetof the bool in struct droce_rp_scenario */
	bool value;
	const char *usage;     /* the error when no word of the directive matches */
};

static const struct flag_word flag_words[] = {
	{ "expect-frames", "capture", offsetof(struct droce_rp_scenario, expect_capture), true,
	  "expect-frames: expected 'capture' or 'none'" },
	{ "expect-frames", "none", offsetof(struct droce_rp_scenario, expect_capture), false,
	  "expect-frames: expected 'capture' or 'none'" },
	{ "allow", "ack-coalescing", offsetof(struct droce_rp_scenario, allow_ack_coalescing), true,
	  "allow: expected 'allow ack-coalescing' or 'allow send-ahead'" },
	{ "allow", "send-ahead", offsetof(struct droce_rp_scenario, allow_send_ahead), true,
	  "allow: expected 'allow ack-coalescing' or 'allow send-ahead'" },
	{ "compare", "by-psn", offsetof(struct droce_rp_scenario, by_psn), true,
	  "compare: only 'compare by-psn' is known" },
	{ "pace", "requests", offsetof(struct droce_rp_scenario, pace_requests), true,
	  "pace: only 'pace requests' is known" },
};

/* @return 1 when @p dir is no flag directive, else 0 or the parse error. */
static int line_flag(struct pctx *c, char **tok, int ntok)
{
	const char *usage = NULL;
	for (size_t i = 0; i < sizeof(flag_words) / sizeof(flag_words[0]); i++) {
		const struct flag_word *w = &flag_words[i];
		if (strcmp(tok[0], w->dir))
			continue;
		usage = w->usage;
		if (ntok == 2 && !strcmp(tok[1], w->word)) {
			*(bool *)((char *)c->s + w->off) = w->value;
			return 0;
		}
	}
	return usage ? fail(c, "%s", usage) : 1;
}

/* Every other directive: its name and the parser of its line. */
static const struct directive {
	const char *name;
	int (*parse)(struct pctx *c, char **tok, int ntok);
} directives[] = {
	{ "capture", line_capture },
	{ "ip", line_ip },
	{ "mac", line_mac },
	{ "qp", line_qp_first },
	{ "mr", line_mr },
	{ "fill", line_fill },
	{ "expect-mem", line_expect_mem },
	{ "recv", line_recv },
	{ "post", line_post },
	{ "expect-wc", line_wc },
	{ "skip-frame", line_skip },
	{ "expect-gap", line_gap },
	{ "check", line_check },
	{ "lost", line_lost },
	{ "deliver", line_deliver },
	{ "late", line_late },
	{ "impair", line_impair },
	{ "drain", line_drain },
};

static int parse_line(struct pctx *c, char *line)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = 0;
	char *tok[MAX_TOK];
	int ntok = 0;
	for (char *save, *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (ntok == MAX_TOK)
			return fail(c, "more than %d words on a line", MAX_TOK);
		tok[ntok++] = t;
	}
	if (!ntok)
		return 0;
	for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
		if (!strcmp(tok[0], directives[i].name))
			return directives[i].parse(c, tok, ntok);
	int r = line_flag(c, tok, ntok);
	return r != 1 ? r : fail(c, "unknown directive '%s'", tok[0]);
}

int droce_rp_scenario_parse(const char *text, const char *path,
			    struct droce_rp_scenario **out, char *err, size_t errlen)
{
	struct droce_rp_scenario *s = calloc(1, sizeof(*s));
	char *copy = strdup(text);
	if (!s || !copy) {
		free(s);
		free(copy);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	struct pctx c = { .s = s, .path = path, .err = err, .errlen = errlen };
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(c.dir, sizeof(c.dir), "%s", path);
	char *slash = strrchr(c.dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(c.dir, sizeof(c.dir), ".");
	s->expect_capture = true;
	s->drain_ns = 100000000ull; /* 100 ms: longer than any RNR wait of the corpus */
	int r = 0;
	char *p = copy;
	while (p && !r) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		c.line++;
		r = parse_line(&c, p);
		p = nl ? nl + 1 : NULL;
	}
	free(copy);
	if (!r && !s->capture[0]) {
		c.line = 0;
		snprintf(err, errlen, "%s: no 'capture' line", path);
		r = -EINVAL;
	} else if (!r && !s->ip_version) {
		snprintf(err, errlen, "%s: no 'ip' line", path);
		r = -EINVAL;
	} else if (!r && !s->has_mac) {
		snprintf(err, errlen, "%s: no 'mac' line", path);
		r = -EINVAL;
	}
	if (r == -ENOMEM)
		snprintf(err, errlen, "%s:%u: out of memory", path, c.line);
	if (r) {
		droce_rp_scenario_free(s);
		return r;
	}
	*out = s;
	return 0;
}

int droce_rp_scenario_load(const char *path, struct droce_rp_scenario **out,
			   char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -ENOENT;
	}
	size_t cap = 8192, n = 0, got;
	char *b = malloc(cap);
	while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!b) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	b[n] = 0;
	if (memchr(b, 0, n)) {
		free(b);
		snprintf(err, errlen, "%s: not a text file (NUL byte)", path);
		return -EINVAL;
	}
	int r = droce_rp_scenario_parse(b, path, out, err, errlen);
	free(b);
	return r;
}

void droce_rp_scenario_free(struct droce_rp_scenario *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nmrs; i++)
		free(s->mrs[i].init);
	for (unsigned i = 0; i < s->nmems; i++)
		free(s->mems[i].bytes);
	free(s->wrs);
	free(s->mems);
	free(s->wcs);
	free(s->skip);
	free(s->gaps);
	free(s->lost);
	free(s->delivers);
	free(s->lates);
	free(s);
}
