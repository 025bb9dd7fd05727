/*
 * lockdown.c — the kernel layer: rlimits, fds, uid, no_new_privs, Landlock, seccomp.
 * Invariant: the worker policy is two stacked seccomp programs compiled once from
 * the same tables (tp_lockdown_prepare): the zygote filter Z, inherited by every
 * worker, and the seal W each worker loads last; the kernel's strictest-wins rule
 * makes Z+W the worker allowlist below. Anything not in a table traps.
 */
#include "lockdown.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define NOBODY 65534
#define MAX_KEEP 32
/* Unknown and future syscall numbers up to here get ENOSYS, not a trap. */
#define SWEEP_FIRST 335 /* first number after the classic x86-64 table */
#define SWEEP_END 600

/* ---- the policy ---------------------------------------------------------- */

/* Allowed with any arguments: I/O on fds the worker already holds, memory,
 * time, signals to itself, identity reads, exit. None reaches a path or a peer. */
static const int allow_nrs[] = {
	/* I/O on the inherited fds (channel, shm, /dev/null) */
	SYS_read,
	SYS_write,
	SYS_readv,
	SYS_writev,
	SYS_close,
	SYS_lseek,
	SYS_fstat,
	/* memory (mmap and mprotect are in arg_rules: no PROT_EXEC) */
	SYS_brk,
	SYS_munmap,
	SYS_mremap,
	/* signals (rt_sigaction and tgkill are in arg_rules) */
	SYS_rt_sigprocmask,
	SYS_rt_sigreturn,
	SYS_sigaltstack,
	SYS_restart_syscall,
	/* time and timers */
	SYS_setitimer,
	SYS_getitimer,
	SYS_clock_gettime,
	SYS_clock_getres,
	SYS_gettimeofday,
	SYS_time,
	SYS_clock_nanosleep,
	SYS_nanosleep,
	/* identity and accounting reads */
	SYS_getpid,
	SYS_gettid,
	SYS_getppid,
	SYS_getuid,
	SYS_geteuid,
	SYS_getgid,
	SYS_getegid,
	SYS_getrusage,
	SYS_getrlimit,
	/* sync, randomness, exit */
	SYS_futex,
	SYS_sched_yield,
	SYS_getrandom,
	SYS_exit,
	SYS_exit_group,
};

