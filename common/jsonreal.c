/*
 * jsonreal.c — the shortest digits of a double, in jansson's notation, and the
 * one pass that rewrites the reals of a JSON text with them (jsonreal.h).
 *
 * The shortest digits: p, the smallest precision in 1 .. 17 at which
 * strtod(snprintf("%.*g", p, d)) == d, found with at most three conversions:
 *   - Any decimal of at most 15 significant digits (DBL_DIG) survives the trip
 *     decimal → double → 15 digits unchanged. So if d rounded to 15 digits reads
 *     back as d, the shortest text is those digits with trailing zeros dropped
 *     (a shorter rounding that read back as d would be a second <= 15-digit
 *     decimal with the same double, and 15 digits would print it).
 *   - If not, no p <= 15 works (the same argument), so p is 16 if 16 digits
 *     read back, else 17 (which always does).
 *   - Both hold for normal doubles only; a subnormal tries every p from 1.
 */
#include "jsonreal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* d's significant digits (trailing zeros dropped) and decimal exponent. */
struct digits {
	char d[20];
	int n;   /* 1 .. 17 */
	int exp; /* d = 0.d[0]d[1]... × 10^(exp + 1) */
};

/* snprintf "%.*e" gives "[-]D.DDDDe[+-]XX": split it into digits and exponent. */
static void split(const char *e, struct digits *out)
{
	const char *p = e;
	int n = 0;

	if (*p == '-')
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			out->d[n++] = *p;
	while (n > 1 && out->d[n - 1] == '0')
		n--;
	out->n = n;
	out->exp = *p == 'e' ? atoi(p + 1) : 0;
}

static void shortest(double d, struct digits *out)
{
	char buf[40];
	/* Subnormals have fewer bits than 15 digits need: DBL_DIG does not hold
	 * there, so every precision is tried (5e-324 is one digit). */
	int prec = fabs(d) < DBL_MIN ? 1 : 15;

	for (; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
		if (prec == 17 || strtod(buf, NULL) == d)
			break;
	}
	split(buf, out);
}

size_t tp_json_real_format(double d, char *buf)
{
	struct digits g;
	char *o = buf;

	if (!isfinite(d)) {
		memcpy(buf, "null", 5);
		return 4;
	}
	if (signbit(d))
		*o++ = '-';
	if (d == 0) {
		memcpy(o, "0.0", 4);
		return (size_t)(o - buf) + 3;
	}
	shortest(d, &g);
	if (g.exp < -4 || g.exp >= 17) { /* as "%.17g" chooses */
		*o++ = g.d[0];
		if (g.n > 1) {
			*o++ = '.';
			memcpy(o, g.d + 1, (size_t)g.n - 1);
			o += g.n - 1;
		}
		o += sprintf(o, "e%d", g.exp);
	} else if (g.exp < 0) { /* 0.000ddd */
		*o++ = '0';
		*o++ = '.';
		for (int i = -1; i > g.exp; i--)
			*o++ = '0';
		memcpy(o, g.d, (size_t)g.n);
		o += g.n;
	} else { /* ddd.ddd, or ddd000.0 */
		int whole = g.exp + 1;
		for (int i = 0; i < whole; i++)
			*o++ = i < g.n ? g.d[i] : '0';
		*o++ = '.';
		if (g.n > whole) {
			memcpy(o, g.d + whole, (size_t)(g.n - whole));
			o += g.n - whole;
		} else {
			*o++ = '0';
		}
	}
	*o = '\0';
	return (size_t)(o - buf);
}

static int number_byte(char c)
{
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

/* The token s[0 .. n) again, if it is a real that can be written shorter or
 * as long: its new length in out, else 0. */
static size_t rewrite(const char *s, size_t n, char *out)
{
	char tok[TP_JSON_REAL_MAX + 8], *end;

	if (n >= sizeof tok ||
	    (memchr(s, '.', n) == NULL && memchr(s, 'e', n) == NULL && memchr(s, 'E', n) == NULL))
		return 0;
	memcpy(tok, s, n);
	tok[n] = '\0';
	double d = strtod(tok, &end);
	if (end != tok + n || !isfinite(d))
		return 0;
	size_t m = tp_json_real_format(d, out);
	return m <= n ? m : 0;
}

size_t tp_json_tidy_reals(char *s, size_t len)
{
	size_t r = 0, w = 0;
	char out[TP_JSON_REAL_MAX + 1];

	while (r < len) {
		char c = s[r];
		if (c == '"') { /* a string, to its closing quote, escapes skipped */
			size_t end = r + 1;
			while (end < len && s[end] != '"')
				end += s[end] == '\\' ? 2 : 1;
			end = end < len ? end + 1 : len;
			if (w != r)
				memmove(s + w, s + r, end - r);
			w += end - r;
			r = end;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t end = r + 1;
			while (end < len && number_byte(s[end]))
				end++;
			size_t m = rewrite(s + r, end - r, out);
			if (m > 0) {
				memcpy(s + w, out, m);
				w += m;
			} else {
				if (w != r)
					memmove(s + w, s + r, end - r);
				w += end - r;
			}
			r = end;
		} else {
			s[w++] = c;
			r++;
		}
	}
	if (w < len)
		s[w] = '\0';
	return w;
}
