/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helper for test_cm_tshark.py:
 *   cm_dump decode PCAP   every CM MAD in PCAP (UD SEND_ONLY to QP1) as our
 *                         decoder sees it: "frame N", then one line per field,
 *                         "tshark.field.name VALUE" (integers in decimal,
 *                         IPv4 dotted, byte strings as hex:0011...)
 *   cm_dump write PCAP    fixtures made by our encoder: a REQ over IPv4 and
 *                         one over IPv6, MRA, REJ, REP, RTU, DREQ, DREP, every
 *                         field set to a value that differs from its neighbours
 * Exit 0, 1 when a CM MAD does not decode, 2 on usage or I/O errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "cm/mad.h"
#include "wire/build.h"
#include "wire/opcode.h"
#include "wire/parse.h"

static void pu(const char *name, unsigned long long v)
{
	printf("infiniband.%s %llu\n", name, v);
}

static void pbytes(const char *name, const uint8_t *b, size_t n)
{
	printf("infiniband.%s hex:", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	putchar('\n');
}

static bool v4mapped(const uint8_t *g)
{
	static const uint8_t pfx[12] = { [10] = 0xFF, [11] = 0xFF };
	return memcmp(g, pfx, 12) == 0;
}

static void pgid(const char *pfx, const char *which, const uint8_t *g)
{
	char n[96];
	/* tshark shows an IPv4-mapped GID as the IPv4 address (own field) */
	if (v4mapped(g)) {
		snprintf(n, sizeof(n), "%s%sgid_ipv4", pfx, which);
		printf("infiniband.%s %u.%u.%u.%u\n", n, g[12], g[13], g[14], g[15]);
	} else {
		snprintf(n, sizeof(n), "%s%sgid", pfx, which);
		pbytes(n, g, 16);
	}
}

static void ppath(const char *pfx, const struct droce_cm_path *p, bool primary)
{
	char n[96];
#define F(suffix, v)                                              \
	do {                                                      \
		snprintf(n, sizeof(n), "%s%s", pfx, suffix);      \
		pu(n, v);                                         \
	} while (0)
	F("locallid", p->local_lid);
	F("remotelid", p->remote_lid);
	if (primary) {
		pgid(pfx, "local", p->local_gid);
		pgid(pfx, "remote", p->remote_gid);
	} else {
		/* tshark shows the alternate GIDs as bytes only */
		snprintf(n, sizeof(n), "%slocalgid", pfx);
		pbytes(n, p->local_gid, 16);
		snprintf(n, sizeof(n), "%sremotegid", pfx);
		pbytes(n, p->remote_gid, 16);
	}
	F("flowlabel", p->flow_label);
	F("pktrate", p->packet_rate);
	F("tfcclass", p->traffic_class);
	F("hoplim", p->hop_limit);
	F("sl", p->sl);
	F("subnetlocal", p->subnet_local);
	F("localacktout", p->local_ack_timeout);
#undef F
}

static void dump_req(const struct droce_cm_req *r)
{
	pu("cm.req", r->local_comm_id);
	pu("cm.req.serviceid", r->service_id);
	uint16_t port;
	if (droce_cm_sid_tcp_port(r->service_id, &port)) {
		pu("cm.req.serviceid.protocol", (r->service_id >> 16) & 0xFF);
		pu("cm.req.serviceid.dport", port);
	}
	pu("cm.req.localcaguid", r->local_ca_guid);
	pu("cm.req.localqkey", r->local_qkey);
	pu("cm.req.localqpn", r->local_qpn);
	pu("cm.req.responderres", r->responder_resources);
	pu("cm.req.localeecn", r->local_eecn);
	pu("cm.req.initdepth", r->initiator_depth);
	pu("cm.req.remoteeecn", r->remote_eecn);
	pu("cm.req.remoteresptout", r->remote_cm_response_timeout);
	pu("cm.req.transpsvctype", r->transport_type);
	pu("cm.req.e2eflowctrl", r->e2e_flow_control);
	pu("cm.req.startpsn", r->starting_psn);
	pu("cm.req.localresptout", r->local_cm_response_timeout);
	pu("cm.req.retrcount", r->retry_count);
	pu("cm.req.pkey", r->pkey);
	pu("cm.req.pppmtu", r->path_mtu);
	pu("cm.req.rdcexist", r->rdc_exists);
	pu("cm.req.rnrretrcount", r->rnr_retry_count);
	pu("cm.req.maxcmretr", r->max_cm_retries);
	pu("cm.req.srq", r->srq);
	pu("cm.req.ext_transport", r->extended_transport);
	ppath("cm.req.prim_", &r->primary, true);
	ppath("cm.req.alt_", &r->alternate, false);
	struct droce_cma_hdr h;
	if (droce_cma_hdr_decode(r->private_data, sizeof(r->private_data), &h) == 0) {
		pu("cm.req.ip_cm.majv", h.version >> 4);
		pu("cm.req.ip_cm.minv", h.version & 0xF);
		pu("cm.req.ip_cm.ipv", h.ip_version);
		pu("cm.req.ip_cm.sport", h.src_port);
		if (h.ip_version == 4) {
			printf("infiniband.cm.req.ip_cm.sip4 %u.%u.%u.%u\n", h.src_ip[0], h.src_ip[1],
			       h.src_ip[2], h.src_ip[3]);
			printf("infiniband.cm.req.ip_cm.dip4 %u.%u.%u.%u\n", h.dst_ip[0], h.dst_ip[1],
			       h.dst_ip[2], h.dst_ip[3]);
		} else {
			pbytes("cm.req.ip_cm.sip6", h.src_ip, 16);
			pbytes("cm.req.ip_cm.dip6", h.dst_ip, 16);
		}
		pbytes("cm.req.ip_cm.private", r->private_data + DROCE_CMA_HDR_LEN,
		       DROCE_CMA_REQ_USER_PD_LEN);
	} else {
		pbytes("cm.req.private", r->private_data, sizeof(r->private_data));
	}
}

static int dump_mad(const uint8_t *b, size_t len)
{
	struct droce_cm_msg m;
	enum droce_mad_result r = droce_mad_decode(b, len, &m);
	if (r != DROCE_MAD_OK) {
		printf("error %s\n", droce_mad_result_name(r));
		return 1;
	}
	pu("mad.baseversion", m.hdr.base_version);
	pu("mad.mgmtclass", m.hdr.mgmt_class);
	pu("mad.classversion", m.hdr.class_version);
	pu("mad.method", m.hdr.method);
	pu("mad.status", m.hdr.status);
	pu("mad.classspecific", m.hdr.class_specific);
	pu("mad.transactionid", m.hdr.tid);
	pu("mad.attributeid", m.hdr.attr_id);
	pu("mad.attributemodifier", m.hdr.attr_mod);
	switch (m.hdr.attr_id) {
	case DROCE_CM_ATTR_REQ:
		dump_req(&m.u.req);
		break;
	case DROCE_CM_ATTR_REP: {
		const struct droce_cm_rep *p = &m.u.rep;
		pu("cm.rep", p->local_comm_id);
		pu("cm.rep.remotecommid", p->remote_comm_id);
		pu("cm.rep.localqkey", p->local_qkey);
		pu("cm.rep.localqpn", p->local_qpn);
		pu("cm.rep.localeecn", p->local_eecn);
		pu("cm.rep.startpsn", p->starting_psn);
		pu("cm.rep.respres", p->responder_resources);
		pu("cm.rep.initdepth", p->initiator_depth);
		pu("cm.rep.tgtackdelay", p->target_ack_delay);
		pu("cm.rep.failoveracc", p->failover_accepted);
		pu("cm.rep.e2eflowctrl", p->e2e_flow_control);
		pu("cm.rep.rnrretrcount", p->rnr_retry_count);
		pu("cm.rep.srq", p->srq);
		pu("cm.rep.localcaguid", p->local_ca_guid);
		pbytes("cm.rep.private", p->private_data, sizeof(p->private_data));
		break;
	}
	case DROCE_CM_ATTR_RTU:
		pu("cm.rtu.localcommid", m.u.rtu.local_comm_id);
		pu("cm.rtu.remotecommid", m.u.rtu.remote_comm_id);
		pbytes("cm.rtu.private", m.u.rtu.private_data, sizeof(m.u.rtu.private_data));
		break;
	case DROCE_CM_ATTR_REJ:
		pu("cm.rej.localcommid", m.u.rej.local_comm_id);
		pu("cm.rej.remotecommid", m.u.rej.remote_comm_id);
		pu("cm.rej.msgrej", m.u.rej.msg_rejected);
		pu("cm.rej.rejinfolen", m.u.rej.rej_info_len);
		pu("cm.rej.reason", m.u.rej.reason);
		pbytes("cm.rej.ari", m.u.rej.ari, sizeof(m.u.rej.ari));
		pbytes("cm.rej.private", m.u.rej.private_data, sizeof(m.u.rej.private_data));
		break;
	case DROCE_CM_ATTR_MRA:
		/* tshark 4.0 has no MRA dissector: header only */
		break;
	case DROCE_CM_ATTR_DREQ:
		pu("cm.dreq.localcommid", m.u.dreq.local_comm_id);
		pu("cm.dreq.remotecommid", m.u.dreq.remote_comm_id);
		pu("cm.req.remoteqpneecn", m.u.dreq.remote_qpn);
		pbytes("cm.dreq.private", m.u.dreq.private_data, sizeof(m.u.dreq.private_data));
		break;
	case DROCE_CM_ATTR_DREP:
		pu("cm.drsp.localcommid", m.u.drep.local_comm_id);
		pu("cm.drsp.remotecommid", m.u.drep.remote_comm_id);
		pbytes("cm.drsp.private", m.u.drep.private_data, sizeof(m.u.drep.private_data));
		break;
	}
	return 0;
}

static int decode(const char *file)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(file, err);
	if (!pc) {
		fprintf(stderr, "cm_dump: %s\n", err);
		return 2;
	}
	struct pcap_pkthdr *ph;
	const u_char *data;
	unsigned idx = 0;
	int rc = 0, r;
	while ((r = pcap_next_ex(pc, &ph, &data)) == 1) {
		idx++;
		struct droce_pkt p;
		if (droce_parse(data, ph->caplen, &p, 0) != DROCE_PARSE_OK ||
		    p.h.bth.opcode != DROCE_OP_UD_SEND_ONLY || p.h.bth.dqpn != DROCE_QP1)
			continue;
		printf("frame %u\n", idx);
		rc |= dump_mad(p.payload, p.h.payload_len);
	}
	pcap_close(pc);
	return r == -2 ? rc : 2;
}

