/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM MAD codec (IBTA vol 1 13.4.2 header, 12.6 messages, A11 rdma_cm
 * header). Every read is at a fixed offset inside a buffer whose length was
 * checked to be exactly 256 bytes first, so no field read can run past it.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cm/mad.h"
#include "wire/bytes.h"

#define D(type, f) (DROCE_MAD_HDR_LEN + offsetof(struct droce_cm_##type##_wire, f))
#define H(f) offsetof(struct droce_mad_hdr_wire, f)

const char *droce_cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
#define X(n, v) case v: return #n;
		DROCE_CM_ATTRS(X)
#undef X
	}
	return NULL;
}

const char *droce_cm_rej_reason_str(uint16_t reason)
{
	switch (reason) {
#define X(n, v, s) case v: return s;
		DROCE_CM_REJ_REASONS(X)
#undef X
	}
	return "unknown reason";
}

static const char *const result_names[] = {
#define X(n, s) #n,
	DROCE_MAD_RESULTS(X)
#undef X
};
static const char *const result_strs[] = {
#define X(n, s) s,
	DROCE_MAD_RESULTS(X)
#undef X
};

const char *droce_mad_result_name(enum droce_mad_result r)
{
	return (unsigned)r < DROCE_MAD__COUNT ? result_names[r] : "INVALID";
}

const char *droce_mad_result_str(enum droce_mad_result r)
{
	return (unsigned)r < DROCE_MAD__COUNT ? result_strs[r] : "invalid result";
}

void droce_mad_hdr_init(struct droce_mad_hdr *h, uint16_t attr_id, uint64_t tid)
{
	memset(h, 0, sizeof(*h));
	h->base_version = DROCE_MAD_BASE_VERSION;
	h->mgmt_class = DROCE_MAD_CLASS_CM;
	h->class_version = DROCE_MAD_CM_CLASS_VERSION;
	h->method = DROCE_MAD_METHOD_SEND;
	h->tid = tid;
	h->attr_id = attr_id;
}

/* ---- decode ---- */

static void get_path(const uint8_t *p, struct droce_cm_path *o)
{
#define P(f) offsetof(struct droce_cm_path_wire, f)
	o->local_lid = droce_get_be16(p + P(local_lid));
	o->remote_lid = droce_get_be16(p + P(remote_lid));
	memcpy(o->local_gid, p + P(local_gid), 16);
	memcpy(o->remote_gid, p + P(remote_gid), 16);
	uint32_t fr = droce_get_be32(p + P(flow_rate));
	o->flow_label = fr >> 12;
	o->packet_rate = fr & 0x3F;
	o->traffic_class = p[P(traffic_class)];
	o->hop_limit = p[P(hop_limit)];
	o->sl = p[P(sl_subnet)] >> 4;
	o->subnet_local = (p[P(sl_subnet)] >> 3) & 1;
	o->local_ack_timeout = p[P(ack_timeout)] >> 3;
#undef P
}

static enum droce_mad_result get_req(const uint8_t *b, struct droce_cm_req *r)
{
	uint32_t w;

	r->local_comm_id = droce_get_be32(b + D(req, local_comm_id));
	r->service_id = droce_get_be64(b + D(req, service_id));
	r->local_ca_guid = droce_get_be64(b + D(req, local_ca_guid));
	r->local_qkey = droce_get_be32(b + D(req, local_qkey));
	w = droce_get_be32(b + D(req, qpn_resp_res));
	r->local_qpn = w >> 8;
	r->responder_resources = (uint8_t)w;
	w = droce_get_be32(b + D(req, eecn_init_depth));
	r->local_eecn = w >> 8;
	r->initiator_depth = (uint8_t)w;
	w = droce_get_be32(b + D(req, reecn_rto));
	r->remote_eecn = w >> 8;
	r->remote_cm_response_timeout = (uint8_t)(w >> 3) & 0x1F;
	r->transport_type = (w >> 1) & 3;
	r->e2e_flow_control = w & 1;
	w = droce_get_be32(b + D(req, psn_lto_retry));
	r->starting_psn = w >> 8;
	r->local_cm_response_timeout = (uint8_t)(w >> 3) & 0x1F;
	r->retry_count = w & 7;
	r->pkey = droce_get_be16(b + D(req, pkey));
	uint8_t m = b[D(req, mtu_rdc_rnr)];
	r->path_mtu = m >> 4;
	r->rdc_exists = (m >> 3) & 1;
	r->rnr_retry_count = m & 7;
	m = b[D(req, maxretry_srq_ext)];
	r->max_cm_retries = m >> 4;
	r->srq = (m >> 3) & 1;
	r->extended_transport = m & 7;
	get_path(b + D(req, primary), &r->primary);
	get_path(b + D(req, alternate), &r->alternate);
	memcpy(r->private_data, b + D(req, private_data), sizeof(r->private_data));
	if (r->local_comm_id == 0)
		return DROCE_MAD_BAD_COMM_ID;
	/* 12.6.5: 3 is reserved;'s RC/UC/RD are 0/1/2 */
	if (r->transport_type == 3)
		return DROCE_MAD_BAD_TRANSPORT;
	/* 9.6.1 / 12.6.5: PMTU codes 1 (256) .. 5 (4096); 0 and 6+ reserved */
	if (r->path_mtu < 1 || r->path_mtu > 5)
		return DROCE_MAD_BAD_MTU;
	return DROCE_MAD_OK;
}

