/*
 * jsonrpc.c — JSON-RPC 2.0 envelopes: a line in, a checked request out; a
 * result or an error in, one '\n'-terminated line out. Pure: every input is
 * hostile (JSON validity and UTF-8 via jansson, envelope shape checked here).
 */
#include "jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"

void tp_rpc_clear(struct tp_rpc *rpc)
{
	json_decref(rpc->msg);
	memset(rpc, 0, sizeof *rpc);
}

/* MCP's RequestId: a string or an integer. JSON-RPC's null id is not one (it
 * would make the request unanswerable by id), nor is a fraction. */
static int valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/* The index just past the string whose opening quote is at i (n if it never ends). */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return n;
}

int tp_rpc_tool_response_id(const char *s, size_t n, char *id, size_t cap)
{
	size_t i = skip_ws(s, n, 0);
	int depth = 1, expect_key = 1, found = 0, response = 0, method = 0;
	if (i >= n || s[i] != '{')
		return 0;
	for (i++; i < n && depth > 0;) {
		char c = s[i];
		if (c == '"') {
			size_t start = i + 1;
			i = string_end(s, n, i);
			if (depth != 1 || !expect_key || i >= n)
				continue;
			size_t klen = i - 1 - start;
			const char *k = s + start;
			expect_key = 0;
			i = skip_ws(s, n, i);
			if (i >= n || s[i] != ':')
				return 0;
			i = skip_ws(s, n, i + 1);
			if (klen == 2 && memcmp(k, "id", 2) == 0) {
				size_t e = i < n && s[i] == '"' ? string_end(s, n, i) : 0;
				if (e == 0 || e >= n || found || e - i - 2 >= cap ||
				    memchr(s + i + 1, '\\', e - i - 2) != NULL)
					return 0;
				memcpy(id, s + i + 1, e - i - 2);
				id[e - i - 2] = '\0';
				found = 1;
				i = e;
			} else if ((klen == 6 && memcmp(k, "result", 6) == 0) ||
				   (klen == 5 && memcmp(k, "error", 5) == 0)) {
				response = 1;
			} else if (klen == 6 && memcmp(k, "method", 6) == 0) {
				method = 1;
			}
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
		else if (c == ',' && depth == 1)
			expect_key = 1;
		i++;
	}
	return found && response && !method && strncmp(id, "tp-tool-", 8) == 0;
}

/* A line jansson refused that answers one of our tool calls (nested past its
 * depth, or not JSON), or linebuf's stand-in for an overlong one: rpc holds
 * its id and why, 0; else -1. */
static int unreadable_tool_response(const char *line, size_t len, const struct tp_err *err,
				    struct tp_rpc *rpc)
{
	char id[64];
	size_t mark = sizeof TP_RPC_LONG_MARK - 1;
	unsigned long long bytes = 0, max = 0;
	int kind;
	if (len > mark && len < 200 && memcmp(line, TP_RPC_LONG_MARK, mark) == 0) {
		char copy[200];
		memcpy(copy, line, len);
		copy[len] = '\0';
		if (sscanf(copy + mark, " %63s %llu %llu", id, &bytes, &max) != 3 ||
		    strncmp(id, "tp-tool-", 8) != 0)
			return -1;
		kind = TP_RPC_TOO_LONG;
	} else if (tp_rpc_tool_response_id(line, len, id, sizeof id)) {
		kind = strstr(err->msg, "maximum parsing depth") != NULL ? TP_RPC_TOO_DEEP
									 : TP_RPC_NOT_JSON;
	} else {
		return -1;
	}
	json_t *m = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "id", id);
	if (m == NULL)
		return -1;
	*rpc = (struct tp_rpc){ .msg = m,
				.id = json_object_get(m, "id"),
				.method = "",
				.response = 1,
				.unreadable = kind,
				.line_bytes = (size_t)bytes,
				.line_max = (size_t)max };
	snprintf(rpc->why, sizeof rpc->why, "%.190s", err->msg);
	return 0;
}

int tp_rpc_parse(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply)
{
	return tp_rpc_parse_batch(line, len, rpc, reply, NULL);
}

