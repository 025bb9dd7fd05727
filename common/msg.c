/*
 * msg.c — encoders and decoders of the host ⇄ worker messages (msg.h).
 * Invariant: a decoder reads no byte past len, accepts no trailing byte, and
 * hands out nothing it has not bounded; a reply that fails any check is refused
 * whole, never patched.
 */
#include "msg.h"

#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "jsonreal.h"
#include "jsonscan.h"

#define MAGIC 0x676d7074u /* "tpmg" */
#define ABSENT 0xffffffffu
#define SAME_AS_VALUE 0xfffffffeu /* a reply's text: the value's own JSON text (version 8) */

/* ---- texts -------------------------------------------------------------------------- */

int tp_text_set(struct tp_text *t, const char *s, size_t n, size_t max)
{
	char note[48] = "";
	size_t keep = n, nn;

	if (n > max) { /* cut, and say how much, within max */
		keep = max > sizeof note ? max - sizeof note : 0;
		snprintf(note, sizeof note, "... (%zu bytes cut)", n - keep);
	}
	nn = strlen(note);
	t->n = 0;
	t->s = malloc(keep + nn + 1);
	if (t->s == NULL)
		return -1;
	if (keep)
		memcpy(t->s, s, keep);
	memcpy(t->s + keep, note, nn + 1);
	t->n = keep + nn;
	return 0;
}

void tp_text_free(struct tp_text *t)
{
	free(t->s);
	t->s = NULL;
	t->n = 0;
}

/* ---- writing -------------------------------------------------------------------------- */

struct wbuf {
	char *p;
	size_t len, cap;
	int oom;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		char *p = realloc(w->p, cap);
		if (p == NULL) {
			w->oom = 1;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put_u8(struct wbuf *w, unsigned v)
{
	unsigned char b = (unsigned char)v;
	put(w, &b, 1);
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };
	put(w, b, 4);
}

static void put_u64(struct wbuf *w, uint64_t v)
{
	put_u32(w, (uint32_t)v);
	put_u32(w, (uint32_t)(v >> 32));
}

static void put_bytes(struct wbuf *w, const char *s, size_t n)
{
	if (s == NULL || n >= ABSENT) {
		put_u32(w, ABSENT);
		return;
	}
	put_u32(w, (uint32_t)n);
	put(w, s, n);
}

static void put_json(struct wbuf *w, const json_t *v)
{
	char *s;

	if (v == NULL) {
		put_u32(w, ABSENT);
		return;
	}
	s = tp_json_dumps_frame(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s == NULL) {
		w->oom = 1;
		return;
	}
	put_bytes(w, s, strlen(s));
	free(s);
}

static void put_header(struct wbuf *w, enum tp_msg_type type)
{
	put_u32(w, MAGIC);
	put_u8(w, TP_MSG_VERSION);
	put_u8(w, type);
	put_u8(w, 0);
	put_u8(w, 0);
}

static char *finish(struct wbuf *w, size_t *len)
{
	if (w->oom) {
		free(w->p);
		return NULL;
	}
	*len = w->len;
	return w->p;
}

char *tp_msg_request_encode(const struct tp_request *req, size_t *len)
{
	struct wbuf w = { 0 };

	put_header(&w, TP_MSG_REQUEST);
	put_u64(&w, req->seq);
	for (int i = 0; i < TP_LIMIT__COUNT; i++)
		put_u64(&w, tp_limit_get(&req->limits, (enum tp_limit_id)i));
	put_u8(&w, req->has_seed ? 1 : 0);
	put_u64(&w, req->has_seed ? req->seed : 0);
	put_u8(&w, req->session ? 1 : 0);
	put_bytes(&w, req->workspace, req->workspace ? strlen(req->workspace) : 0);
	put_bytes(&w, req->code ? req->code : "", req->code ? req->code_len : 0);
	put_json(&w, req->inputs);
	return finish(&w, len);
}

static void put_text(struct wbuf *w, const struct tp_text *t)
{
	put_bytes(w, t->s, t->n);
}

/* The reply into w; with post, a value_json's bytes are left out and what
 * follows them goes to post (tp_msg_reply_encode_split): then 1, else 0. */
static int reply_into(struct wbuf *w, struct wbuf *post, const struct tp_reply *r)
{
	int split = 0;

	const struct tp_failure *f = &r->error;

	put_header(w, TP_MSG_REPLY);
	put_u64(w, r->seq);
	put_u8(w, r->ok ? 1 : 0);
	put_u8(w, r->value_repr ? 1 : 0);
	put_u64(w, r->usage.instructions);
	put_u64(w, r->usage.memory_peak_bytes);
	put_u64(w, r->usage.cpu_us);
	if (r->ok) {
		if (r->value_json != NULL && post != NULL && r->value_json_n < ABSENT) {
			put_u32(w, (uint32_t)r->value_json_n); /* the bytes go between */
			w = post;
			split = 1;
		} else if (r->value_json !=
			   NULL) { /* a worker's text, written as the value was walked */
			put_bytes(w, r->value_json, r->value_json_n);
		} else if (r->value == NULL) {
			w->oom =
			    1; /* an ok reply always has a value: refuse to encode one without */
		} else {
			put_json(w, r->value);
		}
		if (r->text_is_value)
			put_u32(w, SAME_AS_VALUE);
		else
			put_text(w, &r->text);
		put_u8(w, r->text_cut ? 1 : 0);
		put_u32(w, r->nimages);
		for (unsigned i = 0; i < r->nimages && i < TP_MSG_MAX_IMAGES; i++)
			put_text(w, &r->images[i]);
		put_json(w, r->nonfinite);
		return split;
	}
	put_u8(w, (unsigned)f->kind);
	put_u32(w, (uint32_t)f->limit_id);
	put_u64(w, f->limit);
	put_u64(w, f->used);
	put_u32(w, f->line > 0 ? (uint32_t)f->line : 0);
	put_u32(w, f->column > 0 ? (uint32_t)f->column : 0);
	put_text(w, &f->type);
	put_text(w, &f->message);
	put_text(w, &f->traceback);
	put_json(w, f->data);
	return 0;
}

char *tp_msg_reply_encode(const struct tp_reply *r, size_t *len)
{
	struct wbuf w = { 0 };

	(void)reply_into(&w, NULL, r);
	return finish(&w, len);
}

int tp_msg_reply_encode_split(const struct tp_reply *r, struct tp_msg_split *out)
{
	struct wbuf w = { 0 }, post = { 0 };

	memset(out, 0, sizeof *out);
	int split = reply_into(&w, &post, r);
	if (w.oom || post.oom) {
		free(w.p);
		free(post.p);
		return -1;
	}
	out->pre = w.p, out->pre_n = w.len;
	out->post = post.p, out->post_n = post.len;
	if (split)
		out->mid = r->value_json, out->mid_n = r->value_json_n;
	return 0;
}

/* ---- reading -------------------------------------------------------------------------- */

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	int bad;
	int too_long; /* the last bad text was above its cap (not cut short) */
};

