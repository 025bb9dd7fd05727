/*
 * kprobe.c — what this kernel can enforce (see kprobe.h). Invariant: a policy
 * runs with every wall it names or not at all; the probe's test knob can only
 * take a protection away, so it makes tidepool refuse more, never less.
 */
#include "kprobe.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"

#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

/* ---- kernel-only's runtime grants ------------------------------------------- */

static const char *const runtime_dirs[TP_NLANGS][5] = {
	[TP_LANG_LUA] = { "/usr/share/lua/5.4", "/usr/local/share/lua/5.4",
			  "/usr/lib/x86_64-linux-gnu/lua/5.4", "/usr/local/lib/lua/5.4", NULL },
	[TP_LANG_PYTHON] = { "/usr/lib/python3.11", NULL }, /* lib-dynload is beneath it */
};

size_t tp_runtime_grants(const struct tp_policy *p, enum tp_lang_id lang, const char **out,
			 size_t max)
{
	struct stat st;
	size_t n = 0;

	if (p == NULL || p->language_layer || (unsigned)lang >= TP_NLANGS)
		return 0;
	for (const char *const *d = runtime_dirs[lang]; *d != NULL && n < max; d++)
		if (stat(*d, &st) == 0 && S_ISDIR(st.st_mode))
			out[n++] = *d;
	return n;
}

/* ---- the probe ----------------------------------------------------------------- */

static int action_avail(unsigned action)
{
	return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

void tp_kprobe(struct tp_kprobe *k)
{
	const char *no_ll = getenv("TIDEPOOL_TEST_NO_LANDLOCK");
	int abi;

	memset(k, 0, sizeof *k);
	/* Our filters use TRAP, ERRNO and KILL_PROCESS (4.14+). A kernel without
	 * GET_ACTION_AVAIL (before 4.14) has no KILL_PROCESS either: no. */
	k->seccomp_filter = action_avail(SECCOMP_RET_TRAP) && action_avail(SECCOMP_RET_ERRNO) &&
			    action_avail(SECCOMP_RET_KILL_PROCESS);
	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	k->landlock_abi = abi > 0 ? abi : -errno;
	if (no_ll != NULL && strcmp(no_ll, "1") == 0)
		k->landlock_abi = -EOPNOTSUPP; /* the test knob: only ever less */
	k->root = geteuid() == 0;
	k->nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
	k->ia32 = -1;
}

/* Do i386 syscalls reach this kernel? A child issues getpid through int $0x80:
 * 1 it returned the pid, 0 it faulted (no CONFIG_IA32_EMULATION, or
 * ia32_emulation=0: the instruction never reaches a syscall, nor a filter). */
static int probe_ia32(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_handler = SIG_DFL };
		long ret = 20; /* i386 getpid */
		sigaction(SIGSEGV, &sa, NULL);
		__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
		_exit(ret == (long)getpid() ? 0 : 3);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV ? 0 : -1;
}

/* ---- the check ----------------------------------------------------------------- */

/* A grant never reaches the kernel's or other processes' interfaces: not these,
 * nothing beneath them, and no directory above them (Landlock's rule covers
 * every mount beneath a granted directory, so "/" would grant /proc). */
static const char *interface_grant(const struct tp_strv *v)
{
	static char *const kernel_dirs[] = { "/proc", "/sys", "/dev" };
	const struct tp_strv kd = { (char **)kernel_dirs, 3 };

	for (size_t i = 0; i < v->n; i++) {
		const struct tp_strv one = { &v->v[i], 1 };
		if (tp_policy_path_within(&kd, v->v[i]))
			return v->v[i];
		for (size_t j = 0; j < kd.n; j++)
			if (tp_policy_path_within(&one, kernel_dirs[j]))
				return v->v[i];
	}
	return NULL;
}

int tp_policy_kernel_check(const struct tp_policy *p, char *why, size_t len)
{
	struct tp_kprobe k;
	int files = p->fs_read.n > 0 || p->fs_write.n > 0;
	const char *bad = interface_grant(&p->fs_read);

	if (bad == NULL)
		bad = interface_grant(&p->fs_write);
	if (bad != NULL) {
		snprintf(why, len,
			 "policy '%s' grants '%s', which reaches the kernel's and other processes' "
			 "interfaces (/proc, /sys, /dev): never granted, refused",
			 p->name, bad);
		return -1;
	}
	tp_kprobe(&k);
	if (!k.seccomp_filter || !k.nnp) {
		snprintf(why, len,
			 "policy '%s' needs seccomp filters (TRAP, ERRNO, KILL_PROCESS) and "
			 "no_new_privs, which this kernel lacks (CONFIG_SECCOMP_FILTER, Linux "
			 "4.14+): refused rather than run with less",
			 p->name);
		return -1;
	}
	if (!p->language_layer && k.landlock_abi <= 0) {
		snprintf(why, len,
			 "policy '%s' turns the language layer off, so the kernel is its only "
			 "wall, and this kernel has no Landlock (%s): refused rather than run with "
			 "less",
			 p->name, strerror(-k.landlock_abi));
		return -1;
	}
	if (files && k.landlock_abi <= 0) {
		snprintf(why, len,
			 "policy '%s' grants files, which needs Landlock to hold them to their "
			 "paths, and this kernel has none (%s): refused rather than run with less",
			 p->name, strerror(-k.landlock_abi));
		return -1;
	}
	return 0;
}

