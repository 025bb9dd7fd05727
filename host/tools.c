/*
 * tools.c — the code's calls to the client's tools. The host is the authority:
 * a worker asks (TP_MSG_TOOL_CALL, hostile bytes), the host checks the name
 * against its exec's policy and the exec's tool_calls limit, then asks the
 * client with a JSON-RPC request of its own, sandbox/tool_call, and sends the
 * client's answer back (TP_MSG_TOOL_RESULT). A worker waits for one answer at
 * a time. A refusal is the host's verdict on the exec (kind policy_violation
 * or tool_limit, layer host) whatever the code does with the error it gets.
 * This is how the network and secrets stay outside the sandbox: the client
 * holds them and makes the call.
 */
#include "host_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "jsonio.h"

/* Sends w a TOOL_RESULT frame; the worker is killed if it cannot be built. */
static void answer(struct tp_host *h, struct worker *w, struct tp_tool_result *res)
{
	size_t n;
	char *body = tp_msg_tool_result_encode(res, &n);
	char *frame = body != NULL && w->tx == NULL ? malloc(n + TP_FRAME_HDR) : NULL;
	if (frame == NULL) {
		struct tp_err err = { 0 };
		tp_err_set(&err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
			   "out of memory answering a tool call");
		free(body);
		tp_worker_kill(w);
		tp_answer_finish(h, w, &err);
		return;
	}
	tp_frame_header(frame, n);
	memcpy(frame + TP_FRAME_HDR, body, n);
	free(body);
	w->tx = frame;
	w->tx_len = n + TP_FRAME_HDR;
	w->tx_off = 0;
	tp_worker_flush_tx(w);
}

static void answer_text(struct tp_host *h, struct worker *w, enum tp_tool_status st,
			const char *msg)
{
	struct tp_tool_result res = { .status = st };
	if (tp_text_set(&res.message, msg, strlen(msg), TP_TOOL_MESSAGE_MAX) != 0)
		res.message = (struct tp_text){ (char *)"out of memory", 13 };
	answer(h, w, &res);
	if (res.message.s != NULL && strcmp(res.message.s, "out of memory") != 0)
		tp_text_free(&res.message);
}

static void log_call(struct exec *e, const char *name, const char *outcome)
{
	if (e->tool_log == NULL)
		e->tool_log = json_array();
	if (e->tool_log != NULL && json_array_size(e->tool_log) < 1000)
		json_array_append_new(e->tool_log,
				      json_pack("{s:s, s:s}", "name", name, "outcome", outcome));
}

static int policy_has(const struct tp_policy *p, const char *name)
{
	for (size_t i = 0; i < p->tools.n; i++)
		if (strcmp(p->tools.v[i], name) == 0)
			return 1;
	return 0;
}

/* The host refuses: the exec's verdict (the first stands) and the code's error. */
static void refuse(struct tp_host *h, struct worker *w, enum tp_kind kind, const char *msg)
{
	struct exec *e = w->exec;
	if (!tp_err_failed(&e->verdict))
		tp_err_set(&e->verdict, kind, TP_LAYER_HOST, 0, "%s", msg);
	answer_text(h, w, TP_TOOL_REFUSED, msg);
}

