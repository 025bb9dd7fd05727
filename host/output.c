/*
 * output.c — the host's output: reply lines on stdout, log lines on stderr.
 * Invariants: stdout is written without blocking the loop, and every request
 * still gets its one answer when nothing can be allocated (OUT_RESERVE).
 */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonrpc.h"

void tp_out_log(const char *fmt, const char *detail)
{
	fprintf(stderr, "tidepool: ");
	fprintf(stderr, fmt, detail);
	fputc('\n', stderr);
}

/* ---- replies ---------------------------------------------------------------- */

/* The last OUT_RESERVE bytes of the output buffer are kept for out-of-memory
 * replies, so a request still gets its one answer when nothing can be allocated. */
#define OUT_RESERVE 512

static int out_append(struct tp_host *h, const char *s, size_t n, int use_reserve)
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

void tp_out_flush(struct tp_host *h)
{
	size_t off = 0;
	while (off < h->out_len) {
		ssize_t n = write(1, h->out + off, h->out_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) { /* the client is gone: nothing more can be said */
			h->out_len = off = 0;
			h->stdin_open = 0;
			h->gone = 1;
			break;
		}
		off += (size_t)n;
	}
	/* Every buffered reply ends with '\n': only a partial write leaves one open. */
	if (off > 0)
		h->open_line = h->out[off - 1] != '\n';
	memmove(h->out, h->out + off, h->out_len - off);
	h->out_len -= off;
}

/* On SIGTERM: a reading client must not see half a line. Finish the one a
 * partial write left open (waiting up to 1 s for the client), drop the rest. */
void tp_out_finish_open_line(struct tp_host *h)
{
	char *nl = h->open_line ? memchr(h->out, '\n', h->out_len) : NULL;
	if (nl == NULL)
		return;
	h->out_len = (size_t)(nl - h->out) + 1;
	for (int tries = 0; h->out_len > 0 && tries < 100; tries++) {
		tp_out_flush(h);
		if (h->out_len > 0)
			poll(&(struct pollfd){ 1, POLLOUT, 0 }, 1, 10);
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
static void emit_oom(struct tp_host *h, const json_t *id)
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

/* Sends msg (stolen), the reply to request id (borrowed; NULL when unknown). */
void tp_out_emit(struct tp_host *h, const json_t *id, json_t *msg)
{
	if (h->batches != NULL && msg != NULL && tp_host_batch_take(h, id, msg))
		return;
	if (h->cfg.emit != NULL) {
		if (msg != NULL)
			h->cfg.emit(h->cfg.emit_ctx, msg);
		return;
	}
	size_t len;
	char *line = msg ? tp_rpc_encode(msg, &len) : NULL;
	if (line == NULL || out_append(h, line, len, 0) != 0)
		emit_oom(h, id); /* id may live in msg: before it is released */
	json_decref(msg);
	free(line);
	tp_out_flush(h); /* at once: non-blocking on a pipe, so it never stalls the loop */
}

int tp_out_send(struct tp_host *h, json_t *msg)
{
	if (h->cfg.emit != NULL) {
		if (msg == NULL)
			return -1;
		h->cfg.emit(h->cfg.emit_ctx, msg);
		return 0;
	}
	size_t len;
	char *line = msg ? tp_rpc_encode(msg, &len) : NULL;
	int rc = line != NULL && out_append(h, line, len, 0) == 0 ? 0 : -1;
	json_decref(msg);
	free(line);
	if (rc == 0)
		tp_out_flush(h);
	return rc;
}

void tp_out_error(struct tp_host *h, json_t *id, int code, const char *msg)
{
	tp_out_emit(h, id, tp_rpc_error(id, code, msg, NULL));
}

/* A pipe or socket stdout is made non-blocking so a slow client cannot stall
 * the loop; a terminal or file is shared with others and written blocking. */
void tp_out_setup_stdout(struct tp_host *h)
{
	struct stat st;
	h->out_blocking = 1;
	if (fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		int fl = fcntl(1, F_GETFL);
		if (fl >= 0 && fcntl(1, F_SETFL, fl | O_NONBLOCK) == 0)
			h->out_blocking = 0;
	}
}
