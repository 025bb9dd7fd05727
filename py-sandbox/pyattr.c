/*
 * pyattr.c — the attribute guard: a denied attribute (the shim's GUARD_DENY) is
 * refused by the attribute lookup itself, where every path meets (snippet source,
 * a string the stdlib compiled, a match pattern, super(), getattr, attrgetter, a
 * format field), unless the code reading it is the standard library's own.
 *
 * How: the zygote, after every import, replaces the tp_getattro of every type
 * (object, type, module, function, frame, generator, super, ... and every type
 * that copied one of those pointers at PyType_Ready) with a trampoline that checks
 * the name and then calls the original; the `__getattribute__` wrapper
 * descriptors (object.__getattribute__ and the like), whose d_wrapped keeps the
 * original pointer, are pointed at the same trampolines, so a class made later
 * (which takes its slot from that wrapper, or inherits it) is guarded too, and
 * `object.__getattribute__(x, name)` is too. CPython 3.11's specialiser caches
 * attribute loads and method calls only on types whose tp_getattro is exactly
 * PyObject_GenericGetAttr, so it never caches a lookup that skips the check; the
 * builtin types whose instances cannot hold a denied name (no __dict__, no
 * denied name in their MRO but the pickle protocol's: list, dict, str, set ...)
 * keep that function and their speed (keeps_generic).
 * type.__subclasses__ itself answers only the standard library (a second wall for
 * a descriptor that stdlib code handed out), and object.__dir__/type.__dir__ are
 * replaced by versions that read the dicts directly, so dir() keeps working.
 *
 * Invariant: once armed, a denied name read outside an exempt frame raises the
 * sticky policy verdict and never returns the object. Fast path: a name that is
 * an exact, compact ASCII str whose length is outside the denied names' range or
 * whose first two characters begin no denied name ("__", "f_", "gi", "co", ...)
 * goes straight to the original; the others take one set lookup.
 *
 * Real modules (module_checked): every read the trampolines see, any name, is
 * refused when its object or its value is a module the zygote loaded and the
 * read is the snippet's (its own instruction, an attrgetter/methodcaller/
 * __getattribute__ it may have handed the stdlib, "<string>" code); so is setting
 * or deleting such a module's attribute (module_setattro). The snippet reaches
 * modules only through import (facades). Cached instance-attribute loads would
 * skip the value check, so the snippet's loads from the zygote's instances are
 * never specialised (module_load_unspecialised); what crosses from trusted code
 * by other ways is the membrane's (pymembrane.c).
 *
 * Layer (pyint.h): above the membrane; it calls pystate.c (where its install
 * records the zygote's namespaces, module types and types), pyguard.c and
 * pymembrane.c, nothing above them.
 */
#include "pyint.h"

#include <opcode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTRAMP 48

/* The guard's state, one instance. Everything but the last group is written in
 * the zygote (tp_py_guard_install and what it calls, and the shim's load through
 * tp_py_guard_spelled and tp_py_guard_locked) and only read once the guard is
 * armed: every exec forked from that zygote sees the same values. The signal
 * handlers' flags are pyguard.c's volatile sig_atomic_t globals, not here. */
static struct {
	/* -- zygote: the trampolines and the fast path's text check (tp_py_guard_install) */
	getattrofunc orig_getattro[NTRAMP]; /* trampoline i calls orig_getattro[i] */
	int ntramp;                         /* trampolines handed out (tramp_for) */
	Py_ssize_t minlen, maxlen;          /* the denied names' shortest and longest */
	unsigned char prefix[128][128];     /* the denied names' first two characters */
	PyObject *dict_name;                /* "__dict__" */
	PyObject *dir_name;                 /* "__dir__" */

	/* -- zygote: CPython's own functions the guard replaced or compares with */
	PyCFunction subclasses; /* type.__subclasses__ (gate_subclasses) */
	getter subtype_dict;    /* the __dict__ getter of a class CPython adds a dict to */
	newfunc type_new;       /* type.tp_new, before guarded_type_new */

	/* -- zygote, from the shim's load: {id(namespace): frozenset}: the names each
	 * stdlib module's code spells (the shim's _stdlib_literals), or NULL before
	 * the zygote gave them; and the frozenset of module names of _SPELL_ONLY */
	PyObject *spelled;
	PyObject *spell_only;

	/* -- zygote: numpy.lib.stride_tricks.DummyArray, if loaded */
	PyTypeObject *dummy_array;

	/* -- zygote, from the shim's load (_settype): types the shim took a denied
	 * descriptor from: a read of it there is refused by name, not answered
	 * "no such attribute" */
	PyTypeObject *locked[16];
	size_t nlocked;

	/* -- zygote (guard_module_setattr): the module type and tp_py_modtypes, and
	 * each one's original tp_setattro */
	PyTypeObject *settypes[9];
	setattrofunc modset[9];
	int nsettypes;

	/* -- zygote (guard_callables): the callables that read an attribute for
	 * their caller, their original tp_call, and the wrapperbase of
	 * __getattribute__, __getattr__ ... */
	PyTypeObject *acttypes[4];
	ternaryfunc actcall[4];
	const void *slotbase[4];
	int nslotbase;

	/* -- per acting call: acting_call sets these around the call it makes and
	 * restores the previous values after it (so nested calls unwind), with
	 * tp_py_acting and tp_py_acting_slot (pystate.c) */
	PyObject *acting_args;  /* the arguments of the acting call (tp_py_acting), borrowed */
	PyObject *acting_bound; /* a bound wrapper's object (obj.__getattribute__), or NULL */
} G;

static PyObject *guarded(PyObject *obj, PyObject *name, getattrofunc orig);

#define TRAMP(k, j)                                                                                \
	static PyObject *tramp##k##j(PyObject *o, PyObject *n)                                     \
	{                                                                                          \
		return guarded(o, n, G.orig_getattro[(k)*8 + (j)]);                                \
	}
#define TRAMP8(k)                                                                                  \
	TRAMP(k, 0)                                                                                \
	TRAMP(k, 1) TRAMP(k, 2) TRAMP(k, 3) TRAMP(k, 4) TRAMP(k, 5) TRAMP(k, 6) TRAMP(k, 7)
TRAMP8(0)
TRAMP8(1)
TRAMP8(2)
TRAMP8(3)
TRAMP8(4)
TRAMP8(5)
#define T8(k)                                                                                      \
	tramp##k##0, tramp##k##1, tramp##k##2, tramp##k##3, tramp##k##4, tramp##k##5, tramp##k##6, \
	    tramp##k##7
static const getattrofunc g_tramp[NTRAMP] = { T8(0), T8(1), T8(2), T8(3), T8(4), T8(5) };

/* ---- the check ------------------------------------------------------------------------------ */

static int is_dict_name(PyObject *name)
{
	return PyUnicode_CheckExact(name) &&
	       PyUnicode_CompareWithASCIIString(name, "__dict__") == 0;
}

/* The innermost frame is executing `from m import *` (IMPORT_STAR reads
 * m.__dict__ when m has no __all__), or no Python code is running. */
static int importing_star(void)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	int lasti, r;

	if (f == NULL)
		return 1;
	code = PyFrame_GetCode(f);
	lasti = PyFrame_GetLasti(f);
	r = lasti >= 0 && lasti / 2 < Py_SIZE(code) &&
	    _Py_OPCODE(_PyCode_CODE(code)[lasti / 2]) == IMPORT_STAR;
	Py_DECREF(code);
	return r;
}

