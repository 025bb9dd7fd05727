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
 */
#include "pyint.h"

#include <opcode.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTRAMP 48

static getattrofunc g_orig[NTRAMP];
static int g_ntramp;
static PyObject *g_deny; /* frozenset of str */
static Py_ssize_t g_minlen, g_maxlen;
static unsigned char g_prefix[128][128]; /* the denied names' first two characters */
static int g_armed;
static PyObject **g_real; /* sorted namespaces of the modules loaded in the zygote */
static size_t g_nreal;
static PyCFunction g_subclasses;
static PyTypeObject **g_ztypes; /* sorted: every type that existed when the guard was armed */
static size_t g_nztypes, g_cap_ztypes;
/* subtype_dict: the __dict__ getter of a class CPython adds a dict to */
static getter g_subtype_dict;
static PyObject *g_dict_name; /* "__dict__" */
static PyObject *g_dir_name;  /* "__dir__" */

static PyObject *guarded(PyObject *obj, PyObject *name, getattrofunc orig);

#define TRAMP(k, j)                                                                                \
	static PyObject *tramp##k##j(PyObject *o, PyObject *n)                                     \
	{                                                                                          \
		return guarded(o, n, g_orig[(k)*8 + (j)]);                                         \
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

/* ---- which namespaces are the stdlib's ------------------------------------------------ */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (PyObject *const *)a, y = (uintptr_t) * (PyObject *const *)b;
	return x < y ? -1 : x > y;
}

/* True when d is the namespace of a module that was loaded in the zygote (every
 * one but __main__): the stdlib's and the C modules' globals, never the
 * snippet's, a facade's or a dict the snippet made. */
int tp_py_real_namespace(PyObject *d)
{
	return d != NULL && g_nreal > 0 &&
	       bsearch(&d, g_real, g_nreal, sizeof *g_real, cmp_ptr) != NULL;
}

static int collect_namespaces(void)
{
	PyObject *mods = PyImport_GetModuleDict(), *k, *v;
	Py_ssize_t pos = 0, n = PyDict_Size(mods);

	g_real = calloc((size_t)n + 1, sizeof *g_real);
	if (g_real == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	while (PyDict_Next(mods, &pos, &k, &v)) {
		if (!PyModule_Check(v) || !PyUnicode_Check(k) ||
		    PyUnicode_CompareWithASCIIString(k, "__main__") == 0)
			continue;
		PyObject *d = PyModule_GetDict(v); /* borrowed; modules stay loaded */
		if (d != NULL && (size_t)n > g_nreal)
			g_real[g_nreal++] = d;
	}
	qsort(g_real, g_nreal, sizeof *g_real, cmp_ptr);
	return 0;
}

/* ---- the check ------------------------------------------------------------------------------ */

int tp_py_attr_denied(PyObject *name)
{
	int r;

	if (g_deny == NULL || !PyUnicode_Check(name))
		return 0;
	if (!PyUnicode_CheckExact(name)) {
		PyObject *s = PyUnicode_FromObject(name); /* its real characters */
		if (s == NULL) {
			PyErr_Clear();
			return 0;
		}
		r = tp_py_attr_denied(s);
		Py_DECREF(s);
		return r;
	}
	r = PySet_Contains(g_deny, name);
	if (r < 0) {
		PyErr_Clear();
		return 0;
	}
	return r;
}

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

static PyObject *refuse_attr(PyObject *name)
{
	char msg[128];
	const char *s = PyUnicode_AsUTF8(name);

	if (s == NULL)
		PyErr_Clear();
	snprintf(msg, sizeof msg, "attribute '%.80s' is not allowed", s ? s : "?");
	return tp_py_refuse(msg, -1);
}

/* A module's __spec__ read while a data package's frame is innermost: CPython's
 * import machinery reads it for every import of a loaded module, and Cython's
 * imports (pandas' unstack, pivot_table) call that machinery directly, not
 * through __import__ (which data_import answers from sys.modules). They get None,
 * which tells the machinery the module is not being initialised: the import
 * returns sys.modules' entry. Nothing else of the spec (its loader) is handed
 * out, whatever steered the data package's read. */
static int data_spec_read(PyObject *obj, PyObject *name)
{
	return PyModule_Check(obj) && PyUnicode_Check(name) &&
	       PyUnicode_CompareWithASCIIString(name, "__spec__") == 0 &&
	       tp_py_caller_data_package();
}

/* ---- obj.__dict__ and vars(obj) on the snippet's own instances ---------------------------- */

static int cmp_type(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (PyTypeObject *const *)a,
		  y = (uintptr_t) * (PyTypeObject *const *)b;
	return x < y ? -1 : x > y;
}

/* True when t existed in the zygote when the guard was armed: a builtin, the
 * stdlib's, a data package's or the shim's class, never one the exec made
 * (remember_type keeps each alive, so its address is never reused). */
static int zygote_type(PyTypeObject *t)
{
	return g_nztypes > 0 &&
	       bsearch(&t, g_ztypes, g_nztypes, sizeof *g_ztypes, cmp_type) != NULL;
}

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
	if (zygote_type(t) || g_dict_name == NULL)
		Py_RETURN_FALSE;
	base = builtin_base_with_dict(t);
	if (base != NULL && !PyType_IsSubtype(base, (PyTypeObject *)PyExc_BaseException))
		Py_RETURN_FALSE;
	descr = _PyType_Lookup(t, g_dict_name); /* borrowed; runs no Python code */
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
		if (!(g_subtype_dict != NULL && g == g_subtype_dict) &&
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
	while (PyDict_Next(d, &pos, &k, &v))
		if (PyUnicode_Check(k) && tp_py_attr_denied(k)) {
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
	    !zygote_type(Py_TYPE(obj))) {
		Py_DECREF(d);
		return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute '%U'",
				    Py_TYPE(obj)->tp_name, name);
	}
	Py_DECREF(d);
	return refuse_attr(name);
}

