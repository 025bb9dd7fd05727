/*
 * pysandbox.c — the Python layer's entry points (struct tp_lang): interpreter
 * and shim in the zygote, the after-fork reseed in a worker, one exec (with its
 * fast path) and its reply. Invariant: the reply's kind comes from the sticky
 * verdict (pyguard.c), never from an exception the snippet could raise itself.
 * Layer (pyint.h): the top; it calls the files under it, and none of them calls it.
 */
#include "pyint.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyaddr.h"
#include "pysandbox.h"
#include "pyalloc.h"
#include "pyfork.h"
#include "pyjson.h"
#include "policy_catalog.h"
#include "pyshim.h"

#define RECURSION_LIMIT 200 /* frames while snippet code runs (Python + C) */

/* The language layer's own state, one instance. The first group is written
 * once, in the zygote (tp_py_zygote_init: load_shim), and only read by the
 * execs forked from it; the others change per exec, each saying by whom. The
 * signal handlers' flags are pyguard.c's volatile sig_atomic_t globals. */
static struct {
	/* -- zygote (load_shim): the shim and what the execs take from it */
	PyObject *shim;      /* the shim's globals; NULL until the zygote is made */
	PyObject *sbuiltins; /* the builtins dict every snippet gets */
	PyObject *prepare, *reseed, *opened;
	/* random's own generator and the C seed under its seed() (find_seed) */
	PyObject *seed_c, *rand_inst, *gauss_next;
	PyObject *sys_stdout, *sys_stderr; /* the real sys's streams (the shim's) */
	char **deny;                       /* the shim's ATTR_DENY, for the text path's check */
	size_t ndeny;
	char **dunder_ok; /* the shim's DUNDER_OK, the same */
	size_t ndunder_ok;

	/* -- zygote (load_shim): the data preset's hooks in the shim (NULL without
	 * the data packages): the types whose values the shim converts (numpy
	 * arrays and scalars, pandas frames and series), its converter, and the
	 * figures' collector and reset */
	PyObject *rich_types, *rich, *figures, *figures_reset;

	/* -- per exec (new_globals, make_main): this exec's __main__ module (made
	 * in the zygote, replaced by an exec that finds it used), and whether it
	 * is still the zygote's, unused (set by load_shim, cleared by new_globals) */
	PyObject *main;
	int main_fresh;

	/* -- per rehearsal (worker.c): its globals, set by new_globals and
	 * dropped when it ends (tp_py_exec) */
	PyObject *rehearsal_globals;

	/* -- per session (new_globals, begin): a session's first exec ran, so
	 * its globals are main's; and the heap before that first exec */
	int session_started;
	size_t session_base;
} G;

/* ---- one exec ------------------------------------------------------------------------------ */

static PyObject *make_main(void)
{
	PyObject *m = PyModule_New("__main__"), *d;

	if (m == NULL)
		return NULL;
	d = PyModule_GetDict(m);
	/* sys.modules["__main__"] is the snippet's module, so dataclasses and typing
	 * resolve the snippet's names (and builtins) there, never the zygote's. */
	if (PyDict_SetItemString(d, "__builtins__", G.sbuiltins) != 0 ||
	    PyDict_SetItemString(PyImport_GetModuleDict(), "__main__", m) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_XSETREF(G.main, m);
	return d;
}

/* The exec's globals. A worker runs one exec: it takes the module the zygote
 * made (in the frozen heap, already in sys.modules), so an exec creates and
 * registers nothing; a second exec in the same process gets a new one. A
 * session's execs all share the first one's. */
static PyObject *new_globals(int session, int rehearsal)
{
	/* A rehearsal's globals are its own: a dict like __main__'s that no module
	 * holds, dropped after it (the zygote's __main__ stays fresh). */
	if (rehearsal) {
		PyObject *d = PyDict_New(), *name = PyUnicode_FromString("__main__");
		if (d == NULL || name == NULL ||
		    PyDict_SetItemString(d, "__builtins__", G.sbuiltins) != 0 ||
		    PyDict_SetItemString(d, "__name__", name) != 0)
			Py_CLEAR(d);
		Py_XDECREF(name);
		Py_XSETREF(G.rehearsal_globals, d);
		return d;
	}
	if (session && G.session_started && G.main != NULL)
		return PyModule_GetDict(G.main);
	G.session_started = session;
	if (G.main_fresh && G.main != NULL) {
		G.main_fresh = 0;
		return PyModule_GetDict(G.main);
	}
	G.main_fresh = 0;
	return make_main();
}

static int set_inputs(PyObject *globals, const struct tp_request *req)
{
	const json_t *obj = req->inputs;

	if (obj == NULL || json_is_null(obj))
		return 0;
	if (!json_is_object(obj)) {
		PyErr_SetString(PyExc_ValueError, "inputs must be an object");
		return -1;
	}
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		const char *key = json_object_iter_key(it);
		size_t klen = json_object_iter_key_len(it);
		PyObject *k = PyUnicode_DecodeUTF8(key, (Py_ssize_t)klen, "strict"), *v;
		if (k == NULL)
			return -1;
		if (!PyUnicode_IsIdentifier(k) || (klen >= 4 && key[0] == '_' && key[1] == '_')) {
			PyErr_Format(PyExc_ValueError, "input name %R is not a plain identifier",
				     k);
			Py_DECREF(k);
			return -1;
		}
		v = tp_pyjson_to_py(json_object_iter_value(it), tp_py_lim.result_depth);
		if (v == NULL || PyDict_SetItem(globals, k, v) != 0) {
			Py_DECREF(k), Py_XDECREF(v);
			return -1;
		}
		Py_DECREF(k), Py_DECREF(v);
	}
	return 0;
}

/* random.seed(seed) on the random module's own generator, as the shim's
 * reseed() would, without its Python frames: Random.seed with an int is
 * _random.Random.seed(inst, seed) and then inst.gauss_next = None. In a fresh
 * worker those frames were ~15 copy-on-write faults. Without the C pieces
 * (a random module that is not CPython's) the shim's reseed() runs. */
static void reseed(uint64_t seed)
{
	PyObject *n = PyLong_FromUnsignedLongLong(seed), *r = NULL;

	if (n != NULL && G.seed_c != NULL) {
		r = PyObject_CallFunctionObjArgs(G.seed_c, G.rand_inst, n, NULL);
		if (r != NULL && PyObject_SetAttr(G.rand_inst, G.gauss_next, Py_None) != 0)
			Py_CLEAR(r);
	} else if (n != NULL) {
		r = PyObject_CallOneArg(G.reseed, n);
	}
	Py_XDECREF(n);
	if (r == NULL)
		PyErr_Clear();
	Py_XDECREF(r);
}

/* The C pieces of reseed(), found in the zygote: random._inst must be an
 * exact random.Random whose seed is the module's own Python method, whose
 * base is _random.Random; otherwise reseed() keeps calling the shim. */
