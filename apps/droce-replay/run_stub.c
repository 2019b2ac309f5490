/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Built instead of run.c while the engine library has no sources yet: the
 * scenario parser, --derive and --sides work; a replay reports that it
 * cannot run.
 */
#include <errno.h>

#include "run.h"

int droce_rp_run(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap, FILE *out)
{
	(void)cap;
	fprintf(out, "%s: this droce-replay was built without the droce engine: cannot replay\n",
		s->path);
	return DROCE_RP_BAD_INPUT;
}

int droce_rp_run_write(const struct droce_rp_scenario *s, const struct droce_rp_capture *cap,
		       FILE *out, const char *pcap_out)
{
	(void)pcap_out;
	return droce_rp_run(s, cap, out);
}

int droce_rp_impair_mask(const char *spec, const struct droce_rp_capture *cap, int ipv,
			 const uint8_t ip[16], bool *gone, char *err, size_t errlen)
{
	(void)spec, (void)cap, (void)ipv, (void)ip, (void)gone;
	snprintf(err, errlen, "built without the droce engine: no impairment shim");
	return -ENOTSUP;
}
