/*
 * pysandbox.c — the Python language layer: the embedded interpreter (zygote),
 * the after-fork step and reseed (worker), one exec under the memory,
 * instruction, CPU and output limits, and the reply.
 * Invariant: once a verdict is recorded (a sticky C flag, first one wins) no
 * more snippet code runs to completion — every trace event and every pending
 * call raises again, the CPU grace timer ends the worker — and the reply's kind
 * comes from that flag, never from an exception the snippet could raise itself.
 */
#include <Python.h>
#include <frameobject.h>

#include "pysandbox.h"
#include "verdict.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lockdown.h"
#include "pyalloc.h"
#include "pyjson.h"
#include "pyshim.h"

#define STDLIB "/usr/lib/python3.11"
#define SNIPPET "<snippet>"
#define SHIM "<tidepool>"
#define RECURSION_LIMIT 200 /* frames while snippet code runs (Python + C) */
#define MAX_ERROR_TEXT (8u << 10)

static PyObject *g_shim;      /* the shim's globals */
static PyObject *g_sbuiltins; /* the builtins dict every snippet gets */
static PyObject *g_prepare, *g_reseed;
static PyObject *g_exc_limit, *g_exc_policy;
static PyObject *g_main; /* this exec's __main__ module */
static char **g_deny;    /* the shim's ATTR_DENY, for the fast path's text check */
static size_t g_ndeny;

static struct tp_shm *g_shm; /* NULL outside an exec */
static struct tp_limits g_lim;
static volatile sig_atomic_t g_running;   /* snippet code may run: sticky raises armed */
static volatile sig_atomic_t g_limits_on; /* allocator refusals trip memory_limit */
static volatile sig_atomic_t g_armed;     /* the audit tripwire is live */
static volatile sig_atomic_t g_pending;
static int g_self_trace; /* our own PyEval_SetTrace call, not the snippet's */
static int g_tracing;
static volatile uint64_t g_count; /* line events charged */
static size_t g_base;             /* allocator bytes when the exec began */
static char g_policy_msg[512];
static int g_policy_line = -1;

/* ---- the sticky verdict ------------------------------------------------------- */

static uint64_t mem_peak(void)
{
	const struct tp_pyalloc *a = tp_pyalloc_stats();
	return a->peak > g_base ? a->peak - g_base : 0;
}

/* Async-signal-safe (tp_verdict calls it from the CPU timer's handler). */
static void publish_usage(struct tp_shm *shm)
{
	shm->instructions = g_count;
	shm->mem_peak = mem_peak();
}

static int pending_raise(void *arg);

/* Async-signal-safe: Py_AddPendingCall needs neither the GIL nor a thread state. */
static void schedule_raise(void)
{
	if (g_running && !g_pending) {
		g_pending = 1;
		if (Py_AddPendingCall(pending_raise, NULL) != 0)
			g_pending = 0;
	}
}

static const struct tp_verdict_ops verdict_ops = { publish_usage, schedule_raise };

/* The kind of the first verdict of this exec, or 0. */
static int verdict(void)
{
	return (int)tp_verdict_kind();
}

static void trip(enum tp_kind kind, int id, uint64_t limit, uint64_t used)
{
	tp_verdict_trip(kind, id, limit, used);
}

static void on_refuse(void)
{
	const struct tp_pyalloc *a = tp_pyalloc_stats();

	if (g_limits_on)
		trip(TP_KIND_MEMORY_LIMIT, TP_LIMIT_MEMORY_BYTES, g_lim.memory_bytes,
		     a->refused_total > g_base ? a->refused_total - g_base : 0);
}

static int raise_verdict(void)
{
	if (verdict() == TP_KIND_POLICY_VIOLATION)
		PyErr_SetString(g_exc_policy, g_policy_msg);
	else
		PyErr_SetString(g_exc_limit, tp_limit_message(tp_verdict_limit_id()));
	return -1;
}

static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

static void trace_on(void)
{
	if (g_tracing)
		return;
	g_self_trace = 1;
	PyEval_SetTrace(trace_fn, NULL);
	g_self_trace = 0;
	g_tracing = 1;
}

static void trace_off(void)
{
	g_self_trace = 1;
	PyEval_SetTrace(NULL, NULL);
	g_self_trace = 0;
	g_tracing = 0;
}

/* Runs at the eval loop's next check (a back edge, a call): raises, turns on the
 * trace so every later line raises too, and queues itself again. */
static int pending_raise(void *arg)
{
	(void)arg;
	g_pending = 0;
	if (!verdict() || !g_running)
		return 0;
	trace_on();
	schedule_raise();
	return raise_verdict();
}