static const unsigned char *take(struct rbuf *r, size_t n)
{
	if (r->bad || r->len - r->off < n) {
		r->bad = 1;
		return NULL;
	}
	r->off += n;
	return r->p + r->off - n;
}

static unsigned get_u8(struct rbuf *r)
{
	const unsigned char *b = take(r, 1);
	return b ? b[0] : 0;
}

static uint32_t get_u32(struct rbuf *r)
{
	const unsigned char *b = take(r, 4);
	return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		       (uint32_t)b[3] << 24
		 : 0;
}

static uint64_t get_u64(struct rbuf *r)
{
	uint64_t lo = get_u32(r);
	return lo | (uint64_t)get_u32(r) << 32;
}

/* A text of at most max bytes: *s points into the buffer (NULL when absent). */
static size_t get_bytes(struct rbuf *r, size_t max, const char **s)
{
	uint32_t n = get_u32(r);

	*s = NULL;
	if (n == ABSENT)
		return 0;
	if (n > max) {
		r->bad = r->too_long = 1;
		return 0;
	}
	*s = (const char *)take(r, n);
	return *s ? n : 0;
}

static void get_text(struct rbuf *r, size_t max, struct tp_text *t)
{
	const char *s;
	size_t n = get_bytes(r, max, &s);

	if (s == NULL || r->bad)
		return;
	t->s = malloc(n + 1);
	if (t->s == NULL) {
		r->bad = 1;
		return;
	}
	memcpy(t->s, s, n);
	t->s[n] = '\0';
	t->n = n;
}

