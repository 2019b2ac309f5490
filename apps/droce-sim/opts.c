/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-sim's command line: every option has a default (docs/sim.md). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cc/cc.h"
#include "sim.h"

void sim_usage(FILE *out)
{
	fprintf(out,
"usage: droce-sim [options] --workload W\n"
"fabric:\n"
"  --hosts N            hosts on one switch (default: incast:N needs N+1, others 8)\n"
"  --leaf-spine L,S,H   L leaves with H hosts each, S spines, ECMP on the UDP source port\n"
"  --rate GBPS          every link's rate (default 100)\n"
"  --delay NS           every link's propagation delay (default 1000)\n"
"  --buffer BYTES       per switch egress port, tail drop beyond (default 1048576)\n"
"  --ecn KMIN,KMAX,PMAX RED-style ECN marking in bytes and probability\n"
"                       (default 5120,204800,0.01; --ecn 0,0,0 turns it off)\n"
"  --pfc XOFF,XON       PFC pause/resume per ingress port, bytes (default off)\n"
"  --loss P             drop each frame a host sends with probability P (default 0)\n"
"  --drop-tail          each host loses the last packet of its first message, once\n"
"  --fail LINK@NS[:UP]  LINK (leafL-spineS, or hH: host H's link) goes down at NS\n"
"                       (and up again at UP); up to 8, frames on or for it are lost\n"
"  --rehash NS          ECMP leaves a dead uplink out NS after it fails, and takes it\n"
"                       back NS after it is up (default: never, as with no routing)\n"
"hosts (real droce contexts):\n"
"  --mtu BYTES          path MTU 256..4096 (default 4096)\n"
"  --cc NAME            congestion control: fixed, aimd, dcqcn, swift (default dcqcn)\n"
"  --timeout-mode M     ibta | adaptive ACK timeout (default: the engine's, ibta)\n"
"  --window-tune        the window follows the measured BDP (default: fixed ceiling)\n"
"  --transport T        gbn | sr | sr-spray: IBTA go-back-N (default) or droce's\n"
"                       selective repeat on every QP (docs/transport.md)\n"
"run:\n"
"  --workload W         incast:N:BYTES[:STAGGER_NS]  N senders write BYTES each to host 0\n"
"                       permutation:BYTES  each host writes BYTES to another (random)\n"
"                       alltoall:BYTES     every host writes BYTES to every other\n"
"                       allreduce:BYTES    ring allreduce of BYTES over all hosts\n"
"                       mix:LONG:SHORT:RATE  a permutation of LONG flows plus Poisson\n"
"                                          SHORT messages, RATE per second in all\n"
"  --duration NS        stop at this simulated time (default: when all flows are done;\n"
"                       mix: 10000000)\n"
"  --seed N             seed of every random choice (default 1)\n"
"  --sample NS          CSV sampling interval (default 10000)\n"
"output:\n"
"  --json FILE          summary as one JSON object ('-' = stdout)\n"
"  --csv DIR            DIR/flows.csv (per-flow rate) and DIR/queues.csv (queue depth)\n"
"  --plot DIR           PNG plots of both (python3-matplotlib; the CSV goes to DIR\n"
"                       too unless --csv names another)\n"
"  --quiet              no progress or summary on stderr\n"
"  --help\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *e;
	double d = strtod(s, &e);
	if (e == s || *e || d < 0)
		return -1;
	*out = (uint64_t)d;
	return 0;
}

static int parse_workload(struct sim_opts *o, const char *w)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", w);
	char *f[5] = {0};
	unsigned n = 0;
	for (char *tok = strtok(buf, ":"); tok && n < 5; tok = strtok(NULL, ":"))
		f[n++] = tok;
	if (!n)
		return -1;
	if (!strcmp(f[0], "incast") && (n == 3 || n == 4)) {
		uint64_t k;
		if (parse_u64(f[1], &k) || k < 1 || parse_u64(f[2], &o->wl_bytes) ||
		    (n == 4 && parse_u64(f[3], &o->wl_stagger)))
			return -1;
		o->wl = WL_INCAST;
		o->wl_n = (unsigned)k;
		return 0;
	}
	if ((!strcmp(f[0], "permutation") || !strcmp(f[0], "alltoall") || !strcmp(f[0], "allreduce")) &&
	    n == 2) {
		o->wl = f[0][0] == 'p' ? WL_PERMUTATION : f[0][3] == 't' ? WL_ALLTOALL : WL_ALLREDUCE;
		return parse_u64(f[1], &o->wl_bytes);
	}
	if (!strcmp(f[0], "mix") && n == 4) {
		o->wl = WL_MIX;
		o->wl_rate = strtod(f[3], NULL);
		return parse_u64(f[1], &o->wl_bytes) || parse_u64(f[2], &o->wl_short) ||
		       o->wl_rate <= 0 ? -1 : 0;
	}
	return -1;
}

