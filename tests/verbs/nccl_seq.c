/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NCCL's IB transport call sequence over droce's libibverbs, CPU only
 * (docs/nccl.md). Written from a reading of NVIDIA/nccl src/misc/ibvsymbols.cc,
 * src/misc/ibvwrap.cc and src/transport/net_ib.cc (v2.27.7; v2.30.7 has the
 * same verbs sequence split over src/transport/net_ib/): the library
 * loaded with dlopen in NCCL's order and every symbol bound with dlvsym at
 * the version NCCL asks for, the device queries with NCCL's own 56-byte
 * port attribute struct, the DMA-BUF probe, one PD, a CQ and an RC QP per
 * connection with NCCL's sizes and QP attributes, and the data path of
 * ncclIbIrecv / ncclIbPostFifo / ncclIbIsend / ncclIbMultiSend / ncclIbTest:
 *
 *  - the receiver posts receives with no scatter entries, then RDMA WRITEs
 *    n 64-byte FIFO slots (addr, size, rkeys[4], nreqs, tag, idx at offset
 *    40, padding) into the sender's FIFO, signaled only for slot 0 of 256,
 *    so 255 unsignaled WRs run between signaled ones on a 512-deep SQ;
 *  - the sender spins on the 8-byte idx of each slot with plain loads and,
 *    once it sees it, reads the rest: every field must already be there
 *    (NCCL relies on the NIC placing a WRITE in ascending address order);
 *  - one request: the data goes as one RDMA WRITE WITH IMM, the size in the
 *    immediate (zero-length when the size is 0); several: one RDMA WRITE
 *    each (zero-length ones included) and a WRITE WITH IMM of the sizes
 *    array, imm 0, the last WR the only signaled one;
 *  - three connections, each driven by its own thread, on one context,
 *    while the main thread registers memory and queries QPs, and NCCL's
 *    async-event thread waits in ibv_get_async_event;
 *  - memory droce cannot reach (unmapped, PROT_NONE as CUDA reserves device
 *    address space, read-only for a writable MR) fails ibv_reg_mr with
 *    EFAULT or EINVAL, as a NIC without peer memory does, and the context
 *    stays usable;
 *  - the end: NCCL never calls ibv_close_device; the receiver exits with
 *    QPs still up right after its last completion, the sender's last WRs
 *    must still complete (their ACKs left), and the sender stays healthy on
 *    its port after the receiver left, then exits without a close too.
 *
 * Every byte of every message, every FIFO field and every completion field
 * is checked. Roles (scripts/droce-run sets the port and address):
 *   nccl_seq recv [--tcp PORT] [--iters N] [--cqs N]      memif server side
 *   nccl_seq send [--tcp PORT] [--iters N] [--cqs N] HOST memif client side
 *   nccl_seq unload                 dlclose both libraries with droce running
 * Exit 0 when every check passed.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* NCCL's sizes (net_ib.cc): NCCL_NET_MAX_REQUESTS 32 * NCCL_NET_IB_MAX_RECVS 8. */
#define MAX_RECVS 8
#define MAX_REQUESTS (32 * MAX_RECVS)
#define MAX_DEVS_PER_NIC 4
#define NCOMMS 3
#define WINDOW 8                   /* receives in flight per connection (NCCL_STEPS) */
#define SLOT_BYTES (64u * 1024u)   /* one receive buffer; n == 1 may use all 8 */
#define BIG_BYTES (MAX_RECVS * SLOT_BYTES - 3u)
#define DEADLINE_S 60

/* struct ncclIbSendFifo: 64 bytes, the flag (idx) at offset 40. */
struct fifo_slot {
	uint64_t addr;
	uint64_t size;
	uint32_t rkeys[MAX_DEVS_PER_NIC];
	uint32_t nreqs;
	uint32_t tag;
	uint64_t idx;
	char padding[16];
};
_Static_assert(sizeof(struct fifo_slot) == 64, "FIFO slot size");
_Static_assert(offsetof(struct fifo_slot, idx) == 40, "FIFO flag offset");

/* NCCL's struct ibv_port_attr (src/include/ibvcore.h): rdma-core 44's plus
 * active_speed_ex, 56 bytes; NCCL passes sizeof() of it to query_port. */
struct nccl_port_attr {
	struct ibv_port_attr a;
	uint32_t active_speed_ex;
};
_Static_assert(offsetof(struct nccl_port_attr, active_speed_ex) == 52, "NCCL's layout");
_Static_assert(sizeof(struct nccl_port_attr) == 56, "NCCL's port attr size");

static atomic_int failures;
static const char *side = "?";

static void report(int ok, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ok) {
		printf("ok   %s: %s\n", side, msg);
	} else {
		printf("FAIL %s (%s:%d): %s\n", side, file, line, msg);
		atomic_fetch_add(&failures, 1);
	}
	fflush(stdout);
}
#define CHECK(cond, ...) report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* Quiet on success: for checks made thousands of times. */
#define EXPECT(cond, ...)                                          \
	do {                                                       \
		if (!(cond))                                       \
			report(0, __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* NCCL names completion statuses itself (ibvwrap.cc ibvWcStatusStr). */
static const char *wc_str(enum ibv_wc_status st)
{
	static _Thread_local char buf[32];
	if (st == IBV_WC_SUCCESS)
		return "SUCCESS";
	snprintf(buf, sizeof(buf), "status %d", (int)st);
	return buf;
}

/* ------------------------------------------------ the library, as NCCL -- */

struct syms {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int, struct ibv_qp_init_attr *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*destroy_qp)(struct ibv_qp *);
	int (*fork_init)(void);
	const char *(*event_type_str)(enum ibv_event_type);
	int (*query_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*set_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*query_port_speed)(struct ibv_context *, uint8_t, uint64_t *);
};

static struct syms S;
static void *ibv_handle;

/* ibvsymbols.cc: NCCL_IBVERBS_LIB (2.30), then "libibverbs.so", then
 * "libibverbs.so.1"; the first that loads wins. */
static void *load_library(void)
{
	const char *names[3] = {getenv("NCCL_IBVERBS_LIB"), "libibverbs.so", "libibverbs.so.1"};
	for (int i = 0; i < 3; i++) {
		if (!names[i])
			continue;
		void *h = dlopen(names[i], RTLD_NOW);
		if (h) {
			printf("note %s: dlopen(\"%s\") loaded\n", side, names[i]);
			if (getenv("NCCL_SEQ_WANT_ENV_LIB"))
				CHECK(i == 0, "NCCL_IBVERBS_LIB (set by scripts/droce-run) was the one loaded");
			return h;
		}
	}
	return NULL;
}

static int bind_syms(void *h)
{
	struct {
		const char *name, *version;
		void **ptr;
		int required;
	} t[] = {
#define REQ(f, n) {n, "IBVERBS_1.1", (void **)&S.f, 1}
		REQ(get_device_list, "ibv_get_device_list"), REQ(free_device_list, "ibv_free_device_list"),
		REQ(get_device_name, "ibv_get_device_name"), REQ(open_device, "ibv_open_device"),
		REQ(close_device, "ibv_close_device"), REQ(get_async_event, "ibv_get_async_event"),
		REQ(ack_async_event, "ibv_ack_async_event"), REQ(query_device, "ibv_query_device"),
		REQ(query_port, "ibv_query_port"), REQ(query_gid, "ibv_query_gid"),
		REQ(query_qp, "ibv_query_qp"), REQ(alloc_pd, "ibv_alloc_pd"),
		REQ(dealloc_pd, "ibv_dealloc_pd"), REQ(reg_mr, "ibv_reg_mr"),
		REQ(dereg_mr, "ibv_dereg_mr"), REQ(create_cq, "ibv_create_cq"),
		REQ(destroy_cq, "ibv_destroy_cq"), REQ(create_qp, "ibv_create_qp"),
		REQ(modify_qp, "ibv_modify_qp"), REQ(destroy_qp, "ibv_destroy_qp"),
		REQ(fork_init, "ibv_fork_init"), REQ(event_type_str, "ibv_event_type_str"),
#undef REQ
		{"ibv_reg_mr_iova2", "IBVERBS_1.8", (void **)&S.reg_mr_iova2, 0},
		{"ibv_reg_dmabuf_mr", "IBVERBS_1.12", (void **)&S.reg_dmabuf_mr, 0},
		{"ibv_query_ece", "IBVERBS_1.10", (void **)&S.query_ece, 0},
		{"ibv_set_ece", "IBVERBS_1.10", (void **)&S.set_ece, 0},
		{"ibv_query_port_speed", "IBVERBS_1.16", (void **)&S.query_port_speed, 0},
	};
	int missing = 0, required = 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		*t[i].ptr = dlvsym(h, t[i].name, t[i].version);
		required += t[i].required;
		if (!*t[i].ptr && t[i].required) {
			CHECK(0, "dlvsym(%s, %s)", t[i].name, t[i].version);
			missing++;
		}
	}
	CHECK(!missing, "all %d symbols NCCL requires bound at IBVERBS_1.1", required);
	CHECK(S.reg_mr_iova2 && S.reg_dmabuf_mr && S.query_ece && S.set_ece,
	      "ibv_reg_mr_iova2@1.8, ibv_reg_dmabuf_mr@1.12, ibv_query_ece/ibv_set_ece@1.10 bound");
	return missing ? -1 : 0;
}

