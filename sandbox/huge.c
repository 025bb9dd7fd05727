/*
 * huge.c — the zygote's memory in 2 MiB pages before its first fork.
 *
 * A fork copies one page-table entry for each page of the zygote's private
 * memory that is present, and the worker's exit takes each down again: for a
 * Python zygote, ~3,300 pages (13 MiB: malloc's heap and CPython's arenas), a
 * quarter of a millisecond each way, whatever the exec does. A 2 MiB huge page
 * is one entry. A worker that writes into one gets its own copy of the 4 KiB it
 * writes, as before (the kernel splits the entry in the worker only); the ones
 * it never writes cost it one entry in and one out.
 *
 * The zygote's memory is laid out so that most of it fills whole 2 MiB blocks:
 * the program break starts on a boundary (malloc's heap grows from it), and the
 * language's large blocks (CPython's 1 MiB arenas and its frames' data-stack
 * chunks, which the kernel would scatter) are carved one after another from a
 * reserved, aligned region. At the end each block the zygote mostly uses is
 * collapsed into a huge page (MADV_COLLAPSE, Linux 6.1): its unused pages are
 * filled with zeros, so the zygote holds up to half a block more per block. No
 * mapping is marked for huge pages (no MADV_HUGEPAGE): a worker's own new
 * memory is never given one.
 *
 * Where the kernel refuses (no transparent huge pages, an older kernel), the
 * blocks stay in 4 KiB pages and nothing else differs.
 *
 * The program's code and read-only data too (tp_huge_text): a worker reads them
 * through faults on the file's pages, each mapping 16 of them (~40 faults for a
 * Python `1+1`, a tenth of its CPU with the mappings taken down at its exit).
 * tidepool-python is linked with its segments on 2 MiB boundaries (the
 * Makefile's -z max-page-size), so each read-only segment, rounded up to whole
 * blocks, is copied into anonymous memory, collapsed into huge pages and moved
 * over the file's mapping at the same addresses (mremap): the same bytes with
 * the same protections, never writable and executable at once. Its writable
 * data (.data, CPython's runtime state, .bss: 1.6 MiB, which a fork copied page
 * by page) likewise, from the end of its RELRO part. A worker
 * inherits them by a few page-table entries and takes no fault on them. Only
 * when every block collapses (otherwise a fork would copy an entry per 4 KiB
 * page, which costs more than the faults it saves); not under AddressSanitizer.
 * Tools that name code by its file (perf) see anonymous memory there; the
 * addresses are the binary's own (it is not position-independent), so
 * `addr2line -e build/tidepool-python ADDRESS` names them.
 */
#include "huge.h"

#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define BLOCK ((uintptr_t)2 << 20)
#define REGION ((size_t)64 << 20)
#define NFREE 32

static uintptr_t align_up(uintptr_t a)
{
	return (a + BLOCK - 1) & ~(BLOCK - 1);
}

/* x86-64's page: tp_huge_begin and tp_huge_text do nothing on a kernel of
 * another page size. */
#define PAGE ((uintptr_t)4096)

static uintptr_t page_up(uintptr_t a)
{
	return (a + PAGE - 1) & ~(PAGE - 1);
}

static int page_is_4k(void)
{
	return sysconf(_SC_PAGESIZE) == (long)PAGE;
}

/* How many pages of [lo, hi) (page-aligned, at most a block) are resident. */
static size_t resident(uintptr_t lo, uintptr_t hi)
{
	unsigned char v[BLOCK / PAGE];
	size_t in = 0;

	if (hi <= lo || hi - lo > BLOCK || mincore((void *)lo, hi - lo, v) != 0)
		return 0;
	for (size_t i = 0; i < (hi - lo) / PAGE; i++)
		in += v[i] & 1;
	return in;
}

/* One zygote's, set up by tp_huge_begin and fixed by tp_huge_end; in a worker
 * only read (tp_huge_free). Single-threaded: the zygote runs no thread. */
