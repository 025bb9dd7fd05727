/*
 * pymembrane.c — the membrane between trusted code and the snippet's frames.
 *
 * Invariant (docs/python.md, "The membrane"): while a snippet runs, no frame of
 * snippet code ever holds a forbidden object: a module the zygote loaded (not a
 * facade), a frame, a code object, a cell, the namespace of a loaded module,
 * one of the real sys module's containers (sys.modules, sys.path ...), a
 * builtin function of a module that reaches the interpreter's state or the
 * system (POWER: sys._getframe, posix.system, gc.get_objects, _io.open) that no
 * facade offers, or a bound method whose self is one of those.
 *
 * How: a snippet frame's values come from its arguments, from values sent or
 * thrown into it when it resumes, and from what its instructions produce. The
 * instructions that read attributes meet the attribute guard (pyattr.c); the
 * rest produce what other code returns, yields or raises, or what sits in a
 * container some code filled. This file checks every crossing between the two
 * sides, through CPython's frame evaluation hook (PEP 523), which every Python
 * frame passes (3.11 evaluates no Python call inline while a hook is set):
 *   - a snippet frame starts: its arguments are checked (deeply when the caller,
 *     the nearest Python frame, is trusted code or there is none);
 *   - a snippet generator or coroutine resumes: the value sent in is checked;
 *   - trusted code called (directly or through C) by snippet code ends: what it
 *     returns or yields, the exception it raises (its args, AttributeError.obj,
 *     __context__ and __cause__), and the snippet's own objects it was given
 *     (their instance dicts: update_wrapper stores into them) are checked.
 * "Deeply" is three levels into tuples, lists, dicts, sets, the instance dicts of
 * the snippet's own objects, and the self of bound methods. A forbidden object
 * found is the sticky policy verdict; the value never reaches the snippet.
 *
 * Trusted code is a frame whose code comes from a file under /usr/lib/python3
 * (the standard library, the data packages) or is frozen into the interpreter,
 * running in the namespace of a module the zygote loaded, and the shim. Every
 * other frame is the snippet's side ("<snippet>", "<string>" code the stdlib
 * compiled from the snippet's text, code put in the snippet's namespace).
 *
 * Layer (pyint.h): just above the guard; it calls pystate.c (the zygote's
 * modules and types) and pyguard.c only, never the attribute guard above it.
 */
#define Py_BUILD_CORE 1
#include "pyint.h"

#include <internal/pycore_frame.h>

#include <stdio.h>
#include <string.h>

#define DEEP 3

/* The C modules whose functions reach the interpreter's state or the system: frames
 * (sys), processes and files (posix, _io, _posixsubprocess, fcntl, mmap, select,
 * _socket, resource), every object (gc), imports and code (_imp, marshal), threads
 * and signals (_thread, _signal, faulthandler, atexit), raw memory (_ctypes,
 * _tracemalloc). Their functions cross only if a facade offers that very one. */
static const char *const power[] = {
	"sys",     "posix",   "gc",          "_imp",         "marshal",
	"_io",     "_thread", "_signal",     "faulthandler", "_posixsubprocess",
	"_socket", "select",  "mmap",        "fcntl",        "resource",
	"atexit",  "_ctypes", "_tracemalloc"
};
#define NPOWER (sizeof power / sizeof power[0])
#define NFILES 8 /* filenames file_kind_cached remembers */

/* The membrane's state, one instance. No signal handler touches it (their
 * flags are pyguard.c's volatile sig_atomic_t globals). */
static struct {
	/* -- zygote (tp_py_membrane_install, once, after the guard), read-only after */
	int on;                 /* the membrane is installed: checks run */
	PyObject *offered;      /* set of ids: builtin functions a facade offers */
	PyObject *sys_held[32]; /* the real sys module's dicts and lists */
	int nsys_held;
	PyObject *power[NPOWER]; /* the power modules loaded in the zygote, else NULL */
	/* The shim's __import__: it answers C code's PyImport_Import (time.strptime's
	 * _strptime) with the real module, which C code keeps; the snippet's import
	 * statement gets a facade, and the snippet cannot name __import__ (shim.py). */
	PyCodeObject *import_code;