/* ---- for people ------------------------------------------------------------------ */

struct feature {
	int abi;
	const char *name;
	const char *what;
};

static const struct feature features[] = {
	{ 1, "filesystem", "no file outside a policy's grants, whatever the uid" },
	{ 2, "refer", "no link or rename across directories (grants never include it)" },
	{ 3, "truncate", "truncation is a right of its own (write grants only)" },
	{ 4, "TCP", "no TCP bind or connect (behind seccomp's socket refusal)" },
	{ 5, "ioctl", "no device ioctl (behind seccomp, which allows only TCGETS)" },
	{ 6, "scopes", "no signal or abstract unix socket out of the worker's own domain" },
};
#define NFEATURES (sizeof features / sizeof *features)

void tp_doctor_summary(char *buf, size_t len)
{
	struct tp_kprobe k;
	char ll[160];
	size_t n = 0;

	tp_kprobe(&k);
	if (k.landlock_abi > 0) {
		n = (size_t)snprintf(ll, sizeof ll, "Landlock ABI %d (", k.landlock_abi);
		for (size_t i = 0; i < NFEATURES && features[i].abi <= k.landlock_abi; i++)
			n += (size_t)snprintf(ll + n, sizeof ll - n, "%s%s", i ? ", " : "",
					      features[i].name);
		snprintf(ll + n, sizeof ll - n, ")");
	} else {
		snprintf(ll, sizeof ll, "no Landlock (grants and kernel-only refused)");
	}
	snprintf(buf, len, "seccomp %s, %s, no_new_privs %s, uid drop %s",
		 k.seccomp_filter ? "on" : "MISSING", ll, k.nnp ? "on" : "MISSING",
		 k.root ? "on (workers run as 65534)" : "off (not root)");
}

void tp_doctor_print(FILE *f)
{
	struct tp_kprobe k;
	int degraded = 0;

	tp_kprobe(&k);
	k.ia32 = probe_ia32();
	fprintf(f, "tidepool doctor: the kernel layer on this machine\n\n");
	fprintf(f, "  seccomp filters   %s\n",
		k.seccomp_filter ? "yes (TRAP, ERRNO, KILL_PROCESS): every worker runs under "
				   "the syscall allowlist"
				 : "NO: tidepool cannot confine workers here");
	if (k.landlock_abi > 0) {
		fprintf(f, "  Landlock          ABI %d\n", k.landlock_abi);
		for (size_t i = 0; i < NFEATURES; i++)
			fprintf(f, "    %-3s %-11s (ABI %d) %s\n",
				features[i].abi <= k.landlock_abi ? "yes" : "no", features[i].name,
				features[i].abi, features[i].what);
	} else {
		fprintf(f, "  Landlock          no (%s)\n", strerror(-k.landlock_abi));
	}
	fprintf(f, "  no_new_privs      %s\n",
		k.nnp ? "yes: set in each zygote, inherited by its workers" : "NO");
	fprintf(f, "  uid drop          %s\n",
		k.root ? "yes: workers run as uid/gid 65534 with no capabilities"
		       : "no: not started as root, workers keep this user's uid (and its files)");
	fprintf(f, "  ia32 emulation    %s\n",
		k.ia32 == 1   ? "yes: i386 system calls reach the kernel; every tidepool filter "
				"kills them by architecture"
		: k.ia32 == 0 ? "no: int $0x80 faults before any system call (one entry point "
				"fewer)"
			      : "unknown (the probe failed)");
	fprintf(f, "\nWhat is degraded, and what it means:\n");
	if (!k.seccomp_filter || !k.nnp) {
		fprintf(f, "  - no seccomp filters: tidepool refuses every policy here\n");
		degraded = 1;
	}
	if (k.landlock_abi <= 0) {
		fprintf(f, "  - no Landlock: seccomp alone refuses every path call, so strict, "
			   "standard and\n    permissive hold; policies that grant files and "
			   "kernel-only are refused\n");
		degraded = 1;
	} else {
		if (k.landlock_abi < 3)
			fprintf(f, "  - Landlock ABI < 3: truncation is not a Landlock right; "
				   "seccomp refuses truncate,\n    ftruncate and O_TRUNC without a "
				   "write grant, so nothing changes\n");
		if (k.landlock_abi < 4)
			fprintf(f, "  - Landlock ABI < 4: TCP is refused by seccomp alone (every "
				   "socket call)\n");
		if (k.landlock_abi < 6)
			fprintf(f, "  - Landlock ABI < 6: no signal scope; seccomp refuses kill, "
				   "but tgkill(SIGABRT)\n    may reach another process of the "
				   "workers' uid\n");
		degraded |= k.landlock_abi < 6;
	}
	if (!k.root) {
		fprintf(f, "  - not root: no uid drop; workers keep your uid, so Landlock and "
			   "seccomp are what\n    confine them (run tidepool as root to add "
			   "uid 65534 and no capabilities)\n");
		degraded = 1;
	}
	if (!degraded)
		fprintf(f, "  nothing: every protection is active\n");
}
