/*
 * pyaddr.c — id(), hash() and the reprs that print "at 0x..." show a keyed
 * bijection of the address, never the address (docs/python.md, "Addresses").
 * Invariant: once tp_pyaddr_zygote_init() has returned 0, no type left in the
 * interpreter has a repr or hash slot, or a __repr__/__hash__ slot wrapper,
 * that is one of CPython's functions we replaced; id() answers from the id key.
 * How each kind of slot is replaced:
 *   - static types, before the interpreter starts: their tp_repr/tp_hash
 *     fields, so PyType_Ready() builds every slot wrapper and fills every
 *     subtype (static, extension or Python class) from ours;
 *   - types made at run time (_thread's locks, decimal.Decimal): the slot, the
 *     slot wrapper's d_wrapped (which type_new() copies into a new subclass's
 *     slot) and each existing subclass's inherited copy;
 *   - builtins.id and two RLock methods: the ml_meth of their PyMethodDef,
 *     read at every call, so every reference to them changes at once.
 * A repr is either rebuilt here, or CPython's own with its trailing "0x...>"
 * (the %p of a known object, which nothing the snippet controls can follow)
 * rewritten: never a search for hex digits in text the snippet may have
 * written, which would tell it whether a guessed address was right.
 * Layer (pyint.h): near the top; it calls pyerror.c (tp_py_fail) and nothing
 * else of py-sandbox/; pysandbox.c calls it at each stage.
 */
#include <Python.h>

#include "pyaddr.h"
#include "pyint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* ---- the bijection ---------------------------------------------------------------------- */

