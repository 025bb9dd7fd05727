/*
 * seccomp_sim.h — a small classic-BPF interpreter for the tests: runs a seccomp
 * program on a struct seccomp_data, and combines a stack of two the way the
 * kernel does, so tests can prove two stacked filters equal one program.
 */
#ifndef TP_SECCOMP_SIM_H
#define TP_SECCOMP_SIM_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BPF_BAD 0xdeadbeefu

static inline uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0;

	for (size_t pc = 0; pc < n;) {
		const struct sock_filter *i = &f[pc++];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (i->k + 4 > sizeof *d)
				return BPF_BAD;
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_LD | BPF_IMM: a = i->k; break;
		case BPF_LDX | BPF_IMM: x = i->k; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
		case BPF_ALU | BPF_OR | BPF_K: a |= i->k; break;
		case BPF_JMP | BPF_JA: pc += i->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
		case BPF_RET | BPF_K: return i->k;
		default: return BPF_BAD;
		}
	}
	return BPF_BAD;
}

struct prog {
	const struct sock_filter *f;
	size_t n;
};

/* What the kernel returns for a stack: it runs the newest filter (the seal) first
 * and takes an older one's verdict only when its action is strictly more
 * restrictive (compared as signed: KILL_PROCESS < KILL_THREAD < TRAP < ERRNO < ALLOW). */
static inline uint32_t stacked(const struct prog *older, const struct prog *newer,
			       const struct seccomp_data *d)
{
	uint32_t ret = bpf_run(newer->f, newer->n, d), old = bpf_run(older->f, older->n, d);

	if ((int32_t)(old & SECCOMP_RET_ACTION_FULL) < (int32_t)(ret & SECCOMP_RET_ACTION_FULL))
		ret = old;
	return ret;
}

#endif