/* Line events are the instruction count; after a verdict every event raises. */
static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj, (void)frame, (void)arg;
	/* Not on exception or return events: an error is already unwinding, and
	 * replacing it there would drop its traceback. */
	if (verdict())
		return g_running && (what == PyTrace_LINE || what == PyTrace_CALL) ? raise_verdict()
										   : 0;
	if (what != PyTrace_LINE || g_lim.instructions == 0)
		return 0;
	if (g_count >= g_lim.instructions) {
		trip(TP_KIND_INSTRUCTION_LIMIT, TP_LIMIT_INSTRUCTIONS, g_lim.instructions, g_count);
		return raise_verdict();
	}
	g_count++;
	return 0;
}

/* Records a policy verdict (first wins) and raises PolicyViolation. */
static PyObject *refuse(const char *msg, int line)
{
	if (!verdict()) {
		snprintf(g_policy_msg, sizeof g_policy_msg, "%s", msg);
		g_policy_line = line;
		trip(TP_KIND_POLICY_VIOLATION, -1, 0, 0);
	}
	raise_verdict();
	return NULL;
}

/* ---- who is calling ------------------------------------------------------------ */

static int caller_file_is(const char *prefix, size_t n)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	int r;

	if (f == NULL)
		return -1; /* no Python frame: our own C code */
	code = PyFrame_GetCode(f);
	file = PyUnicode_AsUTF8(code->co_filename);
	r = file != NULL && strncmp(file, prefix, n) == 0;
	Py_DECREF(code);
	if (file == NULL)
		PyErr_Clear();
	return r;
}

static int caller_is_snippet(void)
{
	return caller_file_is(SNIPPET, sizeof SNIPPET) == 1;
}

/* Stdlib code and the shim may still use exec, eval, compile and __import__. */
static int caller_trusted(void)
{
	int r = caller_file_is(STDLIB "/", sizeof STDLIB);
	return r != 0 || caller_file_is(SHIM, sizeof SHIM) == 1;
}

/* ---- audit tripwire --------------------------------------------------------------- */

/* Events that end the worker at once: files, processes, sockets, native code,
 * a real import (everything allowed was loaded in the zygote), tracing changes. */
static const char *const kill_events[] = {
	"open",
	"import",
	"os.",
	"subprocess.",
	"socket.",
	"ctypes.",
	"shutil.",
	"_posixsubprocess.",
	"pty.",
	"glob.",
	"marshal.",
	"pickle.",
	"code.__new__",
	"sys.settrace",
	"sys.setprofile",
	"sys._current_frames",
	"mmap.",
	"fcntl.",
	"resource.",
	"signal.",
	"syslog.",
	"sqlite3.",
	"urllib.",
	"http.",
	"ftplib.",
	"smtplib.",
	"webbrowser.",
	"tempfile.",
};

static int is_kill_event(const char *event)
{
	for (size_t i = 0; i < sizeof kill_events / sizeof kill_events[0]; i++) {
		const char *k = kill_events[i];
		size_t n = strlen(k);
		if (k[n - 1] == '.' ? strncmp(event, k, n) == 0 : strcmp(event, k) == 0)
			return 1;
	}
	return 0;
}

static int is_snippet_path(PyObject *args)
{
	PyObject *p =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	const char *s = p && PyUnicode_Check(p) ? PyUnicode_AsUTF8(p) : NULL;

	PyErr_Clear();
	return s != NULL && strcmp(s, SNIPPET) == 0;
}

static int audit_hook(const char *event, PyObject *args, void *ud)
{
	char note[160];

	(void)ud;
	if (!g_armed || g_self_trace)
		return 0;
	if (strcmp(event, "open") == 0 && is_snippet_path(args)) {
		/* The parser looks for the source of "<snippet>" to quote a syntax
		 * error; it falls back to the string it has. Refuse quietly. */
		PyErr_SetString(PyExc_PermissionError, "no files");
		return -1;
	}
	if (is_kill_event(event)) {
		/* A tripwire, not a boundary: record the verdict, say why, stop. */
		int n = snprintf(note, sizeof note,
				 "tidepool: audit event '%.80s' stopped the worker\n", event);
		tp_shm_write(g_shm, TP_STDERR, note, (size_t)n);
		if (!verdict()) {
			snprintf(g_policy_msg, sizeof g_policy_msg,
				 "audit event '%s' is not allowed", event);
			tp_shm_note(g_shm, g_policy_msg);
			trip(TP_KIND_POLICY_VIOLATION, -1, 0, 0);
		}
		publish_usage(g_shm);
		_exit(TP_EXIT_LIMIT);
	}
	if (strcmp(event, "object.__getattr__") == 0 && caller_is_snippet()) {
		PyObject *name = PyTuple_Size(args) >= 2 ? PyTuple_GetItem(args, 1) : NULL;
		const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		char msg[160];
		snprintf(msg, sizeof msg, "attribute '%s' is not allowed", s ? s : "?");
		refuse(msg, -1);
		return -1;
	}
	return 0;
}

