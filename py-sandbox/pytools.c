/*
 * pytools.c — the `tools` builtin: the client's tools, called from Python.
 *   tools.call("name", {"k": v})   and   tools.name(k=v)
 * A C type with no Python-level state: nothing on it leads to a frame, a
 * module or a function's globals. The host decides whether a call is allowed;
 * the client's error is raised as tools.ToolError (a RuntimeError), which the
 * code may catch.
 * Layer (pyint.h): it calls pystate.c (the exec's limits) and pyjson.c only.
 */
#include <Python.h>

#include "pyint.h"
#include "pyjson.h"
#include "toolcall.h"

/* The tools object's state, one instance: tools.ToolError, made in the zygote
 * (tp_py_tools_new, from load_shim) and read-only after. No signal handler
 * touches it. */
static struct {
	PyObject *tool_error;
} G;

/* Calls tool name with args (a dict, or NULL for none). New reference, or NULL
 * with an exception set. */
static PyObject *invoke(const char *name, PyObject *args)
{
	struct tp_pyjson_caps caps = { tp_py_lim.result_depth, tp_py_lim.result_bytes, 0 };
	struct tp_pyjson_out conv = { 0 };
	struct tp_tool_result res;
	json_t *j;

	if (args == NULL) {
		j = json_object();
	} else {
		tp_pyjson_from_py(args, &caps, &conv);
		if (conv.fail == TP_PYJSON_NOMEM)
			return PyErr_NoMemory();
		if (conv.fail == TP_PYJSON_BYTES)
			return PyErr_Format(PyExc_TypeError,
					    "tools: the arguments cannot become JSON: they are "
					    "more than %llu bytes of JSON (result_bytes)",
					    (unsigned long long)tp_py_lim.result_bytes);
		if (conv.fail == TP_PYJSON_DEPTH)
			return PyErr_Format(PyExc_TypeError,
					    "tools: the arguments cannot become JSON: they are "
					    "nested deeper than result_depth (%llu)",
					    (unsigned long long)tp_py_lim.result_depth);
		if (conv.fail == TP_PYJSON_CYCLE)
			return PyErr_Format(PyExc_TypeError,
					    "tools: the arguments cannot become JSON: a container "
					    "contains itself");
		if (conv.fail != TP_PYJSON_OK)
			return PyErr_Format(PyExc_TypeError,
					    "tools: the arguments cannot become JSON%s%s",
					    conv.message[0] ? ": " : "", conv.message);
		j = conv.value;
	}
	if (j == NULL)
		return PyErr_NoMemory();
	int rc = tp_tool_invoke(name, j, &tp_py_lim, &res);
	json_decref(j);
	if (rc != 0)
		_exit(TP_EXIT_FATAL); /* the channel is gone: so is the host */
	if (res.status == TP_TOOL_OK) {
		PyObject *v = tp_pyjson_to_py(res.value, tp_py_lim.result_depth);
		tp_tool_result_free(&res);
		return v;
	}
	PyObject *msg = PyUnicode_DecodeUTF8(res.message.s, (Py_ssize_t)res.message.n, "replace");
	tp_tool_result_free(&res);
	if (msg != NULL) {
		PyErr_SetObject(G.tool_error, msg);
		Py_DECREF(msg);
	}
	return NULL;
}

/* tools.call(name, args=None) */
static PyObject *tools_call(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	if (n < 1 || n > 2 || !PyUnicode_Check(args[0]))
		return PyErr_Format(PyExc_TypeError,
				    "tools.call(name, args=None): name is a str, args a dict");
	PyObject *a = n == 2 && args[1] != Py_None ? args[1] : NULL;
	if (a != NULL && !PyDict_Check(a))
		return PyErr_Format(PyExc_TypeError, "tools.call: args must be a dict, not %.80s",
				    Py_TYPE(a)->tp_name);
	const char *name = PyUnicode_AsUTF8(args[0]);
	return name ? invoke(name, a) : NULL;
}

/* tools.<name>(**kwargs): self is the name. */
static PyObject *tools_named(PyObject *self, PyObject *args, PyObject *kwargs)
{
	if (PyTuple_GET_SIZE(args) != 0)
		return PyErr_Format(PyExc_TypeError,
				    "tools.%U() takes keyword arguments only (or use tools.call)",
				    self);
	const char *name = PyUnicode_AsUTF8(self);
	return name ? invoke(name, kwargs) : NULL;
}

static PyMethodDef call_def = { "call", (PyCFunction)(void (*)(void))tools_call, METH_FASTCALL,
				"call(name, args=None): call the client's tool name" };
static PyMethodDef named_def = { "tool", (PyCFunction)(void (*)(void))tools_named,
				 METH_VARARGS | METH_KEYWORDS, "a client's tool" };

static PyObject *tools_getattro(PyObject *self, PyObject *name)
{
	(void)self;
	if (!PyUnicode_Check(name))
		return PyErr_Format(PyExc_TypeError, "attribute name must be a str");
	if (PyUnicode_CompareWithASCIIString(name, "call") == 0)
		return PyCFunction_NewEx(&call_def, NULL, NULL);
	if (PyUnicode_CompareWithASCIIString(name, "ToolError") == 0)
		return Py_NewRef(G.tool_error);
	Py_ssize_t n;
	const char *s = PyUnicode_AsUTF8AndSize(name, &n);
	if (s == NULL)
		return NULL;
	if (n == 0 || s[0] == '_' || !tp_tool_name_ok(s, (size_t)n))
		return PyErr_Format(PyExc_AttributeError, "tools has no attribute %R", name);
	return PyCFunction_NewEx(&named_def, name, NULL);
}

static int tools_setattro(PyObject *self, PyObject *name, PyObject *v)
{
	(void)self, (void)v;
	PyErr_Format(PyExc_AttributeError, "tools is read-only (%R)", name);
	return -1;
}

static PyObject *tools_repr(PyObject *self)
{
	(void)self;
	return PyUnicode_FromString("<tools: tools.call(name, args) or tools.name(**args)>");
}

static PyTypeObject tools_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tools",
	.tp_basicsize = sizeof(PyObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_getattro = tools_getattro,
	.tp_setattro = tools_setattro,
	.tp_repr = tools_repr,
};

PyObject *tp_py_tools_new(void)
{
	if (G.tool_error == NULL && (G.tool_error = PyErr_NewException(
					 "tools.ToolError", PyExc_RuntimeError, NULL)) == NULL)
		return NULL;
	if (PyType_Ready(&tools_type) != 0)
		return NULL;
	return PyObject_New(PyObject, &tools_type);
}