static inline uint32_t round_fn(uint32_t x, const uint64_t k[2])
{
	uint64_t h = ((uint64_t)x ^ k[0]) * 0x9e3779b97f4a7c15ull;

	h ^= h >> 32;
	h = (h + k[1]) * 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

uint64_t tp_addr_map(const struct tp_addr_key *key, unsigned half, uint64_t x)
{
	const uint32_t mask = (uint32_t)((1ull << half) - 1);
	uint32_t l = (uint32_t)(x >> half) & mask, r = (uint32_t)x & mask, t;

	for (unsigned i = 0; i < key->rounds; i++) {
		t = (l ^ round_fn(r, key->k[i])) & mask;
		l = r;
		r = t;
	}
	return (uint64_t)l << half | r;
}

uint64_t tp_addr_unmap(const struct tp_addr_key *key, unsigned half, uint64_t y)
{
	const uint32_t mask = (uint32_t)((1ull << half) - 1);
	uint32_t l = (uint32_t)(y >> half) & mask, r = (uint32_t)y & mask, t;

	for (unsigned i = key->rounds; i-- > 0;) {
		t = (r ^ round_fn(l, key->k[i])) & mask;
		r = l;
		l = t;
	}
	return (uint64_t)l << half | r;
}

/* Each round key is the secret bijection of a chain started at the entropy:
 * knowing the entropy (random's state gives it away) is no help without the
 * secret. */
void tp_addr_derive(const struct tp_addr_key *secret, uint64_t entropy, struct tp_addr_key *out)
{
	uint64_t t = tp_addr_map(secret, 32, entropy);

	out->rounds = TP_ADDR_ROUNDS;
	for (int i = 0; i < TP_ADDR_ROUNDS; i++)
		for (int j = 0; j < 2; j++) {
			t = tp_addr_map(secret, 32, t ^ (uint64_t)(2 * i + j + 1));
			out->k[i][j] = t;
		}
}

/* ---- keys ------------------------------------------------------------------------------- */

/* The address layer's state, one instance. No signal handler touches it. */
static struct {
	/* -- keys: hash and secret in the zygote (tp_pyaddr_preinit), before any
	 * hash is stored, and never again; id per worker (tp_pyaddr_worker_init
	 * derives it from secret), before the worker's first exec */
	struct tp_addr_key id;     /* id() and the reprs: each worker's own */
	struct tp_addr_key hash;   /* hash(): the zygote's, fixed before any hash is stored */
	struct tp_addr_key secret; /* the zygote's: derives each worker's id key */
	int identity;              /* tests: id() is the address (tp_pyaddr_identity) */
	int ready;                 /* tp_pyaddr_preinit() patched the static types */

	/* -- zygote: the original slots the patches replaced, each set once by the
	 * patch that replaces it (tp_pyaddr_preinit for the static types,
	 * tp_pyaddr_zygote_init for the types modules make), read-only after */
	reprfunc orig_object, orig_function, orig_gen, orig_coro, orig_asyncgen,
	    orig_instancemethod, orig_capsule, orig_memory, orig_stdprinter, orig_contextvar,
	    orig_token, orig_lock;
	reprfunc orig_cfunction, orig_mwrapper;
	reprfunc orig_cell, orig_frame, orig_code, orig_weakref, orig_proxy, orig_cproxy;
	reprfunc orig_rlock;
	PyCFunction orig_release_save, orig_acquire_restore;
	hashfunc orig_object_hash, orig_cfunction_hash, orig_method_hash, orig_mwrapper_hash,
	    orig_contextvar_hash, orig_float_hash, orig_complex_hash;
	hashfunc orig_decimal_hash;

	/* -- zygote (tp_pyaddr_preinit, tp_pyaddr_zygote_init), read-only after */
	PyObject *name_str; /* "__name__" */
	PyObject *is_qnan;  /* Decimal.is_qnan, the C method itself */
	/* types modules make at run time, patched after the shim */
	PyTypeObject *lock_type, *rlock_type, *decimal_type;
} G;

/* An id: the address rotated right by 3 (objects are 8-aligned, so its low
 * bits were 0), then its low TP_ADDR_ID_BITS bits through the bijection. Any
 * user-space address below 2^55 gets an id below 2^52: a JSON number that
 * JavaScript reads exactly, as CPython's own ids (below 2^47) are. */
uint64_t tp_addr_id(const struct tp_addr_key *key, uint64_t a)
{
	const uint64_t low = (1ull << TP_ADDR_ID_BITS) - 1;
	uint64_t v = a >> 3 | a << 61;

	return (v & ~low) | tp_addr_map(key, TP_ADDR_ID_BITS / 2, v & low);
}

uint64_t tp_addr_unid(const struct tp_addr_key *key, uint64_t id)
{
	const uint64_t low = (1ull << TP_ADDR_ID_BITS) - 1;
	uint64_t v = (id & ~low) | tp_addr_unmap(key, TP_ADDR_ID_BITS / 2, id & low);

	return v << 3 | v >> 61;
}

static uint64_t id_u(uint64_t a)
{
	return G.identity ? a : tp_addr_id(&G.id, a);
}

static uint64_t unid_u(uint64_t v)
{
	return G.identity ? v : tp_addr_unid(&G.id, v);
}

static uint64_t id_of(const void *p)
{
	return id_u((uint64_t)(uintptr_t)p);
}

/* p's id as a repr shows it: "0x" and lowercase hex, as hex(id(o)). */
static void hex_id(char out[24], const void *p)
{
	snprintf(out, 24, "0x%" PRIx64, id_of(p));
}

/* A pointer's hash: its page number through the bijection, then its offset in
 * the page (bits 4-11, which ASLR never changes) as it is, so objects that are
 * neighbours in memory stay neighbours in a set's or dict's table, as with
 * CPython's own pointer hash (random hashes made a set of 200k objects three
 * times slower: every lookup a cache miss). */
static Py_hash_t hash_u(uint64_t a)
{
	Py_hash_t h = (Py_hash_t)(tp_addr_map(&G.hash, 28, a >> 12) << 8 | (a >> 4 & 0xff));

	return h == -1 ? -2 : h;
}

static Py_hash_t hash_of(const void *p)
{
	return hash_u((uint64_t)(uintptr_t)p);
}

uint64_t tp_pyaddr_id(const void *p)
{
	return id_of(p);
}

void tp_pyaddr_identity(int on)
{
	G.identity = on;
}

/* ---- reprs ------------------------------------------------------------------------------ */

/* r is CPython's repr of an object whose format ends in "at %p>" with p: that
 * tail becomes p's id. Any other r (a branch that prints no address, as a
 * built-in function's) is returned as it is. Steals r. */
static PyObject *fix_tail(PyObject *r, const void *p)
{
	char old[24], id[24];
	Py_ssize_t n, k;
	PyObject *head, *out;

	if (r == NULL || p == NULL || !PyUnicode_Check(r))
		return r;
	/* What CPython's %p prints: glibc's "%p", which is "0x%lx" for non-NULL. */
	k = snprintf(old, sizeof old, "0x%lx>", (unsigned long)(uintptr_t)p);
	n = PyUnicode_GET_LENGTH(r);
	if (n < k)
		return r;
	for (Py_ssize_t i = 0; i < k; i++)
		if (PyUnicode_READ_CHAR(r, n - k + i) != (Py_UCS4)(unsigned char)old[i])
			return r;
	hex_id(id, p);
	head = PyUnicode_Substring(r, 0, n - k);
	out = head ? PyUnicode_FromFormat("%U%s>", head, id) : NULL;
	Py_XDECREF(head);
	Py_DECREF(r);
	return out;
}

/* Types whose repr ends in "at %p>" of the object itself. */
#define TAIL_REPR(name)                                                                            \
	static PyObject *repr_##name(PyObject *o)                                                  \
	{                                                                                          \
		return fix_tail(G.orig_##name(o), o);                                              \
	}

TAIL_REPR(object)
TAIL_REPR(function)
TAIL_REPR(gen)
TAIL_REPR(coro)
TAIL_REPR(asyncgen)
TAIL_REPR(instancemethod)
TAIL_REPR(capsule)
TAIL_REPR(memory)
TAIL_REPR(stdprinter)
TAIL_REPR(contextvar)
TAIL_REPR(token)
TAIL_REPR(lock)

/* "<built-in method %s of %s object at %p>" with m_self, or "<built-in function %s>". */
static PyObject *repr_cfunction(PyObject *o)
{
	return fix_tail(G.orig_cfunction(o), ((PyCFunctionObject *)o)->m_self);
}

/* descrobject.c's wrapperobject (a method-wrapper), private in 3.11. */
struct wrapper_mirror {
	PyObject ob_base; /* PyObject_HEAD */
	PyWrapperDescrObject *descr;
	PyObject *self;
};

/* "<method-wrapper '%s' of %s object at %p>" with self. */
static PyObject *repr_mwrapper(PyObject *o)
{
	return fix_tail(G.orig_mwrapper(o), ((struct wrapper_mirror *)o)->self);
}

/* The reprs below print an address before text a snippet may choose (a type
 * name, a __name__): rebuilt here, each as CPython 3.11's. */
static PyObject *repr_cell(PyObject *o)
{
	PyObject *ref = ((PyCellObject *)o)->ob_ref;
	char a[24], b[24];

	hex_id(a, o);
	if (ref == NULL)
		return PyUnicode_FromFormat("<cell at %s: empty>", a);
	hex_id(b, ref);
	return PyUnicode_FromFormat("<cell at %s: %.80s object at %s>", a, Py_TYPE(ref)->tp_name,
				    b);
}

static PyObject *repr_frame(PyObject *o)
{
	PyFrameObject *f = (PyFrameObject *)o;
	int line = PyFrame_GetLineNumber(f);
	PyCodeObject *code = PyFrame_GetCode(f);
	PyObject *r;
	char a[24];

	hex_id(a, o);
	r = PyUnicode_FromFormat("<frame at %s, file %R, line %d, code %S>", a, code->co_filename,
				 line, code->co_name);
	Py_DECREF(code);
	return r;
}

static PyObject *repr_code(PyObject *o)
{
	PyCodeObject *co = (PyCodeObject *)o;
	int line = co->co_firstlineno != 0 ? co->co_firstlineno : -1;
	char a[24];

	hex_id(a, o);
	if (co->co_filename && PyUnicode_Check(co->co_filename))
		return PyUnicode_FromFormat("<code object %U at %s, file \"%U\", line %d>",
					    co->co_name, a, co->co_filename, line);
	return PyUnicode_FromFormat("<code object %U at %s, file ???, line %d>", co->co_name, a,
				    line);
}

static PyObject *repr_weakref(PyObject *o)
{
	PyObject *obj = PyWeakref_GET_OBJECT(o), *name = NULL, *r;
	char a[24], b[24];

	hex_id(a, o);
	if (obj == Py_None)
		return PyUnicode_FromFormat("<weakref at %s; dead>", a);
	Py_INCREF(obj);
	if (_PyObject_LookupAttr(obj, G.name_str, &name) < 0) {
		Py_DECREF(obj);
		return NULL;
	}
	hex_id(b, obj);
	if (name == NULL || !PyUnicode_Check(name))
		r = PyUnicode_FromFormat("<weakref at %s; to '%s' at %s>", a, Py_TYPE(obj)->tp_name,
					 b);
	else
		r = PyUnicode_FromFormat("<weakref at %s; to '%s' at %s (%U)>", a,
					 Py_TYPE(obj)->tp_name, b, name);
	Py_DECREF(obj);
	Py_XDECREF(name);
	return r;
}

static PyObject *repr_proxy(PyObject *o)
{
	PyObject *obj = PyWeakref_GET_OBJECT(o);
	char a[24], b[24];

	hex_id(a, o);
	hex_id(b, obj);
	return PyUnicode_FromFormat("<weakproxy at %s to %s at %s>", a, Py_TYPE(obj)->tp_name, b);
}

/* _threadmodule.c's rlockobject, private in 3.11. Its owner is a thread ident,
 * which is the address of the thread's descriptor: shown as its id. */
struct rlock_mirror {
	PyObject ob_base; /* PyObject_HEAD */
	void *lock;
	unsigned long owner;
	unsigned long count;
	PyObject *weakreflist;
};

static PyObject *repr_rlock(PyObject *o)
{
	struct rlock_mirror *l = (struct rlock_mirror *)o;
	char a[24];

	hex_id(a, o);
	return PyUnicode_FromFormat(
	    "<%s %s object owner=%llu count=%lu at %s>", l->count ? "locked" : "unlocked",
	    Py_TYPE(o)->tp_name, (unsigned long long)(l->owner ? id_u(l->owner) : 0), l->count, a);
}

/* RLock._release_save() gives (count, owner) and _acquire_restore() takes it
 * back (threading's Condition): the owner crosses as its id. */

static PyObject *rlock_release_save(PyObject *self, PyObject *unused)
{
	PyObject *r = G.orig_release_save(self, unused), *out = NULL;
	unsigned long count, owner;

	if (r != NULL && PyArg_ParseTuple(r, "kk", &count, &owner))
		out = Py_BuildValue("(kK)", count, (unsigned long long)id_u(owner));
	Py_XDECREF(r);
	return out;
}

static PyObject *rlock_acquire_restore(PyObject *self, PyObject *args)
{
	unsigned long count;
	unsigned long long owner;
	PyObject *real, *r;

	if (!PyArg_ParseTuple(args, "(kK):_acquire_restore", &count, &owner))
		return NULL;
	real = Py_BuildValue("((kk))", count, (unsigned long)unid_u(owner));
	r = real ? G.orig_acquire_restore(self, real) : NULL;
	Py_XDECREF(real);
	return r;
}

/* ---- hashes ----------------------------------------------------------------------------- */
/* Each as CPython 3.11's, with the keyed bijection where it hashes a pointer
 * (_Py_HashPointer, the address rotated by 4 bits), and equal where identity
 * (or the pair of identities its == compares) is equal. */

static Py_hash_t hash_object(PyObject *o)
{
	return hash_of(o);
}

/* Two hashes in one. CPython XORs them; then two pointer hashes of the same
 * page would cancel out but for their offsets (a small hash, and the fact that
 * they share a page): the second is multiplied first. */
static Py_hash_t combine(Py_hash_t a, Py_hash_t b)
{
	Py_hash_t x = (Py_hash_t)((Py_uhash_t)a ^ (Py_uhash_t)b * 0x9e3779b97f4a7c15ull);

	return x == -1 ? -2 : x;
}

static Py_hash_t hash_cfunction(PyObject *o)
{
	PyCFunctionObject *m = (PyCFunctionObject *)o;

	return combine(hash_of(m->m_self), hash_u((uint64_t)(uintptr_t)m->m_ml->ml_meth));
}

static Py_hash_t hash_method(PyObject *o)
{
	PyMethodObject *m = (PyMethodObject *)o;
	Py_hash_t y = PyObject_Hash(m->im_func);

	return y == -1 ? -1 : combine(hash_of(m->im_self), y);
}

static Py_hash_t hash_mwrapper(PyObject *o)
{
	struct wrapper_mirror *w = (struct wrapper_mirror *)o;

	return combine(hash_of(w->self), hash_of(w->descr));
}

/* A NaN's hash is its identity's (since 3.10). */
static Py_hash_t hash_float(PyObject *o)
{
	return Py_IS_NAN(PyFloat_AS_DOUBLE(o)) ? hash_of(o) : G.orig_float_hash(o);
}

static Py_hash_t hash_complex(PyObject *o)
{
	Py_complex c = ((PyComplexObject *)o)->cval;
	Py_uhash_t re, im, h;

	if (!Py_IS_NAN(c.real) && !Py_IS_NAN(c.imag))
		return G.orig_complex_hash(o);
	/* CPython's re + 1000003 * im would keep a NaN's hash a small step from a
	 * float's on the same page (their XOR a plausible address): combine it. */
	re = (Py_uhash_t)(Py_IS_NAN(c.real) ? hash_of(o) : _Py_HashDouble(o, c.real));
	im = (Py_uhash_t)(Py_IS_NAN(c.imag) ? 0 : _Py_HashDouble(o, c.imag));
	h = (Py_uhash_t)combine((Py_hash_t)re, (Py_hash_t)im);
	return h == (Py_uhash_t)-1 ? -2 : (Py_hash_t)h;
}

/* decimal.Decimal: a quiet NaN hashes as _Py_HashPointer(self). */

static Py_hash_t hash_decimal(PyObject *o)
{
	Py_hash_t h = G.orig_decimal_hash(o);
	PyObject *q;
	int nan;

	if (h == -1 || h != _Py_HashPointer(o))
		return h;
	q = PyObject_CallOneArg(G.is_qnan, o);
	if (q == NULL)
		return -1;
	nan = q == Py_True;
	Py_DECREF(q);
	return nan ? hash_of(o) : h;
}

/* numpy's floating scalars (float16 ... clongdouble): numpy hashes each with
 * _Py_HashDouble(self, value), so a NaN's hash is _Py_HashPointer(self), as a
 * float's (float64 and complex128, subclasses of float and complex, inherit
 * theirs). Their value follows the object's head (numpy's Py<Type>ScalarObject). */
enum np_kind { NP_HALF, NP_FLOAT, NP_DOUBLE, NP_LONGDOUBLE, NP_CFLOAT, NP_CDOUBLE, NP_CLONGDOUBLE };
/* A table whose last two columns are state: written in the zygote
 * (tp_pyaddr_zygote_init, when numpy is loaded), read-only after. */
static struct {
	const char *name;
	enum np_kind kind;
	PyTypeObject *type; /* zygote */
	hashfunc orig;      /* zygote: its original tp_hash */
} g_np[] = {
	{ "float16", NP_HALF, NULL, NULL },
	{ "float32", NP_FLOAT, NULL, NULL },
	{ "float64", NP_DOUBLE, NULL, NULL },
	{ "longdouble", NP_LONGDOUBLE, NULL, NULL },
	{ "complex64", NP_CFLOAT, NULL, NULL },
	{ "complex128", NP_CDOUBLE, NULL, NULL },
	{ "clongdouble", NP_CLONGDOUBLE, NULL, NULL },
};
enum { N_NP = sizeof g_np / sizeof g_np[0] };

struct np_scalar_mirror {
	PyObject_HEAD union {
		uint16_t half;
		float f[2];
		double d[2];
		long double ld[2];
	} v;
};

static int half_nan(uint16_t h)
{
	return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0;
}

static Py_hash_t hash_npscalar(PyObject *o)
{
	const struct np_scalar_mirror *m = (const struct np_scalar_mirror *)o;
	double re = 0, im = 0;
	int i = 0, nre = 0, nim = 0;

	while (i < N_NP && !(g_np[i].type != NULL && PyObject_TypeCheck(o, g_np[i].type)))
		i++;
	if (i == N_NP) {
		PyErr_SetString(PyExc_SystemError, "address hiding: not a numpy scalar");
		return -1;
	}
	switch (g_np[i].kind) {
	case NP_HALF: nre = half_nan(m->v.half); break;
	case NP_FLOAT:
	case NP_CFLOAT: re = m->v.f[0], im = m->v.f[1]; break;
	case NP_DOUBLE:
	case NP_CDOUBLE: re = m->v.d[0], im = m->v.d[1]; break;
	default:
		re = (double)m->v.ld[0], im = (double)m->v.ld[1];
		nre = isnan(m->v.ld[0]);
		break;
	}
	if (g_np[i].kind != NP_HALF && g_np[i].kind != NP_LONGDOUBLE &&
	    g_np[i].kind != NP_CLONGDOUBLE)
		nre = Py_IS_NAN(re);
	if (g_np[i].kind >= NP_CFLOAT)
		nim = g_np[i].kind == NP_CLONGDOUBLE ? isnan(m->v.ld[1]) : Py_IS_NAN(im);
	if (!nre && !nim)
		return g_np[i].orig(o);
	if (g_np[i].kind < NP_CFLOAT)
		return hash_of(o);
	{ /* as hash_complex */
		Py_uhash_t r = (Py_uhash_t)(nre ? hash_of(o) : _Py_HashDouble(o, re));
		Py_uhash_t j = (Py_uhash_t)(nim ? 0 : _Py_HashDouble(o, im));
		Py_uhash_t h = (Py_uhash_t)combine((Py_hash_t)r, (Py_hash_t)j);
		return h == (Py_uhash_t)-1 ? -2 : (Py_hash_t)h;
	}
}

/* ---- builtins.id ------------------------------------------------------------------------ */

static PyObject *py_id(PyObject *self, PyObject *v)
{
	PyObject *id = PyLong_FromUnsignedLongLong(id_of(v));

	(void)self;
	if (id != NULL && PySys_Audit("builtins.id", "O", id) < 0) { /* as CPython's */
		Py_DECREF(id);
		return NULL;
	}
	return id;
}

/* ---- patching --------------------------------------------------------------------------- */

struct repr_patch {
	PyTypeObject *type;
	reprfunc *orig;
	reprfunc repl;
};

struct hash_patch {
	PyTypeObject *type;
	hashfunc *orig;
	hashfunc repl;
};

/* Static types, patched before they are ready. */
static const struct repr_patch static_reprs[] = {
	{ &PyBaseObject_Type, &G.orig_object, repr_object },
	{ &PyFunction_Type, &G.orig_function, repr_function },
	{ &PyGen_Type, &G.orig_gen, repr_gen },
	{ &PyCoro_Type, &G.orig_coro, repr_coro },
	{ &PyAsyncGen_Type, &G.orig_asyncgen, repr_asyncgen },
	{ &PyInstanceMethod_Type, &G.orig_instancemethod, repr_instancemethod },
	{ &PyCapsule_Type, &G.orig_capsule, repr_capsule },
	{ &PyMemoryView_Type, &G.orig_memory, repr_memory },
	{ &PyStdPrinter_Type, &G.orig_stdprinter, repr_stdprinter },
	{ &PyContextVar_Type, &G.orig_contextvar, repr_contextvar },
	{ &PyContextToken_Type, &G.orig_token, repr_token },
	{ &PyCFunction_Type, &G.orig_cfunction, repr_cfunction },
	{ &_PyMethodWrapper_Type, &G.orig_mwrapper, repr_mwrapper },
	{ &PyCell_Type, &G.orig_cell, repr_cell },
	{ &PyFrame_Type, &G.orig_frame, repr_frame },
	{ &PyCode_Type, &G.orig_code, repr_code },
	{ &_PyWeakref_RefType, &G.orig_weakref, repr_weakref },
	{ &_PyWeakref_ProxyType, &G.orig_proxy, repr_proxy },
	{ &_PyWeakref_CallableProxyType, &G.orig_cproxy, repr_proxy },
};

static const struct hash_patch static_hashes[] = {
	{ &PyBaseObject_Type, &G.orig_object_hash, hash_object },
	{ &PyCFunction_Type, &G.orig_cfunction_hash, hash_cfunction },
	{ &PyMethod_Type, &G.orig_method_hash, hash_method },
	{ &_PyMethodWrapper_Type, &G.orig_mwrapper_hash, hash_mwrapper },
	{ &PyContextVar_Type, &G.orig_contextvar_hash, hash_object }, /* identity, as its == */
	{ &PyFloat_Type, &G.orig_float_hash, hash_float },
	{ &PyComplex_Type, &G.orig_complex_hash, hash_complex },
};

enum slot { SLOT_REPR, SLOT_HASH };

static void *slot_get(PyTypeObject *t, enum slot s)
{
	return s == SLOT_REPR ? (void *)t->tp_repr : (void *)t->tp_hash;
}

static void slot_set(PyTypeObject *t, enum slot s, void *f)
{
	if (s == SLOT_REPR)
		t->tp_repr = (reprfunc)f;
	else
		t->tp_hash = (hashfunc)f;
}

static const char *slot_dunder(enum slot s)
{
	return s == SLOT_REPR ? "__repr__" : "__hash__";
}

/* The slot wrapper (object.__repr__ and the like) t's own dict holds for s, or NULL. */
static PyWrapperDescrObject *slot_wrapper(PyTypeObject *t, enum slot s)
{
	PyObject *d = t->tp_dict ? PyDict_GetItemString(t->tp_dict, slot_dunder(s)) : NULL;

	return d != NULL && Py_IS_TYPE(d, &PyWrapperDescr_Type) ? (PyWrapperDescrObject *)d : NULL;
}

/* type.__subclasses__(t): a list, or NULL with an error (called through type's
 * own descriptor: a metaclass has the method as an unbound one). */
static PyObject *subclasses(PyObject *t)
{
	static PyObject *fn;
	PyObject *l;

	if (fn == NULL &&
	    (fn = PyObject_GetAttrString((PyObject *)&PyType_Type, "__subclasses__")) == NULL)
		return NULL;
	l = PyObject_CallOneArg(fn, t);
	if (l != NULL && !PyList_Check(l)) {
		Py_DECREF(l);
		PyErr_SetString(PyExc_TypeError, "type.__subclasses__() is not a list");
		return NULL;
	}
	return l;
}

/* In t and every subclass that inherited it: slot s from old to repl, and the
 * slot wrappers of old, whose d_wrapped type_new() copies into the slot of a
 * new subclass (a snippet's class). */
static int retarget(PyTypeObject *t, enum slot s, void *old, void *repl)
{
	PyWrapperDescrObject *w = slot_wrapper(t, s);
	PyObject *subs;
	int rc = 0;

	if (slot_get(t, s) == old)
		slot_set(t, s, repl);
	if (w != NULL && w->d_wrapped == old)
		w->d_wrapped = repl;
	if ((subs = subclasses((PyObject *)t)) == NULL)
		return -1;
	for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(subs); i++)
		rc = retarget((PyTypeObject *)PyList_GET_ITEM(subs, i), s, old, repl);
	Py_DECREF(subs);
	return rc;
}

/* The C method `name` of t (its PyMethodDef, shared by every reference) now
 * calls repl; its old function goes to *orig. */
static int patch_method(PyTypeObject *t, const char *name, int flags, PyCFunction *orig,
			PyCFunction repl)
{
	PyObject *d = PyDict_GetItemString(t->tp_dict, name);
	PyMethodDef *ml;

	if (d == NULL || !Py_IS_TYPE(d, &PyMethodDescr_Type) ||
	    ((ml = ((PyMethodDescrObject *)d)->d_method)->ml_flags & ~METH_COEXIST) != flags) {
		PyErr_Format(PyExc_RuntimeError, "%s.%s is not the C method expected", t->tp_name,
			     name);
		return -1;
	}
	if (ml->ml_meth != repl) {
		*orig = ml->ml_meth;
		ml->ml_meth = repl;
	}
	return 0;
}

static PyTypeObject *module_type(const char *module, const char *name)
{
	PyObject *n = PyUnicode_FromString(module);
	PyObject *m = n ? PyImport_GetModule(n) : NULL;
	PyObject *t = m ? PyObject_GetAttrString(m, name) : NULL;

	Py_XDECREF(n);
	Py_XDECREF(m);
	if (t != NULL && !PyType_Check(t)) {
		Py_DECREF(t);
		PyErr_Format(PyExc_RuntimeError, "%s.%s is not a type", module, name);
		return NULL;
	}
	return (PyTypeObject *)t; /* the module keeps it alive: the reference is ours to keep */
}

/* builtins.id: every reference to it (the snippet's builtins, the stdlib's). */
static int patch_id(void)
{
	PyObject *b = PyImport_AddModule("builtins");
	PyObject *f = b ? PyDict_GetItemString(PyModule_GetDict(b), "id") : NULL;
	PyMethodDef *ml;

	if (f == NULL || !PyCFunction_Check(f) ||
	    ((ml = ((PyCFunctionObject *)f)->m_ml)->ml_flags & ~METH_COEXIST) != METH_O) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "builtins.id is not the C function");
		return -1;
	}
	ml->ml_meth = py_id;
	return 0;
}

