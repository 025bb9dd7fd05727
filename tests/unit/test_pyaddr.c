/*
 * test_pyaddr.c — the address bijection (py-sandbox/pyaddr.c) on its own, then
 * in a real zygote state built by tp_py_zygote_init(): with addresses mapped to
 * themselves every replaced repr must equal CPython's own character for
 * character; with the key, none may show the address and each shows the id.
 */
#include "pyaddr.h"
#include "pysandbox.h"

#include <frameobject.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tap.h"

#ifdef TP_SANITIZE
/* The embedded interpreter lives until this process exits, as in the zygote. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpython3.11.so\nleak:libcrypto.so\n"; /* and hashlib's OpenSSL state */
}
#endif

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void random_key(struct tp_addr_key *k, unsigned rounds)
{
	k->rounds = rounds;
	for (int i = 0; i < TP_ADDR_ROUNDS; i++)
		k->k[i][0] = rnd(), k->k[i][1] = rnd();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* How many distinct values in v[0..n) (sorts v). */
static size_t distinct(uint64_t *v, size_t n)
{
	size_t d = n ? 1 : 0;

	qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 1; i < n; i++)
		d += v[i] != v[i - 1];
	return d;
}

#define N 65536

static uint64_t va[N], vb[N];

static void test_bijection(unsigned rounds)
{
	struct tp_addr_key k, k2;
	uint64_t base = 0x7f3a12345000ull;
	int bad = 0;

	random_key(&k, rounds);
	random_key(&k2, rounds);
	/* An inverse on random inputs of every width, and on addresses. */
	for (unsigned half = 1; half <= 32; half++)
		for (int i = 0; i < 2000; i++) {
			uint64_t x = rnd() & (half == 32 ? ~0ull : (1ull << 2 * half) - 1);
			uint64_t y = tp_addr_map(&k, half, x);
			bad += tp_addr_unmap(&k, half, y) != x;
			bad += half < 32 && y >> 2 * half != 0;
		}
	for (int i = 0; i < 100000; i++) {
		uint64_t a = rnd();
		bad += tp_addr_unid(&k, tp_addr_id(&k, a)) != a;
	}
	CHECK_EQ_INT(bad, 0);
	/* Injective on a sample: 64 Ki consecutive 16-byte blocks (what pymalloc
	 * hands out) and 64 Ki random 64-bit values. */
	for (size_t i = 0; i < N; i++) {
		va[i] = tp_addr_id(&k, base + 16 * i);
		vb[i] = tp_addr_map(&k, 32, rnd());
	}
	CHECK_EQ_INT(distinct(va, N), N);
	CHECK_EQ_INT(distinct(vb, N), N);
	/* Small domain: a full permutation of 2^16 values. */
	for (size_t i = 0; i < N; i++)
		va[i] = tp_addr_map(&k, 8, i);
	CHECK_EQ_INT(distinct(va, N), N);
	/* ids of user-space 8-aligned addresses are JSON-safe, whatever the address. */
	bad = 0;
	for (int i = 0; i < 100000; i++)
		bad += tp_addr_id(&k, (rnd() & ((1ull << 55) - 1)) & ~7ull) >= (1ull << 52);
	CHECK_EQ_INT(bad, 0);
	/* Another key, another permutation. */
	bad = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t a = base + 16 * (uint64_t)i;
		bad += tp_addr_id(&k, a) == tp_addr_id(&k2, a);
	}
	CHECK(bad <= 1);
}

/* No structure survives: neither XOR nor additive differences of inputs give a
 * fixed output difference, one flipped input bit flips half the output bits,
 * and neighbouring addresses get unrelated ids. */
