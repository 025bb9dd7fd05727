/*
 * jsonscan.c — a strict one-pass JSON parser that builds jansson nodes
 * (jsonscan.h says what it accepts: exactly what tp_json_loadb does), or only
 * checks the text (tp_json_check): the same functions, which then make no node
 * and return CHECKED for one, so both modes accept and refuse alike by
 * construction.
 * Invariants: no byte is read at or past n; every node is attached to its
 * parent as soon as it exists, so a failure frees one tree; every allocation
 * is checked, and a failure refuses the whole text; a check allocates nothing.
 */
#include "jsonscan.h"

#include "jsonreal.h"
#include "utf8.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUE_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */
#define KEY_INLINE 64        /* keys up to this long are copied to the stack (2048 frames deep) */
#define CHECK_KEYS 12        /* the keys one object may have in a check (jsonscan.h) */

/* What a check returns for a value it accepted: never freed, never a node. */
static json_t checked_mark;
#define CHECKED (&checked_mark)

struct scan {
	const unsigned char *s;
	size_t n, i;
	size_t max_depth;
	int deep, spaced, oom;
	int build;        /* make nodes; else check only (tp_json_check) */
	int punt;         /* a check that cannot tell without a tree: see tp_json_check */
	int untidy;       /* a check found a real tp_json_tidy_reals would rewrite */
	const char *what; /* the first problem, or NULL */
	size_t at;
	char *buf; /* a string's bytes when it has escapes (grows to at most n) */
	size_t cap;
};

static json_t *fail(struct scan *p, const char *what)
{
	if (p->what == NULL) {
		p->what = what;
		p->at = p->i;
	}
	return NULL;
}

static json_t *nomem(struct scan *p)
{
	p->oom = 1;
	return fail(p, "out of memory");
}

static void ws(struct scan *p)
{
	size_t i = p->i;
	while (i < p->n &&
	       (p->s[i] == ' ' || p->s[i] == '\t' || p->s[i] == '\n' || p->s[i] == '\r'))
		i++;
	p->spaced |= i != p->i;
	p->i = i;
}

static int hex4(const unsigned char *s, uint32_t *v)
{
	*v = 0;
	for (int k = 0; k < 4; k++) {
		unsigned c = s[k];
		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			*v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			*v |= c - 'A' + 10;
		else
			return 0;
	}
	return 1;
}

/* The string whose opening quote is at p->i: its bytes in *out (len *len),
 * either in the text itself (no escape) or in p->buf. 0, or -1 (p says why). */
