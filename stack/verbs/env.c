/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's configuration comes from the environment (docs/verbs.md),
 * because an unmodified verbs program has no other way to tell us which
 * port and address to use. Parsing is pure (no EAL) so the unit suite tests
 * it; every failure is one line for the user, never a crash.
 */
#include "verbs/dv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PORT_HELP "memif:server,socket=PATH | memif:client,socket=PATH | iface:NAME | vdev:ARGS"

static int bad(char *err, unsigned errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -EINVAL;
}

static int parse_core(const char *s, int *out)
{
	char *end;
	if (!s || !*s)
		return 0;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 1023)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int dv_config_parse(struct dv_config *c, const char *(*get)(const char *name),
		    char *err, unsigned errlen)
{
	memset(c, 0, sizeof(*c));
	c->lcore = -1;
	c->comm_core = -1;

	const char *port = get("DROCE_PORT");
	if (!port || !*port)
		return bad(err, errlen, "DROCE_PORT is not set (%s)", PORT_HELP);
	const char *colon = strchr(port, ':');
	size_t kind = colon ? (size_t)(colon - port) : 0;
	if (!colon || !colon[1] || kind >= sizeof(c->port_kind) ||
	    strlen(colon + 1) >= sizeof(c->port_arg))
		return bad(err, errlen, "DROCE_PORT: want " PORT_HELP ", got '%s'", port);
	memcpy(c->port_kind, port, kind);
	strcpy(c->port_arg, colon + 1);
	if (!strcmp(c->port_kind, "memif")) {
		/* The role is checked here; eal_args.c checks the rest of the spec. */
		if (strncmp(c->port_arg, "server", 6) && strncmp(c->port_arg, "client", 6))
			return bad(err, errlen, "DROCE_PORT: memif role must be server or client, got '%s'",
				   port);
		char r = c->port_arg[6];
		if (r != '\0' && r != ',')
			return bad(err, errlen, "DROCE_PORT: memif role must be server or client, got '%s'",
				   port);
	} else if (strcmp(c->port_kind, "iface") && strcmp(c->port_kind, "vdev")) {
		return bad(err, errlen, "DROCE_PORT: want " PORT_HELP ", got '%s'", port);
	}

	const char *ip = get("DROCE_IP");
	if (!ip || !*ip)
		return bad(err, errlen, "%s", "DROCE_IP is not set (this endpoint's IPv4 address)");
	struct in_addr a;
	if (inet_pton(AF_INET, ip, &a) != 1)
		return bad(err, errlen, "DROCE_IP: '%s' is not an IPv4 address", ip);
	memcpy(c->ip, &a, 4);
	if (c->ip[0] == 0 || c->ip[0] >= 224)
		return bad(err, errlen, "DROCE_IP: '%s' is not a unicast address", ip);

	if (parse_core(get("DROCE_LCORE"), &c->lcore))
		return bad(err, errlen, "DROCE_LCORE: '%s' is not a CPU number", get("DROCE_LCORE"));
	if (parse_core(get("DROCE_COMM_CORE"), &c->comm_core))
		return bad(err, errlen, "DROCE_COMM_CORE: '%s' is not a CPU number",
			   get("DROCE_COMM_CORE"));
	/* How long the port may take to start: a memif client whose server
	 * is not there yet (ranks of one job started together) */
	c->port_wait_s = DV_PORT_WAIT_S;
	const char *w = get("DROCE_PORT_WAIT");
	if (w && *w) {
		char *end;
		errno = 0;
		double v = strtod(w, &end);
		if (errno || *end || !(v >= 0 && v <= 3600))
			return bad(err, errlen, "DROCE_PORT_WAIT: '%s' is not 0..3600 seconds", w);
		c->port_wait_s = v;
	}
	/* DROCE_IDLE: what the progress thread or comm core does when idle. */
	const char *idle = get("DROCE_IDLE");
	if (idle && *idle) {
		/* By name here, not droce_idle_mode_parse(): this file links
		 * without the engine (the unit suite's test_env). */
		if (!strcmp(idle, "adaptive"))
			c->idle = DROCE_IDLE_ADAPTIVE;
		else if (strcmp(idle, "busy"))
			return bad(err, errlen, "DROCE_IDLE: want busy or adaptive, got '%s'", idle);
	}
	const char *tr = get("DROCE_TRANSPORT");
	if (tr && (c->transport = droce_transport_parse(tr)) < 0)
		return bad(err, errlen, "DROCE_TRANSPORT: want gbn, sr or sr-spray, got '%s'", tr);
	const char *eal = get("DROCE_EAL");
	if (eal) {
		if (strlen(eal) >= sizeof(c->eal))
			return bad(err, errlen, "%s", "DROCE_EAL is too long");
		strcpy(c->eal, eal);
	}
	return 0;
}

bool dv_eal_names_cores(int argc, char *const *argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		/* "-l 0", "-l0", "-c 0x3", "--lcores=..." / "--lcores ..." */
		if (!strncmp(a, "-l", 2) || !strncmp(a, "-c", 2) ||
		    (!strncmp(a, "--lcores", 8) && (a[8] == '\0' || a[8] == '=')))
			return true;
	}
	return false;
}

int dv_lcores_arg(const cpu_set_t *set, long online, char *buf, size_t len)
{
	int n = CPU_COUNT(set);
	if (n == 0 || n >= online)
		return 0;
	size_t o = (size_t)snprintf(buf, len, "--lcores=0@(");
	bool first = true;
	for (int cpu = 0; cpu < CPU_SETSIZE && o < len; cpu++) {
		if (!CPU_ISSET(cpu, set))
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%d", first ? "" : ",", cpu);
		first = false;
	}
	if (o + 2 > len)
		return -E2BIG;
	buf[o++] = ')';
	buf[o] = '\0';
	return 1;
}
