/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault-contained bursts for PMDs whose shared memory another thread may
 * unmap under the poll thread: DPDK 22.11's memif (see port_guard.c and
 * docs/architecture.md, "A memif peer that vanishes mid-burst", under "The link boundary").
 * Nothing outside stack/net/port includes it.
 */
#ifndef DROCE_NET_PORT_PORT_GUARD_H
#define DROCE_NET_PORT_PORT_GUARD_H

#include <stdint.h>

#include <rte_mbuf.h>

/* Install the process's SIGSEGV handler (once; later calls return at
 * once). 0, or a negative errno when sigaction refused. */
int droce_port_guard_init(void);

/* rte_eth_tx_burst / rte_eth_rx_burst on the calling thread, with a
 * SIGSEGV inside it taken back when the port's link is down by then (the
 * PMD's regions were unmapped under it): the burst's count, or -1 when it
 * was cut short. After -1 the PMD may or may not have freed (TX) or
 * handed over (RX) any of the burst's mbufs: the caller forgets them all,
 * it never frees them. Any other SIGSEGV goes to the handler that was
 * there before (by default: the process dies as it would have). */
int droce_port_guard_tx(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
int droce_port_guard_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);

#endif
