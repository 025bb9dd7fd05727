/*
 * test_grants.c — the kernel layer under policies that grant files, and under
 * kernel-only, against the real kernel. A policy is prepared once per process
 * (its grants' O_PATH fds, its filters), so each policy runs in a child of its
 * own: it sets the policy, prepares, checks its filters' equivalence in the BPF
 * interpreter, then for each case forks a test zygote that enters Z and clones
 * one worker (CLONE_PARENT, as sandbox/zygote.c does). The worker locks down,
 * tries one thing per report and sends {return value, errno} through a kept
 * pipe; the policy's child asserts the exact outcome.
 *
 * Landlock missing or too old: the cases that need it are skipped with the
 * reason; tp_policy_kernel_check is tested everywhere (TIDEPOOL_TEST_NO_LANDLOCK
 * simulates a kernel without it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "kprobe.h"
#include "lang.h"
#include "lockdown.h"
#include "seccomp_sim.h"
#include "shm.h"
#include "tap.h"
#include "zygote.h"

#define SECRET "tidepool-grants-canary-51c9"
#define GRANTED "granted data\n"
#define FILE_BYTES 4096
#define AUDIT_ARCH_X86_64_ 0xc000003eu
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | (e))

struct report {
	long ret;
	int err;
	int pad;
};

static char top[64], ro[96], rw[96], fgrant[96], canary[96];
static struct tp_shm *shm; /* shared with every worker: the SIGSYS reporter's page */
static int landlock_abi;
static int grant_fds[80];
/* The workers' address-space limit. Under ASan the process already reserves
 * terabytes of shadow: then the current size plus the same room, as the zygote
 * computes it (here, before any worker: a worker cannot open /proc). */
static unsigned long long as_bytes = 1ull << 30;
static size_t ngrant_fds;

/* ---- the worker side ------------------------------------------------------------ */

static void send_report(int fd, long ret, int err)
{
	struct report r = { .ret = ret, .err = err };

	if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(90);
}

#define REPORT(fd, call)                                                                           \
	do {                                                                                       \
		errno = 0;                                                                         \
		long ret_ = (long)(call);                                                          \
		send_report(fd, ret_, ret_ < 0 ? errno : 0);                                       \
	} while (0)

typedef void (*probe_fn)(int rep);

/* A worker of the test zygote: lockdown, one report for it, then the probe. */
static _Noreturn void worker(probe_fn fn, int rep)
{
	int keep[1] = { rep };
	struct tp_lockdown cfg = { .as_bytes = as_bytes,
				   .cpu_sec = 5,
				   .nofile = 32,
				   .fsize = FILE_BYTES,
				   .keep_fds = keep,
				   .nkeep = 1,
				   .shm = shm };
	struct tp_err err = { 0 };

	if (tp_lockdown_apply(&cfg, &err) < 0) {
		memcpy(shm->data, err.msg, sizeof err.msg);
		_exit(TP_EXIT_FATAL);
	}
	send_report(rep, 0, 0);
	fn(rep);
	_exit(0);
}

struct run {
	pid_t zygote, worker;
	int rep;
};