/* ---- fixtures ---- */

static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static void fix_path(struct droce_cm_path *p, unsigned k, int ipv)
{
	p->local_lid = (uint16_t)(0x1234 + k);
	p->remote_lid = (uint16_t)(0x4321 + k);
	if (ipv == 4) {
		p->local_gid[10] = p->local_gid[11] = 0xFF;
		p->remote_gid[10] = p->remote_gid[11] = 0xFF;
		uint8_t l[4] = { 198, 18, 0, (uint8_t)(1 + k) }, r[4] = { 198, 18, 0, (uint8_t)(2 + k) };
		memcpy(p->local_gid + 12, l, 4);
		memcpy(p->remote_gid + 12, r, 4);
	} else {
		fill(p->local_gid, 16, (uint8_t)(0x20 + k));
		fill(p->remote_gid, 16, (uint8_t)(0x30 + k));
		p->local_gid[0] = p->remote_gid[0] = 0xFE;
	}
	p->flow_label = 0xABCDE - k;
	p->packet_rate = (uint8_t)(0x2A - k);
	p->traffic_class = (uint8_t)(0x68 + k);
	p->hop_limit = (uint8_t)(0x3F - k);
	p->sl = (uint8_t)(5 + k);
	p->subnet_local = !k;
	p->local_ack_timeout = (uint8_t)(0x13 + k);
}

