/*
 * jsonrpc.h — JSON-RPC 2.0 envelopes, one message per line. Pure: no syscalls.
 *
 * Usage:
 *   1. tp_rpc_parse() turns a line (from linebuf.h) into a struct tp_rpc, or
 *      into the error reply the client must get (parse error, invalid request).
 *   2. Answer with tp_rpc_result()/tp_rpc_error(); tp_rpc_clear() the request.
 *   3. tp_rpc_encode() serializes a reply as one line, '\n'-terminated.
 *   4. tp_rpc_notification() builds a message the host sends unasked.
 */
#ifndef TP_JSONRPC_H
#define TP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

#include "jsonio.h"

#define TP_RPC_PARSE_ERROR -32700
#define TP_RPC_INVALID_REQUEST -32600
#define TP_RPC_METHOD_NOT_FOUND -32601
#define TP_RPC_INVALID_PARAMS -32602
#define TP_RPC_INTERNAL_ERROR -32603
#define TP_RPC_BUSY -32001
#define TP_RPC_NO_SESSION -32002 /* an exec or close names a session that is unknown or ended */

struct tp_rpc {
	json_t *msg; /* the whole parsed message (owned) */
	json_t *id;  /* borrowed from msg; NULL for a notification */
	const char *method;
	json_t *params; /* borrowed; NULL when absent */
	int response;   /* a response to a request of ours: method is "", msg has result or error */
	/* A response to one of our tool calls that could not be read whole (msg
	 * holds only its id): TP_RPC_TOO_DEEP, TP_RPC_TOO_LONG (line_bytes long,
	 * more than line_max) or TP_RPC_NOT_JSON (why). The caller still answers
	 * the code waiting on it. */
	int unreadable;
	size_t line_bytes, line_max;
	char why[200];
};

enum { TP_RPC_TOO_DEEP = 1, TP_RPC_TOO_LONG, TP_RPC_NOT_JSON };

/* The line linebuf.c hands on for an overlong line that answers one of our
 * tool calls: TP_RPC_LONG_MARK " <id> <bytes> <max>". */
#define TP_RPC_LONG_MARK "\001tp-line-too-long"

/* Whether the n bytes at s (a whole line, or the start of one) are a JSON-RPC
 * response to one of our tool calls ("id": "tp-tool-…" at the top level, with
 * a result or error and no method), read without building any JSON value; its
 * id into id (cap bytes). 1 or 0. */
int tp_rpc_tool_response_id(const char *s, size_t n, char *id, size_t cap);

/* Returns 0 with *rpc filled, or -1 with *reply set to the error reply to send
 * (NULL when nothing must be sent, e.g. a malformed notification). */
int tp_rpc_parse(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply);
/* As tp_rpc_parse, but a JSON array (a batch) is not refused when batch is not
 * NULL: it is returned in *batch (the caller's) and the result is 1. */
int tp_rpc_parse_batch(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply,
		       json_t **batch);
/* The envelope check of one parsed message m (stolen), e.g. a batch's member. */
int tp_rpc_check(json_t *m, struct tp_rpc *rpc, json_t **reply);
void tp_rpc_clear(struct tp_rpc *rpc);

/* Steal result / data. id may be NULL (encoded as null). A NULL result (its
 * construction ran out of memory) becomes an internal-error reply. Both return
 * NULL only when even that cannot be built. */
json_t *tp_rpc_result(json_t *id, json_t *result);
json_t *tp_rpc_error(json_t *id, int code, const char *msg, json_t *data);
/* A notification {jsonrpc, method, params}; steals params. NULL out of memory
 * (or when params is NULL). */
json_t *tp_rpc_notification(const char *method, json_t *params);
/* Returns a malloc'd line ending in '\n'; NULL on allocation failure. */
char *tp_rpc_encode(const json_t *msg, size_t *len);
/* Until it is called again with n == 0, tp_rpc_encode writes each node of
 * r[0 .. n) (at most TP_JSON_RAW_MAX; jsonio.h), wherever it is at most 3 levels
 * into a message, as its bytes (which the caller keeps alive) instead of
 * dumping it: an exec's value, and a text that is the value's JSON, cross the
 * host once more as bytes, not as second dumps of its tree (answer.c). */
void tp_rpc_splice(const struct tp_json_raw *r, size_t n);
/* While nodes are registered (and only then): node, a string whose content is
 * JSON text (an MCP result's content text, a dump), is written quoted from its
 * own bytes too, not dumped (jsonio.h checks it holds no control character). */
void tp_rpc_splice_string(const json_t *node);
/* Whether nodes are registered and one more stand-in can be. */
int tp_rpc_splicing(void);
/* While nodes are registered: stand_in, an empty string node, is written as
 * text[0 .. n) quoted (JSON text: a dump), and text (malloc'd) is freed when
 * the registration ends. 0; -1 when it cannot be registered (text stays the
 * caller's, and the stand-in must not be written). */
int tp_rpc_splice_text(const json_t *stand_in, char *text, size_t n);
/* v dumped compact, the registered nodes written as their bytes. */
char *tp_rpc_dumps(const json_t *v);

#endif
