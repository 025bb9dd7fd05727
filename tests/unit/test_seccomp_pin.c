/*
 * test_seccomp_pin.c — pins the seccomp programs every preset compiles to: for
 * each preset, each zygote language (and none), each of the worker policy, the
 * zygote filter Z and the seal W, the action of every syscall number 0 ..
 * SWEEP_END-1 under a set of probe arguments, folded into one hash per
 * program (seccomp_pins.h). A change to sandbox/seccomp_policy.c or the way
 * lockdown.c compiles it that changes any answer fails here; a change meant to
 * change them regenerates the pins:
 *   build/tests/test_seccomp_pin --print > tests/unit/seccomp_pins.h
 * and --dump prints each number's answers (one line per number and program)
 * and each program's instructions, to diff two builds. Each policy is prepared in its own child:
 * lockdown.c prepares once per process, as a zygote does.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang.h"
#include "lockdown.h"
#include "policy.h"
#include "seccomp_policy.h"
#include "seccomp_sim.h"
#include "tap.h"

#define AUDIT_ARCH_X86_64_ 0xc000003eu

struct pin {
	const char *policy;
	int lang; /* -1: no tp_lockdown_set_lang() */
	enum tp_filter which;
	uint64_t hash;
};

#include "seccomp_pins.h"

static const char *const filter_name[] = {
	[TP_FILTER_WORKER] = "worker", [TP_FILTER_ZYGOTE] = "zygote", [TP_FILTER_SEAL] = "seal"
};
static const char *const lang_name[] = { "none", "lua", "python" };

/* Every constant a rule in seccomp_policy.c or lockdown.c compares with, its
 * neighbours, and values that only the high 32 bits tell apart. */
static const uint64_t probes[] = {
	0,
	1,
	2,
	3,
	4,
	5,
	6,
	7,
	8,
	9,
	11,
	12,
	13,
	14,
	15,
	16,
	17,
	30,
	31,
	32,
	33,
	64,
	65,
	128,
	FUTEX_WAIT | FUTEX_PRIVATE_FLAG,
	FUTEX_WAKE | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME,
	FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
	FUTEX_LOCK_PI,
	MADV_FREE,
	MADV_HUGEPAGE,
	MADV_NOHUGEPAGE,
	MADV_DONTDUMP,
	MADV_COLD,
	MADV_PAGEOUT,
	MADV_REMOVE,
	AT_EMPTY_PATH,
	AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
	TCGETS,
	TCGETS + 1,
	MSG_CMSG_CLOEXEC,
	MSG_NOSIGNAL,
	CLONE_PARENT | SIGCHLD,
	CLONE_VM | SIGCHLD,
	NOBODY,
	NOBODY + 1,
	O_WRONLY,
	O_RDWR,
	O_ACCMODE,
	O_CREAT,
	O_TRUNC,
	O_TRUNC | O_WRONLY,
	O_TRUNC | O_RDWR,
	O_TRUNC | O_ACCMODE,
	O_APPEND,
	O_PATH,
	O_TMPFILE,
	O_DIRECTORY | O_CLOEXEC,
	PROT_READ | PROT_WRITE,
	PROT_READ | PROT_EXEC,
	0x7fffffffull,
	0x80000000ull,
	0xfffffff8ull,
	0xffffffffull,
	0x100000000ull,
	0x100000000ull | SIGSYS,
	0x100000000ull | SIGABRT,
	~0ull,
	~7ull,
};
#define NPROBES (sizeof probes / sizeof probes[0])

static uint64_t fnv(uint64_t h, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint32_t run(const struct sock_filter *f, size_t n, int nr, int arg, uint64_t v)
{
	struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64_ };

	if (arg < 0)
		for (int i = 0; i < 6; i++)
			d.args[i] = v;
	else
		d.args[arg] = v;
	return bpf_run(f, n, &d);
}

/* One program's answers folded: each number with all-zero arguments, every
 * probe in each argument alone, and every probe in all six at once. */
static uint64_t program_hash(const struct sock_filter *f, size_t n, const char *dump)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int nr = 0; nr < SWEEP_END; nr++) {
		uint64_t hn = 0xcbf29ce484222325ull;
		uint32_t zero = run(f, n, nr, 0, 0);
		hn = fnv(hn, zero);
		for (int arg = -1; arg < 6; arg++)
			for (size_t i = 0; i < NPROBES; i++)
				hn = fnv(hn, run(f, n, nr, arg, probes[i]));
		if (dump)
			printf("%s nr %3d: %08x %016llx\n", dump, nr, zero, (unsigned long long)hn);
		h = fnv(fnv(h, (uint32_t)hn), (uint32_t)(hn >> 32));
	}
	/* Another architecture's numbers never reach the table. */
	struct seccomp_data d = { .nr = 0, .arch = 0x40000003u /* i386 */ };
	h = fnv(h, bpf_run(f, n, &d));
	return h;
}

static int set_policy(const struct tp_policy *p)
{
	struct tp_err err = { 0 };
	size_t len;
	char *wire = tp_policy_wire(p, &len);
	struct tp_policy *copy = wire ? tp_policy_from_wire(wire, len, &err) : NULL;

	free(wire);
	if (copy == NULL)
		return -1;
	tp_sandbox_set_policy(copy);
	return 0;
}

