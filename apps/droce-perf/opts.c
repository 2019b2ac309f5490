/* SPDX-License-Identifier: BSD-3-Clause */
#include "opts.h"

#include <droce/verbs.h>
#include <droce/ctx.h>
#include <droce/params.h>
#include <droce/poll.h>

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const test_names[] = {
	[PERF_WRITE_BW] = "write_bw",   [PERF_READ_BW] = "read_bw",
	[PERF_SEND_BW] = "send_bw",     [PERF_WRITE_LAT] = "write_lat",
	[PERF_READ_LAT] = "read_lat",   [PERF_SEND_LAT] = "send_lat",
	[PERF_ATOMIC_LAT] = "atomic_lat",
};

const char *perf_test_name(enum perf_test t)
{
	return (unsigned)t < sizeof(test_names) / sizeof(test_names[0]) ? test_names[t] : "?";
}

void perf_usage(const char *prog)
{
	printf("usage: %s [EAL args --] TEST [options] [SERVER]\n"
	       "  TEST: write_bw read_bw send_bw write_lat read_lat send_lat atomic_lat\n"
	       "  without SERVER: serve one run and exit\n"
	       "  -s, --size BYTES        message size (default 65536 bw, 2 lat)\n"
	       "  -a, --all               sizes 2 B .. 8 MB, powers of two\n"
	       "  -n, --iters N           iterations per size (default 5000 bw, 1000 lat)\n"
	       "  -D, --duration SEC      run for SEC seconds instead of -n\n"
	       "  -q, --qps N             queue pairs (default 1, at most %u)\n"
	       "  -t, --tx-depth N        outstanding work requests per QP (default 128)\n"
	       "  -m, --mtu BYTES         path MTU 256..4096 (default 4096)\n"
	       "  -p, --port PORT         side-channel TCP port (default 18516)\n"
	       "      --report_gbits      bandwidth in Gb/s (default MB/s)\n"
	       "      --json FILE         write results as JSON\n"
	       "      --check             fill buffers with a per-iteration pattern and verify every byte\n"
	       "      --impair SPEC       receive-side impairment: drop=P,reorder=P,dup=P,corrupt=P,seed=N\n"
	       "      --ip ADDR           droce's own IPv4/IPv6 address on the port\n"
	       "      --peer ADDR         server: serve only a client from ADDR on the side channel\n"
	       "                          (others are closed and counted; default: the first to come)\n"
	       "      --memif server|client[,socket=PATH]   set up a memif port\n"
	       "      --port-wait SEC     a port that will not start yet (a memif client before its\n"
	       "                          server) is asked again for SEC (default 10; 0: fail at once)\n"
	       "      --iface IFNAME      set up an af_packet port on IFNAME\n"
	       "      --capture FILE      write every frame sent and received to a pcap\n"
	       "      --timeout SEC       give up when nothing progresses for SEC (default 10)\n"
	       "  -u, --qp-timeout N      the QP's IBTA local ACK timeout, 4.096 us * 2^N, 1..31\n"
	       "                          (default 14: 67 ms; perftest's option and default)\n"
	       "      --cc NAME           congestion control: fixed (default), aimd, dcqcn, swift\n"
	       "      --window PKTS       per-QP send window ceiling in packets (default %u)\n"
	       "      --timeout-mode ibta|adaptive  ACK timeout: the QP's IBTA timeout (default), or\n"
	       "                          RFC 6298's from the measured RTT with it as ceiling\n"
	       "      --window-tune       the window follows the measured bandwidth-delay product\n"
	       "      --idle busy|adaptive  when the poll loop finds nothing: keep polling (busy,\n"
	       "                          default), or after 100 us back off to sleeps of up to\n"
	       "                          2 ms, bounded by the next timer (adaptive)\n"
	       "      --transport gbn|sr|sr-spray  loss recovery: IBTA go-back-N (default), or\n"
	       "                          droce's selective repeat (both sides must say the same,\n"
	       "                          or the client only with --cm: the CM agrees on it;\n"
	       "                          sr-spray also spreads packets over UDP source ports)\n"
	       "      --cm[=ADDR]         connect the QPs through the CM over QP1 (as rdma_cm) to the\n"
	       "                          server's droce ADDR (default 198.18.0.1), CM port -p; the\n"
	       "                          side channel only starts and ends the run\n"
	       "      --backend droce|verbs  droce over a DPDK port (default), or any libibverbs\n"
	       "                          device through rdma-core (rxe, ConnectX ...)\n"
	       "      --ib-dev NAME       verbs device (default: the first one)\n"
	       "      --gid-index N       verbs GID index (default: the first IPv4-mapped RoCEv2 GID)\n"
	       "      --ib-port N         verbs port (default 1)\n"
	       "  EAL -l N pins the poll thread to CPU N (droce backend).\n",
	       prog, PERF_MAX_QPS, DROCE_DEFAULT_WINDOW_PKTS);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	/* Accept a K/M/G suffix (binary), as sizes are usually given that way. */
	if (end != s && *end && !end[1]) {
		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		else if (*end == 'M' || *end == 'm')
			v <<= 20, end++;
		else if (*end == 'G' || *end == 'g')
			v <<= 30, end++;
	}
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_test(const char *s, enum perf_test *t)
{
	for (unsigned i = 0; i < sizeof(test_names) / sizeof(test_names[0]); i++)
		if (!strcmp(s, test_names[i])) {
			*t = (enum perf_test)i;
			return 0;
		}
	return -EINVAL;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -EINVAL; } while (0)

int perf_opts_parse(int argc, char **argv, struct perf_opts *o, char *err, unsigned errlen)
{
	enum { O_GBITS = 256, O_JSON, O_CHECK, O_IMPAIR, O_IP, O_MEMIF, O_IFACE, O_CAPTURE, O_TIMEOUT, O_CC, O_WINDOW,
	       O_BACKEND, O_IBDEV, O_GIDX, O_IBPORT, O_TMODE, O_WTUNE, O_TRANSPORT, O_CM, O_PWAIT,
	       O_PEER, O_IDLE };
	static const struct option longopts[] = {
		{"size", required_argument, 0, 's'},    {"all", no_argument, 0, 'a'},
		{"iters", required_argument, 0, 'n'},   {"duration", required_argument, 0, 'D'},
		{"qps", required_argument, 0, 'q'},     {"tx-depth", required_argument, 0, 't'},
		{"mtu", required_argument, 0, 'm'},     {"port", required_argument, 0, 'p'},
		{"help", no_argument, 0, 'h'},
		{"report_gbits", no_argument, 0, O_GBITS}, {"json", required_argument, 0, O_JSON},
		{"check", no_argument, 0, O_CHECK},     {"impair", required_argument, 0, O_IMPAIR},
		{"ip", required_argument, 0, O_IP},     {"memif", required_argument, 0, O_MEMIF},
		{"iface", required_argument, 0, O_IFACE}, {"capture", required_argument, 0, O_CAPTURE},
		{"timeout", required_argument, 0, O_TIMEOUT}, {"qp-timeout", required_argument, 0, 'u'},
		{"cc", required_argument, 0, O_CC},     {"window", required_argument, 0, O_WINDOW},
		{"backend", required_argument, 0, O_BACKEND}, {"ib-dev", required_argument, 0, O_IBDEV},
		{"gid-index", required_argument, 0, O_GIDX}, {"ib-port", required_argument, 0, O_IBPORT},
		{"timeout-mode", required_argument, 0, O_TMODE}, {"window-tune", no_argument, 0, O_WTUNE},
		{"transport", required_argument, 0, O_TRANSPORT},
		{"cm", optional_argument, 0, O_CM},     {"port-wait", required_argument, 0, O_PWAIT},
		{"peer", required_argument, 0, O_PEER},   {"idle", required_argument, 0, O_IDLE},
		{0, 0, 0, 0},
	};
	bool size_set = false, iters_set = false;
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->qps = 1;
	o->tx_depth = 128;
	o->mtu = 4096;
	o->port = 18516;
	o->timeout = 10.0;
	o->port_wait = 10.0;
	o->qp_timeout = 14;
	o->gid_index = -1;
	o->ib_port = 1;
	if (argc < 2)
		FAIL("missing TEST (try --help)");
	optind = 0; /* glibc: 0 re-initialises getopt fully */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:an:D:q:t:m:p:u:h", longopts, NULL)) != -1) {
		const char *a = optarg;
		switch (c) {
		case 's':
			if (parse_u64(a, 1, PERF_MAX_SIZE, &v)) FAIL("bad --size '%s' (1..%u)", a, PERF_MAX_SIZE);
			o->size = (uint32_t)v; size_set = true; break;
		case 'a': o->all_sizes = true; break;
		case 'n':
			if (parse_u64(a, 1, UINT64_MAX >> 1, &v)) FAIL("bad --iters '%s'", a);
			o->iters = v; iters_set = true; break;
		case 'D': {
			char *end;
			o->duration = strtod(a, &end);
			if (end == a || *end || !(o->duration > 0 && o->duration <= 3600))
				FAIL("bad --duration '%s' (seconds, 0..3600]", a);
			break;
		}
		case 'q':
			if (parse_u64(a, 1, PERF_MAX_QPS, &v)) FAIL("bad --qps '%s' (1..%u)", a, PERF_MAX_QPS);
			o->qps = (unsigned)v; break;
		case 't':
			if (parse_u64(a, 1, 8192, &v)) FAIL("bad --tx-depth '%s' (1..8192)", a);
			o->tx_depth = (unsigned)v; break;
		case 'm':
			if (parse_u64(a, 256, 4096, &v) || (v & (v - 1)))
				FAIL("bad --mtu '%s' (256, 512, 1024, 2048 or 4096)", a);
			o->mtu = (unsigned)v; break;
		case 'p':
			if (parse_u64(a, 1, 65535, &v)) FAIL("bad --port '%s'", a);
			o->port = (uint16_t)v; break;
		case 'u':
			/* 0 would mean "no timeout" (IBTA 9.7.6.1.3): a lost tail
			 * packet would then hang the test, so it is refused. */
			if (parse_u64(a, 1, 31, &v)) FAIL("bad --qp-timeout '%s' (1..31)", a);
			o->qp_timeout = (uint8_t)v; break;
		case 'h': return 1;
		case O_GBITS: o->report_gbits = true; break;
		case O_JSON: o->json = a; break;
		case O_CHECK: o->check = true; break;
		case O_IMPAIR: o->impair = a; break;
		case O_IP: o->ip = a; break;
		case O_MEMIF:
			if (strncmp(a, "server", 6) && strncmp(a, "client", 6))
				FAIL("bad --memif '%s' (server|client[,socket=PATH])", a);
			o->memif = a; break;
		case O_IFACE: o->iface = a; break;
		case O_CAPTURE: o->capture = a; break;
		case O_PEER: {
			unsigned char b[16];
			if (inet_pton(AF_INET, a, b) != 1 && inet_pton(AF_INET6, a, b) != 1)
				FAIL("bad --peer '%s' (an IPv4 or IPv6 address)", a);
			o->peer = a;
			break;
		}
		case O_PWAIT: {
			char *end;
			o->port_wait = strtod(a, &end);
			if (end == a || *end || !(o->port_wait >= 0 && o->port_wait <= 3600))
				FAIL("bad --port-wait '%s' (0..3600 seconds)", a);
			break;
		}
		case O_TIMEOUT: {
			char *end;
			o->timeout = strtod(a, &end);
			if (end == a || *end || !(o->timeout > 0))
				FAIL("bad --timeout '%s'", a);
			break;
		}
		case O_CC: o->cc = a; break;
		case O_TMODE:
			if (!strcmp(a, "ibta"))
				o->timeout_mode = DROCE_TIMEOUT_IBTA;
			else if (!strcmp(a, "adaptive"))
				o->timeout_mode = DROCE_TIMEOUT_ADAPTIVE;
			else
				FAIL("bad --timeout-mode '%s' (ibta or adaptive)", a);
			break;
		case O_WTUNE: o->window_tune = true; break;
		case O_IDLE:
			if (droce_idle_mode_parse(a, &o->idle))
				FAIL("bad --idle '%s' (busy or adaptive)", a);
			break;
		case O_TRANSPORT: {
			int m = droce_transport_parse(a);
			if (m < 0)
				FAIL("bad --transport '%s' (gbn, sr or sr-spray)", a);
			o->transport = (uint8_t)m;
			break;
		}
		case O_CM: o->cm = true; o->cm_peer = a; break;
		case O_WINDOW:
			if (parse_u64(a, 1, 1u << 20, &v)) FAIL("bad --window '%s' (1..1048576 packets)", a);
			o->window = (uint32_t)v; break;
		case O_BACKEND:
			if (!strcmp(a, "droce"))
				o->backend = PERF_BACKEND_DROCE;
			else if (!strcmp(a, "verbs"))
				o->backend = PERF_BACKEND_VERBS;
			else
				FAIL("bad --backend '%s' (droce or verbs)", a);
			break;
		case O_IBDEV: o->ib_dev = a; break;
		case O_GIDX:
			if (parse_u64(a, 0, 255, &v)) FAIL("bad --gid-index '%s' (0..255)", a);
			o->gid_index = (int)v; break;
		case O_IBPORT:
			if (parse_u64(a, 1, 255, &v)) FAIL("bad --ib-port '%s' (1..255)", a);
			o->ib_port = (unsigned)v; break;
		default:
			FAIL("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	/* GNU getopt permutes: options may stand before or after TEST and SERVER. */
	if (optind >= argc)
		FAIL("missing TEST (try --help)");
	if (parse_test(argv[optind], &o->test))
		FAIL("unknown TEST '%s'", argv[optind]);
	if (optind + 1 < argc)
		o->server = argv[optind + 1];
	if (optind + 2 < argc)
		FAIL("unexpected argument '%s'", argv[optind + 2]);
	if (!size_set)
		o->size = perf_is_bw(o->test) ? 65536 : 2;
	if (o->test == PERF_ATOMIC_LAT) {
		o->size = 8;        /* atomics move 8 bytes (IBTA 9.4.5) */
		o->all_sizes = false;
	}
	if (!perf_is_bw(o->test) && o->qps > 1)
		FAIL("latency tests use one QP");
	if (!iters_set)
		o->iters = perf_is_bw(o->test) ? 5000 : 1000;
	if (o->memif && o->iface)
		FAIL("--memif and --iface are exclusive");
	if (o->backend == PERF_BACKEND_VERBS &&
	    (o->memif || o->iface || o->impair || o->capture || o->cc || o->window || o->ip ||
	     o->timeout_mode || o->window_tune || o->idle || o->transport))
		FAIL("--memif, --iface, --ip, --impair, --capture, --cc, --window, --timeout-mode, "
		     "--window-tune, --idle and --transport are droce options; "
		     "the verbs device has its own address and transport");
	if (o->cm && o->backend != PERF_BACKEND_DROCE)
		FAIL("--cm needs the droce backend (a verbs device connects through rdma_cm itself)");
	if (o->cm_peer && !o->server)
		FAIL("--cm=ADDR names the server's address: a client option");
	if (o->backend == PERF_BACKEND_DROCE && (o->ib_dev || o->gid_index >= 0 || o->ib_port != 1))
		FAIL("--ib-dev, --gid-index and --ib-port need --backend verbs");
	return 0;
}
