/*
 * jsonio.c — jansson calls that fail whole (see jsonio.h for the jansson bugs).
 * Invariants: a document that comes back was read or written with every byte;
 * one allocation failure anywhere inside the call refuses the result. After that
 * failure, every allocation of the call fails but one: jansson's lexer growing its
 * token buffer (saved_text), which the reserve serves, so the lexer never drops a
 * byte. Reserve blocks never outlive the load that took them.
 *
 * Why only that one, and how it is recognized (docs/robustness.md §6):
 *   - jansson checks every other allocation of a load and unwinds; lex_save alone
 *     ignores a failure (strbuffer_append_byte) and loses the byte, after which
 *     lex_scan_string decodes past its buffers and lex_unget_unsave asserts.
 *   - The growth is jsonp_malloc(2 × size) from strbuffer_append_bytes; jsonp_malloc
 *     tail-calls our hook, so the hook's return address is the instruction after
 *     that call. Sizes alone would not do: a 32-byte json_string_t, a hashtable's
 *     buckets or an array's table can ask for exactly the next growth's size, and
 *     a reserve shared with them could refuse the growth itself.
 *   - The address is learned at the first call by calibrate(): a load of a 39-byte
 *     string from a static arena, in which the growths are the allocations of twice
 *     the lexer's buffer followed at once by the free of that buffer. It must grow
 *     twice from one call site that no other allocation of that load used; else
 *     growth_site stays NULL and loads only fail fast (jsonio.h).
 */
#include "jsonio.h"

#include "jsonreal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

enum scope { OUTSIDE, LOADING, DUMPING, CALIBRATING };

static json_malloc_t sys_malloc; /* what jansson had before us: malloc, or a test's */
static json_free_t sys_free;
static int installed;
static const void *growth_site; /* the lexer's buffer growth, or NULL (not recognized) */

static enum scope scope;
static int failed; /* an allocation failed during the current call */

/* ---- the reserve ------------------------------------------------------------------- */

/* One private anonymous mapping, bump-allocated during a load and emptied after
 * it. The lexer asks for 32, 64, ... bytes and frees each buffer as soon as its
 * contents are copied into the next, so a load of len bytes takes less than
 * reserve_need(len). */
#define RESERVE_MIN (64u << 10)

static struct {
	char *base;
	size_t cap;  /* bytes mapped */
	size_t used; /* bump offset */
	size_t live; /* blocks handed out and not yet freed */
} rsv;

/* The lexer holds one token (at most len bytes: each is a byte of the text) in a
 * buffer of 16 << k bytes, NUL-terminated, doubled when full: it grows from S to
 * 2S only to save a token's Sth byte, so its requests are 32, 64, ..., 2 × top, top
 * the largest power of two ≤ len (at least 16); their sum is < 4 × top. 0 when
 * len is too large to bound. */
static size_t reserve_need(size_t len)
{
	size_t top = 16;
	if (len > SIZE_MAX / 8)
		return 0;
	while (top <= len / 2)
		top *= 2;
	return 4 * top < RESERVE_MIN ? RESERVE_MIN : 4 * top;
}

static int in_reserve(const void *p)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)rsv.base;
	return rsv.base != NULL && a >= b && a - b < rsv.cap;
}

