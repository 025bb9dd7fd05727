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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kprobe.h"
#include "landlock.h"
#include "lang.h"
#include "seccomp_policy.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define MAX_KEEP 32

/* ---- state kept from prepare to apply (and for the SIGSYS handler) ------- */

#define SEAL_MAX 512 /* the seal is 34 instructions today */
#define MAX_GRANTS 64

struct grant {
	int fd; /* O_PATH, opened in the zygote before Z; workers keep it until Landlock has it */
	int write;
	int dir;
	int zygote_only; /* the workspaces' base: in the zygote's domain, never a worker's */
};

/* Everything this file keeps between calls but the handler's report_shm (below).
 * All of it is written in the zygote (or in a process that locks itself down
 * without one) before its first worker, and only read after: a worker inherits
 * it through clone and changes none of it. */
static struct {
	/* The zygote's inputs, set before tp_lockdown_prepare(). */
	int runtime_lang;           /* tp_lockdown_set_lang(): kernel-only's runtime grants */
	const char *workspace_base; /* tp_lockdown_set_workspace_base() */

	/* tp_lockdown_prepare(), from the policy, once (policy_done): the file grants,
	 * and the syscalls whose worker rules the policy decides instead of the tables. */
	int policy_done;
	struct grant grants[MAX_GRANTS];
	int ngrants, any_write, kernel_only;
	struct tp_arg_rule grant_rules[48]; /* 17 at most today */
	size_t ngrant_rules;
	int grant_allow[32];
	size_t ngrant_allow;

	/* tp_lockdown_prepare(), each call: the Landlock ABI probed and the two
	 * programs compiled (prepared: both are). */
	int landlock_abi;
	int prepared;
	struct sock_filter zygote_insns[BPF_MAXINSNS];
	struct sock_filter seal_insns[SEAL_MAX];
	unsigned short zygote_len, seal_len;

	/* tp_lockdown_enter_zygote(), once. */
	int entered; /* Z installed here or in an ancestor (inherited through clone) */
	int null_fd; /* opened before Z: workers dup2 it onto 0/1/2 */
} L = { .runtime_lang = -1, .landlock_abi = -ENOSYS, .null_fd = -1 };

/* Written per worker (arm_reporter(), before the seal) and read by the SIGSYS
 * handler: a global of its own, as signal-handler state stays, and volatile so
 * the handler reads the store the worker made. */
static struct tp_shm *volatile report_shm;

/* ---- per policy: file grants, kernel-only's runtime directories and traps ---- */

/* O_TMPFILE's own bit (glibc's O_TMPFILE also carries O_DIRECTORY). */
#define TMPFILE_BIT 020000000
/* open flags that write, create or truncate: a read grant allows none of them. */
#define OPEN_WRITE_FLAGS ((uint64_t)(O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND))
/* never, whatever the grant: a path handle (usable by *at() calls without a
 * READ right, and by name_to_handle_at) or an unnamed file. */
#define OPEN_NEVER_FLAGS ((uint64_t)(O_PATH | TMPFILE_BIT))

/* The action a worker rule takes under this policy. kernel-only (no language
 * layer) traps every refusal the tables answer with EPERM, so the exec ends as a
 * sandbox_violation naming the call, whatever the runtime or native code would
 * have done with an error. Two answers stay: ENOSYS (libc's fallbacks), and
 * rt_sigprocmask's EPERM for SIG_BLOCK with a set (prepare_policy: a trap with
 * SIGSYS blocked would go unnamed). Landlock's EACCES is not seccomp's. */
static uint32_t worker_action(int nr, uint32_t action)
{
	if (L.kernel_only && action == EPERM_ACT && nr != SYS_rt_sigprocmask)
		return SCMP_ACT_TRAP;
	return action;
}

static int overridden(int nr)
{
	for (size_t i = 0; i < L.ngrant_allow; i++)
		if (L.grant_allow[i] == nr)
			return 1;
	for (size_t i = 0; i < L.ngrant_rules; i++)
		if (L.grant_rules[i].nr == nr)
			return 1;
	return 0;
}

static void grant_rule(int nr, uint32_t action, int arg, uint64_t mask, uint64_t want)
{
	L.grant_rules[L.ngrant_rules++] = (struct tp_arg_rule){
		nr, action, 1, { ARG((unsigned)arg, SCMP_CMP_MASKED_EQ, mask, want), NOARG }
	};
}

