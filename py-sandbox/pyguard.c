/*
 * pyguard.c — the sticky verdict wired into CPython (pending calls, the line
 * trace that counts instructions, allocator refusals), who is calling, and the
 * audit tripwire. Invariant: once a verdict is recorded no snippet code runs to
 * completion: every trace event and every pending call raises it again.
 * Layer (pyint.h): the guard, just above pystate.c; it calls only pystate.c and
 * pyalloc.c in py-sandbox/, never code that uses it: kernel-only mode hands
 * its recorder over at install (tp_py_guard_kernel_recorder).
 */
#include "pyint.h"

#include <frameobject.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pyalloc.h"

/* Shared with the CPU timer's signal handler (pyint.h), so volatile globals, as the
 * style guide requires, not members of G below: */
volatile sig_atomic_t tp_py_running;
volatile sig_atomic_t tp_py_limits_on;
volatile sig_atomic_t tp_py_armed;
volatile sig_atomic_t tp_py_pending;
volatile uint64_t tp_py_count;
size_t tp_py_base;
char tp_py_policy_msg[512];
int tp_py_policy_line = -1;
PyObject *tp_py_exc_limit, *tp_py_exc_policy, *tp_py_exc_kernel;

/* The guard's own state, one instance. No signal handler touches it. */
static struct {
	/* -- per exec: set and cleared by tp_py_trace_on and tp_py_trace_off */
	int self_trace; /* our own PyEval_SetTrace call, not the snippet's */
	int tracing;    /* trace_fn is installed */

	/* -- zygote (tp_py_refused_names, from the shim's load), read-only after */
	PyObject *refused;     /* {name: message}, from the shim (REFUSED_BUILTINS) */
	newfunc nameerror_new; /* NameError's own tp_new, before nameerror_new */

	/* -- zygote: kernel-only mode's recorder (pykernel.c hands it over:
	 * tp_py_kernel_install, through tp_py_guard_kernel_recorder) */
	void (*kernel_record)(const char *event, PyObject *args);
} G;

static int starts(PyObject *file, const char *prefix);

/* ---- the sticky verdict ------------------------------------------------------- */

uint64_t tp_py_mem_peak(void)
{
	const struct tp_pyalloc *a = tp_pyalloc_stats();
	return a->peak > tp_py_base ? a->peak - tp_py_base : 0;
}

/* Async-signal-safe (tp_verdict calls it from the CPU timer's handler). */
void tp_py_publish_usage(struct tp_shm *shm)
{
	shm->instructions = tp_py_count;
	shm->mem_peak = tp_py_mem_peak();
	shm->cpu_us = tp_verdict_cpu_us();
}

static int pending_raise(void *arg);

/* Async-signal-safe: Py_AddPendingCall needs neither the GIL nor a thread state. */
static void schedule_raise(void)
{
	if (tp_py_running && !tp_py_pending) {
		tp_py_pending = 1;
		if (Py_AddPendingCall(pending_raise, NULL) != 0)
			tp_py_pending = 0;
	}
}

const struct tp_verdict_ops tp_py_verdict_ops = { tp_py_publish_usage, schedule_raise };

/* The kind of the first verdict of this exec, or 0. */
int tp_py_verdict(void)
{
	return (int)tp_verdict_kind();
}

void tp_py_trip(enum tp_kind kind, int id, uint64_t limit, uint64_t used)
{
	tp_verdict_trip(kind, id, limit, used);
}

void tp_py_on_refuse(void)
{
	const struct tp_pyalloc *a = tp_pyalloc_stats();
	uint64_t used = a->refused_total > tp_py_base ? a->refused_total - tp_py_base : 0;

	/* kernel-only: the allocator has no limit, so this is malloc or mmap failing
	 * at the worker's RLIMIT_AS. The kernel counts the address space (the
	 * interpreter's mappings, fragmentation, the stack), more than the heap the
	 * allocator counts: at least the limit was used. */
	if (tp_py_kernel_only && used < tp_py_lim.memory_bytes)
		used = tp_py_lim.memory_bytes;
	if (tp_py_limits_on)
		tp_py_trip(TP_KIND_MEMORY_LIMIT, TP_LIMIT_MEMORY_BYTES, tp_py_lim.memory_bytes,
			   used);
}