/* The snippet's own modules and the facades hold nothing a snippet may not have
 * (their __spec__ and __loader__ are None); CPython itself reads those names on
 * them for an import error's message and module.__annotations__. Not __dict__:
 * their namespace, which only `from m import *` reads for the snippet. */
static int object_exempt(PyObject *obj, PyObject *name)
{
	return PyModule_Check(obj) && !tp_py_real_namespace(PyModule_GetDict(obj)) &&
	       (!is_dict_name(name) || importing_star());
}

/* ---- real modules -------------------------------------------------------------------------- */

/* The instruction f runs now reads, sets or deletes the attribute name itself
 * (x.name, from m import name, a match class pattern): the read is that code's,
 * not that of C code it called (time.strptime calling _strptime._strptime_time,
 * numpy's dtype.name calling numpy.core._dtype._name_get: the C code's own fixed
 * names, another name than the instruction's). */
static int own_attr_op(PyFrameObject *f, PyCodeObject *code, PyObject *name)
{
	PyObject *b = PyCode_GetCode(code); /* deoptimised: the base opcodes */
	int lasti = PyFrame_GetLasti(f), op = -1, arg = 0, r;
	const unsigned char *c;

	if (b == NULL) {
		PyErr_Clear();
		return 1;
	}
	c = (const unsigned char *)PyBytes_AS_STRING(b);
	if (lasti >= 0 && lasti + 1 < PyBytes_GET_SIZE(b)) {
		op = c[lasti];
		arg = c[lasti + 1];
		for (int k = lasti - 2, sh = 8; k >= 0 && c[k] == EXTENDED_ARG && sh <= 24;
		     k -= 2, sh += 8)
			arg |= c[k + 1] << sh;
	}
	Py_DECREF(b);
	if (op < 0 || op == MATCH_CLASS)
		return 1;
	if (op != LOAD_ATTR && op != LOAD_METHOD && op != IMPORT_FROM && op != STORE_ATTR &&
	    op != DELETE_ATTR)
		return 0;
	if (name == NULL || !PyTuple_Check(code->co_names) ||
	    arg >= PyTuple_GET_SIZE(code->co_names))
		return 1;
	r = PyUnicode_Compare(PyTuple_GET_ITEM(code->co_names, arg), name);
	if (r == -1 && PyErr_Occurred())
		PyErr_Clear();
	return r == 0;
}

/* May the code running now touch a real module (read one of its attributes,
 * set one, get one as an attribute's value)? The own code of a module the
 * zygote loaded (the standard library, a data package and its dependencies)
 * may, and so may the shim (its getattr, hasattr, setattr, delattr and format
 * fields read for the snippet through _sgetattr/_ssetattr, which check); an
 * attrgetter, methodcaller or attribute slot wrapper may not, whoever calls it.
 * The snippet's own instructions and "<string>" code may not; C code they call
 * may, for names of its own (own_attr_op). Only while a snippet runs. */
/* One of the modules the shim's _SPELL_ONLY names (the interpreter's and the system's
 * powers): the standard library reads their attributes by names it spells only. */
static int spell_only(PyObject *mod)
{
	PyObject *m = PyModule_GetNameObject(mod);
	int r = m != NULL && G.spell_only != NULL ? PySet_Contains(G.spell_only, m) : -1;

	Py_XDECREF(m);
	if (r < 0)
		PyErr_Clear();
	return r != 0; /* an error counts as one of them: the stricter rule */
}

int tp_py_guard_spelled(PyObject *d, PyObject *only)
{
	if (!PyDict_Check(d) || !PyAnySet_Check(only)) {
		PyErr_SetString(PyExc_TypeError, "_spelled: a dict and a set of module names");
		return -1;
	}
	Py_XSETREF(G.spelled, Py_NewRef(d));
	Py_XSETREF(G.spell_only, PyFrozenSet_New(only));
	return G.spell_only != NULL ? 0 : -1;
}

/* May the standard library's frame f read attribute name of the real module mod?
 * Only by a name its own module's code spells, or of its own module: the snippet
 * chooses no name a stdlib helper reads of a module (contextlib.redirect_stdout
 * reads getattr(sys, self._stream), and a subclass's _stream = 'modules' was
 * sys.modules; functools.update_wrapper reads the names the caller lists). */
static int spelled(PyFrameObject *f, PyObject *mod, PyObject *name)
{
	PyObject *g = PyFrame_GetGlobals(f), *key, *set;
	int r = 0;

	if (g == NULL)
		return 0;
	if (g == PyModule_GetDict(mod) || G.spelled == NULL) {
		Py_DECREF(g);
		return 1;
	}
	if (!spell_only(mod)) {
		Py_DECREF(g);
		return 1;
	}
	key = PyLong_FromVoidPtr(g);
	Py_DECREF(g);
	set = key != NULL ? PyDict_GetItemWithError(G.spelled, key) : NULL; /* borrowed */
	Py_XDECREF(key);
	if (set != NULL && PyUnicode_Check(name))
		r = PySet_Contains(set, name) == 1;
	if (PyErr_Occurred())
		PyErr_Clear();
	return r;
}

static int module_ok_as(PyObject *name, int acting)
{
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	int ok;

	if (!tp_py_attr_armed || !tp_py_running)
		return 1; /* no snippet runs: the zygote, a worker's start (and C tests) */
	if (f == NULL || (acting && tp_py_acting != NULL && tp_py_acting == tp_py_current_frame()))
		return 0;
	code = PyFrame_GetCode(f);
	ok = tp_py_caller_shim() || tp_py_frame_exempt(!tp_py_running) ||
	     tp_py_caller_zygote_code() || !own_attr_op(f, code, name);
	Py_DECREF(code);
	return ok;
}

static int module_ok(PyObject *name)
{
	return module_ok_as(name, 1);
}

/* A real module's own attribute read while an attrgetter, methodcaller or
 * attribute slot wrapper runs: that callable's read when the module is one of
 * its arguments (its chained reads of a module were refused as values already),
 * else the read of C code underneath it (numpy's dtype.name getter reading
 * numpy.core._dtype._name_get under sorted(key=attrgetter('name'))), judged as
 * any C code's. */
static int module_obj_ok(PyObject *obj, PyObject *name)
{
	int held = 0;
	PyFrameObject *f;

	if (tp_py_attr_armed && tp_py_running && !tp_py_fileop && (f = PyEval_GetFrame()) != NULL &&
	    !tp_py_acting_now() && tp_py_caller_stdlib_file())
		return spelled(f, obj, name); /* the standard library's own code, not frozen */
	if (tp_py_acting == NULL || tp_py_acting != tp_py_current_frame() ||
	    G.acting_args == NULL || !PyTuple_Check(G.acting_args))
		return module_ok(name);
	held = obj == G.acting_bound;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(G.acting_args) && !held; i++)
		held = PyTuple_GET_ITEM(G.acting_args, i) == obj;
	return module_ok_as(name, held);
}

static PyObject *refuse_module(PyObject *mod, PyObject *name, const char *what)
{
	char msg[320];
	const char *m = PyModule_Check(mod) ? PyModule_GetName(mod) : NULL;
	const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	PyErr_Clear();
	if (what != NULL && strcmp(what, "spell") == 0)
		snprintf(
		    msg, sizeof msg,
		    "module '%.60s' is not available in the sandbox: the standard library reads "
		    "of it only what its own code names, not '%.60s' (a name the snippet chose)",
		    m ? m : "?", s ? s : "?");
	else if (what == NULL)
		snprintf(msg, sizeof msg,
			 "attribute '%.80s' is a module ('%.60s'), which is not available in the "
			 "sandbox: a snippet reaches modules only through import",
			 s ? s : "?", m ? m : "?");
	else
		snprintf(msg, sizeof msg,
			 "module '%.60s' is not available in the sandbox: a snippet may not %s "
			 "its attributes (attribute '%.60s')",
			 m ? m : "?", what, s ? s : "?");
	char rule[160];
	snprintf(rule, sizeof rule, "python.real_module:%.60s", m ? m : "?");
	return tp_py_refuse(rule, msg, -1);
}

