/*
 * result.c — checking worker replies and composing exec results.
 * Nothing from a worker is forwarded unchecked: the reply is re-validated field
 * by field and re-capped, output is clamped and made valid UTF-8.
 */
#include "result.h"

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

#define MAX_TEXT (64u << 10) /* message, traceback */
#define MAX_TYPE 256u

/* ---- checking a worker reply ---------------------------------------------- */

size_t tp_result_max_frame(const struct tp_limits *lim)
{
	return (size_t)lim->result_bytes * 6 + 2 * MAX_TEXT + 65536;
}

static int depth_ok(const json_t *v, size_t depth, size_t max)
{
	size_t i;
	const char *k;
	json_t *c;
	if (!json_is_object(v) && !json_is_array(v))
		return 1;
	if (depth >= max)
		return 0;
	if (json_is_array(v)) {
		json_array_foreach(v, i, c) if (!depth_ok(c, depth + 1, max)) return 0;
	} else {
		json_object_foreach((json_t *)v, k, c) if (!depth_ok(c, depth + 1, max)) return 0;
	}
	return 1;
}

static int text_ok(const json_t *v, size_t max)
{
	return v == NULL || json_is_null(v) || (json_is_string(v) && json_string_length(v) <= max);
}

static int nonneg_int(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

static int check_error(const json_t *e)
{
	static const int claimable[] = { TP_KIND_SYNTAX_ERROR,    TP_KIND_RUNTIME_ERROR,
					 TP_KIND_MEMORY_LIMIT,    TP_KIND_INSTRUCTION_LIMIT,
					 TP_KIND_CPU_LIMIT,       TP_KIND_OUTPUT_LIMIT,
					 TP_KIND_POLICY_VIOLATION };
	const char *kind = json_string_value(json_object_get(e, "kind"));
	int k = kind ? tp_kind_from_name(kind) : -1, found = 0;
	for (size_t i = 0; i < sizeof claimable / sizeof claimable[0]; i++)
		found |= claimable[i] == k;
	json_t *line = json_object_get(e, "line");
	json_t *lim = json_object_get(e, "limit");
	if (!found || !text_ok(json_object_get(e, "type"), MAX_TYPE) ||
	    !text_ok(json_object_get(e, "message"), MAX_TEXT) ||
	    !text_ok(json_object_get(e, "traceback"), MAX_TEXT))
		return -1;
	if (line != NULL && !json_is_null(line) && !nonneg_int(line))
		return -1;
	if (lim != NULL && !json_is_null(lim) &&
	    (!json_is_object(lim) || !text_ok(json_object_get(lim, "name"), 32) ||
	     !nonneg_int(json_object_get(lim, "limit")) ||
	     !nonneg_int(json_object_get(lim, "used"))))
		return -1;
	return 0;
}

static int check_usage(const json_t *u)
{
	json_t *cpu = json_object_get(u, "cpu_ms");
	return json_is_object(u) && nonneg_int(json_object_get(u, "instructions")) &&
		       nonneg_int(json_object_get(u, "memory_peak_bytes")) && json_is_number(cpu) &&
		       json_number_value(cpu) >= 0
		   ? 0
		   : -1;
}

/* All or nothing: a copy without its kind would pass for another verdict. */
static json_t *copy_error(const json_t *e)
{
	static const char *const keys[] = {
		"kind", "type", "message", "traceback", "line", "limit"
	};
	json_t *c = json_object();
	for (size_t i = 0; c != NULL && i < sizeof keys / sizeof keys[0]; i++) {
		json_t *v = json_object_get(e, keys[i]);
		if (v != NULL && json_object_set_new(c, keys[i], json_deep_copy(v)) != 0) {
			json_decref(c);
			return NULL;
		}
	}
	return c;
}

int tp_result_check_reply(const char *buf, size_t len, const struct tp_limits *lim, json_t **out,
			  char *err, size_t errlen)
{
	json_error_t jerr;
	int oom;
	json_t *m = tp_json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr, &oom);
	const char *why = NULL;
	json_t *ok, *value, *error, *usage;

	if (m == NULL && oom) {
		snprintf(err, errlen, "out of memory reading the worker reply");
		return -1;
	}
	if (m == NULL) {
		snprintf(err, errlen, "worker reply is not JSON: %s", jerr.text);
		return -1;
	}
	ok = json_object_get(m, "ok");
	json_t *repr = json_object_get(m, "value_repr");
	value = json_object_get(m, "value");
	error = json_object_get(m, "error");
	usage = json_object_get(m, "usage");
	if (!json_is_object(m) || !json_is_boolean(ok))
		why = "reply is not an object with a boolean ok";
	else if (repr != NULL && !json_is_boolean(repr))
		why = "value_repr is not a boolean";
	else if (usage == NULL || check_usage(usage) != 0)
		why = "bad usage";
	else if (json_is_true(ok) && (value == NULL || (error != NULL && !json_is_null(error))))
		why = "ok reply without value or with an error";
	else if (json_is_false(ok) && (!json_is_object(error) || check_error(error) != 0))
		why = "bad error object";
	else if (value != NULL && !depth_ok(value, 0, lim->result_depth))
		why = "value nested deeper than result_depth";
	else if (value != NULL &&
		 tp_json_size(value, JSON_COMPACT | JSON_ENCODE_ANY) > lim->result_bytes)
		why = "value larger than result_bytes"; /* or not measurable: out of memory */
	if (why != NULL) {
		snprintf(err, errlen, "worker reply refused: %s", why);
		json_decref(m);
		return -1;
	}
	json_t *clean = json_pack(
	    "{s:O, s:O, s:o, s:O}", "ok", ok, "value", value ? value : json_null(), "error",
	    json_is_object(error) ? copy_error(error) : json_null(), "usage", usage);
	if (clean != NULL && json_is_true(repr) &&
	    json_object_set_new(clean, "value_repr", json_true()) != 0) {
		json_decref(clean);
		clean = NULL;
	}
	json_decref(m);
	if (clean == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = clean;
	return 0;
}

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

/* Borrows v; absent members stay absent. */
static void put_opt(json_t **obj, const char *key, json_t *v)
{
	if (v != NULL)
		put(obj, key, json_incref(v));
}

static json_t *limit_json(const char *name, uint64_t limit, uint64_t used)
{
	return json_pack("{s:s, s:I, s:I}", "name", name, "limit", (json_int_t)limit, "used",
			 (json_int_t)used);
}

static json_t *new_error(enum tp_kind kind, enum tp_layer layer, const char *msg)
{
	return json_pack("{s:s, s:s, s:n, s:s, s:n, s:n}", "kind", tp_kind_name(kind), "layer",
			 tp_layer_name(layer), "type", "message", msg, "traceback", "line");
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

static const char *limit_message(enum tp_kind k)
{
	switch (k) {
	case TP_KIND_MEMORY_LIMIT: return "memory limit exceeded";
	case TP_KIND_INSTRUCTION_LIMIT: return "instruction limit exceeded";
	case TP_KIND_CPU_LIMIT: return "CPU time limit exceeded";
	case TP_KIND_OUTPUT_LIMIT: return "output limit exceeded";
	default: return "limit exceeded";
	}
}

/* The sticky flag in the page decides, whatever the code or its reply did after. */
static json_t *tripped_error(const struct tp_outcome *o)
{
	const struct tp_shm_view *v = o->shm;
	enum tp_kind k = (enum tp_kind)v->tripped;
	int self_killed = o->reply == NULL && o->exited && WIFEXITED(o->status) &&
			  WEXITSTATUS(o->status) == TP_EXIT_LIMIT;
	int policy = k == TP_KIND_POLICY_VIOLATION;
	json_t *re = o->reply ? json_object_get(o->reply, "error") : NULL;
	/* A policy kill is the language layer's verdict, even when it ended the process. */
	json_t *e = new_error(k, self_killed && !policy ? TP_LAYER_PROCESS : TP_LAYER_LANGUAGE,
			      policy ? "refused by the language layer" : limit_message(k));
	put(&e, "type", json_string(policy ? "PolicyViolation" : "limit"));
	if (policy && v->note[0] != '\0')
		put(&e, "message", tp_utf8_json(v->note, strlen(v->note)));
	if (json_is_object(re) &&
	    tp_kind_from_name(json_string_value(json_object_get(re, "kind"))) == (int)k) {
		put_opt(&e, "traceback", json_object_get(re, "traceback"));
		put_opt(&e, "line", json_object_get(re, "line"));
		if (policy) /* the reply names what was refused */
			put_opt(&e, "message", json_object_get(re, "message"));
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

static json_t *violation_error(const struct tp_outcome *o)
{
	char name[64] = "unknown", msg[160];
	if (o->shm && o->shm->syscall_nr >= 0)
		tp_syscall_name(o->shm->syscall_nr, name, sizeof name);
	snprintf(msg, sizeof msg, "the kernel refused the system call '%s'", name);
	json_t *e = new_error(TP_KIND_SANDBOX_VIOLATION, TP_LAYER_KERNEL, msg);
	put(&e, "syscall", json_string(name));
	return e;
}

static json_t *death_error(const struct tp_outcome *o)
{
	char msg[160];
	uint64_t cpu = o->cpu_ms > 0 ? (uint64_t)o->cpu_ms : 0;
	if (!o->exited)
		return new_error(TP_KIND_INTERNAL, TP_LAYER_HOST, "worker lost");
	if (WIFSIGNALED(o->status)) {
		int sig = WTERMSIG(o->status);
		/* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one. */
		if (sig == SIGXCPU || (sig == SIGKILL && cpu >= o->limits->cpu_ms)) {
			json_t *e = new_error(TP_KIND_CPU_LIMIT, TP_LAYER_KERNEL,
					      limit_message(TP_KIND_CPU_LIMIT));
			put(&e, "type", json_string("limit"));
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
	if (o->host_kind == TP_KIND_TIMEOUT) {
		json_t *e =
		    new_error(TP_KIND_TIMEOUT, TP_LAYER_HOST, "wall-clock time limit exceeded");
		put(&e, "type", json_string("limit"));
		put(&e, "limit", limit_json("wall_ms", o->limits->wall_ms, (uint64_t)o->wall_ms));
		return e;
	}
	if (o->host_kind != TP_KIND_NONE)
		return new_error(o->host_kind, layer_of(o->host_kind),
				 o->host_msg ? o->host_msg : "internal error");
	if (o->shm && o->shm->tripped)
		return tripped_error(o);
	if (violated(o))
		return violation_error(o);
	if (o->reply != NULL) {
		json_t *re = json_object_get(o->reply, "error");
		if (!json_is_object(re)) {
			*ok = 1;
			return NULL;
		}
		json_t *e = json_deep_copy(re);
		enum tp_kind k =
		    (enum tp_kind)tp_kind_from_name(json_string_value(json_object_get(re, "kind")));
		put(&e, "layer", json_string(tp_layer_name(layer_of(k))));
		return e;
	}
	return death_error(o);
}

static json_t *usage_json(const struct tp_outcome *o)
{
	json_t *u = o->reply ? json_object_get(o->reply, "usage") : NULL;
	json_int_t instr = u ? json_integer_value(json_object_get(u, "instructions"))
			     : (o->shm ? (json_int_t)o->shm->instructions : 0);
	json_int_t peak = u ? json_integer_value(json_object_get(u, "memory_peak_bytes"))
			    : (o->shm ? (json_int_t)o->shm->mem_peak : 0);
	double cpu =
	    u ? json_number_value(json_object_get(u, "cpu_ms")) : (o->cpu_ms > 0 ? o->cpu_ms : 0.0);
	return json_pack("{s:I, s:I, s:f, s:f, s:i}", "instructions", instr, "memory_peak_bytes",
			 peak, "cpu_ms", round(cpu * 1000) / 1000, "wall_ms",
			 round(o->wall_ms * 1000) / 1000, "tool_calls", 0);
}

json_t *tp_result_build(const struct tp_outcome *o)
{
	int ok;
	json_t *err = verdict(o, &ok);
	if (err == NULL && !ok)
		return NULL; /* out of memory: an error must never read as success */
	json_t *value = ok && o->reply ? json_object_get(o->reply, "value") : NULL;
	const struct tp_shm_view *v = o->shm;
	json_t *r = json_pack("{s:b, s:O, s:o, s:o, s:{s:b, s:b}, s:o, s:o}", "ok", ok, "value",
			      value ? value : json_null(), "stdout",
			      v ? text_json(v->out[0], v->len[0]) : json_string(""), "stderr",
			      v ? text_json(v->out[1], v->len[1]) : json_string(""), "truncated",
			      "stdout", v ? v->truncated[0] : 0, "stderr", v ? v->truncated[1] : 0,
			      "error", err ? err : json_null(), "usage", usage_json(o));
	/* A value that is the repr of a non-JSON object says so. */
	if (r != NULL && value != NULL && json_is_true(json_object_get(o->reply, "value_repr")))
		put(&r, "value_repr", json_true());
	return r;
}