/* A test zygote (forked, enters Z) clones one worker, which is our child. */
static int start(struct run *r, probe_fn fn)
{
	int p[2], pp[2];
	struct report hdr;

	shm->syscall_nr = -1;
	memset(shm->data, 0, 256);
	if (pipe(p) < 0 || pipe(pp) < 0)
		return -1;
	r->zygote = fork();
	if (r->zygote == 0) {
		struct tp_err err = { 0 };
		int32_t pid;
		close(p[0]);
		close(pp[0]);
		if (tp_lockdown_enter_zygote(&err) < 0) {
			fprintf(stderr, "# enter_zygote: %s\n", err.msg);
			_exit(1);
		}
		pid = (int32_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
		if (pid == 0) {
			close(pp[1]);
			worker(fn, p[1]);
		}
		_exit(write(pp[1], &pid, sizeof pid) == sizeof pid && pid > 0 ? 0 : 1);
	}
	close(p[1]);
	close(pp[1]);
	r->rep = p[0];
	int32_t pid = -1;
	int st;
	if (r->zygote < 0 || read(pp[0], &pid, sizeof pid) != sizeof pid || pid <= 0) {
		close(pp[0]);
		return -1;
	}
	close(pp[0]);
	waitpid(r->zygote, &st, 0);
	r->worker = pid;
	if (read(r->rep, &hdr, sizeof hdr) != sizeof hdr) {
		fprintf(stderr, "# lockdown failed in the worker: %s\n", shm->data);
		return -1;
	}
	return 0;
}

static struct report next(struct run *r)
{
	struct report rep = { .ret = -9999, .err = -1 };

	if (read(r->rep, &rep, sizeof rep) != (ssize_t)sizeof rep)
		rep.ret = -9999;
	return rep;
}

static int finish(struct run *r)
{
	int st = -1;

	close(r->rep);
	while (waitpid(r->worker, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

#define CHECK_OK(rep) CHECK_EQ_INT((rep).err, 0)
#define CHECK_ERRNO(rep, e)                                                                        \
	do {                                                                                       \
		struct report r_ = (rep);                                                          \
		CHECK_EQ_INT(r_.ret, -1);                                                          \
		CHECK_EQ_INT(r_.err, (e));                                                         \
	} while (0)

static int exited_with(int st, int code)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == code;
}

static char path_buf[8][256];

/* A path beneath a directory (rotating buffers: several per call are fine). */
static const char *at(const char *dir, const char *name)
{
	static int i;
	char *b = path_buf[i++ % 8];
	snprintf(b, 256, "%s/%s", dir, name);
	return b;
}

/* Reads fd fully into buf (NUL-terminated); the byte count, or -1. */
static long read_fd(int fd, char *buf, size_t len)
{
	long n = fd < 0 ? -1 : (long)read(fd, buf, len - 1);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static int file_is(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long n = read_fd(fd, buf, sizeof buf);

	if (fd >= 0)
		close(fd);
	return n >= 0 && strcmp(buf, text) == 0;
}

/* ---- the filters of a policy: Z+W == the worker policy ---------------------------- */

#define NARGS 6
static const uint64_t flag_values[] = {
	O_RDONLY,
	O_WRONLY,
	O_RDWR,
	O_ACCMODE,
	O_CREAT,
	O_TRUNC,
	O_APPEND,
	O_PATH,
	O_TMPFILE,
	O_TMPFILE & ~O_DIRECTORY,
	O_DIRECTORY,
	O_CLOEXEC,
	O_NOFOLLOW,
	O_RDONLY | O_CLOEXEC,
	O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	O_RDONLY | O_TRUNC,
	O_WRONLY | O_TRUNC,
	O_RDWR | O_TRUNC,
	O_ACCMODE | O_TRUNC,
	O_WRONLY | O_CREAT | O_TRUNC,
	O_WRONLY | O_CREAT | O_EXCL,
	O_WRONLY | O_APPEND,
	O_RDONLY | O_PATH,
	O_RDONLY | O_CREAT,
	1ull << 32,
	(1ull << 32) | O_WRONLY,
	(1ull << 32) | O_TRUNC,
	0xffffffffull,
	~0ull,
	SIG_BLOCK,
	SIG_UNBLOCK,
	SIG_SETMASK,
	0x1000,
	CLONE_PARENT | SIGCHLD,
	1ull << 33,
};
#define NFLAGS (sizeof flag_values / sizeof *flag_values)

static uint64_t probe_value(size_t i)
{
	return i < 70 ? i : flag_values[i - 70];
}
#define NVALUES (70 + NFLAGS)

static const uint64_t bases[][NARGS] = {
	{ 0, 0, 0, 0, 0, 0 },
	{ 1, 1, 1, 1, 1, 1 },
	{ (uint64_t)AT_FDCWD, 0x1000, O_RDONLY | O_CLOEXEC, 0, 0, 0 }, /* openat */
	{ 0x1000, O_WRONLY | O_CREAT | O_TRUNC, 0644, 0, 0, 0 },       /* open */
	{ SIG_BLOCK, 0x1000, 0, 8, 0, 0 },                             /* rt_sigprocmask */
	{ CLONE_PARENT | SIGCHLD, 0, 0, 0, 0, 0 },
	{ 3, 0x1000, 0, AT_EMPTY_PATH, 0, 0 },
};
#define NBASES (sizeof bases / sizeof *bases)

static struct sock_filter worker_insns[BPF_MAXINSNS];

/* Z+W against the one-program worker policy, every syscall 0..620 with each
 * argument of each base swept through small numbers and open/sigprocmask flags. */
static void check_equivalence(const char *policy)
{
	const void *z, *w;
	struct prog zp, wp, one = { worker_insns, 0 };
	long bad = 0, probes = 0;

	zp.n = tp_lockdown_program(TP_FILTER_ZYGOTE, &z);
	wp.n = tp_lockdown_program(TP_FILTER_SEAL, &w);
	zp.f = z;
	wp.f = w;
	one.n = tp_lockdown_compile(TP_FILTER_WORKER, -1, worker_insns, BPF_MAXINSNS);
	CHECK(zp.n > 0 && wp.n > 0 && one.n > 0);
	for (uint32_t nr = 0; nr <= 620; nr++) {
		struct seccomp_data d = { .nr = (int)nr, .arch = AUDIT_ARCH_X86_64_ };
		for (size_t b = 0; b < NBASES; b++)
			for (int i = 0; i < NARGS; i++)
				for (size_t v = 0; v < NVALUES; v++, probes++) {
					memcpy(d.args, bases[b], sizeof d.args);
					d.args[i] = probe_value(v);
					uint32_t got = stacked(&zp, &wp, &d);
					uint32_t want = bpf_run(one.f, one.n, &d);
					if (got != want && bad++ < 3)
						printf("# %s mismatch: nr %u a%d=%#llx: stack %#x, "
						       "worker %#x\n",
						       policy, nr, i, (unsigned long long)d.args[i],
						       got, want);
				}
	}
	printf("# %s: zygote filter %zu + seal %zu == worker policy %zu: %ld probes, %ld "
	       "differ\n",
	       policy, zp.n, wp.n, one.n, probes, bad);
	CHECK_EQ_INT(bad, 0);
}

static uint32_t verdict(uint32_t nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	const void *z, *w;
	struct prog zp, wp;
	struct seccomp_data d = { .nr = (int)nr,
				  .arch = AUDIT_ARCH_X86_64_,
				  .args = { a0, a1, a2 } };

	zp.n = tp_lockdown_program(TP_FILTER_ZYGOTE, &z);
	wp.n = tp_lockdown_program(TP_FILTER_SEAL, &w);
	zp.f = z;
	wp.f = w;
	return stacked(&zp, &wp, &d);
}

/* ---- policy "reads": read grants only (a directory and a single file) ------------- */

static void try_reads(int rep)
{
	char buf[256];
	int fd, open_fds = 0;

	/* The grants' O_PATH fds are closed before code runs: no openat() relative
	 * to them, and nothing open but 0, 1, 2 and the report pipe. */
	for (size_t i = 0; i < ngrant_fds; i++)
		REPORT(rep, fcntl(grant_fds[i], F_GETFD));
	for (int i = 0; i < 1024; i++)
		open_fds += fcntl(i, F_GETFD) >= 0;
	send_report(rep, open_fds, 0);
	fd = open(at(ro, "a.txt"), O_RDONLY);
	send_report(rep, read_fd(fd, buf, sizeof buf), fd < 0 ? errno : 0);
	send_report(rep, fd >= 0 && strcmp(buf, GRANTED) == 0 ? 0 : -1, 0);
	fd = open(fgrant, O_RDONLY | O_CLOEXEC); /* a grant that is a single file */
	send_report(rep, read_fd(fd, buf, sizeof buf), fd < 0 ? errno : 0);
	fd = open(ro, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* listing a granted directory */
	REPORT(rep, fd < 0 ? -1 : syscall(SYS_getdents64, fd, buf, sizeof buf));
	/* No write flag in a read grant: seccomp, before any path is looked at. */
	REPORT(rep, open(at(ro, "a.txt"), O_WRONLY));
	REPORT(rep, open(at(ro, "a.txt"), O_RDWR));
	REPORT(rep, open(at(ro, "new.txt"), O_RDONLY | O_CREAT, 0644));
	REPORT(rep, open(at(ro, "a.txt"), O_RDONLY | O_TRUNC));
	REPORT(rep, open(at(ro, "a.txt"), O_WRONLY | O_APPEND));
	REPORT(rep, open(ro, O_PATH));
	REPORT(rep, open(ro, O_RDWR | O_TMPFILE, 0600));
	REPORT(rep, mkdir(at(ro, "d"), 0755));
	REPORT(rep, unlink(at(ro, "a.txt")));
	/* Outside every grant, however it is named: Landlock. */
	fd = open(canary, O_RDONLY);
	send_report(rep, fd, fd < 0 ? errno : 0);
	if (fd >= 0 && read(fd, buf, sizeof buf) > 0)
		(void)!write(rep, buf, sizeof buf); /* a leak the parent would see */
	REPORT(rep, open(at(ro, "../canary.txt"), O_RDONLY));
	REPORT(rep, open(at(ro, "link"), O_RDONLY)); /* a symlink out of the grant */
	snprintf(buf, sizeof buf, "/proc/self/root%s", canary);
	REPORT(rep, open(buf, O_RDONLY));
	REPORT(rep, open("/proc/self/status", O_RDONLY));
	REPORT(rep, open("/proc/self/mem", O_RDONLY));
	REPORT(rep, open("/etc/passwd", O_RDONLY));
	REPORT(rep, open("/", O_RDONLY | O_DIRECTORY));
	/* A hard link made (by the operator) inside the grant: the same inode is
	 * reachable by a granted name. A property of hard links, documented. */
	fd = open(at(ro, "hard"), O_RDONLY);
	send_report(rep, read_fd(fd, buf, sizeof buf), fd < 0 ? errno : 0);
	send_report(rep, fd >= 0 && strcmp(buf, SECRET) == 0 ? 0 : -1, 0);
	/* Making one is refused, grant or not. */
	REPORT(rep, link(canary, at(ro, "hard2")));
	REPORT(rep, linkat(AT_FDCWD, canary, AT_FDCWD, at(ro, "hard2"), 0));
	REPORT(rep, symlink(canary, at(ro, "sym2")));
	/* Stat by path is allowed (documented): metadata, never contents. */
	struct stat st;
	REPORT(rep, stat(canary, &st));
	/* Granted files stay data: no executable mapping. */
	fd = open(at(ro, "a.txt"), O_RDONLY);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	send_report(rep, m == MAP_FAILED ? -1 : 0, m == MAP_FAILED ? errno : 0);
	REPORT(rep, ftruncate(fd, 0));
}

static void test_reads(void)
{
	struct run r;
	struct report x;
	char buf[256];

	/* The filters' own verdicts: read-only opens, no write flag, never O_PATH. */
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_CLOEXEC), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_WRONLY), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_PATH), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_open, 0, O_APPEND, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_getdents64, 3, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_mkdir, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_linkat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_ftruncate, 3, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_socket, 1, 1, 0), RET_ERRNO(EPERM)); /* not kernel-only */
	if (start(&r, try_reads) < 0) {
		CHECK(!"start");
		return;
	}
	for (size_t i = 0; i < ngrant_fds; i++)
		CHECK_ERRNO(next(&r), EBADF);
	CHECK_EQ_INT(next(&r).ret, 4);
	x = next(&r);
	CHECK_EQ_INT(x.ret, (long)strlen(GRANTED)); /* read inside the read grant */
	CHECK_EQ_INT(next(&r).ret, 0);
	CHECK_EQ_INT(next(&r).ret, (long)strlen(GRANTED)); /* the file grant */
	x = next(&r);
	CHECK(x.ret > 0);           /* getdents64 of the granted directory */
	for (int i = 0; i < 9; i++) /* O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_PATH, */
		CHECK_ERRNO(next(&r), EPERM); /* O_TMPFILE, mkdir, unlink */
	CHECK_ERRNO(next(&r), EACCES);        /* the canary */
	CHECK_ERRNO(next(&r), EACCES);        /* grant/../canary.txt */
	CHECK_ERRNO(next(&r), EACCES);        /* a symlink in the grant pointing out */
	CHECK_ERRNO(next(&r), EACCES);        /* /proc/self/root/... */
	CHECK_ERRNO(next(&r), EACCES);        /* /proc/self/status */
	CHECK_ERRNO(next(&r), EACCES);        /* /proc/self/mem */
	CHECK_ERRNO(next(&r), EACCES);        /* /etc/passwd */
	CHECK_ERRNO(next(&r), EACCES);        /* / */
	x = next(&r);
	CHECK_EQ_INT(x.ret, (long)strlen(SECRET)); /* the operator's hard link: reachable */
	CHECK_EQ_INT(next(&r).ret, 0);
	for (int i = 0; i < 3; i++) /* link, linkat, symlink */
		CHECK_ERRNO(next(&r), EPERM);
	CHECK_EQ_INT(next(&r).ret, 0);                 /* stat of the canary: metadata only */
	CHECK_ERRNO(next(&r), EPERM);                  /* PROT_EXEC mapping of a granted file */
	CHECK_ERRNO(next(&r), EPERM);                  /* ftruncate */
	CHECK_EQ_INT(read(r.rep, buf, sizeof buf), 0); /* nothing more: no secret */
	CHECK(exited_with(finish(&r), 0));
	CHECK(file_is(at(ro, "a.txt"), GRANTED));
	CHECK(access(at(ro, "hard2"), F_OK) < 0 && access(at(ro, "sym2"), F_OK) < 0);
}

