/*
 * proto.c — JSON-RPC 2.0 line framing, envelope checks, replies and the MCP
 * methods that need no worker. Pure: every input is hostile and bounded here
 * (line length, JSON validity and UTF-8 via jansson, envelope shape).
 */
#include "proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"

/* ---- line framing ---------------------------------------------------------- */

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
		if (p == NULL)
			return NULL;
		lb->buf = p;
		lb->cap = cap;
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
				lb->len = lb->scanned = 0;
				shrink(lb);
				return TP_LINE_NONE;
			}
			drop_front(lb, (size_t)(nl - lb->buf) + 1);
			lb->discarding = 0;
			continue;
		}
		size_t n;
		if (nl != NULL) {
			n = (size_t)(nl - lb->buf);
			lb->taken = n + 1;
		} else if (lb->len > lb->max) {
			lb->discarding = 1;
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
		if (n > lb->max)
			return TP_LINE_TOO_LONG; /* whole line already buffered: dropped via taken
						  */
		if (n > 0 && lb->buf[n - 1] == '\r')
			n--;
		if (blank(lb->buf, n))
			continue;
		*line = lb->buf;
		*len = n;
		return TP_LINE_OK;
	}
}

/* ---- envelopes ------------------------------------------------------------- */

void tp_rpc_clear(struct tp_rpc *rpc)
{
	json_decref(rpc->msg);
	memset(rpc, 0, sizeof *rpc);
}

static int valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

