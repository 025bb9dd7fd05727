/*
 * pyalloc.c — the counting allocators behind every CPython domain and arena.
 * Invariant: current == sum of malloc_usable_size() of the live blocks plus the
 * live arena bytes, and a request that would take current above a nonzero
 * limit is refused before the underlying allocator is called.
 * The worker is single-threaded, so plain counters suffice (RAW runs without
 * the GIL only when threads exist, and none do after lockdown).
 */
#include <Python.h>

#include "pyalloc.h"

#include <malloc.h>
#include <stdlib.h>

static struct tp_pyalloc g_a;
static void (*g_on_refuse)(void);
static PyObjectArenaAllocator g_arena_base; /* CPython's own (mmap) */

static void *refuse(size_t grow)
{
	size_t total = g_a.current + grow;

	g_a.refusals++;
	g_a.refused_total = total < g_a.current ? (size_t)-1 : total;
	if (g_on_refuse != NULL)
		g_on_refuse();
	return NULL;
}

static int over_limit(size_t grow)
{
	return g_a.limit != 0 && (grow > g_a.limit || g_a.current > g_a.limit - grow);
}

static void add(size_t n)
{
	g_a.current += n;
	if (g_a.current > g_a.peak)
		g_a.peak = g_a.current;
}

/* Blocks freed here may predate the install (PyMem_RawMalloc during
 * pre-initialization is plain malloc): never let the count wrap. */
static void sub(size_t n)
{
	g_a.current = n < g_a.current ? g_a.current - n : 0;
}

static void *c_malloc(void *ctx, size_t n)
{
	void *p;

	(void)ctx;
	if (n == 0)
		n = 1; /* as CPython's own: malloc(0) may return NULL */
	if (over_limit(n))
		return refuse(n);
	p = malloc(n);
	if (p == NULL)
		return refuse(n);
	add(malloc_usable_size(p));
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
	if (over_limit(n))
		return refuse(n);
	p = calloc(nelem, elsize);
	if (p == NULL)
		return refuse(n);
	add(malloc_usable_size(p));
	return p;
}

static void *c_realloc(void *ctx, void *ptr, size_t n)
{
	size_t old = ptr ? malloc_usable_size(ptr) : 0;
	void *p;

	(void)ctx;
	if (n == 0)
		n = 1;
	if (n > old && over_limit(n - old))
		return refuse(n - old);
	p = realloc(ptr, n);
	if (p == NULL)
		return refuse(n > old ? n - old : 0);
	sub(old);
	add(malloc_usable_size(p));
	return p;
}

static void c_free(void *ctx, void *ptr)
{
	(void)ctx;
	if (ptr == NULL)
		return;
	sub(malloc_usable_size(ptr));
	free(ptr);
}

/* Arenas: with OBJ on malloc, only the frames' data stack chunks come here. */
static void *a_alloc(void *ctx, size_t n)
{
	void *p;

	(void)ctx;
	if (over_limit(n))
		return refuse(n);
	p = g_arena_base.alloc(g_arena_base.ctx, n);
	if (p == NULL)
		return refuse(n);
	add(n);
	return p;
}

static void a_free(void *ctx, void *ptr, size_t n)
{
	(void)ctx;
	g_arena_base.free(g_arena_base.ctx, ptr, n);
	sub(n);
}

void tp_pyalloc_install(void)
{
	static PyMemAllocatorEx alloc = { NULL, c_malloc, c_calloc, c_realloc, c_free };
	static PyObjectArenaAllocator arena = { NULL, a_alloc, a_free };

	/* OBJ on malloc, not pymalloc: pymalloc would carve objects out of arenas
	 * we also count, and a block would be counted twice. */
	PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &alloc);
	PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &alloc);
	PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &alloc);
	PyObject_GetArenaAllocator(&g_arena_base);
	PyObject_SetArenaAllocator(&arena);
}

void tp_pyalloc_set_limit(size_t limit)
{
	g_a.limit = limit;
}

void tp_pyalloc_reset_peak(void)
{
	g_a.peak = g_a.current;
	g_a.refusals = 0;
	g_a.refused_total = 0;
}

void tp_pyalloc_on_refuse(void (*fn)(void))
{
	g_on_refuse = fn;
}

const struct tp_pyalloc *tp_pyalloc_stats(void)
{
	return &g_a;
}