/* ---- policy "writes": a read grant and a write grant -------------------------------- */

static void try_writes(int rep)
{
	char buf[8192];
	int fd;

	fd = open(at(rw, "new.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REPORT(rep, fd);
	REPORT(rep, write(fd, "made", 4));
	close(fd);
	fd = open(at(rw, "new.txt"), O_WRONLY | O_APPEND);
	REPORT(rep, write(fd, "+more", 5));
	close(fd);
	REPORT(rep, mkdir(at(rw, "sub"), 0755));
	fd = open(at(rw, "sub/f"), O_RDWR | O_CREAT | O_EXCL, 0644);
	REPORT(rep, fd);
	close(fd);
	REPORT(rep, rename(at(rw, "sub/f"), at(rw, "sub/g")));
	REPORT(rep, unlink(at(rw, "sub/g")));
	REPORT(rep, rmdir(at(rw, "sub")));
	/* The read grant stays read-only: Landlock now (seccomp lets write flags by). */
	REPORT(rep, open(at(ro, "a.txt"), O_WRONLY));
	REPORT(rep, open(at(ro, "a.txt"), O_RDWR));
	REPORT(rep, open(at(ro, "new.txt"), O_WRONLY | O_CREAT, 0644));
	REPORT(rep, open(at(ro, "a.txt"), O_WRONLY | O_APPEND));
	REPORT(rep, open(at(ro, "a.txt"), O_WRONLY | O_TRUNC));
	REPORT(rep, open(at(ro, "a.txt"), O_RDONLY | O_TRUNC)); /* seccomp, whatever the ABI */
	REPORT(rep, mkdir(at(ro, "d"), 0755));
	REPORT(rep, unlink(at(ro, "a.txt")));
	/* Nothing out of or into the grants by rename, link or symlink. */
	REPORT(rep, rename(canary, at(rw, "stolen")));
	REPORT(rep, rename(at(rw, "new.txt"), at(ro, "moved")));
	REPORT(rep, mkdir(at(rw, "sub2"), 0755));
	REPORT(rep, rename(at(rw, "new.txt"), at(rw, "sub2/moved")));
	REPORT(rep, linkat(AT_FDCWD, canary, AT_FDCWD, at(rw, "hard"), 0));
	REPORT(rep, symlink(canary, at(rw, "sym")));
	REPORT(rep, open(canary, O_RDONLY));
	REPORT(rep, open(canary, O_WRONLY | O_APPEND));
	REPORT(rep, open(at(top, "made-outside"), O_WRONLY | O_CREAT, 0644));
	/* Never O_PATH or an unnamed file, even in the write grant. */
	REPORT(rep, open(rw, O_PATH));
	REPORT(rep, open(rw, O_WRONLY | O_TMPFILE, 0600));
	/* file_bytes is RLIMIT_FSIZE: writes stop at it with EFBIG, not SIGXFSZ. */
	memset(buf, 'x', sizeof buf);
	fd = open(at(rw, "big"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REPORT(rep, write(fd, buf, sizeof buf));
	REPORT(rep, write(fd, buf, 1));
	REPORT(rep, ftruncate(fd, 0));
	REPORT(rep, fchmod(fd, 04755));
}

static void test_writes(void)
{
	struct run r;

	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_WRONLY | O_CREAT | O_TRUNC),
		     SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_ACCMODE | O_TRUNC), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_WRONLY | O_PATH), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_renameat2, 0, 0, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_symlinkat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_mknodat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_fchmodat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_fchownat, 0, 0, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_truncate, 0, 0, 0), RET_ERRNO(EPERM));
	if (start(&r, try_writes) < 0) {
		CHECK(!"start");
		return;
	}
	CHECK(next(&r).ret >= 0); /* create in the write grant */
	CHECK_EQ_INT(next(&r).ret, 4);
	CHECK_EQ_INT(next(&r).ret, 5); /* append */
	for (int i = 0; i < 5; i++)    /* mkdir, create, rename within, unlink, rmdir */
		CHECK_EQ_INT(next(&r).err, 0);
	for (int i = 0; i < 5; i++) /* O_WRONLY, O_RDWR, O_CREAT, O_APPEND, O_WRONLY|O_TRUNC */
		CHECK_ERRNO(next(&r), EACCES);
	CHECK_ERRNO(next(&r), EPERM);  /* O_RDONLY | O_TRUNC */
	CHECK_ERRNO(next(&r), EACCES); /* mkdir in the read grant */
	CHECK_ERRNO(next(&r), EACCES); /* unlink in the read grant */
	/* Renames across directories: out of or into a grant that does not allow it,
	 * EACCES; between two directories of one write grant, EXDEV (no REFER right;
	 * ABI 1 never reparents), so a mover falls back to copy and delete. */
	CHECK_ERRNO(next(&r), EACCES);          /* the canary's directory is not removable */
	CHECK_ERRNO(next(&r), EACCES);          /* rw -> ro: no MAKE_REG there */
	CHECK_EQ_INT(next(&r).ret, 0);          /* mkdir rw/sub2 */
	CHECK_ERRNO(next(&r), EXDEV);           /* rw -> rw/sub2 */
	CHECK_ERRNO(next(&r), EPERM);           /* linkat */
	CHECK_ERRNO(next(&r), EPERM);           /* symlink */
	CHECK_ERRNO(next(&r), EACCES);          /* read the canary */
	CHECK_ERRNO(next(&r), EACCES);          /* append to the canary */
	CHECK_ERRNO(next(&r), EACCES);          /* create outside */
	CHECK_ERRNO(next(&r), EPERM);           /* O_PATH */
	CHECK_ERRNO(next(&r), EPERM);           /* O_TMPFILE */
	CHECK_EQ_INT(next(&r).ret, FILE_BYTES); /* short write at the limit */
	CHECK_ERRNO(next(&r), EFBIG);
	CHECK_ERRNO(next(&r), EPERM); /* ftruncate */
	CHECK_ERRNO(next(&r), EPERM); /* fchmod */
	CHECK(exited_with(finish(&r), 0));
	CHECK(file_is(at(rw, "new.txt"), "made+more"));
	CHECK(file_is(at(ro, "a.txt"), GRANTED));
	CHECK(file_is(canary, SECRET));
	struct stat st;
	CHECK(stat(at(rw, "big"), &st) == 0 && st.st_size == FILE_BYTES);
	CHECK(access(at(rw, "sub2/moved"), F_OK) < 0);
	CHECK(access(at(rw, "stolen"), F_OK) < 0 && access(at(rw, "hard"), F_OK) < 0 &&
	      access(at(rw, "sym"), F_OK) < 0 && access(at(top, "made-outside"), F_OK) < 0 &&
	      access(at(ro, "moved"), F_OK) < 0);
}

