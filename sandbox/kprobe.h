/*
 * kprobe.h — what this machine's kernel can enforce, for `tidepool doctor`, the
 * host's start-up log, `policy check`, and the check that refuses a policy
 * rather than run it with less than it says (the host at start and per request,
 * the zygote again before it builds anything).
 *
 * Usage:
 *   1. tp_kprobe() fills a struct tp_kprobe (cheap: two syscalls and two prctls;
 *      no fork, so ia32 is left unknown: tp_doctor_print asks a child).
 *   2. tp_policy_kernel_check() before a policy is used: 0, or -1 with why.
 *   3. tp_runtime_grants(): the read grants kernel-only adds for a language.
 *   4. tp_doctor_print() / tp_doctor_summary() for people.
 * Test knob: TIDEPOOL_TEST_NO_LANDLOCK=1 in the environment makes the probe
 * report no Landlock (tests of the refusal on kernels that have it). It can only
 * make tidepool refuse more, never less, and a zygote never sees it (it is
 * exec'd with an empty environment).
 */
#ifndef TP_KPROBE_H
#define TP_KPROBE_H

#include <stddef.h>
#include <stdio.h>

#include "langs.h"
#include "policy.h"

struct tp_kprobe {
	int seccomp_filter; /* seccomp filter mode with SECCOMP_RET_TRAP available */
	int landlock_abi;   /* > 0, or -errno of the probe */
	int root;           /* workers drop to uid 65534 only when the host runs as root */
	int nnp;            /* PR_SET_NO_NEW_PRIVS is known to this kernel */
	int ia32;           /* i386 syscalls reach the kernel: 1, 0, -1 unknown (not probed) */
};

void tp_kprobe(struct tp_kprobe *k);

/* Why this kernel cannot run p as it says: seccomp is needed by every policy;
 * a policy that grants files needs Landlock (seccomp cannot check paths);
 * kernel-only needs Landlock and seccomp (they are its only walls). 0, or -1
 * with the reason in why ("policy 'x' ...: refused rather than run with less"). */
int tp_policy_kernel_check(const struct tp_policy *p, char *why, size_t len);

/* The read grants a policy without a language layer (kernel-only) adds for
 * lang: the interpreter's own library directories that exist on this machine
 * (Python: /usr/lib/python3.11, which holds lib-dynload; Lua: /usr/share/lua/5.4,
 * /usr/local/share/lua/5.4, /usr/lib/x86_64-linux-gnu/lua/5.4,
 * /usr/local/lib/lua/5.4). Up to max paths (static strings) into out; how many.
 * 0 for a policy with a language layer. */
size_t tp_runtime_grants(const struct tp_policy *p, enum tp_lang_id lang, const char **out,
			 size_t max);

/* `tidepool doctor`: each protection, its state here, and what is degraded. */
void tp_doctor_print(FILE *f);
/* One line for the host's start-up log. */
void tp_doctor_summary(char *buf, size_t len);

#endif
