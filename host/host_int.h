/*
 * host_int.h — private to host/: the host's state, shared by its files.
 *   client.c  tp_client_*  a client: its transport, its id space, its replies
 *   listen.c  tp_listen_*  the Unix-socket listener (--listen unix:PATH)
 *   output.c  tp_out_*     a client's writer, its out-of-memory reserve, its
 *                          batches; stderr logs
 *   worker.c  tp_worker_*  a worker and its zygote: spawn, assign, kill, free
 *   pool.c    tp_pool_*    the warm pool, the queue, dispatch, channels, reaping
 *   session.c tp_sess_*    sessions; workspace.c tp_ws_*: their directories;
 *   files.c   tp_files_*   the sandbox/session/files methods, the MCP file tools
 *   stream.c, tools.c      what an exec says while it runs; its tool calls
 *   answer.c  tp_answer_*  an exec's one reply (result, redaction, audit, client)
 *   proc.c    tp_proc_*    what /proc says of a worker or a zygote: state, CPU
 *   host.c    tp_host_*    the requests and the method registry, the loop, setup,
 *                          teardown
 * Nothing outside host/ includes it: the public API is host.h.
 */
#ifndef TP_HOST_INT_H
#define TP_HOST_INT_H

#include <jansson.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "audit.h"
#include "err.h"
#include "frame.h"
#include "hpolicy.h"
#include "msg.h"
#include "host_cfg.h"
#include "limit.h"
#include "exec_params.h"
#include "jsonrpc.h"
#include "langs.h"
#include "linebuf.h"
#include "shm.h"
#include "pages.h"
#include "spawn.h"

#define OUT_INITIAL (64u << 10)     /* the output buffer's first size (output.c) */
#define MAX_OUT_PENDING (16u << 20) /* stop reading stdin while this much is unwritten */

/* The poll array: these, then two per client (its read and write ends), then
 * one per worker, then one per zygote. */
enum { P_SIG, P_LISTEN, P_HTTP, P_FIXED };

struct worker;
struct session;
struct tp_ws_snap;
struct batch;

/* A client: one peer speaking JSON-RPC lines (client.c). The stdio client is
 * stdin and stdout; each connection to the listener is one; `tidepool run`'s
 * in-process host has a callback client. Each has its own id space, its own
 * MCP revision and batches, its own replies, and its own sessions: no client
 * sees, continues or closes another's. A client whose reader has gone (EOF)
 * gets the answers to what it sent; one whose writer has gone (a closed
 * socket or pipe) has its work cancelled and its sessions ended at once. */
enum tp_client_kind { TP_CLIENT_STDIO, TP_CLIENT_SOCKET, TP_CLIENT_CALLBACK, TP_CLIENT_HTTP };

#define TP_TENANT_NAME_MAX 63
#define TP_TENANTS_MAX 1024

/* A tenant of --tokens (tenant.c): its tokens' digests, policies and quotas
 * (0: no bound), and what it uses now. Lives as long as the host. */
struct tp_tenant {
	char name[TP_TENANT_NAME_MAX + 1];
	char (*digests)[65]; /* SHA-256 of its tokens, lowercase hex */
	size_t ndigests;
	const struct tp_policy **allowed;
	size_t nallowed;
	struct tp_exec_policies pols; /* what its requests may name, and its default */
	struct {
		uint64_t execs_per_minute, concurrent_execs, open_sessions, workspace_bytes;
	} q;
	double tokens, tokens_at; /* execs_per_minute's bucket */
	uint64_t in_flight;       /* its execs queued or running */
	uint64_t sessions;        /* its sessions open */
	uint64_t ws_reserved;     /* their workspace limits, summed */
	double last_start;        /* when its last exec started (fair dispatch) */
};