/* EPERM: forbidden by policy; the language sees a clean PermissionError. */
static const int eperm_nrs[] = {
	/* network: the worker talks to the host with read/write on its channel only */
	SYS_socket,
	SYS_socketpair,
	SYS_connect,
	SYS_bind,
	SYS_listen,
	SYS_accept,
	SYS_accept4,
	SYS_sendto,
	SYS_recvfrom,
	SYS_sendmsg,
	SYS_recvmsg,
	SYS_sendmmsg,
	SYS_recvmmsg,
	SYS_shutdown,
	SYS_getsockopt,
	SYS_setsockopt,
	SYS_getsockname,
	SYS_getpeername,
	/* exec and new processes */
	SYS_execve,
	SYS_execveat,
	SYS_fork,
	SYS_vfork,
	SYS_clone,
	/* reaching other processes */
	SYS_kill,
	SYS_rt_sigqueueinfo,
	SYS_rt_tgsigqueueinfo,
	424 /* pidfd_send_signal */,
	438 /* pidfd_getfd */,
	SYS_ptrace,
	SYS_process_vm_readv,
	SYS_process_vm_writev,
	SYS_kcmp,
	/* changing our own privileges, limits or process state */
	SYS_prctl,
	SYS_arch_prctl,
	SYS_personality,
	SYS_seccomp,
	SYS_setrlimit,
	SYS_setuid,
	SYS_setgid,
	SYS_setreuid,
	SYS_setregid,
	SYS_setresuid,
	SYS_setresgid,
	SYS_setgroups,
	SYS_setfsuid,
	SYS_setfsgid,
	SYS_capset,
	SYS_setpgid,
	SYS_setsid,
	SYS_setpriority,
	SYS_sched_setaffinity,
	SYS_sched_setscheduler,
	SYS_sched_setparam,
	SYS_ioprio_set,
	SYS_unshare,
	SYS_setns,
	SYS_landlock_create_ruleset,
	SYS_landlock_add_rule,
	SYS_landlock_restrict_self,
	/* kernel attack surface with no use in a worker */
	425 /* io_uring_setup */,
	426 /* io_uring_enter */,
	427 /* io_uring_register */,
	SYS_bpf,
	SYS_perf_event_open,
	SYS_userfaultfd,
	SYS_keyctl,
	SYS_add_key,
	SYS_request_key,
	SYS_memfd_create,
	447 /* memfd_secret */,
	SYS_pkey_mprotect,
	SYS_mbind,
	SYS_set_mempolicy,
	SYS_migrate_pages,
	SYS_move_pages,
	SYS_modify_ldt,
	SYS_iopl,
	SYS_ioperm,
	SYS_syslog,
	/* system administration */
	SYS_mount,
	SYS_umount2,
	SYS_pivot_root,
	SYS_chroot,
	428 /* open_tree */,
	429 /* move_mount */,
	430 /* fsopen */,
	431 /* fsconfig */,
	432 /* fsmount */,
	433 /* fspick */,
	442 /* mount_setattr */,
	443 /* quotactl_fd */,
	SYS_init_module,
	SYS_finit_module,
	SYS_delete_module,
	SYS_kexec_load,
	SYS_kexec_file_load,
	SYS_reboot,
	SYS_acct,
	SYS_swapon,
	SYS_swapoff,
	SYS_quotactl,
	SYS_sethostname,
	SYS_setdomainname,
	SYS_settimeofday,
	SYS_clock_settime,
	SYS_clock_adjtime,
	SYS_adjtimex,
	SYS_vhangup,
	/* paths: Landlock is the second wall; EPERM gives cleaner errors */
	SYS_open,
	SYS_openat,
	SYS_creat,
	SYS_stat,
	SYS_lstat,
	SYS_statx,
	SYS_access,
	SYS_faccessat,
	SYS_readlink,
	SYS_readlinkat,
	SYS_mkdir,
	SYS_mkdirat,
	SYS_rmdir,
	SYS_unlink,
	SYS_unlinkat,
	SYS_rename,
	SYS_renameat,
	SYS_renameat2,
	SYS_link,
	SYS_linkat,
	SYS_symlink,
	SYS_symlinkat,
	SYS_chmod,
	SYS_fchmodat,
	SYS_chown,
	SYS_lchown,
	SYS_fchownat,
	SYS_truncate,
	SYS_mknod,
	SYS_mknodat,
	SYS_chdir,
	SYS_fchdir,
	SYS_getcwd,
	SYS_utime,
	SYS_utimes,
	SYS_utimensat,
	SYS_futimesat,
	SYS_setxattr,
	SYS_lsetxattr,
	SYS_getxattr,
	SYS_lgetxattr,
	SYS_listxattr,
	SYS_llistxattr,
	SYS_removexattr,
	SYS_lremovexattr,
	SYS_statfs,
	SYS_uselib,
	SYS_inotify_add_watch,
	SYS_fanotify_init,
	SYS_fanotify_mark,
	SYS_name_to_handle_at,
	SYS_open_by_handle_at,
	SYS_mq_open,
	SYS_mq_unlink,
	/* changing the inherited fds (ftruncate would let a worker SIGBUS the host's shm map) */
	SYS_fchmod,
	SYS_fchown,
	SYS_ftruncate,
	SYS_fallocate,
	SYS_fsetxattr,
	SYS_fgetxattr,
	SYS_flistxattr,
	SYS_fremovexattr,
	SYS_fstatfs,
	SYS_getdents,
	SYS_getdents64,
	SYS_flock,
	SYS_fsync,
	SYS_fdatasync,
	SYS_sync,
	SYS_syncfs,
	SYS_sendfile,
	SYS_splice,
	SYS_tee,
	SYS_vmsplice,
	SYS_copy_file_range,
	SYS_dup,
	SYS_dup2,
	SYS_dup3,
	SYS_pipe,
	SYS_pipe2,
};

/* ENOSYS: newer calls libc (or a runtime) falls back from, as if the kernel were
 * older. Every other number in [SWEEP_FIRST, SWEEP_END) gets ENOSYS too. */
static const int enosys_nrs[] = {
	SYS_clone3,          SYS_close_range,
	SYS_openat2,         SYS_faccessat2,
	SYS_epoll_pwait2,    SYS_pidfd_open,
	SYS_futex_waitv,     452 /* fchmodat2 */,
	451 /* cachestat */, 453 /* map_shadow_stack */,
	462 /* mseal */,
};

struct arg_rule {
	int nr;
	uint32_t action;
	unsigned ncmp;
	struct scmp_arg_cmp cmp[3];
};

#define ARG(n, cmp_op, a, b)                                                                       \
	{                                                                                          \
		.arg = (n), .op = (cmp_op), .datum_a = (a), .datum_b = (b)                         \
	}
#define NOARG                                                                                      \
	{                                                                                          \
		.arg = 0                                                                           \
	}
#define EPERM_ACT SCMP_ACT_ERRNO(EPERM)

