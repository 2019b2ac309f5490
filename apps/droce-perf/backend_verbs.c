/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf over rdma-core's libibverbs (--backend verbs): the same tests,
 * side channel and checks over any verbs device (rxe, siw over RoCE, a
 * ConnectX), so either end of a run can be droce or another stack. The
 * device runs its transport itself: nothing here polls a port, and ARP is
 * the kernel's. Work requests and completions are the droce types the tests
 * use, translated one to one (both follow the verbs of IBTA 11).
 */
#include "perf.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rte_cycles.h>

/* The device counters reported beside the results (rxe's names; a device
 * without one reads 0). Deltas over the run: in a guest of its own the
 * device serves this run only. */
static const char *const hw_names[] = {
	"duplicate_request", "out_of_seq_request", "rcvd_seq_err", "rcvd_rnr_err",
	"send_rnr_err", "completer_retry_err", "retry_exceeded_err", "sent_pkts", "rcvd_pkts",
};
#define N_HW (sizeof(hw_names) / sizeof(hw_names[0]))

struct verbs_be {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp **qp;    /* o.qps of each */
	struct ibv_mr **mr;
	unsigned gid_index;
	unsigned max_rd_atomic, max_dest_rd_atomic;
	char dev[IBV_SYSFS_NAME_MAX];
	uint64_t hw0[N_HW];
};

static struct verbs_be *be(const struct perf *p)
{
	return p->bk;
}

static uint64_t read_hw(const struct verbs_be *b, unsigned port, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s", b->dev,
		 port, name);
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static bool ipv4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return !memcmp(g->raw, prefix, 12);
}

/* --gid-index, else the first RoCEv2 GID that is IPv4-mapped (rxe: index 1),
 * else the first RoCEv2 GID: droce speaks RoCEv2 only (IBTA A17). */