/* open and openat, by their flags (each rule one masked compare on all 64 bits;
 * the allow and refuse rules are disjoint and together cover every value):
 * never O_PATH or O_TMPFILE; without a write grant, no write, create, truncate
 * or append flag; with one, those are Landlock's to decide, but O_TRUNC only
 * with a write access mode: O_RDONLY | O_TRUNC truncates with a read right
 * alone where Landlock has no TRUNCATE (ABI < 3, Debian 12's 6.1). */
static void grant_open_rules(int nr, int flags_arg)
{
	const uint64_t acc = O_ACCMODE, trunc = O_TRUNC;
	uint64_t deny = L.any_write ? OPEN_NEVER_FLAGS : OPEN_NEVER_FLAGS | OPEN_WRITE_FLAGS;
	static const uint64_t bits[] = { O_WRONLY, O_RDWR, O_CREAT,    O_TRUNC,
					 O_APPEND, O_PATH, TMPFILE_BIT };

	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (deny & bits[i])
			grant_rule(nr, EPERM_ACT, flags_arg, bits[i], bits[i]);
	if (!L.any_write) {
		grant_rule(nr, SCMP_ACT_ALLOW, flags_arg, deny, 0);
		return;
	}
	grant_rule(nr, SCMP_ACT_ALLOW, flags_arg, deny | trunc, 0);
	grant_rule(nr, SCMP_ACT_ALLOW, flags_arg, deny | trunc | acc, trunc | O_WRONLY);
	grant_rule(nr, SCMP_ACT_ALLOW, flags_arg, deny | trunc | acc, trunc | O_RDWR);
	grant_rule(nr, EPERM_ACT, flags_arg, deny | trunc | acc, trunc | O_RDONLY);
	grant_rule(nr, EPERM_ACT, flags_arg, deny | trunc | acc, trunc | acc);
}

static int fail(struct tp_err *err, const char *what, int e, const char *hint);

static int add_grant(const char *path, int write, int required, struct tp_err *err)
{
	struct stat st;
	char what[160];
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		if (!required)
			return 0; /* a runtime directory this machine does not have */
		snprintf(what, sizeof what, "open(grant %.120s)", path);
		return fail(err, what, e, "the policy grants a path that is gone");
	}
	/* Never procfs, sysfs or a device node, however it was reached (a bind
	 * mount, a symlink): tp_policy_kernel_check refuses these paths already. */
	struct statfs sf;
	if (fstatfs(fd, &sf) != 0 || sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC ||
	    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		close(fd);
		snprintf(what, sizeof what, "open(grant %.120s)", path);
		return fail(err, what, EPERM, "a grant never reaches /proc, /sys or a device");
	}
	if (L.ngrants == MAX_GRANTS) {
		close(fd);
		return fail(err, "file grants", E2BIG, "a policy may grant at most 64 paths");
	}
	L.grants[L.ngrants++] = (struct grant){ fd, write, S_ISDIR(st.st_mode), 0 };
	L.any_write |= write;
	return 0;
}

void tp_lockdown_set_lang(enum tp_lang_id lang)
{
	L.runtime_lang = (int)lang;
}

void tp_lockdown_set_workspace_base(const char *dir)
{
	L.workspace_base = dir;
}

/* From the policy this process enforces (tp_sandbox_policy()), once, before Z
 * (which refuses O_PATH): the grants' fds and the rules the filters take from
 * the policy. The zygote refused a policy this kernel cannot hold already
 * (tp_policy_kernel_check); this refuses it again rather than run with less. */