/* Calls allowed or refused depending on their arguments. Each syscall's rules are disjoint. */
static const struct arg_rule arg_rules[] = {
	/* W^X: no new executable memory, so no loading native code after lockdown. */
	{ SYS_mmap, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0), NOARG } },
	{ SYS_mmap, EPERM_ACT, 1, { ARG(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC), NOARG } },
	{ SYS_mprotect, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0), NOARG } },
	{ SYS_mprotect, EPERM_ACT, 1, { ARG(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC), NOARG } },
	/* The SIGSYS reporter cannot be replaced or ignored. Compared on all 64 bits,
	 * so 1..30 here and 32..64 one by one in add_rules(): the kernel reads an int,
	 * and "!= SIGSYS" would let 0x100000000|SIGSYS through. */
	{ SYS_rt_sigaction, SCMP_ACT_ALLOW, 1, { ARG(0, SCMP_CMP_LT, SIGSYS, 0), NOARG } },
	{ SYS_rt_sigaction, EPERM_ACT, 1, { ARG(0, SCMP_CMP_EQ, SIGSYS, 0), NOARG } },
	/* abort() must crash with SIGABRT; other signals are refused (Landlock scopes the target).
	 */
	{ SYS_tgkill, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, SIGABRT, 0), NOARG } },
	{ SYS_tgkill, EPERM_ACT, 1, { ARG(2, SCMP_CMP_NE, SIGABRT, 0), NOARG } },
	{ SYS_tkill, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_EQ, SIGABRT, 0), NOARG } },
	{ SYS_tkill, EPERM_ACT, 1, { ARG(1, SCMP_CMP_NE, SIGABRT, 0), NOARG } },
	/* glibc's fstat() is newfstatat(fd, "", AT_EMPTY_PATH); a plain path stat is refused. */
	{ SYS_newfstatat,
	  SCMP_ACT_ALLOW,
	  1,
	  { ARG(3, SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH), NOARG } },
	{ SYS_newfstatat, EPERM_ACT, 1, { ARG(3, SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0), NOARG } },
	/* isatty() sees what a pipe answers; every other ioctl is refused. */
	{ SYS_ioctl, SCMP_ACT_ERRNO(ENOTTY), 1, { ARG(1, SCMP_CMP_EQ, TCGETS, 0), NOARG } },
	{ SYS_ioctl, EPERM_ACT, 1, { ARG(1, SCMP_CMP_NE, TCGETS, 0), NOARG } },
	/* fd flags only (1..4 = F_GETFD, F_SETFD, F_GETFL, F_SETFL); no dup, no locks. */
	{ SYS_fcntl, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_EQ, F_GETFD, 0), NOARG } },
	{ SYS_fcntl, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_EQ, F_SETFD, 0), NOARG } },
	{ SYS_fcntl, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_EQ, F_GETFL, 0), NOARG } },
	{ SYS_fcntl, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_EQ, F_SETFL, 0), NOARG } },
	{ SYS_fcntl, EPERM_ACT, 1, { ARG(1, SCMP_CMP_EQ, F_DUPFD, 0), NOARG } },
	{ SYS_fcntl, EPERM_ACT, 1, { ARG(1, SCMP_CMP_GT, F_SETFL, 0), NOARG } },
	/* getrlimit() of our own process only; setting limits is refused. */
	{ SYS_prlimit64,
	  SCMP_ACT_ALLOW,
	  2,
	  { ARG(0, SCMP_CMP_EQ, 0, 0), ARG(2, SCMP_CMP_EQ, 0, 0) } },
	{ SYS_prlimit64, EPERM_ACT, 1, { ARG(0, SCMP_CMP_NE, 0, 0), NOARG } },
	{ SYS_prlimit64, EPERM_ACT, 1, { ARG(2, SCMP_CMP_NE, 0, 0), NOARG } },
	/* Page-reclaim hints malloc uses; KSM (MERGEABLE), REMOVE, HWPOISON etc. trap. */
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_LE, MADV_DONTNEED, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_FREE, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_HUGEPAGE, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_NOHUGEPAGE, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_DONTDUMP, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_COLD, 0), NOARG } },
	{ SYS_madvise, SCMP_ACT_ALLOW, 1, { ARG(2, SCMP_CMP_EQ, MADV_PAGEOUT, 0), NOARG } },
};

/* The zygote extras: what the zygote's spawn loop and a worker's own lockdown
 * steps still need once the zygote filter Z is installed. Z takes these rules
 * instead of the worker's rules for the same syscalls; the seal W takes the
 * worker's rules for exactly these syscalls and allows the rest. So Z+W is the
 * worker policy as long as every rule here is at most as strict as the worker's
 * (test_confine's equivalence sweep checks that). Each syscall's rules are
 * disjoint; libseccomp takes one comparison per argument per rule. */
