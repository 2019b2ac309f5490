/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-replay: conformance tests from captures.
 *
 *   droce-replay [--strict] [-w OUT.pcap] SCENARIO
 *                                       replay; exit 0 match, 1 mismatch, 2 bad input
 *   droce-replay --derive CAPTURE --side IP [--impair SPEC]
 *                                       write a scenario for that side to stdout
 *   droce-replay --sides CAPTURE        list the addresses that send RC frames to another host
 *
 * The scenario format is documented in pcap/README.md.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "derive.h"
#include "frames.h"
#include "run.h"
#include "scenario.h"

static void usage(FILE *f)
{
	fputs("usage: droce-replay [--strict] [-w OUT.pcap] SCENARIO\n"
	      "       droce-replay --derive CAPTURE --side IP [--impair SPEC]\n"
	      "       droce-replay --sides CAPTURE\n"
	      "Replays a capture's peer frames into a fresh droce context on a virtual clock and\n"
	      "compares what droce sends, writes and completes with what the scenario expects.\n"
	      "-w OUT.pcap writes the replayed conversation (peer frames as fed, droce's frames).\n"
	      "--impair SPEC: the side received through droce-perf --impair SPEC behind the\n"
	      "capture point; the scenario then replays through the same seeded shim.\n"
	      "--strict also compares the requester's policy, ignored by default: MigReq,\n"
	      "where AckReq is set, and the credit count of ACKs.\n"
	      "Exit: 0 match, 1 mismatch, 2 bad scenario or capture (FILE:LINE: reason).\n"
	      "Scenario format: pcap/README.md.\n", f);
}

static int do_derive(const char *capture, const char *side, const char *impair)
{
	struct droce_rp_capture cap;
	char err[512];
	if (droce_rp_capture_load(capture, &cap, err, sizeof(err))) {
		fprintf(stderr, "droce-replay: %s: %s\n", capture, err);
		return DROCE_RP_BAD_INPUT;
	}
	char abs[4096];
	const char *name = realpath(capture, abs) ? abs : capture;
	bool *gone = NULL;
	int r = 0;
	if (impair) {
		uint8_t ip[16];
		int ipv = droce_rp_parse_ip(side, ip);
		gone = calloc(cap.n + 1, sizeof(*gone));
		if (!gone)
			r = -ENOMEM;
		else if (ipv)
			r = droce_rp_impair_mask(impair, &cap, ipv, ip, gone, err, sizeof(err));
		if (r) {
			fprintf(stderr, "droce-replay: --impair %s: %s\n", impair, r == -ENOMEM ? "out of memory" : err);
			free(gone);
			droce_rp_capture_free(&cap);
			return DROCE_RP_BAD_INPUT;
		}
	}
	r = droce_rp_derive_impaired(&cap, name, side, impair, gone, stdout, err, sizeof(err));
	free(gone);
	droce_rp_capture_free(&cap);
	if (r) {
		fprintf(stderr, "droce-replay: cannot derive a scenario from %s for %s: %s\n", capture,
			side, err);
		return DROCE_RP_BAD_INPUT;
	}
	return 0;
}

/* Addresses that send RC (not QP1/UD) RoCEv2 frames, one per line. */
static int do_sides(const char *capture)
{
	struct droce_rp_capture cap;
	char err[512];
	if (droce_rp_capture_load(capture, &cap, err, sizeof(err))) {
		fprintf(stderr, "droce-replay: %s: %s\n", capture, err);
		return DROCE_RP_BAD_INPUT;
	}
	char seen[64][64];
	unsigned nseen = 0;
	for (size_t i = 0; i < cap.n; i++) {
		struct droce_pkt p;
		enum droce_parse_result pr;
		memset(&p, 0, sizeof(p));
		pr = droce_parse(cap.f[i].data, cap.f[i].len, &p, 0);
		if (!droce_rp_is_roce(pr) || !p.op || p.h.net.rocev1)
			continue;
		/* RC only: QP1/UD (CM MADs), UC and CNPs make no RC scenario,
		 * and a host talking to itself has no side to play. */
		size_t al = p.h.net.ip_version == 4 ? 4 : 16;
		if (droce_opcode_service(p.h.bth.opcode) != DROCE_SVC_RC || p.h.bth.dqpn <= 1 ||
		    !memcmp(p.h.net.src_ip, p.h.net.dst_ip, al))
			continue;
		char ip[64];
		droce_rp_fmt_ip(p.h.net.ip_version, p.h.net.src_ip, ip, sizeof(ip));
		unsigned k;
		for (k = 0; k < nseen && strcmp(seen[k], ip); k++)
			;
		if (k == nseen && nseen < 64) {
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", ip);
			printf("%s\n", ip);
		}
	}
	droce_rp_capture_free(&cap);
	return 0;
}

static int do_replay(const char *path, const char *pcap_out, bool strict)
{
	struct droce_rp_scenario *s;
	char err[1024];
	if (droce_rp_scenario_load(path, &s, err, sizeof(err))) {
		fprintf(stderr, "droce-replay: %s\n", err);
		return DROCE_RP_BAD_INPUT;
	}
	if (strict)
		s->checks |= DROCE_RP_CHECK_STRICT;
	struct droce_rp_capture cap;
	char cerr[512];
	if (droce_rp_capture_load(s->capture, &cap, cerr, sizeof(cerr))) {
		fprintf(stderr, "droce-replay: %s:%u: capture %s: %s\n", s->path, s->capture_line,
			s->capture, cerr);
		droce_rp_scenario_free(s);
		return DROCE_RP_BAD_INPUT;
	}
	int r = droce_rp_run_write(s, &cap, stdout, pcap_out);
	droce_rp_capture_free(&cap);
	droce_rp_scenario_free(s);
	return r;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--derive") || !strcmp(argv[1], "--side"))) {
		/* --derive CAPTURE --side IP [--impair SPEC], in any order */
		const char *cap = NULL, *side = NULL, *imp = NULL;
		int i;
		for (i = 1; i + 1 < argc; i += 2) {
			const char **v = !strcmp(argv[i], "--derive") ? &cap
					 : !strcmp(argv[i], "--side") ? &side
					 : !strcmp(argv[i], "--impair") ? &imp : NULL;
			if (!v || *v)
				break;
			*v = argv[i + 1];
		}
		if (i == argc && cap && side)
			return do_derive(cap, side, imp);
		usage(stderr);
		return DROCE_RP_BAD_INPUT;
	}
	if (argc == 3 && !strcmp(argv[1], "--sides"))
		return do_sides(argv[2]);
	/* [--strict] [-w OUT.pcap] SCENARIO, options in any order */
	const char *out = NULL, *scn = NULL;
	bool strict = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--strict") && !strict) {
			strict = true;
		} else if (!strcmp(argv[i], "-w") && !out && i + 1 < argc && argv[i + 1][0] != '-') {
			out = argv[++i];
		} else if (argv[i][0] != '-' && !scn) {
			scn = argv[i];
		} else {
			scn = NULL;
			break;
		}
	}
	if (scn)
		return do_replay(scn, out, strict);
	usage(stderr);
	return DROCE_RP_BAD_INPUT;
}
