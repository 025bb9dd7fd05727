/*
 * pyalloc.c — the counting allocators under every CPython domain and the arena
 * allocator. MEM and OBJ stay pymalloc; every byte pymalloc holds comes from
 * one of the two counted sources below it, so each byte is counted once:
 *   - arenas (PyObject_SetArenaAllocator): pymalloc's 1 MiB arenas, which hold
 *     every block of 512 bytes or less, and the frames' data-stack chunks;
 *   - RAW (malloc): RAW's own blocks and every MEM/OBJ block above 512 bytes,
 *     which pymalloc hands to PyMem_RawMalloc (and the small blocks it hands
 *     there when no arena may be added: near the limit, counted to the byte).
 * Invariant: current == the counted size (size_of) of the live RAW blocks plus
 * the live arena bytes, and a request that would take current above a nonzero
 * limit is refused before the underlying allocator is called.
 * The worker is single-threaded, so plain counters suffice (RAW runs without
 * the GIL only when threads exist, and none do after lockdown).
 */
#include <Python.h>

#include "pyalloc.h"
#include "huge.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The allocator's state, one instance. No signal handler touches it (the
 * verdict's flags are pyguard.c's volatile sig_atomic_t globals). */
static struct {
	/* -- the counters: written by every allocation and free (zygote and exec);
	 * limit set per exec by tp_pyalloc_set_limit, peak and the refusals reset
	 * per exec by tp_pyalloc_reset_peak */
	struct tp_pyalloc a;

	/* -- zygote (tp_pyalloc_install, tp_pyalloc_on_refuse), read-only after */
	void (*on_refuse)(void);
	PyObjectArenaAllocator arena_base;   /* CPython's own (mmap) */
	PyMemAllocatorEx mem_base, obj_base; /* pymalloc, as pre-initialization set it */

	/* -- zygote (tp_pyalloc_install, tp_pyalloc_settle), read-only after */
	int pymalloc;   /* OBJ was pymalloc when installed */
	size_t settled; /* blocks tp_pyalloc_settle took */
	/* -- every allocation: arenas refused to pymalloc, which then serves the
	 * block from RAW (not from a pool) */
	size_t quiet_refusals;

	/* -- during one pymalloc call: set by the p_* wrappers around it and
	 * restored after (see "MEM and OBJ" below) */
	int in_pymalloc;
} G;

static void *refuse(size_t grow)
{
	size_t total = G.a.current + grow;

	G.a.refusals++;
	G.a.refused_total = total < G.a.current ? (size_t)-1 : total;
	if (G.on_refuse != NULL)
		G.on_refuse();
	return NULL;
}

static int over_limit(size_t grow)
{
	return G.a.limit != 0 && (grow > G.a.limit || G.a.current > G.a.limit - grow);
}

static void add(size_t n)
{
	G.a.current += n;
	if (G.a.current > G.a.peak)
		G.a.peak = G.a.current;
}

/* Blocks freed here may predate the install (PyMem_RawMalloc during
 * pre-initialization is plain malloc): never let the count wrap. */
static void sub(size_t n)
{
	G.a.current = n < G.a.current ? G.a.current - n : 0;
}

/* ---- RAW: malloc, counted by chunk ---------------------------------------------
 * glibc serves a request from a chunk of at least its size, and up to 31 bytes
 * more when the free chunk it picks leaves too little to split; a large one from
 * the heap or from mmap (page multiples) depending on what is free. So
 * malloc_usable_size() of one request depends on the heap's history, and a warm
 * worker's exec counted a few bytes more or less than a cold one's (and the last
 * block could pass the limit by its slack). A request is therefore made in 64-byte
 * steps (pad), and a block is counted by the step its usable size falls in, or
 * for a large one by the pages it spans (size_of): whatever chunk served it, the
 * same request counts the same, and that count is known before the call (want).
 * The boundaries are chosen so that no slack crosses them (see size_of). */
#define STEP ((size_t)64)
#define LARGE ((size_t)65536 + 32) /* no 64-byte chunk's usable range straddles it */
#define PAGE ((size_t)4096)

static size_t pad(size_t n)
{
	return n > (size_t)-1 - 2 * STEP ? (size_t)-1 : ((n + 8 + STEP - 1) & ~(STEP - 1)) - 8;
}

/* The counted size of a block whose usable size is u: the chunk glibc meant,
 * u + 8 rounded down to the step (u + 8 is at most 31 over it), or for a large
 * block u + 16 rounded up to a page (the mmap'd chunk; a heap chunk's slack never
 * reaches the next page: its start is a multiple of 64 and 8..39 bytes away). */
