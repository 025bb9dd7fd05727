/*
 * kprobe.h — what this machine's kernel can enforce, for `tidepool doctor`, the
 * host's start-up log, and the check that refuses a policy rather than run it
 * with less than it says.
 *
 * Usage:
 *   1. tp_kprobe() fills a struct tp_kprobe (cheap: two syscalls and a prctl).
 *   2. tp_policy_kernel_check() before a policy is used: 0, or -1 with why.
 *   3. tp_doctor_print() / tp_doctor_summary() for people.
 * The environment variable TIDEPOOL_TEST_NO_LANDLOCK=1 makes the probe report
 * no Landlock (tests of the refusal on kernels that have it); it can only make
 * tidepool refuse more, never less.
 */
#ifndef TP_KPROBE_H
#define TP_KPROBE_H

#include <stddef.h>
#include <stdio.h>

#include "policy.h"

/* Read-only grants kernel-only adds, where they exist: the interpreters' own
 * library directories, so `import` and `require` of what is installed work. */
extern const char *const tp_runtime_grants[];

struct tp_kprobe {
	int seccomp_filter; /* seccomp filter mode with SECCOMP_RET_TRAP available */
	int landlock_abi;   /* > 0, or -errno of the probe */
	int root;           /* workers drop to uid 65534 only when the host runs as root */
	int nnp;            /* PR_SET_NO_NEW_PRIVS works */
};

void tp_kprobe(struct tp_kprobe *k);
/* Why this kernel cannot run p as it says: a policy that grants files needs
 * Landlock (seccomp cannot check paths); kernel-only needs Landlock and
 * seccomp (they are its only walls). 0, or -1 with the reason in why. */
int tp_policy_kernel_check(const struct tp_policy *p, char *why, size_t len);
void tp_doctor_print(FILE *f);
void tp_doctor_summary(char *buf, size_t len);

#endif
