/*
 * session.c — sessions: one locked-down worker whose globals persist between
 * its execs. The host owns every limit of a session's life (idle time,
 * lifetime, execs, how many are open, its rate); the worker only keeps its
 * interpreter between requests. Invariants: a session has exactly one worker
 * for its whole life; when that worker dies, the session ends with it and
 * every exec queued on it is answered; an ended session is never revived.
 */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "audit.h"
#include "jsonio.h"
#include "mcp.h"

/* ---- finding and remembering -------------------------------------------------- */

/* A session is its client's: another client's is never found, listed or
 * closed, nor is it told that the id exists or why it ended (docs/clients.md). */
struct session *tp_sess_find(struct tp_host *h, const struct client *c, const char *id)
{
	for (struct session *s = h->sessions; s != NULL; s = s->next)
		if (s->owner == c && strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static const char *ended_why(const struct tp_host *h, const struct client *c, const char *id)
{
	for (unsigned i = 0; i < ENDED_KEPT; i++)
		if (h->ended[i].id[0] != '\0' && h->ended[i].owner == c->num &&
		    strcmp(h->ended[i].id, id) == 0)
			return h->ended[i].why;
	return NULL;
}

void tp_sess_unknown_msg(const struct tp_host *h, const struct client *c, const char *id, int tool,
			 char *msg, size_t cap)
{
	const char *why = ended_why(h, c, id);
	if (why != NULL)
		snprintf(msg, cap, "session '%s' has ended: %s", id, why);
	else if (tool)
		snprintf(msg, cap,
			 "unknown session '%.40s' (session: \"new\" opens one; list_sessions "
			 "shows those open)",
			 id);
	else
		snprintf(msg, cap,
			 "unknown session '%.40s' (sandbox/session/open makes one; "
			 "sandbox/session/list shows those open)",
			 id);
}

void tp_sess_unknown(struct tp_host *h, struct client *c, const json_t *rpc_id, const char *id)
{
	char msg[256];
	tp_sess_unknown_msg(h, c, id, 0, msg, sizeof msg);
	tp_out_error(c, (json_t *)rpc_id, TP_RPC_NO_SESSION, msg);
}

static int queued_on(const struct tp_host *h, const struct session *s)
{
	int n = 0;
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		n += e->sess == s;
	return n;
}

static int busy(const struct tp_host *h, const struct session *s)
{
	return (s->w != NULL && s->w->exec != NULL) || queued_on(h, s) > 0;
}

static const struct tp_policy *policy_of(const struct tp_host *h, const struct session *s)
{
	return h->zyg[s->zi].policy;
}

/* ---- ending ---------------------------------------------------------------------- */

/* Queued execs of s are answered: the session they named is gone. */
static void fail_queued(struct tp_host *h, struct session *s, const char *why)
{
	struct exec **pp = &h->qhead, *prev = NULL;
	char msg[256];
	snprintf(msg, sizeof msg, "session '%s' has ended: %s", s->id, why);
	while (*pp != NULL) {
		struct exec *e = *pp;
		if (e->sess != s) {
			prev = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		if (h->qtail == e)
			h->qtail = prev;
		h->queued--;
		if (e->id != NULL && !e->cancelled)
			tp_out_error(e->c, e->id, TP_RPC_NO_SESSION, msg);
		tp_exec_free(e);
	}
}

void tp_sess_end(struct tp_host *h, struct session *s, const char *why)
{
	struct session **pp = &h->sessions;
	while (*pp != NULL && *pp != s)
		pp = &(*pp)->next;
	if (*pp == NULL)
		return;
	*pp = s->next;
	h->nsessions--;
	if (s->tenant != NULL) {
		s->tenant->sessions--;
		s->tenant->ws_reserved -= s->ws_reserved;
	}
	struct ended_session *x = &h->ended[h->nended++ % ENDED_KEPT];
	snprintf(x->id, sizeof x->id, "%s", s->id);
	x->owner = s->owner->num;
	snprintf(x->why, sizeof x->why, "%s", why);
	fail_queued(h, s, why);
	if (s->w != NULL) {
		struct worker *w = s->w;
		w->sess = NULL;
		if (w->exec != NULL && w->exec->sess == s)
			w->exec->sess = NULL; /* its reply says session_lost */
		tp_worker_kill(w);
	}
	/* After the kill: what a dying worker still writes is swept at exit (the
	 * base is removed whole then). */
	tp_ws_remove(h, s);
	free(s);
}

void tp_sess_end_client(struct tp_host *h, struct client *c, const char *why)
{
	for (struct session *s = h->sessions, *next; s != NULL; s = next) {
		next = s->next;
		if (s->owner == c)
			tp_sess_end(h, s, why);
	}
}

/* ---- the methods ------------------------------------------------------------------- */

static json_t *close_session(struct tp_host *h, struct session *s);

static void new_id(char *out)
{
	uint64_t r = 0;
	static uint64_t counter;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = (uint64_t)tp_now_ms() * 2654435761u ^ ++counter; /* unique, not secret */
	snprintf(out, SESSION_ID_LEN + 1, "s-%016" PRIx64, r);
}

static int open_under(const struct tp_host *h, const struct tp_policy *p)
{
	int n = 0;
	for (const struct session *s = h->sessions; s != NULL; s = s->next)
		n += policy_of(h, s) == p;
	return n;
}

static json_t *limits_json(const struct tp_limits *l)
{
	json_t *o = json_object();
	for (int i = 0; o != NULL && i < TP_LIMIT__COUNT; i++)
		json_object_set_new(o, tp_limit_name((enum tp_limit_id)i),
				    json_integer((json_int_t)tp_limit_get(l, (enum tp_limit_id)i)));
	return o;
}

/* An id never given before, to any client (open or ended ones kept). */
static int id_taken(const struct tp_host *h, const char *id)
{
	for (const struct session *s = h->sessions; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0)
			return 1;
	for (unsigned i = 0; i < ENDED_KEPT; i++)
		if (strcmp(h->ended[i].id, id) == 0)
			return 1;
	return 0;
}

struct session *tp_sess_create(struct tp_host *h, struct client *c,
			       const struct tp_exec_session *ses, int *code, char *msg, size_t len)
{
	struct tp_exec_session es = *ses;
	size_t pi = tp_policy_set_index(h->pols.set, es.policy);
	*code = TP_RPC_INVALID_PARAMS;
	if (!h->hp[pi].kernel_ok) {
		snprintf(msg, len, "%s", h->hp[pi].why);
		return NULL;
	}
	if (es.policy->session.max_sessions == 0) {
		snprintf(msg, len, "policy '%s' allows no sessions (session.max_sessions is 0)",
			 es.policy->name);
		return NULL;
	}
	if ((uint64_t)open_under(h, es.policy) >= es.policy->session.max_sessions) {
		*code = TP_RPC_BUSY;
		snprintf(msg, len,
			 "policy '%s' allows %" PRIu64 " open sessions and they are all open; "
			 "close one (sandbox/session/close)",
			 es.policy->name, es.policy->session.max_sessions);
		return NULL;
	}
	struct tp_tenant *t = c->tenant;
	uint64_t ws_want = es.policy->session.workspace_bytes;
	if (t != NULL && t->q.open_sessions > 0 && t->sessions >= t->q.open_sessions) {
		*code = TP_RPC_BUSY;
		snprintf(msg, len,
			 "quota: tenant '%s' has %" PRIu64 " sessions open, the most its "
			 "open_sessions quota allows; close one (sandbox/session/close)",
			 t->name, t->sessions);
		return NULL;
	}
	if (t != NULL && t->q.workspace_bytes > 0 && h->ws_base_fd >= 0 &&
	    t->ws_reserved + ws_want > t->q.workspace_bytes) {
		*code = TP_RPC_BUSY;
		snprintf(msg, len,
			 "quota: tenant '%s' holds %" PRIu64 " of its %" PRIu64
			 " workspace bytes in open sessions, and a session under policy '%s' "
			 "reserves %" PRIu64 "; close one (sandbox/session/close)",
			 t->name, t->ws_reserved, t->q.workspace_bytes, es.policy->name, ws_want);
		return NULL;
	}
	*code = TP_RPC_INTERNAL_ERROR;
	struct session *s = calloc(1, sizeof *s);
	if (s == NULL || tp_worker_reserve(h, 1) != 0) {
		free(s);
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	s->zi = (int)pi * TP_NLANGS + (int)es.lang;
	s->ceiling = es.ceiling;
	s->opened = s->last_used = tp_now_ms();
	s->tokens = (double)es.policy->rate.session_per_minute;
	s->tokens_at = s->opened;
	do
		new_id(s->id);
	while (id_taken(h, s->id));
	s->owner = c;
	h->zyg[s->zi].used = 1;
	s->ws_dir = -1;
	int ws = tp_ws_create(h, s, msg, len);
	if (ws < 0) {
		free(s);
		return NULL;
	}
	s->w = tp_worker_spawn(h, s->zi, TP_SPAWN_SESSION, ws);
	if (ws > 0)
		close(ws); /* the zygote has its own copy, queued with the spawn */
	if (s->w == NULL) {
		tp_ws_remove(h, s);
		free(s);
		snprintf(msg, len, "could not start the session's worker: see the host's stderr");
		return NULL;
	}
	s->w->sess = s;
	s->next = h->sessions;
	h->sessions = s;
	h->nsessions++;
	if ((s->tenant = t) != NULL) {
		t->sessions++;
		s->ws_reserved = s->ws_dir >= 0 ? ws_want : 0;
		t->ws_reserved += s->ws_reserved;
	}
	return s;
}

void tp_sess_open(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	struct tp_exec_session es;
	struct tp_err err = { 0 };
	char msg[256];
	int code;
	if (tp_session_params_parse(rpc->params, tp_pols_of(h, c), &es, &err) != 0) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, err.msg);
		return;
	}
	struct session *s = tp_sess_create(h, c, &es, &code, msg, sizeof msg);
	if (s == NULL) {
		tp_out_error(c, rpc->id, code, msg);
		return;
	}
	const struct tp_policy_session *ps = &es.policy->session;
	json_t *r = json_pack("{s:s, s:s, s:s, s:o, s:{s:I, s:I, s:I}}", "session_id", s->id,
			      "lang", tp_langs[es.lang].name, "policy", es.policy->name, "limits",
			      limits_json(&s->ceiling), "expires", "idle_ms",
			      (json_int_t)ps->idle_ms, "lifetime_ms", (json_int_t)ps->lifetime_ms,
			      "max_execs", (json_int_t)ps->max_execs);
	if (r != NULL && s->ws_path[0] != '\0')
		json_object_set_new(r, "workspace",
				    json_pack("{s:s, s:I}", "path", s->ws_path, "file_bytes",
					      (json_int_t)ps->workspace_bytes));
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

/* params {session_id}: the one session_id key, a string. NULL after answering. */
static const char *session_param(struct client *c, const struct tp_rpc *rpc)
{
	json_t *id = json_object_get(rpc->params, "session_id");
	if (!json_is_object(rpc->params) || !json_is_string(id) ||
	    json_object_size(rpc->params) != 1) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "params must be {\"session_id\": a session's id}");
		return NULL;
	}
	return json_string_value(id);
}

void tp_sess_close(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	const char *id = session_param(c, rpc);
	struct session *s = id ? tp_sess_find(h, c, id) : NULL;
	if (id == NULL)
		return;
	if (s == NULL) {
		tp_sess_unknown(h, c, rpc->id, id);
		return;
	}
	json_t *r = close_session(h, s);
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

static json_t *list_json(struct tp_host *h, const struct client *c)
{
	double now = tp_now_ms();
	tp_sess_watch(h, now, TP_WATCH_ALL);
	json_t *a = json_array();
	for (const struct session *s = h->sessions; a != NULL && s != NULL; s = s->next) {
		if (s->owner != c)
			continue;
		int running = s->w != NULL && s->w->exec != NULL;
		double idle = running || queued_on(h, s) ? 0 : now - s->last_used;
		json_array_append_new(
		    a,
		    json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:b, s:i}", "session_id", s->id,
			      "lang", h->zyg[s->zi].lang->name, "policy", policy_of(h, s)->name,
			      "age_ms", (json_int_t)(now - s->opened), "idle_ms", (json_int_t)idle,
			      "execs", (json_int_t)s->done, "memory_bytes", (json_int_t)s->memory,
			      "running", running, "queued", queued_on(h, s)));
	}
	return a ? json_pack("{s:o}", "sessions", a) : NULL;
}