static int patch_thread(void)
{
	if ((G.lock_type = module_type("_thread", "LockType")) == NULL ||
	    (G.rlock_type = module_type("_thread", "RLock")) == NULL)
		return -1;
	G.orig_lock = G.lock_type->tp_repr;
	G.orig_rlock = G.rlock_type->tp_repr;
	if (retarget(G.lock_type, SLOT_REPR, (void *)G.orig_lock, (void *)repr_lock) != 0 ||
	    retarget(G.rlock_type, SLOT_REPR, (void *)G.orig_rlock, (void *)repr_rlock) != 0)
		return -1;
	return patch_method(G.rlock_type, "_release_save", METH_NOARGS, &G.orig_release_save,
			    rlock_release_save) != 0 ||
		       patch_method(G.rlock_type, "_acquire_restore", METH_VARARGS,
				    &G.orig_acquire_restore, rlock_acquire_restore) != 0
		   ? -1
		   : 0;
}

static int patch_decimal(void)
{
	PyObject *n = PyUnicode_FromString("decimal");
	PyObject *m = n ? PyImport_GetModule(n) : NULL;

	Py_XDECREF(n);
	if (m == NULL)
		return PyErr_Occurred() ? -1 : 0; /* not loaded: no snippet can reach it */
	Py_DECREF(m);
	if ((G.decimal_type = module_type("decimal", "Decimal")) == NULL)
		return -1;
	G.is_qnan = PyDict_GetItemString(G.decimal_type->tp_dict, "is_qnan");
	if (G.is_qnan == NULL || !Py_IS_TYPE(G.is_qnan, &PyMethodDescr_Type)) {
		PyErr_SetString(PyExc_RuntimeError, "decimal.Decimal is not the C type");
		return -1;
	}
	Py_INCREF(G.is_qnan);
	G.orig_decimal_hash = G.decimal_type->tp_hash;
	return retarget(G.decimal_type, SLOT_HASH, (void *)G.orig_decimal_hash,
			(void *)hash_decimal);
}