	/* -- a cache, written whenever it misses (zygote and exec alike, by
	 * file_kind_cached): file_kind of the last few filenames seen, by identity.
	 * Every code object of one compilation shares its filename object, and the
	 * cache holds a reference, so a pointer here always names the same
	 * immutable string. */
	PyObject *files[NFILES];
	int kinds[NFILES], next_file;

	/* -- during one check (set and cleared around forbidden() by the caller
	 * that checks the snippet's own objects after trusted code had them): a
	 * cell there is the snippet's (a class body's __classcell__ in the
	 * namespace it hands a metaclass), as no trusted code stores a cell into one */
	int cells_ok;
} G;

/* ---- the two sides ---------------------------------------------------------------- */

static const char *utf8_of(PyObject *s)
{
	if (PyUnicode_Check(s) && PyUnicode_IS_COMPACT_ASCII(s))
		return (const char *)(((PyASCIIObject *)s) + 1);
	return NULL; /* trusted files have ASCII names */
}

/* Whether code from this file may be trusted (then its namespace decides): 1
 * for a file under /usr/lib/python3, a frozen module or the shim (2: no
 * namespace check), 0 for anything else. */
static int file_kind(PyObject *file)
{
	const char *s = utf8_of(file);

	if (s == NULL)
		return 0;
	if (s[0] == '<') {
		if (strcmp(s, SHIM) == 0)
			return 2;
		return strncmp(s, "<frozen ", 8) == 0;
	}
	return strncmp(s, "/usr/lib/python3", 16) == 0;
}

/* file_kind of the last few filenames seen, by identity (G.files). */
static int file_kind_cached(PyObject *file)
{
	int k;

	for (int i = 0; i < NFILES; i++)
		if (G.files[i] == file)
			return G.kinds[i];
	k = file_kind(file);
	Py_XSETREF(G.files[G.next_file], Py_NewRef(file));
	G.kinds[G.next_file] = k;
	G.next_file = (G.next_file + 1) % NFILES;
	return k;
}

/* The frame runs trusted code (see the header). */
static int trusted(_PyInterpreterFrame *f)
{
	int k = file_kind_cached(f->f_code->co_filename);

	return k == 2 || (k == 1 && tp_py_real_namespace(f->f_globals));
}

int tp_py_membrane_snippet_frame(void)
{
	_PyInterpreterFrame *f = PyThreadState_Get()->cframe->current_frame;

	return G.on && f != NULL && !trusted(f);
}

/* ---- what may not cross ------------------------------------------------------------ */

static int held(PyObject *set, PyObject *o)
{
	PyObject *k;
	int r;

	if (set == NULL)
		return 0;
	k = PyLong_FromVoidPtr(o);
	if (k == NULL) {
		PyErr_Clear();
		return 1; /* out of memory: refuse rather than guess */
	}
	r = PySet_Contains(set, k);
	Py_DECREF(k);
	if (r < 0) {
		PyErr_Clear();
		return 1;
	}
	return r;
}

/* A description of what is forbidden about o ("a frame", "the module 'sys'"),
 * written into buf, or NULL when o may cross. depth: how many container levels
 * to look into. */
static const char *forbidden(PyObject *o, int depth, char *buf, size_t n);

static const char *module_desc(PyObject *m, const char *what, char *buf, size_t n)
{
	const char *name = PyModule_GetName(m);

	if (name == NULL)
		PyErr_Clear();
	snprintf(buf, n, "%s '%.60s'", what, name ? name : "?");
	return buf;
}

