/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: droce-replay's scenario reader (apps/droce-replay/
 * scenario.c). Any text must parse or be refused with a message, without
 * a crash, an out-of-bounds read, a leak or undefined behaviour; a refusal
 * must say where ("FILE:LINE: reason", as scenario.h promises).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct droce_rp_scenario *s = NULL;
	char err[256] = "";
	int r = droce_rp_scenario_parse(text, "fuzz.scn", &s, err, sizeof(err));
	if (r == 0) {
		droce_rp_scenario_free(s);
	} else if (r == -EINVAL && strncmp(err, "fuzz.scn:", 9) != 0) {
		fprintf(stderr, "fuzz_scenario: refused without FILE:LINE: '%s'\n", err);
		abort();
	}
	free(text);
	return 0;
}