/* ---- CPU timer ---------------------------------------------------------------------- */

/* ---- functions the shim and the snippet call ------------------------------------------ */

static int write_text(enum tp_stream s, PyObject *text)
{
	Py_ssize_t n;
	const char *u;
	PyObject *b = NULL;

	if (g_shm == NULL || verdict())
		return 0; /* nothing is written outside an exec or after a verdict */
	u = PyUnicode_AsUTF8AndSize(text, &n);
	if (u == NULL) {
		PyErr_Clear(); /* lone surrogates */
		b = PyUnicode_AsEncodedString(text, "utf-8", "replace");
		if (b == NULL)
			return -1;
		u = PyBytes_AS_STRING(b), n = PyBytes_GET_SIZE(b);
	}
	if (tp_shm_write(g_shm, s, u, (size_t)n) != 0)
		trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_OUTPUT_BYTES, g_lim.output_bytes,
		     g_shm->wanted);
	Py_XDECREF(b);
	return verdict() ? raise_verdict() : 0;
}

static PyObject *py_write(PyObject *self, PyObject *args)
{
	int stream;
	PyObject *text;

	(void)self;
	if (!PyArg_ParseTuple(args, "iU", &stream, &text))
		return NULL;
	if (write_text(stream == 1 ? TP_STDERR : TP_STDOUT, text) != 0)
		return NULL;
	Py_RETURN_NONE;
}

