/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine benchmark (issue 3 item 9): two contexts back to back in memory on
 * one thread (so one core runs requester, responder and completer of both
 * sides), side A streaming RDMA WRITEs to side B. No DPDK: a trivial
 * in-memory link that copies each frame into a slot, as a NIC would DMA it.
 *
 *   droce-bench-engine [-t SECONDS] [-s SIZE]... [-m MTU] [-q DEPTH] [-b BURST]
 *
 * Reports, per message size: messages/s, request packets/s, all frames/s
 * (requests + ACKs), and payload Gbit/s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <droce/droce.h>

#include "slot_link.h"


static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	struct droce_ctx *ctx;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *mem;
};

static int connect_qp(struct side *s, struct side *peer, int i, enum droce_mtu mtu)
{
	struct droce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = DROCE_QPS_INIT;
	a.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ;
	if (droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = DROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = droce_qp_num(peer->qp);
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.ip_version = 4;
	a.ah_attr.dst_ip[0] = 10;
	a.ah_attr.dst_ip[3] = (uint8_t)(2 - i);
	a.ah_attr.dscp = 26;
	a.ah_attr.ttl = 64;
	if (droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
					       DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
					       DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = DROCE_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return droce_modify_qp(s->qp, &a, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
						  DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
						  DROCE_QP_MAX_QP_RD_ATOMIC);
}

#define SIG_EVERY 32u

static int run(uint32_t size, double secs, enum droce_mtu mtu, uint32_t depth, uint32_t burst)
{
	static struct link l;
	static struct end ends[2];
	struct side s[2];
	size_t memlen = (size_t)size * 4 + 4096;

	memset(&l, 0, sizeof(l));
	for (int i = 0; i < 2; i++) {
		l.d[i].buf = calloc(SLOTS, SLOT_BYTES);
		ends[i].l = &l;
		ends[i].side = i;
		struct droce_ctx_params p;
		droce_ctx_params_init(&p);
		p.ip[0] = 10;
		p.ip[3] = (uint8_t)(1 + i);
		p.mac[5] = (uint8_t)(1 + i);
		p.link.ops = &slot_link_ops;
		p.burst = burst;
		p.link.priv = &ends[i];
		s[i].ctx = droce_ctx_create(&p);
		s[i].cq = droce_create_cq(s[i].ctx, 65536);
		struct droce_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = s[i].cq;
		ia.cap.max_send_wr = depth;
		s[i].qp = droce_create_qp(s[i].ctx, &ia);
		s[i].mem = calloc(1, memlen);
		s[i].mr = droce_reg_mr(s[i].ctx, s[i].mem, memlen,
				       DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE |
					       DROCE_ACCESS_REMOTE_READ);
		if (!s[i].ctx || !s[i].cq || !s[i].qp || !s[i].mr) {
			fprintf(stderr, "setup failed: %s\n", strerror(errno));
			return -1;
		}
	}
	if (connect_qp(&s[0], &s[1], 0, mtu) || connect_qp(&s[1], &s[0], 1, mtu)) {
		fprintf(stderr, "connect failed\n");
		return -1;
	}

	struct droce_sge sge = { (uintptr_t)s[0].mem, size, s[0].mr->lkey };
	struct droce_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = DROCE_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)s[1].mem;
	wr.wr.rdma.rkey = s[1].mr->rkey;

	uint64_t posted = 0, done = 0, t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9), t = t0;
	struct droce_wc wc[64];
	unsigned iter = 0;
	while (t < end) {
		/* Keep the SQ full: outstanding = posted - done (done counts in SIG_EVERY steps). */
		while (posted - done < depth - SIG_EVERY) {
			struct droce_send_wr *bad;
			wr.wr_id = posted;
			wr.send_flags = (posted % SIG_EVERY == SIG_EVERY - 1) ? DROCE_SEND_SIGNALED : 0;
			if (droce_post_send(s[0].qp, &wr, &bad))
				break;
			posted++;
		}
		droce_ctx_poll(s[0].ctx, t);
		droce_ctx_poll(s[1].ctx, t);
		int n = droce_poll_cq(s[0].cq, 64, wc);
		if (n < 0) {
			fprintf(stderr, "CQ overflow\n");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != DROCE_WC_SUCCESS) {
				fprintf(stderr, "completion error: %s\n", droce_wc_status_str(wc[i].status));
				return -1;
			}
			done += SIG_EVERY;
		}
		if ((++iter & 63) == 0)
			t = now_ns();
	}
	t = now_ns();
	double el = (double)(t - t0) / 1e9;
	struct droce_ctx_stats a, b;
	struct droce_qp_stats qa;
	droce_ctx_get_stats(s[0].ctx, &a);
	droce_ctx_get_stats(s[1].ctx, &b);
	droce_qp_get_stats(s[0].qp, &qa);
	double req_pps = (double)qa.tx_pkts / el;
	double all_fps = (double)(a.tx_frames + b.tx_frames) / el;
	double gbps = (double)done * size * 8 / el / 1e9;
	printf("%8u B  %10.0f msg/s  %10.3f Mpps requests  %10.3f Mpps all frames (incl %llu ACKs)  %8.2f Gbit/s payload  retrans %llu\n",
	       size, (double)done / el, req_pps / 1e6, all_fps / 1e6,
	       (unsigned long long)b.tx_frames, gbps, (unsigned long long)qa.retrans_pkts);
	if (getenv("DROCE_BENCH_VERBOSE")) {
		struct droce_ctx_stats *cs[2] = {&a, &b};
		fprintf(stderr, "  messages %llu in %.6f s\n", (unsigned long long)done, el);
		for (int i = 0; i < 2; i++) {
			fprintf(stderr, "  side %c: rx %llu tx %llu tx_busy %llu", 'A' + i,
				(unsigned long long)cs[i]->rx_frames, (unsigned long long)cs[i]->tx_frames,
				(unsigned long long)cs[i]->tx_busy);
			for (unsigned r = 0; droce_drop_reason_name(r); r++)
				if (cs[i]->drop[r])
					fprintf(stderr, " %s %llu", droce_drop_reason_name(r),
						(unsigned long long)cs[i]->drop[r]);
			fprintf(stderr, "\n");
		}
	}
	for (int i = 0; i < 2; i++) {
		droce_destroy_qp(s[i].qp);
		droce_dereg_mr(s[i].mr);
		droce_destroy_cq(s[i].cq);
		droce_ctx_destroy(s[i].ctx);
		free(s[i].mem);
		free(l.d[i].buf);
	}
	return 0;
}

