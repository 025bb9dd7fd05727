/*
 * answer.c — an exec's one answer, in one place below the pool: its result
 * (result.c), the host's own verdict, redaction, the audit line, the rest of
 * its streamed output, and the reply to its client in the shape it asked for
 * (sandbox/exec's result, or tools/call's). The pool, sessions and tools call
 * it; it calls nothing above it (only result, hpolicy, audit, stream, mcp,
 * workspace and output). A session exec's answer carries the files its code
 * changed (workspace.c's snapshot and walk; over MCP as resource links and
 * embedded resources). Invariant: an exec is answered at most once
 * (w->answered), and never to another client than the one that sent it.
 */
#include "host_int.h"

#include <stdlib.h>
#include <time.h>

#include "audit.h"
#include "hpolicy.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "result.h"
#include "utf8.h"
#include "base64.h"

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
		tp_ws_snap_free(e->ws_before);
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
 * or in the tools/call shape, items (stolen, or NULL) after its content. */
void tp_answer_reply(struct client *c, json_t *id, const json_t *params, int tool, json_t *res,
		     json_t *items)
{
	if (tool) {
		json_t *r = tp_mcp_tool_result(res);
		if (r != NULL && items != NULL &&
		    json_array_extend(json_object_get(r, "content"), items) != 0) {
			json_decref(r);
			r = NULL;
		}
		json_decref(items);
		tp_answer_tool_reply(c, id, params, r);
		return;
	}
	json_decref(items);
	if (res == NULL)
		tp_out_error(c, id, TP_RPC_INTERNAL_ERROR, "out of memory building the result");
	else
		tp_out_emit(c, id, tp_rpc_result(id, res));
}

/* ---- a session exec's files -------------------------------------------------------- */

#define FILES_LISTED 100       /* the most a result lists (files_more: the rest) */
#define EMBED_ONE (64u << 10)  /* the largest file a tool result embeds */
#define EMBED_ALL (256u << 10) /* what one tool result embeds in all */

struct files_back {
	json_t *list;
	json_int_t more;
	int oom;
};

static void file_changed(void *ctx, const char *path, size_t len, uint64_t size,
			 enum tp_ws_change_kind kind)
{
	static const char *const change[] = { "created", "modified", "deleted" };
	struct files_back *f = ctx;
	if (json_array_size(f->list) >= FILES_LISTED) {
		f->more++;
		return;
	}
	json_t *e = json_object();
	if (tp_utf8_valid(path, len)) {
		json_object_set_new(e, "path", json_stringn(path, len));
	} else { /* JSON cannot carry it as a string: its bytes in base64 (as files/list) */
		char *b = malloc(tp_base64_encoded_len(len) + 1);
		if (b != NULL) {
			tp_base64_encode((const unsigned char *)path, len, b);
			json_object_set_new(e, "path_b64", json_string(b));
		}
		free(b);
	}
	if (kind != TP_WS_DELETED) {
		json_object_set_new(e, "size", json_integer((json_int_t)size));
		json_object_set_new(e, "mime", json_string(tp_mcp_mime(path)));
	}
	json_object_set_new(e, "change", json_string(change[kind]));
	if (e == NULL || json_object_size(e) < 2 || json_array_append_new(f->list, e) != 0)
		f->oom = 1;
}

/* What e's code created, changed or deleted in its session's workspace, in its
 * result: files (absent when none), files_more, files_complete. */
static json_t *files_back(struct exec *e, json_t *res)
{
	struct files_back f = { .list = json_array() };
	if (res == NULL || e->ws_before == NULL || e->sess == NULL || e->sess->ws_dir < 0 ||
	    f.list == NULL) {
		json_decref(f.list);
		return NULL;
	}
	int r = tp_ws_changes(e->sess->ws_dir, e->ws_before, file_changed, &f);
	if (r < 0 || f.oom) {
		json_decref(f.list);
		return NULL;
	}
	if (json_array_size(f.list) > 0)
		json_object_set(res, "files", f.list);
	if (f.more > 0)
		json_object_set_new(res, "files_more", json_integer(f.more));
	if (r > 0) /* a walk met its bounds: more than 1000 files, or deeper than 8 */
		json_object_set_new(res, "files_complete", json_false());
	if (json_array_size(f.list) == 0) {
		json_decref(f.list);
		return NULL;
	}
	return f.list;
}

/* A tools/call's content items for the files listed: a resource_link each
 * (revisions 2025-06-18 and later), and the small text files and PNG or JPEG
 * images embedded (every revision), redacted as read_file's. NULL: none. */