static void test_no_structure(unsigned rounds)
{
	struct tp_addr_key k;
	const uint64_t deltas[] = { 8, 16, 48, 1u << 12, 1ull << 20, 1ull << 32, 1ull << 44 };
	uint64_t base = 0x7f3a12345000ull;
	double flips = 0;
	int near = 0;

	random_key(&k, rounds);
	for (size_t d = 0; d < sizeof deltas / sizeof *deltas; d++) {
		for (size_t i = 0; i < 4096; i++) {
			uint64_t a = rnd() & ((1ull << 47) - 16) & ~deltas[d];
			va[i] = tp_addr_id(&k, a) ^ tp_addr_id(&k, a ^ deltas[d]);
			vb[i] = tp_addr_id(&k, a + deltas[d]) - tp_addr_id(&k, a);
		}
		CHECK(distinct(va, 4096) > 4000);
		CHECK(distinct(vb, 4096) > 4000);
		/* The same for page numbers through 28-bit halves (hash()). */
		for (size_t i = 0; i < 4096; i++) {
			uint64_t p = (rnd() & ((1ull << 52) - 1)) & ~(deltas[d] >> 3);
			va[i] = tp_addr_map(&k, 28, p) ^ tp_addr_map(&k, 28, p ^ (deltas[d] >> 3));
			vb[i] = tp_addr_map(&k, 28, p + 1) - tp_addr_map(&k, 28, p);
		}
		CHECK(distinct(va, 4096) > 4000);
		CHECK(distinct(vb, 4096) > 4000);
	}
	for (int i = 0; i < 20000; i++) {
		uint64_t x = rnd(), b = 1ull << (rnd() % 64);
		flips += __builtin_popcountll(tp_addr_map(&k, 32, x) ^ tp_addr_map(&k, 32, x ^ b));
	}
	flips /= 20000;
	CHECK(flips > 31.0 && flips < 33.0);
	for (int i = 0; i < 10000; i++) {
		uint64_t a = base + 16 * (uint64_t)i;
		uint64_t x = tp_addr_id(&k, a), y = tp_addr_id(&k, a + 16);
		near += (x > y ? x - y : y - x) < (1ull << 32);
	}
	CHECK(near < 10); /* 2^32 of 2^52: about 0.01 expected */
	/* The worker key: a function of the secret and the entropy, and nothing else. */
	struct tp_addr_key s, w1, w2, w3;
	random_key(&s, rounds);
	tp_addr_derive(&s, 1, &w1);
	tp_addr_derive(&s, 1, &w2);
	tp_addr_derive(&s, 2, &w3);
	CHECK(memcmp(w1.k, w2.k, sizeof w1.k) == 0);
	CHECK(memcmp(w1.k, w3.k, sizeof w1.k) != 0);
	random_key(&s, rounds);
	tp_addr_derive(&s, 1, &w2);
	CHECK(memcmp(w1.k, w2.k, sizeof w1.k) != 0);
}

/* ---- in the interpreter ------------------------------------------------------------------- */

static PyObject *g_ns; /* globals of the test's Python code */

/* sys.stderr is the shim's stream, which writes nowhere outside an exec. */
static _Noreturn void die(const char *what)
{
	PyObject *t, *v, *tb, *s;

	PyErr_Fetch(&t, &v, &tb);
	s = v ? PyObject_Str(v) : NULL;
	fprintf(stderr, "%s: %s\n", what, s ? PyUnicode_AsUTF8(s) : "?");
	abort();
}

static PyObject *pyget(const char *expr)
{
	PyObject *r = PyRun_String(expr, Py_eval_input, g_ns, g_ns);
	if (r == NULL)
		die(expr);
	return r;
}

static char *utf8(PyObject *s)
{
	const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
	return strdup(u ? u : "(null)");
}

/* repr(o) equals CPython's own when ids are the addresses. */
static void same_as_cpython(PyObject *o, const char *what)
{
	tp_pyaddr_identity(1);
	PyObject *ours = PyObject_Repr(o), *theirs = tp_pyaddr_original_repr(o);
	tp_pyaddr_identity(0);
	char *a = utf8(ours), *b = utf8(theirs);
	if (theirs == NULL)
		fprintf(stderr, "# %s: no original repr\n", what);
	CHECK(theirs != NULL);
	CHECK_EQ_STR(a, b);
	free(a), free(b);
	Py_XDECREF(ours), Py_XDECREF(theirs);
	PyErr_Clear();
}

/* repr(o) shows the id of each object in shown[], never an address of them. */
static void shows_ids(PyObject *o, PyObject *const *shown, int n)
{
	PyObject *r = PyObject_Repr(o);
	char *s = utf8(r), hex[32];

	for (int i = 0; i < n; i++) {
		snprintf(hex, sizeof hex, "0x%lx", (unsigned long)(uintptr_t)shown[i]);
		if (strstr(s, hex) != NULL)
			fprintf(stderr, "# %s shows %s\n", s, hex);
		CHECK(strstr(s, hex) == NULL);
		snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)tp_pyaddr_id(shown[i]));
		if (strstr(s, hex) == NULL)
			fprintf(stderr, "# %s lacks %s\n", s, hex);
		CHECK(strstr(s, hex) != NULL);
	}
	free(s);
	Py_XDECREF(r);
}

static PyObject *module(const char *name)
{
	PyObject *n = PyUnicode_FromString(name), *m = PyImport_GetModule(n);
	Py_DECREF(n);
	if (m == NULL)
		abort();
	return m;
}