enum { O_HOSTS = 256, O_LS, O_RATE, O_DELAY, O_BUF, O_ECN, O_PFC, O_LOSS, O_MTU, O_CC, O_TMO,
       O_WL, O_DUR, O_SEED, O_JSON, O_CSV, O_PLOT, O_HELP, O_QUIET, O_SAMPLE, O_DROPTAIL, O_WTUNE,
       O_FAIL, O_REHASH, O_TRANSPORT };

/* LINK@NS[:UP]: "leafL-spineS" or "hH". */
static int parse_fail(struct sim_opts *o, const char *v)
{
	if (o->nfails == SIM_MAX_FAILS)
		return -1;
	struct sim_fail *f = &o->fails[o->nfails];
	char name[64];
	const char *at = strchr(v, '@');
	if (!at || (size_t)(at - v) >= sizeof(name))
		return -1;
	memcpy(name, v, (size_t)(at - v));
	name[at - v] = 0;
	int used = 0;
	memset(f, 0, sizeof(*f));
	if (sscanf(name, "leaf%u-spine%u%n", &f->a, &f->b, &used) == 2 && !name[used]) {
		f->host = false;
	} else if (sscanf(name, "h%u%n", &f->a, &used) == 1 && !name[used]) {
		f->host = true;
	} else {
		return -1;
	}
	char times[64];
	snprintf(times, sizeof(times), "%s", at + 1);
	char *colon = strchr(times, ':');
	if (colon)
		*colon = 0;
	if (parse_u64(times, &f->down) || (colon && (parse_u64(colon + 1, &f->up) || f->up <= f->down)))
		return -1;
	o->nfails++;
	return 0;
}

