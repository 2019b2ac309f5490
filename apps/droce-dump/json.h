/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A minimal streaming JSON writer for droce-dump: one compact object per
 * line, keys in the order the caller writes them, integers printed exactly
 * (64-bit values are JSON integers, never floats or strings).
 */
#ifndef DROCE_DUMP_JSON_H
#define DROCE_DUMP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Nesting depth droce-dump needs: the frame object plus one sub-object. */
#define DROCE_JSON_MAX_DEPTH 4

/** Writer state; all output goes to @c f. */
struct droce_json {
	FILE *f;
	unsigned depth;                       /**< open objects */
	bool first[DROCE_JSON_MAX_DEPTH];     /**< no member written yet at this depth */
};

/** Open the top-level object ("{") on @p f. */
void droce_json_begin(struct droce_json *j, FILE *f);
/** Close the top-level object and end the line ("}\n"). */
void droce_json_end(struct droce_json *j);
/** Member "key": unsigned integer. */
void droce_json_uint(struct droce_json *j, const char *key, uint64_t v);
/** Member "key": true / false. */
void droce_json_bool(struct droce_json *j, const char *key, bool v);
/** Member "key": string, escaped per RFC 8259. */
void droce_json_str(struct droce_json *j, const char *key, const char *s);
/** Member "key": { ... ; close it with droce_json_obj_end(). Deeper than
 * DROCE_JSON_MAX_DEPTH is a programming error (asserted). */
void droce_json_obj_begin(struct droce_json *j, const char *key);
/** Close the object opened by droce_json_obj_begin(). */
void droce_json_obj_end(struct droce_json *j);

#endif