static int pick_gid(struct perf *p, struct verbs_be *b, int tbl_len, struct ibv_gid_entry *out)
{
	int first_v2 = -1;
	struct ibv_gid_entry e;
	if (p->o.gid_index >= 0) {
		if (ibv_query_gid_ex(b->ctx, p->o.ib_port, (uint32_t)p->o.gid_index, out, 0)) {
			fprintf(stderr, "droce-perf: %s: no GID at index %d\n", b->dev, p->o.gid_index);
			return -ENOENT;
		}
		if (out->gid_type != IBV_GID_TYPE_ROCE_V2) {
			fprintf(stderr, "droce-perf: %s GID %d is not RoCEv2\n", b->dev, p->o.gid_index);
			return -EPROTONOSUPPORT;
		}
		return 0;
	}
	for (int i = 0; i < tbl_len; i++) {
		if (ibv_query_gid_ex(b->ctx, p->o.ib_port, (uint32_t)i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (ipv4_mapped(&e.gid)) {
			*out = e;
			return 0;
		}
		if (first_v2 < 0) {
			first_v2 = i;
			*out = e;
		}
	}
	if (first_v2 >= 0)
		return 0;
	fprintf(stderr, "droce-perf: %s port %u has no RoCEv2 GID (is its netdev up with an IP?)\n",
		b->dev, p->o.ib_port);
	return -ENOENT;
}

static int netdev_mac(unsigned ifindex, uint8_t mac[6])
{
	struct ifreq ifr = {0};
	if (!if_indextoname(ifindex, ifr.ifr_name))
		return -errno;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int r = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	if (r)
		return -errno;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

/* The TSC against CLOCK_MONOTONIC over 20 ms: perf_now() reads the TSC
 * whichever backend (there is no EAL to ask for its frequency here). */
static uint64_t calibrate_tsc_hz(void)
{
	struct timespec a, b, d = {0, 20000000L};
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t t0 = rte_get_tsc_cycles();
	nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	uint64_t t1 = rte_get_tsc_cycles();
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	return t1 > t0 && ns > 0 ? (uint64_t)((double)(t1 - t0) * 1e9 / ns + 0.5) : 1000000000u;
}

static int v_open(struct perf *p, int eal_argc, char **eal_argv, const char *prog,
		  unsigned cq_depth, struct perf_local *me)
{
	(void)eal_argv;
	(void)prog;
	struct verbs_be *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	p->bk = b;
	b->qp = calloc(p->o.qps, sizeof(*b->qp));
	b->mr = calloc(p->o.qps, sizeof(*b->mr));
	if (!b->qp || !b->mr)
		return -ENOMEM;
	if (eal_argc > 0)
		fprintf(stderr, "droce-perf: --backend verbs ignores the EAL arguments\n");
	p->tsc_hz = calibrate_tsc_hz();
	int n = 0;
	b->list = ibv_get_device_list(&n);
	struct ibv_device *dev = NULL;
	for (int i = 0; b->list && i < n && !dev; i++)
		if (!p->o.ib_dev || !strcmp(ibv_get_device_name(b->list[i]), p->o.ib_dev))
			dev = b->list[i];
	if (!dev) {
		fprintf(stderr, "droce-perf: no verbs device%s%s (ibv_devices lists them)\n",
			p->o.ib_dev ? " named " : "", p->o.ib_dev ? p->o.ib_dev : "");
		return -ENODEV;
	}
	snprintf(b->dev, sizeof(b->dev), "%s", ibv_get_device_name(dev));
	b->ctx = ibv_open_device(dev);
	if (!b->ctx) {
		fprintf(stderr, "droce-perf: open %s: %s\n", b->dev, strerror(errno));
		return -errno;
	}
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	if (ibv_query_device(b->ctx, &da) || ibv_query_port(b->ctx, (uint8_t)p->o.ib_port, &pa)) {
		fprintf(stderr, "droce-perf: %s port %u: cannot query it\n", b->dev, p->o.ib_port);
		return -ENODEV;
	}
	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET || pa.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "droce-perf: %s port %u is not an active Ethernet (RoCE) port\n",
			b->dev, p->o.ib_port);
		return -ENODEV;
	}
	struct ibv_gid_entry g;
	int r = pick_gid(p, b, pa.gid_tbl_len, &g);
	if (r)
		return r;
	b->gid_index = g.gid_index;
	if (ipv4_mapped(&g.gid)) {
		me->ip_version = 4;
		memcpy(me->ip, g.gid.raw + 12, 4);
	} else {
		me->ip_version = 6;
		memcpy(me->ip, g.gid.raw, 16);
	}
	if ((r = netdev_mac(g.ndev_ifindex, me->mac))) {
		fprintf(stderr, "droce-perf: %s GID %u: no netdev MAC: %s\n", b->dev, b->gid_index,
			strerror(-r));
		return r;
	}
	me->mtu = 128u << pa.active_mtu; /* IBV_MTU_256 = 1 */
	b->max_rd_atomic = (unsigned)da.max_qp_init_rd_atom < DROCE_DEFAULT_MAX_RD_ATOMIC
		? (unsigned)da.max_qp_init_rd_atom : DROCE_DEFAULT_MAX_RD_ATOMIC;
	b->max_dest_rd_atomic = (unsigned)da.max_qp_rd_atom < DROCE_DEFAULT_MAX_RD_ATOMIC
		? (unsigned)da.max_qp_rd_atom : DROCE_DEFAULT_MAX_RD_ATOMIC;
	b->pd = ibv_alloc_pd(b->ctx);
	b->cq = b->pd ? ibv_create_cq(b->ctx, (int)cq_depth, NULL, NULL, 0) : NULL;
	if (!b->cq) {
		fprintf(stderr, "droce-perf: %s: PD/CQ: %s\n", b->dev, strerror(errno));
		return -errno ? -errno : -ENOMEM;
	}
	for (unsigned i = 0; i < N_HW; i++)
		b->hw0[i] = read_hw(b, p->o.ib_port, hw_names[i]);
	printf(" Device: %s port %u (verbs), GID index %u, active MTU %u\n", b->dev, p->o.ib_port,
	       b->gid_index, me->mtu);
	return 0;
}

static const int access_all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

static int v_create_qp(struct perf *p, unsigned i)
{
	struct verbs_be *b = be(p);
	struct perf_qp *q = &p->qp[i];
	b->mr[i] = ibv_reg_mr(b->pd, q->buf, q->buf_len, access_all);
	if (!b->mr[i]) {
		fprintf(stderr, "droce-perf: %s: register %zu bytes: %s\n", b->dev, q->buf_len,
			strerror(errno));
		return -errno;
	}
	struct ibv_qp_init_attr ia = {
		.send_cq = b->cq,
		.recv_cq = b->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = p->o.tx_depth, .max_recv_wr = p->slots + 16,
			.max_send_sge = 1, .max_recv_sge = 1},
	};
	b->qp[i] = ibv_create_qp(b->pd, &ia);
	if (!b->qp[i]) {
		fprintf(stderr, "droce-perf: %s: QP %u: %s\n", b->dev, i, strerror(errno));
		return -errno;
	}
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0,
				.port_num = (uint8_t)p->o.ib_port, .qp_access_flags = access_all};
	int r = ibv_modify_qp(b->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS);
	if (r) {
		fprintf(stderr, "droce-perf: QP %u to INIT: %s\n", i, strerror(r));
		return -r;
	}
	q->qpn = b->qp[i]->qp_num;
	q->lkey = b->mr[i]->lkey;
	q->rkey = b->mr[i]->rkey;
	return 0;
}

