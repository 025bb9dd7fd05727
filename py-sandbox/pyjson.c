/*
 * pyjson.c — conversion between Python objects and jansson values.
 * Invariants: Python -> JSON never calls back into Python code (exact C-level
 * reads of builtin containers and scalars only), and every json_t is attached
 * to the result tree as soon as it exists, so a failure frees one tree.
 */
#include <Python.h>

#include "pyjson.h"
#include "jsonreal.h"
#include "jsonscan.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATH 256 /* containers on the current path; depth caps are <= 200 */
#define SHOWN_MAX 64 /* bytes of a key or of a JSON text quoted in a message */

/* ---- strings ---------------------------------------------------------------- */

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
		o += tp_utf8_put(buf + o, PyUnicode_READ_CHAR(s, i));
	v = json_stringn(buf, o);
	free(buf);
	return v;
}

uint64_t tp_pyjson_size(const json_t *v)
{
	return tp_json_scalar_bytes(v); /* containers: their dump's length */
}

/* ---- Python -> JSON ---------------------------------------------------------- */

/* The value is written as compact JSON text as it is walked, byte for byte
 * what tp_json_dumps (JSON_COMPACT) writes for the same value: jansson's
 * escapes, and each real in its shortest form (jsonreal.h), from Python's
 * own repr digits. No tree is built: the text is what the worker sends. */