/* ---- kernel-only: the runtime's library read-only, every seccomp refusal traps --------- */

static void try_runtime(int rep)
{
	char buf[64];
	int fd = open("/usr/lib/python3.11/os.py", O_RDONLY | O_CLOEXEC);
	sigset_t all;

	send_report(rep, read_fd(fd, buf, sizeof buf), fd < 0 ? errno : 0);
	REPORT(rep, open("/usr/lib/python3.11/../../../etc/passwd", O_RDONLY));
	REPORT(rep, open(canary, O_RDONLY));
	/* The one EPERM kernel-only keeps: libc's block-all before a clone is refused, so a trap
	 * there is named. */
	sigfillset(&all);
	REPORT(rep, syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, 8));
	REPORT(rep, syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, buf, 8));
	REPORT(rep, sigprocmask(SIG_SETMASK, NULL, NULL));
}

static void try_trap_socket(int rep)
{
	(void)rep;
	socket(AF_INET, SOCK_STREAM, 0);
}

static void try_trap_kill(int rep)
{
	(void)rep;
	kill(getppid(), 0);
}

static void try_trap_spawn(int rep)
{
	(void)rep;
	(void)!system("id"); /* blocks every signal, then clone3 (ENOSYS) and clone */
}

/* What other policies answer with EPERM traps under kernel-only, each naming its call. */
static void try_trap_open_write(int rep)
{
	(void)rep;
	open("/usr/lib/python3.11/x.py", O_WRONLY | O_CREAT, 0644); /* glibc: openat */
}