static void fix_req(struct droce_cm_msg *m, int ipv)
{
	droce_mad_hdr_init(&m->hdr, DROCE_CM_ATTR_REQ, 0x1122334455667788ull);
	struct droce_cm_req *r = &m->u.req;
	r->local_comm_id = 0xA1B2C3D4;
	r->service_id = droce_cm_tcp_service_id(18515);
	r->local_ca_guid = 0x0200C0FFEE000001ull;
	r->local_qkey = 0x0BADCAFE;
	r->local_qpn = 0x00ABCD;
	r->responder_resources = 16;
	r->local_eecn = 0x123456;
	r->initiator_depth = 8;
	r->remote_eecn = 0x654321;
	r->remote_cm_response_timeout = 21;
	r->transport_type = 1;
	r->e2e_flow_control = true;
	r->starting_psn = 0xFEDCBA;
	r->local_cm_response_timeout = 18;
	r->retry_count = 6;
	r->pkey = 0x7FFF;
	r->path_mtu = 5;
	r->rdc_exists = true;
	r->rnr_retry_count = 3;
	r->max_cm_retries = 11;
	r->srq = true;
	r->extended_transport = 5;
	fix_path(&r->primary, 0, ipv);
	fix_path(&r->alternate, 1, ipv);
	struct droce_cma_hdr h = { .version = 0, .ip_version = (uint8_t)ipv, .src_port = 0xC123 };
	if (ipv == 4) {
		uint8_t s[4] = { 198, 18, 0, 1 }, d[4] = { 198, 18, 0, 2 };
		memcpy(h.src_ip, s, 4);
		memcpy(h.dst_ip, d, 4);
	} else {
		memcpy(h.src_ip, r->primary.local_gid, 16);
		memcpy(h.dst_ip, r->primary.remote_gid, 16);
	}
	fill(r->private_data, sizeof(r->private_data), 0x55);
	droce_cma_hdr_encode(r->private_data, &h);
}