static int get_header(struct rbuf *r, enum tp_msg_type type)
{
	uint32_t magic = get_u32(r);
	unsigned version = get_u8(r), t = get_u8(r), z0 = get_u8(r), z1 = get_u8(r);

	return !r->bad && magic == MAGIC && version == TP_MSG_VERSION && t == (unsigned)type &&
	       z0 == 0 && z1 == 0;
}

/* A JSON value of at most max bytes, containers nested at most max_depth (0:
 * not checked); NULL when absent or bad (*why says which). *raw and *rawn,
 * when given, point at its text in the buffer; *is_compact, when given, says
 * whether it has no whitespace outside strings. Read by tp_json_scan, which
 * accepts what tp_json_loadb does (jsonscan.h) in one pass. */
static json_t *get_json_raw(struct rbuf *r, size_t max, size_t max_depth, const char **why,
			    const char **raw, size_t *rawn, int *is_compact, int *lazy)
{
	const char *s;
	size_t n = get_bytes(r, max, &s);
	struct tp_err err = { 0 };
	struct tp_json_scan_out out;
	json_t *v;
	int lazy_ok = lazy != NULL;

	if (raw != NULL) {
		*raw = s;
		*rawn = n;
	}

	if (r->bad) {
		*why = r->too_long ? "value larger than result_bytes" : "truncated";
		return NULL;
	}
	if (s == NULL)
		return NULL;
	if (lazy_ok)
		*lazy = 0;
	/* A compact array or object that may stay text: checked, no tree made. */
	if (lazy_ok && n > 0 && (s[0] == '[' || s[0] == '{')) {
		int c = tp_json_check(s, n, max_depth, &out, &err);
		if (c == 0) {
			r->bad = 1;
			*why = tp_err_is_oom(&err) ? "out of memory" : "a value is not JSON";
			return NULL;
		}
		if (c == 1 && out.deep) {
			r->bad = 1;
			*why = "value nested deeper than result_depth";
			return NULL;
		}
		if (c == 1 && out.compact) {
			*is_compact = 1;
			*lazy = out.tidy ? 2 : 1; /* 2: its reals need no tidying */
			return NULL;
		}
	}
	v = tp_json_scan(s, n, max_depth, &out, &err);
	if (v == NULL) {
		r->bad = 1;
		*why = tp_err_is_oom(&err) ? "out of memory" : "a value is not JSON";
	} else if (out.deep) {
		r->bad = 1;
		*why = "value nested deeper than result_depth";
		json_decref(v);
		v = NULL;
	} else if (is_compact != NULL) {
		*is_compact = out.compact;
	}
	return v;
}

static json_t *get_json(struct rbuf *r, size_t max, size_t max_depth, const char **why)
{
	return get_json_raw(r, max, max_depth, why, NULL, NULL, NULL, NULL);
}

int tp_msg_request_decode(const char *buf, size_t len, struct tp_request *out)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	uint64_t lim[TP_LIMIT__COUNT];
	const char *code, *why = NULL;
	size_t code_len;

	memset(out, 0, sizeof *out);
	if (!get_header(&r, TP_MSG_REQUEST))
		return -1;
	out->seq = get_u64(&r);
	for (int i = 0; i < TP_LIMIT__COUNT; i++)
		lim[i] = get_u64(&r);
	out->has_seed = get_u8(&r) == 1;
	out->seed = get_u64(&r);
	out->session = get_u8(&r) == 1;
	const char *ws;
	size_t ws_len = get_bytes(&r, 1024, &ws);
	code_len = get_bytes(&r, TP_MSG_MAX_REQUEST, &code);
	if (r.bad || code == NULL || tp_limits_from_array(&out->limits, lim) != 0)
		return -1;
	out->inputs = get_json(&r, TP_MSG_MAX_REQUEST, 0, &why); /* depth: the language says */
	if (r.bad || r.off != len || (out->inputs != NULL && !json_is_object(out->inputs)))
		goto fail;
	if (ws != NULL && (ws_len == 0 || ws[0] != '/' || memchr(ws, '\0', ws_len) != NULL))
		goto fail; /* an absolute path, or none */
	char *copy = malloc(code_len + 1);
	char *wcopy = ws != NULL ? malloc(ws_len + 1) : NULL;
	if (copy == NULL || (ws != NULL && wcopy == NULL)) {
		free(copy);
		free(wcopy);
		goto fail;
	}
	memcpy(copy, code, code_len);
	copy[code_len] = '\0';
	out->code = copy;
	out->code_len = code_len;
	if (wcopy != NULL) {
		memcpy(wcopy, ws, ws_len);
		wcopy[ws_len] = '\0';
		out->workspace = wcopy;
	}
	return 0;