static void try_trap_pipe(int rep)
{
	int p[2];
	(void)rep;
	(void)!pipe(p); /* glibc: pipe2 */
}

static void try_trap_exec_map(int rep)
{
	(void)rep;
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void try_trap_sigsys(int rep)
{
	(void)rep;
	signal(SIGSYS, SIG_IGN);
}

static void try_trap_prctl(int rep)
{
	(void)rep;
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static void try_trap_dup(int rep)
{
	(void)rep;
	(void)!dup(0);
}

static void try_trap_fcntl_dup(int rep)
{
	(void)rep;
	fcntl(0, F_DUPFD_CLOEXEC, 10);
}

static void try_trap_setrlimit(int rep)
{
	struct rlimit r = { 1 << 30, 1 << 30 };
	(void)rep;
	setrlimit(RLIMIT_AS, &r); /* glibc: prlimit64(0, RLIMIT_AS, new, NULL) */
}

static void try_trap_chdir(int rep)
{
	(void)rep;
	(void)!chdir("/");
}

/* ENOSYS (libc's fallbacks) and ioctl's ENOTTY stay. */
static void try_kept_answers(int rep)
{
	struct termios t;
	REPORT(rep, syscall(SYS_clone3, NULL, 0));
	REPORT(rep, syscall(SYS_close_range, 100, 200, 0));
	REPORT(rep, tcgetattr(0, &t));
	/* kernel-only lets a worker lower its own RLIMIT_CPU (never raise its hard limit) */
	struct rlimit cpu = { 5, 6 }, high = { 5, RLIM_INFINITY };
	REPORT(rep, setrlimit(RLIMIT_CPU, &cpu));
	REPORT(rep, setrlimit(RLIMIT_CPU, &high));
}

static void test_kernel_only(void)
{
	struct run r;
	static const struct {
		probe_fn fn;
		int nr;
	} traps[] = { { try_trap_socket, SYS_socket },
		      { try_trap_kill, SYS_kill },
		      { try_trap_spawn, SYS_clone },
		      { try_trap_open_write, SYS_openat },
		      { try_trap_pipe, SYS_pipe2 },
		      { try_trap_exec_map, SYS_mmap },
		      { try_trap_sigsys, SYS_rt_sigaction },
		      { try_trap_prctl, SYS_prctl },
		      { try_trap_dup, SYS_dup },
		      { try_trap_fcntl_dup, SYS_fcntl },
		      { try_trap_setrlimit, SYS_prlimit64 },
		      { try_trap_chdir, SYS_chdir } };

	CHECK_EQ_INT(verdict(SYS_socket, 1, 1, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_execve, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_ptrace, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_clone3, 0, 0, 0), RET_ERRNO(ENOSYS));
	CHECK_EQ_INT(verdict(SYS_tgkill, 1, 1, SIGABRT), SECCOMP_RET_ALLOW);
	/* Every EPERM of the tables traps, in the tables and in the argument rules
	 * (the zygote extras too: W traps what Z answers with EPERM). */
	CHECK_EQ_INT(verdict(SYS_mmap, 0, 4096, PROT_READ | PROT_EXEC), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_pipe2, 0, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_WRONLY), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_CLOEXEC), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_prctl, PR_SET_DUMPABLE, 0, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_prctl, PR_SET_NAME, 0, 0), SECCOMP_RET_TRAP);
	/* Its own RLIMIT_CPU, which each exec lowers (sandbox/verdict.c); nothing else. */
	CHECK_EQ_INT(verdict(SYS_prlimit64, 0, RLIMIT_CPU, 1), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 0, RLIMIT_CPU, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 0, RLIMIT_AS, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 0, RLIMIT_AS, 1), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 0, 1ull << 32 | RLIMIT_CPU, 1), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 1, RLIMIT_CPU, 1), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_prlimit64, 1, RLIMIT_CPU, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_rt_sigaction, SIGSYS, 1, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_ioctl, 0, TIOCSTI, 0), SECCOMP_RET_TRAP);
	CHECK_EQ_INT(verdict(SYS_ioctl, 0, TCGETS, 0), RET_ERRNO(ENOTTY));
	CHECK_EQ_INT(verdict(SYS_rt_sigprocmask, SIG_BLOCK, 1, 0), RET_ERRNO(EPERM));
	CHECK_EQ_INT(verdict(SYS_rt_sigprocmask, SIG_UNBLOCK, 1, 0), SECCOMP_RET_ALLOW);
	CHECK_EQ_INT(verdict(SYS_close_range, 3, 4, 0), RET_ERRNO(ENOSYS));
	CHECK_EQ_INT(verdict(500, 0, 0, 0), RET_ERRNO(ENOSYS));
	if (access("/usr/lib/python3.11/os.py", R_OK) != 0) {
		TP_SKIP("kernel-only runtime grant: /usr/lib/python3.11 is not on this machine");
	} else if (start(&r, try_runtime) == 0) {
		CHECK(next(&r).ret > 0);       /* the standard library, read-only */
		CHECK_ERRNO(next(&r), EACCES); /* Landlock's answer stays EACCES */
		CHECK_ERRNO(next(&r), EACCES);
		CHECK_ERRNO(next(&r), EPERM);  /* SIG_BLOCK with a set */
		CHECK_EQ_INT(next(&r).ret, 0); /* SIG_BLOCK without one: reads the mask */
		CHECK_EQ_INT(next(&r).ret, 0);
		CHECK(exited_with(finish(&r), 0));
	} else {
		CHECK(!"start");
	}
	if (start(&r, try_kept_answers) == 0) {
		CHECK_ERRNO(next(&r), ENOSYS);
		CHECK_ERRNO(next(&r), ENOSYS);
		CHECK_ERRNO(next(&r), ENOTTY);
		CHECK_EQ_INT(next(&r).ret, 0);
		CHECK_ERRNO(next(&r), EPERM); /* the kernel's own answer: no CAP_SYS_RESOURCE */
		CHECK(exited_with(finish(&r), 0));
	} else {
		CHECK(!"start");
	}
	for (size_t i = 0; i < sizeof traps / sizeof *traps; i++) {
		if (start(&r, traps[i].fn) < 0) {
			CHECK(!"start");
			continue;
		}
		CHECK(exited_with(finish(&r), TP_EXIT_VIOLATION));
		CHECK_EQ_INT(shm->syscall_nr, traps[i].nr);
	}
}