static int emit(PyObject *file, PyObject *text)
{
	PyObject *r;

	if (file == NULL || file == Py_None)
		return write_text(TP_STDOUT, text);
	r = PyObject_CallMethod(file, "write", "O", text);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

static int emit_str(PyObject *file, PyObject *v)
{
	PyObject *s = PyObject_Str(v);
	int rc = s ? emit(file, s) : -1;

	Py_XDECREF(s);
	return rc;
}

static int print_kw(PyObject *kw, PyObject **sep, PyObject **end, PyObject **file)
{
	Py_ssize_t pos = 0;
	PyObject *k, *v;

	while (kw != NULL && PyDict_Next(kw, &pos, &k, &v)) {
		const char *name = PyUnicode_AsUTF8(k);
		if (name == NULL)
			return -1;
		if (strcmp(name, "sep") == 0)
			*sep = v;
		else if (strcmp(name, "end") == 0)
			*end = v;
		else if (strcmp(name, "file") == 0)
			*file = v;
		else if (strcmp(name, "flush") != 0) {
			PyErr_Format(PyExc_TypeError,
				     "'%s' is an invalid keyword argument for print()", name);
			return -1;
		}
	}
	if ((*sep != Py_None && !PyUnicode_Check(*sep)) ||
	    (*end != Py_None && !PyUnicode_Check(*end))) {
		PyErr_SetString(PyExc_TypeError, "sep and end must be None or a string");
		return -1;
	}
	return 0;
}

/* print(*args, sep=' ', end='\n', file=None, flush=False) into the capped page. */
static PyObject *py_print(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *sep = Py_None, *end = Py_None, *file = Py_None;
	Py_ssize_t n = PyTuple_GET_SIZE(args);

	(void)self;
	if (print_kw(kw, &sep, &end, &file) != 0)
		return NULL;
	for (Py_ssize_t i = 0; i < n; i++) {
		if (i > 0) {
			PyObject *s =
			    sep == Py_None ? PyUnicode_FromString(" ") : (Py_INCREF(sep), sep);
			int rc = s ? emit(file, s) : -1;
			Py_XDECREF(s);
			if (rc != 0)
				return NULL;
		}
		if (emit_str(file, PyTuple_GET_ITEM(args, i)) != 0)
			return NULL;
	}
	PyObject *e = end == Py_None ? PyUnicode_FromString("\n") : (Py_INCREF(end), end);
	int rc = e ? emit(file, e) : -1;
	Py_XDECREF(e);
	if (rc != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *py_refuse(PyObject *self, PyObject *args)
{
	const char *msg;
	int line = -1;

	(void)self;
	if (!PyArg_ParseTuple(args, "s|i", &msg, &line))
		return NULL;
	return refuse(msg, line);
}

/* _settype(type, name[, value]): sets or deletes an entry of a (static) type's
 * dict, which type.__setattr__ refuses. Zygote only. */
static PyObject *py_settype(PyObject *self, PyObject *args)
{
	PyTypeObject *t;
	const char *name;
	PyObject *v = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!s|O", &PyType_Type, &t, &name, &v))
		return NULL;
	if (v != NULL ? PyDict_SetItemString(t->tp_dict, name, v)
		      : PyDict_DelItemString(t->tp_dict, name))
		return NULL;
	PyType_Modified(t);
	Py_RETURN_NONE;
}

/* A gated builtin: self is (original, name). */
static PyObject *gate_call(PyObject *self, PyObject *args, PyObject *kw)
{
	char msg[96];

	if (!caller_trusted()) {
		snprintf(msg, sizeof msg, "%s() is not allowed",
			 PyUnicode_AsUTF8(PyTuple_GET_ITEM(self, 1)));
		return refuse(msg, -1);
	}
	return PyObject_Call(PyTuple_GET_ITEM(self, 0), args, kw);
}

static PyMethodDef gate_def = { "gated", (PyCFunction)(void (*)(void))gate_call,
				METH_VARARGS | METH_KEYWORDS, NULL };

static PyObject *py_gate(PyObject *self, PyObject *args)
{
	PyObject *fn, *name, *t, *g;

	(void)self;
	if (!PyArg_ParseTuple(args, "OU", &fn, &name))
		return NULL;
	t = PyTuple_Pack(2, fn, name);
	g = t ? PyCFunction_NewEx(&gate_def, t, NULL) : NULL;
	Py_XDECREF(t);
	return g;
}

static PyMethodDef shim_fns[] = {
	{ "_write", py_write, METH_VARARGS, NULL },
	{ "_refuse", py_refuse, METH_VARARGS, NULL },
	{ "_settype", py_settype, METH_VARARGS, NULL },
	{ "_gate", py_gate, METH_VARARGS, NULL },
	{ "_print", (PyCFunction)(void (*)(void))py_print, METH_VARARGS | METH_KEYWORDS,
	  "print(*values, sep=' ', end='\\n', file=None, flush=False)" },
	{ NULL, NULL, 0, NULL },
};

/* ---- errors ------------------------------------------------------------------------------ */

enum stage { ST_INPUTS, ST_LOAD, ST_RUN };

struct failure {
	int set;
	enum stage stage;
	int syntax; /* a SyntaxError (or a source the parser refused) */
	int line;
	char type[64];
	json_t *message, *traceback;
};

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
				source_line(req, l, src, sizeof src);
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

/* Takes the pending exception: its type, message, line and traceback, computed
 * now, under the limits, since str() may run snippet code. */
static void capture(struct failure *f, enum stage stage, const struct tp_request *req)
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
	} else {
		f->message = message_of(v);
		if (tb != NULL)
			f->traceback = traceback_of(tb, f, f->message, req, &f->line);
	}
	PyErr_Clear();
	Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
}

/* ---- one exec ------------------------------------------------------------------------------ */

static int g_main_fresh; /* g_main was made in the zygote and no exec has used it */

static PyObject *make_main(void)
{
	PyObject *m = PyModule_New("__main__"), *d;

	if (m == NULL)
		return NULL;
	d = PyModule_GetDict(m);
	/* sys.modules["__main__"] is the snippet's module, so dataclasses and typing
	 * resolve the snippet's names (and builtins) there, never the zygote's. */
	if (PyDict_SetItemString(d, "__builtins__", g_sbuiltins) != 0 ||
	    PyDict_SetItemString(PyImport_GetModuleDict(), "__main__", m) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_XSETREF(g_main, m);
	return d;
}

/* The exec's globals. A worker runs one exec: it takes the module the zygote
 * made (in the frozen heap, already in sys.modules), so an exec creates and
 * registers nothing; a second exec in the same process gets a new one. */
static PyObject *new_globals(void)
{
	if (g_main_fresh && g_main != NULL) {
		g_main_fresh = 0;
		return PyModule_GetDict(g_main);
	}
	g_main_fresh = 0;
	return make_main();
}

static int set_inputs(PyObject *globals, const struct tp_request *req)
{
	const json_t *obj = req->inputs;

	if (obj == NULL || json_is_null(obj))
		return 0;
	if (!json_is_object(obj)) {
		PyErr_SetString(PyExc_ValueError, "inputs must be an object");
		return -1;
	}
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		const char *key = json_object_iter_key(it);
		size_t klen = json_object_iter_key_len(it);
		PyObject *k = PyUnicode_DecodeUTF8(key, (Py_ssize_t)klen, "strict"), *v;
		if (k == NULL)
			return -1;
		if (!PyUnicode_IsIdentifier(k) || (klen >= 4 && key[0] == '_' && key[1] == '_')) {
			PyErr_Format(PyExc_ValueError, "input name %R is not a plain identifier",
				     k);
			Py_DECREF(k);
			return -1;
		}
		v = tp_pyjson_to_py(json_object_iter_value(it), g_lim.result_depth);
		if (v == NULL || PyDict_SetItem(globals, k, v) != 0) {
			Py_DECREF(k), Py_XDECREF(v);
			return -1;
		}
		Py_DECREF(k), Py_DECREF(v);
	}
	return 0;
}

static void reseed(uint64_t seed)
{
	PyObject *n = PyLong_FromUnsignedLongLong(seed);
	PyObject *r = n ? PyObject_CallOneArg(g_reseed, n) : NULL;

	Py_XDECREF(n);
	if (r == NULL)
		PyErr_Clear();
	Py_XDECREF(r);
}

static void begin(const struct tp_request *req, struct tp_shm *shm)
{
	g_shm = shm;
	g_lim = req->limits;
	g_pending = 0;
	g_count = 0;
	g_policy_msg[0] = '\0';
	g_policy_line = -1;
	tp_shm_begin(shm, req->limits.output_bytes);
	if (req->has_seed)
		reseed(req->seed); /* before the memory limit: it must not fail */
	g_base = tp_pyalloc_stats()->current;
	tp_pyalloc_reset_peak();
	/* memory_bytes bounds what the exec adds to the pristine interpreter. */
	if (g_lim.memory_bytes != 0)
		tp_pyalloc_set_limit(g_base + g_lim.memory_bytes);
	g_limits_on = 1;
	g_armed = 1;
	publish_usage(shm);
	tp_verdict_begin(shm, g_lim.cpu_ms, &verdict_ops);
}

/* After the snippet: no timer, no trace, no limit, no tripwire from here on. */
static void end_run(void)
{
	tp_verdict_end();
	g_running = 0;
	trace_off();
	Py_SetRecursionLimit(1000);
	g_armed = 0;
	g_limits_on = 0;
	tp_pyalloc_set_limit(0);
	PyErr_Clear();
}

/* The value's repr, cut to fit result_bytes (repr runs snippet code: limits on). */
static json_t *repr_value(PyObject *v)
{
	PyObject *r = PyObject_Repr(v), *cut;
	json_t *j;
	Py_ssize_t k;

	if (r == NULL)
		return NULL;
	k = PyUnicode_GET_LENGTH(r);
	for (;;) {
		cut = PyUnicode_Substring(r, 0, k);
		j = cut ? tp_pyjson_str(cut) : NULL;
		Py_XDECREF(cut);
		if (j == NULL || tp_pyjson_size(j) + 3 <= g_lim.result_bytes || k == 0)
			break;
		json_decref(j);
		k = k * 3 / 4; /* escapes make bytes per character vary: shrink until it fits */
	}
	Py_DECREF(r);
	return j;
}

struct result {
	json_t *value;
	int is_repr;
	const char *fail;    /* why the value could not be sent (result_error) */
	struct failure repr; /* the exception repr() raised, if that was why */
};

static void convert(PyObject *v, struct result *res, const struct tp_request *req)
{
	static char message[TP_PYJSON_MESSAGE_MAX];
	struct tp_pyjson_caps caps = { g_lim.result_depth, g_lim.result_bytes };
	struct tp_pyjson_out out;

	tp_pyjson_from_py(v, &caps, &out);
	switch (out.fail) {
	case TP_PYJSON_OK: res->value = out.value; return;
	case TP_PYJSON_DEPTH:
		trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_DEPTH, caps.depth, out.used);
		return;
	case TP_PYJSON_BYTES:
		trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_BYTES, caps.bytes, out.used);
		return;
	case TP_PYJSON_CYCLE: res->fail = "cycle in returned value"; return;
	case TP_PYJSON_KEYS:
	case TP_PYJSON_NUMBER:
		memcpy(message, out.message, sizeof message);
		res->fail = message;
		return;
	case TP_PYJSON_NOTJSON:
		res->value = repr_value(v);
		res->is_repr = 1;
		if (res->value == NULL) {
			capture(&res->repr, ST_RUN, req);
			res->fail = "repr() failed";
		}
		return;
	default: res->fail = "the value could not be converted";
	}
}