struct client {
	struct client *next;
	struct tp_tenant *tenant; /* whose requests these are (HTTP with --tokens), or NULL */
	unsigned long long num;   /* 1, 2, ...: named in logs as client N */
	enum tp_client_kind kind;
	int rfd, wfd; /* stdio: 0 and 1; a socket: its fd twice; callback: -1 */
	void (*emit)(void *ctx, json_t *msg); /* the callback and HTTP kinds' writer */
	void *emit_ctx;
	/* Why a request of ours about this exec could not reach the client now,
	 * or NULL (HTTP: only on the SSE stream of a session's call); NULL: any. */
	const char *(*cannot_ask)(const struct client *c, const json_t *exec_id);
	/* Told that request id will get no reply (a cancelled MCP call), or NULL. */
	void (*unanswered)(struct client *c, const json_t *id);
	struct tp_http *transport; /* the HTTP kind's (http.c), else NULL */
	pid_t peer_pid;            /* a socket's peer (SO_PEERCRED), else 0 */
	uid_t peer_uid;
	struct tp_linebuf lb;
	int open;   /* its requests may still come (not at EOF) */
	int gone;   /* its writer failed: nothing more can be said to it */
	int closed; /* ended: kept only while an exec still points at it */
	char *out;
	size_t out_len, out_cap;
	int out_blocking;
	int open_line;                /* a partial write left a reply line unfinished */
	char mcp_version[16];         /* what its initialize picked, or "" */
	struct batch *batches;        /* its open batches, their replies held */
	const json_t *line_id;        /* the id of the single request being handled: its
				       * reply is never a batch member's */
	int refs;                     /* execs that point at it */
	double last_start;            /* when its last exec started (fair dispatch) */
	short rev_in, rev_out;        /* this loop turn's poll events (host.c poll_once) */
	uint64_t bytes_in, bytes_out; /* read from it, written to it (metrics) */
};

#define SESSION_ID_LEN 20 /* "s-" and 16 hex digits: 64 random bits */
#define ENDED_KEPT 64     /* ended sessions remembered, to say why an exec cannot run */

struct exec {
	struct exec *next;
	struct tp_tenant *tenant; /* counted in its in_flight until freed, or NULL */
	struct client *c;         /* whose request it is: its reply goes there only */
	json_t *msg;              /* the request; p borrows from it */
	double t_arrival;         /* when it was read: its wall_ms covers its time queued */
	double queue_ms;          /* how long it waited for a worker (set when it starts) */
	uint64_t seq;             /* its request's number: the worker's reply must carry it */
	json_t *id;
	int zi; /* its zygote: index into the host's zyg[] (policy and language) */
	struct tp_exec_params p;
	double t_start, deadline;
	struct worker *w;
	struct tp_err verdict; /* the host's own (timeout, internal error): the first wins */
	int cancelled;
	double
	    stop_deadline; /* asked to stop (tp_pool_stop_worker): killed if still running then */
	struct session *sess; /* the session it runs in, or NULL (one-shot); cleared if it ends */
	char session_id[SESSION_ID_LEN + 1]; /* kept for the reply when sess is gone */
	uint64_t tool_calls;                 /* sent to the client (usage.tool_calls) */
	uint64_t tool_attempts;              /* asked for by the code, refused ones too */
	json_t *tool_log;                    /* [{name, outcome}] for the audit log, or NULL */
	struct tp_ws_snap *ws_before;        /* its session's workspace when it was handed over */
	char tool_pending[32]; /* the id of our sandbox/tool_call request awaiting its answer */
	char rule[96];         /* error.rule of the host's own refusal ("tools:NAME"), or "" */
	/* What is said while it runs (stream.c). */
	size_t sent[2];       /* bytes of each stream of the page sent as sandbox/output */
	int stream_off;       /* stream notifications stopped: the reply has the output */
	double next_tick;     /* when the page is read next (p.stream) */
	double next_progress; /* when the next progress is due (p.progress_token) */
	json_int_t progress;  /* the last progress sent */
};

struct worker {
	struct worker *next;
	int zi;    /* index into the host's zygotes */
	pid_t pid; /* 0 until the zygote answers */
	int chan;
	struct tp_shm *shm;
	int page_fd; /* shm's memfd (pages.c), -1 when none */
	uint32_t area;
	struct tp_frame_rx rx;
	char *tx;
	size_t tx_len, tx_off;
	struct exec *exec;
	struct tp_reply *reply; /* the decoded reply frame, or NULL */
	int answered;           /* its exec got its reply */
	int exited, status;
	double cpu_ms;    /* from its rusage, once reaped: its whole life */
	double cpu_prior; /* a session's worker: what its earlier execs reported */
	/* A one-shot worker that answered its exec: its CPU by phase goes to the
	 * metrics when it is reaped (tp_metrics_worker_cpu); exec_cpu_us is the
	 * reply's usage.cpu_us. */
	int measured;
	uint64_t exec_cpu_us;
	int kill_pending;     /* kill as soon as the pid is known */
	int stop_pending;     /* stop its exec as soon as the pid is known */
	int killed;           /* SIGKILL sent (or pending): it serves nothing more */
	struct session *sess; /* a session's worker, or NULL (one-shot) */
	int state;            /* isolation "state": serves one-shot execs until replaced */
	int handed;           /* it has been handed an exec (worker.c): raised from the
			       * background priority and woken from its rehearsal wait,
			       * both once */
	unsigned uses;        /* execs it has answered (a state worker is reused) */
	uint64_t ready_seq;   /* a state worker building its fresh state after this exec:
				 warm again when its READY names it; 0 when not resetting */
	double ready_by;      /* ... and killed if it has not said READY by then */
	/* A session's worker after its reply (session.c, the idle watch): its CPU
	 * time then, read from the kernel; -1 while it runs an exec or has never
	 * replied (nothing of the client's has run in it yet). */
	double idle_cpu_ms;
	/* ... it replied before the zygote told its pid: the watch starts when
	 * the pid comes (tp_sess_worker_born), and no exec is handed over before. */
	int idle_unborn;
	/* A session's exec whose hard RLIMIT_CPU the host could not set (no
	 * CAP_SYS_RESOURCE, pool.c): the worker CPU time at which the host kills
	 * it instead (0: none), and when it reads that time next. */
	double cpu_kill_ms, cpu_check_at;
};

