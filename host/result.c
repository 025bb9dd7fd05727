/*
 * result.c — checking worker replies and composing exec results.
 * Nothing from a worker is forwarded unchecked: the reply is re-validated field
 * by field and re-capped, output is clamped and made valid UTF-8.
 */
#include "result.h"
#include "base64.h"

#include <math.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jsonio.h"
#include "msg.h"
#include "utf8.h"

void tp_syscall_name(int nr, char *buf, size_t len)
{
	char *name = nr >= 0 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr) : NULL;

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "nr_%d", nr);
	free(name);
}

/* ---- composing the exec result -------------------------------------------- */

/* NULL when out of memory: output is never silently replaced by "". */
static json_t *text_json(const char *s, size_t n)
{
	return tp_utf8_json(s, n);
}

/* Steals v. A member that cannot be added drops the whole object: an error
 * without its limit or layer must not pass for a complete one. */
static void put(json_t **obj, const char *key, json_t *v)
{
	if (json_object_set_new(*obj, key, v) != 0) {
		json_decref(*obj);
		*obj = NULL;
	}
}

static json_t *limit_json(const char *name, uint64_t limit, uint64_t used)
{
	return json_pack("{s:s, s:I, s:I}", "name", name, "limit", (json_int_t)limit, "used",
			 (json_int_t)used);
}

static json_t *new_error(enum tp_kind kind, enum tp_layer layer, const char *msg)
{
	return json_pack("{s:s, s:s, s:n, s:s, s:n, s:n, s:n}", "kind", tp_kind_name(kind), "layer",
			 tp_layer_name(layer), "type", "message", msg, "traceback", "line",
			 "column");
}

/* A worker's text, made valid UTF-8; absent stays absent (null). */
static json_t *text_or_null(const struct tp_text *t)
{
	return t->s ? tp_utf8_json(t->s, t->n) : json_null();
}

static const char *signame(int sig)
{
	const char *abbrev = sigabbrev_np(sig);
	static char buf[32];
	snprintf(buf, sizeof buf, "SIG%s", abbrev ? abbrev : "UNKNOWN");
	return buf;
}

static enum tp_layer layer_of(enum tp_kind k)
{
	switch (k) {
	case TP_KIND_TIMEOUT: return TP_LAYER_HOST;
	case TP_KIND_SANDBOX_VIOLATION: return TP_LAYER_KERNEL;
	case TP_KIND_CRASHED: return TP_LAYER_PROCESS;
	case TP_KIND_INTERNAL: return TP_LAYER_HOST;
	default: return TP_LAYER_LANGUAGE;
	}
}

/* Who enforced the limit of kind k. A policy without a language layer has no
 * language-layer memory or CPU enforcement (the allocators only measure, no CPU
 * hook runs: sandbox/verdict.h), so its memory_limit and cpu_limit are the
 * kernel's: RLIMIT_AS failed the allocation, the CPU timer or RLIMIT_CPU killed
 * the worker. The host decides this from the policy it holds; a worker's page
 * or reply cannot move a verdict to the kernel layer (nor away from it). */
static int kernel_limit(const struct tp_outcome *o, enum tp_kind k)
{
	return o->kernel_limits && (k == TP_KIND_MEMORY_LIMIT || k == TP_KIND_CPU_LIMIT);
}

/* The reply's own failure, as the client's error object. */
static json_t *reply_error(const struct tp_outcome *o, const struct tp_failure *f)
{
	json_t *e =
	    new_error(f->kind, kernel_limit(o, f->kind) ? TP_LAYER_KERNEL : layer_of(f->kind), "?");
	put(&e, "type", text_or_null(&f->type));
	put(&e, "message", text_or_null(&f->message));
	put(&e, "traceback", text_or_null(&f->traceback));
	put(&e, "line", f->line > 0 ? json_integer(f->line) : json_null());
	put(&e, "column", f->column > 0 ? json_integer(f->column) : json_null());
	if (f->data != NULL) /* decoded within the exec's result caps */
		put(&e, "data", json_incref(f->data));
	if (f->limit_id >= 0)
		put(&e, "limit",
		    limit_json(tp_limit_name((enum tp_limit_id)f->limit_id), f->limit, f->used));
	return e;
}

