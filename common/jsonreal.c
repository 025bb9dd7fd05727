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
#include <stdint.h>
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

/* Writes [-]digits in the notation of jsonreal.h; returns the length. */
static size_t layout(int neg, const struct digits *g, char *buf)
{
	char *o = buf;

	if (neg)
		*o++ = '-';
	if (g->exp < -4 || g->exp >= 17) { /* as "%.17g" chooses */
		*o++ = g->d[0];
		if (g->n > 1) {
			*o++ = '.';
			memcpy(o, g->d + 1, (size_t)g->n - 1);
			o += g->n - 1;
		}
		o += sprintf(o, "e%d", g->exp);
	} else if (g->exp < 0) { /* 0.000ddd */
		*o++ = '0';
		*o++ = '.';
		for (int i = -1; i > g->exp; i--)
			*o++ = '0';
		memcpy(o, g->d, (size_t)g->n);
		o += g->n;
	} else { /* ddd.ddd, or ddd000.0 */
		int whole = g->exp + 1;
		for (int i = 0; i < whole; i++)
			*o++ = i < g->n ? g->d[i] : '0';
		*o++ = '.';
		if (g->n > whole) {
			memcpy(o, g->d + whole, (size_t)(g->n - whole));
			o += g->n - whole;
		} else {
			*o++ = '0';
		}
	}
	*o = '\0';
	return (size_t)(o - buf);
}

size_t tp_json_real_format(double d, char *buf)
{
	struct digits g;

	if (!isfinite(d)) {
		memcpy(buf, "null", 5);
		return 4;
	}
	if (d == 0) {
		strcpy(buf, signbit(d) ? "-0.0" : "0.0");
		return strlen(buf);
	}
	shortest(d, &g);
	return layout(signbit(d) != 0, &g, buf);
}

/* ---- the pass ---------------------------------------------------------------------- */

/* A number token's sign, significant digits (trailing zeros dropped) and
 * exponent. 0 when it is not [-]digits[.digits][(e|E)[+-]digits] with 1 .. 17
 * significant digits and a small exponent: the general path takes it then. */
static int token_digits(const char *s, size_t n, int *neg, struct digits *g)
{
	size_t i = 0;
	int intlen = 0, lead = 0, seen = 0, e = 0, esign = 1, edigits = 0;

	*neg = n > 0 && s[0] == '-';
	i = (size_t)*neg;
	g->n = 0;
	for (int frac = 0; i < n; i++) {
		char c = s[i];
		if (c == '.' && !frac) {
			frac = 1;
			continue;
		}
		if (c < '0' || c > '9')
			break;
		if (!frac)
			intlen++;
		if (!seen && c == '0') {
			lead++;
			continue;
		}
		seen = 1;
		if (g->n >= 17 && c != '0')
			return 0;
		if (g->n < (int)sizeof g->d)
			g->d[g->n++] = c;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			esign = s[i++] == '-' ? -1 : 1;
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, edigits++)
			if (edigits < 6)
				e = e * 10 + (s[i] - '0');
		if (edigits == 0 || edigits > 5)
			return 0;
	}
	while (g->n > 0 && g->d[g->n - 1] == '0')
		g->n--;
	if (i != n || !seen || g->n == 0 || g->n > 17)
		return 0;
	g->exp = intlen - lead - 1 + esign * e;
	return 1;
}

/* g rounded half up to q < g->n digits, trailing zeros dropped. */
static void round_to(const struct digits *g, int q, struct digits *out)
{
	*out = *g;
	out->n = q;
	if (g->d[q] >= '5') {
		int i = q - 1;
		while (i >= 0 && out->d[i] == '9')
			out->d[i--] = '0';
		if (i >= 0) {
			out->d[i]++;
		} else { /* 99.9 → 100 */
			out->d[0] = '1';
			out->n = 1;
			out->exp++;
		}
	}
	while (out->n > 1 && out->d[out->n - 1] == '0')
		out->n--;
}

