/*
 * lockdown.h — the kernel layer a worker applies to itself before it reads code.
 *
 * The worker policy is two stacked seccomp filters built from one set of tables:
 * the zygote filter Z (the worker allowlist, plus what the zygote's spawn loop and
 * the worker's own lockdown steps need) and the worker seal W (default allow; the
 * worker's rules for exactly those extra syscalls). The kernel keeps the strictest
 * verdict, so Z+W is the worker allowlist, while a worker pays only for loading W.
 *
 * Usage:
 *   1. tp_lockdown_prepare(): in the zygote, once, first. Compiles Z and W to BPF
 *      and probes the Landlock ABI, so that nothing later calls libseccomp.
 *   2. tp_lockdown_enter_zygote(): in the zygote, once, after the language is
 *      initialized and before the spawn loop. Opens the /dev/null workers dup,
 *      installs the SIGSYS reporter, sets no_new_privs and installs Z on itself.
 *      From then on it may only recvmsg(MSG_CMSG_CLOEXEC), send(MSG_NOSIGNAL),
 *      clone(CLONE_PARENT | SIGCHLD), close and compute: no open, no exec.
 *   3. tp_lockdown_apply(): in each worker, right after clone, single-threaded. In
 *      order: parent-death signal, fds (0/1/2 on /dev/null, all others closed but
 *      the kept ones, and the grants' O_PATH fds until Landlock has them), rlimits,
 *      uid drop (root only, to 65534), Landlock (deny all filesystem access but
 *      beneath the policy's grants, TCP, signal and abstract-socket scopes; then
 *      the grants' fds closed), SIGSYS armed
 *      (report to cfg->shm), and last the seal W. A process that never entered a
 *      zygote (tests) gets step 2 done here first, at the cost of loading Z. On
 *      failure the worker must exit (TP_EXIT_FATAL) without running code. After it
 *      returns the worker must not block SIGSYS, and can no longer open, fork,
 *      exec, or create sockets (docs/kernel-layer.md).
 * Each step returns 0, or -1 with the first failure recorded in err (err.h; NULL:
 * not recorded): TP_KIND_INTERNAL at TP_LAYER_KERNEL, the errno in sys_errno, the
 * message "call(object): reason. Hint: ...".
 */
#ifndef TP_LOCKDOWN_H
#define TP_LOCKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "langs.h"
#include "msg.h"
#include "shm.h"

struct tp_lockdown {
	uint64_t as_bytes;   /* RLIMIT_AS; must be > 0 */
	uint64_t cpu_sec;    /* RLIMIT_CPU soft limit (> 0); the hard limit is one second more */
	int nofile;          /* RLIMIT_NOFILE (>= 3); limits new fds only, kept ones stay */
	uint64_t fsize;      /* RLIMIT_FSIZE: 0 unless the policy grants writes */
	const int *keep_fds; /* stay open; must be open and >= 3; at most 32 */
	int nkeep;
	struct tp_shm *shm; /* where the SIGSYS handler reports; may be NULL */
	int workspace_fd;   /* a session's directory (O_PATH, > 2), read-write for this worker
			     * and its working directory; 0: none. Closed by tp_lockdown_apply */
};

/* The zygote's language, before tp_lockdown_prepare: under kernel-only its
 * runtime's library directories become read grants (tp_runtime_grants). */
void tp_lockdown_set_lang(enum tp_lang_id lang);
/* Compiles Z and W for tp_sandbox_policy(), opens its grants (O_PATH) and
 * probes Landlock. Refuses a policy with grants, or kernel-only, without Landlock. */
int tp_lockdown_prepare(struct tp_err *err);
/* Before tp_lockdown_prepare: the directory the host makes sessions' workspaces
 * in, when the policy has them (session.workspace_bytes). */
void tp_lockdown_set_workspace_base(const char *dir);
int tp_lockdown_enter_zygote(struct tp_err *err);
int tp_lockdown_apply(const struct tp_lockdown *cfg, struct tp_err *err);
/* Landlock ABI found by tp_lockdown_prepare(), or -errno of the probe when
 * unavailable (the host logs that once: the worker then relies on seccomp alone). */
int tp_lockdown_landlock_abi(void);

enum tp_filter {
	TP_FILTER_WORKER, /* the worker policy as one program: the reference Z+W must equal */
	TP_FILTER_ZYGOTE, /* Z */
	TP_FILTER_SEAL,   /* W */
};

/* For tests and `policy check`: the worker policy as libseccomp pseudo-code, to fd. */
int tp_lockdown_export_pfc(int fd);
/* For tests: the prepared Z or W (struct sock_filter[]), its length in instructions
 * (0 before tp_lockdown_prepare, and for TP_FILTER_WORKER, which is never prepared). */
size_t tp_lockdown_program(enum tp_filter which, const void **insns);
/* For tests: compile one program now into insns (room for max instructions); with
 * omit_nr >= 0 the seal leaves that syscall out. Its length, or 0 on error. */
size_t tp_lockdown_compile(enum tp_filter which, int omit_nr, void *insns, size_t max);
/* For tests: the grants' O_PATH fds (open in the zygote, closed in a worker
 * before its code runs); how many were written to fds. */
size_t tp_lockdown_grant_fds(int *fds, size_t max);
/* For tests: no_new_privs plus the Landlock step alone, without seccomp. */
int tp_lockdown_landlock_only(struct tp_err *err);

#endif