static int prepare_policy(struct tp_err *err)
{
	const struct tp_policy *p = tp_sandbox_policy();
	const char *runtime[8];
	size_t nruntime = 0;

	if (p == NULL)
		return 0;
	L.kernel_only = !p->language_layer;
	for (size_t i = 0; i < p->fs_read.n; i++)
		if (add_grant(p->fs_read.v[i], 0, 1, err) < 0)
			return -1;
	for (size_t i = 0; i < p->fs_write.n; i++)
		if (add_grant(p->fs_write.v[i], 1, 1, err) < 0)
			return -1;
	if (L.runtime_lang >= 0)
		nruntime = tp_runtime_grants(p, (enum tp_lang_id)L.runtime_lang, runtime, 8);
	for (size_t i = 0; i < nruntime; i++)
		if (add_grant(runtime[i], 0, 0, err) < 0)
			return -1;
	/* Sessions with a workspace: the zygote's own domain reaches the base (so a
	 * worker's nested domain can reach its directory beneath it); a worker's
	 * domain gets its own directory only (tp_lockdown.workspace_fd). Writes are
	 * allowed by seccomp, as for a write grant: Landlock alone says where. */
	if (p->session.workspace_bytes > 0 && L.workspace_base != NULL && L.landlock_abi > 0) {
		if (add_grant(L.workspace_base, 1, 1, err) < 0)
			return -1;
		L.grants[L.ngrants - 1].zygote_only = 1;
	}
	if ((L.ngrants > 0 || L.kernel_only) && L.landlock_abi <= 0)
		return fail(err, L.kernel_only ? "kernel-only" : "file grants", EOPNOTSUPP,
			    "this policy needs Landlock, which this kernel lacks: refused rather "
			    "than run with less");
	if (L.kernel_only) {
		/* glibc blocks every signal around the clone of posix_spawn, system and
		 * pthread_create (rt_sigprocmask(SIG_BLOCK, full set), result ignored):
		 * a trap there would kill by SIGSYS without naming the call. kernel-only
		 * refuses SIG_BLOCK with a set, so the reporter runs and names it. */
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_rt_sigprocmask,
					  EPERM_ACT,
					  2,
					  { ARG(0, SCMP_CMP_EQ, SIG_BLOCK, 0),
					    ARG(1, SCMP_CMP_NE, 0, 0) } };
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_rt_sigprocmask,
					  SCMP_ACT_ALLOW,
					  2,
					  { ARG(0, SCMP_CMP_EQ, SIG_BLOCK, 0),
					    ARG(1, SCMP_CMP_EQ, 0, 0) } };
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_rt_sigprocmask,
					  SCMP_ACT_ALLOW,
					  1,
					  { ARG(0, SCMP_CMP_NE, SIG_BLOCK, 0), NOARG } };
	}
	if (L.kernel_only) {
		/* No language timer: each exec's worker lowers its own RLIMIT_CPU to
		 * its cpu_ms (sandbox/verdict.c), which the host may not be able to do
		 * (prlimit of a worker of uid 65534 needs CAP_SYS_RESOURCE). So
		 * prlimit64(0, RLIMIT_CPU, new) is allowed; without privileges it can
		 * only lower the hard limit or move the soft one beneath it. Any other
		 * resource with a new value, or another pid, traps. */
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_prlimit64,
					  SCMP_ACT_ALLOW,
					  2,
					  { ARG(0, SCMP_CMP_EQ, 0, 0),
					    ARG(2, SCMP_CMP_EQ, 0, 0) } };
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_prlimit64,
					  SCMP_ACT_ALLOW,
					  3,
					  { ARG(0, SCMP_CMP_EQ, 0, 0),
					    ARG(1, SCMP_CMP_EQ, RLIMIT_CPU, 0),
					    ARG(2, SCMP_CMP_NE, 0, 0) } };
		L.grant_rules[L.ngrant_rules++] =
		    (struct tp_arg_rule){ SYS_prlimit64,
					  EPERM_ACT,
					  3,
					  { ARG(0, SCMP_CMP_EQ, 0, 0),
					    ARG(1, SCMP_CMP_NE, RLIMIT_CPU, 0),
					    ARG(2, SCMP_CMP_NE, 0, 0) } };
		L.grant_rules[L.ngrant_rules++] = (struct tp_arg_rule){
			SYS_prlimit64, EPERM_ACT, 1, { ARG(0, SCMP_CMP_NE, 0, 0), NOARG }
		};
	}
	/* kernel-only: Landlock is the file wall even without a grant, so a
	 * read-only open is the kernel's EACCES like any other refused path. */
	if (L.ngrants == 0 && !L.kernel_only)
		return 0;
	/* Reads: open without write flags, directory listings, and stat by path.
	 * Landlock does not mediate stat: the existence and metadata of any path the
	 * worker's uid may walk are visible, never contents (docs/kernel-layer.md). */
	static const int reads[] = { SYS_getdents64, SYS_getdents, SYS_stat,      SYS_lstat,
				     SYS_statx,      SYS_access,   SYS_faccessat, SYS_newfstatat };
	/* Writes: Landlock decides where (MAKE_*, REMOVE_*, and no REFER: a rename
	 * stays within one directory). Links, symlinks, chmod, chown, mknod, creat,
	 * truncate and ftruncate stay refused. */
	static const int writes[] = { SYS_mkdir, SYS_mkdirat,  SYS_unlink,   SYS_unlinkat,
				      SYS_rmdir, SYS_rename,   SYS_renameat, SYS_renameat2,
				      SYS_fsync, SYS_fdatasync };
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
		L.grant_allow[L.ngrant_allow++] = reads[i];
	for (size_t i = 0; L.any_write && i < sizeof writes / sizeof writes[0]; i++)
		L.grant_allow[L.ngrant_allow++] = writes[i];
	grant_open_rules(SYS_openat, 2);
	grant_open_rules(SYS_open, 1);
	return 0;
}