/* Every read the guard sees: of a real module's attribute, or whose value is a
 * real module (catch_warnings()._module, a facade object's sys), refused unless
 * module_ok(). Cheap when neither object is a module: a compare or two.
 * docs/python-guard.md, "The guard's rules": D7, D8 (a real module read or
 * handed out; exemptions E12-E14 in module_obj_ok and module_ok) and D10 (a
 * value the membrane forbids). */
static inline PyObject *module_checked(PyObject *obj, PyObject *name, getattrofunc orig)
{
	PyObject *r;

	if (tp_py_module_type(Py_TYPE(obj)) && tp_py_attr_armed && tp_py_real_module(obj) &&
	    !module_obj_ok(obj, name))
		return refuse_module(obj, name,
				     tp_py_caller_stdlib_file() && !tp_py_acting_now() ? "spell"
										       : "read");
	r = orig(obj, name);
	if (r != NULL && tp_py_module_type(Py_TYPE(r)) && tp_py_attr_armed &&
	    tp_py_real_module(r) && !module_ok(name)) {
		Py_DECREF(r);
		return refuse_module(r, name, NULL);
	}
	/* The membrane's other forbidden values (a frame, code, a cell, a namespace, sys's
	 * containers, a power module's function) read the same way: the read is the
	 * snippet's crossing (typing.ForwardRef's __forward_code__ through a match class
	 * pattern was a code object). Cheap: a few type compares for most values. */
	if (r != NULL && tp_py_attr_armed && tp_py_running && tp_py_membrane_suspect(r)) {
		const char *what = tp_py_membrane_forbidden(r);
		if (what != NULL && !module_ok(name)) {
			char msg[300];
			const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
			if (s == NULL)
				PyErr_Clear();
			snprintf(msg, sizeof msg,
				 "attribute '%.80s' is %s, which a snippet may not hold",
				 s ? s : "?", what);
			Py_DECREF(r);
			char rule[112];
			snprintf(rule, sizeof rule, "python.attribute:%.80s", s ? s : "?");
			return tp_py_refuse(rule, msg, -1);
		}
	}
	return r;
}

static PyObject *refuse_attr(PyObject *name)
{
	char msg[128];
	const char *s = PyUnicode_AsUTF8(name);

	if (s == NULL)
		PyErr_Clear();
	snprintf(msg, sizeof msg, "attribute '%.80s' is not allowed", s ? s : "?");
	char rule[112];
	snprintf(rule, sizeof rule, "python.attribute:%.80s", s ? s : "?");
	return tp_py_refuse(rule, msg, -1);
}

/* A module's __spec__ read while a data package's frame is innermost: CPython's
 * import machinery reads it for every import of a loaded module, and Cython's
 * imports (pandas' unstack, pivot_table) call that machinery directly, not
 * through __import__ (which data_import answers from sys.modules). They get None,
 * which tells the machinery the module is not being initialised: the import
 * returns sys.modules' entry. Nothing else of the spec (its loader) is handed
 * out, whatever steered the data package's read.
 * The same for the warnings module's, read by C code the snippet's instruction
 * called (own_attr_op: not a read of that name; no attrgetter or slot wrapper
 * acting): _warnings looks the module up with PyImport_GetModule, which reads it,
 * for every warning raised in C (numpy's divide by zero, np.fromstring's
 * deprecation). Only that module: other C lookups stay refused (object.__getstate__
 * on a type reaches copyreg that way, and must not run for the snippet). */
static int data_spec_read(PyObject *obj, PyObject *name)
{
	PyFrameObject *f;
	PyCodeObject *code;
	const char *m;
	int own;

	if (!PyModule_Check(obj) || !PyUnicode_Check(name) ||
	    PyUnicode_CompareWithASCIIString(name, "__spec__") != 0)
		return 0;
	if (tp_py_caller_data_package())
		return 1;
	f = PyEval_GetFrame(); /* borrowed */
	if (f == NULL || tp_py_acting != NULL || !tp_py_real_module(obj) ||
	    (m = PyModule_GetName(obj)) == NULL || strcmp(m, "warnings") != 0) {
		PyErr_Clear();
		return 0;
	}
	code = PyFrame_GetCode(f);
	own = own_attr_op(f, code, name);
	Py_DECREF(code);
	return !own;
}

/* ---- obj.__dict__ and vars(obj) on the snippet's own instances ---------------------------- */

/* The nearest base in t's MRO that is not a heap type and gives its instances
 * a dict (BaseException, staticmethod, functools.partial, SimpleNamespace,
 * module, function ...), as CPython's subtype_dict asks; NULL when the dict is
 * the one CPython added for a class made by a class statement or type(). */
static PyTypeObject *builtin_base_with_dict(PyTypeObject *t)
{
	PyObject *mro = t->tp_mro;

	for (Py_ssize_t i = 0; mro != NULL && PyTuple_Check(mro) && i < PyTuple_GET_SIZE(mro);
	     i++) {
		PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
		if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE) && b->tp_dictoffset != 0)
			return b;
	}
	return NULL;
}

/* The live per-instance dict of one of the snippet's own objects, which both
 * vars(obj) and obj.__dict__ give (docs/python.md, "obj.__dict__ and vars(obj)"):
 *  - obj is an instance, not a type (its dict is descriptors) or a module (globals);
 *  - its class was made during the exec (a heap type that was not in the zygote:
 *    the snippet's class statement, type(), a dataclass, Enum('X', ...)), so it
 *    is no builtin's, stdlib's, data package's or the shim's object;
 *  - its dict is the one CPython keeps per instance: no builtin base other than
 *    BaseException keeps it (staticmethod's is its function's, partial's ...),
 *    and the class's `__dict__` is CPython's own descriptor for a class
 *    statement's dict (subtype_dict) or BaseException's (a property or a value
 *    of the snippet's, a C type's getter, is refused, not called);
 *  - it is an exact dict and holds no key the guard denies.
 * The answer is read with PyObject_GenericGetDict, never through the object's
 * own attribute lookup. Returns a new reference to the dict, Py_None when the
 * object has no dict (an instance of a __slots__ class, a builtin without one)
 * or Py_False when it is not the snippet's to read. */