static void find_seed(void)
{
	PyObject *random = PyImport_ImportModule("random"),
		 *crandom = PyImport_ImportModule("_random");
	PyObject *cls = random ? PyObject_GetAttrString(random, "Random") : NULL;
	PyObject *inst = random ? PyObject_GetAttrString(random, "_inst") : NULL;
	PyObject *cbase = crandom ? PyObject_GetAttrString(crandom, "Random") : NULL;
	PyObject *py_seed = cls && PyType_Check(cls)
				? PyDict_GetItemString(((PyTypeObject *)cls)->tp_dict, "seed")
				: NULL;
	PyObject *c_seed = cbase && PyType_Check(cbase)
			       ? PyDict_GetItemString(((PyTypeObject *)cbase)->tp_dict, "seed")
			       : NULL;

	PyErr_Clear();
	if (inst != NULL && cls != NULL && cbase != NULL && Py_TYPE(inst) == (PyTypeObject *)cls &&
	    ((PyTypeObject *)cls)->tp_base == (PyTypeObject *)cbase && py_seed != NULL &&
	    PyFunction_Check(py_seed) && c_seed != NULL &&
	    Py_IS_TYPE(c_seed, &PyMethodDescr_Type) &&
	    (G.gauss_next = PyUnicode_InternFromString("gauss_next")) != NULL) {
		G.seed_c = Py_NewRef(c_seed);
		G.rand_inst = Py_NewRef(inst);
	}
	PyErr_Clear();
	Py_XDECREF(cbase);
	Py_XDECREF(inst);
	Py_XDECREF(cls);
	Py_XDECREF(crandom);
	Py_XDECREF(random);
}

static void begin(const struct tp_request *req, struct tp_shm *shm)
{
	tp_py_shm = shm;
	tp_py_req = req;
	/* A snippet that left contextlib.redirect_stdout open in a session's
	 * earlier exec does not take this one's output. */
	if (G.sys_stdout != NULL && G.sys_stderr != NULL &&
	    (PySys_SetObject("stdout", G.sys_stdout) != 0 ||
	     PySys_SetObject("stderr", G.sys_stderr) != 0))
		PyErr_Clear();
	tp_py_lim = req->limits;
	tp_py_pending = 0;
	tp_py_count = 0;
	tp_py_policy_msg[0] = '\0';
	tp_py_policy_line = -1;
	tp_py_kernel_begin();
	tp_shm_begin(shm, req->limits.output_bytes);
	if (req->has_seed)
		reseed(req->seed); /* before the memory limit: it must not fail */
	tp_py_base = tp_pyalloc_stats()->current;
	/* A session's state is held across its execs: its memory counts from the
	 * heap before its first exec, not from what the last one left. */
	if (req->session && !G.session_started)
		G.session_base = tp_py_base;
	if (req->session)
		tp_py_base = G.session_base;
	tp_pyalloc_reset_peak();
	/* memory_bytes bounds what the exec (or the session) adds to the pristine
	 * interpreter. Without a language layer the kernel bounds it (RLIMIT_AS:
	 * verdict.h): the allocator only measures, and a refusal is a malloc the
	 * kernel failed (tp_py_on_refuse). */
	if (tp_py_lim.memory_bytes != 0 && !tp_py_kernel_only)
		tp_pyalloc_set_limit(tp_py_base + tp_py_lim.memory_bytes);
	tp_py_limits_on = 1;
	tp_py_armed = 1;
	tp_py_publish_usage(shm);
	tp_verdict_begin(shm, &tp_py_lim, &tp_py_verdict_ops);
}

/* After the snippet: no timer, no trace, no limit, no tripwire from here on. */
static void end_run(void)
{
	tp_verdict_end();
	tp_py_req = NULL;
	tp_py_running = 0;
	tp_py_trace_off();
	Py_SetRecursionLimit(1000);
	tp_py_armed = 0;
	tp_py_limits_on = 0;
	tp_pyalloc_set_limit(0);
	PyErr_Clear();
}

/* A repr as the value, cut to fit result_bytes as a JSON string. */
static json_t *repr_json(PyObject *r)
{
	PyObject *cut;
	json_t *j;
	Py_ssize_t k;

	k = PyUnicode_GET_LENGTH(r);
	for (;;) {
		cut = PyUnicode_Substring(r, 0, k);
		j = cut ? tp_pyjson_str(cut) : NULL;
		Py_XDECREF(cut);
		if (j == NULL || tp_pyjson_size(j) + 3 <= tp_py_lim.result_bytes || k == 0)
			break;
		json_decref(j);
		k = k * 3 / 4; /* escapes make bytes per character vary: shrink until it fits */
	}
	return j;
}

/* The value's repr, cut to fit result_bytes (repr runs snippet code: limits on). */
static json_t *repr_value(PyObject *v)
{
	PyObject *r = PyObject_Repr(v);
	json_t *j = r != NULL ? repr_json(r) : NULL;

	Py_XDECREF(r);
	return j;
}

struct result {
	json_t *value; /* a repr value, or NULL: then json, or None */
	char *json;    /* the value's compact JSON text (tp_pyjson_write), malloc'd, or NULL */
	size_t json_n;
	int text_is_value; /* the text is json itself (TEXT_SAME_MIN) */
	json_t *nonfinite; /* {JSON pointer: "nan"|"inf"|"-inf"} of value, or NULL */
	int is_repr;
	const char *fail; /* why the value could not be sent (result_error) */
	struct failure
	    repr; /* the exception repr() (or a figure's drawing) raised, if that was why */
	struct tp_text text; /* the value as a REPL shows it (malloc'd), absent for None */
	int text_cut;
	struct tp_text images[TP_MSG_MAX_IMAGES]; /* PNGs (malloc'd) */
	unsigned nimages;
};

/* A str as UTF-8 (lone surrogates as U+FFFD), cut at a character boundary to
 * at most max bytes; -1 out of memory. */
static int text_of(PyObject *str, uint64_t max, struct tp_text *t, int *cut)
{
	json_t *j = tp_pyjson_str(str);
	size_t n;

	if (j == NULL)
		return -1;
	n = json_string_length(j);
	*cut = n > max;
	if (*cut) {
		n = (size_t)max;
		while (n > 0 && ((unsigned char)json_string_value(j)[n] & 0xc0) == 0x80)
			n--; /* not inside a character */
	}
	t->s = malloc(n + 1);
	if (t->s != NULL) {
		memcpy(t->s, json_string_value(j), n);
		t->s[n] = '\0';
		t->n = n;
	}
	json_decref(j);
	return t->s != NULL ? 0 : -1;
}

/* The value's text: its repr (snippet code may run: limits on), as a REPL
 * prints it; nothing for None, which a REPL does not print. */
static void value_text(PyObject *v, struct result *res, const struct tp_request *req)
{
	PyObject *r;

	if (v == Py_None)
		return;
	r = PyObject_Repr(v);
	if (r == NULL || text_of(r, tp_py_lim.result_bytes, &res->text, &res->text_cut) != 0) {
		if (r == NULL)
			tp_py_capture(&res->repr, ST_RUN, req);
		free(res->json);
		res->json = NULL;
		res->fail = "repr() failed";
	}
	Py_XDECREF(r);
}

static int is_rich(PyObject *v)
{
	Py_ssize_t n = G.rich_types != NULL ? PyTuple_GET_SIZE(G.rich_types) : 0;
	for (Py_ssize_t i = 0; i < n; i++)
		if (PyObject_TypeCheck(v, (PyTypeObject *)PyTuple_GET_ITEM(G.rich_types, i)))
			return 1;
	return 0;
}

/* A numpy or pandas value: the shim's (value, text). The value as JSON when it
 * converts within the caps (a frame's records), else the text is the value,
 * as any other value's repr is. */