/* The library loaded must be droce's (not rdma-core's found first). */
static int check_is_droce(void *h)
{
	Dl_info info;
	int droce = dlsym(h, "droce_verbs_cm_hooks") != NULL;
	void *fn;
	memcpy(&fn, &S.open_device, sizeof(fn)); /* POSIX: a function's address as data */
	const char *where = dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
	CHECK(droce, "the library loaded is droce's (%s)", where);
	const char *dir = getenv("NCCL_SEQ_LIBDIR");
	if (dir) {
		char want[4096], got[4096];
		CHECK(realpath(dir, want) && realpath(where, got) && !strncmp(got, want, strlen(want)),
		      "it is the one in %s", dir);
	}
	return droce ? 0 : -1;
}

/* ------------------------------------------------------------- devices -- */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct nccl_port_attr port;
	union ibv_gid gid;
	int speed; /* Mbit/s as NCCL computes it */
};

/* net_ib.cc ncclIbSpeed / ncclIbWidth. */
static int nccl_speed(int speed, int width)
{
	static const int widths[] = {1, 4, 8, 12, 2};
	static const int speeds[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000};
	int i = 0, j = 0;
	while (i < 8 && !(speed & (1 << i)))
		i++;
	while (j < 4 && !(width & (1 << j)))
		j++;
	return speeds[i] * widths[j];
}

static void *async_main(void *arg)
{
	/* ncclIbAsyncThreadMain: detached, blocks in ibv_get_async_event for
	 * the life of the process. */
	struct ibv_context *ctx = arg;
	for (;;) {
		struct ibv_async_event ev;
		if (S.get_async_event(ctx, &ev))
			break;
		printf("note %s: async event %s\n", side, S.event_type_str(ev.event_type));
		S.ack_async_event(&ev);
	}
	return NULL;
}

static int open_dev(struct dev *d)
{
	/* mlx5dvsymbols.cc: rdma-core's libmlx5 (ibverbs-providers), loaded
	 * over droce's libibverbs, asked whether each device is an mlx5. */
	void *mlx5 = dlopen("libmlx5.so", RTLD_NOW);
	if (!mlx5)
		mlx5 = dlopen("libmlx5.so.1", RTLD_NOW);
	bool (*is_mlx5)(struct ibv_device *) = NULL;
	if (mlx5)
		*(void **)&is_mlx5 = dlvsym(mlx5, "mlx5dv_is_supported", "MLX5_1.8");
	CHECK(S.fork_init() == 0, "ibv_fork_init() returns 0 (NCCL calls it first)");
	int n = 0;
	struct ibv_device **list = S.get_device_list(&n);
	CHECK(list && n == 1, "one device listed (%d)", n);
	if (!list || n < 1)
		return -1;
	if (is_mlx5)
		CHECK(!is_mlx5(list[0]), "libmlx5's mlx5dv_is_supported(droce0): false (provider None)");
	else
		printf("note %s: no libmlx5 with mlx5dv_is_supported@MLX5_1.8 (NCCL goes on without)\n", side);
	const char *name = S.get_device_name(list[0]);
	CHECK(name && !strcmp(name, "droce0"), "device droce0 (NCCL_IB_HCA=droce0)");
	d->ctx = S.open_device(list[0]);
	CHECK(d->ctx != NULL, "ibv_open_device: %s", d->ctx ? "ok" : strerror(errno));
	if (!d->ctx)
		return -1;

	struct ibv_device_attr da;
	memset(&da, 0, sizeof(da)); /* NCCL zeroes it first */
	int r = S.query_device(d->ctx, &da);
	CHECK(r == 0 && da.phys_port_cnt == 1 && da.max_qp >= 2 * NCOMMS && da.sys_image_guid,
	      "ibv_query_device: %d ports, max_qp %d, sys_image_guid %llx", da.phys_port_cnt, da.max_qp,
	      (unsigned long long)da.sys_image_guid);

	/* ibvwrap.cc wrap_ibv_query_port (NCCL's own headers): the context's
	 * query_port op with sizeof(NCCL's struct) = 56, over garbage. */
	memset(&d->port, 0xa5, sizeof(d->port));
	struct verbs_context *v = verbs_get_ctx_op(d->ctx, query_port);
	CHECK(v != NULL, "the context has the extended query_port op");
	r = v ? v->query_port(d->ctx, 1, &d->port.a, sizeof(d->port)) : -1;
	CHECK(r == 0 && d->port.a.state == IBV_PORT_ACTIVE &&
	      d->port.a.link_layer == IBV_LINK_LAYER_ETHERNET && d->port.a.active_mtu >= IBV_MTU_1024,
	      "query_port(56 bytes): ACTIVE, Ethernet, active_mtu %d", d->port.a.active_mtu);
	const uint8_t *tail = (const uint8_t *)&d->port + sizeof(d->port.a);
	CHECK(!tail[0] && !tail[1] && !tail[2] && !tail[3],
	      "query_port zeroed the caller's whole 56 bytes: active_speed_ex %#x (rdma-core zeroes)",
	      d->port.active_speed_ex);
	/* Its fallback when the op fails: zero, then the exported symbol. */
	struct nccl_port_attr compat;
	memset(&compat, 0, sizeof(compat));
	r = S.query_port(d->ctx, 1, &compat.a);
	CHECK(r == 0 && !memcmp(&compat, &d->port, sizeof(compat)),
	      "the exported ibv_query_port agrees with the op");
	/* 2.30: ibv_query_port_speed (IBVERBS_1.16) when present, else the
	 * speed from active_speed(_ex) and width. */
	uint64_t qspeed = 0;
	if (S.query_port_speed && S.query_port_speed(d->ctx, 1, &qspeed) == 0) {
		d->speed = (int)(qspeed * 100);
	} else {
		int sp = d->port.active_speed_ex ? (int)d->port.active_speed_ex : d->port.a.active_speed;
		d->speed = nccl_speed(sp, d->port.a.active_width);
	}
	CHECK(d->speed >= 10000 && d->speed <= 800000, "NCCL's speed for droce0: %d Mbit/s (%s)",
	      d->speed, S.query_port_speed ? "ibv_query_port_speed" : "no ibv_query_port_speed: fallback");

	/* NCCL_IB_GID_INDEX=0: the IPv4-mapped GID. */
	r = S.query_gid(d->ctx, 1, 0, &d->gid);
	CHECK(r == 0 && d->gid.raw[10] == 0xff && d->gid.raw[11] == 0xff,
	      "ibv_query_gid(1, 0): IPv4-mapped (%u.%u.%u.%u)", d->gid.raw[12], d->gid.raw[13],
	      d->gid.raw[14], d->gid.raw[15]);
	S.free_device_list(list);

	pthread_t t;
	if (pthread_create(&t, NULL, async_main, d->ctx) == 0)
		pthread_detach(t);

	/* ncclIbRelaxedOrderingCapable: wrap_ibv_reg_mr_iova2(NULL...) only
	 * asks whether the symbol exists. ncclIbDmaBufSupport: a dummy
	 * ibv_reg_dmabuf_mr(fd -1) on a fresh PD must fail EOPNOTSUPP or
	 * EPROTONOSUPPORT (unsupported), not EBADF (supported). */
	struct ibv_pd *pd = S.alloc_pd(d->ctx);
	CHECK(pd != NULL, "ibv_alloc_pd (DMA-BUF probe)");
	if (pd && S.reg_dmabuf_mr) {
		errno = 0;
		struct ibv_mr *m = S.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
		CHECK(!m && (errno == EOPNOTSUPP || errno == EPROTONOSUPPORT),
		      "DMA-BUF probe: ibv_reg_dmabuf_mr(fd -1) fails %s: NCCL takes DMA-BUF as unsupported",
		      strerror(errno));
	}
	if (pd)
		S.dealloc_pd(pd);
	d->pd = S.alloc_pd(d->ctx);
	CHECK(d->pd != NULL, "ibv_alloc_pd (the device's shared PD)");
	return d->pd ? 0 : -1;
}

