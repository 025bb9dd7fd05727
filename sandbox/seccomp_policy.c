/*
 * seccomp_policy.c — every syscall a worker may make, and how (see
 * seccomp_policy.h). Data only: lockdown.c compiles it. Anything not named here
 * traps and is reported as a sandbox_violation.
 */
#include "seccomp_policy.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- the policy ---------------------------------------------------------- */

/* Allowed with any arguments: I/O on fds the worker already holds, memory,
 * time, signals to itself, identity reads, exit. None reaches a path or a peer. */
const int tp_policy_allow_nrs[] = {
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
	/* time and timers (clock_gettime, clock_getres, clock_nanosleep are in arg_rules) */
	SYS_setitimer,
	SYS_getitimer,
	SYS_gettimeofday,
	SYS_time,
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
	/* sync, randomness, exit (futex is in arg_rules) */
	SYS_sched_yield,
	SYS_getrandom,
	SYS_exit,
	SYS_exit_group,
};

/* network: the worker talks to the host with read/write on its channel only */
#define NETWORK_NRS                                                                                \
	SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,    \
	    SYS_sendto, SYS_recvfrom, SYS_sendmsg, SYS_recvmsg, SYS_sendmmsg, SYS_recvmmsg,        \
	    SYS_shutdown, SYS_getsockopt, SYS_setsockopt, SYS_getsockname, SYS_getpeername
/* exec and new processes */
#define NEW_PROCESS_NRS SYS_execve, SYS_execveat, SYS_fork, SYS_vfork, SYS_clone
/* reaching other processes */
#define OTHER_PROCESS_NRS                                                                          \
	SYS_kill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, 424 /* pidfd_send_signal */,         \
	    438 /* pidfd_getfd */, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,        \
	    SYS_kcmp

/* EPERM: forbidden by policy; the language sees a clean PermissionError. Under
 * kernel-only (a policy without a language layer) every EPERM answer of the
 * worker's tables, this one's and the argument rules', traps instead
 * (lockdown.c worker_action): the report names the call. */
const int tp_policy_eperm_nrs[] = {
	NETWORK_NRS,
	NEW_PROCESS_NRS,
	OTHER_PROCESS_NRS,
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
 * older. Every other number in [SWEEP_FIRST, SWEEP_END) gets ENOSYS too, but for
 * uretprobe (335) and uprobe (336): the kernel runs those before any filter (since
 * 6.14 and 6.18), so a worker gets the kernel's answer (SIGILL, ENXIO outside the
 * uprobe trampoline); see docs/kernel-layer.md. */
const int tp_policy_enosys_nrs[] = {
	SYS_clone3,          SYS_close_range,
	SYS_openat2,         SYS_faccessat2,
	SYS_epoll_pwait2,    SYS_pidfd_open,
	SYS_futex_waitv,     452 /* fchmodat2 */,
	451 /* cachestat */, 453 /* map_shadow_stack */,
	462 /* mseal */,
};

/* The kernel reads futex's op and a clock id as an int: only the low 32 bits count.
 * A futex command is the op without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME. */
#define LOW32 0xffffffffull
#define FUTEX_CMD (LOW32 & ~(uint64_t)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))
#define FUTEX_CMD_IS(c) ARG(1, SCMP_CMP_MASKED_EQ, FUTEX_CMD, (c))
#define CLOCK_ID_0_7 ARG(0, SCMP_CMP_MASKED_EQ, LOW32 & ~7ull, 0)
#define CLOCK_ID_8_11 ARG(0, SCMP_CMP_MASKED_EQ, LOW32 & ~3ull, 8)

/* Calls allowed or refused depending on their arguments. Each syscall's rules are disjoint. */
const struct tp_arg_rule tp_policy_arg_rules[] = {
	/* Waits and wakes on our own words (libc locks, the shm page's handed word):
	 * FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, private or shared, either clock.
	 * Every other command traps, as unlisted madvise advice does: the
	 * priority-inheritance ones (LOCK_PI, LOCK_PI2, TRYLOCK_PI, UNLOCK_PI,
	 * WAIT_REQUEUE_PI, CMP_REQUEUE_PI) act on the thread whose tid is in the word,
	 * another process's too; REQUEUE, CMP_REQUEUE, WAKE_OP, WAKE_BITSET have no user. */
	{ SYS_futex, SCMP_ACT_ALLOW, 1, { FUTEX_CMD_IS(FUTEX_WAIT), NOARG } },
	{ SYS_futex, SCMP_ACT_ALLOW, 1, { FUTEX_CMD_IS(FUTEX_WAKE), NOARG } },
	{ SYS_futex, SCMP_ACT_ALLOW, 1, { FUTEX_CMD_IS(FUTEX_WAIT_BITSET), NOARG } },
	/* The standard clocks 0..11 (CLOCK_REALTIME .. CLOCK_TAI) only. A negative id
	 * is the CPU clock of another process or thread, (~pid << 3) | type: it would
	 * read that CPU time and tell which pids exist. Those, and 12 and above, trap. */
	{ SYS_clock_gettime, SCMP_ACT_ALLOW, 1, { CLOCK_ID_0_7, NOARG } },
	{ SYS_clock_gettime, SCMP_ACT_ALLOW, 1, { CLOCK_ID_8_11, NOARG } },
	{ SYS_clock_getres, SCMP_ACT_ALLOW, 1, { CLOCK_ID_0_7, NOARG } },
	{ SYS_clock_getres, SCMP_ACT_ALLOW, 1, { CLOCK_ID_8_11, NOARG } },
	{ SYS_clock_nanosleep, SCMP_ACT_ALLOW, 1, { CLOCK_ID_0_7, NOARG } },
	{ SYS_clock_nanosleep, SCMP_ACT_ALLOW, 1, { CLOCK_ID_8_11, NOARG } },
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
const struct tp_arg_rule tp_policy_zygote_rules[] = {
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
	/* worker of a session with a workspace: into it, before its code runs. */
	{ SYS_fchdir, SCMP_ACT_ALLOW, 0, { NOARG } },
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
	/* worker: its own Landlock domain: deny all, but beneath the policy's grants. */
	{ SYS_landlock_create_ruleset, SCMP_ACT_ALLOW, 1, { EQ(2, 0) } },
	{ SYS_landlock_create_ruleset, EPERM_ACT, 1, { NE(2, 0) } },
	{ SYS_landlock_restrict_self, SCMP_ACT_ALLOW, 1, { EQ(1, 0) } },
	{ SYS_landlock_restrict_self, EPERM_ACT, 1, { NE(1, 0) } },
	{ SYS_landlock_add_rule, SCMP_ACT_ALLOW, 2, { EQ(1, 1 /* PATH_BENEATH */), EQ(3, 0) } },
	{ SYS_landlock_add_rule, EPERM_ACT, 1, { NE(1, 1) } },
	{ SYS_landlock_add_rule, EPERM_ACT, 1, { NE(3, 0) } },
};

const size_t tp_policy_nallow_nrs = sizeof tp_policy_allow_nrs / sizeof *tp_policy_allow_nrs;
const size_t tp_policy_neperm_nrs = sizeof tp_policy_eperm_nrs / sizeof *tp_policy_eperm_nrs;
const size_t tp_policy_nenosys_nrs = sizeof tp_policy_enosys_nrs / sizeof *tp_policy_enosys_nrs;
const size_t tp_policy_narg_rules = sizeof tp_policy_arg_rules / sizeof *tp_policy_arg_rules;
const size_t tp_policy_nzygote_rules =
    sizeof tp_policy_zygote_rules / sizeof *tp_policy_zygote_rules;
