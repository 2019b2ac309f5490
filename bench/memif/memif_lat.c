/*
 * droce-bench-memif-lat: the round trip of the bare memif link, no RoCE.
 *
 * Two processes, one DPDK memif port each, one poll thread each on its own
 * CPU: the client sends one Ethernet frame, the server sends the same mbuf
 * straight back, the client times the round trip with the TSC. The figure is
 * the floor under any protocol on this link: droce-perf write_lat (RTT/2 of
 * an 8-byte RDMA WRITE, an 82-byte frame each way) adds to it only droce's own
 * work, so bench/compare.py prints both side by side and the difference is
 * what droce costs.
 *
 *   droce-bench-memif-lat server SOCKET CPU
 *   droce-bench-memif-lat client SOCKET CPU [-n ITERS] [-s FRAME_BYTES] [-w WARMUP]
 *
 * The client prints one line: iterations, min/typical(median)/avg/p99 of
 * RTT/2 in microseconds, as droce-perf's latency table counts them. Both
 * processes exit by themselves: the server on the client's "done" frame or
 * after 20 s without a frame; the client after its iterations, or after
 * 10 s without an answer (exit status 1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define ETHERTYPE_BENCH 0x88B5 /* IEEE 802 local experimental */
#define SEQ_DONE UINT32_MAX
#define RING 256

struct ping {
	uint8_t dst[6], src[6];
	uint16_t type;
	uint32_t seq;
} __attribute__((packed));

static int port_up(uint16_t port, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) ||
	    rte_eth_rx_queue_setup(port, 0, RING, rte_socket_id(), NULL, mp) ||
	    rte_eth_tx_queue_setup(port, 0, RING, rte_socket_id(), NULL) ||
	    rte_eth_dev_start(port))
		return -1;
	/* memif connects over its socket once both ends are started */
	uint64_t end = rte_get_tsc_cycles() + 10 * rte_get_tsc_hz();
	do {
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(port, &link);
		if (link.link_status)
			return 0;
		rte_delay_ms(10);
	} while (rte_get_tsc_cycles() < end);
	fprintf(stderr, "memif-lat: link did not come up in 10 s\n");
	return -1;
}

static struct rte_mbuf *make(struct rte_mempool *mp, uint32_t seq, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	if (!m)
		return NULL;
	char *d = rte_pktmbuf_append(m, len);
	if (!d) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(d, 0, len);
	struct ping *p = (struct ping *)d;
	memset(p->dst, 0xff, 6);
	p->src[0] = 0x02;
	p->type = rte_cpu_to_be_16(ETHERTYPE_BENCH);
	p->seq = seq;
	return m;
}

static int send1(uint16_t port, struct rte_mbuf *m)
{
	for (int i = 0; i < 1000000; i++)
		if (rte_eth_tx_burst(port, 0, &m, 1) == 1)
			return 0;
	rte_pktmbuf_free(m);
	return -1;
}