/* A session: one worker whose globals persist between its execs (session.c). */
struct session {
	struct session *next;
	struct tp_tenant *tenant; /* its owner's, or NULL: counted in its quotas */
	uint64_t ws_reserved;     /* what it holds of the tenant's workspace_bytes */
	char id[SESSION_ID_LEN + 1];
	struct client *owner;     /* the client that opened it: the only one that sees it */
	int zi;                   /* its zygote: policy and language */
	struct worker *w;         /* its worker, for its whole life */
	struct tp_limits ceiling; /* its execs may only lower these */
	double opened, last_used;
	double last_start;        /* when its last exec started (fair dispatch) */
	uint64_t accepted;        /* execs taken (queued, running or done) */
	uint64_t done;            /* execs answered */
	uint64_t memory;          /* the language's heap after its last exec */
	double tokens, tokens_at; /* rate.session_per_minute: a bucket refilled per minute */
	int ws_dir;        /* its workspace, opened O_DIRECTORY by the host (workspace.c); -1 */
	char ws_path[512]; /* the workspace's absolute path, or "" */
	double next_watch; /* when the idle watch reads its worker's CPU time next */
};

struct ended_session {
	char id[SESSION_ID_LEN + 1];
	unsigned long long owner; /* its client's num: only it is told why */
	char why[160];
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
	int failures;             /* consecutive: a worker that replied resets it */
	unsigned starts;          /* how many times it was started (metrics: restarts) */
	double retry_at;          /* no spawn before this (tp_now_ms), after a failure */
	int used;                 /* keep a warm pool only for languages a client has used */
	double last_start;        /* when its last one-shot exec started (fair dispatch) */
	struct worker **spawning; /* FIFO awaiting a pid from the zygote */
	int nspawning, spawning_cap;
	/* Spawn requests not sent yet: its socket was full (a burst). They are
	 * the last of spawning[], sent in order when the socket has room. */
	struct tp_spawn_req *unsent;
	int nunsent, unsent_cap;
};

struct tp_spawn_req {
	int chan, page, ws; /* owned until sent */
	uint32_t area;
	enum tp_spawn_kind kind;
};

struct tp_host {
	struct tp_host_cfg cfg;
	uint64_t exec_seq;             /* the last request's number (struct exec.seq) */
	struct tp_policy_set *own_set; /* when the cfg gave none */
	struct tp_exec_policies pols;
	struct tp_hpolicy *hp; /* per policy of the set, by its index */
	int audit_fd;          /* -1: no audit log */
	struct zygote *zyg;    /* [policy index * TP_NLANGS + enum tp_lang_id] */
	int nzyg;
	struct worker *workers;
	struct tp_pages pages; /* reaped workers' pages, for the next ones */
	struct exec *qhead, *qtail;
	int queued;
	struct client *clients; /* the stdio client first, then the listener's */
	int nclients;
	unsigned long long client_seq;
	int listen_fd;             /* -1: no listener */
	struct tp_http *http;      /* --listen http://...: http.c's, or NULL */
	struct tp_tenant *tenants; /* --tokens: HTTP callers must be one of these */
	size_t ntenants;
	double untenanted_last_start; /* fair dispatch: the clients of no tenant, as one */
	struct tp_metrics *metrics;   /* metrics.c's counters */
	char *listen_path;            /* its socket's path, removed at exit */
	int sigfd;
	int terminated;        /* SIGTERM or SIGINT: its number */
	int gone;              /* the stdio client's stdout closed, with no listener */
	int hup;               /* SIGHUP: reopen the audit log */
	int draining;          /* SIGTERM with --drain-timeout: no new work, in flight finishes */
	double drain_deadline; /* tp_now_ms: what still runs then is cancelled */
	struct pollfd *pfds;   /* P_FIXED + 2 * client_cap + poll_cap + nzyg entries */
	int client_cap;        /* clients pfds has room for */
	struct worker **pws;   /* poll_cap entries */
	int nworkers;          /* in the workers list: never above poll_cap */
	struct early_exit early[32];
	int nearly;
	struct session *sessions;
	int nsessions;
	unsigned long long tool_seq; /* numbers our sandbox/tool_call requests */
	char *ws_base;               /* the directory sessions' workspaces are made in, or NULL */
	int ws_base_fd;              /* it, opened O_DIRECTORY; -1 */
	int poll_cap;                /* workers pfds and pws hold: max_workers + sessions */
	struct ended_session ended[ENDED_KEPT];
	unsigned nended;
};

