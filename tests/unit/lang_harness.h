/*
 * lang_harness.h — the harness the language layers' unit tests share: one
 * zygote state built in this process, then a forked child per case that runs
 * one exec and sends its reply back through a pipe in the worker's own wire
 * format (common/msg.h), decoded as the host decodes it; output and the sticky
 * verdict come through a shared page, as between a worker and the host. The
 * tests read the decoded reply as a JSON object of the same fields.
 */
#ifndef TP_LANG_HARNESS_H
#define TP_LANG_HARNESS_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang.h"
#include "tap.h"

static const struct tp_lang *harness_lang;

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

#endif
