/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rxe's UD datagrams on droce's UD receive path: every
 * rdma_cm handshake of ../shared/pcap-corpus/rxe-write-read-*.pcap begins
 * with CM MADs sent as UD SEND_ONLY to QP1 (REQ, REP, RTU; DREQ and DREP at
 * the end). Each captured datagram is put on an in-memory link, as its
 * sender put it on the wire, to a context with the receiver's address and a
 * GSI QP: it must pass every check of the receive path (ICRC, P_Key, Q_Key
 * 0x80010000) and complete a receive WQE with the 40-byte GRH area (zeros,
 * then the IPv4 header exactly as captured), the MAD bytes, source QP 1
 * and byte_len 40 + 256. Skips when ../shared is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <droce/droce.h>

#include "net/link/memlink.h"
#include "wire/parse.h"
#include "wire_test_util.h"

#define MAX_UD 16
#define GRH 40u
#define SLOT 512u

struct ud_frame {
	uint8_t *data;
	size_t len;
	struct droce_pkt pkt;
};

struct capture {
	char file[128];
	struct ud_frame f[MAX_UD];
	unsigned n;
};

struct corpus {
	struct capture c[8];
	unsigned n;
};

static void collect(const struct wt_frame *wf, void *arg)
{
	struct corpus *k = arg;
	if (strncmp(wf->file, "rxe-write-read-", 15) != 0)
		return;
	if (!k->n || strcmp(k->c[k->n - 1].file, wf->file) != 0) {
		assert_true(k->n < 8);
		snprintf(k->c[k->n].file, sizeof(k->c[k->n].file), "%s", wf->file);
		k->n++;
	}
	struct capture *c = &k->c[k->n - 1];
	struct droce_pkt pkt;
	if (droce_parse(wf->data, wf->len, &pkt, 0) != DROCE_PARSE_OK ||
	    droce_opcode_service(pkt.h.bth.opcode) != DROCE_SVC_UD)
		return;
	assert_true(c->n < MAX_UD);
	struct ud_frame *u = &c->f[c->n++];
	u->data = malloc(wf->len);
	assert_non_null(u->data);
	memcpy(u->data, wf->data, wf->len);
	u->len = wf->len;
	/* re-parse over our copy: the view points into it */
	assert_int_equal(droce_parse(u->data, u->len, &u->pkt, 0), DROCE_PARSE_OK);
}

struct host {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *gsi;
	struct droce_mr *mr;
	uint8_t *buf;
	uint8_t ip[16];
};

static void host_up(struct host *h, struct droce_memlink *ml, unsigned end, const uint8_t ip[4])
{
	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	memcpy(cp.ip, ip, 4);
	memcpy(h->ip, ip, 4);
	cp.link = droce_memlink_end(ml, end);
	h->ctx = droce_ctx_create(&cp);
	assert_non_null(h->ctx);
	h->cq = droce_create_cq(h->ctx, 64);
	assert_non_null(h->cq);
	struct droce_qp_init_attr ia = {.send_cq = h->cq, .recv_cq = h->cq, .qp_type = DROCE_QPT_GSI};
	h->gsi = droce_create_qp(h->ctx, &ia);
	assert_non_null(h->gsi);
	struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT};
	assert_int_equal(droce_modify_qp(h->gsi, &a, DROCE_QP_STATE), 0);
	a.qp_state = DROCE_QPS_RTR;
	assert_int_equal(droce_modify_qp(h->gsi, &a, DROCE_QP_STATE), 0);
	h->buf = calloc(MAX_UD, SLOT);
	assert_non_null(h->buf);
	h->mr = droce_reg_mr(h->ctx, h->buf, (size_t)MAX_UD * SLOT, DROCE_ACCESS_LOCAL_WRITE);
	assert_non_null(h->mr);
	for (unsigned i = 0; i < MAX_UD; i++) {
		struct droce_sge s = {.addr = (uintptr_t)h->buf + i * SLOT, .length = SLOT,
				      .lkey = h->mr->lkey};
		struct droce_recv_wr w = {.wr_id = i, .sg_list = &s, .num_sge = 1}, *bad;
		assert_int_equal(droce_post_recv(h->gsi, &w, &bad), 0);
	}
}

static void host_down(struct host *h)
{
	assert_int_equal(droce_ctx_destroy(h->ctx), 0);
	free(h->buf);
}

