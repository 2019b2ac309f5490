/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sysfs view of droce0: middleware finds RDMA devices and their GIDs
 * the way the kernel lays them out under /sys/class/infiniband (UCX reads
 * the GID type, the netdev, local_cpus and numa_node there by fixed paths;
 * Open MPI's btl openib through ibv_get_sysfs_path()). There is no kernel
 * device, so the library writes the same tree into a directory of its own
 * when the device list is first read:
 *
 *   DIR/class/infiniband/droce0/{node_type,node_guid,sys_image_guid,fw_ver,
 *       node_desc,hca_type,device/{numa_node,local_cpus,vendor,device},
 *       ports/1/{state,phys_state,rate,active_mtu,link_layer,lid,sm_lid,
 *       lid_mask_count,sm_sl,cap_mask,gids/0,pkeys/0,gid_attrs/types/0,
 *       gid_attrs/ndevs/0}}
 *   DIR/class/infiniband_verbs/uverbs0/{ibdev,abi_version,dev}
 *
 * DIR is $DROCE_SYSFS (scripts/droce-run --sysfs makes it appear at
 * /sys/class/infiniband in a private mount namespace) or a directory made
 * for the process and removed at its exit. ibv_get_sysfs_path() returns DIR
 * and the device's ibdev_path points into it.
 */
#include "verbs/dv.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of @p path (a copy is cut at each '/'). @return 0 or -1. */
static int mkdirs(const char *path)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -1;
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0755) && errno != EEXIST)
				return -1;
			*s = '/';
		}
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

/* Write one file @p dir/@p rel (its directories made) with a line of text. */
static int put(const char *dir, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return -1;
	char *slash = strrchr(path, '/');
	*slash = 0;
	if (mkdirs(path))
		return -1;
	*slash = '/';
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	return fclose(f);
}

/* @p src into @p dst of @p n bytes. @return 0, or -1 (ENAMETOOLONG) when it does not fit. */
static int copy(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	if (l >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dst, src, l + 1);
	return 0;
}

/* The kernel interface that holds @p ip, if any (a program that looks RDMA
 * devices up by interface, ndevs, sees it); "" when none does. */
static void netdev_of(const struct dv_device *d, char *name, size_t len)
{
	name[0] = 0;
	if (!strcmp(d->cfg.port_kind, "iface")) {
		if (copy(name, len, d->cfg.port_arg))
			name[0] = 0;
		return;
	}
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa))
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, d->cfg.ip, 4)) {
			if (copy(name, len, i->ifa_name))
				name[0] = 0;
			break;
		}
	freeifaddrs(ifa);
}

static void rm_tree(const char *dir)
{
	/* Only our own directory, with the names we wrote: no recursion into
	 * anything a user might have linked in. */
	static const char *const files[] = {
		"class/infiniband/droce0/ports/1/gid_attrs/types/0",
		"class/infiniband/droce0/ports/1/gid_attrs/ndevs/0",
		"class/infiniband/droce0/ports/1/gid_attrs/types",
		"class/infiniband/droce0/ports/1/gid_attrs/ndevs",
		"class/infiniband/droce0/ports/1/gid_attrs",
		"class/infiniband/droce0/ports/1/gids/0",
		"class/infiniband/droce0/ports/1/gids",
		"class/infiniband/droce0/ports/1/pkeys/0",
		"class/infiniband/droce0/ports/1/pkeys",
		"class/infiniband/droce0/ports/1/state",
		"class/infiniband/droce0/ports/1/phys_state",
		"class/infiniband/droce0/ports/1/rate",
		"class/infiniband/droce0/ports/1/active_mtu",
		"class/infiniband/droce0/ports/1/link_layer",
		"class/infiniband/droce0/ports/1/lid",
		"class/infiniband/droce0/ports/1/sm_lid",
		"class/infiniband/droce0/ports/1/lid_mask_count",
		"class/infiniband/droce0/ports/1/sm_sl",
		"class/infiniband/droce0/ports/1/cap_mask",
		"class/infiniband/droce0/ports/1",
		"class/infiniband/droce0/ports",
		"class/infiniband/droce0/device/numa_node",
		"class/infiniband/droce0/device/local_cpus",
		"class/infiniband/droce0/device/vendor",
		"class/infiniband/droce0/device/device",
		"class/infiniband/droce0/device",
		"class/infiniband/droce0/node_type",
		"class/infiniband/droce0/node_guid",
		"class/infiniband/droce0/sys_image_guid",
		"class/infiniband/droce0/fw_ver",
		"class/infiniband/droce0/node_desc",
		"class/infiniband/droce0/hca_type",
		"class/infiniband/droce0",
		"class/infiniband",
		"class/infiniband_verbs/uverbs0/ibdev",
		"class/infiniband_verbs/uverbs0/abi_version",
		"class/infiniband_verbs/uverbs0/dev",
		"class/infiniband_verbs/uverbs0",
		"class/infiniband_verbs",
		"class",
		"",
	};
	char p[PATH_MAX];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (snprintf(p, sizeof(p), "%s/%s", dir, files[i]) >= (int)sizeof(p))
			continue;
		if (unlink(p))
			rmdir(p);
	}
}

static char own_dir[PATH_MAX];

static void remove_own(void)
{
	if (own_dir[0])
		rm_tree(own_dir);
}

