/*
 * test_confine.c — confinement tests for sandbox/lockdown.c, against the real kernel.
 * Each case gets a worker from a test zygote (forked once, under the zygote filter,
 * cloning workers with CLONE_PARENT as sandbox/zygote.c does), locks down only that
 * worker, lets it try one thing and report {return value, errno} through a kept
 * pipe; the parent asserts the exact outcome and, at the end, that it was itself
 * never confined. The stacked filters are also proved equal to the one-program
 * worker policy, syscall by syscall, in a small BPF interpreter.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lockdown.h"
#include "result.h"
#include "zygote.h"
#include "shm.h"
#include "seccomp_policy.h"
#include "seccomp_sim.h"
#include "tap.h"

/* The address-space limit workers get. Under ASan the process already reserves
 * terabytes of shadow: the limit is then the current size plus the same room,
 * as the zygote computes it. Computed once in main(): children run under the
 * zygote filter, which refuses to open /proc/self/statm. */
static unsigned long long g_as_bytes = 256ull << 20;
#define AS_BYTES g_as_bytes

static void init_as_bytes(void)
{
#ifdef TP_SANITIZE
	g_as_bytes = tp_zygote_vm_bytes() + (256ull << 20);
#endif
}
#define CPU_SEC 5
#define NOFILE 16
#define SECRET "tidepool-canary-secret-7f3a"
#define AUDIT_ARCH_X86_64_ 0xc000003eu
#define AUDIT_ARCH_I386_ 0x40000003u
#define AUDIT_ARCH_AARCH64_ 0xc00000b7u
#define X32_BIT 0x40000000u

struct report {
	long ret;
	int err;
	int pad;
};

/* FULL: cloned by the test zygote, as in production (Z inherited, apply loads W).
 * FULL_DIRECT: forked from this process, so apply installs Z itself first.
 * LANDLOCK_ONLY: forked, no_new_privs and Landlock alone. */
enum mode { FULL, FULL_DIRECT, LANDLOCK_ONLY };

struct child {
	pid_t pid;
	int rep; /* parent reads reports */
	int go;  /* parent writes one byte to let the child go on */
	long apply_ns;
};

static struct tp_shm *shm;
static char canary[64];
static long apply_ns[32], direct_ns[32];
static int napply, ndirect;
static int zygote_ctl = -1; /* our end of the test zygote's control socket */
static pid_t zygote_pid = -1;

/* ---- child side ---------------------------------------------------------- */

static void send_report(int fd, long ret, int err)
{
	struct report r = { .ret = ret, .err = err };

	if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(90);
}

/* Report a call's outcome: its return value and errno (0 on success). */
#define REPORT(fd, call)                                                                           \
	do {                                                                                       \
		errno = 0;                                                                         \
		long ret_ = (long)(call);                                                          \
		send_report(fd, ret_, ret_ < 0 ? errno : 0);                                       \
	} while (0)

static void wait_go(int go)
{
	char c;

	if (read(go, &c, 1) != 1)
		_exit(91);
}

typedef void (*child_fn)(int rep, int go);

static void child_main(child_fn fn, enum mode mode, int stdout_fd, int rep, int go)
{
	int keep[2] = { rep, go };
	struct tp_lockdown cfg = { .as_bytes = AS_BYTES,
				   .cpu_sec = CPU_SEC,
				   .nofile = NOFILE,
				   .keep_fds = keep,
				   .nkeep = 2,
				   .shm = shm };
	struct timespec t0, t1;
	struct tp_err err = { 0 };
	int rc;

	if (stdout_fd >= 0 && dup2(stdout_fd, 1) < 0)
		_exit(92);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc =
	    mode == LANDLOCK_ONLY ? tp_lockdown_landlock_only(&err) : tp_lockdown_apply(&cfg, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc < 0) {
		memcpy(shm->data, err.msg, sizeof err.msg);
		_exit(TP_EXIT_FATAL);
	}
	send_report(rep, (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec), 0);
	fn(rep, go);
	_exit(0);
}

/* ---- the test zygote ------------------------------------------------------ */

/* A spawn request: which child function, and fds rep, go (and stdout) attached. */
struct spawn {
	child_fn fn;
	int nfds;
};

union fd_cmsg {
	char buf[CMSG_SPACE(3 * sizeof(int))];
	struct cmsghdr align;
};

static int send_spawn(int ctl, const struct spawn *sp, const int *fds)
{
	union fd_cmsg u;
	struct iovec iov = { (void *)sp, sizeof *sp };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE((size_t)sp->nfds * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	memset(&u, 0, sizeof u);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)sp->nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)sp->nfds * sizeof(int));
	return sendmsg(ctl, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof *sp ? 0 : -1;
}

/* Under the zygote filter: recvmsg with MSG_CMSG_CLOEXEC, as sandbox/zygote.c does. */
static int recv_spawn(int ctl, struct spawn *sp, int *fds)
{
	union fd_cmsg u;
	struct iovec iov = { sp, sizeof *sp };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof u.buf };
	struct cmsghdr *c;

	if (recvmsg(ctl, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof *sp)
		return -1;
	c = CMSG_FIRSTHDR(&mh);
	if (c == NULL || c->cmsg_type != SCM_RIGHTS || sp->nfds < 2 || sp->nfds > 3 ||
	    c->cmsg_len != CMSG_LEN((size_t)sp->nfds * sizeof(int)))
		return -1;
	memcpy(fds, CMSG_DATA(c), (size_t)sp->nfds * sizeof(int));
	return 0;
}

static _Noreturn void zygote_main(int ctl)
{
	struct tp_err err = { 0 };
	/* A stray fd every worker inherits and must close (the real zygote has CTL_FD). */
	int stray = open("/dev/zero", O_RDONLY);

	if (stray < 0)
		tp_err_sys(&err, TP_LAYER_KERNEL, "open(/dev/zero)", errno, NULL);
	if (stray < 0 || tp_lockdown_enter_zygote(&err) < 0) {
		fprintf(stderr, "# tp_lockdown_enter_zygote: %s\n", err.msg);
		_exit(1);
	}
	for (;;) {
		struct spawn sp;
		int fds[3];
		int32_t v;
		pid_t pid;

		if (recv_spawn(ctl, &sp, fds) < 0)
			_exit(0); /* EOF: the tests are done */
		pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
		if (pid == 0)
			child_main(sp.fn, FULL, sp.nfds == 3 ? fds[2] : -1, fds[0], fds[1]);
		for (int i = 0; i < sp.nfds; i++)
			close(fds[i]);
		v = pid < 0 ? -errno : pid;
		if (send(ctl, &v, sizeof v, MSG_NOSIGNAL) != (ssize_t)sizeof v)
			_exit(1);
	}
}

static int zygote_start(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	zygote_pid = fork();
	if (zygote_pid == 0) {
		close(sv[0]);
		zygote_main(sv[1]);
	}
	close(sv[1]);
	zygote_ctl = sv[0];
	return zygote_pid < 0 ? -1 : 0;
}

/* A worker cloned by the test zygote: our child, thanks to CLONE_PARENT. */
static pid_t zygote_spawn(child_fn fn, int rep, int go, int stdout_fd)
{
	struct spawn sp = { .fn = fn, .nfds = stdout_fd >= 0 ? 3 : 2 };
	int fds[3] = { rep, go, stdout_fd };
	int32_t v = -1;

	if (send_spawn(zygote_ctl, &sp, fds) < 0 || recv(zygote_ctl, &v, sizeof v, 0) != sizeof v)
		return -1;
	return v;
}

/* ---- parent side --------------------------------------------------------- */