void tp_sess_list(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	if (rpc->params != NULL &&
	    !(json_is_object(rpc->params) && json_object_size(rpc->params) == 0)) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, "params must be {} or absent");
		return;
	}
	json_t *r = list_json(h, c);
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

/* Closes s (stopping a running exec, which is answered cancelled); its summary. */
static json_t *close_session(struct tp_host *h, struct session *s)
{
	json_t *r = json_pack("{s:s, s:b, s:I}", "session_id", s->id, "closed", 1, "execs",
			      (json_int_t)s->done);
	/* A running exec is stopped: its reply says cancelled and session_lost. */
	if (s->w != NULL && s->w->exec != NULL && !s->w->answered)
		tp_err_set(&s->w->exec->verdict, TP_KIND_CANCELLED, TP_LAYER_HOST, 0,
			   "the session was closed while this exec ran (sandbox/session/close)");
	tp_sess_end(h, s, "closed by the client");
	return r;
}

/* The MCP tools list_sessions {} and close_session {session_id}: tool results,
 * isError (with the reason as its text) for bad arguments or a session that
 * is not open. */
void tp_sess_mcp_tool(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
		      const char *name)
{
	json_t *args = json_object_get(rpc->params, "arguments");
	json_t *r = NULL;
	char msg[256] = "";
	if (args != NULL && !json_is_object(args)) {
		snprintf(msg, sizeof msg, "'arguments' must be an object");
	} else if (strcmp(name, "list_sessions") == 0) {
		if (args != NULL && json_object_size(args) != 0)
			snprintf(msg, sizeof msg, "list_sessions takes no arguments");
		else
			r = list_json(h, c);
	} else {
		json_t *id = json_object_get(args, "session_id");
		struct session *s =
		    json_is_string(id) ? tp_sess_find(h, c, json_string_value(id)) : NULL;
		const char *why =
		    json_is_string(id) ? ended_why(h, c, json_string_value(id)) : NULL;
		if (!json_is_string(id) || json_object_size(args) != 1)
			snprintf(msg, sizeof msg, "close_session takes {\"session_id\": a string}");
		else if (s == NULL && why != NULL)
			snprintf(msg, sizeof msg, "session '%s' has ended: %s",
				 json_string_value(id), why);
		else if (s == NULL)
			snprintf(msg, sizeof msg, "unknown session '%.40s'", json_string_value(id));
		else
			r = close_session(h, s);
	}
	json_t *res = r != NULL ? tp_mcp_tool_value(r, 0) : msg[0] ? tp_mcp_tool_text(msg) : NULL;
	tp_answer_tool_reply(c, rpc->id, rpc->params, res);
}