/* The CPUs of the machine as the kernel's local_cpus mask: hex, 32-bit
 * groups separated by commas, the highest first. */
static void cpu_mask(char *buf, size_t len)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	if (n < 1)
		n = 1;
	unsigned groups = (unsigned)((n + 31) / 32);
	size_t o = 0;
	for (unsigned g = groups; g-- > 0 && o + 10 < len;) {
		uint32_t m = 0;
		for (unsigned b = 0; b < 32; b++)
			if ((long)(g * 32 + b) < n)
				m |= 1u << b;
		o += (size_t)snprintf(buf + o, len - o, "%s%08x", g + 1 == groups ? "" : ",", m);
	}
}

int dv_sysfs_write(struct dv_device *d, const char *dir, uint64_t guid)
{
	char dev[PATH_MAX], gid[64], guid_s[32], nd[IF_NAMESIZE + 1], cpus[256];
	const uint8_t *ip = d->cfg.ip;
	if (snprintf(dev, sizeof(dev), "%s/class/infiniband/droce0", dir) >= (int)sizeof(dev))
		return -1;
	snprintf(gid, sizeof(gid), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", ip[0], ip[1],
		 ip[2], ip[3]);
	snprintf(guid_s, sizeof(guid_s), "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
		 (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
		 (unsigned)guid & 0xffff);
	netdev_of(d, nd, sizeof(nd));
	cpu_mask(cpus, sizeof(cpus));
	int r = 0;
	r |= put(dev, "node_type", "1: CA");
	r |= put(dev, "node_guid", "%s", guid_s);
	r |= put(dev, "sys_image_guid", "%s", guid_s);
	r |= put(dev, "fw_ver", "droce 0.1.0");
	r |= put(dev, "node_desc", "droce0 (userspace RoCEv2)");
	r |= put(dev, "hca_type", "droce");
	r |= put(dev, "device/numa_node", "-1");
	r |= put(dev, "device/local_cpus", "%s", cpus);
	r |= put(dev, "device/vendor", "0x0000");
	r |= put(dev, "device/device", "0x0000");
	/* What ibv_query_port() says (device.c): ACTIVE, LinkUp, 4X EDR. */
	r |= put(dev, "ports/1/state", "4: ACTIVE");
	r |= put(dev, "ports/1/phys_state", "5: LinkUp");
	r |= put(dev, "ports/1/rate", "100 Gb/sec (4X EDR)");
	r |= put(dev, "ports/1/active_mtu", "%u", d->roce_mtu ? d->roce_mtu : 4096u);
	r |= put(dev, "ports/1/link_layer", "Ethernet");
	r |= put(dev, "ports/1/lid", "0x0");
	r |= put(dev, "ports/1/sm_lid", "0x0");
	r |= put(dev, "ports/1/lid_mask_count", "0");
	r |= put(dev, "ports/1/sm_sl", "0");
	r |= put(dev, "ports/1/cap_mask", "0x04010000");
	r |= put(dev, "ports/1/gids/0", "%s", gid);
	r |= put(dev, "ports/1/pkeys/0", "0xffff");
	/* IBTA A17: GID 0 is RoCEv2 (UCX takes a GID without this file for
	 * RoCE v1 and, against a RoCE v2 peer, calls it unreachable). */
	r |= put(dev, "ports/1/gid_attrs/types/0", "RoCE v2");
	if (nd[0])
		r |= put(dev, "ports/1/gid_attrs/ndevs/0", "%s", nd);
	char uv[PATH_MAX];
	if (snprintf(uv, sizeof(uv), "%s/class/infiniband_verbs/uverbs0", dir) >= (int)sizeof(uv))
		return -1;
	r |= put(uv, "ibdev", "droce0");
	r |= put(uv, "abi_version", "1");
	r |= put(uv, "dev", "231:192");
	/* ibdev_path and dev_path are IBV_SYSFS_PATH_MAX (256) bytes. */
	if (r || copy(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), dev) ||
	    copy(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), uv) ||
	    copy(d->sysfs, sizeof(d->sysfs), dir))
		return -1;
	return 0;
}

/* At the first device list: $DROCE_SYSFS, else a directory of the process's own. */
void dv_sysfs_init(struct dv_device *d, uint64_t guid)
{
	const char *dir = getenv("DROCE_SYSFS");
	if (!dir || !*dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(own_dir, sizeof(own_dir), "%s/droce-sysfs.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(own_dir)) {
			own_dir[0] = 0;
			return;
		}
		atexit(remove_own);
		dir = own_dir;
	}
	if (dv_sysfs_write(d, dir, guid))
		fprintf(stderr, "droce: cannot write the sysfs view in %s: %s\n", dir, strerror(errno));
}

DV_EXPORT const char *ibv_get_sysfs_path(void);
DV_EXPORT const char *ibv_get_sysfs_path(void)
{
	/* rdma-core returns "/sys"; a program appends class/infiniband/... */
	return dv_dev.sysfs[0] ? dv_dev.sysfs : "/sys";
}

DV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
DV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	if (!dir || !file || !buf || !size ||
	    snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	/* rdma-core: the text without its newline, NUL-terminated. */
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	if ((size_t)n < size)
		buf[n] = 0;
	return (int)n;
}