/* ---- each policy in a child of its own ------------------------------------------------- */

static int set_policy(const char *name, const char *body)
{
	char path[160], text[1024];
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	const struct tp_policy *p;
	struct tp_policy *copy;
	char *wire;
	size_t len;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s.json", top, name);
	snprintf(text, sizeof text, "{\"name\": \"%s\", %s}", name, body);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	p = set ? tp_policy_set_load_file(set, path, &err) : NULL;
	wire = p ? tp_policy_wire(p, &len) : NULL;
	copy = wire ? tp_policy_from_wire(wire, len, &err) : NULL;
	free(wire);
	tp_policy_set_free(set);
	unlink(path);
	if (copy == NULL) {
		fprintf(stderr, "policy %s: %s\n", name, err.msg);
		return -1;
	}
	tp_sandbox_set_policy(copy);
	return 0;
}

struct counts {
	int checks, failures, skips;
};

/* Runs fn under the policy in a child; its counts are added to ours. */
static void under_policy(const char *name, const char *body, int lang, void (*fn)(void))
{
	int p[2], st;
	struct counts c = { 0, 1, 0 };
	pid_t pid;

	if (pipe(p) < 0) {
		CHECK(!"pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct tp_err err = { 0 };
		close(p[0]);
		if (set_policy(name, body) < 0)
			_exit(1);
		if (lang >= 0)
			tp_lockdown_set_lang((enum tp_lang_id)lang);
		if (tp_lockdown_prepare(&err) < 0) {
			fprintf(stderr, "tp_lockdown_prepare(%s): %s\n", name, err.msg);
			_exit(1);
		}
		ngrant_fds = tp_lockdown_grant_fds(grant_fds, 80);
		printf("# policy %s: %zu grants\n", name, ngrant_fds);
		check_equivalence(name);
		fn();
		c = (struct counts){ tap_checks, tap_failures, tap_skips };
		_exit(write(p[1], &c, sizeof c) == sizeof c ? 0 : 1);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, sizeof c) != sizeof c)
		c = (struct counts){ 1, 1, 0 };
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	tap_checks += c.checks;
	tap_failures += c.failures;
	tap_skips += c.skips;
}

