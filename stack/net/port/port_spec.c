/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port spec (DROCE_PORT's syntax) as a virtual device's devargs
 * (droce/dpdk.h). Pure string work, so the unit suite checks it without EAL;
 * the memif and af_packet settings are the ones net/eal_args.c gives its
 * shortcuts, for the reasons written there.
 */
#include <droce/dpdk.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/port/eal.h"

static int put(char *buf, size_t len, int n)
{
	if (n < 0)
		return -EINVAL;
	return (size_t)n < len ? n : -ENAMETOOLONG;
}

/* "server" | "client", then optionally ",socket=PATH" (nothing else). */
static int memif(const char *arg, unsigned index, char *buf, size_t len)
{
	const char *comma = strchr(arg, ',');
	size_t rl = comma ? (size_t)(comma - arg) : strlen(arg);
	if (rl != 6 || (strncmp(arg, "server", 6) && strncmp(arg, "client", 6)))
		return -EINVAL;
	const char *sock = DROCE_EAL_MEMIF_SOCKET;
	if (comma) {
		if (strncmp(comma + 1, "socket=", 7) || !comma[8] || strchr(comma + 8, ','))
			return -EINVAL;
		sock = comma + 8;
	}
	return put(buf, len, snprintf(buf, len, "net_memif%u,role=%.6s,socket=%s,bsize=%u", index,
				      arg, sock, DROCE_EAL_MEMIF_BSIZE));
}

int droce_port_spec_devargs(const char *spec, unsigned index, char *buf, size_t len)
{
	if (!spec || !buf || !len)
		return -EINVAL;
	const char *colon = strchr(spec, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	size_t kl = (size_t)(colon - spec);
	const char *arg = colon + 1;
	if (kl == 5 && !strncmp(spec, "memif", 5))
		return memif(arg, index, buf, len);
	if (kl == 5 && !strncmp(spec, "iface", 5)) {
		if (strchr(arg, ','))
			return -EINVAL;
		/* af_packet carries 1518-byte frames at most: 2 KB ring frames */
		return put(buf, len, snprintf(buf, len, "net_af_packet%u,iface=%s,blocksz=4096,"
					      "framesz=2048,framecnt=2048,qpairs=1", index, arg));
	}
	if (kl == 4 && !strncmp(spec, "vdev", 4)) {
		if (arg[0] == ',')
			return -EINVAL;
		return put(buf, len, snprintf(buf, len, "%s", arg));
	}
	return -EINVAL;
}
