/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite middleware: librpma (Debian's librpma 1.2, unmodified) over droce:
 * the server registers a buffer for remote WRITE, READ and flush and hands
 * its descriptor in the connection's private data; the client writes a
 * pattern into it with rpma_write, makes it visible with rpma_flush
 * (RPMA_FLUSH_TYPE_VISIBILITY: librpma's READ-after-WRITE), reads it back
 * with rpma_read and compares, then disconnects; the server compares what
 * landed in its memory. Sizes 8 B .. 1 MB.
 *   rpma server|client IP PORT
 * Exits 0 printing "rpma: server|client ok", or names what failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librpma.h>

#define SIZE (1u << 20)

static void fail(const char *what, int r)
{
	fprintf(stderr, "rpma: %s: %s\n", what, r ? rpma_err_2str(r) : strerror(errno));
	exit(1);
}

#define CHECK(call) \
	do { int r_ = (call); if (r_) fail(#call, r_); } while (0)

static void fill(uint8_t *b, size_t off, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[off + i] = (uint8_t)((off + i) * 29u + seed + ((off + i) >> 10));
}

static int same(const uint8_t *b, size_t off, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[off + i] != (uint8_t)((off + i) * 29u + seed + ((off + i) >> 10)))
			return 0;
	return 1;
}

/* Sizes written at increasing offsets of the remote buffer. */
static const size_t sizes[] = {8, 64, 1000, 4096, 65536, 262144, 1u << 19};

static struct rpma_peer *peer_on(const char *ip, enum rpma_util_ibv_context_type t)
{
	struct ibv_context *ctx;
	CHECK(rpma_utils_get_ibv_context(ip, t, &ctx));
	struct rpma_peer *peer;
	CHECK(rpma_peer_new(ctx, &peer));
	return peer;
}

static void wait_wc(struct rpma_conn *conn, const char *what)
{
	struct rpma_cq *cq;
	CHECK(rpma_conn_get_cq(conn, &cq));
	for (;;) {
		struct ibv_wc wc;
		int n = 0;
		int r = rpma_cq_get_wc(cq, 1, &wc, &n);
		if (r == RPMA_E_NO_COMPLETION) {
			CHECK(rpma_cq_wait(cq));
			continue;
		}
		if (r)
			fail("rpma_cq_get_wc", r);
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rpma: %s: completion %s\n", what, ibv_wc_status_str(wc.status));
			exit(1);
		}
		return;
	}
}

static void server(const char *ip, const char *port)
{
	struct rpma_peer *peer = peer_on(ip, RPMA_UTIL_IBV_CONTEXT_LOCAL);
	uint8_t *mem = aligned_alloc(4096, SIZE);
	memset(mem, 0, SIZE);
	struct rpma_mr_local *mr;
	CHECK(rpma_mr_reg(peer, mem, SIZE,
			  RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
				  RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
			  &mr));
	size_t dsz;
	CHECK(rpma_mr_get_descriptor_size(mr, &dsz));
	uint8_t desc[256];
	if (dsz > sizeof(desc))
		fail("descriptor size", 0);
	CHECK(rpma_mr_get_descriptor(mr, desc));
	struct rpma_ep *ep;
	CHECK(rpma_ep_listen(peer, ip, port, &ep));
	struct rpma_conn_req *req;
	CHECK(rpma_ep_next_conn_req(ep, NULL, &req));
	struct rpma_conn_private_data pd = {desc, (uint8_t)dsz};
	struct rpma_conn *conn;
	CHECK(rpma_conn_req_connect(&req, &pd, &conn));
	enum rpma_conn_event ev;
	CHECK(rpma_conn_next_event(conn, &ev));
	if (ev != RPMA_CONN_ESTABLISHED)
		fail("not ESTABLISHED", 0);
	/* the client writes, flushes, reads back and disconnects */
	CHECK(rpma_conn_next_event(conn, &ev));
	if (ev != RPMA_CONN_CLOSED)
		fprintf(stderr, "rpma: server: last event %s\n", rpma_utils_conn_event_2str(ev));
	size_t off = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (!same(mem, off, sizes[i], i + 1)) {
			fprintf(stderr, "rpma: server: the %zu bytes written at %zu differ\n", sizes[i], off);
			exit(1);
		}
		off += sizes[i];
	}
	CHECK(rpma_conn_disconnect(conn));
	CHECK(rpma_conn_delete(&conn));
	CHECK(rpma_ep_shutdown(&ep));
	CHECK(rpma_mr_dereg(&mr));
	CHECK(rpma_peer_delete(&peer));
	free(mem);
}

static void client(const char *ip, const char *port)
{
	struct rpma_peer *peer = peer_on(ip, RPMA_UTIL_IBV_CONTEXT_REMOTE);
	uint8_t *src = aligned_alloc(4096, SIZE), *back = aligned_alloc(4096, SIZE);
	memset(src, 0, SIZE);
	memset(back, 0, SIZE);
	struct rpma_mr_local *msrc, *mback;
	CHECK(rpma_mr_reg(peer, src, SIZE, RPMA_MR_USAGE_WRITE_SRC, &msrc));
	CHECK(rpma_mr_reg(peer, back, SIZE, RPMA_MR_USAGE_READ_DST, &mback));
	struct rpma_conn_req *req;
	CHECK(rpma_conn_req_new(peer, ip, port, NULL, &req));
	struct rpma_conn *conn;
	CHECK(rpma_conn_req_connect(&req, NULL, &conn));
	enum rpma_conn_event ev;
	CHECK(rpma_conn_next_event(conn, &ev));
	if (ev != RPMA_CONN_ESTABLISHED)
		fail("not ESTABLISHED", 0);
	struct rpma_conn_private_data pd;
	CHECK(rpma_conn_get_private_data(conn, &pd));
	struct rpma_mr_remote *dst;
	CHECK(rpma_mr_remote_from_descriptor(pd.ptr, pd.len, &dst));
	size_t off = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		fill(src, off, n, i + 1);
		CHECK(rpma_write(conn, dst, off, msrc, off, n, RPMA_F_COMPLETION_ON_ERROR, NULL));
		CHECK(rpma_flush(conn, dst, off, n, RPMA_FLUSH_TYPE_VISIBILITY,
				 RPMA_F_COMPLETION_ALWAYS, NULL));
		wait_wc(conn, "write + flush");
		CHECK(rpma_read(conn, mback, off, dst, off, n, RPMA_F_COMPLETION_ALWAYS, NULL));
		wait_wc(conn, "read");
		if (!same(back, off, n, i + 1)) {
			fprintf(stderr, "rpma: client: %zu bytes read back at %zu differ\n", n, off);
			exit(1);
		}
		printf("rpma: %zu bytes written, flushed, read back\n", n);
		off += n;
	}
	CHECK(rpma_conn_disconnect(conn));
	CHECK(rpma_conn_next_event(conn, &ev));
	CHECK(rpma_conn_delete(&conn));
	CHECK(rpma_mr_remote_delete(&dst));
	CHECK(rpma_mr_dereg(&msrc));
	CHECK(rpma_mr_dereg(&mback));
	CHECK(rpma_peer_delete(&peer));
	free(src);
	free(back);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: rpma server|client IP PORT\n");
		return 2;
	}
	alarm(90);
	if (!strcmp(argv[1], "server"))
		server(argv[2], argv[3]);
	else
		client(argv[2], argv[3]);
	printf("rpma: %s ok\n", argv[1]);
	return 0;
}