/* Makes sure need bytes are free in the reserve; maps a larger one if not. */
static int reserve_ensure(size_t need)
{
	if (need == 0)
		return -1;
	if (rsv.base != NULL && need <= rsv.cap - rsv.used)
		return 0;
	if (rsv.live != 0) /* never: blocks do not outlive their load; still, never unmap them */
		return -1;
	void *p = mmap(NULL, need, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (rsv.base != NULL)
		munmap(rsv.base, rsv.cap);
	rsv.base = p;
	rsv.cap = need;
	rsv.used = 0;
	return 0;
}

static void *reserve_take(size_t n)
{
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (rsv.base == NULL || n > rsv.cap - rsv.used)
		return NULL;
	p = rsv.base + rsv.used;
	rsv.used += n;
	rsv.live++;
	return p;
}

/* After a load: give the touched pages back; the next load starts from the top. */
static void reserve_release(void)
{
	if (rsv.used == 0 || rsv.live != 0)
		return;
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (rsv.used + (size_t)page - 1) & ~((size_t)page - 1);
	madvise(rsv.base, len < rsv.cap ? len : rsv.cap, MADV_DONTNEED);
	rsv.used = 0;
}

int tp_json_reserve(size_t max_len)
{
	return reserve_ensure(reserve_need(max_len));
}

/* ---- calibration ------------------------------------------------------------------- */

static struct {
	_Alignas(16) char mem[512];
	size_t used;
	void *buf; /* the lexer's buffer, as far as we can tell */
	size_t buf_size;
	void *pending; /* the last allocation, if nothing happened since */
	size_t pending_size;
	const void *pending_site;
	const void *other[16]; /* sites of allocations that were not growths */
	int nother;
	const void *growth[4]; /* sites of the growths */
	int ngrowth;
} cal;

static void cal_other(const void *site)
{
	if (cal.nother < (int)(sizeof cal.other / sizeof cal.other[0]))
		cal.other[cal.nother++] = site;
	else
		cal.ngrowth = -1; /* more allocations than that string needs: give up */
}

static void cal_settle(void)
{
	if (cal.pending != NULL)
		cal_other(cal.pending_site);
	cal.pending = NULL;
}

static void *cal_malloc(size_t n, const void *site)
{
	void *p;
	cal_settle();
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof cal.mem - cal.used)
		return NULL;
	p = cal.mem + cal.used;
	cal.used += n;
	if (cal.buf == NULL) { /* strbuffer_init: the lexer's first buffer */
		cal.buf = p;
		cal.buf_size = n;
		cal_other(site);
	} else {
		cal.pending = p;
		cal.pending_size = n;
		cal.pending_site = site;
	}
	return p;
}

static void cal_free(void *p)
{
	if (cal.pending != NULL && p == cal.buf && cal.pending_size == 2 * cal.buf_size) {
		if (cal.ngrowth >= 0 &&
		    cal.ngrowth < (int)(sizeof cal.growth / sizeof cal.growth[0]))
			cal.growth[cal.ngrowth++] = cal.pending_site;
		cal.buf = cal.pending;
		cal.buf_size = cal.pending_size;
		cal.pending = NULL;
	}
	cal_settle();
}

static void calibrate(void)
{
	/* 39 bytes with the quotes: the lexer's buffer grows 16 → 32 → 64. */
	static const char text[] = "\"calibrating jansson's lexer buffer...\"";
	json_t *v;
	int ok;

	memset(&cal, 0, sizeof cal);
	scope = CALIBRATING;
	v = json_loadb(text, sizeof text - 1, JSON_DECODE_ANY, NULL);
	cal_settle();
	ok = json_is_string(v) && json_string_length(v) == sizeof text - 3 && cal.ngrowth == 2 &&
	     cal.growth[0] == cal.growth[1];
	for (int i = 0; ok && i < cal.nother; i++)
		ok = cal.other[i] != cal.growth[0];
	json_decref(v);
	scope = OUTSIDE;
	growth_site = ok ? cal.growth[0] : NULL;
}

/* ---- the hooks --------------------------------------------------------------------- */

/* noinline: the return address must be jansson's, not an inlining caller's. */
__attribute__((noinline)) static void *hook_malloc(size_t n)
{
	const void *site = __builtin_return_address(0);
	void *p;

	switch (scope) {
	case OUTSIDE: return sys_malloc(n);
	case CALIBRATING: return cal_malloc(n, site);
	case LOADING:
	case DUMPING: break;
	}
	if (!failed) {
		p = sys_malloc(n);
		if (p != NULL)
			return p;
		failed = 1;
	}
	/* The call is lost: fail fast, but never let the lexer drop a byte. */
	if (scope == LOADING && growth_site != NULL && site == growth_site && (n & (n - 1)) == 0)
		return reserve_take(n);
	return NULL;
}

static void hook_free(void *p)
{
	if (in_reserve(p)) {
		rsv.live--;
		return;
	}
	if ((uintptr_t)p - (uintptr_t)cal.mem < sizeof cal.mem) {
		if (scope == CALIBRATING)
			cal_free(p);
		return;
	}
	sys_free(p);
}

/* Values made before the switch are freed by sys_free, which made them. */
static void install(void)
{
	if (installed)
		return;
	installed = 1;
	json_get_alloc_funcs(&sys_malloc, &sys_free);
	json_set_alloc_funcs(hook_malloc, hook_free);
	calibrate();
}

int tp_json_lexer_guarded(void)
{
	install();
	return growth_site != NULL;
}

static void begin(enum scope s)
{
	install();
	scope = s;
	failed = 0;
}