/* Item 6: memory droce cannot reach fails cleanly. NCCL hands ibv_reg_mr a
 * CUDA pointer when it thinks GPUDirect works; on the CPU side that is an
 * address in a range the CUDA driver reserved PROT_NONE. */
static void check_unreachable(struct dev *d)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 16 * pg;
	uint8_t *none = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *gone = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *half = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED || gone == MAP_FAILED || ro == MAP_FAILED || half == MAP_FAILED) {
		CHECK(0, "mmap for the unreachable-memory checks");
		return;
	}
	munmap(gone, len);
	munmap(half + len, len); /* a range whose second half is gone */
	struct {
		const char *what;
		void *addr;
		size_t len;
		int access;
	} bad[] = {
		{"PROT_NONE (a CUDA device-memory reservation)", none, len, acc},
		{"unmapped", gone, len, acc},
		{"read-only, registered writable", ro, len, acc},
		{"mapped then unmapped half way", half, 2 * len, acc},
		{"one byte into PROT_NONE", none + len - 1, 1, IBV_ACCESS_REMOTE_READ},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		struct ibv_mr *m = S.reg_mr(d->pd, bad[i].addr, bad[i].len, bad[i].access);
		CHECK(!m && (errno == EFAULT || errno == EINVAL), "ibv_reg_mr on %s: NULL, %s",
		      bad[i].what, m ? "registered" : strerror(errno));
		if (m)
			S.dereg_mr(m);
		if (S.reg_mr_iova2) {
			errno = 0;
			m = S.reg_mr_iova2(d->pd, bad[i].addr, bad[i].len, (uintptr_t)bad[i].addr,
					   (unsigned)bad[i].access);
			EXPECT(!m && (errno == EFAULT || errno == EINVAL),
			       "ibv_reg_mr_iova2 on %s: %s", bad[i].what, m ? "registered" : strerror(errno));
			if (m)
				S.dereg_mr(m);
		}
	}
	/* What stays legal: read-only memory for remote reads, the mapped half. */
	struct ibv_mr *m = S.reg_mr(d->pd, ro, len, IBV_ACCESS_REMOTE_READ);
	CHECK(m != NULL, "ibv_reg_mr of read-only memory for REMOTE_READ only: %s",
	      m ? "ok" : strerror(errno));
	if (m)
		S.dereg_mr(m);
	m = S.reg_mr(d->pd, half, len, acc);
	CHECK(m != NULL, "ibv_reg_mr of the half still mapped: %s", m ? "ok" : strerror(errno));
	if (m)
		S.dereg_mr(m);
	munmap(none, len);
	munmap(ro, len);
	munmap(half, len);
}

/* Extra CQs as NCCL makes them (one per connection), n at a time, made and
 * destroyed 16 times over: more than 1024 in all, more than 64 at once.
 * Comm-core mode must allow that many live and take destroyed ones back. */
static void churn_cqs(struct dev *d, int n)
{
	if (n <= 0)
		return;
	struct ibv_cq **cq = calloc((size_t)n, sizeof(*cq));
	int rounds = 16, made_all = 0, bad = 0;
	for (int round = 0; round < rounds && !bad; round++) {
		int made = 0;
		for (int i = 0; i < n; i++) {
			cq[i] = S.create_cq(d->ctx, 2 * MAX_REQUESTS, NULL, NULL, 0);
			if (!cq[i]) {
				CHECK(0, "round %d: ibv_create_cq #%d (%d in all): %s", round, i + 1,
				      made_all + i + 1, strerror(errno));
				bad = 1;
				break;
			}
			made++;
		}
		for (int i = 0; i < made; i++)
			bad += S.destroy_cq(cq[i]) != 0;
		made_all += made;
	}
	CHECK(!bad && made_all == rounds * n, "%d CQs created and destroyed, %d alive at once", made_all, n);
	free(cq);
}

/* ------------------------------------------------------------ connections -- */

/* What the two sides exchange (ncclIbConnectionMetadata, one device). */
struct meta {
	uint32_t qpn;
	uint32_t mtu;
	union ibv_gid gid;
	uint64_t fifo_addr;  /* sender: its FIFO */
	uint32_t fifo_rkey;
	uint32_t sizes_rkey; /* receiver: its sizes FIFO */
	uint64_t sizes_addr;
	uint64_t data_addr;  /* receiver: its buffers (for the check only) */
	uint32_t data_rkey;
	uint32_t pad;
};