int tp_rpc_parse_batch(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply,
		       json_t **batch)
{
	struct tp_err err = { 0 };
	char msg[256];

	memset(rpc, 0, sizeof *rpc);
	*reply = NULL;
	/* Duplicate keys are refused: two readers could disagree on which one wins. */
	json_t *m = tp_json_loadb(line, len,
				  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
	if (tp_err_is_oom(&err)) { /* the id is unknown: the client gets the error with id null */
		*reply = tp_rpc_error(NULL, TP_RPC_INTERNAL_ERROR,
				      "out of memory reading the request", NULL);
		return -1;
	}
	if (m == NULL && unreadable_tool_response(line, len, &err, rpc) == 0)
		return 0; /* the code waiting on it gets the error */
	if (m == NULL) {
		snprintf(msg, sizeof msg, "Parse error: %.200s", err.msg);
		*reply = tp_rpc_error(NULL, TP_RPC_PARSE_ERROR, msg, NULL);
		return -1;
	}
	if (json_is_array(m) && batch != NULL) {
		*batch = m;
		return 1;
	}
	return tp_rpc_check(m, rpc, reply);
}

int tp_rpc_check(json_t *m, struct tp_rpc *rpc, json_t **reply)
{
	memset(rpc, 0, sizeof *rpc);
	*reply = NULL;
	if (!json_is_object(m)) {
		*reply =
		    tp_rpc_error(NULL, TP_RPC_INVALID_REQUEST,
				 json_is_array(m) ? "Invalid Request: batches are not supported"
						  : "Invalid Request: not an object",
				 NULL);
		json_decref(m);
		return -1;
	}
	json_t *id = json_object_get(m, "id");
	json_t *method = json_object_get(m, "method");
	json_t *params = json_object_get(m, "params");
	const char *why = NULL;
	char note[160];
	if (id != NULL && !valid_id(id)) {
		why = "Invalid Request: id must be a string or an integer";
		id = NULL;
	} else if (!json_is_string(json_object_get(m, "jsonrpc")) ||
		   strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0) {
		why = "Invalid Request: jsonrpc must be \"2.0\"";
	} else if (method == NULL &&
		   (json_object_get(m, "result") || json_object_get(m, "error"))) {
		/* A response from the client, to one of our requests if its id is one:
		 * the caller matches it; it is never answered. */
		if (!json_is_string(id) || json_object_get(m, "params") != NULL) {
			json_decref(m);
			return -1;
		}
		*rpc = (struct tp_rpc){ .msg = m, .id = id, .method = "", .response = 1 };
		return 0;
	} else if (!json_is_string(method)) {
		why = "Invalid Request: method must be a string";
	} else if (params != NULL && !json_is_object(params) && !json_is_array(params)) {
		why = "Invalid Request: params must be an object or an array";
	} else if (id != NULL && strncmp(json_string_value(method), "notifications/", 14) == 0) {
		/* A request must get a reply; a notification gets none and acts. Either
		 * way one of the two would be broken: refuse, and do not act on it. */
		snprintf(note, sizeof note,
			 "Invalid Request: %.100s is a notification: send it without an id",
			 json_string_value(method));
		why = note;
	}
	if (why != NULL) {
		/* A broken notification gets no reply; a broken request does. */
		if (id != NULL || json_object_get(m, "id") != NULL)
			*reply = tp_rpc_error(id, TP_RPC_INVALID_REQUEST, why, NULL);
		json_decref(m);
		return -1;
	}
	rpc->msg = m;
	rpc->id = id;
	rpc->method = json_string_value(method);
	rpc->params = params;
	rpc->response = 0;
	return 0;
}

/* A reply missing a member is not a reply: every set is checked. An error to a
 * request whose id could not be read has no id member (MCP's schema has no null
 * id; JSON-RPC 2.0 would send null). */
static json_t *envelope(json_t *id)
{
	json_t *r = json_object();
	if (r == NULL || json_object_set_new(r, "jsonrpc", json_string("2.0")) != 0 ||
	    (id != NULL && json_object_set(r, "id", id) != 0)) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *tp_rpc_result(json_t *id, json_t *result)
{
	if (result == NULL) /* building the result ran out of memory: say so */
		return tp_rpc_error(id, TP_RPC_INTERNAL_ERROR, "out of memory", NULL);
	json_t *r = envelope(id);
	if (r == NULL) {
		json_decref(result);
		return NULL;
	}
	if (json_object_set_new(r, "result", result) != 0) { /* it took result either way */
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *tp_rpc_error(json_t *id, int code, const char *msg, json_t *data)
{
	json_t *r = envelope(id);
	json_t *e = json_object();
	if (r == NULL || e == NULL || json_object_set_new(e, "code", json_integer(code)) != 0 ||
	    json_object_set_new(e, "message", json_string(msg)) != 0 ||
	    (data != NULL && json_object_set(e, "data", data) != 0) ||
	    json_object_set(r, "error", e) != 0) {
		json_decref(r);
		json_decref(e);
		json_decref(data);
		return NULL;
	}
	json_decref(e);
	json_decref(data);
	return r;
}

json_t *tp_rpc_notification(const char *method, json_t *params)
{
	if (params == NULL)
		return NULL;
	return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

static struct {
	struct tp_json_raw r[TP_JSON_RAW_MAX];
	size_t n;
	char *owned; /* a stand-in's text (tp_rpc_splice_text), freed with the registration */
} splice;

void tp_rpc_splice(const struct tp_json_raw *r, size_t n)
{
	free(splice.owned);
	splice.owned = NULL;
	splice.n = n < TP_JSON_RAW_MAX ? n : TP_JSON_RAW_MAX;
	if (splice.n > 0)
		memcpy(splice.r, r, splice.n * sizeof *r);
}

void tp_rpc_splice_string(const json_t *node)
{
	if (splice.n > 0 && splice.n < TP_JSON_RAW_MAX && json_is_string(node))
		splice.r[splice.n++] = (struct tp_json_raw){ node, json_string_value(node),
							     json_string_length(node), 1 };
}

int tp_rpc_splicing(void)
{
	return splice.n > 0 && splice.n < TP_JSON_RAW_MAX && splice.owned == NULL;
}

int tp_rpc_splice_text(const json_t *stand_in, char *text, size_t n)
{
	if (!tp_rpc_splicing() || !json_is_string(stand_in))
		return -1;
	splice.owned = text;
	splice.r[splice.n++] = (struct tp_json_raw){ stand_in, text, n, 2 };
	return 0;
}

char *tp_rpc_dumps(const json_t *v)
{
	return splice.n > 0 ? tp_json_dumps_splice(v, JSON_COMPACT, splice.r, splice.n, 3)
			    : tp_json_dumps(v, JSON_COMPACT);
}

char *tp_rpc_encode(const json_t *msg, size_t *len)
{
	/* 4 levels: an MCP result's content text is result.content[0].text */
	char *s = splice.n > 0 ? tp_json_dumps_splice(msg, JSON_COMPACT, splice.r, splice.n, 4)
			       : tp_json_dumps(msg, JSON_COMPACT);
	if (s == NULL)
		return NULL;
	size_t n = strlen(s);
	char *line = realloc(s, n + 2);
	if (line == NULL) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*len = n + 1;
	return line;
}