/* ---- its execs ---------------------------------------------------------------------- */

int tp_sess_admit(struct tp_host *h, struct session *s, const json_t *rpc_id, double *wait_ms)
{
	const struct tp_policy *p = policy_of(h, s);
	char why[160];
	double now = tp_now_ms();
	*wait_ms = 0;
	if (s->accepted >= p->session.max_execs) {
		snprintf(why, sizeof why,
			 "it has had its %" PRIu64 " execs (session.max_execs of policy '%s')",
			 p->session.max_execs, p->name);
	} else if (now - s->opened >= (double)p->session.lifetime_ms) {
		snprintf(why, sizeof why,
			 "it is older than %" PRIu64 " ms (session.lifetime_ms of policy '%s')",
			 p->session.lifetime_ms, p->name);
	} else {
		uint64_t cap = p->rate.session_per_minute;
		if (cap == 0 ||
		    (*wait_ms = tp_bucket_take(&s->tokens, &s->tokens_at, cap, now)) == 0)
			return 0;
		if (*wait_ms < 1)
			*wait_ms = 1;
		return -1;
	}
	char msg[256];
	snprintf(msg, sizeof msg, "session '%s' can run no more: %s", s->id, why);
	tp_out_error(s->owner, (json_t *)rpc_id, TP_RPC_NO_SESSION, msg);
	if (!busy(h, s))
		tp_sess_end(h, s, why);
	return -1;
}

