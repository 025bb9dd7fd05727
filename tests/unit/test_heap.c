/*
 * test_heap.c — the zygote's heap settled before its first fork (sandbox/heap.c).
 *
 * A heap left fragmented as a zygote leaves it (every other block freed, then
 * malloc_trim and the zygote's sorting request), then tp_heap_settle: glibc's own
 * figures (mallinfo2) must then show no free chunk but the top one, what malloc
 * hands out next must all come from the top (new memory), and settling must not
 * have made the heap's free space resident.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "heap.h"
#include "tap.h"

#define BLOCKS 4000

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void test_settle(void)
{
	static void *blocks[BLOCKS];

	for (int i = 0; i < BLOCKS; i++)
		blocks[i] = malloc(16 + (size_t)(i * 37) % 3000 + (i % 50 == 0 ? 20000 : 0));
	for (int i = 0; i < BLOCKS; i += 2)
		free(blocks[i]);
	malloc_trim(0);
	void *volatile sort = malloc(96u << 10);
	free(sort);

	struct mallinfo2 before = mallinfo2();
	long faults = minflt();
	int taken = tp_heap_settle();
	faults = minflt() - faults;
	if (taken < 0) {
#ifdef TP_SANITIZE
		TP_SKIP("tp_heap_settle: AddressSanitizer's malloc is not glibc's heap");
		return;
#endif
	}
	struct mallinfo2 after = mallinfo2();
	CHECK(before.ordblks > 100); /* the fragments, and the top */
	CHECK(taken >= (int)before.ordblks - 1);
	CHECK_EQ_INT(after.ordblks, 1); /* the top chunk alone */
	CHECK_EQ_INT(after.fordblks, after.keepcost);
	CHECK_EQ_INT(after.smblks, 0);
	/* Taking a chunk writes its header only: the pages trim gave back inside the
	 * free chunks stay unmapped (reading /proc/self/maps costs a few). */
	CHECK(faults < 32);
	if (faults >= 32)
		fprintf(stderr, "# settling took %ld minor faults\n", faults);

	/* What malloc hands out now comes from the top chunk: at or above its start. */
	uintptr_t top = (uintptr_t)sbrk(0) - after.keepcost;
	int below = 0;
	for (int i = 0; i < 500; i++) {
		void *p = malloc(16 + (size_t)(i * 53) % 2000);
		if ((uintptr_t)p < top)
			below++;
	}
	CHECK_EQ_INT(below, 0);

	/* A second settle finds nothing left to take but what its own reading of
	 * /proc/self/maps freed (the stream and its buffer). */
	int again = tp_heap_settle();
	CHECK(again >= 0 && again <= 2);
	CHECK_EQ_INT(mallinfo2().ordblks, 1);
}

int main(void)
{
	test_settle();
	return tp_test_done("test_heap");
}