struct comm {
	int k;
	int send;
	int iters;
	struct dev *d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct meta local, remote;
	/* sender */
	struct fifo_slot (*fifo)[MAX_RECVS];   /* written by the receiver */
	int (*sizes_stage)[MAX_RECVS];         /* remSizesFifo.elems */
	uint8_t *sbuf;
	struct ibv_mr *fifo_mr, *sizes_stage_mr, *sbuf_mr;
	/* receiver */
	struct fifo_slot (*elems)[MAX_RECVS];  /* remFifo.elems: the FIFO WRITE's source */
	int (*sizes)[MAX_RECVS];               /* sizesFifo: the sender writes it */
	uint8_t *dbuf;                         /* WINDOW x MAX_RECVS x SLOT_BYTES */
	struct ibv_mr *elems_mr, *sizes_mr, *dbuf_mr;
	/* results */
	long bytes, zero_len, multi, unsignaled_max, signaled_fifo;
	int fail;
};

/* ncclIbRegMrDmaBufInternal for a user buffer on host memory: whole pages,
 * and with relaxed ordering (NCCL_IB_PCI_RELAXED_ORDERING=2: on when
 * ibv_reg_mr_iova2 exists) through ibv_reg_mr_iova2. */
static struct ibv_mr *reg_user(struct ibv_pd *pd, void *p, size_t len)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	size_t pages = ((uintptr_t)p + len - a + pg - 1) / pg;
	if (S.reg_mr_iova2)
		return S.reg_mr_iova2(pd, (void *)a, pages * pg, a, (unsigned)(acc | IBV_ACCESS_RELAXED_ORDERING));
	return S.reg_mr(pd, (void *)a, pages * pg, acc);
}

static void *xalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n))
		return NULL;
	memset(p, 0, n);
	return p;
}

static int setup_comm(struct comm *c)
{
	struct dev *d = c->d;
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	/* ncclIbInitCommDevBase: 2 * MAX_REQUESTS * qpsPerConn CQEs, no channel. */
	c->cq = S.create_cq(d->ctx, 2 * MAX_REQUESTS, &c->k, NULL, 0);
	EXPECT(c->cq != NULL, "comm %d: ibv_create_cq: %s", c->k, strerror(errno));
	if (!c->cq)
		return -1;
	/* ncclIbCreateQp */
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof(ia));
	ia.qp_context = c;
	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 2 * MAX_REQUESTS;
	ia.cap.max_recv_wr = MAX_REQUESTS;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 0; /* NCCL_IB_USE_INLINE=0 */
	c->qp = S.create_qp(d->pd, &ia);
	EXPECT(c->qp != NULL, "comm %d: ibv_create_qp: %s", c->k, strerror(errno));
	if (!c->qp)
		return -1;
	EXPECT(ia.cap.max_send_wr >= 2 * MAX_REQUESTS && ia.cap.max_recv_wr >= MAX_REQUESTS,
	       "comm %d: the QP's queues are as deep as asked (%u/%u)", c->k, ia.cap.max_send_wr,
	       ia.cap.max_recv_wr);
	struct ibv_qp_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0; /* NCCL_IB_PKEY */
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	int r = S.modify_qp(c->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	EXPECT(r == 0, "comm %d: INIT: %s", c->k, strerror(r));
	if (S.query_ece) {
		struct ibv_ece ece;
		memset(&ece, 0, sizeof(ece));
		int e = S.query_ece(c->qp, &ece);
		EXPECT(e == EOPNOTSUPP || e == ENOTSUP || e == 0,
		       "comm %d: ibv_query_ece: %d (NCCL takes EOPNOTSUPP as no ECE)", c->k, e);
	}
	c->local.qpn = c->qp->qp_num;
	c->local.mtu = (uint32_t)d->port.a.active_mtu;
	c->local.gid = d->gid;
	if (c->send) {
		c->fifo = xalloc(sizeof(*c->fifo) * MAX_REQUESTS);
		c->sizes_stage = xalloc(sizeof(*c->sizes_stage) * MAX_REQUESTS);
		c->sbuf = xalloc((size_t)MAX_RECVS * SLOT_BYTES);
		if (!c->fifo || !c->sizes_stage || !c->sbuf)
			return -1;
		c->fifo_mr = S.reg_mr(d->pd, c->fifo, sizeof(*c->fifo) * MAX_REQUESTS, acc);
		c->sizes_stage_mr = S.reg_mr(d->pd, c->sizes_stage, sizeof(*c->sizes_stage) * MAX_REQUESTS, acc);
		c->sbuf_mr = reg_user(d->pd, c->sbuf, (size_t)MAX_RECVS * SLOT_BYTES);
		EXPECT(c->fifo_mr && c->sizes_stage_mr && c->sbuf_mr, "comm %d: sender MRs", c->k);
		if (!c->fifo_mr || !c->sizes_stage_mr || !c->sbuf_mr)
			return -1;
		c->local.fifo_addr = (uintptr_t)c->fifo;
		c->local.fifo_rkey = c->fifo_mr->rkey;
	} else {
		c->elems = xalloc(sizeof(*c->elems) * MAX_REQUESTS);
		c->sizes = xalloc(sizeof(*c->sizes) * MAX_REQUESTS);
		c->dbuf = xalloc((size_t)WINDOW * MAX_RECVS * SLOT_BYTES);
		if (!c->elems || !c->sizes || !c->dbuf)
			return -1;
		c->elems_mr = S.reg_mr(d->pd, c->elems, sizeof(*c->elems) * MAX_REQUESTS, acc);
		c->sizes_mr = S.reg_mr(d->pd, c->sizes, sizeof(*c->sizes) * MAX_REQUESTS, acc);
		c->dbuf_mr = reg_user(d->pd, c->dbuf, (size_t)WINDOW * MAX_RECVS * SLOT_BYTES);
		EXPECT(c->elems_mr && c->sizes_mr && c->dbuf_mr, "comm %d: receiver MRs", c->k);
		if (!c->elems_mr || !c->sizes_mr || !c->dbuf_mr)
			return -1;
		c->local.sizes_addr = (uintptr_t)c->sizes;
		c->local.sizes_rkey = c->sizes_mr->rkey;
		c->local.data_addr = (uintptr_t)c->dbuf;
		c->local.data_rkey = c->dbuf_mr->rkey;
	}
	return 0;
}

/* ncclIbRtrQp / ncclIbRtsQp with NCCL's defaults (IB_TIMEOUT 20,
 * IB_RETRY_CNT 7, rnr_retry 7, min_rnr_timer 12, hop limit 255, TC 0). */