/* Landlock rules beneath each grant: what it allows, never EXECUTE, REFER,
 * MAKE_SYM, MAKE_SOCK, MAKE_FIFO, MAKE_CHAR, MAKE_BLOCK or IOCTL_DEV. */
static int add_rule(int rfd, int fd, uint64_t access, struct tp_err *err)
{
	struct tp_landlock_path_beneath pb = { .allowed_access = access, .parent_fd = fd };
	if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return fail(err, "landlock_add_rule(grant)", errno, NULL);
	return 0;
}

static int add_grant_rules(int rfd, uint64_t handled, int worker, int ws_fd, struct tp_err *err)
{
	const uint64_t rd_file = LANDLOCK_ACCESS_FS_READ_FILE;
	const uint64_t rd_dir = rd_file | LANDLOCK_ACCESS_FS_READ_DIR;
	const uint64_t wr_file = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
	const uint64_t wr_dir = wr_file | LANDLOCK_ACCESS_FS_REMOVE_DIR |
				LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
				LANDLOCK_ACCESS_FS_MAKE_REG;

	for (int i = 0; i < L.ngrants; i++) {
		if (worker && L.grants[i].zygote_only)
			continue;
		if (add_rule(rfd, L.grants[i].fd,
			     ((L.grants[i].dir ? rd_dir : rd_file) |
			      (L.grants[i].write ? (L.grants[i].dir ? wr_dir : wr_file) : 0)) &
				 handled,
			     err) < 0)
			return -1;
	}
	if (ws_fd > 2 && add_rule(rfd, ws_fd, (rd_dir | wr_dir) & handled, err) < 0)
		return -1;
	return 0;
}

/* In the worker, before any code runs: a snippet must not openat() relative to them. */
static void close_grants(void)
{
	for (int i = 0; i < L.ngrants; i++)
		close(L.grants[i].fd);
}

size_t tp_lockdown_grant_fds(int *fds, size_t max)
{
	size_t n = 0;

	for (int i = 0; i < L.ngrants && n < max; i++)
		fds[n++] = L.grants[i].fd;
	return n;
}

/* Every failure here is our own, at the kernel layer: "call(object): reason. Hint: ...". */
static int fail(struct tp_err *err, const char *what, int e, const char *hint)
{
	return tp_err_sys(err, TP_LAYER_KERNEL, what, e, hint);
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

static int has_rule(const struct tp_arg_rule *rules, size_t n, int nr)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].nr == nr)
			return 1;
	return 0;
}

static int zygote_extra(int nr)
{
	return has_rule(tp_policy_zygote_rules, tp_policy_nzygote_rules, nr);
}

/* Named in a worker table (not the ENOSYS sweep, not the default TRAP). */
static int classified(int nr)
{
	return overridden(nr) || listed(tp_policy_allow_nrs, tp_policy_nallow_nrs, nr) ||
	       listed(tp_policy_eperm_nrs, tp_policy_neperm_nrs, nr) ||
	       listed(tp_policy_enosys_nrs, tp_policy_nenosys_nrs, nr) ||
	       has_rule(tp_policy_arg_rules, tp_policy_narg_rules, nr);
}

