/*
 * zygote.c — the template process. It is exec'd with an empty environment, so
 * the client's secrets never reach its memory; it builds the interpreter once
 * and clones workers from that pristine state. It never receives request data:
 * its only input is "spawn" with two fds, its only output a pid.
 */
#include "zygote.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lang.h"
#include "limit.h"
#include "heap.h"
#include "huge.h"
#include "kprobe.h"
#include "lockdown.h"
#include "spawn.h"
#include "worker.h"

#define CTL_FD TP_ZYGOTE_CTL_FD
#define TP_ZYGOTE_POLICY_MAX (1u << 20)
/* Address space a worker may map beyond the zygote's and its heap cap:
 * jansson buffers for the reply and libc's own arenas. */
#define AS_SLACK (256ull << 20)

uint64_t tp_zygote_vm_bytes(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f != NULL) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* clone(CLONE_PARENT): the worker becomes the host's child, so the host reaps it
 * and sees its real exit status. glibc's fork() would also run atfork handlers;
 * the zygote registers none and is single-threaded, so a raw clone is safe. */
pid_t tp_zygote_clone_worker(void)
{
	return (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
}

/* The policy the host handed over on TP_ZYGOTE_POLICY_FD, checked again here:
 * the zygote trusts nothing it did not validate. */
static struct tp_policy *read_policy(struct tp_err *err)
{
	char *buf = malloc(TP_ZYGOTE_POLICY_MAX);
	size_t n = 0;
	ssize_t r = 1;
	while (buf != NULL && n < TP_ZYGOTE_POLICY_MAX &&
	       (r = read(TP_ZYGOTE_POLICY_FD, buf + n, TP_ZYGOTE_POLICY_MAX - n)) > 0)
		n += (size_t)r;
	close(TP_ZYGOTE_POLICY_FD);
	if (buf == NULL || r < 0 || n == 0 || n == TP_ZYGOTE_POLICY_MAX) {
		free(buf);
		tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
			   "no policy on fd %d from the host", TP_ZYGOTE_POLICY_FD);
		return NULL;
	}
	struct tp_policy *p = tp_policy_from_wire(buf, n, err);
	free(buf);
	return p;
}