PyObject *tp_py_own_dict(PyObject *obj)
{
	PyTypeObject *t = Py_TYPE(obj), *base;
	PyObject *descr, *d, *k, *v;
	Py_ssize_t pos = 0;

	if (PyType_Check(obj) || PyModule_Check(obj))
		Py_RETURN_FALSE;
	if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
		if (t->tp_dictoffset == 0)
			Py_RETURN_NONE;
		Py_RETURN_FALSE;
	}
	if (tp_py_ztype(t) || G.dict_name == NULL)
		Py_RETURN_FALSE;
	base = builtin_base_with_dict(t);
	if (base != NULL && !PyType_IsSubtype(base, (PyTypeObject *)PyExc_BaseException))
		Py_RETURN_FALSE;
	descr = _PyType_Lookup(t, G.dict_name); /* borrowed; runs no Python code */
	if (descr == NULL)
		Py_RETURN_NONE; /* a __slots__ class: no dict */
	if (!Py_IS_TYPE(descr, &PyGetSetDescr_Type))
		Py_RETURN_FALSE;
	{
		/* CPython's subtype_dict (a class statement added the dict), or
		 * BaseException's own: not a C type's (functools.partial, a heap type,
		 * keeps its dict its own way). */
		PyGetSetDescrObject *gs = (PyGetSetDescrObject *)descr;
		getter g = gs->d_getset->get;
		if (!(G.subtype_dict != NULL && g == G.subtype_dict) &&
		    !(g == PyObject_GenericGetDict && gs->d_common.d_type != NULL &&
		      PyType_IsSubtype(gs->d_common.d_type, (PyTypeObject *)PyExc_BaseException)))
			Py_RETURN_FALSE;
	}
	d = PyObject_GenericGetDict(obj, NULL);
	if (d == NULL) {
		if (!PyErr_ExceptionMatches(PyExc_AttributeError))
			return NULL;
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	if (!PyDict_CheckExact(d)) {
		Py_DECREF(d);
		Py_RETURN_FALSE;
	}
	/* No denied key, and no real module as a value: a stdlib __init__ of a
	 * snippet's subclass (catch_warnings' _module) or functools.update_wrapper
	 * (which copies another object's dict) can put one there. */
	while (PyDict_Next(d, &pos, &k, &v))
		if ((PyUnicode_Check(k) && tp_py_attr_denied(k)) ||
		    (tp_py_module_type(Py_TYPE(v)) && tp_py_real_module(v))) {
			Py_DECREF(d);
			Py_RETURN_FALSE;
		}
	return d;
}

/* obj.__dict__ read outside the stdlib: the snippet's own instance's dict (above),
 * CPython's AttributeError for one of its instances without a dict, else refused. */
static PyObject *own_dict_attr(PyObject *obj, PyObject *name)
{
	PyObject *d = tp_py_own_dict(obj);

	if (d == NULL || PyDict_Check(d))
		return d;
	if (d == Py_None && (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
	    !tp_py_ztype(Py_TYPE(obj))) {
		Py_DECREF(d);
		return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'",
				    Py_TYPE(obj)->tp_name, name);
	}
	Py_DECREF(d);
	return refuse_attr(name);
}

/* One of the snippet's own instances (its class made while it runs): whoever reads its
 * __dict__ gets its real instance dict, never what a __dict__ property of the class
 * returns (functools.update_wrapper would fill a dict the snippet keeps elsewhere, out
 * of the membrane's sight: pymembrane.c checks the instance dicts of what it passes). */
static int snippet_instance(PyObject *obj)
{
	PyTypeObject *t = Py_TYPE(obj);

	return tp_py_running && (t->tp_flags & Py_TPFLAGS_HEAPTYPE) && !PyType_Check(obj) &&
	       !PyModule_Check(obj) && !tp_py_ztype(t);
}

/* The name check. The rules are docs/python-guard.md, "The guard's rules"; here,
 * in order:
 *  - is_dict_name && snippet_instance: E3, the snippet's own instance's __dict__;
 *  - tp_py_attr_denied: D1 (GUARD_DENY), unless
 *    object_exempt: E4 (the snippet's modules and the facades),
 *    tp_py_frame_exempt: E5 (the stdlib's own frame), E6 (the file shim), E7
 *    (no frame while no snippet runs); never while an acting callable runs (D4),
 *    tp_py_data_dict_ok: E8 (a data package's instance __dict__);
 *    then data_spec_read: E9 (__spec__ answers None);
 *  - module_checked: D7, D8, D10 with their exemptions E12, E13, E14. */
static PyObject *guarded_slow(PyObject *obj, PyObject *name, getattrofunc orig)
{
	if (tp_py_attr_armed && is_dict_name(name) && snippet_instance(obj))
		return own_dict_attr(obj, name);
	if (tp_py_attr_armed && tp_py_attr_denied(name) && !object_exempt(obj, name) &&
	    !tp_py_frame_exempt(!tp_py_running) && !tp_py_data_dict_ok(obj, name)) {
		if (data_spec_read(obj, name))
			Py_RETURN_NONE;
		return is_dict_name(name) ? own_dict_attr(obj, name) : refuse_attr(name);
	}
	return module_checked(obj, name, orig);
}

/* numpy builds an array over the memory that an object's __array_interface__ (or
 * __array_struct__) names by its address: one of the snippet's own objects (or
 * classes) offering either would read or write any address in the worker. Found,
 * it is refused whoever asks (numpy's C code does, for np.asarray(x), on every
 * object it is given: an object without one gets the AttributeError numpy expects). */
static int array_iface_name(const char *s, Py_ssize_t n)
{
	return (n == 19 && memcmp(s, "__array_interface__", 19) == 0) ||
	       (n == 16 && memcmp(s, "__array_struct__", 16) == 0);
}

/* The one obj has comes from a class the zygote made (numpy's, pandas', PIL's),
 * not from an instance dict (a SimpleNamespace's, a list subclass's), nor a class
 * or __getattr__ of the snippet's. */
static int array_iface_ok(PyObject *obj, PyObject *name)
{
	PyObject *mro, **dp;

	if (PyType_Check(obj))
		return tp_py_ztype((PyTypeObject *)obj);
	dp = _PyObject_GetDictPtr(obj);
	if (dp != NULL && *dp != NULL && PyDict_Check(*dp) && PyDict_Contains(*dp, name) != 0)
		/* numpy's own carrier (as_strided, broadcast_to: refused to the snippet, and
		 * no instance of it is reachable) holds its interface in its instance dict */
		return G.dummy_array != NULL && Py_IS_TYPE(obj, G.dummy_array);
	mro = Py_TYPE(obj)->tp_mro;
	for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
		PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
		if (b->tp_dict != NULL && PyDict_Contains(b->tp_dict, name) == 1)
			return tp_py_ztype(b);
	}
	return 0; /* __getattr__ */
}

static PyObject *refuse_array_iface(PyObject *name)
{
	char msg[200];

	snprintf(msg, sizeof msg,
		 "attribute '%s' is not allowed unless numpy, pandas or PIL defines it: numpy "
		 "would use the memory at whatever address it names",
		 PyUnicode_AsUTF8(name));
	char rule[112];
	snprintf(rule, sizeof rule, "python.attribute:%.80s", PyUnicode_AsUTF8(name));
	return tp_py_refuse(rule, msg, -1);
}

/* Every trampoline's check (docs/python-guard.md, "The guard's rules"): D5 and E10
 * (__array_interface__, __array_struct__), E1 (the fast path: a name no denied
 * name can be goes to module_checked only), D3 (a str subclass is checked by its
 * characters), then guarded_slow. */
static PyObject *guarded(PyObject *obj, PyObject *name, getattrofunc orig)
{
	if (PyUnicode_CheckExact(name) && PyUnicode_IS_COMPACT_ASCII(name)) {
		Py_ssize_t n = PyUnicode_GET_LENGTH(name);
		const char *s = (const char *)PyUnicode_DATA(name);
		if (__builtin_expect(n >= 16, 0) && array_iface_name(s, n) && tp_py_attr_armed &&
		    tp_py_running) {
			PyObject *v = orig(obj, name); /* none: numpy's AttributeError */
			/* numpy uses only a dict (the interface) or a capsule (the struct) */
			if (v == NULL || (!PyDict_Check(v) && !PyCapsule_CheckExact(v)) ||
			    array_iface_ok(obj, name))
				return v;
			Py_DECREF(v);
			return refuse_array_iface(name);
		}
		if (n < G.minlen || n > G.maxlen ||
		    !G.prefix[(unsigned char)s[0]][(unsigned char)s[1]])
			return module_checked(obj, name, orig);
		return guarded_slow(obj, name, orig);
	}
	if (PyUnicode_Check(name) && !PyUnicode_CheckExact(name)) {
		/* A str subclass could hash and compare as another name in the type's
		 * dict: look up (and check) its real characters instead. */
		PyObject *s = PyUnicode_FromObject(name), *r;
		if (s == NULL)
			return NULL;
		r = guarded_slow(obj, s, orig);
		Py_DECREF(s);
		return r;
	}
	return guarded_slow(obj, name, orig);
}

