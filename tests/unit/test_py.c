/*
 * test_py.c — the Python layer end to end: each case forks a worker from a state
 * built once by tp_py_zygote_init(), runs one exec, and sends the reply back as
 * JSON text through a pipe; output and the sticky verdict come through shared memory.
 * What every language does alike (limits, results, inputs, seeds) is the table of
 * tests/cases/conformance.json, run by harness_conformance(); this file keeps Python's own.
 */
#include <Python.h>

#include "pysandbox.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang_harness.h"
#include "pyalloc.h"
#include "pyfork.h"

#ifdef TP_SANITIZE
/* The embedded interpreter lives until this process exits, as in the zygote,
 * which never finalizes it: what it still holds at exit is not a leak. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	/* and hashlib's OpenSSL state, its module's for the same life */
	return "leak:libpython3.11.so\nleak:libcrypto.so\n";
}
#endif

static long long usage_i(const char *field)
{
	return json_integer_value(json_object_get(json_object_get(R.reply, "usage"), field));
}

static void test_ok(void)
{
	run("x = 5");
	CHECK(json_is_null(value()));
	run("x"); /* a new worker: x from the last exec is gone */
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "NameError");
	run("print(1, 'a', None, True, sep='-', end='!')\n[1, 'a', None, (2.5,)]");
	CHECK_EQ_STR(R.out, "1-a-None-True!");
	CHECK_EQ_STR(value_text(), "[1,\"a\",null,[2.5]]");
	run("{'a': 1, 2: 'b', None: 3, True: 4}");
	CHECK_EQ_STR(value_text(), "{\"a\":1,\"2\":\"b\",\"null\":3,\"true\":4}");
	run("'c\\udcff'");
	CHECK_EQ_STR(value_text(), "\"c\xef\xbf\xbd\"");
	run("import gc");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	/* sys is a facade: the streams, nothing of the interpreter's state. */
	run("import sys\nprint('o')\nprint('e', file=sys.stderr)\nsys.stderr.write('w')");
	CHECK_EQ_STR(R.out, "o\n");
	CHECK_EQ_STR(R.err, "e\nw");
	CHECK_EQ_INT(json_integer_value(value()), 1);
	run("import sys\nsys.modules");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("message"), "module 'sys' has no attribute 'modules'");
	run("from dataclasses import dataclass\nimport collections, json\n@dataclass\nclass P:\n"
	    "    x: int\n    y: int = 2\nQ = collections.namedtuple('Q', 'a b')\n"
	    "json.dumps([P(1).y, Q(1, 2)])");
	CHECK_EQ_STR(json_string_value(value()), "[2, [1, 2]]");
	run("import datetime\ndatetime.datetime.strptime('2020', '%Y').year");
	CHECK_EQ_INT(json_integer_value(value()), 2020);
}

static void test_repr(void)
{
	run("{1, 2}");
	CHECK_EQ_STR(json_string_value(value()), "{1, 2}");
	CHECK(json_is_true(json_object_get(R.reply, "value_repr")));
	run("2**100");
	CHECK_EQ_STR(json_string_value(value()), "1267650600228229401496703205376");
	CHECK(json_is_true(json_object_get(R.reply, "value_repr")));
	run("[1]");
	CHECK(json_object_get(R.reply, "value_repr") == NULL);
	struct tp_limits l = limits();
	l.result_bytes = 50;
	run_lim("set(range(1000))", l);
	CHECK(json_is_true(json_object_get(R.reply, "value_repr")));
	CHECK(strlen(json_string_value(value())) <= 48);
	run("class A:\n    def __repr__(self):\n        raise ValueError('no')\nA()");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "ValueError");
}

