/*
 * pyfork.c — the Python functions CPython would run in a worker after the
 * zygote's clone, and why the zygote takes three of them out.
 *
 * PyOS_AfterFork_Child (run by pysandbox.c's worker init only when the zygote
 * held a second thread state or a function is left after the seal below)
 * resets CPython's own locks and thread state, then calls every function a
 * module registered with
 * os.register_at_fork(after_in_child=...). The zygote clones with a raw clone
 * (sandbox/zygote.c): one thread, no PyOS_BeforeFork, no Python lock held. What
 * it loads registers three, and none has work to do in a worker:
 *   random     `_inst.seed` reseeds the module's generator from getrandom; the
 *              worker reseeds that same generator from the host's entropy
 *              right after (pysandbox.c's reseed), so the draw was thrown away
 *   threading  `_after_fork` rebuilds its table of threads around the thread
 *              that forked and re-creates its locks: the worker has the
 *              zygote's only thread, with the same ident (pthread_self survives
 *              clone), and none of those locks was held
 *   logging    `_after_at_fork_child_reinit_locks` re-creates each handler's
 *              lock and releases the module lock its before-fork hook took:
 *              no lock was held, and the before-fork hook never ran
 * Run cold in every worker, they were ~230 copy-on-write faults (their frames,
 * refcounts, the type cache's misses): four fifths of a one-shot `1+1`'s faults
 * (docs/performance.md). tp_pyfork_seal takes exactly these out (by module,
 * qualified name and, for random, the instance); any other function stays in
 * the list and runs as before, so a module that registers one later is not
 * skipped by mistake. test_py checks that none is left under `standard`.
 *
 * A leaf (pyint.h): it calls only CPython.
 */
#define Py_BUILD_CORE 1
#include <Python.h>

#include <internal/pycore_interp.h>

#include <string.h>

#include "pyfork.h"

static const struct {
	const char *module, *qualname;
} dropped[] = {
	{ "random", "Random.seed" },
	{ "threading", "_after_fork" },
	{ "logging", "_after_at_fork_child_reinit_locks" },
};

static int str_is(PyObject *s, const char *want)
{
	const char *u = s != NULL && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;

	if (u == NULL) {
		PyErr_Clear();
		return 0;
	}
	return strcmp(u, want) == 0;
}

/* random's hook is dropped only bound to the module's own generator: that is
 * the one reseed() reseeds. */
static int random_inst(PyObject *self)
{
	PyObject *name = PyUnicode_FromString("random");
	PyObject *m = name != NULL ? PyImport_GetModule(name) : NULL;
	PyObject *inst = m != NULL ? PyObject_GetAttrString(m, "_inst") : NULL;
	int same = inst != NULL && inst == self;

	PyErr_Clear();
	Py_XDECREF(inst);
	Py_XDECREF(m);
	Py_XDECREF(name);
	return same;
}

static int is_dropped(PyObject *f)
{
	PyObject *self = NULL;

	if (PyMethod_Check(f)) {
		self = PyMethod_GET_SELF(f);
		f = PyMethod_GET_FUNCTION(f);
	}
	if (!PyFunction_Check(f))
		return 0;
	PyFunctionObject *fn = (PyFunctionObject *)f;
	for (size_t i = 0; i < sizeof dropped / sizeof *dropped; i++) {
		if (!str_is(fn->func_module, dropped[i].module) ||
		    !str_is(fn->func_qualname, dropped[i].qualname))
			continue;
		if (strcmp(dropped[i].module, "random") == 0)
			return self != NULL && random_inst(self);
		return self == NULL;
	}
	return 0;
}

int tp_pyfork_seal(void)
{
	PyInterpreterState *interp = PyInterpreterState_Get();
	PyObject *hooks = interp->after_forkers_child, *keep;

	if (hooks == NULL)
		return 0;
	if (!PyList_Check(hooks) || (keep = PyList_New(0)) == NULL) {
		PyErr_Clear();
		return -1;
	}
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hooks); i++) {
		PyObject *f = PyList_GET_ITEM(hooks, i);
		if (!is_dropped(f) && PyList_Append(keep, f) != 0) {
			PyErr_Clear();
			Py_DECREF(keep);
			return -1;
		}
	}
	if (PyList_GET_SIZE(keep) == 0)
		Py_CLEAR(keep);
	interp->after_forkers_child = keep;
	Py_DECREF(hooks);
	return 0;
}

Py_ssize_t tp_pyfork_hooks_left(void)
{
	PyObject *hooks = PyInterpreterState_Get()->after_forkers_child;

	return hooks != NULL && PyList_Check(hooks) ? PyList_GET_SIZE(hooks) : 0;
}
