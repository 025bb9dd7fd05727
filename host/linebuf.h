/*
 * linebuf.h — newline-delimited framing of stdin. No syscalls here; the host
 * loop reads, this module cuts lines.
 *
 * Usage:
 *   1. tp_linebuf_init(max): the longest line accepted, without its '\n'.
 *   2. Read into tp_linebuf_space() and tp_linebuf_commit() what arrived.
 *   3. Take whole lines with tp_linebuf_next() until TP_LINE_NONE; an overlong
 *      line is reported once (TP_LINE_TOO_LONG) and dropped, and so is a line
 *      the buffer could not grow for (TP_LINE_NO_MEMORY). At EOF, call it with
 *      at_eof=1 for a last unterminated line.
 *   4. tp_linebuf_free().
 */
#ifndef TP_LINEBUF_H
#define TP_LINEBUF_H

#include <stddef.h>

#define TP_MAX_LINE_DEFAULT (8u << 20)

struct tp_linebuf {
	char *buf;
	size_t len, cap;
	size_t max;     /* longest accepted line, without its '\n' */
	size_t scanned; /* bytes already searched for '\n' */
	size_t taken;   /* bytes of the line handed out last, dropped on the next call */
	int discarding; /* inside an overlong line: drop bytes up to the next '\n' */
	int no_memory;  /* a line was dropped for lack of memory, not yet reported */
	/* An overlong line that answers one of the host's tool calls: its id and
	 * length; once it has ended, a short stand-in line (jsonrpc.h,
	 * TP_RPC_LONG_MARK) follows its TP_LINE_TOO_LONG, so the code waiting on
	 * the call gets an error rather than waiting out its wall clock. */
	char long_id[64];
	size_t long_bytes;
	int long_ready;
	char stand_in[160];
};

enum tp_line_status { TP_LINE_NONE = 0, TP_LINE_OK, TP_LINE_TOO_LONG, TP_LINE_NO_MEMORY };

void tp_linebuf_init(struct tp_linebuf *lb, size_t max);
void tp_linebuf_free(struct tp_linebuf *lb);
/* Room to read into. When the buffer cannot grow, what room is left, or, with
 * none, the line being read is dropped (TP_LINE_NO_MEMORY) to make room; NULL
 * only when no buffer could ever be allocated. */
char *tp_linebuf_space(struct tp_linebuf *lb, size_t *room);
void tp_linebuf_commit(struct tp_linebuf *lb, size_t n);
/* TP_LINE_OK: *line points at len bytes (no '\n'), valid until the next call.
 * TP_LINE_TOO_LONG: an overlong line started; it is being dropped.
 * TP_LINE_NO_MEMORY: a line could not be stored; it is being dropped.
 * At EOF pass at_eof=1 to get a final unterminated line. */
enum tp_line_status tp_linebuf_next(struct tp_linebuf *lb, int at_eof, const char **line,
				    size_t *len);

#endif