static void convert_rich(PyObject *v, struct result *res, const struct tp_request *req)
{
	struct tp_pyjson_caps caps = { tp_py_lim.result_depth, tp_py_lim.result_bytes, 1 };
	struct tp_pyjson_out out;
	PyObject *lim = PyLong_FromUnsignedLongLong(tp_py_lim.result_bytes);
	PyObject *t = lim ? PyObject_CallFunctionObjArgs(G.rich, v, lim, NULL) : NULL;

	Py_XDECREF(lim);
	if (t == NULL || !PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 ||
	    !PyUnicode_Check(PyTuple_GET_ITEM(t, 1))) {
		if (t == NULL)
			tp_py_capture(&res->repr, ST_RUN, req);
		Py_XDECREF(t);
		res->fail = "repr() failed";
		return;
	}
	if (PyTuple_GET_ITEM(t, 0) != Py_None) {
		tp_pyjson_write(PyTuple_GET_ITEM(t, 0), &caps, &out);
		if (out.fail == TP_PYJSON_OK) {
			res->json = out.json, res->json_n = out.json_n;
			res->nonfinite = out.nonfinite;
			if (text_of(PyTuple_GET_ITEM(t, 1), tp_py_lim.result_bytes, &res->text,
				    &res->text_cut) != 0) {
				free(res->json);
				res->json = NULL;
				res->fail = "out of memory";
			}
			Py_DECREF(t);
			return;
		}
	}
	res->value = repr_json(PyTuple_GET_ITEM(t, 1));
	res->is_repr = 1;
	if (res->value == NULL)
		res->fail = "out of memory";
	Py_DECREF(t);
}

/* The figures the snippet showed or left open, as PNGs: with stdout and
 * stderr within output_bytes, else the exec's output_limit. Drawing runs
 * matplotlib and the snippet's callbacks: under the limits. */
static void figures(struct result *res, const struct tp_request *req)
{
	PyObject *l = PyObject_CallNoArgs(G.figures);
	Py_ssize_t n;
	uint64_t used;

	if (l == NULL || !PyList_Check(l)) {
		if (l == NULL)
			tp_py_capture(&res->repr, ST_RUN, req);
		Py_XDECREF(l);
		json_decref(res->value);
		res->value = NULL;
		free(res->json);
		res->json = NULL;
		res->fail = "a figure could not be drawn";
		return;
	}
	n = PyList_GET_SIZE(l);
	used = (uint64_t)tp_py_shm->len[0] + tp_py_shm->len[1];
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *b = PyList_GET_ITEM(l, i);
		used += PyBytes_Check(b) ? (uint64_t)PyBytes_GET_SIZE(b) : 0;
	}
	if (used > tp_py_lim.output_bytes || (size_t)n > TP_MSG_MAX_IMAGES) {
		Py_DECREF(l);
		if (used > tp_py_lim.output_bytes)
			tp_py_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_OUTPUT_BYTES,
				   tp_py_lim.output_bytes, used);
		else
			res->fail = "more than " TP_STR(
			    TP_MSG_MAX_IMAGES) " figures: close some "
					       "(plt.close) or draw them as subplots of one";
		return;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *b = PyList_GET_ITEM(l, i);
		struct tp_text *img = &res->images[res->nimages];
		if (!PyBytes_Check(b) || (img->s = malloc((size_t)PyBytes_GET_SIZE(b))) == NULL)
			continue;
		img->n = (size_t)PyBytes_GET_SIZE(b);
		memcpy(img->s, PyBytes_AS_STRING(b), img->n);
		res->nimages++;
	}
	Py_DECREF(l);
}

/* Above this many bytes of JSON, a list's, tuple's or dict's text is its
 * JSON rather than its repr: the same content, rendered once. */
#define TEXT_SAME_MIN 4096

static void convert(PyObject *v, struct result *res, const struct tp_request *req)
{
	static char message[TP_PYJSON_MESSAGE_MAX];
	struct tp_pyjson_caps caps = { tp_py_lim.result_depth, tp_py_lim.result_bytes, 1 };
	struct tp_pyjson_out out;

	if (is_rich(v)) {
		convert_rich(v, res, req);
		return;
	}
	tp_pyjson_write(v, &caps, &out);
	switch (out.fail) {
	case TP_PYJSON_OK:
		res->json = out.json, res->json_n = out.json_n;
		res->nonfinite = out.nonfinite;
		/* A large list or dict: its text is its JSON, which crosses once, not
		 * a second full rendering (docs/python.md, "Value and errors"). Not
		 * where a NaN or an infinity is a null in the JSON: the repr shows it. */
		if (out.json_n > TEXT_SAME_MIN && out.nonfinite == NULL &&
		    (PyList_Check(v) || PyTuple_Check(v) || PyDict_Check(v)))
			res->text_is_value = 1;
		else
			value_text(v, res, req);
		return;
	case TP_PYJSON_DEPTH:
		tp_py_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_DEPTH, caps.depth, out.used);
		return;
	case TP_PYJSON_BYTES:
		tp_py_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_BYTES, caps.bytes, out.used);
		return;
	case TP_PYJSON_CYCLE: res->fail = "cycle in returned value"; return;
	case TP_PYJSON_KEYS:
	case TP_PYJSON_NUMBER:
		memcpy(message, out.message, sizeof message);
		res->fail = message;
		return;
	case TP_PYJSON_NOTJSON:
		res->value = repr_value(v);
		res->is_repr = 1;
		if (res->value == NULL) {
			tp_py_capture(&res->repr, ST_RUN, req);
			res->fail = "repr() failed";
		}
		return;
	default: res->fail = "the value could not be converted";
	}
}

/* sys.exit(), exit(), sys.exit(0), raise SystemExit(None/0/False): the snippet
 * ended as it chose, a success with no value (docs/python.md, "Exit"). A
 * nonzero or text code stays the runtime error SystemExit, as a shell sees it. */
static int exited_ok(void)
{
	PyObject *t, *v, *tb, *code;
	int ok;

	if (tp_py_verdict() || !PyErr_ExceptionMatches(PyExc_SystemExit))
		return 0;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	code = v != NULL ? ((PySystemExitObject *)v)->code : NULL;
	ok = code == NULL || code == Py_None ||
	     (PyLong_CheckExact(code) || PyBool_Check(code) ? PyObject_Not(code) == 1 : 0);
	if (ok) {
		Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
		return 1;
	}
	PyErr_Restore(t, v, tb);
	return 0;
}

static void run(PyObject *globals, PyObject *prepared, struct result *res, struct failure *f,
		const struct tp_request *req)
{
	PyObject *body = PyTuple_GET_ITEM(prepared, 0), *expr = PyTuple_GET_ITEM(prepared, 1);
	PyObject *r;

	tp_py_running = 1;
	Py_SetRecursionLimit(RECURSION_LIMIT);
	if (tp_py_lim.instructions != 0)
		tp_py_trace_on();      /* before the first line of the snippet */
	if (G.figures_reset != NULL) { /* what an earlier exec of a session left */
		r = PyObject_CallNoArgs(G.figures_reset);
		if (r == NULL)
			PyErr_Clear();
		Py_XDECREF(r);
	}
	r = body == Py_None ? (Py_INCREF(Py_None), Py_None)
			    : PyEval_EvalCode(body, globals, globals);
	if (r != NULL && expr != Py_None) {
		Py_DECREF(r);
		r = PyEval_EvalCode(expr, globals, globals);
	}
	if (r == NULL && exited_ok())
		r = Py_NewRef(Py_None);
	if (r == NULL)
		tp_py_capture(f, ST_RUN, req);
	else if (!tp_py_verdict())
		convert(r, res, req);
	if (r != NULL && G.figures != NULL && !tp_py_verdict() && res->fail == NULL)
		figures(res, req);
	Py_XDECREF(r);
}

static void usage(struct tp_usage *u)
{
	u->instructions = tp_py_lim.instructions ? tp_py_count : 0;
	u->memory_peak_bytes = tp_py_mem_peak();
	u->cpu_us = tp_verdict_cpu_us();
}

