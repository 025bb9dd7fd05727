/*
 * jsonio.c — jansson calls that fail whole (see jsonio.h for the jansson bugs).
 * Invariant: a document that comes back was read or written with every byte;
 * one allocation failure anywhere inside the call refuses the result.
 */
#include "jsonio.h"

#include <stdlib.h>
#include <string.h>

static unsigned long failures; /* allocations jansson asked for and did not get */

static void *counting_malloc(size_t n)
{
	void *p = malloc(n);
	if (p == NULL)
		failures++;
	return p;
}

/* The free function stays free(): values made before the switch are freed alike. */
static void watch(void)
{
	static int installed;
	if (!installed) {
		json_set_alloc_funcs(counting_malloc, free);
		installed = 1;
	}
}

/* ---- NUL in object keys ------------------------------------------------------
 * jansson's parser refuses U+0000 in an object key whatever the flags ("NUL byte
 * in object key not supported"), while its dumper and its *n key functions carry
 * one. Under JSON_ALLOW_NUL a key may hold it here too: in keys only, the text's
 * \u0000 becomes \u0001\u0001 and \u0001 becomes \u0001\u0002 before parsing
 * (one-to-one, so duplicates are still found), and every key is mapped back after.
 * The rewrite touches only escapes inside strings, so it never changes whether
 * the text is JSON. */

struct escapes {
	size_t *at; /* offsets in the original text of each \u0000 or \u0001 in a key */
	size_t n, cap;
	int nul; /* a key holds \u0000: the text needs the rewrite */
};

static int escape_at(struct escapes *e, size_t at)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		size_t *p = realloc(e->at, cap * sizeof *p);
		if (p == NULL)
			return -1;
		e->at = p, e->cap = cap;
	}
	e->at[e->n++] = at;
	return 0;
}

/* Finds the escapes to rewrite. A string is a key when ':' follows it. */
static int find_key_escapes(const char *s, size_t n, struct escapes *e)
{
	for (size_t i = 0; i < n;) {
		if (s[i++] != '"')
			continue;
		size_t first = e->n;
		int nul = 0;
		while (i < n && s[i] != '"') {
			if (s[i] != '\\') {
				i++;
				continue;
			}
			if (n - i >= 6 && memcmp(s + i, "\\u000", 5) == 0 &&
			    (s[i + 5] == '0' || s[i + 5] == '1')) {
				nul |= s[i + 5] == '0';
				if (escape_at(e, i) != 0)
					return -1;
				i += 6;
			} else {
				i += 2;
			}
		}
		size_t j = ++i;
		while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'))
			j++;
		if (j < n && s[j] == ':')
			e->nul |= nul;
		else
			e->n = first; /* a value: NUL is JSON_ALLOW_NUL's business */
	}
	return 0;
}

static char *rewrite(const char *s, size_t n, const struct escapes *e, size_t *len)
{
	char *t = malloc(n + 6 * e->n + 1), *o = t;
	size_t from = 0;

	if (t == NULL)
		return NULL;
	for (size_t k = 0; k < e->n; k++) {
		memcpy(o, s + from, e->at[k] - from);
		o += e->at[k] - from;
		memcpy(o, s[e->at[k] + 5] == '0' ? "\\u0001\\u0001" : "\\u0001\\u0002", 12);
		o += 12;
		from = e->at[k] + 6;
	}
	memcpy(o, s + from, n - from);
	o += n - from;
	*len = (size_t)(o - t);
	return t;
}

/* The column in the original text of an error at byte pos of the rewritten one,
 * counted as jansson does (characters since the last newline, from 1). */
static int original_column(const char *s, size_t n, const struct escapes *e, size_t pos)
{
	size_t k = 0, start;
	int col = 0;

	while (k < e->n && e->at[k] + 6 * (k + 1) + 6 <= pos)
		k++;
	pos -= 6 * k;
	if (pos > n)
		pos = n;
	for (start = pos; start > 0 && s[start - 1] != '\n'; start--)
		;
	for (size_t i = start; i < pos; i++)
		col += ((unsigned char)s[i] & 0xC0) != 0x80;
	return col;
}