/* The sticky flag in the page decides, whatever the code or its reply did after. */
static json_t *tripped_error(const struct tp_outcome *o)
{
	const struct tp_shm_view *v = o->shm;
	enum tp_kind k = (enum tp_kind)v->tripped;
	int self_killed = o->reply == NULL && o->exited && WIFEXITED(o->status) &&
			  WEXITSTATUS(o->status) == TP_EXIT_LIMIT;
	int kernel = k == TP_KIND_SANDBOX_VIOLATION;
	int policy = k == TP_KIND_POLICY_VIOLATION || kernel;
	const struct tp_failure *rf = o->reply && !o->reply->ok ? &o->reply->error : NULL;
	/* A policy kill is the language layer's verdict, even when it ended the
	 * process; a kernel refusal the runtime saw (sticky) is the kernel's. */
	json_t *e = new_error(k,
			      kernel || kernel_limit(o, k) ? TP_LAYER_KERNEL
			      : self_killed && !policy     ? TP_LAYER_PROCESS
							   : TP_LAYER_LANGUAGE,
			      kernel   ? "refused by the kernel layer"
			      : policy ? "refused by the language layer"
				       : tp_limit_message(v->tripped_limit));
	if (policy) {
		if (!kernel)
			put(&e, "type", json_string("PolicyViolation"));
		if (v->note[0] != '\0')
			put(&e, "message", tp_utf8_json(v->note, strlen(v->note)));
	}
	if (rf != NULL && rf->kind == k) {
		if (rf->traceback.s)
			put(&e, "traceback", text_or_null(&rf->traceback));
		if (rf->line > 0)
			put(&e, "line", json_integer(rf->line));
		if (rf->column > 0)
			put(&e, "column", json_integer(rf->column));
		if (policy) /* the reply names what was refused */
			put(&e, "message", text_or_null(&rf->message));
	}
	if (v->tripped_limit >= 0)
		put(&e, "limit",
		    limit_json(tp_limit_name((enum tp_limit_id)v->tripped_limit), v->limit_value,
			       v->limit_used));
	return e;
}

static int violated(const struct tp_outcome *o)
{
	if (!o->exited || o->reply != NULL)
		return 0;
	if (WIFSIGNALED(o->status) && WTERMSIG(o->status) == SIGSYS)
		return 1;
	return WIFEXITED(o->status) && WEXITSTATUS(o->status) == TP_EXIT_VIOLATION && o->shm &&
	       o->shm->syscall_nr >= 0;
}

/* A seccomp trap: the reporter recorded the number (exit 159), or SIGSYS was
 * blocked and the kernel killed the worker without one. */
static json_t *violation_error(const struct tp_outcome *o)
{
	char name[64] = "unknown", msg[256];
	if (o->shm && o->shm->syscall_nr >= 0) {
		tp_syscall_name(o->shm->syscall_nr, name, sizeof name);
		snprintf(msg, sizeof msg, "seccomp refused the system call '%s'", name);
	} else {
		/* No report: the filter's bad-ABI action kills outright, and a trap
		 * while SIGSYS is blocked becomes a kill too. */
		snprintf(msg, sizeof msg,
			 "seccomp killed the worker for a system call it does not name: one of "
			 "another ABI (x32, or i386's int $0x80), which the filter ends outright, "
			 "or one trapped while SIGSYS was blocked");
	}
	json_t *e = new_error(TP_KIND_SANDBOX_VIOLATION, TP_LAYER_KERNEL, msg);
	put(&e, "syscall", json_string(name));
	/* The number as the trap saw it (the page's, bounded by tp_shm_snapshot);
	 * null when no report named one. */
	put(&e, "syscall_nr",
	    o->shm && o->shm->syscall_nr >= 0 ? json_integer(o->shm->syscall_nr) : json_null());
	return e;
}