static enum droce_mad_result get_mra(const uint8_t *b, struct droce_cm_mra *r)
{
	r->local_comm_id = droce_get_be32(b + D(mra, local_comm_id));
	r->remote_comm_id = droce_get_be32(b + D(mra, remote_comm_id));
	r->msg_mraed = b[D(mra, msg_mraed)] >> 6;
	r->service_timeout = b[D(mra, service_timeout)] >> 3;
	memcpy(r->private_data, b + D(mra, private_data), sizeof(r->private_data));
	return r->msg_mraed == 3 ? DROCE_MAD_BAD_MSG_CODE : DROCE_MAD_OK;
}

static enum droce_mad_result get_rej(const uint8_t *b, struct droce_cm_rej *r)
{
	r->local_comm_id = droce_get_be32(b + D(rej, local_comm_id));
	r->remote_comm_id = droce_get_be32(b + D(rej, remote_comm_id));
	r->msg_rejected = b[D(rej, msg_rejected)] >> 6;
	r->rej_info_len = b[D(rej, rej_info_len)] >> 1;
	r->reason = droce_get_be16(b + D(rej, reason));
	memcpy(r->ari, b + D(rej, ari), sizeof(r->ari));
	memcpy(r->private_data, b + D(rej, private_data), sizeof(r->private_data));
	if (r->msg_rejected == 3)
		return DROCE_MAD_BAD_MSG_CODE;
	if (r->rej_info_len > sizeof(r->ari))
		return DROCE_MAD_BAD_REJ_INFO_LEN;
	return DROCE_MAD_OK;
}

static enum droce_mad_result get_rep(const uint8_t *b, struct droce_cm_rep *r)
{
	r->local_comm_id = droce_get_be32(b + D(rep, local_comm_id));
	r->remote_comm_id = droce_get_be32(b + D(rep, remote_comm_id));
	r->local_qkey = droce_get_be32(b + D(rep, local_qkey));
	r->local_qpn = droce_get_be24(b + D(rep, local_qpn));
	r->local_eecn = droce_get_be24(b + D(rep, local_eecn));
	r->starting_psn = droce_get_be24(b + D(rep, starting_psn));
	r->responder_resources = b[D(rep, responder_resources)];
	r->initiator_depth = b[D(rep, initiator_depth)];
	uint8_t t = b[D(rep, tad_fo_e2e)];
	r->target_ack_delay = t >> 3;
	r->failover_accepted = (t >> 1) & 3;
	r->e2e_flow_control = t & 1;
	t = b[D(rep, rnr_srq)];
	r->rnr_retry_count = t >> 5;
	r->srq = (t >> 4) & 1;
	r->local_ca_guid = droce_get_be64(b + D(rep, local_ca_guid));
	memcpy(r->private_data, b + D(rep, private_data), sizeof(r->private_data));
	return r->local_comm_id == 0 ? DROCE_MAD_BAD_COMM_ID : DROCE_MAD_OK;
}

static enum droce_mad_result get_rtu(const uint8_t *b, struct droce_cm_rtu *r)
{
	r->local_comm_id = droce_get_be32(b + D(rtu, local_comm_id));
	r->remote_comm_id = droce_get_be32(b + D(rtu, remote_comm_id));
	memcpy(r->private_data, b + D(rtu, private_data), sizeof(r->private_data));
	return DROCE_MAD_OK;
}

