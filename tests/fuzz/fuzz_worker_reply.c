/*
 * fuzz_worker_reply.c — libFuzzer harness for everything the host reads from a
 * worker: the framed channel bytes (tp_frame_parse, tp_frame_rx_*), each reply
 * frame (tp_msg_reply_decode, and tp_msg_reply_decode_lazy, the host's, held
 * to it: lazy_agrees), a shared page the worker scribbled over
 * (tp_shm_snapshot) and how it died (wait status), composed by tp_result_build.
 * Invariant: whatever the worker sends, the client gets a well-formed result.
 *
 * Input: a 16-byte header (limits, wait status, host verdict, flags), PAGE bytes
 * laid over the start of struct tp_shm (the rest of its header, e.g. the note,
 * filled with the byte data[9]; the rule is the output's first bytes), AREA*2
 * bytes of output, then the channel bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "frame.h"
#include "jsonio.h"
#include "limit.h"
#include "msg.h"
#include "result.h"
#include "shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) ((c) ? (void)0 : abort())
#define AREA 64u
#define HDR 16u
#define PAGE 96u /* covers every counter; stable while the struct grows at its end */

struct ctx {
	struct tp_limits lim;
	int status, exited, host_kind, use_shm;
	struct tp_shm_view view;
};

static const char *const kinds[] = { "syntax_error",     "runtime_error",     "input_error",
				     "result_error",     "memory_limit",      "instruction_limit",
				     "cpu_limit",        "timeout",           "output_limit",
				     "policy_violation", "sandbox_violation", "crashed",
				     "internal_error",   "cancelled",         "rate_limit",
				     "tool_limit",       "queue_timeout" };

static int known_kind(const char *k)
{
	for (size_t i = 0; k != NULL && i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(k, kinds[i]) == 0)
			return 1;
	return 0;
}

/* What a client may rely on in every exec result. */
static void check_result(const json_t *r, const struct ctx *c)
{
	CHECK(r != NULL && json_is_object(r));
	json_t *ok = json_object_get(r, "ok"), *err = json_object_get(r, "error");
	CHECK(json_is_boolean(ok));
	CHECK(json_is_string(json_object_get(r, "stdout")));
	CHECK(json_is_string(json_object_get(r, "stderr")));
	CHECK(json_is_object(json_object_get(r, "usage")));
	if (json_is_true(ok)) {
		CHECK(json_is_null(err));
	} else {
		CHECK(json_is_object(err));
		CHECK(known_kind(json_string_value(json_object_get(err, "kind"))));
		CHECK(json_is_string(json_object_get(err, "layer")));
		/* error.rule: null, or 1..96 of the rule's alphabet, whatever the page said;
		 * every refusal has one, and every error names the policy. */
		const json_t *rule = json_object_get(err, "rule");
		const char *kind = json_string_value(json_object_get(err, "kind"));
		CHECK(json_is_null(rule) || json_is_string(rule));
		if (json_is_string(rule)) {
			const char *t = json_string_value(rule);
			size_t n = strlen(t);
			CHECK(n >= 1 && n <= 96 && strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
							  "QRSTUVWXYZ0123456789_.:/-") == n);
		}
		if (strcmp(kind, "policy_violation") == 0 || strcmp(kind, "sandbox_violation") == 0)
			CHECK(json_is_string(rule));
		CHECK(json_is_string(json_object_get(err, "policy")) &&
		      strcmp(json_string_value(json_object_get(err, "policy")), "fuzz") == 0);
		const json_t *path = json_object_get(err, "path");
		CHECK(path == NULL || json_is_string(path));
	}
	if (c->use_shm)
		for (int s = 0; s < 2; s++)
			CHECK(json_string_length(json_object_get(r, s ? "stderr" : "stdout")) <=
			      3 * c->view.len[s]);
	char *text = json_dumps(r, JSON_COMPACT);
	CHECK(text != NULL);
	free(text);
}