static int patch_numpy(void)
{
	PyObject *n = PyUnicode_FromString("numpy");
	PyObject *m = n ? PyImport_GetModule(n) : NULL;

	Py_XDECREF(n);
	if (m == NULL)
		return PyErr_Occurred() ? -1 : 0; /* not loaded: no snippet can reach it */
	Py_DECREF(m);
	for (int i = 0; i < N_NP; i++) {
		if ((g_np[i].type = module_type("numpy", g_np[i].name)) == NULL)
			return -1;
		for (int j = 0; j < i; j++)
			if (g_np[j].type ==
			    g_np[i].type) { /* an alias (longdouble on some hosts) */
				PyErr_Format(PyExc_RuntimeError, "numpy.%s is numpy.%s",
					     g_np[i].name, g_np[j].name);
				return -1;
			}
		g_np[i].orig = g_np[i].type->tp_hash;
		if (g_np[i].orig == hash_float || g_np[i].orig == hash_complex) {
			/* float64 and complex128 keep float's and complex's (patched) */
			g_np[i].type = NULL, g_np[i].orig = NULL;
			continue;
		}
		if (g_np[i].orig == NULL || g_np[i].orig == hash_npscalar ||
		    retarget(g_np[i].type, SLOT_HASH, (void *)g_np[i].orig,
			     (void *)hash_npscalar) != 0) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_RuntimeError, "numpy.%s has no hash of its own",
					     g_np[i].name);
			return -1;
		}
	}
	return 0;
}