static enum droce_mad_result get_dreq(const uint8_t *b, struct droce_cm_dreq *r)
{
	r->local_comm_id = droce_get_be32(b + D(dreq, local_comm_id));
	r->remote_comm_id = droce_get_be32(b + D(dreq, remote_comm_id));
	r->remote_qpn = droce_get_be24(b + D(dreq, remote_qpn));
	memcpy(r->private_data, b + D(dreq, private_data), sizeof(r->private_data));
	return DROCE_MAD_OK;
}

enum droce_mad_result droce_mad_decode(const uint8_t *b, size_t len, struct droce_cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (len < DROCE_MAD_LEN)
		return DROCE_MAD_TRUNCATED;
	/* A UD payload carries exactly one MAD (13.4.1); more is not a MAD
	 * but a malformed datagram, not to be silently truncated. */
	if (len > DROCE_MAD_LEN)
		return DROCE_MAD_TOO_LONG;
	struct droce_mad_hdr *h = &m->hdr;
	h->base_version = b[H(base_version)];
	h->mgmt_class = b[H(mgmt_class)];
	h->class_version = b[H(class_version)];
	h->method = b[H(method)];
	h->status = droce_get_be16(b + H(status));
	h->class_specific = droce_get_be16(b + H(class_specific));
	h->tid = droce_get_be64(b + H(tid));
	h->attr_id = droce_get_be16(b + H(attr_id));
	h->attr_mod = droce_get_be32(b + H(attr_mod));
	if (h->base_version != DROCE_MAD_BASE_VERSION)
		return DROCE_MAD_BAD_BASE_VERSION;
	if (h->mgmt_class != DROCE_MAD_CLASS_CM)
		return DROCE_MAD_NOT_CM;
	if (h->class_version != DROCE_MAD_CM_CLASS_VERSION)
		return DROCE_MAD_BAD_CLASS_VERSION;
	if (h->method != DROCE_MAD_METHOD_SEND)
		return DROCE_MAD_BAD_METHOD;
	if (h->status != 0)
		return DROCE_MAD_BAD_STATUS;
	switch (h->attr_id) {
	case DROCE_CM_ATTR_REQ:
		return get_req(b, &m->u.req);
	case DROCE_CM_ATTR_MRA:
		return get_mra(b, &m->u.mra);
	case DROCE_CM_ATTR_REJ:
		return get_rej(b, &m->u.rej);
	case DROCE_CM_ATTR_REP:
		return get_rep(b, &m->u.rep);
	case DROCE_CM_ATTR_RTU:
		return get_rtu(b, &m->u.rtu);
	case DROCE_CM_ATTR_DREQ:
		return get_dreq(b, &m->u.dreq);
	case DROCE_CM_ATTR_DREP:
		return get_rtu(b, &m->u.drep);
	default:
		return droce_cm_attr_name(h->attr_id) ? DROCE_MAD_UNSUPPORTED_ATTR
						      : DROCE_MAD_UNKNOWN_ATTR;
	}
}

/* ---- encode ---- */

static void put_path(uint8_t *p, const struct droce_cm_path *o)
{
#define P(f) offsetof(struct droce_cm_path_wire, f)
	droce_put_be16(p + P(local_lid), o->local_lid);
	droce_put_be16(p + P(remote_lid), o->remote_lid);
	memcpy(p + P(local_gid), o->local_gid, 16);
	memcpy(p + P(remote_gid), o->remote_gid, 16);
	droce_put_be32(p + P(flow_rate), (o->flow_label & 0xFFFFFu) << 12 | (o->packet_rate & 0x3Fu));
	p[P(traffic_class)] = o->traffic_class;
	p[P(hop_limit)] = o->hop_limit;
	p[P(sl_subnet)] = (uint8_t)((o->sl & 0xF) << 4 | (o->subnet_local ? 1 : 0) << 3);
	p[P(ack_timeout)] = (uint8_t)((o->local_ack_timeout & 0x1F) << 3);
#undef P
}

