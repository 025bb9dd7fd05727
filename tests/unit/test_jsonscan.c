/*
 * test_jsonscan.c — tp_json_scan against tp_json_loadb (JSON_DECODE_ANY |
 * JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL), a differential test: for hand-made
 * edge cases and for 300,000 random texts (random values, randomly spaced, then
 * randomly mutated: bytes flipped, dropped, inserted, cut), both accept or
 * both refuse, the trees are the same (types, integer and real bits, key
 * order, U+0000 in keys), and out.deep and out.compact are what the decoder's
 * own walks (depth, whitespace outside strings) say. tp_json_check, the same
 * parser without a tree, answers as tp_json_scan wherever it answers (and its
 * tidy as tp_json_tidy_reals), and answers for most texts.
 */
#include "jsonio.h"
#include "jsonscan.h"
#include "jsonscan_oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(next() % n);
}

static int disagreements, nul_quirks;

static void diff(const char *s, size_t n, size_t max_depth)
{
	char why[3 * TP_ERR_MSG_MAX + 64];
	int ok = jsonscan_agree(s, n, max_depth, why, sizeof why);
	nul_quirks += ok == 2;
	if (!ok && disagreements++ < 5)
		printf("# differ on %zu bytes '%.*s': %s\n", n, (int)(n < 200 ? n : 200), s, why);
}

static void text(const char *s)
{
	diff(s, strlen(s), 3);
}