/* ---- the specialiser ------------------------------------------------------------------------ */

/* CPython 3.11 specialises LOAD_ATTR and LOAD_METHOD only on types whose tp_getattro is exactly
 * PyObject_GenericGetAttr, so a guarded instance of a snippet's class took the generic path on
 * every load (a bound method made per call): +55 % on attribute-heavy loops. For a name the guard
 * lets through, a trampoline whose original is PyObject_GenericGetAttr returns exactly what that
 * function returns (guarded() calls it and nothing else), and a specialised instruction is the
 * same lookup, cached per site for one name and one type version. So for such a type and a name
 * that is not denied, the specialiser may look at the type as the generic one it guards; a denied
 * name is never specialised and every read of one still meets the guard, whoever compiled it.
 * tidepool-python (libpython linked statically) routes ceval's calls here with -Wl,--wrap; with
 * the shared library (unit tests) CPython calls its own and these are never used. */
int __real__Py_Specialize_LoadAttr(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name)
    __attribute__((weak));
int __real__Py_Specialize_LoadMethod(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name)
    __attribute__((weak));
int __wrap__Py_Specialize_LoadAttr(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name);
int __wrap__Py_Specialize_LoadMethod(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name);

/* The type of owner, when its trampoline guards PyObject_GenericGetAttr and name is not denied:
 * its loads of name may be specialised as the generic type's. NULL otherwise. */
static PyTypeObject *generic_behind_guard(PyObject *owner, PyObject *name)
{
	PyTypeObject *t = Py_TYPE(owner);
	int k = 0, r;

	if (PyType_Check(owner) || PyModule_CheckExact(owner) || !PyUnicode_CheckExact(name) ||
	    tp_py_deny == NULL)
		return NULL;
	while (k < G.ntramp && t->tp_getattro != g_tramp[k])
		k++;
	if (k == G.ntramp || G.orig_getattro[k] != PyObject_GenericGetAttr)
		return NULL;
	r = PySet_Contains(tp_py_deny, name);
	if (r != 0) {
		if (r < 0)
			PyErr_Clear();
		return NULL;
	}
	return t;
}

/* A load of a real module's attribute in code that may not touch one (the snippet's) is never
 * specialised: LOAD_ATTR_MODULE and LOAD_METHOD_MODULE read the module's dict without its
 * tp_getattro, so every such read must stay the generic one the guard sees. As CPython's own
 * failure path (specialize.c): the instruction stays adaptive and backs off (pycore_code.h's
 * adaptive_counter_backoff; the counter is the first cache entry of both instructions). */
static int module_load_unspecialised(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name)
{
	unsigned int backoff;

	if (!tp_py_attr_armed)
		return 0;
	/* Likewise a load from an instance of a class the zygote made (the stdlib's, a data
	 * package's) in the snippet's code: LOAD_ATTR_INSTANCE_VALUE and its kin read the
	 * instance without tp_getattro, so a site warmed on catch_warnings(module=1) would
	 * hand over the next instance's real module unchecked (pymembrane.c). */
	if (tp_py_running && !PyType_Check(owner) && !PyModule_Check(owner) &&
	    (Py_TYPE(owner)->tp_flags & Py_TPFLAGS_HEAPTYPE) && tp_py_ztype(Py_TYPE(owner)) &&
	    tp_py_membrane_snippet_frame())
		goto backoff;
	if (!tp_py_real_module(owner) || module_ok(name))
		return 0;
backoff:
	backoff = (instr[1] & 15u) + 1;
	backoff = backoff > 12 ? 12 : backoff;
	instr[1] = (_Py_CODEUNIT)((((1u << backoff) - 1) << 4) | backoff);
	return 1;
}

/* D11 (module_load_unspecialised) and E15 (generic_behind_guard): docs/python-guard.md. */
#define SPECIALISE(real, owner, instr, name)                                                       \
	do {                                                                                       \
		PyTypeObject *t;                                                                   \
		getattrofunc tramp;                                                                \
		int rc;                                                                            \
		if (module_load_unspecialised(owner, instr, name))                                 \
			return 0;                                                                  \
		t = generic_behind_guard(owner, name);                                             \
		if (t == NULL)                                                                     \
			return real(owner, instr, name);                                           \
		tramp = t->tp_getattro;                                                            \
		t->tp_getattro = PyObject_GenericGetAttr; /* runs no Python code meanwhile */      \
		rc = real(owner, instr, name);                                                     \
		t->tp_getattro = tramp;                                                            \
		return rc;                                                                         \
	} while (0)

int __wrap__Py_Specialize_LoadAttr(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name)
{
	SPECIALISE(__real__Py_Specialize_LoadAttr, owner, instr, name);
}

int __wrap__Py_Specialize_LoadMethod(PyObject *owner, _Py_CODEUNIT *instr, PyObject *name)
{
	SPECIALISE(__real__Py_Specialize_LoadMethod, owner, instr, name);
}

/* ---- type.__subclasses__ and dir() --------------------------------------------------------- */

/* D6 and E11 (docs/python-guard.md, "The guard's rules"): only an exempt frame. */
static PyObject *subclasses_gate(PyObject *self, PyObject *unused)
{
	if (tp_py_attr_armed && !tp_py_frame_exempt(!tp_py_running))
		return tp_py_refuse("python.attribute:__subclasses__",
				    "type.__subclasses__() is not allowed", -1);
	return G.subclasses(self, unused);
}

static int merge_mro(PyObject *into, PyTypeObject *t)
{
	PyObject *mro = t->tp_mro;

	if (mro == NULL || !PyTuple_Check(mro))
		return t->tp_dict ? PyDict_Update(into, t->tp_dict) : 0;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
		PyObject *c = PyTuple_GET_ITEM(mro, i);
		if (PyType_Check(c) && ((PyTypeObject *)c)->tp_dict != NULL &&
		    PyDict_Update(into, ((PyTypeObject *)c)->tp_dict) != 0)
			return -1;
	}
	return 0;
}

static PyObject *keys_of(PyObject *d)
{
	PyObject *r = PyDict_Keys(d);

	Py_DECREF(d);
	return r;
}

/* object.__dir__ without reading __dict__ or __class__ through getattr: the
 * instance's dict and the attributes of its type's MRO, as CPython lists them. */
static PyObject *dir_object(PyObject *self, PyObject *unused)
{
	PyObject *d = PyDict_New(), **dp;

	(void)unused;
	if (d == NULL)
		return NULL;
	dp = _PyObject_GetDictPtr(self);
	if ((dp != NULL && *dp != NULL && PyDict_Check(*dp) && PyDict_Update(d, *dp) != 0) ||
	    merge_mro(d, Py_TYPE(self)) != 0) {
		Py_DECREF(d);
		return NULL;
	}
	return keys_of(d);
}

/* type.__dir__: the attributes of the class and its bases. */
static PyObject *dir_type(PyObject *self, PyObject *unused)
{
	PyObject *d = PyDict_New();

	(void)unused;
	if (d == NULL)
		return NULL;
	if (merge_mro(d, (PyTypeObject *)self) != 0) {
		Py_DECREF(d);
		return NULL;
	}
	return keys_of(d);
}

