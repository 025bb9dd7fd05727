/*
 * test_pyjson.c — the Python value rules that keep every entry: dict keys whose
 * JSON texts are one are refused (naming both), NaN and the infinities are
 * refused, NUL bytes in keys and strings are carried both ways at any depth.
 * And the writer's text is the host's canonical text: byte for byte what
 * tp_json_dumps writes for the value it holds, and the value Python's json
 * module writes, over random values (test_differential).
 * A plain interpreter: the converter reads values raw, it needs no sandbox.
 */
#include <Python.h>

#include "json_same.h"
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
	tp_pyjson_write(v, &caps, &out);
	Py_DECREF(v);
	if (out.fail != TP_PYJSON_OK) {
		snprintf(text, sizeof text, "FAIL:%d%s%s", (int)out.fail, out.message[0] ? ":" : "",
			 out.message);
		return text;
	}
	char *m = out.nonfinite ? json_dumps(out.nonfinite, JSON_COMPACT) : NULL;
	snprintf(text, sizeof text, "%s%s%s", out.json, m ? " " : "", m ? m : "");
	free(m);
	CHECK_EQ_INT(strlen(out.json), out.json_n);
	free(out.json);
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

/* Random values (seeded): the writer's text is tp_json_dumps of the value
 * it holds, byte for byte (the host's splice writes what a dump would), and
 * that value is the one Python's json module writes. Reals from random bits
 * and from every decimal layout; strings with every escape and every UTF-8
 * length; keys of every type JSON spells. */
static void test_differential(void)
{
	static const char gen[] =
	    "import json, random, struct\n"
	    "R = random.Random(29)\n"
	    "CH = 'ab/\"\\\\\\x00\\x01\\x08\\t\\n\\x0c\\r\\x1f\\x7f \\xe9\\u20ac\\U0001d11e'\n"
	    "def real():\n"
	    "    k = R.randrange(5)\n"
	    "    if k == 0:\n"
	    "        while True:\n"
	    "            d = struct.unpack('d', R.getrandbits(64).to_bytes(8, 'little'))[0]\n"
	    "            if d == d and abs(d) != float('inf'): return d\n"
	    "    if k == 1: return round(R.uniform(-1e6, 1e6), R.randrange(8))\n"
	    "    if k == 2: return float(R.randrange(-10**18, 10**18)) * 10.0 ** R.randrange(-30, "
	    "30)\n"
	    "    if k == 3: return R.choice([0.0, -0.0, 1e16, 1e17, 1e-4, 1e-5, 5e-324, "
	    "1.7976931348623157e308, 2.5e-7, 0.1, 250.0, 123456789012345680.0])\n"
	    "    return R.random() * 10.0 ** R.randrange(-320, 300)\n"
	    "def string(): return ''.join(R.choice(CH) for _ in range(R.randrange(6)))\n"
	    "def key(i):\n"
	    "    k = R.randrange(6)\n"
	    "    return ['k%d' % i + string(), i, i + 0.5, None if i == 0 else 'k%d' % i, True if "
	    "i == 1 else 'k%d' % i, 'k%d' % i][k]\n"
	    "def value(d):\n"
	    "    k = R.randrange(9 if d < 4 else 6)\n"
	    "    if k == 0: return R.randrange(-2**63, 2**63)\n"
	    "    if k == 1: return real()\n"
	    "    if k == 2: return string()\n"
	    "    if k == 3: return R.choice([None, True, False, R.randrange(-9, 99)])\n"
	    "    if k in (4, 5): return real() if R.random() < .5 else string()\n"
	    "    if k == 6: return [value(d + 1) for _ in range(R.randrange(5))]\n"
	    "    if k == 7: return tuple(value(d + 1) for _ in range(R.randrange(3)))\n"
	    "    return {key(i): value(d + 1) for i in range(R.randrange(5))}\n"
	    "VALUES = [value(0) for _ in range(4000)] + [[real() for _ in range(100)] for _ in "
	    "range(2000)]\n"
	    "REFS = [json.dumps(v, ensure_ascii=False) for v in VALUES]\n";
	struct tp_pyjson_caps caps = { 64, 1 << 24, 0 };
	PyObject *g = PyDict_New(), *r = PyRun_String(gen, Py_file_input, g, g);
	PyObject *values = PyDict_GetItemString(g, "VALUES"),
		 *refs = PyDict_GetItemString(g, "REFS");
	int bad_text = 0, bad_value = 0, n = 0;

	CHECK(r != NULL && values != NULL && refs != NULL);
	if (r == NULL)
		PyErr_Print();
	for (Py_ssize_t i = 0; values != NULL && i < PyList_GET_SIZE(values); i++) {
		Py_ssize_t rn;
		const char *ref = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(refs, i), &rn);
		tp_pyjson_write(PyList_GET_ITEM(values, i), &caps, &out);
		if (out.fail != TP_PYJSON_OK) {
			bad_value++;
			continue;
		}
		json_t *mine =
		    tp_json_loadb(out.json, out.json_n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		json_t *theirs =
		    tp_json_loadb(ref, (size_t)rn, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		char *dump = mine ? tp_json_dumps(mine, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (dump == NULL || strcmp(dump, out.json) != 0) {
			if (bad_text++ < 3)
				printf("# differs from the dump: %s\n#                  dump: %s\n",
				       out.json, dump ? dump : "(null)");
		}
		if (mine == NULL || theirs == NULL || !json_same(mine, theirs)) {
			if (bad_value++ < 3)
				printf("# not the json module's value: %s\n#                     "
				       "json: %s\n",
				       out.json, ref);
		}
		n++;
		free(dump);
		json_decref(mine);
		json_decref(theirs);
		free(out.json);
	}
	printf("# differential: %d random values\n", n);
	CHECK_EQ_INT(n, 6000);
	CHECK_EQ_INT(bad_text, 0);
	CHECK_EQ_INT(bad_value, 0);
	Py_XDECREF(r);
	Py_DECREF(g);
}

int main(void)
{
	Py_InitializeEx(0);
	test_numbers();
	test_nonfinite();
	test_keys();
	test_nul();
	test_differential();
	Py_FinalizeEx();
	return tp_test_done("test_pyjson");
}