static size_t size_of(size_t u)
{
	return u >= LARGE ? (u + 16 + PAGE - 1) & ~(PAGE - 1) : (u + 8) & ~(STEP - 1);
}

/* What a request of n bytes will count once served (size_of of its block). */
static size_t want(size_t n)
{
	size_t nb = pad(n) + 8;

	if (nb < n)
		return (size_t)-1;
	return nb - 8 >= LARGE ? (nb + 8 + PAGE - 1) & ~(PAGE - 1) : nb;
}

static void *c_malloc(void *ctx, size_t n)
{
	void *p;

	(void)ctx;
	if (n == 0)
		n = 1; /* as CPython's own: malloc(0) may return NULL */
	if (over_limit(want(n)))
		return refuse(want(n));
	p = malloc(pad(n));
	if (p == NULL)
		return refuse(want(n));
	add(size_of(malloc_usable_size(p)));
	return p;
}

static void *c_calloc(void *ctx, size_t nelem, size_t elsize)
{
	void *p;
	size_t n;

	(void)ctx;
	if (nelem == 0 || elsize == 0)
		nelem = elsize = 1;
	if (__builtin_mul_overflow(nelem, elsize, &n))
		return refuse((size_t)-1);
	if (over_limit(want(n)))
		return refuse(want(n));
	p = calloc(1, pad(n));
	if (p == NULL)
		return refuse(want(n));
	add(size_of(malloc_usable_size(p)));
	return p;
}

static void *c_realloc(void *ctx, void *ptr, size_t n)
{
	size_t old = ptr ? size_of(malloc_usable_size(ptr)) : 0, w;
	void *p;

	(void)ctx;
	if (n == 0)
		n = 1;
	w = want(n);
	if (w > old && over_limit(w - old))
		return refuse(w - old);
	p = realloc(ptr, pad(n));
	if (p == NULL)
		return refuse(w > old ? w - old : 0);
	sub(old);
	add(size_of(malloc_usable_size(p)));
	return p;
}

static void c_free(void *ctx, void *ptr)
{
	(void)ctx;
	if (ptr == NULL)
		return;
	sub(size_of(malloc_usable_size(ptr)));
	free(ptr);
}

/* ---- MEM and OBJ: pymalloc, counted below it --------------------------------------
 * A small block comes out of an arena (counted when the arena is taken), a large
 * one out of PyMem_RawMalloc (counted by RAW): counting here too would count a
 * block twice. These wrappers only mark "inside pymalloc", so an arena that
 * does not fit is refused quietly: pymalloc then serves the small block from
 * PyMem_RawMalloc, which is counted to the byte and trips the limit itself. */

static void *p_malloc(void *ctx, size_t n)
{
	const PyMemAllocatorEx *b = ctx;
	int was = G.in_pymalloc;
	void *p;

	G.in_pymalloc = 1;
	p = b->malloc(b->ctx, n);
	G.in_pymalloc = was;
	return p;
}

static void *p_calloc(void *ctx, size_t nelem, size_t elsize)
{
	const PyMemAllocatorEx *b = ctx;
	int was = G.in_pymalloc;
	void *p;

	G.in_pymalloc = 1;
	p = b->calloc(b->ctx, nelem, elsize);
	G.in_pymalloc = was;
	return p;
}

static void *p_realloc(void *ctx, void *ptr, size_t n)
{
	const PyMemAllocatorEx *b = ctx;
	int was = G.in_pymalloc;
	void *p;

	G.in_pymalloc = 1;
	p = b->realloc(b->ctx, ptr, n);
	G.in_pymalloc = was;
	return p;
}

static void p_free(void *ctx, void *ptr)
{
	const PyMemAllocatorEx *b = ctx;
	b->free(b->ctx, ptr);
}

/* ---- arenas: pymalloc's and the frames' data stack (mmap) ---------------------------- */

/* From pymalloc a refusal is quiet (its fallback is RAW, which judges the block
 * itself); anything else (a data-stack chunk) has no fallback and trips. */
static void *a_alloc(void *ctx, size_t n)
{
	void *p;

	(void)ctx;
	if (over_limit(n))
		p = NULL;
	else if ((p = tp_huge_alloc(n)) == NULL) /* the zygote's: its huge region (huge.h) */
		p = G.arena_base.alloc(G.arena_base.ctx, n);
	if (p == NULL) {
		G.quiet_refusals += G.in_pymalloc;
		return G.in_pymalloc ? NULL : refuse(n);
	}
	add(n);
	return p;
}