/* module.__dir__ without reading __dict__ through getattr (the guard refuses a
 * module's __dict__ to the snippet): the module's own `__dir__` if its
 * namespace defines one, else its names, as CPython's module_dir. */
static PyObject *dir_module(PyObject *self, PyObject *unused)
{
	PyObject *d = PyModule_Check(self) ? PyModule_GetDict(self) : NULL, *fn; /* borrowed */

	(void)unused;
	if (d == NULL || !PyDict_Check(d))
		return PyErr_Format(PyExc_TypeError, "<module>.__dict__ is not a dictionary");
	fn = PyDict_GetItemWithError(d, G.dir_name);
	if (fn != NULL)
		return PyObject_CallNoArgs(fn);
	return PyErr_Occurred() ? NULL : PyDict_Keys(d);
}

static PyMethodDef g_dir_module = { "__dir__", dir_module, METH_NOARGS,
				    "Standard module __dir__ implementation" };
static PyMethodDef g_dir_object = { "__dir__", dir_object, METH_NOARGS,
				    "Default dir() implementation." };
static PyMethodDef g_dir_type = { "__dir__", dir_type, METH_NOARGS,
				  "Specialized __dir__ implementation for types." };

static int set_method(PyTypeObject *t, PyMethodDef *def)
{
	PyObject *m = PyDescr_NewMethod(t, def);
	int rc = m ? PyDict_SetItemString(t->tp_dict, def->ml_name, m) : -1;

	Py_XDECREF(m);
	PyType_Modified(t);
	return rc;
}

static int gate_subclasses(void)
{
	PyObject *d = PyDict_GetItemString(PyType_Type.tp_dict, "__subclasses__");
	PyMethodDef *def;

	if (d == NULL || !Py_IS_TYPE(d, &PyMethodDescr_Type)) {
		PyErr_SetString(PyExc_RuntimeError, "type.__subclasses__ is not a method");
		return -1;
	}
	def = ((PyMethodDescrObject *)d)->d_method;
	if (def->ml_meth != subclasses_gate) {
		G.subclasses = def->ml_meth;
		def->ml_meth = subclasses_gate; /* bound methods read it at each call */
	}
	return 0;
}

/* ---- installing the trampolines ------------------------------------------------------------ */

static int tramp_for(getattrofunc fn, getattrofunc *out)
{
	for (int i = 0; i < NTRAMP; i++)
		if (fn == g_tramp[i]) {
			*out = fn;
			return 0;
		}
	for (int i = 0; i < G.ntramp; i++)
		if (G.orig_getattro[i] == fn) {
			*out = g_tramp[i];
			return 0;
		}
	if (G.ntramp == NTRAMP) {
		PyErr_SetString(PyExc_RuntimeError,
				"attribute guard: too many tp_getattro functions");
		return -1;
	}
	G.orig_getattro[G.ntramp] = fn;
	*out = g_tramp[G.ntramp++];
	return 0;
}

int tp_py_guard_locked(PyTypeObject *t)
{
	for (size_t i = 0; i < G.nlocked; i++)
		if (G.locked[i] == t)
			return 0;
	if (G.nlocked == sizeof G.locked / sizeof G.locked[0]) {
		PyErr_SetString(PyExc_RuntimeError, "attribute guard: too many locked types");
		return -1;
	}
	G.locked[G.nlocked++] = t;
	return 0;
}

static int is_locked(PyTypeObject *t)
{
	for (size_t i = 0; i < G.nlocked; i++)
		if (G.locked[i] == t)
			return 1;
	return 0;
}

/* The pickle protocol's names: on an object without a __dict__ they give what
 * rebuilds it (its type, its contents), nothing it does not hold. */
static int pickle_name(PyObject *k)
{
	return PyUnicode_CompareWithASCIIString(k, "__reduce__") == 0 ||
	       PyUnicode_CompareWithASCIIString(k, "__reduce_ex__") == 0 ||
	       PyUnicode_CompareWithASCIIString(k, "__getstate__") == 0;
}

/* A builtin type whose instances have no __dict__ and whose MRO holds no denied
 * name but the pickle protocol's (list, dict, str, int, tuple, set, deque,
 * Decimal, re.Pattern, the iterators ...) keeps PyObject_GenericGetAttr: a
 * lookup on its instances can only find what its type's dicts hold. CPython
 * 3.11 specialises (caches) attribute loads and method calls only on types that
 * keep that exact function, so `l.append(x)`, `d.get(k)`, `s.add(x)` keep their
 * speed. Its subclasses made later take the guarded wrapper (they have dicts). */
static int keeps_generic(PyTypeObject *t) /* E2 (docs/python-guard.md) */
{
	PyObject *mro = t->tp_mro;

	if (t->tp_getattro != PyObject_GenericGetAttr || t == &PyBaseObject_Type || is_locked(t) ||
	    (t->tp_flags & (Py_TPFLAGS_HEAPTYPE | Py_TPFLAGS_MANAGED_DICT)) ||
	    t->tp_dictoffset != 0 || mro == NULL || !PyTuple_Check(mro))
		return 0;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
		PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
		PyObject *k, *v;
		Py_ssize_t pos = 0;
		while (b->tp_dict != NULL && PyDict_Next(b->tp_dict, &pos, &k, &v))
			if (tp_py_attr_denied(k) && !pickle_name(k))
				return 0;
	}
	return 1;
}

static int guard_type(PyTypeObject *t)
{
	getattrofunc g;
	PyObject *w = t->tp_dict ? PyDict_GetItemString(t->tp_dict, "__getattribute__") : NULL;

	if (w != NULL && Py_IS_TYPE(w, &PyWrapperDescr_Type)) {
		PyWrapperDescrObject *d = (PyWrapperDescrObject *)w;
		if (d->d_base != NULL && strcmp(d->d_base->name, "__getattribute__") == 0 &&
		    d->d_wrapped != NULL) {
			if (tramp_for((getattrofunc)d->d_wrapped, &g) != 0)
				return -1;
			d->d_wrapped = (void *)g;
		}
	}
	if (t->tp_getattro != NULL && !keeps_generic(t)) {
		if (tramp_for(t->tp_getattro, &g) != 0)
			return -1;
		t->tp_getattro = g;
	}
	/* Lookups CPython specialised before now skipped tp_getattro: drop them. */
	PyType_Modified(t);
	return 0;
}

/* The getter CPython puts in the `__dict__` of a class it adds a dict to
 * (typeobject.c's subtype_dict), from a class made for the purpose. */
static int find_subtype_dict(void)
{
	PyObject *t = PyObject_CallFunction((PyObject *)&PyType_Type, "s()N", "_tp_probe",
					    PyDict_New()),
		 *descr;

	if (t == NULL)
		return -1;
	descr = _PyType_Lookup((PyTypeObject *)t, G.dict_name);
	if (descr != NULL && Py_IS_TYPE(descr, &PyGetSetDescr_Type))
		G.subtype_dict = ((PyGetSetDescrObject *)descr)->d_getset->get;
	Py_DECREF(t);
	if (G.subtype_dict == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "attribute guard: no subtype __dict__ getter");
		return -1;
	}
	return 0;
}

