/* SPDX-License-Identifier: BSD-3-Clause */
/* Transport test bed (see pair.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pair.h"

/* ---------------------------------------------------------------- tap -- */

static void tap(void *arg, enum droce_memlink_dir dir, const uint8_t *frame, uint32_t len,
		enum droce_impair_action fate, int corrupted)
{
	struct pair *p = arg;
	struct droce_pkt pkt;
	struct pkt_rec *r;

	if (p->pcap)
		droce_capture_write(p->pcap, DROCE_CAPTURE_TX, frame, len, p->now);
	if (!p->record)
		return;
	if (p->nrec == p->caprec) {
		unsigned cap = p->caprec ? p->caprec * 2 : 4096;
		struct pkt_rec *n = realloc(p->rec, cap * sizeof(*n));
		assert_non_null(n);
		p->rec = n;
		p->caprec = cap;
	}
	r = &p->rec[p->nrec++];
	memset(r, 0, sizeof(*r));
	r->dir = (unsigned)dir;
	r->fate = fate;
	r->corrupted = corrupted;
	r->now = p->now;
	memset(&pkt, 0, sizeof(pkt));
	r->pr = droce_parse(frame, len, &pkt, 0);
	r->ip_version = pkt.h.net.ip_version;
	r->dscp = pkt.h.net.dscp;
	r->ecn = pkt.h.net.ecn;
	r->ttl = pkt.h.net.ttl;
	r->sport = pkt.h.net.sport;
	r->dport = pkt.h.net.dport;
	r->opcode = pkt.h.bth.opcode;
	r->ackreq = pkt.h.bth.ack_req;
	r->se = pkt.h.bth.se;
	r->becn = pkt.h.bth.becn;
	r->migreq = pkt.h.bth.migreq;
	r->psn = pkt.h.bth.psn;
	r->dqpn = pkt.h.bth.dqpn;
	r->payload_len = pkt.h.payload_len;
	r->syndrome = pkt.h.ext.aeth.syndrome;
	r->msn = pkt.h.ext.aeth.msn;
	if (pkt.op && (pkt.op->hdrs & DROCE_HDR_RETH)) {
		r->va = pkt.h.ext.reth.va;
		r->rkey = pkt.h.ext.reth.rkey;
		r->dma_len = pkt.h.ext.reth.dma_len;
	} else if (pkt.op && (pkt.op->hdrs & DROCE_HDR_ATOMIC)) {
		r->va = pkt.h.ext.atomic.va;
		r->rkey = pkt.h.ext.atomic.rkey;
		r->swap_add = pkt.h.ext.atomic.swap_add;
		r->compare = pkt.h.ext.atomic.compare;
	}
	r->orig = pkt.h.ext.atomic_ack;
	r->imm = pkt.h.ext.imm;
	r->qkey = pkt.h.ext.deth.qkey;
	r->sqpn = pkt.h.ext.deth.sqpn;
}

void rec_clear(struct pair *p)
{
	p->nrec = 0;
}

unsigned rec_count(const struct pair *p, unsigned from, int dir, int opcode)
{
	unsigned n = 0;
	for (unsigned i = from; i < p->nrec; i++)
		if ((dir < 0 || p->rec[i].dir == (unsigned)dir) &&
		    (opcode < 0 || p->rec[i].opcode == (uint8_t)opcode))
			n++;
	return n;
}

int rec_find(const struct pair *p, unsigned from, int dir, int opcode)
{
	for (unsigned i = from; i < p->nrec; i++)
		if ((dir < 0 || p->rec[i].dir == (unsigned)dir) &&
		    (opcode < 0 || p->rec[i].opcode == (uint8_t)opcode))
			return (int)i;
	return -1;
}

void rec_dump(const struct pair *p, unsigned from)
{
	for (unsigned i = from; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		fprintf(stderr, "  #%-4u t=%-10llu %s %-34s psn=%06x%s len=%-5u",
			i, (unsigned long long)r->now, r->dir ? "B->A" : "A->B",
			droce_opcode_name(r->opcode), r->psn, r->ackreq ? " A" : "  ",
			r->payload_len);
		if (droce_opcode_info(r->opcode) &&
		    (droce_opcode_info(r->opcode)->hdrs & DROCE_HDR_AETH))
			fprintf(stderr, " syn=%02x msn=%u", r->syndrome, r->msn);
		if (r->fate != DROCE_IMPAIR_PASS || r->corrupted)
			fprintf(stderr, " [%s%s]", droce_impair_action_name(r->fate),
				r->corrupted ? "+CORRUPT" : "");
		if (r->pr != DROCE_PARSE_OK)
			fprintf(stderr, " parse=%s", droce_parse_result_name(r->pr));
		fprintf(stderr, "\n");
	}
}