/* output.c: replies go out through here, never blocking. */
void tp_out_log(const char *fmt, const char *detail);
/* 1: tp_out_log writes JSON lines (--log-format json). */
void tp_out_log_format(int json);
void tp_out_flush(struct client *c);
void tp_out_finish_open_line(struct client *c);
/* Sends msg (stolen), the reply to request id (borrowed; NULL for null). A
 * batch member's reply is held for its batch. */
void tp_out_emit(struct client *c, const json_t *id, json_t *msg);
/* Whether tp_out_emit(c, id, ...) writes its message at once, encoded on the
 * client's own stream: not held in a batch, not handed to a writer of the
 * client's own (HTTP, in process), the client not gone. */
int tp_out_now(const struct client *c, const json_t *id);
void tp_out_error(struct client *c, json_t *id, int code, const char *msg);
/* Sends msg (stolen, may be NULL), a request or notification of ours (a tool
 * call, sandbox/output, progress); -1 (nothing sent) out of memory or gone. */
int tp_out_send(struct client *c, json_t *msg);
void tp_out_setup(struct client *c);
/* A batch (MCP 2025-03-26): its members handled as lines of their own through
 * handle (each a parsed request or response), the replies held until the last. */
void tp_out_run_batch(struct tp_host *h, struct client *c, json_t *arr,
		      void (*handle)(struct tp_host *, struct client *, struct tp_rpc *));
/* A request that gets no reply (a cancelled tools/call): its batch, or its
 * HTTP POST, stops waiting for it. */
void tp_out_unanswered(struct client *c, const json_t *id);
void tp_out_batches_free(struct client *c);

/* A bucket of per_minute tokens refilled continuously since *at (tp_now_ms):
 * takes one and returns 0, or returns the ms until one is back. */
static inline double tp_bucket_take(double *tokens, double *at, uint64_t per_minute, double now)
{
	*tokens += (now - *at) * (double)per_minute / 60000.0;
	if (*tokens > (double)per_minute)
		*tokens = (double)per_minute;
	*at = now;
	if (*tokens >= 1.0) {
		*tokens -= 1.0;
		return 0;
	}
	return (1.0 - *tokens) * 60000.0 / (double)per_minute;
}

/* The policies c's requests may name, and its default: its tenant's, or all. */
static inline const struct tp_exec_policies *tp_pols_of(const struct tp_host *h,
							const struct client *c)
{
	return c->tenant != NULL ? &c->tenant->pols : &h->pols;
}

/* Whose exec e is, for its audit line. */
static inline struct tp_audit_who tp_exec_who(const struct exec *e)
{
	return (struct tp_audit_who){ e->c != NULL && e->c->tenant ? e->c->tenant->name : NULL,
				      e->session_id[0] ? e->session_id : NULL };
}

/* answer.c: an exec's outcome recorded: its audit line and its metrics. */
void tp_record(struct tp_host *h, const struct tp_tenant *t, const struct tp_hpolicy *hp,
	       struct tp_audit_who who, const json_t *id, enum tp_lang_id lang, const char *code,
	       size_t code_len, const json_t *res, const char *kind, const json_t *tools);

/* metrics.c: counters kept as events happen, and the /metrics page. */
int tp_metrics_init(struct tp_host *h);
void tp_metrics_free(struct tp_host *h);
/* An exec's outcome (res: its result, or NULL with kind, e.g. "cancelled"). */
void tp_metrics_exec(struct tp_host *h, enum tp_lang_id lang, const struct tp_policy *p,
		     const struct tp_tenant *t, const json_t *res, const char *kind);
