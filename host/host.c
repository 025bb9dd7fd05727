/*
 * host.c — the requests and the event loop. Invariants: nothing here blocks
 * (clients and worker channels are written only when poll says so), nothing
 * here exits on bad input, every exec gets exactly one reply (none when
 * cancelled), and it goes to the client that sent the request, never another.
 */
#include "host_int.h"
#include "host.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "exec_params.h"
#include "hpolicy.h"
#include "jsonio.h"
#include "jsonrpc.h"
#include "langs.h"
#include "mcp.h"
#include "pcheck.h"
#include "result.h"
#include "spawn.h"

/* ---- requests --------------------------------------------------------------- */

/* c's exec of that request id (each client has its own id space). */
static struct exec *find_exec(struct tp_host *h, const struct client *c, const json_t *id,
			      struct worker **wp)
{
	for (struct exec *e = h->qhead; e != NULL; e = e->next)
		if (e->c == c && e->id != NULL && json_equal(e->id, (json_t *)id)) {
			*wp = NULL;
			return e;
		}
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered && w->exec->c == c && w->exec->id != NULL &&
		    json_equal(w->exec->id, (json_t *)id)) {
			*wp = w;
			return w->exec;
		}
	return NULL;
}

/* notifications/cancelled: an MCP call gets no reply (the spec); a native exec
 * gets its result with kind cancelled and the output so far. A queued exec
 * never starts. A running one-shot exec is killed; a session's is asked to
 * stop, and killed only if it has not after STOP_GRACE_MS, so the session
 * lives on when the interrupt works. */
static void cancel_exec(struct tp_host *h, struct exec *e, struct worker *w, const char *why)
{
	if (e->cancelled)
		return;
	if (e->p.tool_call) {
		e->cancelled = 1;
		tp_out_unanswered(e->c, e->id); /* it gets no reply */
	}
	if (!tp_err_failed(&e->verdict))
		tp_err_set(&e->verdict, TP_KIND_CANCELLED, TP_LAYER_HOST, 0, "%s", why);
	if (w == NULL) {
		tp_queue_remove(h, e);
		if (!e->cancelled)
			tp_answer_unrun(h, e);
		else
			tp_record(h, e->c->tenant, &h->hp[e->zi / TP_NLANGS], tp_exec_who(e), e->id,
				  e->p.lang, e->p.code, e->p.code_len, NULL, "cancelled",
				  e->tool_log);
		tp_exec_free(e);
	} else if (w->sess != NULL) {
		tp_pool_stop_worker(h, w);
	} else {
		tp_worker_kill(w);
	}
}

static void cancel(struct tp_host *h, struct client *c, const json_t *params)
{
	struct worker *w;
	json_t *id = json_object_get(params, "requestId");
	struct exec *e = id ? find_exec(h, c, id, &w) : NULL;
	if (e != NULL) /* else already answered, or never seen: nothing to stop */
		cancel_exec(h, e, w, "cancelled by the client (notifications/cancelled)");
}

/* SIGTERM, SIGINT, or a client that is gone: every exec in flight (of client
 * c, or of all when c is NULL) stops now. A queued one is answered cancelled
 * at once; a running one's worker is killed and its exec answered from what
 * the host knows (the output so far), without waiting for the reap, so the
 * host can exit at once. A tools/call gets no reply, as under a cancel; every
 * exec gets its audit line. Returns how many stopped. */
static int stop_all(struct tp_host *h, const struct client *c, const char *why)
{
	int n = 0;
	for (struct exec *e = h->qhead, *next; e != NULL; e = next) {
		next = e->next;
		if (c != NULL && e->c != c)
			continue;
		cancel_exec(h, e, NULL, why);
		n++;
	}
	for (struct worker *w = h->workers; w != NULL; w = w->next) {
		struct exec *e = w->exec;
		if (e == NULL || w->answered || (c != NULL && e->c != c))
			continue;
		if (e->p.tool_call && !e->cancelled) {
			e->cancelled = 1;
			tp_out_unanswered(e->c, e->id);
		}
		if (!tp_err_failed(&e->verdict))
			tp_err_set(&e->verdict, TP_KIND_CANCELLED, TP_LAYER_HOST, 0, "%s", why);
		if (w->pid > 0 && !w->exited)
			kill(w->pid, SIGKILL);
		tp_answer_finish(h, w, NULL);
		n++;
	}
	return n;
}

/* An exec over its policy's rate is answered at once, as a result the model
 * reads (not a protocol error), and logged. */
static void rate_limited(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
			 const struct tp_exec_params *p, const struct tp_hpolicy *hp, double wait,
			 int session)
{
	struct tp_err err = { 0 };
	long long secs = (long long)((wait + 999) / 1000);
	if (session)
		tp_err_set(&err, TP_KIND_RATE_LIMIT, TP_LAYER_HOST, 0,
			   "rate limit: %llu execs per minute in one session under policy '%s'; "
			   "retry in %lld s",
			   (unsigned long long)hp->p->rate.session_per_minute, hp->p->name, secs);
	else
		tp_err_set(&err, TP_KIND_RATE_LIMIT, TP_LAYER_HOST, 0,
			   "rate limit: %llu execs per minute under policy '%s'; retry in %lld s",
			   (unsigned long long)hp->p->rate.per_minute, hp->p->name, secs);
	struct tp_outcome o = { .host = &err,
				.limits = &p->limits,
				.policy = hp->p->name,
				.rule = session ? "rate.session_per_minute" : "rate.per_minute" };
	json_t *res = tp_result_build(&o);
	json_t *eo = json_object_get(res, "error");
	if (json_is_object(eo))
		json_object_set_new(eo, "retry_after_ms", json_integer((json_int_t)wait));
	if (res != NULL && p->session_id != NULL) { /* not run: the session is as it was */
		json_object_set_new(res, "session_id", json_string(p->session_id));
		json_object_set_new(res, "session_lost", json_false());
	}
	res = tp_hpolicy_redact(hp, res);
	tp_record(h, c->tenant, hp,
		  (struct tp_audit_who){ c->tenant ? c->tenant->name : NULL, p->session_id },
		  rpc->id, p->lang, p->code, p->code_len, res, "rate_limit", NULL);
	tp_answer_reply(c, rpc->id, rpc->params, p->tool_call, res, NULL);
}