/* ------------------------------------------------------------- set up -- */

void pair_side_ip(uint8_t ip_version, int side, uint8_t ip[16])
{
	memset(ip, 0, 16);
	if (ip_version == 6) {
		ip[0] = 0xfd;
		ip[15] = (uint8_t)(1 + side);
	} else {
		ip[0] = 10;
		ip[3] = (uint8_t)(1 + side);
	}
}

void pair_init(struct pair *p, const struct pair_opts *o)
{
	struct pair_opts none = {{0, 0}, {NULL, NULL}, 0, 4, NULL};
	struct droce_memlink_params mp = {0};

	if (!o)
		o = &none;
	memset(p, 0, sizeof(*p));
	p->record = true;
	p->max_iters = 20u * 1000u * 1000u;
	p->now = 1000000; /* not 0: a clock at 0 hides "timer never armed" bugs */
	p->ip_version = o->ip_version == 6 ? 6 : 4;
	mp.depth = o->depth;
	p->ml = droce_memlink_create(&mp);
	assert_non_null(p->ml);
	droce_memlink_set_tap(p->ml, tap, p);
	for (int d = 0; d < 2; d++) {
		struct droce_impair_spec s;
		char err[128];
		assert_int_equal(droce_impair_parse(o->impair[d], &s, err, sizeof(err)), 0);
		p->imp[d] = droce_impair_create(&s);
		assert_non_null(p->imp[d]);
		assert_int_equal(droce_memlink_set_impair(p->ml, (enum droce_memlink_dir)d, p->imp[d]), 0);
	}
	/* DROCE_TEST_PCAP=prefix: keep the wire of each pair in prefix.N.pcap for tshark */
	const char *pcap = getenv("DROCE_TEST_PCAP");
	if (pcap && *pcap) {
		static unsigned n; /* test-only: numbers the files of one process */
		char path[512];
		snprintf(path, sizeof(path), "%s.%u.pcap", pcap, n++);
		struct droce_capture_conf cc = {.path = path};
		p->pcap = droce_capture_open(&cc);
		if (!p->pcap)
			fail_msg("cannot write %s", path);
	}
	for (int s = 0; s < 2; s++) {
		struct droce_ctx_params cp;
		droce_ctx_params_init(&cp);
		cp.ip_version = p->ip_version;
		pair_side_ip(p->ip_version, s, cp.ip);
		memcpy(cp.mac, "\x02\x00\x00\x00\x00\x00", 6);
		cp.mac[5] = (uint8_t)(1 + s);
		cp.link = droce_memlink_end(p->ml, (unsigned)s);
		cp.seed = o->seed[s] ? o->seed[s] : 0x1234u + (uint64_t)s;
		cp.cc = o->cc;
		p->ctx[s] = droce_ctx_create(&cp);
		if (!p->ctx[s])
			fail_msg("droce_ctx_create: %s", strerror(errno));
	}
}

void pair_fini(struct pair *p)
{
	/* Whatever the engines put on the wire is a well-formed RoCEv2 frame with a good ICRC. */
	for (unsigned i = 0; i < p->nrec && !p->allow_bad_frames; i++)
		if (p->rec[i].pr != DROCE_PARSE_OK) {
			rec_dump(p, i > 5 ? i - 5 : 0);
			fail_msg("frame #%u on the wire does not parse: %s", i,
				 droce_parse_result_name(p->rec[i].pr));
		}
	/*
	 * Tear down as a verbs user would (QPs, then CQs, then the context)
	 * rather than leaning on droce_ctx_destroy() to do it.
	 */
	for (unsigned i = 0; i < p->nqps; i++)
		assert_int_equal(droce_destroy_qp(p->qps[i]), 0);
	for (unsigned i = 0; i < p->ncqs; i++)
		assert_int_equal(droce_destroy_cq(p->cqs[i]), 0);
	for (int s = 0; s < 2; s++)
		if (p->ctx[s])
			assert_int_equal(droce_ctx_destroy(p->ctx[s]), 0);
	droce_memlink_destroy(p->ml);
	for (int d = 0; d < 2; d++)
		droce_impair_destroy(p->imp[d]);
	if (p->pcap)
		droce_capture_close(p->pcap);
	for (unsigned i = 0; i < p->nbufs; i++)
		free(p->bufs[i]);
	free(p->rec);
	memset(p, 0, sizeof(*p));
}

