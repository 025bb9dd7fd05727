/*
 * test_jsonreal.c — reals without float noise: the shortest digits of chosen
 * doubles (and of random bit patterns, against the brute-force definition: the
 * smallest "%.*g" precision that reads back), the same laid out from those
 * digits alone (tp_json_real_from_digits), jansson's notation kept (a whole
 * number stays a real), and the pass over a JSON text: only numbers outside
 * strings change, integers never, escaped quotes do not end a string.
 */
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "jsonreal.h"
#include "tap.h"

static void fmt(double d, const char *want)
{
	char buf[TP_JSON_REAL_MAX + 1];
	size_t n = tp_json_real_format(d, buf);
	CHECK_EQ_STR(buf, want);
	CHECK_EQ_INT(n, strlen(want));
	if (isfinite(d))
		CHECK(strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d));
}

/* The definition: the smallest p in 1..17 with strtod("%.*g") == d. */
static int brute_digits(double d)
{
	char buf[64];
	for (int p = 1; p < 17; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			return p;
	}
	return 17;
}

static int sig_digits(const char *s)
{
	int n = 0, lead = 1, trail = 0;
	for (; *s && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (lead && *s == '0')
			continue;
		lead = 0;
		n++;
		trail = *s == '0' ? trail + 1 : 0;
	}
	return n - trail;
}

static void property(double d)
{
	char buf[TP_JSON_REAL_MAX + 1];
	if (!isfinite(d) || d == 0)
		return;
	size_t n = tp_json_real_format(d, buf);
	CHECK(n <= TP_JSON_REAL_MAX && strlen(buf) == n);
	CHECK(strtod(buf, NULL) == d);
	int got = sig_digits(buf), want = brute_digits(d);
	if (got != want)
		fprintf(stderr, "FAIL: %.17g as %s: %d digits, shortest is %d\n", d, buf, got,
			want);
	CHECK_EQ_INT(got, want);
	/* The same text from the shortest digits alone, as a dtoa gives them
	 * (pyjson.c): here from "%.*e" at the brute-force precision. */
	char e[64], digits[24];
	size_t nd = 0;
	snprintf(e, sizeof e, "%.*e", want - 1, d);
	const char *q = e + (e[0] == '-');
	for (; *q != 'e'; q++)
		if (*q != '.')
			digits[nd++] = *q;
	char from[TP_JSON_REAL_MAX + 1];
	size_t fn = tp_json_real_from_digits(d < 0, digits, nd, atoi(q + 1) + 1, from);
	CHECK(fn == n && memcmp(from, buf, n) == 0);
	/* Never longer than jansson's own text, which it replaces in place; and the
	 * pass over that text (its fast path reads jansson's digits) writes the same. */
	json_t *r = json_real(d);
	char *j = json_dumps(r, JSON_ENCODE_ANY);
	CHECK(j != NULL && n <= strlen(j));
	if (j != NULL) {
		size_t m = tp_json_tidy_reals(j, strlen(j));
		CHECK(m == n && memcmp(j, buf, n) == 0);
		if (m != n || memcmp(j, buf, n) != 0)
			fprintf(stderr, "FAIL: %.17g: the pass wrote %.*s, not %s\n", d, (int)m, j,
				buf);
	}
	free(j);
	json_decref(r);
}

static void tidy(const char *in, const char *want)
{
	size_t len = strlen(in);
	char *s = malloc(len + 1);
	memcpy(s, in, len + 1);
	size_t n = tp_json_tidy_reals(s, len);
	CHECK_EQ_INT(n, strlen(want));
	CHECK(n <= len && memcmp(s, want, n) == 0);
	if (n != strlen(want) || memcmp(s, want, n) != 0)
		fprintf(stderr, "     tidy(%s) gave %.*s\n", in, (int)n, s);
	free(s);
}

static void dumps(json_t *v, const char *want)
{
	char *s = tp_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	CHECK_EQ_STR(s, want);
	/* It reads back as the same value. */
	json_t *back = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
	CHECK(back != NULL && json_equal(back, v));
	json_decref(back);
	free(s);
	json_decref(v);
}

