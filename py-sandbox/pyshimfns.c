/*
 * pyshimfns.c — the C functions the shim and the snippet call: _write, _print
 * (into the capped output page), _refuse, _settype, _gate (with the namespace
 * rules of a gated eval/exec), _eval_builtins, _guard, and for file grants
 * _within, _workspace and _fileop. Invariant: nothing
 * is written outside an exec or after a verdict, and a gated builtin runs only
 * for a trusted caller (stdlib, shim, our own C code), never for the snippet.
 * Layer (pyint.h): below pysandbox.c only; it calls the files under it
 * (pystate, pyguard, pymembrane, pyattr, pynumpy, pyerror), never pysandbox.c.
 */
#include "pyint.h"

#include <stdio.h>
#include <string.h>

static int write_text(enum tp_stream s, PyObject *text)
{
	Py_ssize_t n;
	const char *u;
	PyObject *b = NULL;

	if (tp_py_shm == NULL || tp_py_verdict())
		return 0; /* nothing is written outside an exec or after a verdict */
	u = PyUnicode_AsUTF8AndSize(text, &n);
	if (u == NULL) {
		PyErr_Clear(); /* lone surrogates */
		b = PyUnicode_AsEncodedString(text, "utf-8", "replace");
		if (b == NULL)
			return -1;
		u = PyBytes_AS_STRING(b), n = PyBytes_GET_SIZE(b);
	}
	if (tp_shm_write(tp_py_shm, s, u, (size_t)n) != 0)
		tp_py_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_OUTPUT_BYTES, tp_py_lim.output_bytes,
			   tp_py_shm->wanted);
	Py_XDECREF(b);
	return tp_py_verdict() ? tp_py_raise_verdict() : 0;
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
	if (file == Py_None) {
		/* contextlib.redirect_stdout replaced the real sys.stdout (the shim's
		 * _Stream): print follows it, as CPython's does. */
		PyObject *so = PySys_GetObject("stdout");
		if (so != NULL && so != Py_None && strcmp(Py_TYPE(so)->tp_name, "_Stream") != 0)
			file = so;
	}
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
	const char *msg, *rule = NULL;
	int line = -1;

	(void)self;
	if (!PyArg_ParseTuple(args, "s|iz", &msg, &line, &rule))
		return NULL;
	return tp_py_refuse(rule ? rule : "python.guard", msg, line);
}

/* _settype(type, name[, value]): sets or deletes an entry of a (static) type's
 * dict, which type.__setattr__ refuses; a type that lost one keeps the attribute
 * guard's trampoline (pyattr.c). Zygote only. */
static PyObject *py_settype(PyObject *self, PyObject *args)
{
	PyTypeObject *t;
	const char *name;
	PyObject *v = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!s|O", &PyType_Type, &t, &name, &v))
		return NULL;
	if (v != NULL ? PyDict_SetItemString(t->tp_dict, name, v)
		      : PyDict_DelItemString(t->tp_dict, name) || tp_py_guard_locked(t))
		return NULL;
	PyType_Modified(t);
	Py_RETURN_NONE;
}

/* The shim functions' state, one instance: written in the zygote by the shim's
 * init (_eval_builtins, _ns_builtins), read-only after. No signal handler
 * touches it. */
static struct {
	PyObject *snippet_builtins; /* what code the stdlib evaluates for the snippet sees */
	PyObject *nameable; /* dunder names the AST check lets a snippet load (NAME_DUNDER_OK) */
	PyObject *ns_refused[2]; /* the refusal messages of globals() and locals() */
} G;

/* exec/eval for a trusted caller: never in the namespace of a module the zygote
 * loaded (typing.ForwardRef(s, module='typing'), a class whose __module__ names
 * a stdlib module: the text is the snippet's and the namespace holds sys), and a
 * namespace without __builtins__ gets the snippet's, not the real builtins module
 * eval would put there (with its __loader__, getattr, and so on). */
static int eval_namespace_ok(PyObject *args, const char *fn)
{
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	PyObject *g = n > 1 ? PyTuple_GET_ITEM(args, 1) : Py_None;
	PyObject *l = n > 2 ? PyTuple_GET_ITEM(args, 2) : Py_None;
	char msg[160];

	if (g == Py_None)
		g = PyEval_GetGlobals(); /* eval's own default: the caller's */
	if (tp_py_real_namespace(g) || tp_py_real_namespace(l)) {
		PyObject *name = g && PyDict_Check(g) ? PyDict_GetItemString(g, "__name__") : NULL;
		const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		PyErr_Clear();
		snprintf(msg, sizeof msg, "%s() in the namespace of module '%.60s' is not allowed",
			 fn, s ? s : "?");
		char rule[64];
		snprintf(rule, sizeof rule, "python.builtins:%s", fn);
		tp_py_refuse(rule, msg, -1);
		return -1;
	}
	if (g != NULL && PyDict_Check(g) && G.snippet_builtins != NULL &&
	    PyDict_GetItemString(g, "__builtins__") == NULL &&
	    PyDict_SetItemString(g, "__builtins__", G.snippet_builtins) != 0)
		return -1;
	return 0;
}