static void test_reprs(void)
{
	PyObject *thread = module("_thread");
	PyDict_SetItemString(g_ns, "_thread", thread);
	PyRun_String(
	    "class K:\n    pass\n"
	    "def outer():\n    x = 1\n    def inner():\n        return x\n    return inner\n"
	    "def gen():\n    yield 1\n"
	    "async def coro():\n    pass\n"
	    "async def agen():\n    yield 1\n"
	    "k = K()\nf = outer()\ng = gen()\nc = coro()\na = agen()\n"
	    "lock = _thread.allocate_lock()\nrlock = _thread.RLock()\n"
	    "held = _thread.RLock()\nheld.acquire()\n",
	    Py_file_input, g_ns, g_ns);
	if (PyErr_Occurred())
		die("the test's classes");
	/* A traceback object, taken in C: the attribute guard refuses __traceback__
	 * to code that is not the stdlib's. */
	PyObject *et, *ev, *etb;
	PyRun_String("1/0", Py_eval_input, g_ns, g_ns);
	PyErr_Fetch(&et, &ev, &etb);
	if (etb == NULL)
		die("a traceback");
	PyDict_SetItemString(g_ns, "tb", etb);
	Py_XDECREF(et), Py_XDECREF(ev), Py_XDECREF(etb);
	PyObject *k = pyget("k"), *f = pyget("f"),
		 *cell = PyTuple_GET_ITEM(PyFunction_GetClosure(f), 0);
	PyObject *empty_cell = PyCell_New(NULL), *lst = pyget("[]"), *one = pyget("1");
	PyObject *tb = pyget("tb"), *frame = (PyObject *)((PyTracebackObject *)tb)->tb_frame;
	PyObject *dead_target = pyget("K()"), *dead = PyWeakref_NewRef(dead_target, NULL);
	Py_DECREF(dead_target);
	PyObject *bytes = PyBytes_FromString("abc"), *mv = PyMemoryView_FromObject(bytes);
	PyObject *released = PyMemoryView_FromObject(bytes);
	Py_XDECREF(PyObject_CallMethod(released, "release", NULL));
	PyObject *var = PyContextVar_New("v", NULL), *var2 = PyContextVar_New("w", one);
	PyObject *token = PyContextVar_Set(var, one), *used = PyContextVar_Set(var2, one);
	PyContextVar_Reset(var2, used);
	static int anchor;
	struct {
		PyObject *o;
		const char *what;
		PyObject *shown[2];
		int n;
	} cases[] = {
		{ PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type), "object", { NULL }, 1 },
		{ k, "instance", { k }, 1 },
		{ f, "function", { f }, 1 },
		{ pyget("lambda: 0"), "lambda", { NULL }, 1 },
		{ pyget("g"), "generator", { NULL }, 1 },
		{ pyget("c"), "coroutine", { NULL }, 1 },
		{ pyget("a"), "async generator", { NULL }, 1 },
		{ Py_NewRef(PyFunction_GetCode(f)), "code", { NULL }, 1 },
		{ cell, "cell", { cell, PyCell_GET(cell) }, 2 },
		{ empty_cell, "empty cell", { empty_cell }, 1 },
		{ frame, "frame", { frame }, 1 },
		{ PyObject_GetAttrString(lst, "append"), "builtin method", { lst }, 1 },
		{ pyget("len"), "builtin function", { NULL }, 0 },
		{ PyObject_GetAttrString(one, "__add__"), "method-wrapper", { one }, 1 },
		{ PyWeakref_NewRef(k, NULL), "weakref", { NULL, k }, 2 },
		{ PyWeakref_NewRef(f, NULL), "named weakref", { NULL, f }, 2 },
		{ dead, "dead weakref", { dead }, 1 },
		{ PyWeakref_NewProxy(k, NULL), "proxy", { NULL, k }, 2 },
		{ PyWeakref_NewProxy(f, NULL), "callable proxy", { NULL, f }, 2 },
		{ mv, "memoryview", { mv }, 1 },
		{ released, "released memoryview", { released }, 1 },
		{ PyCapsule_New(&anchor, "x.y", NULL), "capsule", { NULL }, 1 },
		{ PyCapsule_New(&anchor, NULL, NULL), "unnamed capsule", { NULL }, 1 },
		{ PyInstanceMethod_New(f), "instancemethod", { NULL }, 1 },
		{ PyFile_NewStdPrinter(1), "stdprinter", { NULL }, 1 },
		{ var, "ContextVar", { var }, 1 },
		{ var2, "ContextVar with a default", { var2 }, 1 },
		{ token, "Token", { token }, 1 },
		{ used, "used Token", { used }, 1 },
		{ pyget("lock"), "lock", { NULL }, 1 },
		{ pyget("rlock"), "RLock", { NULL }, 1 },
		{ pyget("held"), "held RLock", { NULL }, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		if (cases[i].o == NULL) {
			fprintf(stderr, "# %s: not made\n", cases[i].what);
			CHECK(cases[i].o != NULL);
			PyErr_Clear();
			continue;
		}
		/* Proxies forward repr's attribute lookups, not repr itself. */
		for (int j = 0; j < cases[i].n; j++)
			if (cases[i].shown[j] == NULL)
				cases[i].shown[j] = cases[i].o;
		same_as_cpython(cases[i].o, cases[i].what);
		shows_ids(cases[i].o, cases[i].shown, cases[i].n);
	}
	/* A held RLock's owner is a thread ident: an address, shown as its id. */
	PyObject *held = pyget("held"), *r = PyObject_Repr(held);
	char *s = utf8(r), want[64];
	snprintf(want, sizeof want, "owner=%lu ", PyThread_get_thread_ident());
	CHECK(strstr(s, want) == NULL);
	snprintf(want, sizeof want, "owner=%llu ",
		 (unsigned long long)tp_pyaddr_id((void *)PyThread_get_thread_ident()));
	CHECK(strstr(s, want) != NULL);
	free(s);
	Py_XDECREF(r);
	PyObject *saved = PyObject_CallMethod(held, "_release_save", NULL);
	unsigned long count = 0;
	unsigned long long owner = 0;
	CHECK(saved != NULL && PyArg_ParseTuple(saved, "kK", &count, &owner));
	CHECK_EQ_INT(count, 1);
	CHECK(owner == tp_pyaddr_id((void *)PyThread_get_thread_ident()));
	PyObject *back = saved ? PyObject_CallMethod(held, "_acquire_restore", "(O)", saved) : NULL;
	CHECK(back != NULL);
	PyObject *owned = PyObject_CallMethod(held, "_is_owned", NULL);
	CHECK(owned == Py_True);
	Py_XDECREF(saved), Py_XDECREF(back), Py_XDECREF(owned);
	PyErr_Clear();
}

