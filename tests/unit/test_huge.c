/*
 * test_huge.c — the zygote's memory in 2 MiB pages (sandbox/huge.c).
 *
 * A process lays itself out as a zygote does (tp_huge_begin, large blocks
 * carved from the region, a heap grown from the aligned break), then
 * tp_huge_end: the blocks it fills must be huge pages (the kernel's own count,
 * AnonHugePages in /proc/self/smaps), the ones it barely uses must not, and a
 * child after fork must see and write the same bytes as with small pages,
 * without the parent seeing its writes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "huge.h"
#include "tap.h"

#define MIB ((size_t)1 << 20)
#define BLOCK (2 * MIB)

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* kB of AnonHugePages in the mappings that overlap [lo, hi) (whole mappings:
 * smaps counts per mapping). */
static long huge_kb(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	long kb = 0;
	int in = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long a, b, v;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a < hi && b > lo;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &v) == 1)
			kb += (long)v;
	}
	fclose(f);
	return kb;
}

/* Can this kernel collapse a block now (Linux 6.1, transparent huge pages built
 * in, a free 2 MiB page to be had)? 0 if so, else its errno. */
static int collapse_probe(void)
{
	char *m = mmap(NULL, 2 * BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return errno;
	char *a = (char *)(((uintptr_t)m + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1));
	memset(a, 1, BLOCK);
	int e = madvise(a, BLOCK, MADV_COLLAPSE) == 0 ? 0 : errno;
	munmap(m, 2 * BLOCK);
	return e;
}

static int can_collapse(void)
{
	int e = collapse_probe();
	if (e != 0)
		TP_SKIP("MADV_COLLAPSE refused (%s): the blocks stay in 4 KiB pages, as "
			"tp_huge_end promises; only the layout is checked",
			strerror(e));
	return e == 0;
}

static void test_layout_and_collapse(void)
{
	int collapse = can_collapse();

	CHECK(tp_huge_alloc(MIB) == NULL); /* not begun: the caller's own */
	tp_huge_begin();
	CHECK_EQ_INT((uintptr_t)sbrk(0) % BLOCK, 0);

	/* Six arenas, one after another from an aligned start, filled; a seventh
	 * taken and given back comes back for the same size. */
	char *arena[6];
	for (int i = 0; i < 6; i++) {
		arena[i] = tp_huge_alloc(MIB);
		CHECK(arena[i] != NULL);
		if (arena[i] == NULL)
			return;
		memset(arena[i], 'a' + i, MIB);
	}
	CHECK_EQ_INT((uintptr_t)arena[0] % BLOCK, 0);
	for (int i = 1; i < 6; i++)
		CHECK(arena[i] == arena[i - 1] + MIB);
	char *spare = tp_huge_alloc(64 << 10);
	CHECK(spare == arena[5] + MIB);
	CHECK_EQ_INT(tp_huge_free(spare, 64 << 10), 1);
	CHECK(tp_huge_alloc(64 << 10) == spare);
	CHECK_EQ_INT(tp_huge_free(spare, 64 << 10), 1);
	int local;
	CHECK_EQ_INT(tp_huge_free(&local, sizeof local), 0); /* not the region's */

	/* The heap from the aligned break: 5 MiB written, then 100 KiB. */
	char *heap = sbrk((intptr_t)(5 * MIB + (100 << 10)));
	CHECK(heap != (void *)-1);
	memset(heap, 'h', 5 * MIB + (100 << 10));

	int n = tp_huge_end();
	CHECK(tp_huge_alloc(MIB) == NULL); /* ended: the caller's own */
	uintptr_t r0 = (uintptr_t)arena[0], h0 = (uintptr_t)heap;
	/* What it says it collapsed is what the kernel shows. */
	CHECK_EQ_INT(n, (huge_kb(r0, r0 + 1) + huge_kb(h0, h0 + 1)) / 2048);
	if (collapse && n < 6 && collapse_probe() != 0) {
		/* A kernel that collapsed a block a moment ago and cannot now has run
		 * out of free 2 MiB pages (fragmented memory): what huge.c then does
		 * (leave blocks small) is all there is to check. */
		TP_SKIP("MADV_COLLAPSE now refused (%s): %d of 6 blocks collapsed",
			strerror(collapse_probe()), n);
	} else if (collapse) {
		/* Region: the six arenas fill three blocks; the fourth holds only the
		 * spare, given back (too empty to collapse). Heap: two whole blocks;
		 * its third holds 1 MiB + 100 KiB of 2 and becomes whole too. */
		CHECK_EQ_INT(n, 6);
		CHECK_EQ_INT(huge_kb(r0, r0 + 3 * BLOCK), 3 * 2048);
		CHECK_EQ_INT(huge_kb(h0, h0 + 3 * BLOCK), 3 * 2048);
	} else {
		CHECK_EQ_INT(n, 0);
	}
	/* The region ends with the block the spare was in (given back: too empty
	 * to collapse); nothing is reserved past it. */
	CHECK_EQ_INT(huge_kb(r0, r0 + 4 * BLOCK) % 2048, 0); /* one mapping: whole blocks only */
	CHECK(mincore((void *)(r0 + 3 * BLOCK), 4096, (unsigned char[1]){ 0 }) == 0);
	CHECK(mincore((void *)(r0 + 4 * BLOCK), 4096, (unsigned char[1]){ 0 }) != 0);
	CHECK_EQ_INT(tp_huge_end(), 0); /* once only */
	for (int i = 0; i < 6; i++)
		CHECK(arena[i][0] == 'a' + i && arena[i][MIB - 1] == 'a' + i);
	CHECK(heap[0] == 'h' && heap[5 * MIB + (100 << 10) - 1] == 'h');

	/* A worker: it writes one byte in a huge block and sees its neighbours
	 * unchanged; the zygote does not see its write. It gives an arena back
	 * (munmap, the region being closed). */
	pid_t pid = fork();
	if (pid == 0) {
		arena[2][4096] = 'X';
		int ok = arena[2][4096] == 'X' && arena[2][4095] == 'c' && arena[2][4097] == 'c' &&
			 arena[3][0] == 'd' && heap[3 * MIB] == 'h';
		ok = ok && tp_huge_free(arena[4], MIB) == 1 &&
		     mincore(arena[4], 4096, (unsigned char[1]){ 0 }) != 0 && arena[5][0] == 'f';
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(arena[2][4096] == 'c');
	CHECK(arena[4][0] == 'e');
}

/* Blocks the zygote barely uses stay in small pages: no zygote memory is
 * bloated with zeros for them. */
static void test_sparse_blocks_stay_small(void)
{
	tp_huge_begin();
	char *a = tp_huge_alloc(64 << 10);
	char *h = sbrk(100 << 10);
	CHECK(a != NULL && h != (void *)-1);
	if (a == NULL || h == (void *)-1)
		return;
	memset(a, 1, 64 << 10);
	memset(h, 1, 100 << 10);
	long heap_kb = huge_kb((uintptr_t)h, (uintptr_t)h + 1); /* the first test's */
	CHECK_EQ_INT(tp_huge_end(), 0);
	CHECK_EQ_INT(huge_kb((uintptr_t)a, (uintptr_t)a + 1), 0);
	CHECK_EQ_INT(huge_kb((uintptr_t)h, (uintptr_t)h + 1), heap_kb);
	CHECK(sbrk(0) == h + (100 << 10)); /* the break not moved on for it */
}

int main(void)
{
	test_layout_and_collapse();
	test_sparse_blocks_stay_small();
	return tp_test_done("test_huge");
}