/* __import__ for a data package's own code (numpy, pandas, matplotlib import
 * inside functions): the module from sys.modules, as the import statement
 * would give it, without CPython's import machinery (which reads the module's
 * __spec__, refused to a frame outside the standard library). A module that is
 * not loaded goes to the real import, whose audit event ends the exec: a
 * worker never loads one. */
static PyObject *data_import(PyObject *real, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "globals", "locals", "fromlist", "level", NULL };
	PyObject *name, *globals = NULL, *locals = NULL, *fromlist = NULL, *abs = NULL, *m;
	int level = 0, from;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|OOOi:__import__", kws, &name, &globals,
					 &locals, &fromlist, &level))
		return NULL;
	from = fromlist != NULL && fromlist != Py_None && PyObject_IsTrue(fromlist) == 1;
	if (level == 0) {
		abs = Py_NewRef(name);
	} else if (from && globals != NULL && PyDict_Check(globals)) {
		PyObject *pkg = PyDict_GetItemString(globals, "__package__");
		if (pkg != NULL && PyUnicode_Check(pkg) && PyUnicode_GET_LENGTH(pkg) > 0) {
			Py_ssize_t end = PyUnicode_GET_LENGTH(pkg);
			for (int i = 1; i < level && end > 0; i++)
				end = PyUnicode_FindChar(pkg, '.', 0, end, -1);
			if (end > 0) {
				PyObject *base = PyUnicode_Substring(pkg, 0, end);
				abs = base == NULL || PyUnicode_GET_LENGTH(name) == 0
					  ? base
					  : PyUnicode_FromFormat("%U.%U", base, name);
				if (abs != base)
					Py_XDECREF(base);
			}
		}
	}
	if (PyErr_Occurred()) {
		Py_XDECREF(abs);
		return NULL;
	}
	m = abs ? PyDict_GetItemWithError(PyImport_GetModuleDict(), abs) : NULL; /* borrowed */
	if (m != NULL && !from && level == 0) {
		Py_ssize_t dot = PyUnicode_FindChar(abs, '.', 0, PyUnicode_GET_LENGTH(abs), 1);
		if (dot > 0) {
			PyObject *top = PyUnicode_Substring(abs, 0, dot);
			m = top ? PyDict_GetItemWithError(PyImport_GetModuleDict(), top) : NULL;
			Py_XDECREF(top);
		}
	}
	Py_XDECREF(abs);
	if (m != NULL)
		return Py_NewRef(m);
	if (PyErr_Occurred())
		return NULL;
	return PyObject_Call(real, args, kw);
}

/* A gated builtin: self is (original, name). */
static PyObject *gate_call(PyObject *self, PyObject *args, PyObject *kw)
{
	char msg[96];
	const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(self, 1));

	/* The shim's own calls into the data packages (pysandbox.c's rich results)
	 * end with no frame of theirs innermost when numpy's C code imports: the
	 * shim is then the caller, and its imports are loaded modules too. */
	if (strcmp(name, "__import__") == 0 &&
	    ((!tp_py_caller_trusted() && tp_py_caller_data_package()) || tp_py_caller_shim()))
		return data_import(PyTuple_GET_ITEM(self, 0), args, kw);
	/* locals() of a data package's own frame (pandas.read_csv copies its
	 * arguments with it): its own variables, nothing of the interpreter. */
	if (strcmp(name, "locals") == 0 && !tp_py_caller_trusted() && tp_py_caller_data_package())
		return PyObject_Call(PyTuple_GET_ITEM(self, 0), args, kw);
	if (!tp_py_caller_trusted()) {
		snprintf(msg, sizeof msg, "%s() is not allowed", name);
		char rule[96];
		snprintf(rule, sizeof rule, "python.builtins:%.60s", name);
		return tp_py_refuse(rule, msg, -1);
	}
	if ((strcmp(name, "eval") == 0 || strcmp(name, "exec") == 0) &&
	    eval_namespace_ok(args, name) != 0)
		return NULL;
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

/* _eval_builtins(dict): what eval/exec put in a namespace that has none. */
static PyObject *py_eval_builtins(PyObject *self, PyObject *b)
{
	(void)self;
	if (!PyDict_Check(b)) {
		PyErr_SetString(PyExc_TypeError, "builtins must be a dict");
		return NULL;
	}
	Py_INCREF(b);
	Py_XSETREF(G.snippet_builtins, b);
	Py_RETURN_NONE;
}