static void test_errors(void)
{
	run("def f():\n    return 1 / 0\n\nf()");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "ZeroDivisionError");
	CHECK_EQ_STR(err_s("message"), "division by zero");
	CHECK_EQ_INT(err_i("line"), 2);
	CHECK_EQ_STR(
	    err_s("traceback"),
	    "Traceback (most recent call last):\n  File \"<snippet>\", line 4, in <module>\n"
	    "    f()\n  File \"<snippet>\", line 2, in f\n    return 1 / 0\n"
	    "           ~~^~~\nZeroDivisionError: division by zero");
	CHECK_EQ_INT(err_i("column"), 12);
	run("import json\njson.loads('{')");
	CHECK_EQ_STR(err_s("type"), "JSONDecodeError");
	CHECK(strstr(err_s("traceback"), "json/") == NULL); /* the snippet's frames only */
	run("raise MemoryError('memory_limit')");
	CHECK_EQ_STR(err_s("kind"), "runtime_error"); /* the C flag decides, not the type */
	CHECK_EQ_STR(err_s("type"), "MemoryError");
	run("def f(): f()\nf()");
	CHECK_EQ_STR(err_s("type"), "RecursionError");
	CHECK(strlen(err_s("traceback")) < 10000);
}

static const char *const refused[][2] = {
	{ "import socket", "import of module 'socket' is not allowed" },
	{ "().__class__.__base__.__subclasses__()", "attribute '__subclasses__' is not allowed" },
	{ "(lambda: 0).__globals__", "attribute '__globals__' is not allowed" },
	{ "print.__self__", "attribute '__self__' is not allowed" },
	{ "getattr(print, '__se' + 'lf__')", "attribute '__self__' is not allowed" },
	{ "'{0.__class__}'.format(1)",
	  "format string reads attribute '__class__', which is not allowed" },
	{ "f = '{0._' + '_class__}'\nf.format(1)",
	  "format string reads attribute '__class__', which is not allowed" },
	{ "def g(): yield\ng().gi_frame", "attribute 'gi_frame' is not allowed" },
	{ "__builtins__", "name '__builtins__' is not allowed" },
	{ "import operator\noperator.attrgetter('__globals__')",
	  "attribute '__globals__' is not allowed" },
};

static void test_policy(void)
{
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		run(refused[i][0]);
		CHECK_EQ_STR(err_s("kind"), "policy_violation");
		CHECK_EQ_STR(err_s("type"), "PolicyViolation");
		if (strcmp(err_s("kind") ? err_s("kind") : "", "policy_violation") != 0)
			fprintf(stderr, "  case: %s\n", refused[i][0]);
		else if (i + 1 < sizeof refused / sizeof refused[0])
			CHECK(strncmp(err_s("message"), refused[i][1], strlen(refused[i][1])) == 0);
	}
	/* Refusals are sticky: catching them does not help. */
	run("try:\n    import socket\nexcept BaseException:\n    pass\n1");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	run("import random\nrandom._os");
	CHECK_EQ_STR(err_s("type"), "AttributeError");
	run("import json\njson.codecs");
	CHECK_EQ_STR(err_s("type"), "AttributeError"); /* facades carry no modules */
	/* NFKC: the parser reads "open", the file shim (standard's sessions have a
	 * workspace; this exec has none), which refuses the path and names it. */
	run("ｏｐｅｎ('/etc/passwd')");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	CHECK_EQ_STR(err_s("message"),
		     "open('/etc/passwd') is refused: files are in a session's workspace, and this "
		     "exec has none (policy standard: open a session)");
	run("exec('1')");
	CHECK_EQ_STR(err_s("message"),
		     "exec is not available in the sandbox (policy standard: no dynamic code)");
	run("open = 1\ndef vars(): return 2\nopen + vars()"); /* the snippet's own names */
	CHECK_EQ_INT(json_integer_value(value()), 3);
	run("try:\n    eval('1')\nexcept BaseException:\n    pass\n1");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	run("undefined_name");
	CHECK_EQ_STR(err_s("type"), "NameError");
	run("'x'.encode('idna')");
	CHECK_EQ_STR(err_s("message"),
		     "the 'idna' codec is not available in the sandbox (policy standard)");
}

/* One-expression sources compiled straight from the text (no Python AST):
 * the same values, errors, lines and limits as the full path. */