/* Does this filter carry the worker's own rules for nr? The worker policy does for
 * all, Z for all but the extras (which get tp_policy_zygote_rules), W for the extras only. */
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
		if (takes_worker_rules(b, nrs[i]) && !overridden(nrs[i]))
			rc = add(ctx, b, worker_action(nrs[i], action), nrs[i], 0, NULL);
	return rc;
}

static int add_arg_rules(scmp_filter_ctx ctx, struct build *b, const struct tp_arg_rule *rules,
			 size_t n, int worker)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!worker || (takes_worker_rules(b, rules[i].nr) &&
				(rules == L.grant_rules || !overridden(rules[i].nr))))
			rc = add(ctx, b,
				 worker ? worker_action(rules[i].nr, rules[i].action)
					: rules[i].action,
				 rules[i].nr, rules[i].ncmp, rules[i].cmp);
	return rc;
}

/* The worker policy, restricted to the syscalls this filter takes it for. */
static int add_worker_rules(scmp_filter_ctx ctx, struct build *b)
{
	int rc = add_list(ctx, b, tp_policy_allow_nrs, tp_policy_nallow_nrs, SCMP_ACT_ALLOW);

	if (rc == 0)
		rc = add_list(ctx, b, tp_policy_eperm_nrs, tp_policy_neperm_nrs, EPERM_ACT);
	if (rc == 0)
		rc = add_list(ctx, b, tp_policy_enosys_nrs, tp_policy_nenosys_nrs,
			      SCMP_ACT_ERRNO(ENOSYS));
	if (rc == 0)
		rc = add_arg_rules(ctx, b, tp_policy_arg_rules, tp_policy_narg_rules, 1);
	if (rc == 0)
		rc = add_arg_rules(ctx, b, L.grant_rules, L.ngrant_rules, 1);
	for (size_t i = 0; rc == 0 && i < L.ngrant_allow; i++)
		if (takes_worker_rules(b, L.grant_allow[i]))
			rc = add(ctx, b, SCMP_ACT_ALLOW, L.grant_allow[i], 0, NULL);
	for (uint64_t sig = SIGSYS + 1; rc == 0 && sig <= 64; sig++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, sig);
		if (takes_worker_rules(b, SYS_rt_sigaction))
			rc = add(ctx, b, SCMP_ACT_ALLOW, SYS_rt_sigaction, 1, &c);
	}
	/* Unknown or future numbers: ENOSYS, so runtimes take their fallback path
	 * (335 and 336 too, which the kernel runs without asking any filter);
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
static scmp_filter_ctx build_filter(enum tp_filter which, int omit, struct tp_err *err)
{
	char what[64];
	struct build b = { .which = which,
			   .omit = omit,
			   .bad = -1,
			   .deflt = which == TP_FILTER_SEAL ? SCMP_ACT_ALLOW : SCMP_ACT_TRAP };
	scmp_filter_ctx ctx = seccomp_init(b.deflt);
	int rc;

	if (!ctx) {
		fail(err, "seccomp_init", ENOMEM, NULL);
		return NULL;
	}
	/* i386 and x32 calls would bypass a native table: kill the process outright. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0) /* binary tree: ~8 comparisons per syscall instead of ~250 */
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		fail(err, "seccomp_attr_set(BADARCH, OPTIMIZE)", -rc, "libseccomp older than 2.5");
		goto out_release;
	}
	rc = add_worker_rules(ctx, &b);
	if (rc == 0 && which == TP_FILTER_ZYGOTE)
		rc = add_arg_rules(ctx, &b, tp_policy_zygote_rules, tp_policy_nzygote_rules, 0);
	if (rc < 0) {
		snprintf(what, sizeof what, "seccomp_rule_add(%s, nr %d)", filter_names[which],
			 b.bad);
		fail(err, what, -rc,
		     "a rule in sandbox/seccomp_policy.c conflicts or is malformed");
		goto out_release;
	}
	return ctx;
out_release:
	seccomp_release(ctx);
	return NULL;
}

/* The context as BPF, into out (max instructions); the length, or 0 on error. */
static size_t export_program(scmp_filter_ctx ctx, struct sock_filter *out, size_t max,
			     struct tp_err *err)
{
	const char *what = "seccomp_export_bpf(memfd)", *hint = NULL;
	int fd = memfd_create("tp-seccomp", MFD_CLOEXEC), e;
	off_t size;