#define EQ(n, v) ARG(n, SCMP_CMP_EQ, (v), 0)
#define NE(n, v) ARG(n, SCMP_CMP_NE, (v), 0)
#define MASKED(n, m, v) ARG(n, SCMP_CMP_MASKED_EQ, (m), (v))
static const struct arg_rule zygote_rules[] = {
	/* zygote: a spawn request carries two fds; the reply is the new pid. */
	{ SYS_recvmsg, SCMP_ACT_ALLOW, 1, { EQ(2, MSG_CMSG_CLOEXEC) } },
	{ SYS_recvmsg, EPERM_ACT, 1, { NE(2, MSG_CMSG_CLOEXEC) } },
	{ SYS_sendto, SCMP_ACT_ALLOW, 2, { EQ(3, MSG_NOSIGNAL), EQ(4, 0) } },
	{ SYS_sendto, EPERM_ACT, 1, { NE(3, MSG_NOSIGNAL) } },
	{ SYS_sendto, EPERM_ACT, 1, { NE(4, 0) } },
	/* zygote: a worker is the host's child and shares nothing (no thread, no VM). */
	{ SYS_clone, SCMP_ACT_ALLOW, 1, { EQ(0, CLONE_PARENT | SIGCHLD) } },
	{ SYS_clone, EPERM_ACT, 1, { NE(0, CLONE_PARENT | SIGCHLD) } },
	/* worker: parent-death signal (again after the uid drop) and its name only. */
	{ SYS_prctl, SCMP_ACT_ALLOW, 1, { EQ(0, PR_SET_PDEATHSIG) } },
	{ SYS_prctl, SCMP_ACT_ALLOW, 1, { EQ(0, PR_SET_NAME) } },
	{ SYS_prctl, EPERM_ACT, 1, { ARG(0, SCMP_CMP_LT, PR_SET_PDEATHSIG, 0) } }, /* 0 */
	{ SYS_prctl, EPERM_ACT, 1, { MASKED(0, ~1ull, 2) } },                      /* 2..3 */
	{ SYS_prctl, EPERM_ACT, 1, { MASKED(0, ~3ull, 4) } },                      /* 4..7 */
	{ SYS_prctl, EPERM_ACT, 1, { MASKED(0, ~3ull, 8) } },                      /* 8..11 */
	{ SYS_prctl, EPERM_ACT, 1, { MASKED(0, ~1ull, 12) } },                     /* 12..13 */
	{ SYS_prctl, EPERM_ACT, 1, { EQ(0, 14) } },
	{ SYS_prctl, EPERM_ACT, 1, { ARG(0, SCMP_CMP_GT, PR_SET_NAME, 0) } },
	/* worker: loads the seal (another filter can only add restrictions). */
	{ SYS_seccomp, SCMP_ACT_ALLOW, 2, { EQ(0, SECCOMP_SET_MODE_FILTER), EQ(1, 0) } },
	{ SYS_seccomp, EPERM_ACT, 1, { NE(0, SECCOMP_SET_MODE_FILTER) } },
	{ SYS_seccomp, EPERM_ACT, 1, { NE(1, 0) } },
	/* worker: 0/1/2 onto the zygote's /dev/null, then every other fd closed. */
	{ SYS_dup2, SCMP_ACT_ALLOW, 1, { ARG(1, SCMP_CMP_LE, 2, 0) } },
	{ SYS_dup2, EPERM_ACT, 1, { ARG(1, SCMP_CMP_GT, 2, 0) } },
	{ SYS_close_range, SCMP_ACT_ALLOW, 0, { NOARG } },
	/* worker: its own rlimits, never another process's. */
	{ SYS_prlimit64, SCMP_ACT_ALLOW, 1, { EQ(0, 0) } },
	{ SYS_prlimit64, EPERM_ACT, 1, { NE(0, 0) } },
	/* worker of a root host: down to nobody and nothing else. */
	{ SYS_setgroups, SCMP_ACT_ALLOW, 1, { EQ(0, 0) } },
	{ SYS_setgroups, EPERM_ACT, 1, { NE(0, 0) } },
	{ SYS_setresgid, SCMP_ACT_ALLOW, 3, { EQ(0, NOBODY), EQ(1, NOBODY), EQ(2, NOBODY) } },
	{ SYS_setresgid, EPERM_ACT, 1, { NE(0, NOBODY) } },
	{ SYS_setresgid, EPERM_ACT, 1, { NE(1, NOBODY) } },
	{ SYS_setresgid, EPERM_ACT, 1, { NE(2, NOBODY) } },
	{ SYS_setresuid, SCMP_ACT_ALLOW, 3, { EQ(0, NOBODY), EQ(1, NOBODY), EQ(2, NOBODY) } },
	{ SYS_setresuid, EPERM_ACT, 1, { NE(0, NOBODY) } },
	{ SYS_setresuid, EPERM_ACT, 1, { NE(1, NOBODY) } },
	{ SYS_setresuid, EPERM_ACT, 1, { NE(2, NOBODY) } },
	/* worker: its own deny-all Landlock domain (no rules are ever added). */
	{ SYS_landlock_create_ruleset, SCMP_ACT_ALLOW, 1, { EQ(2, 0) } },
	{ SYS_landlock_create_ruleset, EPERM_ACT, 1, { NE(2, 0) } },
	{ SYS_landlock_restrict_self, SCMP_ACT_ALLOW, 1, { EQ(1, 0) } },
	{ SYS_landlock_restrict_self, EPERM_ACT, 1, { NE(1, 0) } },
};

/* ---- state kept from prepare to apply (and for the SIGSYS handler) ------- */

#define SEAL_MAX 512 /* the seal is 34 instructions today */

static struct sock_filter zygote_insns[BPF_MAXINSNS];
static struct sock_filter seal_insns[SEAL_MAX];
static unsigned short zygote_len, seal_len;
static int landlock_abi = -ENOSYS;
static int prepared;
static int entered;      /* Z installed here or in an ancestor (inherited through clone) */
static int null_fd = -1; /* opened before Z: workers dup2 it onto 0/1/2 */
static struct tp_shm *volatile report_shm; /* set by each worker for the handler */