int tp_py_raise_verdict(void)
{
	if (tp_py_verdict() == TP_KIND_POLICY_VIOLATION)
		PyErr_SetString(tp_py_exc_policy, tp_py_policy_msg);
	else if (tp_py_verdict() == TP_KIND_SANDBOX_VIOLATION)
		PyErr_SetString(tp_py_exc_kernel, tp_py_policy_msg);
	else
		PyErr_SetString(tp_py_exc_limit, tp_limit_message(tp_verdict_limit_id()));
	return -1;
}

static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

void tp_py_trace_on(void)
{
	if (G.tracing)
		return;
	G.self_trace = 1;
	PyEval_SetTrace(trace_fn, NULL);
	G.self_trace = 0;
	G.tracing = 1;
}

void tp_py_trace_off(void)
{
	G.self_trace = 1;
	PyEval_SetTrace(NULL, NULL);
	G.self_trace = 0;
	G.tracing = 0;
}

/* Runs at the eval loop's next check (a back edge, a call): raises, turns on the
 * trace so every later line raises too, and queues itself again. */
static int pending_raise(void *arg)
{
	(void)arg;
	tp_py_pending = 0;
	if (!tp_py_verdict() || !tp_py_running)
		return 0;
	tp_py_trace_on();
	schedule_raise();
	return tp_py_raise_verdict();
}

/* Line events are the instruction count; after a verdict every event raises. */
static int trace_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj, (void)frame, (void)arg;
	/* Not on exception or return events: an error is already unwinding, and
	 * replacing it there would drop its traceback. */
	if (tp_py_verdict())
		return tp_py_running && (what == PyTrace_LINE || what == PyTrace_CALL)
			   ? tp_py_raise_verdict()
			   : 0;
	if (what != PyTrace_LINE || tp_py_lim.instructions == 0)
		return 0;
	if (tp_py_count >= tp_py_lim.instructions) {
		tp_py_trip(TP_KIND_INSTRUCTION_LIMIT, TP_LIMIT_INSTRUCTIONS, tp_py_lim.instructions,
			   tp_py_count);
		return tp_py_raise_verdict();
	}
	tp_py_count++;
	return 0;
}

/* The line of the innermost snippet frame, or -1. */
int tp_py_snippet_line(void)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	int line = -1;

	Py_XINCREF(f);
	while (f != NULL && line < 0) {
		PyCodeObject *code = PyFrame_GetCode(f);
		PyFrameObject *back = PyFrame_GetBack(f);
		if (starts(code->co_filename, SNIPPET))
			line = PyFrame_GetLineNumber(f);
		Py_DECREF(code);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	return line;
}

/* msg into tp_py_policy_msg. A message longer than it holds (an import
 * refusal's list of allowed modules) is cut at a name of that list and says
 * how many more there are, never mid-name. */
static void set_policy_msg(const char *msg)
{
	static const char list[] = "; allowed: ", sep[] = ", ";
	const size_t cap = sizeof tp_py_policy_msg - 1;
	size_t n = strlen(msg);
	const char *at = strstr(msg, list);
	if (n <= cap || at == NULL) {
		snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg, "%s", msg);
		return;
	}
	/* The cut goes after the last name that leaves room for the tail: walk the
	 * separators, each leaving one fewer name after it. */
	const char *names = at + sizeof list - 1, *cut = NULL;
	size_t left = 1, more = 0;
	for (const char *q = strstr(names, sep); q != NULL; q = strstr(q + 1, sep))
		left++;
	for (const char *p = strstr(names, sep); p != NULL; p = strstr(p + 1, sep)) {
		char tail[64];
		left--;
		int t = snprintf(tail, sizeof tail, " and %zu more (sandbox/policy/get lists them)",
				 left);
		if ((size_t)(p - msg) + (size_t)t <= cap) {
			cut = p;
			more = left;
		}
	}
	if (cut == NULL)
		snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg, "%s", msg);
	else
		snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg,
			 "%.*s and %zu more (sandbox/policy/get lists them)", (int)(cut - msg), msg,
			 more);
}

/* Records a policy verdict (first wins) and raises PolicyViolation. A line <= 0
 * is the innermost snippet frame's, so a refusal the snippet catches still says
 * where it was. */