static int verdict_failure(const struct failure *f, struct tp_failure *out)
{
	int policy = tp_py_verdict() == TP_KIND_POLICY_VIOLATION ||
		     tp_py_verdict() == TP_KIND_SANDBOX_VIOLATION;
	/* A refusal's line is where it was refused, also when the snippet caught it
	 * and the verdict was raised again further on. */
	int line = policy && tp_py_policy_line > 0 ? tp_py_policy_line : f->line;

	if (tp_py_verdict() == TP_KIND_SANDBOX_VIOLATION) { /* kernel-only: pykernel.c */
		json_t *m = json_string(tp_py_policy_msg);
		int rc = m ? tp_verdict_failure(out, TP_KIND_SANDBOX_VIOLATION, NULL, m,
						f->traceback, line)
			   : -1;
		json_decref(m);
		out->column = line == f->line ? f->column : 0;
		return rc;
	}
	int rc = tp_verdict_tripped_failure(out, tp_py_policy_msg, f->traceback, line);
	out->column = line == f->line ? f->column : 0;
	return rc;
}

static int failure_failure(const struct failure *f, enum tp_kind kind, struct tp_failure *out)
{
	if (f->stage == ST_INPUTS)
		return tp_verdict_failure(out, TP_KIND_INPUT_ERROR, NULL, f->message, NULL, -1);
	int rc = tp_verdict_failure(out, kind, f->type, f->message, f->traceback, f->line);
	out->column = f->column;
	return rc;
}

static int result_failure(const struct result *res, struct tp_failure *out)
{
	json_t *m;
	int rc;

	if (res->repr.set) { /* the snippet's own __repr__ raised: its runtime error */
		rc = tp_verdict_failure(out, TP_KIND_RUNTIME_ERROR, res->repr.type,
					res->repr.message, res->repr.traceback, res->repr.line);
		out->column = res->repr.column;
		return rc;
	}
	m = json_string(res->fail);
	rc = tp_verdict_failure(out, TP_KIND_RESULT_ERROR, NULL, m, NULL, -1);
	json_decref(m);
	return rc;
}

static int reply(const struct failure *f, struct result *res, struct tp_reply *out)
{
	memset(out, 0, sizeof *out);
	tp_py_publish_usage(tp_py_shm);
	usage(&out->usage);
	if (tp_py_verdict() || f->set || res->fail || (res->value == NULL && res->json == NULL)) {
		json_decref(res->value);
		res->value = NULL;
		free(res->json);
		res->json = NULL;
		json_decref(res->nonfinite);
		res->nonfinite = NULL;
	}
	if (tp_py_verdict())
		return verdict_failure(f, &out->error);
	if (f->set)
		return failure_failure(f, f->syntax ? TP_KIND_SYNTAX_ERROR : TP_KIND_RUNTIME_ERROR,
				       &out->error);
	if (res->fail)
		return result_failure(res, &out->error);
	out->ok = 1;
	if (res->json != NULL) { /* sent as written, no tree */
		out->value_json = res->json, out->value_json_n = res->json_n;
		out->text_is_value = res->text_is_value;
		res->json = NULL;
	} else {
		out->value = res->value ? res->value : json_null();
	}
	out->value_repr = res->is_repr;
	res->value = NULL;
	out->nonfinite = res->nonfinite; /* NULL for none */
	res->nonfinite = NULL;
	out->text = res->text, out->text_cut = res->text_cut;
	res->text.s = NULL;
	memcpy(out->images, res->images, sizeof out->images);
	out->nimages = res->nimages;
	res->nimages = 0;
	return out->value != NULL || out->value_json != NULL ? 0 : -1;
}

/* ---- the fast path: a plain source, no AST check needed ----------------------------------- */

#define FAST_MAX 4096 /* longer sources take the shim's path */

/* True when the shim's AST check cannot refuse anything in this source, read as
 * text, provided the scan below (last_statement) also passes it: ASCII (NFKC
 * changes nothing, every identifier is spelled out), no ATTR_DENY name anywhere,
 * no NUL, and no '\r', '\f' or '\v' (a line break or an indentation the scan
 * would not read as the tokenizer does). The scan allows a backslash only in a
 * string, and there (but in a raw one) only before n, t, r, a backslash or a
 * quote, which make no identifier character, no '.' and no '{': so the names
 * in each string constant are spelled in the text as they stand. The scan checks what the AST check
 * looks at: each dunder name in code is one of DUNDER_OK, which the check allows as a name and as
 * an attribute read or written; a name starting "__" never shares a logical line with `import` (the
 * check refuses it as an import alias); an f-string or a string with a '{' (a format string, whose
 * fields may read no attribute starting '_') holds no "._" and no other dunder; and no string
 * constant is made of pieces (adjacent literals, a string literal inside an
 * f-string), so a format field can only read what the text spells. Anything
 * else is not refused here: it only takes the full path. */
static int text_is_plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0 || c >= 0x80 || c == '\r' || c == '\f' || c == '\v')
			return 0;
	}
	for (size_t i = 0; i < G.ndeny; i++)
		if (memmem(s, n, G.deny[i], strlen(G.deny[i])) != NULL)
			return 0;
	return 1;
}

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* A string prefix (r, b, u, f, in either case, at most two of them). */
static int string_prefix(const char *s, size_t n, int *fstring, int *raw)
{
	*fstring = *raw = 0;
	if (n == 0 || n > 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = (char)(s[i] | 0x20);
		if (c != 'r' && c != 'b' && c != 'u' && c != 'f')
			return 0;
		*fstring |= c == 'f';
		*raw |= c == 'r';
	}
	return 1;
}

/* The word at s[0 .. n) is w, and ends there. */
static int word_is(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	return k <= n && memcmp(s, w, k) == 0 && (k == n || !ident_char(s[k]));
}

/* s[0 .. n), a run of identifier characters, is no dunder name, or one the AST
 * check allows everywhere (DUNDER_OK); *under: it starts with "__". */
static int dunder_ok(const char *s, size_t n, int *under)
{
	*under |= n >= 2 && s[0] == '_' && s[1] == '_';
	if (!(n >= 2 && s[0] == '_' && s[1] == '_' && s[n - 2] == '_' && s[n - 1] == '_'))
		return 1;
	for (size_t i = 0; i < G.ndunder_ok; i++)
		if (strlen(G.dunder_ok[i]) == n && memcmp(G.dunder_ok[i], s, n) == 0)
			return 1;
	return 0;
}

/* The runs of identifier characters in s[0 .. n) pass dunder_ok. */
static int runs_ok(const char *s, size_t n, int *under)
{
	for (size_t i = 0; i < n;) {
		size_t w = i;
		while (w < n && ident_char(s[w]))
			w++;
		if (w > i && !dunder_ok(s + i, w - i, under))
			return 0;
		i = w > i ? w : i + 1;
	}
	return 1;
}

/* The offset of the last top-level statement of a plain source (text_is_plain),
 * read as Python's tokenizer reads it: a logical line that starts at column 0,
 * outside brackets and strings, starts a statement, unless it carries on a
 * compound one (else, elif, except, finally) or follows a decorator. -1 when the
 * text is outside what this scan reads exactly, and the full path runs: a ';'
 * outside brackets and strings (`if a: b; c` puts c in the if), adjacent string
 * literals (their constant is made of pieces), a quote inside an f-string (a
 * string literal in its expressions), a string or a bracket left open, a
 * bracket closed that was not open. */
