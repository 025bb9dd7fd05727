/*
 * answer.c — an exec's one answer, in one place below the pool: its result
 * (result.c), the host's own verdict, redaction, the audit line, the rest of
 * its streamed output, and the reply to its client in the shape it asked for
 * (sandbox/exec's result, or tools/call's). The pool, sessions and tools call
 * it; it calls nothing above it (only result, hpolicy, audit, stream, mcp and
 * output). Invariant: an exec is answered at most once (w->answered), and
 * never to another client than the one that sent it.
 */
#include "host_int.h"

#include <stdlib.h>
#include <time.h>

#include "audit.h"
#include "hpolicy.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "result.h"

double tp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- execs ------------------------------------------------------------------ */

void tp_record(struct tp_host *h, const struct tp_tenant *t, const struct tp_hpolicy *hp,
	       struct tp_audit_who who, const json_t *id, enum tp_lang_id lang, const char *code,
	       size_t code_len, const json_t *res, const char *kind, const json_t *tools)
{
	tp_audit_exec(h->audit_fd, hp, who, id, lang, code, code_len, res, kind, tools);
	tp_metrics_exec(h, lang, hp->p, t, res, kind);
}

void tp_exec_free(struct exec *e)
{
	if (e != NULL) {
		json_decref(e->msg);
		json_decref(e->tool_log);
		tp_client_unref(e->c);
		if (e->tenant != NULL)
			e->tenant->in_flight--;
	}
	free(e);
}

/* usage.cpu_ms of an exec without a reply (README "Usage"). A reaped worker:
 * its rusage (its whole life, the scheduler's exact runtime) less its CPU clock
 * when the exec's clock started, which it left in the page; one not reaped yet
 * (the host refused its reply): the figure it last published. 0 when the
 * exec's clock never started. The page is the worker's: clamped. */
static double cpu_without_reply(const struct worker *w, const struct tp_shm_view *v)
{
	if (v->cpu_begin_us == TP_SHM_CPU_UNSET)
		return 0;
	if (!w->exited)
		return v->cpu_us < ((uint64_t)1 << 52) ? (double)v->cpu_us / 1000.0 : 0;
	double begin = (double)v->cpu_begin_us / 1000.0;
	return w->cpu_ms > begin ? w->cpu_ms - begin : 0;
}

void tp_answer_tool_reply(struct client *c, json_t *id, const json_t *params, json_t *res)
{
	res = tp_mcp_stamp(res, params);
	if (res == NULL)
		tp_out_error(c, id, TP_RPC_INTERNAL_ERROR, "out of memory building the result");
	else
		tp_out_emit(c, id, tp_rpc_result(id, res));
}

/* An exec's result (stolen; NULL when out of memory), as sandbox/exec's reply
 * or in the tools/call shape. */
void tp_answer_reply(struct client *c, json_t *id, const json_t *params, int tool, json_t *res)
{
	if (tool)
		tp_answer_tool_reply(c, id, params, tp_mcp_tool_result(res));
	else if (res == NULL)
		tp_out_error(c, id, TP_RPC_INTERNAL_ERROR, "out of memory building the result");
	else
		tp_out_emit(c, id, tp_rpc_result(id, res));
}