void tp_sess_exec_done(struct tp_host *h, struct worker *w)
{
	struct session *s = w->sess;
	struct tp_shm_view view;
	tp_shm_snapshot(w->shm, w->area, &view);
	s->memory = view.mem_peak;
	if (w->reply != NULL)
		w->cpu_prior += (double)w->reply->usage.cpu_us / 1000.0;
	s->done++;
	s->last_used = tp_now_ms();
	tp_exec_free(w->exec);
	w->exec = NULL;
	w->answered = 0;
	w->shm->stop = 0; /* the next exec starts unasked */
	w->stop_pending = 0;
	if (w->reply != NULL)
		tp_reply_free(w->reply);
	free(w->reply);
	w->reply = NULL;
	/* Idle from here, as far as the kernel says: the watch starts now, or,
	 * for a worker whose pid the zygote has not told yet (its reply came
	 * first: it can on a loaded machine), when the pid comes. */
	char state;
	w->idle_unborn = w->pid <= 0;
	if (w->pid <= 0 || tp_proc_stat(w->pid, &state, &w->idle_cpu_ms) != 0)
		w->idle_cpu_ms = -1; /* gone: its exit is reaped */
	s->next_watch = s->last_used + IDLE_WATCH_MS;
	const struct tp_policy *p = policy_of(h, s);
	char why[160];
	if (s->done >= p->session.max_execs && !queued_on(h, s)) {
		snprintf(why, sizeof why,
			 "it has had its %" PRIu64 " execs (session.max_execs of policy '%s')",
			 p->session.max_execs, p->name);
		tp_sess_end(h, s, why);
	}
}