static void put_req(uint8_t *b, const struct droce_cm_req *r)
{
	droce_put_be32(b + D(req, local_comm_id), r->local_comm_id);
	droce_put_be64(b + D(req, service_id), r->service_id);
	droce_put_be64(b + D(req, local_ca_guid), r->local_ca_guid);
	droce_put_be32(b + D(req, local_qkey), r->local_qkey);
	droce_put_be32(b + D(req, qpn_resp_res), (r->local_qpn & 0xFFFFFFu) << 8 | r->responder_resources);
	droce_put_be32(b + D(req, eecn_init_depth), (r->local_eecn & 0xFFFFFFu) << 8 | r->initiator_depth);
	droce_put_be32(b + D(req, reecn_rto), (r->remote_eecn & 0xFFFFFFu) << 8 |
			       (r->remote_cm_response_timeout & 0x1Fu) << 3 |
			       (r->transport_type & 3u) << 1 | (r->e2e_flow_control ? 1u : 0u));
	droce_put_be32(b + D(req, psn_lto_retry), (r->starting_psn & 0xFFFFFFu) << 8 |
			       (r->local_cm_response_timeout & 0x1Fu) << 3 | (r->retry_count & 7u));
	droce_put_be16(b + D(req, pkey), r->pkey);
	b[D(req, mtu_rdc_rnr)] = (uint8_t)((r->path_mtu & 0xF) << 4 | (r->rdc_exists ? 1 : 0) << 3 |
					   (r->rnr_retry_count & 7));
	b[D(req, maxretry_srq_ext)] = (uint8_t)((r->max_cm_retries & 0xF) << 4 | (r->srq ? 1 : 0) << 3 |
						(r->extended_transport & 7));
	put_path(b + D(req, primary), &r->primary);
	put_path(b + D(req, alternate), &r->alternate);
	memcpy(b + D(req, private_data), r->private_data, sizeof(r->private_data));
}

static void put_mra(uint8_t *b, const struct droce_cm_mra *r)
{
	droce_put_be32(b + D(mra, local_comm_id), r->local_comm_id);
	droce_put_be32(b + D(mra, remote_comm_id), r->remote_comm_id);
	b[D(mra, msg_mraed)] = (uint8_t)((r->msg_mraed & 3) << 6);
	b[D(mra, service_timeout)] = (uint8_t)((r->service_timeout & 0x1F) << 3);
	memcpy(b + D(mra, private_data), r->private_data, sizeof(r->private_data));
}

static void put_rej(uint8_t *b, const struct droce_cm_rej *r)
{
	droce_put_be32(b + D(rej, local_comm_id), r->local_comm_id);
	droce_put_be32(b + D(rej, remote_comm_id), r->remote_comm_id);
	b[D(rej, msg_rejected)] = (uint8_t)((r->msg_rejected & 3) << 6);
	b[D(rej, rej_info_len)] = (uint8_t)((r->rej_info_len & 0x7F) << 1);
	droce_put_be16(b + D(rej, reason), r->reason);
	memcpy(b + D(rej, ari), r->ari, sizeof(r->ari));
	memcpy(b + D(rej, private_data), r->private_data, sizeof(r->private_data));
}

static void put_rep(uint8_t *b, const struct droce_cm_rep *r)
{
	droce_put_be32(b + D(rep, local_comm_id), r->local_comm_id);
	droce_put_be32(b + D(rep, remote_comm_id), r->remote_comm_id);
	droce_put_be32(b + D(rep, local_qkey), r->local_qkey);
	droce_put_be24(b + D(rep, local_qpn), r->local_qpn & 0xFFFFFFu);
	droce_put_be24(b + D(rep, local_eecn), r->local_eecn & 0xFFFFFFu);
	droce_put_be24(b + D(rep, starting_psn), r->starting_psn & 0xFFFFFFu);
	b[D(rep, responder_resources)] = r->responder_resources;
	b[D(rep, initiator_depth)] = r->initiator_depth;
	b[D(rep, tad_fo_e2e)] = (uint8_t)((r->target_ack_delay & 0x1F) << 3 |
					  (r->failover_accepted & 3) << 1 | (r->e2e_flow_control ? 1 : 0));
	b[D(rep, rnr_srq)] = (uint8_t)((r->rnr_retry_count & 7) << 5 | (r->srq ? 1 : 0) << 4);
	droce_put_be64(b + D(rep, local_ca_guid), r->local_ca_guid);
	memcpy(b + D(rep, private_data), r->private_data, sizeof(r->private_data));
}