fail:
	json_decref(out->inputs);
	memset(out, 0, sizeof *out);
	return -1;
}

int tp_msg_claimable(enum tp_kind kind)
{
	switch (kind) {
	case TP_KIND_SYNTAX_ERROR:
	case TP_KIND_RUNTIME_ERROR:
	case TP_KIND_INPUT_ERROR:
	case TP_KIND_RESULT_ERROR:
	case TP_KIND_MEMORY_LIMIT:
	case TP_KIND_INSTRUCTION_LIMIT:
	case TP_KIND_CPU_LIMIT:
	case TP_KIND_OUTPUT_LIMIT:
	case TP_KIND_POLICY_VIOLATION:
	/* The host asked the exec to stop (it checks that it did). */
	case TP_KIND_CANCELLED:
	/* The kernel refused something and the runtime saw it (EACCES, EPERM): the
	 * worker may say so. A lie here only mislabels its own failure. */
	case TP_KIND_SANDBOX_VIOLATION: return 1;
	default: return 0;
	}
}

static const char *check_failure(struct rbuf *r, const struct tp_limits *lim, struct tp_failure *f)
{
	unsigned kind = get_u8(r);
	uint32_t id = get_u32(r), line, column;
	const char *why = NULL;

	f->limit = get_u64(r);
	f->used = get_u64(r);
	line = get_u32(r);
	column = get_u32(r);
	get_text(r, TP_MSG_MAX_TYPE, &f->type);
	get_text(r, TP_MSG_MAX_TEXT, &f->message);
	get_text(r, TP_MSG_MAX_TEXT, &f->traceback);
	if (r->bad)
		return "a text is longer than its cap or than the message";
	f->data = get_json(r, lim->result_bytes, lim->result_depth, &why);
	if (why != NULL)
		return why;
	if (kind >= TP_KIND__COUNT || !tp_msg_claimable((enum tp_kind)kind))
		return "a kind the language layer may not claim";
	f->kind = (enum tp_kind)kind;
	if (id != ABSENT && id >= TP_LIMIT__COUNT)
		return "an unknown limit";
	f->limit_id = id == ABSENT ? -1 : (int)id;
	if (line > 100000000u)
		return "a line number out of range";
	f->line = (int)line;
	if (column > 100000000u)
		return "a column number out of range";
	f->column = (int)column;
	if (f->message.s == NULL)
		return "an error without a message";
	return NULL;
}

/* The value at JSON pointer p (RFC 6901; plen bytes, NUL bytes allowed, as
 * in keys) of v, or NULL when p is not one or names nothing there. */
static const json_t *resolve(const json_t *v, const char *p, size_t plen)
{
	const char *end = p + plen;
	char *seg = malloc(plen + 1);
	if (seg == NULL)
		return NULL;
	while (v != NULL && p < end) {
		size_t n = 0;
		if (*p != '/') {
			v = NULL;
			break;
		}
		for (p++; p < end && *p != '/'; p++) {
			char c = *p;
			if (c == '~') {
				if (p + 1 >= end || (p[1] != '0' && p[1] != '1')) {
					free(seg);
					return NULL;
				}
				c = *++p == '0' ? '~' : '/';
			}
			seg[n++] = c;
		}
		seg[n] = '\0';
		if (json_is_object(v)) {
			v = json_object_getn(v, seg, n);
		} else if (json_is_array(v)) {
			char *stop;
			unsigned long i = strtoul(seg, &stop, 10);
			if (n == 0 || n > 19 || stop != seg + n || (seg[0] == '0' && n > 1) ||
			    seg[0] < '0' || seg[0] > '9' || i >= json_array_size(v))
				v = NULL;
			else
				v = json_array_get(v, i);
		} else {
			v = NULL;
		}
	}
	free(seg);
	return v;
}

/* A reply's nonfinite (version 7): an object, each key a pointer to a null of
 * the value, each value "nan", "inf" or "-inf". A worker may say which of its
 * nulls were such numbers, nothing else. */
