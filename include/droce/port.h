/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A DPDK port as the link of a context, for applications that use droce's
 * API over memif, af_packet or a NIC without writing DPDK code themselves:
 * droce_port_create() starts DPDK's EAL (once per process) and opens the
 * port a spec names; droce_port_link() is the struct droce_link to put in
 * struct droce_ctx_params; droce_port_cm_resolve() is the ARP resolver
 * droce_cm_open() wants, so connecting by address is two more lines.
 *
 * The port answers ARP and ICMP echo for its address itself and hands
 * RoCE frames to the context (docs/usage.md has the ports, their limits
 * and the shutdown order memif needs). One port, one context, one thread
 * (as for the context: nothing here takes a lock).
 */
#ifndef DROCE_PORT_API_H
#define DROCE_PORT_API_H

#include <stdint.h>

#include <droce/link.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_port;

/**
 * Open the DPDK port @p spec names, with this endpoint's address.
 *
 * @p spec is the DROCE_PORT syntax of the verbs drop-in (docs/verbs.md):
 *  - "memif:server,socket=PATH" / "memif:client,socket=PATH": a memif
 *    interface to another process (start the server first);
 *  - "iface:NAME": af_packet on a kernel interface (give it no kernel
 *    address: the port answers ARP and ping for @p ip);
 *  - "vdev:ARGS": any EAL virtual device, e.g. "net_pcap0,iface=eth0";
 *  - "port:N": ethdev port N of an EAL the application started itself
 *    (rte_eal_init before this call; a NIC allowed with -a ADDR).
 * The first call of the process starts EAL with @p eal_args (blank
 * separated, may be NULL) and droce's defaults: no shared runtime files,
 * --no-huge when no hugepages are free, lcores floating over the CPUs
 * (docs/usage.md, "What droce does to EAL for you"); a later call adds its
 * device to the running EAL under the next free name (net_memif1, ...)
 * (@p eal_args is then ignored).
 *
 * @p ip_version 4 or 6; @p ip this endpoint's address (IPv4 in ip[0..3]).
 * @return the port, or NULL with errno: EINVAL (bad spec, address, or
 *         arguments), ENODEV (no such port), ENOMEM, or EAL's error.
 */
struct droce_port *droce_port_create(const char *spec, const char *eal_args,
				     uint8_t ip_version, const uint8_t ip[16]);

/**
 * Close the port (one queue; the ethdev is stopped and closed with its last
 * queue). Waits (bounded) for the PMD to return attached payload buffers.
 * Destroy the context using it first. On memif: flush until
 * droce_port_tx_pending() is 0 and stop polling before the peer leaves (a
 * memif peer that disconnects while this side still polls can crash DPDK
 * 22.11's memif: docs/usage.md, DPDK 22.11 quirks). EAL stays up until the
 * process exits (rte_eal_cleanup() races the same interrupt thread).
 */
void droce_port_close(struct droce_port *p);

/** The link a context uses (struct droce_ctx_params.link). */
struct droce_link droce_port_link(struct droce_port *p);

/** The port's MAC address (for struct droce_ctx_params.mac). @return 0 or -EINVAL. */
int droce_port_mac(const struct droce_port *p, uint8_t mac[6]);

/**
 * Resolve an IPv4 address to a MAC for connect-by-address: the ARP table's
 * answer, else a request is sent (at most once per 100 ms) and one RX burst
 * is processed for the reply (RoCE frames it meets are kept for the
 * context's next rx_burst).
 * @return 0 with @p mac filled; -EAGAIN (ask again later); -EINVAL;
 *         -ENOSPC (ARP table full of static entries).
 */
int droce_port_resolve(struct droce_port *p, const uint8_t ip[4], uint8_t mac[6], uint64_t now);

/**
 * droce_port_resolve() in the shape of droce_resolve_fn (include/droce/cm.h):
 * set droce_cm_conf.resolve to it and resolve_arg to the port.
 * @return as droce_port_resolve(); -EAFNOSUPPORT for IPv6 (no neighbour
 *         discovery on the port: use a static neighbour or a resolver of
 *         your own).
 */
int droce_port_cm_resolve(void *port, uint8_t ip_version, const uint8_t ip[16], uint8_t mac[6],
			  uint64_t now);

/** Frames queued in the TX batch that the PMD has not taken yet (0 on NULL). */
unsigned droce_port_tx_pending(const struct droce_port *p);

#ifdef __cplusplus
}
#endif

#endif
