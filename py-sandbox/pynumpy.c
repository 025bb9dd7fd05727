/*
 * pynumpy.c — numpy's array data through tidepool's memory accounting.
 *
 * numpy (>= 1.22) allocates an array's data with its own handler (PyDataMem,
 * plain malloc by default), which the counting allocators of pyalloc.c never
 * see: a 400 MB array under a 256 MiB memory_bytes would pass. The zygote of a
 * policy that offers numpy installs this handler (numpy's PyDataMem_SetHandler,
 * entry 304 of its C API table) before any snippet runs: data goes through
 * PyMem_Raw*, counted and refused like any other block, so an array over the
 * limit is memory_limit. Each array keeps the handler that allocated it, so
 * arrays the zygote made with numpy's default are freed by numpy's default.
 * We define numpy's structures here (its ABI, version 1) rather than build
 * against its headers: nothing else of numpy is needed at compile time.
 *
 * It also guards the buffer of an array (or a record scalar) holding Python
 * objects (dtype object, or a record with an object field): its bytes are the
 * objects' addresses, and bytes(a), a.data, np.ndarray(buffer=a) or any other
 * consumer of the buffer protocol would hand them out. Refused unless pandas'
 * own code asks (its Cython functions take object arrays as typed buffers);
 * tobytes/tostring are the shim's (_np_bytes_guard).
 * Layer (pyint.h): it calls pystate.c and pyguard.c; the shim's functions
 * (pyshimfns.c) install it.
 */
#include "pyint.h"

#include "policy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* numpy/ndarraytypes.h, PyDataMem_Handler version 1 */
struct np_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr, size_t size);
};
struct np_handler {
	char name[127];
	uint8_t version;
	struct np_allocator allocator;
};

enum { NP_API_SET_HANDLER = 304, NP_API_FEATURE_VERSION = 211, NP_FEATURE_1_22 = 0xf };

static void *h_malloc(void *ctx, size_t n)
{
	(void)ctx;
	return PyMem_RawMalloc(n);
}

static void *h_calloc(void *ctx, size_t nelem, size_t elsize)
{
	(void)ctx;
	return PyMem_RawCalloc(nelem, elsize);
}

static void *h_realloc(void *ctx, void *p, size_t n)
{
	(void)ctx;
	return PyMem_RawRealloc(p, n);
}

static void h_free(void *ctx, void *p, size_t n)
{
	(void)ctx, (void)n;
	PyMem_RawFree(p);
}

static struct np_handler g_handler = {
	.name = "tidepool_counted",
	.version = 1,
	.allocator = { NULL, h_malloc, h_calloc, h_realloc, h_free },
};

/* ---- the buffer of an array holding objects ------------------------------------------ */

/* numpy/ndarraytypes.h: the head of PyArray_Descr, PyArrayObject_fields and
 * PyVoidScalarObject (ABI version 1.x) */
struct np_descr {
	PyObject_HEAD PyTypeObject *typeobj;
	char kind, type, byteorder, flags;
};
struct np_array {
	PyObject_HEAD char *data;
	int nd;
	void *dimensions, *strides;
	PyObject *base;
	struct np_descr *descr;
};
struct np_void {
	PyObject_VAR_HEAD char *obval;
	struct np_descr *descr;
};
enum { NP_ITEM_REFCOUNT = 0x01 }; /* the descr holds (or contains) objects */

/* The buffer guard's state, one instance: numpy's array and void scalar types
 * and their original bf_getbuffer, written in the zygote (guard_buffers, from
 * the shim's _numpy_alloc) and read-only after. No signal handler touches it.
 * (g_handler above is the allocator numpy is handed, not state.) */
static struct {
	PyTypeObject *ndarray, *void_type;
	getbufferproc array_getbuffer, void_getbuffer;
} G;

static int holds_objects(PyObject *o)
{
	const struct np_descr *d = NULL;

	if (PyObject_TypeCheck(o, G.ndarray))
		d = ((const struct np_array *)o)->descr;
	else if (PyObject_TypeCheck(o, G.void_type))
		d = ((const struct np_void *)o)->descr;
	return d != NULL && (d->flags & NP_ITEM_REFCOUNT);
}

/* The innermost frame is pandas' own code (its file, its module's namespace):
 * its Cython functions take object arrays as typed buffers (ndarray[object]),
 * and read their items as objects. Not numpy's Python code: np.recarray(buf=a)
 * would make the addresses an array of bytes for the snippet. */
static int caller_pandas(void)
{
	static const char dir[] = DIST_PACKAGES "/pandas/";
	PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	PyObject *g;
	const char *file;
	int r;

	if (f == NULL)
		return 0;
	code = PyFrame_GetCode(f);
	file = PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : NULL;
	r = file != NULL && strncmp(file, dir, sizeof dir - 1) == 0;
	Py_DECREF(code);
	if (file == NULL)
		PyErr_Clear();
	if (!r)
		return 0;
	g = PyFrame_GetGlobals(f);
	r = tp_py_real_namespace(g);
	Py_DECREF(g);
	return r;
}