static long last_statement(const char *s, size_t n)
{
	size_t i = 0, line = 0; /* line: where the current physical line starts */
	long start = 0;
	int depth = 0, after_string = 0, decorated = 0, line_start = 1;
	/* this logical line: a name "__..."; `import`; it starts at column 0; a
	 * ':' outside brackets and strings (a compound statement's header, a
	 * lambda, an annotation); after its last ';' outside them */
	int under = 0, imports = 0, top = 0, colon = 0;
	long semi = -1;

	while (i < n) {
		char c = s[i];
		if (line_start && depth == 0) {
			if (c == ' ' || c == '\t') {
				i++;
				continue;
			}
			if (c != '\n' && c != '#') { /* a logical line begins */
				line_start = 0;
				under = imports = colon = 0;
				semi = -1;
				top = i == line;
				if (top) {
					if (!decorated && !word_is(s + i, n - i, "else") &&
					    !word_is(s + i, n - i, "elif") &&
					    !word_is(s + i, n - i, "except") &&
					    !word_is(s + i, n - i, "finally"))
						start = (long)i;
					decorated = c == '@';
				}
			}
		}
		if (c == '#') {
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (c == '\n') {
			if (depth == 0) {
				/* Simple statements a ';' parts: the last starts
				 * after it. In a compound statement's line a ';'
				 * parts its body (`if a: b; c`): not read here. */
				if (semi >= 0 && colon)
					return -1;
				if (semi >= 0 && top)
					start = semi;
				line_start = 1, after_string = 0, semi = -1;
			}
			line = ++i;
			continue;
		}
		if (c == ' ' || c == '\t') {
			i++;
			continue;
		}
		size_t w = i;
		while (w < n && ident_char(s[w]))
			w++;
		int fstring = 0, raw = 0;
		if ((w < n && (s[w] == '\'' || s[w] == '"') &&
		     string_prefix(s + i, w - i, &fstring, &raw)) ||
		    c == '\'' || c == '"') {
			char q = s[w];
			int triple = w + 2 < n && s[w + 1] == q && s[w + 2] == q;
			size_t from = w + (triple ? 3 : 1), j = from;
			if (after_string)
				return -1;
			for (;; j++) {
				if (j >= n || (!triple && s[j] == '\n'))
					return -1; /* left open */
				if (s[j] == '\\') {
					/* An escape keeps a quote from closing the string.
					 * Out: one in an f-string, before a line break, or
					 * (but in a raw string) any other than \n \t \r
					 * \\ \' \". */
					if (fstring || j + 1 >= n || s[j + 1] == '\n' ||
					    (!raw && strchr("ntr\\'\"", s[j + 1]) == NULL))
						return -1;
					j++;
					continue;
				}
				if (s[j] == q &&
				    (!triple || (j + 2 < n && s[j + 1] == q && s[j + 2] == q)))
					break;
				if (fstring && (s[j] == '\'' || s[j] == '"'))
					return -1;
				if (s[j] == '\n')
					line = j + 1;
			}
			/* An f-string's expressions are code; a '{' may make a
			 * format string, whose fields may read no attribute
			 * starting '_' (the shim's _field_bad). */
			if ((fstring || memchr(s + from, '{', j - from) != NULL) &&
			    (!runs_ok(s + from, j - from, &under) ||
			     memmem(s + from, j - from, "._", 2) != NULL))
				return -1;
			i = j + (triple ? 3 : 1);
			after_string = 1;
		} else if (w > i) {
			if (!dunder_ok(s + i, w - i, &under))
				return -1;
			imports |= word_is(s + i, n - i, "import");
			i = w;
			after_string = 0;
		} else {
			if (c == '(' || c == '[' || c == '{')
				depth++;
			else if ((c == ')' || c == ']' || c == '}') && --depth < 0)
				return -1;
			else if (c == ';' && depth == 0)
				semi = (long)i + 1;
			else if (c == ':' && depth == 0)
				colon = 1;
			else if (c == '\\')
				return -1; /* a line continued */
			i++;
			after_string = 0;
		}
		if (under && imports)
			return -1; /* perhaps an import alias "__..." */
	}
	if (semi >= 0 && colon)
		return -1;
	if (semi >= 0 && top)
		start = semi;
	return depth == 0 ? start : -1;
}

/* s[0 .. at) holds only blank lines and comments. */
static int one_statement(const char *s, size_t at)
{
	for (size_t i = 0; i < at; i++) {
		if (s[i] == '#')
			while (i < at && s[i] != '\n')
				i++;
		else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n')
			return 0;
	}
	return 1;
}

static PyObject *compile_text(const char *text, int mode)
{
	PyCompilerFlags flags = _PyCompilerFlags_INIT;

	return Py_CompileStringExFlags(text, SNIPPET, mode, &flags, -1);
}

/* The words that begin a statement and never an expression. */
static const char *const statement_words[] = {
	"if",   "elif",  "else",     "for",    "while",  "def",      "class",
	"with", "try",   "async",    "return", "import", "from",     "del",
	"pass", "break", "continue", "raise",  "global", "nonlocal", "assert",
};

/* The last statement s[0 .. n) of a plain source is surely not an expression:
 * it starts with a statement's word or a decorator, or it assigns (an '='
 * outside brackets and strings that is no comparison's, and no lambda in it to
 * hold a default). 0 when it may be an expression: "eval" mode decides. */
static int surely_statement(const char *s, size_t n)
{
	int depth = 0, assigns = 0;

	if (n > 0 && s[0] == '@')
		return 1;
	for (size_t i = 0; i < sizeof statement_words / sizeof *statement_words; i++)
		if (word_is(s, n, statement_words[i]))
			return 1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '#') {
			while (i < n && s[i] != '\n')
				i++;
		} else if (c == '\'' || c == '"') { /* an escape skips what follows */
			int triple = i + 2 < n && s[i + 1] == c && s[i + 2] == c;
			size_t j = i + (triple ? 3 : 1);
			while (j < n && !(s[j] == c && (!triple || (j + 2 < n && s[j + 1] == c &&
								    s[j + 2] == c))))
				j += s[j] == '\\' ? 2 : 1;
			i = j + (triple ? 2 : 0);
		} else if (c == '(' || c == '[' || c == '{') {
			depth++;
		} else if (c == ')' || c == ']' || c == '}') {
			depth--;
		} else if (ident_char(c)) {
			size_t w = i;
			while (w < n && ident_char(s[w]))
				w++;
			if (word_is(s + i, n - i, "lambda"))
				return 0;
			i = w - 1;
		} else if (c == '=' && depth == 0) {
			char before = i > 0 ? s[i - 1] : ' ', after = i + 1 < n ? s[i + 1] : ' ';
			if (after == '=') {
				i++; /* == */
				continue;
			}
			if (before != '=' && before != '!' && before != '<' && before != '>' &&
			    before != ':')
				assigns = 1;
		}
	}
	return assigns;
}

/* A plain source compiled straight from its text: the same code objects the
 * shim's prepare() makes from its AST (test_py compares them, on a corpus and
 * its mutants), without building or walking a Python AST, whose objects and
 * code would be copied into the worker page by page. One expression is
 * compiled in "eval" mode (no body); else a last statement that is surely no
 * expression leaves the whole source as the body, and any other is compiled in
 * "eval" mode at its own line, what comes before it being the body. NULL with
 * no error set: take the full path (every error is the full path's, and so is
 * a last statement "eval" refuses: it may be an expression "eval" reads
 * differently, as a trailing line of spaces). */
