/*
 * lang_harness.h — the harness the language layers' unit tests share: one
 * zygote state built in this process, then a forked child per case that runs
 * one exec and sends its reply back through a pipe in the worker's own wire
 * format (common/msg.h), decoded as the host decodes it; output and the sticky
 * verdict come through a shared page, as between a worker and the host. The
 * tests read the decoded reply as a JSON object of the same fields.
 * harness_conformance() runs the scenarios every language shares
 * (tests/cases/conformance.json) in the language under test.
 */
#ifndef TP_LANG_HARNESS_H
#define TP_LANG_HARNESS_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"
#include "lang.h"
#include "tap.h"
#include "worker.h"

static const struct tp_lang *harness_lang;
static int harness_rehearse; /* the child rehearses first, as an idle worker does */
/* When set, the child first runs this code and then the language's reset (the
 * fresh state of isolation "state" for the next exec), as a reused worker does. */
static const char *harness_before;

#define AREA (64u << 10)

static struct tp_shm *shm;

struct run {
	json_t *reply; /* NULL when the worker sent none */
	int exit_code; /* -1 when killed by a signal */
	char out[AREA + 1], err[AREA + 1];
};

static inline struct tp_limits limits(void)
{
	return (struct tp_limits){ .memory_bytes = 16u << 20,
				   .instructions = 0,
				   .cpu_ms = 5000,
				   .wall_ms = 0,
				   .output_bytes = 32u << 10,
				   .result_bytes = 1u << 20,
				   .result_depth = 64 };
}