	if (fd < 0) {
		fail(err, "memfd_create(tp-seccomp)", errno, NULL);
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
		fail(err, what, e, hint);
		return 0;
	}
	return (size_t)size / sizeof *out;
}

static size_t compile(enum tp_filter which, int omit, struct sock_filter *out, size_t max,
		      struct tp_err *err)
{
	scmp_filter_ctx ctx = build_filter(which, omit, err);
	size_t n;

	if (!ctx)
		return 0;
	n = export_program(ctx, out, max, err);
	seccomp_release(ctx);
	return n;
}

int tp_lockdown_prepare(struct tp_err *err)
{
	int rc =
	    (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	L.landlock_abi = rc > 0 ? rc : -errno;
	if (!L.policy_done) {
		if (prepare_policy(err) < 0)
			return -1;
		L.policy_done = 1;
	}
	size_t nz = compile(TP_FILTER_ZYGOTE, -1, L.zygote_insns, BPF_MAXINSNS, err);
	size_t nw = nz ? compile(TP_FILTER_SEAL, -1, L.seal_insns, SEAL_MAX, err) : 0;

	if (nz == 0 || nw == 0)
		return -1;
	L.zygote_len = (unsigned short)nz;
	L.seal_len = (unsigned short)nw;
	L.prepared = 1;
	return 0;
}

int tp_lockdown_landlock_abi(void)
{
	return L.landlock_abi;
}

int tp_lockdown_export_pfc(int fd)
{
	scmp_filter_ctx ctx = build_filter(TP_FILTER_WORKER, -1, NULL);
	int rc;

	if (!ctx)
		return -1;
	rc = seccomp_export_pfc(ctx, fd);
	seccomp_release(ctx);
	return rc < 0 ? -1 : 0;
}

size_t tp_lockdown_program(enum tp_filter which, const void **insns)
{
	*insns = which == TP_FILTER_SEAL ? L.seal_insns : L.zygote_insns;
	if (!L.prepared || which == TP_FILTER_WORKER)
		return 0;
	return which == TP_FILTER_SEAL ? L.seal_len : L.zygote_len;
}

size_t tp_lockdown_compile(enum tp_filter which, int omit_nr, void *insns, size_t max)
{
	return compile(which, omit_nr, insns, max, NULL);
}

/* ---- apply (worker, after fork) ------------------------------------------ */

static int check_cfg(const struct tp_lockdown *cfg, int *keep, struct tp_err *err)
{
	if (!L.prepared)
		return fail(err, "tp_lockdown_apply()", EINVAL,
			    "call tp_lockdown_prepare() in the zygote first");
	if (cfg->as_bytes == 0 || cfg->cpu_sec == 0 || cfg->nofile < 3)
		return fail(err, "tp_lockdown_apply(limits)", EINVAL,
			    "as_bytes and cpu_sec must be > 0 and nofile >= 3");
	if (cfg->nkeep < 0 || cfg->nkeep > MAX_KEEP || (cfg->nkeep > 0 && !cfg->keep_fds))
		return fail(err, "tp_lockdown_apply(keep_fds)", EINVAL,
			    "at most 32 fds may be kept");
	/* Sorted copy, so the closing step can walk the gaps between kept fds. */
	for (int i = 0; i < cfg->nkeep; i++) {
		int fd = cfg->keep_fds[i], j = i;
		if (fd < 3 || fcntl(fd, F_GETFD) < 0)
			return fail(err, "tp_lockdown_apply(keep_fds)", EBADF,
				    "kept fds must be open and >= 3");
		while (j > 0 && keep[j - 1] > fd) {
			keep[j] = keep[j - 1];
			j--;
		}
		keep[j] = fd;
	}
	return 0;
}

static int set_limit(int resource, rlim_t soft, rlim_t hard, const char *name, struct tp_err *err)
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
	return fail(err, what, errno, NULL);
}

