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

/* The exec's state every file of the layer reads, shared (pyint.h), so not
 * grouped into this file's struct: */
/* -- per exec: set by pysandbox.c's begin, cleared after a rehearsal (tp_py_exec) */
struct tp_shm *tp_py_shm; /* NULL outside an exec */
struct tp_limits tp_py_lim;
/* -- a volatile sig_atomic_t flag (kept a plain global, as the style guide
 * keeps such flags): set and cleared around the file shim's own call
 * (pyshimfns.c), read by the guard's exemption checks */
volatile sig_atomic_t tp_py_fileop;
/* -- zygote (pysandbox.c, from the policy), read-only after */
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
/* The packages whose code counts as a data package's (tp_py_caller_data_package):
 * the data modules and the Excel reader pandas calls (openpyxl, whose
 * descriptors keep their values in the instance's __dict__, its writer, and the
 * XML parser it reads with, which imports inside its functions). At most 7. */
const char *const tp_py_data_code[] = { "numpy",      "pandas",     "matplotlib", "openpyxl",
					"et_xmlfile", "defusedxml", NULL };

/* ---- what the attribute guard recorded in the zygote -------------------------------- */

/* -- zygote (tp_py_guard_install, tp_py_collect_namespaces), read-only once
 * tp_py_attr_armed is set */
int tp_py_attr_armed;
PyObject *tp_py_deny;
PyTypeObject *tp_py_modtypes[8];
int tp_py_nmodtypes;
/* -- per acting call: pyattr.c's acting_call sets them around the call and
 * restores the previous values after it */
const void *tp_py_acting;
int tp_py_acting_slot;

/* This file's own state, one instance: written only in the zygote (by the
 * guard's install, pyattr.c) and sorted there; read-only once the guard is
 * armed. No signal handler touches it. */
static struct {
	/* -- zygote (tp_py_collect_namespaces): sorted namespaces of the modules
	 * loaded in the zygote */
	PyObject **real;
	size_t nreal;
	/* -- zygote (tp_py_remember_type, then tp_py_sort_ztypes): sorted, every
	 * type that existed when the guard was armed */
	PyTypeObject **ztypes;
	size_t nztypes, cap_ztypes;
} G;

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
	return d != NULL && G.nreal > 0 &&
	       bsearch(&d, G.real, G.nreal, sizeof *G.real, cmp_ptr) != NULL;
}

int tp_py_collect_namespaces(void)
{
	PyObject *mods = PyImport_GetModuleDict(), *key, *v;
	Py_ssize_t pos = 0, n = PyDict_Size(mods);

	G.real = calloc((size_t)n + 1, sizeof *G.real);
	if (G.real == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	while (PyDict_Next(mods, &pos, &key, &v)) {
		if (!PyModule_Check(v) || !PyUnicode_Check(key) ||
		    PyUnicode_CompareWithASCIIString(key, "__main__") == 0)
			continue;
		PyObject *d = PyModule_GetDict(v); /* borrowed; modules stay loaded */
		int k = 0;
		if (d != NULL && (size_t)n > G.nreal)
			G.real[G.nreal++] = d;
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
	qsort(G.real, G.nreal, sizeof *G.real, cmp_ptr);
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
	return G.nztypes > 0 &&
	       bsearch(&t, G.ztypes, G.nztypes, sizeof *G.ztypes, cmp_type) != NULL;
}

int tp_py_remember_type(PyObject *t)
{
	if (G.nztypes == G.cap_ztypes) {
		size_t cap = G.cap_ztypes ? 2 * G.cap_ztypes : 1024;
		PyTypeObject **n = realloc(G.ztypes, cap * sizeof *n);
		if (n == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		G.ztypes = n, G.cap_ztypes = cap;
	}
	/* Kept alive, so no class the exec makes can take its address. */
	Py_INCREF(t);
	G.ztypes[G.nztypes++] = (PyTypeObject *)t;
	return 0;
}

void tp_py_sort_ztypes(void)
{
	qsort(G.ztypes, G.nztypes, sizeof *G.ztypes, cmp_type);
}

/* t existed when the guard was installed: a type of the standard library, a data
 * package or the interpreter, not one the snippet made. */
int tp_py_zygote_type(PyTypeObject *t)
{
	return tp_py_attr_armed && tp_py_ztype(t); /* G.ztypes is sorted once armed */
}
