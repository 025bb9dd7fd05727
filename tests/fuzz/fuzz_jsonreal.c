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

#include "jsonreal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* jansson compares reals with ==: -0.0 and 0.0 are equal to it, not to us. */
static int same(const json_t *a, const json_t *b)
{
	if (json_is_real(a) && json_is_real(b))
		return json_real_value(a) == json_real_value(b) &&
		       signbit(json_real_value(a)) == signbit(json_real_value(b));
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k, v)
		{
			json_t *w = json_object_get(b, k);
			if (w == NULL || !same(v, w))
				return 0;
		}
		return 1;
	}
	return json_equal(a, b);
}

static void tidy_json(const char *text, size_t len, const json_t *want)
{
	char *s = malloc(len + 1);
	memcpy(s, text, len);
	size_t n = tp_json_tidy_reals(s, len);
	CHECK(n <= len);
	json_t *got = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	CHECK(got != NULL && same(got, want));
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
		CHECK(w != NULL && same(v, w));
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
