/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Field-by-field comparison of two decoded frames. A build -> parse round
 * trip (unit tests, the parser fuzzer, replay tools) compares what it built
 * with what it parsed; fields a frame does not carry (IPv4's flow label,
 * RETH on a SEND, the UDP ports of a RoCEv1 frame, the VLAN TCI without a
 * tag) are not compared, so neither side has to zero them.
 */
#ifndef DROCE_WIRE_COMPARE_H
#define DROCE_WIRE_COMPARE_H

#include "wire/fields.h"

/**
 * Compare two decoded frames field by field. Which fields exist is decided
 * by @p a: its IP version, RoCEv1 flag, VLAN flag and opcode (an unknown
 * opcode compares no extension header). Those four are compared first, so
 * a frame of another kind is reported as such.
 *
 * @return NULL when every field the frame carries is equal, otherwise the
 *         name of the first field that differs, e.g. "bth.psn" or
 *         "ext.reth.rkey" (a static string).
 */
const char *droce_hdrs_diff(const struct droce_hdrs *a, const struct droce_hdrs *b);

#endif