static int connect_comm(struct comm *c)
{
	struct ibv_qp_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = (enum ibv_mtu)(c->remote.mtu < c->local.mtu ? c->remote.mtu : c->local.mtu);
	qa.dest_qp_num = c->remote.qpn;
	qa.rq_psn = 0;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.grh.dgid = c->remote.gid;
	qa.ah_attr.grh.flow_label = 0;
	qa.ah_attr.grh.sgid_index = 0;
	qa.ah_attr.grh.hop_limit = 255;
	qa.ah_attr.grh.traffic_class = 0;
	qa.ah_attr.sl = 0;
	qa.ah_attr.src_path_bits = 0;
	qa.ah_attr.port_num = 1;
	int r = S.modify_qp(c->qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	EXPECT(r == 0, "comm %d: RTR: %s", c->k, strerror(r));
	if (r)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 20;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = 0;
	qa.max_rd_atomic = 1;
	r = S.modify_qp(c->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	EXPECT(r == 0, "comm %d: RTS: %s", c->k, strerror(r));
	if (r)
		return -1;
	/* ibvModifyQpLog's query (IBV_QP_PORT | IBV_QP_AV). */
	struct ibv_qp_init_attr ia;
	memset(&qa, 0xa5, sizeof(qa));
	memset(&ia, 0xa5, sizeof(ia));
	r = S.query_qp(c->qp, &qa, IBV_QP_PORT | IBV_QP_AV, &ia);
	EXPECT(r == 0 && qa.port_num == 1 && qa.ah_attr.is_global &&
	       !memcmp(&qa.ah_attr.grh.dgid, &c->remote.gid, sizeof(c->remote.gid)) &&
	       qa.qp_state == IBV_QPS_RTS && ia.send_cq == c->cq && ia.qp_type == IBV_QPT_RC,
	       "comm %d: ibv_query_qp after RTS: port %u, state %d, the peer's GID", c->k, qa.port_num,
	       qa.qp_state);
	return 0;
}

/* ------------------------------------------------- the deterministic plan -- */

static int plan_n(int k, int i)
{
	static const int pat[16] = {1, 1, 2, 1, 8, 1, 3, 1, 4, 1, 1, 5, 1, 7, 6, 1};
	return pat[(i + k) % 16];
}

/* The size the receiver posts for request r of iteration i. */
static uint32_t plan_posted(int k, int i, int r)
{
	static const uint32_t sz[8] = {0, 1, 7, 64, 1000, 4096, 4097, SLOT_BYTES};
	if (plan_n(k, i) == 1 && i % 16 == 5)
		return BIG_BYTES; /* a multi-packet message over all 8 slots */
	return sz[(unsigned)(i * 5 + r * 3 + k) % 8];
}

/* What the sender sends (NCCL: min(its size, the posted size)). */
static uint32_t plan_sent(int k, int i, int r)
{
	uint32_t p = plan_posted(k, i, r);
	return i % 11 == 0 ? (p < 3 ? 0 : p - 3) : p;
}

static uint32_t plan_tag(int k, int i, int r)
{
	return 0x40000000u | (uint32_t)k << 24 | (uint32_t)(i & 0xffff) << 4 | (uint32_t)r;
}

static inline uint8_t pattern(int k, int i, int r, uint32_t j)
{
	uint32_t x = j * 2654435761u ^ ((uint32_t)i * 40503u + (uint32_t)r * 977u + (uint32_t)k * 131u);
	return (uint8_t)(x >> 13 ^ x);
}

#define POISON 0xee

static uint8_t *rbuf(struct comm *c, int i, int r)
{
	return c->dbuf + ((size_t)(i % WINDOW) * MAX_RECVS + (size_t)r) * SLOT_BYTES;
}

/* ------------------------------------------------------------- receiver -- */

static int poll_some(struct comm *c, struct ibv_wc *wc, double deadline)
{
	for (;;) {
		int n = ibv_poll_cq(c->cq, 4, wc);
		if (n)
			return n;
		if (now_s() > deadline)
			return -1;
	}
}

/* ncclIbIrecv + ncclIbPostFifo for iteration i. */
static int post_irecv(struct comm *c, int i, long *unsig_run)
{
	int n = plan_n(c->k, i);
	int slot = i % MAX_REQUESTS;
	/* What the sender will write must replace all of this. */
	for (int r = 0; r < n; r++) {
		uint32_t p = plan_posted(c->k, i, r);
		size_t span = p == BIG_BYTES ? (size_t)MAX_RECVS * SLOT_BYTES : SLOT_BYTES;
		memset(rbuf(c, i, r), POISON, span);
	}
	for (int r = 0; r < MAX_RECVS; r++)
		c->sizes[slot][r] = -1;

	struct ibv_recv_wr rwr, *rbad;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = (uint64_t)i;
	rwr.sg_list = NULL;
	rwr.num_sge = 0;
	int e = ibv_post_recv(c->qp, &rwr, &rbad);
	EXPECT(e == 0, "comm %d iter %d: ibv_post_recv with no scatter entries: %s", c->k, i, strerror(e));
	if (e)
		return -1;

	struct fifo_slot *el = c->elems[slot];
	memset(el, 0, sizeof(*el) * MAX_RECVS);
	for (int r = 0; r < n; r++) {
		el[r].addr = (uintptr_t)rbuf(c, i, r);
		el[r].rkeys[0] = c->dbuf_mr->rkey;
		el[r].nreqs = (uint32_t)n;
		el[r].size = plan_posted(c->k, i, r);
		el[r].tag = plan_tag(c->k, i, r);
		el[r].idx = (uint64_t)i + 1;
	}
	struct ibv_sge sge = {.addr = (uintptr_t)el, .length = (uint32_t)(n * sizeof(*el)),
			      .lkey = c->elems_mr->lkey};
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr.rdma.remote_addr = c->remote.fifo_addr + (uint64_t)slot * MAX_RECVS * sizeof(*el);
	wr.wr.rdma.rkey = c->remote.fifo_rkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = 0;
	/* slot == devIndex (0): one signaled FIFO write per 256. */
	if (slot == 0) {
		wr.send_flags |= IBV_SEND_SIGNALED;
		wr.wr_id = (1ull << 40) | (uint64_t)i;
		*unsig_run = 0;
	} else {
		(*unsig_run)++;
		if (*unsig_run > c->unsignaled_max)
			c->unsignaled_max = *unsig_run;
	}
	e = ibv_post_send(c->qp, &wr, &bad);
	EXPECT(e == 0, "comm %d iter %d: FIFO RDMA WRITE: %s", c->k, i, strerror(e));
	return e ? -1 : 0;
}

static void verify_irecv(struct comm *c, int i, const struct ibv_wc *wc)
{
	int n = plan_n(c->k, i), slot = i % MAX_REQUESTS;
	EXPECT(wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc->qp_num == c->qp->qp_num &&
	       (wc->wc_flags & IBV_WC_WITH_IMM),
	       "comm %d iter %d: completion opcode %d flags %#x qp %u", c->k, i, wc->opcode,
	       wc->wc_flags, wc->qp_num);
	for (int r = 0; r < n; r++) {
		uint32_t want = plan_sent(c->k, i, r), got;
		if (n == 1) {
			got = wc->imm_data; /* NCCL: sizes[0] = wc->imm_data */
			EXPECT(wc->byte_len == want, "comm %d iter %d: byte_len %u, want %u", c->k, i,
			       wc->byte_len, want);
		} else {
			got = (uint32_t)c->sizes[slot][r];
			EXPECT(wc->imm_data == 0 && wc->byte_len == (uint32_t)n * sizeof(int),
			       "comm %d iter %d: sizes WRITE WITH IMM: imm %u byte_len %u", c->k, i,
			       wc->imm_data, wc->byte_len);
		}
		EXPECT(got == want, "comm %d iter %d req %d: size %u, want %u", c->k, i, r, got, want);
		const uint8_t *b = rbuf(c, i, r);
		uint32_t posted = plan_posted(c->k, i, r);
		size_t span = posted == BIG_BYTES ? (size_t)MAX_RECVS * SLOT_BYTES : SLOT_BYTES;
		uint32_t j;
		for (j = 0; j < want; j++)
			if (b[j] != pattern(c->k, i, r, j))
				break;
		EXPECT(j == want, "comm %d iter %d req %d: byte %u of %u is %#x, want %#x", c->k, i, r, j,
		       want, j < want ? b[j] : 0, j < want ? pattern(c->k, i, r, j) : 0);
		for (j = want; j < span; j++)
			if (b[j] != POISON)
				break;
		EXPECT(j == span, "comm %d iter %d req %d: byte %u past the %u sent was written", c->k, i,
		       r, j, want);
		c->bytes += want;
		c->zero_len += want == 0;
	}
	c->multi += n > 1;
}

static void *recv_main(void *arg)
{
	struct comm *c = arg;
	double deadline = now_s() + DEADLINE_S;
	int posted = 0, done = 0, fifo_sig_due = 0;
	long unsig_run = 0;
	while (done < c->iters && !c->fail) {
		while (posted < c->iters && posted - done < WINDOW) {
			if (posted % MAX_REQUESTS == 0)
				fifo_sig_due++;
			if (post_irecv(c, posted, &unsig_run)) {
				c->fail = 1;
				break;
			}
			posted++;
		}
		struct ibv_wc wc[4];
		int got = poll_some(c, wc, deadline);
		if (got < 0) {
			EXPECT(0, "comm %d: no completion for iteration %d in %d s", c->k, done, DEADLINE_S);
			c->fail = 1;
			break;
		}
		for (int w = 0; w < got; w++) {
			if (wc[w].status != IBV_WC_SUCCESS) {
				EXPECT(0, "comm %d: completion status %s (wr_id %#llx)", c->k,
				       wc_str(wc[w].status), (unsigned long long)wc[w].wr_id);
				c->fail = 1;
				continue;
			}
			if (wc[w].wr_id >> 40) {
				EXPECT(wc[w].opcode == IBV_WC_RDMA_WRITE &&
				       (wc[w].wr_id & 0xffffffff) % MAX_REQUESTS == 0,
				       "comm %d: the signaled FIFO write's completion (wr_id %#llx)", c->k,
				       (unsigned long long)wc[w].wr_id);
				c->signaled_fifo++;
				fifo_sig_due--;
				continue;
			}
			EXPECT((int)wc[w].wr_id == done, "comm %d: receive %llu completed, expected %d",
			       c->k, (unsigned long long)wc[w].wr_id, done);
			verify_irecv(c, done, &wc[w]);
			done++;
		}
	}
	/* The last signaled FIFO write (the SQ drains through it). */
	while (fifo_sig_due > 0 && !c->fail) {
		struct ibv_wc wc[4];
		int got = poll_some(c, wc, deadline);
		if (got < 0) {
			EXPECT(0, "comm %d: the last signaled FIFO write never completed", c->k);
			c->fail = 1;
			break;
		}
		for (int w = 0; w < got; w++) {
			EXPECT(wc[w].status == IBV_WC_SUCCESS && (wc[w].wr_id >> 40),
			       "comm %d: a FIFO completion, status %s", c->k, wc_str(wc[w].status));
			c->signaled_fifo += wc[w].wr_id >> 40 ? 1 : 0;
			fifo_sig_due--;
		}
	}
	return NULL;
}

/* --------------------------------------------------------------- sender -- */

static void *send_main(void *arg)
{
	struct comm *c = arg;
	double deadline = now_s() + DEADLINE_S;
	struct ibv_sge sges[MAX_RECVS], sizes_sge;
	struct ibv_send_wr wrs[MAX_RECVS + 1];
	for (int i = 0; i < c->iters && !c->fail; i++) {
		int slot = i % MAX_REQUESTS;
		volatile struct fifo_slot *slots = c->fifo[slot];
		uint64_t idx = (uint64_t)i + 1;
		/* ncclIbIsend: the flag of slot 0, then of every other slot. */
		while (slots[0].idx != idx)
			if (now_s() > deadline) {
				EXPECT(0, "comm %d iter %d: FIFO slot %d never arrived", c->k, i, slot);
				c->fail = 1;
				return NULL;
			}
		int n = (int)slots[0].nreqs;
		EXPECT(n == plan_n(c->k, i), "comm %d iter %d: nreqs %d read after the flag, want %d",
		       c->k, i, n, plan_n(c->k, i));
		if (n < 1 || n > MAX_RECVS) {
			c->fail = 1;
			return NULL;
		}
		for (int r = 1; r < n; r++)
			while (slots[r].idx != idx)
				if (now_s() > deadline) {
					EXPECT(0, "comm %d iter %d: FIFO slot %d/%d never arrived", c->k, i, r, n);
					c->fail = 1;
					return NULL;
				}
		__sync_synchronize();
		for (int r = 0; r < n; r++) {
			const volatile struct fifo_slot *s = &slots[r];
			uint64_t want_addr = c->remote.data_addr +
					     ((uint64_t)(i % WINDOW) * MAX_RECVS + (uint64_t)r) * SLOT_BYTES;
			int pad0 = 1;
			for (int p = 0; p < 16; p++)
				pad0 &= s->padding[p] == 0;
			EXPECT(s->addr == want_addr && s->size == plan_posted(c->k, i, r) &&
			       s->rkeys[0] == c->remote.data_rkey && !s->rkeys[1] && !s->rkeys[2] &&
			       !s->rkeys[3] && s->nreqs == (uint32_t)n && s->tag == plan_tag(c->k, i, r) && pad0,
			       "comm %d iter %d slot %d/%d read after its flag: addr %#llx size %llu rkey %#x "
			       "tag %#x nreqs %u", c->k, i, r, n, (unsigned long long)s->addr,
			       (unsigned long long)s->size, s->rkeys[0], s->tag, s->nreqs);
		}
		/* ncclIbMultiSend */
		uint64_t wr_id = (uint64_t)i;
		int nwr = n;
		for (int r = 0; r < n; r++) {
			struct ibv_send_wr *wr = &wrs[r];
			memset(wr, 0, sizeof(*wr));
			uint32_t len = plan_sent(c->k, i, r);
			uint8_t *src = c->sbuf + (size_t)r * SLOT_BYTES;
			for (uint32_t j = 0; j < len; j++)
				src[j] = pattern(c->k, i, r, j);
			wr->opcode = IBV_WR_RDMA_WRITE;
			wr->send_flags = 0;
			wr->wr.rdma.remote_addr = slots[r].addr;
			wr->wr.rdma.rkey = slots[r].rkeys[0]; /* needed even for 0-size sends */
			wr->next = wr + 1;
			if (len == 0) {
				wr->sg_list = NULL;
				wr->num_sge = 0;
			} else {
				sges[r] = (struct ibv_sge){.addr = (uintptr_t)src, .length = len,
							   .lkey = c->sbuf_mr->lkey};
				wr->sg_list = &sges[r];
				wr->num_sge = 1;
			}
		}
		uint32_t imm = 0;
		struct ibv_send_wr *last = &wrs[n - 1];
		if (n == 1) {
			imm = plan_sent(c->k, i, 0);
		} else {
			int *sz = c->sizes_stage[slot];
			for (int r = 0; r < n; r++)
				sz[r] = (int)plan_sent(c->k, i, r);
			sizes_sge = (struct ibv_sge){.addr = (uintptr_t)sz, .length = (uint32_t)(n * sizeof(int)),
						     .lkey = c->sizes_stage_mr->lkey};
			last++;
			nwr++;
			memset(last, 0, sizeof(*last));
			last->wr.rdma.remote_addr = c->remote.sizes_addr + (uint64_t)slot * MAX_RECVS * sizeof(int);
			last->wr.rdma.rkey = c->remote.sizes_rkey;
			last->num_sge = 1;
			last->sg_list = &sizes_sge;
		}
		last->wr_id = wr_id;
		last->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		last->imm_data = imm;
		last->next = NULL;
		last->send_flags = IBV_SEND_SIGNALED;
		struct ibv_send_wr *bad;
		int e = ibv_post_send(c->qp, wrs, &bad);
		EXPECT(e == 0, "comm %d iter %d: ibv_post_send of %d WRs: %s", c->k, i, nwr, strerror(e));
		if (e) {
			c->fail = 1;
			return NULL;
		}
		/* ncclIbTest */
		struct ibv_wc wc[4];
		int got = poll_some(c, wc, deadline);
		if (got < 0) {
			EXPECT(0, "comm %d iter %d: the send never completed", c->k, i);
			c->fail = 1;
			return NULL;
		}
		EXPECT(got == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == wr_id &&
		       wc[0].opcode == IBV_WC_RDMA_WRITE && wc[0].qp_num == c->qp->qp_num,
		       "comm %d iter %d: send completion: %d, status %s, wr_id %llu, opcode %d", c->k, i,
		       got, wc_str(wc[0].status), (unsigned long long)wc[0].wr_id, wc[0].opcode);
		if (wc[0].status != IBV_WC_SUCCESS)
			c->fail = 1;
		for (int r = 0; r < n; r++) {
			c->bytes += plan_sent(c->k, i, r);
			c->zero_len += plan_sent(c->k, i, r) == 0;
		}
		c->multi += n > 1;
		memset((void *)&slots[0], 0, sizeof(struct fifo_slot));
	}
	return NULL;
}

/* ---------------------------------------------------------------- OOB -- */

static int full_io(int fd, void *buf, size_t len, int out)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int oob_open(int send_side, const char *host, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, host ? host : "127.0.0.1", &a.sin_addr);
	if (!send_side) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		socklen_t alen = sizeof(a);
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a, &alen))
			return -1;
		/* --tcp 0: a free port, for the script to hand to the sender. */
		printf("note recv: out-of-band TCP port %d\n", ntohs(a.sin_port));
		fflush(stdout);
		int s = accept(l, NULL, NULL);
		close(l);
		return s;
	}
	double end = now_s() + DEADLINE_S;
	while (now_s() < end) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			return s;
		close(s);
		usleep(50000);
	}
	return -1;
}

