/*
 * hpolicy.c — a policy's host side: kernel check, rate and redaction (hpolicy.h).
 */
#include "hpolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "kprobe.h"
#include "utf8.h"

/* A growing output buffer. */
struct buf {
	char *s;
	size_t n, cap;
	int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *t = realloc(b->s, cap);
		if (t == NULL) {
			b->oom = 1;
			return;
		}
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

/* ---- a secret's encodings ---------------------------------------------------------- */

/* How the host's outputs may carry a secret: as itself, JSON-escaped (the value,
 * and a snippet's json.dumps), JSON-escaped twice (the MCP content text is the
 * result's JSON as a string), and escaped as Python's repr, ascii() and a bytes
 * repr do (the result's text, a traceback's KeyError). Each form is matched as
 * a literal; the variants cover the choices an encoder makes (\u00e9 or é, hex
 * case, a quote escaped or not). */
enum { F_JSON = 1, F_REPR, F_BYTES };
#define F_UPPER 1  /* hex digits in upper case */
#define F_ASCII 2  /* every non-ASCII character escaped */
#define F_SQUOTE 4 /* repr: ' escaped (the repr is quoted with ') */

/* One UTF-8 character at s: its length, the code point in *cp; 0 when invalid. */
static size_t utf8_char(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len = s[0] < 0x80             ? 1
		     : (s[0] & 0xE0) == 0xC0 ? 2
		     : (s[0] & 0xF0) == 0xE0 ? 3
		     : (s[0] & 0xF8) == 0xF0 ? 4
					     : 0;
	if (len == 0 || len > n)
		return 0;
	unsigned c = len == 1 ? s[0] : s[0] & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3F);
	}
	*cp = c;
	return len;
}

static void putf(struct buf *b, int flags, const char *lower, const char *upper, unsigned v)
{
	char t[16];
	int k = snprintf(t, sizeof t, flags & F_UPPER ? upper : lower, v);
	put(b, t, (size_t)k);
}

static void encode(const char *str, size_t n, int mode, int flags, struct buf *b)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t len = 1;
		const char *esc = NULL;
		if (c == '\\')
			esc = "\\\\";
		else if (c == '\n')
			esc = "\\n";
		else if (c == '\t')
			esc = "\\t";
		else if (c == '\r')
			esc = "\\r";
		else if (c == '"' && mode == F_JSON)
			esc = "\\\"";
		else if (c == '\'' && mode != F_JSON && (flags & F_SQUOTE))
			esc = "\\'";
		else if (c == '\b' && mode == F_JSON)
			esc = "\\b";
		else if (c == '\f' && mode == F_JSON)
			esc = "\\f";
		if (esc != NULL) {
			put(b, esc, strlen(esc));
		} else if (c < 0x20 || (c == 0x7F && (mode != F_JSON || (flags & F_ASCII)))) {
			if (mode == F_JSON)
				putf(b, flags, "\\u%04x", "\\u%04X", c);
			else
				putf(b, 0, "\\x%02x", NULL, c);
		} else if (c < 0x80) {
			put(b, str + i, 1);
		} else if (mode == F_BYTES) {
			putf(b, 0, "\\x%02x", NULL, c);
		} else if ((len = utf8_char(s + i, n - i, &c)) == 0 || !(flags & F_ASCII)) {
			len = len ? len : 1;
			put(b, str + i, len);
		} else if (mode == F_JSON) {
			if (c >= 0x10000) {
				putf(b, flags, "\\u%04x", "\\u%04X",
				     0xD800 + ((c - 0x10000) >> 10));
				putf(b, flags, "\\u%04x", "\\u%04X",
				     0xDC00 + ((c - 0x10000) & 0x3FF));
			} else {
				putf(b, flags, "\\u%04x", "\\u%04X", c);
			}
		} else {
			putf(b, 0,
			     c < 0x100     ? "\\x%02x"
			     : c < 0x10000 ? "\\u%04x"
					   : "\\U%08x",
			     NULL, c);
		}
		i += len;
	}
}