static inline void child(const struct tp_request *req, uint64_t entropy, int fd)
{
	struct tp_reply out;
	size_t n = 0;
	char *s = NULL;

	harness_lang->worker_init(entropy);
	if (harness_rehearse)
		tp_worker_rehearse(harness_lang, &req->limits, NULL);
	if (harness_before != NULL && harness_lang->reset != NULL) {
		struct tp_request pre = { .code = harness_before,
					  .code_len = strlen(harness_before),
					  .limits = req->limits };
		if (harness_lang->exec(&pre, shm, &out) != 0)
			_exit(3);
		tp_reply_free(&out);
		if (harness_lang->reset(entropy + 1) != 0)
			_exit(4);
	}
	if (harness_lang->exec(req, shm, &out) == 0)
		s = tp_msg_reply_encode(&out, &n);
	for (size_t off = 0; s != NULL && off < n;) {
		ssize_t k = write(fd, s + off, n - off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	_exit(0);
}

static inline json_t *text_json_or_null(const struct tp_text *t)
{
	return t->s ? json_stringn_nocheck(t->s, t->n) : json_null();
}

/* The decoded reply as {ok, value, value_repr?, error: {kind, type, message,
 * traceback, line, limit?}, usage: {instructions, memory_peak_bytes, cpu_ms}}. */
static inline json_t *reply_json(const struct tp_reply *r)
{
	const struct tp_failure *f = &r->error;
	json_t *o = json_pack(
	    "{s:b, s:O, s:{s:I, s:I, s:f}}", "ok", r->ok, "value", r->ok ? r->value : json_null(),
	    "usage", "instructions", (json_int_t)r->usage.instructions, "memory_peak_bytes",
	    (json_int_t)r->usage.memory_peak_bytes, "cpu_ms", (double)r->usage.cpu_us / 1000.0);
	if (r->ok && r->value_repr)
		json_object_set_new(o, "value_repr", json_true());
	if (!r->ok) {
		json_t *e = json_pack("{s:s, s:o, s:o, s:o, s:o}", "kind", tp_kind_name(f->kind),
				      "type", text_json_or_null(&f->type), "message",
				      text_json_or_null(&f->message), "traceback",
				      text_json_or_null(&f->traceback), "line",
				      f->line > 0 ? json_integer(f->line) : json_null());
		json_object_set_new(e, "column",
				    f->column > 0 ? json_integer(f->column) : json_null());
		if (f->limit_id >= 0)
			json_object_set_new(e, "limit",
					    json_pack("{s:s, s:I, s:I}", "name",
						      tp_limit_name((enum tp_limit_id)f->limit_id),
						      "limit", (json_int_t)f->limit, "used",
						      (json_int_t)f->used));
		json_object_set_new(o, "error", e);
	} else {
		json_object_set_new(o, "error", json_null());
	}
	return o;
}

static char buf[4u << 20];

static inline void run_req(struct run *r, const struct tp_request *req, uint64_t entropy)
{
	int fds[2], st;
	size_t len = 0;
	ssize_t k;

	tp_shm_init(shm, AREA);
	if (pipe(fds) != 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(req, entropy, fds[1]);
	}
	close(fds[1]);
	while ((k = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)k;
	close(fds[0]);
	waitpid(pid, &st, 0);
	buf[len] = '\0';
	r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->reply = NULL;
	if (len) {
		struct tp_reply rep;
		struct tp_err why = { 0 };
		if (tp_msg_reply_decode(buf, len, &req->limits, &rep, &why) == 0) {
			r->reply = reply_json(&rep);
			tp_reply_free(&rep);
		} else {
			fprintf(stderr, "# %s\n", why.msg);
		}
	}
	struct tp_shm_view v;
	tp_shm_snapshot(shm, AREA, &v);
	memcpy(r->out, v.out[0], v.len[0]);
	r->out[v.len[0]] = '\0';
	memcpy(r->err, v.out[1], v.len[1]);
	r->err[v.len[1]] = '\0';
}

static struct run R;

static inline json_t *run_lim(const char *code, struct tp_limits lim)
{
	struct tp_request req = { .code = code, .code_len = strlen(code), .limits = lim };

	json_decref(R.reply);
	run_req(&R, &req, 12345);
	if (R.reply == NULL)
		fprintf(stderr, "no reply for: %s (exit %d)\n", code, R.exit_code);
	return R.reply;
}

static inline json_t *run(const char *code)
{
	return run_lim(code, limits());
}

static inline const char *err_s(const char *field)
{
	return json_string_value(json_object_get(json_object_get(R.reply, "error"), field));
}

/* The error has the field, and it is null (absent in the wire reply). */
static inline int err_null(const char *field)
{
	return json_is_null(json_object_get(json_object_get(R.reply, "error"), field));
}

static inline long long err_i(const char *field)
{
	return json_integer_value(json_object_get(json_object_get(R.reply, "error"), field));
}

static inline const char *lim_s(const char *field)
{
	json_t *l = json_object_get(json_object_get(R.reply, "error"), "limit");
	return json_string_value(json_object_get(l, field));
}

static inline long long lim_i(const char *field)
{
	json_t *l = json_object_get(json_object_get(R.reply, "error"), "limit");
	return json_integer_value(json_object_get(l, field));
}

static inline json_t *value(void)
{
	return json_object_get(R.reply, "value");
}

static inline char *value_text(void)
{
	static char text[4096];
	char *s = json_dumps(value(), JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(text, sizeof text, "%s", s ? s : "(none)");
	free(s);
	return text;
}

/* Builds the language's pristine state in this process and the shared page. */
static inline int harness_setup(const struct tp_lang *lang)
{
	struct tp_err err = { 0 };
	setenv("TZ", "UTC", 1); /* as the zygote does */
	harness_lang = lang;
	shm = mmap(NULL, tp_shm_size(AREA), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		   0);
	if (shm == MAP_FAILED || lang->zygote_init(&err) != 0) {
		fprintf(stderr, "setup failed: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* ---- the conformance table (tests/cases/conformance.json) ----------------------- */

/* The harness's limits() with the scenario's "limits" object applied by name. */
static inline struct tp_limits conf_limits(const json_t *obj)
{
	struct tp_limits l = limits();
	uint64_t v[TP_LIMIT__COUNT];
	const char *key;
	json_t *val;

	for (int i = 0; i < TP_LIMIT__COUNT; i++)
		v[i] = tp_limit_get(&l, (enum tp_limit_id)i);
	json_object_foreach((json_t *)obj, key, val)
	{
		int id = -1;
		for (int i = 0; i < TP_LIMIT__COUNT && id < 0; i++)
			if (strcmp(tp_limit_name((enum tp_limit_id)i), key) == 0)
				id = i;
		CHECK(id >= 0 && json_is_integer(val));
		if (id >= 0)
			v[id] = (uint64_t)json_integer_value(val);
	}
	CHECK_EQ_INT(tp_limits_from_array(&l, v), 0);
	return l;
}

/* A new reference to what an expectation's path names: "reply" (null when the
 * worker sent none), "exit_code", "tripped" (the page's sticky kind), "stdout",
 * "stdout_bytes", or a dotted path into the reply ("error.limit.used"); or NULL. */
static inline json_t *conf_field(const char *path)
{
	json_t *v = R.reply;
	char part[64];

	if (strcmp(path, "reply") == 0)
		return R.reply ? json_incref(R.reply) : json_null();
	if (strcmp(path, "exit_code") == 0)
		return json_integer(R.exit_code);
	if (strcmp(path, "tripped") == 0)
		return shm->tripped ? json_string(tp_kind_name((enum tp_kind)shm->tripped))
				    : json_null();
	if (strcmp(path, "stdout") == 0)
		return json_stringn_nocheck(R.out, strlen(R.out));
	if (strcmp(path, "stdout_bytes") == 0)
		return json_integer((json_int_t)strlen(R.out));
	for (const char *p = path; v != NULL && *p != '\0';) {
		size_t n = strcspn(p, ".");
		snprintf(part, sizeof part, "%.*s", (int)n, p);
		v = json_object_get(v, part);
		p += n + (p[n] == '.');
	}
	return json_incref(v);
}

/* "path": equal (json_equal); "path OP": an integer compared with OP (> >= < <=). */
static inline int conf_holds(const char *key, const json_t *want)
{
	char path[128];
	const char *op = strchr(key, ' ');
	snprintf(path, sizeof path, "%.*s", op ? (int)(op - key) : (int)strlen(key), key);
	json_t *got = conf_field(path);
	long long a = json_integer_value(got), b = json_integer_value(want);
	int ok = got != NULL && json_equal(want, got);

	if (op != NULL) {
		op++;
		ok = json_is_integer(got) && json_is_integer(want) &&
		     (strcmp(op, ">") == 0    ? a > b
		      : strcmp(op, ">=") == 0 ? a >= b
		      : strcmp(op, "<") == 0  ? a < b
		      : strcmp(op, "<=") == 0 ? a <= b
					      : 0);
	}
	if (!ok) {
		char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		fprintf(stderr, "  %s: want %s, got %s\n", key, w, g ? g : "(absent)");
		free(w);
		free(g);
	}
	json_decref(got);
	return ok;
}

/* One code of a scenario's language block under one run's limits and expectations. */
static inline void conf_run(const json_t *sc, const json_t *run, const json_t *block,
			    const char *code)
{
	const json_t *seed = json_object_get(sc, "seed"), *ent = json_object_get(sc, "entropy");
	struct tp_request req = { .code = code,
				  .code_len = strlen(code),
				  .inputs = json_object_get(sc, "inputs"),
				  .limits = conf_limits(json_object_get(run, "limits")),
				  .has_seed = seed != NULL,
				  .seed = (uint64_t)json_integer_value(seed) };
	uint64_t entropy = ent ? (uint64_t)json_integer_value(ent) : 12345;
	const json_t *expects[2] = { json_object_get(run, "expect"),
				     json_object_get(block, "expect") };
	char first[4096];
	const char *key;
	json_t *want;
	int failed = 0;

	json_decref(R.reply);
	run_req(&R, &req, entropy);
	snprintf(first, sizeof first, "%s", value_text());
	for (int i = 0; i < 2; i++) {
		json_object_foreach((json_t *)expects[i], key, want)
		{
			int ok;
			if (strcmp(key, "value_same_on_rerun") == 0) {
				/* The same request in a worker with other entropy. */
				json_decref(R.reply);
				run_req(&R, &req, entropy + 1);
				ok = (strcmp(first, value_text()) == 0) == json_is_true(want);
				if (!ok)
					fprintf(stderr, "  %s: %s then %s\n", key, first,
						value_text());
			} else {
				ok = conf_holds(key, want);
			}
			CHECK(ok);
			failed |= !ok;
		}
	}
	if (failed)
		fprintf(stderr, "  in scenario '%s', code: %.200s\n",
			json_string_value(json_object_get(sc, "name")), code);
}

/* Runs every scenario of the table in this language: each has a block for every
 * language ({"code": one or a list, "expect": what only it shows}). */
static inline void harness_conformance(void)
{
	const char *lang = tp_langs[harness_lang->id].name;
	json_error_t jerr;
	json_t *table = json_load_file(case_path("conformance.json"), 0, &jerr), *sc;
	size_t i, runs = 0;

	CHECK(json_is_array(table));
	if (table == NULL)
		fprintf(stderr, "%s: %s\n", case_path("conformance.json"), jerr.text);
	json_array_foreach(table, i, sc)
	{
		const json_t *block = json_object_get(sc, lang),
			     *code = json_object_get(block, "code");
		json_t *list = json_object_get(sc, "runs"), *run, *one;
		size_t j, k;

		CHECK(json_is_string(code) || json_is_array(code));
		if (!json_is_string(code) && !json_is_array(code)) {
			fprintf(stderr, "  scenario '%s' has no %s code\n",
				json_string_value(json_object_get(sc, "name")), lang);
			continue;
		}
		for (j = 0; j < (list ? json_array_size(list) : 1); j++) {
			run = list ? json_array_get(list, j) : sc;
			if (json_is_string(code)) {
				conf_run(sc, run, block, json_string_value(code));
				runs++;
			}
			json_array_foreach(code, k, one)
			{
				conf_run(sc, run, block, json_string_value(one));
				runs++;
			}
		}
	}
	printf("# conformance: %zu scenarios, %zu runs in %s\n", json_array_size(table), runs,
	       lang);
	json_decref(table);
}

#endif