static int string(struct scan *p, const char **out, size_t *len)
{
	const unsigned char *s = p->s;
	size_t i = p->i + 1, start = i, o = 0;
	int escaped = 0;

	for (;;) {
		while (i < p->n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
			i++;
		if (i >= p->n) {
			p->i = i;
			fail(p, "premature end of input");
			return -1;
		}
		unsigned char c = s[i];
		if (c == '"')
			break;
		if (c < 0x20) {
			p->i = i;
			fail(p, "control character in a string");
			return -1;
		}
		if (c >= 0x80) {
			size_t k = tp_utf8_seq_len(s + i, p->n - i);
			if (k == 0) {
				p->i = i;
				fail(p, "invalid UTF-8");
				return -1;
			}
			i += k;
			continue;
		}
		/* an escape: from here on the bytes go to p->buf (a check keeps none) */
		if (!escaped && p->build) {
			if (p->cap < p->n) {
				char *b = realloc(p->buf, p->n);
				if (b == NULL) {
					nomem(p);
					return -1;
				}
				p->buf = b, p->cap = p->n;
			}
		}
		escaped = 1;
		if (p->build)
			memcpy(p->buf + o, s + start, i - start);
		o += i - start;
		if (i + 1 >= p->n) {
			p->i = i + 1;
			fail(p, "premature end of input");
			return -1;
		}
		c = s[i + 1];
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at;
		if (c != 'u') {
			if (c == '\0' || (at = strchr(from, c)) == NULL) {
				p->i = i;
				fail(p, "invalid escape");
				return -1;
			}
			if (p->build)
				p->buf[o] = to[at - from];
			o++;
			i += 2;
			start = i;
			continue;
		}
		uint32_t v, v2;
		if (p->n - i < 6 || !hex4(s + i + 2, &v)) {
			p->i = i;
			fail(p, "invalid escape");
			return -1;
		}
		i += 6;
		if (v >= 0xDC00 && v <= 0xDFFF) {
			p->i = i;
			fail(p, "invalid Unicode (a lone low surrogate)");
			return -1;
		}
		if (v >= 0xD800 && v <= 0xDBFF) {
			if (p->n - i < 6 || s[i] != '\\' || s[i + 1] != 'u' ||
			    !hex4(s + i + 2, &v2) || v2 < 0xDC00 || v2 > 0xDFFF) {
				p->i = i;
				fail(p, "invalid Unicode (a high surrogate without a low one)");
				return -1;
			}
			i += 6;
			v = ((v - 0xD800) << 10) + (v2 - 0xDC00) + 0x10000;
		}
		if (p->build)
			o += tp_utf8_put(p->buf + o, v);
		start = i;
	}
	if (escaped && !p->build) {
		*out = NULL, *len = 0; /* checked, not decoded */
	} else if (escaped) {
		memcpy(p->buf + o, s + start, i - start);
		o += i - start;
		*out = p->buf, *len = o;
	} else {
		*out = (const char *)s + start, *len = i - start;
	}
	p->i = i + 1;
	return 0;
}

static int digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static json_t *number(struct scan *p)
{
	const unsigned char *s = p->s;
	size_t i = p->i, start = i;
	int neg = s[i] == '-';

	if (neg)
		i++;
	if (i < p->n && s[i] == '0') {
		i++;
		if (i < p->n && digit(s[i]))
			return fail(p, "invalid number (a leading zero)");
	} else if (i < p->n && digit(s[i])) {
		while (i < p->n && digit(s[i]))
			i++;
	} else {
		return fail(p, "invalid number");
	}
	if (i >= p->n || (s[i] != '.' && s[i] != 'e' && s[i] != 'E')) {
		/* an integer, as strtoll reads it: within 64 bits */
		uint64_t m = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		for (size_t k = start + (size_t)neg; k < i; k++) {
			unsigned d = s[k] - '0';
			if (m > (lim - d) / 10) {
				p->i = i;
				return fail(p, "too big integer");
			}
			m = m * 10 + d;
		}
		p->i = i;
		if (!p->build)
			return CHECKED;
		json_int_t v = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)m)
				   : (json_int_t)m;
		json_t *j = json_integer(v);
		return j != NULL ? j : nomem(p);
	}
	if (s[i] == '.') {
		i++;
		if (i >= p->n || !digit(s[i]))
			return fail(p, "invalid number (no digit after '.')");
		while (i < p->n && digit(s[i]))
			i++;
	}
	if (i < p->n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < p->n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->n || !digit(s[i]))
			return fail(p, "invalid number (no digit in the exponent)");
		while (i < p->n && digit(s[i]))
			i++;
	}
	if (!p->build) { /* a check: is the real tidy, and surely finite? */
		int tidy;
		int finite = tp_json_real_inspect((const char *)s + start, i - start, &tidy);
		p->untidy |= !tidy;
		if (finite) {
			p->i = i;
			return CHECKED;
		}
	}
	/* strtod needs its own NUL-terminated copy */
	char small[64], *tok = i - start < sizeof small ? small : malloc(i - start + 1);
	if (tok == NULL)
		return nomem(p);
	memcpy(tok, s + start, i - start);
	tok[i - start] = '\0';
	errno = 0;
	double d = strtod(tok, NULL);
	int overflow = (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
	if (tok != small)
		free(tok);
	p->i = i;
	if (overflow)
		return fail(p, "real number overflow");
	if (!p->build)
		return CHECKED;
	json_t *j = json_real(d);
	return j != NULL ? j : nomem(p);
}

static int alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* true, false, null: the whole run of letters must be one of them. */
static json_t *literal(struct scan *p)
{
	size_t i = p->i;
	while (i < p->n && alpha(p->s[i]))
		i++;
	size_t len = i - p->i;
	const char *w = (const char *)p->s + p->i;
	int t = len == 4 && memcmp(w, "true", 4) == 0    ? 1
		: len == 5 && memcmp(w, "false", 5) == 0 ? 2
		: len == 4 && memcmp(w, "null", 4) == 0  ? 3
							 : 0;
	if (t == 0)
		return fail(p, "invalid token");
	p->i = i;
	if (!p->build)
		return CHECKED;
	return t == 1 ? json_true() : t == 2 ? json_false() : json_null();
}

static json_t *value(struct scan *p, size_t depth, size_t level);

static json_t *array(struct scan *p, size_t depth, size_t level)
{
	json_t *a = p->build ? json_array() : CHECKED;
	if (a == NULL)
		return nomem(p);
	p->i++; /* '[' */
	ws(p);
	if (p->i < p->n && p->s[p->i] == ']') {
		p->i++;
		return a;
	}
	for (;;) {
		json_t *v = value(p, depth + 1, level);
		if (v == NULL)
			break;
		if (p->build && json_array_append_new(a, v) != 0) {
			nomem(p);
			break;
		}
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == ']') {
			p->i++;
			return a;
		}
		fail(p, "']' expected");
		break;
	}
	if (p->build)
		json_decref(a);
	return NULL;
}

/* An object. A check keeps its keys as slices of the text, at most CHECK_KEYS,
 * none with an escape (else it punts: jsonscan.h), so it finds a duplicate by
 * comparing them, as a tree would by its hashtable. */