void tp_tools_from_worker(struct tp_host *h, struct worker *w, const char *buf, size_t len)
{
	struct exec *e = w->exec;
	struct tp_tool_call c;
	struct tp_err err = { 0 };
	const struct tp_policy *p = h->zyg[w->zi].policy;
	char msg[512];
	const char *why = NULL;

	errno = 0; /* ENOMEM after a failed decode: ours, not the worker's */
	if (e->tool_pending[0] != '\0' || w->tx != NULL ||
	    tp_msg_tool_call_decode(buf, len, &e->p.limits, &c) != 0) {
		if (e->tool_pending[0] == '\0' && w->tx == NULL && errno == ENOMEM)
			tp_err_set(&err, TP_KIND_INTERNAL, TP_LAYER_HOST, ENOMEM,
				   "out of memory reading the worker's tool call");
		else
			tp_err_set(&err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0,
				   "worker tool call refused: %s",
				   e->tool_pending[0] ? "a second call while one waits"
						      : "malformed");
		tp_worker_kill(w);
		tp_answer_finish(h, w, &err);
		return;
	}
	e->tool_attempts++;
	if (!policy_has(p, c.name)) {
		char names[256] = "";
		size_t off = 0;
		for (size_t i = 0; i < p->tools.n && off < sizeof names; i++)
			off += (size_t)snprintf(names + off, sizeof names - off, "%s%s",
						i ? ", " : "", p->tools.v[i]);
		snprintf(msg, sizeof msg, "tool '%s' is not allowed by policy '%s' (its tools: %s)",
			 c.name, p->name, p->tools.n ? names : "none");
		log_call(e, c.name, "refused: not in the policy");
		if (!tp_err_failed(&e->verdict))
			snprintf(e->rule, sizeof e->rule, "tools:%s", c.name);
		refuse(h, w, TP_KIND_POLICY_VIOLATION, msg);
	} else if (e->tool_calls >= e->p.limits.tool_calls) {
		snprintf(msg, sizeof msg,
			 "tool call limit exceeded: %" PRIu64 " calls (tool_calls)",
			 e->p.limits.tool_calls);
		log_call(e, c.name, "refused: tool_calls");
		refuse(h, w, TP_KIND_TOOL_LIMIT, msg);
	} else if (!e->c->open || e->c->gone ||
		   (e->c->cannot_ask != NULL && (why = e->c->cannot_ask(e->c, e->id)) != NULL)) {
		/* Its client cannot answer: it closed its end, there is none
		 * (run's in-process host), or its transport has no way back. */
		log_call(e, c.name, "refused: no client");
		answer_text(h, w, TP_TOOL_REFUSED,
			    why != NULL                        ? why
			    : e->c->kind == TP_CLIENT_CALLBACK ? "no client answers tools here"
			    : e->c->gone                       ? TP_MSG_CLIENT_GONE
							       : TP_MSG_NO_TOOL_CLIENT);
	} else if (tp_err_failed(&e->verdict) || e->stop_deadline > 0) {
		log_call(e, c.name, "refused: stopping");
		answer_text(h, w, TP_TOOL_REFUSED, "the exec is being stopped");
	} else {
		char id[32];
		snprintf(id, sizeof id, "tp-tool-%llu", ++h->tool_seq);
		json_t *params = json_pack("{s:s, s:O, s:O}", "name", c.name, "arguments",
					   c.arguments, "exec_id", e->id ? e->id : json_null());
		if (params != NULL && e->session_id[0] != '\0')
			json_object_set_new(params, "session_id", json_string(e->session_id));
		json_t *req = params ? json_pack("{s:s, s:s, s:s, s:o}", "jsonrpc", "2.0", "id", id,
						 "method", "sandbox/tool_call", "params", params)
				     : NULL;
		if (req == NULL || tp_out_send(e->c, req) != 0) {
			log_call(e, c.name, "refused: out of memory");
			answer_text(h, w, TP_TOOL_REFUSED, "out of memory sending the tool call");
		} else {
			e->tool_calls++;
			snprintf(e->tool_pending, sizeof e->tool_pending, "%s", id);
			log_call(e, c.name, "sent");
		}
	}
	tp_tool_call_free(&c);
}

void tp_tools_abort(struct tp_host *h, struct worker *w, const char *why)
{
	if (w->exec == NULL || w->exec->tool_pending[0] == '\0')
		return;
	w->exec->tool_pending[0] = '\0';
	answer_text(h, w, TP_TOOL_REFUSED, why);
}