void tp_metrics_restart(struct tp_host *h, enum tp_lang_id lang);
/* A one-shot worker reaped after answering its exec: its whole life's CPU
 * (cpu_ms, from wait4) split by the page's stamps into phases, each held to
 * the total; stamps out of order count it as unmeasured instead. */
void tp_metrics_worker_cpu(struct tp_host *h, enum tp_lang_id lang, const struct tp_shm *shm,
			   uint64_t exec_cpu_us, double cpu_ms);
/* A zygote reaped: the CPU of its life (its forks), kept in the totals. */
void tp_metrics_zygote_cpu(struct tp_host *h, enum tp_lang_id lang, double cpu_ms);
/* A client closed: its byte counts are kept in the totals. */
void tp_metrics_bytes(struct tp_host *h, uint64_t in, uint64_t out);
/* The page, malloc'd (*len bytes), or NULL out of memory. */
char *tp_metrics_render(const struct tp_host *h, int ready, size_t *len);

/* tenant.c: --tokens FILE, the HTTP service's tenants and their quotas. */
int tp_tenants_load(struct tp_host *h, const char *path, struct tp_err *err);
/* The same from a file's text (path names it in messages): 0 with h->tenants
 * set, or -1 with err "--tokens PATH: ..." and no tenant. */
int tp_tenants_parse(struct tp_host *h, const char *text, size_t len, const char *path,
		     struct tp_err *err);
void tp_tenants_free(struct tp_host *h);
/* The tenant whose token this is (compared in constant time), or NULL. */
struct tp_tenant *tp_tenant_by_token(struct tp_host *h, const char *token, size_t len);
int tp_tenant_allows(const struct tp_tenant *t, const struct tp_policy *p);
/* 0: an exec may start now (counted); else ms until execs_per_minute allows one. */
double tp_tenant_admit(struct tp_tenant *t, double now);
/* Its execs in flight are as many as may wait (concurrent_execs's queue). */
int tp_tenant_queue_full(const struct tp_tenant *t);

/* client.c: clients as values; their list and lifetime. */
/* A new client of that kind on those fds (stdio: 0, 1; a socket: fd, fd),
 * appended to the host's list; NULL out of memory (nothing is closed then). */
struct client *tp_client_new(struct tp_host *h, enum tp_client_kind kind, int rfd, int wfd);
/* Takes c out of the list (its fds closed, its reading stopped); it is freed
 * now, or by the last tp_client_unref of an exec that still points at it. The
 * caller has cancelled its execs and ended its sessions (host.c). */
void tp_client_close(struct tp_host *h, struct client *c);
void tp_client_ref(struct client *c);
void tp_client_unref(struct client *c);
/* May any request still come (a client reading, or the listener)? */
int tp_client_accepting(const struct tp_host *h);
/* Grows the poll array to hold one more client; 0, or -1 out of memory. */
int tp_client_reserve(struct tp_host *h);
/* The poll array resized for clients and workers (the loop's fixed entries and
 * the zygotes' too), client_cap and poll_cap unchanged; 0, or -1 out of memory. */
int tp_poll_grow(struct tp_host *h, int clients, int workers);

/* listen.c: --listen unix:PATH. */
/* Binds and listens on spec ("unix:PATH") with the socket file's mode; -1 with
 * err on failure (an existing path that is not a stale socket is refused). */
int tp_listen_open(struct tp_host *h, const char *spec, unsigned mode, struct tp_err *err);
/* Accepts what connects (each a client, up to max_clients). */
void tp_listen_accept(struct tp_host *h);
void tp_listen_close(struct tp_host *h);

/* http.c: --listen http://127.0.0.1:PORT, MCP's Streamable HTTP transport. The
 * host's request handling, handed over so that http.c calls nothing above it. */
struct tp_http_ops {
	void (*line)(struct tp_host *h, struct client *c, const char *line, size_t len);
	void (*leave)(struct tp_host *h, struct client *c, const char *why);
};
int tp_http_open(struct tp_host *h, const char *spec, const struct tp_http_ops *ops,
		 struct tp_err *err);
/* The fd the loop polls for it (-1: none), its next timeout in ms (-1: none). */
int tp_http_fd(const struct tp_host *h);
double tp_http_next_timeout(const struct tp_host *h);
/* Serves what is ready; ends MCP sessions idle too long. */
void tp_http_run(struct tp_host *h);
int tp_http_is_open(const struct tp_host *h);
/* Its endpoint, http://ADDR:PORT/mcp (the port bound, when 0 was asked), or NULL. */
const char *tp_http_url(const struct tp_host *h);
void tp_http_close(struct tp_host *h);

