/*
 * policy.c — policies: parse with jansson, validate every key (with the file,
 * line and column of what is wrong), resolve "extends", and write them back
 * out. Every byte of a policy file is treated as hostile: sizes, depths, list
 * lengths and string lengths are bounded before anything is kept.
 */
#include "policy.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonio.h"
#include "policy_catalog.h"
#include "regex_cost.h"

#define MAX_FILE (1u << 20)
#define MAX_STR 4096

extern const char *const tp_preset_names[];
extern const char *const tp_preset_texts[];

struct tp_policy_set {
	struct tp_policy *p[TP_POLICY_MAX];
	size_t n;
	struct tp_policy_report *report; /* the caller's, or NULL: where loads tell every error */
	int pure; /* a view of tp_policy_set_check_text(): no look at the host's files or env */
};

/* ---- positions: where a key or an element sits in the text ---------------- */

/* A step of a path: a key (key != NULL) or an array index. */
struct step {
	const char *key;
	size_t idx;
};

struct scan {
	const char *s, *end;
	const char *hit; /* where the path ends */
};

static void ws(struct scan *c)
{
	while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r'))
		c->s++;
}

static int skip_string(struct scan *c)
{
	if (c->s >= c->end || *c->s != '"')
		return -1;
	for (c->s++; c->s < c->end; c->s++) {
		if (*c->s == '\\')
			c->s++;
		else if (*c->s == '"') {
			c->s++;
			return 0;
		}
	}
	return -1;
}

static int scan_value(struct scan *c, const struct step *path, int n, int depth);

/* Does the key token [a, b) (quotes included) decode to key? Without an escape
 * the bytes are the key: compared directly, since a report places up to
 * TP_POLICY_MAX_ERRORS keys, each by a scan of the whole text. */
static int key_is(const char *a, const char *b, const char *key)
{
	size_t n = (size_t)(b - a);
	if (n >= 2 && memchr(a, '\\', n) == NULL)
		return n - 2 == strlen(key) && memcmp(a + 1, key, n - 2) == 0;
	json_t *k = json_loadb(a, n, JSON_DECODE_ANY, NULL);
	int eq = json_is_string(k) && strcmp(json_string_value(k), key) == 0;
	json_decref(k);
	return eq;
}

static int scan_value(struct scan *c, const struct step *path, int n, int depth)
{
	if (depth > 64)
		return -1;
	ws(c);
	if (c->s >= c->end)
		return -1;
	if (*c->s == '{') {
		c->s++;
		ws(c);
		if (c->s < c->end && *c->s == '}') {
			c->s++;
			return 0;
		}
		for (;;) {
			ws(c);
			const char *k = c->s;
			if (skip_string(c) < 0)
				return -1;
			int mine = n > 0 && path[0].key != NULL && key_is(k, c->s, path[0].key);
			ws(c);
			if (c->s >= c->end || *c->s++ != ':')
				return -1;
			if (mine && n == 1 && c->hit == NULL)
				c->hit = k;
			if (scan_value(c, mine ? path + 1 : NULL, mine ? n - 1 : 0, depth + 1) < 0)
				return -1;
			ws(c);
			if (c->s < c->end && *c->s == ',') {
				c->s++;
				continue;
			}
			if (c->s < c->end && *c->s == '}') {
				c->s++;
				return 0;
			}
			return -1;
		}
	}
	if (*c->s == '[') {
		c->s++;
		ws(c);
		if (c->s < c->end && *c->s == ']') {
			c->s++;
			return 0;
		}
		for (size_t i = 0;; i++) {
			ws(c);
			int mine = n > 0 && path[0].key == NULL && path[0].idx == i;
			if (mine && n == 1 && c->hit == NULL)
				c->hit = c->s;
			if (scan_value(c, mine ? path + 1 : NULL, mine ? n - 1 : 0, depth + 1) < 0)
				return -1;
			ws(c);
			if (c->s < c->end && *c->s == ',') {
				c->s++;
				continue;
			}
			if (c->s < c->end && *c->s == ']') {
				c->s++;
				return 0;
			}
			return -1;
		}
	}
	if (*c->s == '"')
		return skip_string(c);
	while (c->s < c->end && !strchr(",]} \t\r\n", *c->s))
		c->s++;
	return 0;
}

/* Line and column (both from 1, columns in bytes) of path in text, or of its
 * longest prefix there (a key a parent wrote is not in the child's text); 1:1
 * if none is. */
static void position(const char *text, size_t len, const struct step *path, int n, int *line,
		     int *col)
{
	const char *at = text;

	for (; n > 0 && at == text; n--) {
		struct scan c = { .s = text, .end = text + len, .hit = NULL };
		if (scan_value(&c, path, n, 0) == 0 && c.hit != NULL)
			at = c.hit;
	}
	*line = 1;
	*col = 1;
	for (const char *p = text; p < at; p++) {
		if (*p == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* ---- reports ---------------------------------------------------------------- */

/* Adds one message: kept while there is room (an exact repeat, as when a file
 * two others extend fails for both, is kept once), else counted. */
static void report_add(struct tp_policy_report *r, int line, int col, const char *msg)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->e[i].msg, msg) == 0)
			return;
	if (r->n >= TP_POLICY_MAX_ERRORS) {
		r->more++;
		return;
	}
	struct tp_policy_error *e = &r->e[r->n++];
	e->line = line;
	e->col = col;
	snprintf(e->msg, sizeof e->msg, "%s", msg);
}

/* Orders e[from ..] (one file's errors) by place in the text, stably: an
 * insertion sort over at most TP_POLICY_MAX_ERRORS. */
static void report_sort(struct tp_policy_report *r, size_t from)
{
	for (size_t i = from + 1; r != NULL && i < r->n; i++) {
		struct tp_policy_error e = r->e[i];
		size_t j = i;
		for (; j > from && (r->e[j - 1].line > e.line ||
				    (r->e[j - 1].line == e.line && r->e[j - 1].col > e.col));
		     j--)
			r->e[j] = r->e[j - 1];
		r->e[j] = e;
	}
}

/* ---- validation context ------------------------------------------------------ */

/* One text's validation. Invariant: nerr counts the errors found in it, and the
 * text is bad exactly when nerr > 0; err holds the first error of all (first
 * wins), rep (may be NULL) every one. */
struct ctx {
	const char *file; /* what messages call the text */
	const char *text;
	size_t len;
	struct step path[8];
	int depth;
	int trim; /* the last steps place the message but are not named in it */
	struct tp_err *err;
	struct tp_policy_report *rep;
	size_t nerr;
	int stop;       /* out of memory: validate no further */
	size_t re_cost; /* redact.patterns' tp_regex_cost() so far */
	int pure;       /* judge the text alone: no look at the host's files or environment */
};

static void push_key(struct ctx *c, const char *key)
{
	c->path[c->depth++] = (struct step){ .key = key };
}

