/* SPDX-License-Identifier: BSD-3-Clause */
/* Connect-by-address side channel over TCP (see sidechan.h). */
#include "net/sidechan/sidechan.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire/bytes.h"

#define DEFAULT_TIMEOUT_MS 10000
#define CONNECT_RETRY_MS 50

/* ------------------------------------------------------------------ */
/* Encoding */

static int mtu_ok(uint16_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

static void put_hdr(uint8_t *b, enum droce_sc_type type, uint32_t len)
{
	droce_put_be32(b, DROCE_SC_MAGIC);
	droce_put_be16(b + 4, DROCE_SC_VERSION);
	droce_put_be16(b + 6, (uint16_t)type);
	droce_put_be32(b + 8, len);
}

int droce_sc_encode_info(const struct droce_sc_info *in, uint8_t *buf, size_t cap)
{
	if (in == NULL || buf == NULL || (in->ip_version != 4 && in->ip_version != 6) ||
	    !mtu_ok(in->mtu) || in->qpn > 0xFFFFFFu || in->psn > 0xFFFFFFu ||
	    in->n_mr > DROCE_SC_MAX_MR)
		return -EINVAL;
	size_t len = DROCE_SC_INFO_LEN + (size_t)in->n_mr * DROCE_SC_MR_LEN;
	if (cap < len)
		return -ENOSPC;
	memset(buf, 0, len);
	put_hdr(buf, DROCE_SC_INFO, (uint32_t)len);
	droce_put_be32(buf + 12, in->qpn);
	droce_put_be32(buf + 16, in->psn);
	buf[20] = in->ip_version;
	droce_put_be16(buf + 22, in->mtu);
	memcpy(buf + 24, in->ip, in->ip_version == 4 ? 4 : 16);
	memcpy(buf + 40, in->mac, 6);
	droce_put_be16(buf + 46, in->n_mr);
	for (unsigned i = 0; i < in->n_mr; i++) {
		uint8_t *m = buf + DROCE_SC_INFO_LEN + i * DROCE_SC_MR_LEN;
		droce_put_be64(m, in->mr[i].addr);
		droce_put_be32(m + 8, in->mr[i].rkey);
		droce_put_be64(m + 12, in->mr[i].len);
	}
	return (int)len;
}

static int fail_why(char *why, size_t n, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail_why(char *why, size_t n, int err, const char *fmt, ...)
{
	if (why != NULL && n != 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Check the 12-byte header; *len_out gets the length field. */
static int check_hdr(const uint8_t *buf, size_t len, enum droce_sc_type want, uint32_t *len_out,
		     char *why, size_t wn)
{
	if (len < DROCE_SC_HDR_LEN)
		return fail_why(why, wn, -EBADMSG, "truncated message: %zu bytes, header needs %u",
				len, DROCE_SC_HDR_LEN);
	uint32_t magic = droce_get_be32(buf);
	if (magic != DROCE_SC_MAGIC)
		return fail_why(why, wn, -EBADMSG, "bad magic 0x%08x (not a droce peer?)", magic);
	uint16_t ver = droce_get_be16(buf + 4);
	if (ver != DROCE_SC_VERSION)
		return fail_why(why, wn, -EPROTONOSUPPORT,
				"protocol version mismatch: peer speaks %u, we speak %u", ver,
				DROCE_SC_VERSION);
	uint16_t type = droce_get_be16(buf + 6);
	if (type != (uint16_t)want)
		return fail_why(why, wn, -EBADMSG, "unexpected message type %u (expected %u)", type,
				(unsigned)want);
	*len_out = droce_get_be32(buf + 8);
	return 0;
}

int droce_sc_decode_info(const uint8_t *buf, size_t len, struct droce_sc_info *out,
			 char *why, size_t wn)
{
	if (buf == NULL || out == NULL)
		return fail_why(why, wn, -EINVAL, "NULL argument");
	uint32_t mlen = 0; /* set by check_hdr(); -O3 cannot see it */
	int rc = check_hdr(buf, len, DROCE_SC_INFO, &mlen, why, wn);
	if (rc != 0)
		return rc;
	if (mlen < DROCE_SC_INFO_LEN || mlen > DROCE_SC_MAX_LEN)
		return fail_why(why, wn, -EBADMSG, "length field %u out of range [%u, %u]", mlen,
				DROCE_SC_INFO_LEN, DROCE_SC_MAX_LEN);
	if (len != mlen)
		return fail_why(why, wn, -EBADMSG, "%s message: %zu bytes, length field says %u",
				len < mlen ? "truncated" : "oversized", len, mlen);
	struct droce_sc_info in;
	memset(&in, 0, sizeof(in));
	in.qpn = droce_get_be32(buf + 12);
	in.psn = droce_get_be32(buf + 16);
	in.ip_version = buf[20];
	in.mtu = droce_get_be16(buf + 22);
	in.n_mr = droce_get_be16(buf + 46);
	if (in.qpn > 0xFFFFFFu || in.psn > 0xFFFFFFu)
		return fail_why(why, wn, -EBADMSG, "QPN 0x%x or PSN 0x%x wider than 24 bits", in.qpn,
				in.psn);
	if (in.ip_version != 4 && in.ip_version != 6)
		return fail_why(why, wn, -EBADMSG, "bad IP family %u", in.ip_version);
	if (!mtu_ok(in.mtu))
		return fail_why(why, wn, -EBADMSG, "bad path MTU %u", in.mtu);
	if (in.n_mr > DROCE_SC_MAX_MR)
		return fail_why(why, wn, -EBADMSG, "%u MR descriptors, at most %u", in.n_mr,
				DROCE_SC_MAX_MR);
	if (mlen != DROCE_SC_INFO_LEN + (uint32_t)in.n_mr * DROCE_SC_MR_LEN)
		return fail_why(why, wn, -EBADMSG, "length %u does not fit %u MR descriptors", mlen,
				in.n_mr);
	memcpy(in.ip, buf + 24, 16);
	memcpy(in.mac, buf + 40, 6);
	for (unsigned i = 0; i < in.n_mr; i++) {
		const uint8_t *m = buf + DROCE_SC_INFO_LEN + i * DROCE_SC_MR_LEN;
		in.mr[i].addr = droce_get_be64(m);
		in.mr[i].rkey = droce_get_be32(m + 8);
		in.mr[i].len = droce_get_be64(m + 12);
	}
	*out = in;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sockets */

static int sc_fail(struct droce_sc *sc, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record why, close everything: no half-open channel survives an error. */
static int sc_fail(struct droce_sc *sc, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sc->err, sizeof(sc->err), fmt, ap);
	va_end(ap);
	droce_sc_close(sc);
	return err;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Longest poll() slice between two calls of the idle hook. */
#define IDLE_SLICE_MS 1

/* poll() one fd until @p deadline; 1 ready, 0 timeout, -errno. With an idle
 * hook on @p sc, poll in slices and call it between them: a poll-mode
 * application keeps its port answering ARP and ping while it waits here. */
static int wait_fd(const struct droce_sc *sc, int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left < 0)
			left = 0;
		if (sc->idle != NULL && left > IDLE_SLICE_MS)
			left = IDLE_SLICE_MS;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0 && mono_ms() >= deadline)
			return 0;
		if (sc->idle != NULL)
			sc->idle(sc->idle_arg);
	}
}

void droce_sc_init(struct droce_sc *sc, int timeout_ms)
{
	sc->fd = -1;
	sc->lfd = -1;
	sc->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	sc->err[0] = '\0';
	sc->idle = NULL;
	sc->idle_arg = NULL;
	sc->allow_family = 0;
	sc->refused = 0;
}

int droce_sc_allow_peer(struct droce_sc *sc, const char *addr)
{
	if (sc == NULL)
		return -EINVAL;
	sc->allow_family = 0;
	if (addr == NULL)
		return 0;
	memset(sc->allow_addr, 0, sizeof(sc->allow_addr));
	if (inet_pton(AF_INET, addr, sc->allow_addr) == 1)
		sc->allow_family = 4;
	else if (inet_pton(AF_INET6, addr, sc->allow_addr) == 1)
		sc->allow_family = 6;
	else
		return -EINVAL;
	return 0;
}

/* The peer of an accepted connection is the allowed one (an IPv4 peer may
 * come as an IPv4-mapped IPv6 address on a dual-stack listener). */
static bool peer_allowed(const struct droce_sc *sc, const struct sockaddr_storage *ss)
{
	if (sc->allow_family == 0)
		return true;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		return sc->allow_family == 4 && memcmp(&a->sin_addr, sc->allow_addr, 4) == 0;
	}
	if (ss->ss_family == AF_INET6) {
		const uint8_t *b = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (sc->allow_family == 4)
			return memcmp(b, mapped, 12) == 0 && memcmp(b + 12, sc->allow_addr, 4) == 0;
		return memcmp(b, sc->allow_addr, 16) == 0;
	}
	return false;
}

void droce_sc_set_idle(struct droce_sc *sc, void (*idle)(void *arg), void *arg)
{
	sc->idle = idle;
	sc->idle_arg = arg;
}

void droce_sc_close(struct droce_sc *sc)
{
	if (sc == NULL)
		return;
	if (sc->fd >= 0)
		close(sc->fd);
	if (sc->lfd >= 0)
		close(sc->lfd);
	sc->fd = -1;
	sc->lfd = -1;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int droce_sc_listen(struct droce_sc *sc, const char *addr, uint16_t port)
{
	if (sc == NULL)
		return -EINVAL;
	droce_sc_close(sc);
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	const char *node = addr != NULL && addr[0] != '\0' ? addr : NULL;
	int gai = getaddrinfo(node, ps, &hints, &res);
	if (gai != 0)
		return sc_fail(sc, -EINVAL, "cannot listen on %s: %s", node ? node : "*",
			       gai_strerror(gai));
	/* Try IPv6 any first (dual stack: it takes IPv4 peers too), then the
	 * other candidates in order; a host without IPv6 falls back to IPv4. */
	int fd = -1, e = EADDRNOTAVAIL;
	for (int pass = 0; fd < 0 && pass < 2; pass++) {
		for (struct addrinfo *ai = res; fd < 0 && ai != NULL; ai = ai->ai_next) {
			bool v6 = ai->ai_family == AF_INET6;
			if ((pass == 0) != (v6 && node == NULL))
				continue;
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd < 0) {
				e = errno;
				continue;
			}
			int one = 1, zero = 0;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (v6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0) {
				e = errno;
				close(fd);
				fd = -1;
			}
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return sc_fail(sc, -e, "cannot listen on port %u: %s", port, strerror(e));
	set_nonblock(fd);
	sc->lfd = fd;
	return 0;
}

uint16_t droce_sc_local_port(const struct droce_sc *sc)
{
	int fd = sc->lfd >= 0 ? sc->lfd : sc->fd;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static void tune_conn(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_nonblock(fd);
}

int droce_sc_accept(struct droce_sc *sc)
{
	if (sc == NULL)
		return -EINVAL;
	if (sc->lfd < 0)
		return sc_fail(sc, -ENOTCONN, "accept: not listening");
	int64_t deadline = mono_ms() + sc->timeout_ms;
	for (;;) {
		int w = wait_fd(sc, sc->lfd, POLLIN, deadline);
		if (w == 0)
			return sc_fail(sc, -ETIMEDOUT, "no peer connected within %d ms",
				       sc->timeout_ms);
		if (w < 0)
			return sc_fail(sc, w, "accept: %s", strerror(-w));
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(sc->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd >= 0 && !peer_allowed(sc, &ss)) {
			close(fd); /* not who we wait for: it gets nothing */
			sc->refused++;
			continue;
		}
		if (fd >= 0) {
			close(sc->lfd);
			sc->lfd = -1;
			tune_conn(fd);
			sc->fd = fd;
			return 0;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNABORTED)
			return sc_fail(sc, -errno, "accept: %s", strerror(errno));
	}
}

/* One non-blocking connect attempt to @p ai, bounded by @p deadline. */
static int try_connect(const struct droce_sc *sc, const struct addrinfo *ai, int64_t deadline,
		       int *fd_out)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			int e = errno;
			close(fd);
			return -e;
		}
		int w = wait_fd(sc, fd, POLLOUT, deadline);
		if (w <= 0) {
			close(fd);
			return w == 0 ? -ETIMEDOUT : w;
		}
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr != 0) {
			close(fd);
			return -soerr;
		}
	}
	*fd_out = fd;
	return 0;
}

int droce_sc_connect(struct droce_sc *sc, const char *host, uint16_t port)
{
	if (sc == NULL || host == NULL)
		return -EINVAL;
	droce_sc_close(sc);
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	int gai = getaddrinfo(host, ps, &hints, &res);
	if (gai != 0)
		return sc_fail(sc, -ENOENT, "cannot resolve %s: %s", host, gai_strerror(gai));
	int64_t deadline = mono_ms() + sc->timeout_ms;
	int rc = -ETIMEDOUT;
	for (;;) {
		for (struct addrinfo *p = res; p != NULL; p = p->ai_next) {
			int fd = -1;
			rc = try_connect(sc, p, deadline, &fd);
			if (rc == 0) {
				freeaddrinfo(res);
				tune_conn(fd);
				sc->fd = fd;
				return 0;
			}
		}
		/* Refused: the server may not listen yet; anything else is final. */
		if (rc != -ECONNREFUSED || mono_ms() + CONNECT_RETRY_MS > deadline)
			break;
		if (sc->idle != NULL) {
			for (int64_t until = mono_ms() + CONNECT_RETRY_MS; mono_ms() < until;) {
				struct timespec ts = {0, IDLE_SLICE_MS * 1000000L};
				nanosleep(&ts, NULL);
				sc->idle(sc->idle_arg);
			}
		} else {
			struct timespec ts = {0, CONNECT_RETRY_MS * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	freeaddrinfo(res);
	if (rc == -ECONNREFUSED)
		rc = -ETIMEDOUT;
	return sc_fail(sc, rc, "cannot connect to %s port %u within %d ms: %s", host, port,
		       sc->timeout_ms, strerror(-rc));
}

static int send_all(struct droce_sc *sc, const uint8_t *b, size_t len, int64_t deadline)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = send(sc->fd, b + done, len - done, MSG_NOSIGNAL);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			int w = wait_fd(sc, sc->fd, POLLOUT, deadline);
			if (w == 0)
				return sc_fail(sc, -ETIMEDOUT, "send timed out after %d ms",
					       sc->timeout_ms);
			if (w < 0)
				return sc_fail(sc, w, "send: %s", strerror(-w));
			continue;
		}
		int e = n < 0 ? errno : EPIPE;
		return sc_fail(sc, e == EPIPE ? -ECONNRESET : -e, "peer went away while sending: %s",
			       strerror(e));
	}
	return 0;
}

static int recv_all(struct droce_sc *sc, uint8_t *b, size_t len, int64_t deadline,
		    const char *what)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = recv(sc->fd, b + done, len - done, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return sc_fail(sc, -ECONNRESET,
				       "peer closed the connection %s %s (%zu of %zu bytes)",
				       done ? "in the middle of" : "before sending", what, done, len);
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			int w = wait_fd(sc, sc->fd, POLLIN, deadline);
			if (w == 0)
				return sc_fail(sc, -ETIMEDOUT,
					       "timed out after %d ms waiting for %s (%zu of %zu bytes)",
					       sc->timeout_ms, what, done, len);
			if (w < 0)
				return sc_fail(sc, w, "recv: %s", strerror(-w));
			continue;
		}
		int e = errno;
		if (e == ECONNRESET || e == EPIPE)
			return sc_fail(sc, -ECONNRESET,
				       "peer reset the connection while we received %s (%zu of %zu bytes)",
				       what, done, len);
		return sc_fail(sc, -e, "receiving %s: %s", what, strerror(e));
	}
	return 0;
}