int tp_sess_worker_idle(const struct worker *w)
{
	return w->sess != NULL && w->exec == NULL && !w->exited && !w->killed;
}

/* ---- the idle watch ---------------------------------------------------------------- */

/* A session's worker that replied says it waits for the next request; the host
 * believes the kernel instead. Native code under kernel-only can answer its
 * exec with a well-formed reply and run on (its CPU timer off, its stop signal
 * ignored), outside --jobs and every exec's limits, and read the session's next
 * request when it comes. So, from its reply to its next exec:
 *   - its CPU time (utime+stime in /proc/PID/stat, which the host reads: the
 *     host is not sandboxed) may grow by at most IDLE_CPU_TOLERANCE_MS. It is
 *     read every IDLE_WATCH_MS, on sandbox/session/list, and before the next
 *     exec is handed over; a worker past it is killed and its session ended.
 *   - the next exec is handed over only while the worker sleeps (state S: it
 *     is blocked in a system call, as an honest one is in its channel's read);
 *     one that is runnable (R) waits, read again every IDLE_RETRY_MS, until it
 *     sleeps or the watch ends it. A runnable worker is not ended for being
 *     runnable: on a loaded machine an honest one finishing its reply can wait
 *     for a CPU; its CPU time is what counts.
 * An honest worker's idle CPU is its cleanup after the reply (scrubbing and
 * freeing the request and the result): well under 10 ms, which /proc counts in
 * 10 ms ticks. The tolerance is ten ticks: ample for a loaded machine, and a
 * worker that spins is found within IDLE_WATCH_MS plus the tolerance. */

int tp_sess_worker_waiting(const struct worker *w)
{
	char state;
	double cpu;
	if (!tp_sess_worker_idle(w))
		return 0;
	/* Replied before its pid was told: not watchable yet, so not handed
	 * anything (the pid comes on the zygote's channel, which wakes the loop). */
	if (w->idle_unborn)
		return 0;
	/* Not yet born, or fresh from the zygote (its lockdown may still run):
	 * nothing of the client's has run in it. */
	if (w->pid <= 0 || w->idle_cpu_ms < 0)
		return 1;
	return tp_proc_stat(w->pid, &state, &cpu) == 0 && state == 'S';
}

void tp_sess_worker_born(struct worker *w)
{
	char state;
	if (!w->idle_unborn)
		return;
	w->idle_unborn = 0;
	if (!tp_sess_worker_idle(w) || tp_proc_stat(w->pid, &state, &w->idle_cpu_ms) != 0) {
		w->idle_cpu_ms = -1; /* gone: its exit is reaped */
		return;
	}
	/* What it ran between its reply and now counts as the exec's: that is
	 * one pass of the host's loop. */
	w->sess->next_watch = tp_now_ms() + IDLE_WATCH_MS;
}

#define IDLE_SPIN_WHY                                                                              \
	"the session's worker kept running after its reply (more than %.0f ms of CPU while "       \
	"idle): session ended"

/* s's worker ran while idle: killed, its queued execs answered crashed (they
 * never ran), the session ended. */