static const char *scan_dict(PyObject *d, int depth, char *buf, size_t n)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;
	const char *r;

	while (PyDict_Next(d, &pos, &k, &v))
		if ((r = forbidden(v, depth, buf, n)) != NULL || (r = forbidden(k, depth, buf, n)))
			return r;
	return NULL;
}

static const char *cfunction_desc(PyObject *o, int depth, char *buf, size_t n)
{
	PyObject *self = PyCFunction_GET_SELF(o);
	const char *fn = ((PyCFunctionObject *)o)->m_ml->ml_name;

	if (self == NULL)
		return NULL;
	if (PyModule_Check(self)) {
		size_t i = 0;
		while (i < NPOWER && G.power[i] != self)
			i++;
		if (i == NPOWER || held(G.offered, o))
			return NULL;
		snprintf(buf, n, "the function %s.%.60s", power[i], fn ? fn : "?");
		return buf;
	}
	return forbidden(self, depth > 0 ? depth - 1 : 0, buf, n);
}

static const char *forbidden(PyObject *o, int depth, char *buf, size_t n)
{
	PyTypeObject *t = Py_TYPE(o);
	const char *r;

	/* the common values first: nothing to look into */
	if (t == &PyLong_Type || t == &PyUnicode_Type || t == &PyFloat_Type || o == Py_None ||
	    t == &PyBool_Type || t == &PyBytes_Type || t == &PyFunction_Type)
		return NULL;
	if (PyType_Check(o)) {
		/* A class made while the snippet runs (by it, or by trusted code for it: enum's
		 * _convert_ builds one from a module's namespace): what its dict holds. */
		PyTypeObject *c = (PyTypeObject *)o;
		if (depth <= 0 || tp_py_zygote_type(c) || c->tp_dict == NULL)
			return NULL;
		return scan_dict(c->tp_dict, depth - 1, buf, n);
	}
	if (t == &PyFrame_Type)
		return "a frame";
	if (t == &PyCode_Type)
		return "a code object";
	if (t == &PyCell_Type && !G.cells_ok)
		return "a cell";
	if (tp_py_real_module(o)) /* exact types: a facade or the snippet's own is not one */
		return module_desc(o, "the module", buf, n);
	if (t == &PyDict_Type || t == &PyList_Type) {
		if (tp_py_real_namespace(o)) {
			snprintf(buf, n, "the namespace of a module the sandbox does not offer");
			return buf;
		}
		for (int i = 0; i < G.nsys_held; i++)
			if (G.sys_held[i] == o)
				return "one of the sys module's own containers (sys.modules, "
				       "sys.path ...)";
	}
	if (t == &PyCFunction_Type || t == &PyCMethod_Type)
		return cfunction_desc(o, depth, buf, n);
	if (t == &PyMethod_Type) {
		if ((r = forbidden(PyMethod_GET_SELF(o), depth, buf, n)) != NULL)
			return r;
		return forbidden(PyMethod_GET_FUNCTION(o), depth, buf, n);
	}
	if (depth <= 0)
		return NULL;
	if (PyTuple_Check(o) || PyList_Check(o)) {
		Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
		PyObject **items = PySequence_Fast_ITEMS(o);
		for (Py_ssize_t i = 0; i < len; i++)
			if ((r = forbidden(items[i], depth - 1, buf, n)) != NULL)
				return r;
		return NULL;
	}
	if (PyDict_Check(o))
		return scan_dict(o, depth - 1, buf, n);
	if (PyAnySet_Check(o)) {
		PyObject *k;
		Py_ssize_t pos = 0;
		Py_hash_t h;
		while (_PySet_NextEntry(o, &pos, &k, &h))
			if ((r = forbidden(k, depth - 1, buf, n)) != NULL)
				return r;
		return NULL;
	}
	if (PyExceptionInstance_Check(o)) {
		PyBaseExceptionObject *e = (PyBaseExceptionObject *)o;
		if (e->args != NULL && (r = forbidden(e->args, depth, buf, n)) != NULL)
			return r;
		if (PyErr_GivenExceptionMatches(o, PyExc_AttributeError)) {
			PyAttributeErrorObject *a = (PyAttributeErrorObject *)o;
			if (a->obj != NULL && (r = forbidden(a->obj, depth - 1, buf, n)) != NULL)
				return r;
		}
		if (e->context != NULL && (r = forbidden(e->context, depth - 1, buf, n)) != NULL)
			return r;
		if (e->cause != NULL && (r = forbidden(e->cause, depth - 1, buf, n)) != NULL)
			return r;
		return NULL;
	}
	if (!tp_py_zygote_type(t)) { /* one of the snippet's own objects: its dict */
		PyObject **dp = _PyObject_GetDictPtr(o);
		if (dp != NULL && *dp != NULL && PyDict_Check(*dp))
			return scan_dict(*dp, depth - 1, buf, n);
		if (t->tp_flags & Py_TPFLAGS_MANAGED_DICT) { /* values inline: made a dict once */
			PyObject *d = PyObject_GenericGetDict(o, NULL);
			if (d == NULL) {
				PyErr_Clear();
				return NULL;
			}
			r = scan_dict(d, depth - 1, buf, n);
			Py_DECREF(d);
			return r;
		}
	}
	return NULL;
}