static int child_start(struct child *c, child_fn fn, enum mode mode, int stdout_fd)
{
	int rp[2], gp[2];
	struct report hdr;

	if (pipe(rp) < 0 || pipe(gp) < 0)
		return -1;
	shm->syscall_nr = -1;
	memset(shm->data, 0, 256);
	if (mode == FULL) {
		c->pid = zygote_spawn(fn, rp[1], gp[0], stdout_fd);
	} else {
		c->pid = fork();
		if (c->pid == 0) {
			close(rp[0]);
			close(gp[1]);
			child_main(fn, mode, stdout_fd, rp[1], gp[0]);
		}
	}
	close(rp[1]);
	close(gp[0]);
	c->rep = rp[0];
	c->go = gp[1];
	c->apply_ns = -1;
	if (c->pid < 0 || read(c->rep, &hdr, sizeof hdr) != (ssize_t)sizeof hdr) {
		fprintf(stderr, "# lockdown failed in child: %s\n", shm->data);
		if (c->pid > 0)
			waitpid(c->pid, NULL, 0);
		return -1;
	}
	c->apply_ns = hdr.ret;
	if (mode == FULL && napply < (int)(sizeof apply_ns / sizeof *apply_ns))
		apply_ns[napply++] = hdr.ret;
	if (mode == FULL_DIRECT && ndirect < (int)(sizeof direct_ns / sizeof *direct_ns))
		direct_ns[ndirect++] = hdr.ret;
	return 0;
}

/* Next report from the child; ret = -9999 when the child sent nothing more. */
static struct report child_report(struct child *c)
{
	struct report r = { .ret = -9999, .err = -1 };

	if (read(c->rep, &r, sizeof r) != (ssize_t)sizeof r)
		r.ret = -9999;
	return r;
}

static void child_go(struct child *c)
{
	if (write(c->go, "g", 1) != 1)
		fprintf(stderr, "# go: %s\n", strerror(errno));
}

/* Close our ends, reap the child and return its wait status. */
static int child_wait(struct child *c)
{
	int st = -1;

	close(c->go);
	close(c->rep);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static int exited_with(int st, int code)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == code;
}

#define CHECK_ERRNO(r, e)                                                                          \
	do {                                                                                       \
		CHECK_EQ_INT((r).ret, -1);                                                         \
		CHECK_EQ_INT((r).err, (e));                                                        \
	} while (0)

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

/* ---- the policy as a program: arch, x32 and each class ------------------- */

static struct prog zygote_prog, seal_prog, worker_prog;
static struct sock_filter worker_insns[BPF_MAXINSNS];

/* A worker's verdict: the zygote filter with the seal on top. */
static uint32_t verdict(uint32_t arch, uint32_t nr, uint64_t a0, uint64_t a1, uint64_t a2,
			uint64_t a3)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch, .args = { a0, a1, a2, a3 } };

	return stacked(&zygote_prog, &seal_prog, &d);
}

static int load_programs(void)
{
	const void *z, *w;

	zygote_prog.n = tp_lockdown_program(TP_FILTER_ZYGOTE, &z);
	seal_prog.n = tp_lockdown_program(TP_FILTER_SEAL, &w);
	zygote_prog.f = z;
	seal_prog.f = w;
	worker_prog.f = worker_insns;
	worker_prog.n = tp_lockdown_compile(TP_FILTER_WORKER, -1, worker_insns, BPF_MAXINSNS);
	return zygote_prog.n && seal_prog.n && worker_prog.n ? 0 : -1;
}

static uint32_t run1(const struct prog *p, uint32_t nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct seccomp_data d = { .nr = (int)nr,
				  .arch = AUDIT_ARCH_X86_64_,
				  .args = { a0, a1, a2 } };

	return bpf_run(p->f, p->n, &d);
}

#define X64(nr, a0, a1, a2, a3) verdict(AUDIT_ARCH_X86_64_, (nr), (a0), (a1), (a2), (a3))
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | (e))

