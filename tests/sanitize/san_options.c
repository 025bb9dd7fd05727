/*
 * san_options.c — sanitizer defaults compiled into build-san/ binaries only
 * (linked by the Makefile's SANITIZE block). The zygote is exec'd with an empty
 * environment and the protocol tests start the host with env = {PATH}, so
 * ASAN_OPTIONS cannot be relied on: the options live here. An ASAN_OPTIONS /
 * UBSAN_OPTIONS variable that does arrive is still applied on top of them.
 *
 * The host (and the unit tests) check leaks; the zygote and its workers do not:
 * workers leave with _exit() and no atexit, and LeakSanitizer's tracer needs
 * clone(CLONE_VM) and ptrace, which the zygote's seccomp filter refuses.
 */
#ifdef TP_SANITIZE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The sanitizer runtimes look these up; they have no prototype in a header. */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);
const char *__lsan_default_options(void);

/* Shared by every process: a failed allocation is an error value (RLIMIT_AS in
 * a worker, the Lua and Python allocators' limits), not a sanitizer abort. */
#define COMMON "allocator_may_return_null=1:print_summary=1:"

/* The host: leaks are checked at exit; errors abort the run. */
#define HOST_OPTS COMMON "detect_leaks=1"

/* The zygote and its workers. No leak check (see above). Fatal signals keep
 * their meaning: a worker killed by SIGSEGV must still be `crashed` with
 * SIGSEGV, not an ASan report and exit(1). A small quarantine (1 MiB): freed
 * memory must leave the worker's address space as it does without ASan, or
 * RLIMIT_AS (256 MiB of slack) and crash verdicts would depend on the
 * sanitizer (a use-after-free of a 4 MiB buffer in uninstrumented libpython
 * must still fault). A worker's report goes to its stderr, /dev/null after
 * lockdown: it shows as a worker exiting with status 1 before replying. */
#define ZYGOTE_OPTS                                                                  \
	COMMON "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:"       \
	       "handle_sigill=0:handle_abort=0:use_sigaltstack=0:symbolize=0:"       \
	       "quarantine_size_mb=1"

/* argv[1] == "--zygote", read with raw syscalls: this runs inside the
 * sanitizer's own initialization, before libc's interceptors are ready. */
static int is_zygote(void)
{
	static const char want[] = "--zygote";
	char buf[256];
	long n = 0, r;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (n < (long)sizeof buf - 1 &&
	       (r = syscall(SYS_read, fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n > 0 ? n : 0] = '\0';
	/* No libc string calls: they are intercepted, and the interceptors are not ready. */
	long i = 0, k = 0;
	while (i < n && buf[i] != '\0')
		i++;
	for (i++; i < n && k < (long)sizeof want && buf[i] == want[k]; i++, k++)
		if (want[k] == '\0')
			return 1;
	return 0;
}

const char *__asan_default_options(void)
{
	return is_zygote() ? ZYGOTE_OPTS : HOST_OPTS;
}

const char *__lsan_default_options(void)
{
	return is_zygote() ? "detect_leaks=0" : "detect_leaks=1";
}

/* -fno-sanitize-recover=undefined already makes UB fatal; this prints where. */
const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=1:print_summary=1";
}
#endif
