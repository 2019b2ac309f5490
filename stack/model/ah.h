/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UD address handle. Written by core/ (ah.c) at create; read by
 * transport/ (ud.c) per datagram.
 */
#ifndef DROCE_MODEL_AH_H
#define DROCE_MODEL_AH_H

#include <droce/droce.h>

#include "wire/fields.h"

/** A UD address handle (core/ah.c): the network fields of its datagrams,
 * filled once at create from the attributes and the context's address. */
struct droce_ah {
	struct droce_ctx *ctx;
	struct droce_ah_attr attr;
	struct droce_net_fields net;  /* sport 0: derived per datagram from the QPNs */
	struct droce_ah *prev, *next; /* the context's list (destroyed with it) */
};

#endif