/* workspace.c: sessions' workspaces on disk. */
int tp_ws_setup(struct tp_host *h, struct tp_err *err);
void tp_ws_teardown(struct tp_host *h);
/* Makes s's workspace; the O_PATH fd its worker gets (the caller closes it), 0
 * when its policy has none, -1 with msg on failure. */
int tp_ws_create(struct tp_host *h, struct session *s, char *msg, size_t len);
void tp_ws_remove(struct tp_host *h, struct session *s);
/* The bounds of every walk of a workspace: files listed, directories deep. */
#define TP_WS_MAX_FILES 1000
#define TP_WS_MAX_DEPTH 8
#define TP_WS_PATH_MAX (TP_WS_MAX_DEPTH * 256 + 16)
/* Opens the directory holding path's last name beneath root (creating the ones
 * on the way when create), never following a link; its fd (the caller closes
 * it) and the last name in *leaf, or -1 with errno. path: checked (files.c). */
int tp_ws_walk(int root, const char *path, int create, const char **leaf);
/* Reads the regular file at path beneath root (never a link, a FIFO, a
 * device): 0 with *bytes (malloc'd, NUL after its *n bytes); -1 with errno
 * ENOENT (no regular file there), EFBIG (larger than cap: *n its size) or
 * ENOMEM. */
int tp_ws_read(int root, const char *path, uint64_t cap, int64_t at, uint64_t *size,
	       unsigned char **bytes, size_t *n);
/* A file's bytes as {path, bytes, TEXT_KEY: its text} when as_text and they
 * are UTF-8, else {path, bytes, DATA_KEY: base64}; NULL out of memory. */
json_t *tp_ws_content(const char *path, const unsigned char *bytes, size_t n, int as_text,
		      const char *text_key, const char *data_key);
/* Every regular file beneath root, in readdir order, at most TP_WS_MAX_FILES
 * of them, TP_WS_MAX_DEPTH names deep; links, FIFOs and the like are never
 * followed, opened or listed. fn returns 0, or 1 when it could not keep the
 * file (out of memory: the scan is then not complete). */
typedef int (*tp_ws_visit)(void *ctx, const char *path, size_t len, const struct stat *st);
struct tp_ws_scan {
	size_t files; /* visited */
	int full;     /* TP_WS_MAX_FILES reached: a file left out */
	int hidden;   /* a file left out: beneath a directory too deep, or kept by no fn */
};
void tp_ws_scan(int root, tp_ws_visit fn, void *ctx, struct tp_ws_scan *out);
/* A session exec's files: the workspace's (path, size, mtime, inode) before
 * the exec is handed to its worker, and what changed when it ends. */
struct tp_ws_snap;
struct tp_ws_snap *tp_ws_snapshot(int root); /* NULL out of memory */
void tp_ws_snap_free(struct tp_ws_snap *s);
enum tp_ws_change_kind { TP_WS_CREATED, TP_WS_MODIFIED, TP_WS_DELETED };
typedef void (*tp_ws_change)(void *ctx, const char *path, size_t len, uint64_t size,
			     enum tp_ws_change_kind kind);
/* Walks root again and calls fn for each file created, modified or deleted
 * since the snapshot, in path order (bytes); size 0 for a deleted one. 0: both
 * walks saw every file; 1: one did not (more than TP_WS_MAX_FILES, or deeper),
 * and deletions are not told; -1 out of memory (fn may have been called). */
int tp_ws_changes(int root, struct tp_ws_snap *before, tp_ws_change fn, void *ctx);

/* files.c: sandbox/session/files/put, get, list, and the MCP file tools. */
void tp_files_method(struct tp_host *h, struct client *c, struct tp_rpc *rpc);
/* resources/read: a session's file by its tidepool://sessions/SID/files/PATH. */
void tp_files_resource_read(struct tp_host *h, struct client *c, struct tp_rpc *rpc);
/* tools/call of write_file, read_file or list_files (MCP: text in and out). */
void tp_files_mcp_tool(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
		       const char *name);

/* tools.c: the code's calls to the client's tools, through the host. */
void tp_tools_from_worker(struct tp_host *h, struct worker *w, const char *buf, size_t len);
/* A response from the client (rpc->response): the answer to one of our calls. */
void tp_tools_response(struct tp_host *h, struct client *c, const struct tp_rpc *rpc);
/* Answers w's pending tool call (if any) as refused: its exec is being stopped. */
void tp_tools_abort(struct tp_host *h, struct worker *w, const char *why);
/* What a tool call gets once the client has closed stdin. */
#define TP_MSG_NO_TOOL_CLIENT "the client closed stdin: its tools cannot answer"
#define TP_MSG_CLIENT_GONE "the client is gone: its tools cannot answer"

