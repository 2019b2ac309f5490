/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * How a context moves frames: the boundary between core/transport (which
 * speak in frames described as bytes) and whatever carries them: a DPDK
 * ethdev queue (stack/net/port/port.c), two contexts back to back in memory
 * (stack/net/link/memlink.c, for tests and the engine benchmark), or a pcap
 * replay. The context calls the link; the link never calls the context.
 */
#ifndef DROCE_LINK_H
#define DROCE_LINK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most payload segments one frame can reference (the SGEs it spans). */
#define DROCE_TX_MAX_SEG 8

/** A payload segment: memory the frame references without a copy. */
struct droce_tx_seg {
	const void *addr;
	uint32_t len;
};

/**
 * A frame to send, ready for the wire but not necessarily contiguous:
 * hdr (Ethernet .. last extension header, built by stack/wire) then the
 * payload segments, then the trailer (pad + ICRC, already computed, but
 * for tx_fold() below).
 * The link copies hdr and trailer before tx() returns; the payload segments
 * point into registered memory that stays valid until the WQE completes,
 * so a zero-copy link may attach them (and must hold them only until its
 * PMD is done).
 */
struct droce_tx_frame {
	const uint8_t *hdr;
	uint32_t hdr_len;
	uint8_t nseg;
	struct droce_tx_seg seg[DROCE_TX_MAX_SEG];
	uint32_t payload_len;     /**< sum of seg[].len */
	uint8_t trailer[8];       /**< pad (0-3 bytes) then the 4-byte ICRC */
	uint8_t trailer_len;
};

/** A received frame: contiguous bytes the link owns until rx_release(). */
struct droce_rx_frame {
	const uint8_t *data;
	uint32_t len;
	void *handle;             /**< the link's own (an mbuf, a buffer slot) */
};

/** Link operations. Every callback gets the link's own pointer first. */
struct droce_link_ops {
	/**
	 * Queue one frame for transmission.
	 * @return 0, or -ENOBUFS when the link cannot take it now (the caller
	 *         keeps it and tries again on a later poll).
	 */
	int (*tx)(void *link, const struct droce_tx_frame *f, uint64_t now);
	/** Push out whatever tx() batched. May be NULL. */
	void (*tx_flush)(void *link, uint64_t now);
	/** Receive up to @p n frames. @return how many were filled in. */
	unsigned (*rx_burst)(void *link, struct droce_rx_frame *f, unsigned n, uint64_t now);
	/** Give back frames returned by rx_burst(). May be NULL. */
	void (*rx_release)(void *link, struct droce_rx_frame *f, unsigned n);
	/**
	 * Optional (NULL: the context always calls tx()). Queue one frame that
	 * the link copies anyway (memif, the in-memory link), with the ICRC
	 * left for the link to fold over the payload while it copies it: one
	 * pass over the payload instead of the ICRC's read plus the copy's.
	 * @p crc is the running ICRC (IBTA A17.4.5, chained as
	 * droce_icrc_update() chains it) over the masked headers; f->trailer
	 * holds the pad's zero bytes, f->trailer_len is the pad + 4. The link
	 * chains the payload segments and the pad onto @p crc and sends the
	 * result as the frame's last 4 bytes, least significant byte first.
	 * The context uses it for payloads over 1 KB (DROCE_ICRC_FAST_MAX,
	 * stack/wire/icrc_fast.h; shorter ones are CRCed with their headers
	 * in one call).
	 * @return as tx().
	 */
	int (*tx_fold)(void *link, const struct droce_tx_frame *f, uint32_t crc, uint64_t now);
	/**
	 * Optional (NULL: the link is never paused). The total time up to
	 * @p now, in ns, for which the link's transmitter was held by a pause
	 * from its peer (IEEE 802.1Qbb PFC on the RoCE priority, or 802.3x),
	 * an ongoing pause counted up to @p now; never decreasing. A NIC
	 * knows it: it obeys the XOFF frames (many count the pause time). The
	 * adaptive ACK timeout does not count paused time (docs/cc.md).
	 */
	uint64_t (*paused_ns)(void *link, uint64_t now);
};

/** A link: its operations and its state. */
struct droce_link {
	const struct droce_link_ops *ops;
	void *priv;
};

#ifdef __cplusplus
}
#endif

#endif
