/*
 * host_cfg.h — what a host is started with (struct tp_host_cfg) and its
 * bounds: host.h's, and the host's own files' (host_int.h), which include this
 * rather than host.h so that nothing inside host/ points back at host.c.
 */
#ifndef TP_HOST_CFG_H
#define TP_HOST_CFG_H

#include <jansson.h>
#include <stddef.h>

#include "policy.h"

struct tp_host_cfg {
	int use_stdin;
	size_t max_line;
	int pool_size;   /* warm workers kept ready per language in use */
	int jobs;        /* execs running at once at most (--jobs; default: the CPUs) */
	int max_queue;   /* execs waiting at most; past it a request is answered busy */
	int max_workers; /* live one-shot workers at most (warm + running) */
	/* Where replies go; NULL writes JSON lines to stdout. Steals msg. */
	void (*emit)(void *ctx, json_t *msg);
	void *emit_ctx;
	/* The policies requests may name (borrowed; NULL: the built-in presets) and
	 * the one a request gets when it names none (NULL: "standard"). */
	const struct tp_policy_set *policies;
	const struct tp_policy *policy;
	const char *audit_path; /* append one JSON line per exec here (NULL: none) */
	/* --listen unix:PATH: a socket many clients connect to (NULL: none), its
	 * file's mode (the access control), and how many may be connected. */
	const char *listen;
	const char *listen_http; /* --listen http://ADDR:PORT (NULL: none) */
	const char *tokens;      /* --tokens FILE: the HTTP service's tenants (NULL: none) */
	int playground;  /* tidepool playground: the HTTP service serves its page at / too */
	double drain_ms; /* SIGTERM lets execs in flight finish this long (0: cancel at once) */
	unsigned listen_mode;
	int max_clients;
	const char *workspace_dir; /* where sessions' workspaces go (NULL: $TMPDIR or /tmp) */
};

#define TP_MAX_QUEUE_DEFAULT 256
#define TP_MAX_JOBS 1024
#define TP_MAX_CLIENTS_DEFAULT 64
#define TP_MAX_CLIENTS 4096

#endif
