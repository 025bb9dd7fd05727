/*
 * pyerror.c — capturing an exec's pending exception: type, message, line and a
 * traceback of the snippet's own frames. Invariant: all of it is computed at
 * once, under the limits (str() may run snippet code), and every text is cut
 * to MAX_ERROR_TEXT.
 */
#include "pyint.h"

#include <frameobject.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void type_name(PyObject *v, char *out, size_t len)
{
	const char *name = Py_TYPE(v)->tp_name, *dot = strrchr(name, '.');

	snprintf(out, len, "%s", dot ? dot + 1 : name);
}

/* Line `line` of the snippet, without its indentation. */
static void source_line(const struct tp_request *req, int line, char *out, size_t len)
{
	const char *p = req->code, *end = req->code + req->code_len, *nl;

	out[0] = '\0';
	for (int i = 1; i < line && p < end; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	nl = memchr(p, '\n', (size_t)(end - p));
	size_t n = (size_t)((nl ? nl : end) - p);
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

static void buf_add(struct buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (p == NULL)
			return;
		b->s = p, b->cap = cap;
	}
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

static int tb_line(PyObject *tb)
{
	PyObject *l = PyObject_GetAttrString(tb, "tb_lineno");
	int line = l ? (int)PyLong_AsLong(l) : -1;

	Py_XDECREF(l);
	PyErr_Clear();
	return line;
}

/* The snippet's own frames, innermost last, like Python's; *line = innermost. */
static json_t *traceback_of(PyObject *tb, const struct failure *f, json_t *msg,
			    const struct tp_request *req, int *line)
{
	struct buf b = { 0 };
	char row[512], src[200];
	int frames = 0;

	buf_add(&b, "Traceback (most recent call last):\n");
	for (PyTracebackObject *t = (PyTracebackObject *)tb; t != NULL; t = t->tb_next) {
		PyCodeObject *code = PyFrame_GetCode(t->tb_frame);
		const char *file = PyUnicode_AsUTF8(code->co_filename);
		const char *fn = PyUnicode_AsUTF8(code->co_name);
		if (file != NULL && strcmp(file, SNIPPET) == 0) {
			int l = tb_line((PyObject *)t);
			*line = l;
			frames++;
			if (b.len < MAX_ERROR_TEXT - 1024) {
				if (l > 0)
					source_line(req, l, src, sizeof src);
				else
					src[0] = '\0'; /* a re-raise at no line of the source */
				snprintf(row, sizeof row, "  File \"%s\", line %d, in %s\n%s%s%s",
					 SNIPPET, l, fn ? fn : "?", src[0] ? "    " : "", src,
					 src[0] ? "\n" : "");
				buf_add(&b, row);
			} else {
				b.dropped++;
			}
		}
		Py_DECREF(code);
		PyErr_Clear();
	}
	if (b.dropped) {
		snprintf(row, sizeof row, "  [%zu more frames left out]\n", b.dropped);
		buf_add(&b, row);
	}
	snprintf(row, sizeof row, "%s: ", f->type);
	buf_add(&b, row);
	buf_add(&b, json_string_value(msg) ? json_string_value(msg) : "");
	json_t *j = frames && b.s ? capped_text(b.s, b.len) : NULL;
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

/* The snippet's own objects only: an instance of a class made at run time
 * (a heap type), never a type (its descriptors) or a module (its globals).
 * False: it has a dict that is not the snippet's to read; None: it has none. */
PyObject *tp_py_vars(PyObject *obj)
{
	PyTypeObject *t = Py_TYPE(obj);
	PyObject *d;

	if (PyType_Check(obj) || PyModule_Check(obj))
		Py_RETURN_FALSE;
	if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
		if (t->tp_dictoffset == 0)
			Py_RETURN_NONE;
		Py_RETURN_FALSE;
	}
	d = PyObject_GenericGetDict(obj, NULL);
	if (d == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	return d;
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
		PyErr_Clear();
		f->syntax = 1;
		f->message = msg && PyUnicode_Check(msg) ? capped_str(msg) : message_of(v);
		f->line = lineno && PyLong_Check(lineno) ? (int)PyLong_AsLong(lineno) : -1;
		Py_XDECREF(msg), Py_XDECREF(lineno);
	} else if (tp_py_verdict() == TP_KIND_POLICY_VIOLATION ||
		   tp_py_verdict() == TP_KIND_SANDBOX_VIOLATION) {
		/* The verdict wins over what was unwinding (a NameError for a refused
		 * builtin, the OSError of a kernel refusal): the traceback says it. */
		int policy = tp_py_verdict() == TP_KIND_POLICY_VIOLATION;
		snprintf(f->type, sizeof f->type, "%s",
			 policy ? "PolicyViolation" : "SandboxViolation");
		f->message = json_string(tp_py_policy_msg);
		if (tb != NULL && f->message != NULL)
			f->traceback = traceback_of(tb, f, f->message, req, &f->line);
	} else {
		f->message = message_of(v);
		if (tb != NULL)
			f->traceback = traceback_of(tb, f, f->message, req, &f->line);
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