static int fail(char *err, size_t errlen, const char *what, int e, const char *hint)
{
	if (err && errlen)
		snprintf(err, errlen, "%s: %s%s%s", what, strerror(e), hint ? ". Hint: " : "",
			 hint ? hint : "");
	errno = e;
	return -1;
}

/* ---- prepare (zygote, once) ---------------------------------------------- */

static const char *const filter_names[] = {
	[TP_FILTER_WORKER] = "worker policy",
	[TP_FILTER_ZYGOTE] = "zygote filter",
	[TP_FILTER_SEAL] = "worker seal",
};

/* Which filter is being built; omit >= 0 leaves that syscall out of the seal (tests). */
struct build {
	enum tp_filter which;
	int omit;
	uint32_t deflt;
	int bad;
};

static int listed(const int *nrs, size_t n, int nr)
{
	for (size_t i = 0; i < n; i++)
		if (nrs[i] == nr)
			return 1;
	return 0;
}

static int has_rule(const struct arg_rule *rules, size_t n, int nr)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].nr == nr)
			return 1;
	return 0;
}

static int zygote_extra(int nr)
{
	return has_rule(zygote_rules, sizeof zygote_rules / sizeof *zygote_rules, nr);
}

/* Named in a worker table (not the ENOSYS sweep, not the default TRAP). */
static int classified(int nr)
{
	return listed(allow_nrs, sizeof allow_nrs / sizeof *allow_nrs, nr) ||
	       listed(eperm_nrs, sizeof eperm_nrs / sizeof *eperm_nrs, nr) ||
	       listed(enosys_nrs, sizeof enosys_nrs / sizeof *enosys_nrs, nr) ||
	       has_rule(arg_rules, sizeof arg_rules / sizeof *arg_rules, nr);
}

/* Does this filter carry the worker's own rules for nr? The worker policy does for
 * all, Z for all but the extras (which get zygote_rules), W for the extras only. */
static int takes_worker_rules(const struct build *b, int nr)
{
	switch (b->which) {
	case TP_FILTER_ZYGOTE: return !zygote_extra(nr);
	case TP_FILTER_SEAL: return zygote_extra(nr) && nr != b->omit;
	default: return 1;
	}
}

/* A rule whose action is the filter's default is left out: libseccomp refuses it,
 * and an unmatched call gets that action anyway. */
static int add(scmp_filter_ctx ctx, struct build *b, uint32_t action, int nr, unsigned ncmp,
	       const struct scmp_arg_cmp *cmp)
{
	int rc;

	if (action == b->deflt)
		return 0;
	rc = seccomp_rule_add_array(ctx, action, nr, ncmp, cmp);
	if (rc < 0)
		b->bad = nr;
	return rc;
}

static int add_list(scmp_filter_ctx ctx, struct build *b, const int *nrs, size_t n, uint32_t action)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (takes_worker_rules(b, nrs[i]))
			rc = add(ctx, b, action, nrs[i], 0, NULL);
	return rc;
}

static int add_arg_rules(scmp_filter_ctx ctx, struct build *b, const struct arg_rule *rules,
			 size_t n, int worker)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!worker || takes_worker_rules(b, rules[i].nr))
			rc = add(ctx, b, rules[i].action, rules[i].nr, rules[i].ncmp, rules[i].cmp);
	return rc;
}

/* The worker policy, restricted to the syscalls this filter takes it for. */
static int add_worker_rules(scmp_filter_ctx ctx, struct build *b)
{
	int rc = add_list(ctx, b, allow_nrs, sizeof allow_nrs / sizeof *allow_nrs, SCMP_ACT_ALLOW);

	if (rc == 0)
		rc = add_list(ctx, b, eperm_nrs, sizeof eperm_nrs / sizeof *eperm_nrs, EPERM_ACT);
	if (rc == 0)
		rc = add_list(ctx, b, enosys_nrs, sizeof enosys_nrs / sizeof *enosys_nrs,
			      SCMP_ACT_ERRNO(ENOSYS));
	if (rc == 0)
		rc = add_arg_rules(ctx, b, arg_rules, sizeof arg_rules / sizeof *arg_rules, 1);
	for (uint64_t sig = SIGSYS + 1; rc == 0 && sig <= 64; sig++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, sig);
		if (takes_worker_rules(b, SYS_rt_sigaction))
			rc = add(ctx, b, SCMP_ACT_ALLOW, SYS_rt_sigaction, 1, &c);
	}
	/* Unknown or future numbers: ENOSYS, so runtimes take their fallback path;
	 * anything else the tables do not name traps, also in a default-allow seal. */
	for (int nr = 0; rc == 0 && nr < SWEEP_END; nr++) {
		if (classified(nr) || !takes_worker_rules(b, nr))
			continue;
		if (nr >= SWEEP_FIRST)
			rc = add(ctx, b, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL);
		else
			rc = add(ctx, b, SCMP_ACT_TRAP, nr, 0, NULL);
	}
	return rc;
}