int tp_zygote_main(const char *lang_name, const char *workspace_base)
{
	struct tp_err err = { 0 };
	const struct tp_lang *lang = tp_lang_find(lang_name);
	struct tp_worker_cfg cfg = { .lang = lang };
	struct tp_policy *policy;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "tp-zygote");
	/* The host's stop signal: a worker catches it once it can act on it;
	 * until then (inherited through clone) it is dropped, never fatal. */
	signal(SIGUSR1, SIG_IGN);
	if (lang == NULL) {
		fprintf(stderr, "tidepool zygote: unknown language '%s'\n", lang_name);
		return 1;
	}
	if ((policy = read_policy(&err)) == NULL) {
		fprintf(stderr, "tidepool zygote: %s\n", err.msg);
		return 1;
	}
	tp_sandbox_set_policy(policy);
	/* The host checked already; a zygote refuses rather than run with less too. */
	char why[512];
	if (tp_policy_kernel_check(policy, why, sizeof why) != 0) {
		fprintf(stderr, "tidepool zygote: %s\n", why);
		return 1;
	}
	/* UTC, fixed once: os.date is deterministic and never reads /etc/localtime. */
	setenv("TZ", "UTC", 1);
	tzset();
	tp_lockdown_set_lang(lang->id); /* kernel-only reads its runtime's own libraries */
	if (workspace_base != NULL && workspace_base[0] == '/')
		tp_lockdown_set_workspace_base(workspace_base);
	if (lang->huge_pages) {
		tp_huge_text();
		tp_huge_begin();
	}
	if (lang->zygote_init(&err) != 0 || tp_lockdown_prepare(&err) != 0) {
		fprintf(stderr, "tidepool zygote: %s\n", err.msg);
		return 1;
	}
	cfg.ceiling = policy->limits;
	/* The rehearsal once here too (worker.c): what its first run writes into
	 * the interpreter's caches (the type attribute cache, interned names, lazy
	 * state) is then shared by every worker, not written again in each. */
	tp_worker_rehearse(lang, &cfg.ceiling, NULL);
	if (lang->zygote_settle != NULL)
		lang->zygote_settle();
	cfg.files = policy->fs_read.n + policy->fs_write.n > 0 || !policy->language_layer;
	cfg.fsize = policy->fs_write.n > 0 ? policy->file_bytes : 0;
	cfg.host_pid = getppid();
	/* A session's worker holds the session's memory, under the same slack. */
	uint64_t smem = policy->session.memory_bytes > cfg.ceiling.memory_bytes
			    ? policy->session.memory_bytes
			    : cfg.ceiling.memory_bytes;
	cfg.session_memory_bytes = smem;
	cfg.session_cpu_sec = policy->session.lifetime_ms / 1000 + 1;
	cfg.workspace_bytes = policy->session.workspace_bytes;
	/* Purge before forking (Android's zygote lesson): consolidate the free chunks
	 * init left behind, or every worker's first large malloc does it again and
	 * takes a copy-on-write fault on each heap page it walks. */
	malloc_trim(0);
	/* Making workers is background work: at a lower priority, the fork and the
	 * lockdown give way to the host, its client and the exec that is running.
	 * The host raises each worker back to normal when it hands it an exec (it
	 * can only do that as root, so only then is the zygote lowered). */
	if (geteuid() == 0)
		setpriority(PRIO_PROCESS, 0, TP_BACKGROUND_NICE);
	/* Every free chunk is taken, so a worker's malloc works in new memory of
	 * its own, not in the free space of pages the zygote uses (heap.c). Should
	 * the settle refuse (a heap it does not recognise), trimming has left the
	 * merged chunks unsorted: one large request sorts them into bins here,
	 * once, instead of in every worker (whose first large malloc otherwise
	 * writes a neighbour in each of ~170 chunks: as many copy-on-write faults).
	 * Through a volatile pointer: GCC deletes a plain free(malloc(n)). */
	if (tp_heap_settle() < 0) {
		void *volatile sort = malloc(96u << 10);
		free(sort);
	}
	/* Its memory in 2 MiB pages where it fills them: a fork then copies one
	 * page-table entry for each instead of 512, and a worker's exit takes down
	 * as few (huge.c). */
	tp_huge_end();
	/* What a worker maps when it is cloned, measured as late as /proc can be
	 * read (Z refuses the open, and a worker cannot read it either): from here
	 * the zygote maps nothing more. Kernel-only's RLIMIT_AS starts from it, and
	 * every worker's from it with the exec's memory and the slack. */
	cfg.vm_bytes = tp_zygote_vm_bytes();
	cfg.as_bytes = cfg.vm_bytes + cfg.ceiling.memory_bytes + AS_SLACK;
	cfg.session_as_bytes = cfg.vm_bytes + smem + AS_SLACK;
	if (tp_lockdown_enter_zygote(&err) != 0) { /* Z: no open from here on */
		fprintf(stderr, "tidepool zygote: %s\n", err.msg);
		return 1;
	}
	for (;;) {
		enum tp_spawn_kind kind;
		int r = tp_spawn_recv(CTL_FD, &cfg.chan_fd, &cfg.shm_fd, &cfg.area_bytes, &kind,
				      &cfg.workspace_fd);
		if (r == 0)
			return 0;
		cfg.session = kind == TP_SPAWN_SESSION;
		cfg.state = kind == TP_SPAWN_STATE;
		if (r < 0 || cfg.area_bytes != policy->limits.output_bytes ||
		    (cfg.state && (lang->reset == NULL || strcmp(policy->isolation, "state") != 0)))
			return 1; /* the host broke the protocol: stop rather than guess */
		pid_t pid = tp_zygote_clone_worker();
		if (pid == 0) {
			close(CTL_FD);
			tp_worker_main(&cfg);
		}
		close(cfg.chan_fd);
		close(cfg.shm_fd);
		if (cfg.workspace_fd > 2)
			close(cfg.workspace_fd);
		if (tp_spawn_send_pid(CTL_FD, pid < 0 ? -errno : pid) != 0)
			return 1;
	}
}