struct conv {
	const struct tp_pyjson_caps *caps;
	uint64_t bytes; /* counted against caps->bytes: the text, and the nonfinite map */
	char *buf;      /* the text so far (malloc'd), buf[n] kept for a NUL */
	size_t n, cap;
	enum tp_pyjson_fail fail;
	uint64_t used;
	char *message; /* out->message */
	int npath;
	PyObject *path[MAX_PATH];
	/* Where the value being converted is: in container path[i], the item at
	 * index at_idx[i] or at key at_key[i] (at_keyn[i] bytes of UTF-8, borrowed;
	 * NULL for a sequence). Recorded per item (no formatting), spelled as a
	 * JSON pointer only for a number JSON has none for (caps->nonfinite):
	 * {pointer: "nan"|"inf"|"-inf"}, which the value holds as null. */
	Py_ssize_t at_idx[MAX_PATH];
	const char *at_key[MAX_PATH];
	size_t at_keyn[MAX_PATH];
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

/* Room for n more bytes and a NUL. Counted bytes come first (add_bytes), so
 * the text never grows past the cap. */
static int reserve(struct conv *c, size_t n)
{
	if (c->cap - c->n > n)
		return 0;
	size_t cap = c->cap ? c->cap : 1024;
	while (cap - c->n <= n)
		cap *= 2;
	char *t = realloc(c->buf, cap);
	if (t == NULL)
		return stop(c, TP_PYJSON_NOMEM, 0);
	c->buf = t;
	c->cap = cap;
	return 0;
}

/* Bytes add_bytes already counted (brackets, commas). */
static int put(struct conv *c, const char *s, size_t n)
{
	if (reserve(c, n) != 0)
		return -1;
	memcpy(c->buf + c->n, s, n);
	c->n += n;
	return 0;
}

/* Bytes not counted yet: a scalar's text. */
static int put_counted(struct conv *c, const char *s, size_t n)
{
	return add_bytes(c, n) != 0 ? -1 : put(c, s, n);
}

/* n bytes of UTF-8 as a JSON string, counted. */
static int put_utf8_json(struct conv *c, const char *u, size_t n, size_t extra)
{
	uint64_t size = tp_utf8_json_bytes(u, n);
	if (add_bytes(c, size + extra) != 0 || reserve(c, (size_t)size + extra) != 0)
		return -1;
	c->n += tp_utf8_json_put(u, n, c->buf + c->n);
	return 0;
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

static int conv_value(struct conv *c, PyObject *v, uint64_t depth);
static int nonfinite(struct conv *c, double d);

/* An int as jansson writes it ("%lld"). */
static size_t int_text(long long x, char *out)
{
	char tmp[24];
	size_t n = 0, o = 0;
	unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;

	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (x < 0)
		out[o++] = '-';
	while (n > 0)
		out[o++] = tmp[--n];
	return o;
}

/* CPython's shortest-digits dtoa (Python/dtoa.c: what float.__repr__ runs),
 * exported by libpython and declared in its internal pycore_dtoa.h, which
 * wants Py_BUILD_CORE: declared here as that header does. */
PyAPI_FUNC(char *) _Py_dg_dtoa(double d, int mode, int ndigits, int *decpt, int *sign, char **rve);
PyAPI_FUNC(void) _Py_dg_freedtoa(char *s);

/* A finite real: its shortest digits from dtoa's mode 0 (repr's), laid out
 * as tp_json_real_format lays them out, with no text of repr's to read back. */
static int put_real(struct conv *c, double d)
{
	char text[TP_JSON_REAL_MAX + 1];
	size_t n = 0;

	if (d == 0) {
		n = tp_json_real_format(d, text);
	} else {
		int decpt, sign;
		char *end = NULL, *digits = _Py_dg_dtoa(d, 0, 0, &decpt, &sign, &end);
		if (digits == NULL)
			return stop(c, TP_PYJSON_NOMEM, 0);
		if (end != NULL && end > digits)
			n = tp_json_real_from_digits(sign != 0, digits, (size_t)(end - digits),
						     decpt, text);
		_Py_dg_freedtoa(digits);
		if (n == 0) /* no digits dtoa can give a finite real: the slow way */
			n = tp_json_real_format(d, text);
	}
	return put_counted(c, text, n);
}

/* A str as a JSON string; lone surrogates as U+FFFD. */
static int put_str(struct conv *c, PyObject *s)
{
	Py_ssize_t n, len;
	const char *u = PyUnicode_AsUTF8AndSize(s, &n);
	char *buf;
	size_t o = 0;
	int rc;

	if (u != NULL)
		return put_utf8_json(c, u, (size_t)n, 0);
	PyErr_Clear(); /* lone surrogates: encode by hand */
	len = PyUnicode_GET_LENGTH(s);
	buf = malloc((size_t)len * 4 + 1);
	if (buf == NULL)
		return stop(c, TP_PYJSON_NOMEM, 0);
	for (Py_ssize_t i = 0; i < len; i++)
		o += tp_utf8_put(buf + o, PyUnicode_READ_CHAR(s, i));
	rc = put_utf8_json(c, buf, o, 0);
	free(buf);
	return rc;
}

static int scalar(struct conv *c, PyObject *v)
{
	if (v == Py_None)
		return put_counted(c, "null", 4);
	if (PyBool_Check(v))
		return v == Py_True ? put_counted(c, "true", 4) : put_counted(c, "false", 5);
	if (PyLong_Check(v)) {
		char text[24];
		int overflow;
		long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
		if (overflow || (x == -1 && PyErr_Occurred())) {
			PyErr_Clear();
			return stop(c, TP_PYJSON_NOTJSON, 0);
		}
		return put_counted(c, text, int_text(x, text));
	}
	if (PyFloat_Check(v)) {
		double d = PyFloat_AS_DOUBLE(v);
		if (isfinite(d))
			return put_real(c, d);
		if (c->caps->nonfinite)
			return nonfinite(c, d);
		/* JSON has no NaN or infinity */
		snprintf(c->message, TP_PYJSON_MESSAGE_MAX, "%s is not a JSON number",
			 isnan(d) ? "NaN"
			 : d > 0  ? "inf"
				  : "-inf");
		return stop(c, TP_PYJSON_NUMBER, 0);
	}
	if (PyUnicode_Check(v))
		return put_str(c, v);
	PyObject *x = np_item(v); /* numpy's int64, float32, bool_: their number */
	if (x != NULL) {
		int rc = scalar(c, x);
		Py_DECREF(x);
		return rc;
	}
	return stop(c, TP_PYJSON_NOTJSON, 0);
}

/* The JSON pointer (RFC 6901) of the value being converted, malloc'd, its
 * length in *len; NULL when out of memory. */
static char *pointer(const struct conv *c, size_t *len)
{
	size_t n = 0, o = 0;
	for (int i = 0; i < c->npath; i++)
		n += 1 + (c->at_key[i] ? 2 * c->at_keyn[i] : 24);
	char *p = malloc(n + 1);
	for (int i = 0; p != NULL && i < c->npath; i++) {
		if (c->at_key[i] == NULL) {
			o += (size_t)snprintf(p + o, n + 1 - o, "/%zd", c->at_idx[i]);
			continue;
		}
		const char *k = c->at_key[i];
		p[o++] = '/';
		for (size_t j = 0; j < c->at_keyn[i]; j++) {
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
static int nonfinite(struct conv *c, double d)
{
	const char *name = isnan(d) ? "nan" : d > 0 ? "inf" : "-inf";
	size_t len;
	char *ptr = pointer(c, &len);
	if (c->nonfinite == NULL)
		c->nonfinite = json_object();
	if (ptr == NULL || c->nonfinite == NULL ||
	    json_object_setn_new(c->nonfinite, ptr, len, json_string(name)) != 0) {
		free(ptr);
		return stop(c, TP_PYJSON_NOMEM, 0);
	}
	free(ptr);
	/* "ptr":"name", and the brackets or comma: what the map adds to the reply */
	if (add_bytes(c, len + strlen(name) + 6) != 0)
		return -1;
	return put_counted(c, "null", 4);
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

static int conv_seq(struct conv *c, PyObject *v, uint64_t depth)
{
	int is_list = PyList_Check(v);
	Py_ssize_t n = is_list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);

	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i);
		if (i > 0 && (add_bytes(c, 1) != 0 || put(c, ",", 1) != 0))
			return -1;
		c->at_key[c->npath - 1] = NULL, c->at_idx[c->npath - 1] = i;
		if (conv_value(c, item, depth + 1) != 0)
			return -1;
	}
	return 0;
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

/* Every key is an exact str with UTF-8 (no lone surrogate): then no two keys
 * have one JSON text (distinct strs, distinct UTF-8), and nothing need be
 * remembered to tell. A str subclass (its own __eq__ can keep two equal texts
 * apart), any other key, or a surrogate takes the checked path. */
static int plain_keys(PyObject *v)
{
	Py_ssize_t pos = 0, n;
	PyObject *k, *item;

	while (PyDict_Next(v, &pos, &k, &item))
		if (!PyUnicode_CheckExact(k) || PyUnicode_AsUTF8AndSize(k, &n) == NULL) {
			PyErr_Clear();
			return 0;
		}
	return 1;
}

static int conv_dict(struct conv *c, PyObject *v, uint64_t depth)
{
	Py_ssize_t pos = 0, n;
	PyObject *k, *item;
	int plain = plain_keys(v), first = 1, rc = -1;
	json_t *seen = plain ? NULL : json_object(), *jk = NULL;

	if (!plain && seen == NULL)
		return stop(c, TP_PYJSON_NOMEM, 0);
	while (PyDict_Next(v, &pos, &k, &item)) {
		const char *u;
		if (!first && (add_bytes(c, 1) != 0 || put(c, ",", 1) != 0))
			goto done;
		first = 0;
		if (seen == NULL) {
			u = PyUnicode_AsUTF8AndSize(k, &n); /* plain_keys made it */
		} else {
			jk = key_string(k);
			if (jk == NULL) {
				stop(c, TP_PYJSON_NOTJSON, 0);
				goto done;
			}
			u = json_string_value(jk), n = (Py_ssize_t)json_string_length(jk);
			if (json_object_getn(seen, u, (size_t)n) != NULL) {
				collision(c, v, k, jk);
				goto done;
			}
			if (json_object_setn_new(seen, u, (size_t)n, json_null()) != 0) {
				stop(c, TP_PYJSON_NOMEM, 0);
				goto done;
			}
		}
		if (put_utf8_json(c, u, (size_t)n, 1) != 0)
			goto done;
		c->buf[c->n++] = ':'; /* counted with the key, room reserved with it */
		c->at_key[c->npath - 1] = u, c->at_keyn[c->npath - 1] = (size_t)n;
		if (conv_value(c, item, depth + 1) != 0)
			goto done;
		json_decref(jk);
		jk = NULL;
	}
	rc = 0;
done:
	json_decref(jk);
	json_decref(seen);
	return rc;
}

static int conv_value(struct conv *c, PyObject *v, uint64_t depth)
{
	int dict = PyDict_Check(v), rc;

	if (!dict && !PyList_Check(v) && !PyTuple_Check(v))
		return scalar(c, v);
	if (enter(c, v, depth) != 0 || put(c, dict ? "{" : "[", 1) != 0)
		return -1;
	rc = dict ? conv_dict(c, v, depth) : conv_seq(c, v, depth);
	c->npath--;
	return rc != 0 ? -1 : put(c, dict ? "}" : "]", 1);
}

void tp_pyjson_write(PyObject *v, const struct tp_pyjson_caps *caps, struct tp_pyjson_out *out)
{
	struct conv c = { .caps = caps, .message = out->message };

	out->message[0] = '\0';
	out->value = NULL;
	int rc = conv_value(&c, v, 1);
	if (rc == 0 && reserve(&c, 0) == 0) {
		c.buf[c.n] = '\0';
		out->json = c.buf, out->json_n = c.n;
		out->fail = TP_PYJSON_OK;
		out->nonfinite = c.nonfinite;
		out->used = c.used;
		return;
	}
	free(c.buf);
	json_decref(c.nonfinite);
	out->json = NULL, out->json_n = 0;
	out->nonfinite = NULL;
	out->fail = c.fail;
	out->used = c.used;
}

void tp_pyjson_from_py(PyObject *v, const struct tp_pyjson_caps *caps, struct tp_pyjson_out *out)
{
	tp_pyjson_write(v, caps, out);
	if (out->fail != TP_PYJSON_OK)
		return;
	struct tp_err err = { 0 };
	struct tp_json_scan_out scan;
	/* the parser the messages are read with: U+0000 in keys too, no depth rule here */
	out->value = tp_json_scan(out->json, out->json_n, 0, &scan, &err);
	free(out->json);
	out->json = NULL, out->json_n = 0;
	if (out->value == NULL) {
		json_decref(out->nonfinite);
		out->nonfinite = NULL;
		out->fail = TP_PYJSON_NOMEM;
	}
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
