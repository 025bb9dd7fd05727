/*
 * lalloc.c — the counting allocator behind every Lua heap we create.
 * Invariant: current == the sum of the live block sizes Lua asked for, and a
 * growth is refused whenever it would make current exceed a nonzero limit.
 */
#include "lalloc.h"

#include <stdlib.h>
#include <string.h>

void tp_lalloc_init(struct tp_lalloc *a, size_t limit)
{
	*a = (struct tp_lalloc){ .limit = limit };
}

void tp_lalloc_set_limit(struct tp_lalloc *a, size_t limit)
{
	a->limit = limit;
}

void tp_lalloc_reset_peak(struct tp_lalloc *a)
{
	a->peak = a->current;
}

/* Would growing by `grow` bytes take the heap above the limit? */
static int over_limit(const struct tp_lalloc *a, size_t grow)
{
	return a->limit != 0 && (grow > a->limit || a->current > a->limit - grow);
}

static void *refuse(struct tp_lalloc *a, size_t grow)
{
	size_t total = a->current + grow;

	a->refusals++;
	a->refused_total = total < a->current ? (size_t)-1 : total; /* saturate */
	return NULL;
}

void *tp_lalloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct tp_lalloc *a = ud;
	/* With ptr == NULL, osize is a type tag, not a size: the old block is empty. */
	size_t old = ptr != NULL ? osize : 0;
	void *p;

	if (nsize == 0) {
		if (a->scrub && ptr != NULL)
			explicit_bzero(ptr, old);
		free(ptr);
		a->current -= old;
		return NULL;
	}
	/* Only growth can be refused: Lua assumes shrinking never fails. */
	if (nsize > old && over_limit(a, nsize - old))
		return refuse(a, nsize - old);
	if (a->scrub && ptr != NULL) {
		if (nsize < old) { /* the tail goes back in place */
			explicit_bzero((char *)ptr + nsize, old - nsize);
			p = realloc(ptr, nsize);
		} else { /* realloc could move it and leave the old bytes behind */
			p = malloc(nsize);
			if (p != NULL) {
				memcpy(p, ptr, old);
				explicit_bzero(ptr, old);
				free(ptr);
			}
		}
	} else {
		p = realloc(ptr, nsize);
	}
	if (p == NULL && nsize > old && a->on_fail != NULL) {
		refuse(a, nsize - old);
		a->on_fail();
		return NULL;
	}
	if (p == NULL)
		return nsize > old ? refuse(a, nsize - old) : NULL;
	a->current = a->current - old + nsize;
	if (a->current > a->peak)
		a->peak = a->current;
	return p;
}