static int set_rlimits(const struct tp_lockdown *cfg, struct tp_err *err)
{
	rlim_t cpu = (rlim_t)cfg->cpu_sec, nofile = (rlim_t)cfg->nofile;

	if (set_limit(RLIMIT_AS, cfg->as_bytes, cfg->as_bytes, "RLIMIT_AS", err) < 0 ||
	    set_limit(RLIMIT_CPU, cpu, cpu + 1, "RLIMIT_CPU", err) < 0 ||
	    set_limit(RLIMIT_FSIZE, cfg->fsize, cfg->fsize, "RLIMIT_FSIZE", err) < 0 ||
	    set_limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE", err) < 0 ||
	    set_limit(RLIMIT_NOFILE, nofile, nofile, "RLIMIT_NOFILE", err) < 0)
		return -1;
	/* A write past RLIMIT_FSIZE fails with EFBIG instead of killing the worker
	 * unreported (a snippet may set SIGXFSZ back: that death is its own). */
	if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
		return fail(err, "signal(SIGXFSZ, SIG_IGN)", errno, NULL);
	/* Per-process limit, per-uid count: 0 only stops this worker from forking
	 * (second wall behind seccomp's EPERM on fork/clone; root is exempt until the drop). */
	return set_limit(RLIMIT_NPROC, 0, 0, "RLIMIT_NPROC", err);
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
static int reset_fds(const int *keep, int nkeep, unsigned loop_max, struct tp_err *err)
{
	unsigned next = 3;

	for (int fd = 0; fd < 3; fd++)
		if (L.null_fd != fd && dup2(L.null_fd, fd) < 0)
			return fail(err, "dup2(/dev/null)", errno, NULL);
	/* null_fd is >= 3 here (or one of 0..2) and not kept: the sweep closes it. */
	for (int i = 0; i < nkeep; i++) {
		if (close_from(next, (unsigned)keep[i] - 1, loop_max) < 0)
			return fail(err, "close_range(fds)", errno, NULL);
		next = (unsigned)keep[i] + 1;
	}
	if (close_from(next, ~0U, loop_max) < 0)
		return fail(err, "close_range(fds)", errno, NULL);
	return 0;
}

/* Root gives up every uid, gid and capability: nothing after this can be undone. */
static int drop_root(struct tp_err *err)
{
	if (geteuid() != 0)
		return 0;
	if (setgroups(0, NULL) < 0)
		return fail(err, "setgroups(0)", errno, NULL);
	if (setresgid(NOBODY, NOBODY, NOBODY) < 0)
		return fail(err, "setresgid(65534)", errno, NULL);
	if (setresuid(NOBODY, NOBODY, NOBODY) < 0)
		return fail(err, "setresuid(65534)", errno, NULL);
	if (setresuid(0, 0, 0) == 0 || geteuid() != NOBODY)
		return fail(err, "setresuid(0) after drop", EPERM, "the uid drop did not stick");
	/* The parent-death signal is cleared by an euid change: set it again. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, "prctl(PR_SET_PDEATHSIG)", errno, NULL);
	return 0;
}

/* One Landlock domain: every filesystem right the ABI knows denied but beneath
 * the grants, no TCP, no signals or abstract sockets out of the domain. */
static int restrict_landlock(const char *who, int ws_fd, struct tp_err *err)
{
	struct tp_landlock_attr attr;
	char what[80];
	int rfd, e;

	attr.handled_access_fs = tp_landlock_fs_for_abi(L.landlock_abi);
	attr.handled_access_net = tp_landlock_net_for_abi(L.landlock_abi);
	attr.scoped = tp_landlock_scoped_for_abi(L.landlock_abi);
	rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rfd < 0) {
		snprintf(what, sizeof what, "landlock_create_ruleset(%s)", who);
		return fail(err, what, errno, "the ABI probed in the zygote no longer matches");
	}
	if (add_grant_rules(rfd, attr.handled_access_fs, strcmp(who, "zygote") != 0, ws_fd, err) <
	    0) {
		close(rfd);
		return -1;
	}
	if (syscall(SYS_landlock_restrict_self, rfd, 0) < 0) {
		e = errno;
		close(rfd);
		snprintf(what, sizeof what, "landlock_restrict_self(%s)", who);
		return fail(err, what, e, "no_new_privs must be set first");
	}
	close(rfd);
	return 0;
}

/* The worker's own domain (one layer per fork; the cap is 16), then the grants'
 * fds closed: from here on the worker reaches a file only by a path Landlock
 * allows. Without Landlock (ENOSYS/EOPNOTSUPP in the zygote, and a policy that
 * needs none) seccomp refuses every path call. */
static int apply_landlock(int ws_fd, struct tp_err *err)
{
	int rc = L.landlock_abi > 0 ? restrict_landlock("worker", ws_fd, err) : 0;

	close_grants();
	/* A session's workspace: its working directory, so relative paths land in it. */
	if (rc == 0 && ws_fd > 2) {
		if (fchdir(ws_fd) != 0)
			rc = fail(err, "fchdir(workspace)", errno, NULL);
		close(ws_fd);
	}
	return rc;
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
static int install_reporter(struct tp_err *err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return fail(err, "sigaction(SIGSYS)", errno, NULL);
	return 0;
}

/* Per worker: where to report, and SIGSYS deliverable. */
static int arm_reporter(struct tp_shm *shm, struct tp_err *err)
{
	sigset_t sys;

	report_shm = shm;
	/* A blocked SIGSYS would make the kernel kill without a report. */
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	if (sigprocmask(SIG_UNBLOCK, &sys, NULL) < 0)
		return fail(err, "sigprocmask(SIGSYS)", errno, NULL);
	return 0;
}

static int load_filter(const struct sock_filter *insns, unsigned short len, const char *what,
		       struct tp_err *err)
{
	struct sock_fprog prog = { .len = len, .filter = (struct sock_filter *)insns };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return fail(
		    err, what, errno,
		    "no_new_privs must be set first; the kernel needs CONFIG_SECCOMP_FILTER");
	return 0;
}

static int set_nnp(struct tp_err *err)
{
	/* No new privileges: exec of a setuid binary must not undo the filter. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail(err, "prctl(PR_SET_NO_NEW_PRIVS)", errno, NULL);
	return 0;
}

int tp_lockdown_landlock_only(struct tp_err *err)
{
	if (set_nnp(err) < 0)
		return -1;
	return apply_landlock(0, err);
}

int tp_lockdown_enter_zygote(struct tp_err *err)
{
	if (L.entered)
		return 0;
	if (!L.prepared)
		return fail(err, "tp_lockdown_enter_zygote()", EINVAL,
			    "call tp_lockdown_prepare() first");
	/* Z refuses open: workers dup2 this one onto 0/1/2. */
	L.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (L.null_fd < 0)
		return fail(err, "open(/dev/null)", errno, NULL);
	/* NNP is inherited by every worker, which then never needs prctl for it.
	 * With grants Z allows read-only opens: the zygote holds itself to the
	 * grants too (each worker still makes its own, nested domain). */
	if (install_reporter(err) < 0 || set_nnp(err) < 0 ||
	    ((L.ngrants > 0 || L.kernel_only) && L.landlock_abi > 0 &&
	     restrict_landlock("zygote", 0, err) < 0) ||
	    load_filter(L.zygote_insns, L.zygote_len, "seccomp(zygote filter)", err) < 0)
		return -1;
	L.entered = 1;
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
int tp_lockdown_apply(const struct tp_lockdown *cfg, struct tp_err *err)
{
	int keep[MAX_KEEP + MAX_GRANTS];
	struct rlimit nofile;
	unsigned loop_max = 1u << 20;

	/* The worker must not outlive the host, even before it is locked down. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return fail(err, "prctl(PR_SET_PDEATHSIG)", errno, NULL);
	if (check_cfg(cfg, keep, err) < 0 || tp_lockdown_enter_zygote(err) < 0)
		return -1;
	/* The grants' O_PATH fds (and a workspace's) survive the fd sweep until
	 * Landlock has them. */
	int nkeep = cfg->nkeep;
	for (int i = 0; i <= L.ngrants; i++) {
		int fd = i < L.ngrants ? L.grants[i].fd : cfg->workspace_fd, j;
		if (fd <= 2)
			continue;
		j = nkeep++;
		while (j > 0 && keep[j - 1] > fd) {
			keep[j] = keep[j - 1];
			j--;
		}
		keep[j] = fd;
	}
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_max < loop_max)
		loop_max = (unsigned)nofile.rlim_max;
	if (reset_fds(keep, nkeep, loop_max, err) < 0 || set_rlimits(cfg, err) < 0 ||
	    drop_root(err) < 0 || apply_landlock(cfg->workspace_fd, err) < 0 ||
	    arm_reporter(cfg->shm, err) < 0)
		return -1;
	return load_filter(L.seal_insns, L.seal_len, "seccomp(worker seal)", err);
}
