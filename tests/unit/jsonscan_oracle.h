/*
 * jsonscan_oracle.h — the differential oracle of tp_json_scan against
 * tp_json_loadb (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL),
 * shared by tests/unit/test_jsonscan.c (hand-made and random texts) and
 * tests/fuzz/fuzz_jsonscan.c (libFuzzer's). jsonscan_agree(s, n, max_depth)
 * is 1 when both accept with the same tree (types, integer and real bits, key
 * order, U+0000 in keys) and tp_json_scan's deep and compact are what the
 * decoder's own walks say, or both refuse; 2 for jansson's NUL quirk (below);
 * else 0, with the answers in why. tp_json_check must agree with tp_json_scan
 * wherever it answers: accept with the same deep and compact (and, for a
 * compact text, say tidy exactly when tp_json_tidy_reals leaves it as it is),
 * or refuse with the same message.
 */
#ifndef TP_JSONSCAN_ORACLE_H
#define TP_JSONSCAN_ORACLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_same.h"
#include "jsonio.h"
#include "jsonreal.h"
#include "jsonscan.h"

/* The decoder's rule: containers nest at most max levels. */
static int jsonscan_depth_ok(const json_t *v, size_t depth, size_t max)
{
	const char *k;
	size_t i;
	json_t *c;
	if (!json_is_array(v) && !json_is_object(v))
		return 1;
	if (depth >= max)
		return 0;
	if (json_is_array(v)) {
		json_array_foreach(v, i, c) if (!jsonscan_depth_ok(c, depth + 1, max)) return 0;
	} else {
		json_object_foreach((json_t *)v, k,
				    c) if (!jsonscan_depth_ok(c, depth + 1, max)) return 0;
	}
	return 1;
}

static int jsonscan_compact(const char *s, size_t n)
{
	int in = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (in) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in = 0;
		} else if (c == '"') {
			in = 1;
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			return 0;
		}
	}
	return 1;
}

/* A NUL byte outside strings, where jansson's stream takes a NUL it ungot for
 * its end-of-buffer mark and skips it: json_loadb accepts "[4\0]" as [4]. Not
 * JSON; tp_json_scan refuses it (and the decoder with it: those bytes went
 * into replies as they were, a NUL in a client's line). */
static int jsonscan_nul_outside_strings(const char *s, size_t n)
{
	int in = 0;
	for (size_t i = 0; i < n; i++) {
		if (in && s[i] == '\\')
			i++;
		else if (s[i] == '"')
			in = !in;
		else if (!in && s[i] == '\0')
			return 1;
	}
	return 0;
}

/* How often tp_json_check answered each way: [0] refused, [1] accepted, [2]
 * could not tell. */
static unsigned long jsonscan_checks[3];

static int jsonscan_agree(const char *s, size_t n, size_t max_depth, char *why, size_t whylen)
{
	struct tp_err e1 = { 0 }, e2 = { 0 };
	struct tp_json_scan_out out = { 0 };
	json_t *a =
	    tp_json_loadb(s, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e1);
	json_t *b = tp_json_scan(s, n, max_depth, &out, &e2);
	int ok = (a == NULL) == (b == NULL);
	if (ok && a != NULL)
		ok = json_same(a, b) &&
		     out.deep == (max_depth != 0 && !jsonscan_depth_ok(a, 0, max_depth)) &&
		     out.compact == jsonscan_compact(s, n);
	if (!ok && a != NULL && b == NULL && jsonscan_nul_outside_strings(s, n))
		ok = 2;
	/* tp_json_check: as tp_json_scan, without the tree (or it cannot tell) */
	struct tp_err e3 = { 0 };
	struct tp_json_scan_out cout = { -1, -1, -1 };
	int c = tp_json_check(s, n, max_depth, &cout, &e3);
	jsonscan_checks[c < 0 ? 2 : c]++;
	if (c == 1 && (b == NULL || cout.deep != out.deep || cout.compact != out.compact))
		ok = 0;
	if (c == 1 && cout.compact) { /* tidy: what tp_json_tidy_reals would leave as it is */
		char *t = malloc(n + 1);
		if (t != NULL) {
			memcpy(t, s, n);
			size_t m = tp_json_tidy_reals(t, n);
			if (cout.tidy != (m == n && memcmp(t, s, n) == 0))
				ok = 0;
			free(t);
		}
	}
	if (c == 0 && (b != NULL ||
		       (!tp_err_is_oom(&e2) && !tp_err_is_oom(&e3) && strcmp(e2.msg, e3.msg) != 0)))
		ok = 0;
	snprintf(why, whylen, "loadb %s, scan %s, check %s", a ? "accepts" : e1.msg,
		 b ? "accepts" : e2.msg,
		 c == 1  ? "accepts"
		 : c < 0 ? "cannot tell"
			 : e3.msg);
	json_decref(a);
	json_decref(b);
	return ok;
}

#endif