/* Every type the interpreter has readied: object and, recursively, its subclasses. */
static int guard_all_types(void)
{
	PyObject *todo = PyList_New(0), *seen = PySet_New(NULL);
	PyObject *subclasses = PyDict_GetItemString(PyType_Type.tp_dict, "__subclasses__");
	int rc = -1;

	if (subclasses == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "no type.__subclasses__");
		goto out;
	}

	if (todo == NULL || seen == NULL ||
	    PyList_Append(todo, (PyObject *)&PyBaseObject_Type) != 0)
		goto out;
	while (PyList_GET_SIZE(todo) > 0) {
		Py_ssize_t last = PyList_GET_SIZE(todo) - 1;
		PyObject *t = PyList_GET_ITEM(todo, last), *id, *subs;
		Py_INCREF(t);
		if (PyList_SetSlice(todo, last, last + 1, NULL) != 0) {
			Py_DECREF(t);
			goto out;
		}
		id = PyLong_FromVoidPtr(t);
		int fresh = id ? !PySet_Contains(seen, id) : -1;
		if (fresh == 1 && PySet_Add(seen, id) != 0)
			fresh = -1;
		Py_XDECREF(id);
		if (fresh == 1 &&
		    (guard_type((PyTypeObject *)t) != 0 || tp_py_remember_type(t) != 0))
			fresh = -1;
		subs = fresh == 1 ? PyObject_CallOneArg(subclasses, t) : NULL; /* type too */
		Py_DECREF(t);
		if (fresh == -1 || (fresh == 1 && subs == NULL))
			goto out;
		for (Py_ssize_t i = 0; subs != NULL && i < PyList_GET_SIZE(subs); i++)
			if (PyList_Append(todo, PyList_GET_ITEM(subs, i)) != 0) {
				Py_DECREF(subs);
				goto out;
			}
		Py_XDECREF(subs);
	}
	rc = 0; /* every type there is now is the zygote's (pystate.c) */
out:
	Py_XDECREF(todo);
	Py_XDECREF(seen);
	return rc;
}

/* ---- a real module's attributes are not set by the snippet ---------------------------------- */

static int module_setattro(PyObject *obj, PyObject *name, PyObject *v)
{
	PyTypeObject *t = Py_TYPE(obj);
	int k = G.nsettypes;

	/* A module type, or one made later that inherited this function. */
	while (t != NULL && k == G.nsettypes) {
		for (k = 0; k < G.nsettypes && G.settypes[k] != t; k++)
			;
		t = t->tp_base;
	}
	if (tp_py_attr_armed && tp_py_real_module(obj) && !module_ok(name)) {
		refuse_module(obj, name, v ? "set" : "delete");
		return -1;
	}
	if (k == G.nsettypes || G.modset[k] == NULL)
		return PyObject_GenericSetAttr(obj, name, v);
	return G.modset[k](obj, name, v);
}

static int guard_module_setattr(void)
{
	G.settypes[G.nsettypes++] = &PyModule_Type;
	for (int i = 0; i < tp_py_nmodtypes; i++)
		G.settypes[G.nsettypes++] = tp_py_modtypes[i];
	for (int k = 0; k < G.nsettypes; k++) {
		PyTypeObject *t = G.settypes[k];
		if (t->tp_setattro == NULL || t->tp_setattro == module_setattro)
			continue;
		G.modset[k] = t->tp_setattro;
		for (int i = 0; i < 2 && t->tp_dict != NULL; i++) {
			PyObject *w =
			    PyDict_GetItemString(t->tp_dict, i ? "__delattr__" : "__setattr__");
			if (w != NULL && Py_IS_TYPE(w, &PyWrapperDescr_Type) &&
			    ((PyWrapperDescrObject *)w)->d_wrapped == (void *)G.modset[k])
				((PyWrapperDescrObject *)w)->d_wrapped = (void *)module_setattro;
		}
		t->tp_setattro = module_setattro;
		PyType_Modified(t);
	}
	return 0;
}

/* ---- C callables that read an attribute the caller names ------------------------------------ */

/* operator.attrgetter and methodcaller objects, object.__getattribute__ and the
 * other attribute slot wrappers (bound or not): a snippet can hand one to stdlib
 * code that calls it (functools.singledispatch(attrgetter('__code__')), pandas'
 * Series.map), and the read it makes would be checked as that code's own. While
 * one runs, the frame that called it is no standard library frame (tp_py_acting). */

typedef struct { /* descrobject.c's wrapperobject (a method-wrapper) */
	PyObject_HEAD PyWrapperDescrObject *descr;
	PyObject *self;
} tp_method_wrapper;

/* 0: not a read the caller names; 1: one whose reads are the caller's to every rule
 * (attrgetter, methodcaller, object.__getattribute__ and the like as the snippet can
 * hold them); 2: to the real-module rule only (__setattr__ and __delattr__, which
 * enum and dataclasses call themselves; a bound __getattribute__ nobody else holds:
 * the one slot_tp_getattr_hook makes for a class with __getattr__, at every read). */
static int reads_attr(PyObject *self, int k)
{
	const void *base;

	if (k > 1)
		return 1; /* attrgetter, methodcaller */
	base = k == 0 ? (const void *)((PyWrapperDescrObject *)self)->d_base
		      : (const void *)((tp_method_wrapper *)self)->descr->d_base;
	for (int i = 0; i < G.nslotbase; i++)
		if (base == G.slotbase[i])
			return i == 0 && (k == 0 || Py_REFCNT(self) > 1) ? 1 : 2;
	return 0;
}

static PyObject *acting_call(PyObject *self, PyObject *args, PyObject *kw)
{
	PyTypeObject *t = Py_TYPE(self);
	const void *prev = tp_py_acting;
	PyObject *r, *prev_args, *prev_bound;
	int k = 4, prev_slot, how;

	while (t != NULL && k == 4) {
		for (k = 0; k < 4 && G.acttypes[k] != t; k++)
			;
		t = t->tp_base;
	}
	if (k == 4) {
		PyErr_SetString(PyExc_SystemError, "attribute guard: unknown callable");
		return NULL;
	}
	how = reads_attr(self, k);
	if (!how)
		return G.actcall[k](self, args, kw);
	prev_slot = tp_py_acting_slot;
	prev_args = G.acting_args;
	prev_bound = G.acting_bound;
	G.acting_bound = k == 1 ? ((tp_method_wrapper *)self)->self : NULL;
	tp_py_acting = tp_py_current_frame();
	tp_py_acting_slot = how == 2;
	G.acting_args = args;
	r = G.actcall[k](self, args, kw);
	tp_py_acting = prev;
	tp_py_acting_slot = prev_slot;
	G.acting_args = prev_args;
	G.acting_bound = prev_bound;
	return r;
}