static const char *check_nonfinite(const json_t *value, const json_t *m)
{
	if (!json_is_object(m) || json_object_size(m) == 0)
		return "nonfinite that is not a non-empty object";
	for (void *it = json_object_iter((json_t *)m); it != NULL;
	     it = json_object_iter_next((json_t *)m, it)) {
		const char *k = json_object_iter_key(it);
		const char *s = json_string_value(json_object_iter_value(it));
		if (s == NULL ||
		    (strcmp(s, "nan") != 0 && strcmp(s, "inf") != 0 && strcmp(s, "-inf") != 0))
			return "a nonfinite entry that is not nan, inf or -inf";
		if (!json_is_null(resolve(value, k, json_object_iter_key_len(it))))
			return "a nonfinite pointer to no null of the value";
	}
	return NULL;
}

/* The value's bytes (raw, rawn: JSON the decoder read, so UTF-8 and within
 * result_bytes) with their reals tidied, as tp_json_dumps writes them, in a new
 * string; its length in *len. */
static char *tidied(const char *raw, size_t rawn, int tidy, size_t *len)
{
	char *s = malloc(rawn + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, raw, rawn);
	*len = tidy ? rawn : tp_json_tidy_reals(s, rawn);
	s[*len] = '\0';
	return s;
}

/* The text of a reply that said it is the value's own JSON text (version 8). */
static const char *text_of_value(const char *raw, size_t rawn, struct tp_reply *out)
{
	if (!out->value_lazy && !json_is_array(out->value) && !json_is_object(out->value))
		return "a text the same as a value that is no array or object";
	out->text_is_value = 1;
	if (out->value_lazy) /* the text is value_json itself: no copy */
		return NULL;
	if (out->value_json != NULL) {
		out->text.s = malloc(out->value_json_n + 1);
		if (out->text.s != NULL)
			memcpy(out->text.s, out->value_json, out->value_json_n + 1);
		out->text.n = out->value_json_n;
	} else {
		out->text.s = tidied(raw, rawn, 0, &out->text.n);
	}
	return out->text.s == NULL ? "out of memory" : NULL;
}

/* An ok reply's text and images (version 6), nonfinite (version 7) and a text
 * that is the value's (version 8). */
static const char *check_rich(struct rbuf *r, const struct tp_limits *lim, struct tp_reply *out,
			      const char *raw, size_t rawn)
{
	unsigned cut;
	uint32_t n;
	uint64_t total = 0;
	size_t at = r->off;

	if (get_u32(r) == SAME_AS_VALUE && !r->bad) {
		const char *why = text_of_value(raw, rawn, out);
		if (why != NULL)
			return why;
	} else {
		r->off = at;
		get_text(r, lim->result_bytes, &out->text);
	}
	cut = get_u8(r);
	n = get_u32(r);
	if (r->bad)
		return r->too_long ? "a text longer than result_bytes" : "truncated";
	if (cut > 1 || (cut && (out->text.s == NULL || out->text_is_value)))
		return "a text cut flag that is not 0 or 1, or without a text of its own";
	if ((out->text.s != NULL || out->text_is_value) && out->value_repr)
		return "a text beside a repr value";
	out->text_cut = (int)cut;
	if (n > TP_MSG_MAX_IMAGES)
		return "more images than the cap";
	for (uint32_t i = 0; i < n; i++) {
		get_text(r, lim->output_bytes, &out->images[i]);
		if (r->bad || out->images[i].s == NULL)
			return "an image longer than output_bytes, absent or cut short";
		out->nimages = i + 1;
		if (out->images[i].n < 8 || memcmp(out->images[i].s, "\x89PNG\r\n\x1a\n", 8) != 0)
			return "an image that is not a PNG file";
		total += out->images[i].n;
		if (total > lim->output_bytes)
			return "images longer than output_bytes together";
	}
	const char *why = NULL;
	out->nonfinite = get_json(r, lim->result_bytes, 2, &why);
	if (why != NULL)
		return why;
	if (out->nonfinite == NULL)
		return NULL;
	if (tp_reply_value(out) == NULL) /* the pointers are resolved in a tree */
		return "out of memory";
	return check_nonfinite(out->value, out->nonfinite);
}