/* A tools/call whose arguments are wrong: a result the model reads and can
 * correct its call from (MCP 2025-11-25), not a JSON-RPC error. */
static void tool_refused(struct client *c, const struct tp_rpc *rpc, const char *msg)
{
	tp_answer_tool_reply(c, rpc->id, rpc->params, tp_mcp_tool_text(msg));
}

/* A refusal of start_exec's: an isError result for a tool's arguments, else
 * the JSON-RPC error code. */
static void refused(struct client *c, const struct tp_rpc *rpc, int tool, int code, const char *msg)
{
	if (tool)
		tool_refused(c, rpc, msg);
	else
		tp_out_error(c, rpc->id, code, msg);
}

/* An exec over its tenant's execs_per_minute, or past what its tenant may have
 * waiting: answered at once, not run (tenant.c). 1 when refused. */
static int over_quota(struct tp_host *h, struct client *c, const struct tp_rpc *rpc, struct exec *e)
{
	struct tp_tenant *t = c->tenant;
	struct tp_err err = { 0 };
	if (t == NULL)
		return 0;
	if (tp_tenant_queue_full(t)) {
		char msg[256];
		snprintf(msg, sizeof msg,
			 "busy: tenant '%s' has %llu execs running or waiting, the most its "
			 "concurrent_execs quota (%llu) lets wait; retry later",
			 t->name, (unsigned long long)t->in_flight,
			 (unsigned long long)t->q.concurrent_execs);
		tp_out_error(c, rpc->id, TP_RPC_BUSY, msg);
		return 1;
	}
	double wait = tp_tenant_admit(t, tp_now_ms());
	if (wait <= 0)
		return 0;
	tp_err_set(&err, TP_KIND_RATE_LIMIT, TP_LAYER_HOST, 0,
		   "quota: %llu execs per minute for tenant '%s' (execs_per_minute); retry in "
		   "%lld s",
		   (unsigned long long)t->q.execs_per_minute, t->name,
		   (long long)((wait + 999) / 1000));
	struct tp_outcome o = { .host = &err,
				.limits = &e->p.limits,
				.policy = e->p.policy->name,
				.rule = "quota.execs_per_minute" };
	json_t *res = tp_result_build(&o);
	json_t *eo = json_object_get(res, "error");
	if (json_is_object(eo))
		json_object_set_new(eo, "retry_after_ms", json_integer((json_int_t)wait));
	if (res != NULL && e->p.session_id != NULL) {
		json_object_set_new(res, "session_id", json_string(e->p.session_id));
		json_object_set_new(res, "session_lost", json_false());
	}
	struct tp_hpolicy *hp = &h->hp[tp_policy_set_index(h->pols.set, e->p.policy)];
	res = tp_hpolicy_redact(hp, res);
	tp_record(h, t, hp, (struct tp_audit_who){ t->name, e->p.session_id }, rpc->id, e->p.lang,
		  e->p.code, e->p.code_len, res, "rate_limit", NULL);
	tp_answer_reply(c, rpc->id, rpc->params, e->p.tool_call, res, NULL);
	return 1;
}

static void start_exec(struct tp_host *h, struct client *c, struct tp_rpc *rpc, int tool)
{
	struct tp_err err = { 0 };
	struct exec *e;
	struct session *s = NULL;
	struct tp_exec_session es;
	const char *sid = NULL;
	char msg[TP_ERR_MSG_MAX];
	if (rpc->id == NULL)
		return; /* an exec nobody can hear about is not run */
	const char *tname = tool ? json_string_value(json_object_get(rpc->params, "name")) : NULL;
	/* An unknown tool or a bad _meta is a fault of the call: -32602. */
	if (tool && tp_exec_params_tool_meta(rpc->params, &err) != 0) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, err.msg);
		return;
	}
	int r = tool ? tp_exec_params_tool_session(rpc->params, &sid, &err)
		     : tp_exec_params_session_id(rpc->params, &sid, &err);
	if (r != 0) {
		refused(c, rpc, tool, TP_RPC_INVALID_PARAMS, err.msg);
		return;
	}
	int fresh = tool && sid != NULL && strcmp(sid, "new") == 0;
	if (fresh) {
		/* MCP: open one for this call, under the default policy, in the tool's
		 * language (known: checked above). */
		const struct tp_lang_info *l = tp_langs_by_tool(tname);
		struct tp_err why = { 0 };
		json_t *open = json_pack("{s:s}", "lang", l->name);
		int code = TP_RPC_INVALID_PARAMS;
		if (open != NULL && tp_session_params_parse(open, tp_pols_of(h, c), &es, &why) == 0)
			s = tp_sess_create(h, c, &es, &code, msg, sizeof msg);
		else
			snprintf(msg, sizeof msg, "%s", open ? why.msg : "out of memory");
		json_decref(open);
		if (s == NULL) {
			refused(c, rpc, tool, code, msg);
			return;
		}
	} else if (sid != NULL && (s = tp_sess_find(h, c, sid)) == NULL) {
		if (!tool) {
			tp_sess_unknown(h, c, rpc->id, sid);
			return;
		}
		tp_sess_unknown_msg(h, c, sid, 1, msg, sizeof msg);
		tool_refused(c, rpc, msg);
		return;
	}
	if (s != NULL)
		es = (struct tp_exec_session){ .lang = h->zyg[s->zi].lang->id,
					       .policy = h->zyg[s->zi].policy,
					       .ceiling = s->ceiling };
	e = calloc(1, sizeof *e);
	if (e == NULL) {
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
		goto refused;
	}
	r = tool ? tp_exec_params_parse_tool(rpc->params, tp_pols_of(h, c), s ? &es : NULL, &e->p,
					     &err)
		 : tp_exec_params_parse(rpc->params, tp_pols_of(h, c), s ? &es : NULL, &e->p, &err);
	if (r != 0) {
		refused(c, rpc, tool && r == -1, TP_RPC_INVALID_PARAMS, err.msg);
		goto refused;
	}
	if (fresh)
		e->p.session_id = s->id;
	if (h->queued >= h->cfg.max_queue) {
		snprintf(msg, sizeof msg,
			 "busy: %d execs are waiting, the most this tidepool queues (--queue); "
			 "retry later",
			 h->queued);
		tp_out_error(c, rpc->id, TP_RPC_BUSY, msg);
		goto refused;
	}
	double swait = 0;
	if (s != NULL && tp_sess_admit(h, s, rpc->id, &swait) != 0) {
		if (swait > 0) /* its rate: a result, as the policy's rate */
			rate_limited(h, c, rpc, &e->p, &h->hp[s->zi / TP_NLANGS], swait, 1);
		goto refused;
	}
	size_t pi = tp_policy_set_index(h->pols.set, e->p.policy);
	struct tp_hpolicy *hp = &h->hp[pi];
	if (!hp->kernel_ok) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, hp->why);
		goto refused;
	}
	if (over_quota(h, c, rpc, e))
		goto refused;
	double wait = tp_hpolicy_admit(hp, tp_now_ms());
	if (wait > 0) {
		rate_limited(h, c, rpc, &e->p, hp, wait, 0);
		goto refused;
	}
	e->msg = json_incref(rpc->msg);
	e->id = rpc->id;
	e->c = c;
	tp_client_ref(c);
	if ((e->tenant = c->tenant) != NULL)
		e->tenant->in_flight++;
	e->t_arrival = tp_now_ms();
	e->next_progress = e->t_arrival + PROGRESS_MS;
	e->zi = (int)tp_policy_set_index(h->pols.set, e->p.policy) * TP_NLANGS + (int)e->p.lang;
	if (s != NULL) {
		e->sess = s;
		s->accepted++;
		snprintf(e->session_id, sizeof e->session_id, "%s", s->id);
	}
	h->zyg[e->zi].used = 1;
	if (h->qtail != NULL)
		h->qtail->next = e;
	else
		h->qhead = e;
	h->qtail = e;
	h->queued++;
	tp_pool_dispatch_queue(h);
	return;