PyObject *tp_py_prepare_text(const char *code, size_t len)
{
	char text[FAST_MAX + 1], last[FAST_MAX + 1];
	PyObject *body = NULL, *expr = NULL, *t;
	long at;

	if (len > FAST_MAX || !text_is_plain(code, len) || (at = last_statement(code, len)) < 0)
		return NULL;
	memcpy(text, code, len);
	text[len] = '\0';
	/* One statement (only blank lines and comments before it) may be one
	 * expression; two or more never are, so they are not parsed for it. */
	if (one_statement(text, (size_t)at) && (expr = compile_text(text, Py_eval_input)) != NULL) {
		t = PyTuple_Pack(2, Py_None, expr);
		Py_DECREF(expr);
		return t;
	}
	PyErr_Clear();
	while (text[at] == ' ' || text[at] == '\t')
		at++;
	int mid_line = at > 0 && text[at - 1] != '\n'; /* after a ';' */
	if (!surely_statement(text + at, len - (size_t)at)) {
		if (mid_line)
			return NULL; /* its column: "eval" refuses an indent */
		size_t k = 0, end = len;
		for (long i = 0; i < at; i++)
			if (text[i] == '\n')
				last[k++] = '\n';
		while (end > (size_t)at && strchr(" \t\n", text[end - 1]) != NULL)
			end--;
		memcpy(last + k, text + at, end - (size_t)at);
		last[k + end - (size_t)at] = '\0';
		if ((expr = compile_text(last, Py_eval_input)) == NULL) {
			PyErr_Clear();
			return NULL;
		}
		text[at] = '\0';
	}
	body = compile_text(text, Py_file_input);
	if (body == NULL) {
		PyErr_Clear();
		Py_XDECREF(expr);
		return NULL;
	}
	t = PyTuple_Pack(2, body, expr != NULL ? expr : Py_None);
	Py_DECREF(body);
	Py_XDECREF(expr);
	return t;
}

static PyObject *prepare_fast(const struct tp_request *req)
{
	return tp_py_prepare_text(req->code, req->code_len);
}

PyObject *tp_py_prepare_shim(const char *code, size_t len)
{
	PyObject *src = PyUnicode_DecodeUTF8(code, (Py_ssize_t)len, "strict");
	PyObject *r = src != NULL && G.prepare != NULL ? PyObject_CallOneArg(G.prepare, src) : NULL;

	Py_XDECREF(src);
	return r;
}

/* The files the snippet opened and left open (the shim's _OPENED): flushed and
 * closed at the end of its exec, still under its limits (a close runs no code
 * of ours, but may run the snippet's), so what it wrote is on disk for the
 * client and the next exec, and a session does not run out of fds. */

/* A close that failed (the buffered bytes could not be written: past the file
 * size limit, EFBIG): the exec's error, when it has none yet, an OSError that
 * names the file and the limit, so no cut file passes for a written one. */
static void close_failed(PyObject *file, struct failure *f, const struct result *res,
			 const struct tp_request *req)
{
	PyObject *t, *v, *tb;
	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (f->set || res->fail || tp_py_verdict() || v == NULL ||
	    !PyErr_GivenExceptionMatches(t, PyExc_OSError)) {
		Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
		return;
	}
	PyObject *eno = PyObject_GetAttrString(v, "errno");
	int e = eno != NULL && PyLong_Check(eno) ? (int)PyLong_AsLong(eno) : 0;
	Py_XDECREF(eno);
	Py_XDECREF(t), Py_XDECREF(v), Py_XDECREF(tb);
	PyErr_Clear();
	PyObject *name = PyObject_GetAttrString(file, "name");
	if (name == NULL)
		PyErr_Clear();
	char msg[256];
	const char *which;
	uint64_t limit = tp_py_file_limit(&which);
	if (e == EFBIG)
		snprintf(msg, sizeof msg,
			 "File too large: a file left open was cut at %" PRIu64
			 " bytes when the exec ended and closed it (%s)",
			 limit, which);
	else
		snprintf(msg, sizeof msg, "%s: writing a file left open failed when the exec ended",
			 strerror(e));
	PyObject *exc =
	    PyObject_CallFunction(PyExc_OSError, "isO", e, msg, name != NULL ? name : Py_None);
	Py_XDECREF(name);
	if (exc != NULL) {
		PyErr_SetObject(PyExc_OSError, exc);
		Py_DECREF(exc);
	}
	tp_py_capture(f, ST_RUN, req);
	PyErr_Clear();
}

static void close_opened(struct failure *f, const struct result *res, const struct tp_request *req)
{
	Py_ssize_t n = G.opened != NULL && PyList_Check(G.opened) ? PyList_GET_SIZE(G.opened) : 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *file = PyList_GET_ITEM(G.opened, i);
		PyObject *r = PyObject_CallMethod(file, "close", NULL);
		if (r == NULL)
			close_failed(file, f, res, req);
		Py_XDECREF(r);
		PyErr_Clear();
	}
	if (n > 0)
		PyList_SetSlice(G.opened, 0, n, NULL);
}

/* A rehearsal imports only modules the zygote loaded: under a policy without a
 * language layer an import is a real one, which would leave a module behind. */
static int rehearsal_imports_loaded(const char *code)
{
	char name[64];
	for (const char *p = code; (p = strstr(p, "import ")) != NULL;) {
		size_t n = 0;
		for (p += 7;
		     n + 1 < sizeof name && (*p == '_' || *p == '.' || isalnum((unsigned char)*p));)
			name[n++] = *p++;
		name[n] = '\0';
		PyObject *k = PyUnicode_FromString(name), *m = k ? PyImport_GetModule(k) : NULL;
		Py_XDECREF(k);
		if (m == NULL) {
			PyErr_Clear();
			return 0;
		}
		Py_DECREF(m);
	}
	return 1;
}

int tp_py_exec(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out)
{
	struct failure f = { 0 };
	struct result res = { 0 };
	PyObject *globals, *src = NULL, *prepared = NULL;
	int rc;

	if (G.shim == NULL || (req->rehearsal && !rehearsal_imports_loaded(req->code)))
		return -1; /* a rehearsal's is dropped */
	begin(req, shm);
	globals = new_globals(req->session, req->rehearsal);
	if (globals == NULL || set_inputs(globals, req) != 0) {
		tp_py_capture(&f, ST_INPUTS, req);
		goto out;
	}
	prepared = prepare_fast(req);
	if (prepared == NULL && !PyErr_Occurred()) {
		src = PyUnicode_DecodeUTF8(req->code, (Py_ssize_t)req->code_len, "strict");
		prepared = src ? PyObject_CallOneArg(G.prepare, src) : NULL;
	}
	if (prepared == NULL) {
		tp_py_capture(&f, ST_LOAD, req);
		goto out;
	}
	run(globals, prepared, &res, &f, req);
out:
	close_opened(&f, &res, req);
	end_run();
	rc = reply(&f, &res, out);
	json_decref(f.message), json_decref(f.traceback);
	json_decref(res.repr.message), json_decref(res.repr.traceback);
	tp_text_free(&res.text);
	for (unsigned i = 0; i < res.nimages; i++)
		tp_text_free(&res.images[i]);
	Py_XDECREF(src), Py_XDECREF(prepared);
	if (req->rehearsal) {
		Py_CLEAR(G.rehearsal_globals);
		tp_py_shm = NULL;
	}
	return rc;
}

/* ---- zygote and worker ------------------------------------------------------------------------
 */

/* Set-up failures are our own, at the language layer. */
static int status_err(PyStatus st, const char *what, struct tp_err *err)
{
	if (!PyStatus_Exception(st))
		return 0;
	return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0, "%s: %s%s%s", what,
			  st.func ? st.func : "", st.func ? ": " : "",
			  st.err_msg ? st.err_msg : "failed");
}

/* The data modules (numpy, pandas, matplotlib) are Debian's python3-* packages,
 * under dist-packages: on the zygote's search path only for a policy that
 * offers one of them (the zygote imports them; a worker never opens a file). */