static int add_form(struct tp_strv *v, size_t *cap, char *f)
{
	if (f == NULL)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], f) == 0) {
			free(f);
			return 0;
		}
	if (v->n + 2 > *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		char **t = realloc(v->v, c * sizeof *t);
		if (t == NULL) {
			free(f);
			return -1;
		}
		v->v = t;
		*cap = c;
	}
	v->v[v->n++] = f;
	v->v[v->n] = NULL;
	return 0;
}

static char *encoded(const char *s, size_t n, int mode, int flags)
{
	struct buf b = { 0 };
	put(&b, "", 0);
	encode(s, n, mode, flags, &b);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

static int longest_first(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
	return la < lb ? 1 : la > lb ? -1 : 0;
}

/* hp->forms: every encoding of every secret, once, the longest first (a longer
 * form wins where two begin at the same byte). */
static int build_forms(struct tp_hpolicy *hp)
{
	size_t cap = 0;
	for (size_t k = 0; k < hp->secrets.n; k++) {
		const char *s = hp->secrets.v[k];
		size_t n = strlen(s);
		if (n == 0)
			continue;
		if (add_form(&hp->forms, &cap, strdup(s)) != 0)
			return -1;
		for (int fl = 0; fl < 4; fl++) { /* F_UPPER | F_ASCII */
			char *j = encoded(s, n, F_JSON, fl);
			if (j == NULL)
				return -1;
			if (add_form(&hp->forms, &cap, encoded(j, strlen(j), F_JSON, fl)) != 0 ||
			    add_form(&hp->forms, &cap, j) != 0)
				return -1;
		}
		for (int fl = 0; fl < 4; fl++) { /* F_SQUOTE | F_ASCII */
			int q = fl & 2 ? F_SQUOTE : 0, a = fl & 1 ? F_ASCII : 0;
			char *r = encoded(s, n, F_REPR, q | a);
			if (r == NULL)
				return -1;
			/* and a repr's repr: a list of reprs, a repr in a container */
			if (add_form(&hp->forms, &cap, encoded(r, strlen(r), F_REPR, q)) != 0 ||
			    add_form(&hp->forms, &cap, r) != 0 ||
			    add_form(&hp->forms, &cap, encoded(s, n, F_BYTES, q)) != 0)
				return -1;
		}
	}
	if (hp->forms.n > 1)
		qsort(hp->forms.v, hp->forms.n, sizeof(char *), longest_first);
	for (size_t i = 0; i < hp->forms.n; i++)
		hp->first[(unsigned char)hp->forms.v[i][0]] = 1;
	return 0;
}

int tp_hpolicy_init(struct tp_hpolicy *hp, const struct tp_policy *p, struct tp_err *err)
{
	memset(hp, 0, sizeof *hp);
	hp->p = p;
	hp->kernel_ok = tp_policy_kernel_check(p, hp->why, sizeof hp->why) == 0;
	size_t n = p->redact_strings.n + p->redact_env.n;
	hp->secrets.v = calloc(n + 1, sizeof(char *));
	hp->re = calloc(p->redact_patterns.n + 1, sizeof(regex_t));
	if (p->rate.per_minute)
		hp->starts = calloc(p->rate.per_minute, sizeof(double));
	if (hp->secrets.v == NULL || hp->re == NULL || (p->rate.per_minute && !hp->starts))
		return tp_err_oom(err, TP_LAYER_HOST);
	for (size_t i = 0; i < p->redact_strings.n; i++)
		if ((hp->secrets.v[hp->secrets.n++] = strdup(p->redact_strings.v[i])) == NULL)
			return tp_err_oom(err, TP_LAYER_HOST);
	/* Loading the policy made the same check, with the element's place; this
	 * one holds for a policy made otherwise, and an environment since changed. */
	if (tp_policy_check_env(p, err) != 0)
		return -1;
	for (size_t i = 0; i < p->redact_env.n; i++) {
		const char *v = getenv(p->redact_env.v[i]);
		if (v == NULL || *v == '\0')
			continue;
		if ((hp->secrets.v[hp->secrets.n++] = strdup(v)) == NULL)
			return tp_err_oom(err, TP_LAYER_HOST);
	}
	if (build_forms(hp) != 0)
		return tp_err_oom(err, TP_LAYER_HOST);
	for (; hp->nre < p->redact_patterns.n; hp->nre++)
		if (regcomp(&hp->re[hp->nre], p->redact_patterns.v[hp->nre], REG_EXTENDED) != 0)
			return tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0,
					  "policy '%s': redact.patterns[%zu] does not compile",
					  p->name, hp->nre);
	return 0;
}