/* How long an exec asked to stop may take to return before it is killed. */
#define STOP_GRACE_MS 250.0

/* worker.c: a worker and its zygote, below sessions, tools and the pool. */
void tp_worker_kill(struct worker *w);
void tp_worker_flush_tx(struct worker *w);
void tp_worker_free(struct tp_host *h, struct worker *w);
/* A worker of zygote zi (session: a session's), or NULL (its language backs
 * off then: tp_zygote_failed). */
struct worker *tp_worker_spawn(struct tp_host *h, int zi, enum tp_spawn_kind kind, int ws_fd);
/* Grows the poll arrays to hold n more workers; 0, or -1 out of memory. */
int tp_worker_reserve(struct tp_host *h, int n);
/* Hands e to w (its request frame, its clocks); -1 out of memory. */
int tp_worker_assign(struct tp_host *h, struct exec *e, struct worker *w);
/* The normal priority for the worker that runs an exec. */
void tp_worker_boost(struct worker *w);
/* A session's exec: its CPU bound, by the kernel where the host may, else read. */
void tp_worker_bound_cpu(struct tp_host *h, struct worker *w);
/* One more consecutive failure of z's workers: its backoff (and after many,
 * its restart and its queue answered). */
void tp_zygote_failed(struct tp_host *h, struct zygote *z);
/* Sends what waits in z->unsent while its socket takes it: 0, or -1 when the
 * zygote cannot be written to (it is gone). */
int tp_zygote_flush(struct zygote *z);
/* Drops what waits in z->unsent (the zygote is gone). */
void tp_zygote_unsent_free(struct zygote *z);
int tp_zygote_backing_off(const struct zygote *z, double now);
/* Takes a queued exec out of the queue (the caller owns it then). */
void tp_queue_remove(struct tp_host *h, struct exec *e);

/* proc.c: a process's state letter and CPU time (utime+stime, ms) from
 * /proc/PID/stat, -1 when it cannot be read; and its CPU time exactly
 * (/proc/PID/schedstat, else stat's), -1 when neither reads. */
int tp_proc_stat(pid_t pid, char *state, double *cpu_ms);
double tp_proc_cpu_ms(pid_t pid);

/* pool.c: the warm pool, the dispatch queue, channels, reaping, timeouts. */
/* Asks w's running exec to stop (the page's stop, SIGUSR1), killing it if it
 * has not returned after STOP_GRACE_MS; kills at once a worker not yet born. */
void tp_pool_stop_worker(struct tp_host *h, struct worker *w);
int tp_pool_running(const struct tp_host *h);
void tp_pool_dispatch_queue(struct tp_host *h);
void tp_pool_read_chan(struct tp_host *h, struct worker *w);
void tp_pool_read_zygote(struct tp_host *h, struct zygote *z);
void tp_pool_reap(struct tp_host *h);
void tp_pool_check_timeouts(struct tp_host *h, double now);
int tp_pool_next_timeout(const struct tp_host *h, double now);

/* session.c: sessions over the methods sandbox/session/open, close and list. */
void tp_sess_open(struct tp_host *h, struct client *c, struct tp_rpc *rpc);
/* Opens a session; NULL with the JSON-RPC error code and message to answer. */
struct session *tp_sess_create(struct tp_host *h, struct client *c,
			       const struct tp_exec_session *es, int *code, char *msg, size_t len);
/* tools/call of list_sessions or close_session. */
void tp_sess_mcp_tool(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
		      const char *name);
void tp_sess_close(struct tp_host *h, struct client *c, struct tp_rpc *rpc);
void tp_sess_list(struct tp_host *h, struct client *c, struct tp_rpc *rpc);
/* c's open session of that id (another client's is not found). */
struct session *tp_sess_find(struct tp_host *h, const struct client *c, const char *id);
/* Ends every session c opened (it is closed or gone). */
void tp_sess_end_client(struct tp_host *h, struct client *c, const char *why);
/* Answers rpc with the unknown-session error (and why it ended, if it did). */
void tp_sess_unknown(struct tp_host *h, struct client *c, const json_t *rpc_id, const char *id);
/* Its text; tool: worded for an MCP tool's caller. */
void tp_sess_unknown_msg(const struct tp_host *h, const struct client *c, const char *id, int tool,
			 char *msg, size_t cap);
/* 0 when the session may take one more exec now; else answers rpc and returns
 * -1 (its max_execs or lifetime used up, or its rate: then *wait_ms > 0 and
 * nothing is answered). */
