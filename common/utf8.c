/*
 * utf8.c — the one UTF-8 decoder: stdout/stderr text, returned strings, table
 * keys and error messages all go through it before they become JSON.
 */
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run of bytes from i that JSON writes as they are and that need no
 * UTF-8 decoding: printable ASCII but '"' and '\\'. Its end. */
static size_t plain_run(const unsigned char *p, size_t i, size_t n)
{
	while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
		i++;
	return i;
}

uint64_t tp_utf8_json_bytes(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t b = 2;

	for (size_t i = 0, k; i < n; i += k) {
		size_t j = plain_run(p, i, n);
		b += j - i, i = j;
		if (i == n)
			break;
		k = tp_utf8_seq_len(p + i, n - i);
		if (k == 0)
			b += 3, k = 1;
		else if (p[i] == '"' || p[i] == '\\')
			b += 2;
		else if (p[i] < 0x20)
			b += strchr("\b\f\n\r\t", p[i]) && p[i] ? 2 : 6;
		else
			b += k;
	}
	return b;
}

size_t tp_utf8_put(char *o, uint32_t c)
{
	if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		c = 0xFFFD; /* a surrogate (Python's lone ones) or no code point: not UTF-8 */
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 0x3F));
	o[2] = (char)(0x80 | (c >> 6 & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

size_t tp_utf8_json_put(const char *s, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF", ctl[] = "\b\f\n\r\t", esc[] = "bfnrt";
	const unsigned char *p = (const unsigned char *)s;
	char *o = out;

	*o++ = '"';
	for (size_t i = 0, k; i < n; i += k) {
		size_t j = plain_run(p, i, n);
		memcpy(o, p + i, j - i);
		o += j - i, i = j;
		if (i == n)
			break;
		k = tp_utf8_seq_len(p + i, n - i);
		if (k == 0) {
			memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD */
			o += 3, k = 1;
		} else if (p[i] == '"' || p[i] == '\\') {
			*o++ = '\\', *o++ = (char)p[i];
		} else if (p[i] < 0x20) {
			const char *e = p[i] ? strchr(ctl, p[i]) : NULL;
			*o++ = '\\';
			if (e != NULL) {
				*o++ = esc[e - ctl];
			} else {
				memcpy(o, "u00", 3);
				o[3] = hex[p[i] >> 4], o[4] = hex[p[i] & 15];
				o += 5;
			}
		} else {
			memcpy(o, p + i, k);
			o += k;
		}
	}
	*o++ = '"';
	return (size_t)(o - out);
}

uint64_t tp_json_scalar_bytes(const json_t *v)
{
	char buf[64];
	int n;

	switch (json_typeof(v)) {
	case JSON_STRING: return tp_utf8_json_bytes(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		n = snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return n > 0 ? (uint64_t)n : 0;
	case JSON_REAL: {
		/* As jansson writes it (jsonp_dtostr): "%.17g", ".0" added when that
		 * has no '.' and no 'e', and the exponent without '+' or leading zeros. */
		n = snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
		if (n <= 0 || (size_t)n >= sizeof buf)
			return 0;
		const char *e = strchr(buf, 'e');
		if (e == NULL)
			return (uint64_t)n + (strchr(buf, '.') == NULL ? 2 : 0);
		const char *d = e + 1, *end;
		if (*d == '-')
			d++;
		end = e + 2; /* past the sign jansson keeps or drops */
		while (*end == '0')
			end++;
		return (uint64_t)n - (uint64_t)(end - d);
	}
	case JSON_TRUE:
	case JSON_NULL: return 4;
	case JSON_FALSE: return 5;
	default: return json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	}
}

size_t tp_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, cp = c & 0x1F, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		len = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/* The length of the sequence a lead byte begins; 0 when it begins none. */
static size_t lead_len(unsigned c)
{
	return c < 0x80                 ? 1
	       : c >= 0xC2 && c <= 0xDF ? 2
	       : (c & 0xF0) == 0xE0     ? 3
	       : c >= 0xF0 && c <= 0xF4 ? 4
					: 0;
}

size_t tp_utf8_complete(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t k = tp_utf8_seq_len(p + i, n - i);
		if (k == 0 && n - i < lead_len(p[i])) {
			/* Too short to tell: incomplete unless a byte already breaks it. */
			size_t j = i + 1;
			while (j < n && (p[j] & 0xC0) == 0x80)
				j++;
			if (j == n)
				return i;
		}
		i += k ? k : 1;
	}
	return n;
}

int tp_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0, k; i < n; i += k)
		if ((k = tp_utf8_seq_len(p + i, n - i)) == 0)
			return 0;
	return 1;
}

size_t tp_utf8_fix(const char *s, size_t n, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t k = tp_utf8_seq_len(p + i, n - i);
		if (k == 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD */
			o += 3, i += 1;
		} else {
			memcpy(out + o, s + i, k);
			o += k, i += k;
		}
	}
	return o;
}

json_t *tp_utf8_json(const char *s, size_t n)
{
	if (tp_utf8_valid(s, n))
		return json_stringn(s, n);
	char *buf = malloc(3 * n);
	if (buf == NULL)
		return NULL;
	json_t *v = json_stringn(buf, tp_utf8_fix(s, n, buf));
	free(buf);
	return v;
}

size_t tp_utf8_quote(const char *s, size_t n, char *out, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, i = 0, k;

	out[o++] = '"';
	for (; i < n && o <= max; i += k ? k : 1) { /* at most 6 bytes per step */
		k = tp_utf8_seq_len(p + i, n - i);
		switch (p[i]) {
		case '"':
		case '\\': out[o++] = '\\', out[o++] = (char)p[i]; continue;
		case '\n': out[o++] = '\\', out[o++] = 'n'; continue;
		case '\r': out[o++] = '\\', out[o++] = 'r'; continue;
		case '\t': out[o++] = '\\', out[o++] = 't'; continue;
		}
		if (k == 0)
			o += (size_t)snprintf(out + o, 5, "\\x%02X", p[i]);
		else if (p[i] < 0x20 || p[i] == 0x7F)
			o += (size_t)snprintf(out + o, 7, "\\u%04X", p[i]);
		else
			memcpy(out + o, s + i, k), o += k;
	}
	out[o++] = '"';
	if (i < n)
		memcpy(out + o, "...", 3), o += 3;
	out[o] = '\0';
	return o;
}
