/*
 * host_int.h — private to host/: the host's state, shared by its three parts.
 *   output.c  tp_out_*   the stdout writer and its out-of-memory reserve, stderr logs
 *   pool.c    tp_pool_*  the zygotes and workers: spawn, refill, dispatch, reap, channels
 *   host.c    tp_host_*  the requests and their execs, the loop, setup and teardown
 * Nothing outside host/ includes it: the public API is host.h.
 */
#ifndef TP_HOST_INT_H
#define TP_HOST_INT_H

#include <jansson.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "frame.h"
#include "hpolicy.h"
#include "msg.h"
#include "host.h"
#include "limits.h"
#include "exec_params.h"
#include "jsonrpc.h"
#include "langs.h"
#include "linebuf.h"
#include "shm.h"

#define OUT_INITIAL (64u << 10) /* the output buffer's first size (output.c) */

struct worker;

struct exec {
	struct exec *next;
	json_t *msg; /* the request; p borrows from it */
	json_t *id;
	int zi; /* its zygote: index into the host's zyg[] (policy and language) */
	struct tp_exec_params p;
	double t_start, deadline;
	struct worker *w;
	struct tp_err verdict; /* the host's own (timeout, internal error): the first wins */
	int cancelled;
};

struct worker {
	struct worker *next;
	int zi;    /* index into the host's zygotes */
	pid_t pid; /* 0 until the zygote answers */
	int chan;
	struct tp_shm *shm;
	uint32_t area;
	struct tp_frame_rx rx;
	char *tx;
	size_t tx_len, tx_off;
	struct exec *exec;
	struct tp_reply *reply; /* the decoded reply frame, or NULL */
	int answered;           /* its exec got its reply */
	int exited, status;
	double cpu_ms;
	int kill_pending; /* kill as soon as the pid is known */
};

struct early_exit {
	pid_t pid;
	int status;
	double cpu_ms;
};

/* One zygote per policy and language: a Lua worker never maps an initialized
 * CPython, and a worker's interpreter, filter and grants are its policy's. */
struct zygote {
	const struct tp_lang_info *lang;
	const struct tp_policy *policy;
	pid_t pid;
	int ctl;
	int failures;                /* consecutive: a worker that replied resets it */
	double retry_at;             /* no spawn before this (tp_host_now_ms), after a failure */
	int used;                    /* keep a warm pool only for languages a client has used */
	struct worker *spawning[64]; /* FIFO awaiting a pid from the zygote */
	int nspawning;
};

struct tp_host {
	struct tp_host_cfg cfg;
	struct tp_policy_set *own_set; /* when the cfg gave none */
	struct tp_exec_policies pols;
	struct tp_hpolicy *hp; /* per policy of the set, by its index */
	int audit_fd;          /* -1: no audit log */
	struct zygote *zyg;    /* [policy index * TP_NLANGS + enum tp_lang_id] */
	int nzyg;
	struct worker *workers;
	struct exec *qhead, *qtail;
	int queued;
	struct tp_linebuf lb;
	int stdin_open;
	char *out;
	size_t out_len, out_cap;
	int out_blocking;
	int sigfd;
	int terminated;
	int open_line;       /* a partial write left a reply line unfinished on stdout */
	struct pollfd *pfds; /* P_FIXED + max_workers + nzyg entries */
	struct worker **pws; /* max_workers entries */
	struct early_exit early[32];
	int nearly;
};

/* output.c: replies go out through here, never blocking. */
void tp_out_log(const char *fmt, const char *detail);
void tp_out_flush(struct tp_host *h);
void tp_out_finish_open_line(struct tp_host *h);
/* Sends msg (stolen), the reply to request id (borrowed; NULL for null). */
void tp_out_emit(struct tp_host *h, const json_t *id, json_t *msg);
void tp_out_error(struct tp_host *h, json_t *id, int code, const char *msg);
void tp_out_setup_stdout(struct tp_host *h);

/* pool.c: workers and zygotes. */
void tp_pool_kill_worker(struct worker *w);
void tp_pool_flush_tx(struct worker *w);
void tp_pool_worker_free(struct tp_host *h, struct worker *w);
int tp_pool_running(const struct tp_host *h);
void tp_pool_dispatch_queue(struct tp_host *h);
void tp_pool_read_chan(struct tp_host *h, struct worker *w);
void tp_pool_read_zygote(struct tp_host *h, struct zygote *z);
void tp_pool_reap(struct tp_host *h);
void tp_pool_check_timeouts(struct tp_host *h, double now);
int tp_pool_next_timeout(const struct tp_host *h, double now);

/* host.c: an exec's life and its one reply; the loop's clock. */
double tp_host_now_ms(void);
void tp_host_exec_free(struct exec *e);
/* Sends the exec's one reply, built from everything known about the worker and
 * err, the host's own verdict (NULL when it has none; a timeout recorded in the
 * exec before wins over it). */
void tp_host_finish(struct tp_host *h, struct worker *w, const struct tp_err *err);

#endif
