/*
 * heap.c — the zygote's malloc heap settled before its first fork.
 *
 * After the zygote's start (and malloc_trim), glibc's main arena holds a few
 * hundred free chunks scattered through pages the zygote also uses. A worker's
 * malloc took them first: best fit from the bins, each take unlinking its chunk
 * from a list whose neighbours live in other pages. Each page so written was
 * copied (copy-on-write), for a few bytes: ~70 of the faults of a Python worker
 * returning 1,000 records, and a third of a Lua worker's.
 *
 * tp_heap_settle takes every free chunk of the main arena for the zygote, those
 * the thread cache (tcache) holds first (they are all leaked on purpose), so a worker's malloc is
 * served from the top chunk: new memory, packed, whose pages cost a zero-fill fault and nobody
 * else's copy. The chunks taken cost nothing resident: malloc_trim already gave back the pages
 * inside them, and taking one writes only its own header.
 *
 * It reads glibc's chunk layout (a size word before each chunk, its low bit
 * saying the chunk before is in use; chunks contiguous from the heap's start to
 * the top chunk, which ends at the program break; the first chunk the thread
 * cache's counts, 64 of 16 bits, one per chunk size from 32 bytes in steps of
 * 16) and believes none of it: the walk must end exactly at the break, every
 * size must be a sane multiple of 16, a count must fall by one when its chunk is
 * taken, and a chunk malloc hands back must lie in the heap; otherwise it stops
 * where it is (what it took stays taken, and a worker pays the faults of the
 * rest: nothing else).
 * Under AddressSanitizer, whose malloc is its own, it does nothing.
 */
#include "heap.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TP_HEAP_FOREIGN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_HEAP_FOREIGN 1
#endif
#endif
#ifndef TP_HEAP_FOREIGN
#define TP_HEAP_FOREIGN 0 /* malloc is glibc's own */
#endif

#define SIZE_SZ sizeof(size_t)
#define CHUNK_ALIGN 16u
#define CHUNK_MIN 32u
#define PREV_INUSE 1u
#define FLAG_BITS 7u
#define MAX_FREE 4096 /* free chunks taken per pass at most */
#define PASSES 4      /* a pass may meet a chunk split from a larger one */
#define TCACHE_BINS 64
#define TCACHE_CHUNK (sizeof(size_t) * 2 + TCACHE_BINS * 2 + TCACHE_BINS * sizeof(void *))
#define TCACHE_MAX 7 /* glibc's default count per bin: more is not the layout read here */

struct heap {
	uintptr_t start, end; /* [heap] in /proc/self/maps; end is the break */
};

/* The [heap] mapping holding p, from /proc/self/maps. */
static int find_heap(uintptr_t p, struct heap *h)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL)
		return -1;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= p && p < b &&
		    strstr(line, "[heap]") != NULL) {
			h->start = a;
			h->end = b;
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static size_t chunk_size(uintptr_t c)
{
	return *(const size_t *)(c + SIZE_SZ) & ~(size_t)FLAG_BITS;
}

/* The sizes of the free chunks from the heap's start to the top chunk, in
 * sizes[] (at most max); their count, or -1 when the walk does not end exactly
 * at the break (the layout is not what this file reads). */
static int free_chunks(const struct heap *h, size_t *sizes, int max)
{
	uintptr_t c = h->start;
	int n = 0;

	while (c + 2 * SIZE_SZ <= h->end) {
		size_t sz = chunk_size(c);
		if (sz < CHUNK_MIN || sz % CHUNK_ALIGN != 0 || sz > h->end - c)
			return -1;
		if (c + sz == h->end)
			return n; /* the top chunk */
		if (c + sz + 2 * SIZE_SZ > h->end)
			return -1;
		int in_use = (*(const size_t *)(c + sz + SIZE_SZ) & PREV_INUSE) != 0;
		if (!in_use && n < max)
			sizes[n++] = sz;
		c += sz;
	}
	return -1;
}

/* Take what the thread cache holds: its counts are the first chunk's data. */
static int drain_tcache(const struct heap *h)
{
	uintptr_t first = h->start;
	volatile const uint16_t *counts = (const uint16_t *)(first + 2 * SIZE_SZ);
	int taken = 0;

	if (chunk_size(first) != ((TCACHE_CHUNK + CHUNK_ALIGN - 1) & ~(size_t)(CHUNK_ALIGN - 1)))
		return -1;
	for (int i = 0; i < TCACHE_BINS; i++) {
		unsigned n = counts[i];
		if (n > TCACHE_MAX)
			return -1;
		for (; n > 0; n--) {
			void *p = malloc(CHUNK_MIN + (size_t)i * CHUNK_ALIGN - SIZE_SZ);
			if (p == NULL || counts[i] != n - 1 || (uintptr_t)p < h->start ||
			    (uintptr_t)p >= h->end)
				return -1;
			taken++;
		}
	}
	return taken;
}

int tp_heap_settle(void)
{
	static size_t sizes[MAX_FREE];
	struct heap h;
	int taken = 0;

	if (TP_HEAP_FOREIGN)
		return -1;
	void *probe = malloc(1); /* kept: freed, it would wait in the tcache */

	if (probe == NULL)
		return -1;
	int found = find_heap((uintptr_t)probe, &h);
	if (found != 0 || (uintptr_t)sbrk(0) != h.end)
		return -1;
	int tc = drain_tcache(&h);
	if (tc < 0)
		return -1;
	taken += tc;
	for (int pass = 0; pass < PASSES; pass++) {
		int n = free_chunks(&h, sizes, MAX_FREE);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			/* A request of size - SIZE_SZ is a chunk of exactly size: the
			 * bins give an exact fit when one is free. */
			void *p = malloc(sizes[i] - SIZE_SZ);
			if (p == NULL)
				return -1;
			if ((uintptr_t)p < h.start || (uintptr_t)p >= h.end) {
				free(p); /* mmapped, not a chunk of the heap */
				continue;
			}
			taken++;
		}
		if ((uintptr_t)sbrk(0) != h.end)
			return -1; /* the heap grew: what is left is top */
	}
	return taken;
}
