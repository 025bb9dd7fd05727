/*
 * output.c — what the host says: a client's reply lines (on stdout or its
 * socket), held for its batch when they belong to one; log lines on stderr.
 * Invariants: a client is written without blocking the loop, and every request
 * still gets its one answer when nothing can be allocated (OUT_RESERVE).
 * Calls nothing above it: the batch's members are handled through the function
 * its caller passes.
 */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonio.h"

#include "jsonrpc.h"

static int log_json; /* --log-format json: set once, before the host serves */

void tp_out_log_format(int json)
{
	log_json = json;
}

/* One line on stderr: "tidepool: what", or with --log-format json an object
 * {"time", "level": "info", "msg"} a log collector reads without a pattern. */
void tp_out_log(const char *fmt, const char *detail)
{
	char msg[1024];
	snprintf(msg, sizeof msg, fmt, detail);
	json_t *line = log_json ? json_pack("{s:o, s:s, s:s}", "time", tp_audit_time(), "level",
					    "info", "msg", msg)
				: NULL;
	char *text = line ? tp_json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(line);
	if (text != NULL)
		fprintf(stderr, "%s\n", text);
	else
		fprintf(stderr, "tidepool: %s\n", msg);
	free(text);
}

/* ---- replies ---------------------------------------------------------------- */

/* The last OUT_RESERVE bytes of the output buffer are kept for out-of-memory
 * replies, so a request still gets its one answer when nothing can be allocated. */
#define OUT_RESERVE 512

static int out_append(struct client *h, const char *s, size_t n, int use_reserve)
{
	size_t room = h->out_cap - h->out_len;
	if (n > room || (!use_reserve && n > room - (room < OUT_RESERVE ? room : OUT_RESERVE))) {
		size_t cap = h->out_cap ? h->out_cap : OUT_INITIAL;
		while (cap < h->out_len + n + OUT_RESERVE)
			cap *= 2;
		char *p = realloc(h->out, cap);
		if (p != NULL) {
			h->out = p;
			h->out_cap = cap;
		} else if (!use_reserve || n > room) {
			return -1;
		}
	}
	memcpy(h->out + h->out_len, s, n);
	h->out_len += n;
	return 0;
}