refused:
	free(e);
	if (fresh) /* nothing will run in it: it never was */
		tp_sess_end(h, s, "its first call was refused");
}

/* ---- policies: which there are, and what one allows ---------------------------- */

/* Whether c may name p: a tenant sees only its own policies. */
static int visible(const struct client *c, const struct tp_policy *p)
{
	return c->tenant == NULL || tp_tenant_allows(c->tenant, p);
}

static void policy_list(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < tp_policy_set_count(h->pols.set); i++) {
		const struct tp_policy *p = tp_policy_set_at(h->pols.set, i);
		if (visible(c, p))
			json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b}", "name", p->name,
							   "description", p->description, "source",
							   p->source, "default",
							   p == tp_pols_of(h, c)->deflt));
	}
	json_t *r = a ? json_pack("{s:o}", "policies", a) : NULL;
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

/* The effective policy; redact shows only how much it holds, never a secret. */
static void policy_get(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	json_t *name = json_object_get(rpc->params, "name");
	const struct tp_policy *p =
	    json_is_string(name) ? tp_policy_set_find(h->pols.set, json_string_value(name)) : NULL;
	if (p != NULL && !visible(c, p))
		p = NULL; /* another tenant's: as if there were none */
	if (!json_is_object(rpc->params) || !json_is_string(name) ||
	    json_object_size(rpc->params) != 1) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "params must be {\"name\": a policy's name}");
		return;
	}
	if (p == NULL) {
		char msg[160];
		snprintf(msg, sizeof msg, "unknown policy '%.64s' (sandbox/policy/list names them)",
			 json_string_value(name));
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, msg);
		return;
	}
	json_t *r = tp_policy_to_json(p, 0);
	json_t *env = json_array();
	for (size_t i = 0; env != NULL && i < p->redact_env.n; i++)
		json_array_append_new(env, json_string(p->redact_env.v[i]));
	if (r != NULL) {
		json_object_set_new(r, "source", json_string(p->source));
		json_object_set_new(r, "default", json_boolean(p == tp_pols_of(h, c)->deflt));
		json_object_set_new(r, "redact",
				    json_pack("{s:I, s:I, s:o}", "strings",
					      (json_int_t)p->redact_strings.n, "patterns",
					      (json_int_t)p->redact_patterns.n, "env", env));
	} else {
		json_decref(env);
	}
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

/* Whether the policy a text extends is one c may not see (another tenant's):
 * the text is then checked against the presets alone, as if it were none. */
static int extends_hidden(const struct tp_host *h, const struct client *c, const char *text,
			  size_t len)
{
	struct tp_err err = { 0 };
	if (c->tenant == NULL)
		return 0;
	struct tp_policy *q = tp_policy_parse(text, len, "policy", &err);
	const struct tp_policy *parent =
	    q != NULL && q->extends != NULL ? tp_policy_set_find(h->pols.set, q->extends) : NULL;
	int hidden = parent != NULL && !visible(c, parent);
	tp_policy_free(q);
	return hidden;
}

/* A policy's text judged as `tidepool policy check` judges a file: its errors
 * with line and column, or its effective policy. Never loaded: what is checked
 * here cannot be named by an exec. */
static void policy_check(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	json_t *text = json_object_get(rpc->params, "text");
	char msg[160];
	if (!json_is_object(rpc->params) || !json_is_string(text) ||
	    json_object_size(rpc->params) != 1) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "params must be {\"text\": a policy's JSON text}");
		return;
	}
	const char *s = json_string_value(text);
	size_t len = json_string_length(text);
	if (len > TP_PCHECK_MAX_TEXT) {
		snprintf(msg, sizeof msg, "text is %zu bytes; a policy to check is at most %u", len,
			 TP_PCHECK_MAX_TEXT);
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, msg);
		return;
	}
	struct tp_err err = { 0 };
	struct tp_policy_set *presets =
	    extends_hidden(h, c, s, len) ? tp_policy_set_new(&err) : NULL;
	json_t *r = tp_err_failed(&err) ? NULL : tp_pcheck(presets ? presets : h->pols.set, s, len);
	tp_policy_set_free(presets);
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

/* An MCP result that needs no worker, stamped for the request's era. */
static void mcp_reply(struct client *c, const struct tp_rpc *rpc, json_t *res)
{
	res = tp_mcp_stamp(res, rpc->params);
	if (res == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, res));
}

