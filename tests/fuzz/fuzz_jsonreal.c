/*
 * fuzz_jsonreal.c — the pass over every JSON text tidepool writes
 * (tp_json_tidy_reals) and the formatter behind it: any bytes are rewritten in
 * place without reading or writing outside them, never grow, and a text that is
 * JSON stays the same JSON (every real the same double, integers integers,
 * strings byte for byte). On jansson's own text of that value the pass is
 * idempotent; 8 bytes taken as a double format to text that reads back as it.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_same.h" /* reals bit for bit (json_equal takes -0.0 for 0.0) */
#include "jsonreal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void tidy_json(const char *text, size_t len, const json_t *want)
{
	char *s = malloc(len + 1);
	memcpy(s, text, len);
	size_t n = tp_json_tidy_reals(s, len);
	CHECK(n <= len);
	json_t *got = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	CHECK(got != NULL && json_same(got, want));
	json_decref(got);
	/* Shortest already: a second pass changes nothing. */
	char *again = malloc(n + 1);
	memcpy(again, s, n);
	CHECK(tp_json_tidy_reals(again, n) == n && memcmp(again, s, n) == 0);
	free(again);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Any bytes, in a buffer of exactly their size (no NUL after them). */
	char *s = malloc(size ? size : 1);
	memcpy(s, data, size);
	size_t n = tp_json_tidy_reals(s, size);
	CHECK(n <= size);
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (v != NULL) {
		json_t *w = json_loadb(s, n, JSON_DECODE_ANY, NULL);
		CHECK(w != NULL && json_same(v, w));
		json_decref(w);
		char *j = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (j != NULL)
			tidy_json(j, strlen(j), v);
		free(j);
		json_decref(v);
	}
	free(s);
	/* The first 8 bytes as a double. */
	if (size >= 8) {
		double d;
		char buf[TP_JSON_REAL_MAX + 1];
		memcpy(&d, data, sizeof d);
		size_t m = tp_json_real_format(d, buf);
		CHECK(m <= TP_JSON_REAL_MAX && strlen(buf) == m);
		if (isfinite(d)) {
			double back = strtod(buf, NULL);
			CHECK(back == d && signbit(back) == signbit(d));
		}
	}
	return 0;
}