/* _guard(names): installs the attribute guard (pyattr.c). Zygote, once, last. */
static PyObject *py_guard(PyObject *self, PyObject *names)
{
	(void)self;
	if (tp_py_guard_install(names) != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _spelled({id(namespace): frozenset}, only): what each stdlib module's code names, and
 * the modules that rule covers (pyattr.c). */
static PyObject *py_spelled(PyObject *self, PyObject *args)
{
	PyObject *d, *only;

	(void)self;
	if (!PyArg_ParseTuple(args, "OO", &d, &only) || tp_py_guard_spelled(d, only) != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _membrane(facades, builtins): installs the membrane (pymembrane.c). Zygote, once,
 * after _guard. */
static PyObject *py_membrane(PyObject *self, PyObject *args)
{
	PyObject *facades, *b;

	(void)self;
	if (!PyArg_ParseTuple(args, "OO", &facades, &b) || tp_py_membrane_install(facades, b) != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* _sgetattr(obj, name[, default]), _ssetattr(obj, name[, value]): pyattr.c. */
static PyObject *py_sgetattr(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	return tp_py_snippet_getattr(args, n);
}

static PyObject *py_ssetattr(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	return tp_py_snippet_setattr(args, n);
}

/* _within(path, write): is the normalized absolute path inside the policy's
 * grants? Reads: a read or a write grant; writes: a write grant. */
static PyObject *py_within(PyObject *self, PyObject *args)
{
	const struct tp_policy *p = tp_sandbox_policy();
	const char *path;
	int write;

	(void)self;
	if (!PyArg_ParseTuple(args, "sp", &path, &write))
		return NULL;
	if (p == NULL)
		Py_RETURN_FALSE;
	return PyBool_FromLong(tp_policy_path_within(&p->fs_write, path) ||
			       tp_sandbox_in_workspace(path) ||
			       (!write && tp_policy_path_within(&p->fs_read, path)));
}

/* _workspace(): the exec's workspace directory (a session's), or None. */
static PyObject *py_workspace(PyObject *self, PyObject *args)
{
	const char *ws = tp_sandbox_workspace();

	(void)self, (void)args;
	if (ws == NULL)
		Py_RETURN_NONE;
	return PyUnicode_FromString(ws);
}

/* _fileop(fn, *args): fn(*args) with the audit hook letting its "open" and
 * "os.listdir" through: the file shim's call on a path it checked. Its
 * arguments are plain str and int (no snippet code runs inside). */
static PyObject *py_fileop(PyObject *self, PyObject *args)
{
	PyObject *rest, *r;

	(void)self;
	if (PyTuple_GET_SIZE(args) < 1) {
		PyErr_SetString(PyExc_TypeError, "_fileop(fn, *args)");
		return NULL;
	}
	rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
	if (rest == NULL)
		return NULL;
	tp_py_fileop = 1;
	r = PyObject_Call(PyTuple_GET_ITEM(args, 0), rest, NULL);
	tp_py_fileop = 0;
	if (r == NULL)
		tp_py_kernel_fileop_failed(); /* a symlink out of the workspace: Landlock's */
	Py_DECREF(rest);
	return r;
}

static PyObject *py_refused_names(PyObject *self, PyObject *dict)
{
	(void)self;
	if (tp_py_refused_names(dict) != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *py_tb_rows(PyObject *self, PyObject *exc)
{
	(void)self;
	return tp_py_tb_rows(exc);
}

static PyObject *py_snippet_line(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return PyLong_FromLong(tp_py_snippet_line());
}

static PyObject *py_vars(PyObject *self, PyObject *obj)
{
	(void)self;
	return tp_py_vars(obj);
}

/* ---- globals() and locals(): snapshots of the snippet's own namespace ---------------- */

/* A copy of the calling snippet frame's globals (or locals): only the names the
 * snippet can load by name there (every key but a dunder outside G.nameable:
 * never __builtins__, __loader__, __spec__), so it gives no object the snippet
 * does not already reach. The copy is a new dict each call: writing to it does
 * not change the namespace. Refused when the caller is not the snippet's own
 * code (stdlib code calling the function the snippet handed it, or code the
 * stdlib compiled with the snippet's builtins): that frame's names are not the
 * snippet's. */
static PyObject *snippet_ns(int which)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed: C functions push no frame */
	PyCodeObject *code = f ? PyFrame_GetCode(f) : NULL;
	PyObject *src, *out, *k, *v;
	Py_ssize_t pos = 0;
	int mine = code != NULL && PyUnicode_Check(code->co_filename) &&
		   PyUnicode_CompareWithASCIIString(code->co_filename, SNIPPET) == 0;

	Py_XDECREF(code);
	if (!mine || !tp_py_running || G.nameable == NULL) {
		const char *msg =
		    G.ns_refused[which] ? PyUnicode_AsUTF8(G.ns_refused[which]) : NULL;
		PyErr_Clear();
		return tp_py_refuse(which ? "python.builtins:locals" : "python.builtins:globals",
				    msg ? msg : "not available in the sandbox", -1);
	}
	src = which ? PyFrame_GetLocals(f) : PyFrame_GetGlobals(f);
	if (src == NULL)
		return NULL;
	out = PyDict_New();
	while (out != NULL && PyDict_Check(src) && PyDict_Next(src, &pos, &k, &v)) {
		Py_ssize_t n;
		int dunder;
		if (!PyUnicode_Check(k))
			continue;
		n = PyUnicode_GET_LENGTH(k);
		dunder = n >= 4 && PyUnicode_READ_CHAR(k, 0) == '_' &&
			 PyUnicode_READ_CHAR(k, 1) == '_' && PyUnicode_READ_CHAR(k, n - 1) == '_' &&
			 PyUnicode_READ_CHAR(k, n - 2) == '_';
		if (dunder && PySet_Contains(G.nameable, k) != 1) {
			PyErr_Clear();
			continue;
		}
		if (PyDict_SetItem(out, k, v) != 0)
			Py_CLEAR(out);
	}
	Py_DECREF(src);
	return out;
}

static PyObject *ns_globals(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return snippet_ns(0);
}

static PyObject *ns_locals(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return snippet_ns(1);
}

static PyMethodDef g_globals_def = { "globals", ns_globals, METH_NOARGS,
				     "A copy of the names the snippet's code can load here." };
static PyMethodDef g_locals_def = { "locals", ns_locals, METH_NOARGS,
				    "A copy of the names the snippet's code can load here." };

/* _ns_builtins(nameable, globals_refused, locals_refused): the snippet's globals
 * and locals. Zygote only. */
static PyObject *py_ns_builtins(PyObject *self, PyObject *args)
{
	PyObject *nameable, *mg, *ml, *g, *l, *r;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!UU", &PyFrozenSet_Type, &nameable, &mg, &ml))
		return NULL;
	Py_INCREF(nameable), Py_INCREF(mg), Py_INCREF(ml);
	Py_XSETREF(G.nameable, nameable);
	Py_XSETREF(G.ns_refused[0], mg);
	Py_XSETREF(G.ns_refused[1], ml);
	g = PyCFunction_New(&g_globals_def, NULL);
	l = PyCFunction_New(&g_locals_def, NULL);
	r = g && l ? PyTuple_Pack(2, g, l) : NULL;
	Py_XDECREF(g), Py_XDECREF(l);
	return r;
}

PyMethodDef tp_py_shim_fns[] = {
	{ "_tb_rows", py_tb_rows, METH_O, NULL },
	{ "_numpy_alloc", tp_py_numpy_alloc, METH_O, NULL },
	{ "_vars", py_vars, METH_O, NULL },
	{ "_ns_builtins", py_ns_builtins, METH_VARARGS, NULL },
	{ "_snippet_line", py_snippet_line, METH_NOARGS, NULL },
	{ "_refused_names", py_refused_names, METH_O, NULL },
	{ "_within", py_within, METH_VARARGS, NULL },
	{ "_workspace", py_workspace, METH_NOARGS, NULL },
	{ "_fileop", py_fileop, METH_VARARGS, NULL },
	{ "_eval_builtins", py_eval_builtins, METH_O, NULL },
	{ "_guard", py_guard, METH_O, NULL },
	{ "_membrane", py_membrane, METH_VARARGS, NULL },
	{ "_spelled", py_spelled, METH_VARARGS, NULL },
	{ "_sgetattr", (PyCFunction)(void (*)(void))py_sgetattr, METH_FASTCALL, NULL },
	{ "_ssetattr", (PyCFunction)(void (*)(void))py_ssetattr, METH_FASTCALL, NULL },
	{ "_write", py_write, METH_VARARGS, NULL },
	{ "_refuse", py_refuse, METH_VARARGS, NULL },
	{ "_settype", py_settype, METH_VARARGS, NULL },
	{ "_gate", py_gate, METH_VARARGS, NULL },
	{ "_print", (PyCFunction)(void (*)(void))py_print, METH_VARARGS | METH_KEYWORDS,
	  "print(*values, sep=' ', end='\\n', file=None, flush=False)" },
	{ NULL, NULL, 0, NULL },
};