static void run(PyObject *globals, PyObject *prepared, struct result *res, struct failure *f,
		const struct tp_request *req)
{
	PyObject *body = PyTuple_GET_ITEM(prepared, 0), *expr = PyTuple_GET_ITEM(prepared, 1);
	PyObject *r;

	g_running = 1;
	Py_SetRecursionLimit(RECURSION_LIMIT);
	if (g_lim.instructions != 0)
		trace_on(); /* before the first line of the snippet */
	r = body == Py_None ? (Py_INCREF(Py_None), Py_None)
			    : PyEval_EvalCode(body, globals, globals);
	if (r != NULL && expr != Py_None) {
		Py_DECREF(r);
		r = PyEval_EvalCode(expr, globals, globals);
	}
	if (r == NULL)
		capture(f, ST_RUN, req);
	else if (!verdict())
		convert(r, res, req);
	Py_XDECREF(r);
}

static void usage(struct tp_usage *u)
{
	u->instructions = g_lim.instructions ? g_count : 0;
	u->memory_peak_bytes = mem_peak();
	u->cpu_us = tp_verdict_cpu_us();
}

static int verdict_failure(const struct failure *f, struct tp_failure *out)
{
	int policy = verdict() == TP_KIND_POLICY_VIOLATION;
	int line = policy && f->line <= 0 ? g_policy_line : f->line;

	return tp_verdict_tripped_failure(out, g_policy_msg, f->traceback, line);
}

