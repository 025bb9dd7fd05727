/*
 * test_pyjson.c — the Python value rules that keep every entry: dict keys whose
 * JSON texts are one are refused (naming both), NaN and the infinities are
 * refused, NUL bytes in keys and strings are carried both ways at any depth.
 * A plain interpreter: the converter reads values raw, it needs no sandbox.
 */
#include <Python.h>

#include "jsonio.h"
#include "pyjson.h"
#include "utf8.h"

#include <stdlib.h>

#include "tap.h"

#ifdef TP_SANITIZE
/* The embedded interpreter lives until this process exits, as in the zygote. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpython3.11.so\n";
}
#endif

static struct tp_pyjson_out out;
static char text[4096];

/* Evaluates expr, converts it; returns the compact JSON or "FAIL:<n>[:<message>]". */
static int nonfinite_mode; /* caps.nonfinite of conv() */

static const char *conv(const char *expr)
{
	struct tp_pyjson_caps caps = { 64, 1 << 20, nonfinite_mode };
	PyObject *g = PyDict_New();
	PyObject *v = PyRun_String(expr, Py_eval_input, g, g);

	Py_DECREF(g);
	if (v == NULL) {
		PyErr_Print();
		return "PYERR";
	}
	tp_pyjson_from_py(v, &caps, &out);
	Py_DECREF(v);
	if (out.fail != TP_PYJSON_OK) {
		snprintf(text, sizeof text, "FAIL:%d%s%s", (int)out.fail, out.message[0] ? ":" : "",
			 out.message);
		return text;
	}
	char *s = json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	char *m = out.nonfinite ? json_dumps(out.nonfinite, JSON_COMPACT) : NULL;
	snprintf(text, sizeof text, "%s%s%s", s, m ? " " : "", m ? m : "");
	free(s);
	free(m);
	json_decref(out.value);
	json_decref(out.nonfinite);
	return text;
}

static void test_numbers(void)
{
	CHECK_EQ_STR(conv("float('nan')"), "FAIL:7:NaN is not a JSON number");
	CHECK_EQ_STR(conv("float('inf')"), "FAIL:7:inf is not a JSON number");
	CHECK_EQ_STR(conv("[1, {'a': (2, -float('inf'))}]"), "FAIL:7:-inf is not a JSON number");
	CHECK_EQ_STR(conv("[1e308, -0.0]"), "[1e308,-0.0]");
	/* The first problem met decides: a set before a NaN is sent as repr(). */
	CHECK_EQ_STR(conv("[{1}, float('nan')]"), "FAIL:4");
	CHECK_EQ_STR(conv("[float('nan'), {1}]"), "FAIL:7:NaN is not a JSON number");
}

static void test_keys(void)
{
	CHECK_EQ_STR(conv("{1: 'a', '1': 'b'}"), "FAIL:6:keys 1 and '1' both become \"1\" in JSON");
	CHECK_EQ_STR(conv("{True: 'a', 'true': 'b'}"),
		     "FAIL:6:keys True and 'true' both become \"true\" in JSON");
	CHECK_EQ_STR(conv("{False: 'a', 'false': 'b'}"),
		     "FAIL:6:keys False and 'false' both become \"false\" in JSON");
	CHECK_EQ_STR(conv("{None: 'a', 'null': 'b'}"),
		     "FAIL:6:keys None and 'null' both become \"null\" in JSON");
	CHECK_EQ_STR(conv("{1.5: 'a', '1.5': 'b'}"),
		     "FAIL:6:keys 1.5 and '1.5' both become \"1.5\" in JSON");
	/* The one that is not a str is named first, whatever the dict's order. */
	CHECK_EQ_STR(conv("{'1': 'b', 1: 'a'}"), "FAIL:6:keys 1 and '1' both become \"1\" in JSON");
	CHECK_EQ_STR(conv("{'x': 0, 'inf': 1, float('inf'): 2}"),
		     "FAIL:6:keys inf and 'inf' both become \"inf\" in JSON");
	CHECK_EQ_STR(conv("{'a': [{'b': {2**64: 1, '18446744073709551616': 2}}]}"),
		     "FAIL:6:keys 18446744073709551616 and '18446744073709551616' both become "
		     "\"18446744073709551616\" in JSON");
	/* Lone surrogates become U+FFFD, which can collide too. */
	CHECK_EQ_STR(conv("{'\\ud800': 1, '\\udc00': 2}"),
		     "FAIL:6:keys '\\ud800' and '\\udc00' both become \"\xef\xbf\xbd\" in JSON");
	/* A subclass is read raw: its repr is never called. */
	CHECK_EQ_STR(conv("(lambda S: {S(7): 1, '7': 2})(type('S', (int,), {'__repr__': "
			  "lambda s: 1/0}))"),
		     "FAIL:6:keys 7 and '7' both become \"7\" in JSON");
	/* A long key is cut in the message. */
	conv("{'\\x00' * 300 + '\\ud800': 1, '\\x00' * 300 + '\\udc00': 2}");
	CHECK(out.fail == TP_PYJSON_KEYS);
	CHECK(strlen(out.message) < 300 && strstr(out.message, "\\x00'...") != NULL &&
	      strstr(out.message, "\\u0000\"...") != NULL);
	CHECK(tp_utf8_valid(out.message, strlen(out.message)));
	/* Keys that stay distinct; the dict's order is kept. */
	CHECK_EQ_STR(conv("{'b': 1, 2: 2, 3.0: 3, None: 4, True: 5, float('nan'): 6}"),
		     "{\"b\":1,\"2\":2,\"3.0\":3,\"null\":4,\"true\":5,\"nan\":6}");
	CHECK_EQ_STR(conv("{(1, 2): 1}"), "FAIL:4"); /* not a JSON key: repr() */
}