/* ---- the check -------------------------------------------------------------------------- */

static int replaced(void *f, enum slot s)
{
	if (f == NULL)
		return 0;
	if (s == SLOT_REPR) {
		for (size_t i = 0; i < sizeof static_reprs / sizeof *static_reprs; i++)
			if (f == (void *)*static_reprs[i].orig)
				return 1;
		return f == (void *)G.orig_lock || f == (void *)G.orig_rlock;
	}
	for (size_t i = 0; i < sizeof static_hashes / sizeof *static_hashes; i++)
		if (f == (void *)*static_hashes[i].orig)
			return 1;
	for (int i = 0; i < N_NP; i++)
		if (g_np[i].orig != NULL && f == (void *)g_np[i].orig)
			return 1;
	return f == (void *)G.orig_decimal_hash;
}

static int stale_type(PyTypeObject *t)
{
	for (int s = SLOT_REPR; s <= SLOT_HASH; s++) {
		PyWrapperDescrObject *w = slot_wrapper(t, (enum slot)s);
		if (replaced(slot_get(t, (enum slot)s), (enum slot)s) ||
		    (w != NULL && replaced(w->d_wrapped, (enum slot)s)))
			return 1;
	}
	return 0;
}

/* Every type reachable from object, each once: none may still use a function
 * we replaced, in its slot or its slot wrapper. 1 with the type's name in
 * bad, 0, or -1 with a Python error. */