static void initialize(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	const char *v = tp_mcp_initialize_version(rpc->params);
	if (v == NULL) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "Invalid params: initialize needs protocolVersion, a string");
		return;
	}
	snprintf(c->mcp_version, sizeof c->mcp_version, "%s", v);
	mcp_reply(c, rpc, tp_mcp_initialize(v, tp_pols_of(h, c)->deflt));
}

/* tools/list has one page: a cursor can only be one we never gave. */
static void tools_list(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	json_t *cursor = json_object_get(rpc->params, "cursor");
	if (cursor != NULL) {
		char msg[160];
		snprintf(msg, sizeof msg, "Invalid params: unknown cursor%s%.64s%s",
			 json_is_string(cursor) ? " '" : "",
			 json_is_string(cursor) ? json_string_value(cursor) : "",
			 json_is_string(cursor) ? "' (tools/list has one page)"
						: " (tools/list has one page)");
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, msg);
		return;
	}
	mcp_reply(c, rpc, tp_mcp_tools_list(tp_pols_of(h, c)->deflt, tp_mcp_modern(rpc->params)));
}

/* resources/list: none listed (a session's files come as links in its tool
 * results, read with resources/read), on one page. */
static void resources_list(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	(void)h;
	if (json_object_get(rpc->params, "cursor") != NULL) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "Invalid params: unknown cursor (resources/list has one page)");
		return;
	}
	mcp_reply(c, rpc, tp_mcp_resources_list(tp_mcp_modern(rpc->params)));
}

static void exec_native(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	start_exec(h, c, rpc, 0);
}

/* tools/call, routed by mcp.c's registry: a session's or a workspace's tool,
 * else an exec (whose parameters name an unknown tool: -32602). */
static void exec_tool(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	struct tp_mcp_tool t;
	const char *name = json_string_value(json_object_get(rpc->params, "name"));
	int found = rpc->id != NULL && tp_mcp_tool_find(tp_pols_of(h, c)->deflt, name, &t) == 0;
	if (found && t.kind == TP_MCP_TOOL_SESSIONS)
		tp_sess_mcp_tool(h, c, rpc, t.name);
	else if (found && t.kind == TP_MCP_TOOL_FILES)
		tp_files_mcp_tool(h, c, rpc, t.name);
	else
		start_exec(h, c, rpc, 1);
}

static void cancelled(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	cancel(h, c, rpc->params);
}

static void discover(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	mcp_reply(c, rpc, tp_mcp_discover(tp_pols_of(h, c)->deflt));
}

static void ping(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	(void)h;
	mcp_reply(c, rpc, json_object());
}

/* The registry: every method tidepool handles, and every one it sends, with
 * what it is. Dispatch reads it; so do the man page's and docs/protocol.md's
 * method lists, which tests/unit/test_methods.c holds to it. Adding a method
 * is one row here (and its handler). MCP's tools are mcp.c's registry. */
static const struct tp_method methods[] = {
	{ "initialize", initialize, TP_METHOD_REQUEST, "MCP: the handshake; picks the revision" },
	{ "notifications/initialized", NULL, TP_METHOD_NOTIFICATION, "MCP: needs nothing" },
	{ "server/discover", discover, TP_METHOD_REQUEST,
	  "MCP 2026-07-28: what the server offers" },
	{ "ping", ping, TP_METHOD_REQUEST, "{}" },
	{ "tools/list", tools_list, TP_METHOD_REQUEST, "MCP: the tools (mcp.c's registry)" },
	{ "tools/call", exec_tool, TP_METHOD_ANY, "MCP: a tool's call: an exec, or a session's" },
	{ "resources/list", resources_list, TP_METHOD_REQUEST,
	  "MCP: none listed (a session's files come as links)" },
	{ "resources/read", tp_files_resource_read, TP_METHOD_REQUEST,
	  "MCP: a session's file by its tidepool:// URI" },
	{ "notifications/cancelled", cancelled, TP_METHOD_ANY, "stops a request's exec" },
	{ "sandbox/exec", exec_native, TP_METHOD_ANY, "runs a snippet; its result" },
	{ "sandbox/policy/list", policy_list, TP_METHOD_REQUEST, "the policies there are" },
	{ "sandbox/policy/get", policy_get, TP_METHOD_REQUEST, "one effective policy" },
	{ "sandbox/policy/check", policy_check, TP_METHOD_REQUEST,
	  "validates a policy's text, never loads it" },
	{ "sandbox/session/open", tp_sess_open, TP_METHOD_REQUEST, "opens a session" },
	{ "sandbox/session/close", tp_sess_close, TP_METHOD_REQUEST, "ends a session" },
	{ "sandbox/session/list", tp_sess_list, TP_METHOD_REQUEST, "the client's open sessions" },
	{ "sandbox/session/files/put", tp_files_method, TP_METHOD_REQUEST, "writes a file" },
	{ "sandbox/session/files/get", tp_files_method, TP_METHOD_REQUEST, "reads a file" },
	{ "sandbox/session/files/list", tp_files_method, TP_METHOD_REQUEST, "lists the files" },
	{ "sandbox/output", NULL, TP_METHOD_SENT, "new output of a streaming exec" },
	{ "sandbox/tool_call", NULL, TP_METHOD_SENT, "the code calls one of the client's tools" },
	{ "notifications/progress", NULL, TP_METHOD_SENT, "MCP: a tools/call still runs" },
};

const struct tp_method *tp_host_methods(size_t *n)
{
	*n = sizeof methods / sizeof methods[0];
	return methods;
}

/* What a draining host refuses: a request that would start an exec or a
 * session. Everything else (a tool's answer, a cancel, reading a session's
 * files, listing) is still served while in flight finishes. */
static int starts_work(const char *method)
{
	return strcmp(method, "sandbox/exec") == 0 || strcmp(method, "tools/call") == 0 ||
	       strcmp(method, "sandbox/session/open") == 0;
}