int tp_sess_admit(struct tp_host *h, struct session *s, const json_t *rpc_id, double *wait_ms);
/* Ends it: the worker is killed, queued execs are answered, why is kept. */
void tp_sess_end(struct tp_host *h, struct session *s, const char *why);
/* Its worker answered an exec and lives on: ready for the next. */
void tp_sess_exec_done(struct tp_host *h, struct worker *w);
void tp_sess_check_timeouts(struct tp_host *h, double now);
/* ms until the next session expiry (-1: none). */
double tp_sess_next_timeout(const struct tp_host *h, double now);
/* An idle session's worker: the one waiting for the next exec. */
int tp_sess_worker_idle(const struct worker *w);
/* The idle watch (session.c). A session's worker is idle only as the kernel
 * sees it: after its reply it may use at most IDLE_CPU_TOLERANCE_MS of CPU
 * until its next exec, and it is handed that exec only while it sleeps. */
#define IDLE_CPU_TOLERANCE_MS 100.0
#define IDLE_WATCH_MS 500.0 /* an idle session's worker is read this often */
#define IDLE_RETRY_MS 10.0  /* an exec waiting for its worker to sleep: read again */
/* An idle session's worker may be handed its next exec now: it sleeps (state
 * S in /proc/PID/stat) or has never run the client's code. */
int tp_sess_worker_waiting(const struct worker *w);
/* The zygote told w's pid: a session's worker that replied before it is
 * watched from now. */
void tp_sess_worker_born(struct worker *w);
/* Reads the CPU time of idle sessions' workers (those due at now; and those
 * with an exec waiting, or all) and ends each session whose worker ran while
 * idle, answering its queued execs crashed. */
enum tp_watch { TP_WATCH_DUE, TP_WATCH_QUEUED, TP_WATCH_ALL };
void tp_sess_watch(struct tp_host *h, double now, enum tp_watch which);

/* The zygote's one-shot execs may run with isolation "state" (its policy says
 * so, and its language has it). */
static inline int tp_zygote_state(const struct tp_host *h, int zi)
{
	const struct zygote *z = &h->zyg[zi];
	return z->lang->id == TP_LANG_LUA && strcmp(z->policy->isolation, "state") == 0;
}

/* stream.c: sandbox/output notifications of an exec's new output ("stream":
 * true) and MCP notifications/progress (a tools/call's _meta.progressToken). */
#define STREAM_TICK_MS 50.0      /* a streaming exec's page is read this often */
#define STREAM_CHUNK (64u << 10) /* the most output bytes one notification carries */
#define PROGRESS_MS 500.0        /* progress: the first this long after the call, then every */
/* While this much waits on stdout, an exec's stream notifications stop for
 * good (its reply has the output) and progress notifications are skipped. */
#define STREAM_MAX_PENDING (MAX_OUT_PENDING / 4)
/* Sends what is due at now: new output of streaming execs, progress. */
void tp_stream_tick(struct tp_host *h, double now);
/* Before e's reply: the rest of its output, read from v, the reply's own view. */
void tp_stream_flush(struct exec *e, const struct tp_shm_view *v);
/* ms until the next tick is due (-1: nothing to say). */
double tp_stream_next_timeout(const struct tp_host *h, double now);

/* answer.c: an exec's one reply; its end; the loop's clock. */
double tp_now_ms(void);
void tp_exec_free(struct exec *e);
/* An exec's result (stolen; NULL when out of memory), as sandbox/exec's reply
 * or in the tools/call shape (tool), with items (stolen, or NULL) after its
 * content. */
void tp_answer_reply(struct client *c, json_t *id, const json_t *params, int tool, json_t *res,
		     json_t *items);
/* Sends the exec's one reply, built from everything known about the worker and
 * err, the host's own verdict (NULL when it has none; a timeout recorded in the
 * exec before wins over it). */
void tp_answer_finish(struct tp_host *h, struct worker *w, const struct tp_err *err);
/* Whether e's answer may carry its value as the worker's bytes (no
 * redaction, written at once): its reply may then be decoded lazily. */
int tp_answer_splices(const struct tp_host *h, const struct exec *e);
/* Answers an exec that never ran (cancelled while queued) with its verdict. */
void tp_answer_unrun(struct tp_host *h, struct exec *e);
/* A tools/call's answer: res (stolen; NULL when out of memory) stamped for the
 * request's era (mcp.h) and sent. */
void tp_answer_tool_reply(struct client *c, json_t *id, const json_t *params, json_t *res);

#endif