/* One of the three programs as a libseccomp context: native x86-64 only. */
static scmp_filter_ctx build_filter(enum tp_filter which, int omit, char *err, size_t errlen)
{
	char what[64];
	struct build b = { .which = which,
			   .omit = omit,
			   .bad = -1,
			   .deflt = which == TP_FILTER_SEAL ? SCMP_ACT_ALLOW : SCMP_ACT_TRAP };
	scmp_filter_ctx ctx = seccomp_init(b.deflt);
	int rc;

	if (!ctx) {
		fail(err, errlen, "seccomp_init", ENOMEM, NULL);
		return NULL;
	}
	/* i386 and x32 calls would bypass a native table: kill the process outright. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0) /* binary tree: ~8 comparisons per syscall instead of ~250 */
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		fail(err, errlen, "seccomp_attr_set(BADARCH, OPTIMIZE)", -rc,
		     "libseccomp older than 2.5");
		goto out_release;
	}
	rc = add_worker_rules(ctx, &b);
	if (rc == 0 && which == TP_FILTER_ZYGOTE)
		rc = add_arg_rules(ctx, &b, zygote_rules,
				   sizeof zygote_rules / sizeof *zygote_rules, 0);
	if (rc < 0) {
		snprintf(what, sizeof what, "seccomp_rule_add(%s, nr %d)", filter_names[which],
			 b.bad);
		fail(err, errlen, what, -rc, "a rule in host/lockdown.c conflicts or is malformed");
		goto out_release;
	}
	return ctx;
out_release:
	seccomp_release(ctx);
	return NULL;
}

/* The context as BPF, into out (max instructions); the length, or 0 on error. */
static size_t export_program(scmp_filter_ctx ctx, struct sock_filter *out, size_t max, char *err,
			     size_t errlen)
{
	const char *what = "seccomp_export_bpf(memfd)", *hint = NULL;
	int fd = memfd_create("tp-seccomp", MFD_CLOEXEC), e;
	off_t size;

	if (fd < 0) {
		fail(err, errlen, "memfd_create(tp-seccomp)", errno, NULL);
		return 0;
	}
	e = -seccomp_export_bpf(ctx, fd);
	size = e ? 0 : lseek(fd, 0, SEEK_END);
	if (e == 0 && (size <= 0 || size % sizeof *out != 0 || (size_t)size > max * sizeof *out)) {
		e = E2BIG;
		hint = "the program exceeds its buffer; shrink the ENOSYS sweep";
	}
	errno = EIO; /* a short read sets none */
	if (e == 0 && pread(fd, out, (size_t)size, 0) != size) {
		e = errno;
		what = "pread(tp-seccomp memfd)";
	}
	close(fd);
	if (e) {
		fail(err, errlen, what, e, hint);
		return 0;
	}
	return (size_t)size / sizeof *out;
}

static size_t compile(enum tp_filter which, int omit, struct sock_filter *out, size_t max,
		      char *err, size_t errlen)
{
	scmp_filter_ctx ctx = build_filter(which, omit, err, errlen);
	size_t n;

	if (!ctx)
		return 0;
	n = export_program(ctx, out, max, err, errlen);
	seccomp_release(ctx);
	return n;
}

int tp_lockdown_prepare(char *err, size_t errlen)
{
	size_t nz = compile(TP_FILTER_ZYGOTE, -1, zygote_insns, BPF_MAXINSNS, err, errlen);
	size_t nw = nz ? compile(TP_FILTER_SEAL, -1, seal_insns, SEAL_MAX, err, errlen) : 0;
	int rc;

	if (nz == 0 || nw == 0)
		return -1;
	zygote_len = (unsigned short)nz;
	seal_len = (unsigned short)nw;
	rc = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	landlock_abi = rc > 0 ? rc : -errno;
	prepared = 1;
	return 0;
}

int tp_lockdown_landlock_abi(void)
{
	return landlock_abi;
}

int tp_lockdown_export_pfc(int fd)
{
	scmp_filter_ctx ctx = build_filter(TP_FILTER_WORKER, -1, NULL, 0);
	int rc;

	if (!ctx)
		return -1;
	rc = seccomp_export_pfc(ctx, fd);
	seccomp_release(ctx);
	return rc < 0 ? -1 : 0;
}

size_t tp_lockdown_program(enum tp_filter which, const void **insns)
{
	*insns = which == TP_FILTER_SEAL ? seal_insns : zygote_insns;
	if (!prepared || which == TP_FILTER_WORKER)
		return 0;
	return which == TP_FILTER_SEAL ? seal_len : zygote_len;
}

size_t tp_lockdown_compile(enum tp_filter which, int omit_nr, void *insns, size_t max)
{
	return compile(which, omit_nr, insns, max, NULL, 0);
}

void tp_syscall_name(int nr, char *buf, size_t len)
{
	char *name = nr >= 0 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr) : NULL;

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "nr_%d", nr);
	free(name);
}

/* ---- apply (worker, after fork) ------------------------------------------ */

