/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the wire unit tests: a seeded PRNG, random header
 * fields for any opcode, and readers for the shared interop corpus
 * (../shared/pcap-corpus, located through $DROCE_SHARED_DIR, which meson
 * sets; the tests skip when it is absent and never copy from it).
 */
#ifndef DROCE_TEST_WIRE_UTIL_H
#define DROCE_TEST_WIRE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/fields.h"

/** splitmix64: tiny, seedable, good enough to pick test fields. */
struct wt_rng {
	uint64_t s;
};

uint64_t wt_rng_next(struct wt_rng *r);
/** Uniform-ish value in [0, n); n > 0. */
uint32_t wt_rng_below(struct wt_rng *r, uint32_t n);
void wt_rng_fill(struct wt_rng *r, void *buf, size_t len);
/** Seed from $DROCE_TEST_SEED, else @p dflt; printed so a failure can be replayed. */
uint64_t wt_seed(const char *test, uint64_t dflt);

/** Network layer of a built test frame. */
enum wt_l3 { WT_IPV4, WT_IPV6, WT_ROCEV1 };
extern const char *const wt_l3_name[3];

/**
 * Random in-range values for every field of @p h, for @p opcode over @p l3,
 * with or without an 802.1Q tag, and @p payload_len payload bytes. Sets
 * bth.pad to the pad the builder will write and tver to 0, so the struct
 * equals what parsing the built frame gives back.
 */
void wt_random_hdrs(struct wt_rng *r, struct droce_hdrs *h, uint8_t opcode,
		    enum wt_l3 l3, bool vlan, uint32_t payload_len);

/**
 * Build a frame for @p h with @p payload into a new malloc'd buffer of
 * exactly the frame's length. @return the buffer (caller frees), or NULL
 * when the builder refuses; *len is set to the frame length.
 */
uint8_t *wt_build(const struct droce_hdrs *h, const void *payload, size_t *len);

/** Directory of the shared corpus, or NULL (with a message) when absent. */
const char *wt_corpus_dir(void);

/** One frame of the corpus. */
struct wt_frame {
	const char *file;   /**< base name of the pcap, or "icrc-vectors.txt" */
	unsigned index;     /**< 1-based frame number in that file */
	const uint8_t *data;
	size_t len;
};

typedef void (*wt_frame_fn)(const struct wt_frame *f, void *arg);

/**
 * Call @p fn for every frame of every *.pcap in the corpus (sorted by
 * name). @return frames visited, or -1 when the corpus is absent or a file
 * cannot be read (a message is printed).
 */
int wt_corpus_for_each(wt_frame_fn fn, void *arg);

/**
 * Call @p fn for every hex frame of icrc-vectors.txt.
 * @return frames visited, or -1 when absent or malformed.
 */
int wt_vectors_for_each(wt_frame_fn fn, void *arg);

#endif
