/*
 * linebuf.c — newline-delimited framing of the client's byte stream. Every
 * line is bounded here: an overlong one is reported once and dropped up to
 * its '\n', and memory shrinks back once a huge line has gone through.
 */
#include "linebuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

#define READ_CHUNK 65536

void tp_linebuf_init(struct tp_linebuf *lb, size_t max)
{
	memset(lb, 0, sizeof *lb);
	lb->max = max;
}

void tp_linebuf_free(struct tp_linebuf *lb)
{
	free(lb->buf);
	memset(lb, 0, sizeof *lb);
}

char *tp_linebuf_space(struct tp_linebuf *lb, size_t *room)
{
	if (lb->cap - lb->len < READ_CHUNK) {
		size_t cap = lb->cap ? lb->cap * 2 : READ_CHUNK * 2;
		while (cap - lb->len < READ_CHUNK)
			cap *= 2;
		char *p = realloc(lb->buf, cap);
		if (p != NULL) {
			lb->buf = p;
			lb->cap = cap;
		} else if (lb->cap == 0) {
			return NULL;
		} else if (lb->cap == lb->len) {
			/* The line being read does not fit: drop it like an overlong one.
			 * Complete lines were taken before this read, so it is the only one. */
			lb->discarding = 1;
			lb->no_memory = 1;
			lb->len = lb->scanned = 0;
		}
		*room = lb->cap - lb->len < READ_CHUNK ? lb->cap - lb->len : READ_CHUNK;
		return lb->buf + lb->len;
	}
	*room = READ_CHUNK;
	return lb->buf + lb->len;
}

void tp_linebuf_commit(struct tp_linebuf *lb, size_t n)
{
	lb->len += n;
}

static void drop_front(struct tp_linebuf *lb, size_t n)
{
	memmove(lb->buf, lb->buf + n, lb->len - n);
	lb->len -= n;
	lb->scanned = 0;
}

/* Keeps the buffer small once a huge line has gone through it. */
static void shrink(struct tp_linebuf *lb)
{
	if (lb->cap > 4 * READ_CHUNK && lb->len < READ_CHUNK) {
		char *p = realloc(lb->buf, 2 * READ_CHUNK);
		if (p != NULL) {
			lb->buf = p;
			lb->cap = 2 * READ_CHUNK;
		}
	}
}

static int blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return 0;
	return 1;
}

enum tp_line_status tp_linebuf_next(struct tp_linebuf *lb, int at_eof, const char **line,
				    size_t *len)
{
	if (lb->no_memory) {
		lb->no_memory = 0;
		return TP_LINE_NO_MEMORY;
	}
	if (lb->long_ready) {
		lb->long_ready = 0;
		int k = snprintf(lb->stand_in, sizeof lb->stand_in, TP_RPC_LONG_MARK " %s %zu %zu",
				 lb->long_id, lb->long_bytes, lb->max);
		lb->long_id[0] = '\0';
		if (k > 0 && (size_t)k < sizeof lb->stand_in) {
			*line = lb->stand_in;
			*len = (size_t)k;
			return TP_LINE_OK;
		}
	}
	for (;;) {
		if (lb->taken) {
			drop_front(lb, lb->taken);
			lb->taken = 0;
			shrink(lb);
		}
		/* Nothing unscanned (buf may still be NULL): no memchr on a null pointer. */
		char *nl = lb->len > lb->scanned
			       ? memchr(lb->buf + lb->scanned, '\n', lb->len - lb->scanned)
			       : NULL;
		if (lb->discarding) {
			if (nl == NULL) {
				lb->long_bytes += lb->len;
				lb->len = lb->scanned = 0;
				shrink(lb);
				return TP_LINE_NONE;
			}
			lb->long_bytes += (size_t)(nl - lb->buf);
			drop_front(lb, (size_t)(nl - lb->buf) + 1);
			lb->discarding = 0;
			if (lb->long_id[0] != '\0') {
				lb->long_ready = 1;
				return tp_linebuf_next(lb, at_eof, line, len);
			}
			continue;
		}
		size_t n;
		if (nl != NULL) {
			n = (size_t)(nl - lb->buf);
			lb->taken = n + 1;
		} else if (lb->len > lb->max) {
			lb->discarding = 1;
			lb->long_bytes = lb->len;
			if (!tp_rpc_tool_response_id(lb->buf, lb->len, lb->long_id,
						     sizeof lb->long_id))
				lb->long_id[0] = '\0';
			lb->len = lb->scanned = 0;
			return TP_LINE_TOO_LONG;
		} else if (at_eof && lb->len > 0) {
			n = lb->len;
			lb->taken = n;
		} else {
			lb->scanned = lb->len;
			return TP_LINE_NONE;
		}
		lb->scanned = 0;
		if (n > lb->max) {
			/* whole line already buffered: dropped via taken */
			lb->long_bytes = n;
			lb->long_ready =
			    tp_rpc_tool_response_id(lb->buf, n, lb->long_id, sizeof lb->long_id);
			return TP_LINE_TOO_LONG;
		}
		if (n > 0 && lb->buf[n - 1] == '\r')
			n--;
		if (blank(lb->buf, n))
			continue;
		*line = lb->buf;
		*len = n;
		return TP_LINE_OK;
	}
}