/* Read one message of type @p want: header first, then its announced body. */
static int recv_msg(struct droce_sc *sc, enum droce_sc_type want, uint8_t *buf, size_t cap,
		    size_t *len_out, int64_t deadline)
{
	const char *what = want == DROCE_SC_INFO ? "the peer's endpoint info" : "the peer's READY";
	int rc = recv_all(sc, buf, DROCE_SC_HDR_LEN, deadline, what);
	if (rc != 0)
		return rc;
	uint32_t mlen = 0; /* set by check_hdr(); -O3 cannot see it */
	char why[128];
	rc = check_hdr(buf, DROCE_SC_HDR_LEN, want, &mlen, why, sizeof(why));
	if (rc != 0)
		return sc_fail(sc, rc, "bad message from peer: %s", why);
	if (mlen < DROCE_SC_HDR_LEN || mlen > cap)
		return sc_fail(sc, -EBADMSG, "bad message from peer: length field %u out of range",
			       mlen);
	rc = recv_all(sc, buf + DROCE_SC_HDR_LEN, mlen - DROCE_SC_HDR_LEN, deadline, what);
	if (rc != 0)
		return rc;
	*len_out = mlen;
	return 0;
}

int droce_sc_exchange(struct droce_sc *sc, const struct droce_sc_info *local,
		      struct droce_sc_info *remote)
{
	if (sc == NULL || local == NULL || remote == NULL)
		return -EINVAL;
	if (sc->fd < 0)
		return sc_fail(sc, -ENOTCONN, "exchange: not connected");
	uint8_t buf[DROCE_SC_MAX_LEN];
	int len = droce_sc_encode_info(local, buf, sizeof(buf));
	if (len < 0)
		return sc_fail(sc, len, "cannot encode our endpoint info (bad family, MTU or count)");
	int64_t deadline = mono_ms() + sc->timeout_ms;
	int rc = send_all(sc, buf, (size_t)len, deadline);
	if (rc != 0)
		return rc;
	size_t mlen;
	rc = recv_msg(sc, DROCE_SC_INFO, buf, sizeof(buf), &mlen, deadline);
	if (rc != 0)
		return rc;
	char why[128];
	rc = droce_sc_decode_info(buf, mlen, remote, why, sizeof(why));
	if (rc != 0)
		return sc_fail(sc, rc, "bad endpoint info from peer: %s", why);
	return 0;
}

