/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A context's link on a DPDK port, for programs that do not include DPDK's
 * headers (language bindings, the PyTorch backend): EAL started once per
 * process, ports opened by the same spec as DROCE_PORT (docs/verbs.md)
 * and hot-plugged one by one, so one process can hold several ports and
 * open them in an order of its choosing (a memif client must start after
 * its server, docs/usage.md), and what connecting by address needs from a
 * port: its MAC, its RoCE MTU, ARP.
 *
 * EAL is per process by DPDK's own design: droce_dpdk_init() is the one
 * place that knows whether it has run. Each port is one queue pair driven
 * by the thread that drives the context it is given to (principle 1, docs/architecture.md).
 */
#ifndef DROCE_DPDK_H
#define DROCE_DPDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <droce/link.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest devargs string droce_port_spec_devargs() writes. */
#define DROCE_PORT_SPEC_MAX 512u

/**
 * Turn a port spec into the devargs of a DPDK virtual device named for
 * @p index (unique per process): "memif:server[,socket=PATH]",
 * "memif:client[,socket=PATH]" (DPDK's abstract socket PATH, default
 * /tmp/droce-memif.sock; 8 KB buffers, so a 4 KB RoCE frame takes one),
 * "iface:NAME" (af_packet, RoCE MTU 1024), "vdev:ARGS" (ARGS as is, its
 * own name first). No EAL needed.
 * @return the length written; -EINVAL (unknown kind, bad role, empty
 *         name, a memif option other than socket=), -ENAMETOOLONG (does not
 *         fit @p len).
 */
int droce_port_spec_devargs(const char *spec, unsigned index, char *buf, size_t len);

/**
 * Start EAL once for this process, without devices (ports are added by
 * droce_dpdk_port_open()); later calls return 0 and ignore @p eal_args.
 * @p eal_args: extra EAL arguments separated by blanks (as DROCE_EAL), or
 * NULL. The defaults are net/eal.h's: no shared files, --no-huge when no
 * hugepages are free, lcores floating over every CPU, no PCI scan unless
 * @p eal_args names PCI devices.
 * @return 0, or a negative errno (-E2BIG: too many arguments; rte_eal_init's).
 */
int droce_dpdk_init(const char *eal_args);

/** Give the calling thread an lcore id (its own mempool caches). @return 0 or -errno. */
int droce_dpdk_thread_register(void);

/** Nanoseconds on the TSC, the clock to pass as `now` to a context on a port. */
uint64_t droce_dpdk_now(void);

struct droce_dpdk_port;

/** How to open a port; zero-initialise, set spec and ip. */
struct droce_dpdk_port_conf {
	const char *spec;          /**< as DROCE_PORT (droce_port_spec_devargs) */
	uint8_t ip_version;        /**< 4 or 6 */
	uint8_t ip[16];            /**< our address: ARP and ICMP answer for it */
	bool set_mac;              /**< use @p mac, not the device's own */
	uint8_t mac[6];
	uint64_t link_wait_ns;     /**< wait this long for the link to come up; 0: not at all */
};

/**
 * Plug in the device of @p c->spec and open one queue pair on it.
 * @return the port, or NULL with errno: EINVAL (bad spec or address),
 *         ENODEV (the device did not probe), EAGAIN (EAL not started) or
 *         the port's own (net/port.h).
 */
struct droce_dpdk_port *droce_dpdk_port_open(const struct droce_dpdk_port_conf *c);

/** The link to give droce_ctx_create(). */
struct droce_link droce_dpdk_port_link(struct droce_dpdk_port *p);

/** The port's MAC. */
void droce_dpdk_port_mac(const struct droce_dpdk_port *p, uint8_t mac[6]);

/** The largest IBTA path MTU the port carries, in bytes (256..4096). */
unsigned droce_dpdk_port_roce_mtu(const struct droce_dpdk_port *p);

/** Whether the link is up (a memif peer connected). */
bool droce_dpdk_port_up(const struct droce_dpdk_port *p);

/**
 * A droce_resolve_fn (droce/cm.h) over the port's ARP: @p arg is the port.
 * @return 0, -EAGAIN (asked; call again), -EAFNOSUPPORT (IPv6), -errno.
 */
int droce_dpdk_port_resolve(void *arg, uint8_t ip_version, const uint8_t ip[16], uint8_t mac[6],
			    uint64_t now);

/** Add a static ARP entry. @return 0, -ENOSPC, -EINVAL. */
int droce_dpdk_port_add_neighbour(struct droce_dpdk_port *p, const uint8_t ip[4],
				  const uint8_t mac[6]);

/** Frames batched and not yet taken by the PMD: flush until 0 before closing. */
unsigned droce_dpdk_port_tx_pending(const struct droce_dpdk_port *p);

/**
 * Close the queue and unplug the device. Call it after the context using
 * its link is destroyed, and after the peer stopped polling (a memif peer
 * still polling when this side leaves can crash, docs/usage.md). NULL is
 * ignored.
 */
void droce_dpdk_port_close(struct droce_dpdk_port *p);

#ifdef __cplusplus
}
#endif

#endif
