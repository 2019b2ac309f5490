/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives over one droce context per rank (docs/python.md): the engine
 * under the PyTorch backend. C, no torch types: the backend hands in
 * pointers, element sizes and a reduction function.
 *
 * Every rank has one RC QP to every other. A message to a peer travels in
 * chunks of at most slot_bytes, each one RDMA WRITE with immediate into the
 * next of the peer's `slots` receive slots for us (as NCCL's ring over IB
 * verbs: data by WRITE, the arrival by the immediate's completion); the
 * immediate carries the stream (collectives 0, point-to-point 0x80 | tag)
 * and the chunk's length. The receiver reduces or copies a slot out, then
 * tells the sender with an 8-byte RDMA WRITE of its running count of freed
 * slots into a word the sender reads (credit). A chunk of another stream
 * than the one an operation waits for is copied aside so that it cannot
 * block the slot ring (send/recv in any order against collectives).
 *
 * One thread drives a struct dcoll at a time (principle 1, docs/architecture.md); every
 * call blocks until its operation is done on this rank, polling the
 * context, napping when idle so that ranks can share cores.
 */
#ifndef DROCE_PY_COLL_H
#define DROCE_PY_COLL_H

#include <stddef.h>
#include <stdint.h>

struct dcoll;

/** The rendezvous (torch's store): set a key, and get one, waiting until it is set. */
struct dcoll_store {
	int (*set)(void *arg, const char *key, const void *val, size_t len);
	/** Wait at most @p timeout_ns. @return the value's length (at most @p len copied),
	 *  or -errno (-ETIMEDOUT) */
	int (*get)(void *arg, const char *key, void *val, size_t len, uint64_t timeout_ns);
	void *arg;
};

/** dst[i] = dst[i] (op) src[i] for @p count elements. */
typedef void (*dcoll_reduce_fn)(void *dst, const void *src, size_t count, void *arg);

struct dcoll_conf {
	int rank, size;
	struct dcoll_store store;
	const char *port;          /**< NULL: a memif link per pair of ranks on this host; else
				        one DPDK port (DROCE_PORT syntax) all peers are behind */
	const char *ip;            /**< with @p port: this rank's IPv4 address */
	const char *eal;           /**< extra EAL arguments, or NULL */
	const char *cc;            /**< congestion control by name; NULL: fixed */
	size_t slot_bytes;         /**< chunk size; 0: 256 KB */
	unsigned slots;            /**< receive slots per peer; 0: 8 */
	size_t small_max;          /**< all_reduce by recursive doubling up to this many bytes,
				        ring above; 0: 64 KB (at most slots * slot_bytes) */
	uint64_t timeout_ns;       /**< an operation that is not done by then fails; 0: 300 s */
	int verbose;
};

/** Defaults: zeroes everything, then fills what 0 does not mean. */
void dcoll_conf_init(struct dcoll_conf *c);

/** Build the mesh: ports, context, QPs, rendezvous. NULL on failure, @p err says why. */
struct dcoll *dcoll_create(const struct dcoll_conf *c, char *err, size_t errlen);

/**
 * Shut down in order: a barrier over droce, polling on for a moment so
 * that the peers' last packets are answered, then a store barrier that
 * nobody polls any more before any port closes (a memif peer still polling
 * when this side leaves can crash, docs/usage.md).
 */
void dcoll_destroy(struct dcoll *d);

/** The message of the last failure. */
const char *dcoll_error(const struct dcoll *d);

/** Keep the context answering (ACKs, retransmissions) while no operation runs. @return work done. */
unsigned dcoll_idle(struct dcoll *d);

/* Operations: 0 or a negative errno (-ETIMEDOUT, -EIO: a completion error,
 * -EPROTO: peers disagree on sizes, -EINVAL). After a failure the group is
 * unusable (dcoll_error). */

int dcoll_allreduce(struct dcoll *d, void *buf, size_t count, size_t esize, dcoll_reduce_fn fn,
		    void *arg);
int dcoll_broadcast(struct dcoll *d, void *buf, size_t bytes, int root);
/** out holds size blocks of @p bytes; this rank's is copied from @p in (may be out's own block). */
int dcoll_allgather(struct dcoll *d, const void *in, void *out, size_t bytes);
/** @p in: size blocks of @p count elements; out: the reduction of block `rank`. */
int dcoll_reduce_scatter(struct dcoll *d, const void *in, void *out, size_t count, size_t esize,
			 dcoll_reduce_fn fn, void *arg);
/** Block j of @p in (send_off[j], send_len[j] bytes) goes to rank j; rank j's lands at recv_off[j]. */
int dcoll_alltoallv(struct dcoll *d, const void *in, const size_t *send_off,
		    const size_t *send_len, void *out, const size_t *recv_off, const size_t *recv_len);
/** Rank @p root gets every rank's @p bytes at out + j * bytes (its own copied from @p in). */
int dcoll_gather(struct dcoll *d, const void *in, void *out, size_t bytes, int root);
/** Every rank j gets root's in + j * bytes in @p out. */
int dcoll_scatter(struct dcoll *d, const void *in, void *out, size_t bytes, int root);
int dcoll_barrier(struct dcoll *d);
int dcoll_send(struct dcoll *d, int peer, const void *buf, size_t bytes, int tag);
int dcoll_recv(struct dcoll *d, int peer, void *buf, size_t bytes, int tag);
/** The next message of @p tag from whichever peer's is here first (the peers
 * taken in turn when several are); its rank in @p *src. As dcoll_recv, the
 * message must be @p bytes long. */
int dcoll_recv_any(struct dcoll *d, void *buf, size_t bytes, int tag, int *src);

/** Counters for tests and docs/python.md. */
struct dcoll_stats {
	uint64_t chunks_sent, chunks_rcvd, credits_sent, set_aside, naps;
	uint64_t ring_ops, rd_ops;   /**< all_reduce by ring / recursive doubling */
};
void dcoll_get_stats(const struct dcoll *d, struct dcoll_stats *out);

#endif
