/*
 * huge.h — the zygote's memory in 2 MiB pages before its first fork (huge.c).
 *
 * Usage, in the zygote, from one thread:
 *   1. tp_huge_begin() before the language builds its interpreter: the program
 *      break is moved to a 2 MiB boundary and a region is reserved for the
 *      language's large blocks.
 *   2. tp_huge_alloc(n) / tp_huge_free(p, n) from the language's allocator for
 *      its large blocks (CPython's arenas): NULL from tp_huge_alloc means "use
 *      your own" (not begun, ended, or the region is full); tp_huge_free returns
 *      1 when p was the region's (it is released), 0 when it was not. Both may
 *      be called in a worker, after the end.
 *   3. tp_huge_end() after the settle and before the first fork: each 2 MiB
 *      block of the heap and the region that the zygote mostly uses is collapsed
 *      into one huge page. Returns how many; 0 where the kernel has no
 *      MADV_COLLAPSE or no transparent huge pages (nothing else changes).
 */
#ifndef TP_HUGE_H
#define TP_HUGE_H

#include <stddef.h>

void tp_huge_begin(void);
void *tp_huge_alloc(size_t n);
int tp_huge_free(void *p, size_t n);
int tp_huge_end(void);
/* In the zygote, before the language builds its interpreter, from one thread:
 * the program's segments (code, constants, and its writable data past RELRO)
 * moved into huge pages at their own addresses, when the binary was linked with
 * its segments on 2 MiB boundaries and the kernel collapses every block of one.
 * How many were moved. */
int tp_huge_text(void);

#endif