static void handle(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	struct worker *w;
	char msg[200];
	json_t *data;
	if (rpc->response) {
		tp_tools_response(h, c, rpc);
		return;
	}
	int code = tp_mcp_era(rpc->params, msg, sizeof msg, &data);
	const struct tp_method *m = NULL;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0] && m == NULL; i++)
		if (methods[i].fn != NULL && strcmp(methods[i].name, rpc->method) == 0)
			m = &methods[i];
	/* An id names one request until it is answered: any request reusing it, an
	 * exec or not, is refused, and the first keeps its one answer. */
	if (rpc->id != NULL && find_exec(h, c, rpc->id, &w) != NULL) {
		json_decref(data);
		tp_out_error(c, rpc->id, TP_RPC_INVALID_REQUEST,
			     "Invalid Request: id already in flight");
	} else if (h->draining && rpc->id != NULL && starts_work(rpc->method)) {
		json_decref(data);
		tp_out_error(c, rpc->id, TP_RPC_BUSY,
			     "draining: this tidepool is shutting down (SIGTERM) and starts "
			     "nothing new; retry on another");
	} else if (code != 0) { /* the stateless revision's _meta, wrong */
		if (rpc->id != NULL)
			tp_out_emit(c, rpc->id, tp_rpc_error(rpc->id, code, msg, data));
		else
			json_decref(data);
	} else if (m != NULL && (m->kind == TP_METHOD_ANY || rpc->id != NULL))
		m->fn(h, c, rpc);
	else if (rpc->id != NULL) /* other notifications (initialized, unknown) need nothing */
		tp_out_error(c, rpc->id, TP_RPC_METHOD_NOT_FOUND, "Method not found");
}

static void client_line(struct tp_host *h, struct client *c, const char *line, size_t len)
{
	struct tp_rpc rpc;
	json_t *reply, *batch = NULL;
	/* MCP 2025-03-26 must receive batches; the other revisions have none. */
	int batches = strcmp(c->mcp_version, "2025-03-26") == 0;
	int r = tp_rpc_parse_batch(line, len, &rpc, &reply, batches ? &batch : NULL);
	if (r == 1) {
		tp_out_run_batch(h, c, batch, handle);
		return;
	}
	if (r != 0) {
		if (reply != NULL)
			tp_out_emit(c, json_object_get(reply, "id"), reply);
		return;
	}
	c->line_id = rpc.id;
	handle(h, c, &rpc);
	c->line_id = NULL;
	tp_rpc_clear(&rpc);
}

/* The in-process host's line (host.h): its callback client's request. */
void tp_host_line(struct tp_host *h, const char *line, size_t len)
{
	if (h->clients != NULL)
		client_line(h, h->clients, line, len);
}

/* Execs of c queued or running. */
static int in_flight(const struct tp_host *h, const struct client *c)
{
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		if (e->c == c)
			return 1;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered && w->exec->c == c)
			return 1;
	return 0;
}

/* A client leaves: gone (its writer failed: its execs are cancelled) or done
 * (EOF, every answer written). Its sessions end either way; a tool call of
 * its execs still waiting is refused. */
static void client_leave(struct tp_host *h, struct client *c, const char *why)
{
	char n[64];
	int stopped = stop_all(h, c, why);
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && w->exec->c == c)
			tp_tools_abort(h, w, TP_MSG_CLIENT_GONE);
	tp_sess_end_client(h, c, c->gone ? "its client is gone" : "its client closed");
	if (stopped > 0) {
		snprintf(n, sizeof n, "client %llu is gone: %d", c->num, stopped);
		tp_out_log("%s execs in flight cancelled", n);
	}
	tp_client_close(h, c);
}

/* A client that has said all it will (EOF) and has been answered, or whose
 * writer has failed, leaves. Without a listener the stdio client stays: its
 * end is the host's (tp_host_run, shut_down); with one, it leaves as a socket
 * client does, and the host serves on. */
static void check_clients(struct tp_host *h)
{
	for (struct client *c = h->clients, *next; c != NULL; c = next) {
		next = c->next;
		if (c->kind == TP_CLIENT_CALLBACK || c->kind == TP_CLIENT_HTTP ||
		    (c->kind == TP_CLIENT_STDIO && h->listen_fd < 0))
			continue;
		if (c->gone)
			client_leave(h, c,
				     c->kind == TP_CLIENT_STDIO
					 ? "cancelled: the client is gone (its stdout closed)"
					 : "cancelled: the client is gone (its connection closed)");
		else if (!c->open && c->out_len == 0 && !in_flight(h, c))
			client_leave(h, c, "");
	}
}

static void read_client(struct tp_host *h, struct client *c)
{
	size_t room, len;
	const char *line;
	char msg[96];
	enum tp_line_status st;
	char *p = tp_linebuf_space(&c->lb, &room);
	ssize_t n = p ? read(c->rfd, p, room) : -1;
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		c->open = 0; /* EOF (or an unreadable end): finish what is in flight */
	else
		tp_linebuf_commit(&c->lb, (size_t)n);
	c->bytes_in += n > 0 ? (uint64_t)n : 0;
	while ((st = tp_linebuf_next(&c->lb, !c->open, &line, &len)) != TP_LINE_NONE) {
		if (st == TP_LINE_OK) {
			client_line(h, c, line, len);
			continue;
		}
		if (st == TP_LINE_NO_MEMORY) { /* as when the line cannot be parsed */
			tp_out_error(c, NULL, TP_RPC_INTERNAL_ERROR,
				     "out of memory reading the request");
			continue;
		}
		snprintf(msg, sizeof msg, "Invalid Request: line longer than %zu bytes",
			 h->cfg.max_line);
		tp_out_error(c, NULL, TP_RPC_INVALID_REQUEST, msg);
	}
	/* EOF: the client sends no more requests. What is in flight is finished
	 * and answered (each exec is bounded by its own limits), but a tool call
	 * can no longer be answered: the code waiting on one gets an error now. */
	if (!c->open)
		for (struct worker *w = h->workers; w != NULL; w = w->next)
			if (w->exec != NULL && w->exec->c == c)
				tp_tools_abort(h, w, TP_MSG_NO_TOOL_CLIENT);
}

/* ---- the loop ------------------------------------------------------------------ */

static int busy(const struct tp_host *h)
{
	return h->qhead != NULL || tp_pool_running(h);
}

static int in_flight_all(const struct tp_host *h)
{
	int n = 0;
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		n++;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		n += w->exec != NULL && !w->answered;
	return n;
}

