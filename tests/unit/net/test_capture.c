/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capture writer (stack/net/diag/capture.c): what it writes reads back with
 * libpcap at nanosecond precision, byte for byte; a zero-copy TX frame is
 * gathered; the size limit and snaplen are honoured and counted. No EAL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <pcap/pcap.h>

#include "net/diag/capture.h"

static void tmp_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/droce-test-capture-%s-%d.pcap", tag, (int)getpid());
}

static void test_roundtrip_nanoseconds(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof(path), "rt");
	struct droce_capture_conf c = {.path = path, .ts_offset_ns = 1000000000ll * 1700000000ll};
	struct droce_capture *cap = droce_capture_open(&c);
	assert_non_null(cap);
	uint8_t a[60], pl1[300], pl2[5], hdr[58];
	for (unsigned i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)i;
	for (unsigned i = 0; i < sizeof(pl1); i++)
		pl1[i] = (uint8_t)(i * 7);
	memset(pl2, 0xab, sizeof(pl2));
	memset(hdr, 0x11, sizeof(hdr));
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_RX, a, sizeof(a), 123456789), 0);
	struct droce_tx_frame f;
	memset(&f, 0, sizeof(f));
	f.hdr = hdr;
	f.hdr_len = sizeof(hdr);
	f.nseg = 2;
	f.seg[0].addr = pl1;
	f.seg[0].len = sizeof(pl1);
	f.seg[1].addr = pl2;
	f.seg[1].len = sizeof(pl2);
	f.payload_len = sizeof(pl1) + sizeof(pl2);
	memcpy(f.trailer, "\x00\x00\x00\xde\xad\xbe\xef", 7);
	f.trailer_len = 7;
	assert_int_equal(droce_capture_write_tx(cap, &f, 2000000001), 0);
	struct droce_capture_stats st;
	assert_int_equal(droce_capture_get_stats(cap, &st), 0);
	assert_int_equal(st.rx_frames, 1);
	assert_int_equal(st.tx_frames, 1);
	assert_int_equal(st.bytes, 24 + 16 + 60 + 16 + 58 + 305 + 7);
	assert_int_equal(droce_capture_close(cap), 0);

	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
	assert_non_null(pc);
	assert_int_equal(pcap_datalink(pc), DLT_EN10MB);
	struct pcap_pkthdr *ph;
	const u_char *d;
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1);
	assert_int_equal(ph->caplen, 60);
	assert_memory_equal(d, a, 60);
	assert_int_equal(ph->ts.tv_sec, 1700000000);
	assert_int_equal(ph->ts.tv_usec, 123456789); /* nanoseconds */
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1);
	assert_int_equal(ph->caplen, 58 + 305 + 7);
	assert_int_equal(ph->ts.tv_sec, 1700000002);
	assert_int_equal(ph->ts.tv_usec, 1);
	assert_memory_equal(d, hdr, 58);
	assert_memory_equal(d + 58, pl1, 300);
	assert_memory_equal(d + 358, pl2, 5);
	assert_memory_equal(d + 363, f.trailer, 7);
	assert_int_equal(pcap_next_ex(pc, &ph, &d), PCAP_ERROR_BREAK);
	pcap_close(pc);
	unlink(path);
}

static void test_size_limit_and_snaplen(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof(path), "lim");
	/* header 24 + two records of 16 + 64 (snaplen) = 184, + 16 + 10 = 210 */
	struct droce_capture_conf c = {.path = path, .max_bytes = 210, .snaplen = 64};
	struct droce_capture *cap = droce_capture_open(&c);
	assert_non_null(cap);
	uint8_t big[1000];
	memset(big, 0x5a, sizeof(big));
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_RX, big, sizeof(big), 0), 0);
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_TX, big, sizeof(big), 1), 0);
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_RX, big, sizeof(big), 2), -ENOSPC);
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_RX, big, 10, 3), 0);
	assert_int_equal(droce_capture_write(cap, DROCE_CAPTURE_RX, big, 10, 3), -ENOSPC);
	struct droce_capture_stats st;
	droce_capture_get_stats(cap, &st);
	assert_int_equal(st.dropped_limit, 2);
	assert_int_equal(st.truncated, 2);
	assert_int_equal(st.bytes, 210);
	assert_int_equal(droce_capture_flush(cap), 0);
	assert_int_equal(droce_capture_close(cap), 0);
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	assert_int_equal(ftell(fp), (long)st.bytes);
	fclose(fp);
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	assert_non_null(pc);
	struct pcap_pkthdr *ph;
	const u_char *d;
	assert_int_equal(pcap_next_ex(pc, &ph, &d), 1);
	assert_int_equal(ph->caplen, 64);
	assert_int_equal(ph->len, 1000);
	pcap_close(pc);
	unlink(path);
}

static void test_open_errors(void **state)
{
	(void)state;
	struct droce_capture_conf c = {.path = "/nonexistent-dir/x.pcap"};
	errno = 0;
	assert_null(droce_capture_open(&c));
	assert_int_equal(errno, ENOENT);
	c.path = NULL;
	assert_null(droce_capture_open(&c));
	assert_int_equal(errno, EINVAL);
	assert_null(droce_capture_open(NULL));
	assert_int_equal(droce_capture_write(NULL, DROCE_CAPTURE_RX, (const uint8_t *)"", 0, 0),
			 -EINVAL);
	assert_int_equal(droce_capture_close(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_nanoseconds),
		cmocka_unit_test(test_size_limit_and_snaplen),
		cmocka_unit_test(test_open_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