int tp_py_membrane_suspect(PyObject *v)
{
	PyTypeObject *t = Py_TYPE(v);

	return G.on && (t == &PyFrame_Type || t == &PyCode_Type || t == &PyCell_Type ||
			t == &PyDict_Type || t == &PyList_Type || t == &PyCFunction_Type ||
			t == &PyCMethod_Type || t == &PyMethod_Type);
}

const char *tp_py_membrane_forbidden(PyObject *v)
{
	static char buf[200];

	return forbidden(v, 0, buf, sizeof buf);
}

/* ---- refusing ----------------------------------------------------------------------- */

static const char *qualname(_PyInterpreterFrame *f)
{
	const char *q = utf8_of(f->f_code->co_qualname);
	return q ? q : "?";
}

static PyObject *refuse(const char *what, const char *how, _PyInterpreterFrame *f)
{
	char msg[400];

	if (tp_py_verdict()) {
		tp_py_raise_verdict();
		return NULL;
	}
	snprintf(msg, sizeof msg, "%s: %.60s %s, which a snippet may not hold", what, qualname(f),
		 how);
	return tp_py_refuse("python.membrane", msg, -1);
}

/* ---- crossings ------------------------------------------------------------------------ */

static int nargs(PyCodeObject *c)
{
	return c->co_argcount + c->co_kwonlyargcount + !!(c->co_flags & CO_VARARGS) +
	       !!(c->co_flags & CO_VARKEYWORDS);
}

/* A snippet frame starts or resumes. */
static int check_entry(_PyInterpreterFrame *f, int depth)
{
	char buf[200];
	const char *r;
	PyCodeObject *c = f->f_code;

	if (f->prev_instr < _PyCode_CODE(c)) { /* a fresh frame: its arguments */
		int k = nargs(c);
		for (int i = 0; i < k && i < c->co_nlocalsplus; i++) {
			PyObject *v = f->localsplus[i];
			/* *args and **kwargs are the call's own containers */
			int d = depth > 0 ? depth : (i >= c->co_argcount + c->co_kwonlyargcount);
			if (v != NULL && (r = forbidden(v, d, buf, sizeof buf)) != NULL) {
				char how[120];
				snprintf(how, sizeof how, "was called with %s (argument %d)", r,
					 i + 1);
				refuse("a value may not cross into the snippet", how, f);
				return -1;
			}
		}
		return 0;
	}
	/* resumed: gen.send(v) pushed v */
	if (f->stacktop > c->co_nlocalsplus) {
		PyObject *v = f->localsplus[f->stacktop - 1];
		if (v != NULL && (r = forbidden(v, DEEP, buf, sizeof buf)) != NULL) {
			char how[120];
			snprintf(how, sizeof how, "was sent %s", r);
			refuse("a value may not cross into the snippet", how, f);
			return -1;
		}
	}
	return 0;
}

