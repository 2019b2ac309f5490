/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire/opcode.h"

#define X(n, code, h, f)                                                  \
	[code] = {                                                        \
		.name = #n,                                               \
		.hdrs = (h),                                              \
		.flags = (f),                                             \
		.hdr_len = DROCE_HDRS_LEN(h),                             \
		.off_deth = DROCE_OFF_DETH(h),                            \
		.off_reth = DROCE_OFF_RETH(h),                            \
		.off_atomic = DROCE_OFF_ATOMIC(h),                        \
		.off_aeth = DROCE_OFF_AETH(h),                            \
		.off_aack = DROCE_OFF_AACK(h),                            \
		.off_imm = DROCE_OFF_IMM(h),                              \
		.off_ieth = DROCE_OFF_IETH(h),                            \
	},
const struct droce_opcode_info droce_opcode_table[256] = {
	DROCE_OPCODE_LIST(X)
};
#undef X

const char *droce_opcode_name(uint8_t opcode)
{
	const char *n = droce_opcode_table[opcode].name;
	return n ? n : "UNKNOWN";
}
