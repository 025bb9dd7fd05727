/*
 * verdict.c — one sticky verdict per exec and the CPU timer behind cpu_ms.
 * Everything a signal handler touches is a volatile scalar; nothing allocates.
 *
 * Under kernel-only (tp_verdict_kernel_limits) the kernel holds cpu_ms and
 * memory_bytes: no SIGPROF handler, an rlimit and a ballast mapping instead.
 *
 * The exec's CPU time (usage.cpu_ms) is read from CLOCK_THREAD_CPUTIME_ID: the
 * scheduler's runtime of the calling thread, exact to the nanosecond. Not
 * CLOCK_PROCESS_CPUTIME_ID: while ITIMER_PROF is armed, the kernel answers that
 * clock from the process's CPU-timer accumulator, which is brought up to date
 * only at a tick or a context switch, so a short exec read 0 or one tick (4 ms
 * at HZ=250). A worker has one thread (seccomp refuses the clone of a thread),
 * so the thread's clock is the process's, counted from the worker's fork.
 */
#include "verdict.h"

#include <errno.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "limit.h"
#include "lockdown.h"

/* The state of the worker's current exec. Every variable here is read or
 * written by a signal handler (on_sigprof, on_stop, and tp_verdict_trip_now()
 * called from them), so each stays a global of its own, not a field of a file
 * struct, and volatile: sig_atomic_t flags, pointers and, on x86-64 (the one
 * architecture the seccomp filters admit), aligned 64-bit words that one store
 * writes whole. */

/* Per exec, in tp_verdict_begin(), before g_active lets on_stop act and before
 * the timer is armed; read by the handlers. */
static struct tp_shm *volatile g_shm;
static const struct tp_verdict_ops *volatile g_ops;
static volatile uint64_t g_cpu_ms; /* the exec's CPU budget, for the trip's limit */
/* Per exec, in tp_verdict_begin() (the clock's start), before the timer is
 * armed; read by tp_verdict_cpu_us(), from normal code and from on_sigprof.
 * Not volatile: no handler writes it. */
static struct timespec g_cpu_start;

/* The sticky verdict: cleared per exec by tp_verdict_begin(), written once by
 * tp_verdict_trip_now() (normal code with SIGPROF held, or a handler). */
static volatile sig_atomic_t g_kind, g_id;
static volatile uint64_t g_limit, g_used;

/* Kernel-only: set once per worker by tp_verdict_kernel_limits() before lockdown,
 * read-only after (no handler reads them). g_ballast is the exec's PROT_NONE
 * mapping, from tp_verdict_begin() to tp_verdict_end(). */
static int g_kernel, g_session;
static uint64_t g_room, g_reserve;
static void *g_ballast;
static size_t g_ballast_len;

/* Flags: g_cpu_fired, set by on_sigprof at its first expiry and cleared per
 * exec by tp_verdict_begin(); g_active, set by tp_verdict_begin() and cleared
 * by tp_verdict_end(), read by on_stop. */
static volatile sig_atomic_t g_cpu_fired, g_active;

static void set_timer(uint64_t ms)
{
	struct itimerval it = { .it_value = { .tv_sec = (time_t)(ms / 1000),
					      .tv_usec = (suseconds_t)(ms % 1000) * 1000 } };
	setitimer(ITIMER_PROF, &it, NULL);
}

static uint64_t since_fork_us(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000 + (uint64_t)t->tv_nsec / 1000;
}

uint64_t tp_verdict_cpu_since_fork_us(void)
{
	struct timespec now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	return since_fork_us(&now);
}

uint64_t tp_verdict_cpu_us(void)
{
	struct timespec now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	int64_t us = (int64_t)(now.tv_sec - g_cpu_start.tv_sec) * 1000000 +
		     (int64_t)(now.tv_nsec - g_cpu_start.tv_nsec) / 1000;
	return us > 0 ? (uint64_t)us : 0;
}

static void publish(void)
{
	if (g_ops != NULL && g_shm != NULL)
		g_ops->publish(g_shm);
}

