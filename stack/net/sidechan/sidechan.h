/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The side channel for connect-by-address: a TCP connection (as perftest
 * and ibv_rc_pingpong use) over which two endpoints exchange what they need
 * to move their QPs to RTR/RTS, then a "ready" handshake so neither sends
 * before the other can answer. DPDK-free.
 *
 * Wire format (big-endian, fixed layout, version 1):
 *
 *     off size  field
 *       0    4  magic 0x44524345 ("DRCE")
 *       4    2  version (DROCE_SC_VERSION)
 *       6    2  type: 1 INFO, 2 READY
 *       8    4  total message length, this header included
 *   INFO:
 *      12    4  QPN (24 bits used)
 *      16    4  start PSN (24 bits used)
 *      20    1  IP family: 4 or 6
 *      21    1  reserved, 0
 *      22    2  path MTU in bytes (256, 512, 1024, 2048, 4096; IBTA 9.7.7)
 *      24   16  IP address (IPv4: first 4 bytes, rest 0)
 *      40    6  MAC
 *      46    2  number of MR descriptors (at most DROCE_SC_MAX_MR)
 *      48   20  per MR: address (8), rkey (4), length (8)
 *   READY:
 *      12    4  status: 0, or the positive errno the sender failed with
 *
 * Several QPs: send one INFO per QP (droce_sc_exchange() once each).
 *
 * Every call takes the timeout of the channel and, on any failure, closes
 * the connection (no half-open socket is left behind) and leaves a
 * human-readable reason in droce_sc.err.
 */
#ifndef DROCE_NET_SIDECHAN_SIDECHAN_H
#define DROCE_NET_SIDECHAN_SIDECHAN_H

#include <stddef.h>
#include <stdint.h>

#define DROCE_SC_MAGIC 0x44524345u
#define DROCE_SC_VERSION 1u
#define DROCE_SC_MAX_MR 16u
#define DROCE_SC_HDR_LEN 12u
#define DROCE_SC_INFO_LEN 48u
#define DROCE_SC_MR_LEN 20u
#define DROCE_SC_READY_LEN 16u
#define DROCE_SC_MAX_LEN (DROCE_SC_INFO_LEN + DROCE_SC_MAX_MR * DROCE_SC_MR_LEN)
/** Default side-channel TCP port (perftest's is 18515; ours is one above). */
#define DROCE_SC_DEFAULT_PORT 18516u

enum droce_sc_type { DROCE_SC_INFO = 1, DROCE_SC_READY = 2 };

/** A remote memory region the peer may access. */
struct droce_sc_mr {
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

/** One endpoint: what the peer needs to reach one QP. */
struct droce_sc_info {
	uint32_t qpn;
	uint32_t psn;
	uint8_t ip_version;       /**< 4 or 6 */
	uint8_t ip[16];
	uint8_t mac[6];
	uint16_t mtu;             /**< path MTU in bytes */
	uint16_t n_mr;
	struct droce_sc_mr mr[DROCE_SC_MAX_MR];
};

/**
 * Encode an INFO message.
 * @return its length, or -EINVAL (bad family, MTU, QPN/PSN over 24 bits,
 *         n_mr > DROCE_SC_MAX_MR) or -ENOSPC (@p cap too small).
 */
int droce_sc_encode_info(const struct droce_sc_info *in, uint8_t *buf, size_t cap);

/**
 * Decode and check an INFO message of exactly @p len bytes.
 * @param why  optional buffer for the reason of a failure
 * @return 0; -EBADMSG (truncated, bad magic, type, length field, family,
 *         MTU, QPN/PSN range, MR count); -EPROTONOSUPPORT (version mismatch);
 *         -EINVAL (NULL arguments).
 */
int droce_sc_decode_info(const uint8_t *buf, size_t len, struct droce_sc_info *out,
			 char *why, size_t why_len);

/** A side-channel endpoint. Initialise with droce_sc_init(). */
struct droce_sc {
	int fd;                   /**< connected socket, -1 when none */
	int lfd;                  /**< listening socket, -1 when none */
	int timeout_ms;           /**< bound on every blocking call */
	char err[192];            /**< why the last call failed */
	void (*idle)(void *arg);  /**< called at least every ms while a call waits; NULL: none */
	void *idle_arg;
	uint8_t allow_family;     /**< droce_sc_allow_peer(): 4 or 6, 0 = any peer */
	uint8_t allow_addr[16];
	unsigned refused;         /**< connections closed at accept: not the allowed peer */
};

/** Prepare @p sc (no sockets yet). @p timeout_ms <= 0 means 10 s. */
void droce_sc_init(struct droce_sc *sc, int timeout_ms);

/**
 * Call @p idle(@p arg) at least once a millisecond while any call on @p sc
 * waits (accept, connect, exchange, ready), so a poll-mode application keeps
 * its port answering ARP and ICMP echo meanwhile. NULL removes it.
 */
void droce_sc_set_idle(struct droce_sc *sc, void (*idle)(void *arg), void *arg);

/**
 * Listen on @p addr (NULL or "" for any IPv4/IPv6 address) and @p port
 * (0: the kernel picks; droce_sc_local_port() tells which).
 * @return 0 or a negative errno (-EADDRINUSE, -EINVAL on a bad address ...).
 */
int droce_sc_listen(struct droce_sc *sc, const char *addr, uint16_t port);

/** The port a listening channel is bound to, or 0. */
uint16_t droce_sc_local_port(const struct droce_sc *sc);

/**
 * Take a peer only from @p addr (numeric IPv4 or IPv6; NULL: any). The
 * channel has no authentication: whoever connects first gets our QPN, PSN
 * and every MR's address and rkey, and the server serves that peer alone.
 * With an allowed peer set, droce_sc_accept() closes connections from
 * elsewhere (counted in refused) and waits on for the right one.
 * @return 0 or -EINVAL (not a numeric address).
 */
int droce_sc_allow_peer(struct droce_sc *sc, const char *addr);

/**
 * Accept one peer (the allowed one, when set), then stop listening (a
 * server serves one run).
 * @return 0, -ETIMEDOUT, or the accept errno.
 */
int droce_sc_accept(struct droce_sc *sc);

/**
 * Connect to @p host:@p port, retrying a refused connection until the
 * timeout (the server may still be starting).
 * @return 0; -ETIMEDOUT; -ENOENT (host does not resolve); another errno.
 */
int droce_sc_connect(struct droce_sc *sc, const char *host, uint16_t port);

/**
 * Send our INFO and receive the peer's (both sides call it; TCP buffers
 * make the order irrelevant).
 * @return 0; -ETIMEDOUT; -ECONNRESET (peer closed, possibly mid-message);
 *         the decode errors; -ENOTCONN (no connection).
 */
int droce_sc_exchange(struct droce_sc *sc, const struct droce_sc_info *local,
		      struct droce_sc_info *remote);

/**
 * The final handshake: send READY(@p status) and wait for the peer's.
 * Call it after the QPs reached RTR (or with a positive errno that made
 * setup fail, to tell the peer before closing).
 * @return 0 when both are ready; -ECONNABORTED when the peer reported a
 *         failure (its errno in err); -@p status (without waiting for the
 *         peer) when @p status is non-zero; the errors of droce_sc_exchange().
 */
int droce_sc_ready(struct droce_sc *sc, int status);

/** Close both sockets. Safe to call twice. */
void droce_sc_close(struct droce_sc *sc);

#endif