static void handle_signals(struct tp_host *h)
{
	struct signalfd_siginfo si;
	while (read(h->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM && h->cfg.drain_ms > 0 && !h->draining) {
			char what[96];
			h->draining = 1;
			h->drain_deadline = tp_now_ms() + h->cfg.drain_ms;
			snprintf(what, sizeof what, "%d execs in flight may finish for %.0f s",
				 in_flight_all(h), h->cfg.drain_ms / 1000);
			tp_out_log("SIGTERM: draining: not ready, nothing new starts; %s", what);
		} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			h->terminated = (int)si.ssi_signo; /* a second SIGTERM: now */
		} else if (si.ssi_signo == SIGHUP)
			h->hup = 1;
	}
	tp_pool_reap(h); /* SIGCHLD coalesces: always reap everything */
}

/* A client's writer is watched even with nothing to write: POLLERR (a pipe
 * whose reader closed) or POLLHUP (a socket or terminal hung up) says it is
 * gone. A file or /dev/null never reports either. */
static int watch_writer(const struct client *c)
{
	return c->wfd >= 0 && !c->gone;
}

/* The stdio client's writer failed: with nothing listening the host ends
 * (shut_down); with a listener only that client leaves. */
static void stdio_gone(struct tp_host *h, struct client *c)
{
	c->gone = 1;
	c->open = 0;
	if (h->listen_fd < 0)
		h->gone = 1;
}

static void poll_once(struct tp_host *h)
{
	/* Arrays sized for the workers and clients there can be: the loop allocates
	 * nothing to wait, so it cannot spin when memory runs out. */
	struct pollfd *fds = h->pfds;
	struct worker **ws = h->pws;
	int nw = 0, nc = 0;
	for (struct worker *w = h->workers; w != NULL && nw < h->poll_cap; w = w->next)
		ws[nw++] = w;
	fds[P_SIG] = (struct pollfd){ h->sigfd, POLLIN, 0 };
	fds[P_LISTEN] = (struct pollfd){ h->listen_fd, POLLIN, 0 };
	fds[P_HTTP] = (struct pollfd){ tp_http_fd(h), POLLIN, 0 };
	/* Two entries per client, in the list's order (reserved: tp_poll_grow). */
	struct pollfd *cfds = fds + P_FIXED;
	for (struct client *c = h->clients; c != NULL && nc < h->client_cap; c = c->next, nc++) {
		int i = nc;
		/* The queue has its own bound (busy errors): only a client that does
		 * not read its replies stops us reading its requests. */
		int reading = c->open && !c->gone && c->out_len < MAX_OUT_PENDING;
		short out = (short)(c->out_len > 0 ? POLLOUT : 0);
		if (c->rfd == c->wfd) { /* a socket: one entry, the second unused */
			cfds[2 * i] = (struct pollfd){ c->gone ? -1 : c->rfd,
						       (short)((reading ? POLLIN : 0) | out), 0 };
			cfds[2 * i + 1] = (struct pollfd){ -1, 0, 0 };
		} else {
			cfds[2 * i] = (struct pollfd){ reading ? c->rfd : -1, POLLIN, 0 };
			cfds[2 * i + 1] = (struct pollfd){ watch_writer(c) ? c->wfd : -1, out, 0 };
		}
	}
	struct pollfd *wfds = cfds + 2 * nc;
	int i;
	for (i = 0; i < nw; i++)
		wfds[i] =
		    (struct pollfd){ ws[i]->chan, (short)(POLLIN | (ws[i]->tx ? POLLOUT : 0)), 0 };
	struct pollfd *zfds = wfds + nw;
	for (int z = 0; z < h->nzyg; z++)
		zfds[z] = (struct pollfd){ h->zyg[z].ctl,
					   (short)(POLLIN | (h->zyg[z].nunsent ? POLLOUT : 0)), 0 };
	int timeout = tp_pool_next_timeout(h, tp_now_ms());
	double ht = tp_http_next_timeout(h);
	if (ht >= 0 && (timeout < 0 || ht < timeout))
		timeout = (int)ht;
	if (h->draining) { /* its deadline wakes the loop */
		double left = h->drain_deadline - tp_now_ms();
		int dl = left > 0 ? (int)left + 1 : 0;
		if (timeout < 0 || dl < timeout)
			timeout = dl;
	}
	int r = poll(fds, (nfds_t)(P_FIXED + 2 * nc + nw + h->nzyg), timeout);
	if (r > 0) {
		/* Each client's events, kept with it: handling a request may grow the
		 * poll arrays (a session's worker, a client), which moves them. */
		i = 0;
		for (struct client *c = h->clients; c != NULL && i < nc; c = c->next, i++) {
			c->rev_in = cfds[2 * i].revents;
			c->rev_out =
			    c->rfd == c->wfd ? cfds[2 * i].revents : cfds[2 * i + 1].revents;
		}
		short sig = fds[P_SIG].revents, lst = fds[P_LISTEN].revents;
		for (i = 0; i < nw; i++) {
			if (wfds[i].revents & POLLOUT)
				tp_worker_flush_tx(ws[i]);
			if (ws[i]->chan >= 0 && wfds[i].revents & (POLLIN | POLLHUP | POLLERR))
				tp_pool_read_chan(h, ws[i]);
		}
		for (int z = 0; z < h->nzyg; z++) {
			if (zfds[z].revents & POLLOUT)
				tp_zygote_flush(&h->zyg[z]); /* a failure: its death is reaped */
			if (zfds[z].revents & ~POLLOUT)
				tp_pool_read_zygote(h, &h->zyg[z]);
		}
		if (sig)
			handle_signals(h);
		/* Last: a request may grow the arrays read above. A client made
		 * meanwhile has no events yet (tp_client_new zeroes them). */
		for (struct client *c = h->clients; c != NULL; c = c->next) {
			short in = c->rev_in, out = c->rev_out;
			c->rev_in = c->rev_out = 0;
			if (out & POLLOUT || (c->out_len > 0 && out & (POLLERR | POLLHUP)))
				tp_out_flush(c);
			/* A pipe's reader closed, or a socket closed both ways (a
			 * half-close, SHUT_WR, is only the end of its requests). */
			if (out & (POLLERR | POLLHUP))
				c->gone = 1;
			if (c->kind == TP_CLIENT_STDIO && c->gone && !h->gone)
				stdio_gone(h, c);
			if (!c->gone && in & (POLLIN | POLLHUP | POLLERR))
				read_client(h, c);
		}
		if (lst)
			tp_listen_accept(h);
	}
	/* The HTTP replies made above go out before the pool is refilled (a
	 * fork and a lockdown): stdio's were written as they were made. */
	tp_http_run(h);
	tp_pool_check_timeouts(h, tp_now_ms());
	tp_sess_check_timeouts(h, tp_now_ms());
	tp_pool_dispatch_queue(h);
	tp_stream_tick(h, tp_now_ms());
	check_clients(h);
	tp_http_run(h); /* its requests, and the replies made above */
}