/* jansson's message quotes the rewritten text ("near '...'"): map it back. */
static void unescape_message(char *m)
{
	char *o = m;

	for (const char *i = m; *i;) {
		if (strncmp(i, "\\u0001\\u000", 11) == 0 && (i[11] == '1' || i[11] == '2')) {
			memcpy(o, i[11] == '1' ? "\\u0000" : "\\u0001", 6);
			o += 6, i += 12;
		} else {
			*o++ = *i++;
		}
	}
	*o = '\0';
}

static size_t unescape_key(const char *k, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++)
		out[o++] = k[i] == 1 && i + 1 < n ? (char)(k[++i] == 1 ? 0 : 1) : k[i];
	return o;
}

/* Maps every key of v and below back; -1 when out of memory. */
static int unescape_keys(json_t *v)
{
	json_t *copy, *child;
	const char *k;
	size_t i;
	int again = 0;

	if (json_is_array(v)) {
		json_array_foreach(v, i, child) if (unescape_keys(child) != 0) return -1;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
		if (unescape_keys(json_object_iter_value(it)) != 0)
			return -1;
		again |= memchr(json_object_iter_key(it), 1, json_object_iter_key_len(it)) != NULL;
	}
	if (!again)
		return 0;
	copy = json_object();
	if (copy == NULL || json_object_update(copy, v) != 0) /* keys as they are, in order */
		goto fail;
	json_object_clear(v);
	for (void *it = json_object_iter(copy); it; it = json_object_iter_next(copy, it)) {
		size_t n = json_object_iter_key_len(it);
		char *buf = malloc(n ? n : 1);
		k = json_object_iter_key(it);
		if (buf == NULL || json_object_setn(v, buf, unescape_key(k, n, buf),
						    json_object_iter_value(it)) != 0) {
			free(buf);
			goto fail;
		}
		free(buf);
	}
	json_decref(copy);
	return 0;
fail:
	json_decref(copy);
	return -1;
}

json_t *tp_json_loadb(const char *buf, size_t len, size_t flags, struct tp_err *err)
{
	json_error_t jerr;
	struct escapes e = { 0 };
	const char *text = buf;
	char *rewritten = NULL;
	size_t text_len = len;
	json_t *j;
	int column, short_of_memory = 0;

	watch();
	unsigned long before = failures;
	if ((flags & JSON_ALLOW_NUL) && memmem(buf, len, "\\u0000", 6) != NULL) {
		if (find_key_escapes(buf, len, &e) != 0)
			goto oom;
		if (e.nul && (rewritten = rewrite(buf, len, &e, &text_len)) == NULL)
			goto oom;
		if (rewritten != NULL)
			text = rewritten;
	}
	j = json_loadb(text, text_len, flags, &jerr);
	if (j != NULL && rewritten != NULL)
		short_of_memory = unescape_keys(j) != 0;
	if (short_of_memory || failures != before) {
		json_decref(j);
		goto oom;
	}
	if (j == NULL) {
		column = jerr.column;
		if (rewritten != NULL) {
			column = original_column(buf, len, &e, (size_t)jerr.position);
			unescape_message(jerr.text);
		}
		tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "%s at column %d", jerr.text,
			   column);
	}
	free(rewritten);
	free(e.at);
	return j;
oom:
	free(rewritten);
	free(e.at);
	tp_err_oom(err, TP_LAYER_HOST);
	return NULL;
}

char *tp_json_dumps(const json_t *json, size_t flags)
{
	watch();
	unsigned long before = failures;
	char *s = json_dumps(json, flags);
	if (failures != before) {
		free(s);
		return NULL;
	}
	return s;
}

size_t tp_json_size(const json_t *json, size_t flags)
{
	watch();
	unsigned long before = failures;
	size_t n = json_dumpb(json, NULL, 0, flags);
	return failures != before || (n == 0 && json != NULL) ? (size_t)-1 : n;
}
