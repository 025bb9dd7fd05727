/*
 * exec_params.h — the parameters of one exec, read from a request. Pure.
 *
 * Usage:
 *   1. tp_exec_params_parse() reads sandbox/exec's params, tp_exec_params_parse_tool()
 *      tools/call's name and arguments; both start from the ceiling of the
 *      policy the request names (sandbox/exec's "policy", one of the host's
 *      set) or else the host's default policy. Nothing in a request loosens a
 *      policy: limits may only be lowered, and the language must be one the
 *      policy allows.
 *   2. On -1, answer with an invalid-params error carrying err's message (the
 *      error is TP_KIND_INPUT_ERROR at TP_LAYER_HOST).
 *   3. code and inputs are borrowed: keep the request alive while they are used.
 */
#ifndef TP_EXEC_PARAMS_H
#define TP_EXEC_PARAMS_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "langs.h"
#include "limit.h"
#include "policy.h"

/* The policies a request may name, and the one it gets when it names none;
 * with allowed, only those of the set (a tenant's, named owner). */
struct tp_exec_policies {
	const struct tp_policy_set *set;
	const struct tp_policy *deflt;
	const struct tp_policy *const *allowed; /* NULL: the whole set */
	size_t nallowed;
	const char *owner;
};

/* What a session fixes for every exec in it (session.c): an exec in a session
 * runs in its language under its policy, and its limits lower the session's. */
struct tp_exec_session {
	enum tp_lang_id lang;
	const struct tp_policy *policy;
	struct tp_limits ceiling;
};

struct tp_exec_params {
	enum tp_lang_id lang;
	const struct tp_policy *policy; /* one of the set: never NULL after a parse */
	const char *code;               /* borrowed from the request */
	size_t code_len;
	json_t *inputs; /* borrowed; NULL when absent */
	struct tp_limits limits;
	int has_seed;
	long long seed;
	int tool_call;          /* 1: answer in the MCP tools/call shape */
	int session_new;        /* tools/call with session "new": open one for this exec */
	const char *session_id; /* borrowed; NULL: one-shot */
	int stream;             /* sandbox/exec's "stream": true (host/stream.c) */
	json_t *progress_token; /* tools/call's _meta.progressToken (borrowed), or NULL */
	int state;              /* isolation "state": a reused worker, a fresh Lua state */
};

/* The session_id an exec names (a string), or NULL; -1 when it is not a string. */
int tp_exec_params_session_id(const json_t *params, const char **id, struct tp_err *err);

/* Returns 0, or -1 with an invalid-params message recorded in err. sess is the
 * session the params name (found by the caller from their session_id), or NULL. */
int tp_exec_params_parse(const json_t *params, const struct tp_exec_policies *pols,
			 const struct tp_exec_session *sess, struct tp_exec_params *out,
			 struct tp_err *err);
/* -1: bad arguments (an isError tool result); -2: a fault of the call itself
 * (an unknown tool, a bad _meta: a JSON-RPC error), as tp_exec_params_tool_meta(). */
int tp_exec_params_parse_tool(const json_t *params, const struct tp_exec_policies *pols,
			      const struct tp_exec_session *sess, struct tp_exec_params *out,
			      struct tp_err *err);
/* tools/call's name and _meta, apart from its arguments: -1 for an unknown
 * tool or a bad _meta. */
int tp_exec_params_tool_meta(const json_t *params, struct tp_err *err);
/* tools/call's arguments.session: NULL (none), "new", or a session's id; -1
 * when it is not a string. */
int tp_exec_params_tool_session(const json_t *params, const char **session, struct tp_err *err);

/* sandbox/session/open's params {lang, policy?, limits?}: the session's
 * language, policy and ceiling (the policy's limits, memory_bytes from its
 * session section, lowered by limits). 0, or -1 as above. */
int tp_session_params_parse(const json_t *params, const struct tp_exec_policies *pols,
			    struct tp_exec_session *out, struct tp_err *err);

#endif
