/*
 * verdict.h — the sticky verdict and the CPU budget of one exec, shared by the
 * language layers (in the worker). The first verdict wins and is recorded in
 * the shared page at once, so the host has it even if the worker is killed.
 *
 * Usage:
 *   1. tp_verdict_begin(shm, limits, ops) at the start of the exec: clears the
 *      verdict, starts the CPU clock (its reading goes to the page's
 *      cpu_begin_us) and, when cpu_ms is set, arms ITIMER_PROF. ops->publish
 *      writes tp_verdict_cpu_us() to the page's cpu_us with the other counters.
 *      In a worker of a policy without a language layer (kernel-only), after
 *      tp_verdict_kernel_limits(): the kernel enforces cpu_ms and memory_bytes
 *      instead (see there), and step 3 does not happen.
 *   2. A limit or a refusal calls tp_verdict_trip() (normal code) or
 *      tp_verdict_trip_now() (a signal handler). Both call ops->interrupt so the
 *      interpreter raises again at its next step.
 *   3. The CPU timer's first expiry trips cpu_limit; its second, TP_CPU_GRACE_MS
 *      later, means the code sits in one C call no check reaches: the worker
 *      publishes its usage and _exit(TP_EXIT_LIMIT)s.
 *   4. tp_verdict_end() stops the timer before the reply is built (and, under
 *      kernel-only, gives the reply back the address space the exec was denied).
 */
#ifndef TP_VERDICT_H
#define TP_VERDICT_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"
#include "limit.h"
#include "msg.h"
#include "shm.h"

struct tp_verdict_ops {
	void (*publish)(struct tp_shm *shm); /* async-signal-safe: usage into the page */
	void (*interrupt)(void);             /* async-signal-safe: make the code raise soon */
};

void tp_verdict_begin(struct tp_shm *shm, const struct tp_limits *lim,
		      const struct tp_verdict_ops *ops);
/* Kernel-only (worker.c, once per worker, before lockdown): the language layer
 * enforces no CPU or memory limit, the kernel does. The worker's RLIMIT_AS
 * leaves room for `room` bytes of an exec's memory plus `reserve`; each exec
 * then maps reserve + (room - memory_bytes) of PROT_NONE address space before
 * the snippet runs (tp_verdict_begin), so the rlimit refuses an allocation about
 * memory_bytes past the exec's start, and unmaps it after (tp_verdict_end), so
 * the reply can still be built. The CPU timer is ITIMER_PROF with SIGPROF (and
 * SIGXCPU) at their default action: the kernel kills the worker at cpu_ms (the
 * host reads WTERMSIG SIGPROF as cpu_limit at the kernel layer); RLIMIT_CPU,
 * which the worker lowers per exec (a session's worker: its soft limit; the
 * host sets the hard one, or watches), stands behind it for code that ignores
 * the signal or disarms the timer. */
void tp_verdict_kernel_limits(uint64_t room, uint64_t reserve, int session);
/* 1 in a worker where tp_verdict_kernel_limits() was called. */
int tp_verdict_kernel(void);
/* In a worker, once, before it reads a request: SIGUSR1 with the page's stop
 * set trips TP_KIND_CANCELLED in the running exec (the zygote ignores SIGUSR1,
 * so one that comes earlier is dropped; begin then sees stop in the page). */
void tp_verdict_catch_stop(void);
void tp_verdict_end(void);
/* Async-signal-safe. id is an enum tp_limit_id, or -1 for a refusal. */
void tp_verdict_trip_now(enum tp_kind kind, int id, uint64_t limit, uint64_t used);
/* From normal code: holds SIGPROF so a CPU trip cannot interleave. */
void tp_verdict_trip(enum tp_kind kind, int id, uint64_t limit, uint64_t used);

enum tp_kind tp_verdict_kind(void); /* TP_KIND_NONE until something trips */
int tp_verdict_limit_id(void);
uint64_t tp_verdict_limit(void);
uint64_t tp_verdict_used(void);
/* CPU time of this worker since tp_verdict_begin, exact (its thread's clock).
 * Async-signal-safe. */
uint64_t tp_verdict_cpu_us(void);
/* CPU time of this worker since its fork (its thread's clock; a worker has one
 * thread), for the page's cpu_*_us stamps. Async-signal-safe. */
uint64_t tp_verdict_cpu_since_fork_us(void);

/* Fills a reply's failure (common/msg.h), copying the texts: message and
 * traceback are JSON strings (traceback may be NULL), type may be NULL (none),
 * a line <= 0 is unknown. 0, or -1 out of memory. */
int tp_verdict_failure(struct tp_failure *f, enum tp_kind kind, const char *type,
		       const json_t *message, const json_t *traceback, int line);
/* The sticky verdict as a failure: its kind, its limit and the limit's message,
 * or for a refusal the PolicyViolation type and policy_msg. */
int tp_verdict_tripped_failure(struct tp_failure *f, const char *policy_msg,
			       const json_t *traceback, int line);

#endif
