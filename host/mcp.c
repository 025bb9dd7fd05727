/*
 * mcp.c — the MCP methods that need no worker: initialize and tools/list, built
 * from the language table (common/langs.c), and the tools/call result around
 * an exec result. Pure.
 */
#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "jsonio.h"
#include "langs.h"

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

/* What goes before the i-th language in a list that reads "a, b or c". */
static const char *join(int i)
{
	return i == 0 ? "" : i == TP_NLANGS - 1 ? " or " : ", ";
}

json_t *tp_mcp_initialize(const json_t *params)
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
	       ". Output is captured. Each call runs in a fresh, locked-down process, unless "
	       "it passes session: \"new\" (a session keeps its variables; the result's "
	       "session_id, passed back as session, continues it; list_sessions and "
	       "close_session manage them).");
	return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", ver,
			 "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
			 "tidepool", "title", title, "version", TP_VERSION, "instructions", how);
}

/* error.kind's vocabulary: every kind a client can be shown. */
static json_t *kind_enum(void)
{
	json_t *a = json_array();
	for (int k = TP_KIND_NONE + 1; a != NULL && k < TP_KIND__COUNT; k++)
		if (json_array_append_new(a, json_string(tp_kind_name((enum tp_kind)k))) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The error object: each field means one thing (README, "sandbox/exec"). */
static json_t *error_schema(void)
{
	return json_pack(
	    "{s:[s,s], s:{s:{s:s, s:o}, s:{s:s, s:[s,s,s,s]}, s:{s:[s,s], s:s}, s:{s:s}, "
	    "s:{s:[s,s]}, s:{s:[s,s]}, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}}}, s:[s,s,s,s]}",
	    "type", "object", "null", "properties", "kind", "type", "string", "enum", kind_enum(),
	    "layer", "type", "string", "enum", "language", "process", "kernel", "host", "type",
	    "type", "string", "null", "description",
	    "the exception class or Lua error type; null for limits and other verdicts", "message",
	    "type", "string", "traceback", "type", "string", "null", "line", "type", "integer",
	    "null", "limit", "type", "object", "properties", "name", "type", "string", "limit",
	    "type", "integer", "used", "type", "integer", "required", "kind", "layer", "type",
	    "message");
}

static json_t *output_schema(void)
{
	return json_pack(
	    "{s:s, s:{s:{s:s}, s:{}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:o, s:{s:s}, s:{s:s}, "
	    "s:{s:s}}, s:[s,s,s,s,s,s]}",
	    "type", "object", "properties", "ok", "type", "boolean", "value", "value_repr", "type",
	    "boolean", "stdout", "type", "string", "stderr", "type", "string", "truncated", "type",
	    "object", "error", error_schema(), "usage", "type", "object", "session_id", "type",
	    "string", "session_lost", "type", "boolean", "required", "ok", "stdout", "stderr",
	    "truncated", "error", "usage");
}

static json_t *tool(const struct tp_lang_info *l, const struct tp_policy *p)
{
	char desc[1024];
	snprintf(desc, sizeof desc,
		 "%s To keep variables, functions and imports for later calls, pass "
		 "session: \"new\"; the result has a session_id: pass it as session in the next "
		 "calls. A session ends after %llu s without a call (list_sessions shows them, "
		 "close_session ends one). Without session, each call starts fresh.",
		 l->tool_desc, (unsigned long long)(p->session.idle_ms / 1000));
	json_t *t = json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:o}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}}",
	    "name", l->tool, "title", l->tool_title, "description", desc, "inputSchema", "type",
	    "object", "properties", "code", "type", "string", "description",
	    json_sprintf("%s source code", l->title), "inputs", "type", "object", "description",
	    "Each key becomes a global variable", "session", "type", "string", "description",
	    "\"new\" to start a session that keeps state, or the session_id of one to continue",
	    "required", "code", "additionalProperties", 0);
	if (t != NULL && json_object_set_new(t, "outputSchema", output_schema()) != 0) {
		json_decref(t);
		return NULL;
	}
	return t;
}

/* list_sessions and close_session. */
static json_t *session_tools(void)
{
	return json_pack(
	    "[{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:s, s:{s:{s:s}}, s:[s]}}, "
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s], s:b}, "
	    "s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s]}}]",
	    "name", "list_sessions", "title", "List sessions", "description",
	    "The open sessions: language, policy, age and idle time in ms, execs, memory.",
	    "inputSchema", "type", "object", "properties", "additionalProperties", 0,
	    "outputSchema", "type", "object", "properties", "sessions", "type", "array", "required",
	    "sessions", "name", "close_session", "title", "Close a session", "description",
	    "Ends a session and frees what it holds; its variables are gone.", "inputSchema",
	    "type", "object", "properties", "session_id", "type", "string", "required",
	    "session_id", "additionalProperties", 0, "outputSchema", "type", "object", "properties",
	    "session_id", "type", "string", "closed", "type", "boolean", "execs", "type", "integer",
	    "required", "session_id", "closed", "execs");
}

/* write_file, read_file, list_files: a session's workspace, in text. */
static json_t *file_tools(void)
{
	return json_pack(
	    "[{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s], s:b}}, "
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s], s:b}}, "
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s], s:b}}]",
	    "name", "write_file", "title", "Write a file", "description",
	    "Writes text to a file in a session's workspace (its working directory), for the "
	    "session's code to read with a relative path. Open the session with session: \"new\".",
	    "inputSchema", "type", "object", "properties", "session_id", "type", "string", "path",
	    "type", "string", "text", "type", "string", "required", "session_id", "path", "text",
	    "additionalProperties", 0, "name", "read_file", "title", "Read a file", "description",
	    "Reads a file the session's code wrote in its workspace: text, or base64 in data when "
	    "it is not UTF-8.",
	    "inputSchema", "type", "object", "properties", "session_id", "type", "string", "path",
	    "type", "string", "required", "session_id", "path", "additionalProperties", 0, "name",
	    "list_files", "title", "List files", "description",
	    "The files in a session's workspace, with their sizes.", "inputSchema", "type",
	    "object", "properties", "session_id", "type", "string", "required", "session_id",
	    "additionalProperties", 0);
}

json_t *tp_mcp_tools_list(const struct tp_policy *deflt)
{
	json_t *tools = json_array();
	for (int i = 0; tools != NULL && i < TP_NLANGS; i++)
		if (json_array_append_new(tools, tool(&tp_langs[i], deflt)) != 0) {
			json_decref(tools);
			return NULL;
		}
	/* Then the sessions' tools, and a workspace's when the policy gives one. */
	json_t *more[2] = { session_tools(),
			    deflt->session.workspace_bytes > 0 ? file_tools() : json_array() };
	for (int i = 0; i < 2; i++) {
		if (tools != NULL && (more[i] == NULL || json_array_extend(tools, more[i]) != 0)) {
			json_decref(tools);
			tools = NULL;
		}
		json_decref(more[i]);
	}
	return tools ? json_pack("{s:o}", "tools", tools) : NULL;
}

json_t *tp_mcp_tool_value(json_t *obj, int is_error)
{
	char *text = obj ? tp_json_dumps(obj, JSON_COMPACT) : NULL;
	if (text == NULL) {
		json_decref(obj);
		return NULL;
	}
	json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
			      "structuredContent", obj, "isError", is_error);
	free(text);
	return r;
}

json_t *tp_mcp_tool_text(const char *text)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text,
			 "isError", 1);
}

json_t *tp_mcp_tool_result(json_t *exec_result)
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