void tp_verdict_trip_now(enum tp_kind kind, int id, uint64_t limit, uint64_t used)
{
	if (g_kind != TP_KIND_NONE || g_shm == NULL)
		return;
	g_kind = kind;
	g_id = id;
	g_limit = limit;
	g_used = used;
	publish();
	tp_shm_trip(g_shm, kind, id, limit, used);
	if (g_ops != NULL)
		g_ops->interrupt();
}

void tp_verdict_trip(enum tp_kind kind, int id, uint64_t limit, uint64_t used)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGPROF);
	/* Under kernel-only seccomp refuses SIG_BLOCK with a set (lockdown.c: a trap
	 * with SIGSYS blocked would go unnamed), and old is then never written:
	 * restoring it would set a mask of stack garbage, SIGSYS blocked with luck
	 * (the next trap then killed without its name). There SIGPROF has no
	 * handler to race with (its default action ends the worker). */
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0) {
		tp_verdict_trip_now(kind, id, limit, used);
		return;
	}
	tp_verdict_trip_now(kind, id, limit, used);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* First expiry: trip and interrupt, then allow a grace period. Second: the code
 * is stuck in one C call no hook or check can reach; end the worker. */
static void on_sigprof(int sig)
{
	int saved = errno;
	(void)sig;
	if (g_cpu_fired) {
		publish();
		_exit(TP_EXIT_LIMIT);
	}
	g_cpu_fired = 1;
	uint64_t used = (tp_verdict_cpu_us() + 999) / 1000;
	/* The kernel's tick accounting says the budget is spent, whatever our clock says. */
	tp_verdict_trip_now(TP_KIND_CPU_LIMIT, TP_LIMIT_CPU_MS, g_cpu_ms,
			    used > g_cpu_ms ? used : g_cpu_ms);
	set_timer(TP_CPU_GRACE_MS);
	errno = saved;
}

/* The host's stop: only while an exec runs (a late one between execs is dropped). */
static void on_stop(int sig)
{
	int saved = errno;
	(void)sig;
	if (g_active && g_shm != NULL && g_shm->stop)
		tp_verdict_trip_now(TP_KIND_CANCELLED, -1, 0, 0);
	errno = saved;
}

void tp_verdict_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	sigset_t set;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void tp_verdict_kernel_limits(uint64_t room, uint64_t reserve, int session)
{
	g_kernel = 1;
	g_session = session;
	g_room = room;
	g_reserve = reserve;
}

int tp_verdict_kernel(void)
{
	return g_kernel;
}

/* The address space this exec may not use: the reserve the reply gets back, and
 * what a request's lower memory_bytes leaves of the worker's room. Without it
 * (mmap failed: a session whose state already fills the room) the snippet's
 * first allocation past the rlimit ends it. */
static void map_ballast(uint64_t memory_bytes)
{
	size_t len = (size_t)(g_reserve + (g_room > memory_bytes ? g_room - memory_bytes : 0));
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	g_ballast = p == MAP_FAILED ? NULL : p;
	g_ballast_len = g_ballast ? len : 0;
}

/* Kernel-only: RLIMIT_CPU behind the timer, for code that ignores SIGPROF or
 * disarms it: the first whole second of the worker's CPU time past cpu_ms from
 * this exec's start (SIGXCPU; strictly past it, so the timer ends an honest
 * exec first), one more (SIGKILL). The worker sets it itself (its filter allows prlimit64 of
 * its own RLIMIT_CPU under kernel-only; the host may lack the privilege to),
 * never above the limit it has. A session's worker leaves the hard limit alone
 * (the next exec may need more, and only the host may raise it: host/worker.c
 * tp_worker_bound_cpu) and sets the soft one. */
static void bound_kernel_cpu(uint64_t cpu_ms)
{
	struct timespec now;
	struct rlimit old, lim;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0 || getrlimit(RLIMIT_CPU, &old) != 0)
		return;
	uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	lim.rlim_cur = (rlim_t)((ms + cpu_ms) / 1000 + 1);
	lim.rlim_max = g_session ? old.rlim_max : lim.rlim_cur + 1;
	if (old.rlim_max != RLIM_INFINITY && lim.rlim_max > old.rlim_max)
		lim.rlim_max = old.rlim_max;
	if (lim.rlim_cur > lim.rlim_max)
		lim.rlim_cur = lim.rlim_max;
	setrlimit(RLIMIT_CPU, &lim);
}

