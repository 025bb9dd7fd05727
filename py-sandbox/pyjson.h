/*
 * pyjson.h — Python values to JSON (the last expression's value) and JSON to
 * Python (inputs), under the same depth and byte caps as the Lua layer.
 * Python -> JSON uses raw access only (PyDict_Next, PyList_GET_ITEM): no
 * snippet code runs, so a value cannot change or loop while it is converted.
 *
 * Usage:
 *   1. tp_pyjson_write(v, &caps, &out): the value as JSON text (out.json), or
 *      tp_pyjson_from_py for a jansson tree (out.value). out.fail says why it stopped. A value
 *      that JSON cannot hold (a set, a big int, an object) gives
 *      TP_PYJSON_NOTJSON: the caller then sends its repr, marked value_repr.
 *      Nothing is dropped: two dict keys with one JSON text (1 and '1') give
 *      TP_PYJSON_KEYS, NaN and the infinities TP_PYJSON_NUMBER, each with
 *      out.message for the user (the first problem in order wins).
 *   2. tp_pyjson_to_py(v, max_depth): new reference, or NULL with a Python
 *      error set (ValueError "input nested deeper than N", or MemoryError).
 *   3. tp_pyjson_str(s): a JSON string of a Python str; lone surrogates -> U+FFFD.
 */
#ifndef TP_PYJSON_H
#define TP_PYJSON_H

#include <Python.h>

#include <jansson.h>
#include <stdint.h>

struct tp_pyjson_caps {
	uint64_t depth; /* containers nested deeper than this are refused; the top one is depth 1 */
	uint64_t bytes; /* compact JSON text longer than this is refused */
	int nonfinite;  /* NaN and the infinities become null, named in out.nonfinite
			 * (the exec's value); 0: refused as TP_PYJSON_NUMBER */
};

enum tp_pyjson_fail {
	TP_PYJSON_OK = 0,
	TP_PYJSON_DEPTH,   /* used = depth reached (cap + 1) */
	TP_PYJSON_BYTES,   /* used = JSON bytes counted when the conversion stopped */
	TP_PYJSON_CYCLE,   /* a container contains itself */
	TP_PYJSON_NOTJSON, /* a value or a dict key JSON cannot represent */
	TP_PYJSON_NOMEM,   /* out of C memory */
	TP_PYJSON_KEYS,    /* two keys of one dict have one JSON text; message names them */
	TP_PYJSON_NUMBER /* NaN or an infinity, which JSON has no number for; message says which */
};

#define TP_PYJSON_MESSAGE_MAX 320

struct tp_pyjson_out {
	json_t *value; /* tp_pyjson_from_py: new reference, set only when fail == TP_PYJSON_OK */
	char *json;    /* tp_pyjson_write: when fail == TP_PYJSON_OK, the value's compact JSON
			* text (malloc'd, NUL-terminated, json_n bytes): what tp_json_dumps
			* writes for the same value, reals in their shortest form */
	size_t json_n;
	enum tp_pyjson_fail fail;
	uint64_t used;
	char message[TP_PYJSON_MESSAGE_MAX]; /* for KEYS and NUMBER, UTF-8; else "" */
	json_t *nonfinite; /* new reference or NULL: {JSON pointer: "nan"|"inf"|"-inf"} */
};

void tp_pyjson_write(PyObject *v, const struct tp_pyjson_caps *caps, struct tp_pyjson_out *out);
void tp_pyjson_from_py(PyObject *v, const struct tp_pyjson_caps *caps, struct tp_pyjson_out *out);
PyObject *tp_pyjson_to_py(const json_t *v, uint64_t max_depth);
json_t *tp_pyjson_str(PyObject *s);
/* numpy's number and bool_ scalar types: their instances convert as the
 * number item() gives (the data preset; NULL, NULL: none). */
void tp_pyjson_set_scalars(PyTypeObject *number, PyTypeObject *boolean);
/* Compact JSON size of a scalar or a finished tree. */
uint64_t tp_pyjson_size(const json_t *v);

#endif
