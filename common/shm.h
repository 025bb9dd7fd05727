/*
 * shm.h — the page a worker shares with the host: captured output, the sticky
 * limit verdict, usage counters and the syscall a SIGSYS handler caught.
 *
 * Why shared memory: output written before a kill must still reach the host,
 * and a worker killed by the host or by the kernel cannot send a message.
 *
 * Usage:
 *   1. The host creates a memfd of tp_shm_size(area), maps it and calls
 *      tp_shm_init(); the worker inherits the fd and maps it before lockdown.
 *   2. The worker calls tp_shm_begin() with the exec's output cap, then
 *      tp_shm_write() for output and tp_shm_trip() when a limit trips.
 *   3. The host reads it with tp_shm_snapshot(), which trusts nothing in the page:
 *      the worker may have scribbled over every field.
 *   4. One field goes the other way: the host sets stop, then sends SIGUSR1, to
 *      ask the running exec to stop (a cancel, a session's wall clock); it
 *      clears it before the worker's next exec. And the host sets len[] to 0
 *      when it hands a waiting worker an exec, so a stream read while the exec
 *      runs (host/stream.c) never sees the last exec's output; and sets handed
 *      (a futex it wakes), so a warm worker stops its rehearsal (worker.c).
 */
#ifndef TP_SHM_H
#define TP_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define TP_SHM_MAGIC 0x7470736du /* "tpsm" */
#define TP_SHM_CPU_UNSET UINT64_MAX

enum tp_stream { TP_STDOUT = 0, TP_STDERR = 1 };

struct tp_shm {
	uint32_t magic;
	uint32_t area_bytes;             /* size of each stream area */
	uint64_t out_limit;              /* cap on stdout + stderr for this exec */
	volatile uint32_t len[2];        /* bytes stored per stream */
	volatile uint32_t truncated[2];  /* 1 when a write did not fit */
	volatile uint64_t wanted;        /* bytes the code tried to write in all */
	volatile uint32_t tripped;       /* enum tp_kind of the first sticky limit, 0 = none */
	volatile uint32_t tripped_limit; /* enum tp_limit_id */
	volatile uint64_t limit_value;
	volatile uint64_t limit_used;
	volatile int32_t syscall_nr; /* set by the SIGSYS handler, -1 = none */
	volatile uint32_t pad;
	volatile uint64_t instructions;
	volatile uint64_t mem_peak;
	volatile uint32_t
	    stop; /* host → worker: 1 asks the running exec to stop (SIGUSR1 follows) */
	volatile uint32_t handed; /* host → worker: 1 once it was handed a request (worker.c) */
	/* The exec's CPU clock (docs/worker-protocol.md "CPU time"): the worker's CPU
	 * time since its fork when the exec's clock started (TP_SHM_CPU_UNSET until
	 * then: the host sets it when it hands the worker an exec), and the exec's
	 * CPU time when the worker last published its counters. */
	volatile uint64_t cpu_begin_us;
	volatile uint64_t cpu_us;
	/* Where a worker's CPU went, for the metrics (the worker's word, each its
	 * CPU time since its fork, TP_SHM_CPU_UNSET until stamped): locked down,
	 * done rehearsing, and its last reply encoded (just before it is sent). */
	volatile uint64_t cpu_ready_us;
	volatile uint64_t cpu_rehearsed_us;
	volatile uint64_t cpu_reply_us;
	char note[128]; /* why a worker stopped itself (policy kills), NUL-terminated */
	/* The rule that refused, for a policy or sandbox violation: "RULE" or
	 * "RULE PATH" (docs/protocol.md, error.rule), NUL-terminated. */
	char rule[192];
	char data[]; /* stdout area, then stderr area */
};

/* A copy the host can trust: lengths clamped, verdict range-checked. */
struct tp_shm_view {
	const char *out[2]; /* point into the mapping; use at once */
	size_t len[2];
	int truncated[2];
	uint64_t out_claimed; /* tp_shm_view_cap: stdout + stderr as the page claimed */
	int tripped;          /* enum tp_kind or 0 */
	int tripped_limit;    /* enum tp_limit_id or -1 */
	uint64_t limit_value, limit_used;
	int syscall_nr;
	uint64_t instructions, mem_peak;
	uint64_t cpu_begin_us, cpu_us; /* as the worker left them: unchecked */
	char note[128];                /* a copy, always NUL-terminated */
	char rule[192];                /* a copy, always NUL-terminated: unchecked */
};

size_t tp_shm_size(uint32_t area_bytes);
void tp_shm_init(struct tp_shm *shm, uint32_t area_bytes);
/* Worker: start an exec whose combined output may not exceed out_limit. */
void tp_shm_begin(struct tp_shm *shm, uint64_t out_limit);
/* Worker: appends what fits. Returns 0, or -1 when some bytes did not fit
 * (the caller then trips output_limit). Async-signal-safe. */
int tp_shm_write(struct tp_shm *shm, enum tp_stream s, const char *buf, size_t n);
/* Worker: records the first sticky verdict; later calls are ignored. Async-signal-safe. */
void tp_shm_trip(struct tp_shm *shm, enum tp_kind kind, int limit_id, uint64_t limit,
		 uint64_t used);
/* Worker: says why it is about to stop itself (before tp_shm_trip). */
void tp_shm_note(struct tp_shm *shm, const char *text);
/* Worker: names the rule that refused (first call of an exec wins). Async-signal-safe. */
void tp_shm_rule(struct tp_shm *shm, const char *text);
/* Host: reads the page of a mapping of area_bytes (the host's own value). */
void tp_shm_snapshot(const struct tp_shm *shm, uint32_t area_bytes, struct tp_shm_view *v);
/* Holds v to the exec's output_bytes, whatever lengths the page claims (the
 * worker keeps to it; a worker running native code need not): stdout first,
 * then stderr, each stream cut marked truncated. Returns 1 when it cut, with
 * what the page claimed in v->out_claimed. */
int tp_shm_view_cap(struct tp_shm_view *v, uint64_t output_bytes);

#endif