/* Kernel-only: the kernel ends the exec at cpu_ms. SIGPROF and SIGXCPU at their
 * default action (a session's earlier exec may have changed them), unblocked,
 * and ITIMER_PROF armed: at cpu_ms of CPU the kernel kills the worker. */
static void arm_kernel_cpu(uint64_t cpu_ms)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t set;

	bound_kernel_cpu(cpu_ms);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	sigaction(SIGXCPU, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGPROF);
	sigaddset(&set, SIGXCPU);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	set_timer(cpu_ms);
}

void tp_verdict_begin(struct tp_shm *shm, const struct tp_limits *lim,
		      const struct tp_verdict_ops *ops)
{
	uint64_t cpu_ms = lim->cpu_ms;

	g_kind = TP_KIND_NONE;
	g_id = -1;
	g_limit = g_used = 0;
	g_cpu_fired = 0;
	g_cpu_ms = cpu_ms;
	g_ops = ops;
	g_shm = shm;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &g_cpu_start);
	/* For the host, should the worker die before it replies: its rusage less this. */
	shm->cpu_begin_us = since_fork_us(&g_cpu_start);
	shm->cpu_us = 0;
	g_active = 1;
	if (shm->stop) /* asked before the worker could hear it */
		tp_verdict_trip_now(TP_KIND_CANCELLED, -1, 0, 0);
	if (g_kernel) {
		map_ballast(lim->memory_bytes);
		if (cpu_ms != 0)
			arm_kernel_cpu(cpu_ms);
		return;
	}
	if (cpu_ms == 0)
		return;
	struct sigaction sa = { .sa_handler = on_sigprof, .sa_flags = SA_RESTART };
	sigset_t set;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGPROF);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	set_timer(cpu_ms);
}

void tp_verdict_end(void)
{
	g_active = 0;
	set_timer(0);
	if (g_ballast != NULL) {
		munmap(g_ballast, g_ballast_len);
		g_ballast = NULL;
	}
}

enum tp_kind tp_verdict_kind(void)
{
	return (enum tp_kind)g_kind;
}

int tp_verdict_limit_id(void)
{
	return (int)g_id;
}

uint64_t tp_verdict_limit(void)
{
	return g_limit;
}

uint64_t tp_verdict_used(void)
{
	return g_used;
}

static int set_json_text(struct tp_text *t, const json_t *j)
{
	if (!json_is_string(j))
		return 0;
	return tp_text_set(t, json_string_value(j), json_string_length(j), TP_MSG_MAX_TEXT);
}

int tp_verdict_failure(struct tp_failure *f, enum tp_kind kind, const char *type,
		       const json_t *message, const json_t *traceback, int line)
{
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->limit_id = -1;
	f->line = line > 0 ? line : 0;
	if ((type != NULL && tp_text_set(&f->type, type, strlen(type), TP_MSG_MAX_TYPE) != 0) ||
	    set_json_text(&f->traceback, traceback) != 0)
		return -1;
	if (json_is_string(message))
		return set_json_text(&f->message, message);
	return tp_text_set(&f->message, "?", 1, TP_MSG_MAX_TEXT);
}

int tp_verdict_tripped_failure(struct tp_failure *f, const char *policy_msg,
			       const json_t *traceback, int line)
{
	enum tp_kind kind = (enum tp_kind)g_kind;
	int policy = kind == TP_KIND_POLICY_VIOLATION || kind == TP_KIND_SANDBOX_VIOLATION;
	const char *msg = policy                      ? policy_msg
			  : kind == TP_KIND_CANCELLED ? "stopped at the host's request"
						      : tp_limit_message((int)g_id);
	json_t *m = json_stringn(msg ? msg : "?", msg ? strlen(msg) : 1);
	int rc =
	    tp_verdict_failure(f, kind, kind == TP_KIND_POLICY_VIOLATION ? "PolicyViolation" : NULL,
			       m, traceback, line);

	json_decref(m);
	if (!policy && g_id >= 0) {
		f->limit_id = (int)g_id;
		f->limit = g_limit;
		f->used = g_used;
	}
	return m == NULL ? -1 : rc;
}
