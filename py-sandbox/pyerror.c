/*
 * pyerror.c — capturing an exec's pending exception: type, message, line and a
 * traceback of the snippet's own frames. Invariant: all of it is computed at
 * once, under the limits (str() may run snippet code), and every text is cut
 * to MAX_ERROR_TEXT.
 * Layer (pyint.h): it calls pystate.c, pyguard.c and pyattr.c (tp_py_own_dict);
 * pysandbox.c, pyshimfns.c and pyaddr.c call it.
 */
#include "pyint.h"

#include <frameobject.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyalloc.h"
#include "pyjson.h"

#define MAX_ERROR_TEXT (8u << 10)

/* Error text is for people: a multi-megabyte message is cut (host frame cap). */
static json_t *capped_text(const char *s, size_t n)
{
	char tail[64];
	size_t cut = n;
	json_t *j, *t;
	PyObject *u;

	if (n <= MAX_ERROR_TEXT) {
		u = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
		j = u ? tp_pyjson_str(u) : NULL;
		Py_XDECREF(u);
		PyErr_Clear();
		return j ? j : json_string("?");
	}
	cut = MAX_ERROR_TEXT;
	while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--; /* a whole UTF-8 sequence */
	j = capped_text(s, cut);
	snprintf(tail, sizeof tail, "... (%zu bytes cut)", n - cut);
	char *joined = NULL;
	if (asprintf(&joined, "%s%s", json_string_value(j), tail) >= 0) {
		t = json_string(joined);
		free(joined);
		if (t != NULL) {
			json_decref(j);
			return t;
		}
	}
	return j;
}

static json_t *capped_str(PyObject *s)
{
	Py_ssize_t n;
	const char *u = PyUnicode_AsUTF8AndSize(s, &n);
	json_t *j;

	if (u != NULL)
		return capped_text(u, (size_t)n);
	PyErr_Clear();
	j = tp_pyjson_str(s); /* lone surrogates: rare, and then uncapped text is short enough */
	return j ? j : json_string("?");
}

/* str(v) under the limits (it may run snippet code); a fixed text if that fails. */
static json_t *message_of(PyObject *v)
{
	PyObject *s = PyObject_Str(v);
	json_t *j;

	if (s == NULL) {
		PyErr_Clear();
		return json_string("(the error message could not be computed)");
	}
	j = capped_str(s);
	Py_DECREF(s);
	return j;
}

/* An EFBIG the code did not catch: msg with the limit it met ("[Errno 27] File
 * too large" alone does not say which). Takes msg. */
static json_t *file_too_large(PyObject *v, json_t *msg)
{
	PyObject *eno = PyObject_GetAttrString(v, "errno");
	int e = eno != NULL && PyLong_Check(eno) ? (int)PyLong_AsLong(eno) : 0;
	Py_XDECREF(eno);
	PyErr_Clear();
	const char *which, *s = json_string_value(msg);
	uint64_t limit = tp_py_file_limit(&which);
	if (e != EFBIG || s == NULL || limit == 0 || strstr(s, "when the exec ended") != NULL)
		return msg;
	json_t *j =
	    json_sprintf("%s (a file here holds at most %" PRIu64 " bytes: %s)", s, limit, which);
	if (j == NULL)
		return msg;
	json_decref(msg);
	return j;
}

static void type_name(PyObject *v, char *out, size_t len)
{
	const char *name = Py_TYPE(v)->tp_name, *dot = strrchr(name, '.');

	snprintf(out, len, "%s", dot ? dot + 1 : name);
}