static int find_stale(char *bad, size_t len)
{
	PyObject *seen = PySet_New(NULL), *todo = PyList_New(0), *t, *subs;
	Py_ssize_t n;
	int rc = 0, in;

	if (seen == NULL || todo == NULL || PyList_Append(todo, (PyObject *)&PyBaseObject_Type))
		rc = -1;
	while (rc == 0 && (n = PyList_GET_SIZE(todo)) > 0) {
		t = PyList_GET_ITEM(todo, n - 1);
		Py_INCREF(t);
		if (PyList_SetSlice(todo, n - 1, n, NULL) != 0 ||
		    (in = PySet_Contains(seen, t)) < 0) {
			rc = -1;
		} else if (in == 0 && stale_type((PyTypeObject *)t)) {
			snprintf(bad, len, "%s", ((PyTypeObject *)t)->tp_name);
			rc = 1;
		} else if (in == 0) {
			subs = PySet_Add(seen, t) == 0 ? subclasses(t) : NULL;
			n = PyList_GET_SIZE(todo);
			rc = subs == NULL ? -1 : PyList_SetSlice(todo, n, n, subs);
			Py_XDECREF(subs);
		}
		Py_DECREF(t);
	}
	Py_XDECREF(seen);
	Py_XDECREF(todo);
	return rc;
}