void conn_opts_default(struct conn_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mtu = DROCE_MTU_1024;
	o->sq_psn[0] = 0x100;
	o->sq_psn[1] = 0x800;
	o->timeout = 14;
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1;
	o->max_rd_atomic = 16;
	o->access = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ |
		    DROCE_ACCESS_REMOTE_ATOMIC | DROCE_ACCESS_LOCAL_WRITE;
	o->cq_depth = 4096;
	o->max_send_wr = 256;
	o->max_recv_wr = 256;
	o->max_sge = 4;
}

void conn_create(struct pair *p, struct conn *c, const struct conn_opts *o)
{
	memset(c, 0, sizeof(*c));
	for (int s = 0; s < 2; s++) {
		struct droce_qp_init_attr ia;
		c->scq[s] = droce_create_cq(p->ctx[s], o->cq_depth);
		c->rcq[s] = droce_create_cq(p->ctx[s], o->cq_depth);
		assert_non_null(c->scq[s]);
		assert_non_null(c->rcq[s]);
		assert_true(p->ncqs + 2 <= sizeof(p->cqs) / sizeof(p->cqs[0]));
		p->cqs[p->ncqs++] = c->scq[s];
		p->cqs[p->ncqs++] = c->rcq[s];
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = c->scq[s];
		ia.recv_cq = c->rcq[s];
		ia.cap.max_send_wr = o->max_send_wr;
		ia.cap.max_recv_wr = o->max_recv_wr;
		ia.cap.max_send_sge = o->max_sge;
		ia.cap.max_recv_sge = o->max_sge;
		ia.cap.max_inline_data = 64;
		ia.sq_sig_all = o->sq_sig_all;
		ia.srq = o->srq[s];
		c->qp[s] = droce_create_qp(p->ctx[s], &ia);
		if (!c->qp[s])
			fail_msg("droce_create_qp: %s", strerror(errno));
		c->qpn[s] = droce_qp_num(c->qp[s]);
		assert_true(p->nqps < sizeof(p->qps) / sizeof(p->qps[0]));
		p->qps[p->nqps++] = c->qp[s];
	}
}

int conn_modify(struct pair *p, struct conn *c, int s, enum droce_qp_state to,
		const struct conn_opts *o)
{
	struct droce_qp_attr at;
	unsigned mask = DROCE_QP_STATE;
	int peer = 1 - s;

	memset(&at, 0, sizeof(at));
	at.qp_state = to;
	switch (to) {
	case DROCE_QPS_INIT:
		at.qp_access_flags = o->access;
		at.pkey = DROCE_DEFAULT_PKEY;
		mask |= DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY;
		break;
	case DROCE_QPS_RTR:
		at.ah_attr.ip_version = p->ip_version;
		pair_side_ip(p->ip_version, peer, at.ah_attr.dst_ip);
		memcpy(at.ah_attr.dst_mac, "\x02\x00\x00\x00\x00\x00", 6);
		at.ah_attr.dst_mac[5] = (uint8_t)(1 + peer);
		at.ah_attr.dscp = DROCE_DEFAULT_DSCP;
		at.ah_attr.ttl = DROCE_DEFAULT_TTL;
		at.ah_attr.udp_sport = o->udp_sport;
		at.path_mtu = o->mtu;
		at.dest_qp_num = c->qpn[peer];
		at.rq_psn = o->sq_psn[peer];
		at.max_dest_rd_atomic = o->max_rd_atomic;
		at.min_rnr_timer = o->min_rnr_timer;
		mask |= DROCE_QP_AV | DROCE_QP_PATH_MTU | DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
			DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER;
		break;
	case DROCE_QPS_RTS:
		at.sq_psn = o->sq_psn[s];
		at.timeout = o->timeout;
		at.retry_cnt = o->retry_cnt;
		at.rnr_retry = o->rnr_retry;
		at.max_rd_atomic = o->max_rd_atomic;
		mask |= DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT | DROCE_QP_RETRY_CNT |
			DROCE_QP_RNR_RETRY | DROCE_QP_MAX_QP_RD_ATOMIC;
		break;
	default:
		break;
	}
	return droce_modify_qp(c->qp[s], &at, mask);
}