/* One capture's datagrams through two hosts with its two addresses. */
static void replay_capture(const struct capture *c)
{
	assert_true(c->n >= 2);
	const uint8_t *ipa = c->f[0].pkt.h.net.src_ip, *ipb = c->f[0].pkt.h.net.dst_ip;
	struct droce_memlink *ml = droce_memlink_create(NULL);
	assert_non_null(ml);
	struct host h[2];
	memset(h, 0, sizeof(h));
	host_up(&h[0], ml, 0, ipa);
	host_up(&h[1], ml, 1, ipb);
	unsigned got[2] = {0, 0};
	uint64_t now = 1000000;
	for (unsigned i = 0; i < c->n; i++) {
		const struct ud_frame *u = &c->f[i];
		int from = memcmp(u->pkt.h.net.src_ip, ipa, 4) == 0 ? 0 : 1;
		struct host *to = &h[1 - from];
		assert_memory_equal(u->pkt.h.net.dst_ip, to->ip, 4);
		struct droce_link l = droce_memlink_end(ml, (unsigned)from);
		struct droce_tx_frame tf;
		memset(&tf, 0, sizeof(tf));
		tf.hdr = u->data;
		tf.hdr_len = (uint32_t)u->len;
		assert_int_equal(l.ops->tx(l.priv, &tf, now), 0);
		for (int k = 0; k < 4; k++)
			droce_ctx_poll(to->ctx, now += 1000);
		struct droce_wc wc;
		assert_int_equal(droce_poll_cq(to->cq, 1, &wc), 1);
		uint32_t plen = u->pkt.h.payload_len;
		assert_int_equal(wc.status, DROCE_WC_SUCCESS);
		assert_int_equal(wc.opcode, DROCE_WC_RECV);
		assert_int_equal(wc.qp_num, 1);
		assert_int_equal(wc.src_qp, u->pkt.h.ext.deth.sqpn);
		assert_int_equal(wc.src_qp, 1);
		assert_int_equal(plen, 256); /* a MAD */
		assert_int_equal(wc.byte_len, GRH + plen);
		assert_true(wc.wc_flags & DROCE_WC_GRH);
		assert_int_equal(wc.wr_id, got[1 - from]);
		got[1 - from]++;
		const uint8_t *b = to->buf + wc.wr_id * SLOT;
		for (unsigned z = 0; z < 20; z++)
			assert_int_equal(b[z], 0);
		assert_memory_equal(b + 20, u->data + u->pkt.l3_off, 20);
		assert_memory_equal(b + GRH, u->pkt.payload, plen);
		uint8_t src[16];
		assert_int_equal(droce_grh_src_ip(b, src), 4);
		assert_memory_equal(src, u->pkt.h.net.src_ip, 4);
		assert_int_equal(b[GRH], 1);     /* MAD base version */
		assert_int_equal(b[GRH + 1], 7); /* management class: CM */
	}
	for (int s = 0; s < 2; s++) {
		struct droce_ctx_stats st;
		assert_int_equal(droce_ctx_get_stats(h[s].ctx, &st), 0);
		for (unsigned r = 0; droce_drop_reason_name(r); r++)
			if (st.drop[r])
				fail_msg("%s: host %d dropped %llu frames: %s", c->file, s,
					 (unsigned long long)st.drop[r], droce_drop_reason_name(r));
		host_down(&h[s]);
	}
	droce_memlink_destroy(ml);
	printf("%s: %u UD datagrams to QP1 received (%u / %u per host)\n", c->file, c->n, got[0], got[1]);
}

static void test_rxe_cm_datagrams(void **state)
{
	(void)state;
	if (!wt_corpus_dir())
		skip();
	struct corpus *k = calloc(1, sizeof(*k));
	assert_non_null(k);
	assert_true(wt_corpus_for_each(collect, k) > 0);
	assert_true(k->n >= 1);
	for (unsigned i = 0; i < k->n; i++) {
		/* REQ, REP, RTU, DREQ, DREP */
		if (k->c[i].n != 5)
			fail_msg("%s: %u UD frames, want the handshake's 5", k->c[i].file, k->c[i].n);
		replay_capture(&k->c[i]);
		for (unsigned j = 0; j < k->c[i].n; j++)
			free(k->c[i].f[j].data);
	}
	free(k);
}

int main(void)
{
	if (!wt_corpus_dir()) {
		printf("SKIP: ../shared/pcap-corpus is absent\n");
		return 77; /* meson: SKIP */
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rxe_cm_datagrams),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