size_t tp_msg_reply_max(const struct tp_limits *lim)
{
	/* header, flags, usage, the failure's numbers and five length words: < 128. A
	 * failure's data (at most result_bytes) comes instead of the value. An ok
	 * reply's text (result_bytes), its images (output_bytes) and their length
	 * words come instead of the failure's texts. */
	size_t fail = (size_t)lim->result_bytes + TP_MSG_MAX_TYPE + 2 * (size_t)TP_MSG_MAX_TEXT;
	size_t ok = 3 * (size_t)lim->result_bytes + (size_t)lim->output_bytes +
		    4 * (size_t)TP_MSG_MAX_IMAGES + 4;
	return (fail > ok ? fail : ok) + 128;
}

json_t *tp_reply_value(struct tp_reply *r)
{
	if (r->value == NULL && r->value_lazy) {
		/* Checked when decoded; the tidied text reads back as the same tree
		 * (its reals as the same doubles: jsonreal.h). */
		struct tp_json_scan_out o;
		struct tp_err e = { 0 };
		r->value = tp_json_scan(r->value_json, r->value_json_n, 0, &o, &e);
		if (r->value != NULL)
			r->value_lazy = 0;
		else if (!tp_err_is_oom(&e))
			abort(); /* text the decoder checked does not read back: a bug of ours */
	}
	return r->value;
}

static int reply_decode(const char *buf, size_t len, const struct tp_limits *lim,
			struct tp_reply *out, struct tp_err *err, int lazy);

int tp_msg_reply_decode(const char *buf, size_t len, const struct tp_limits *lim,
			struct tp_reply *out, struct tp_err *err)
{
	return reply_decode(buf, len, lim, out, err, 0);
}

int tp_msg_reply_decode_lazy(const char *buf, size_t len, const struct tp_limits *lim,
			     struct tp_reply *out, struct tp_err *err)
{
	return reply_decode(buf, len, lim, out, err, 1);
}

static int reply_decode(const char *buf, size_t len, const struct tp_limits *lim,
			struct tp_reply *out, struct tp_err *err, int lazy)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	const char *why = NULL;
	unsigned ok, repr;

	errno = 0; /* ENOMEM after a failure: it was ours, not the worker's */
	memset(out, 0, sizeof *out);
	out->error.limit_id = -1;
	if (!get_header(&r, TP_MSG_REPLY)) {
		why = "not a reply of this version";
		goto fail;
	}
	out->seq = get_u64(&r);
	ok = get_u8(&r);
	repr = get_u8(&r);
	out->usage.instructions = get_u64(&r);
	out->usage.memory_peak_bytes = get_u64(&r);
	out->usage.cpu_us = get_u64(&r);
	if (r.bad || ok > 1 || repr > 1) {
		why = r.bad ? "truncated" : "a flag that is not 0 or 1";
		goto fail;
	}
	out->ok = (int)ok;
	out->value_repr = (int)repr;
	if (ok) {
		const char *raw;
		size_t rawn;
		int is_compact = 0;
		out->value = get_json_raw(&r, lim->result_bytes, lim->result_depth, &why, &raw,
					  &rawn, &is_compact, lazy ? &out->value_lazy : NULL);
		if (out->value == NULL && !out->value_lazy && why == NULL)
			why = "an ok reply without a value";
		/* Only a text with no whitespace outside its strings is copied into a
		 * reply as it is (a line break would split a JSON line). */
		if (why == NULL &&
		    (out->value_lazy || json_is_array(out->value) || json_is_object(out->value)) &&
		    is_compact &&
		    (out->value_json =
			 tidied(raw, rawn, out->value_lazy == 2, &out->value_json_n)) == NULL)
			why = "out of memory";
		if (out->value_lazy)
			out->value_lazy = 1;
		if (why == NULL)
			why = check_rich(&r, lim, out, raw, rawn);
	} else {
		why = check_failure(&r, lim, &out->error);
	}
	if (why == NULL && r.off != len)
		why = "bytes after the message";
	if (why == NULL)
		return 0;
fail:
	/* The worker runs the snippet: a reply the host refuses is the process's
	 * doing. But memory the host could not get is the host's own failure. */
	if (errno == ENOMEM)
		tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, ENOMEM,
			   "out of memory reading the worker reply (%s)", why);
	else
		tp_err_set(err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0, "worker reply refused: %s",
			   why);
	tp_reply_free(out);
	return -1;
}

/* ---- ready ---------------------------------------------------------------------------- */

char *tp_msg_ready_encode(uint64_t seq, size_t *len)
{
	struct wbuf w = { 0 };
	put_header(&w, TP_MSG_READY);
	put_u64(&w, seq);
	return finish(&w, len);
}