static void test_fast_path(void)
{
	struct tp_limits l = limits();

	run("(x := 3) * 2");
	CHECK_EQ_INT(json_integer_value(value()), 6);
	run("[i * i for i in range(4)]  # a comment\n\n");
	CHECK_EQ_STR(value_text(), "[0,1,4,9]");
	run("1 / 0");
	CHECK_EQ_STR(err_s("type"), "ZeroDivisionError");
	CHECK_EQ_INT(err_i("line"), 1);
	CHECK_EQ_STR(
	    err_s("traceback"),
	    "Traceback (most recent call last):\n  File \"<snippet>\", "
	    "line 1, in <module>\n    1 / 0\n    ~~^~~\nZeroDivisionError: division by zero");
	CHECK_EQ_INT(err_i("column"), 1);
	run("1 +");
	CHECK_EQ_STR(err_s("kind"), "syntax_error");
	CHECK_EQ_INT(err_i("line"), 1);
	run(" 1");
	CHECK_EQ_STR(err_s("kind"), "syntax_error"); /* as in exec mode: unexpected indent */
	run("'1\\x7b0.__class__}'.format(1)"); /* an escape spells '{': the full path checks it */
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	run("(lambda: 0).f_globals");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	run("open('/etc/passwd')");
	CHECK_EQ_STR(err_s("message"),
		     "open('/etc/passwd') is refused: files are in a session's workspace, and this "
		     "exec has none (policy standard: open a session)");
	l.instructions = 1;
	run_lim("1 + 1", l);
	CHECK_EQ_INT(json_integer_value(value()), 2);
	CHECK_EQ_INT(usage_i("instructions"), 1);
	run_lim("[i for i in range(10)]", l);
	CHECK_EQ_STR(err_s("kind"), "instruction_limit");
	l = limits();
	l.memory_bytes = 1u << 20;
	run_lim("'x' * (1 << 22)", l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
	l = limits();
	l.cpu_ms = 100;
	run_lim("sum(1 for _ in iter(int, 1))", l);
	CHECK_EQ_STR(err_s("kind"), "cpu_limit");
}

/* A loop without line events: only the CPU budget ends it. */
static void test_cpu(void)
{
	struct tp_limits l = limits();

	l.cpu_ms = 100;
	run_lim("while True:\n    try:\n        while True: pass\n    except BaseException: pass",
		l);
	CHECK_EQ_STR(err_s("kind"), "cpu_limit");
	CHECK_EQ_STR(lim_s("name"), "cpu_ms");
	CHECK(lim_i("used") >= 100);
}

static void test_output(void)
{
	run("import pprint\npprint.pprint({'a': 1})");
	CHECK_EQ_STR(R.out, "{'a': 1}\n");
}

/* One source through both compiles: where the text path takes it, the shim's
 * AST path must accept it too and make equal code objects (code equality
 * compares the bytecode, constants, names and the line table). 1 if the text
 * path took it. */
static int same_prepare(const char *code)
{
	PyObject *fast = tp_py_prepare_text(code, strlen(code));
	CHECK(!PyErr_Occurred());
	PyErr_Clear();
	if (fast == NULL)
		return 0;
	PyObject *full = tp_py_prepare_shim(code, strlen(code));
	int ok = full != NULL && PyTuple_Check(full) && PyTuple_GET_SIZE(full) == 2;
	if (ok) {
		PyObject *fb = PyTuple_GET_ITEM(fast, 0), *sb = PyTuple_GET_ITEM(full, 0);
		PyObject *fe = PyTuple_GET_ITEM(fast, 1), *se = PyTuple_GET_ITEM(full, 1);
		/* One expression: the text path leaves no body (the AST path's is
		 * an empty module, which runs nothing). */
		ok = (fb == Py_None ? fe != Py_None
				    : PyObject_RichCompareBool(fb, sb, Py_EQ) == 1) &&
		     (fe == Py_None ? se == Py_None : PyObject_RichCompareBool(fe, se, Py_EQ) == 1);
	}
	PyErr_Clear();
	CHECK(ok);
	if (!ok)
		fprintf(stderr, "# the text path and the AST path differ on:\n%s\n", code);
	Py_XDECREF(full);
	Py_DECREF(fast);
	return 1;
}

/* The text path (pysandbox.c's tp_py_prepare_text) against the shim's AST
 * path, on the compatibility corpus and on sources made to trip its scan. */
static void test_prepare_text(void)
{
	static const char *const tricky[] = {
		"x = 1\nx + 1",
		"x = 1\n\n# c\n  # d\nx",
		"d = {'a': 1}\nd['a']",
		"if True:\n    y = 3\nelse:\n    y = 4\ny",
		"if True:\n    y = 3\nelse:\n    y",
		"try:\n    1\nexcept E:\n    2\nfinally:\n    3",
		"@staticmethod\ndef g(): pass\n1",
		"@a\n@b\nclass C: pass\nC",
		"for i in range(3):\n    pass\ni",
		"x = (1,\n 2)\nx",
		"'''a\nb'''\n3",
		"x = '''\nelse:\n'''\nx",
		"x = [1,\n# ]\n2]\nx",
		"print(f'{1+1}')",
		"f'{1}'\nf'{2}'",
		"s = 'a#b'\ns",
		"x = 1 # ; \nx",
		"async def f(): pass\nf",
		"while False:\n    pass\nelse:\n    z = 1\nz",
		"class A:\n    x = 1\nA.x",
		"lambda: 1",
		"x = 1\nlambda: x",
		"x = 1\nif x: y = 2\ny",
		"if 1: 2",
		"elsewhere = 1\nelsewhere",
		"finally_ = 2\nfinally_",
		"x = 1\n(x)",
		"x = 1\n  x",
		"x = 1\nx +",
		"x = [\n1",
		"x = 1)\nx",
		"\n\n1",
		"",
		"# only a comment",
		"x: int = 1\nx",
		"a = b = 2\na",
		"rb'x'\nb'y'",
		"x = 3\nx if x else 4",
		"x = {1: {2: 3}}\nx[1][2]",
		"import math\nmath.pi",
		"from math import pi\npi",
		"del x",
		"x = 1\nx.__class__",
		"class A:\n    def __init__(self):\n        self.v = 1\nA().v",
		"if __name__ == '__main__':\n    r = 1\nr",
		"'__globals__'",
		"x = '{}'.format(1)\nx",
		"f'{1:{2}}'",
		"x = 1\nf'{x!r:>{3}}'",
		"__x = 1\n__x",
		"import math\n__all__ = ['a']",
		"global q\nq = 1",
		"match 1:\n    case 1:\n        m = 2\nm",
		"a = 1; b = 2\nb",
		"x = 1; y = 2",
		"if 1:\n    a = 1; b = 2\nb",
		"x = 1; # c\nx",
		"x = [1]; x.append(2); y = x",
		"t = 1; del t",
		"s = \'a;b\'; t = s\nt",
		"s = \'a\\nb\'\ns.split(\'\\n\')",
		"r\'\\d+\\.\'",
		"x = \'it\\\'s\'\nx",
		"\'a\\\\\'",
		"import re\nre.findall(r\'\\b\\w+\', \'a b\')",
		"x = \"q\\\"\"\nx",
	};
	/* Refused by the scan, or by text_is_plain: the full path runs. */
	static const char *const full_only[] = {
		"a = 1; a",
		"x = 'a' 'b'\nx",
		"s = '{0.gi_' 'frame}'\ns",
		"f'{\"a\" \"b\"}'",
		"x = 1\nx.__globals__",
		"'\\x41'",
		"import __future__",
		"from m import (a,\n __b)",
		"import m as __b",
		"'{0.__globals__}'.format(1)",
		"f'{f.__globals__}'",
		"__ = 1",
		"x = 1\nx.__dict__",
		"def f(__debug__=1): pass",
		"x = 'open\n",
		"x = (1\n",
		"x = 1)\n",
		"x = 1\nx.gi_frame",
		"if a: b; c",
		"x = 1\ry",
		"x = 1\n\fy",
		"x = 1\r\ny",
		"'{0._x}'.format(1)",
		"'{0.\\x5fx}'.format(1)",
		"'gi_\\\nframe'",
		"x = 1 + \\\n 2\nx",
		"'\\x5f\\x5fclass\\x5f\\x5f'",
		"f'{x}\\n'",
		"'\\N{LOW LINE}'",
		"x = 1;",
		"for i in range(2): a = i; b = a",
		"f = lambda: 1; g = 2",
		"x: int = 1; y = 2",
	};
	size_t took = 0, n = 0;
	for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++)
		took += (size_t)same_prepare(tricky[i]);
	CHECK(took >=
	      sizeof tricky / sizeof *tricky - 6); /* the syntax errors take the full path */
	for (size_t i = 0; i < sizeof full_only / sizeof *full_only; i++) {
		PyObject *fast = tp_py_prepare_text(full_only[i], strlen(full_only[i]));
		CHECK(fast == NULL && !PyErr_Occurred());
		if (fast != NULL)
			fprintf(stderr, "# taken by the text path: %s\n", full_only[i]);
		Py_XDECREF(fast);
	}
	json_error_t e;
	json_t *doc = json_load_file("tests/cases/compat_python.json", 0, &e), *c;
	size_t k;
	CHECK(doc != NULL);
	took = 0;
	json_array_foreach(json_object_get(doc, "cases"), k, c)
	{
		const char *code = json_string_value(json_object_get(c, "code"));
		if (code != NULL) {
			n++;
			took += (size_t)same_prepare(code);
		}
	}
	fprintf(stderr, "# the text path took %zu of %zu compatibility snippets\n", took, n);
	CHECK(n >= 140 && took >= n / 2);
	/* Mutants of the corpus: pieces the scan must read right inserted, spans
	 * deleted, lines split; every one the text path takes is held to the AST
	 * path. */
	static const char *const piece[] = {
		"__globals__",
		"__init__",
		"__class__",
		"__",
		"__x",
		"import ",
		"from m import ",
		" as __y",
		"'",
		"\"",
		"'''",
		"f'",
		"f'{",
		"}'",
		"{",
		"}",
		"(",
		")",
		"[",
		"]",
		";",
		"\n",
		"\n    ",
		"\nelse:\n    ",
		"\nelif x:\n    ",
		"\nexcept:\n    ",
		"\n@d\n",
		"#",
		" '{0.",
		"gi_",
		"frame",
		"'{0.__class__}'",
		" 'a' 'b' ",
		"\t",
		"lambda: ",
		"x",
		" if x else ",
		":",
		"=",
		"\nx\n",
		"rb'",
		"f'{x!r}'",
		"\"\"\"",
		"\r",
		"\r\n",
		"\f",
		"\v",
		" = 1\n",
		"._",
		"{0._x}",
		"async ",
		"@",
		"match ",
		"<<=",
		"\\",
		"\\n",
		"\\\'",
		"\\\"",
		"\\\\",
		"\\x5f",
		"\\137",
		"\\N{LOW LINE}",
		"\\u005f",
		"\\\n",
		"r\'\\",
		"\\{",
		"f\'\\n{x}\'",
		"\'\\n\'",
		"\'{0.\\x5f_class__}\'",
		"; ",
		"; x = 1",
		"; x",
		": ",
	};
	uint64_t r = 0x1234567897f4a7c1ull;
	size_t tried = 0, mut_took = 0;
	char mut[4096];
	json_t *cs = json_object_get(doc, "cases");
	for (int round = 0; round < 20000 && json_array_size(cs) > 0; round++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		json_t *one = json_array_get(cs, (size_t)(r >> 33) % json_array_size(cs));
		const char *code = json_string_value(json_object_get(one, "code"));
		size_t len = code ? strlen(code) : 0;
		if (code == NULL || len + 64 >= sizeof mut)
			continue;
		memcpy(mut, code, len + 1);
		for (int m = 0; m < 1 + (int)(r >> 62) % 2; m++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			size_t at = (size_t)(r >> 20) % (len + 1), d;
			const char *p = piece[(r >> 40) % (sizeof piece / sizeof *piece)];
			switch ((r >> 60) % 3) {
			case 0: /* insert a piece */
				d = strlen(p);
				if (len + d + 1 >= sizeof mut)
					break;
				memmove(mut + at + d, mut + at, len - at + 1);
				memcpy(mut + at, p, d);
				len += d;
				break;
			case 1: /* delete a span */
				d = (size_t)(r >> 8) % 8;
				d = at + d > len ? len - at : d;
				memmove(mut + at, mut + at + d, len - at - d + 1);
				len -= d;
				break;
			default: /* split the line here */
				if (len + 2 >= sizeof mut)
					break;
				memmove(mut + at + 1, mut + at, len - at + 1);
				mut[at] = '\n';
				len++;
			}
		}
		tried++;
		mut_took += (size_t)same_prepare(mut);
	}
	fprintf(stderr, "# mutants: the text path took %zu of %zu\n", mut_took, tried);
	CHECK(tried > 15000 && mut_took > tried / 10);
	json_decref(doc);
}