void tp_py_rule(const char *fmt, ...)
{
	char buf[192];
	va_list ap;

	if (tp_py_verdict() || tp_py_shm == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	tp_shm_rule(tp_py_shm, buf);
}

PyObject *tp_py_refuse(const char *rule, const char *msg, int line)
{
	if (!tp_py_verdict()) {
		if (line <= 0)
			line = tp_py_snippet_line();
		tp_py_rule("%s", rule);
		set_policy_msg(msg);
		tp_py_policy_line = line;
		tp_py_trip(TP_KIND_POLICY_VIOLATION, -1, 0, 0);
	}
	tp_py_raise_verdict();
	return NULL;
}

/* ---- builtins the policy refuses, by name ---------------------------------------- */

/* "name 'X' is not defined" (LOAD_NAME, LOAD_GLOBAL, DELETE_*): X, or NULL. */
static PyObject *undefined_name(PyObject *args)
{
	PyObject *m =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
	const char *s = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
	size_t n = s ? strlen(s) : 0;
	static const char head[] = "name '", tail[] = "' is not defined";

	PyErr_Clear();
	if (n < sizeof head + sizeof tail - 1 || strncmp(s, head, sizeof head - 1) != 0 ||
	    strcmp(s + n - (sizeof tail - 1), tail) != 0)
		return NULL;
	return PyUnicode_FromStringAndSize(s + sizeof head - 1,
					   (Py_ssize_t)(n - (sizeof head - 1) - (sizeof tail - 1)));
}

/* A NameError for a builtin the policy refuses: the sticky verdict says which
 * and why; the NameError itself is what unwinds until the next check raises. */
static PyObject *nameerror_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *self = G.nameerror_new(type, args, kw), *name, *msg;

	if (self == NULL || !tp_py_running || tp_py_verdict() || G.refused == NULL)
		return self;
	name = undefined_name(args);
	msg = name ? PyDict_GetItemWithError(G.refused, name) : NULL;
	if (msg != NULL && PyUnicode_Check(msg)) {
		const char *s = PyUnicode_AsUTF8(msg);
		const char *n = s != NULL ? PyUnicode_AsUTF8(name) : NULL;
		if (s != NULL) {
			tp_py_rule("python.builtins:%.80s", n ? n : "?");
			snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg, "%s", s);
			tp_py_policy_line = tp_py_snippet_line();
			tp_py_trip(TP_KIND_POLICY_VIOLATION, -1, 0, 0);
		}
	}
	Py_XDECREF(name);
	PyErr_Clear();
	return self;
}

int tp_py_refused_names(PyObject *dict)
{
	PyTypeObject *t = (PyTypeObject *)PyExc_NameError;

	if (!PyDict_Check(dict)) {
		PyErr_SetString(PyExc_TypeError, "refused names must be a dict");
		return -1;
	}
	Py_INCREF(dict);
	Py_XSETREF(G.refused, dict);
	if (G.nameerror_new == NULL) {
		G.nameerror_new = t->tp_new;
		t->tp_new = nameerror_new;
	}
	return 0;
}

/* ---- who is calling ------------------------------------------------------------ */

static int starts(PyObject *file, const char *prefix)
{
	const char *s = PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;

	if (s == NULL)
		PyErr_Clear();
	return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int caller_file_is(const char *prefix)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	int r;

	if (f == NULL)
		return -1; /* no Python frame: our own C code */
	code = PyFrame_GetCode(f);
	r = starts(code->co_filename, prefix);
	Py_DECREF(code);
	return r;
}

/* The innermost Python frame runs the standard library's own code: its code
 * object comes from a file under STDLIB or a module frozen into the interpreter
 * ("<frozen abc>"), AND it runs in the namespace of a module the zygote loaded.
 * Not exempt: "<string>" code the stdlib compiled (typing's forward references,
 * dataclasses' generated methods: the text may be the snippet's), the shim (it
 * forwards the snippet's names), the snippet, and stdlib code put in a function
 * with other globals (types.FunctionType(code, snippet_globals)). no_frame is
 * the answer when only C code is running. The file shim's checked call
 * (_fileop) is the standard library's own io.open or os.listdir. */
/* The innermost Python frame (f) runs code from a file under one of prefixes
 * (NULL-terminated) in the namespace of a module the zygote loaded. */
static int frame_in(PyFrameObject *f, const char *const *prefixes)
{
	PyCodeObject *code = PyFrame_GetCode(f);
	PyObject *g;
	int r = 0;

	for (const char *const *p = prefixes; *p != NULL && !r; p++)
		r = starts(code->co_filename, *p);
	Py_DECREF(code);
	if (!r)
		return 0;
	g = PyFrame_GetGlobals(f);
	r = tp_py_real_namespace(g);
	Py_XDECREF(g);
	return r;
}

/* E5, E6, E7 and D4 of docs/python-guard.md, "The guard's rules": the file
 * shim's call (E6), no frame (E7: no_frame), an acting callable (D4: never), the
 * stdlib's own frame (E5). */