/* Nesting depth of v: a scalar is 0, [] or {} is 1. */
static size_t depth(const json_t *v, size_t cap)
{
	size_t d = 0, i;
	const char *k;
	json_t *c;
	if (cap == 0)
		return 1;
	if (json_is_array(v))
		json_array_foreach(v, i, c)
		{
			size_t x = depth(c, cap - 1);
			d = x > d ? x : d;
		}
	else if (json_is_object(v))
		json_object_foreach((json_t *)v, k, c)
		{
			size_t x = depth(c, cap - 1);
			d = x > d ? x : d;
		}
	else
		return 0;
	return d + 1;
}

/* The worker whose exec waits on our call id, made to client c: an answer
 * from another client is not one (each client answers only its own calls). */
static struct worker *pending_for(struct tp_host *h, const struct client *c, const char *id)
{
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered && !w->killed && w->exec->c == c &&
		    strcmp(w->exec->tool_pending, id) == 0)
			return w;
	return NULL;
}

void tp_tools_response(struct tp_host *h, struct client *c, const struct tp_rpc *rpc)
{
	const char *id = json_string_value(rpc->id);
	struct worker *w =
	    id != NULL && strncmp(id, "tp-tool-", 8) == 0 ? pending_for(h, c, id) : NULL;
	if (w == NULL)
		return; /* not ours, or its exec is gone: nothing waits for it */
	struct exec *e = w->exec;
	e->tool_pending[0] = '\0';
	if (rpc->unreadable) {
		/* Refused before it was read whole: the code still gets its answer. */
		char msg[320];
		if (rpc->unreadable == TP_RPC_TOO_DEEP)
			snprintf(msg, sizeof msg,
				 "the tool's result is nested deeper than result_depth (%" PRIu64
				 ")",
				 e->p.limits.result_depth);
		else if (rpc->unreadable == TP_RPC_TOO_LONG)
			snprintf(msg, sizeof msg,
				 "the tool's answer is %zu bytes, longer than the %zu bytes a line "
				 "may hold (result_bytes is %" PRIu64 ")",
				 rpc->line_bytes, rpc->line_max, e->p.limits.result_bytes);
		else
			snprintf(msg, sizeof msg, "the tool's answer is not JSON: %s", rpc->why);
		answer_text(h, w, TP_TOOL_ERROR, msg);
		return;
	}
	json_t *result = json_object_get(rpc->msg, "result");
	json_t *error = json_object_get(rpc->msg, "error");
	if (result != NULL && error == NULL) {
		/* The value reaches the code under the exec's own caps. */
		char *text = tp_json_dumps_frame(result, JSON_COMPACT | JSON_ENCODE_ANY);
		size_t n = text ? strlen(text) : 0;
		free(text);
		if (text == NULL) {
			answer_text(h, w, TP_TOOL_ERROR, "out of memory reading the tool's result");
		} else if (depth(result, e->p.limits.result_depth + 1) > e->p.limits.result_depth) {
			char msg[160];
			snprintf(msg, sizeof msg,
				 "the tool's result is nested deeper than result_depth (%" PRIu64
				 ")",
				 e->p.limits.result_depth);
			answer_text(h, w, TP_TOOL_ERROR, msg);
		} else if (n > e->p.limits.result_bytes) {
			char msg[160];
			snprintf(msg, sizeof msg,
				 "the tool's result is %zu bytes of JSON, more than result_bytes "
				 "(%" PRIu64 ")",
				 n, e->p.limits.result_bytes);
			answer_text(h, w, TP_TOOL_ERROR, msg);
		} else {
			struct tp_tool_result res = { .status = TP_TOOL_OK, .value = result };
			answer(h, w, &res);
		}
		return;
	}
	json_t *m = json_object_get(error, "message");
	char msg[TP_TOOL_MESSAGE_MAX];
	snprintf(msg, sizeof msg, "%s",
		 json_is_string(m) ? json_string_value(m) : "the tool failed");
	answer_text(h, w, TP_TOOL_ERROR, msg);
}
