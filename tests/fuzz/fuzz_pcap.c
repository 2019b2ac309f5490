/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: droce-replay's capture reader and derivation
 * (apps/droce-replay/capture.c, derive.c) on any file. The input is written
 * to a memory file and read as a pcap/pcapng capture; when it reads, each
 * side (the two addresses droce's fixtures use, and the source address of
 * the first IPv4 frame) is derived. Nothing may crash, read out of bounds,
 * leak or hit undefined behaviour; and a scenario that derive wrote must
 * parse again (droce-replay --derive's output is droce-replay's input).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "derive.h"
#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void derive_side(const struct droce_rp_capture *cap, const char *path, const char *ip)
{
	char *text = NULL;
	size_t len = 0;
	char err[256];
	FILE *out = open_memstream(&text, &len);
	if (!out)
		return;
	int r = droce_rp_derive(cap, path, ip, out, err, sizeof(err));
	fclose(out);
	if (r == 0) {
		struct droce_rp_scenario *s = NULL;
		char perr[256] = "";
		if (droce_rp_scenario_parse(text, "derived.scn", &s, perr, sizeof(perr)) == 0) {
			droce_rp_scenario_free(s);
		} else if (!strstr(perr, "cannot open")) {
			/* A referenced file (the capture itself) may not open again
			 * under this name; nothing else may fail: derive refuses a
			 * capture whose times a scenario cannot hold (the committed
			 * input derive-at-past-1e18ns). */
			fprintf(stderr, "fuzz_pcap: derive for %s wrote a scenario that does not parse: %s\n",
				ip, perr);
			abort();
		}
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_pcap", 0);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct droce_rp_capture cap = {0};
	char err[256];
	if (droce_rp_capture_load(path, &cap, err, sizeof(err)) == 0) {
		derive_side(&cap, path, "198.18.0.1");
		derive_side(&cap, path, "198.18.0.2");
		for (size_t i = 0; i < cap.n; i++) {
			const struct droce_rp_frame *f = &cap.f[i];
			if (f->len >= 34 && f->data[12] == 0x08 && f->data[13] == 0x00) {
				char ip[16];
				snprintf(ip, sizeof(ip), "%u.%u.%u.%u", f->data[26], f->data[27],
					 f->data[28], f->data[29]);
				derive_side(&cap, path, ip);
				break;
			}
		}
		droce_rp_capture_free(&cap);
	}
	close(fd);
	return 0;
}