/* SIGHUP: the audit log is reopened by its name (logrotate moved it), and
 * nothing else changes. When the name cannot be opened, the old file stays. */
static void reopen_audit(struct tp_host *h)
{
	struct tp_err err = { 0 };
	h->hup = 0;
	if (h->cfg.audit_path == NULL)
		return;
	int fd = tp_audit_open(h->cfg.audit_path, &err);
	if (fd < 0) {
		tp_out_log("SIGHUP: the audit log stays open as it was: %s", err.msg);
		return;
	}
	close(h->audit_fd);
	h->audit_fd = fd;
	tp_out_log("SIGHUP: reopened the audit log %s", h->cfg.audit_path);
}

/* SIGTERM or SIGINT: everything in flight is cancelled, the replies written
 * (up to SHUTDOWN_FLUSH_MS for clients that read), and the host exits with
 * 128 + the signal. A client that is gone cannot be answered: exit 0. */
#define SHUTDOWN_FLUSH_MS 300.0
static int shut_down(struct tp_host *h)
{
	char why[80], n[16];
	if (h->terminated)
		snprintf(why, sizeof why, "cancelled: tidepool received %s",
			 h->terminated == SIGINT ? "SIGINT" : "SIGTERM");
	else
		snprintf(why, sizeof why, "cancelled: the client is gone (its stdout closed)");
	int stopped = stop_all(h, NULL, why);
	if (stopped > 0) {
		snprintf(n, sizeof n, "%d", stopped);
		tp_out_log(h->terminated ? "%s execs in flight cancelled"
					 : "the client is gone: %s execs in flight cancelled",
			   n);
	}
	if (h->gone)
		return 0;
	double end = tp_now_ms() + SHUTDOWN_FLUSH_MS;
	for (int round = 0;; round++) { /* a terminal or a file is written blocking, at once */
		size_t pending = 0;
		struct pollfd fds[64];
		nfds_t nf = 0;
		if (tp_http_is_open(h) && round < 5) { /* the HTTP answers just made */
			tp_http_run(h);
			fds[nf++] = (struct pollfd){ tp_http_fd(h), POLLIN, 0 };
			pending++;
		}
		for (struct client *c = h->clients; c != NULL; c = c->next) {
			tp_out_flush(c);
			if (c->out_len > 0 && !c->gone) {
				pending += c->out_len;
				if (nf < sizeof fds / sizeof fds[0])
					fds[nf++] = (struct pollfd){ c->wfd, POLLOUT, 0 };
			}
		}
		double left = end - tp_now_ms();
		if (pending == 0 || left <= 0)
			break;
		poll(fds, nf, left < 10 ? (int)left + 1 : 10);
	}
	for (struct client *c = h->clients; c != NULL; c = c->next)
		tp_out_finish_open_line(c);
	return 128 + h->terminated;
}

/* Replies still to write to a client that can take them. */
static int unwritten(const struct tp_host *h, int blocking_only)
{
	for (const struct client *c = h->clients; c != NULL; c = c->next)
		if (c->out_len > 0 && !c->gone && (!blocking_only || c->out_blocking))
			return 1;
	return 0;
}

int tp_host_run(struct tp_host *h)
{
	tp_pool_dispatch_queue(h); /* warm the pool before the first request */
	for (;;) {
		if (h->hup)
			reopen_audit(h);
		if (h->draining && !h->terminated && (!busy(h) || tp_now_ms() >= h->drain_deadline))
			h->terminated =
			    SIGTERM; /* drained, or out of time: what runs is cancelled */
		if (h->terminated || h->gone)
			return shut_down(h);
		int more_input = tp_client_accepting(h);
		if (!more_input && !busy(h) && !unwritten(h, 0))
			return 0;
		if (!more_input && !busy(h) && unwritten(h, 1))
			return 0;
		poll_once(h);
	}
}

/* ---- setup and teardown -------------------------------------------------------- */

void tp_host_log_json(void)
{
	tp_out_log_format(1);
}

void tp_host_log(const char *msg)
{
	tp_out_log("%s", msg);
}

const char *tp_host_http_url(const struct tp_host *h)
{
	return tp_http_url(h);
}

void tp_host_cfg_jobs(struct tp_host_cfg *cfg, int jobs)
{
	cfg->jobs = jobs;
	/* Every running exec's worker and a warm pool per language, and room for
	 * the killed ones not yet reaped. */
	cfg->max_workers = jobs + cfg->pool_size * TP_NLANGS + 4;
}

