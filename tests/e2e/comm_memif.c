/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_memif: the comm-core execution model over a real DPDK port, two
 * processes. In each, the main thread is the comm core (the only thread
 * that touches the context: droce_comm_poll in a loop) and an application
 * thread on the other core posts work requests and takes completions
 * through its channel's SPSC rings (include/droce/comm.h). The endpoints
 * connect by address over the TCP side channel (stack/net/sidechan/sidechan.h).
 *
 * The client's application thread sends --msgs SEND WITH IMMEDIATE messages
 * of 4000 bytes (jumbo frames, payload attached zero-copy) filled with a
 * pattern keyed by the message number; the server's application thread
 * reposts receives and verifies every byte. Exit 0 only when all arrived
 * intact (server) / all completed successfully and in order (client).
 *
 *   comm_memif server|client SOCKET SC_PORT [MSGS]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_eal.h>

#include <droce/droce.h>

#include "net/port/eal.h"
#include "net/port/port.h"
#include "net/sidechan/sidechan.h"

#define MSG_SIZE 4000u
#define SLOTS 64u

struct app {
	bool server;
	unsigned long msgs;
	struct droce_ctx *ctx;
	struct droce_comm *comm;
	struct droce_cq *cq;
	struct droce_qp *qp;
	struct droce_mr *mr;
	uint8_t *buf;
	_Atomic int done;
	_Atomic unsigned long ok, bad;
	uint64_t deadline;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t byte_of(uint64_t msg, unsigned off)
{
	return (uint8_t)(msg * 131u + off * 7u + 1u);
}

static int die(const char *what, int err)
{
	fprintf(stderr, "comm_memif: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static void repost(struct app *a, struct droce_chan *ch, uint64_t slot)
{
	struct droce_sge sge = {(uint64_t)(uintptr_t)(a->buf + slot * MSG_SIZE), MSG_SIZE,
				a->mr->lkey};
	struct droce_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1};
	while (droce_chan_post_recv(ch, a->qp, &wr) == -EAGAIN && now_ns() < a->deadline)
		;
}

/* The application thread: never touches the context, only its channel. */
static void *app_thread(void *arg)
{
	struct app *a = arg;
	struct droce_chan *ch = droce_comm_chan(a->comm, 0);
	uint64_t posted = 0, done = 0;
	while (done < a->msgs && now_ns() < a->deadline) {
		if (!a->server && posted < a->msgs && posted - done < SLOTS) {
			uint64_t slot = posted % SLOTS;
			uint8_t *d = a->buf + slot * MSG_SIZE;
			for (unsigned o = 0; o < MSG_SIZE; o++)
				d[o] = byte_of(posted, o);
			struct droce_sge sge = {(uint64_t)(uintptr_t)d, MSG_SIZE, a->mr->lkey};
			struct droce_send_wr wr = {.wr_id = posted, .sg_list = &sge, .num_sge = 1,
						   .opcode = DROCE_WR_SEND_WITH_IMM,
						   .imm_data = (uint32_t)posted,
						   .send_flags = DROCE_SEND_SIGNALED};
			if (droce_chan_post_send(ch, a->qp, &wr) == 0)
				posted++;
		}
		struct droce_wc wc[16];
		int n = droce_chan_poll_cq(ch, 16, wc);
		for (int k = 0; k < n; k++) {
			bool good = wc[k].status == DROCE_WC_SUCCESS;
			if (a->server) {
				const uint8_t *d = a->buf + wc[k].wr_id * MSG_SIZE;
				good = good && wc[k].byte_len == MSG_SIZE &&
				       (wc[k].wc_flags & DROCE_WC_WITH_IMM);
				for (unsigned o = 0; good && o < MSG_SIZE; o++)
					good = d[o] == byte_of(wc[k].imm_data, o);
				repost(a, ch, wc[k].wr_id);
			} else {
				good = good && wc[k].wr_id == done; /* in order */
			}
			if (!good && atomic_load(&a->bad) == 0)
				fprintf(stderr, "comm_memif: completion %lu: status %s\n",
					(unsigned long)done, droce_wc_status_str(wc[k].status));
			atomic_fetch_add(good ? &a->ok : &a->bad, 1);
			done++;
		}
	}
	atomic_store(&a->done, 1);
	return NULL;
}

static int connect_qp(struct app *a, const struct droce_sc_info *peer, uint32_t my_psn)
{
	struct droce_qp_attr at = {0};
	at.qp_state = DROCE_QPS_INIT;
	at.qp_access_flags = DROCE_ACCESS_REMOTE_WRITE;
	at.pkey = DROCE_DEFAULT_PKEY;
	int rc = droce_modify_qp(a->qp, &at, DROCE_QP_STATE | DROCE_QP_ACCESS_FLAGS | DROCE_QP_PKEY);
	if (rc != 0)
		return rc;
	if (a->server) /* receives before READY: the peer may send at once */
		for (uint64_t s = 0; s < SLOTS; s++) {
			struct droce_sge sge = {(uint64_t)(uintptr_t)(a->buf + s * MSG_SIZE), MSG_SIZE,
						a->mr->lkey};
			struct droce_recv_wr wr = {.wr_id = s, .sg_list = &sge, .num_sge = 1};
			struct droce_recv_wr *bad;
			if ((rc = droce_post_recv(a->qp, &wr, &bad)) != 0)
				return rc;
		}
	memset(&at, 0, sizeof(at));
	at.qp_state = DROCE_QPS_RTR;
	at.path_mtu = DROCE_MTU_4096;
	at.dest_qp_num = peer->qpn;
	at.rq_psn = peer->psn;
	at.max_dest_rd_atomic = 4;
	at.min_rnr_timer = 1;
	at.ah_attr.ip_version = peer->ip_version;
	memcpy(at.ah_attr.dst_ip, peer->ip, 16);
	memcpy(at.ah_attr.dst_mac, peer->mac, 6);
	at.ah_attr.ttl = 64;
	rc = droce_modify_qp(a->qp, &at, DROCE_QP_STATE | DROCE_QP_AV | DROCE_QP_PATH_MTU |
				      DROCE_QP_DEST_QPN | DROCE_QP_RQ_PSN |
				      DROCE_QP_MAX_DEST_RD_ATOMIC | DROCE_QP_MIN_RNR_TIMER);
	if (rc != 0)
		return rc;
	memset(&at, 0, sizeof(at));
	at.qp_state = DROCE_QPS_RTS;
	at.sq_psn = my_psn;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 4;
	return droce_modify_qp(a->qp, &at, DROCE_QP_STATE | DROCE_QP_SQ_PSN | DROCE_QP_TIMEOUT |
					   DROCE_QP_RETRY_CNT | DROCE_QP_RNR_RETRY |
					   DROCE_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
		fprintf(stderr, "usage: comm_memif server|client SOCKET SC_PORT [MSGS]\n");
		return 2;
	}
	struct app *a = calloc(1, sizeof(*a));
	a->server = strcmp(argv[1], "server") == 0;
	uint16_t sc_port = (uint16_t)atoi(argv[3]);
	a->msgs = argc > 4 ? strtoul(argv[4], NULL, 0) : 20000;
	char memif[512];
	snprintf(memif, sizeof(memif), "%s,socket=%s", argv[1], argv[2]);
	struct droce_eal_opts eo = {.memif = memif};
	int rc = droce_eal_init(argv[0], 0, NULL, &eo);
	if (rc != 0)
		return die("EAL", rc);

	struct droce_port_conf pc;
	droce_port_conf_init(&pc);
	uint8_t my_ip[4] = {10, 77, 0, a->server ? 1 : 2};
	memcpy(pc.ip, my_ip, 4);
	struct droce_port *port = droce_port_open(&pc);
	if (port == NULL)
		return die("port", errno);
	struct droce_port_info info;
	droce_port_get_info(port, &info);
	struct rte_eth_link link = {0};
	for (uint64_t t = now_ns() + 5000000000ull; now_ns() < t;)
		if (rte_eth_link_get_nowait(info.port_id, &link) == 0 && link.link_status)
			break;

	struct droce_ctx_params cp;
	droce_ctx_params_init(&cp);
	cp.ip_version = 4;
	memcpy(cp.ip, my_ip, 4);
	memcpy(cp.mac, info.mac, 6);
	cp.link = droce_port_link(port);
	a->ctx = droce_ctx_create(&cp);
	if (a->ctx == NULL)
		return die("context", errno);
	a->cq = droce_create_cq(a->ctx, 4096);
	a->buf = calloc(SLOTS, MSG_SIZE);
	a->mr = droce_reg_mr(a->ctx, a->buf, SLOTS * MSG_SIZE,
			     DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE);
	struct droce_qp_init_attr ia = {.send_cq = a->cq, .recv_cq = a->cq,
					.cap = {.max_send_wr = SLOTS, .max_recv_wr = SLOTS,
						.max_send_sge = 1, .max_recv_sge = 1}};
	a->qp = a->cq && a->mr ? droce_create_qp(a->ctx, &ia) : NULL;
	a->comm = a->qp ? droce_comm_create(a->ctx, 1, 256) : NULL;
	if (a->comm == NULL || droce_comm_bind_cq(a->comm, a->cq, droce_comm_chan(a->comm, 0)) != 0)
		return die("verbs objects", errno ? errno : EINVAL);

	/* Connect by address over the side channel. */
	struct droce_sc sc;
	droce_sc_init(&sc, 10000);
	rc = a->server ? droce_sc_listen(&sc, "127.0.0.1", sc_port) : 0;
	if (rc == 0)
		rc = a->server ? droce_sc_accept(&sc) : droce_sc_connect(&sc, "127.0.0.1", sc_port);
	struct droce_sc_info me = {0}, peer;
	me.qpn = droce_qp_num(a->qp);
	me.psn = a->server ? 0x100 : 0x200;
	me.ip_version = 4;
	memcpy(me.ip, my_ip, 4);
	memcpy(me.mac, info.mac, 6);
	me.mtu = 4096;
	if (rc == 0)
		rc = droce_sc_exchange(&sc, &me, &peer);
	if (rc != 0) {
		fprintf(stderr, "comm_memif: side channel: %s\n", sc.err);
		return 1;
	}
	rc = connect_qp(a, &peer, me.psn);
	if (droce_sc_ready(&sc, rc) != 0 || rc != 0) {
		fprintf(stderr, "comm_memif: connect: %s (%s)\n", strerror(-rc), sc.err);
		return 1;
	}
	droce_sc_close(&sc);

	/* The application thread on the other core; this thread is the comm core. */
	a->deadline = now_ns() + 30000000000ull;
	pthread_t t;
	if (pthread_create(&t, NULL, app_thread, a) != 0)
		return die("thread", errno);
	uint64_t linger = 0;
	for (;;) {
		uint64_t now = now_ns();
		droce_comm_poll(a->comm, now);
		if (linger == 0 && atomic_load(&a->done))
			linger = now + 100000000ull; /* let the last ACKs out */
		if (linger != 0 && now >= linger)
			break;
	}
	pthread_join(t, NULL);
	/* Stop polling before the peer leaves: a memif peer that disconnects
	 * while we poll can crash DPDK 22.11's memif. */
	struct timespec nap = {0, 300000000};
	nanosleep(&nap, NULL);
	unsigned long ok = atomic_load(&a->ok), bad = atomic_load(&a->bad);
	struct droce_port_stats st;
	droce_port_get_stats(port, &st);
	printf("%s: %lu of %lu messages ok, %lu bad; port tx %lu (zero-copy %lu), rx roce %lu\n",
	       a->server ? "server" : "client", ok, a->msgs, bad, (unsigned long)st.tx_frames,
	       (unsigned long)st.tx_zc_frames, (unsigned long)st.rx_roce);
	droce_comm_destroy(a->comm);
	droce_ctx_destroy(a->ctx);
	droce_port_close(port);
	/* No rte_eal_cleanup(): in DPDK 22.11 it races the EAL interrupt thread
	 * (docs/usage.md, DPDK 22.11 quirks); the kernel frees all at exit. */
	free(a->buf);
	int result = ok == a->msgs && bad == 0 ? 0 : 1;
	free(a);
	return result;
}