static void test_cases(void)
{
	static const char *const cases[] = {
		"0",
		"-0",
		"1",
		"-1",
		"01",
		"-01",
		"00",
		"1.",
		".5",
		"1.5",
		"-1.5e3",
		"1e",
		"1e+",
		"1E-2",
		"1.0E+2",
		"2e308",
		"-2e308",
		"1e-400",
		"4.9e-324",
		"9223372036854775807",
		"9223372036854775808",
		"-9223372036854775808",
		"-9223372036854775809",
		"123456789012345678901234567890",
		"1.7976931348623157e308",
		"0.1e1",
		"-",
		"--1",
		"+1",
		"1x",
		"1 2",
		"true",
		"false",
		"null",
		"True",
		"nul",
		"nulll",
		"truex",
		"true1",
		"[true]",
		"\"\"",
		"\"a\"",
		"\"\\u0000\"",
		"\"\\ud83d\\ude00\"",
		"\"\\ud83d\"",
		"\"\\ude00\"",
		"\"\\ud83dx\"",
		"\"\\ud83d\\u0041\"",
		"\"\\uD83D\\uDE00\"",
		"\"\\u00e9\\u20AC\"",
		"\"\\x\"",
		"\"\\u12\"",
		"\"\\u12g4\"",
		"\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
		"\"a\tb\"",
		"\"a\nb\"",
		"\"\x7f\"",
		"\"\xc3\xa9\"",
		"\"\xc3\"",
		"\"\xc0\xaf\"",
		"\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"",
		"\"\xf0\x9f\x98\x80\"",
		"\"\xe2\x82\"",
		"\"abc",
		"\"\\",
		"[]",
		"[ ]",
		"[1,]",
		"[,1]",
		"[1 2]",
		"[1,,2]",
		"[[[]]]",
		"[[[[]]]]",
		"{}",
		"{ }",
		"{\"a\":1}",
		"{\"a\":1,}",
		"{\"a\" 1}",
		"{\"a\":}",
		"{a:1}",
		"{\"a\":1,\"a\":2}",
		"{\"a\":1,\"b\":{\"a\":2}}",
		"{\"\\u0000\":1,\"\\u0000\":2}",
		"{\"a\\u0000\":1,\"a\":2}",
		"{\"\\u0001\":1,\"\\u0000\":2}",
		"{\"\\u0061\":1,\"a\":2}",
		"{\"\":1}",
		"{1:2}",
		"{\"a\":1",
		" [1] ",
		"\t\r\n[1]\n",
		"[1] x",
		"[1]]",
		"",
		" ",
		"\xef\xbb\xbf[1]",
		"[\"\xff\"]",
		"[1]\xff",
		"\xc3\xa9",
		"[-]",
		"[1.5e]",
		"[0.]",
		"{\"x\":[{\"y\":{\"z\":[1]}}]}",
		"{\"k\":\"v\",\"n\":null,\"t\":true,\"f\":false,\"a\":[1,2.5,\"s\"],\"o\":{}}",
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		text(cases[i]);
	/* NUL bytes in the text, outside and inside strings */
	diff("[1]\0", 4, 3);
	diff("\"a\0b\"", 5, 3);
	diff("[\0]", 3, 3);
	/* jansson's quirk: accepted there, refused here */
	struct tp_err e = { 0 };
	struct tp_json_scan_out out;
	json_t *q = tp_json_loadb("[4\0]", 4, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	CHECK(q != NULL && json_integer_value(json_array_get(q, 0)) == 4);
	json_decref(q);
	CHECK(tp_json_scan("[4\0]", 4, 0, &out, &e) == NULL);
	CHECK(strcmp(e.msg, "']' expected at byte 2") == 0);
	/* depth: jansson's 2048 values, and the decoder's max */
	static char deep[2 * 2100 + 8];
	for (int levels = 2046; levels <= 2050; levels++) {
		size_t n = 0;
		for (int k = 0; k < levels; k++)
			deep[n++] = '[';
		deep[n++] = '1';
		for (int k = 0; k < levels; k++)
			deep[n++] = ']';
		diff(deep, n, 0);
		diff(deep, n, 200);
		diff(deep + 1, n - 2, 0); /* one level less, no scalar */
	}
	/* objects as deep, each with a key longer than the stack copy takes */
	static char odeep[2050 * 80 + 8];
	for (int levels = 2047; levels <= 2048; levels++) {
		size_t n = 0;
		for (int k = 0; k < levels; k++)
			n += (size_t)sprintf(odeep + n, "{\"%070d\":", k);
		odeep[n++] = '1';
		for (int k = 0; k < levels; k++)
			odeep[n++] = '}';
		diff(odeep, n, 0);
		diff(odeep, n, 100);
	}
	CHECK_EQ_INT(disagreements, 0);
}

/* ---- random texts ---------------------------------------------------------------- */

struct buf {
	char s[8192];
	size_t n;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n < sizeof b->s) {
		memcpy(b->s + b->n, s, n);
		b->n += n;
	}
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void space(struct buf *b)
{
	static const char *const sp[] = { " ", "\t", "\n", "\r", "  " };
	if (pick(6) == 0)
		puts_(b, sp[pick(5)]);
}

static void gen_string(struct buf *b)
{
	static const char *const parts[] = {
		"a",
		"key",
		"\\\"",
		"\\\\",
		"\\/",
		"\\b",
		"\\f",
		"\\n",
		"\\r",
		"\\t",
		"\\u0000",
		"\\u0001",
		"\\u00e9",
		"\\u20ac",
		"\\ud83d\\ude00",
		"\\uD800\\uDFFF",
		"\xc3\xa9",
		"\xe2\x82\xac",
		"\xf0\x9f\x98\x80",
		"\x7f",
		"/",
		" ",
		"1",
		"\\u0041",
	};
	put(b, "\"", 1);
	for (unsigned k = pick(4); k > 0; k--)
		puts_(b, parts[pick(sizeof parts / sizeof parts[0])]);
	put(b, "\"", 1);
}

static void gen_number(struct buf *b)
{
	static const char *const nums[] = {
		"0",
		"-0",
		"1",
		"-7",
		"42",
		"0.5",
		"-0.0",
		"1e3",
		"1E+3",
		"2.5e-7",
		"1e308",
		"1e309",
		"-1e309",
		"1e-320",
		"1e-400",
		"9223372036854775807",
		"-9223372036854775808",
		"9223372036854775808",
		"0.1",
		"3.14159",
		"100000000000000000000",
		"123.456e78",
	};
	puts_(b, nums[pick(sizeof nums / sizeof nums[0])]);
}

static void gen_value(struct buf *b, int depth)
{
	unsigned k = pick(depth < 4 ? 9 : 6);
	space(b);
	if (k == 0)
		gen_number(b);
	else if (k == 1)
		gen_string(b);
	else if (k == 2)
		puts_(b, pick(3) == 0 ? "true" : pick(2) ? "false" : "null");
	else if (k == 3 || k == 4 || k == 5)
		pick(2) ? gen_number(b) : gen_string(b);
	else if (k == 6 || k == 7) {
		put(b, "[", 1);
		for (unsigned i = 0, n = pick(4); i < n; i++) {
			if (i > 0)
				put(b, ",", 1);
			gen_value(b, depth + 1);
		}
		space(b);
		put(b, "]", 1);
	} else {
		put(b, "{", 1);
		for (unsigned i = 0, n = pick(4); i < n; i++) {
			if (i > 0)
				put(b, ",", 1);
			space(b);
			if (pick(8) == 0)
				puts_(b, "\"k\""); /* duplicates, sometimes */
			else
				gen_string(b);
			space(b);
			put(b, ":", 1);
			gen_value(b, depth + 1);
		}
		space(b);
		put(b, "}", 1);
	}
	space(b);
}

static void mutate(struct buf *b)
{
	static const char special[] = "\"\\{}[],:-+.eE0123456789 \t\n\ru\x01\x7f\xc3\xa9\xed\xff";
	unsigned kind = pick(5);
	if (b->n == 0)
		return;
	size_t at = pick((unsigned)b->n);
	if (kind == 0) { /* flip a byte to a special one */
		b->s[at] = special[pick(sizeof special - 1)];
	} else if (kind == 1) { /* drop a byte */
		memmove(b->s + at, b->s + at + 1, b->n - at - 1);
		b->n--;
	} else if (kind == 2 && b->n + 1 < sizeof b->s) { /* insert one */
		memmove(b->s + at + 1, b->s + at, b->n - at);
		b->s[at] = special[pick(sizeof special - 1)];
		b->n++;
	} else if (kind == 3) { /* cut */
		b->n = at;
	} else { /* a random byte */
		b->s[at] = (char)pick(256);
	}
}

static void test_random(void)
{
	static struct buf b;
	int accepted = 0;
	for (int i = 0; i < 300000; i++) {
		b.n = 0;
		gen_value(&b, 0);
		for (unsigned m = i % 3 == 0 ? 0 : pick(3) + 1; m > 0; m--)
			mutate(&b);
		struct tp_err e = { 0 };
		json_t *v = tp_json_loadb(
		    b.s, b.n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
		accepted += v != NULL;
		json_decref(v);
		diff(b.s, b.n, 1 + pick(4));
	}
	printf("# random: 300000 texts, %d of them JSON; %d with jansson's NUL quirk\n", accepted,
	       nul_quirks);
	printf("# tp_json_check: %lu accepted, %lu refused, %lu could not tell\n",
	       jsonscan_checks[1], jsonscan_checks[0], jsonscan_checks[2]);
	CHECK(accepted > 50000 && accepted < 250000); /* both sides of the line are tried */
	/* the check answers for most texts, both ways */
	CHECK(jsonscan_checks[1] > 50000 && jsonscan_checks[0] > 50000 &&
	      jsonscan_checks[2] < 30000);
	CHECK_EQ_INT(disagreements, 0);
}

/* tp_json_check where it must answer, where it must not, and its tidy. */
static void test_check(void)
{
	static const struct {
		const char *text;
		int rc, compact, tidy;
		const char *msg;
	} cases[] = {
		{ "[{\"id\":1,\"name\":\"a\",\"price\":0.25,\"ok\":true}]", 1, 1, 1, NULL },
		{ "[1.0,2.5e-7,-0.5]", 1, 1, 1, NULL },
		{ "[0.10000000000000001]", 1, 1, 0, NULL }, /* tidied to 0.1 */
		{ "[1e300,1E2]", 1, 1, 1, NULL },           /* both kept (100.0 is longer) */
		{ "[1e300,2.50]", 1, 1, 0, NULL },          /* 2.50 → 2.5 */
		{ "[1e400]", 0, 0, 0, "real number overflow at byte 6" },
		{ "[1e-400]", 1, 1, 0, NULL }, /* an underflow is kept */
		{ "{\"a\":1,\"b\":2,\"a\":3}", 0, 0, 0, "duplicate object key at byte 16" },
		{ "{\"a\":1, \"b\":2}", 1, 0, 1, NULL },
		{ "{\"\\u0061\":1}", -1, 0, 0, NULL }, /* a key with an escape */
		{ "[\"\\u00e9\\n\"]", 1, 1, 1, NULL }, /* a string's escapes are checked */
		{ "[\"\\ud800\"]", 0, 0, 0,
		  "invalid Unicode (a high surrogate without a low one) at byte 8" },
		{ "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":"
		  "9,"
		  "\"k10\":10,\"k11\":11,\"k12\":12}",
		  1, 1, 1, NULL },
		{ "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":"
		  "9,"
		  "\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13}",
		  -1, 0, 0, NULL }, /* a thirteenth key */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tp_json_scan_out out = { -1, -1, -1 };
		struct tp_err e = { 0 };
		int rc = tp_json_check(cases[i].text, strlen(cases[i].text), 0, &out, &e);
		CHECK_EQ_INT(rc, cases[i].rc);
		if (rc == 1) {
			CHECK_EQ_INT(out.compact, cases[i].compact);
			CHECK_EQ_INT(out.tidy, cases[i].tidy);
		}
		if (rc == 0)
			CHECK_EQ_STR(e.msg, cases[i].msg);
		text(cases[i].text); /* and the oracle agrees */
	}
	CHECK_EQ_INT(disagreements, 0);
}

int main(void)
{
	test_check();
	test_cases();
	test_random();
	return tp_test_done("test_jsonscan");
}