static void test_id_and_hash(void)
{
	PyObject *b = PyImport_AddModule("builtins"), *id = PyObject_GetAttrString(b, "id");
	PyObject *o = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
	PyObject *v = PyObject_CallOneArg(id, o);

	CHECK(v != NULL && PyLong_AsUnsignedLongLong(v) == tp_pyaddr_id(o));
	CHECK(tp_pyaddr_id(o) != (uintptr_t)o);
	Py_XDECREF(v);
	/* Each worker its own ids: derived from the entropy. */
	tp_pyaddr_worker_init(1);
	uint64_t a = tp_pyaddr_id(o);
	tp_pyaddr_worker_init(2);
	uint64_t c = tp_pyaddr_id(o);
	tp_pyaddr_worker_init(1);
	CHECK(a != c);
	CHECK(a == tp_pyaddr_id(o));
	/* No pointer hash is CPython's (_Py_HashPointer: the address rotated by 4),
	 * and hash() still agrees with itself. */
	const char *exprs[] = { "object()",     "int",
				"None",         "len",
				"[].append",    "(1).__add__",
				"float('nan')", "complex(float('nan'), 1)",
				"K().__init__", "lambda: 0" };
	for (size_t i = 0; i < sizeof exprs / sizeof *exprs; i++) {
		PyObject *x = pyget(exprs[i]);
		Py_hash_t h = PyObject_Hash(x);
		CHECK(h != -1 && h == PyObject_Hash(x));
		CHECK(h != _Py_HashPointer(x));
		if (h == _Py_HashPointer(x))
			fprintf(stderr, "# hash(%s) is the pointer hash\n", exprs[i]);
		Py_DECREF(x);
	}
	/* A quiet NaN Decimal hashes by identity, not by address. */
	PyObject *dec = module("decimal");
	PyObject *nan = PyObject_CallMethod(dec, "Decimal", "s", "nan");
	PyObject *five = PyObject_CallMethod(dec, "Decimal", "s", "5");
	CHECK(nan != NULL && PyObject_Hash(nan) != _Py_HashPointer(nan));
	CHECK(nan != NULL && PyObject_Hash(nan) == PyObject_Hash(nan));
	CHECK(five != NULL && PyObject_Hash(five) == 5);
	Py_XDECREF(nan), Py_XDECREF(five), Py_DECREF(dec);
	Py_DECREF(o), Py_DECREF(id);
}

int main(void)
{
	struct tp_err err = { 0 };

	test_bijection(TP_ADDR_ROUNDS);
	test_no_structure(TP_ADDR_ROUNDS);
	test_bijection(TP_ADDR_HASH_ROUNDS);
	test_no_structure(TP_ADDR_HASH_ROUNDS);
	if (tp_py_zygote_init(&err) != 0) {
		fprintf(stderr, "zygote init: %s\n", err.msg);
		return 1;
	}
	g_ns = PyDict_New();
	PyDict_SetItemString(g_ns, "__builtins__", PyEval_GetBuiltins());
	PyDict_SetItemString(g_ns, "__name__", PyUnicode_FromString("mod"));
	tp_pyaddr_worker_init(12345);
	test_reprs();
	test_id_and_hash();
	return tp_test_done("test_pyaddr");
}