static enum ibv_mtu ibv_mtu_of(uint32_t bytes)
{
	enum ibv_mtu m = IBV_MTU_256;
	while (m < IBV_MTU_4096 && (128u << m) < bytes)
		m++;
	return m;
}

static int v_connect_qp(struct perf *p, unsigned i, const struct droce_sc_info *peer,
			uint32_t psn, uint32_t mtu)
{
	struct verbs_be *b = be(p);
	struct ibv_qp_attr a = {0};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ibv_mtu_of(mtu);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = (uint8_t)b->max_dest_rd_atomic;
	a.min_rnr_timer = DROCE_DEFAULT_MIN_RNR_TIMER;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = (uint8_t)p->o.ib_port;
	a.ah_attr.grh.sgid_index = (uint8_t)b->gid_index;
	a.ah_attr.grh.hop_limit = DROCE_DEFAULT_TTL;
	a.ah_attr.grh.traffic_class = (uint8_t)(DROCE_DEFAULT_DSCP << 2);
	/* The peer's GID from its address: IPv4-mapped for IPv4 (IBTA A17.4.5.1). */
	if (peer->ip_version == 4) {
		a.ah_attr.grh.dgid.raw[10] = 0xff;
		a.ah_attr.grh.dgid.raw[11] = 0xff;
		memcpy(a.ah_attr.grh.dgid.raw + 12, peer->ip, 4);
	} else {
		memcpy(a.ah_attr.grh.dgid.raw, peer->ip, 16);
	}
	int r = ibv_modify_qp(b->qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			      IBV_QP_MIN_RNR_TIMER);
	if (!r) {
		struct ibv_qp_attr s = {0};
		s.qp_state = IBV_QPS_RTS;
		s.sq_psn = psn;
		s.timeout = p->o.qp_timeout; /* -u, as the droce backend */
		s.retry_cnt = 7;
		s.rnr_retry = 7;
		s.max_rd_atomic = (uint8_t)b->max_rd_atomic;
		r = ibv_modify_qp(b->qp[i], &s, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (r) {
		fprintf(stderr, "droce-perf: QP %u to RTR/RTS: %s\n", i, strerror(r));
		return -r;
	}
	return 0;
}

static enum ibv_wr_opcode wr_opcode(enum droce_wr_opcode op)
{
	switch (op) {
	case DROCE_WR_RDMA_WRITE: return IBV_WR_RDMA_WRITE;
	case DROCE_WR_RDMA_WRITE_WITH_IMM: return IBV_WR_RDMA_WRITE_WITH_IMM;
	case DROCE_WR_SEND: return IBV_WR_SEND;
	case DROCE_WR_SEND_WITH_IMM: return IBV_WR_SEND_WITH_IMM;
	case DROCE_WR_RDMA_READ: return IBV_WR_RDMA_READ;
	case DROCE_WR_ATOMIC_CMP_AND_SWP: return IBV_WR_ATOMIC_CMP_AND_SWP;
	default: return IBV_WR_ATOMIC_FETCH_AND_ADD;
	}
}

static int v_post_send(struct perf *p, unsigned i, struct droce_send_wr *wr)
{
	struct ibv_sge sge = {wr->sg_list[0].addr, wr->sg_list[0].length, wr->sg_list[0].lkey};
	struct ibv_send_wr w = {0}, *bad;
	w.wr_id = wr->wr_id;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = wr_opcode(wr->opcode);
	w.send_flags = (wr->send_flags & DROCE_SEND_SIGNALED ? IBV_SEND_SIGNALED : 0) |
		       (wr->send_flags & DROCE_SEND_FENCE ? IBV_SEND_FENCE : 0) |
		       (wr->send_flags & DROCE_SEND_SOLICITED ? IBV_SEND_SOLICITED : 0);
	w.imm_data = wr->imm_data; /* both carry the wire's value as is */
	if (wr->opcode == DROCE_WR_ATOMIC_FETCH_AND_ADD || wr->opcode == DROCE_WR_ATOMIC_CMP_AND_SWP) {
		w.wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		w.wr.atomic.rkey = wr->wr.atomic.rkey;
		w.wr.atomic.compare_add = wr->wr.atomic.compare_add;
		w.wr.atomic.swap = wr->wr.atomic.swap;
	} else {
		w.wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w.wr.rdma.rkey = wr->wr.rdma.rkey;
	}
	int r = ibv_post_send(be(p)->qp[i], &w, &bad);
	return r ? -r : 0;
}

static int v_post_recv(struct perf *p, unsigned i, struct droce_recv_wr *wr)
{
	struct ibv_sge sge = {wr->sg_list[0].addr, wr->sg_list[0].length, wr->sg_list[0].lkey};
	struct ibv_recv_wr w = {.wr_id = wr->wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
	int r = ibv_post_recv(be(p)->qp[i], &w, &bad);
	return r ? -r : 0;
}

static enum droce_wc_status wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return DROCE_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR: return DROCE_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_QP_OP_ERR: return DROCE_WC_LOC_QP_OP_ERR;
	case IBV_WC_LOC_PROT_ERR: return DROCE_WC_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR: return DROCE_WC_WR_FLUSH_ERR;
	case IBV_WC_BAD_RESP_ERR: return DROCE_WC_BAD_RESP_ERR;
	case IBV_WC_LOC_ACCESS_ERR: return DROCE_WC_LOC_ACCESS_ERR;
	case IBV_WC_REM_INV_REQ_ERR: return DROCE_WC_REM_INV_REQ_ERR;
	case IBV_WC_REM_ACCESS_ERR: return DROCE_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR: return DROCE_WC_REM_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR: return DROCE_WC_RETRY_EXC_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR: return DROCE_WC_RNR_RETRY_EXC_ERR;
	case IBV_WC_REM_ABORT_ERR: return DROCE_WC_REM_ABORT_ERR;
	default: return DROCE_WC_GENERAL_ERR;
	}
}

static enum droce_wc_opcode wc_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return DROCE_WC_SEND;
	case IBV_WC_RDMA_WRITE: return DROCE_WC_RDMA_WRITE;
	case IBV_WC_RDMA_READ: return DROCE_WC_RDMA_READ;
	case IBV_WC_COMP_SWAP: return DROCE_WC_COMP_SWAP;
	case IBV_WC_FETCH_ADD: return DROCE_WC_FETCH_ADD;
	case IBV_WC_RECV_RDMA_WITH_IMM: return DROCE_WC_RECV_RDMA_WITH_IMM;
	default: return DROCE_WC_RECV;
	}
}