static struct {
	int open;            /* between begin and end: tp_huge_alloc carves */
	uintptr_t brk0;      /* the break as begin aligned it (0: not aligned) */
	uintptr_t base, end; /* the region: [base, end) reserved, aligned */
	uintptr_t bump;      /* carved up to here */
	struct {
		uintptr_t p;
		size_t n;
	} freed[NFREE]; /* blocks given back while open, for reuse of their size */
} H;

void tp_huge_begin(void)
{
	uintptr_t cur = (uintptr_t)sbrk(0);

	memset(&H, 0, sizeof H);
	if (!page_is_4k())
		return;
	if (cur != (uintptr_t)-1 && sbrk((intptr_t)(align_up(cur) - cur)) != (void *)-1)
		H.brk0 = align_up(cur);
	/* The region, aligned: reserve a block more and trim both ends. */
	void *r = mmap(NULL, REGION + BLOCK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (r == MAP_FAILED)
		return;
	uintptr_t lo = (uintptr_t)r, base = align_up(lo);
	if (base > lo)
		munmap(r, base - lo);
	if (base + REGION < lo + REGION + BLOCK)
		munmap((void *)(base + REGION), lo + REGION + BLOCK - (base + REGION));
	H.base = H.bump = base;
	H.end = base + REGION;
	H.open = 1;
}

void *tp_huge_alloc(size_t n)
{
	if (!H.open || n == 0)
		return NULL;
	n = page_up(n);
	for (int i = 0; i < NFREE; i++)
		if (H.freed[i].p != 0 && H.freed[i].n == n) {
			uintptr_t p = H.freed[i].p;
			H.freed[i].p = 0;
			return (void *)p;
		}
	if (n > H.end - H.bump || mprotect((void *)H.bump, n, PROT_READ | PROT_WRITE) != 0)
		return NULL;
	H.bump += n;
	return (void *)(H.bump - n);
}

int tp_huge_free(void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;

	if (H.base == 0 || a < H.base || a >= H.end)
		return 0;
	n = page_up(n);
	if (!H.open) {
		munmap(p, n); /* a worker's, or the zygote's after the end */
		return 1;
	}
	/* Kept mapped, so the region stays one mapping to collapse; its pages go. */
	madvise(p, n, MADV_DONTNEED);
	for (int i = 0; i < NFREE; i++)
		if (H.freed[i].p == 0) {
			H.freed[i].p = a;
			H.freed[i].n = n;
			return 1;
		}
	return 1; /* no room to remember it: its address space stays unused */
}

/* Collapses [a, a + BLOCK) when at least half its pages are present. */
static int collapse(uintptr_t a)
{
	return resident(a, a + BLOCK) * 2 >= BLOCK / PAGE &&
	       madvise((void *)a, BLOCK, MADV_COLLAPSE) == 0;
}

int tp_huge_end(void)
{
	int n = 0;

	if (H.open) {
		H.open = 0;
		/* The last block whole (its rest readable, zero), the rest given back. */
		uintptr_t hi = align_up(H.bump);
		if (hi > H.bump &&
		    mprotect((void *)H.bump, hi - H.bump, PROT_READ | PROT_WRITE) != 0)
			hi = H.bump & ~(BLOCK - 1);
		if (H.end > hi)
			munmap((void *)hi, H.end - hi);
		H.end = hi;
		for (uintptr_t a = H.base; a + BLOCK <= hi; a += BLOCK)
			n += collapse(a);
	}
	if (H.brk0 != 0) {
		/* The heap from the aligned break; its last block whole too, when the
		 * zygote mostly uses it (malloc takes the break on from wherever it is). */
		uintptr_t cur = (uintptr_t)sbrk(0);
		if (cur != (uintptr_t)-1 && cur > H.brk0 && cur < align_up(cur)) {
			if (resident(cur & ~(BLOCK - 1), cur) * 2 >= BLOCK / PAGE)
				sbrk((intptr_t)(align_up(cur) - cur));
			cur = (uintptr_t)sbrk(0);
		}
		for (uintptr_t a = H.brk0; cur != (uintptr_t)-1 && a + BLOCK <= cur; a += BLOCK)
			n += collapse(a);
		H.brk0 = 0;
	}
	return n;
}

/* ---- the program's own segments ------------------------------------------------ */

#define MAX_SEGS 8

struct seg {
	uintptr_t lo, hi; /* where it goes: a block boundary, and its end rounded up to one */
	size_t len;       /* the bytes to copy: the segment's own, from lo */
	int prot;
};

/* Is any page of [lo, hi) mapped (mincore answers for mapped pages only)? */
static int any_mapped(uintptr_t lo, uintptr_t hi)
{
	unsigned char v;
	for (uintptr_t a = lo; a < hi; a += PAGE)
		if (mincore((void *)a, PAGE, &v) == 0)
			return 1;
	return 0;
}

/* The main program's segments to move: each read-only PT_LOAD of at least half
 * a block that starts on a block, and the writable one from the end of its
 * RELRO part (its constants after relocation, which stay the file's) when that
 * is on a block; each only when nothing is mapped in its rounding up. */
static int find_segs(struct dl_phdr_info *info, size_t size, void *data)
{
	struct seg *s = data;
	uintptr_t relro_end = 0;
	int n = 0;

	(void)size;
	if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0')
		return 0; /* a library: the main program comes first */
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
			relro_end = page_up(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
					    info->dlpi_phdr[i].p_memsz);
	for (int i = 0; i < info->dlpi_phnum && n < MAX_SEGS - 1; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, end = page_up(lo + ph->p_memsz);
		int w = (ph->p_flags & PF_W) != 0;
		if (ph->p_type != PT_LOAD)
			continue;
		if (w && relro_end > lo && relro_end < end)
			lo = relro_end;
		/* A small read-only one (the ELF headers, the symbols) is read too
		 * rarely to be worth a block of memory. */
		if (lo % BLOCK != 0 ||
		    (!w && (ph->p_filesz != ph->p_memsz || end - lo < BLOCK / 2)) ||
		    any_mapped(end, align_up(end)))
			continue;
		s[n].lo = lo;
		s[n].hi = align_up(end);
		s[n].len = end - lo;
		s[n++].prot =
		    PROT_READ | (w ? PROT_WRITE : 0) | (ph->p_flags & PF_X ? PROT_EXEC : 0);
	}
	return 1;
}

/* One segment: copied, collapsed, protected, moved over itself. 1 if done.
 * From the copy to the move nothing writes the program's data (system calls
 * and this function's locals only), so the writable one loses no write. */
static int move_seg(const struct seg *g)
{
	size_t n = g->hi - g->lo;
	char *m = mmap(NULL, n + BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = 0;

	if (m == MAP_FAILED)
		return 0;
	uintptr_t t = align_up((uintptr_t)m);
	memcpy((void *)t, (const void *)g->lo, g->len);
	ok = 1;
	for (uintptr_t a = t; ok && a < t + n; a += BLOCK)
		ok = madvise((void *)a, BLOCK, MADV_COLLAPSE) == 0;
	/* The same bytes at the same addresses: the code that makes this call
	 * returns into the copy of itself. */
	ok = ok && mprotect((void *)t, n, g->prot) == 0 &&
	     mremap((void *)t, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)g->lo) == (void *)g->lo;
	if (ok) {
		if (t > (uintptr_t)m)
			munmap(m, t - (uintptr_t)m);
		if ((uintptr_t)m + BLOCK > t)
			munmap((void *)(t + n), (uintptr_t)m + BLOCK - t);
	} else {
		munmap(m, n + BLOCK);
	}
	return ok;
}

/* AddressSanitizer is not told of memory moved under it. */
#if defined(__SANITIZE_ADDRESS__)
static const int under_asan = 1;
#else
static const int under_asan = 0;
#endif

int tp_huge_text(void)
{
	struct seg s[MAX_SEGS];
	int n = 0;

	if (under_asan || !page_is_4k())
		return 0;
	memset(s, 0, sizeof s);
	dl_iterate_phdr(find_segs, s);
	for (int i = 0; i < MAX_SEGS && s[i].lo != 0; i++)
		n += move_seg(&s[i]);
	return n;
}