void tp_host_default_cfg(struct tp_host_cfg *cfg)
{
	cpu_set_t cpus;
	int n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
	if (n <= 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	*cfg = (struct tp_host_cfg){
		.use_stdin = 1,
		.max_line = TP_MAX_LINE_DEFAULT,
		.pool_size = 2,
		.jobs = n > 0 ? n : 1,
		.max_queue = TP_MAX_QUEUE_DEFAULT,
		.listen_mode = 0600,
		.max_clients = TP_MAX_CLIENTS_DEFAULT,
	};
	tp_host_cfg_jobs(cfg, cfg->jobs);
}

static int setup_signals(struct tp_host *h, struct tp_err *err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* Writes to a vanished client or worker must fail with EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
	    (h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		return tp_err_sys(err, TP_LAYER_HOST, "signalfd", errno, NULL);
	return 0;
}

static void free_hpolicies(struct tp_host *h)
{
	for (size_t i = 0;
	     h->hp != NULL && h->pols.set != NULL && i < tp_policy_set_count(h->pols.set); i++)
		tp_hpolicy_free(&h->hp[i]);
	free(h->hp);
	h->hp = NULL;
	if (h->audit_fd >= 0)
		close(h->audit_fd);
	h->audit_fd = -1;
}

struct tp_host *tp_host_new(const struct tp_host_cfg *cfg, struct tp_err *err)
{
	struct tp_host *h = calloc(1, sizeof *h);
	if (h == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		return NULL;
	}
	h->cfg = *cfg;
	h->sigfd = -1;
	h->audit_fd = -1;
	h->listen_fd = -1;
	h->ws_base_fd = -1;
	h->pols.set = cfg->policies;
	if (h->pols.set == NULL && (h->pols.set = h->own_set = tp_policy_set_new(err)) == NULL)
		goto out_free;
	h->pols.deflt = cfg->policy ? cfg->policy : tp_policy_set_find(h->pols.set, "standard");
	size_t npol = tp_policy_set_count(h->pols.set);
	h->hp = calloc(npol, sizeof *h->hp);
	if (h->hp == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		goto out_free;
	}
	for (size_t i = 0; i < npol; i++)
		if (tp_hpolicy_init(&h->hp[i], tp_policy_set_at(h->pols.set, i), err) != 0)
			goto out_free;
	if (cfg->audit_path != NULL && (h->audit_fd = tp_audit_open(cfg->audit_path, err)) < 0)
		goto out_free;
	if (tp_ws_setup(h, err) != 0)
		goto out_free;
	h->nzyg = (int)tp_policy_set_count(h->pols.set) * TP_NLANGS;
	h->zyg = calloc((size_t)h->nzyg, sizeof *h->zyg);
	h->poll_cap = cfg->max_workers;
	h->pfds = calloc((size_t)(P_FIXED + h->poll_cap + h->nzyg), sizeof *h->pfds);
	h->pws = calloc((size_t)h->poll_cap, sizeof *h->pws);
	if (h->zyg == NULL || h->pfds == NULL || h->pws == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		goto out_free;
	}
	/* The first client: stdin and stdout, or the in-process caller's callback. */
	struct client *c = NULL;
	if (tp_client_reserve(h) == 0) {
		if (cfg->emit != NULL)
			c = tp_client_new(h, TP_CLIENT_CALLBACK, -1, -1);
		else
			c = tp_client_new(h, TP_CLIENT_STDIO, cfg->use_stdin ? 0 : -1, 1);
	}
	if (c == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		goto out_free;
	}
	c->emit = cfg->emit;
	c->emit_ctx = cfg->emit_ctx;
	/* Only the default policy's languages start warm; another policy's zygote
	 * starts when a request first names it. */
	for (int i = 0; i < h->nzyg; i++) {
		const struct tp_policy *pol = tp_policy_set_at(h->pols.set, (size_t)i / TP_NLANGS);
		const struct tp_lang_info *lang = &tp_langs[i % TP_NLANGS];
		h->zyg[i] = (struct zygote){ .lang = lang,
					     .policy = pol,
					     .ctl = -1,
					     .used = lang->prewarm && pol == h->pols.deflt &&
						     tp_policy_allows_lang(pol, lang->id) };
	}
	/* The reserve jansson's lexer draws on when memory runs out while it reads a
	 * line (common/jsonio.h), mapped while memory is plentiful; if this fails,
	 * each parse maps it on demand or is refused as out of memory. */
	(void)tp_json_reserve(cfg->max_line);
	/* Workers are our children (CLONE_PARENT); a subreaper also catches any
	 * grandchild, should one ever exist. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (setup_signals(h, err) != 0)
		goto out_free;
	if (c->kind == TP_CLIENT_STDIO)
		tp_out_setup(c);
	if (cfg->listen != NULL && tp_listen_open(h, cfg->listen, cfg->listen_mode, err) != 0)
		goto out_free;
	if (cfg->tokens != NULL && tp_tenants_load(h, cfg->tokens, err) != 0)
		goto out_free;
	if (tp_metrics_init(h) != 0) {
		tp_err_oom(err, TP_LAYER_HOST);
		goto out_free;
	}
	static const struct tp_http_ops http_ops = { client_line, client_leave };
	if (cfg->listen_http != NULL && tp_http_open(h, cfg->listen_http, &http_ops, err) != 0)
		goto out_free;
	return h;
out_free:
	tp_host_free(h);
	return NULL;
}

void tp_host_free(struct tp_host *h)
{
	if (h == NULL)
		return;
	tp_http_close(h); /* its exchanges end: their own clients leave */
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->pid > 0 && !w->exited)
			kill(w->pid, SIGKILL);
	/* A worker whose pid the zygote had not told us yet: stop the zygote, then
	 * read the pids it already sent and kill those workers too. */
	for (int i = 0; h->zyg != NULL && i < h->nzyg; i++) {
		struct zygote *z = &h->zyg[i];
		pid_t pid;
		if (z->pid > 0) {
			kill(z->pid, SIGKILL);
			waitpid(z->pid, NULL, 0);
		}
		while (z->ctl >= 0 && tp_spawn_recv_pid(z->ctl, &pid) == 1)
			if (pid > 0)
				kill(pid, SIGKILL);
	}
	while (h->sessions != NULL) { /* their workers were killed above */
		struct session *s = h->sessions;
		h->sessions = s->next;
		tp_ws_remove(h, s);
		free(s);
	}
	tp_ws_teardown(h);
	while (h->workers != NULL)
		tp_worker_free(h, h->workers);
	tp_pages_free(&h->pages);
	while (h->qhead != NULL) {
		struct exec *e = h->qhead;
		h->qhead = e->next;
		tp_exec_free(e);
	}
	for (int i = 0; h->zyg != NULL && i < h->nzyg; i++) {
		if (h->zyg[i].ctl >= 0)
			close(h->zyg[i].ctl);
		tp_zygote_unsent_free(&h->zyg[i]);
		free(h->zyg[i].unsent);
		free(h->zyg[i].spawning);
	}
	if (h->sigfd >= 0)
		close(h->sigfd);
	/* Reap what we killed, so no zombie outlives a host embedded in a test. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	tp_listen_close(h);
	while (h->clients != NULL) /* the execs that pointed at them are freed */
		tp_client_close(h, h->clients);
	free_hpolicies(h);
	tp_tenants_free(h); /* after the execs and sessions that counted in them */
	tp_metrics_free(h);
	tp_policy_set_free(h->own_set);
	free(h->zyg);
	free(h->pfds);
	free(h->pws);
	free(h);
}