void pair_connect(struct pair *p, struct conn *c, const struct conn_opts *o)
{
	conn_create(p, c, o);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(conn_modify(p, c, s, DROCE_QPS_INIT, o), 0);
		assert_int_equal(conn_modify(p, c, s, DROCE_QPS_RTR, o), 0);
		assert_int_equal(conn_modify(p, c, s, DROCE_QPS_RTS, o), 0);
		assert_int_equal(qp_state(c->qp[s]), DROCE_QPS_RTS);
	}
}

struct droce_mr *pair_mr(struct pair *p, int side, size_t len, unsigned access, uint8_t fill)
{
	uint8_t *buf;
	struct droce_mr *mr;

	assert_true(p->nbufs < sizeof(p->bufs) / sizeof(p->bufs[0]));
	buf = aligned_alloc(64, (len + 64 + 63) & ~(size_t)63);
	assert_non_null(buf);
	memset(buf, fill, len + 64);
	p->bufs[p->nbufs++] = buf;
	mr = droce_reg_mr(p->ctx[side], buf, len, access);
	if (!mr)
		fail_msg("droce_reg_mr: %s", strerror(errno));
	return mr;
}

/* ---------------------------------------------------------------- run -- */

unsigned pair_step(struct pair *p)
{
	return droce_ctx_poll(p->ctx[0], p->now) + droce_ctx_poll(p->ctx[1], p->now);
}

bool pair_advance(struct pair *p, uint64_t end)
{
	uint64_t d0 = droce_ctx_next_deadline(p->ctx[0]);
	uint64_t d1 = droce_ctx_next_deadline(p->ctx[1]);
	uint64_t d = d0 < d1 ? d0 : d1;

	/* frames on the way: poll again if one has arrived, else they are a deadline too */
	for (int dir = 0; dir < 2; dir++) {
		uint64_t r = droce_memlink_next_ready(p->ml, (enum droce_memlink_dir)dir);
		if (r <= p->now)
			return true;
		if (r < d)
			d = r;
	}
	if (d == UINT64_MAX)
		return false;
	if (d > end) {
		p->now = end;
		return false;
	}
	p->now = d > p->now ? d : p->now + 1;
	return true;
}

uint64_t pair_run(struct pair *p, uint64_t max_ns)
{
	uint64_t start = p->now, end = p->now + max_ns;

	for (uint64_t it = 0;; it++) {
		if (it == p->max_iters)
			fail_msg("pair_run: still busy after %llu polls (livelock?)",
				 (unsigned long long)it);
		if (pair_step(p))
			continue;
		if (!pair_advance(p, end))
			break;
	}
	return p->now - start;
}

int pair_wait(struct pair *p, struct droce_cq *cq, int n, struct droce_wc *wc, uint64_t max_ns)
{
	uint64_t end = p->now + max_ns;
	int got = 0;

	for (uint64_t it = 0; got < n; it++) {
		int r;
		unsigned moved;
		if (it == p->max_iters)
			fail_msg("pair_wait: still busy after %llu polls (livelock?)",
				 (unsigned long long)it);
		moved = pair_step(p);
		r = droce_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			fail_msg("droce_poll_cq: %d", r);
		got += r;
		if (got >= n || moved || r)
			continue;
		if (!pair_advance(p, end))
			break;
	}
	return got;
}

int cq_drain(struct droce_cq *cq, struct droce_wc *wc, int n)
{
	int r = droce_poll_cq(cq, n, wc);
	if (r < 0)
		fail_msg("droce_poll_cq: %d", r);
	return r;
}

/* ------------------------------------------------------------ posting -- */

int post_rdma(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id, struct droce_mr *lmr,
	      size_t loff, uint32_t len, uint64_t raddr, uint32_t rkey, unsigned flags, uint32_t imm)
{
	struct droce_sge sge = {.addr = (uint64_t)(uintptr_t)lmr->addr + loff, .length = len,
				.lkey = lmr->lkey};
	struct droce_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return droce_post_send(qp, &wr, &bad);
}

