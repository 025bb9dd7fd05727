/*
 * host.h — the host: one event loop over its clients (stdin and stdout, and
 * the connections to its listener), worker channels, the zygotes, child exits
 * and timers. It never runs untrusted code.
 *
 * Usage:
 *   1. tp_host_new(cfg, &err): starts nothing yet; the zygote starts on first use.
 *   2. Either serve stdin (cfg.use_stdin) or inject lines with tp_host_line().
 *   3. tp_host_run() loops until stdin is closed and nothing listens (or,
 *      without stdin, until nothing is in flight) and every reply is written;
 *      with a listener, until SIGTERM or SIGINT; returns an exit code.
 *   4. tp_host_free() kills what is left.
 */
#ifndef TP_HOST_H
#define TP_HOST_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "host_cfg.h"
#include "policy.h"

struct tp_host;
struct client;

/* Defaults: jobs = the CPUs this process may run on, max_queue 256. */
void tp_host_default_cfg(struct tp_host_cfg *cfg);
/* Sets jobs and the worker ceiling that follows from it. */
void tp_host_cfg_jobs(struct tp_host_cfg *cfg, int jobs);
/* NULL with err recorded (out of memory, the signalfd) when it cannot start. */
struct tp_host *tp_host_new(const struct tp_host_cfg *cfg, struct tp_err *err);
void tp_host_line(struct tp_host *h, const char *line, size_t len);
int tp_host_run(struct tp_host *h);
void tp_host_free(struct tp_host *h);
/* The host's log on stderr: "tidepool: msg" lines, or JSON lines
 * ({"time", "level", "msg"}) once tp_host_log_json() was called. */
void tp_host_log_json(void);
void tp_host_log(const char *msg);
/* The HTTP service's endpoint, http://ADDR:PORT/mcp, or NULL when it has none. */
const char *tp_host_http_url(const struct tp_host *h);

/* The registry of JSON-RPC methods (host.c): each handled or sent method. */
struct tp_rpc;
enum tp_method_kind {
	TP_METHOD_REQUEST,      /* answered; sent without an id, it is ignored */
	TP_METHOD_ANY,          /* handled with or without an id */
	TP_METHOD_NOTIFICATION, /* a client's notification that needs nothing */
	TP_METHOD_SENT,         /* one tidepool sends to the client */
};
struct tp_method {
	const char *name;
	void (*fn)(struct tp_host *h, struct client *c, struct tp_rpc *rpc); /* NULL: not handled */
	enum tp_method_kind kind;
	const char *summary;
};
const struct tp_method *tp_host_methods(size_t *n);

#endif