void tp_hpolicy_free(struct tp_hpolicy *hp)
{
	tp_strv_free(&hp->secrets);
	tp_strv_free(&hp->forms);
	for (size_t i = 0; i < hp->nre; i++)
		regfree(&hp->re[i]);
	free(hp->re);
	free(hp->starts);
	memset(hp, 0, sizeof *hp);
}

double tp_hpolicy_admit(struct tp_hpolicy *hp, double now)
{
	size_t cap = hp->p->rate.per_minute;
	if (cap == 0)
		return 0;
	if (hp->count == cap) {
		double oldest = hp->starts[hp->head];
		if (now - oldest < 60000.0)
			return 60000.0 - (now - oldest);
		hp->head = (hp->head + 1) % cap;
		hp->count--;
	}
	hp->starts[(hp->head + hp->count) % cap] = now;
	hp->count++;
	return 0;
}

/* Literal secrets (every form), then a cut secret at the very end. */
static void literal_pass(const struct tp_hpolicy *hp, const char *s, size_t n, struct buf *out)
{
	size_t i = 0;
	while (i < n) {
		size_t hit = 0;
		if (!hp->first[(unsigned char)s[i]]) {
			put(out, s + i, 1);
			i++;
			continue;
		}
		for (size_t k = 0; k < hp->forms.n && !hit; k++) {
			if (hp->forms.v[k][0] != s[i])
				continue;
			size_t sl = strlen(hp->forms.v[k]);
			if (sl <= n - i && memcmp(s + i, hp->forms.v[k], sl) == 0)
				hit = sl;
		}
		for (size_t k = 0; k < hp->forms.n && !hit && n - i >= 4; k++) {
			if (hp->forms.v[k][0] != s[i])
				continue;
			size_t sl = strlen(hp->forms.v[k]);
			if (sl > n - i && n - i >= 4 && memcmp(s + i, hp->forms.v[k], n - i) == 0)
				hit = n - i; /* the output ends inside a secret */
		}
		if (hit) {
			put(out, TP_REDACTED, strlen(TP_REDACTED));
			i += hit;
		} else {
			put(out, s + i, 1);
			i++;
		}
	}
}

/* One pattern over a NUL-free segment. */
static void pattern_segment(const regex_t *re, const char *s, size_t n, struct buf *out)
{
	char *seg = strndup(s, n);
	const char *p = seg;
	regmatch_t m;
	int flags = 0;
	if (seg == NULL) {
		out->oom = 1;
		return;
	}
	while (*p && regexec(re, p, 1, &m, flags) == 0 && m.rm_eo > m.rm_so) {
		put(out, p, (size_t)m.rm_so);
		put(out, TP_REDACTED, strlen(TP_REDACTED));
		p += m.rm_eo;
		flags = REG_NOTBOL;
	}
	put(out, p, strlen(p));
	free(seg);
}

char *tp_hpolicy_redact_text(const struct tp_hpolicy *hp, const char *s, size_t n, size_t *out_n)
{
	struct buf a = { 0 };
	put(&a, "", 0);
	literal_pass(hp, s, n, &a);
	for (size_t r = 0; r < hp->nre && !a.oom; r++) {
		struct buf b = { 0 };
		put(&b, "", 0);
		for (size_t i = 0; i <= a.n;) { /* NUL-separated segments, NULs kept */
			const char *z = memchr(a.s + i, '\0', a.n - i);
			size_t len = z ? (size_t)(z - (a.s + i)) : a.n - i;
			pattern_segment(&hp->re[r], a.s + i, len, &b);
			i += len + 1;
			if (i <= a.n)
				put(&b, "", 1);
		}
		free(a.s);
		a = b;
	}
	if (a.oom) {
		free(a.s);
		return NULL;
	}
	*out_n = a.n;
	return a.s;
}