static PyObject *guarded_slow(PyObject *obj, PyObject *name, getattrofunc orig)
{
	if (g_armed && tp_py_attr_denied(name) && !object_exempt(obj, name) &&
	    !tp_py_frame_exempt(!tp_py_running) && !tp_py_data_dict_ok(obj, name)) {
		if (data_spec_read(obj, name))
			Py_RETURN_NONE;
		return is_dict_name(name) ? own_dict_attr(obj, name) : refuse_attr(name);
	}
	return orig(obj, name);
}

static PyObject *guarded(PyObject *obj, PyObject *name, getattrofunc orig)
{
	if (PyUnicode_CheckExact(name) && PyUnicode_IS_COMPACT_ASCII(name)) {
		Py_ssize_t n = PyUnicode_GET_LENGTH(name);
		const char *s = (const char *)PyUnicode_DATA(name);
		if (n < g_minlen || n > g_maxlen ||
		    !g_prefix[(unsigned char)s[0]][(unsigned char)s[1]])
			return orig(obj, name);
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
	    g_deny == NULL)
		return NULL;
	while (k < g_ntramp && t->tp_getattro != g_tramp[k])
		k++;
	if (k == g_ntramp || g_orig[k] != PyObject_GenericGetAttr)
		return NULL;
	r = PySet_Contains(g_deny, name);
	if (r != 0) {
		if (r < 0)
			PyErr_Clear();
		return NULL;
	}
	return t;
}