static json_t *file_items(const struct exec *e, const json_t *files, const struct tp_hpolicy *hp)
{
	const json_t *params = json_object_get(e->msg, "params");
	int links = tp_mcp_resource_links(e->c->mcp_version, params);
	json_t *items = json_array(), *f;
	size_t i, total = 0;
	json_array_foreach(files, i, f)
	{
		const char *path = json_string_value(json_object_get(f, "path"));
		const char *mime = json_string_value(json_object_get(f, "mime"));
		json_int_t size = json_integer_value(json_object_get(f, "size"));
		if (path == NULL || mime == NULL || items == NULL)
			continue; /* deleted, or a name JSON cannot carry */
		char *uri = tp_mcp_file_uri(e->session_id, path, strlen(path));
		if (uri == NULL)
			break;
		if (links)
			json_array_append_new(
			    items,
			    tp_hpolicy_redact(hp, json_pack("{s:s, s:s, s:s, s:s, s:I}", "type",
							    "resource_link", "uri", uri, "name",
							    path, "mimeType", mime, "size", size)));
		int how = tp_mcp_mime_embeds(mime);
		unsigned char *bytes;
		size_t n;
		if (how != TP_MCP_EMBED_NONE && size >= 0 && (uint64_t)size <= EMBED_ONE &&
		    total + (size_t)size <= EMBED_ALL &&
		    tp_ws_read(e->sess->ws_dir, path, EMBED_ONE, -1, NULL, &bytes, &n) == 0) {
			json_t *c = total + n <= EMBED_ALL
					? tp_ws_content(path, bytes, n, how == TP_MCP_EMBED_TEXT,
							"text", "data")
					: NULL;
			free(bytes);
			c = tp_hpolicy_redact_file(hp, c); /* its name and its bytes */
			json_t *text = json_object_get(c, "text"),
			       *data = json_object_get(c, "data");
			/* Text only as text: a .csv that is not UTF-8 is a link alone. */
			json_t *res = json_pack("{s:s, s:s}", "uri", uri, "mimeType", mime);
			res = tp_hpolicy_redact(hp, res);
			if (res != NULL && how == TP_MCP_EMBED_TEXT && json_is_string(text))
				json_object_set(res, "text", text);
			else if (res != NULL && how == TP_MCP_EMBED_BLOB && json_is_string(data))
				json_object_set(res, "blob", data);
			if (res != NULL && json_object_size(res) == 3) {
				total += n;
				json_array_append_new(
				    items,
				    json_pack("{s:s, s:o}", "type", "resource", "resource", res));
			} else {
				json_decref(res);
			}
			json_decref(c);
		}
		free(uri);
	}
	if (json_array_size(items) == 0) {
		json_decref(items);
		return NULL;
	}
	return items;
}

int tp_answer_splices(const struct tp_host *h, const struct exec *e)
{
	const struct tp_hpolicy *hp = &h->hp[e->zi / TP_NLANGS];
	return hp->secrets.n == 0 && hp->nre == 0 && !e->cancelled && e->id != NULL &&
	       tp_out_now(e->c, e->id);
}

/* Sends the exec's one reply, built from everything known about the worker. */
void tp_answer_finish(struct tp_host *h, struct worker *w, const struct tp_err *err)
{
	struct exec *e = w->exec;
	struct tp_shm_view view;
	if (e == NULL || w->answered)
		return;
	w->answered = 1;
	/* Answered: no longer one of its tenant's execs running or waiting, though
	 * a one-shot worker keeps it until it is reaped (under load or ASan, after
	 * the tenant's next requests came, which were refused busy for it). */
	if (e->tenant != NULL) {
		e->tenant->in_flight--;
		e->tenant = NULL;
	}
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
	/* The value as the worker's bytes, not a second dump of its tree: only
	 * where nothing may change it (no redaction: it rewrites strings in place)
	 * and the reply is written now (tp_answer_splices). A value the decoder
	 * kept as text stands in the result as an empty object (its text as an
	 * empty string), registered with its bytes; elsewhere its tree is made. */
	struct tp_reply *r = w->reply;
	int raw = r != NULL && r->ok && r->value_json != NULL && tp_answer_splices(h, e);
	if (r != NULL && r->value_lazy && !raw)
		(void)tp_reply_value(r); /* NULL: out of memory, and the result says so */
	if (raw && r->value_lazy) {
		o.value_stand_in = json_object();
		o.text_stand_in = r->text_is_value ? json_string("") : NULL;
		if (o.value_stand_in == NULL || (r->text_is_value && o.text_stand_in == NULL)) {
			/* Out of memory: no stand-in may reach the result unspliced.
			 * The tree, then, or (NULL) the result says out of memory. */
			json_decref(o.value_stand_in);
			json_decref(o.text_stand_in);
			o.value_stand_in = o.text_stand_in = NULL;
			raw = 0;
			(void)tp_reply_value(r);
		}
	}
	json_t *res = tp_result_build(&o);
	json_decref(o.value_stand_in);
	json_decref(o.text_stand_in);
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
	json_t *files = files_back(e, res), *items = NULL;
	if (files != NULL && e->p.tool_call)
		items = file_items(e, files, hp);
	json_decref(files);
	res = tp_hpolicy_redact(hp, res);
	tp_record(h, e->c->tenant, hp, tp_exec_who(e), e->id, e->p.lang, e->p.code, e->p.code_len,
		  res, "internal_error", e->tool_log);
	/* A text that is the value's JSON (text_is_value) is written from the same
	 * bytes, quoted. A stand-in is always the result's own (nothing replaced
	 * it): the value of a built tree is checked to be. */
	json_t *node = res != NULL ? json_object_get(res, "value") : NULL;
	raw = raw && node != NULL && node == (o.value_stand_in ? o.value_stand_in : r->value);
	if (raw) {
		struct tp_json_raw sp[2] = {
			{ node, r->value_json, r->value_json_n, 0 },
			{ json_object_get(res, "text"), r->value_json, r->value_json_n,
			  o.text_stand_in != NULL ? 2 : 1 },
		};
		tp_rpc_splice(sp, r->text_is_value ? 2 : 1);
	}
	tp_answer_reply(e->c, e->id, json_object_get(e->msg, "params"), e->p.tool_call, res, items);
	if (raw)
		tp_rpc_splice(NULL, 0);
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
	tp_answer_reply(e->c, e->id, json_object_get(e->msg, "params"), e->p.tool_call, res, NULL);
}