static int serve(uint16_t port)
{
	struct rte_mbuf *b[32];
	uint64_t hz = rte_get_tsc_hz(), last = rte_get_tsc_cycles();

	for (;;) {
		uint16_t n = rte_eth_rx_burst(port, 0, b, 32);
		uint64_t now = rte_get_tsc_cycles();
		if (!n) {
			if (now - last > 20 * hz) {
				fprintf(stderr, "memif-lat server: nothing for 20 s, leaving\n");
				return 1;
			}
			continue;
		}
		last = now;
		for (uint16_t i = 0; i < n; i++) {
			const struct ping *p = rte_pktmbuf_mtod(b[i], const struct ping *);
			bool done = b[i]->data_len >= sizeof(*p) && p->seq == SEQ_DONE;
			if (done) {
				rte_pktmbuf_free_bulk(b + i, n - i);
				return 0;
			}
			if (send1(port, b[i]))
				return 1;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The client's round trip by stage (-t 1), the bare link's side of
 * droce-perf's poll-stage trace (include/droce/trace.h): cycles building
 * the frame (before the RTT's clock starts), in the TX burst, in RX bursts that brought frames (with their
 * free), in RX bursts that found nothing. Off by default: each mark is a
 * TSC read, which the plain figure should not carry. */
enum { ST_BUILD, ST_TX, ST_RX, ST_IDLE, ST_N };
static const char *const st_name[ST_N] = {"build", "link_tx", "link_rx", "idle"};

static int client(uint16_t port, struct rte_mempool *mp, uint32_t iters, uint32_t warm,
		  uint16_t len, bool stages)
{
	uint64_t st[ST_N] = {0};
	uint64_t *s = calloc(iters, sizeof(*s));
	uint64_t hz = rte_get_tsc_hz();
	struct rte_mbuf *b[32];
	int rc = 0;

	if (!s)
		return 1;
	for (uint32_t i = 0; i < warm + iters; i++) {
		/* the frame is built before the clock starts (the RTT is the
		 * link's); -t 1 times the build apart */
		uint64_t tb = stages ? rte_get_tsc_cycles() : 0;
		struct rte_mbuf *m = make(mp, i, len);
		uint64_t t0 = rte_get_tsc_cycles(), resend = t0 + hz / 10;
		if (!m || send1(port, m)) {
			fprintf(stderr, "memif-lat client: cannot send\n");
			rc = 1;
			break;
		}
		bool got = false;
		uint64_t mark = stages ? rte_get_tsc_cycles() : 0;
		if (stages && i >= warm) {
			st[ST_BUILD] += t0 - tb;
			st[ST_TX] += mark - t0;
		}
		while (!got) {
			uint16_t n = rte_eth_rx_burst(port, 0, b, 32);
			uint64_t now = rte_get_tsc_cycles();
			for (uint16_t k = 0; k < n; k++) {
				const struct ping *p = rte_pktmbuf_mtod(b[k], const struct ping *);
				got |= b[k]->data_len >= sizeof(*p) && p->seq == i;
			}
			if (n)
				rte_pktmbuf_free_bulk(b, n);
			if (stages) {
				uint64_t t = n ? rte_get_tsc_cycles() : now;
				if (i >= warm)
					st[n ? ST_RX : ST_IDLE] += t - mark;
				mark = t;
			}
			if (got) {
				if (i >= warm)
					s[i - warm] = now - t0;
				break;
			}
			if (now - t0 > 10 * hz) {
				fprintf(stderr, "memif-lat client: no answer to frame %u in 10 s\n", i);
				rc = 1;
				goto out;
			}
			if (now > resend) { /* a frame lost at start-up: ask again */
				m = make(mp, i, len);
				if (m)
					send1(port, m);
				resend = now + hz / 10;
			}
		}
	}
	qsort(s, iters, sizeof(*s), cmp_u64);
	double sum = 0, us = 1e6 / (double)hz / 2; /* RTT/2 */
	for (uint32_t i = 0; i < iters; i++)
		sum += (double)s[i];
	printf("memif ping-pong, %u-byte frames, %u iterations: RTT/2 us min %.2f typical %.2f "
	       "avg %.2f p99 %.2f\n",
	       len, iters, s[0] * us, s[iters / 2] * us, sum / iters * us,
	       s[(uint64_t)iters * 99 / 100] * us);
	if (stages) {
		printf("stages, client, ns per round trip:");
		for (int k = 0; k < ST_N; k++)
			printf(" %s %.1f", st_name[k], (double)st[k] * 1e9 / (double)hz / iters);
		printf("\n");
	}
out:
	for (int k = 0; k < 3; k++) {
		struct rte_mbuf *m = make(mp, SEQ_DONE, len);
		if (m)
			send1(port, m);
	}
	rte_delay_ms(50); /* let the done frames leave before the port stops */
	free(s);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: droce-bench-memif-lat server|client SOCKET CPU "
			"[-n ITERS] [-s FRAME_BYTES] [-w WARMUP] [-t 1: time per stage]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint32_t iters = 100000, warm = 2000;
	bool stages = false;
	unsigned len = 82; /* an 8-byte RDMA WRITE over IPv4 with its ICRC */

	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		usage();
	const char *role = argv[1], *sock = argv[2], *cpu = argv[3];
	for (int i = 4; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			iters = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "-s"))
			len = (unsigned)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "-w"))
			warm = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "-t"))
			stages = strtoul(argv[i + 1], NULL, 0) != 0;
		else
			usage();
	}
	if (!iters || len < sizeof(struct ping) || len > 2000)
		usage();

	char vdev[512], prefix[64];
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,socket=%s,bsize=2048", role, sock);
	snprintf(prefix, sizeof(prefix), "--file-prefix=mlat%d", (int)getpid());
	char *eal[] = {argv[0], "-l", (char *)cpu, "--no-huge", "-m", "256", "--no-pci",
		       prefix, vdev, "--log-level=5"};
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "memif-lat: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	struct rte_mempool *mp = rte_pktmbuf_pool_create("mlat", 4095, 0, 0,
							 RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	uint16_t port = 0;
	if (!mp || !rte_eth_dev_is_valid_port(port) || port_up(port, mp)) {
		fprintf(stderr, "memif-lat: port setup failed\n");
		return 1;
	}
	int rc = strcmp(role, "server") ? client(port, mp, iters, warm, (uint16_t)len, stages)
						: serve(port);
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	return rc;
}