int tp_proto_parse(const char *line, size_t len, struct tp_rpc *rpc, json_t **reply)
{
	json_error_t jerr;
	char msg[256];
	int oom;

	memset(rpc, 0, sizeof *rpc);
	*reply = NULL;
	/* Duplicate keys are refused: two readers could disagree on which one wins. */
	json_t *m = tp_json_loadb(
	    line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr, &oom);
	if (m == NULL && oom) { /* the id is unknown: the client gets the error with id null */
		*reply = tp_proto_error(NULL, TP_RPC_INTERNAL_ERROR,
					"out of memory reading the request", NULL);
		return -1;
	}
	if (m == NULL) {
		snprintf(msg, sizeof msg, "Parse error: %s at column %d", jerr.text, jerr.column);
		*reply = tp_proto_error(NULL, TP_RPC_PARSE_ERROR, msg, NULL);
		return -1;
	}
	if (!json_is_object(m)) {
		*reply =
		    tp_proto_error(NULL, TP_RPC_INVALID_REQUEST,
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
	if (id != NULL && !valid_id(id)) {
		why = "Invalid Request: id must be a string, an integer or null";
		id = NULL;
	} else if (!json_is_string(json_object_get(m, "jsonrpc")) ||
		   strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0") != 0) {
		why = "Invalid Request: jsonrpc must be \"2.0\"";
	} else if (method == NULL &&
		   (json_object_get(m, "result") || json_object_get(m, "error"))) {
		json_decref(m); /* a response from the client: nothing of ours to answer */
		return -1;
	} else if (!json_is_string(method)) {
		why = "Invalid Request: method must be a string";
	} else if (params != NULL && !json_is_object(params) && !json_is_array(params)) {
		why = "Invalid Request: params must be an object or an array";
	}
	if (why != NULL) {
		/* A broken notification gets no reply; a broken request does. */
		if (id != NULL || json_object_get(m, "id") != NULL)
			*reply = tp_proto_error(id, TP_RPC_INVALID_REQUEST, why, NULL);
		json_decref(m);
		return -1;
	}
	rpc->msg = m;
	rpc->id = id;
	rpc->method = json_string_value(method);
	rpc->params = params;
	return 0;
}

/* A reply missing a member is not a reply: every set is checked. */
static json_t *envelope(json_t *id)
{
	json_t *r = json_object();
	if (r == NULL || json_object_set_new(r, "jsonrpc", json_string("2.0")) != 0 ||
	    json_object_set(r, "id", id ? id : json_null()) != 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *tp_proto_result(json_t *id, json_t *result)
{
	if (result == NULL) /* building the result ran out of memory: say so */
		return tp_proto_error(id, TP_RPC_INTERNAL_ERROR, "out of memory", NULL);
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

json_t *tp_proto_error(json_t *id, int code, const char *msg, json_t *data)
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

char *tp_proto_encode(const json_t *msg, size_t *len)
{
	char *s = tp_json_dumps(msg, JSON_COMPACT);
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

/* ---- MCP ------------------------------------------------------------------- */

static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

/* printf onto the end of what buf holds; a cut is harmless in these texts. */
static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t off = strlen(buf);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + off, cap - off, fmt, ap);
	va_end(ap);
}

static const char *join(int i)
{
	return i == 0 ? "" : i == TP_NLANGS - 1 ? " or " : ", ";
}

json_t *tp_proto_initialize(const json_t *params)
{
	const char *want = json_string_value(json_object_get(params, "protocolVersion"));
	const char *ver = versions[0];
	char title[256] = "tidepool sandbox (", how[1024] = "Call ";
	for (size_t i = 0; want != NULL && i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(want, versions[i]) == 0)
			ver = versions[i];
	for (int i = 0; i < TP_NLANGS; i++) {
		const struct tp_lang_info *l = &tp_langs[i];
		append(title, sizeof title, "%s%s", i ? ", " : "", l->title);
		append(how, sizeof how, "%s%s with %s code (%s)", join(i), l->tool, l->title,
		       l->value_hint);
	}
	append(title, sizeof title, ")");
	append(how, sizeof how,
	       ". Output is captured. Each call runs in a fresh, locked-down process.");
	return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", ver,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
			 "tidepool", "title", title, "version", TP_VERSION, "instructions", how);
}

static json_t *output_schema(void)
{
	return json_pack(
	    "{s:s, s:{s:{s:s}, s:{}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:{s:s}}, "
	    "s:[s,s,s,s,s,s]}",
	    "type", "object", "properties", "ok", "type", "boolean", "value", "value_repr", "type",
	    "boolean", "stdout", "type", "string", "stderr", "type", "string", "truncated", "type",
	    "object", "error", "type", "object", "null", "usage", "type", "object", "required",
	    "ok", "stdout", "stderr", "truncated", "error", "usage");
}

static json_t *tool(const struct tp_lang_info *l)
{
	json_t *t = json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:o}, s:{s:s, s:s}}, s:[s], s:b}}", "name", l->tool,
	    "title", l->tool_title, "description", l->tool_desc, "inputSchema", "type", "object",
	    "properties", "code", "type", "string", "description",
	    json_sprintf("%s source code", l->title), "inputs", "type", "object", "description",
	    "Each key becomes a global variable", "required", "code", "additionalProperties", 0);
	if (t != NULL && json_object_set_new(t, "outputSchema", output_schema()) != 0) {
		json_decref(t);
		return NULL;
	}
	return t;
}

json_t *tp_proto_tools_list(void)
{
	json_t *tools = json_array();
	for (int i = 0; tools != NULL && i < TP_NLANGS; i++)
		if (json_array_append_new(tools, tool(&tp_langs[i])) != 0) {
			json_decref(tools);
			return NULL;
		}
	return json_pack("{s:o}", "tools", tools);
}

/* ---- exec parameters ------------------------------------------------------- */

static int check_keys(const json_t *obj, const char *const *allowed, char *err, size_t errlen)
{
	const char *key;
	json_t *val;
	json_object_foreach((json_t *)obj, key, val)
	{
		int ok = 0;
		for (size_t i = 0; allowed[i] != NULL && !ok; i++)
			ok = strcmp(allowed[i], key) == 0;
		if (!ok) {
			snprintf(err, errlen, "unknown parameter '%.64s'", key);
			return -1;
		}
	}
	return 0;
}