/* ---- the entry points ------------------------------------------------------------------- */

int tp_pyaddr_preinit(struct tp_err *err)
{
	unsigned char seed[3 * sizeof G.id.k];
	const size_t nr = sizeof static_reprs / sizeof *static_reprs;
	const size_t nh = sizeof static_hashes / sizeof *static_hashes;

	if (G.ready)
		return 0;
	if (Py_IsInitialized())
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0,
				  "address hiding: the interpreter already runs");
	for (size_t i = 0; i < nr + nh; i++) {
		PyTypeObject *t = i < nr ? static_reprs[i].type : static_hashes[i - nr].type;
		int missing = i < nr ? t->tp_repr == NULL : t->tp_hash == NULL;
		if ((t->tp_flags & Py_TPFLAGS_READY) || missing)
			return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0,
					  "address hiding: type %s is %s", t->tp_name,
					  missing ? "missing its slot" : "ready already");
	}
	for (size_t got = 0; got < sizeof seed;) {
		ssize_t n = getrandom(seed + got, sizeof seed - got, 0);
		if (n < 0 && errno != EINTR)
			return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, errno,
					  "address hiding: getrandom");
		got += n > 0 ? (size_t)n : 0;
	}
	memcpy(G.id.k, seed, sizeof G.id.k);
	memcpy(G.hash.k, seed + sizeof G.id.k, sizeof G.hash.k);
	memcpy(G.secret.k, seed + 2 * sizeof G.id.k, sizeof G.secret.k);
	G.id.rounds = G.secret.rounds = TP_ADDR_ROUNDS;
	G.hash.rounds = TP_ADDR_HASH_ROUNDS;
	explicit_bzero(seed, sizeof seed);
	for (size_t i = 0; i < nr; i++) {
		*static_reprs[i].orig = static_reprs[i].type->tp_repr;
		static_reprs[i].type->tp_repr = static_reprs[i].repl;
	}
	for (size_t i = 0; i < nh; i++) {
		*static_hashes[i].orig = static_hashes[i].type->tp_hash;
		static_hashes[i].type->tp_hash = static_hashes[i].repl;
	}
	G.ready = 1;
	return 0;
}