static void a_free(void *ctx, void *ptr, size_t n)
{
	(void)ctx;
	if (!tp_huge_free(ptr, n))
		G.arena_base.free(G.arena_base.ctx, ptr, n);
	sub(n);
}

void tp_pyalloc_install(void)
{
	static PyMemAllocatorEx raw = { NULL, c_malloc, c_calloc, c_realloc, c_free };
	static PyMemAllocatorEx mem = { &G.mem_base, p_malloc, p_calloc, p_realloc, p_free };
	static PyMemAllocatorEx obj = { &G.obj_base, p_malloc, p_calloc, p_realloc, p_free };
	static PyObjectArenaAllocator arena = { NULL, a_alloc, a_free };

	const char *name = _PyMem_GetCurrentAllocatorName();

	G.pymalloc = name != NULL && strcmp(name, "pymalloc") == 0;
	PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &G.mem_base);
	PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &G.obj_base);
	PyObject_GetArenaAllocator(&G.arena_base);
	/* RAW first: pymalloc's large blocks reach it through PyMem_RawMalloc. */
	PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &raw);
	PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
	PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
	PyObject_SetArenaAllocator(&arena);
}

/* ---- settling the zygote's pools ------------------------------------------------
 * pymalloc (CPython 3.11, 64-bit, with its radix tree) serves a request of up to
 * 512 bytes from one of 32 size classes (multiples of 16), each from the first of
 * its partly used pools: 16 KiB, aligned, starting with a header whose first
 * field is the count of the pool's blocks in use; an empty pool is taken from
 * its arena's free pools (ones used before) or carved from untouched space.
 * After the zygote's start there are hundreds of partly used pools with a few
 * free blocks each, and free pools whose pages the zygote wrote; a worker's
 * objects went there, and each landing copied a page of the zygote (for 1,000
 * small records, ~150 of the worker's copy-on-write faults).
 *
 * Here each class is asked for blocks until one comes from a pool that is empty
 * (its count is then 1) and whose pages after the header's no process has
 * touched (mincore): every partly used pool and every used-before free pool is
 * then full, and what a worker allocates fills fresh pools densely: fewer pages,
 * and each costs a zero-fill fault, not a copy. The blocks taken are leaked on
 * purpose (their pages were resident already); blocks a worker frees later go
 * back to their pools and are reused as before. Runs only where OBJ is pymalloc,
 * since it reads pymalloc's pool header. */
#define POOL_BYTES ((uintptr_t)16384)
#define SMALL_MAX 512
#define CLASS_STEP 16
#define SETTLE_CAP (1 << 20) /* blocks per class at most */

/* Whether no page of the pool after its first is resident. */
static int pool_untouched(uintptr_t pool)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[POOL_BYTES / 4096];

	if (page <= 0 || POOL_BYTES / (uintptr_t)page > sizeof vec ||
	    mincore((void *)(pool + (uintptr_t)page), POOL_BYTES - (uintptr_t)page, vec) != 0)
		return 1; /* cannot tell: settle no further */
	for (uintptr_t i = 0; i + 1 < POOL_BYTES / (uintptr_t)page; i++)
		if (vec[i] & 1)
			return 0;
	return 1;
}

void tp_pyalloc_settle(void)
{
	if (!G.pymalloc || G.settled != 0)
		return;
	for (size_t size = CLASS_STEP; size <= SMALL_MAX; size += CLASS_STEP) {
		for (int i = 0; i < SETTLE_CAP; i++) {
			size_t quiet = G.quiet_refusals;
			void *p = PyObject_Malloc(size);
			uintptr_t pool = (uintptr_t)p & ~(POOL_BYTES - 1);

			if (p == NULL)
				break;
			G.settled++;
			if (G.quiet_refusals != quiet)
				return; /* no arena: the block is RAW's, with no pool header to read
					 */
			if (*(const unsigned int *)pool == 1 && pool_untouched(pool))
				break; /* a fresh pool: this class is settled */
		}
	}
}

size_t tp_pyalloc_settled(void)
{
	return G.settled;
}

void tp_pyalloc_set_limit(size_t limit)
{
	G.a.limit = limit;
}

void tp_pyalloc_reset_peak(void)
{
	G.a.peak = G.a.current;
	G.a.refusals = 0;
	G.a.refused_total = 0;
}

void tp_pyalloc_on_refuse(void (*fn)(void))
{
	G.on_refuse = fn;
}

const struct tp_pyalloc *tp_pyalloc_stats(void)
{
	return &G.a;
}