/* @return 0 to run, 1 after --help, -1 on a bad command line. */
int sim_parse_args(struct sim_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"hosts", 1, 0, O_HOSTS}, {"leaf-spine", 1, 0, O_LS}, {"rate", 1, 0, O_RATE},
		{"delay", 1, 0, O_DELAY}, {"buffer", 1, 0, O_BUF}, {"ecn", 1, 0, O_ECN},
		{"pfc", 1, 0, O_PFC}, {"loss", 1, 0, O_LOSS}, {"mtu", 1, 0, O_MTU}, {"cc", 1, 0, O_CC},
		{"timeout-mode", 1, 0, O_TMO}, {"workload", 1, 0, O_WL}, {"duration", 1, 0, O_DUR},
		{"seed", 1, 0, O_SEED}, {"json", 1, 0, O_JSON}, {"csv", 1, 0, O_CSV},
		{"plot", 1, 0, O_PLOT}, {"help", 0, 0, O_HELP}, {"quiet", 0, 0, O_QUIET},
		{"sample", 1, 0, O_SAMPLE}, {"drop-tail", 0, 0, O_DROPTAIL},
		{"window-tune", 0, 0, O_WTUNE}, {"fail", 1, 0, O_FAIL}, {"rehash", 1, 0, O_REHASH},
		{"transport", 1, 0, O_TRANSPORT},
		{0, 0, 0, 0},
	};
	memset(o, 0, sizeof(*o));
	o->rate_gbps = 100;
	o->delay_ns = 1000;
	o->buffer = 1u << 20;
	o->kmin = 5 * 1024;
	o->kmax = 200 * 1024;
	o->pmax = 0.01;
	o->mtu = 4096;
	o->cc = "dcqcn";
	o->seed = 1;
	o->sample_ns = 10000;
	o->rehash_ns = UINT64_MAX;
	bool have_wl = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case O_HOSTS:
			if (parse_u64(optarg, &v) || v < 2 || v > 4096)
				goto bad;
			o->hosts = (unsigned)v;
			break;
		case O_LS:
			if (sscanf(optarg, "%u,%u,%u", &o->leaves, &o->spines, &o->per_leaf) != 3 ||
			    o->leaves < 1 || o->spines < 1 || o->per_leaf < 1 ||
			    o->leaves * o->per_leaf < 2 || o->leaves * o->per_leaf > 4096)
				goto bad;
			break;
		case O_RATE:
			o->rate_gbps = strtod(optarg, NULL);
			if (!(o->rate_gbps > 0))
				goto bad;
			break;
		case O_DELAY:
			if (parse_u64(optarg, &o->delay_ns))
				goto bad;
			break;
		case O_BUF:
			if (parse_u64(optarg, &o->buffer) || o->buffer < SIM_MAX_FRAME)
				goto bad;
			break;
		case O_ECN: {
			double a, b;
			if (sscanf(optarg, "%lf,%lf,%lf", &a, &b, &o->pmax) != 3 || a < 0 || b < a ||
			    o->pmax < 0 || o->pmax > 1)
				goto bad;
			o->kmin = (uint64_t)a;
			o->kmax = (uint64_t)b;
			break;
		}
		case O_PFC: {
			double a, b;
			if (sscanf(optarg, "%lf,%lf", &a, &b) != 2 || b > a || a < 1)
				goto bad;
			o->xoff = (uint64_t)a;
			o->xon = (uint64_t)b;
			break;
		}
		case O_LOSS:
			o->loss = strtod(optarg, NULL);
			if (o->loss < 0 || o->loss >= 1)
				goto bad;
			break;
		case O_MTU:
			if (parse_u64(optarg, &v) || (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096))
				goto bad;
			o->mtu = (unsigned)v;
			break;
		case O_CC:
			if (!droce_cc_find(optarg))
				goto bad;
			o->cc = optarg;
			break;
		case O_TMO:
			if (strcmp(optarg, "ibta") && strcmp(optarg, "adaptive"))
				goto bad;
			o->timeout_mode = optarg;
			break;
		case O_WL:
			if (parse_workload(o, optarg))
				goto bad;
			have_wl = true;
			break;
		case O_DUR:
			if (parse_u64(optarg, &o->duration))
				goto bad;
			break;
		case O_SEED:
			if (parse_u64(optarg, &o->seed))
				goto bad;
			break;
		case O_SAMPLE:
			if (parse_u64(optarg, &o->sample_ns) || !o->sample_ns)
				goto bad;
			break;
		case O_JSON: o->json = optarg; break;
		case O_CSV: o->csv = optarg; break;
		case O_PLOT: o->plot = optarg; break;
		case O_QUIET: o->quiet = true; break;
		case O_DROPTAIL: o->drop_tail = true; break;
		case O_WTUNE: o->window_tune = true; break;
		case O_TRANSPORT:
			if ((o->transport = droce_transport_parse(optarg)) < 0)
				goto bad;
			break;
		case O_FAIL:
			if (parse_fail(o, optarg))
				goto bad;
			break;
		case O_REHASH:
			if (parse_u64(optarg, &o->rehash_ns))
				goto bad;
			break;
		case O_HELP:
			sim_usage(stdout);
			return 1;
		default:
			goto bad;
		}
	}
	if (optind != argc || !have_wl)
		goto bad;
	if (o->plot && !o->csv)
		o->csv = o->plot; /* the plots' data next to them */
	unsigned need = o->wl == WL_INCAST ? o->wl_n + 1 : 2;
	if (o->leaves) {
		if (o->leaves * o->per_leaf < need)
			goto bad;
	} else if (!o->hosts) {
		o->hosts = need > 2 ? need : (o->wl == WL_INCAST ? need : 8);
	} else if (o->hosts < need) {
		goto bad;
	}
	if (o->wl == WL_MIX && !o->duration)
		o->duration = 10000000;
	return 0;
bad:
	fprintf(stderr, "droce-sim: bad command line (try --help)\n");
	return -1;
}
