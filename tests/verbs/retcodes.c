/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The return conventions of the drop-in's exported verbs, class by class,
 * as rdma-core's libibverbs/verbs.c has them for each verb (one process, a
 * memif server port with no peer; no traffic is needed):
 *
 *   A. int verbs that hand the provider's errno value back (0 or EINVAL,
 *      EBUSY, EOPNOTSUPP ..., positive): the destroy/dealloc/modify/query
 *      verbs, attach_mcast, resize_cq, query_ece, fork_init, query_gid_ex;
 *   B. int verbs of rdma-core's own that fail with -1 and errno set:
 *      query_gid, query_pkey, get_pkey_index, query_gid_type,
 *      init_ah_from_wc, get_cq_event, get_async_event, read_sysfs_file,
 *      rereg_mr (a negative IBV_REREG_MR_ERR_* code);
 *   C. a negative errno: _ibv_query_gid_table, resolve_eth_l2_from_gid;
 *   D. constructors: NULL with errno set (never NULL with errno 0);
 *      verbs.h's inline wrappers of extended ops droce lacks: EOPNOTSUPP;
 *   E. the device list: no device is an empty list, not NULL.
 *
 *   verbs_retcodes      (exit 0: every check passed)
 */
#include <fcntl.h>

#include "vtest.h"

/* Class D: @p p is NULL and errno is @p e. */
#define NULL_ERRNO(p, e) ((p) == NULL && errno == (e))