/* In a child: this policy prepared as the zygote of lang prepares it; the three
 * programs' hashes into out. 0, or -1 when the kernel cannot hold it. */
static int hashes(const struct tp_policy *p, int lang, const char *ws, uint64_t out[3], int dump)
{
	static struct sock_filter insns[BPF_MAXINSNS];
	struct tp_err err = { 0 };
	char label[96];

	if (set_policy(p) < 0)
		return -2;
	if (lang >= 0)
		tp_lockdown_set_lang((enum tp_lang_id)lang);
	tp_lockdown_set_workspace_base(ws);
	if (tp_lockdown_prepare(&err) < 0) {
		printf("# %s/%s: not prepared here: %s\n", p->name, lang_name[lang + 1], err.msg);
		return -1;
	}
	for (int w = TP_FILTER_WORKER; w <= TP_FILTER_SEAL; w++) {
		size_t n = tp_lockdown_compile((enum tp_filter)w, -1, insns, BPF_MAXINSNS);
		if (n == 0)
			return -2;
		snprintf(label, sizeof label, "%s/%s/%s", p->name, lang_name[lang + 1],
			 filter_name[w]);
		out[w] = program_hash(insns, n, dump ? label : NULL);
		if (dump) { /* the program itself, instruction by instruction */
			for (size_t i = 0; i < n; i++)
				printf("%s insn %4zu: %04x %02x %02x %08x\n", label, i,
				       insns[i].code, insns[i].jt, insns[i].jf, insns[i].k);
		}
	}
	return 0;
}

static const struct pin *find_pin(const char *policy, int lang, enum tp_filter which)
{
	for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++)
		if (strcmp(pins[i].policy, policy) == 0 && pins[i].lang == lang &&
		    pins[i].which == which)
			return &pins[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	int print = argc > 1 && strcmp(argv[1], "--print") == 0;
	int dump = argc > 1 && strcmp(argv[1], "--dump") == 0;
	char ws[] = "/tmp/tp-pin-XXXXXX";
	size_t npinned = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* The pins are a kernel with Landlock's: without it a session's workspace
	 * is no grant, so the programs of the presets that give one differ (and
	 * those with file grants are refused). tests/proto covers such a kernel. */
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi <= 0 && !print && !dump) {
		TP_SKIP("every pin: this kernel has no Landlock, and the pins are of one with it");
		return tp_test_done("test_seccomp_pin");
	}
	CHECK(set != NULL && tp_policy_set_count(set) >= 5);
	if (set == NULL || mkdtemp(ws) == NULL)
		return 1;
	if (print)
		printf("/* seccomp_pins.h — written by test_seccomp_pin --print; see there. */\n"
		       "static const struct pin pins[] = {\n");
	for (size_t i = 0; i < tp_policy_set_count(set); i++) {
		const struct tp_policy *p = tp_policy_set_at(set, i);
		for (int lang = -1; lang < TP_NLANGS; lang++) {
			uint64_t h[3] = { 0 };
			int fds[2], st = 0, rc = -2;
			pid_t pid;

			if (pipe(fds) < 0)
				return 1;
			pid = fork();
			if (pid == 0) {
				close(fds[0]);
				rc = hashes(p, lang, ws, h, dump);
				_exit(write(fds[1], &rc, sizeof rc) == sizeof rc &&
					      write(fds[1], h, sizeof h) == sizeof h
					  ? 0
					  : 1);
			}
			close(fds[1]);
			if (pid < 0 || read(fds[0], &rc, sizeof rc) != sizeof rc ||
			    (rc == 0 && read(fds[0], h, sizeof h) != sizeof h))
				rc = -2;
			close(fds[0]);
			if (pid > 0)
				waitpid(pid, &st, 0);
			CHECK(rc != -2);
			if (rc == -1)
				TP_SKIP("%s/%s: this kernel cannot hold it", p->name,
					lang_name[lang + 1]);
			for (int w = 0; rc == 0 && w < 3; w++) {
				const struct pin *pin = find_pin(p->name, lang, (enum tp_filter)w);
				if (print) {
					printf("\t{ \"%s\", %d, %s, 0x%016llxull },\n", p->name,
					       lang,
					       w == TP_FILTER_WORKER   ? "TP_FILTER_WORKER"
					       : w == TP_FILTER_ZYGOTE ? "TP_FILTER_ZYGOTE"
								       : "TP_FILTER_SEAL",
					       (unsigned long long)h[w]);
					continue;
				}
				if (dump)
					continue;
				tap_checks++;
				if (pin == NULL || pin->hash != h[w]) {
					tap_failures++;
					fprintf(stderr,
						"FAIL %s/%s/%s: the program's answers changed "
						"(0x%016llx, pinned 0x%016llx); if meant, see the "
						"head of this file\n",
						p->name, lang_name[lang + 1], filter_name[w],
						(unsigned long long)h[w],
						(unsigned long long)(pin ? pin->hash : 0));
				}
				npinned++;
			}
		}
	}
	if (print)
		printf("};\n");
	else if (!dump)
		printf("# %zu programs pinned (%zu policies)\n", npinned, tp_policy_set_count(set));
	rmdir(ws);
	tp_policy_set_free(set);
	return print || dump ? 0 : tp_test_done("seccomp_pin");
}
