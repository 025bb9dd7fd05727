/*
 * tap.h — a tiny test harness for the C unit tests (one binary per module).
 * CHECK() records a failure and goes on; tp_test_done() returns the exit code.
 */
#ifndef TP_TAP_H
#define TP_TAP_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int tap_failures, tap_checks, tap_skips;

/* A case the machine cannot run: said on stdout with its reason, and counted. */
#define TP_SKIP(...)                                                                               \
	do {                                                                                       \
		tap_skips++;                                                                       \
		printf("# skip: " __VA_ARGS__);                                                    \
		printf("\n");                                                                      \
	} while (0)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		tap_checks++;                                                                      \
		if (!(cond)) {                                                                     \
			tap_failures++;                                                            \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long va_ = (long long)(a), vb_ = (long long)(b);                              \
		tap_checks++;                                                                      \
		if (va_ != vb_) {                                                                  \
			tap_failures++;                                                            \
			fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", __FILE__,         \
				__LINE__, #a, #b, va_, vb_);                                       \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
	do {                                                                                       \
		const char *sa_ = (a), *sb_ = (b);                                                 \
		tap_checks++;                                                                      \
		if (sa_ == NULL || sb_ == NULL || strcmp(sa_, sb_) != 0) {                         \
			tap_failures++;                                                            \
			fprintf(stderr, "FAIL %s:%d: %s == %s (\"%s\" != \"%s\")\n", __FILE__,     \
				__LINE__, #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");     \
		}                                                                                  \
	} while (0)

static inline int tp_test_done(const char *name)
{
	printf("%s: %d checks, %d failures, %d skipped\n", name, tap_checks, tap_failures,
	       tap_skips);
	return tap_failures ? 1 : 0;
}

#endif