int tp_msg_ready_decode(const char *buf, size_t len, uint64_t seq)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	if (!get_header(&r, TP_MSG_READY) || get_u64(&r) != seq || r.bad || r.off != len)
		return -1;
	return 0;
}

/* ---- tool calls ---------------------------------------------------------------------- */

int tp_msg_type(const char *buf, size_t len)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	uint32_t magic = get_u32(&r);
	unsigned version = get_u8(&r), t = get_u8(&r);
	return !r.bad && magic == MAGIC && version == TP_MSG_VERSION ? (int)t : -1;
}

int tp_tool_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > TP_TOOL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return 1;
}

char *tp_msg_tool_call_encode(const struct tp_tool_call *c, size_t *len)
{
	struct wbuf w = { 0 };

	put_header(&w, TP_MSG_TOOL_CALL);
	put_bytes(&w, c->name, strlen(c->name));
	put_json(&w, c->arguments);
	return finish(&w, len);
}

int tp_msg_tool_call_decode(const char *buf, size_t len, const struct tp_limits *lim,
			    struct tp_tool_call *out)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	const char *name, *why = NULL;
	size_t n;

	memset(out, 0, sizeof *out);
	if (!get_header(&r, TP_MSG_TOOL_CALL))
		return -1;
	n = get_bytes(&r, TP_TOOL_NAME_MAX, &name);
	if (r.bad || name == NULL || !tp_tool_name_ok(name, n))
		return -1;
	memcpy(out->name, name, n);
	out->name[n] = '\0';
	out->arguments = get_json(&r, lim->result_bytes, lim->result_depth, &why);
	if (r.bad || r.off != len || !json_is_object(out->arguments)) {
		tp_tool_call_free(out);
		return -1;
	}
	return 0;
}

char *tp_msg_tool_result_encode(const struct tp_tool_result *res, size_t *len)
{
	struct wbuf w = { 0 };

	put_header(&w, TP_MSG_TOOL_RESULT);
	put_u8(&w, (unsigned)res->status);
	if (res->status == TP_TOOL_OK)
		put_json(&w, res->value);
	else
		put_text(&w, &res->message);
	return finish(&w, len);
}

int tp_msg_tool_result_decode(const char *buf, size_t len, const struct tp_limits *lim,
			      struct tp_tool_result *out)
{
	struct rbuf r = { (const unsigned char *)buf, len, 0, 0, 0 };
	const char *why = NULL;

	memset(out, 0, sizeof *out);
	if (!get_header(&r, TP_MSG_TOOL_RESULT))
		return -1;
	unsigned st = get_u8(&r);
	if (st > TP_TOOL_REFUSED)
		return -1;
	out->status = (enum tp_tool_status)st;
	if (out->status == TP_TOOL_OK)
		out->value = get_json(&r, lim->result_bytes, lim->result_depth, &why);
	else
		get_text(&r, TP_TOOL_MESSAGE_MAX, &out->message);
	if (r.bad || r.off != len ||
	    (out->status == TP_TOOL_OK ? out->value == NULL : out->message.s == NULL)) {
		tp_tool_result_free(out);
		return -1;
	}
	return 0;
}

void tp_tool_call_free(struct tp_tool_call *c)
{
	json_decref(c->arguments);
	memset(c, 0, sizeof *c);
}

void tp_tool_result_free(struct tp_tool_result *r)
{
	json_decref(r->value);
	tp_text_free(&r->message);
	memset(r, 0, sizeof *r);
}

/* ---- freeing -------------------------------------------------------------------------- */

void tp_request_free(struct tp_request *req)
{
	free((char *)req->code);
	free((char *)req->workspace);
	json_decref(req->inputs);
	memset(req, 0, sizeof *req);
}

void tp_reply_free(struct tp_reply *r)
{
	json_decref(r->value);
	json_decref(r->nonfinite);
	tp_text_free(&r->text);
	free(r->value_json);
	r->value_json = NULL;
	for (unsigned i = 0; i < r->nimages && i < TP_MSG_MAX_IMAGES; i++)
		tp_text_free(&r->images[i]);
	tp_text_free(&r->error.type);
	tp_text_free(&r->error.message);
	tp_text_free(&r->error.traceback);
	json_decref(r->error.data);
	memset(r, 0, sizeof *r);
	r->error.limit_id = -1;
}