static json_t *object(struct scan *p, size_t depth, size_t level)
{
	struct {
		const char *k;
		size_t n;
	} seen[CHECK_KEYS];
	size_t nseen = 0;
	json_t *o = p->build ? json_object() : CHECKED;
	if (o == NULL)
		return nomem(p);
	p->i++; /* '{' */
	ws(p);
	if (p->i < p->n && p->s[p->i] == '}') {
		p->i++;
		return o;
	}
	for (;;) {
		const char *k;
		size_t klen;
		char inl[KEY_INLINE], *key = inl;
		if (p->i >= p->n || p->s[p->i] != '"') {
			fail(p, "string or '}' expected");
			break;
		}
		if (string(p, &k, &klen) != 0)
			break;
		if (!p->build) {
			if (k == NULL || nseen == CHECK_KEYS) {
				p->punt = 1;
				fail(p, "a key a check cannot compare");
				break;
			}
			size_t x = 0;
			while (x < nseen && (seen[x].n != klen || memcmp(seen[x].k, k, klen) != 0))
				x++;
			if (x < nseen) {
				fail(p, "duplicate object key");
				break;
			}
			seen[nseen].k = k, seen[nseen].n = klen, nseen++;
		} else if (json_object_getn(o, k, klen) != NULL) {
			fail(p, "duplicate object key");
			break;
		}
		/* the value's strings may reuse p->buf: keep the key apart */
		if (p->build && klen > sizeof inl && (key = malloc(klen)) == NULL) {
			nomem(p);
			break;
		}
		if (p->build)
			memcpy(key, k, klen);
		ws(p);
		json_t *v = NULL;
		if (p->i >= p->n || p->s[p->i] != ':')
			fail(p, "':' expected");
		else
			p->i++, v = value(p, depth + 1, level);
		int rc = v == NULL  ? -1
			 : p->build ? json_object_setn_new_nocheck(o, key, klen, v)
				    : 0;
		if (v != NULL && rc != 0)
			nomem(p);
		if (key != inl)
			free(key);
		if (rc != 0)
			break;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			ws(p);
			continue;
		}
		if (p->i < p->n && p->s[p->i] == '}') {
			p->i++;
			return o;
		}
		fail(p, "'}' expected");
		break;
	}
	if (p->build)
		json_decref(o);
	return NULL;
}

/* The value at p->i (whitespace first), at depth (the top is 1) inside level
 * containers. */
static json_t *value(struct scan *p, size_t depth, size_t level)
{
	if (depth > MAX_VALUE_DEPTH)
		return fail(p, "maximum parsing depth reached");
	ws(p);
	if (p->i >= p->n)
		return fail(p, "premature end of input");
	unsigned char c = p->s[p->i];
	if (c == '[' || c == '{') {
		if (p->max_depth != 0 && level + 1 > p->max_depth)
			p->deep = 1;
		return c == '[' ? array(p, depth, level + 1) : object(p, depth, level + 1);
	}
	if (c == '"') {
		const char *s;
		size_t len;
		if (string(p, &s, &len) != 0)
			return NULL;
		if (!p->build)
			return CHECKED;
		json_t *j = json_stringn_nocheck(s, len);
		return j != NULL ? j : nomem(p);
	}
	if (c == '-' || digit(c))
		return number(p);
	if (alpha(c))
		return literal(p);
	return fail(p, "invalid token");
}

/* The whole text as one value and nothing after it: the value, CHECKED, or
 * NULL (p says why). */
static json_t *whole(struct scan *p)
{
	json_t *v = value(p, 1, 0);

	if (v != NULL) {
		ws(p);
		if (p->i != p->n) {
			if (p->build)
				json_decref(v);
			v = fail(p, "end of input expected");
		}
	}
	free(p->buf);
	return v;
}

static void refused(const struct scan *p, struct tp_err *err)
{
	if (p->oom)
		tp_err_oom(err, TP_LAYER_HOST);
	else
		tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "%s at byte %zu",
			   p->what ? p->what : "invalid JSON", p->at);
}

json_t *tp_json_scan(const char *s, size_t n, size_t max_depth, struct tp_json_scan_out *out,
		     struct tp_err *err)
{
	struct scan p = {
		.s = (const unsigned char *)s, .n = n, .max_depth = max_depth, .build = 1
	};
	json_t *v = whole(&p);

	if (v == NULL) {
		refused(&p, err);
		return NULL;
	}
	out->deep = p.deep;
	out->compact = !p.spaced;
	out->tidy = 0;
	return v;
}

int tp_json_check(const char *s, size_t n, size_t max_depth, struct tp_json_scan_out *out,
		  struct tp_err *err)
{
	struct scan p = { .s = (const unsigned char *)s, .n = n, .max_depth = max_depth };

	if (whole(&p) == NULL) {
		if (p.punt)
			return -1;
		refused(&p, err);
		return 0;
	}
	out->deep = p.deep;
	out->compact = !p.spaced;
	out->tidy = !p.untidy;
	return 1;
}