/* An exception thrown into a snippet generator (gen.throw, contextlib). */
static int check_thrown(_PyInterpreterFrame *f)
{
	PyObject *t, *v, *tb;
	char buf[200], how[260];
	const char *r;

	if (tp_py_verdict() || !PyErr_Occurred())
		return 0;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	r = v != NULL ? forbidden(v, DEEP, buf, sizeof buf) : NULL;
	if (r == NULL) {
		PyErr_Restore(t, v, tb);
		return 0;
	}
	Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
	snprintf(how, sizeof how, "had an exception thrown in holding %s", r);
	refuse("a value may not cross into the snippet", how, f);
	return -1;
}

/* The snippet's own objects among a trusted frame's arguments, after the frame ran:
 * what it may have stored in them (update_wrapper into the wrapper's dict, deepcopy
 * into the memo it was given). Dicts and the snippet's instances as deep as a return
 * value; a list only if its length changed (random.choice(big) stays cheap). */
static const char *check_args_after(PyObject **args, const Py_ssize_t *lens, int k, char *buf,
				    size_t n)
{
	const char *r;

	for (int i = 0; i < k; i++) {
		PyObject *v = args[i];
		if (v == NULL)
			continue;
		PyTypeObject *t = Py_TYPE(v);
		int depth = t == &PyDict_Type       ? DEEP
			    : t == &PyList_Type     ? (PyList_GET_SIZE(v) != lens[i] ? DEEP : 0)
			    : !tp_py_zygote_type(t) ? DEEP - 1
						    : 0;
		if (depth > 0) {
			G.cells_ok = 1;
			r = forbidden(v, depth, buf, n);
			G.cells_ok = 0;
			if (r != NULL)
				return r;
		}
	}
	return NULL;
}

#define KEEP_ARGS 8

static PyObject *membrane(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag)
{
	_PyInterpreterFrame *caller;
	PyObject *r, *args[KEEP_ARGS];
	Py_ssize_t lens[KEEP_ARGS];
	const char *bad;
	char buf[200], how[260];
	int k;

	if (!tp_py_running || !G.on)
		return _PyEval_EvalFrameDefault(ts, f, throwflag);
	caller = ts->cframe->current_frame;
	if (!trusted(f)) {
		int depth = (caller == NULL || trusted(caller)) ? DEEP : 0;
		if ((throwflag ? check_thrown(f) : check_entry(f, depth)) != 0)
			return NULL;
		return _PyEval_EvalFrameDefault(ts, f, throwflag);
	}
	if (caller == NULL || trusted(caller) || f->f_code == G.import_code)
		return _PyEval_EvalFrameDefault(ts, f, throwflag);

	/* snippet code called trusted code: what it passes (nothing forbidden, if the
	 * invariant holds: checked all the same, shallowly), and what comes back */
	k = 0;
	if (f->prev_instr < _PyCode_CODE(f->f_code)) {
		int m = nargs(f->f_code);
		for (int i = 0; i < m && i < f->f_code->co_nlocalsplus; i++) {
			PyObject *v = f->localsplus[i];
			if (v == NULL)
				continue;
			if ((bad = forbidden(v, 0, buf, sizeof buf)) != NULL) {
				for (int j = 0; j < k; j++)
					Py_DECREF(args[j]);
				snprintf(how, sizeof how, "was passed %s (argument %d)", bad,
					 i + 1);
				return refuse("a value may not cross from the snippet", how, f);
			}
			if (k < KEEP_ARGS) {
				lens[k] = PyList_CheckExact(v) ? PyList_GET_SIZE(v) : 0;
				args[k++] = Py_NewRef(v);
			}
		}
	}
	r = _PyEval_EvalFrameDefault(ts, f, throwflag);
	bad = NULL;
	if (r != NULL) {
		if ((bad = forbidden(r, DEEP, buf, sizeof buf)) != NULL) {
			snprintf(how, sizeof how, "returned a value that is or holds %s", bad);
			Py_CLEAR(r);
		}
	} else if (!tp_py_verdict() && PyErr_Occurred()) {
		PyObject *t, *v, *tb;
		PyErr_Fetch(&t, &v, &tb);
		PyErr_NormalizeException(&t, &v, &tb);
		if (v != NULL && (bad = forbidden(v, DEEP, buf, sizeof buf)) != NULL) {
			snprintf(how, sizeof how, "raised an exception holding %s", bad);
			Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
		} else {
			PyErr_Restore(t, v, tb);
		}
	}
	if (bad == NULL && !tp_py_verdict() &&
	    (bad = check_args_after(args, lens, k, buf, sizeof buf)) != NULL) {
		snprintf(how, sizeof how, "left %s in an object the snippet gave it", bad);
		Py_CLEAR(r);
	}
	for (int i = 0; i < k; i++)
		Py_DECREF(args[i]);
	if (bad != NULL) {
		PyErr_Clear();
		return refuse("a value may not cross into the snippet", how, f);
	}
	return r;
}

