/*
 * worker.h — one sandboxed exec: lock down, read the request, run, reply, exit.
 *
 * Usage: the zygote calls tp_worker_main() in the freshly cloned child. It never
 * returns: the worker _exit()s right after its reply so no finalizer runs
 * outside the limits.
 */
#ifndef TP_WORKER_H
#define TP_WORKER_H

#include <stdint.h>
#include <sys/types.h>

#include "lang.h"
#include "spawn.h"

struct tp_worker_cfg {
	const struct tp_lang *lang;
	int chan_fd;
	int shm_fd;
	uint32_t area_bytes;
	uint64_t as_bytes; /* RLIMIT_AS for the worker */
	struct tp_limits ceiling;
	int files;        /* the policy grants paths: more fds */
	uint64_t fsize;   /* RLIMIT_FSIZE: the policy's file_bytes with write grants, else 0 */
	pid_t host_pid;   /* the worker's parent (CLONE_PARENT): it must die with it */
	int session;      /* this spawn is a session's: it serves requests until the host ends it */
	int state;        /* isolation "state": one-shot execs, each in a fresh language state,
			     until the host replaces it (at most TP_STATE_MAX_EXECS) */
	int workspace_fd; /* the session's workspace (O_PATH), or 0 */
	uint64_t workspace_bytes;  /* RLIMIT_FSIZE in a workspace */
	uint64_t session_as_bytes; /* RLIMIT_AS for a session's worker */
	uint64_t session_cpu_sec;  /* RLIMIT_CPU for a session's worker: its lifetime */
	/* Kernel-only (no language layer): the zygote's address space when it
	 * clones (measured last before its spawn loop), and a session's memory;
	 * the worker's RLIMIT_AS is made of them (worker.c kernel_as_bytes). */
	uint64_t vm_bytes;
	uint64_t session_memory_bytes;
};

_Noreturn void tp_worker_main(const struct tp_worker_cfg *cfg);

/* Runs the language's rehearsal (lang.h) under the ceiling's limits, before a
 * worker waits for its request; stops between snippets once *stop is set (the
 * page's handed), if stop is not NULL. Leaves nothing an exec can see. */
void tp_worker_rehearse(const struct tp_lang *lang, const struct tp_limits *ceiling,
			const volatile uint32_t *stop);

#endif