/* The double nearest [-]g; text is the same number as a C string. Exact when
 * the digits fit 2^53 and the power of ten is at most 10^22: both are then
 * doubles, and one multiplication or division rounds once, as strtod does
 * (Clinger's fast path). Else strtod. */
static double value_of(int neg, const struct digits *g, const char *text)
{
#if FLT_EVAL_METHOD == 0
	static const double p10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
				      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	uint64_t m = 0;
	int q = g->exp - (g->n - 1);

	for (int i = 0; i < g->n; i++)
		m = m * 10 + (uint64_t)(g->d[i] - '0');
	if (g->n <= 17 && m <= (uint64_t)1 << 53 && q >= -22 && q <= 22) {
		double v = q >= 0 ? (double)m * p10[q] : (double)m / p10[-q];
		return neg ? -v : v;
	}
#endif
	return strtod(text, NULL);
}

/* The token s[0 .. n) again, if it is a real that can be written shorter or as
 * long: its new length in out, else 0.
 *
 * The fast path reads jansson's "%.17g" digits D instead of printing the double
 * again. Up to 15 digits, D is the shortest (jsonreal.h; no conversion at all).
 * With 16 or 17, D rounded to 15 and then 16 digits are the candidates,
 * each read back (value_of) and compared with D's double. Rounding D is
 * rounding the double itself unless the digits cut off are exactly a half
 * (…5 or …50): that takes the general path, as do subnormal and huge
 * exponents. Whatever the token, what is written reads back as the token's
 * double: a candidate is only taken after that check. */
static size_t rewrite(const char *s, size_t n, char *out)
{
	char tok[TP_JSON_REAL_MAX + 8], *end;
	struct digits g, c;
	int neg;

	if (n >= sizeof tok ||
	    (memchr(s, '.', n) == NULL && memchr(s, 'e', n) == NULL && memchr(s, 'E', n) == NULL))
		return 0;
	memcpy(tok, s, n);
	tok[n] = '\0';
	size_t m;
	if (token_digits(s, n, &neg, &g) && g.exp > -300 && g.exp < 300) {
		if (g.n <= 15) {
			m = layout(neg, &g, out);
			return m <= n ? m : 0;
		}
		double d = value_of(neg, &g, tok);
		int half = g.d[g.n - 1] == '5';
		if (g.n == 16 && half)
			goto general;
		round_to(&g, 15, &c);
		m = layout(neg, &c, out);
		if (value_of(neg, &c, out) == d)
			return m <= n ? m : 0;
		if (g.n == 17) {
			if (half)
				goto general;
			round_to(&g, 16, &c);
			m = layout(neg, &c, out);
			if (value_of(neg, &c, out) == d)
				return m <= n ? m : 0;
		}
		m = layout(neg, &g, out);
		return m <= n ? m : 0;
	}
general:;
	double d = strtod(tok, &end);
	if (end != tok + n || !isfinite(d))
		return 0;
	m = tp_json_real_format(d, out);
	return m <= n ? m : 0;
}

int tp_json_real_inspect(const char *tok, size_t n, int *tidy)
{
	char out[TP_JSON_REAL_MAX + 1];
	struct digits g;
	int neg;
	size_t m = rewrite(tok, n, out);

	*tidy = m == 0 || (m == n && memcmp(out, tok, n) == 0);
	/* Below 10^300 and above 10^-300 in magnitude: no overflow to infinity. */
	return token_digits(tok, n, &neg, &g) && g.exp > -300 && g.exp < 300;
}

size_t tp_json_real_from_digits(int neg, const char *digits, size_t nd, int decpt, char *buf)
{
	struct digits g;

	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (nd == 0 || nd > sizeof g.d)
		return 0;
	memcpy(g.d, digits, nd);
	g.n = (int)nd;
	g.exp = decpt - 1;
	return layout(neg, &g, buf);
}

static int number_byte(char c)
{
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
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
