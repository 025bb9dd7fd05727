/*
 * kprobe.c — probing the kernel's protections (see kprobe.h).
 */
#include "kprobe.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

const char *const tp_runtime_grants[] = {
	"/usr/lib/python3.11",      "/usr/share/lua/5.4",
	"/usr/local/share/lua/5.4", "/usr/lib/x86_64-linux-gnu/lua/5.4",
	"/usr/local/lib/lua/5.4",   NULL,
};

void tp_kprobe(struct tp_kprobe *k)
{
	unsigned action = SECCOMP_RET_TRAP;
	const char *no_ll = getenv("TIDEPOOL_TEST_NO_LANDLOCK");
	int abi;

	memset(k, 0, sizeof *k);
	k->seccomp_filter = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0 ||
			    /* kernels before 4.14 lack GET_ACTION_AVAIL but may have filters */
			    (errno == EINVAL && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0);
	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	k->landlock_abi = abi > 0 ? abi : -errno;
	if (no_ll != NULL && strcmp(no_ll, "1") == 0)
		k->landlock_abi = -EOPNOTSUPP;
	k->root = geteuid() == 0;
	k->nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
}

int tp_policy_kernel_check(const struct tp_policy *p, char *why, size_t len)
{
	struct tp_kprobe k;
	int files = p->fs_read.n > 0 || p->fs_write.n > 0;

	tp_kprobe(&k);
	if (!k.seccomp_filter) {
		snprintf(why, len,
			 "policy '%s' needs seccomp filters, which this kernel lacks "
			 "(CONFIG_SECCOMP_FILTER): refused rather than run with less",
			 p->name);
		return -1;
	}
	if (!p->language_layer && k.landlock_abi <= 0) {
		snprintf(
		    why, len,
		    "policy '%s' turns the language layer off, so the kernel is its only wall, "
		    "and this kernel has no Landlock (%s): refused rather than run with less",
		    p->name, strerror(-k.landlock_abi));
		return -1;
	}
	if (files && k.landlock_abi <= 0) {
		snprintf(
		    why, len,
		    "policy '%s' grants files, which needs Landlock to hold them to their paths, "
		    "and this kernel has none (%s): refused rather than run with less",
		    p->name, strerror(-k.landlock_abi));
		return -1;
	}
	return 0;
}

static const char *landlock_features(int abi)
{
	static const char *const f[] = {
		"none",
		"filesystem",
		"filesystem, cross-directory refer",
		"filesystem, refer, truncate",
		"filesystem, refer, truncate, TCP bind/connect",
		"filesystem, refer, truncate, TCP, device ioctl",
		"filesystem, refer, truncate, TCP, device ioctl, signal and abstract-socket scopes",
	};
	return abi <= 0 ? f[0] : abi < 6 ? f[abi] : f[6];
}

void tp_doctor_summary(char *buf, size_t len)
{
	struct tp_kprobe k;
	tp_kprobe(&k);
	char ll[64];
	if (k.landlock_abi > 0)
		snprintf(ll, sizeof ll, "Landlock ABI %d", k.landlock_abi);
	else
		snprintf(ll, sizeof ll, "no Landlock");
	snprintf(buf, len, "seccomp %s, %s, no_new_privs %s, uid drop %s",
		 k.seccomp_filter ? "on" : "MISSING", ll, k.nnp ? "on" : "MISSING",
		 k.root ? "on (workers run as 65534)" : "off (not root)");
}

void tp_doctor_print(FILE *f)
{
	struct tp_kprobe k;
	int degraded = 0;

	tp_kprobe(&k);
	fprintf(f, "tidepool doctor: the kernel layer on this machine\n\n");
	fprintf(f, "  seccomp filters   %s\n",
		k.seccomp_filter ? "yes: every worker runs under the syscall allowlist"
				 : "NO: tidepool cannot confine workers here");
	if (k.landlock_abi > 0)
		fprintf(f, "  Landlock          ABI %d: %s\n", k.landlock_abi,
			landlock_features(k.landlock_abi));
	else
		fprintf(f, "  Landlock          no (%s)\n", strerror(-k.landlock_abi));
	fprintf(f, "  no_new_privs      %s\n", k.nnp ? "yes" : "NO");
	fprintf(f, "  uid drop          %s\n",
		k.root ? "yes: workers run as uid/gid 65534 with no capabilities"
		       : "no: not started as root, workers keep this user's uid (and files)");
	fprintf(f, "\nWhat is degraded:\n");
	if (!k.seccomp_filter) {
		fprintf(f, "  - no seccomp: tidepool refuses to run any policy\n");
		degraded = 1;
	}
	if (k.landlock_abi <= 0) {
		fprintf(f,
			"  - no Landlock: seccomp alone refuses every path call, so the default "
			"policies hold; policies that grant files and kernel-only are refused\n");
		degraded = 1;
	} else if (k.landlock_abi < 4) {
		fprintf(f, "  - Landlock ABI < 4: TCP is refused by seccomp alone (socket calls), "
			   "not also by Landlock\n");
		degraded = 1;
	}
	if (k.landlock_abi > 0 && k.landlock_abi < 6) {
		fprintf(f, "  - Landlock ABI < 6: signals and abstract sockets out of the sandbox "
			   "are refused by seccomp alone\n");
		degraded = 1;
	}
	if (!k.root) {
		fprintf(f,
			"  - not root: workers keep your uid; Landlock and seccomp still confine "
			"them, but run tidepool as root to add the uid drop\n");
		degraded = 1;
	}
	if (!degraded)
		fprintf(f, "  nothing: every protection is active\n");
}
