/*
 * result.h — the exec result a client receives, built from what the host knows
 * about one exec: the worker's reply (checked), its shared page, how it ended.
 *
 * Usage:
 *   1. A worker's reply frame is decoded and checked by tp_msg_reply_decode()
 *      (common/msg.h), which refuses it whole or hands over a bounded struct.
 *   2. Fill a struct tp_outcome and call tp_result_build(). The verdict order is:
 *      host verdict (timeout, internal error) > sticky limit in the page > seccomp report >
 *      the worker's reply > the way the worker died.
 */
#ifndef TP_RESULT_H
#define TP_RESULT_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "limit.h"
#include "msg.h"
#include "shm.h"

struct tp_outcome {
	const struct tp_reply *reply;  /* the decoded worker reply (borrowed) or NULL */
	const struct tp_shm_view *shm; /* NULL when the page was never mapped */
	int exited;                    /* status is valid */
	int status;                    /* wait status */
	const struct tp_err *host;     /* the host's own verdict (a timeout, an internal
					* error; kind and layer as given), or NULL/unset */
	double wall_ms;                /* from the exec's start in a worker */
	double queue_ms;        /* waiting for a worker before that; wall_ms's limit covers both */
	double cpu_ms;          /* measured by the host (rusage: the worker's life, less what
				 * a session's earlier execs reported), or < 0 when unknown;
				 * tells a kill by RLIMIT_CPU from a crash */
	double cpu_exec_ms;     /* usage.cpu_ms when there is no reply (host.c), >= 0 */
	uint64_t tool_calls;    /* sent to the client */
	uint64_t tool_attempts; /* asked for by the code (a tool_limit's used) */
	const struct tp_limits *limits;
	const char *policy; /* the exec's policy's name: error.policy (NULL: none) */
	const char *rule;   /* error.rule of a host verdict that names none by its
			     * limit (a rate or a quota), or NULL */
	/* The exec's policy has no language layer (kernel-only): nothing above the
	 * kernel enforces memory_bytes or cpu_ms, so a memory_limit or cpu_limit is
	 * the kernel's. From the host's own policy, never from the worker. */
	int kernel_limits;
	/* Where the reply's value and text are written from the worker's bytes
	 * (answer.c): the nodes that stand in for them in the result, or NULL
	 * (the reply's own value and text are used). */
	json_t *value_stand_in;
	json_t *text_stand_in;
};

json_t *tp_result_build(const struct tp_outcome *o);

/* Name of an x86-64 syscall number (a SIGSYS report's); "nr_<N>" when unknown. */
void tp_syscall_name(int nr, char *buf, size_t len);

#endif