static int policy_wants_dist(void)
{
	const struct tp_policy *p = tp_sandbox_policy();

	for (size_t i = 0; p != NULL && i < p->py_modules.n; i++)
		for (const char *const *d = tp_py_data_modules; *d != NULL; d++)
			if (strcmp(p->py_modules.v[i], *d) == 0)
				return 1;
	return 0;
}

static int start_interpreter(struct tp_err *err)
{
	PyPreConfig pre;
	PyConfig cfg;
	PyStatus st;

	PyPreConfig_InitIsolatedConfig(&pre);
	pre.utf8_mode = 1;
	pre.allocator = PYMEM_ALLOCATOR_PYMALLOC; /* MEM, OBJ: pymalloc, wrapped; RAW: malloc */
	if (status_err(Py_PreInitialize(&pre), "Py_PreInitialize", err))
		return -1;
	tp_pyalloc_install(); /* before any object exists: every block is counted */
	tp_pyalloc_on_refuse(tp_py_on_refuse);
	/* Before init, so no import or open escapes it; live only during an exec. */
	PySys_AddAuditHook(tp_py_audit_hook, NULL);
	PyConfig_InitIsolatedConfig(&cfg);
	cfg.site_import = 0;
	cfg.install_signal_handlers = 0;
	cfg.use_hash_seed = 1; /* reproducible hashes: flooding stays inside one worker */
	cfg.hash_seed = 0;
	cfg.write_bytecode = 0;
	cfg.user_site_directory = 0;
	cfg.pathconfig_warnings = 0;
	cfg.faulthandler = 0; /* a crash must stay a signal the host sees */
	cfg.parse_argv = 0;
	cfg.module_search_paths_set = 1;
	st = PyConfig_SetString(&cfg, &cfg.home, L"/usr");
	if (!PyStatus_Exception(st))
		st = PyConfig_SetString(&cfg, &cfg.program_name, L"tidepool");
	if (!PyStatus_Exception(st))
		st = PyWideStringList_Append(&cfg.module_search_paths, L"" STDLIB);
	if (!PyStatus_Exception(st))
		st = PyWideStringList_Append(&cfg.module_search_paths, L"" STDLIB "/lib-dynload");
	if (!PyStatus_Exception(st) && policy_wants_dist())
		st = PyWideStringList_Append(&cfg.module_search_paths, L"" DIST_PACKAGES);
	if (!PyStatus_Exception(st))
		st = Py_InitializeFromConfig(&cfg);
	PyConfig_Clear(&cfg);
	return status_err(st, "Py_InitializeFromConfig", err);
}

/* One fast-path compile and eval in the zygote, so what the first one writes
 * once (lazy symbol bindings, caches, interned names) is in the shared heap,
 * not copied into every worker. */
static void warm_up(void)
{
	static const char text[] = "1+1";
	struct tp_request req = { .code = text, .code_len = sizeof text - 1 };
	PyObject *p = prepare_fast(&req);
	PyObject *d = PyDict_New();
	PyObject *r = p && d && PyDict_SetItemString(d, "__builtins__", G.sbuiltins) == 0
			  ? PyEval_EvalCode(PyTuple_GET_ITEM(p, 1), d, d)
			  : NULL;

	Py_XDECREF(r), Py_XDECREF(d), Py_XDECREF(p);
	PyErr_Clear();
}

/* A set of the shim's (ATTR_DENY, DUNDER_OK) as C strings, for the text path
 * (text_is_plain, last_statement). */
static int load_names(const char *which, char ***out, size_t *n)
{
	PyObject *set = PyDict_GetItemString(G.shim, which), *it, *name;

	if (set == NULL || !PyAnySet_Check(set) || (it = PyObject_GetIter(set)) == NULL) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_RuntimeError, "the shim has no %s set", which);
		return -1;
	}
	*out = calloc((size_t)PySet_GET_SIZE(set) + 1, sizeof **out);
	while (*out != NULL && (name = PyIter_Next(it)) != NULL) {
		const char *u = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
		char *copy = u ? strdup(u) : NULL;
		Py_DECREF(name);
		if (copy == NULL) {
			Py_DECREF(it);
			if (!PyErr_Occurred())
				PyErr_NoMemory();
			return -1;
		}
		(*out)[(*n)++] = copy;
	}
	Py_DECREF(it);
	if (*out == NULL)
		PyErr_NoMemory();
	return PyErr_Occurred() ? -1 : 0;
}

static PyObject *strv_list(const struct tp_strv *v)
{
	PyObject *l = PyList_New(0);

	for (size_t i = 0; l != NULL && v != NULL && i < v->n; i++) {
		PyObject *s = PyUnicode_FromString(v->v[i]);
		if (s == NULL || PyList_Append(l, s) != 0)
			Py_CLEAR(l);
		Py_XDECREF(s);
	}
	return l;
}

/* The shim's init with the policy this zygote enforces (lang.h): its modules,
 * builtins (and the catalog they come from), name, whether it has a language
 * layer at all and whether it grants files. */
static PyObject *call_init(PyObject *init)
{
	const struct tp_policy *p = tp_sandbox_policy();
	struct tp_strv catalog = { (char **)tp_catalog_py_builtins, 0 };
	PyObject *mods, *blt, *cat, *r = NULL;

	if (p == NULL || init == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "no policy");
		return NULL;
	}
	while (tp_catalog_py_builtins[catalog.n] != NULL)
		catalog.n++;
	tp_py_kernel_only = !p->language_layer;
	mods = strv_list(&p->py_modules);
	blt = strv_list(&p->py_builtins);
	cat = strv_list(&catalog);
	if (mods && blt && cat)
		r = PyObject_CallFunction(
		    init, "OOOsii", mods, blt, cat, p->name, tp_py_kernel_only,
		    p->fs_read.n > 0 || p->fs_write.n > 0 ? 2 : p->session.workspace_bytes > 0);
	Py_XDECREF(mods), Py_XDECREF(blt), Py_XDECREF(cat);
	/* With file grants, a path the shim let through can still meet the kernel
	 * (a symlink out of the grant): that refusal is the kernel's too. */
	if (r != NULL && (tp_py_kernel_only || p->fs_read.n > 0 || p->fs_write.n > 0))
		tp_py_kernel_install();
	else if (r != NULL && p->session.workspace_bytes > 0)
		tp_py_kernel_record_files(); /* the same for the shim's calls in a workspace */
	return r;
}