int tp_py_frame_exempt(int no_frame)
{
	static const char *const stdlib[] = { STDLIB "/", "<frozen ", NULL };
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */

	if (tp_py_fileop)
		return 1; /* the file shim's own call: plain str and int arguments (shim.py) */
	if (f == NULL)
		return no_frame;
	if (tp_py_acting_now())
		return 0; /* a callable the snippet may have handed it reads (pyattr.c) */
	return frame_in(f, stdlib);
}

/* The innermost Python frame is a standard library module's own code from its
 * file (not a frozen module: the import machinery), in that module's namespace. */
int tp_py_caller_stdlib_file(void)
{
	static const char *const stdlib[] = { STDLIB "/", NULL };
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */

	return f != NULL && frame_in(f, stdlib);
}

/* The innermost Python frame is a data package's own code (numpy, pandas,
 * matplotlib under DIST_PACKAGES: the zygote loaded them for a policy that
 * offers them, and openpyxl behind pandas' Excel: tp_py_data_code) running in
 * the namespace of a module the zygote loaded. Such
 * code may use __import__ (its imports inside functions, from sys.modules: every
 * module is already loaded, and a real import still trips the audit hook) and
 * locals() (its own frame's) only (pyshimfns.c, gate_call), and of the
 * attribute guard's names only __dict__ (tp_py_data_dict_ok): it is NOT exempt
 * from the rest of the guard, eval, exec, compile, globals, vars or memoryview
 * (the shim puts the real memoryview type in the data modules' own globals). */
int tp_py_caller_data_package(void)
{
	static char dirs[8][96]; /* DIST_PACKAGES/<module>/, made at the first call */
	static const char *data[8];
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */

	if (data[0] == NULL)
		for (int i = 0; i < 7 && tp_py_data_code[i] != NULL; i++) {
			snprintf(dirs[i], sizeof dirs[i], "%s/%s/", DIST_PACKAGES,
				 tp_py_data_code[i]);
			data[i] = dirs[i];
		}
	return f != NULL && frame_in(f, data);
}

/* The innermost Python frame is the code of a module the zygote loaded, any
 * of them (the standard library, numpy, pandas, matplotlib and what they import:
 * PIL, dateutil ...): its file is under /usr/lib/python3 and it runs in that
 * module's namespace. Used by the real-module rule only (pyattr.c, module_ok). */
int tp_py_caller_zygote_code(void)
{
	static const char *const zygote[] = { "/usr/lib/python3", "<frozen ", NULL };
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */

	return f != NULL && frame_in(f, zygote);
}

/* The one denied name a data package's own code may read or write: __dict__
 * of an instance (matplotlib copies and sets its artists' and markers' dicts,
 * cbook's _setattr_cm tests one), never of a module (its globals) or a type
 * (its descriptors): pandas' agg('name') reads a name the snippet chose, on its
 * own objects. Every other denied name stays refused to it. */
int tp_py_data_dict_ok(PyObject *obj, PyObject *name) /* E8 (docs/python-guard.md) */
{
	return obj != NULL && !PyModule_Check(obj) && !PyType_Check(obj) && PyUnicode_Check(name) &&
	       PyUnicode_CompareWithASCIIString(name, "__dict__") == 0 &&
	       tp_py_caller_data_package();
}

int tp_py_caller_shim(void)
{
	return caller_file_is(SHIM) == 1;
}

/* Stdlib code (as above), the shim and our own C code may still use exec, eval,
 * compile and __import__. */