int main(int argc, char **argv)
{
	double secs = 2.0;
	uint32_t sizes[16];
	unsigned nsizes = 0;
	enum droce_mtu mtu = DROCE_MTU_4096;
	uint32_t depth = 256, burst = DROCE_DEFAULT_BURST;
	int c;
	while ((c = getopt(argc, argv, "t:s:m:q:b:h")) != -1) {
		switch (c) {
		case 't': secs = atof(optarg); break;
		case 's': if (nsizes < 16) sizes[nsizes++] = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': {
			unsigned m = (unsigned)atoi(optarg);
			mtu = m == 256 ? DROCE_MTU_256 : m == 512 ? DROCE_MTU_512 : m == 1024 ? DROCE_MTU_1024
			    : m == 2048 ? DROCE_MTU_2048 : DROCE_MTU_4096;
			break;
		}
		case 'q': depth = (uint32_t)atoi(optarg); break;
		case 'b': burst = (uint32_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-s SIZE]... [-m MTU] [-q SQ_DEPTH] [-b BURST]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!nsizes) {
		sizes[nsizes++] = 64;
		sizes[nsizes++] = 65536;
	}
	if (depth < 2 * SIG_EVERY)
		depth = 2 * SIG_EVERY;
	printf("droce engine benchmark: 2 contexts, 1 thread, RDMA WRITE A->B, MTU %u, SQ depth %u, burst %u, %.1f s per size\n",
	       droce_mtu_bytes(mtu), depth, burst, secs);
	for (unsigned i = 0; i < nsizes; i++)
		if (run(sizes[i], secs, mtu, depth, burst))
			return 1;
	return 0;
}