static int failure_failure(const struct failure *f, enum tp_kind kind, struct tp_failure *out)
{
	if (f->stage == ST_INPUTS)
		return tp_verdict_failure(out, TP_KIND_INPUT_ERROR, NULL, f->message, NULL, -1);
	return tp_verdict_failure(out, kind, f->type, f->message, f->traceback, f->line);
}

static int result_failure(const struct result *res, struct tp_failure *out)
{
	json_t *m;
	int rc;

	if (res->repr.set) /* the snippet's own __repr__ raised: its runtime error */
		return tp_verdict_failure(out, TP_KIND_RUNTIME_ERROR, res->repr.type,
					  res->repr.message, res->repr.traceback, res->repr.line);
	m = json_string(res->fail);
	rc = tp_verdict_failure(out, TP_KIND_RESULT_ERROR, NULL, m, NULL, -1);
	json_decref(m);
	return rc;
}

static int reply(const struct failure *f, struct result *res, struct tp_reply *out)
{
	memset(out, 0, sizeof *out);
	publish_usage(g_shm);
	usage(&out->usage);
	if (verdict() || f->set || res->fail) {
		json_decref(res->value);
		res->value = NULL;
	}
	if (verdict())
		return verdict_failure(f, &out->error);
	if (f->set)
		return failure_failure(f, f->syntax ? TP_KIND_SYNTAX_ERROR : TP_KIND_RUNTIME_ERROR,
				       &out->error);
	if (res->fail)
		return result_failure(res, &out->error);
	out->ok = 1;
	out->value = res->value ? res->value : json_null();
	out->value_repr = res->is_repr;
	res->value = NULL;
	return out->value != NULL ? 0 : -1;
}

/* ---- the fast path: a plain expression, no AST check needed ------------------------------- */

#define FAST_MAX 4096 /* longer sources take the shim's path */

/* True when the shim's AST check cannot refuse anything in this source, read as
 * text: ASCII (NFKC changes nothing, every identifier is spelled out), no "__"
 * (no dunder name, attribute or import alias), no ATTR_DENY name anywhere, no
 * '{' and no backslash (no string constant can hold a '{', so no format string
 * reads an attribute), no NUL. Anything else is not refused here: it only takes
 * the full path. */
static int text_is_plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0 || c >= 0x80 || c == '{' || c == '\\' ||
		    (c == '_' && i + 1 < n && s[i + 1] == '_'))
			return 0;
	}
	for (size_t i = 0; i < g_ndeny; i++)
		if (memmem(s, n, g_deny[i], strlen(g_deny[i])) != NULL)
			return 0;
	return 1;
}

/* A source that is one expression, compiled straight from the text in "eval"
 * mode: the same code object prepare() makes for its last expression (the body
 * it leaves is empty), without building or walking a Python AST, whose objects
 * and code would be copied into the worker page by page. NULL with no error
 * set: take the full path. */
static PyObject *prepare_fast(const struct tp_request *req)
{
	char text[FAST_MAX + 1];
	PyCompilerFlags flags = _PyCompilerFlags_INIT;
	PyObject *code, *t;

	if (req->code_len > FAST_MAX || !text_is_plain(req->code, req->code_len))
		return NULL;
	memcpy(text, req->code, req->code_len);
	text[req->code_len] = '\0';
	code = Py_CompileStringExFlags(text, SNIPPET, Py_eval_input, &flags, -1);
	if (code == NULL) {
		PyErr_Clear(); /* a statement, or an error the full path reports */
		return NULL;
	}
	t = PyTuple_Pack(2, Py_None, code);
	Py_DECREF(code);
	return t;
}