/* ---- tp_policy_kernel_check, with and without (simulated) Landlock ------------------- */

static void test_kernel_check(void)
{
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	const struct tp_policy *std = set ? tp_policy_set_find(set, "standard") : NULL;
	const struct tp_policy *ko = set ? tp_policy_set_find(set, "kernel-only") : NULL;
	struct tp_policy files;
	char why[512], *fs[1] = { ro };
	const char *rt[8];

	CHECK(std != NULL && ko != NULL);
	if (std == NULL || ko == NULL)
		return;
	files = *std;
	files.name = "files";
	files.fs_read = (struct tp_strv){ fs, 1 };
	/* Runtime grants: kernel-only's only, and only the language's own. */
	CHECK_EQ_INT(tp_runtime_grants(std, TP_LANG_PYTHON, rt, 8), 0);
	if (access("/usr/lib/python3.11", F_OK) == 0) {
		CHECK_EQ_INT(tp_runtime_grants(ko, TP_LANG_PYTHON, rt, 8), 1);
		CHECK_EQ_STR(rt[0], "/usr/lib/python3.11");
	}
	size_t nlua = tp_runtime_grants(ko, TP_LANG_LUA, rt, 8);
	for (size_t i = 0; i < nlua; i++)
		CHECK(strstr(rt[i], "/lua/5.4") != NULL);

	/* Never the kernel's interfaces, nor a directory above them, on any kernel. */
	static const struct {
		const char *path;
		int ok;
	} paths[] = { { "/proc", 0 },       { "/proc/self/root", 0 },
		      { "/sys/kernel", 0 }, { "/dev", 0 },
		      { "/", 0 },           { "/usr/share", 1 },
		      { "/procfoo", 1 },    { "/devel", 1 } };
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		char *one[1] = { (char *)paths[i].path }, want[256];
		struct tp_policy q = files;
		q.fs_read = (struct tp_strv){ i % 2 ? NULL : one, i % 2 ? 0 : 1 };
		q.fs_write = (struct tp_strv){ i % 2 ? one : NULL, i % 2 ? 1 : 0 };
		int rc = tp_policy_kernel_check(&q, why, sizeof why);
		snprintf(want, sizeof want,
			 "policy 'files' grants '%s', which reaches the kernel's and other "
			 "processes' interfaces (/proc, /sys, /dev): never granted, refused",
			 paths[i].path);
		if (paths[i].ok)
			CHECK_EQ_INT(rc, landlock_abi > 0 ? 0 : -1);
		else
			CHECK_EQ_STR(rc == -1 ? why : "", want);
	}
	setenv("TIDEPOOL_TEST_NO_LANDLOCK", "1", 1);
	CHECK_EQ_INT(tp_policy_kernel_check(std, why, sizeof why), 0);
	CHECK_EQ_INT(tp_policy_kernel_check(&files, why, sizeof why), -1);
	CHECK_EQ_STR(why, "policy 'files' grants files, which needs Landlock to hold them to their "
			  "paths, and this kernel has none (Operation not supported): refused "
			  "rather than run with less");
	CHECK_EQ_INT(tp_policy_kernel_check(ko, why, sizeof why), -1);
	CHECK_EQ_STR(why, "policy 'kernel-only' turns the language layer off, so the kernel is "
			  "its only wall, and this kernel has no Landlock (Operation not "
			  "supported): refused rather than run with less");
	char summary[256];
	tp_doctor_summary(summary, sizeof summary);
	CHECK(strstr(summary, "no Landlock (grants and kernel-only refused)") != NULL);
	unsetenv("TIDEPOOL_TEST_NO_LANDLOCK");
	if (landlock_abi > 0) {
		CHECK_EQ_INT(tp_policy_kernel_check(&files, why, sizeof why), 0);
		CHECK_EQ_INT(tp_policy_kernel_check(ko, why, sizeof why), 0);
		tp_doctor_summary(summary, sizeof summary);
		CHECK(strstr(summary, "Landlock ABI ") != NULL);
		printf("# this machine: %s\n", summary);
	}
	tp_policy_set_free(set);
}