int post_send_msg(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id,
		  struct droce_mr *lmr, size_t loff, uint32_t len, unsigned flags, uint32_t imm)
{
	return post_rdma(qp, op, wr_id, lmr, loff, len, 0, 0, flags, imm);
}

int post_atomic(struct droce_qp *qp, enum droce_wr_opcode op, uint64_t wr_id, struct droce_mr *lmr,
		size_t loff, uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct droce_sge sge = {.addr = (uint64_t)(uintptr_t)lmr->addr + loff, .length = 8,
				.lkey = lmr->lkey};
	struct droce_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = DROCE_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return droce_post_send(qp, &wr, &bad);
}

int post_recv_buf(struct droce_qp *qp, uint64_t wr_id, struct droce_mr *mr, size_t off, uint32_t len)
{
	struct droce_sge sge = {.addr = (uint64_t)(uintptr_t)mr->addr + off, .length = len,
				.lkey = mr->lkey};
	struct droce_recv_wr wr = {.wr_id = wr_id, .next = NULL, .sg_list = &sge, .num_sge = 1};
	struct droce_recv_wr *bad = NULL;
	return droce_post_recv(qp, &wr, &bad);
}

/* --------------------------------------------------------------- misc -- */

uint64_t rnr_timer_ns(unsigned code)
{
	/* IBTA 9.7.5.2.8 table 45, in microseconds x 100 */
	static const uint32_t t[32] = {
		65536000, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
		16384, 24576, 32768, 49152};
	return (uint64_t)t[code & 31] * 10000u;
}

unsigned drop_reason(const char *name)
{
	for (unsigned i = 0; i < DROCE_DROP_REASON_MAX; i++) {
		const char *n = droce_drop_reason_name(i);
		if (!n)
			break;
		if (!strcmp(n, name))
			return i;
	}
	fail_msg("no drop reason named %s", name);
	return 0;
}

uint64_t ctx_drops(struct pair *p, int side, const char *name)
{
	struct droce_ctx_stats st;
	assert_int_equal(droce_ctx_get_stats(p->ctx[side], &st), 0);
	return st.drop[drop_reason(name)];
}

struct droce_qp_stats qp_stats(struct droce_qp *qp)
{
	struct droce_qp_stats st;
	assert_int_equal(droce_qp_get_stats(qp, &st), 0);
	return st;
}

enum droce_qp_state qp_state(struct droce_qp *qp)
{
	struct droce_qp_attr at;
	memset(&at, 0, sizeof(at));
	assert_int_equal(droce_query_qp(qp, &at, DROCE_QP_STATE), 0);
	return at.qp_state;
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void fill_pattern(uint8_t *dst, size_t len, uint64_t key)
{
	uint64_t k = mix(key + 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = mix(k + i);
		size_t n = len - i < 8 ? len - i : 8;
		memcpy(dst + i, &v, n);
	}
}

long check_pattern(const uint8_t *src, size_t len, uint64_t key)
{
	uint64_t k = mix(key + 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = mix(k + i);
		size_t n = len - i < 8 ? len - i : 8;
		if (memcmp(src + i, &v, n)) {
			for (size_t j = 0; j < n; j++)
				if (src[i + j] != ((uint8_t *)&v)[j])
					return (long)(i + j);
		}
	}
	return -1;
}

/* ------------------------------------------------------- impair rules -- */

static void add(struct pair *p, int dir, struct droce_impair_rule *r, int opcode, int64_t psn)
{
	if (opcode >= 0) {
		r->match |= DROCE_IMPAIR_M_OPCODE;
		r->opcode = (uint8_t)opcode;
	}
	if (psn >= 0) {
		r->match |= DROCE_IMPAIR_M_PSN;
		r->psn = (uint32_t)psn & 0xFFFFFFu;
	}
	assert_int_equal(droce_impair_add_rule(p->imp[dir], r), 0);
}

void pair_rule(struct pair *p, int dir, enum droce_impair_action action, int opcode, int64_t psn,
	       uint32_t count)
{
	struct droce_impair_rule r = {.action = action, .count = count};
	add(p, dir, &r, opcode, psn);
}

void pair_hold(struct pair *p, int dir, int opcode, int64_t psn, uint32_t hold)
{
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_HOLD, .count = 1, .hold = hold};
	add(p, dir, &r, opcode, psn);
}