static int v_poll(struct perf *p, uint64_t now, struct droce_wc *wc, int max)
{
	(void)now;
	struct ibv_wc w[64];
	int n = ibv_poll_cq(be(p)->cq, max < 64 ? max : 64, w);
	if (n < 0)
		return -EIO;
	for (int k = 0; k < n; k++) {
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].wr_id = w[k].wr_id;
		wc[k].status = wc_status(w[k].status);
		wc[k].opcode = wc_opcode(w[k].opcode);
		wc[k].byte_len = w[k].byte_len;
		wc[k].imm_data = w[k].imm_data;
		wc[k].qp_num = w[k].qp_num;
		wc[k].src_qp = w[k].src_qp;
		wc[k].wc_flags = w[k].wc_flags & IBV_WC_WITH_IMM ? DROCE_WC_WITH_IMM : 0;
		wc[k].vendor_err = w[k].vendor_err;
		if (w[k].status != IBV_WC_SUCCESS)
			fprintf(stderr, "droce-perf: %s: %s (vendor error 0x%x)\n", be(p)->dev,
				ibv_wc_status_str(w[k].status), w[k].vendor_err);
	}
	return n;
}

static void v_flush(struct perf *p)
{
	(void)p; /* the device sends by itself */
}

static uint64_t hw_delta(const struct perf *p, unsigned i)
{
	const struct verbs_be *b = be(p);
	uint64_t v = read_hw(b, p->o.ib_port, hw_names[i]);
	return v >= b->hw0[i] ? v - b->hw0[i] : 0;
}