int tp_py_caller_trusted(void)
{
	return tp_py_frame_exempt(1) || tp_py_caller_shim();
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

/* object.__setattr__ / __delattr__ of a denied name, outside the stdlib. */
static int audited_write(PyObject *args)
{
	PyObject *name =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 2 ? PyTuple_GET_ITEM(args, 1) : NULL;

	return name != NULL && tp_py_attr_denied(name) && !tp_py_frame_exempt(!tp_py_running) &&
	       !tp_py_data_dict_ok(PyTuple_GET_ITEM(args, 0), name);
}

static const char *policy_name(void)
{
	const struct tp_policy *p = tp_sandbox_policy();
	return p && p->name ? p->name : "?";
}

/* A real import the snippet did not ask for (the import statement goes through
 * the shim's __import__): the standard library resolving something lazily for
 * it, most often a codec ('x'.encode('idna') imports encodings.idna). */
static int refuse_import(PyObject *args)
{
	PyObject *m =
	    PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	const char *s = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
	char msg[256];

	PyErr_Clear();
	if (s != NULL && strncmp(s, "encodings.", 10) == 0)
		snprintf(msg, sizeof msg,
			 "the '%.60s' codec is not available in the sandbox (policy %s)", s + 10,
			 policy_name());
	else
		snprintf(msg, sizeof msg,
			 "module '%.60s', which the standard library imports on demand, is not "
			 "available in the sandbox (policy %s)",
			 s ? s : "?", policy_name());
	char rule[96];
	snprintf(rule, sizeof rule, "python.modules:%.60s", s ? s : "?");
	tp_py_refuse(rule, msg, -1);
	return -1;
}

/* Kernel-only mode's recorder (G.kernel_record). */
void tp_py_guard_kernel_recorder(void (*record)(const char *event, PyObject *args))
{
	G.kernel_record = record;
}

/* kernel-only: nothing is refused here; a call that may reach the kernel is
 * recorded (pykernel.c names it if the kernel refuses), and the trace function
 * that counts instructions is the budget's, not the snippet's. */
static int kernel_only_hook(const char *event, PyObject *args)
{
	if (strcmp(event, "sys.settrace") == 0 || strcmp(event, "sys.setprofile") == 0) {
		if (tp_py_lim.instructions == 0 && strcmp(event, "sys.setprofile") == 0)
			return 0;
		PyErr_Format(PyExc_RuntimeError,
			     "%s is reserved in the sandbox: tidepool counts instructions and "
			     "enforces its limits with it",
			     event);
		return -1;
	}
	if ((is_kill_event(event) || strncmp(event, "_thread.", 8) == 0) && G.kernel_record)
		G.kernel_record(event, args);
	return 0;
}

int tp_py_audit_hook(const char *event, PyObject *args, void *ud)
{
	char note[160];

	(void)ud;
	if (!tp_py_armed || G.self_trace)
		return 0;
	if (strcmp(event, "open") == 0 && is_snippet_path(args)) {
		/* The parser looks for the source of "<snippet>" to quote a syntax
		 * error; it falls back to the string it has. Refuse quietly. */
		PyErr_SetString(PyExc_PermissionError, "no files");
		return -1;
	}
	if (tp_py_kernel_only)
		return kernel_only_hook(event, args);
	if (tp_py_fileop && (strcmp(event, "open") == 0 || strcmp(event, "os.listdir") == 0)) {
		/* The file shim's own call, on a path it checked (shim.py). With file
		 * grants the kernel may still refuse it (a symlink out of the grant):
		 * recorded, so the refusal names the call and Landlock's right. */
		if (G.kernel_record)
			G.kernel_record(event, args);
		return 0;
	}
	if (strcmp(event, "import") == 0 && tp_py_running)
		return refuse_import(args);
	if (is_kill_event(event)) {
		/* A tripwire, not a boundary: record the verdict, say why, stop. */
		int n = snprintf(note, sizeof note,
				 "tidepool: audit event '%.80s' stopped the worker\n", event);
		tp_shm_write(tp_py_shm, TP_STDERR, note, (size_t)n);
		if (!tp_py_verdict()) {
			tp_py_rule("python.audit:%.80s", event);
			snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg,
				 "audit event '%s' is not allowed", event);
			tp_shm_note(tp_py_shm, tp_py_policy_msg);
			tp_py_trip(TP_KIND_POLICY_VIOLATION, -1, 0, 0);
		}
		tp_py_publish_usage(tp_py_shm);
		_exit(TP_EXIT_LIMIT);
	}
	if (strcmp(event, "object.__getattr__") == 0 ? !tp_py_frame_exempt(!tp_py_running)
	    : strncmp(event, "object.__", 9) == 0    ? audited_write(args)
						     : 0) {
		/* CPython audits reads of __code__, __defaults__, gi_frame, tb_frame,
		 * f_code, ... (whatever the path: a descriptor's __get__ too); writes of
		 * a denied name need the same standing as reads. */
		PyObject *name = PyTuple_Size(args) >= 2 ? PyTuple_GetItem(args, 1) : NULL;
		const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		char msg[160], rule[112];
		PyErr_Clear();
		snprintf(msg, sizeof msg, "attribute '%s' is not allowed", s ? s : "?");
		snprintf(rule, sizeof rule, "python.attribute:%.80s", s ? s : "?");
		tp_py_refuse(rule, msg, -1);
		return -1;
	}
	return 0;
}
