/* SPDX-License-Identifier: BSD-3-Clause */
#include "json.h"

#include <assert.h>
#include <inttypes.h>

/* RFC 8259 section 7: quote, backslash and control characters are escaped. */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void put_key(struct droce_json *j, const char *key)
{
	assert(j->depth > 0);
	if (!j->first[j->depth - 1])
		fputc(',', j->f);
	j->first[j->depth - 1] = false;
	put_string(j->f, key);
	fputc(':', j->f);
}

static void open_object(struct droce_json *j)
{
	assert(j->depth < DROCE_JSON_MAX_DEPTH);
	fputc('{', j->f);
	j->first[j->depth++] = true;
}

void droce_json_begin(struct droce_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	open_object(j);
}

void droce_json_end(struct droce_json *j)
{
	assert(j->depth == 1);
	j->depth = 0;
	fputs("}\n", j->f);
}

void droce_json_uint(struct droce_json *j, const char *key, uint64_t v)
{
	put_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void droce_json_bool(struct droce_json *j, const char *key, bool v)
{
	put_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

void droce_json_str(struct droce_json *j, const char *key, const char *s)
{
	put_key(j, key);
	put_string(j->f, s);
}

void droce_json_obj_begin(struct droce_json *j, const char *key)
{
	put_key(j, key);
	open_object(j);
}

void droce_json_obj_end(struct droce_json *j)
{
	assert(j->depth > 1);
	j->depth--;
	fputc('}', j->f);
}