/* Sends the exec's one reply, built from everything known about the worker. */
void tp_answer_finish(struct tp_host *h, struct worker *w, const struct tp_err *err)
{
	struct exec *e = w->exec;
	struct tp_shm_view view;
	if (e == NULL || w->answered)
		return;
	w->answered = 1;
	if (e->cancelled || e->id == NULL) {
		tp_record(h, e->c->tenant, &h->hp[e->zi / TP_NLANGS], tp_exec_who(e), e->id,
			  e->p.lang, e->p.code, e->p.code_len, NULL, "cancelled", e->tool_log);
		return;
	}
	tp_err_copy(&e->verdict, err); /* a timeout recorded before stays the verdict */
	tp_shm_snapshot(w->shm, w->area, &view);
	/* The host holds output_bytes itself: a page that claims more was not
	 * written by the language layer, which trips output_limit first. */
	if (tp_shm_view_cap(&view, e->p.limits.output_bytes) && !view.tripped)
		tp_err_set(&e->verdict, TP_KIND_OUTPUT_LIMIT, TP_LAYER_HOST, 0,
			   "output limit exceeded: the worker's page held %llu bytes of output; "
			   "the host kept output_bytes",
			   (unsigned long long)view.out_claimed);
	tp_stream_flush(e, &view); /* the notifications end as the reply's output */
	struct tp_outcome o = {
		.reply = w->reply,
		.shm = &view,
		.exited = w->exited,
		.status = w->status,
		.host = &e->verdict,
		.wall_ms = tp_now_ms() - e->t_start,
		.queue_ms = e->queue_ms,
		.tool_calls = e->tool_calls,
		.tool_attempts = e->tool_attempts,
		/* A session's worker was reaped after many execs: this one's share. */
		.cpu_ms = !w->exited                 ? -1
			  : w->cpu_ms > w->cpu_prior ? w->cpu_ms - w->cpu_prior
						     : 0,
		.cpu_exec_ms = w->reply ? 0 : cpu_without_reply(w, &view),
		.limits = &e->p.limits,
		.policy = h->hp[e->zi / TP_NLANGS].p->name,
		.rule = e->rule[0] ? e->rule : NULL,
		.kernel_limits = !h->zyg[w->zi].policy->language_layer,
	};
	const struct tp_hpolicy *hp = &h->hp[e->zi / TP_NLANGS];
	json_t *res = tp_result_build(&o);
	if (res != NULL && e->sess == NULL && e->session_id[0] == '\0' && tp_zygote_state(h, w->zi))
		/* Under a policy of isolation "state": what this exec had, and
		 * whether its process was fresh (worker_exec 1) or served before. */
		json_object_set_new(res, "isolation",
				    json_pack("{s:s, s:I}", "level",
					      e->p.state ? "state" : "process", "worker_exec",
					      (json_int_t)w->uses + 1));
	if (res != NULL && e->session_id[0] != '\0') {
		/* Lost: its worker is gone (killed, crashed, or the session closed). */
		int lost = e->sess == NULL || w->exited || w->killed || w->reply == NULL;
		json_object_set_new(res, "session_id", json_string(e->session_id));
		json_object_set_new(res, "session_lost", json_boolean(lost));
	}
	res = tp_hpolicy_redact(hp, res);
	tp_record(h, e->c->tenant, hp, tp_exec_who(e), e->id, e->p.lang, e->p.code, e->p.code_len,
		  res, "internal_error", e->tool_log);
	tp_answer_reply(e->c, e->id, json_object_get(e->msg, "params"), e->p.tool_call, res);
}

void tp_answer_unrun(struct tp_host *h, struct exec *e)
{
	struct tp_outcome o = { .host = &e->verdict,
				.limits = &e->p.limits,
				.queue_ms = tp_now_ms() - e->t_arrival,
				.policy = h->hp[e->zi / TP_NLANGS].p->name };
	const struct tp_hpolicy *hp = &h->hp[e->zi / TP_NLANGS];
	json_t *res = tp_result_build(&o);
	if (res != NULL && e->session_id[0] != '\0') { /* never ran: the session is as it was */
		json_object_set_new(res, "session_id", json_string(e->session_id));
		json_object_set_new(res, "session_lost", json_boolean(e->sess == NULL));
	}
	res = tp_hpolicy_redact(hp, res);
	tp_record(h, e->c->tenant, hp, tp_exec_who(e), e->id, e->p.lang, e->p.code, e->p.code_len,
		  res, "internal_error", e->tool_log);
	tp_answer_reply(e->c, e->id, json_object_get(e->msg, "params"), e->p.tool_call, res);
}