/* ---- install --------------------------------------------------------------------------- */

static int add_id(PyObject *set, PyObject *o)
{
	PyObject *k = PyLong_FromVoidPtr(o);
	int r = k == NULL ? -1 : PySet_Add(set, k);

	Py_XDECREF(k);
	return r;
}

/* Zygote, once, after the guard: facades is a sequence of the facade modules,
 * b the snippet's builtins dict. */
int tp_py_membrane_install(PyObject *facades, PyObject *b)
{
	PyObject *seq, *sys, *d, *k, *v;
	Py_ssize_t pos;

	G.offered = PySet_New(NULL);
	seq = PySequence_Fast(facades, "facades must be a sequence");
	if (G.offered == NULL || seq == NULL || !PyDict_Check(b))
		goto fail;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *m = PySequence_Fast_GET_ITEM(seq, i);
		if (!PyModule_Check(m) || (d = PyModule_GetDict(m)) == NULL)
			continue;
		pos = 0;
		while (PyDict_Next(d, &pos, &k, &v))
			if (PyCFunction_Check(v) && add_id(G.offered, v) != 0)
				goto fail;
	}
	pos = 0;
	while (PyDict_Next(b, &pos, &k, &v))
		if (PyCFunction_Check(v) && add_id(G.offered, v) != 0)
			goto fail;
	v = PyDict_GetItemString(b, "__import__"); /* borrowed */
	if (v == NULL || !PyFunction_Check(v))
		goto fail;
	G.import_code = (PyCodeObject *)Py_NewRef(PyFunction_GET_CODE(v));
	for (size_t i = 0; i < NPOWER; i++) { /* loaded ones only: nothing is imported here */
		G.power[i] = PyDict_GetItemString(PyImport_GetModuleDict(), power[i]);
		Py_XINCREF(G.power[i]);
	}
	sys = PyImport_ImportModule("sys");
	if (sys == NULL)
		goto fail;
	d = PyModule_GetDict(sys);
	pos = 0;
	while (PyDict_Next(d, &pos, &k, &v))
		if ((PyDict_CheckExact(v) || PyList_CheckExact(v)) && G.nsys_held < 32)
			G.sys_held[G.nsys_held++] = Py_NewRef(v);
	Py_DECREF(sys);
	Py_DECREF(seq);
	_PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), membrane);
	G.on = 1;
	return 0;
fail:
	Py_XDECREF(seq);
	if (!PyErr_Occurred())
		PyErr_SetString(PyExc_TypeError, "_membrane(facades, builtins)");
	return -1;
}