static void test_program(void)
{
	printf("# seccomp: zygote filter %zu + worker seal %zu instructions "
	       "(the worker policy as one program: %zu)\n",
	       zygote_prog.n, seal_prog.n, worker_prog.n);
	CHECK(zygote_prog.n > 0 && zygote_prog.n <= BPF_MAXINSNS);
	CHECK(seal_prog.n > 0 && seal_prog.n < 128);
	/* Each filter alone: Z lets the zygote clone a worker, W refuses it again. */
	CHECK_EQ_INT(run1(&zygote_prog, SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0),
		     SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(run1(&zygote_prog, SYS_clone, SIGCHLD, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(run1(&zygote_prog, SYS_clone, CLONE_PARENT | SIGCHLD | CLONE_VM, 0, 0),
		     RET_ERRNO(EPERM));
	CHECK_EQ_INT(run1(&zygote_prog, SYS_openat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(run1(&zygote_prog, SYS_sysinfo, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(run1(&seal_prog, SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(run1(&seal_prog, SYS_close_range, 3, ~0u, 0), RET_ERRNO(ENOSYS));
	CHECK_EQ_INT(run1(&seal_prog, SYS_sysinfo, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(run1(&seal_prog, X32_BIT | SYS_read, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	/* Any other architecture, and x32 (nr with bit 30) on x86-64: kill the process. */
	CHECK_EQ_INT(verdict(AUDIT_ARCH_I386_, 20, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	CHECK_EQ_INT(verdict(AUDIT_ARCH_I386_, 0, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	CHECK_EQ_INT(verdict(AUDIT_ARCH_AARCH64_, 63, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	CHECK_EQ_INT(X64(X32_BIT | SYS_read, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	CHECK_EQ_INT(X64(X32_BIT | SYS_socket, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
	CHECK_EQ_INT(X64(X32_BIT | 520, 0, 0, 0, 0), SECCOMP_RET_KILL_PROCESS); /* x32 execve */
	/* Classes. */
	CHECK_EQ_INT(X64(SYS_read, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_exit_group, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_socket, AF_UNIX, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_openat, 0, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_execve, 0, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_landlock_create_ruleset, 0, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(447, 0, 0, 0, 0), RET_ERRNO(EPERM)); /* memfd_secret */
	CHECK_EQ_INT(X64(SYS_clone3, 0, 0, 0, 0), RET_ERRNO(ENOSYS));
	CHECK_EQ_INT(X64(452, 0, 0, 0, 0), RET_ERRNO(ENOSYS)); /* fchmodat2 */
	CHECK_EQ_INT(X64(462, 0, 0, 0, 0), RET_ERRNO(ENOSYS)); /* mseal */
	CHECK_EQ_INT(X64(599, 0, 0, 0, 0), RET_ERRNO(ENOSYS));
	CHECK_EQ_INT(X64(SYS_sysinfo, 0, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(X64(SYS_uname, 0, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(X64(600, 0, 0, 0, 0), SECCOMP_RET_TRAP);
	/* Argument checks. */
	CHECK_EQ_INT(X64(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_mmap, 0, 4096, PROT_READ | PROT_EXEC, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_mmap, 0, 4096, (1ull << 32) | PROT_EXEC, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_mprotect, 0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, 0),
		     RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_rt_sigaction, SIGINT, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_rt_sigaction, SIGRTMIN + 1, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_rt_sigaction, SIGSYS, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK(X64(SYS_rt_sigaction, (1ull << 32) | SIGSYS, 0, 0, 0) != SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_tgkill, 1, 1, SIGABRT, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_tgkill, 1, 1, SIGKILL, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_tkill, 1, SIGTERM, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_kill, 1, SIGABRT, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_prlimit64, 0, RLIMIT_CORE, 0, 0x1000), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_prlimit64, 0, RLIMIT_CORE, 0x1000, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_prlimit64, 1, RLIMIT_CORE, 0, 0x1000), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_newfstatat, 1, 0, 0, AT_EMPTY_PATH), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_newfstatat, AT_FDCWD, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_ioctl, 1, TCGETS, 0, 0), RET_ERRNO(ENOTTY));
	CHECK_EQ_INT(X64(SYS_ioctl, 1, TIOCSTI, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_fcntl, 1, F_GETFL, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_fcntl, 1, F_DUPFD, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_fcntl, 1, F_SETLK, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(X64(SYS_madvise, 0, 4096, MADV_DONTNEED, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_madvise, 0, 4096, MADV_MERGEABLE, 0), SECCOMP_RET_TRAP);
	/* futex: waits and wakes only, whatever the private and clock flags; the
	 * priority-inheritance commands (another thread's tid) and the rest trap. */
	CHECK_EQ_INT(X64(SYS_futex, 0x1000, FUTEX_WAIT, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_futex, 0x1000, FUTEX_WAKE_PRIVATE, 1, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_futex, 0x1000, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 0, 0),
		     SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(X64(SYS_futex, 0x1000, (1ull << 32) | FUTEX_WAIT, 0, 0), SECCOMP_RET_ALLOW);
	static const uint64_t futex_refused[] = {
		FUTEX_FD,
		FUTEX_REQUEUE,
		FUTEX_CMP_REQUEUE,
		FUTEX_WAKE_OP,
		FUTEX_LOCK_PI,
		FUTEX_UNLOCK_PI,
		FUTEX_TRYLOCK_PI,
		FUTEX_WAKE_BITSET,
		FUTEX_WAIT_REQUEUE_PI,
		FUTEX_CMP_REQUEUE_PI,
		FUTEX_LOCK_PI2,
		14,
		FUTEX_LOCK_PI_PRIVATE,
		(1ull << 32) | FUTEX_LOCK_PI,
		0x200 | FUTEX_WAIT,
		0x80000000 | FUTEX_WAKE,
	};
	for (size_t i = 0; i < sizeof futex_refused / sizeof *futex_refused; i++)
		CHECK_EQ_INT(X64(SYS_futex, 0x1000, futex_refused[i], 1, 0), SECCOMP_RET_TRAP);
	/* Clocks: the standard ids 0..11 only; a negative id (another process's or
	 * thread's CPU clock, as an int or sign-extended) and 12 and above trap. */
	static const int clock_nrs[] = { SYS_clock_gettime, SYS_clock_getres, SYS_clock_nanosleep };
	for (size_t i = 0; i < 3; i++) {
		for (uint64_t id = 0; id <= 11; id++)
			CHECK_EQ_INT(X64(clock_nrs[i], id, 0, 0, 0), SECCOMP_RET_ALLOW);
		CHECK_EQ_INT(X64(clock_nrs[i], (1ull << 32) | CLOCK_MONOTONIC, 0, 0, 0),
			     SECCOMP_RET_ALLOW);
		CHECK_EQ_INT(X64(clock_nrs[i], 12, 0, 0, 0), SECCOMP_RET_TRAP);
		CHECK_EQ_INT(X64(clock_nrs[i], 16, 0, 0, 0), SECCOMP_RET_TRAP);
		CHECK_EQ_INT(X64(clock_nrs[i], 0x7fffffff, 0, 0, 0), SECCOMP_RET_TRAP);
		CHECK_EQ_INT(X64(clock_nrs[i], 0xfffffff2, 0, 0, 0), SECCOMP_RET_TRAP); /* pid 1 */
		CHECK_EQ_INT(X64(clock_nrs[i], (uint64_t)-14, 0, 0, 0), SECCOMP_RET_TRAP);
		CHECK_EQ_INT(X64(clock_nrs[i], (uint64_t)-2, 0, 0, 0), SECCOMP_RET_TRAP);
	}
}

/* ---- the stack equals the worker policy ------------------------------------- */

#define NARGS 6
#define NSMALL 72 /* 0..71: prctl options, signals, fcntl commands, madvise advice */

/* Argument values the rules compare with, and the 64-bit traps around them. */
static const uint64_t probe_values[] = {
	0xff,
	0x100,
	0x1000,
	65533,
	65534,
	65535,
	CLONE_PARENT,
	CLONE_PARENT | SIGCHLD,
	CLONE_PARENT | SIGCHLD | CLONE_VM,
	CLONE_PARENT | SIGCHLD | (1ull << 32),
	MSG_CMSG_CLOEXEC,
	MSG_CMSG_CLOEXEC | MSG_DONTWAIT,
	MSG_NOSIGNAL,
	MSG_NOSIGNAL | MSG_DONTWAIT,
	TCGETS,
	TIOCSTI,
	AT_EMPTY_PATH,
	AT_EMPTY_PATH | 0x100,
	F_DUPFD_CLOEXEC,
	0x7fffffff,
	0x80000000,
	0xffffffff,
	1ull << 32,
	(1ull << 32) | 1,
	(1ull << 32) | 15,
	(1ull << 32) | SIGSYS,
	(1ull << 32) | 65534,
	FUTEX_LOCK_PI_PRIVATE,
	FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME,
	0xfffffff2, /* clock id -14: pid 1's CPU clock, as an int */
	~0ull - 13, /* and sign-extended */
	~0ull,
};

/* Argument vectors; each argument of each is also swept through every value above. */
static const uint64_t probe_bases[][NARGS] = {
	{ 0, 0, 0, 0, 0, 0 },
	{ 1, 1, 1, 1, 1, 1 },
	{ 65534, 65534, 65534, 0, 0, 0 },                           /* setres[ug]id to nobody */
	{ 1, 1, SIGABRT, 0, 0, 0 },                                 /* tgkill(SIGABRT) */
	{ 0, RLIMIT_CORE, 0, 0x1000, 0, 0 },                        /* getrlimit */
	{ 3, 0x1000, 4, MSG_NOSIGNAL, 0, 0 },                       /* send(MSG_NOSIGNAL) */
	{ 3, 0x1000, MSG_CMSG_CLOEXEC, 0, 0, 0 },                   /* recvmsg(MSG_CMSG_CLOEXEC) */
	{ CLONE_PARENT | SIGCHLD, 0, 0, 0, 0, 0 },                  /* clone a worker */
	{ 1, 0x1000, 0, AT_EMPTY_PATH, 0, 0 },                      /* fstat */
	{ 0x1000, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0 }, /* mmap */
};

#define NVALUES (NSMALL + sizeof probe_values / sizeof *probe_values)
#define NBASES (sizeof probe_bases / sizeof *probe_bases)

static uint64_t probe_value(size_t i)
{
	return i < NSMALL ? i : probe_values[i - NSMALL];
}

/* How many probes of syscall nr get a different verdict from Z+seal than from the
 * one-program worker policy; the first few are printed when print is set. */
static long mismatches(uint32_t arch, uint32_t nr, const struct prog *seal, int print)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch };
	long bad = 0;

	for (size_t b = 0; b < NBASES; b++)
		for (int i = 0; i < NARGS; i++)
			for (size_t v = 0; v < NVALUES; v++) {
				memcpy(d.args, probe_bases[b], sizeof d.args);
				d.args[i] = probe_value(v);
				uint32_t got = stacked(&zygote_prog, seal, &d);
				uint32_t want = bpf_run(worker_prog.f, worker_prog.n, &d);
				if (got == want)
					continue;
				if (print && bad < 3)
					printf("# mismatch: nr %u a%d=%#llx (base %zu): "
					       "stack %#x, worker policy %#x\n",
					       nr, i, (unsigned long long)d.args[i], b, got, want);
				bad++;
			}
	return bad;
}

static void test_equivalence(void)
{
	long bad = 0, probes = 0;

	for (uint32_t nr = 0; nr <= 620; nr++) {
		bad += mismatches(AUDIT_ARCH_X86_64_, nr, &seal_prog, 1);
		probes += (long)(NBASES * NARGS * NVALUES);
	}
	/* Other entry points die in both (a sample: the arch test comes first). */
	for (uint32_t nr = 0; nr <= 600; nr += 25) {
		bad += mismatches(AUDIT_ARCH_X86_64_, X32_BIT | nr, &seal_prog, 1);
		bad += mismatches(AUDIT_ARCH_I386_, nr, &seal_prog, 1);
		probes += (long)(2 * NBASES * NARGS * NVALUES);
	}
	printf("# zygote filter + seal == worker policy: %ld probes, %ld differ\n", probes, bad);
	CHECK_EQ_INT(bad, 0);
}

/* Leaving any syscall out of the seal breaks the equivalence: the seal holds no
 * entry too many, and the sweep above would notice one too few. */
static void test_seal_needed(void)
{
	static struct sock_filter buf[512];
	int sealed = 0, broken = 0;
	struct prog w = { buf, 0 };

	for (int nr = 0; nr < 600; nr++) {
		w.n = tp_lockdown_compile(TP_FILTER_SEAL, nr, buf, sizeof buf / sizeof *buf);
		CHECK(w.n > 0);
		if (w.n == seal_prog.n && memcmp(buf, seal_prog.f, w.n * sizeof *buf) == 0)
			continue; /* not in the seal */
		sealed++;
		broken += mismatches(AUDIT_ARCH_X86_64_, (uint32_t)nr, &w, 0) > 0;
	}
	printf("# the seal covers %d syscalls; without any one of them the stack differs "
	       "from the worker policy: %d of %d\n",
	       sealed, broken, sealed);
	CHECK(sealed >= 13);
	CHECK_EQ_INT(broken, sealed);
	/* The zygote's clone, for instance, would become a worker's. */
	w.n = tp_lockdown_compile(TP_FILTER_SEAL, SYS_clone, buf, sizeof buf / sizeof *buf);
	{
		struct seccomp_data d = { .nr = SYS_clone,
					  .arch = AUDIT_ARCH_X86_64_,
					  .args = { CLONE_PARENT | SIGCHLD } };
		CHECK_EQ_INT(stacked(&zygote_prog, &w, &d), SECCOMP_RET_ALLOW);
		CHECK_EQ_INT(stacked(&zygote_prog, &seal_prog, &d), RET_ERRNO(EPERM));
	}
}

static void test_pfc(void)
{
	int fd = memfd_create("pfc", MFD_CLOEXEC);
	static char pfc[1 << 20];
	ssize_t n;

	CHECK(fd >= 0);
	CHECK_EQ_INT(tp_lockdown_export_pfc(fd), 0);
	n = pread(fd, pfc, sizeof pfc - 1, 0);
	close(fd);
	CHECK(n > 0);
	pfc[n > 0 ? n : 0] = '\0';
	/* Only x86-64 has rules; any other arch gets KILL_PROCESS; default is TRAP. */
	CHECK(strstr(pfc, "if ($arch == 3221225534)") != NULL);
	CHECK(strstr(pfc, "# invalid architecture action\naction KILL_PROCESS;") != NULL);
	CHECK(strstr(pfc, "  # default action\n  action TRAP;") != NULL);
	CHECK(strstr(pfc, "$arch == 1073741827") == NULL); /* no i386 section */
	/* libseccomp 2.5.4's PFC omits the x32 test that its BPF does emit
	 * (ld nr; jge 0x40000000 -> bad-arch action): test_program() proves that. */
}

static void test_names(void)
{
	char buf[32];

	tp_syscall_name(SYS_read, buf, sizeof buf);
	CHECK_EQ_STR(buf, "read");
	tp_syscall_name(SYS_sysinfo, buf, sizeof buf);
	CHECK_EQ_STR(buf, "sysinfo");
	tp_syscall_name(9999, buf, sizeof buf);
	CHECK_EQ_STR(buf, "nr_9999");
	tp_syscall_name(-1, buf, sizeof buf);
	CHECK_EQ_STR(buf, "nr_-1");
}

/* ---- files ----------------------------------------------------------------- */

static void try_canary(int rep, int go)
{
	char buf[128];
	int fd;

	(void)go;
	fd = open(canary, O_RDONLY);
	send_report(rep, fd, fd < 0 ? errno : 0);
	if (fd >= 0 && read(fd, buf, sizeof buf) > 0)
		(void)!write(rep, buf, sizeof buf); /* a leak the parent would see */
	fd = openat(AT_FDCWD, canary, O_RDONLY);
	send_report(rep, fd, fd < 0 ? errno : 0);
	REPORT(rep, creat("/tmp/tp-confine-created", 0644));
}

static void try_landlock(int rep, int go)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_port = htons(1),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int s;

	(void)go;
	REPORT(rep, open(canary, O_RDONLY));
	REPORT(rep, open("/proc/self/status", O_RDONLY));
	REPORT(rep, open("/tmp/tp-confine-created", O_WRONLY | O_CREAT, 0644));
	s = socket(AF_INET, SOCK_STREAM, 0);
	REPORT(rep, connect(s, (struct sockaddr *)&in, sizeof in));
	REPORT(rep, kill(getppid(), 0));
	snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "tp-confine-%d", (int)getppid());
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	REPORT(rep, connect(s, (struct sockaddr *)&un,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
					strlen(un.sun_path + 1))));
	REPORT(rep, kill(getpid(), 0)); /* own domain: allowed */
}

static void test_files(void)
{
	struct child c;
	struct report r;
	char buf[128];

	if (child_start(&c, try_canary, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM);
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM);
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM);
	CHECK_EQ_INT(read(c.rep, buf, sizeof buf), 0); /* nothing more: no secret */
	CHECK(exited_with(child_wait(&c), 0));
	CHECK(access("/tmp/tp-confine-created", F_OK) < 0);
	CHECK(read_file(canary, buf, sizeof buf) > 0 && strcmp(buf, SECRET) == 0);
}

static void test_landlock_only(void)
{
	int abi = tp_lockdown_landlock_abi(), ls;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct child c;
	struct report r;

	printf("# landlock ABI %d\n", abi);
	if (abi <= 0) {
		TP_SKIP("landlock: not in this kernel (ABI %d); workers run without it", abi);
		return;
	}
	if (abi < 4)
		TP_SKIP("landlock TCP rules: ABI %d < 4", abi);
	if (abi < 6)
		TP_SKIP("landlock signal and abstract-socket scopes: ABI %d < 6", abi);
	/* An abstract socket listening in the parent: outside the child's scope. */
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "tp-confine-%d", (int)getpid());
	CHECK(bind(ls, (struct sockaddr *)&un,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			       strlen(un.sun_path + 1))) == 0);
	CHECK(listen(ls, 4) == 0);
	if (child_start(&c, try_landlock, LANDLOCK_ONLY, -1) < 0) {
		CHECK(!"child_start");
		close(ls);
		return;
	}
	r = child_report(&c);
	CHECK_ERRNO(r, EACCES); /* canary, although root and mode 0644 */
	r = child_report(&c);
	CHECK_ERRNO(r, EACCES); /* /proc too */
	r = child_report(&c);
	CHECK_ERRNO(r, EACCES); /* no file creation */
	r = child_report(&c);
	if (abi >= 4)
		CHECK_ERRNO(r, EACCES); /* TCP connect */
	r = child_report(&c);
	if (abi >= 6)
		CHECK_ERRNO(r, EPERM); /* signal to the parent: out of scope */
	r = child_report(&c);
	if (abi >= 6)
		CHECK_ERRNO(r, EPERM); /* abstract unix socket out of scope */
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 0);
	CHECK(exited_with(child_wait(&c), 0));
	close(ls);
}

/* ---- network, processes, stdout --------------------------------------------- */

static void try_network(int rep, int go)
{
	int sv[2];

	REPORT(rep, socket(AF_INET, SOCK_STREAM, 0));
	REPORT(rep, socket(AF_INET6, SOCK_DGRAM, 0));
	REPORT(rep, socket(AF_UNIX, SOCK_STREAM, 0));
	REPORT(rep, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	REPORT(rep, sendto(rep, "x", 1, 0, NULL, 0));
	wait_go(go); /* the parent lists our fds now */
}

/* Our fds are exactly 0, 1, 2 and the two kept pipe ends. */
static void check_fds(pid_t pid)
{
	char path[64], link[128];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
		ssize_t k = readlink(path, link, sizeof link - 1);
		if (k < 0)
			continue;
		link[k] = '\0';
		n++;
		if (fd < 3)
			CHECK_EQ_STR(link, "/dev/null");
		else
			CHECK(strncmp(link, "pipe:", 5) == 0);
	}
	CHECK_EQ_INT(n, 5);
}

static void test_network(void)
{
	struct child c;
	struct report r;

	/* The test zygote's stray /dev/zero and control socket are inherited too. */
	if (child_start(&c, try_network, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	for (int i = 0; i < 5; i++) {
		r = child_report(&c);
		CHECK_ERRNO(r, EPERM);
	}
	check_fds(c.pid); /* no socket fd was created, the stray fd is gone */
	child_go(&c);
	CHECK(exited_with(child_wait(&c), 0));
}

static void try_process(int rep, int go)
{
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} args = { .exit_signal = SIGCHLD };
	char *argv[] = { "/bin/true", NULL };
	char *envp[] = { NULL };
	pid_t pid;

	(void)go;
	pid = fork();
	if (pid == 0)
		_exit(42);
	send_report(rep, pid, pid < 0 ? errno : 0);
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(42);
	send_report(rep, pid, pid < 0 ? errno : 0);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
	if (pid == 0)
		_exit(42);
	send_report(rep, pid, pid < 0 ? errno : 0);
	REPORT(rep, execve(argv[0], argv, envp));
	REPORT(rep, syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
	REPORT(rep, syscall(SYS_io_uring_setup, 8, NULL));
	REPORT(rep, syscall(SYS_unshare, CLONE_NEWUSER));
	REPORT(rep, syscall(SYS_memfd_create, "x", 0));
}

static void only_child_is_zygote(void)
{
	char path[64], buf[256], want[32];

	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	snprintf(want, sizeof want, "%d ", (int)zygote_pid);
	if (read_file(path, buf, sizeof buf) >= 0)
		CHECK_EQ_STR(buf, want);
}

static void test_process(void)
{
	struct child c;
	struct report r;
	int st;

	if (child_start(&c, try_process, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM); /* fork */
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM); /* clone */
	r = child_report(&c);
	CHECK_ERRNO(r, ENOSYS); /* clone3 */
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM); /* execve */
	for (int i = 0; i < 4; i++) {
		r = child_report(&c);
		CHECK_ERRNO(r, EPERM); /* ptrace, io_uring, unshare, memfd_create */
	}
	CHECK(exited_with(child_wait(&c), 0));
	/* We are a subreaper: a grandchild would now be ours. There is none: nothing
	 * to reap, and our only child is the test zygote. */
	CHECK_EQ_INT(waitpid(-1, &st, WNOHANG), 0);
	only_child_is_zygote();
}

static void try_stdout(int rep, int go)
{
	(void)go;
	REPORT(rep, write(1, "LEAK", 4));
	REPORT(rep, write(2, "LEAK", 4));
	REPORT(rep, isatty(1) ? 0 : -1); /* TCGETS -> ENOTTY, as for a pipe */
}

static void test_stdout(void)
{
	struct child c;
	struct report r;
	int out[2];
	char buf[16];

	CHECK(pipe(out) == 0);
	if (child_start(&c, try_stdout, FULL, out[1]) < 0) {
		CHECK(!"child_start");
		return;
	}
	close(out[1]);
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 4);
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 4);
	r = child_report(&c);
	CHECK_ERRNO(r, ENOTTY);
	CHECK(exited_with(child_wait(&c), 0));
	CHECK_EQ_INT(read(out[0], buf, sizeof buf), 0); /* it all went to /dev/null */
	close(out[0]);
}

/* ---- violations, signals, memory -------------------------------------------- */

static void try_sysinfo(int rep, int go)
{
	struct sysinfo si;

	(void)go;
	REPORT(rep, syscall(SYS_sysinfo, &si)); /* never reported: the worker dies */
}

static void try_blocked_sigsys(int rep, int go)
{
	sigset_t set;

	(void)rep;
	(void)go;
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	sigprocmask(SIG_BLOCK, &set, NULL);
	syscall(SYS_sysinfo, NULL);
}

static void try_x32(int rep, int go)
{
	(void)rep;
	(void)go;
	syscall(X32_BIT | SYS_getpid);
}

/* i386 getpid through the 32-bit entry point. TP_TEST_NO_IA32 in the
 * environment uses vector 0x81 instead, which faults as 0x80 does on a kernel
 * without ia32 emulation: the no-emulation path can be exercised anywhere. */
static int fake_no_ia32;

static long int80_getpid(void)
{
	long ret = 20; /* i386 getpid */

	if (fake_no_ia32)
		__asm__ volatile("int $0x81" : "+a"(ret) : : "memory");
	else
		__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return ret;
}

/* A fault must stay a signal: under ASan the sanitizer's SIGSEGV handler would
 * report it and exit(1), and the status would say nothing about the kernel. */
static void segv_default(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };

	sigaction(SIGSEGV, &sa, NULL);
}

static void try_i386(int rep, int go)
{
	(void)rep;
	(void)go;
	segv_default();
	int80_getpid();
}

/* Does this kernel run i386 syscalls at all? Asked of an unconfined child:
 * 1 yes (int $0x80 returned our pid), 0 no (CONFIG_IA32_EMULATION off or
 * ia32_emulation=0: the instruction faults with SIGSEGV before any syscall
 * entry, so no seccomp filter ever sees it), -1 neither. */
static int ia32_emulation(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		segv_default();
		_exit(int80_getpid() == (long)getpid() ? 0 : 3);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		return 0;
	fprintf(stderr, "# ia32 probe: status %#x\n", st);
	return -1;
}

static void test_violation(void)
{
	struct child c;
	char name[32];
	int st, ia32;

	if (child_start(&c, try_sysinfo, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	CHECK_EQ_INT(child_report(&c).ret, -9999);
	st = child_wait(&c);
	CHECK(exited_with(st, TP_EXIT_VIOLATION));
	CHECK_EQ_INT(shm->syscall_nr, SYS_sysinfo);
	tp_syscall_name(shm->syscall_nr, name, sizeof name);
	CHECK_EQ_STR(name, "sysinfo");

	/* With SIGSYS blocked the kernel kills: no report, but WTERMSIG says SIGSYS. */
	if (child_start(&c, try_blocked_sigsys, FULL, -1) == 0) {
		st = child_wait(&c);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
		CHECK_EQ_INT(shm->syscall_nr, -1);
	}
	/* x32 and i386 entry points: killed by the arch checks, before any rule. */
	if (child_start(&c, try_x32, FULL, -1) == 0) {
		st = child_wait(&c);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
		CHECK_EQ_INT(shm->syscall_nr, -1);
	}
	ia32 = ia32_emulation();
	CHECK(ia32 >= 0);
	if (ia32 == 0)
		TP_SKIP("i386 entry point: the kernel has no ia32 emulation (int $0x80 faults "
			"before seccomp); the confined worker must fault the same way");
	if (child_start(&c, try_i386, FULL, -1) == 0) {
		st = child_wait(&c);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == (ia32 == 1 ? SIGSYS : SIGSEGV));
		CHECK_EQ_INT(shm->syscall_nr, -1);
	}
}

/* ---- the ENOSYS sweep on the running kernel ---------------------------------- */

/* Calls each number the parent writes on go (an int, -1 ends) with zero
 * arguments and reports it. */
static void try_numbers(int rep, int go)
{
	int nr;

	while (read(go, &nr, sizeof nr) == (ssize_t)sizeof nr && nr >= 0)
		REPORT(rep, syscall(nr, 0, 0, 0, 0, 0, 0));
}

static int send_nr(struct child *c, int nr)
{
	return write(c->go, &nr, sizeof nr) == (ssize_t)sizeof nr ? 0 : -1;
}

/* How a call ended: killed by signal sig, or ret with errno err (0 if ret >= 0). */
struct outcome {
	int sig;
	long ret;
	int err;
};

static int same_outcome(struct outcome a, struct outcome b)
{
	return a.sig == b.sig && (a.sig != 0 || (a.ret == b.ret && a.err == b.err));
}

static void describe(struct outcome o, char *buf, size_t len)
{
	if (o.sig)
		snprintf(buf, len, "killed by %s", strsignal(o.sig));
	else
		snprintf(buf, len, "%ld (%s)", o.ret, o.err ? strerror(o.err) : "no error");
}

/* nr with zero arguments in a child with no filter at all: the kernel's own answer. */
static struct outcome unconfined(int nr)
{
	struct outcome o = { .ret = -9999, .err = -1 };
	struct report r;
	int p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		return o;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		REPORT(p[1], syscall(nr, 0, 0, 0, 0, 0, 0));
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &r, sizeof r) == (ssize_t)sizeof r) {
		o.ret = r.ret;
		o.err = r.err;
	}
	close(p[0]);
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st))
		o.sig = WTERMSIG(st);
	return o;
}

/* nr with zero arguments in a worker of the test zygote (Z and the seal). */
static struct outcome confined(int nr)
{
	struct outcome o = { .ret = -9999, .err = -1 };
	struct child c;
	int st;

	if (child_start(&c, try_numbers, FULL, -1) < 0)
		return o;
	if (send_nr(&c, nr) == 0) {
		struct report r = child_report(&c);
		o.ret = r.ret;
		o.err = r.err;
		if (r.ret != -9999) /* alive: let it end (a write to a dead one is SIGPIPE) */
			send_nr(&c, -1);
	}
	st = child_wait(&c);
	if (WIFSIGNALED(st))
		o.sig = WTERMSIG(st);
	return o;
}

/* The running kernel's version as major * 1000 + minor (6.18 -> 6018); 0 if unknown. */
static int kernel_version(void)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 1000 + minor;
}

/* Every number in [SWEEP_FIRST, SWEEP_END) the filter answers with ENOSYS gets
 * ENOSYS from the real kernel too, in one confined worker, but for uretprobe
 * (335) and uprobe (336): the kernel runs those two before any seccomp filter
 * (kernel/seccomp.c, seccomp_uprobe_exception), so a worker gets the kernel's
 * own answer, as an unconfined process does. Outside the kernel's uprobe
 * trampoline that is SIGILL for uretprobe and ENXIO for uprobe; ENOSYS (the
 * filter's) on a kernel without the syscall. */
static void test_sweep_on_kernel(void)
{
	static const struct {
		int nr;
		const char *name;
		int added, passthrough; /* kernel versions, major * 1000 + minor */
	} probes[] = {
		{ 335, "uretprobe", 6011, 6014 }, /* passthrough also in 6.12.y, 6.13.y stable */
		{ 336, "uprobe", 6018, 6018 },    /* added with its passthrough */
	};
	struct child c;
	int version = kernel_version(), n = 0, wrong = 0;

	if (child_start(&c, try_numbers, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	for (int nr = SWEEP_FIRST; nr < SWEEP_END; nr++) {
		if (nr == 335 || nr == 336 || X64(nr, 0, 0, 0, 0) != RET_ERRNO(ENOSYS))
			continue;
		if (send_nr(&c, nr) < 0)
			break;
		struct report r = child_report(&c);
		n++;
		if (r.ret == -9999) { /* the worker died: no more answers */
			printf("# nr %d ended the worker\n", nr);
			wrong++;
			break;
		}
		if (r.ret != -1 || r.err != ENOSYS) {
			if (wrong++ < 3)
				printf("# nr %d in a worker: %ld, errno %d (want -1, ENOSYS)\n", nr,
				       r.ret, r.err);
		}
	}
	if (wrong == 0)
		send_nr(&c, -1);
	CHECK(exited_with(child_wait(&c), 0));
	printf("# %d numbers in %d..%d the filter answers with ENOSYS: %d answered otherwise\n", n,
	       SWEEP_FIRST, SWEEP_END - 1, wrong);
	CHECK(n > 200);
	CHECK_EQ_INT(wrong, 0);

	CHECK(version > 0);
	for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
		struct outcome own = unconfined(probes[i].nr), got = confined(probes[i].nr);
		struct outcome enosys = { .ret = -1, .err = ENOSYS };
		char a[80], b[80];

		describe(own, a, sizeof a);
		describe(got, b, sizeof b);
		printf("# %d (%s) on %d.%d: unconfined %s; in a worker %s\n", probes[i].nr,
		       probes[i].name, version / 1000, version % 1000, a, b);
		if (same_outcome(own, enosys)) {
			/* No such syscall: the filter's ENOSYS, like the rest of the sweep. */
			CHECK(same_outcome(got, enosys));
			if (version >= probes[i].added)
				TP_SKIP("%d (%s): this kernel has no %s syscall (configured out?): "
					"nothing to pass through seccomp",
					probes[i].nr, probes[i].name, probes[i].name);
			continue;
		}
		/* The kernel has it. From its passthrough on, the worker gets exactly
		 * the kernel's own answer; before, the filter's ENOSYS. */
		CHECK(own.sig != 0 || own.ret == -1);
		if (version >= probes[i].passthrough) {
			CHECK(same_outcome(got, own));
		} else {
			TP_SKIP(
			    "%d (%s) on %d.%d: whether the kernel passes it through seccomp "
			    "depends on a stable backport; the worker gets the kernel's answer or "
			    "the filter's ENOSYS",
			    probes[i].nr, probes[i].name, version / 1000, version % 1000);
			CHECK(same_outcome(got, own) || same_outcome(got, enosys));
		}
	}
}

static void try_signals_memory(int rep, int go)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	void *p;

	(void)go;
	REPORT(rep, sigaction(SIGSYS, &sa, NULL));
	REPORT(rep, signal(SIGSYS, SIG_DFL) == SIG_ERR ? -1 : 0);
	REPORT(rep, sigaction(SIGINT, &sa, NULL));
	REPORT(rep, kill(getpid(), SIGTERM));
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	send_report(rep, p == MAP_FAILED ? -1 : 0, p == MAP_FAILED ? errno : 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	send_report(rep, p == MAP_FAILED ? -1 : 0, p == MAP_FAILED ? errno : 0);
	REPORT(rep, mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC));
	REPORT(rep, madvise(p, 4096, MADV_DONTNEED));
	REPORT(rep, munmap(p, 4096));
}

static void test_signals_memory(void)
{
	struct child c;
	struct report r;
	static const int want[] = { -EPERM, -EPERM, 0, -EPERM, -EPERM, 0, -EPERM, 0, 0 };

	if (child_start(&c, try_signals_memory, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		r = child_report(&c);
		if (want[i] == 0)
			CHECK_EQ_INT(r.ret, 0);
		else
			CHECK_ERRNO(r, -want[i]);
	}
	CHECK(exited_with(child_wait(&c), 0));
}

static void try_abort(int rep, int go)
{
	(void)rep;
	(void)go;
	abort();
}

static void test_abort(void)
{
	struct child c;
	int st;

	if (child_start(&c, try_abort, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	st = child_wait(&c);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && !WCOREDUMP(st));
	CHECK_EQ_INT(shm->syscall_nr, -1);
}

/* ---- what /proc says about a locked-down worker ------------------------------ */

static void try_wait(int rep, int go)
{
	(void)rep;
	wait_go(go);
}

static void check_limit(const char *limits, const char *name, const char *soft, const char *hard)
{
	const char *line = strstr(limits, name);
	char s[32] = "", h[32] = "";

	CHECK(line != NULL);
	if (line && sscanf(line + 26, "%31s %31s", s, h) == 2) {
		CHECK_EQ_STR(s, soft);
		CHECK_EQ_STR(h, hard);
	}
}

static void test_proc(void)
{
	struct child c;
	char path[64], status[4096], limits[4096], as[32];

	if (child_start(&c, try_wait, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	snprintf(path, sizeof path, "/proc/%d/status", (int)c.pid);
	CHECK(read_file(path, status, sizeof status) > 0);
	CHECK(strstr(status, "\nSeccomp:\t2\n") != NULL);
	if (strstr(status, "\nSeccomp_filters:\t") != NULL)
		CHECK(strstr(status, "\nSeccomp_filters:\t2\n") != NULL); /* Z and the seal */
	else
		TP_SKIP("filter count: /proc/PID/status has no Seccomp_filters (kernel < 5.9)");
	CHECK(strstr(status, "\nNoNewPrivs:\t1\n") != NULL);
	if (geteuid() == 0) {
		CHECK(strstr(status, "\nUid:\t65534\t65534\t65534\t65534\n") != NULL);
		CHECK(strstr(status, "\nGid:\t65534\t65534\t65534\t65534\n") != NULL);
		CHECK(strstr(status, "\nGroups:\t") != NULL &&
		      strspn(strstr(status, "\nGroups:\t") + 9, " ") ==
			  strcspn(strstr(status, "\nGroups:\t") + 9, "\n")); /* none */
		CHECK(strstr(status, "\nCapEff:\t0000000000000000\n") != NULL);
		CHECK(strstr(status, "\nCapPrm:\t0000000000000000\n") != NULL);
	} else {
		TP_SKIP("uid, gid and capability drop: not run as root");
	}
	snprintf(path, sizeof path, "/proc/%d/limits", (int)c.pid);
	CHECK(read_file(path, limits, sizeof limits) > 0);
	snprintf(as, sizeof as, "%llu", AS_BYTES);
	check_limit(limits, "Max address space", as, as);
	check_limit(limits, "Max cpu time", "5", "6");
	check_limit(limits, "Max file size", "0", "0");
	check_limit(limits, "Max core file size", "0", "0");
	check_limit(limits, "Max open files", "16", "16");
	check_limit(limits, "Max processes", "0", "0");
	check_fds(c.pid);
	child_go(&c);
	CHECK(exited_with(child_wait(&c), 0));
}

static void try_limits(int rep, int go)
{
	struct rlimit lim = { 0, 0 };
	void *big, *small;

	(void)go;
	REPORT(rep, getrlimit(RLIMIT_FSIZE, &lim) < 0 ? -1 : (long)(lim.rlim_cur + lim.rlim_max));
	REPORT(rep, getrlimit(RLIMIT_CORE, &lim) < 0 ? -1 : (long)(lim.rlim_cur + lim.rlim_max));
	REPORT(rep, setrlimit(RLIMIT_CORE, &lim));
	big = malloc(AS_BYTES * 2);
	send_report(rep, big == NULL ? -1 : 0, 0);
	small = malloc(8 << 20);
	if (small)
		memset(small, 1, 8 << 20);
	send_report(rep, small == NULL ? -1 : 0, 0);
	small = realloc(small, 64 << 20); /* mremap */
	send_report(rep, small == NULL ? -1 : 0, 0);
	free(small);
}

static void test_limits(void)
{
	struct child c;
	struct report r;

	if (child_start(&c, try_limits, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 0); /* FSIZE 0/0 */
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 0); /* CORE 0/0 */
	r = child_report(&c);
	CHECK_ERRNO(r, EPERM); /* setrlimit */
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, -1); /* malloc beyond RLIMIT_AS */
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 0); /* small malloc still works */
	r = child_report(&c);
	CHECK_EQ_INT(r.ret, 0); /* realloc */
	CHECK(exited_with(child_wait(&c), 0));
}

/* What an interpreter needs after lockdown still works. */
static void try_works(int rep, int go)
{
	struct timespec ts = { 0, 1000000 };
	struct itimerval it = { { 0, 0 }, { 10, 0 } };
	struct rusage ru;
	struct stat st;
	char rnd[16];

	(void)go;
	REPORT(rep, clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts));
	ts.tv_sec = 0;
	ts.tv_nsec = 1000000;
	REPORT(rep, nanosleep(&ts, NULL));
	REPORT(rep, syscall(SYS_getrandom, rnd, sizeof rnd, 0));
	REPORT(rep, setitimer(ITIMER_REAL, &it, NULL));
	REPORT(rep, getrusage(RUSAGE_SELF, &ru));
	REPORT(rep, fstat(rep, &st));
	REPORT(rep, stat("/etc/passwd", &st));
	REPORT(rep, fcntl(rep, F_GETFL));
	REPORT(rep, fcntl(rep, F_DUPFD_CLOEXEC, 0));
	REPORT(rep, getpid() == (pid_t)syscall(SYS_gettid) ? 0 : -1);
}

static void test_works(void)
{
	struct child c;
	struct report r;
	static const long want[] = { 0, 0, 16, 0, 0, 0, -EPERM, O_WRONLY, -EPERM, 0 };

	if (child_start(&c, try_works, FULL, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		r = child_report(&c);
		if (want[i] >= 0)
			CHECK_EQ_INT(r.ret, want[i]);
		else
			CHECK_ERRNO(r, -want[i]);
	}
	CHECK(exited_with(child_wait(&c), 0));
}

/* ---- the zygote under its own filter ------------------------------------------- */

static void zygote_side_child(int ctl, int rep)
{
	struct tp_err err = { 0 };
	char *argv[] = { "/bin/true", NULL };
	char *envp[] = { NULL };
	struct spawn sp;
	int fds[3];
	pid_t pid;
	char c;
	struct iovec iov = { &c, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (tp_lockdown_enter_zygote(&err) < 0) {
		memcpy(shm->data, err.msg, sizeof err.msg);
		_exit(TP_EXIT_FATAL);
	}
	REPORT(rep, recv_spawn(ctl, &sp, fds));
	REPORT(rep, fcntl(fds[0], F_GETFD)); /* the fd arrived, close-on-exec */
	REPORT(rep, recvmsg(ctl, &mh, MSG_DONTWAIT));
	REPORT(rep, send(ctl, "pid!", 4, MSG_NOSIGNAL));
	REPORT(rep, send(ctl, "pid!", 4, 0));
	pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(42);
	send_report(rep, pid, pid < 0 ? errno : 0);
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(43);
	send_report(rep, pid, pid < 0 ? errno : 0);
	REPORT(rep, execve(argv[0], argv, envp));
	REPORT(rep, open(canary, O_RDONLY));
	REPORT(rep, open("/dev/null", O_RDWR));
	REPORT(rep, socket(AF_UNIX, SOCK_STREAM, 0));
	if (read(ctl, &c, 1) != 1) /* the parent has looked at /proc */
		_exit(91);
	syscall(SYS_sysinfo, NULL); /* traps: the inherited reporter exits 159 */
	_exit(0);
}

/* The zygote can still take spawn requests, answer and clone workers; nothing else. */
static void test_zygote_side(void)
{
	struct spawn sp = { .fn = NULL, .nfds = 2 };
	int sv[2], rp[2], st;
	char path[64], status[4096], buf[8];
	struct report r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 || pipe(rp) < 0) {
		CHECK(!"socketpair");
		return;
	}
	shm->syscall_nr = -1;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		close(rp[0]);
		zygote_side_child(sv[1], rp[1]);
	}
	close(sv[1]);
	close(rp[1]);
	CHECK_EQ_INT(send_spawn(sv[0], &sp, (int[]){ rp[0], rp[0] }), 0); /* any two fds */
	r = (struct report){ -9999, -1, 0 };
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK_EQ_INT(r.ret, 0); /* recvmsg(MSG_CMSG_CLOEXEC) with SCM_RIGHTS */
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK_EQ_INT(r.ret, FD_CLOEXEC);
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK_ERRNO(r, EPERM); /* recvmsg without MSG_CMSG_CLOEXEC */
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK_EQ_INT(r.ret, 4); /* send(MSG_NOSIGNAL) */
	CHECK_EQ_INT(recv(sv[0], buf, sizeof buf, 0), 4);
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK_ERRNO(r, EPERM); /* send without MSG_NOSIGNAL */
	CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
	CHECK(r.ret > 0); /* clone(CLONE_PARENT | SIGCHLD): our child */
	if (r.ret > 0)
		CHECK(waitpid((pid_t)r.ret, &st, 0) == r.ret && exited_with(st, 42));
	for (int i = 0; i < 5; i++) { /* clone(SIGCHLD), execve, open x2, socket */
		CHECK(read(rp[0], &r, sizeof r) == (ssize_t)sizeof r);
		CHECK_ERRNO(r, EPERM);
	}
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	CHECK(read_file(path, status, sizeof status) > 0);
	CHECK(strstr(status, "\nSeccomp:\t2\n") != NULL);
	CHECK(strstr(status, "\nSeccomp_filters:\t1\n") != NULL);
	CHECK(strstr(status, "\nNoNewPrivs:\t1\n") != NULL);
	CHECK_EQ_INT(write(sv[0], "g", 1), 1);
	CHECK(waitpid(pid, &st, 0) == pid && exited_with(st, TP_EXIT_VIOLATION));
	CHECK_EQ_INT(shm->syscall_nr, -1); /* a zygote has no page to report to */
	close(sv[0]);
	close(rp[0]);
}

/* ---- bad configuration: refused before anything changes ------------------------ */

static void test_bad_cfg(void)
{
	int keep_low[1] = { 1 }, keep_closed[1] = { 999 };
	struct tp_lockdown cfg = {
		.as_bytes = AS_BYTES, .cpu_sec = CPU_SEC, .nofile = NOFILE, .shm = shm
	};
	struct tp_err err = { 0 };
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int bad = 0;
		cfg.keep_fds = keep_low;
		cfg.nkeep = 1;
		bad += tp_lockdown_apply(&cfg, &err) == -1 && strstr(err.msg, "keep_fds");
		tp_err_clear(&err);
		cfg.keep_fds = keep_closed;
		bad += tp_lockdown_apply(&cfg, &err) == -1 &&
		       strstr(err.msg, "Bad file descriptor. Hint: kept fds") != NULL;
		tp_err_clear(&err);
		cfg.nkeep = 0;
		cfg.as_bytes = 0;
		bad += tp_lockdown_apply(&cfg, &err) == -1 && strstr(err.msg, "limits") != NULL;
		_exit(bad == 3 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && exited_with(st, 0));
}

/* ---- the parent was never confined ------------------------------------------------ */

static void test_parent(void)
{
	char buf[4096];
	pid_t pid;
	int st, s;

	CHECK(read_file(canary, buf, sizeof buf) > 0 && strcmp(buf, SECRET) == 0);
	CHECK(read_file("/proc/self/status", buf, sizeof buf) > 0);
	CHECK(strstr(buf, "\nSeccomp:\t0\n") != NULL);
	CHECK(strstr(buf, "\nNoNewPrivs:\t0\n") != NULL);
	s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(s >= 0);
	close(s);
	pid = fork();
	if (pid == 0)
		_exit(7);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && exited_with(st, 7));
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static void print_times(const char *what, long *ns, int n)
{
	qsort(ns, (size_t)n, sizeof *ns, cmp_long);
	if (n > 0)
		printf(
		    "# tp_lockdown_apply %s: min %.1f us, median %.1f us, max %.1f us (%d runs)\n",
		    what, ns[0] / 1e3, ns[n / 2] / 1e3, ns[n - 1] / 1e3, n);
}

static void report_timing(void)
{
	struct child c;

	while (napply < 24 && child_start(&c, try_wait, FULL, -1) == 0) {
		child_go(&c);
		child_wait(&c);
	}
	while (ndirect < 12 && child_start(&c, try_wait, FULL_DIRECT, -1) == 0) {
		child_go(&c);
		child_wait(&c);
	}
	print_times("in a zygote's worker (loads the seal)", apply_ns, napply);
	print_times("without a zygote (loads Z, then the seal)", direct_ns, ndirect);
}

/* A worker forked straight from this process installs Z itself: same verdicts. */
static void test_direct(void)
{
	struct child c;

	if (child_start(&c, try_sysinfo, FULL_DIRECT, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	CHECK(exited_with(child_wait(&c), TP_EXIT_VIOLATION));
	CHECK_EQ_INT(shm->syscall_nr, SYS_sysinfo);
	if (child_start(&c, try_canary, FULL_DIRECT, -1) < 0) {
		CHECK(!"child_start");
		return;
	}
	for (int i = 0; i < 3; i++) {
		struct report r = child_report(&c);
		CHECK_ERRNO(r, EPERM);
	}
	CHECK(exited_with(child_wait(&c), 0));
}

static void zygote_stop(void)
{
	int st;

	close(zygote_ctl);
	CHECK(waitpid(zygote_pid, &st, 0) == zygote_pid && exited_with(st, 0));
}

int main(void)
{
	init_as_bytes();
	struct tp_err err = { 0 };
	struct timespec t0, t1;
	int fd;

	setvbuf(stdout, NULL, _IONBF, 0);
	fake_no_ia32 = getenv("TP_TEST_NO_IA32") != NULL;
	shm = mmap(NULL, tp_shm_size(4096), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		   0);
	if (shm == MAP_FAILED)
		return 1;
	tp_shm_init(shm, 4096);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	snprintf(canary, sizeof canary, "/tmp/tp-canary-XXXXXX");
	fd = mkstemp(canary);
	if (fd < 0 || write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET))
		return 1;
	fchmod(fd, 0644);
	close(fd);
	unlink("/tmp/tp-confine-created");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (tp_lockdown_prepare(&err) < 0) {
		fprintf(stderr, "tp_lockdown_prepare: %s\n", err.msg);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# tp_lockdown_prepare: %.1f us\n",
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3);
	if (load_programs() < 0 || zygote_start() < 0) {
		fprintf(stderr, "compiling the programs or starting the test zygote failed\n");
		return 1;
	}

	test_names();
	test_program();
	test_equivalence();
	test_seal_needed();
	test_pfc();
	test_zygote_side();
	test_files();
	test_landlock_only();
	test_network();
	test_process();
	test_stdout();
	test_violation();
	test_sweep_on_kernel();
	test_signals_memory();
	test_abort();
	test_proc();
	test_limits();
	test_works();
	test_direct();
	test_bad_cfg();
	test_parent();
	report_timing();
	zygote_stop();

	unlink(canary);
	return tp_test_done("test_confine");
}