static void outcome(struct ctx *c, const struct tp_reply *reply)
{
	struct tp_err host = { 0 };
	if (c->host_kind)
		tp_err_set(&host, (enum tp_kind)c->host_kind, TP_LAYER_HOST, 0, "host verdict");
	struct tp_outcome o = {
		.reply = reply,
		.shm = c->use_shm ? &c->view : NULL,
		.exited = c->exited,
		.status = c->status,
		.host = &host,
		.wall_ms = 12.5,
		.cpu_ms = (c->status & 1) ? 3.25 : -1,
		.cpu_exec_ms = (c->status & 2) ? 0.125 : 0,
		.limits = &c->lim,
		.policy = "fuzz",
	};
	json_t *r = tp_result_build(&o);
	check_result(r, c);
	json_decref(r);
}

/* The host's lazy decoder (tp_msg_reply_decode_lazy) on the same frame: it
 * accepts and refuses as the eager one did; a value it keeps as text is the
 * same text (value_json, and the text that is the value), reads back as the
 * same tree, and written through stand-ins (answer.c) makes the same JSON. */
static void lazy_agrees(struct ctx *c, const char *buf, size_t len, const struct tp_reply *eager,
			const struct tp_err *eager_err)
{
	struct tp_err err = { 0 };
	struct tp_reply r;
	int rc = tp_msg_reply_decode_lazy(buf, len, &c->lim, &r, &err);
	if (eager == NULL) { /* refused, as the eager one did (unless that ran out of memory) */
		CHECK(rc != 0 || eager_err->kind == TP_KIND_INTERNAL);
		if (rc == 0)
			tp_reply_free(&r);
		return;
	}
	CHECK(rc == 0 || err.kind == TP_KIND_INTERNAL);
	if (rc != 0)
		return;
	CHECK(r.ok == eager->ok && r.text_is_value == eager->text_is_value);
	CHECK((r.value_json == NULL) == (eager->value_json == NULL));
	if (r.value_json != NULL)
		CHECK(r.value_json_n == eager->value_json_n &&
		      memcmp(r.value_json, eager->value_json, r.value_json_n) == 0);
	if (r.value_lazy) {
		CHECK(r.value == NULL && r.value_json != NULL && (!r.text_is_value || r.text.s == NULL));
		json_t *so = json_object(), *ss = json_string("");
		json_t *msg = json_pack("{s:s, s:{s:b, s:O, s:O}}", "jsonrpc", "2.0", "result", "ok",
					1, "value", so, "text", r.text_is_value ? ss : json_null());
		struct tp_json_raw sp[2] = { { so, r.value_json, r.value_json_n, 0 },
					     { ss, r.value_json, r.value_json_n, 2 } };
		char *spliced = tp_json_dumps_splice(msg, JSON_COMPACT, sp, 2, 3);
		CHECK(spliced != NULL && strchr(spliced, '\n') == NULL);
		json_t *back = json_loads(spliced, JSON_ALLOW_NUL, NULL);
		CHECK(back != NULL);
		json_t *v = tp_reply_value(&r);
		CHECK(v != NULL && json_equal(v, eager->value) &&
		      json_equal(json_object_get(json_object_get(back, "result"), "value"), v));
		if (r.text_is_value) {
			json_t *want = json_stringn_nocheck(r.value_json, r.value_json_n);
			CHECK(json_equal(json_object_get(json_object_get(back, "result"), "text"),
					 want));
			json_decref(want);
		}
		json_decref(back);
		json_decref(msg);
		json_decref(so);
		json_decref(ss);
		free(spliced);
	} else if (r.ok) {
		CHECK(json_equal(r.value, eager->value));
	}
	tp_reply_free(&r);
}