static json_t *redact_string(const struct tp_hpolicy *hp, json_t *v)
{
	size_t n;
	char *r = tp_hpolicy_redact_text(hp, json_string_value(v), json_string_length(v), &n);
	if (r == NULL)
		return NULL;
	if (n != json_string_length(v) || memcmp(r, json_string_value(v), n) != 0) {
		/* A pattern works on bytes: repair what it may have cut. */
		json_t *fixed = tp_utf8_json(r, n);
		if (fixed == NULL) {
			free(r);
			return NULL;
		}
		json_string_setn_nocheck(v, json_string_value(fixed), json_string_length(fixed));
		json_decref(fixed);
	}
	free(r);
	return v;
}

json_t *tp_hpolicy_redact(const struct tp_hpolicy *hp, json_t *v)
{
	if (hp->secrets.n == 0 && hp->nre == 0)
		return v;
	if (json_is_string(v))
		return redact_string(hp, v);
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if (tp_hpolicy_redact(hp, json_array_get(v, i)) == NULL)
				return NULL;
		return v;
	}
	if (!json_is_object(v))
		return v;
	/* Keys: rebuild the object, the keys that stay first, then each that
	 * changed; one that would land on a taken key gets #2, #3, ... so two
	 * keys that redact alike never merge. */
	json_t *out = json_object();
	const char *key;
	size_t klen;
	json_t *val;
	if (out == NULL)
		return NULL;
	for (int changed = 0; changed < 2; changed++) {
		json_object_keylen_foreach(v, key, klen, val)
		{
			size_t n = 0;
			char *k = tp_hpolicy_redact_text(hp, key, klen, &n);
			int same = k != NULL && n == klen && memcmp(k, key, n) == 0;
			if (k != NULL && same == changed) {
				free(k);
				continue;
			}
			size_t base = n;
			for (unsigned dup = 2; k != NULL && json_object_getn(out, k, n) != NULL;
			     dup++) {
				char *t = realloc(k, base + 16);
				if (t != NULL)
					n = base + (size_t)snprintf(t + base, 16, "#%u", dup);
				else
					free(k);
				k = t;
			}
			if (k == NULL || tp_hpolicy_redact(hp, val) == NULL ||
			    json_object_setn(out, k, n, val) != 0) {
				free(k);
				json_decref(out);
				return NULL;
			}
			free(k);
		}
	}
	json_object_clear(v);
	json_object_update(v, out);
	json_decref(out);
	return v;
}

/* The bytes of a file in base64: decoded, redacted as a text, encoded again. */
static json_t *redact_base64(const struct tp_hpolicy *hp, const json_t *data, size_t *out_n)
{
	size_t n = json_string_length(data), rn;
	unsigned char *bytes = malloc(n / 4 * 3 + 1);
	long got = bytes ? tp_base64_decode(json_string_value(data), n, bytes) : -1;
	char *r =
	    got >= 0 ? tp_hpolicy_redact_text(hp, (const char *)bytes, (size_t)got, &rn) : NULL;
	char *b64 = r ? malloc(tp_base64_encoded_len(rn) + 1) : NULL;
	json_t *out = NULL;
	if (b64 != NULL) {
		tp_base64_encode((const unsigned char *)r, rn, b64);
		out = json_string(b64);
		*out_n = rn;
	}
	free(bytes);
	free(r);
	free(b64);
	return out;
}

json_t *tp_hpolicy_redact_file(const struct tp_hpolicy *hp, json_t *r)
{
	if (r == NULL || !json_is_object(r) || (hp->secrets.n == 0 && hp->nre == 0))
		return r;
	json_t *data = json_object_get(r, "data"), *text = json_object_get(r, "text");
	size_t n = 0;
	json_t *d = json_is_string(data) ? redact_base64(hp, data, &n) : NULL;
	if (json_is_string(data) && d == NULL) {
		json_decref(r);
		return NULL;
	}
	if (d != NULL)
		json_object_del(r, "data"); /* a pattern must not see base64 */
	if (tp_hpolicy_redact(hp, r) == NULL) {
		json_decref(d);
		json_decref(r);
		return NULL;
	}
	text = json_object_get(r, "text");
	if (d != NULL)
		json_object_set_new(r, "data", d);
	if ((d != NULL || json_is_string(text)) && json_is_integer(json_object_get(r, "bytes")))
		json_object_set_new(r, "bytes",
				    json_integer((json_int_t)(d ? n : json_string_length(text))));
	return r;
}
