/*
 * lalloc.h — a counting lua_Alloc that enforces a byte limit on a whole Lua heap.
 *
 * Usage:
 *   1. tp_lalloc_init(&a, 0) before lua_newstate(tp_lalloc, &a) (0 = no limit).
 *   2. tp_lalloc_set_limit() arms the exec's memory_bytes; tp_lalloc_reset_peak()
 *      makes the peak count from the exec's start.
 *   3. Read current, peak, refusals and refused_total at any time.
 * Pure: no syscalls of its own (malloc/realloc/free only, and on_fail when malloc
 * fails), safe to read from a
 * signal handler. With scrub set (isolation "state"), no byte the heap held
 * goes back to malloc unzeroed: a block that moves is copied, then zeroed.
 */
#ifndef TP_LALLOC_H
#define TP_LALLOC_H

#include <stddef.h>

struct tp_lalloc {
	size_t limit;         /* 0 = no limit */
	size_t current;       /* bytes held by the Lua heap now */
	size_t peak;          /* highest current since init or tp_lalloc_reset_peak() */
	size_t refusals;      /* growth requests refused (Lua may retry after a GC) */
	size_t refused_total; /* current + requested growth at the last refusal */
	int scrub;            /* zero every byte before it goes back to malloc */
	/* Called (if set) when malloc itself fails a growth within the limit: the
	 * kernel refused it (RLIMIT_AS, under kernel-only). Must not allocate. */
	void (*on_fail)(void);
};

void tp_lalloc_init(struct tp_lalloc *a, size_t limit);
void tp_lalloc_set_limit(struct tp_lalloc *a, size_t limit);
void tp_lalloc_reset_peak(struct tp_lalloc *a);
/* The lua_Alloc; ud is a struct tp_lalloc *. Refuses (returns NULL) any growth
 * that would take current above limit; never refuses a shrink or a free. */
void *tp_lalloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