int droce_sc_ready(struct droce_sc *sc, int status)
{
	if (sc == NULL)
		return -EINVAL;
	if (sc->fd < 0)
		return sc_fail(sc, -ENOTCONN, "ready: not connected");
	uint8_t buf[DROCE_SC_READY_LEN];
	put_hdr(buf, DROCE_SC_READY, DROCE_SC_READY_LEN);
	droce_put_be32(buf + 12, (uint32_t)(status < 0 ? -status : status));
	int64_t deadline = mono_ms() + sc->timeout_ms;
	int rc = send_all(sc, buf, sizeof(buf), deadline);
	if (rc != 0)
		return rc;
	if (status != 0)
		/* We failed: the peer has been told; do not wait for it. */
		return sc_fail(sc, status < 0 ? status : -status,
			       "local setup failed (%s); peer told", strerror(status < 0 ? -status : status));
	size_t mlen;
	rc = recv_msg(sc, DROCE_SC_READY, buf, sizeof(buf), &mlen, deadline);
	if (rc != 0)
		return rc;
	if (mlen != DROCE_SC_READY_LEN)
		return sc_fail(sc, -EBADMSG, "bad READY from peer: %zu bytes", mlen);
	uint32_t peer = droce_get_be32(buf + 12);
	if (peer != 0)
		return sc_fail(sc, -ECONNABORTED, "peer failed its setup: %s",
			       strerror((int)(peer < 4096 ? peer : EPROTO)));
	return 0;
}