/* Ends the call; returns whether an allocation failed in it. */
static int end(void)
{
	int f = failed;
	scope = OUTSIDE;
	failed = 0;
	reserve_release();
	return f;
}

/* ---- the calls --------------------------------------------------------------------- */

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
	int column;

	install();
	if ((flags & JSON_ALLOW_NUL) && memmem(buf, len, "\\u0000", 6) != NULL) {
		if (find_key_escapes(buf, len, &e) != 0)
			goto oom;
		if (e.nul && (rewritten = rewrite(buf, len, &e, &text_len)) == NULL)
			goto oom;
		if (rewritten != NULL)
			text = rewritten;
	}
	/* Without room for every growth a byte could still be dropped: refuse instead. */
	if (growth_site != NULL && reserve_ensure(reserve_need(text_len)) != 0)
		goto oom;
	begin(LOADING);
	j = json_loadb(text, text_len, flags, &jerr);
	if (failed) {
		json_decref(j); /* before end(): its frees may be reserve blocks' */
		end();
		goto oom;
	}
	end();
	if (j != NULL && rewritten != NULL && unescape_keys(j) != 0) {
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

static char *dumps(const json_t *json, size_t flags, int tidy)
{
	char *s;

	begin(DUMPING);
	s = json_dumps(json, flags);
	if (end()) {
		if (s != NULL)
			sys_free(s);
		return NULL;
	}
	if (s != NULL && tidy)
		tp_json_tidy_reals(s, strlen(s)); /* 0.1, not 0.10000000000000001 */
	return s;
}

char *tp_json_dumps(const json_t *json, size_t flags)
{
	return dumps(json, flags, 1);
}

char *tp_json_dumps_frame(const json_t *json, size_t flags)
{
	return dumps(json, flags, 0);
}

/* ---- splicing a node's text into a dump ------------------------------------------ */

struct sbuf {
	char *s;
	size_t n, cap;
	int bad;
};

/* Room for n more bytes and a NUL. */
static void sb_room(struct sbuf *b, size_t n)
{
	if (b->bad || b->cap - b->n > n)
		return;
	/* jansson's own allocator, as for what tp_json_dumps returns */
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->n <= n)
		cap *= 2;
	char *t = sys_malloc(cap);
	if (t == NULL) {
		b->bad = 1;
		return;
	}
	if (b->s != NULL)
		memcpy(t, b->s, b->n);
	sys_free(b->s);
	b->s = t;
	b->cap = cap;
}

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	sb_room(b, n);
	if (b->bad)
		return;
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

/* One of the nodes is a member of j, at most depth levels down (containers only). */
static int holds(const json_t *j, const struct tp_json_raw *r, size_t nr, int depth)
{
	const char *k;
	size_t i;
	json_t *v;

	if (depth <= 0)
		return 0;
	if (json_is_object(j)) {
		json_object_foreach((json_t *)j, k, v)
		{
			for (size_t x = 0; x < nr; x++)
				if (v == r[x].node)
					return 1;
			if (holds(v, r, nr, depth - 1))
				return 1;
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
		{
			for (size_t x = 0; x < nr; x++)
				if (v == r[x].node)
					return 1;
			if (holds(v, r, nr, depth - 1))
				return 1;
		}
	}
	return 0;
}

static void sb_dump(struct sbuf *b, const json_t *j, size_t flags)
{
	char *s = dumps(j, flags | JSON_ENCODE_ANY, 1);
	if (s == NULL) {
		b->bad = 1;
		return;
	}
	sb_put(b, s, strlen(s));
	sys_free(s);
}

/* Writes s[0 .. n) quoted into o (room for 2n + 2 bytes): '"' and '\\'
 * escaped, as jansson writes them. Returns the bytes written, or 0 when s holds
 * a control character (which JSON text has none of outside escapes): the
 * caller then has jansson dump it. Sixteen bytes at a time where SSE2 is
 * there (every x86-64): a block with nothing to escape is copied whole. */
static size_t quote_text(char *o, const unsigned char *s, size_t n)
{
	char *start = o;
	size_t i = 0;

	*o++ = '"';
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
		      c1f = _mm_set1_epi8(0x1f);
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(s + i));
		__m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, c1f), x); /* x <= 0x1f */
		__m128i esc = _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash));
		if (_mm_movemask_epi8(ctl) != 0)
			return 0;
		if (_mm_movemask_epi8(esc) == 0) {
			_mm_storeu_si128((__m128i *)o, x);
			o += 16;
			continue;
		}
		for (size_t k = i; k < i + 16; k++) {
			if (s[k] == '"' || s[k] == '\\')
				*o++ = '\\';
			*o++ = (char)s[k];
		}
	}
