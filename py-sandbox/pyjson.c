/*
 * pyjson.c — conversion between Python objects and jansson values.
 * Invariants: Python -> JSON never calls back into Python code (exact C-level
 * reads of builtin containers and scalars only), and every json_t is attached
 * to the result tree as soon as it exists, so a failure frees one tree.
 */
#include <Python.h>

#include "pyjson.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATH 256 /* containers on the current path; depth caps are <= 200 */
#define SHOWN_MAX 64 /* bytes of a key or of a JSON text quoted in a message */

/* ---- strings ---------------------------------------------------------------- */

static size_t put_utf8(char *o, Py_UCS4 c)
{
	if (c >= 0xD800 && c <= 0xDFFF)
		c = 0xFFFD; /* a lone surrogate is not UTF-8 */
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 0x3F));
		o[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 0x3F));
	o[2] = (char)(0x80 | (c >> 6 & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

json_t *tp_pyjson_str(PyObject *s)
{
	Py_ssize_t n, len;
	const char *u = PyUnicode_AsUTF8AndSize(s, &n);
	json_t *v;
	char *buf;
	size_t o = 0;

	if (u != NULL)
		return json_stringn(u, (size_t)n);
	PyErr_Clear(); /* lone surrogates: encode by hand */
	len = PyUnicode_GET_LENGTH(s);
	buf = malloc((size_t)len * 4 + 1);
	if (buf == NULL)
		return NULL;
	for (Py_ssize_t i = 0; i < len; i++)
		o += put_utf8(buf + o, PyUnicode_READ_CHAR(s, i));
	v = json_stringn(buf, o);
	free(buf);
	return v;
}

uint64_t tp_pyjson_size(const json_t *v)
{
	return tp_json_scalar_bytes(v); /* containers: their dump's length */
}

/* ---- Python -> JSON ---------------------------------------------------------- */

struct conv {
	const struct tp_pyjson_caps *caps;
	uint64_t bytes;
	enum tp_pyjson_fail fail;
	uint64_t used;
	char *message; /* out->message */
	int npath;
	PyObject *path[MAX_PATH];
	/* Where the value being converted is: in container path[i], the item at
	 * index at_idx[i] or at key at_key[i] (borrowed; NULL for a sequence).
	 * Recorded per item (no formatting), spelled as a JSON pointer only for
	 * a number JSON has none for (caps->nonfinite): {pointer: "nan"|"inf"|
	 * "-inf"}, which the value holds as null. */
	Py_ssize_t at_idx[MAX_PATH];
	const json_t *at_key[MAX_PATH];
	json_t *nonfinite;
};

static int stop(struct conv *c, enum tp_pyjson_fail why, uint64_t used)
{
	c->fail = why;
	c->used = used;
	return -1;
}

static int add_bytes(struct conv *c, uint64_t n)
{
	c->bytes += n;
	return c->bytes <= c->caps->bytes ? 0 : stop(c, TP_PYJSON_BYTES, c->bytes);
}

/* The converter's state, one instance: numpy's number and bool scalar types,
 * or NULL; written in the zygote (tp_pyjson_set_scalars, from load_shim) and
 * read-only after. No signal handler touches it. */
static struct {
	PyTypeObject *np_number, *np_bool;
} G;

void tp_pyjson_set_scalars(PyTypeObject *number, PyTypeObject *boolean)
{
	G.np_number = number;
	G.np_bool = boolean;
}

/* A numpy number or bool as the Python scalar its item() gives (a new
 * reference), or NULL (no error set) when v is none or item() gives no bool,
 * int, float or str. Only numpy's own scalar types (static types: a snippet's
 * subclass is a heap type and is not asked), so no snippet code runs. */
static PyObject *np_item(PyObject *v)
{
	PyTypeObject *t = Py_TYPE(v);
	PyObject *x;

	if (G.np_number == NULL || (t->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
	    (!PyType_IsSubtype(t, G.np_number) && !PyType_IsSubtype(t, G.np_bool)))
		return NULL;
	x = PyObject_CallMethod(v, "item", NULL);
	if (x == NULL) {
		PyErr_Clear();
		return NULL;
	}
	if (PyBool_Check(x) || PyLong_CheckExact(x) || PyFloat_CheckExact(x) ||
	    PyUnicode_CheckExact(x))
		return x;
	Py_DECREF(x);
	return NULL;
}

/* A dict key as JSON text, the way the json module spells it; NULL if none. */
static json_t *key_string(PyObject *k)
{
	PyObject *s;
	json_t *v;

	if (PyUnicode_Check(k))
		return tp_pyjson_str(k);
	if (k == Py_None)
		return json_string("null");
	if (PyBool_Check(k))
		return json_string(k == Py_True ? "true" : "false");
	if (PyLong_Check(k))
		s = PyLong_Type.tp_repr(k); /* the int's own repr, never a subclass's */
	else if (PyFloat_Check(k))
		s = PyFloat_Type.tp_repr(k);
	else if ((s = np_item(k)) != NULL) { /* numpy's scalar keys, as the number they hold */
		v = key_string(s);
		Py_DECREF(s);
		return v;
	} else
		return NULL;
	if (s == NULL) {
		PyErr_Clear();
		return NULL;
	}
	v = tp_pyjson_str(s);
	Py_DECREF(s);
	return v;
}

static json_t *conv_value(struct conv *c, PyObject *v, uint64_t depth);
static json_t *nonfinite(struct conv *c, double d);

static json_t *scalar(struct conv *c, PyObject *v)
{
	json_t *j;

	if (v == Py_None)
		j = json_null();
	else if (PyBool_Check(v))
		j = json_boolean(v == Py_True);
	else if (PyLong_Check(v)) {
		int overflow;
		long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
		if (overflow || (x == -1 && PyErr_Occurred())) {
			PyErr_Clear();
			stop(c, TP_PYJSON_NOTJSON, 0);
			return NULL;
		}
		j = json_integer(x);
	} else if (PyFloat_Check(v)) {
		double d = PyFloat_AS_DOUBLE(v);
		if (!isfinite(d) && c->caps->nonfinite) {
			j = nonfinite(c, d);
			if (j == NULL)
				return NULL;
		} else if (!isfinite(d)) { /* JSON has no NaN or infinity */
			snprintf(c->message, TP_PYJSON_MESSAGE_MAX, "%s is not a JSON number",
				 isnan(d) ? "NaN"
				 : d > 0  ? "inf"
					  : "-inf");
			stop(c, TP_PYJSON_NUMBER, 0);
			return NULL;
		} else {
			j = json_real(d);
		}
	} else if (PyUnicode_Check(v))
		j = tp_pyjson_str(v);
	else {
		PyObject *x = np_item(v); /* numpy's int64, float32, bool_: their number */
		if (x != NULL) {
			j = scalar(c, x);
			Py_DECREF(x);
			return j;
		}
		stop(c, TP_PYJSON_NOTJSON, 0);
		return NULL;
	}
	if (j == NULL) {
		stop(c, TP_PYJSON_NOMEM, 0);
		return NULL;
	}
	if (add_bytes(c, tp_pyjson_size(j)) != 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The JSON pointer (RFC 6901) of the value being converted, malloc'd, its
 * length in *len; NULL when out of memory. */
static char *pointer(const struct conv *c, size_t *len)
{
	size_t n = 0, o = 0;
	for (int i = 0; i < c->npath; i++)
		n += 1 + (c->at_key[i] ? 2 * json_string_length(c->at_key[i]) : 24);
	char *p = malloc(n + 1);
	for (int i = 0; p != NULL && i < c->npath; i++) {
		if (c->at_key[i] == NULL) {
			o += (size_t)snprintf(p + o, n + 1 - o, "/%zd", c->at_idx[i]);
			continue;
		}
		const char *k = json_string_value(c->at_key[i]);
		p[o++] = '/';
		for (size_t j = 0; j < json_string_length(c->at_key[i]); j++) {
			if (k[j] == '~' || k[j] == '/') {
				p[o++] = '~';
				p[o++] = k[j] == '~' ? '0' : '1';
			} else {
				p[o++] = k[j];
			}
		}
	}
	if (p != NULL)
		p[o] = '\0';
	*len = o;
	return p;
}

/* A NaN or an infinity at the current pointer: null in the value, its name in
 * the map (both counted against the byte cap). */
static json_t *nonfinite(struct conv *c, double d)
{
	const char *name = isnan(d) ? "nan" : d > 0 ? "inf" : "-inf";
	size_t len;
	char *ptr = pointer(c, &len);
	if (c->nonfinite == NULL)
		c->nonfinite = json_object();
	if (ptr == NULL || c->nonfinite == NULL ||
	    json_object_setn_new(c->nonfinite, ptr, len, json_string(name)) != 0) {
		free(ptr);
		stop(c, TP_PYJSON_NOMEM, 0);
		return NULL;
	}
	free(ptr);
	/* "ptr":"name", and the brackets or comma: what the map adds to the reply */
	if (add_bytes(c, len + strlen(name) + 6) != 0)
		return NULL;
	return json_null();
}

static int enter(struct conv *c, PyObject *v, uint64_t depth)
{
	if (depth > c->caps->depth || c->npath >= MAX_PATH)
		return stop(c, TP_PYJSON_DEPTH, depth);
	for (int i = 0; i < c->npath; i++)
		if (c->path[i] == v)
			return stop(c, TP_PYJSON_CYCLE, 0);
	c->path[c->npath++] = v;
	return add_bytes(c, 2); /* the brackets */
}

static json_t *conv_seq(struct conv *c, PyObject *v, uint64_t depth)
{
	int is_list = PyList_Check(v);
	Py_ssize_t n = is_list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
	json_t *a = json_array();

	if (a == NULL) {
		stop(c, TP_PYJSON_NOMEM, 0);
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
		json_t *j;
		if (i > 0 && add_bytes(c, 1) != 0)
			goto fail;
		c->at_key[c->npath - 1] = NULL, c->at_idx[c->npath - 1] = i;
		j = conv_value(c, item, depth + 1);
		if (j == NULL)
			goto fail;
		if (json_array_append_new(a, j) != 0) {
			stop(c, TP_PYJSON_NOMEM, 0);
			goto fail;
		}
	}
	return a;
fail:
	json_decref(a);
	return NULL;
}

/* The repr of a str key's first n characters. */
static PyObject *str_repr(PyObject *k, Py_ssize_t n)
{
	PyObject *cut = PyUnicode_Substring(k, 0, n), *r;

	r = cut ? PyUnicode_Type.tp_repr(cut) : NULL; /* str's own repr, never a subclass's */
	Py_XDECREF(cut);
	return r;
}

/* A key as the snippet would write it (its type's own repr), at most SHOWN_MAX
 * bytes: a long str is shown by a shorter prefix's repr, other reprs are cut;
 * "..." follows what was cut. */
static void show_key(PyObject *k, char *out)
{
	Py_ssize_t chars = 0, n = 0;
	const char *u = NULL;
	PyObject *r;
	size_t len;
	int more = 0;

	if (PyUnicode_Check(k)) {
		chars = PyUnicode_GET_LENGTH(k);
		r = str_repr(k, chars);
		while (r != NULL && (u = PyUnicode_AsUTF8AndSize(r, &n)) != NULL &&
		       n > SHOWN_MAX) { /* escapes make bytes per character vary */
			Py_DECREF(r);
			chars = chars > SHOWN_MAX / 2 ? SHOWN_MAX / 2 : chars * 3 / 4;
			r = str_repr(k, chars);
			more = 1;
		}
	} else if (k == Py_None || PyBool_Check(k)) {
		r = PyObject_Repr(k); /* None, True, False: no snippet code */
	} else if (PyLong_Check(k)) {
		r = PyLong_Type.tp_repr(k);
	} else if (PyFloat_Check(k)) {
		r = PyFloat_Type.tp_repr(k);
	} else { /* a numpy scalar (key_string took it): numpy's own repr, no snippet code */
		r = PyObject_Repr(k);
	}
	u = r ? PyUnicode_AsUTF8AndSize(r, &n) : NULL;
	if (u == NULL) {
		PyErr_Clear();
		u = "?", n = 1;
	}
	len = (size_t)n;
	if (len > SHOWN_MAX) { /* digits: any byte is a boundary */
		len = SHOWN_MAX, more = 1;
		while (len > 0 && ((unsigned char)u[len] & 0xC0) == 0x80)
			len--;
	}
	snprintf(out, SHOWN_MAX + 16, "%.*s%s", (int)len, u, more ? "..." : "");
	Py_XDECREF(r);
}

/* k, whose JSON text jk an earlier key of v already has: name both, the one that
 * is not a str first, else in the dict's order. */
static int collision(struct conv *c, PyObject *v, PyObject *k, const json_t *jk)
{
	char a[SHOWN_MAX + 16] = "?", b[SHOWN_MAX + 16], t[SHOWN_MAX + 16];
	Py_ssize_t pos = 0;
	PyObject *other, *item, *first = NULL, *second = k;

	while (first == NULL && PyDict_Next(v, &pos, &other, &item) && other != k) {
		json_t *j = key_string(other);
		if (j != NULL && json_equal(j, jk))
			first = other;
		json_decref(j);
	}
	if (first != NULL && PyUnicode_Check(first) && !PyUnicode_Check(k))
		first = k, second = other;
	if (first != NULL)
		show_key(first, a);
	show_key(second, b);
	tp_utf8_quote(json_string_value(jk), json_string_length(jk), t, SHOWN_MAX);
	snprintf(c->message, TP_PYJSON_MESSAGE_MAX, "keys %s and %s both become %s in JSON", a, b,
		 t);
	return stop(c, TP_PYJSON_KEYS, 0);
}

static json_t *conv_dict(struct conv *c, PyObject *v, uint64_t depth)
{
	Py_ssize_t pos = 0;
	PyObject *k, *item;
	json_t *o = json_object(), *jk, *j;
	int first = 1;

	if (o == NULL) {
		stop(c, TP_PYJSON_NOMEM, 0);
		return NULL;
	}
	while (PyDict_Next(v, &pos, &k, &item)) {
		if (!first && add_bytes(c, 1) != 0)
			goto fail;
		first = 0;
		jk = key_string(k);
		if (jk == NULL) {
			stop(c, TP_PYJSON_NOTJSON, 0);
			goto fail;
		}
		if (json_object_getn(o, json_string_value(jk), json_string_length(jk)) != NULL) {
			collision(c, v, k, jk);
			json_decref(jk);
			goto fail;
		}
		if (add_bytes(c, tp_pyjson_size(jk) + 1) != 0) {
			json_decref(jk);
			goto fail;
		}
		c->at_key[c->npath - 1] = jk;
		j = conv_value(c, item, depth + 1);
		if (j == NULL) {
			json_decref(jk);
			goto fail;
		}
		int rc = json_object_setn_new(o, json_string_value(jk), json_string_length(jk), j);
		json_decref(jk);
		if (rc != 0) {
			stop(c, TP_PYJSON_NOMEM, 0);
			goto fail;
		}
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *conv_value(struct conv *c, PyObject *v, uint64_t depth)
{
	json_t *j;

	if (!PyList_Check(v) && !PyTuple_Check(v) && !PyDict_Check(v))
		return scalar(c, v);
	if (enter(c, v, depth) != 0)
		return NULL;
	j = PyDict_Check(v) ? conv_dict(c, v, depth) : conv_seq(c, v, depth);
	c->npath--;
	return j;
}

void tp_pyjson_from_py(PyObject *v, const struct tp_pyjson_caps *caps, struct tp_pyjson_out *out)
{
	struct conv c = { .caps = caps, .message = out->message };

	out->message[0] = '\0';
	out->value = conv_value(&c, v, 1);
	out->fail = out->value ? TP_PYJSON_OK : c.fail;
	out->used = c.used;
	out->nonfinite = out->value ? c.nonfinite : NULL;
	if (out->value == NULL)
		json_decref(c.nonfinite);
}

/* ---- JSON -> Python ------------------------------------------------------------ */

static PyObject *to_py(const json_t *v, uint64_t depth, uint64_t max_depth)
{
	PyObject *r, *item;

	switch (json_typeof(v)) {
	case JSON_NULL: Py_RETURN_NONE;
	case JSON_TRUE: Py_RETURN_TRUE;
	case JSON_FALSE: Py_RETURN_FALSE;
	case JSON_INTEGER: return PyLong_FromLongLong(json_integer_value(v));
	case JSON_REAL: return PyFloat_FromDouble(json_real_value(v));
	case JSON_STRING:
		return PyUnicode_DecodeUTF8(json_string_value(v), (Py_ssize_t)json_string_length(v),
					    "replace");
	default: break;
	}
	if (depth > max_depth)
		return PyErr_Format(PyExc_ValueError, "input nested deeper than %llu",
				    (unsigned long long)max_depth);
	if (json_is_array(v)) {
		r = PyList_New((Py_ssize_t)json_array_size(v));
		for (size_t i = 0; r != NULL && i < json_array_size(v); i++) {
			item = to_py(json_array_get(v, i), depth + 1, max_depth);
			if (item == NULL)
				Py_CLEAR(r);
			else
				PyList_SET_ITEM(r, (Py_ssize_t)i, item);
		}
		return r;
	}
	r = PyDict_New();
	for (void *it = json_object_iter((json_t *)v); r != NULL && it;
	     it = json_object_iter_next((json_t *)v, it)) {
		PyObject *k = PyUnicode_DecodeUTF8(
		    json_object_iter_key(it), (Py_ssize_t)json_object_iter_key_len(it), "replace");
		item = k ? to_py(json_object_iter_value(it), depth + 1, max_depth) : NULL;
		if (item == NULL || PyDict_SetItem(r, k, item) != 0)
			Py_CLEAR(r);
		Py_XDECREF(k);
		Py_XDECREF(item);
	}
	return r;
}

PyObject *tp_pyjson_to_py(const json_t *v, uint64_t max_depth)
{
	return to_py(v, 1, max_depth);
}
