/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce/dpdk.h: EAL once, ports hot-plugged by spec (rte_dev_probe) and
 * opened as net/port.h queues. EAL is one per process by DPDK's design, so
 * whether it runs and the TSC calibration are this file's two statics.
 */
#include <droce/dpdk.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "net/port/eal.h"
#include "net/port/port.h"
#include "net/port/tsc.h"

struct droce_dpdk_port {
	struct droce_port *port;
	uint16_t port_id;
	char name[64];              /* the device's */
	bool plugged;               /* we plugged it in (rte_dev_probe) */
};

static bool eal_up;
static struct droce_tsc tsc;

static bool names_pci(int n, char **v)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i], "-a") || !strncmp(v[i], "--allow", 7) || !strcmp(v[i], "-b") ||
		    !strncmp(v[i], "--block", 7) || !strcmp(v[i], "--no-pci"))
			return true;
	return false;
}

int droce_dpdk_init(const char *eal_args)
{
	if (eal_up)
		return 0;
	char buf[1024], *v[DROCE_EAL_MAX_ARGS];
	int n = 0;
	if (eal_args) {
		if (strlen(eal_args) >= sizeof(buf))
			return -E2BIG;
		strcpy(buf, eal_args);
		char *save = NULL;
		for (char *s = strtok_r(buf, " \t", &save); s; s = strtok_r(NULL, " \t", &save)) {
			if (n == DROCE_EAL_MAX_ARGS - 8)
				return -E2BIG;
			v[n++] = s;
		}
	}
	bool loglevel = false;
	for (int i = 0; i < n; i++)
		loglevel |= !strncmp(v[i], "--log-level", 11);
	if (!loglevel && !getenv("DROCE_EAL_VERBOSE"))
		v[n++] = "--log-level=lib.eal:error";
	/* Devices come later, one rte_dev_probe each: no PCI scan unless asked. */
	if (!names_pci(n, v))
		v[n++] = "--no-pci";
	struct droce_eal_opts eo = {0};
	int r = droce_eal_init("droce", n, v, &eo);
	/* another library in this process (each Python extension module has
	 * its own copy of this file) may have started it */
	if (r == -EALREADY)
		r = 0;
	if (r)
		return r;
	droce_tsc_init_eal(&tsc);
	eal_up = true;
	return 0;
}

int droce_dpdk_thread_register(void)
{
	if (!eal_up)
		return -EAGAIN;
	if (rte_lcore_id() != LCORE_ID_ANY)
		return 0;
	return rte_thread_register() ? -rte_errno : 0;
}

uint64_t droce_dpdk_now(void)
{
	return eal_up ? droce_tsc_now_ns(&tsc) : 0;
}

/* Take the device out again (its ethdev is closed, or was never opened). */
static void unplug(struct droce_dpdk_port *p)
{
	if (p->plugged)
		rte_eal_hotplug_remove("vdev", p->name);
	p->plugged = false;
}

struct droce_dpdk_port *droce_dpdk_port_open(const struct droce_dpdk_port_conf *c)
{
	if (!eal_up) {
		errno = EAGAIN;
		return NULL;
	}
	if (!c || !c->spec || (c->ip_version != 4 && c->ip_version != 6)) {
		errno = EINVAL;
		return NULL;
	}
	struct droce_dpdk_port *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	/* the first free name: net_memif0, net_memif1 ... (another copy of this
	 * file may have plugged some in) */
	char dev[DROCE_PORT_SPEC_MAX];
	int r = -EEXIST;
	for (unsigned i = 0; i < RTE_MAX_ETHPORTS && r == -EEXIST; i++) {
		int n = droce_port_spec_devargs(c->spec, i, dev, sizeof(dev));
		if (n < 0) {
			free(p);
			errno = -n;
			return NULL;
		}
		size_t nl = strcspn(dev, ",");
		if (nl >= sizeof(p->name)) {
			free(p);
			errno = ENAMETOOLONG;
			return NULL;
		}
		memcpy(p->name, dev, nl);
		p->name[nl] = '\0';
		uint16_t id;
		if (rte_eth_dev_get_port_by_name(p->name, &id) == 0) {
			if (!strncmp(c->spec, "vdev:", 5))
				break; /* the user's own name, taken */
			continue;
		}
		r = rte_dev_probe(dev);
	}
	if (r) {
		fprintf(stderr, "droce: device %s: %s\n", dev, strerror(r < 0 ? -r : r));
		free(p);
		errno = r == -EEXIST ? EEXIST : ENODEV;
		return NULL;
	}
	p->plugged = true;
	if (rte_eth_dev_get_port_by_name(p->name, &p->port_id)) {
		unplug(p);
		free(p);
		errno = ENODEV;
		return NULL;
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	pc.port_id = p->port_id;
	pc.ip_version = c->ip_version;
	memcpy(pc.ip, c->ip, sizeof(pc.ip));
	if (c->set_mac) {
		pc.set_mac = true;
		memcpy(pc.mac, c->mac, 6);
	}
	p->port = droce_port_open(&pc);
	if (!p->port) {
		int e = errno ? errno : ENODEV;
		unplug(p);
		free(p);
		errno = e;
		return NULL;
	}
	/* memif and af_packet come up asynchronously; frames sent before are lost */
	uint64_t end = droce_dpdk_now() + c->link_wait_ns;
	while (c->link_wait_ns && !droce_dpdk_port_up(p) && droce_dpdk_now() < end)
		rte_delay_us_sleep(1000);
	return p;
}

struct droce_link droce_dpdk_port_link(struct droce_dpdk_port *p)
{
	return droce_port_link(p->port);
}

void droce_dpdk_port_mac(const struct droce_dpdk_port *p, uint8_t mac[6])
{
	struct droce_port_info info;
	droce_port_get_info(p->port, &info);
	memcpy(mac, info.mac, 6);
}

unsigned droce_dpdk_port_roce_mtu(const struct droce_dpdk_port *p)
{
	struct droce_port_info info;
	droce_port_get_info(p->port, &info);
	return info.roce_mtu;
}

bool droce_dpdk_port_up(const struct droce_dpdk_port *p)
{
	struct rte_eth_link link = {0};
	return rte_eth_link_get_nowait(p->port_id, &link) == 0 && link.link_status;
}

int droce_dpdk_port_resolve(void *arg, uint8_t ip_version, const uint8_t ip[16], uint8_t mac[6],
			    uint64_t now)
{
	struct droce_dpdk_port *p = arg;
	if (!p)
		return -EINVAL;
	/* IPv6 neighbours are not discovered (no NDP in net/): add them statically */
	if (ip_version != 4)
		return -EAFNOSUPPORT;
	return droce_port_resolve(p->port, ip, mac, now);
}

int droce_dpdk_port_add_neighbour(struct droce_dpdk_port *p, const uint8_t ip[4],
				  const uint8_t mac[6])
{
	return p ? droce_port_add_neighbour(p->port, ip, mac) : -EINVAL;
}

unsigned droce_dpdk_port_tx_pending(const struct droce_dpdk_port *p)
{
	return p ? droce_port_tx_pending(p->port) : 0;
}

void droce_dpdk_port_close(struct droce_dpdk_port *p)
{
	if (!p)
		return;
	droce_port_close(p->port);
	unplug(p);
	free(p);
}