static void push_idx(struct ctx *c, size_t i)
{
	c->path[c->depth++] = (struct step){ .key = NULL, .idx = i };
}

static void pop(struct ctx *c)
{
	c->depth--;
}

/* Records one error of the text, already formatted. Returns -1. */
static int note(struct ctx *c, int line, int col, const char *msg)
{
	c->nerr++;
	tp_err_set(c->err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "%s", msg);
	report_add(c->rep, line, col, msg);
	return -1;
}

/* Out of memory: recorded, and the validation stops. Returns -1. */
static int oom(struct ctx *c)
{
	char msg[TP_ERR_MSG_MAX];
	c->nerr++;
	c->stop = 1;
	tp_err_oom(c->err, TP_LAYER_HOST);
	snprintf(msg, sizeof msg, "%s: out of memory", c->file);
	report_add(c->rep, 0, 0, msg);
	return -1;
}

/* The path as messages name it: "a.b[2]", without the trimmed steps. */
static void path_name(const struct ctx *c, char *where, size_t size)
{
	size_t w = 0;
	where[0] = '\0';
	for (int i = 0; i < c->depth - c->trim && w < size - 1; i++) {
		int k = c->path[i].key
			    ? snprintf(where + w, size - w, "%s%s", i ? "." : "", c->path[i].key)
			    : snprintf(where + w, size - w, "[%zu]", c->path[i].idx);
		if (k < 0)
			break;
		w += (size_t)k;
	}
}

/* "FILE:LINE:COL: a.b[2]: message" — always returns -1. An error that neither
 * err nor the report would keep is only counted: it costs no scan of the text. */
static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct ctx *c, const char *fmt, ...)
{
	char where[160], msg[TP_ERR_MSG_MAX];
	int line, col, n;
	va_list ap;

	if (c->nerr > 0 && (c->rep == NULL || c->rep->n >= TP_POLICY_MAX_ERRORS)) {
		c->nerr++;
		if (c->rep != NULL)
			c->rep->more++;
		return -1;
	}
	path_name(c, where, sizeof where);
	position(c->text, c->len, c->path, c->depth, &line, &col);
	if (c->depth - c->trim > 0)
		n = snprintf(msg, sizeof msg, "%s:%d:%d: %s: ", c->file, line, col, where);
	else
		n = snprintf(msg, sizeof msg, "%s:%d:%d: ", c->file, line, col);
	/* A message longer than msg is cut, as tp_err_set() would cut it. */
	size_t off = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof msg - off, fmt, ap);
	va_end(ap);
	return note(c, line, col, msg);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* Each key of obj that is not known is an error; the known ones stay to be read. */
static int check_keys(struct ctx *c, const json_t *obj, const char *const *known)
{
	const char *key;
	json_t *v;
	int rc = 0;

	json_object_foreach((json_t *)obj, key, v)
	{
		int ok = 0;
		for (size_t i = 0; known[i] != NULL && !ok; i++)
			ok = strcmp(known[i], key) == 0;
		if (!ok) {
			char list[400] = "";
			size_t w = 0;
			for (size_t i = 0; known[i] != NULL && w < sizeof list; i++)
				w += (size_t)snprintf(list + w, sizeof list - w, "%s%s",
						      i ? ", " : "", known[i]);
			push_key(c, key);
			c->trim = 1;
			rc = bad(c, "unknown key '%.64s' (known: %s)", key, list);
			c->trim = 0;
			pop(c);
		}
	}
	return rc;
}

static int want_type(struct ctx *c, const json_t *v, json_type t, const char *what)
{
	if (json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v)))
		return 0;
	return bad(c, "must be %s, not %s", what, type_name(v));
}

static int get_uint(struct ctx *c, const json_t *v, uint64_t lo, uint64_t hi, int zero_ok,
		    uint64_t *out)
{
	if (!json_is_integer(v))
		return bad(c, "must be an integer, not %s", type_name(v));
	json_int_t x = json_integer_value(v);
	if ((x == 0 && zero_ok) || (x >= 0 && (uint64_t)x >= lo && (uint64_t)x <= hi)) {
		*out = (uint64_t)x;
		return 0;
	}
	if (zero_ok && lo > 0)
		return bad(c, "%lld is out of range (0 for none, or %llu .. %llu)", (long long)x,
			   (unsigned long long)lo, (unsigned long long)hi);
	return bad(c, "%lld is out of range (%llu .. %llu)", (long long)x, (unsigned long long)lo,
		   (unsigned long long)hi);
}

static int get_str(struct ctx *c, const json_t *v, size_t max, char **out)
{
	if (!json_is_string(v))
		return bad(c, "must be a string, not %s", type_name(v));
	if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
		return bad(c, "must be a string of at most %zu bytes without NUL", max);
	free(*out);
	*out = strdup(json_string_value(v));
	if (*out == NULL)
		return oom(c);
	return 0;
}

static int in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