/* ---------------------------------------------------------------- main -- */

/* ncclIbCloseSend / ncclIbCloseRecv: QP, MRs, CQ; never the device. */
static void close_comm(struct comm *c)
{
	int bad = S.destroy_qp(c->qp) != 0;
	struct ibv_mr *mrs[] = {c->fifo_mr, c->sizes_stage_mr, c->sbuf_mr, c->elems_mr, c->sizes_mr, c->dbuf_mr};
	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (mrs[i])
			bad += S.dereg_mr(mrs[i]) != 0;
	bad += S.destroy_cq(c->cq) != 0;
	CHECK(!bad, "comm %d closed as NCCL closes it (QP, MRs, CQ; the device stays open)", c->k);
}

/* ncclIbInitDevices up to the device's PD. @return 0 or -1. */
static int start(struct dev *d)
{
	memset(d, 0, sizeof(*d));
	ibv_handle = load_library();
	CHECK(ibv_handle != NULL, "libibverbs loaded in NCCL's order: %s", ibv_handle ? "yes" : dlerror());
	if (!ibv_handle || bind_syms(ibv_handle) || check_is_droce(ibv_handle))
		return -1;
	return open_dev(d);
}

static int run_pair(int send_side, const char *host, int port, int iters, int cqs)
{
	side = send_side ? "send" : "recv";
	struct dev d;
	if (start(&d))
		return 1;
	check_unreachable(&d);
	churn_cqs(&d, cqs);

	struct comm cs[NCOMMS];
	memset(cs, 0, sizeof(cs));
	for (int k = 0; k < NCOMMS; k++) {
		cs[k] = (struct comm){.k = k, .send = send_side, .iters = iters, .d = &d};
		if (setup_comm(&cs[k]))
			return 1;
	}
	CHECK(1, "%d connections: CQ of %d, RC QP %d/%d deep, INIT with REMOTE_WRITE", NCOMMS,
	      2 * MAX_REQUESTS, 2 * MAX_REQUESTS, MAX_REQUESTS);
	int fd = oob_open(send_side, host, port);
	CHECK(fd >= 0, "out-of-band connection (TCP)");
	if (fd < 0)
		return 1;
	for (int k = 0; k < NCOMMS; k++)
		if (full_io(fd, &cs[k].local, sizeof(cs[k].local), 1) ||
		    full_io(fd, &cs[k].remote, sizeof(cs[k].remote), 0))
			return CHECK(0, "metadata exchange"), 1;
	int bad = 0;
	for (int k = 0; k < NCOMMS; k++)
		bad += connect_comm(&cs[k]) != 0;
	CHECK(!bad, "RTR/RTS with NCCL's attributes, GID index 0, query_qp as NCCL logs it");
	if (bad)
		return 1;
	/* Both sides at RTS before the first WRITE (NCCL's ready handshake). */
	char ready = 1;
	if (full_io(fd, &ready, 1, 1) || full_io(fd, &ready, 1, 0))
		return CHECK(0, "ready handshake"), 1;

	double t0 = now_s();
	pthread_t th[NCOMMS];
	for (int k = 0; k < NCOMMS; k++)
		pthread_create(&th[k], NULL, send_side ? send_main : recv_main, &cs[k]);
	pid_t child = -1;
	if (!send_side) {
		/* A child that exits normally (destructors run) while this
		 * process keeps the device: it must leave the parent's port be. */
		fflush(stdout);
		child = fork();
		if (child == 0)
			exit(0);
	}
	/* The comm threads finish on their own; the main thread registers
	 * memory and queries meanwhile (NCCL registers user buffers from the
	 * application thread while its proxy thread polls). */
	long churned = 0;
	int joined[NCOMMS] = {0};
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	uint8_t *scratch = xalloc(1 << 20);
	for (;;) {
		int left = 0;
		for (int k = 0; k < NCOMMS; k++)
			if (!joined[k] && pthread_tryjoin_np(th[k], NULL) == 0)
				joined[k] = 1;
		for (int k = 0; k < NCOMMS; k++)
			left += !joined[k];
		if (!left)
			break;
		struct ibv_mr *m = churned % 2 ? S.reg_mr(d.pd, scratch + (churned % 16) * 4096, (1 << 20) - 65536, acc)
					       : reg_user(d.pd, scratch + 100 + (churned % 16) * 4096, 300000);
		EXPECT(m != NULL, "main thread: ibv_reg_mr during traffic: %s", strerror(errno));
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr ia;
		int r = S.query_qp(cs[churned % NCOMMS].qp, &qa, IBV_QP_PORT | IBV_QP_AV, &ia);
		EXPECT(r == 0 && qa.qp_state == IBV_QPS_RTS, "main thread: ibv_query_qp during traffic");
		struct nccl_port_attr pa;
		r = S.query_port(d.ctx, 1, &pa.a);
		EXPECT(r == 0, "main thread: ibv_query_port during traffic");
		if (m)
			EXPECT(S.dereg_mr(m) == 0, "main thread: ibv_dereg_mr during traffic");
		churned++;
		usleep(2000);
	}
	free(scratch);
	double dt = now_s() - t0;
	long bytes = 0, zero = 0, multi = 0, sig = 0, unsig = 0;
	int fail = 0;
	for (int k = 0; k < NCOMMS; k++) {
		bytes += cs[k].bytes;
		zero += cs[k].zero_len;
		multi += cs[k].multi;
		sig += cs[k].signaled_fifo;
		unsig = cs[k].unsignaled_max > unsig ? cs[k].unsignaled_max : unsig;
		fail |= cs[k].fail;
	}
	CHECK(!fail, "%d threads x %d iterations, %ld bytes checked byte by byte, %ld zero-length "
		     "messages, %ld multi-receives (%.1f s)", NCOMMS, iters, bytes, zero, multi, dt);
	CHECK(churned > 0, "the main thread registered, queried and deregistered %ld times meanwhile",
	      churned);
	if (!send_side) {
		CHECK(unsig == MAX_REQUESTS - 1 && sig == (long)NCOMMS * ((iters + MAX_REQUESTS - 1) / MAX_REQUESTS),
		      "FIFO writes: %ld unsignaled in a row at most, %ld signaled completions", unsig, sig);
		int st = 0;
		pid_t w = child > 0 ? waitpid(child, &st, 0) : -1;
		CHECK(w == child && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "a forked child exited (destructors run) while this process kept droce0");
	}
	/* Close one connection as NCCL does; leave the others up. */
	close_comm(&cs[0]);
	if (send_side) {
		/* The receiver exits now, with QPs up and no ibv_close_device.
		 * This side waits for it to be gone (the OOB socket closes),
		 * then stays on its port a while: it must not crash when the
		 * memif peer disappears under its polling progress thread. */
		char x;
		int r = (int)recv(fd, &x, 1, 0);
		CHECK(r == 0, "the receiver exited (no ibv_close_device)");
		double end = now_s() + 0.5;
		while (now_s() < end) {
			struct ibv_wc wc[4];
			for (int k = 1; k < NCOMMS; k++)
				EXPECT(ibv_poll_cq(cs[k].cq, 4, wc) == 0, "no completion once the peer left");
			usleep(1000);
		}
		CHECK(1, "still healthy 0.5 s after the peer left, QPs %u and %u up", cs[1].qp->qp_num,
		      cs[2].qp->qp_num);
	}
	int f = atomic_load(&failures);
	printf("nccl_seq %s: %s (%d failed), exiting without ibv_close_device\n", side,
	       f ? "FAIL" : "OK", f);
	fflush(stdout);
	/* NCCL never closes the device: neither do we. */
	exit(f ? 1 : 0);
}

