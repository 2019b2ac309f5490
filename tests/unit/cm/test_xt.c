/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stack/cm/xt.c: droce's transport-mode extension in CM private data
 * (docs/cm.md, "Transport-mode extension"): where it goes, what is read
 * back, what is no extension and what is a malformed one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cm/xt.h"

/* The consumer's bytes stay, the gap is zeroed, the extension is last. */
static void test_put_layout(void **st)
{
	(void)st;
	uint8_t pd[56];
	memset(pd, 0xAA, sizeof(pd));
	assert_int_equal(droce_cm_xt_put(pd, sizeof(pd), 27, 1), 56);
	for (unsigned i = 0; i < 27; i++)
		assert_int_equal(pd[i], 0xAA);
	for (unsigned i = 27; i < 48; i++)
		assert_int_equal(pd[i], 0);
	const uint8_t want[8] = {'D', 'R', 'X', 'T', 1, 1, 0, 0};
	assert_memory_equal(pd + 48, want, 8);
	unsigned m = 9;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 1);
	assert_int_equal(m, 1);
	droce_cm_xt_clear(pd, sizeof(pd));
	for (unsigned i = 27; i < 56; i++)
		assert_int_equal(pd[i], 0);
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 0);
}

/* Consumer data reaching into the last 8 bytes: no offer, nothing written. */
static void test_put_no_room(void **st)
{
	(void)st;
	uint8_t pd[56];
	memset(pd, 0xAA, sizeof(pd));
	assert_int_equal(droce_cm_xt_put(pd, sizeof(pd), 49, 1), 0);
	assert_int_equal(droce_cm_xt_put(pd, sizeof(pd), 48, 1), 56);
	memset(pd, 0xAA, sizeof(pd));
	assert_int_equal(droce_cm_xt_put(pd, 4, 0, 1), 0);
	assert_int_equal(droce_cm_xt_put(pd, sizeof(pd), 0, 3), 0); /* unknown mode */
	for (unsigned i = 0; i < sizeof(pd); i++)
		assert_int_equal(pd[i], 0xAA);
	/* the REP's 196 bytes */
	uint8_t rep[196] = {0};
	assert_int_equal(droce_cm_xt_put(rep, sizeof(rep), 188, 2), 196);
	unsigned m;
	assert_int_equal(droce_cm_xt_get(rep, sizeof(rep), &m), 1);
	assert_int_equal(m, 2);
}

/* What a peer that is not droce leaves there: zeros, or its own bytes. */
static void test_get_absent(void **st)
{
	(void)st;
	uint8_t pd[56] = {0};
	unsigned m = 5;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 0);
	memset(pd, 'D', sizeof(pd));
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 0);
	memcpy(pd + 48, "DRXt", 4); /* one byte off */
	pd[52] = 1;
	pd[53] = 1;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 0);
	assert_int_equal(droce_cm_xt_get(pd, 7, &m), 0);
	assert_int_equal(m, 5);
}

/* The magic with version 0, or version 1 with an unknown mode: -EPROTO;
 * a later version is read with its mode clamped. */
static void test_get_malformed(void **st)
{
	(void)st;
	uint8_t pd[56] = {0};
	unsigned m = 5;
	memcpy(pd + 48, "DRXT", 4);
	pd[52] = 0;
	pd[53] = 1;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), -EPROTO);
	pd[52] = 1;
	pd[53] = 3;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), -EPROTO);
	assert_int_equal(m, 5);
	pd[52] = 2;
	pd[53] = 7;
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 1);
	assert_int_equal(m, DROCE_CM_XT_MODE_MAX);
	pd[53] = 1;
	pd[54] = 0xFF; /* reserved: ignored */
	assert_int_equal(droce_cm_xt_get(pd, sizeof(pd), &m), 1);
	assert_int_equal(m, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_layout),
		cmocka_unit_test(test_put_no_room),
		cmocka_unit_test(test_get_absent),
		cmocka_unit_test(test_get_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