#endif
	for (; i < n; i++) {
		if (s[i] < 0x20)
			return 0;
		if (s[i] == '"' || s[i] == '\\')
			*o++ = '\\';
		*o++ = (char)s[i];
	}
	*o++ = '"';
	return (size_t)(o - start);
}

/* A string node whose content is r->raw, quoted: '"' and '\\' escaped, as
 * jansson writes them. Any control character (which JSON text has none of
 * outside escapes) or content that is not r->raw: jansson's own dump. A
 * stand-in (string 2) is not compared: its content is r->raw. */
static void sb_string(struct sbuf *b, const json_t *j, const struct tp_json_raw *r, size_t flags)
{
	if (r->string != 2 &&
	    (json_string_length(j) != r->n || memcmp(json_string_value(j), r->raw, r->n) != 0)) {
		sb_dump(b, j, flags);
		return;
	}
	sb_room(b, 2 * r->n + 2);
	if (b->bad)
		return;
	size_t m = quote_text(b->s + b->n, (const unsigned char *)r->raw, r->n);
	if (m > 0) {
		b->n += m;
		b->s[b->n] = '\0';
		return;
	}
	if (r->string != 2) {
		sb_dump(b, j, flags);
		return;
	}
	json_t *t = json_stringn_nocheck(r->raw, r->n); /* a stand-in: the string is raw */
	if (t == NULL)
		b->bad = 1;
	else
		sb_dump(b, t, flags);
	json_decref(t);
}

/* json as tp_json_dumps writes it with JSON_COMPACT, the nodes' texts spliced. */
static void splice(struct sbuf *b, const json_t *j, size_t flags, const struct tp_json_raw *r,
		   size_t nr, int depth)
{
	const char *k;
	size_t i, klen;
	json_t *v;
	int first = 1;

	for (size_t x = 0; x < nr; x++)
		if (j == r[x].node) {
			if (r[x].string)
				sb_string(b, j, &r[x], flags);
			else
				sb_put(b, r[x].raw, r[x].n);
			return;
		}
	if (!holds(j, r, nr, depth)) {
		sb_dump(b, j, flags);
		return;
	}
	if (json_is_array(j)) {
		sb_put(b, "[", 1);
		json_array_foreach(j, i, v)
		{
			if (i > 0)
				sb_put(b, ",", 1);
			splice(b, v, flags, r, nr, depth - 1);
		}
		sb_put(b, "]", 1);
		return;
	}
	sb_put(b, "{", 1);
	json_object_keylen_foreach((json_t *)j, k, klen, v)
	{
		json_t *key = json_stringn_nocheck(k, klen);
		if (key == NULL) {
			b->bad = 1;
			return;
		}
		if (!first)
			sb_put(b, ",", 1);
		first = 0;
		sb_dump(b, key, flags);
		json_decref(key);
		sb_put(b, ":", 1);
		splice(b, v, flags, r, nr, depth - 1);
	}
	sb_put(b, "}", 1);
}

char *tp_json_dumps_splice(const json_t *json, size_t flags, const struct tp_json_raw *r, size_t nr,
			   int depth)
{
	struct tp_json_raw ok[TP_JSON_RAW_MAX];
	size_t n = 0;

	/* Only the compact form has no separators of its own to match. */
	for (size_t x = 0; x < nr && n < TP_JSON_RAW_MAX; x++)
		if (r[x].node != NULL && r[x].raw != NULL &&
		    (r[x].string ? json_is_string(r[x].node)
				 : json_is_object(r[x].node) || json_is_array(r[x].node)))
			ok[n++] = r[x];
	if (n == 0 || (flags & ~(size_t)JSON_COMPACT) != 0 || !holds(json, ok, n, depth))
		return tp_json_dumps(json, flags);
	struct sbuf b = { 0 };
	install();
	splice(&b, json, flags, ok, n, depth);
	if (b.bad || b.s == NULL) {
		if (b.s != NULL)
			sys_free(b.s);
		return NULL;
	}
	return b.s;
}

size_t tp_json_size(const json_t *json, size_t flags)
{
	size_t n;

	begin(DUMPING);
	n = json_dumpb(json, NULL, 0, flags);
	if (end())
		return (size_t)-1;
	return n == 0 && json != NULL ? (size_t)-1 : n;
}
