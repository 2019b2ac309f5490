/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-dump [--json] FILE...: decode the RoCE frames of pcap / pcapng
 * captures with droce's own parser (stack/wire), one line per frame.
 *
 * Exit status: 0 when every RoCE frame is well-formed with a good ICRC,
 * 1 when at least one is not, 2 on a usage or I/O error (message on stderr).
 * An I/O error on one file does not stop the others from being decoded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "frame.h"

enum {
	EXIT_CLEAN = 0,
	EXIT_BAD_FRAME = 1,
	EXIT_USAGE_IO = 2,
};

static void usage(FILE *out)
{
	fputs("usage: droce-dump [--json] FILE...\n"
	      "\n"
	      "Decode the RoCE (RoCEv2 over IPv4/IPv6, RoCEv1) frames of pcap or pcapng\n"
	      "captures: Ethernet, Linux cooked SLL/SLL2 (tcpdump -i any) or raw IP.\n"
	      "Every ICRC is verified. FILE may be - for standard input.\n"
	      "\n"
	      "  --json   one JSON object per frame and line instead of a summary line\n"
	      "  --help   show this help and exit\n"
	      "\n"
	      "Exit status: 0 every RoCE frame well-formed with a good ICRC,\n"
	      "             1 some RoCE frame malformed or with a bad ICRC,\n"
	      "             2 usage or I/O error.\n"
	      "Output formats: docs/tools.md.\n",
	      out);
}

/* libpcap's messages often name the file already; name it once. */
static void report(const char *path, const char *err)
{
	if (strstr(err, path))
		fprintf(stderr, "droce-dump: %s\n", err);
	else
		fprintf(stderr, "droce-dump: %s: %s\n", path, err);
}

/* Decode one file. @return the worst exit status it warrants. */
static int dump_file(const char *path, bool json, bool header)
{
	struct droce_dump_capture cap;
	struct droce_dump_raw raw;
	struct droce_dump_frame f;
	int64_t t0 = 0;
	int status = EXIT_CLEAN;
	int rc;

	if (droce_dump_capture_open(&cap, path) < 0) {
		report(path, cap.err);
		return EXIT_USAGE_IO;
	}
	if (header)
		printf("== %s\n", path);
	for (uint64_t n = 1; (rc = droce_dump_capture_next(&cap, &raw)) == 1; n++) {
		if (n == 1)
			t0 = raw.ts_ns;
		droce_dump_decode(&f, raw.frame, raw.len);
		f.number = n;
		f.rel_ns = raw.ts_ns - t0;
		f.wire_len = raw.wire_len;
		if (json)
			droce_dump_print_json(stdout, &f);
		else
			droce_dump_print_text(stdout, &f);
		if (f.roce && f.result != DROCE_PARSE_OK)
			status = EXIT_BAD_FRAME;
	}
	if (rc < 0) {
		fflush(stdout);
		report(path, cap.err);
		status = EXIT_USAGE_IO;
	}
	droce_dump_capture_close(&cap);
	return status;
}

int main(int argc, char **argv)
{
	bool json = false;
	int first = argc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			first = i + 1;
			break;
		}
		if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return EXIT_CLEAN;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "droce-dump: unknown option '%s'\n", a);
			usage(stderr);
			return EXIT_USAGE_IO;
		} else {
			first = i;
			break;
		}
	}
	/* Options come first; everything after the first file name is a file. */
	if (first >= argc) {
		fputs("droce-dump: no capture file given\n", stderr);
		usage(stderr);
		return EXIT_USAGE_IO;
	}

	int status = EXIT_CLEAN;
	bool header = !json && argc - first > 1;
	for (int i = first; i < argc; i++) {
		int s = dump_file(argv[i], json, header);
		if (s > status)
			status = s;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "droce-dump: writing the output: %s\n", strerror(errno));
		status = EXIT_USAGE_IO;
	}
	return status;
}
