/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite middleware: UCX's client/server API (UCP sockaddr: a listener, an
 * endpoint created from a connection request, a client endpoint to an IP
 * and port) over UCX's rdmacm connection manager on droce0, Debian's UCX
 * 1.13 unmodified. The client sends tagged messages of 8 B .. 1 MB, the
 * server echoes each, the client checks every byte; then both close.
 * Which transport carries the data (rc_verbs or ud_verbs on droce0) is
 * UCX_TLS's choice; the test (ucp.sh) checks droce's counters.
 *   ucp_sockaddr server|client IP PORT
 * Exits 0 printing "ucp_sockaddr: server|client ok", or names what failed.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define TAG 0x5a5a0000ull
#define MAX (1u << 20)

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_ep_h ep;
static volatile int got_request;
static ucp_conn_request_h request;

static void fail(const char *what, ucs_status_t s)
{
	fprintf(stderr, "ucp_sockaddr: %s: %s\n", what, ucs_status_string(s));
	exit(1);
}

static void wait_req(void *r, const char *what)
{
	if (r == NULL)
		return;
	if (UCS_PTR_IS_ERR(r))
		fail(what, UCS_PTR_STATUS(r));
	ucs_status_t s;
	while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS)
		ucp_worker_progress(worker);
	ucp_request_free(r);
	if (s != UCS_OK)
		fail(what, s);
}

static void on_conn(ucp_conn_request_h r, void *arg)
{
	request = r;
	got_request = 1;
}

static void err_cb(void *arg, ucp_ep_h e, ucs_status_t s)
{
	/* the peer's close, after the exchange: not an error of ours */
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7u + seed + (i >> 11));
}

static void send_msg(void *buf, size_t n)
{
	ucp_request_param_t p = {.op_attr_mask = 0};
	wait_req(ucp_tag_send_nbx(ep, buf, n, TAG, &p), "ucp_tag_send_nbx");
}

static size_t recv_msg(void *buf, size_t n)
{
	ucp_tag_recv_info_t info = {0};
	ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO,
				 .recv_info.tag_info = &info};
	void *r = ucp_tag_recv_nbx(worker, buf, n, TAG, (ucp_tag_t)-1, &p);
	if (r == NULL)
		return info.length; /* done at once: recv_info filled */
	if (UCS_PTR_IS_ERR(r))
		fail("ucp_tag_recv_nbx", UCS_PTR_STATUS(r));
	ucs_status_t s;
	while ((s = ucp_tag_recv_request_test(r, &info)) == UCS_INPROGRESS)
		ucp_worker_progress(worker);
	ucp_request_free(r);
	if (s != UCS_OK)
		fail("ucp_tag_recv_nbx", s);
	return info.length;
}

static void close_ep(void)
{
	ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				 .flags = UCP_EP_CLOSE_FLAG_FORCE};
	void *r = ucp_ep_close_nbx(ep, &p);
	if (r && !UCS_PTR_IS_ERR(r)) {
		while (ucp_request_check_status(r) == UCS_INPROGRESS)
			ucp_worker_progress(worker);
		ucp_request_free(r);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: ucp_sockaddr server|client IP PORT\n");
		return 2;
	}
	alarm(100);
	int server = !strcmp(argv[1], "server");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
	inet_pton(AF_INET, argv[2], &sa.sin_addr);

	ucp_params_t up = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
	ucs_status_t s = ucp_init(&up, NULL, &ctx);
	if (s != UCS_OK)
		fail("ucp_init", s);
	ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				  .thread_mode = UCS_THREAD_MODE_SINGLE};
	if ((s = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK)
		fail("ucp_worker_create", s);

	ucp_listener_h listener = NULL;
	ucp_ep_params_t ep_p = {.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLER |
					      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
				.err_mode = UCP_ERR_HANDLING_MODE_PEER,
				.err_handler = {.cb = err_cb}};
	if (server) {
		ucp_listener_params_t lp = {
			.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
				      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
			.sockaddr = {.addr = (struct sockaddr *)&sa, .addrlen = sizeof(sa)},
			.conn_handler = {.cb = on_conn}};
		if ((s = ucp_listener_create(worker, &lp, &listener)) != UCS_OK)
			fail("ucp_listener_create", s);
		while (!got_request)
			ucp_worker_progress(worker);
		ep_p.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
		ep_p.conn_request = request;
	} else {
		ep_p.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
		ep_p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
		ep_p.sockaddr.addr = (struct sockaddr *)&sa;
		ep_p.sockaddr.addrlen = sizeof(sa);
	}
	if ((s = ucp_ep_create(worker, &ep_p, &ep)) != UCS_OK)
		fail("ucp_ep_create", s);

	uint8_t *out = malloc(MAX), *in = malloc(MAX);
	for (size_t n = 8; n <= MAX; n *= 8) {
		if (server) {
			size_t got = recv_msg(in, MAX);
			if (got != n) {
				fprintf(stderr, "ucp_sockaddr: server: %zu bytes, want %zu\n", got, n);
				return 1;
			}
			send_msg(in, got); /* the echo */
		} else {
			fill(out, n, (unsigned)n);
			memset(in, 0, n);
			send_msg(out, n);
			size_t got = recv_msg(in, MAX);
			if (got != n || memcmp(in, out, n)) {
				fprintf(stderr, "ucp_sockaddr: client: the %zu-byte echo differs\n", n);
				return 1;
			}
			printf("ucp_sockaddr: %zu bytes echoed\n", n);
		}
	}
	/* one last message: the client is done; the server answers, then both close */
	uint8_t done = 1;
	if (server) {
		recv_msg(in, MAX);
		send_msg(&done, 1);
	} else {
		send_msg(&done, 1);
		recv_msg(in, MAX);
	}
	close_ep();
	if (listener)
		ucp_listener_destroy(listener);
	ucp_worker_destroy(worker);
	ucp_cleanup(ctx);
	free(out);
	free(in);
	printf("ucp_sockaddr: %s ok\n", argv[1]);
	return 0;
}