static json_t *death_error(const struct tp_outcome *o)
{
	char msg[160];
	/* The exec's own CPU time when the page gave its start (cpu_exec_ms), else
	 * the worker's (its life, less a session's earlier execs). */
	double c = o->cpu_exec_ms > 0 ? o->cpu_exec_ms : o->cpu_ms;
	uint64_t cpu = c > 0 ? (uint64_t)(c + 0.5) : 0;
	if (!o->exited)
		return new_error(TP_KIND_INTERNAL, TP_LAYER_HOST, "worker lost");
	if (WIFSIGNALED(o->status)) {
		int sig = WTERMSIG(o->status);
		/* ITIMER_PROF: SIGPROF at its default action is a kernel-only worker's
		 * CPU timer (sandbox/verdict.c), armed at cpu_ms. The kernel counts it
		 * in ticks, which may run a few percent ahead of the scheduler's exact
		 * clock that cpu measures: its verdict stands, and at least the budget
		 * was used (a snippet that re-armed the timer itself ends its own exec
		 * early, reported the same). Elsewhere a SIGPROF death is a cpu_limit
		 * only past the budget, else a crash. */
		if (sig == SIGPROF && (o->kernel_limits || cpu >= o->limits->cpu_ms)) {
			json_t *e = new_error(TP_KIND_CPU_LIMIT, TP_LAYER_KERNEL,
					      tp_limit_message(TP_LIMIT_CPU_MS));
			put(&e, "limit",
			    limit_json("cpu_ms", o->limits->cpu_ms,
				       cpu > o->limits->cpu_ms ? cpu : o->limits->cpu_ms));
			return e;
		}
		/* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one. */
		if (sig == SIGXCPU || (sig == SIGKILL && cpu >= o->limits->cpu_ms)) {
			json_t *e = new_error(TP_KIND_CPU_LIMIT, TP_LAYER_KERNEL,
					      tp_limit_message(TP_LIMIT_CPU_MS));
			put(&e, "limit", limit_json("cpu_ms", o->limits->cpu_ms, cpu));
			return e;
		}
		snprintf(msg, sizeof msg, "the worker was killed by %s", signame(sig));
		json_t *e = new_error(TP_KIND_CRASHED, TP_LAYER_PROCESS, msg);
		put(&e, "signal", json_string(signame(sig)));
		return e;
	}
	snprintf(msg, sizeof msg, "the worker exited with status %d before replying",
		 WEXITSTATUS(o->status));
	return new_error(TP_KIND_INTERNAL, TP_LAYER_PROCESS, msg);
}

/* The error object, or NULL with *ok set when the exec succeeded. NULL with
 * *ok clear means memory ran out: the caller must not report success. */
static json_t *verdict(const struct tp_outcome *o, int *ok)
{
	*ok = 0;
	if (tp_err_failed(o->host) && o->host->kind == TP_KIND_TIMEOUT) {
		json_t *e =
		    new_error(TP_KIND_TIMEOUT, o->host->layer, tp_limit_message(TP_LIMIT_WALL_MS));
		put(&e, "limit", limit_json("wall_ms", o->limits->wall_ms, (uint64_t)o->wall_ms));
		return e;
	}
	if (tp_err_failed(o->host) && o->host->kind == TP_KIND_QUEUE_TIMEOUT) {
		json_t *e = new_error(TP_KIND_QUEUE_TIMEOUT, o->host->layer, o->host->msg);
		put(&e, "limit", limit_json("wall_ms", o->limits->wall_ms, (uint64_t)o->queue_ms));
		return e;
	}
	if (tp_err_failed(o->host) && o->host->kind == TP_KIND_OUTPUT_LIMIT) {
		json_t *e = new_error(TP_KIND_OUTPUT_LIMIT, o->host->layer, o->host->msg);
		put(&e, "limit",
		    limit_json("output_bytes", o->limits->output_bytes,
			       o->shm ? o->shm->out_claimed : o->limits->output_bytes));
		return e;
	}
	if (tp_err_failed(o->host) && o->host->kind == TP_KIND_CPU_LIMIT) {
		/* A session's exec the host killed at its CPU bound (pool.c). */
		double used = o->cpu_ms > 0 ? o->cpu_ms : o->cpu_exec_ms;
		json_t *e = new_error(TP_KIND_CPU_LIMIT, o->host->layer, o->host->msg);
		put(&e, "limit", limit_json("cpu_ms", o->limits->cpu_ms, (uint64_t)used));
		return e;
	}
	if (tp_err_failed(o->host) && o->host->kind == TP_KIND_TOOL_LIMIT) {
		json_t *e = new_error(TP_KIND_TOOL_LIMIT, o->host->layer, o->host->msg);
		put(&e, "limit", limit_json("tool_calls", o->limits->tool_calls, o->tool_attempts));
		return e;
	}
	if (tp_err_failed(o->host))
		return new_error(o->host->kind, o->host->layer,
				 o->host->msg[0] ? o->host->msg : "internal error");
	if (o->shm && o->shm->tripped)
		return tripped_error(o);
	if (violated(o))
		return violation_error(o);
	if (o->reply != NULL) {
		if (o->reply->ok) {
			*ok = 1;
			return NULL;
		}
		return reply_error(o, &o->reply->error);
	}
	return death_error(o);
}

