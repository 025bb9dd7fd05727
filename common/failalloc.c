/*
 * failalloc.c — the allocation-failure knob (see failalloc.h). Compiled to a
 * no-op unless TP_FAILALLOC is defined; then the wrappers count every
 * allocation of the process that armed them and fail the chosen ones.
 * Invariant: an unarmed process (zygote, workers) only pays one branch.
 */
#include "failalloc.h"

#ifdef TP_FAILALLOC

#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static int armed;
static int fail_rest; /* "N+": every allocation from the Nth on fails */
static unsigned long fail_at, count;
static pid_t armed_pid; /* a forked child (before its execve) never fails */
static int trace;       /* TIDEPOOL_FAILALLOC_TRACE: the failed call's stack on stderr */

static int should_fail(void)
{
	if (!armed)
		return 0;
	count++;
	int hit = fail_at != 0 && (count == fail_at || (fail_rest && count > fail_at));
	hit = hit && getpid() == armed_pid;
	if (hit && trace && count == fail_at) {
		void *pc[32];
		int n = backtrace(pc, 32);
		fprintf(stderr, "tidepool: failalloc: allocation %lu fails here:\n", count);
		backtrace_symbols_fd(pc, n, 2);
	}
	return hit;
}

void *__wrap_malloc(size_t n)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* realloc(p, 0) frees; it is not an allocation that can fail. */
void *__wrap_realloc(void *p, size_t n)
{
	if (n != 0 && should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

static void report(void)
{
	if (getpid() == armed_pid)
		fprintf(stderr, "tidepool: failalloc: %lu allocations\n", count);
}

void tp_failalloc_arm(void)
{
	const char *v = getenv("TIDEPOOL_FAILALLOC");
	char *end;
	if (v == NULL || *v == '\0')
		return;
	fail_at = strtoul(v, &end, 10);
	fail_rest = *end == '+';
	armed_pid = getpid();
	trace = getenv("TIDEPOOL_FAILALLOC_TRACE") != NULL;
	armed = 1;
	atexit(report);
}

#else

void tp_failalloc_arm(void)
{
}

#endif