/* ---- the files the policies grant -------------------------------------------------- */

static int put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok && chmod(path, mode) == 0 ? 0 : -1;
}

static int make_tree(void)
{
	snprintf(top, sizeof top, "/tmp/tp-grants-XXXXXX");
	if (mkdtemp(top) == NULL || chmod(top, 0755) != 0)
		return -1;
	snprintf(ro, sizeof ro, "%s/ro", top);
	snprintf(rw, sizeof rw, "%s/rw", top);
	snprintf(fgrant, sizeof fgrant, "%s/single.txt", top);
	snprintf(canary, sizeof canary, "%s/canary.txt", top);
	/* World-readable and (rw) writable: the worker may be uid 65534. */
	if (mkdir(ro, 0755) != 0 || mkdir(rw, 0777) != 0 || chmod(rw, 0777) != 0 ||
	    put(at(ro, "a.txt"), GRANTED, 0666) != 0 || put(fgrant, GRANTED, 0644) != 0 ||
	    put(canary, SECRET, 0666) != 0 || symlink(canary, at(ro, "link")) != 0 ||
	    link(canary, at(ro, "hard")) != 0)
		return -1;
	return 0;
}

static void remove_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (strncmp(top, "/tmp/tp-grants-", 15) == 0 && system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
#ifdef TP_SANITIZE
	as_bytes = tp_zygote_vm_bytes() + (1ull << 30);
#endif
	shm = mmap(NULL, tp_shm_size(4096), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		   0);
	if (shm == MAP_FAILED || make_tree() < 0) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	tp_shm_init(shm, 4096);
	landlock_abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1);
	printf("# landlock ABI %d\n", landlock_abi);

	test_kernel_check();
	if (landlock_abi <= 0) {
		TP_SKIP("file grants and kernel-only: this kernel has no Landlock, and tidepool "
			"refuses such policies rather than run them with seccomp alone");
	} else {
		char body[512];
		snprintf(body, sizeof body,
			 "\"extends\": \"standard\", \"filesystem\": {\"read\": [\"%s\", \"%s\"]}",
			 ro, fgrant);
		under_policy("reads", body, -1, test_reads);
		snprintf(body, sizeof body,
			 "\"extends\": \"standard\", \"filesystem\": {\"read\": [\"%s\"], "
			 "\"write\": [\"%s\"], \"file_bytes\": %d}",
			 ro, rw, FILE_BYTES);
		under_policy("writes", body, -1, test_writes);
		under_policy("kernel-only-test", "\"extends\": \"kernel-only\"", TP_LANG_PYTHON,
			     test_kernel_only);
	}
	remove_tree();
	return tp_test_done("test_grants");
}