static int check_cfg(const struct tp_lockdown *cfg, int *keep, char *err, size_t errlen)
{
	if (!prepared)
		return fail(err, errlen, "tp_lockdown_apply()", EINVAL,
			    "call tp_lockdown_prepare() in the zygote first");
	if (cfg->as_bytes == 0 || cfg->cpu_sec == 0 || cfg->nofile < 3)
		return fail(err, errlen, "tp_lockdown_apply(limits)", EINVAL,
			    "as_bytes and cpu_sec must be > 0 and nofile >= 3");
	if (cfg->nkeep < 0 || cfg->nkeep > MAX_KEEP || (cfg->nkeep > 0 && !cfg->keep_fds))
		return fail(err, errlen, "tp_lockdown_apply(keep_fds)", EINVAL,
			    "at most 32 fds may be kept");
	/* Sorted copy, so the closing step can walk the gaps between kept fds. */
	for (int i = 0; i < cfg->nkeep; i++) {
		int fd = cfg->keep_fds[i], j = i;
		if (fd < 3 || fcntl(fd, F_GETFD) < 0)
			return fail(err, errlen, "tp_lockdown_apply(keep_fds)", EBADF,
				    "kept fds must be open and >= 3");
		while (j > 0 && keep[j - 1] > fd) {
			keep[j] = keep[j - 1];
			j--;
		}
		keep[j] = fd;
	}
	return 0;
}

static int set_limit(int resource, rlim_t soft, rlim_t hard, const char *name, char *err,
		     size_t errlen)
{
	struct rlimit old, lim;
	char what[48];

	/* Never ask for more than we hold: an unprivileged worker may only lower. */
	if (getrlimit(resource, &old) == 0 && old.rlim_max != RLIM_INFINITY) {
		if (hard > old.rlim_max)
			hard = old.rlim_max;
		if (soft > hard)
			soft = hard;
	}
	lim.rlim_cur = soft;
	lim.rlim_max = hard;
	if (setrlimit(resource, &lim) == 0)
		return 0;
	snprintf(what, sizeof what, "setrlimit(%s)", name);
	return fail(err, errlen, what, errno, NULL);
}

static int set_rlimits(const struct tp_lockdown *cfg, char *err, size_t errlen)
{
	rlim_t cpu = (rlim_t)cfg->cpu_sec, nofile = (rlim_t)cfg->nofile;

	if (set_limit(RLIMIT_AS, cfg->as_bytes, cfg->as_bytes, "RLIMIT_AS", err, errlen) < 0 ||
	    set_limit(RLIMIT_CPU, cpu, cpu + 1, "RLIMIT_CPU", err, errlen) < 0 ||
	    set_limit(RLIMIT_FSIZE, 0, 0, "RLIMIT_FSIZE", err, errlen) < 0 ||
	    set_limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE", err, errlen) < 0 ||
	    set_limit(RLIMIT_NOFILE, nofile, nofile, "RLIMIT_NOFILE", err, errlen) < 0)
		return -1;
	/* Per-process limit, per-uid count: 0 only stops this worker from forking
	 * (second wall behind seccomp's EPERM on fork/clone; root is exempt until the drop). */
	return set_limit(RLIMIT_NPROC, 0, 0, "RLIMIT_NPROC", err, errlen);
}

