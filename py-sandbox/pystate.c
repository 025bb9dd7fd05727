/*
 * pystate.c — the bottom of the Python layer: what the exec and the zygote
 * know, which every other file reads and none has to call up for. The exec's
 * page and limits, the file shim's flag, kernel-only mode and the largest file
 * a worker may write; the data packages; and what the attribute guard's
 * install recorded in the zygote (pyattr.c fills it): the denied names, the
 * namespaces and module types of the modules loaded, every type there was, and
 * the frame whose attrgetter or methodcaller is reading now. It calls only
 * CPython, sandbox/ and common/.
 */
#include "pyint.h"

#include <stdlib.h>

#include "policy.h"

/* ---- the exec ------------------------------------------------------------------------ */

struct tp_shm *tp_py_shm; /* NULL outside an exec */
struct tp_limits tp_py_lim;
volatile sig_atomic_t tp_py_fileop;
int tp_py_kernel_only;

uint64_t tp_py_file_limit(const char **which)
{
	const struct tp_policy *p = tp_sandbox_policy();
	uint64_t g = p != NULL && p->fs_write.n > 0 ? p->file_bytes : 0;
	uint64_t w = p != NULL && tp_sandbox_workspace() != NULL ? p->session.workspace_bytes : 0;
	*which = w > g ? "session.workspace_bytes" : "filesystem.file_bytes";
	return w > g ? w : g;
}

const char *const tp_py_data_modules[] = { "numpy", "pandas", "matplotlib", NULL };

/* ---- what the attribute guard recorded in the zygote -------------------------------- */

int tp_py_attr_armed;
PyObject *tp_py_deny;
PyTypeObject *tp_py_modtypes[8];
int tp_py_nmodtypes;
const void *tp_py_acting;
int tp_py_acting_slot;

static PyObject **g_real; /* sorted namespaces of the modules loaded in the zygote */
static size_t g_nreal;
static PyTypeObject **g_ztypes; /* sorted: every type that existed when the guard was armed */
static size_t g_nztypes, g_cap_ztypes;

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

int tp_py_collect_namespaces(void)
{
	PyObject *mods = PyImport_GetModuleDict(), *key, *v;
	Py_ssize_t pos = 0, n = PyDict_Size(mods);

	g_real = calloc((size_t)n + 1, sizeof *g_real);
	if (g_real == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	while (PyDict_Next(mods, &pos, &key, &v)) {
		if (!PyModule_Check(v) || !PyUnicode_Check(key) ||
		    PyUnicode_CompareWithASCIIString(key, "__main__") == 0)
			continue;
		PyObject *d = PyModule_GetDict(v); /* borrowed; modules stay loaded */
		int k = 0;
		if (d != NULL && (size_t)n > g_nreal)
			g_real[g_nreal++] = d;
		while (k < tp_py_nmodtypes && tp_py_modtypes[k] != Py_TYPE(v))
			k++;
		if (k == tp_py_nmodtypes &&
		    Py_TYPE(v) != &PyModule_Type) { /* tp_py_module_type() knows it */
			if (k == (int)(sizeof tp_py_modtypes / sizeof tp_py_modtypes[0])) {
				PyErr_SetString(PyExc_RuntimeError,
						"attribute guard: too many module types");
				return -1;
			}
			tp_py_modtypes[tp_py_nmodtypes++] = Py_TYPE(v);
		}
	}
	qsort(g_real, g_nreal, sizeof *g_real, cmp_ptr);
	return 0;
}

int tp_py_attr_denied(PyObject *name)
{
	int r;

	if (tp_py_deny == NULL || !PyUnicode_Check(name))
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
	r = PySet_Contains(tp_py_deny, name);
	if (r < 0) {
		PyErr_Clear();
		return 0;
	}
	return r;
}

/* A module the zygote loaded (the standard library's, a data package's): its
 * namespace is a real one. Never a facade, nor a module the snippet made. */
int tp_py_real_module(PyObject *o)
{
	return tp_py_module_type(Py_TYPE(o)) && tp_py_real_namespace(PyModule_GetDict(o));
}

/* The frame that called an operator.attrgetter or methodcaller now reading: the
 * read is that callable's (a snippet may hand one to the stdlib, functools.
 * singledispatch(attrgetter(name)) calls it from functools' frame), not the code
 * of the frame's. False when none runs. Not an attribute slot wrapper
 * (object.__setattr__ ...), which the stdlib itself calls for denied names: those
 * count for the real-module rule only (tp_py_acting_slot). */
int tp_py_acting_now(void)
{
	return tp_py_acting != NULL && tp_py_acting == tp_py_current_frame() && !tp_py_acting_slot;
}

static int cmp_type(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (PyTypeObject *const *)a,
		  y = (uintptr_t) * (PyTypeObject *const *)b;
	return x < y ? -1 : x > y;
}

/* True when t existed in the zygote when the guard was armed: a builtin, the
 * stdlib's, a data package's or the shim's class, never one the exec made
 * (tp_py_remember_type keeps each alive, so its address is never reused). */
int tp_py_ztype(PyTypeObject *t)
{
	return g_nztypes > 0 &&
	       bsearch(&t, g_ztypes, g_nztypes, sizeof *g_ztypes, cmp_type) != NULL;
}

int tp_py_remember_type(PyObject *t)
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

void tp_py_sort_ztypes(void)
{
	qsort(g_ztypes, g_nztypes, sizeof *g_ztypes, cmp_type);
}

/* t existed when the guard was installed: a type of the standard library, a data
 * package or the interpreter, not one the snippet made. */
int tp_py_zygote_type(PyTypeObject *t)
{
	return tp_py_attr_armed && tp_py_ztype(t); /* g_ztypes is sorted once armed */
}