int tp_py_exec(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out)
{
	struct failure f = { 0 };
	struct result res = { 0 };
	PyObject *globals, *src = NULL, *prepared = NULL;
	int rc;

	if (g_shim == NULL)
		return -1;
	begin(req, shm);
	globals = new_globals();
	if (globals == NULL || set_inputs(globals, req) != 0) {
		capture(&f, ST_INPUTS, req);
		goto out;
	}
	prepared = prepare_fast(req);
	if (prepared == NULL && !PyErr_Occurred()) {
		src = PyUnicode_DecodeUTF8(req->code, (Py_ssize_t)req->code_len, "strict");
		prepared = src ? PyObject_CallOneArg(g_prepare, src) : NULL;
	}
	if (prepared == NULL) {
		capture(&f, ST_LOAD, req);
		goto out;
	}
	run(globals, prepared, &res, &f, req);
out:
	end_run();
	rc = reply(&f, &res, out);
	json_decref(f.message), json_decref(f.traceback);
	json_decref(res.repr.message), json_decref(res.repr.traceback);
	Py_XDECREF(src), Py_XDECREF(prepared);
	return rc;
}

/* ---- zygote and worker ------------------------------------------------------------------------
 */

/* Set-up failures are our own, at the language layer. */
static int status_err(PyStatus st, const char *what, struct tp_err *err)
{
	if (!PyStatus_Exception(st))
		return 0;
	return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0, "%s: %s%s%s", what,
			  st.func ? st.func : "", st.func ? ": " : "",
			  st.err_msg ? st.err_msg : "failed");
}

static int start_interpreter(struct tp_err *err)
{
	PyPreConfig pre;
	PyConfig cfg;
	PyStatus st;

	PyPreConfig_InitIsolatedConfig(&pre);
	pre.utf8_mode = 1;
	pre.allocator = PYMEM_ALLOCATOR_PYMALLOC; /* MEM, OBJ: pymalloc, wrapped; RAW: malloc */
	if (status_err(Py_PreInitialize(&pre), "Py_PreInitialize", err))
		return -1;
	tp_pyalloc_install(); /* before any object exists: every block is counted */
	tp_pyalloc_on_refuse(on_refuse);
	/* Before init, so no import or open escapes it; live only during an exec. */
	PySys_AddAuditHook(audit_hook, NULL);
	PyConfig_InitIsolatedConfig(&cfg);
	cfg.site_import = 0;
	cfg.install_signal_handlers = 0;
	cfg.use_hash_seed = 1; /* reproducible hashes: flooding stays inside one worker */
	cfg.hash_seed = 0;
	cfg.write_bytecode = 0;
	cfg.user_site_directory = 0;
	cfg.pathconfig_warnings = 0;
	cfg.faulthandler = 0; /* a crash must stay a signal the host sees */
	cfg.parse_argv = 0;
	cfg.module_search_paths_set = 1;
	st = PyConfig_SetString(&cfg, &cfg.home, L"/usr");
	if (!PyStatus_Exception(st))
		st = PyConfig_SetString(&cfg, &cfg.program_name, L"tidepool");
	if (!PyStatus_Exception(st))
		st = PyWideStringList_Append(&cfg.module_search_paths, L"" STDLIB);
	if (!PyStatus_Exception(st))
		st = PyWideStringList_Append(&cfg.module_search_paths, L"" STDLIB "/lib-dynload");
	if (!PyStatus_Exception(st))
		st = Py_InitializeFromConfig(&cfg);
	PyConfig_Clear(&cfg);
	return status_err(st, "Py_InitializeFromConfig", err);
}

static int py_fail(const char *what, struct tp_err *err)
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

/* One fast-path compile and eval in the zygote, so what the first one writes
 * once (lazy symbol bindings, caches, interned names) is in the shared heap,
 * not copied into every worker. */
static void warm_up(void)
{
	static const char text[] = "1+1";
	struct tp_request req = { .code = text, .code_len = sizeof text - 1 };
	PyObject *p = prepare_fast(&req);
	PyObject *d = PyDict_New();
	PyObject *r = p && d && PyDict_SetItemString(d, "__builtins__", g_sbuiltins) == 0
			  ? PyEval_EvalCode(PyTuple_GET_ITEM(p, 1), d, d)
			  : NULL;

	Py_XDECREF(r), Py_XDECREF(d), Py_XDECREF(p);
	PyErr_Clear();
}