/* JSON text (as inputs come) -> Python -> JSON: the same text. */
static void round_trip(const char *json)
{
	struct tp_pyjson_caps caps = { 64, 1 << 20, 0 };
	json_t *v = tp_json_loadb(json, strlen(json), JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	PyObject *p = v ? tp_pyjson_to_py(v, 64) : NULL;

	CHECK(p != NULL);
	if (p != NULL) {
		tp_pyjson_from_py(p, &caps, &out);
		CHECK_EQ_INT(out.fail, TP_PYJSON_OK);
		char *s = out.value ? json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		CHECK_EQ_STR(s, json);
		free(s);
		json_decref(out.value);
	}
	Py_XDECREF(p);
	json_decref(v);
}

static void test_nul(void)
{
	CHECK_EQ_STR(conv("{'a\\x00b': 1}"), "{\"a\\u0000b\":1}");
	CHECK_EQ_STR(conv("{'x': [{'y': {'\\x00': 'v\\x00'}}]}"),
		     "{\"x\":[{\"y\":{\"\\u0000\":\"v\\u0000\"}}]}");
	CHECK_EQ_STR(conv("{'a\\x00': 1, 'a': 2, 'a\\x01': 3}"),
		     "{\"a\\u0000\":1,\"a\":2,\"a\\u0001\":3}");
	round_trip("{\"a\\u0000b\":1}");
	round_trip(
	    "{\"k\":{\"l\":{\"\\u0000\":\"\\u0000\",\"\\u0001\":2,\"\\u0001\\u0001\":null}}}");
	round_trip("[{\"\\u0000x\":[true]},\"a\\u0000\"]");
}

/* The exec's value (caps.nonfinite): null, named by its JSON pointer. */
static void test_nonfinite(void)
{
	nonfinite_mode = 1;
	CHECK_EQ_STR(conv("float('nan')"), "null {\"\":\"nan\"}");
	CHECK_EQ_STR(conv("[1, float('inf'), {'a/b~': -float('inf')}]"),
		     "[1,null,{\"a/b~\":null}] {\"/1\":\"inf\",\"/2/a~1b~0\":\"-inf\"}");
	CHECK_EQ_STR(conv("({'x': (float('nan'),)},)"), "[{\"x\":[null]}] {\"/0/x/0\":\"nan\"}");
	CHECK_EQ_STR(conv("[1.5, None]"), "[1.5,null]"); /* no map when there is none */
	/* The other refusals stand, and the first problem wins. */
	CHECK_EQ_STR(conv("[float('nan'), {1}]"), "FAIL:4");
	nonfinite_mode = 0;
}

int main(void)
{
	Py_InitializeEx(0);
	test_numbers();
	test_nonfinite();
	test_keys();
	test_nul();
	Py_FinalizeEx();
	return tp_test_done("test_pyjson");
}