void tp_out_flush(struct client *c)
{
	size_t off = 0;
	if (c->out == NULL)
		return; /* a client with a writer of its own (in process, HTTP) */
	while (c->wfd >= 0 && off < c->out_len) {
		ssize_t n = c->kind == TP_CLIENT_SOCKET
				? send(c->wfd, c->out + off, c->out_len - off, MSG_NOSIGNAL)
				: write(c->wfd, c->out + off, c->out_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) { /* the client is gone: nothing more can be said */
			c->out_len = off = 0;
			c->gone = 1;
			break;
		}
		off += (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	/* Every buffered reply ends with '\n': only a partial write leaves one open. */
	if (off > 0)
		c->open_line = c->out[off - 1] != '\n';
	memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off;
}

/* On SIGTERM: a reading client must not see half a line. Finish the one a
 * partial write left open (waiting up to 1 s for the client), drop the rest. */
void tp_out_finish_open_line(struct client *c)
{
	char *nl = c->open_line ? memchr(c->out, '\n', c->out_len) : NULL;
	if (nl == NULL)
		return;
	c->out_len = (size_t)(nl - c->out) + 1;
	for (int tries = 0; c->out_len > 0 && !c->gone && tries < 100; tries++) {
		tp_out_flush(c);
		if (c->out_len > 0)
			poll(&(struct pollfd){ c->wfd, POLLOUT, 0 }, 1, 10);
	}
}

/* The JSON text of a request id, written by hand (no allocation) into buf and
 * NUL-terminated; its length, or 0 when the id is unknown or does not fit (the
 * reply then has no id). */
static size_t id_text(const json_t *id, char *buf, size_t len)
{
	const char *s = json_string_value(id);
	size_t o = 0;
	buf[0] = '\0';
	if (json_is_integer(id))
		return (size_t)snprintf(buf, len, "%lld", (long long)json_integer_value(id));
	if (s == NULL || strlen(s) > 200)
		return 0;
	buf[o++] = '"';
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (o + 8 > len) { /* room for an escape, the quote and the NUL */
			buf[0] = '\0';
			return 0;
		}
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
		else
			buf[o++] = (char)c; /* already valid UTF-8: jansson checked the line */
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return o;
}

/* The one answer a request gets when its real reply could not be built. */
static void emit_oom(struct client *h, const json_t *id)
{
	char idbuf[256], line[OUT_RESERVE];
	size_t k = id_text(id, idbuf, sizeof idbuf);
	int n = snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",%s%s%s\"error\":{\"code\":%d,"
			 "\"message\":\"out of memory\"}}\n",
			 k ? "\"id\":" : "", idbuf, k ? "," : "", TP_RPC_INTERNAL_ERROR);
	if (out_append(h, line, (size_t)n, 1) != 0)
		tp_out_log("%s", "out of memory: reply dropped");
}

static int batch_take(struct client *c, const json_t *id, json_t *msg);
static struct batch *batch_of(struct client *c, const json_t *id, int *at);

/* Sends msg (stolen), the reply to request id (borrowed; NULL when unknown). */
void tp_out_emit(struct client *c, const json_t *id, json_t *msg)
{
	if (c->batches != NULL && msg != NULL && batch_take(c, id, msg))
		return;
	if (c->emit != NULL) { /* in process, or HTTP: the writer is the client's own */
		if (msg != NULL)
			c->emit(c->emit_ctx, msg);
		else if (c->kind == TP_CLIENT_HTTP)
			c->emit(c->emit_ctx, tp_rpc_error((json_t *)id, TP_RPC_INTERNAL_ERROR,
							  "out of memory", NULL));
		return;
	}
	if (c->gone) {
		json_decref(msg);
		return;
	}
	size_t len;
	char *line = msg ? tp_rpc_encode(msg, &len) : NULL;
	if (line == NULL || out_append(c, line, len, 0) != 0)
		emit_oom(c, id); /* id may live in msg: before it is released */
	json_decref(msg);
	free(line);
	tp_out_flush(c); /* at once: non-blocking, so it never stalls the loop */
}

int tp_out_now(const struct client *c, const json_t *id)
{
	int at;
	return c->emit == NULL && !c->gone &&
	       (c->batches == NULL || batch_of((struct client *)c, id, &at) == NULL);
}

int tp_out_send(struct client *c, json_t *msg)
{
	if (c->emit != NULL) {
		if (msg == NULL)
			return -1;
		c->emit(c->emit_ctx, msg);
		return 0;
	}
	if (c->gone) {
		json_decref(msg);
		return -1;
	}
	size_t len;
	char *line = msg ? tp_rpc_encode(msg, &len) : NULL;
	int rc = line != NULL && out_append(c, line, len, 0) == 0 ? 0 : -1;
	json_decref(msg);
	free(line);
	if (rc == 0)
		tp_out_flush(c);
	return rc;
}

void tp_out_error(struct client *c, json_t *id, int code, const char *msg)
{
	tp_out_emit(c, id, tp_rpc_error(id, code, msg, NULL));
}

/* A pipe or socket is made non-blocking so a slow client cannot stall the
 * loop; a terminal or file is shared with others and written blocking. */
void tp_out_setup(struct client *c)
{
	struct stat st;
	c->out_blocking = 1;
	if (c->wfd >= 0 && fstat(c->wfd, &st) == 0 &&
	    (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		int fl = fcntl(c->wfd, F_GETFL);
		if (fl >= 0 && fcntl(c->wfd, F_SETFL, fl | O_NONBLOCK) == 0)
			c->out_blocking = 0;
	}
}

/* ---- batches (MCP 2025-03-26 only) ------------------------------------------------ */

struct batch {
	struct batch *next;
	json_t *replies; /* the replies so far */
	json_t *ids;     /* the ids of members not answered yet */
	int reading;     /* its members are still being handled */
};

static int id_index(const json_t *ids, const json_t *id)
{
	for (size_t i = 0; i < json_array_size(ids); i++)
		if (json_equal(json_array_get(ids, i), (json_t *)id))
			return (int)i;
	return -1;
}

/* Sends a batch whose members are all answered, as one array, and frees it.
 * A batch of notifications (or of cancelled calls) gets nothing. */
static void batch_close(struct client *c, struct batch *b)
{
	if (b->reading || json_array_size(b->ids) > 0)
		return;
	struct batch **pp = &c->batches;
	while (*pp != b)
		pp = &(*pp)->next;
	*pp = b->next;
	json_t *replies = b->replies;
	json_decref(b->ids);
	free(b);
	if (json_array_size(replies) == 0)
		json_decref(replies);
	else
		tp_out_emit(c, NULL, replies); /* not a member's: c->batches no longer has it */
}

static struct batch *batch_of(struct client *c, const json_t *id, int *at)
{
	if (id == NULL || (c->line_id != NULL && json_equal((json_t *)id, (json_t *)c->line_id)))
		return NULL;
	for (struct batch *b = c->batches; b != NULL; b = b->next)
		if ((*at = id_index(b->ids, id)) >= 0)
			return b;
	return NULL;
}

static int batch_take(struct client *c, const json_t *id, json_t *msg)
{
	int at;
	struct batch *b = batch_of(c, id, &at);
	if (b == NULL)
		return 0;
	json_array_remove(b->ids, (size_t)at);
	if (json_array_append_new(b->replies, msg) != 0)
		json_array_append_new(b->replies, tp_rpc_error((json_t *)id, TP_RPC_INTERNAL_ERROR,
							       "out of memory", NULL));
	batch_close(c, b);
	return 1;
}

void tp_out_unanswered(struct client *c, const json_t *id)
{
	int at;
	if (c->unanswered != NULL)
		c->unanswered(c, id);
	struct batch *b = batch_of(c, id, &at);
	if (b != NULL) {
		json_array_remove(b->ids, (size_t)at);
		batch_close(c, b);
	}
}

void tp_out_batches_free(struct client *c)
{
	while (c->batches != NULL) {
		struct batch *b = c->batches;
		c->batches = b->next;
		json_decref(b->replies);
		json_decref(b->ids);
		free(b);
	}
}

/* A batch: each member handled as a line of its own, the replies held until
 * the last. An empty one is a single Invalid Request. */
void tp_out_run_batch(struct tp_host *h, struct client *c, json_t *arr,
		      void (*handle)(struct tp_host *, struct client *, struct tp_rpc *))
{
	struct batch *b = calloc(1, sizeof *b);
	if (b != NULL && (b->replies = json_array()) != NULL && (b->ids = json_array()) != NULL &&
	    json_array_size(arr) > 0) {
		b->reading = 1;
		b->next = c->batches;
		c->batches = b;
		/* Every member's id first: a reply sent while a later member is read
		 * (a cancel answering an earlier one) finds its place. */
		for (size_t i = 0; i < json_array_size(arr); i++) {
			json_t *m = json_array_get(arr, i);
			json_t *id = json_is_object(m) && json_object_get(m, "method") != NULL
					 ? json_object_get(m, "id")
					 : NULL;
			if (id != NULL && (json_is_string(id) || json_is_integer(id)))
				json_array_append(b->ids, id);
		}
		for (size_t i = 0; i < json_array_size(arr); i++) {
			struct tp_rpc rpc;
			json_t *reply;
			json_t *m = json_array_get(arr, i);
			if (tp_rpc_check(json_incref(m), &rpc, &reply) != 0) {
				int at = id_index(b->ids, json_object_get(m, "id"));
				if (at >= 0) /* refused: this is its one reply */
					json_array_remove(b->ids, (size_t)at);
				if (reply != NULL)
					json_array_append_new(b->replies, reply);
				continue;
			}
			handle(h, c, &rpc);
			tp_rpc_clear(&rpc);
		}
		b->reading = 0;
		batch_close(c, b);
	} else if (b != NULL && b->ids != NULL) {
		tp_out_error(c, NULL, TP_RPC_INVALID_REQUEST, "Invalid Request: an empty batch");
		json_decref(b->replies);
		json_decref(b->ids);
		free(b);
	} else {
		if (b != NULL)
			json_decref(b->replies);
		free(b);
		tp_out_error(c, NULL, TP_RPC_INTERNAL_ERROR, "out of memory reading the request");
	}
	json_decref(arr);
}
