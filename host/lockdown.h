/*
 * lockdown.h — the kernel layer a worker applies to itself before it reads code.
 *
 * Usage:
 *   1. tp_lockdown_prepare(): in the zygote, once. Compiles the seccomp allowlist
 *      to BPF and probes the Landlock ABI, so each worker only loads them.
 *   2. tp_lockdown_apply(): in each worker, right after fork, single-threaded. In
 *      order: parent-death signal, fds (0/1/2 on /dev/null, all others closed but
 *      the kept ones), rlimits, uid drop (root only, to 65534), no_new_privs,
 *      Landlock (deny all filesystem access, TCP, signal and abstract-socket scopes),
 *      SIGSYS reporter, seccomp. On failure the worker must exit (TP_EXIT_FATAL)
 *      without running code; err holds "call(object): reason. Hint: ...".
 *      After it returns the worker must not block or replace SIGSYS, and can no
 *      longer open, fork, exec, or create sockets (docs/kernel-layer.md).
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
	uint64_t as_bytes; /* RLIMIT_AS; must be > 0 */
	uint64_t cpu_sec;  /* RLIMIT_CPU soft limit (> 0); the hard limit is one second more */
	int nofile;        /* RLIMIT_NOFILE (>= 3); limits new fds only, kept ones stay */
	const int *keep_fds; /* stay open; must be open and >= 3; at most 32 */
	int nkeep;
	struct tp_shm *shm; /* where the SIGSYS handler reports; may be NULL */
};

int tp_lockdown_prepare(char *err, size_t errlen);
int tp_lockdown_apply(const struct tp_lockdown *cfg, char *err, size_t errlen);
/* Landlock ABI found by tp_lockdown_prepare(), or -errno of the probe when
 * unavailable (the host logs that once: the worker then relies on seccomp alone). */
int tp_lockdown_landlock_abi(void);
/* Name of an x86-64 syscall number; "nr_<N>" when unknown. */
void tp_syscall_name(int nr, char *buf, size_t len);

/* For tests and `policy check`: the filter as libseccomp pseudo-code, written to fd. */
int tp_lockdown_export_pfc(int fd);
/* For tests: the prepared BPF program (struct sock_filter[]), its length in
 * instructions (0 before tp_lockdown_prepare). */
size_t tp_lockdown_program(const void **insns);
/* For tests: no_new_privs plus the Landlock step alone, without seccomp. */
int tp_lockdown_landlock_only(char *err, size_t errlen);

#endif