static json_t *usage_json(const struct tp_outcome *o)
{
	const struct tp_usage *u = o->reply ? &o->reply->usage : NULL;
	json_int_t instr =
	    u ? (json_int_t)u->instructions : (o->shm ? (json_int_t)o->shm->instructions : 0);
	json_int_t peak =
	    u ? (json_int_t)u->memory_peak_bytes : (o->shm ? (json_int_t)o->shm->mem_peak : 0);
	double cpu = u ? (double)u->cpu_us / 1000.0 : (o->cpu_exec_ms > 0 ? o->cpu_exec_ms : 0.0);
	return json_pack("{s:I, s:I, s:f, s:f, s:f, s:I}", "instructions", instr,
			 "memory_peak_bytes", peak, "cpu_ms", round(cpu * 1000) / 1000, "wall_ms",
			 round(o->wall_ms * 1000) / 1000, "queue_ms",
			 round(o->queue_ms * 1000) / 1000, "tool_calls", (json_int_t)o->tool_calls);
}

/* The value as a REPL shows it: the worker's text, or the repr that is the
 * value; null for no value (a REPL shows nothing). */
static json_t *value_text(const struct tp_outcome *o)
{
	const struct tp_reply *r = o->reply;
	if (r->value_repr && json_is_string(r->value))
		return json_incref(r->value);
	if (r->text_is_value && o->text_stand_in != NULL)
		return json_incref(o->text_stand_in);
	/* The value's JSON text, which the decoder read as UTF-8: its own copy, or
	 * value_json itself (a value kept as text). */
	if (r->text_is_value && r->text.s == NULL && r->value_json != NULL)
		return json_stringn_nocheck(r->value_json, r->value_json_n);
	if (r->text.s == NULL)
		return json_null();
	if (r->text_is_value)
		return json_stringn_nocheck(r->text.s, r->text.n);
	return text_json(r->text.s, r->text.n);
}