static void fixtures(struct droce_cm_msg *m, unsigned n)
{
	memset(m, 0, n * sizeof(*m));
	fix_req(&m[0], 4);
	fix_req(&m[1], 6);
	droce_mad_hdr_init(&m[2].hdr, DROCE_CM_ATTR_MRA, 2);
	m[2].u.mra.local_comm_id = 0x01020304;
	m[2].u.mra.remote_comm_id = 0xA1B2C3D4;
	m[2].u.mra.msg_mraed = DROCE_CM_MSG_REQ;
	m[2].u.mra.service_timeout = 23;
	droce_mad_hdr_init(&m[3].hdr, DROCE_CM_ATTR_REJ, 3);
	m[3].u.rej.local_comm_id = 0x01020304;
	m[3].u.rej.remote_comm_id = 0xA1B2C3D4;
	m[3].u.rej.msg_rejected = DROCE_CM_MSG_REP;
	m[3].u.rej.rej_info_len = 17;
	m[3].u.rej.reason = DROCE_CM_REJ_INVALID_SERVICE_ID;
	fill(m[3].u.rej.ari, sizeof(m[3].u.rej.ari), 0x11);
	fill(m[3].u.rej.private_data, sizeof(m[3].u.rej.private_data), 0x22);
	droce_mad_hdr_init(&m[4].hdr, DROCE_CM_ATTR_REP, 4);
	struct droce_cm_rep *p = &m[4].u.rep;
	p->local_comm_id = 0x01020304;
	p->remote_comm_id = 0xA1B2C3D4;
	p->local_qkey = 0x11112222;
	p->local_qpn = 0x00BEEF;
	p->local_eecn = 0x0C0C0C;
	p->starting_psn = 0x765432;
	p->responder_resources = 4;
	p->initiator_depth = 2;
	p->target_ack_delay = 13;
	p->failover_accepted = 2;
	p->e2e_flow_control = true;
	p->rnr_retry_count = 5;
	p->srq = true;
	p->local_ca_guid = 0x0200C0FFEE000002ull;
	fill(p->private_data, sizeof(p->private_data), 0x33);
	droce_mad_hdr_init(&m[5].hdr, DROCE_CM_ATTR_RTU, 5);
	m[5].u.rtu.local_comm_id = 0xA1B2C3D4;
	m[5].u.rtu.remote_comm_id = 0x01020304;
	fill(m[5].u.rtu.private_data, sizeof(m[5].u.rtu.private_data), 0x44);
	droce_mad_hdr_init(&m[6].hdr, DROCE_CM_ATTR_DREQ, 6);
	m[6].u.dreq.local_comm_id = 0xA1B2C3D4;
	m[6].u.dreq.remote_comm_id = 0x01020304;
	m[6].u.dreq.remote_qpn = 0x00BEEF;
	fill(m[6].u.dreq.private_data, sizeof(m[6].u.dreq.private_data), 0x66);
	droce_mad_hdr_init(&m[7].hdr, DROCE_CM_ATTR_DREP, 7);
	m[7].u.drep.local_comm_id = 0x01020304;
	m[7].u.drep.remote_comm_id = 0xA1B2C3D4;
	fill(m[7].u.drep.private_data, sizeof(m[7].u.drep.private_data), 0x77);
	for (unsigned i = 0; i < n; i++) {
		m[i].hdr.class_specific = (uint16_t)(0x0100 + i);
		m[i].hdr.attr_mod = 0x0A0B0C00u + i;
	}
}