/* The shim's ATTR_DENY as C strings, for text_is_plain(). */
static int load_deny(void)
{
	PyObject *set = PyDict_GetItemString(g_shim, "ATTR_DENY"), *it, *name;

	if (set == NULL || !PyAnySet_Check(set) || (it = PyObject_GetIter(set)) == NULL) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "the shim has no ATTR_DENY set");
		return -1;
	}
	g_deny = calloc((size_t)PySet_GET_SIZE(set), sizeof *g_deny);
	while (g_deny != NULL && (name = PyIter_Next(it)) != NULL) {
		const char *u = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		char *copy = u ? strdup(u) : NULL;
		Py_DECREF(name);
		if (copy == NULL) {
			Py_DECREF(it);
			if (!PyErr_Occurred())
				PyErr_NoMemory();
			return -1;
		}
		g_deny[g_ndeny++] = copy;
	}
	Py_DECREF(it);
	if (g_deny == NULL)
		PyErr_NoMemory();
	return PyErr_Occurred() ? -1 : 0;
}

static int load_shim(struct tp_err *err)
{
	PyObject *code, *r, *gc;

	g_exc_limit = PyErr_NewException("tidepool.LimitExceeded", PyExc_BaseException, NULL);
	g_exc_policy = PyErr_NewException("tidepool.PolicyViolation", PyExc_BaseException, NULL);
	g_shim = PyDict_New();
	if (!g_exc_limit || !g_exc_policy || !g_shim ||
	    PyDict_SetItemString(g_shim, "__builtins__", PyEval_GetBuiltins()) != 0 ||
	    PyDict_SetItemString(g_shim, "__name__", PyUnicode_FromString("_tidepool")) != 0 ||
	    PyDict_SetItemString(g_shim, "LimitExceeded", g_exc_limit) != 0 ||
	    PyDict_SetItemString(g_shim, "PolicyViolation", g_exc_policy) != 0)
		return py_fail("shim globals", err);
	for (PyMethodDef *d = shim_fns; d->ml_name; d++) {
		PyObject *fn = PyCFunction_NewEx(d, NULL, NULL);
		if (fn == NULL || PyDict_SetItemString(g_shim, d->ml_name, fn) != 0)
			return py_fail("shim functions", err);
		Py_DECREF(fn);
	}
	gc = PyImport_ImportModule("gc"); /* before the shim gates __import__ */
	code = Py_CompileString(tp_py_shim_source, SHIM, Py_file_input);
	r = code ? PyEval_EvalCode(code, g_shim, g_shim) : NULL;
	Py_XDECREF(code);
	Py_XDECREF(r);
	if (r == NULL || gc == NULL)
		return py_fail("running the shim", err);
	g_sbuiltins = PyObject_CallNoArgs(PyDict_GetItemString(g_shim, "init"));
	if (g_sbuiltins == NULL)
		return py_fail("shim init", err);
	if (load_deny() != 0)
		return py_fail("ATTR_DENY", err);
	if (make_main() == NULL)
		return py_fail("__main__", err);
	warm_up();
	g_main_fresh = 1;
	g_prepare = PyDict_GetItemString(g_shim, "prepare");
	g_reseed = PyDict_GetItemString(g_shim, "reseed");
	/* Workers share the zygote's heap copy-on-write: collect once, then keep
	 * every surviving object out of later collections, so a worker's GC never
	 * touches (and copies) the pages they live on. */
	r = PyObject_CallMethod(gc, "collect", NULL);
	Py_XDECREF(r);
	r = r ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
	Py_XDECREF(r);
	Py_DECREF(gc);
	if (r == NULL || g_prepare == NULL || g_reseed == NULL)
		return py_fail("gc.freeze", err);
	return 0;
}

int tp_py_zygote_init(struct tp_err *err)
{
	if (g_shim != NULL)
		return 0;
	tzset(); /* reads TZ's zone file now: after lockdown no file can be opened */
	if (start_interpreter(err) != 0)
		return -1;
	if (load_shim(err) != 0) {
		g_shim = NULL;
		return -1;
	}
	return 0;
}

void tp_py_worker_init(uint64_t entropy)
{
	if (g_shim == NULL)
		return;
	PyOS_AfterFork_Child(); /* CPython's locks and thread state after a fork */
	reseed(entropy);        /* forked workers must never share a random stream */
}

const struct tp_lang tp_lang_python = {
	.id = TP_LANG_PYTHON,
	.zygote_init = tp_py_zygote_init,
	.worker_init = tp_py_worker_init,
	.exec = tp_py_exec,
};
