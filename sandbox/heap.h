/*
 * heap.h — the zygote's malloc heap settled before its first fork (heap.c).
 *
 * Usage: tp_heap_settle() in the zygote, after malloc_trim and before the first
 * fork, from one thread. Returns the free chunks it took for the zygote (so a
 * worker's malloc is served from fresh memory), or -1 when it stopped at what
 * it does not recognise (a layout, a malloc that is not glibc's); what it took
 * by then stays taken, and the heap is otherwise as malloc keeps it.
 */
#ifndef TP_HEAP_H
#define TP_HEAP_H

int tp_heap_settle(void);

#endif