static void put_rtu(uint8_t *b, const struct droce_cm_rtu *r)
{
	droce_put_be32(b + D(rtu, local_comm_id), r->local_comm_id);
	droce_put_be32(b + D(rtu, remote_comm_id), r->remote_comm_id);
	memcpy(b + D(rtu, private_data), r->private_data, sizeof(r->private_data));
}

static void put_dreq(uint8_t *b, const struct droce_cm_dreq *r)
{
	droce_put_be32(b + D(dreq, local_comm_id), r->local_comm_id);
	droce_put_be32(b + D(dreq, remote_comm_id), r->remote_comm_id);
	droce_put_be24(b + D(dreq, remote_qpn), r->remote_qpn & 0xFFFFFFu);
	memcpy(b + D(dreq, private_data), r->private_data, sizeof(r->private_data));
}

size_t droce_mad_encode(uint8_t *b, size_t cap, const struct droce_cm_msg *m)
{
	const struct droce_mad_hdr *h = &m->hdr;

	if (cap < DROCE_MAD_LEN)
		return 0;
	switch (h->attr_id) {
	case DROCE_CM_ATTR_REQ: case DROCE_CM_ATTR_MRA: case DROCE_CM_ATTR_REJ:
	case DROCE_CM_ATTR_REP: case DROCE_CM_ATTR_RTU: case DROCE_CM_ATTR_DREQ:
	case DROCE_CM_ATTR_DREP:
		break;
	default:
		return 0;
	}
	memset(b, 0, DROCE_MAD_LEN);
	b[H(base_version)] = h->base_version;
	b[H(mgmt_class)] = h->mgmt_class;
	b[H(class_version)] = h->class_version;
	b[H(method)] = h->method;
	droce_put_be16(b + H(status), h->status);
	droce_put_be16(b + H(class_specific), h->class_specific);
	droce_put_be64(b + H(tid), h->tid);
	droce_put_be16(b + H(attr_id), h->attr_id);
	droce_put_be32(b + H(attr_mod), h->attr_mod);
	switch (h->attr_id) {
	case DROCE_CM_ATTR_REQ: put_req(b, &m->u.req); break;
	case DROCE_CM_ATTR_MRA: put_mra(b, &m->u.mra); break;
	case DROCE_CM_ATTR_REJ: put_rej(b, &m->u.rej); break;
	case DROCE_CM_ATTR_REP: put_rep(b, &m->u.rep); break;
	case DROCE_CM_ATTR_RTU: put_rtu(b, &m->u.rtu); break;
	case DROCE_CM_ATTR_DREQ: put_dreq(b, &m->u.dreq); break;
	default: put_rtu(b, &m->u.drep); break;
	}
	return DROCE_MAD_LEN;
}

/* ---- rdma_cm private-data header ---- */

#define C(f) offsetof(struct droce_cma_hdr_wire, f)

static void get_ip(const uint8_t *w, uint8_t ipv, uint8_t *out)
{
	memset(out, 0, 16);
	/* rdma_cm's cma_ip_addr: an IPv4 address is the union's last word */
	if (ipv == 4)
		memcpy(out, w + 12, 4);
	else
		memcpy(out, w, 16);
}

int droce_cma_hdr_decode(const uint8_t *pd, size_t len, struct droce_cma_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (len < DROCE_CMA_HDR_LEN)
		return -EPROTO;
	h->version = pd[C(version)];
	h->ip_version = pd[C(ip_version)] >> 4;
	h->src_port = droce_get_be16(pd + C(src_port));
	if (h->version != DROCE_CMA_VERSION || (h->ip_version != 4 && h->ip_version != 6))
		return -EPROTO;
	get_ip(pd + C(src_ip), h->ip_version, h->src_ip);
	get_ip(pd + C(dst_ip), h->ip_version, h->dst_ip);
	return 0;
}

static void put_ip(uint8_t *w, uint8_t ipv, const uint8_t *in)
{
	memset(w, 0, 16);
	if (ipv == 4)
		memcpy(w + 12, in, 4);
	else
		memcpy(w, in, 16);
}

void droce_cma_hdr_encode(uint8_t *pd, const struct droce_cma_hdr *h)
{
	pd[C(version)] = h->version;
	pd[C(ip_version)] = (uint8_t)(h->ip_version << 4);
	droce_put_be16(pd + C(src_port), h->src_port);
	put_ip(pd + C(src_ip), h->ip_version, h->src_ip);
	put_ip(pd + C(dst_ip), h->ip_version, h->dst_ip);
}