static int load_shim(struct tp_err *err)
{
	PyObject *code, *r, *gc;

	tp_py_exc_limit = PyErr_NewException("tidepool.LimitExceeded", PyExc_BaseException, NULL);
	tp_py_exc_policy =
	    PyErr_NewException("tidepool.PolicyViolation", PyExc_BaseException, NULL);
	tp_py_exc_kernel =
	    PyErr_NewException("tidepool.SandboxViolation", PyExc_BaseException, NULL);
	G.shim = PyDict_New();
	if (!tp_py_exc_limit || !tp_py_exc_policy || !tp_py_exc_kernel || !G.shim ||
	    PyDict_SetItemString(G.shim, "__builtins__", PyEval_GetBuiltins()) != 0 ||
	    PyDict_SetItemString(G.shim, "__name__", PyUnicode_FromString("_tidepool")) != 0 ||
	    PyDict_SetItemString(G.shim, "LimitExceeded", tp_py_exc_limit) != 0 ||
	    PyDict_SetItemString(G.shim, "PolicyViolation", tp_py_exc_policy) != 0)
		return tp_py_fail("shim globals", err);
	for (PyMethodDef *t[] = { tp_py_shim_fns, tp_py_kernel_fns }, **pt = t; pt < t + 2; pt++)
		for (PyMethodDef *d = *pt; d->ml_name; d++) {
			PyObject *fn = PyCFunction_NewEx(d, NULL, NULL);
			if (fn == NULL || PyDict_SetItemString(G.shim, d->ml_name, fn) != 0)
				return tp_py_fail("shim functions", err);
			Py_DECREF(fn);
		}
	gc = PyImport_ImportModule("gc"); /* before the shim gates __import__ */
	code = Py_CompileString(tp_py_shim_source, SHIM, Py_file_input);
	r = code ? PyEval_EvalCode(code, G.shim, G.shim) : NULL;
	Py_XDECREF(code);
	Py_XDECREF(r);
	if (r == NULL || gc == NULL)
		return tp_py_fail("running the shim", err);
	G.sbuiltins = call_init(PyDict_GetItemString(G.shim, "init"));
	if (G.sbuiltins == NULL)
		return tp_py_fail("shim init", err);
	PyObject *tools = tp_py_tools_new();
	if (tools == NULL || PyDict_SetItemString(G.sbuiltins, "tools", tools) != 0)
		return tp_py_fail("tools", err);
	Py_DECREF(tools);
	if (load_names("ATTR_DENY", &G.deny, &G.ndeny) != 0 ||
	    load_names("DUNDER_OK", &G.dunder_ok, &G.ndunder_ok) != 0)
		return tp_py_fail("ATTR_DENY", err);
	if (make_main() == NULL)
		return tp_py_fail("__main__", err);
	warm_up();
	G.main_fresh = 1;
	G.prepare = PyDict_GetItemString(G.shim, "prepare");
	G.opened = PyDict_GetItemString(G.shim, "_OPENED");
	G.reseed = PyDict_GetItemString(G.shim, "reseed");
	find_seed();
	G.rich_types = PyDict_GetItemString(G.shim, "RICH_TYPES");
	if (G.rich_types != NULL && PyTuple_Check(G.rich_types) && PyTuple_GET_SIZE(G.rich_types)) {
		G.rich = PyDict_GetItemString(G.shim, "_rich");
		G.figures = PyDict_GetItemString(G.shim, "_figures");
		G.figures_reset = PyDict_GetItemString(G.shim, "_figures_reset");
		if (G.figures == Py_None || G.figures_reset == Py_None) /* no matplotlib */
			G.figures = G.figures_reset = NULL;
		PyObject *sc = PyDict_GetItemString(G.shim, "JSON_SCALARS");
		if (sc != NULL && PyTuple_Check(sc) && PyTuple_GET_SIZE(sc) == 2 &&
		    PyType_Check(PyTuple_GET_ITEM(sc, 0)) && PyType_Check(PyTuple_GET_ITEM(sc, 1)))
			tp_pyjson_set_scalars((PyTypeObject *)PyTuple_GET_ITEM(sc, 0),
					      (PyTypeObject *)PyTuple_GET_ITEM(sc, 1));
	} else {
		G.rich_types = NULL;
	}
	G.sys_stdout = Py_XNewRef(PySys_GetObject("stdout"));
	G.sys_stderr = Py_XNewRef(PySys_GetObject("stderr"));
	/* Workers share the zygote's heap copy-on-write: collect once, then keep
	 * every surviving object out of later collections, so a worker's GC never
	 * touches (and copies) the pages they live on. */
	r = PyObject_CallMethod(gc, "collect", NULL);
	Py_XDECREF(r);
	r = r ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
	Py_XDECREF(r);
	Py_DECREF(gc);
	if (r == NULL || G.prepare == NULL || G.reseed == NULL)
		return tp_py_fail("gc.freeze", err);
	return 0;
}

int tp_py_zygote_init(struct tp_err *err)
{
	if (G.shim != NULL)
		return 0;
	tzset(); /* reads TZ's zone file now: after lockdown no file can be opened */
	/* Before numpy loads OpenBLAS (whose constructor reads them): one thread,
	 * since a worker cannot make one (seccomp) and an exec has one CPU budget;
	 * matplotlib's Agg backend, no display. In the zygote's own environment. */
	if (policy_wants_dist() &&
	    (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0 ||
	     setenv("OMP_NUM_THREADS", "1", 1) != 0 || setenv("MKL_NUM_THREADS", "1", 1) != 0 ||
	     setenv("MPLBACKEND", "Agg", 1) != 0))
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0, "setenv failed");
	if (tp_pyaddr_preinit(err) != 0) /* before any type is ready */
		return -1;
	if (start_interpreter(err) != 0)
		return -1;
	if (load_shim(err) != 0) {
		G.shim = NULL;
		return -1;
	}
	if (tp_pyaddr_zygote_init(err) != 0) {
		G.shim = NULL;
		return -1;
	}
	/* The after-fork functions a worker would run for nothing (pyfork.c);
	 * should Python fail to make the new list, they keep running. */
	(void)tp_pyfork_seal();
	return 0;
}

void tp_py_worker_init(uint64_t entropy)
{
	if (G.shim == NULL)
		return;
	/* PyOS_AfterFork_Child re-creates CPython's locks (leaking the old ones:
	 * another thread might have held them), deletes other threads' states and
	 * runs the after-fork functions (pyfork.c has taken those out). The zygote
	 * clones from its only thread, holding no lock but the GIL, which the
	 * worker's same thread (same ident) holds on; Python's signal handlers are
	 * not installed, so none is pending. With one thread state and no
	 * after-fork function left there is nothing to redo, and skipping it
	 * spares each worker ~5 % of its CPU (its mallocs, copy-on-write faults);
	 * test_py holds the three cases. */
	PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
	if (t == NULL || PyThreadState_Next(t) != NULL || tp_pyfork_hooks_left() != 0)
		PyOS_AfterFork_Child();
	reseed(entropy); /* forked workers must never share a random stream */
	tp_pyaddr_worker_init(entropy);
}

/* The rehearsal (lang.h, worker.c): an expression (the fast path), a few
 * statements (the shim's AST check and compile, a function, a class, a
 * comprehension, str methods, print, an f-string, a list result) and an import
 * of two preloaded modules (a policy without them refuses it, inside the
 * rehearsal only): what most snippets do first. They load no module that is not
 * loaded, draw no random number and define no name outside their own
 * throwaway globals. */
static const char *const rehearsal[] = {
	"1+1",
	"def f(n):\n    return n * 2\n"
	"class A:\n    def __init__(self, v):\n        self.v = v\n"
	"xs = [f(i) for i in range(3)]\na = A(len(xs))\ns = 'ok %d' % a.v\n"
	"print(s.upper().split(), {'k': xs}, f'{a.v}')\nxs",
	"import math\nimport json\njson.dumps({'a': [math.floor(1.5)]})",
	/* The data preset's first touch of pandas (dropped elsewhere: no pandas
	 * loaded): a group-by and its rich result, ~1,000 copy-on-write faults
	 * and ~6 ms that would otherwise be on the first request's path. */
	"import numpy as np\nimport pandas as pd\n"
	"df = pd.DataFrame({'k': np.arange(200) % 7, 'v': np.arange(200.0)})\n"
	"df['w'] = df['v'] * 2\ndf.groupby('k')['v'].sum()",
	NULL,
};

const struct tp_lang tp_lang_python = {
	.id = TP_LANG_PYTHON,
	.zygote_init = tp_py_zygote_init,
	.worker_init = tp_py_worker_init,
	.exec = tp_py_exec,
	.rehearsal = rehearsal,
	.zygote_settle = tp_pyalloc_settle,
	.huge_pages = 1,
};