#define SPECIALISE(real, owner, instr, name)                                                       \
	do {                                                                                       \
		PyTypeObject *t = generic_behind_guard(owner, name);                               \
		getattrofunc tramp;                                                                \
		int rc;                                                                            \
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

static PyObject *subclasses_gate(PyObject *self, PyObject *unused)
{
	if (g_armed && !tp_py_frame_exempt(!tp_py_running))
		return tp_py_refuse("type.__subclasses__() is not allowed", -1);
	return g_subclasses(self, unused);
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
	fn = PyDict_GetItemWithError(d, g_dir_name);
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
		g_subclasses = def->ml_meth;
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
	for (int i = 0; i < g_ntramp; i++)
		if (g_orig[i] == fn) {
			*out = g_tramp[i];
			return 0;
		}
	if (g_ntramp == NTRAMP) {
		PyErr_SetString(PyExc_RuntimeError,
				"attribute guard: too many tp_getattro functions");
		return -1;
	}
	g_orig[g_ntramp] = fn;
	*out = g_tramp[g_ntramp++];
	return 0;
}

/* Types the shim took a denied descriptor from (_settype): a read of it there
 * is refused by name, not answered "no such attribute". */
static PyTypeObject *g_locked[16];
static size_t g_nlocked;

int tp_py_guard_locked(PyTypeObject *t)
{
	for (size_t i = 0; i < g_nlocked; i++)
		if (g_locked[i] == t)
			return 0;
	if (g_nlocked == sizeof g_locked / sizeof g_locked[0]) {
		PyErr_SetString(PyExc_RuntimeError, "attribute guard: too many locked types");
		return -1;
	}
	g_locked[g_nlocked++] = t;
	return 0;
}

static int is_locked(PyTypeObject *t)
{
	for (size_t i = 0; i < g_nlocked; i++)
		if (g_locked[i] == t)
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
static int keeps_generic(PyTypeObject *t)
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

static int remember_type(PyObject *t)
{
	if (g_nztypes == g_cap_ztypes) {
		size_t cap = g_cap_ztypes ? 2 * g_cap_ztypes : 1024;
		PyTypeObject **n = realloc(g_ztypes, cap * sizeof *n);
		if (n == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		g_ztypes = n, g_cap_ztypes = cap;
	}
	/* Kept alive, so no class the exec makes can take its address. */
	Py_INCREF(t);
	g_ztypes[g_nztypes++] = (PyTypeObject *)t;
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
	descr = _PyType_Lookup((PyTypeObject *)t, g_dict_name);
	if (descr != NULL && Py_IS_TYPE(descr, &PyGetSetDescr_Type))
		g_subtype_dict = ((PyGetSetDescrObject *)descr)->d_getset->get;
	Py_DECREF(t);
	if (g_subtype_dict == NULL) {
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
		if (fresh == 1 && (guard_type((PyTypeObject *)t) != 0 || remember_type(t) != 0))
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
	rc = 0;
out:
	Py_XDECREF(todo);
	Py_XDECREF(seen);
	return rc;
}

/* Zygote, once, after every import and the shim's own changes to the types. */
int tp_py_guard_install(PyObject *deny)
{
	PyObject *it, *name;

	if (g_armed)
		return 0;
	if (!PyAnySet_Check(deny)) {
		PyErr_SetString(PyExc_TypeError, "the denied names must be a set");
		return -1;
	}
	g_minlen = 1 << 20;
	g_maxlen = 0;
	it = PyObject_GetIter(deny);
	while (it != NULL && (name = PyIter_Next(it)) != NULL) {
		Py_ssize_t n = PyUnicode_Check(name) ? PyUnicode_GET_LENGTH(name) : -1;
		int ok = n >= 2 && PyUnicode_IS_ASCII(name);
		if (ok)
			g_prefix[PyUnicode_READ_CHAR(name, 0)][PyUnicode_READ_CHAR(name, 1)] = 1;
		Py_DECREF(name);
		if (!ok) { /* the fast path relies on it */
			PyErr_SetString(PyExc_ValueError, "a denied name must be ASCII");
			break;
		}
		g_minlen = n < g_minlen ? n : g_minlen;
		g_maxlen = n > g_maxlen ? n : g_maxlen;
	}
	Py_XDECREF(it);
	if (PyErr_Occurred())
		return -1;
	g_deny = PyFrozenSet_New(deny);
	g_dict_name = PyUnicode_InternFromString("__dict__");
	g_dir_name = PyUnicode_InternFromString("__dir__");
	if (g_deny == NULL || g_dict_name == NULL || g_dir_name == NULL ||
	    find_subtype_dict() != 0 || collect_namespaces() != 0 || guard_all_types() != 0 ||
	    gate_subclasses() != 0 || set_method(&PyBaseObject_Type, &g_dir_object) != 0 ||
	    set_method(&PyType_Type, &g_dir_type) != 0 ||
	    set_method(&PyModule_Type, &g_dir_module) != 0)
		return -1;
	qsort(g_ztypes, g_nztypes, sizeof *g_ztypes, cmp_type);
	g_armed = 1;
	return 0;
}