/* Unload the libraries while droce's threads run: they must stay mapped. */
static int run_unload(void)
{
	side = "unload";
	struct dev d;
	if (start(&d))
		return 1;
	struct comm c = {.k = 0, .send = 1, .iters = 0, .d = &d};
	if (setup_comm(&c))
		return 1;
	CHECK(1, "a QP is up: the progress thread polls");
	/* librdmacm too, with its pump thread running (rdma_bind_addr). */
	/* By its unversioned name, as for libibverbs: droce's must win. */
	void *cm = dlopen("librdmacm.so", RTLD_NOW);
	CHECK(cm != NULL, "dlopen(\"librdmacm.so\"): %s", cm ? "loaded" : dlerror());
	if (cm) {
		Dl_info info;
		void *fn = dlsym(cm, "rdma_create_id");
		const char *dir = getenv("NCCL_SEQ_LIBDIR"), *where = NULL;
		if (fn && dladdr(fn, &info))
			where = info.dli_fname;
		char want[4096], got[4096];
		CHECK(where && dir && realpath(dir, want) && realpath(where, got) &&
		      !strncmp(got, want, strlen(want)), "librdmacm.so is droce's (%s)", where ? where : "?");
		void *(*mkch)(void);
		int (*mkid)(void *, void **, void *, int);
		int (*bind)(void *, struct sockaddr *);
		*(void **)&mkch = dlsym(cm, "rdma_create_event_channel");
		*(void **)&mkid = dlsym(cm, "rdma_create_id");
		*(void **)&bind = dlsym(cm, "rdma_bind_addr");
		void *ch = mkch ? mkch() : NULL, *id = NULL;
		struct sockaddr_in a = {.sin_family = AF_INET};
		const char *ip = getenv("DROCE_IP");
		inet_pton(AF_INET, ip ? ip : "0.0.0.0", &a.sin_addr);
		int r = ch && mkid && bind && mkid(ch, &id, NULL, 0x0106 /* RDMA_PS_TCP */) == 0
				? bind(id, (struct sockaddr *)&a)
				: -1;
		CHECK(r == 0, "librdmacm: an id bound to %s (its pump thread runs)", ip ? ip : "?");
		CHECK(dlclose(cm) == 0, "dlclose(librdmacm)");
	}
	CHECK(dlclose(ibv_handle) == 0, "dlclose(libibverbs) with the device open and a QP up");
	/* A library that went away under its threads crashes them now. */
	struct timespec ts = {0, 300000000};
	nanosleep(&ts, NULL);
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096];
	int mapped = 0;
	while (m && fgets(line, sizeof(line), m))
		mapped |= strstr(line, "libibverbs.so") != NULL;
	if (m)
		fclose(m);
	CHECK(mapped, "droce's libibverbs stays mapped (its threads still run)");
	int f = atomic_load(&failures);
	printf("nccl_seq unload: %s (%d failed)\n", f ? "FAIL" : "OK", f);
	fflush(stdout);
	exit(f ? 1 : 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: nccl_seq recv|send|unload [--tcp PORT] [--iters N] [--cqs N] [HOST]\n");
		return 2;
	}
	int port = 18515, iters = 600, cqs = 0;
	const char *host = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--tcp") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cqs") && i + 1 < argc)
			cqs = atoi(argv[++i]);
		else
			host = argv[i];
	}
	if (!strcmp(argv[1], "unload"))
		return run_unload();
	if (!strcmp(argv[1], "recv") || !strcmp(argv[1], "send"))
		return run_pair(!strcmp(argv[1], "send"), host, port, iters, cqs);
	fprintf(stderr, "nccl_seq: unknown role %s\n", argv[1]);
	return 2;
}