static int write_fixtures(const char *file)
{
	enum { N = 8 };
	static struct droce_cm_msg m[N];
	fixtures(m, N);
	pcap_t *pc = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = pc ? pcap_dump_open(pc, file) : NULL;
	if (!d) {
		fprintf(stderr, "cm_dump: %s: %s\n", file, pc ? pcap_geterr(pc) : "pcap");
		return 2;
	}
	for (unsigned i = 0; i < N; i++) {
		uint8_t mad[DROCE_MAD_LEN], frame[512];
		if (droce_mad_encode(mad, sizeof(mad), &m[i]) != DROCE_MAD_LEN)
			return 2;
		struct droce_hdrs h;
		memset(&h, 0, sizeof(h));
		for (int k = 0; k < 6; k++) {
			h.net.dst_mac[k] = (uint8_t)(0x02 + k);
			h.net.src_mac[k] = (uint8_t)(0x12 + k);
		}
		bool v6 = i == 1;
		h.net.ip_version = v6 ? 6 : 4;
		if (v6) {
			memcpy(h.net.src_ip, m[1].u.req.primary.local_gid, 16);
			memcpy(h.net.dst_ip, m[1].u.req.primary.remote_gid, 16);
		} else {
			uint8_t s[4] = { 198, 18, 0, 1 }, t[4] = { 198, 18, 0, 2 };
			memcpy(h.net.src_ip, s, 4);
			memcpy(h.net.dst_ip, t, 4);
		}
		h.net.ttl = 64;
		h.net.sport = (uint16_t)(0xC000 + i);
		h.bth.opcode = DROCE_OP_UD_SEND_ONLY;
		h.bth.pkey = 0xFFFF;
		h.bth.dqpn = DROCE_QP1;
		h.bth.psn = 100 + i;
		h.ext.deth.qkey = DROCE_QP1_QKEY;
		h.ext.deth.sqpn = DROCE_QP1;
		h.payload_len = DROCE_MAD_LEN;
		size_t n = droce_build_frame(frame, sizeof(frame), &h, mad);
		if (n == 0)
			return 2;
		struct pcap_pkthdr ph = { .ts = { .tv_sec = 1, .tv_usec = (int)i }, .caplen = (bpf_u_int32)n,
					  .len = (bpf_u_int32)n };
		pcap_dump((u_char *)d, &ph, frame);
	}
	pcap_dump_close(d);
	pcap_close(pc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "decode") == 0)
		return decode(argv[2]);
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return write_fixtures(argv[2]);
	fprintf(stderr, "usage: cm_dump decode PCAP | cm_dump write PCAP\n");
	return 2;
}