static void v_counters(const struct perf *p, struct perf_counters *c)
{
	if (!be(p) || !be(p)->ctx)
		return;
	c->dup_reqs = hw_delta(p, 0);
	c->out_of_seq = hw_delta(p, 1);
	c->nak_psn_seq = hw_delta(p, 2);
	c->rnr_nak_rcvd = hw_delta(p, 3);
	c->rnr_nak_sent = hw_delta(p, 4);
}

static void v_print_port(const struct perf *p)
{
	const struct verbs_be *b = be(p);
	if (!b || !b->ctx)
		return;
	printf(" Device %s:", b->dev);
	for (unsigned i = 0; i < N_HW; i++)
		printf(" %s %llu", hw_names[i], (unsigned long long)hw_delta(p, i));
	printf("\n");
}

static void v_close(struct perf *p)
{
	struct verbs_be *b = be(p);
	if (!b)
		return;
	for (unsigned i = 0; b->qp && b->mr && i < p->o.qps; i++) {
		if (b->qp[i])
			ibv_destroy_qp(b->qp[i]);
		if (b->mr[i])
			ibv_dereg_mr(b->mr[i]);
	}
	if (b->cq)
		ibv_destroy_cq(b->cq);
	if (b->pd)
		ibv_dealloc_pd(b->pd);
	if (b->ctx)
		ibv_close_device(b->ctx);
	if (b->list)
		ibv_free_device_list(b->list);
	free(b->qp);
	free(b->mr);
	free(b);
	p->bk = NULL;
}

static const struct perf_backend verbs = {
	.name = "verbs",
	.open = v_open,
	.create_qp = v_create_qp,
	.connect_qp = v_connect_qp,
	.post_send = v_post_send,
	.post_recv = v_post_recv,
	.poll = v_poll,
	.idle = NULL,
	.flush = v_flush,
	.counters = v_counters,
	.print_port = v_print_port,
	.close = v_close,
};

const struct perf_backend *const perf_backend_verbs = &verbs;
