/*
 * pyalloc.h — counting allocators under every CPython heap domain (RAW, MEM,
 * OBJ) and the arena allocator, with one byte limit for all of them.
 *
 * Usage:
 *   1. tp_pyalloc_install(): after Py_PreInitialize(), before
 *      Py_InitializeFromConfig(), so every block the interpreter ever holds is
 *      counted (CPython forbids replacing allocators later: gh-96997).
 *   2. tp_pyalloc_set_limit() arms an exec's memory_bytes (0 = off);
 *      tp_pyalloc_reset_peak() makes the peak count from the exec's start.
 *   3. tp_pyalloc_on_refuse() names a function called once per refused request
 *      (the layer trips memory_limit from there).
 * MEM and OBJ stay pymalloc and are counted through the arenas and RAW below
 * them (each byte once); RAW sizes come from malloc_usable_size(), not a
 * header: see docs/python.md.
 */
#ifndef TP_PYALLOC_H
#define TP_PYALLOC_H

#include <stddef.h>

struct tp_pyalloc {
	size_t limit;         /* 0 = no limit */
	size_t current;       /* bytes held now: usable sizes of live RAW blocks + arenas */
	size_t peak;          /* highest current since tp_pyalloc_reset_peak() */
	size_t refusals;      /* requests refused */
	size_t refused_total; /* current + requested at the last refusal (saturated) */
};

void tp_pyalloc_install(void);
void tp_pyalloc_set_limit(size_t limit);
void tp_pyalloc_reset_peak(void);
void tp_pyalloc_on_refuse(void (*fn)(void));
/* In the zygote, last (lang.h's zygote_settle): fill the free blocks of every
 * partly used pymalloc pool, so that a worker's small objects go to fresh pools
 * instead of copying one zygote page per few blocks. Nothing when OBJ is not
 * pymalloc. The blocks it took stay taken (they are the zygote's, whose pages
 * were resident anyway). */
void tp_pyalloc_settle(void);
/* The blocks tp_pyalloc_settle took (0 before it ran, or when it did nothing). */
size_t tp_pyalloc_settled(void);
/* The live counters; read-only for callers, safe to read from a signal handler. */
const struct tp_pyalloc *tp_pyalloc_stats(void);

#endif