void tp_strv_free(struct tp_strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

static int strv_copy(struct tp_strv *dst, const struct tp_strv *src)
{
	struct tp_strv out = { .v = calloc(src->n + 1, sizeof(char *)), .n = 0 };
	if (out.v == NULL)
		return -1;
	for (; out.n < src->n; out.n++)
		if ((out.v[out.n] = strdup(src->v[out.n])) == NULL) {
			tp_strv_free(&out);
			return -1;
		}
	tp_strv_free(dst);
	*dst = out;
	return 0;
}

/* A checker for one element: 0, or -1 after bad(). */
typedef int (*elem_check)(struct ctx *c, const char *s, const void *arg);

/* A list of strings, each element checked; every bad element is reported and
 * then the list is not taken (out stays as it was). */
static int get_strv(struct ctx *c, const json_t *v, elem_check check, const void *arg,
		    struct tp_strv *out)
{
	struct tp_strv next = { 0 };
	int bad_elems = 0;

	if (!json_is_array(v))
		return bad(c, "must be a list of strings, not %s", type_name(v));
	if (json_array_size(v) > TP_POLICY_MAX_ITEMS)
		return bad(c, "has %zu entries; at most %u", json_array_size(v),
			   TP_POLICY_MAX_ITEMS);
	next.v = calloc(json_array_size(v) + 1, sizeof(char *));
	if (next.v == NULL)
		return oom(c);
	for (size_t i = 0; i < json_array_size(v) && !c->stop; i++) {
		json_t *e = json_array_get(v, i);
		char *s = NULL;
		push_idx(c, i);
		int rc = get_str(c, e, TP_POLICY_MAX_PATH, &s);
		if (rc == 0 && check != NULL)
			rc = check(c, s, arg);
		for (size_t j = 0; rc == 0 && j < next.n; j++)
			if (strcmp(next.v[j], s) == 0)
				rc = bad(c, "'%.64s' is listed twice", s);
		pop(c);
		if (rc != 0) {
			free(s);
			bad_elems = 1;
			continue;
		}
		next.v[next.n++] = s;
	}
	if (bad_elems || c->stop) {
		tp_strv_free(&next);
		return -1;
	}
	tp_strv_free(out);
	*out = next;
	return 0;
}

static int check_catalog(struct ctx *c, const char *s, const void *arg)
{
	const char *const *cat = arg;
	if (in_list(cat, s))
		return 0;
	if (cat == tp_catalog_py_modules)
		return bad(c,
			   "module '%.64s' cannot be preloaded: it is not one tidepool can "
			   "offer inside its language layer (`tidepool policy show "
			   "permissive` lists them all)",
			   s);
	if (cat == tp_catalog_py_builtins)
		return bad(c, "builtin '%.64s' is not one a policy can grant", s);
	if (cat == tp_catalog_lua_libraries) {
		char all[200] = "";
		size_t w = 0;
		for (size_t i = 0; cat[i] != NULL && w < sizeof all; i++)
			w += (size_t)snprintf(all + w, sizeof all - w, "%s%s", i ? ", " : "",
					      cat[i]);
		return bad(c, "'%.64s' is not a Lua library tidepool offers (%s)", s, all);
	}
	return bad(c, "'%.64s' is not a Lua function tidepool offers", s);
}

static int check_name(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	size_t n = strlen(s);
	int ok = n >= 1 && n <= TP_POLICY_NAME_MAX;
	for (size_t i = 0; ok && i < n; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		     (i > 0 && (s[i] == '-' || s[i] == '_'));
	if (!ok)
		return bad(c,
			   "'%.64s' is not a name: 1 to %d of a-z, 0-9, '-' and '_', starting "
			   "with a letter or digit",
			   s, TP_POLICY_NAME_MAX);
	return 0;
}

static int check_tool(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	size_t n = strlen(s);
	int ok = n >= 1 && n <= 64;
	for (size_t i = 0; ok && i < n; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		     (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.';
	if (!ok)
		return bad(c, "'%.64s' is not a tool name: 1 to 64 of A-Z, a-z, 0-9, '_', '-', '.'",
			   s);
	return 0;
}

static int check_env(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	int ok = s[0] != '\0' && !(s[0] >= '0' && s[0] <= '9') && strlen(s) <= 128;
	for (const char *p = s; ok && *p; p++)
		ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		     (*p >= '0' && *p <= '9') || *p == '_';
	if (!ok)
		return bad(c, "'%.64s' is not an environment variable name", s);
	return 0;
}

static int check_secret(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	if (strlen(s) < 4)
		return bad(c, "a string to redact needs at least 4 bytes (shorter ones would "
			      "mangle ordinary output)");
	return 0;
}

/* What compiling one pattern may cost, and all of a policy's together (each is
 * compiled again, and kept, by the host): tp_regex_measure()'s nodes. a{1,999}
 * is 1000, and glibc's compiled form of it some 8 MB. */
#define RE_MAX_COST 1000
#define RE_MAX_TOTAL 2000

static int check_pattern(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	regex_t re;
	struct tp_regex_measure m;
	tp_regex_measure(s, RE_MAX_COST, &m);
	if (m.cost > RE_MAX_COST)
		return bad(c,
			   "'%.64s' is too costly to compile: its repetitions copy what they "
			   "repeat ('a+' twice, 'a{1,50}' fifty times, a repetition of one "
			   "multiplies), past %d",
			   s, RE_MAX_COST);
	if (m.repeats_empty)
		return bad(c,
			   "'%.64s' repeats what can match the empty string ('a**', '(a?)+', "
			   "'(|a){2}', '(^)*'): it means the same without that repetition, and "
			   "compiling it can take exponential time",
			   s);
	if ((c->re_cost += m.cost) > RE_MAX_TOTAL)
		return bad(
		    c, "the patterns up to this one are too costly to compile together: past %d",
		    RE_MAX_TOTAL);
	int rc = regcomp(&re, s, REG_EXTENDED);
	if (rc != 0) {
		char why[128];
		regerror(rc, &re, why, sizeof why);
		return bad(c, "'%.64s' is not a POSIX extended regular expression: %s", s, why);
	}
	/* A pattern that matches the empty string would insert at every position. */
	int empty = regexec(&re, "", 0, NULL, 0) == 0;
	regfree(&re);
	if (empty)
		return bad(c, "'%.64s' matches the empty string", s);
	return 0;
}

/* Absolute, normalized, an existing file or directory that is not a symlink,
 * outside the kernel's own filesystems. */
static int check_path(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	char real[PATH_MAX];
	struct stat st;

	if (s[0] != '/')
		return bad(c, "'%.200s' is relative: grants take absolute paths", s);
	for (const char *p = s; *p; p++) {
		if (p[0] == '/' && (p[1] == '/' || (p[1] == '\0' && p != s)))
			return bad(c, "'%.200s' is not normalized (a double or trailing '/')", s);
		if (p[0] == '/' && p[1] == '.' &&
		    (p[2] == '/' || p[2] == '\0' || (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
			return bad(c, "'%.200s' has a '.' or '..' component", s);
	}
	static const char *const kernel_fs[] = { "/proc", "/sys", "/dev", NULL };
	for (size_t i = 0; kernel_fs[i] != NULL; i++) {
		size_t n = strlen(kernel_fs[i]);
		if (strncmp(s, kernel_fs[i], n) == 0 && (s[n] == '/' || s[n] == '\0'))
			return bad(c,
				   "'%.200s' is in %s: the kernel's own filesystems cannot be "
				   "granted",
				   s, kernel_fs[i]);
	}
	if (c->pure) /* a caller of the server learns nothing of the host's files */
		return 0;
	if (lstat(s, &st) != 0)
		return bad(c, "'%.200s': %s", s, strerror(errno));
	if (realpath(s, real) == NULL)
		return bad(c, "'%.200s': %s", s, strerror(errno));
	if (strcmp(real, s) != 0)
		return bad(c, "'%.200s' leads through a symlink to '%.200s': grant that path", s,
			   real);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return bad(c, "'%.200s' is neither a directory nor a regular file", s);
	return 0;
}

/* ---- one file's keys -------------------------------------------------------- */

static int check_isolation(struct ctx *c, const char *s, const void *arg)
{
	(void)arg;
	if (strcmp(s, "process") != 0 && strcmp(s, "state") != 0)
		return bad(c,
			   "'%.32s' is not an isolation tidepool has: \"process\" (a "
			   "fresh process for every exec) or \"state\" (Lua: a fresh "
			   "Lua state for every exec, in a worker that serves several)",
			   s);
	return 0;
}

static const elem_check checks[] = {
	[TP_PC_NONE] = NULL,
	[TP_PC_NAME] = check_name,
	[TP_PC_ISOLATION] = check_isolation,
	[TP_PC_CATALOG] = check_catalog,
	[TP_PC_PATH] = check_path,
	[TP_PC_TOOL] = check_tool,
	[TP_PC_SECRET] = check_secret,
	[TP_PC_PATTERN] = check_pattern,
	[TP_PC_ENV] = check_env,
};

#define OFF(f) offsetof(struct tp_policy, f)
/* The rows of each type: (section, key, field, ...). */
#define U64(s, k, f, lo, hi, d, fl)                                                                \
	{                                                                                          \
		s, k, TP_PT_U64, OFF(f), lo, hi, d, NULL, fl, TP_PC_NONE, NULL                     \
	}
#define BOOL(s, k, f, d)                                                                           \
	{                                                                                          \
		s, k, TP_PT_BOOL, OFF(f), 0, 1, d, NULL, 0, TP_PC_NONE, NULL                       \
	}
#define STR(s, k, f, max, sd, fl, ck)                                                              \
	{                                                                                          \
		s, k, TP_PT_STR, OFF(f), 0, max, 0, sd, fl, ck, NULL                               \
	}
#define STRV(s, k, f, fl, ck, arg)                                                                 \
	{                                                                                          \
		s, k, TP_PT_STRV, OFF(f), 0, 0, 0, NULL, fl, ck, arg                               \
	}
#define LANGS(s, k, f)                                                                             \
	{                                                                                          \
		s, k, TP_PT_LANGS, OFF(f), 0, 0, 0, NULL, 0, TP_PC_NONE, NULL                      \
	}
/* A limit's row, from its line of TP_LIMITS (limits.h). */
#define LIMIT(id, name, d, lo, hi, off, message)                                                   \
	U64("limits", #name, limits.name, lo, hi, d, (off) ? TP_PK_ZERO_OK : 0),
#define NONE TP_PC_NONE
#define ZERO TP_PK_ZERO_OK

/* The format, one row per key, in the order of the keys everywhere. A policy
 * without "extends" starts from the defaults: both languages, the built-in
 * limits, the language layer on, standard's session values and nothing in its
 * lists (every default must pass validation again: the zygote re-reads the wire
 * form). */
const struct tp_policy_key tp_policy_keys[] = {
	STR(NULL, "name", name, TP_POLICY_NAME_MAX, NULL, TP_PK_OWN | TP_PK_REQUIRED, TP_PC_NAME),
	STR(NULL, "description", description, 1000, "", 0, NONE),
	STR(NULL, "extends", extends, TP_POLICY_NAME_MAX, NULL, TP_PK_OWN | TP_PK_NO_JSON,
	    TP_PC_NAME),
	LANGS(NULL, "languages", languages),
	TP_LIMITS(LIMIT) /* the limits */
	BOOL(NULL, "language_layer", language_layer, 1),
	STRV("lua", "libraries", lua_libraries, 0, TP_PC_CATALOG, tp_catalog_lua_libraries),
	STRV("lua", "functions", lua_functions, 0, TP_PC_CATALOG, tp_catalog_lua_functions),
	STRV("python", "modules", py_modules, 0, TP_PC_CATALOG, tp_catalog_py_modules),
	STRV("python", "builtins", py_builtins, 0, TP_PC_CATALOG, tp_catalog_py_builtins),
	STRV("filesystem", "read", fs_read, 0, TP_PC_PATH, NULL),
	STRV("filesystem", "write", fs_write, 0, TP_PC_PATH, NULL),
	U64("filesystem", "file_bytes", file_bytes, 1, 1ull << 30, 0, ZERO),
	STRV(NULL, "tools", tools, 0, TP_PC_TOOL, NULL),
	U64("session", "max_sessions", session.max_sessions, 0, 100000, 16, 0),
	U64("session", "idle_ms", session.idle_ms, 1000, 86400000, 600000, 0),
	U64("session", "max_execs", session.max_execs, 1, 10000000, 1000, 0),
	U64("session", "memory_bytes", session.memory_bytes, 1u << 20, TP_POLICY_MAX_MEMORY,
	    64u << 20, 0),
	U64("session", "lifetime_ms", session.lifetime_ms, 1000, 604800000, 3600000, 0),
	U64("session", "workspace_bytes", session.workspace_bytes, 0, 1ull << 30, 0, 0),
	STR(NULL, "isolation", isolation, 32, "process", 0, TP_PC_ISOLATION),
	U64("rate", "per_minute", rate.per_minute, 0, 1000000, 0, 0),
	U64("rate", "session_per_minute", rate.session_per_minute, 0, 1000000, 0, 0),
	STRV("redact", "strings", redact_strings, TP_PK_HOST, TP_PC_SECRET, NULL),
	STRV("redact", "patterns", redact_patterns, TP_PK_HOST, TP_PC_PATTERN, NULL),
	STRV("redact", "env", redact_env, TP_PK_HOST, TP_PC_ENV, NULL),
};

#undef OFF
#undef LIMIT
#undef U64
#undef BOOL
#undef STR
#undef STRV
#undef LANGS
#undef NONE
#undef ZERO

#define NKEYS (sizeof tp_policy_keys / sizeof tp_policy_keys[0])
const size_t tp_policy_nkeys = NKEYS;

#define FIELD(p, k) ((void *)((char *)(p) + (k)->off))

uint64_t tp_policy_key_u64(const struct tp_policy *p, const struct tp_policy_key *k)
{
	const void *f = (const char *)p + k->off;
	if (k->type == TP_PT_U64)
		return *(const uint64_t *)f;
	if (k->type == TP_PT_BOOL)
		return (uint64_t) * (const int *)f;
	return 0;
}

/* The name a row has at the top level: its section's, or its own. */
static const char *top_name(const struct tp_policy_key *k)
{
	return k->section ? k->section : k->key;
}

static int same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The row of section sec (NULL: the top level) named key; it must be one. */
static const struct tp_policy_key *key_row(const char *sec, const char *key)
{
	size_t i = 0;
	while (i + 1 < NKEYS &&
	       !(same(tp_policy_keys[i].section, sec) && strcmp(tp_policy_keys[i].key, key) == 0))
		i++;
	return &tp_policy_keys[i];
}

/* The top-level keys, in order (each section once): n of them into out[], NULL-terminated. */
static size_t top_names(const char *out[NKEYS + 1])
{
	size_t n = 0;
	for (size_t i = 0; i < NKEYS; i++)
		if (n == 0 || !same(out[n - 1], top_name(&tp_policy_keys[i])))
			out[n++] = top_name(&tp_policy_keys[i]);
	out[n] = NULL;
	return n;
}

/* The keys of section sec, in order, NULL-terminated. */
static void section_names(const char *sec, const char *out[NKEYS + 1])
{
	size_t n = 0;
	for (size_t i = 0; i < NKEYS; i++)
		if (same(tp_policy_keys[i].section, sec))
			out[n++] = tp_policy_keys[i].key;
	out[n] = NULL;
}

/* Which rows a file wrote, for "extends" merging: the child's replace the parent's. */
#define WRITTEN_WORDS ((NKEYS + 31) / 32)
#define WRITTEN(w, i) (((w)[(i) / 32] >> ((i) % 32)) & 1u)

struct parsed {
	struct tp_policy *p;
	uint32_t w[WRITTEN_WORDS]; /* bit i: the file wrote tp_policy_keys[i] */
	int pure;                  /* the ctx's: no look at the host (check_text) */
};

/* An object of known keys: -1 when v is no object (nothing of it can be read);
 * an unknown key is reported and the known ones are read all the same. */
static int sub_object(struct ctx *c, const json_t *v, const char *const *keys)
{
	if (want_type(c, v, JSON_OBJECT, "an object") < 0)
		return -1;
	check_keys(c, v, keys);
	return 0;
}

/* "languages": every unknown name is reported; the bits are set only when all are known. */
static int parse_langs(struct ctx *c, const json_t *v, unsigned *out)
{
	struct tp_strv names = { 0 };
	unsigned langs = 0;
	size_t nerr = c->nerr;
	char all[128];

	if (get_strv(c, v, NULL, NULL, &names) < 0)
		return -1;
	for (size_t i = 0; i < names.n; i++) {
		const struct tp_lang_info *l = tp_langs_by_name(names.v[i]);
		if (l != NULL) {
			langs |= 1u << l->id;
			continue;
		}
		push_idx(c, i);
		bad(c, "unknown language '%.64s' (%s)", names.v[i],
		    tp_langs_names(all, sizeof all, "%s", ", ", " or "));
		pop(c);
	}
	tp_strv_free(&names);
	if (c->nerr > nerr)
		return -1;
	if (langs == 0)
		return bad(c, "must name at least one language");
	*out = langs;
	return 0;
}

/* One row's value v into its field of p: 0, or -1 after bad() (the field as it was). */
static int parse_row(struct ctx *c, const struct tp_policy_key *k, const json_t *v,
		     struct tp_policy *p)
{
	void *f = FIELD(p, k);
	uint64_t val = 0;

	switch (k->type) {
	case TP_PT_U64:
		if (get_uint(c, v, k->lo, k->hi, (k->flags & TP_PK_ZERO_OK) != 0, &val) < 0)
			return -1;
		*(uint64_t *)f = val;
		return 0;
	case TP_PT_BOOL:
		if (want_type(c, v, JSON_TRUE, "a boolean") < 0)
			return -1;
		*(int *)f = json_is_true(v);
		return 0;
	case TP_PT_STR:
		if (get_str(c, v, (size_t)k->hi, (char **)f) < 0)
			return -1;
		return checks[k->check] ? checks[k->check](c, *(char **)f, k->arg) : 0;
	case TP_PT_STRV: return get_strv(c, v, checks[k->check], k->arg, f);
	case TP_PT_LANGS: return parse_langs(c, v, f);
	}
	return -1;
}

/* The top-level key top (a key of its own, or a section) of the text, v, into o. */
static void parse_top(struct ctx *c, const char *top, const json_t *v, struct parsed *o)
{
	const char *keys[NKEYS + 1];

	for (size_t i = 0; i < NKEYS; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		if (k->section == NULL && strcmp(k->key, top) == 0) {
			if (parse_row(c, k, v, o->p) == 0)
				o->w[i / 32] |= 1u << (i % 32);
			return;
		}
	}
	section_names(top, keys);
	if (sub_object(c, v, keys) < 0)
		return;
	for (size_t i = 0; i < NKEYS && !c->stop; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		json_t *x;
		if (!same(k->section, top) || (x = json_object_get(v, k->key)) == NULL)
			continue;
		push_key(c, k->key);
		int rc = parse_row(c, k, x, o->p);
		pop(c);
		if (rc == 0)
			o->w[i / 32] |= 1u << (i % 32);
	}
}

static struct tp_policy *policy_new(void)
{
	struct tp_policy *p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		void *f = FIELD(p, k);
		switch (k->type) {
		case TP_PT_U64: *(uint64_t *)f = k->def; break;
		case TP_PT_BOOL: *(int *)f = (int)k->def; break;
		case TP_PT_STR:
			if (k->sdef != NULL && (*(char **)f = strdup(k->sdef)) == NULL) {
				tp_policy_free(p);
				return NULL;
			}
			break;
		case TP_PT_STRV: break;
		case TP_PT_LANGS: *(unsigned *)f = (1u << TP_NLANGS) - 1; break;
		}
	}
	return p;
}

void tp_policy_free(struct tp_policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		if (k->type == TP_PT_STR)
			free(*(char **)FIELD(p, k));
		else if (k->type == TP_PT_STRV)
			tp_strv_free(FIELD(p, k));
	}
	free(p->source);
	free(p);
}
/* The JSON of text, or NULL after recording why (its place, or out of memory). */
static json_t *load_json(struct ctx *c)
{
	struct tp_err jerr = { 0 };
	json_error_t je;
	char msg[TP_ERR_MSG_MAX];

	/* Duplicate keys would make "which one counts" a guess: refused. */
	json_t *root = tp_json_loadb(c->text, c->len, JSON_REJECT_DUPLICATES, &jerr);
	if (root != NULL)
		return root;
	if (tp_err_is_oom(&jerr)) {
		oom(c);
		return NULL;
	}
	json_decref(json_loadb(c->text, c->len, JSON_REJECT_DUPLICATES, &je));
	snprintf(msg, sizeof msg, "%s:%d:%d: not valid JSON: %s", c->file, je.line, je.column,
		 je.text);
	note(c, je.line, je.column, msg);
	return NULL;
}

/* Every key of the text into o. Beyond a syntax error every error is found: a
 * bad key or element is reported and skipped, the rest read on. 0, or -1 when
 * any error was found (err: the first; rep: all, in the text's order). */
static int parse_into(const char *text, size_t len, const char *file, struct parsed *o,
		      struct tp_policy_report *rep, struct tp_err *err)
{
	struct ctx c = {
		.file = file, .text = text, .len = len, .err = err, .rep = rep, .pure = o->pure
	};
	size_t first = rep ? rep->n : 0;
	const char *tops[NKEYS + 1];
	json_t *root = NULL;

	top_names(tops);
	if (len > MAX_FILE)
		bad(&c, "larger than %u bytes", MAX_FILE);
	else
		root = load_json(&c);
	if (root != NULL && !json_is_object(root))
		bad(&c, "a policy must be a JSON object, not %s", type_name(root));
	else if (root != NULL)
		check_keys(&c, root, tops);
	for (size_t k = 0; json_is_object(root) && tops[k] != NULL && !c.stop; k++) {
		json_t *v = json_object_get(root, tops[k]);
		if (v == NULL)
			continue;
		push_key(&c, tops[k]);
		parse_top(&c, tops[k], v, o);
		pop(&c);
	}
	for (size_t i = 0; json_is_object(root) && !c.stop && i < NKEYS; i++)
		if ((tp_policy_keys[i].flags & TP_PK_REQUIRED) &&
		    json_object_get(root, tp_policy_keys[i].key) == NULL)
			bad(&c, "a policy needs a \"%s\"", tp_policy_keys[i].key);
	if (o->p->name != NULL && o->p->extends != NULL && strcmp(o->p->extends, o->p->name) == 0)
		bad(&c, "policy '%s' extends itself", o->p->name);
	json_decref(root);
	report_sort(rep, first);
	return c.nerr > 0 ? -1 : 0;
}

struct tp_policy *tp_policy_parse_report(const char *text, size_t len, const char *name,
					 struct tp_policy_report *r, struct tp_err *err)
{
	struct parsed o = { .p = policy_new() };
	if (o.p == NULL) {
		struct ctx c = { .file = name, .err = err, .rep = r };
		oom(&c);
		return NULL;
	}
	if (parse_into(text, len, name, &o, r, err) < 0) {
		tp_policy_free(o.p);
		return NULL;
	}
	return o.p;
}

struct tp_policy *tp_policy_parse(const char *text, size_t len, const char *name,
				  struct tp_err *err)
{
	return tp_policy_parse_report(text, len, name, NULL, err);
}

/* ---- extends ----------------------------------------------------------------- */

/* The child, as written over its parent: every key the child wrote wins (a
 * list whole), every other but its own (name, extends) is the parent's. */
static int merge(struct tp_policy *child, const uint32_t *w, const struct tp_policy *parent)
{
	int rc = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		if (WRITTEN(w, i) || (k->flags & TP_PK_OWN))
			continue;
		void *to = FIELD(child, k);
		const void *from = FIELD(parent, k);
		switch (k->type) {
		case TP_PT_U64: *(uint64_t *)to = *(const uint64_t *)from; break;
		case TP_PT_BOOL: *(int *)to = *(const int *)from; break;
		case TP_PT_STR:
			free(*(char **)to);
			*(char **)to = NULL;
			if (*(char *const *)from != NULL)
				rc |= (*(char **)to = strdup(*(char *const *)from)) == NULL;
			break;
		case TP_PT_STRV: rc |= strv_copy(to, from); break;
		case TP_PT_LANGS: *(unsigned *)to = *(const unsigned *)from; break;
		}
	}
	return rc ? -1 : 0;
}

/* Where a policy's text comes from while a chain is being resolved. */
struct origin {
	const char *dir; /* a file's directory, for NAME.json beside it; NULL for presets */
};

static int preset_index(const char *name)
{
	for (int i = 0; tp_preset_names[i] != NULL; i++)
		if (strcmp(tp_preset_names[i], name) == 0)
			return i;
	return -1;
}

/* A file's text, or NULL after recording why (in c, with no place). */
static char *slurp(struct ctx *c, const char *path, size_t *len)
{
	char msg[TP_ERR_MSG_MAX];
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		snprintf(msg, sizeof msg, "%s: %s", path, strerror(errno));
		note(c, 0, 0, msg);
		return NULL;
	}
	char *buf = malloc(MAX_FILE + 1);
	size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
	int e = ferror(f);
	fclose(f);
	if (buf == NULL) {
		oom(c);
		return NULL;
	}
	if (e || n > MAX_FILE) {
		free(buf);
		snprintf(msg, sizeof msg, "%s: %s", path,
			 e ? "read error" : "larger than 1 MiB: not a policy");
		note(c, 0, 0, msg);
		return NULL;
	}
	*len = n;
	return buf;
}

#define ENV_UNSET "%s is not set, so its value could not be redacted"

/* One rule of the whole policy broken: placed at path (the key that asks for
 * it, or the nearest the file wrote), which the message does not name. */
static void bad_whole(struct ctx *c, const char *k1, const char *k2, const char *why,
		      const struct tp_policy *p)
{
	int depth = c->depth;
	push_key(c, k1);
	if (k2 != NULL)
		push_key(c, k2);
	c->trim = c->depth - depth;
	bad(c, "policy '%s': %s", p->name, why);
	c->trim = 0;
	c->depth = depth;
}

/* Rules about the policy as a whole, after extends, and what the host will need
 * of its environment (tp_policy_check_env()): every one broken is reported. */
static int check_effective(struct ctx *c, const struct tp_policy *p)
{
	size_t first = c->rep ? c->rep->n : 0, nerr = c->nerr;
	char why[200];

	if (p->fs_write.n > 0 && p->file_bytes == 0) {
		const struct tp_policy_key *fb = key_row("filesystem", "file_bytes");
		snprintf(why, sizeof why,
			 "filesystem.file_bytes must be set (%llu .. %llu) when filesystem.write "
			 "grants paths",
			 (unsigned long long)fb->lo, (unsigned long long)fb->hi);
		bad_whole(c, "filesystem", "write", why, p);
	}
	if (strcmp(p->isolation, "state") == 0 && !p->language_layer)
		bad_whole(c, "isolation", NULL,
			  "isolation \"state\" needs the language layer: without it, code can "
			  "corrupt its worker's memory and reach the next exec in it",
			  p);
	if (p->fs_read.n + p->fs_write.n > 16) {
		snprintf(why, sizeof why, "filesystem grants %zu paths; at most 16",
			 p->fs_read.n + p->fs_write.n);
		bad_whole(c, "filesystem", NULL, why, p);
	}
	for (size_t i = 0; i < p->redact_env.n && !c->pure; i++) {
		if (getenv(p->redact_env.v[i]) != NULL)
			continue;
		push_key(c, "redact");
		push_key(c, "env");
		push_idx(c, i);
		bad(c, ENV_UNSET, p->redact_env.v[i]);
		pop(c);
		pop(c);
		pop(c);
	}
	report_sort(c->rep, first);
	return c->nerr > nerr ? -1 : 0;
}

int tp_policy_check_env(const struct tp_policy *p, struct tp_err *err)
{
	for (size_t i = 0; i < p->redact_env.n; i++)
		if (getenv(p->redact_env.v[i]) == NULL)
			return tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0,
					  "policy '%s': redact.env[%zu]: " ENV_UNSET, p->name, i,
					  p->redact_env.v[i]);
	return 0;
}

static struct tp_policy *resolve(struct tp_policy_set *s, const char *text, size_t len,
				 const char *file, const char *dir, const char **chain, int depth,
				 struct tp_err *err);

/* The parent o's "extends" names: a policy of the set, or NAME.json in dir
 * (resolved here: *own), or a preset (also *own). NULL after recording why. */
static struct tp_policy *parent_of(struct tp_policy_set *s, struct ctx *c, const char *dir,
				   const char *name, const char **chain, int depth, int *own)
{
	struct tp_policy *parent = (struct tp_policy *)tp_policy_set_find(s, name);
	char ppath[PATH_MAX];
	struct stat st;

	*own = 0;
	if (parent != NULL)
		return parent;
	if (dir != NULL &&
	    (size_t)snprintf(ppath, sizeof ppath, "%s/%s.json", dir, name) < sizeof ppath &&
	    stat(ppath, &st) == 0) {
		size_t plen;
		char *ptext = slurp(c, ppath, &plen);
		if (ptext == NULL)
			return NULL;
		parent = resolve(s, ptext, plen, ppath, dir, chain, depth + 1, c->err);
		free(ptext);
		*own = parent != NULL;
		return parent;
	}
	int pi = preset_index(name);
	if (pi >= 0) {
		char pfile[64];
		snprintf(pfile, sizeof pfile, "policies/%s.json", tp_preset_names[pi]);
		parent = resolve(s, tp_preset_texts[pi], strlen(tp_preset_texts[pi]), pfile, NULL,
				 chain, depth + 1, c->err);
		*own = parent != NULL;
		return parent;
	}
	if (dir == NULL) /* a text of no file (check_text): no file is looked for */
		bad(c, "extends '%s', which is neither a loaded policy nor a built-in preset",
		    name);
	else
		bad(c,
		    "extends '%s', which is neither a loaded policy, a built-in preset nor a file "
		    "%s.json beside this one",
		    name, name);
	return NULL;
}

/* Whether o's "extends" may be followed from chain[0 .. depth]: no cycle, not too deep. */
static int may_extend(struct ctx *c, const char *name, const char **chain, int depth)
{
	for (int i = 0; i <= depth; i++)
		if (strcmp(chain[i], name) == 0) {
			char cyc[400] = "";
			size_t w = 0;
			for (int j = i; j <= depth && w < sizeof cyc; j++)
				w += (size_t)snprintf(cyc + w, sizeof cyc - w, "%s -> ", chain[j]);
			return bad(c, "'extends' makes a cycle: %s%s", cyc, name);
		}
	if (depth + 1 >= TP_POLICY_MAX_DEPTH)
		return bad(c, "'extends' chains more than %d policies", TP_POLICY_MAX_DEPTH);
	return 0;
}

/* Parses text and resolves its chain: the parent is a policy of the set, or
 * NAME.json in dir, or a preset. chain[] holds the names being resolved. Every
 * error goes to err (the first) and s's report; a text with errors of its own
 * is not resolved further (its parent's and the whole's would mislead). */
static struct tp_policy *resolve(struct tp_policy_set *s, const char *text, size_t len,
				 const char *file, const char *dir, const char **chain, int depth,
				 struct tp_err *err)
{
	struct ctx c = { .file = file,
			 .text = text,
			 .len = len,
			 .err = err,
			 .rep = s->report,
			 .pure = s->pure };
	struct parsed o = { .p = policy_new(), .pure = s->pure };
	struct tp_policy *parent = NULL;
	int own = 0;

	if (o.p == NULL) {
		oom(&c);
		return NULL;
	}
	if (parse_into(text, len, file, &o, s->report, err) < 0)
		goto fail;
	if ((o.p->source = strdup(dir ? file : "built-in")) == NULL) {
		oom(&c);
		goto fail;
	}
	chain[depth] = o.p->name;
	if (o.p->extends != NULL) {
		push_key(&c, "extends");
		if (may_extend(&c, o.p->extends, chain, depth) < 0 ||
		    (parent = parent_of(s, &c, dir, o.p->extends, chain, depth, &own)) == NULL)
			goto fail;
		pop(&c);
		if (merge(o.p, o.w, parent) < 0) {
			oom(&c);
			goto fail;
		}
	}
	if (check_effective(&c, o.p) < 0)
		goto fail;
	if (own)
		tp_policy_free(parent);
	return o.p;
fail:
	if (own)
		tp_policy_free(parent);
	tp_policy_free(o.p);
	return NULL;
}

/* ---- the set ---------------------------------------------------------------- */

const char *tp_policy_preset(size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (tp_preset_names[j] == NULL)
			return NULL;
	return tp_preset_names[i];
}

int tp_policy_equal(const struct tp_policy *a, const struct tp_policy *b)
{
	json_t *x = tp_policy_to_json(a, 1), *y = tp_policy_to_json(b, 1);
	int eq = x != NULL && y != NULL && json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return eq;
}

/* An error of the set, of no place in a text: to err and the report. Returns -1. */
static int refuse(struct tp_policy_set *s, struct tp_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct tp_policy_set *s, struct tp_err *err, const char *fmt, ...)
{
	char msg[TP_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "%s", msg);
	report_add(s->report, 0, 0, msg);
	return -1;
}

/* A name is one policy: a second of the same name is refused, a preset's copy
 * too. A preset's name always means the compiled-in preset, so a copy that
 * matches today would silently differ after an upgrade changes the preset. */
static int add(struct tp_policy_set *s, struct tp_policy *p, struct tp_err *err)
{
	const struct tp_policy *old = tp_policy_set_find(s, p->name);
	if (old != NULL && strcmp(old->source, "built-in") == 0 && tp_policy_equal(old, p))
		return refuse(s, err,
			      "%s: a policy named '%s' is already loaded (from built-in): this "
			      "file is a copy of the preset, which is always there: leave the "
			      "file out and name the preset",
			      p->source, p->name);
	if (old != NULL && strcmp(old->source, "built-in") == 0)
		return refuse(s, err,
			      "%s: a policy named '%s' is already loaded (from built-in): a "
			      "preset's name always means the preset: rename this policy (it may "
			      "extend '%s')",
			      p->source, p->name, p->name);
	if (old != NULL)
		return refuse(s, err, "%s: a policy named '%s' is already loaded (from %s)",
			      p->source, p->name, old->source);
	if (s->n >= TP_POLICY_MAX)
		return refuse(s, err, "%s: more than %d policies", p->source, TP_POLICY_MAX);
	s->p[s->n++] = p;
	return 0;
}

struct tp_policy_set *tp_policy_set_new(struct tp_err *err)
{
	struct tp_policy_set *s = calloc(1, sizeof *s);
	if (s == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		return NULL;
	}
	for (int i = 0; tp_preset_names[i] != NULL; i++) {
		const char *chain[TP_POLICY_MAX_DEPTH];
		char file[64];
		if (tp_policy_set_find(s, tp_preset_names[i]) != NULL)
			continue;
		snprintf(file, sizeof file, "policies/%s.json", tp_preset_names[i]);
		struct tp_policy *p = resolve(s, tp_preset_texts[i], strlen(tp_preset_texts[i]),
					      file, NULL, chain, 0, err);
		if (p == NULL || add(s, p, err) < 0) {
			tp_policy_free(p);
			tp_policy_set_free(s);
			return NULL;
		}
	}
	return s;
}

void tp_policy_set_free(struct tp_policy_set *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		tp_policy_free(s->p[i]);
	free(s);
}

void tp_policy_set_report(struct tp_policy_set *s, struct tp_policy_report *r)
{
	s->report = r;
}

/* One file read and resolved against the set, not added. */
static struct tp_policy *load(struct tp_policy_set *s, const char *path, struct tp_err *err)
{
	struct ctx c = { .file = path, .err = err, .rep = s->report };
	const char *chain[TP_POLICY_MAX_DEPTH];
	char dir[PATH_MAX];
	size_t len;
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
	char *text = slurp(&c, path, &len);
	if (text == NULL)
		return NULL;
	struct tp_policy *p = resolve(s, text, len, path, dir, chain, 0, err);
	free(text);
	return p;
}

struct tp_policy *tp_policy_set_check_file(struct tp_policy_set *s, const char *path,
					   struct tp_err *err)
{
	return load(s, path, err);
}

struct tp_policy *tp_policy_set_check_text(const struct tp_policy_set *s, const char *text,
					   size_t len, const char *name, struct tp_policy_report *r,
					   struct tp_err *err)
{
	const char *chain[TP_POLICY_MAX_DEPTH];
	/* The same policies, borrowed (never freed through it), with r and pure. */
	struct tp_policy_set view = *s;
	view.report = r;
	view.pure = 1;
	struct tp_policy *p = resolve(&view, text, len, name, NULL, chain, 0, err);
	char *source = p != NULL ? strdup(name) : NULL;
	if (p != NULL && source == NULL) {
		tp_policy_free(p);
		tp_err_oom(err, TP_LAYER_HOST);
		return NULL;
	}
	if (p != NULL) {
		free(p->source);
		p->source = source;
	}
	return p;
}

const struct tp_policy *tp_policy_set_load_file(struct tp_policy_set *s, const char *path,
						struct tp_err *err)
{
	struct tp_policy *p = load(s, path, err);
	if (p == NULL || add(s, p, err) < 0) {
		tp_policy_free(p);
		return NULL;
	}
	return p;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_json(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

int tp_policy_set_load_dir(struct tp_policy_set *s, const char *dir, struct tp_err *err)
{
	struct dirent **names;
	int n = scandir(dir, &names, is_json, by_name), rc = 0;

	if (n < 0)
		return refuse(s, err, "%s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		size_t nlen = strlen(names[i]->d_name) - 5;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
		/* A file a loaded policy extended may already be here under its name. */
		char name[TP_POLICY_NAME_MAX + 1];
		snprintf(name, sizeof name, "%.*s", (int)nlen, names[i]->d_name);
		const struct tp_policy *have = tp_policy_set_find(s, name);
		/* A bad file is reported, and the next loaded: one start shows them all. */
		if (!(have && strcmp(have->source, path) == 0) &&
		    tp_policy_set_load_file(s, path, err) == NULL)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

const struct tp_policy *tp_policy_set_find(const struct tp_policy_set *s, const char *name)
{
	for (size_t i = 0; name != NULL && i < s->n; i++)
		if (strcmp(s->p[i]->name, name) == 0)
			return s->p[i];
	return NULL;
}

size_t tp_policy_set_count(const struct tp_policy_set *s)
{
	return s->n;
}

const struct tp_policy *tp_policy_set_at(const struct tp_policy_set *s, size_t i)
{
	return i < s->n ? s->p[i] : NULL;
}

size_t tp_policy_set_index(const struct tp_policy_set *s, const struct tp_policy *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i] == p)
			return i;
	return (size_t)-1;
}

/* ---- out --------------------------------------------------------------------- */

static json_t *strv_json(const struct tp_strv *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < v->n; i++)
		if (json_array_append_new(a, json_string(v->v[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* One row's value of p as JSON (new reference), NULL out of memory. */
static json_t *row_json(const struct tp_policy *p, const struct tp_policy_key *k)
{
	const void *f = (const char *)p + k->off;
	switch (k->type) {
	case TP_PT_U64: return json_integer((json_int_t) * (const uint64_t *)f);
	case TP_PT_BOOL: return json_boolean(*(const int *)f);
	case TP_PT_STR: return *(char *const *)f ? json_string(*(char *const *)f) : NULL;
	case TP_PT_STRV: return strv_json(f);
	case TP_PT_LANGS: {
		json_t *a = json_array();
		for (int i = 0; a != NULL && i < TP_NLANGS; i++)
			if ((*(const unsigned *)f & (1u << i)) &&
			    json_array_append_new(a, json_string(tp_langs[i].name)) != 0) {
				json_decref(a);
				return NULL;
			}
		return a;
	}
	}
	return NULL;
}

json_t *tp_policy_to_json(const struct tp_policy *p, int with_redact)
{
	const char *tops[NKEYS + 1];
	json_t *o = json_object();
	int rc = o == NULL;

	top_names(tops);
	for (size_t t = 0; !rc && tops[t] != NULL; t++) {
		json_t *sec = NULL;
		for (size_t i = 0; !rc && i < NKEYS; i++) {
			const struct tp_policy_key *k = &tp_policy_keys[i];
			if (!same(top_name(k), tops[t]) || (k->flags & TP_PK_NO_JSON) ||
			    ((k->flags & TP_PK_HOST) && !with_redact))
				continue;
			if (k->section == NULL) {
				rc = json_object_set_new(o, k->key, row_json(p, k)) != 0;
				continue;
			}
			if (sec == NULL &&
			    (rc = json_object_set_new(o, tops[t], sec = json_object()) != 0))
				break;
			rc = json_object_set_new(sec, k->key, row_json(p, k)) != 0;
		}
	}
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *tp_policy_wire(const struct tp_policy *p, size_t *len)
{
	json_t *o = tp_policy_to_json(p, 0);
	char *s = o ? tp_json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (s != NULL)
		*len = strlen(s);
	return s;
}

struct tp_policy *tp_policy_from_wire(const char *text, size_t len, struct tp_err *err)
{
	return tp_policy_parse(text, len, "<policy from the host>", err);
}

int tp_policy_allows_lang(const struct tp_policy *p, enum tp_lang_id lang)
{
	return (p->languages & (1u << lang)) != 0;
}

int tp_policy_path_within(const struct tp_strv *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++) {
		size_t n = strlen(v->v[i]);
		if (strcmp(v->v[i], "/") == 0 && path[0] == '/')
			return 1;
		if (strncmp(path, v->v[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
			return 1;
	}
	return 0;
}
