/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * include/droce/port.h: a port from a spec string, for applications that
 * link the installed library and write no DPDK code. The spec syntax is
 * the verbs drop-in's DROCE_PORT, so one string means the same port to
 * droce-run, to the library and to the docs.
 */
#include <droce/port.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>

#include "net/port/eal.h"
#include "net/port/port.h"

#define SPEC_MAX 512

/* Split @p s (modified) on blanks into @p v. @return the count or -E2BIG. */
static int split_args(char *s, char **v, int max)
{
	int n = 0;
	for (char *t = strtok(s, " \t"); t; t = strtok(NULL, " \t")) {
		if (n == max)
			return -E2BIG;
		v[n++] = t;
	}
	return n;
}

/* What EAL needs for @p kind:@p arg: the shortcut options or a --vdev. */
static int spec_opts(const char *kind, const char *arg, struct droce_eal_opts *eo,
		     char *vdev, size_t vlen)
{
	memset(eo, 0, sizeof(*eo));
	vdev[0] = '\0';
	if (!strcmp(kind, "memif")) {
		if (strncmp(arg, "server", 6) && strncmp(arg, "client", 6))
			return -EINVAL;
		if (arg[6] != '\0' && arg[6] != ',')
			return -EINVAL;
		eo->memif = arg;
	} else if (!strcmp(kind, "iface")) {
		eo->iface = arg;
	} else if (!strcmp(kind, "vdev")) {
		if ((size_t)snprintf(vdev, vlen, "--vdev=%s", arg) >= vlen)
			return -EINVAL;
	} else if (strcmp(kind, "port")) {
		return -EINVAL;
	}
	return 0;
}

/*
 * The spec's device as EAL's --vdev takes it, "NAME,ARGS" into @p out: the
 * vdev spec itself, or the one droce_eal_build_argv() makes of a shortcut
 * (memif, iface), so both paths below name the same device.
 */
static int device_of(const struct droce_eal_opts *eo, const char *vdev, char *out, size_t len)
{
	if (vdev[0])
		return (size_t)snprintf(out, len, "%s", vdev + 7) < len ? 0 : -EINVAL;
	struct droce_eal_argv a;
	char *none[1] = {NULL};
	int rc = droce_eal_build_argv("droce", 0, none, eo, &a);
	if (rc)
		return rc;
	rc = -EINVAL;
	for (int i = 0; i < a.argc; i++)
		if (!strncmp(a.argv[i], "--vdev=", 7))
			rc = (size_t)snprintf(out, len, "%s", a.argv[i] + 7) < len ? 0 : -EINVAL;
	droce_eal_argv_free(&a);
	return rc;
}

/* The ethdev port of device "NAME[,ARGS]". */
static int port_of(const char *dev, uint16_t *port_id)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	size_t n = strcspn(dev, ",");
	if (n == 0 || n >= sizeof(name))
		return -EINVAL;
	memcpy(name, dev, n);
	name[n] = '\0';
	return rte_eth_dev_get_port_by_name(name, port_id) == 0 ? 0 : -ENODEV;
}

/*
 * EAL already runs (the application's, or an earlier port's): add the
 * device to it under the first free name of its driver (net_memif0 taken:
 * net_memif1, ...; EAL matches the driver by the name's prefix), so two
 * ports of one kind live in one process. rte_dev_probe() finds the bus.
 */
static int hotplug(const char *dev, uint16_t *port_id)
{
	char name[RTE_ETH_NAME_MAX_LEN], probe[SPEC_MAX + 16];
	size_t n = strcspn(dev, ",");
	if (n == 0 || n + 4 >= sizeof(name))
		return -EINVAL;
	memcpy(name, dev, n);
	name[n] = '\0';
	size_t base = n;
	while (base > 0 && name[base - 1] >= '0' && name[base - 1] <= '9')
		base--;
	uint16_t id;
	for (unsigned k = 1; rte_eth_dev_get_port_by_name(name, &id) == 0; k++) {
		if (k > 999)
			return -ENOSPC;
		snprintf(name + base, sizeof(name) - base, "%u", k);
	}
	if ((size_t)snprintf(probe, sizeof(probe), "%s%s", name, dev + n) >= sizeof(probe))
		return -EINVAL;
	int rc = rte_dev_probe(probe);
	return rc < 0 ? rc : port_of(name, port_id);
}

struct droce_port *droce_port_create(const char *spec, const char *eal_args,
				     uint8_t ip_version, const uint8_t ip[16])
{
	char kind[16], arg[SPEC_MAX], vdev[SPEC_MAX + 8], eal[SPEC_MAX];
	const char *colon = spec ? strchr(spec, ':') : NULL;
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(kind) || !colon[1] ||
	    strlen(colon + 1) >= sizeof(arg) || !ip || (ip_version != 4 && ip_version != 6) ||
	    (eal_args && strlen(eal_args) >= sizeof(eal))) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(kind, spec, (size_t)(colon - spec));
	kind[colon - spec] = '\0';
	strcpy(arg, colon + 1);
	struct droce_eal_opts eo;
	int rc = spec_opts(kind, arg, &eo, vdev, sizeof(vdev));
	uint16_t port_id = 0;
	if (rc == 0 && !strcmp(kind, "port")) {
		char *end;
		unsigned long n = strtoul(arg, &end, 10);
		rc = *end || n >= RTE_MAX_ETHPORTS ? -EINVAL : 0;
		port_id = (uint16_t)n;
	}
	char dev[SPEC_MAX + 16] = "";
	if (rc == 0 && strcmp(kind, "port"))
		rc = device_of(&eo, vdev, dev, sizeof(dev));
	if (rc == 0) {
		/* The first port of the process starts EAL with the spec's device;
		 * EAL up already (an earlier port, or the application's own):
		 * the device is added to it. */
		char *v[DROCE_EAL_MAX_ARGS];
		strcpy(eal, eal_args ? eal_args : "");
		int n = split_args(eal, v, DROCE_EAL_MAX_ARGS - 2);
		bool loglevel = false;
		for (int i = 0; i < n; i++)
			loglevel |= !strncmp(v[i], "--log-level", 11);
		if (n >= 0 && !loglevel && !getenv("DROCE_EAL_VERBOSE"))
			v[n++] = "--log-level=lib.eal:error";
		if (n >= 0 && vdev[0])
			v[n++] = vdev;
		rc = n < 0 ? n : droce_eal_init("droce", n, v, &eo);
		if (rc == 0 && dev[0])
			rc = port_of(dev, &port_id);
		else if (rc == -EALREADY)
			rc = dev[0] ? hotplug(dev, &port_id) : 0;
	}
	if (rc == 0 && !rte_eth_dev_is_valid_port(port_id))
		rc = -ENODEV;
	if (rc != 0) {
		errno = -rc;
		return NULL;
	}
	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	pc.port_id = port_id;
	pc.ip_version = ip_version;
	memcpy(pc.ip, ip, ip_version == 4 ? 4 : 16);
	return droce_port_open(&pc);
}

int droce_port_mac(const struct droce_port *p, uint8_t mac[6])
{
	struct droce_port_info info;
	if (!mac || droce_port_get_info(p, &info) != 0)
		return -EINVAL;
	memcpy(mac, info.mac, 6);
	return 0;
}

int droce_port_cm_resolve(void *port, uint8_t ip_version, const uint8_t ip[16], uint8_t mac[6],
			  uint64_t now)
{
	if (ip_version != 4)
		return ip_version == 6 ? -EAFNOSUPPORT : -EINVAL;
	return droce_port_resolve(port, ip, mac, now);
}