static void on_frame(struct ctx *c, const char *buf, size_t len)
{
	struct tp_err err = { 0 };
	struct tp_reply r;

	CHECK(buf[len] == '\0');
	/* The other frame a worker sends: a tool call, decoded by the same rules. */
	struct tp_tool_call tc;
	if (tp_msg_tool_call_decode(buf, len, &c->lim, &tc) == 0) {
		CHECK(tp_tool_name_ok(tc.name, strlen(tc.name)));
		CHECK(json_is_object(tc.arguments));
		char *v = json_dumps(tc.arguments, JSON_COMPACT | JSON_ENCODE_ANY);
		CHECK(v != NULL && strlen(v) <= c->lim.result_bytes);
		free(v);
		tp_tool_call_free(&tc);
	} else {
		CHECK(tc.arguments == NULL && tc.name[0] == '\0');
	}
	if (tp_msg_reply_decode(buf, len, &c->lim, &r, &err) != 0) {
		CHECK(r.value == NULL && r.error.message.s == NULL && tp_err_failed(&err) &&
		      err.msg[0] != '\0');
		lazy_agrees(c, buf, len, NULL, &err);
		outcome(c, NULL); /* a refused reply: the worker is killed, its death decides */
		return;
	}
	/* What the decoder hands out is bounded. */
	CHECK(r.ok == 0 || r.ok == 1);
	if (r.ok) {
		char *v = json_dumps(r.value, JSON_COMPACT | JSON_ENCODE_ANY);
		uint64_t total = 0;
		CHECK(v != NULL && strlen(v) <= c->lim.result_bytes);
		free(v);
		/* Version 6: a text within result_bytes (none beside a repr value), at
		 * most TP_MSG_MAX_IMAGES PNG files within output_bytes together. */
		CHECK(r.text.n <= c->lim.result_bytes && !(r.value_repr && r.text.s != NULL));
		CHECK(r.text_cut == 0 || (r.text_cut == 1 && r.text.s != NULL));
		CHECK(r.nimages <= TP_MSG_MAX_IMAGES);
		for (unsigned i = 0; i < r.nimages; i++) {
			CHECK(r.images[i].s != NULL && r.images[i].n >= 8 &&
			      memcmp(r.images[i].s, "\x89PNG", 4) == 0);
			total += r.images[i].n;
		}
		CHECK(total <= c->lim.output_bytes);
		/* Version 8: a text that is the value's is there, of an array or object. */
		CHECK(!r.text_is_value || (r.text.s != NULL && r.text_cut == 0 &&
					   (json_is_array(r.value) || json_is_object(r.value))));
		/* The value's own bytes, which the host writes into its reply instead
		 * of a dump (tp_json_dumps_splice): one line, the same JSON. */
		if (r.value_json != NULL) {
			CHECK(json_is_array(r.value) || json_is_object(r.value));
			CHECK(strlen(r.value_json) == r.value_json_n &&
			      r.value_json_n <= c->lim.result_bytes);
			json_t *text = json_stringn_nocheck(r.value_json, r.value_json_n);
			json_t *msg = json_pack("{s:s, s:{s:b, s:O, s:o}}", "jsonrpc", "2.0", "result",
						"ok", 1, "value", r.value, "text", text);
			struct tp_json_raw sp[2] = { { r.value, r.value_json, r.value_json_n, 0 },
						     { text, r.value_json, r.value_json_n, 1 } };
			char *plain = tp_json_dumps(msg, JSON_COMPACT);
			char *spliced = tp_json_dumps_splice(msg, JSON_COMPACT, sp, 2, 3);
			CHECK(plain != NULL && spliced != NULL);
			CHECK(strchr(spliced, '\n') == NULL && strchr(spliced, '\r') == NULL);
			json_t *a = json_loads(plain, JSON_ALLOW_NUL, NULL);
			json_t *b = json_loads(spliced, JSON_ALLOW_NUL, NULL);
			CHECK(a != NULL && b != NULL && json_equal(a, b));
			json_decref(a);
			json_decref(b);
			free(plain);
			free(spliced);
			json_decref(msg);
		}
	} else {
		CHECK(tp_msg_claimable(r.error.kind));
		CHECK(r.error.message.s != NULL && r.error.message.n <= TP_MSG_MAX_TEXT);
		CHECK(r.error.type.n <= TP_MSG_MAX_TYPE && r.error.traceback.n <= TP_MSG_MAX_TEXT);
		CHECK(r.error.limit_id >= -1 && r.error.limit_id < TP_LIMIT__COUNT);
		if (r.error.data != NULL) { /* a Lua error table: under the value's caps */
			char *d = json_dumps(r.error.data, JSON_COMPACT | JSON_ENCODE_ANY);
			CHECK(d != NULL && strlen(d) <= c->lim.result_bytes);
			free(d);
		}
	}
	lazy_agrees(c, buf, len, &r, &err);
	/* Re-encoding what was decoded gives the same bytes back, but for a value
	 * or an error's data whose JSON text the decoder normalized (spacing, escapes). */
	size_t n;
	char *again = tp_msg_reply_encode(&r, &n);
	CHECK(again != NULL);
	CHECK(!r.ok && r.error.data == NULL ? n == len && memcmp(again, buf, n) == 0 : 1);
	free(again);
	outcome(c, &r);
	tp_reply_free(&r);
}