/* The zygote took random's, threading's and logging's after-fork functions
 * out (pyfork.c): a worker runs none under this policy. Any other stays: one
 * bound to another generator than random's own, and one of no module. */
static void test_fork_hooks(void)
{
	CHECK_EQ_INT((int)tp_pyfork_hooks_left(), 0);
	PyObject *posix = PyImport_ImportModule("posix"), *random = PyImport_ImportModule("random");
	PyObject *other = random ? PyObject_CallMethod(random, "Random", NULL) : NULL;
	PyObject *inst = random ? PyObject_GetAttrString(random, "_inst") : NULL;
	const char *hooks[] = { "seed", "seed", NULL };
	PyObject *owners[] = { other, inst };
	for (int i = 0; hooks[i] != NULL; i++) {
		PyObject *f = owners[i] ? PyObject_GetAttrString(owners[i], hooks[i]) : NULL;
		PyObject *kw = f ? Py_BuildValue("{sO}", "after_in_child", f) : NULL;
		PyObject *reg = posix ? PyObject_GetAttrString(posix, "register_at_fork") : NULL;
		PyObject *args = PyTuple_New(0);
		PyObject *r = reg && kw && args ? PyObject_Call(reg, args, kw) : NULL;
		CHECK(r != NULL);
		if (r == NULL)
			PyErr_Print();
		Py_XDECREF(r), Py_XDECREF(args), Py_XDECREF(reg), Py_XDECREF(kw), Py_XDECREF(f);
	}
	CHECK_EQ_INT((int)tp_pyfork_hooks_left(), 2);
	CHECK_EQ_INT(tp_pyfork_seal(), 0);
	CHECK_EQ_INT((int)tp_pyfork_hooks_left(), 1); /* the other generator's stays */
	/* ... and runs in a worker (its after-fork work is not skipped): the other
	 * generator is reseeded there. */
	PyObject *state = other ? PyObject_CallMethod(other, "getstate", NULL) : NULL;
	CHECK(state != NULL);
	int st = 0;
	pid_t pid = fork();
	if (pid == 0) {
		tp_lang_python.worker_init(5);
		PyObject *now = PyObject_CallMethod(other, "getstate", NULL);
		_exit(now != NULL && PyObject_RichCompareBool(now, state, Py_NE) == 1 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	Py_XDECREF(state);
	Py_XDECREF(inst), Py_XDECREF(other), Py_XDECREF(random), Py_XDECREF(posix);
	/* A worker still runs and draws its own stream after the seal. */
	run("import random\nrandom.random() < 1.0");
	CHECK(json_is_true(json_object_get(R.reply, "value")));
}

/* After the zygote's clone a worker re-creates CPython's locks and thread
 * states only when the zygote held another thread state (pysandbox.c's worker
 * init): then PyOS_AfterFork_Child deletes it and leaks each lock it replaces
 * (the RAW allocator's count moves). With the zygote's one thread nothing is
 * re-created (the count does not move: the reseed gives back all it takes),
 * and the worker's thread, locks and imports work as they do. */
static int after_fork_child(void)
{
	size_t before = tp_pyalloc_stats()->current;
	tp_lang_python.worker_init(7);
	long moved = (long)tp_pyalloc_stats()->current - (long)before;
	PyThreadState *head = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
	int alone = head == PyThreadState_Get() && PyThreadState_Next(head) == NULL;
	/* The logging module's locks (RLocks: owned by the thread's ident) and
	 * imports (the import lock, each module's lock). */
	run("import logging, io, difflib, calendar, fractions\n"
	    "s = io.StringIO()\n"
	    "g = logging.getLogger('t')\n"
	    "g.addHandler(logging.StreamHandler(s))\n"
	    "g.warning('w')\n"
	    "[s.getvalue(), str(fractions.Fraction(1, 4)), calendar.isleap(2024)]");
	char *v = json_dumps(json_object_get(R.reply, "value"), JSON_COMPACT | JSON_ENCODE_ANY);
	int works = v != NULL && strcmp(v, "[\"w\\n\",\"1/4\",true]") == 0;
	if (!works)
		fprintf(stderr, "# after fork: %s\n", v ? v : "(none)");
	free(v);
	return !alone ? 1 : !works ? 2 : moved == 0 ? 0 : 10;
}

static void test_after_fork(void)
{
	int st = 0;
	pid_t pid = fork();
	if (pid == 0)
		_exit(after_fork_child());
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0); /* nothing re-created */

	PyThreadState *other = PyThreadState_New(PyInterpreterState_Main());
	CHECK(other != NULL);
	pid = fork();
	if (pid == 0)
		_exit(after_fork_child());
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 10); /* re-created, and alone */
	if (other != NULL) {
		PyThreadState_Clear(other);
		PyThreadState_Delete(other);
	}
}