static int guard_callables(void)
{
	PyObject *op = PyImport_ImportModule("_operator"), *w;
	const char *slots[] = { "__getattribute__", "__getattr__", "__setattr__", "__delattr__" };

	if (op == NULL)
		return -1;
	G.acttypes[0] = &PyWrapperDescr_Type;
	G.acttypes[1] = &_PyMethodWrapper_Type;
	G.acttypes[2] = (PyTypeObject *)PyObject_GetAttrString(op, "attrgetter");
	G.acttypes[3] = (PyTypeObject *)PyObject_GetAttrString(op, "methodcaller");
	Py_DECREF(op);
	if (G.acttypes[2] == NULL || G.acttypes[3] == NULL)
		return -1;
	/* Kept alive by _operator; the pointers only identify the types. */
	Py_DECREF(G.acttypes[2]);
	Py_DECREF(G.acttypes[3]);
	for (int i = 0; i < 4; i++) {
		PyObject *d = PyDict_GetItemString(PyBaseObject_Type.tp_dict, slots[i]);
		if (d == NULL)
			d = PyDict_GetItemString(PyType_Type.tp_dict, slots[i]);
		w = i == 1 ? NULL : d; /* object has no __getattr__: a class that defines one */
		if (w != NULL && Py_IS_TYPE(w, &PyWrapperDescr_Type))
			G.slotbase[G.nslotbase++] = ((PyWrapperDescrObject *)w)->d_base;
		else if (i == 0) {
			PyErr_SetString(PyExc_RuntimeError,
					"object.__getattribute__ is not a slot wrapper");
			return -1;
		}
	}
	for (int k = 0; k < 4; k++) {
		PyTypeObject *t = G.acttypes[k];
		/* A call takes tp_call once the type no longer says it has a vectorcall:
		 * its own tp_call (PyVectorcall_Call) still finds the instance's. */
		if (k > 1)
			t->tp_flags &= ~Py_TPFLAGS_HAVE_VECTORCALL;
		if (!PyType_Check(t) || t->tp_call == NULL ||
		    (t->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL)) {
			PyErr_Format(PyExc_RuntimeError,
				     "attribute guard: %s is called in a way it cannot see",
				     PyType_Check(t) ? t->tp_name : "?");
			return -1;
		}
		if (t->tp_call != acting_call) {
			G.actcall[k] = t->tp_call;
			t->tp_call = acting_call;
		}
	}
	return 0;
}

/* ---- the shim's getattr, hasattr, setattr, delattr and format fields ---------------------- */

/* _sgetattr(obj, name[, default]): getattr for the snippet. The read is the snippet's,
 * though the shim's frame runs it: a real module's attribute, or a real module as the
 * value, is refused as in the snippet's own code. Reads the C code behind obj's
 * attribute makes for itself (numpy's dtype.name) are not this read. */
PyObject *tp_py_snippet_getattr(PyObject *const *args, Py_ssize_t n)
{
	PyObject *r;
	int armed = tp_py_attr_armed && tp_py_running;

	if (n > 3) { /* the shim's getattr(obj, name, *default) */
		PyErr_Format(PyExc_TypeError, "getattr expected at most 3 arguments, got %zd", n);
		return NULL;
	}
	if (n < 2) {
		PyErr_SetString(PyExc_TypeError, "_sgetattr(obj, name[, default])");
		return NULL;
	}
	if (armed && tp_py_real_module(args[0]))
		return refuse_module(args[0], args[1], "read");
	r = PyObject_GetAttr(args[0], args[1]);
	if (r == NULL && n == 3 && PyErr_ExceptionMatches(PyExc_AttributeError) &&
	    !tp_py_verdict()) {
		PyErr_Clear();
		r = Py_NewRef(args[2]);
	}
	if (r != NULL && armed && tp_py_real_module(r)) {
		Py_DECREF(r);
		return refuse_module(r, args[1], NULL);
	}
	return r;
}

/* _ssetattr(obj, name[, value]): setattr (delattr without a value) for the snippet. */
PyObject *tp_py_snippet_setattr(PyObject *const *args, Py_ssize_t n)
{
	if (n < 2 || n > 3) {
		PyErr_SetString(PyExc_TypeError, "_ssetattr(obj, name[, value])");
		return NULL;
	}
	if (tp_py_attr_armed && tp_py_running && tp_py_real_module(args[0]))
		return refuse_module(args[0], args[1], n == 3 ? "set" : "delete");
	if (PyObject_SetAttr(args[0], args[1], n == 3 ? args[2] : NULL) != 0)
		return NULL;
	Py_RETURN_NONE;
}

/* Every class made while a snippet runs has a guarded tp_getattro: a class that
 * inherits PyObject_GenericGetAttr from a builtin base the guard leaves alone (list,
 * dict, int ...) takes its trampoline instead (its loads of names the guard lets
 * through are still specialised: generic_behind_guard), and so does a class with
 * __getattr__ (CPython's hook, which asks __getattr__ after the guarded lookup),
 * so every lookup on the snippet's objects, as a whole, meets the guard (numpy
 * looks __array_interface__ up there). */

static int is_tramp(getattrofunc f)
{
	for (int i = 0; i < G.ntramp; i++)
		if (f == g_tramp[i])
			return 1;
	return 0;
}

static PyObject *guarded_type_new(PyTypeObject *meta, PyObject *args, PyObject *kw)
{
	PyObject *t = G.type_new(meta, args, kw);
	getattrofunc tramp;

	if (t != NULL && tp_py_attr_armed && tp_py_running && PyType_Check(t) &&
	    ((PyTypeObject *)t)->tp_getattro != NULL &&
	    !is_tramp(((PyTypeObject *)t)->tp_getattro)) {
		if (tramp_for(((PyTypeObject *)t)->tp_getattro, &tramp) != 0) {
			Py_DECREF(t);
			return NULL;
		}
		((PyTypeObject *)t)->tp_getattro = tramp;
		PyType_Modified((PyTypeObject *)t);
	}
	return t;
}

/* Zygote, once, after every import and the shim's own changes to the types. */
int tp_py_guard_install(PyObject *deny)
{
	PyObject *it, *name;

	if (tp_py_attr_armed)
		return 0;
	if (!PyAnySet_Check(deny)) {
		PyErr_SetString(PyExc_TypeError, "the denied names must be a set");
		return -1;
	}
	G.minlen = 1 << 20;
	G.maxlen = 0;
	it = PyObject_GetIter(deny);
	while (it != NULL && (name = PyIter_Next(it)) != NULL) {
		Py_ssize_t n = PyUnicode_Check(name) ? PyUnicode_GET_LENGTH(name) : -1;
		int ok = n >= 2 && PyUnicode_IS_ASCII(name);
		if (ok)
			G.prefix[PyUnicode_READ_CHAR(name, 0)][PyUnicode_READ_CHAR(name, 1)] = 1;
		Py_DECREF(name);
		if (!ok) { /* the fast path relies on it */
			PyErr_SetString(PyExc_ValueError, "a denied name must be ASCII");
			break;
		}
		G.minlen = n < G.minlen ? n : G.minlen;
		G.maxlen = n > G.maxlen ? n : G.maxlen;
	}
	Py_XDECREF(it);
	if (PyErr_Occurred())
		return -1;
	tp_py_deny = PyFrozenSet_New(deny);
	G.dict_name = PyUnicode_InternFromString("__dict__");
	G.dir_name = PyUnicode_InternFromString("__dir__");
	if (tp_py_deny == NULL || G.dict_name == NULL || G.dir_name == NULL ||
	    find_subtype_dict() != 0 || tp_py_collect_namespaces() != 0 || guard_all_types() != 0 ||
	    gate_subclasses() != 0 || set_method(&PyBaseObject_Type, &g_dir_object) != 0 ||
	    set_method(&PyType_Type, &g_dir_type) != 0 ||
	    set_method(&PyModule_Type, &g_dir_module) != 0 || guard_module_setattr() != 0 ||
	    guard_callables() != 0)
		return -1;
	tp_py_sort_ztypes();
	G.type_new = PyType_Type.tp_new;
	PyType_Type.tp_new = guarded_type_new;
	{
		PyObject *n = PyUnicode_FromString("numpy.lib.stride_tricks");
		PyObject *st = n != NULL ? PyImport_GetModule(n) : NULL;
		Py_XDECREF(n);
		PyObject *d = st != NULL ? PyObject_GetAttrString(st, "DummyArray") : NULL;
		if (d != NULL && PyType_Check(d))
			G.dummy_array = (PyTypeObject *)d; /* kept */
		else
			Py_XDECREF(d);
		Py_XDECREF(st);
		PyErr_Clear();
	}
	tp_py_attr_armed = 1;
	return 0;
}
