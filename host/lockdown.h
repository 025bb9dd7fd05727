/*
 * lockdown.h — the kernel layer a worker applies to itself before it reads code.
 *
 * Usage:
 *   1. tp_lockdown_prepare(): in the zygote, once. Compiles the seccomp allowlist
 *      to BPF and probes the Landlock ABI, so each worker only loads them.
 *   2. tp_lockdown_apply(): in each worker, right after fork. In order: rlimits,
 *      fds (0/1/2 on /dev/null, all others closed but the kept ones), uid drop,
 *      no_new_privs, Landlock (deny all filesystem access), seccomp.
 *      On failure the worker must exit without running code.
 *   3. tp_syscall_name(): in the host, to name the syscall a SIGSYS report carries.
 */
#ifndef TP_LOCKDOWN_H
#define TP_LOCKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "shm.h"

/* Worker exit codes that carry a verdict (the shared page has the details). */
#define TP_EXIT_FATAL 157     /* setup failed before any code ran */
#define TP_EXIT_LIMIT 158     /* a limit tripped and the grace period ran out */
#define TP_EXIT_VIOLATION 159 /* seccomp trapped a syscall (128 + SIGSYS) */

struct tp_lockdown {
	uint64_t as_bytes; /* RLIMIT_AS */
	uint64_t cpu_sec;  /* RLIMIT_CPU soft limit; the hard limit is one second more */
	int nofile;        /* RLIMIT_NOFILE */
	const int *keep_fds; /* stay open; must be >= 3 */
	int nkeep;
	struct tp_shm *shm; /* where the SIGSYS handler reports */
};

int tp_lockdown_prepare(char *err, size_t errlen);
int tp_lockdown_apply(const struct tp_lockdown *cfg, char *err, size_t errlen);
/* Landlock ABI found by tp_lockdown_prepare(), or <= 0 when unavailable. */
int tp_lockdown_landlock_abi(void);
/* Name of an x86-64 syscall number; "nr_<N>" when unknown. */
void tp_syscall_name(int nr, char *buf, size_t len);

#endif