int tp_pyaddr_zygote_init(struct tp_err *err)
{
	static int done;
	char bad[128];
	int rc;

	if (done)
		return 0;
	if (!G.ready)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0,
				  "address hiding: tp_pyaddr_preinit() did not run");
	if ((G.name_str = PyUnicode_InternFromString("__name__")) == NULL)
		return tp_py_fail("address hiding: __name__", err);
	if (patch_id() != 0)
		return tp_py_fail("address hiding: builtins.id", err);
	if (patch_thread() != 0)
		return tp_py_fail("address hiding: _thread", err);
	if (patch_decimal() != 0)
		return tp_py_fail("address hiding: decimal", err);
	if (patch_numpy() != 0)
		return tp_py_fail("address hiding: numpy", err);
	rc = find_stale(bad, sizeof bad);
	if (rc < 0)
		return tp_py_fail("address hiding: walking the types", err);
	if (rc > 0)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0,
				  "address hiding: type %s still prints or hashes an address", bad);
	done = 1;
	return 0;
}

void tp_pyaddr_worker_init(uint64_t entropy)
{
	if (G.ready)
		tp_addr_derive(&G.secret, entropy, &G.id);
}

PyObject *tp_pyaddr_original_repr(PyObject *o)
{
	reprfunc f = Py_TYPE(o)->tp_repr;

	for (size_t i = 0; i < sizeof static_reprs / sizeof *static_reprs; i++)
		if (static_reprs[i].repl == f)
			return (*static_reprs[i].orig)(o);
	if (f == repr_lock)
		return G.orig_lock(o);
	if (f == repr_rlock)
		return G.orig_rlock(o);
	return NULL;
}
