/* SPDX-License-Identifier: BSD-3-Clause */
#include "mad_view.h"

#include <string.h>

#include "wire/opcode.h"
#include "wire/parse.h"

void droce_dump_mad_decode(struct droce_dump_mad *d, const struct droce_pkt *p)
{
	memset(d, 0, sizeof(*d));
	/* The GSI takes MADs only as UD SENDs to QP1 (IBTA 13.5.1); a MAD
	 * never carries immediate data. */
	if (!p->op || p->h.bth.opcode != DROCE_OP_UD_SEND_ONLY || p->h.bth.dqpn != DROCE_QP1 ||
	    !p->payload)
		return;
	d->present = true;
	d->result = droce_mad_decode(p->payload, p->h.payload_len, &d->msg);
	d->has_hdr = p->h.payload_len == DROCE_MAD_LEN;
}

#define F(k, val, h) (out[n++] = (struct droce_dump_mad_field){ .key = (k), .v = (val), .hex = (h) })

size_t droce_dump_mad_fields(const struct droce_cm_msg *m, struct droce_dump_mad_field *out)
{
	size_t n = 0;

	switch (m->hdr.attr_id) {
	case DROCE_CM_ATTR_REQ: /* 12.6.5 */
		F("local_comm_id", m->u.req.local_comm_id, true);
		F("service_id", m->u.req.service_id, true);
		F("qpn", m->u.req.local_qpn, true);
		F("start_psn", m->u.req.starting_psn, false);
		F("path_mtu", m->u.req.path_mtu, false);
		F("responder_resources", m->u.req.responder_resources, false);
		F("initiator_depth", m->u.req.initiator_depth, false);
		F("retry_count", m->u.req.retry_count, false);
		F("rnr_retry_count", m->u.req.rnr_retry_count, false);
		break;
	case DROCE_CM_ATTR_MRA: /* 12.6.6 */
		F("local_comm_id", m->u.mra.local_comm_id, true);
		F("remote_comm_id", m->u.mra.remote_comm_id, true);
		F("msg_mraed", m->u.mra.msg_mraed, false);
		F("service_timeout", m->u.mra.service_timeout, false);
		break;
	case DROCE_CM_ATTR_REJ: /* 12.6.7 */
		F("local_comm_id", m->u.rej.local_comm_id, true);
		F("remote_comm_id", m->u.rej.remote_comm_id, true);
		F("msg_rejected", m->u.rej.msg_rejected, false);
		F("reason", m->u.rej.reason, false);
		break;
	case DROCE_CM_ATTR_REP: /* 12.6.8 */
		F("local_comm_id", m->u.rep.local_comm_id, true);
		F("remote_comm_id", m->u.rep.remote_comm_id, true);
		F("qpn", m->u.rep.local_qpn, true);
		F("start_psn", m->u.rep.starting_psn, false);
		F("responder_resources", m->u.rep.responder_resources, false);
		F("initiator_depth", m->u.rep.initiator_depth, false);
		F("rnr_retry_count", m->u.rep.rnr_retry_count, false);
		break;
	case DROCE_CM_ATTR_RTU: /* 12.6.9 */
	case DROCE_CM_ATTR_DREP: /* 12.6.11: same layout */
		F("local_comm_id", m->u.rtu.local_comm_id, true);
		F("remote_comm_id", m->u.rtu.remote_comm_id, true);
		break;
	case DROCE_CM_ATTR_DREQ: /* 12.6.10 */
		F("local_comm_id", m->u.dreq.local_comm_id, true);
		F("remote_comm_id", m->u.dreq.remote_comm_id, true);
		F("remote_qpn", m->u.dreq.remote_qpn, true);
		break;
	default:
		break;
	}
	return n;
}