/* Private verbs rdma-core exports without a public prototype. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static void class_e_no_device(void)
{
	unsetenv("DROCE_PORT");
	int n = -1;
	errno = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	CHECK(l && n == 0 && !l[0], "E get_device_list without DROCE_PORT: an empty list (n %d)", n);
	if (l)
		ibv_free_device_list(l);
}

int main(void)
{
	alarm(60);
	class_e_no_device();
	char spec[160];
	snprintf(spec, sizeof(spec), "memif:server,socket=/tmp/droce-retcodes-%d.sock", (int)getpid());
	setenv("DROCE_PORT", spec, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	struct ibv_context *ctx = open_droce(); /* E: droce0 once DROCE_PORT is set */
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
	static char buf[4096];
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!pd || !cq || !mr) {
		perror("pd/cq/mr");
		return 1;
	}

	/* A: the errno value itself */
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "A dealloc_pd with an MR: EBUSY");
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "A destroy_comp_channel with a CQ: EBUSY");
	struct ibv_port_attr pa;
	CHECK(ibv_query_port(ctx, 2, &pa) == EINVAL, "A query_port(2): EINVAL");
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	CHECK(qp != NULL, "D create_qp(RC): a QP");
	if (qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
		errno = 0;
		int r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		CHECK(r == EINVAL, "A modify_qp RESET->RTS: EINVAL (%d)", r);
		union ibv_gid g = {{0}};
		CHECK(ibv_attach_mcast(qp, &g, 0) == EOPNOTSUPP, "A attach_mcast: EOPNOTSUPP");
		CHECK(ibv_detach_mcast(qp, &g, 0) == EOPNOTSUPP, "A detach_mcast: EOPNOTSUPP");
		struct ibv_ece ece = {0};
		CHECK(ibv_query_ece(qp, &ece) == EOPNOTSUPP, "A query_ece: EOPNOTSUPP");
		CHECK(ibv_set_ece(qp, &ece) == EOPNOTSUPP, "A set_ece: EOPNOTSUPP");
		struct ibv_qp_init_attr qi;
		CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &qi) == 0 && a.qp_state == IBV_QPS_RESET,
		      "A query_qp: 0, RESET");
		CHECK(ibv_destroy_qp(qp) == 0, "A destroy_qp: 0");
	}
	CHECK(ibv_resize_cq(cq, 32) == EOPNOTSUPP, "A resize_cq: EOPNOTSUPP");
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "A req_notify_cq: 0");
	struct ibv_gid_entry ge;
	CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 1) == EINVAL, "A query_gid_ex(flags 1): EINVAL");
	CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_type == IBV_GID_TYPE_ROCE_V2,
	      "A query_gid_ex: 0, RoCE v2");
	enum ibv_fork_status fs = ibv_is_fork_initialized();
	CHECK(ibv_fork_init() == (fs == IBV_FORK_ENABLED ? 0 : EINVAL),
	      "A fork_init with memory registered: 0 if enabled, else EINVAL");
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	if (srq) {
		struct ibv_srq_attr q = {.srq_limit = 9};
		CHECK(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT) == EINVAL, "A modify_srq(limit > max_wr): EINVAL");
		CHECK(ibv_destroy_srq(srq) == 0, "A destroy_srq: 0");
	}

	/* B: -1 and errno */
	union ibv_gid gid;
	errno = 0;
	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == -1 && errno == EINVAL, "B query_gid(index 1): -1, EINVAL");
	__be16 pkey;
	errno = 0;
	CHECK(ibv_query_pkey(ctx, 1, 1, &pkey) == -1 && errno == EINVAL, "B query_pkey(index 1): -1, EINVAL");
	errno = 0;
	int pi = ibv_get_pkey_index(ctx, 1, htobe16(0x1234));
	CHECK(pi == -1 && errno == ENOENT, "B get_pkey_index(unknown P_Key): -1, ENOENT (%d)", pi);
	CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)) == 0, "B get_pkey_index(0xffff): 0");
	int type = -1;
	errno = 0;
	int r = ibv_query_gid_type(ctx, 1, 3, &type);
	CHECK(r == -1 && errno == EINVAL, "B query_gid_type(index 3): -1, EINVAL (%d)", r);
	CHECK(ibv_query_gid_type(ctx, 1, 0, &type) == 0 && type == 1, "B query_gid_type(0): RoCE v2");
	struct ibv_wc wc = {.wc_flags = IBV_WC_GRH};
	struct ibv_grh grh;
	memset(&grh, 0, sizeof(grh));
	((uint8_t *)&grh)[20] = 0x60; /* not an IPv4 header */
	struct ibv_ah_attr ah;
	errno = 0;
	r = ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &ah);
	CHECK(r == -1 && errno == EPROTONOSUPPORT, "B init_ah_from_wc(not IPv4): -1, EPROTONOSUPPORT (%d)", r);
	wc.wc_flags = 0;
	r = ibv_init_ah_from_wc(ctx, 1, &wc, NULL, &ah);
	CHECK(r == 0 && !ah.is_global, "B init_ah_from_wc without a GRH: 0, no GRH (%d)", r);
	int fl = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	struct ibv_cq *ecq;
	void *ectx;
	errno = 0;
	r = ibv_get_cq_event(ch, &ecq, &ectx);
	CHECK(r == -1 && errno == EAGAIN, "B get_cq_event, non-blocking, none: -1, EAGAIN (%d)", r);
	fl = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	struct ibv_async_event ev;
	errno = 0;
	r = ibv_get_async_event(ctx, &ev);
	CHECK(r == -1 && errno == EAGAIN, "B get_async_event, non-blocking, none: -1, EAGAIN (%d)", r);
	char rb[16];
	CHECK(ibv_read_sysfs_file("/nonexistent", "x", rb, sizeof(rb)) == -1,
	      "B read_sysfs_file(missing): -1");
	errno = 0;
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(r == IBV_REREG_MR_ERR_INPUT && errno == EOPNOTSUPP, "B rereg_mr: ERR_INPUT, EOPNOTSUPP (%d)", r);

	/* C: negative errno */
	struct ibv_gid_entry tab[2];
	CHECK(ibv_query_gid_table(ctx, tab, 2, 0) == 1, "C query_gid_table: 1 entry");
	CHECK(ibv_query_gid_table(ctx, tab, 0, 0) == -EINVAL, "C query_gid_table(max 0): -EINVAL");
	uint8_t mac[6];
	uint16_t vid;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	r = ibv_resolve_eth_l2_from_gid(ctx, &aa, mac, &vid);
	CHECK(r < 0, "C resolve_eth_l2_from_gid: negative (%d)", r);

	/* D: NULL and errno */
	struct ibv_qp_init_attr uc = ia;
	uc.qp_type = IBV_QPT_UC;
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_qp(pd, &uc), EOPNOTSUPP), "D create_qp(UC): NULL, EOPNOTSUPP");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_cq(ctx, 0, NULL, NULL, 0), EINVAL), "D create_cq(0): NULL, EINVAL");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_reg_mr(pd, buf, 64, 1 << 30), EINVAL), "D reg_mr(unknown access): NULL, EINVAL");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_reg_dmabuf_mr(pd, 0, 64, 0, -1, IBV_ACCESS_LOCAL_WRITE), EOPNOTSUPP),
	      "D reg_dmabuf_mr: NULL, EOPNOTSUPP");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_import_pd(ctx, 1), EOPNOTSUPP), "D import_pd: NULL, EOPNOTSUPP");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_import_device(-1), EOPNOTSUPP), "D import_device: NULL, EOPNOTSUPP");
	struct ibv_ah_attr noglobal = {.port_num = 1};
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_ah(pd, &noglobal), EINVAL), "D create_ah without a GRH: NULL, EINVAL");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_ah_from_wc(pd, &wc, NULL, 1), EINVAL),
	      "D create_ah_from_wc without IBV_WC_GRH: NULL, EINVAL");
	struct ibv_srq_init_attr_ex sx = {.attr = {.max_wr = 2, .max_sge = 1}, .pd = pd,
					  .comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
					  .srq_type = IBV_SRQT_TM};
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_srq_ex(ctx, &sx), EOPNOTSUPP), "D create_srq_ex(TM): NULL, EOPNOTSUPP");
	/* extended ops droce leaves NULL: verbs.h's inline wrappers */
	struct ibv_cq_init_attr_ex cx = {.cqe = 4};
	errno = 0;
	CHECK(NULL_ERRNO(ibv_create_cq_ex(ctx, &cx), EOPNOTSUPP), "D create_cq_ex: NULL, EOPNOTSUPP");
	errno = 0;
	CHECK(NULL_ERRNO(ibv_alloc_mw(pd, IBV_MW_TYPE_1), EOPNOTSUPP), "D alloc_mw: NULL, EOPNOTSUPP");
	struct ibv_td_init_attr td = {0};
	errno = 0;
	CHECK(NULL_ERRNO(ibv_alloc_td(ctx, &td), EOPNOTSUPP), "D alloc_td: NULL, EOPNOTSUPP");
	struct ibv_xrcd_init_attr xa = {0};
	errno = 0;
	CHECK(NULL_ERRNO(ibv_open_xrcd(ctx, &xa), EOPNOTSUPP), "D open_xrcd: NULL, EOPNOTSUPP");

	/* A again: the successful teardown */
	CHECK(ibv_dereg_mr(mr) == 0, "A dereg_mr: 0");
	CHECK(ibv_destroy_cq(cq) == 0, "A destroy_cq: 0");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "A destroy_comp_channel: 0");
	CHECK(ibv_dealloc_pd(pd) == 0, "A dealloc_pd: 0");
	CHECK(ibv_close_device(ctx) == 0, "A close_device: 0");
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