/* Line `line` of the snippet, whole (no newline), or NULL past its end. */
static const char *whole_line(const struct tp_request *req, int line, size_t *n)
{
	const char *p = req->code, *end = req->code + req->code_len, *nl;

	for (int i = 1; i < line && p < end; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	if (line < 1 || (p == end && line > 1))
		return NULL;
	nl = memchr(p, '\n', (size_t)(end - p));
	*n = (size_t)((nl ? nl : end) - p);
	if (*n > 0 && p[*n - 1] == '\r')
		(*n)--;
	return p;
}

/* Line `line` of the snippet, without its indentation. */
static void source_line(const struct tp_request *req, int line, char *out, size_t len)
{
	size_t n = 0;
	const char *p = whole_line(req, line, &n);

	out[0] = '\0';
	if (p == NULL)
		return;
	while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\f'))
		p++, n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

struct buf {
	char *s;
	size_t len, cap;
	size_t dropped; /* frames left out to keep the text short */
};

static void buf_addn(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (p == NULL)
			return;
		b->s = p, b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_add(struct buf *b, const char *s)
{
	buf_addn(b, s, strlen(s));
}

static void buf_rep(struct buf *b, const char *s, Py_ssize_t times)
{
	for (Py_ssize_t i = 0; i < times; i++)
		buf_addn(b, s, 1);
}

static int tb_line(PyObject *tb)
{
	PyObject *l = PyObject_GetAttrString(tb, "tb_lineno");
	int line = l ? (int)PyLong_AsLong(l) : -1;

	Py_XDECREF(l);
	PyErr_Clear();
	return line;
}

/* Characters in the first `bytes` bytes of UTF-8 s (n bytes long), as
 * CPython's _PyPegen_byte_offset_to_character_offset counts them. */
static Py_ssize_t chars_of(const char *s, size_t n, Py_ssize_t bytes)
{
	Py_ssize_t c = 0;

	if (bytes > (Py_ssize_t)n + 1)
		bytes = (Py_ssize_t)n + 1;
	if (bytes > (Py_ssize_t)n)
		c++, bytes = (Py_ssize_t)n; /* CPython's count runs onto the NUL */
	for (Py_ssize_t i = 0; i < bytes; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			c++;
	return c;
}

/* The byte index of character `chars` of UTF-8 s (n bytes long). */
static size_t byte_of(const char *s, size_t n, Py_ssize_t chars)
{
	size_t i = 0;

	for (Py_ssize_t c = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (c == chars)
				break;
			c++;
		}
	}
	return i;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\f';
}

static int ast_int(PyObject *node, const char *attr, Py_ssize_t *out)
{
	PyObject *v = node ? PyObject_GetAttrString(node, attr) : NULL;
	int ok = v != NULL && PyLong_Check(v);

	if (ok)
		*out = PyLong_AsSsize_t(v);
	Py_XDECREF(v);
	return ok && !PyErr_Occurred();
}

static int ast_is(PyObject *node, const char *name)
{
	return node != NULL && strcmp(_PyType_Name(Py_TYPE(node)), name) == 0;
}

/* CPython 3.11's anchors in the segment (a BinOp's operator, a Subscript's
 * brackets), as byte offsets in seg: 1 found, 0 none. Parsed in C, as the
 * filename "<snippet>" (the audit hook refuses the parser's look for it).
 * Without the headroom for it, plain carets (as CPython's when its parse fails). */
static int anchors_of(const char *seg, Py_ssize_t *left, Py_ssize_t *right, const char **primary,
		      const char **secondary)
{
	PyCompilerFlags flags = _PyCompilerFlags_INIT;
	PyObject *mod, *body, *expr = NULL, *a = NULL, *b = NULL;
	Py_ssize_t x, y;
	int r = 0;

	/* The parse allocates (an arena, the tokenizer's buffers): never so near the
	 * memory limit that it would turn the snippet's error into memory_limit. */
	const struct tp_pyalloc *m = tp_pyalloc_stats();
	if (m->limit != 0 &&
	    (m->current > m->limit || m->limit - m->current < (1u << 20) + 8 * strlen(seg)))
		return 0;
	flags.cf_flags = PyCF_ONLY_AST;
	mod = Py_CompileStringExFlags(seg, SNIPPET, Py_file_input, &flags, -1);
	body = mod ? PyObject_GetAttrString(mod, "body") : NULL;
	if (body == NULL || !PyList_Check(body) || PyList_GET_SIZE(body) != 1 ||
	    !ast_is(PyList_GET_ITEM(body, 0), "Expr"))
		goto out;
	expr = PyObject_GetAttrString(PyList_GET_ITEM(body, 0), "value");
	if (ast_is(expr, "BinOp")) {
		a = PyObject_GetAttrString(expr, "left");
		b = PyObject_GetAttrString(expr, "right");
		if (!ast_int(a, "end_col_offset", &x) || !ast_int(b, "col_offset", &y))
			goto out;
		for (Py_ssize_t i = x; i < y && seg[i] != '\0'; i++) {
			if (is_ws(seg[i]))
				continue;
			*left = i;
			*right = i + 1;
			if (i + 1 < y && !is_ws(seg[i + 1]))
				++*right; /* a two-character operator (//) */
			*primary = "~";
			*secondary = "^";
			r = 1;
			break;
		}
	} else if (ast_is(expr, "Subscript")) {
		a = PyObject_GetAttrString(expr, "value");
		b = PyObject_GetAttrString(expr, "slice");
		if (!ast_int(a, "end_col_offset", &x) || !ast_int(b, "end_col_offset", &y))
			goto out;
		*left = x;
		*right = y + 1;
		*primary = "~";
		*secondary = "^";
		r = 1;
	}
out:
	Py_XDECREF(mod), Py_XDECREF(body), Py_XDECREF(expr), Py_XDECREF(a), Py_XDECREF(b);
	PyErr_Clear();
	return r;
}

/* The caret line CPython 3.11 prints under a frame's source line (traceback.c
 * tb_displayline), from the code's positions at tb_lasti; *col gets the
 * 1-based column of the expression's start, or stays 0. */
static void add_carets(struct buf *b, PyTracebackObject *t, PyCodeObject *code, const char *line,
		       size_t n, int *col)
{
	int sl, sc, el, ec;
	Py_ssize_t ind = 0, len, start, end, left = -1, right = -1;
	const char *primary = "^", *secondary = "^";

	if (!PyCode_Addr2Location(code, t->tb_lasti, &sl, &sc, &el, &ec) || sl < 0 || el < 0 ||
	    sc < 0 || ec < 0)
		return;
	start = chars_of(line, n, sc);
	end = chars_of(line, n, ec);
	*col = (int)start + 1;
	len = chars_of(line, n, (Py_ssize_t)n);
	while (ind < (Py_ssize_t)n && is_ws(line[ind]))
		ind++;
	if (sl == el) {
		size_t bs = byte_of(line, n, start), be = byte_of(line, n, end);
		char *seg = strndup(line + bs, be - bs);
		if (seg != NULL && anchors_of(seg, &left, &right, &primary, &secondary) > 0) {
			left = chars_of(seg, be - bs, left) + start;
			right = chars_of(seg, be - bs, right) + start;
		}
		free(seg);
	} else {
		/* a multi-line expression: up to the last non-blank (CPython's
		 * count of characters used as a byte index) */
		Py_ssize_t i = len;
		while (--i >= 0)
			if (i >= (Py_ssize_t)n || !is_ws(line[i]))
				break;
		end = i + 1;
	}
	if (end - start == len - ind && left == -1 && right == -1)
		return; /* the whole line: no carets */
	int special = left != -1 || right != -1;
	if (left == -1)
		left = end;
	if (right == -1)
		right = end;
	for (Py_ssize_t off = ind - 4 + 1; off <= end; off++) {
		buf_add(b, off <= start                            ? " "
			   : special && left < off && off <= right ? secondary
								   : primary);
	}
	buf_add(b, "\n");
}

#define TB_RECURSIVE_CUTOFF 3 /* as CPython's */

/* The snippet's own frames, innermost last, like Python's; *line = innermost,
 * *col its expression's 1-based column (0: unknown). */
static json_t *traceback_of(PyObject *tb, const struct failure *f, json_t *msg,
			    const struct tp_request *req, int *line, int *col)
{
	struct buf b = { 0 };
	char row[512];
	int frames = 0, last_line = -1;
	PyObject *last_code = NULL;
	long cnt = 0;

	buf_add(&b, "Traceback (most recent call last):\n");
	for (PyTracebackObject *t = (PyTracebackObject *)tb; t != NULL; t = t->tb_next) {
		PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
		const char *file = PyUnicode_AsUTF8(code->co_filename);
		const char *fn = PyUnicode_AsUTF8(code->co_name);
		if (file != NULL && strcmp(file, SNIPPET) == 0) {
			int l = tb_line((PyObject *)t);
			*line = l;
			*col = 0;
			frames++;
			if (last_code != (PyObject *)code || l != last_line) {
				if (cnt > TB_RECURSIVE_CUTOFF) {
					cnt -= TB_RECURSIVE_CUTOFF;
					snprintf(row, sizeof row,
						 "  [Previous line repeated %ld more time%s]\n",
						 cnt, cnt > 1 ? "s" : "");
					buf_add(&b, row);
				}
				last_code = (PyObject *)code, last_line = l, cnt = 0;
			}
			cnt++;
			size_t n = 0;
			const char *src = l > 0 ? whole_line(req, l, &n) : NULL;
			if (cnt > TB_RECURSIVE_CUTOFF) {
				/* counted, not shown; the column still */
				struct buf scratch = { 0 };
				if (src != NULL)
					add_carets(&scratch, t, code, src, n, col);
				free(scratch.s);
			} else if (b.len < MAX_ERROR_TEXT - 1024) {
				snprintf(row, sizeof row, "  File \"%s\", line %d, in %s\n",
					 SNIPPET, l, fn ? fn : "?");
				buf_add(&b, row);
				size_t k = 0;
				while (src != NULL && k < n && is_ws(src[k]))
					k++;
				if (src != NULL && k < n) { /* a re-raise at no line: none */
					buf_add(&b, "    ");
					buf_addn(&b, src + k, n - k);
					buf_add(&b, "\n");
					add_carets(&b, t, code, src, n, col);
				}
			} else {
				b.dropped++;
				if (src != NULL) {
					struct buf scratch = { 0 };
					add_carets(&scratch, t, code, src, n, col);
					free(scratch.s);
				}
			}
		}
		Py_DECREF(code);
		PyErr_Clear();
	}
	if (cnt > TB_RECURSIVE_CUTOFF) {
		cnt -= TB_RECURSIVE_CUTOFF;
		snprintf(row, sizeof row, "  [Previous line repeated %ld more time%s]\n", cnt,
			 cnt > 1 ? "s" : "");
		buf_add(&b, row);
	}
	if (b.dropped) {
		snprintf(row, sizeof row, "  [%zu more frames left out]\n", b.dropped);
		buf_add(&b, row);
	}
	buf_add(&b, f->type);
	const char *m = json_string_value(msg) ? json_string_value(msg) : "";
	if (m[0] != '\0') {
		buf_add(&b, ": ");
		buf_add(&b, m);
	}
	json_t *j = frames && b.s ? capped_text(b.s, b.len) : NULL;
	free(b.s);
	return j;
}

/* A syntax error as CPython 3.11 prints it (pythonrun.c print_exception and
 * print_error_text): the file and line, the source line and its carets. */
static json_t *syntax_traceback(PyObject *v, const struct failure *f, json_t *msg, int lineno,
				Py_ssize_t offset, int *col)
{
	struct buf b = { 0 };
	char row[128];
	PyObject *text = PyObject_GetAttrString(v, "text");
	Py_ssize_t end_offset = -1, end_lineno = lineno;

	*col = offset > 0 && offset < 100000000 ? (int)offset : 0;
	if (Py_TYPE(v) == (PyTypeObject *)PyExc_SyntaxError) {
		PyObject *eo = PyObject_GetAttrString(v, "end_offset");
		PyObject *el = PyObject_GetAttrString(v, "end_lineno");
		if (eo != NULL && PyLong_Check(eo))
			end_offset = PyLong_AsSsize_t(eo);
		if (el != NULL && PyLong_Check(el))
			end_lineno = PyLong_AsSsize_t(el);
		Py_XDECREF(eo), Py_XDECREF(el);
		PyErr_Clear();
	}
	snprintf(row, sizeof row, "  File \"%s\", line %d\n", SNIPPET, lineno);
	buf_add(&b, row);
	Py_ssize_t size;
	const char *s = text && PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &size) : NULL;
	PyErr_Clear();
	if (s != NULL) {
		/* CPython 3.11 counts the offsets in bytes of the text's UTF-8 */
		if (offset > 0)
			offset = (Py_ssize_t)byte_of(s, (size_t)size, offset - 1) + 1;
		if (end_offset > 0)
			end_offset = (Py_ssize_t)byte_of(s, (size_t)size, end_offset - 1) + 1;
		if (end_lineno > lineno)
			end_offset = size;
		if (end_offset > size + 1)
			end_offset = size + 1;
		Py_ssize_t reps = end_offset > 0 && end_offset > offset ? end_offset - offset : 1;
		offset--;
		while (*s == ' ' || *s == '\t' || *s == '\f')
			s++, offset--;
		Py_ssize_t len = (Py_ssize_t)strlen(s);
		if (len > 0 && s[len - 1] == '\n')
			len--;
		if (offset > len)
			offset = len;
		for (;;) {
			const char *nl = strchr(s, '\n');
			if (nl == NULL || nl - s >= offset)
				break;
			Py_ssize_t inl = nl - s + 1;
			s += inl, len -= inl, offset -= inl;
		}
		buf_add(&b, "    ");
		buf_add(&b, s);
		if (s[len] != '\n')
			buf_add(&b, "\n");
		if (offset >= 0) {
			buf_add(&b, "    ");
			buf_rep(&b, " ", offset);
			buf_rep(&b, "^", reps);
			buf_add(&b, "\n");
		}
	}
	Py_XDECREF(text);
	buf_add(&b, f->type);
	const char *m = json_string_value(msg) ? json_string_value(msg) : "";
	if (m[0] != '\0') {
		buf_add(&b, ": ");
		buf_add(&b, m);
	}
	json_t *j = b.s ? capped_text(b.s, b.len) : NULL;
	free(b.s);
	return j;
}

const struct tp_request *tp_py_req;

PyObject *tp_py_tb_rows(PyObject *exc)
{
	PyObject *rows = PyList_New(0), *tb;
	char src[200];

	if (rows == NULL || !PyExceptionInstance_Check(exc))
		return rows;
	tb = PyException_GetTraceback(exc);
	for (PyTracebackObject *t = (PyTracebackObject *)tb; t != NULL; t = t->tb_next) {
		PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
		const char *file = PyUnicode_AsUTF8(code->co_filename);
		if (file != NULL && strcmp(file, SNIPPET) == 0) {
			int l = tb_line((PyObject *)t);
			src[0] = '\0';
			if (l > 0 && tp_py_req != NULL)
				source_line(tp_py_req, l, src, sizeof src);
			PyObject *row = Py_BuildValue(
			    "(iON)", l, code->co_name,
			    PyUnicode_DecodeUTF8(src, (Py_ssize_t)strlen(src), "replace"));
			if (row == NULL || PyList_Append(rows, row) != 0) {
				Py_XDECREF(row), Py_DECREF(code), Py_XDECREF(tb);
				Py_DECREF(rows);
				return NULL;
			}
			Py_DECREF(row);
		}
		Py_DECREF(code);
		PyErr_Clear();
	}
	Py_XDECREF(tb);
	return rows;
}

/* vars(obj): the snippet's own objects only, by the rule obj.__dict__ follows
 * (pyattr.c, tp_py_own_dict). False: it has a dict that is not the snippet's to
 * read; None: it has none. */
PyObject *tp_py_vars(PyObject *obj)
{
	return tp_py_own_dict(obj);
}

/* Takes the pending exception: its type, message, line and traceback, computed
 * now, under the limits, since str() may run snippet code. */
void tp_py_capture(struct failure *f, enum stage stage, const struct tp_request *req)
{
	PyObject *t, *v, *tb;

	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (v == NULL) {
		Py_XDECREF(t), Py_XDECREF(tb);
		return;
	}
	if (tb != NULL)
		PyException_SetTraceback(v, tb);
	f->set = 1;
	f->stage = stage;
	f->line = -1;
	type_name(v, f->type, sizeof f->type);
	if (stage == ST_LOAD && (PyErr_GivenExceptionMatches(t, PyExc_SyntaxError) ||
				 PyErr_GivenExceptionMatches(t, PyExc_ValueError))) {
		PyObject *msg = PyObject_GetAttrString(v, "msg");
		PyObject *lineno = PyObject_GetAttrString(v, "lineno");
		PyObject *offset = PyObject_GetAttrString(v, "offset");
		PyErr_Clear();
		f->syntax = 1;
		f->message = msg && PyUnicode_Check(msg) ? capped_str(msg) : message_of(v);
		f->line = lineno && PyLong_Check(lineno) ? (int)PyLong_AsLong(lineno) : -1;
		PyErr_Clear();
		if (f->line > 0 && PyErr_GivenExceptionMatches(t, PyExc_SyntaxError) &&
		    f->message != NULL)
			f->traceback = syntax_traceback(
			    v, f, f->message, f->line,
			    offset && PyLong_Check(offset) ? PyLong_AsSsize_t(offset) : -1,
			    &f->column);
		Py_XDECREF(msg), Py_XDECREF(lineno), Py_XDECREF(offset);
	} else if (tp_py_verdict() == TP_KIND_POLICY_VIOLATION ||
		   tp_py_verdict() == TP_KIND_SANDBOX_VIOLATION) {
		/* The verdict wins over what was unwinding (a NameError for a refused
		 * builtin, the OSError of a kernel refusal): the traceback says it. */
		int policy = tp_py_verdict() == TP_KIND_POLICY_VIOLATION;
		snprintf(f->type, sizeof f->type, "%s",
			 policy ? "PolicyViolation" : "SandboxViolation");
		f->message = json_string(tp_py_policy_msg);
		if (tb != NULL && f->message != NULL)
			f->traceback = traceback_of(tb, f, f->message, req, &f->line, &f->column);
	} else {
		f->message = message_of(v);
		if (PyErr_GivenExceptionMatches(t, PyExc_OSError))
			f->message = file_too_large(v, f->message);
		if (tb != NULL)
			f->traceback = traceback_of(tb, f, f->message, req, &f->line, &f->column);
	}
	PyErr_Clear();
	Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
}

/* The pending exception as a set-up failure of the language layer (zygote init). */
int tp_py_fail(const char *what, struct tp_err *err)
{
	PyObject *t, *v, *tb, *s;

	PyErr_Fetch(&t, &v, &tb);
	s = v ? PyObject_Str(v) : NULL;
	tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0, "%s: %s", what,
		   s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?");
	Py_XDECREF(s), Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
	PyErr_Clear();
	return -1;
}