static int common_params(const json_t *p, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, char *err, size_t errlen)
{
	json_t *code = json_object_get(p, "code");
	json_t *inputs = json_object_get(p, "inputs");
	json_t *seed = json_object_get(p, "seed");
	json_t *session = json_object_get(p, "session_id");

	if (!json_is_string(code)) {
		snprintf(err, errlen, "'code' must be a string");
		return -1;
	}
	if (inputs != NULL && !json_is_null(inputs) && !json_is_object(inputs)) {
		snprintf(err, errlen, "'inputs' must be an object");
		return -1;
	}
	if (seed != NULL && !json_is_null(seed) && !json_is_integer(seed)) {
		snprintf(err, errlen, "'seed' must be an integer");
		return -1;
	}
	if (session != NULL && !json_is_null(session)) {
		snprintf(err, errlen, "sessions are not available in this version");
		return -1;
	}
	out->code = json_string_value(code);
	out->code_len = json_string_length(code);
	out->inputs = json_is_object(inputs) ? inputs : NULL;
	out->has_seed = json_is_integer(seed);
	out->seed = out->has_seed ? json_integer_value(seed) : 0;
	out->limits = *ceiling;
	return tp_limits_tighten(&out->limits, json_object_get(p, "limits"), err, errlen);
}

int tp_proto_exec_params(const json_t *params, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, char *err, size_t errlen)
{
	static const char *const keys[] = { "lang", "code",   "policy", "limits", "session_id",
					    "seed", "inputs", "stream", NULL };
	memset(out, 0, sizeof *out);
	if (!json_is_object(params)) {
		snprintf(err, errlen, "params must be an object");
		return -1;
	}
	if (check_keys(params, keys, err, errlen) != 0)
		return -1;
	const struct tp_lang_info *lang =
	    tp_langs_by_name(json_string_value(json_object_get(params, "lang")));
	if (lang == NULL) {
		char names[256];
		snprintf(err, errlen, "'lang' must be %s",
			 tp_langs_names(names, sizeof names, "\"%s\"", ", ", " or "));
		return -1;
	}
	const char *policy = json_string_value(json_object_get(params, "policy"));
	json_t *pol = json_object_get(params, "policy");
	if (pol != NULL && !json_is_null(pol) &&
	    (policy == NULL || strcmp(policy, "standard") != 0)) {
		snprintf(err, errlen, "unknown policy: only \"standard\" exists in this version");
		return -1;
	}
	json_t *stream = json_object_get(params, "stream");
	if (stream != NULL && !json_is_false(stream) && !json_is_null(stream)) {
		snprintf(err, errlen, "'stream' is not available in this version");
		return -1;
	}
	out->lang = lang->id;
	return common_params(params, ceiling, out, err, errlen);
}

int tp_proto_tool_params(const json_t *params, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, char *err, size_t errlen)
{
	static const char *const keys[] = { "code", "inputs", NULL };
	memset(out, 0, sizeof *out);
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	const struct tp_lang_info *lang = tp_langs_by_tool(name);
	if (lang == NULL) {
		snprintf(err, errlen, "Unknown tool: %.64s", name ? name : "(none)");
		return -1;
	}
	if (!json_is_object(args)) {
		snprintf(err, errlen, "'arguments' must be an object");
		return -1;
	}
	if (check_keys(args, keys, err, errlen) != 0)
		return -1;
	out->lang = lang->id;
	out->tool_call = 1;
	return common_params(args, ceiling, out, err, errlen);
}

json_t *tp_proto_tool_result(json_t *exec_result)
{
	if (exec_result == NULL)
		return NULL;
	char *text = tp_json_dumps(exec_result, JSON_COMPACT);
	int ok = json_is_true(json_object_get(exec_result, "ok"));
	if (text == NULL) { /* content and structuredContent must agree */
		json_decref(exec_result);
		return NULL;
	}
	json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
			      "structuredContent", exec_result, "isError", !ok);
	free(text);
	return r;
}
