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
 */
#include "pyint.h"

#include <stdint.h>
#include <string.h>

const char *const tp_py_data_modules[] = { "numpy", "pandas", "matplotlib", NULL };

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

/* _numpy_alloc(numpy.core._multiarray_umath): install the counted handler;
 * returns the handler name numpy reports afterwards. */
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
	return PyUnicode_FromString(g_handler.name);
}