void pair_corrupt(struct pair *p, int dir, int opcode, int64_t psn, uint32_t offset)
{
	struct droce_impair_rule r = {.action = DROCE_IMPAIR_CORRUPT, .count = 1, .offset = offset,
				      .xor_mask = 0x5A};
	add(p, dir, &r, opcode, psn);
}

unsigned rec_naks(const struct pair *p, unsigned from, int dir, int code)
{
	unsigned n = 0;
	for (unsigned i = from; i < p->nrec; i++) {
		const struct pkt_rec *r = &p->rec[i];
		if (r->dir != (unsigned)dir || r->opcode != DROCE_OP_RC_ACKNOWLEDGE)
			continue;
		if (code < 0 ? syn_is_rnr(r->syndrome) : syn_is_nak(r->syndrome, (unsigned)code))
			n++;
	}
	return n;
}

unsigned rec_psn_count(const struct pair *p, unsigned from, int dir, uint32_t psn)
{
	unsigned n = 0;
	for (unsigned i = from; i < p->nrec; i++)
		n += p->rec[i].dir == (unsigned)dir && p->rec[i].psn == psn;
	return n;
}

/* ------------------------------------------------------------ injection -- */

void pair_hdrs(const struct pair *p, int from, struct droce_hdrs *h, uint8_t opcode, uint32_t dqpn,
	       uint32_t psn)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->net.src_mac, "\x02\x00\x00\x00\x00\x00", 6);
	memcpy(h->net.dst_mac, "\x02\x00\x00\x00\x00\x00", 6);
	h->net.src_mac[5] = (uint8_t)(1 + from);
	h->net.dst_mac[5] = (uint8_t)(2 - from);
	h->net.ip_version = p->ip_version;
	pair_side_ip(p->ip_version, from, h->net.src_ip);
	pair_side_ip(p->ip_version, 1 - from, h->net.dst_ip);
	h->net.dscp = DROCE_DEFAULT_DSCP;
	h->net.ttl = DROCE_DEFAULT_TTL;
	h->net.sport = 0xD00D;
	h->net.dport = DROCE_UDP_PORT;
	h->bth.opcode = opcode;
	h->bth.pkey = DROCE_DEFAULT_PKEY;
	h->bth.dqpn = dqpn;
	h->bth.psn = psn & 0xFFFFFFu;
	h->bth.ack_req = true;
}

int pair_inject_raw(struct pair *p, int from, const uint8_t *frame, uint32_t len)
{
	struct droce_link l = droce_memlink_end(p->ml, (unsigned)from);
	struct droce_tx_frame f;

	memset(&f, 0, sizeof(f));
	f.hdr = frame;
	f.hdr_len = len;
	return l.ops->tx(l.priv, &f, p->now);
}

int pair_inject(struct pair *p, int from, const struct droce_hdrs *h, const void *payload)
{
	uint8_t buf[9216];
	size_t len = droce_build_frame(buf, sizeof(buf), h, payload);

	assert_true(len > 0);
	return pair_inject_raw(p, from, buf, (uint32_t)len);
}

/* ------------------------------------------------------------- runner -- */

static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = list; s && *s;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == n && !strncmp(s, name, n))
			return true;
		s = e ? e + 1 : NULL;
	}
	return false;
}

int droce_test_run(const char *group, const struct CMUnitTest *tests, size_t n)
{
	const char *only = getenv("DROCE_TEST_ONLY"), *skip = getenv("DROCE_TEST_SKIP");
	struct CMUnitTest *sel = calloc(n ? n : 1, sizeof(*sel));
	size_t k = 0;
	int rc;

	if (!sel)
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (only && *only && !listed(only, tests[i].name))
			continue;
		if (skip && listed(skip, tests[i].name))
			continue;
		sel[k++] = tests[i];
	}
	if (k < n)
		fprintf(stderr, "%s: running %zu of %zu tests (DROCE_TEST_ONLY/DROCE_TEST_SKIP)\n",
			group, k, n);
	rc = k ? _cmocka_run_group_tests(group, sel, k, NULL, NULL) : 0;
	free(sel);
	return rc;
}