static void test_crash(void)
{
#ifdef TP_SANITIZE
	/* ASan's quarantine keeps the freed buffer mapped in this test process, so
	 * the use-after-free does not fault here; the protocol suite checks the same
	 * crash through real workers, which run with a small quarantine. */
	return;
#endif
	run("class X:\n    def __index__(self):\n        ba.clear()\n        return 0\n"
	    "ba = bytearray(2 ** 22)\nba.count(X())");
	CHECK(R.reply == NULL);
	CHECK_EQ_INT(R.exit_code, -1); /* SIGSEGV reaches the host as a signal */
}

/* A worker's rehearsal (worker.c) leaves nothing an exec can see: the same
 * reply (globals, random stream, output, memory peak, errors) with or without
 * it, no module imported and next to no memory held. */
static void test_rehearsal(void)
{
	static const char *const codes[] = {
		"sorted(dir())",
		"import random\n[random.random(), random.randrange(1000)]",
		"print('x')\nlen([1, 2, 3])",
		"xs",
		"ys = [0] * 1000\nlen(ys)",
		"1+1",
		"x = 1\nx",
	};
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
		json_t *plain, *usage;
		char out[sizeof R.out];
		run(codes[i]);
		plain = json_deep_copy(R.reply);
		memcpy(out, R.out, sizeof out);
		harness_rehearse = 1;
		run(codes[i]);
		harness_rehearse = 0;
		/* CPU time differs from run to run; everything else must not. */
		usage = json_object_get(plain, "usage");
		json_object_del(usage, "cpu_ms");
		json_object_del(json_object_get(R.reply, "usage"), "cpu_ms");
		int same = json_equal(plain, R.reply);
		CHECK(same);
		if (!same) {
			char *a = json_dumps(plain, 0), *b = json_dumps(R.reply, 0);
			fprintf(stderr, "# %s\n#   plain:     %s\n#   rehearsed: %s\n", codes[i], a,
				b);
			free(a), free(b);
		}
		CHECK_EQ_STR(R.out, out);
		json_decref(plain);
	}

	pid_t pid = fork();
	if (pid == 0) {
		struct tp_limits l = limits();
		tp_lang_python.worker_init(1);
		PyObject *before = PyDict_Keys(PyImport_GetModuleDict()), *after;
		size_t mem = tp_pyalloc_stats()->current;
		tp_worker_rehearse(&tp_lang_python, &l, NULL);
		after = PyDict_Keys(PyImport_GetModuleDict());
		int same = before && after && PyObject_RichCompareBool(before, after, Py_EQ) == 1;
		/* What stays is the interpreter's (free lists, interned names: < 1 KiB);
		 * an exec's memory counts from its own start, so its figures are the
		 * same (above). */
		int held = tp_pyalloc_stats()->current > mem + 4096;
		/* A rehearsal that would import a module the zygote did not load (a
		 * real import, under a policy without a language layer) is skipped. */
		struct tp_request miss = { .code = "import antigravity\n1",
					   .code_len = 21,
					   .limits = l,
					   .rehearsal = 1 },
				  hit = { .code = "import json\n1",
					  .code_len = 13,
					  .limits = l,
					  .rehearsal = 1 };
		struct tp_reply out = { 0 };
		int skipped = tp_lang_python.exec(&miss, shm, &out) == -1;
		int ran = tp_lang_python.exec(&hit, shm, &out) == 0 && out.ok;
		tp_reply_free(&out);
		_exit(!same ? 1 : held ? 2 : !skipped || !ran ? 3 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

/* Whether the page at addr is resident in this process (/proc/self/pagemap:
 * bit 63 present, bit 62 swapped); -1 when it cannot be read. */
static int resident(int pagemap, uintptr_t addr)
{
	uint64_t e;
	if (pread(pagemap, &e, sizeof e, (off_t)(addr / 4096 * sizeof e)) != (ssize_t)sizeof e)
		return -1;
	return (e >> 62) != 0;
}

/* The zygote's pools settled (pyalloc.c): a worker's small objects land in
 * pages the zygote never touched, but for one page per size class (the fresh
 * pool's header page). A zygote is forked from this process and settles; its
 * worker allocates 200 blocks of every class and names their pages; the zygote
 * counts which of them it has resident itself: those the worker copied. */
static void test_settle(void)
{
	int fds[2];
	pid_t z;

	if (pipe(fds) != 0 || (z = fork()) < 0) {
		CHECK(0);
		return;
	}
	if (z == 0) {
		close(fds[0]);
		tp_pyalloc_settle();
		int p2[2];
		if (tp_pyalloc_settled() == 0 || pipe(p2) != 0)
			_exit(10);
		pid_t w = fork();
		if (w == 0) {
			uintptr_t last = 0;
			close(p2[0]);
			for (size_t size = 16; size <= 512; size += 16)
				for (int k = 0; k < 200; k++) {
					uintptr_t page =
					    (uintptr_t)PyObject_Malloc(size) & ~(uintptr_t)4095;
					if (page != last && write(p2[1], &page, sizeof page) !=
								(ssize_t)sizeof page)
						_exit(1);
					last = page;
				}
			_exit(0);
		}
		close(p2[1]);
		static uintptr_t pages[1 << 14];
		size_t n = 0, copied = 0, distinct = 0;
		while (n < sizeof pages / sizeof *pages &&
		       read(p2[0], &pages[n], sizeof *pages) == (ssize_t)sizeof *pages)
			n++;
		int st = 0, pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		waitpid(w, &st, 0);
		for (size_t i = 0; i < n; i++) {
			int seen = 0;
			for (size_t j = 0; j < i && !seen; j++)
				seen = pages[j] == pages[i];
			if (seen)
				continue;
			distinct++;
			copied += resident(pm, pages[i]) == 1;
		}
		fprintf(stderr,
			"# settle: %zu blocks taken; the worker's blocks on %zu pages, "
			"%zu of them the zygote's\n",
			tp_pyalloc_settled(), distinct, copied);
		_exit(pm < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ? 11
		      : distinct < 300                                 ? 12
		      : copied > 40                                    ? 13
								       : 0);
	}
	close(fds[1]);
	close(fds[0]);
	int st = 0;
	waitpid(z, &st, 0);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

int main(void)
{
	if (harness_setup(&tp_lang_python) != 0)
		return 1;
	CHECK_EQ_STR(tp_langs[tp_lang_python.id].name, "python");
	test_ok();
	test_repr();
	test_errors();
	test_policy();
	test_fast_path();
	test_cpu();
	test_output();
	test_crash();
	test_after_fork();
	test_rehearsal();
	test_prepare_text();
	test_settle();
	harness_conformance();
	test_fork_hooks(); /* last: it leaves one hook registered */
	json_decref(R.reply);
	return tp_test_done("test_py");
}
