/*
 * seccomp_policy.h — the worker's syscall policy as data (seccomp_policy.c),
 * compiled into the zygote filter Z and the worker seal W by lockdown.c.
 * An auditor reads seccomp_policy.c alone: every syscall a worker may make, the
 * arguments it may make it with, and what the zygote needs on top.
 */
#ifndef TP_SECCOMP_POLICY_H
#define TP_SECCOMP_POLICY_H

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

/* The only identity a worker of a root host may take. */
#define NOBODY 65534
/* Unknown and future syscall numbers up to here get ENOSYS, not a trap (the filter's
 * answer; the kernel runs 335 uretprobe and 336 uprobe without asking it). */
#define SWEEP_FIRST 335 /* first number after the classic x86-64 table */
#define SWEEP_END 600
#define EPERM_ACT SCMP_ACT_ERRNO(EPERM)

struct tp_arg_rule {
	int nr;
	uint32_t action;
	unsigned ncmp;
	struct scmp_arg_cmp cmp[3];
};

#define ARG(n, cmp_op, a, b)                                                                       \
	{                                                                                          \
		.arg = (n), .op = (cmp_op), .datum_a = (a), .datum_b = (b)                         \
	}
#define NOARG                                                                                      \
	{                                                                                          \
		.arg = 0                                                                           \
	}
#define EPERM_ACT SCMP_ACT_ERRNO(EPERM)

/* Allowed with any arguments. */
extern const int tp_policy_allow_nrs[];
extern const size_t tp_policy_nallow_nrs;
/* Refused with EPERM: network, exec, fork, and whatever could reach outside.
 * Under kernel-only every EPERM of the worker's rules traps instead. */
extern const int tp_policy_eperm_nrs[];
extern const size_t tp_policy_neperm_nrs;
/* Refused with ENOSYS, so libc falls back (clone3, newer calls). */
extern const int tp_policy_enosys_nrs[];
extern const size_t tp_policy_nenosys_nrs;
/* Allowed or refused by their arguments; each syscall's rules are disjoint. */
extern const struct tp_arg_rule tp_policy_arg_rules[];
extern const size_t tp_policy_narg_rules;
/* What the zygote and a worker's own lockdown steps need under Z (the seal W
 * takes the worker's rules back for exactly these syscalls). */
extern const struct tp_arg_rule tp_policy_zygote_rules[];
extern const size_t tp_policy_nzygote_rules;

#endif