static void end_running(struct tp_host *h, struct session *s, double used)
{
	char why[160], log[64];
	snprintf(why, sizeof why, IDLE_SPIN_WHY, IDLE_CPU_TOLERANCE_MS);
	snprintf(log, sizeof log, "%.0f ms", used);
	tp_out_log("a session's worker used %s of CPU while idle: its session is ended", log);
	tp_worker_kill(s->w);
	struct exec *e = h->qhead;
	while (e != NULL) {
		struct exec *next = e->next;
		if (e->sess == s) {
			tp_queue_remove(h, e);
			e->sess = NULL; /* its reply says session_lost */
			tp_err_set(&e->verdict, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0, "%s", why);
			if (e->id != NULL && !e->cancelled)
				tp_answer_unrun(h, e);
			tp_exec_free(e);
		}
		e = next;
	}
	tp_sess_end(h, s, why);
}

void tp_sess_watch(struct tp_host *h, double now, enum tp_watch which)
{
	struct session *s = h->sessions;
	while (s != NULL) {
		struct session *next = s->next;
		struct worker *w = s->w;
		char state;
		double cpu;
		if (w != NULL && tp_sess_worker_idle(w) && w->pid > 0 && w->idle_cpu_ms >= 0 &&
		    (which == TP_WATCH_ALL || now >= s->next_watch ||
		     (which == TP_WATCH_QUEUED && queued_on(h, s) > 0))) {
			s->next_watch = now + IDLE_WATCH_MS;
			if (tp_proc_stat(w->pid, &state, &cpu) == 0 &&
			    cpu - w->idle_cpu_ms > IDLE_CPU_TOLERANCE_MS)
				end_running(h, s, cpu - w->idle_cpu_ms);
		}
		s = next;
	}
}

/* ---- expiry ------------------------------------------------------------------------ */

/* When s expires if nothing runs in it: the earlier of its idle and life ends. */
static double expiry(const struct tp_host *h, const struct session *s, const char **what)
{
	const struct tp_policy_session *ps = &policy_of(h, s)->session;
	double idle_end = s->last_used + (double)ps->idle_ms;
	double life_end = s->opened + (double)ps->lifetime_ms;
	*what = idle_end <= life_end ? "idle_ms" : "lifetime_ms";
	return idle_end <= life_end ? idle_end : life_end;
}

void tp_sess_check_timeouts(struct tp_host *h, double now)
{
	tp_sess_watch(h, now, TP_WATCH_DUE);
	struct session *s = h->sessions;
	while (s != NULL) {
		struct session *next = s->next;
		const char *what;
		double at = expiry(h, s, &what);
		if (now >= at && !busy(h, s)) {
			char why[160];
			const struct tp_policy *p = policy_of(h, s);
			if (strcmp(what, "idle_ms") == 0)
				snprintf(why, sizeof why,
					 "it was idle for %" PRIu64
					 " ms (session.idle_ms of policy '%s')",
					 p->session.idle_ms, p->name);
			else
				snprintf(why, sizeof why,
					 "it reached its lifetime of %" PRIu64
					 " ms (session.lifetime_ms of policy '%s')",
					 p->session.lifetime_ms, p->name);
			tp_sess_end(h, s, why);
		}
		s = next;
	}
}

double tp_sess_next_timeout(const struct tp_host *h, double now)
{
	double best = -1;
	for (const struct session *s = h->sessions; s != NULL; s = s->next) {
		const char *what;
		const struct worker *w = s->w;
		int any = 0;
		double left = 0;
		if (w != NULL && tp_sess_worker_idle(w) && w->pid > 0 && w->idle_cpu_ms >= 0) {
			/* The idle watch; sooner for an exec waiting for it to sleep. */
			left = s->next_watch - now;
			if (queued_on(h, s) > 0 && !tp_sess_worker_waiting(w) &&
			    IDLE_RETRY_MS < left)
				left = IDLE_RETRY_MS;
			any = 1;
		}
		/* A busy one's exec end sets last_used; the loop wakes then. */
		if (!busy(h, s) && (!any || expiry(h, s, &what) - now < left)) {
			left = expiry(h, s, &what) - now;
			any = 1;
		}
		if (!any)
			continue;
		if (left < 0)
			left = 0;
		if (best < 0 || left < best)
			best = left;
	}
	return best;
}