/* The request decoder on the same bytes: whatever it accepts, it can encode. */
static void request_bytes(const uint8_t *bytes, size_t n)
{
	struct tp_request req;
	size_t len;

	if (tp_msg_request_decode((const char *)bytes, n, &req) != 0)
		return;
	CHECK(req.code != NULL && req.code[req.code_len] == '\0');
	CHECK(req.inputs == NULL || json_is_object(req.inputs));
	char *again = tp_msg_request_encode(&req, &len);
	CHECK(again != NULL);
	free(again);
	tp_request_free(&req);
}

/* The channel: a pipe, read as the host reads a worker's socket. */
static void channel(struct ctx *c, const uint8_t *bytes, size_t n)
{
	struct tp_frame_rx rx;
	int fds[2];
	size_t plen;

	/* The pure core on the raw bytes first. */
	int r = tp_frame_parse((const char *)bytes, n, tp_msg_reply_max(&c->lim), &plen);
	CHECK(r != 1 || plen + TP_FRAME_HDR <= n);
	if (n > 60000 || pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
		return;
	CHECK(write(fds[1], bytes, n) == (ssize_t)n);
	close(fds[1]);
	tp_frame_rx_init(&rx, c->lim.result_bytes < 4096 ? c->lim.result_bytes * 8
							 : tp_msg_reply_max(&c->lim));
	for (int frames = 0; frames < 64;) {
		long got = tp_frame_rx_read(&rx, fds[0]);
		char *p;
		size_t len;
		int t;
		while ((t = tp_frame_rx_take(&rx, &p, &len)) == 1) {
			CHECK(len <= rx.max);
			on_frame(c, p, len);
			free(p);
			frames++;
		}
		if (t < 0 || got <= 0)
			break; /* broken framing: the host kills the worker */
	}
	tp_frame_rx_free(&rx);
	close(fds[0]);
	outcome(c, NULL); /* and the worker's death with no (more) reply */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c;
	size_t page = tp_shm_size(AREA), hdr = sizeof(struct tp_shm);

	if (size < HDR + PAGE + 2 * AREA)
		return 0;
	memset(&c, 0, sizeof c);
	tp_limits_default(&c.lim);
	c.lim.result_depth = 1 + data[0] % 70;
	c.lim.result_bytes = data[1] & 0x80 ? (1u << 20) : 1 + (uint64_t)data[1] * 4;
	c.lim.cpu_ms = 1 + data[2] * 40u;
	c.lim.output_bytes = data[10] & 0x80 ? (1u << 20) : 8 + (uint64_t)data[10] * 4;
	memcpy(&c.status, data + 4, sizeof c.status);
	c.exited = data[3] & 1;
	c.use_shm = (data[3] & 2) != 0;
	c.host_kind = data[3] & 4 ? data[8] % TP_KIND__COUNT : 0;
	/* A page the worker owned: every field forged. */
	struct tp_shm *shm = aligned_alloc(64, (page + 63) & ~(size_t)63);
	CHECK(shm != NULL);
	memset(shm, data[9], hdr);
	memcpy(shm, data + HDR, PAGE < hdr ? PAGE : hdr);
	memcpy(shm->data, data + HDR + PAGE, 2 * AREA);
	/* The rule a worker names (error.rule) is the output's first bytes again. */
	memcpy(shm->rule, data + HDR + PAGE,
	       2 * AREA < sizeof shm->rule ? 2 * AREA : sizeof shm->rule);
	tp_shm_snapshot(shm, AREA, &c.view);
	for (int s = 0; s < 2; s++) {
		CHECK(c.view.len[s] <= AREA);
		CHECK(c.view.out[s] == shm->data + (size_t)s * AREA);
	}
	CHECK(c.view.tripped_limit < TP_LIMIT__COUNT);
	/* any number the trap saw is named (4096 and above too: nr_N); -1 is none */
	CHECK(c.view.syscall_nr >= -1);
	channel(&c, data + HDR + PAGE + 2 * AREA, size - HDR - PAGE - 2 * AREA);
	request_bytes(data + HDR + PAGE + 2 * AREA, size - HDR - PAGE - 2 * AREA);
	free(shm);
	return 0;
}