static int close_from(unsigned first, unsigned last, unsigned loop_max)
{
	if (first > last)
		return 0;
	if (syscall(SYS_close_range, first, last, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
	for (unsigned fd = first; fd <= last && fd < loop_max; fd++)
		close((int)fd);
	return 0;
}

/* 0/1/2 on the zygote's /dev/null; every fd other than the kept ones closed. */
static int reset_fds(const int *keep, int nkeep, unsigned loop_max, char *err, size_t errlen)
{
	unsigned next = 3;

	for (int fd = 0; fd < 3; fd++)
		if (null_fd != fd && dup2(null_fd, fd) < 0)
			return fail(err, errlen, "dup2(/dev/null)", errno, NULL);
	/* null_fd is >= 3 here (or one of 0..2) and not kept: the sweep closes it. */
	for (int i = 0; i < nkeep; i++) {
		if (close_from(next, (unsigned)keep[i] - 1, loop_max) < 0)
			return fail(err, errlen, "close_range(fds)", errno, NULL);
		next = (unsigned)keep[i] + 1;
	}
	if (close_from(next, ~0U, loop_max) < 0)
		return fail(err, errlen, "close_range(fds)", errno, NULL);
	return 0;
}

/* Root gives up every uid, gid and capability: nothing after this can be undone. */
static int drop_root(char *err, size_t errlen)
{
	if (geteuid() != 0)
		return 0;
	if (setgroups(0, NULL) < 0)
		return fail(err, errlen, "setgroups(0)", errno, NULL);
	if (setresgid(NOBODY, NOBODY, NOBODY) < 0)
		return fail(err, errlen, "setresgid(65534)", errno, NULL);
	if (setresuid(NOBODY, NOBODY, NOBODY) < 0)
		return fail(err, errlen, "setresuid(65534)", errno, NULL);
	if (setresuid(0, 0, 0) == 0 || geteuid() != NOBODY)
		return fail(err, errlen, "setresuid(0) after drop", EPERM,
			    "the uid drop did not stick");
	/* The parent-death signal is cleared by an euid change: set it again. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_PDEATHSIG)", errno, NULL);
	return 0;
}

/* No filesystem access at all, no TCP, no signals or abstract sockets out of the domain. */
static int apply_landlock(char *err, size_t errlen)
{
	struct tp_landlock_attr attr;
	int rfd, e;

	if (landlock_abi <= 0)
		return 0; /* unavailable: seccomp already refuses every path call */
	attr.handled_access_fs = tp_landlock_fs_for_abi(landlock_abi);
	attr.handled_access_net = tp_landlock_net_for_abi(landlock_abi);
	attr.scoped = tp_landlock_scoped_for_abi(landlock_abi);
	rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rfd < 0)
		return fail(err, errlen, "landlock_create_ruleset(deny all)", errno,
			    "the ABI probed in the zygote no longer matches");
	/* No rules: every handled right is denied everywhere. One layer per fork. */
	if (syscall(SYS_landlock_restrict_self, rfd, 0) < 0) {
		e = errno;
		close(rfd);
		return fail(err, errlen, "landlock_restrict_self(deny all)", e,
			    "no_new_privs must be set first");
	}
	close(rfd);
	return 0;
}

static void on_sigsys(int sig, siginfo_t *info, void *uctx)
{
	struct tp_shm *shm = report_shm;

	(void)sig;
	(void)uctx;
	if (shm)
		__atomic_store_n(&shm->syscall_nr, info->si_syscall, __ATOMIC_RELEASE);
	_exit(TP_EXIT_VIOLATION);
}

/* The reporter is installed once, before Z (which refuses rt_sigaction(SIGSYS));
 * every worker inherits it through clone. */
static int install_reporter(char *err, size_t errlen)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return fail(err, errlen, "sigaction(SIGSYS)", errno, NULL);
	return 0;
}

/* Per worker: where to report, and SIGSYS deliverable. */
static int arm_reporter(struct tp_shm *shm, char *err, size_t errlen)
{
	sigset_t sys;

	report_shm = shm;
	/* A blocked SIGSYS would make the kernel kill without a report. */
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	if (sigprocmask(SIG_UNBLOCK, &sys, NULL) < 0)
		return fail(err, errlen, "sigprocmask(SIGSYS)", errno, NULL);
	return 0;
}

static int load_filter(const struct sock_filter *insns, unsigned short len, const char *what,
		       char *err, size_t errlen)
{
	struct sock_fprog prog = { .len = len, .filter = (struct sock_filter *)insns };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return fail(
		    err, errlen, what, errno,
		    "no_new_privs must be set first; the kernel needs CONFIG_SECCOMP_FILTER");
	return 0;
}

static int set_nnp(char *err, size_t errlen)
{
	/* No new privileges: exec of a setuid binary must not undo the filter. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS)", errno, NULL);
	return 0;
}

int tp_lockdown_landlock_only(char *err, size_t errlen)
{
	if (set_nnp(err, errlen) < 0)
		return -1;
	return apply_landlock(err, errlen);
}

int tp_lockdown_enter_zygote(char *err, size_t errlen)
{
	if (entered)
		return 0;
	if (!prepared)
		return fail(err, errlen, "tp_lockdown_enter_zygote()", EINVAL,
			    "call tp_lockdown_prepare() first");
	/* Z refuses open: workers dup2 this one onto 0/1/2. */
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		return fail(err, errlen, "open(/dev/null)", errno, NULL);
	/* NNP is inherited by every worker, which then never needs prctl for it. */
	if (install_reporter(err, errlen) < 0 || set_nnp(err, errlen) < 0 ||
	    load_filter(zygote_insns, zygote_len, "seccomp(zygote filter)", err, errlen) < 0)
		return -1;
	entered = 1;
	return 0;
}

/*
 * Order. Z is in force from the start (inherited from the zygote, or installed
 * here by a process that never entered one), and it allows exactly the calls the
 * steps below make, with the arguments they use. fds before rlimits: /dev/null
 * must dup whatever the new fd limit, and the close loop fallback must reach fds
 * opened under the old, larger limit. Every step is done before the seal W, which
 * refuses those calls again (Z+W is the worker policy): seccomp is still last.
 */
int tp_lockdown_apply(const struct tp_lockdown *cfg, char *err, size_t errlen)
{
	int keep[MAX_KEEP];
	struct rlimit nofile;
	unsigned loop_max = 1u << 20;

	/* The worker must not outlive the host, even before it is locked down. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, errlen, "prctl(PR_SET_PDEATHSIG)", errno, NULL);
	if (check_cfg(cfg, keep, err, errlen) < 0 || tp_lockdown_enter_zygote(err, errlen) < 0)
		return -1;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_max < loop_max)
		loop_max = (unsigned)nofile.rlim_max;
	if (reset_fds(keep, cfg->nkeep, loop_max, err, errlen) < 0 ||
	    set_rlimits(cfg, err, errlen) < 0 || drop_root(err, errlen) < 0 ||
	    apply_landlock(err, errlen) < 0 || arm_reporter(cfg->shm, err, errlen) < 0)
		return -1;
	return load_filter(seal_insns, seal_len, "seccomp(worker seal)", err, errlen);
}
