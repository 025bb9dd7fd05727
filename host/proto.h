/*
 * proto.h — JSON-RPC 2.0 over newline-delimited JSON: framing, envelopes,
 * replies, and the pure MCP methods. No syscalls here; the host loop owns I/O.
 *
 * Usage:
 *   1. Feed stdin bytes to a struct tp_linebuf (tp_linebuf_append) and take
 *      whole lines with tp_linebuf_next(); an overlong line is reported once.
 *   2. tp_proto_parse() turns a line into a struct tp_rpc, or into the error
 *      reply the client must get (parse error, invalid request).
 *   3. Build replies with tp_proto_result()/tp_proto_error() and serialize them
 *      with tp_proto_encode() (one line, '\n'-terminated).
 */
#ifndef TP_PROTO_H
#define TP_PROTO_H

#include <jansson.h>
#include <stddef.h>

#include "langs.h"
#include "limits.h"

#define TP_RPC_PARSE_ERROR -32700
#define TP_RPC_INVALID_REQUEST -32600
#define TP_RPC_METHOD_NOT_FOUND -32601
#define TP_RPC_INVALID_PARAMS -32602
#define TP_RPC_INTERNAL_ERROR -32603
#define TP_RPC_BUSY -32001

#define TP_MAX_LINE_DEFAULT (8u << 20)
#define TP_VERSION "0.1.0"

struct tp_linebuf {
	char *buf;
	size_t len, cap;
	size_t max;     /* longest accepted line, without its '\n' */
	size_t scanned; /* bytes already searched for '\n' */
	size_t taken;   /* bytes of the line handed out last, dropped on the next call */
	int discarding; /* inside an overlong line: drop bytes up to the next '\n' */
};

enum tp_line_status { TP_LINE_NONE = 0, TP_LINE_OK, TP_LINE_TOO_LONG };

void tp_linebuf_init(struct tp_linebuf *lb, size_t max);
void tp_linebuf_free(struct tp_linebuf *lb);
/* Room to read into; returns NULL on allocation failure. */
char *tp_linebuf_space(struct tp_linebuf *lb, size_t *room);
void tp_linebuf_commit(struct tp_linebuf *lb, size_t n);
/* TP_LINE_OK: *line points at len bytes (no '\n'), valid until the next call.
 * TP_LINE_TOO_LONG: an overlong line started; it is being dropped.
 * At EOF pass at_eof=1 to get a final unterminated line. */
enum tp_line_status tp_linebuf_next(struct tp_linebuf *lb, int at_eof, const char **line,
				    size_t *len);

struct tp_rpc {
	json_t *msg; /* the whole parsed message (owned) */
	json_t *id;  /* borrowed from msg; NULL for a notification */
	const char *method;
	json_t *params; /* borrowed; NULL when absent */
};

/* Returns 0 with *rpc filled, or -1 with *reply set to the error reply to send
 * (NULL when nothing must be sent, e.g. a malformed notification). */
int tp_proto_parse(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply);
void tp_rpc_clear(struct tp_rpc *rpc);

/* Steal result / data. id may be NULL (encoded as null). A NULL result (its
 * construction ran out of memory) becomes an internal-error reply. Both return
 * NULL only when even that cannot be built. */
json_t *tp_proto_result(json_t *id, json_t *result);
json_t *tp_proto_error(json_t *id, int code, const char *msg, json_t *data);
/* Returns a malloc'd line ending in '\n'; NULL on allocation failure. */
char *tp_proto_encode(const json_t *msg, size_t *len);

/* MCP */
json_t *tp_proto_initialize(const json_t *params);
json_t *tp_proto_tools_list(void);

/* The parameters of one exec, from sandbox/exec or tools/call. */
struct tp_exec_params {
	enum tp_lang_id lang;
	const char *code; /* borrowed from the request */
	size_t code_len;
	json_t *inputs; /* borrowed; NULL when absent */
	struct tp_limits limits;
	int has_seed;
	long long seed;
	int tool_call; /* 1: answer in the MCP tools/call shape */
};

/* Returns 0, or -1 with an invalid-params message in err. */
int tp_proto_exec_params(const json_t *params, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, char *err, size_t errlen);
int tp_proto_tool_params(const json_t *params, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, char *err, size_t errlen);
/* MCP tools/call result around an exec result (stolen). */
json_t *tp_proto_tool_result(json_t *exec_result);

#endif