/* [{mime, data}]: each PNG in base64. NULL when out of memory. */
static json_t *images_json(const struct tp_reply *r)
{
	json_t *a = json_array();
	for (unsigned i = 0; a != NULL && i < r->nimages; i++) {
		char *b64 = malloc(tp_base64_encoded_len(r->images[i].n) + 1);
		json_t *img = NULL;
		if (b64 != NULL) {
			tp_base64_encode((const unsigned char *)r->images[i].s, r->images[i].n,
					 b64);
			img = json_pack("{s:s, s:s}", "mime", "image/png", "data", b64);
		}
		free(b64);
		if (img == NULL || json_array_append_new(a, img) != 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* A worker's rule (from its page): RULE is 1..96 of [A-Za-z0-9_.:/-], then
 * optionally one space and a path. A rule that is not one is dropped: a worker
 * may mislabel its own refusal, never put anything else in the field. */
static int rule_ok(const char *s, size_t *rule_len)
{
	size_t n = 0;
	while (s[n] != '\0' && s[n] != ' ') {
		char c = s[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '/' || c == '-'))
			return 0;
		n++;
	}
	*rule_len = n;
	return n > 0 && n <= 96;
}

/* A refusal's message names its policy and rule (README): one that does not
 * say "policy NAME" (or "policy 'NAME'") already gets " (policy NAME, rule RULE)". */
static void name_policy(json_t **e, const char *policy)
{
	const char *kind = json_string_value(json_object_get(*e, "kind"));
	const char *msg = json_string_value(json_object_get(*e, "message"));
	const char *rule = json_string_value(json_object_get(*e, "rule"));
	char want[160];

	if (*e == NULL || policy == NULL || msg == NULL || rule == NULL || kind == NULL ||
	    (strcmp(kind, "policy_violation") != 0 && strcmp(kind, "sandbox_violation") != 0))
		return;
	snprintf(want, sizeof want, "policy %s", policy);
	if (strstr(msg, want) != NULL)
		return;
	snprintf(want, sizeof want, "policy '%s'", policy);
	if (strstr(msg, want) != NULL)
		return;
	size_t n = strlen(msg) + strlen(policy) + strlen(rule) + 32;
	char *m = malloc(n);
	if (m == NULL) {
		json_decref(*e);
		*e = NULL;
		return;
	}
	snprintf(m, n, "%s (policy %s, rule %s)", msg, policy, rule);
	put(e, "message", json_string(m));
	free(m);
}

/* error.rule (docs/protocol.md): what decided, as a policy key or a wall.
 * Limits and seccomp traps are the host's own finding; a refusal the language
 * layer made (or the kernel's, as the runtime saw it) is the worker's claim. */
static void put_rule(json_t **e, const struct tp_outcome *o)
{
	const json_t *lim = json_object_get(*e, "limit");
	const char *kind = json_string_value(json_object_get(*e, "kind"));
	const char *sys = json_string_value(json_object_get(*e, "syscall"));
	char buf[128];
	size_t n;

	if (json_is_object(lim)) {
		snprintf(buf, sizeof buf, "limits.%s",
			 json_string_value(json_object_get(lim, "name")));
		put(e, "rule", json_string(buf));
	} else if (o->rule != NULL) {
		put(e, "rule", json_string(o->rule));
	} else if (sys != NULL) {
		snprintf(buf, sizeof buf, strcmp(sys, "unknown") == 0 ? "seccomp" : "seccomp:%s",
			 sys);
		put(e, "rule", json_string(buf));
	} else if (kind != NULL && (strcmp(kind, "policy_violation") == 0 ||
				    strcmp(kind, "sandbox_violation") == 0)) {
		const char *r = o->shm ? o->shm->rule : "";
		if (rule_ok(r, &n)) {
			put(e, "rule", json_stringn(r, n));
			if (r[n] == ' ' && r[n + 1] != '\0')
				put(e, "path", tp_utf8_json(r + n + 1, strlen(r + n + 1)));
		} else {
			/* Every refusal of ours names its rule; this is a worker's silence. */
			put(e, "rule",
			    json_string(strcmp(kind, "policy_violation") == 0 ? "language"
									      : "kernel"));
		}
	} else {
		put(e, "rule", json_null());
	}
	if (*e != NULL)
		put(e, "policy", o->policy ? json_string(o->policy) : json_null());
	name_policy(e, o->policy);
}

json_t *tp_result_build(const struct tp_outcome *o)
{
	int ok;
	json_t *err = verdict(o, &ok);
	if (err == NULL && !ok)
		return NULL; /* out of memory: an error must never read as success */
	if (err != NULL)
		put_rule(&err, o);
	if (err == NULL && !ok)
		return NULL;
	json_t *value = !ok ? NULL : o->value_stand_in ? o->value_stand_in : o->reply->value;
	if (ok && value == NULL)
		return NULL; /* a value kept as text whose tree could not be made: out of memory */
	const struct tp_shm_view *v = o->shm;
	json_t *trunc = json_pack("{s:b, s:b}", "stdout", v ? v->truncated[0] : 0, "stderr",
				  v ? v->truncated[1] : 0);
	if (trunc != NULL && ok && o->reply->text_cut)
		put(&trunc, "text", json_true());
	json_t *r =
	    json_pack("{s:b, s:O, s:o, s:o, s:o, s:o, s:o, s:o}", "ok", ok, "value",
		      value ? value : json_null(), "text", ok ? value_text(o) : json_null(),
		      "stdout", v ? text_json(v->out[0], v->len[0]) : json_string(""), "stderr",
		      v ? text_json(v->out[1], v->len[1]) : json_string(""), "truncated", trunc,
		      "error", err ? err : json_null(), "usage", usage_json(o));
	/* A value that is the repr of a non-JSON object says so. */
	if (r != NULL && value != NULL && o->reply->value_repr)
		put(&r, "value_repr", json_true());
	if (r != NULL && ok && o->reply->nimages > 0)
		put(&r, "images", images_json(o->reply));
	/* Numbers JSON has none for, held as null in value (docs/protocol.md). */
	if (r != NULL && ok && o->reply->nonfinite != NULL)
		put(&r, "nonfinite", json_incref(o->reply->nonfinite));
	return r;
}