int main(void)
{
	fmt(0.1, "0.1");
	fmt(0.1 + 0.2, "0.30000000000000004");
	fmt(1e300, "1e300");
	fmt(5e-324, "5e-324");
	fmt(-5e-324, "-5e-324");
	fmt(DBL_MAX, "1.7976931348623157e308");
	fmt(DBL_MIN, "2.2250738585072014e-308");
	fmt(-0.0, "-0.0");
	fmt(0.0, "0.0");
	fmt(3.0, "3.0");
	fmt(-3.0, "-3.0");
	fmt(100.0, "100.0");
	fmt(1e16, "10000000000000000.0"); /* fixed up to 1e17, as "%.17g" */
	fmt(1e17, "1e17");
	fmt(123456789012345680.0, "1.2345678901234568e17");
	fmt(-0.1, "-0.1");
	fmt(-1.5e-7, "-1.5e-7");
	fmt(0.0001, "0.0001");
	fmt(0.00001, "1e-5");
	fmt(20.354, "20.354");
	fmt(0.052772, "0.052772");
	fmt(1.0 / 3, "0.3333333333333333");
	fmt(2.0 / 3, "0.6666666666666666");
	fmt(9007199254740993.0, "9007199254740992.0");
	fmt(0.000123, "0.000123");
	fmt(M_PI, "3.141592653589793");
	fmt(NAN, "null");
	fmt(INFINITY, "null");

	/* Random bit patterns, powers of two, and the subnormal range. */
	srand(14);
	for (int i = 0; i < 50000; i++) {
		uint64_t bits = 0;
		for (int k = 0; k < 4; k++)
			bits = bits << 16 | (uint64_t)(rand() & 0xffff);
		double d;
		memcpy(&d, &bits, sizeof d);
		property(d);
		property((double)rand() / 1000.0);
		property(round((double)rand() / RAND_MAX * 1e6) / 1000); /* a usage time */
	}
	for (int e = -1074; e <= 1023; e++)
		property(ldexp(1, e));
	for (int i = 1; i < 2000; i++)
		property(5e-324 * i);

	/* The pass over a text. */
	tidy("0.10000000000000001", "0.1");
	tidy("[0.10000000000000001,-0.10000000000000001,1,-2,3.0,-0.0]",
	     "[0.1,-0.1,1,-2,3.0,-0.0]");
	tidy("{\"cpu_ms\":20.353999999999999,\"n\":12345678901234567890}",
	     "{\"cpu_ms\":20.354,\"n\":12345678901234567890}");
	tidy("{\"0.10000000000000001\":\"0.10000000000000001\"}",
	     "{\"0.10000000000000001\":\"0.10000000000000001\"}");
	tidy("[\"a\\\"0.10000000000000001\\\\\",0.10000000000000001,\"\\\\\"]",
	     "[\"a\\\"0.10000000000000001\\\\\",0.1,\"\\\\\"]");
	tidy("1.0000000000000001e300", "1e300");
	tidy("1.0000000000000001E300", "1e300");
	tidy("4.9406564584124654e-324", "5e-324");
	tidy("9.9999999999999995e-8", "1e-7");
	tidy("1e5", "1e5");     /* "100000.0" would be longer: left */
	tidy("1e999", "1e999"); /* not finite: left */
	tidy("1.2.3", "1.2.3"); /* not one number: left */
	tidy("-", "-");
	tidy("\"0.10000000000000001", "\"0.10000000000000001"); /* unterminated string */
	tidy("\"\\", "\"\\");
	tidy("", "");
	tidy("[true,null,false,0.5]", "[true,null,false,0.5]");

	/* Through tp_json_dumps: what the host writes. */
	dumps(json_real(0.1), "0.1");
	dumps(json_pack("{s:f, s:f, s:s}", "a", 0.1 + 0.2, "b", 1e300, "c", "0.10000000000000001"),
	      "{\"a\":0.30000000000000004,\"b\":1e300,\"c\":\"0.10000000000000001\"}");
	dumps(json_pack("[f,f,f,I]", -0.0, 3.0, 5e-324, (json_int_t)7), "[-0.0,3.0,5e-324,7]");
	return tp_test_done("test_jsonreal");
}