static int refuse_buffer(PyObject *o, Py_buffer *view, int flags, getbufferproc orig)
{
	char msg[200];
	const struct tp_policy *p;

	if (!tp_py_running || !holds_objects(o) || caller_pandas())
		return orig(o, view, flags);
	p = tp_sandbox_policy();
	snprintf(msg, sizeof msg,
		 "the buffer of a numpy %s holding Python objects is not available in the "
		 "sandbox (policy %s: no addresses)",
		 PyObject_TypeCheck(o, G.ndarray) ? "array" : "scalar",
		 p && p->name ? p->name : "?");
	view->obj = NULL;
	tp_py_refuse("python.data:buffer", msg, -1);
	return -1;
}

static int array_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
	return refuse_buffer(o, view, flags, G.array_getbuffer);
}

static int void_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
	return refuse_buffer(o, view, flags, G.void_getbuffer);
}

/* t and its subclasses whose bf_getbuffer is old now call repl (a heap type,
 * np.matrix or np.recarray, has its own copy of the slot). */
static int retarget_buffer(PyTypeObject *t, getbufferproc old, getbufferproc repl)
{
	PyObject *subs;
	int rc = 0;

	if (t->tp_as_buffer != NULL && t->tp_as_buffer->bf_getbuffer == old)
		t->tp_as_buffer->bf_getbuffer = repl;
	subs = PyObject_CallMethod((PyObject *)t, "__subclasses__", NULL);
	if (subs == NULL || !PyList_Check(subs)) {
		Py_XDECREF(subs);
		return -1;
	}
	for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(subs); i++)
		rc = retarget_buffer((PyTypeObject *)PyList_GET_ITEM(subs, i), old, repl);
	Py_DECREF(subs);
	return rc;
}

static int guard_buffers(PyObject *mod)
{
	PyObject *np = PyImport_ImportModule("numpy"); /* the zygote: loaded */
	PyObject *a = np ? PyObject_GetAttrString(mod, "ndarray") : NULL;
	PyObject *v = a ? PyObject_GetAttrString(np, "void") : NULL;

	Py_XDECREF(np);

	if (v == NULL || !PyType_Check(a) || !PyType_Check(v)) {
		Py_XDECREF(a);
		Py_XDECREF(v);
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError,
					"numpy's ndarray or void is not a type");
		return -1;
	}
	G.ndarray = (PyTypeObject *)a, G.void_type = (PyTypeObject *)v; /* the module keeps them */
	if (G.ndarray->tp_as_buffer == NULL || G.void_type->tp_as_buffer == NULL ||
	    G.ndarray->tp_as_buffer->bf_getbuffer == NULL ||
	    G.void_type->tp_as_buffer->bf_getbuffer == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "numpy's ndarray or void has no buffer");
		return -1;
	}
	if (G.array_getbuffer == NULL) {
		G.array_getbuffer = G.ndarray->tp_as_buffer->bf_getbuffer;
		G.void_getbuffer = G.void_type->tp_as_buffer->bf_getbuffer;
	}
	return retarget_buffer(G.ndarray, G.array_getbuffer, array_getbuffer) ||
	       retarget_buffer(G.void_type, G.void_getbuffer, void_getbuffer);
}

/* _numpy_alloc(numpy.core._multiarray_umath): install the counted handler and
 * the buffer guard; returns the handler name numpy reports afterwards. */
PyObject *tp_py_numpy_alloc(PyObject *self, PyObject *mod)
{
	PyObject *api = PyObject_GetAttrString(mod, "_ARRAY_API"), *cap, *old;
	void **table;

	(void)self;
	if (api == NULL)
		return NULL;
	table = PyCapsule_IsValid(api, NULL) ? PyCapsule_GetPointer(api, NULL) : NULL;
	Py_DECREF(api);
	if (table == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "numpy's _ARRAY_API is not a capsule");
		return NULL;
	}
	if (((unsigned (*)(void))table[NP_API_FEATURE_VERSION])() < NP_FEATURE_1_22) {
		PyErr_SetString(PyExc_RuntimeError,
				"numpy is older than 1.22: no PyDataMem_SetHandler");
		return NULL;
	}
	cap = PyCapsule_New(&g_handler, "mem_handler", NULL);
	if (cap == NULL)
		return NULL;
	old = ((PyObject * (*)(PyObject *)) table[NP_API_SET_HANDLER])(cap);
	Py_DECREF(cap);
	if (old == NULL)
		return NULL;
	Py_DECREF(old);
	if (guard_buffers(mod) != 0)
		return NULL;
	return PyUnicode_FromString(g_handler.name);
}
