/*
 * mcp.c — the MCP methods that need no worker: initialize, server/discover and
 * tools/list, built from the language table (common/langs.c) and the default
 * policy, and the tools/call result around an exec result. Two eras share
 * them: a request whose _meta names a protocol version is served statelessly
 * as revision 2026-07-28 (tp_mcp_era() checks it, tp_mcp_stamp() marks its
 * result); any other follows the revision initialize picked. Pure.
 */
#include "mcp.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "jsonio.h"
#include "jsonrpc.h"
#include "langs.h"

/* The modern revision, then the initialize-era ones (newest first). */
static const char *const versions[] = { TP_MCP_MODERN, "2025-11-25", "2025-06-18", "2025-03-26",
					"2024-11-05" };
#define NVERSIONS (sizeof versions / sizeof versions[0])
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"

/* printf onto the end of what buf holds; a cut is harmless in these texts. */
static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t off = strlen(buf);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + off, cap - off, fmt, ap);
	va_end(ap);
}

/* What goes before the i-th of n items in a list that reads "a, b or c". */
static const char *join(size_t i, size_t n, const char *last)
{
	return i == 0 ? "" : i == n - 1 ? last : ", ";
}

static void server_title(char *title, size_t cap)
{
	snprintf(title, cap, "tidepool sandbox (");
	for (int i = 0; i < TP_NLANGS; i++)
		append(title, cap, "%s%s", i ? ", " : "", tp_langs[i].title);
	append(title, cap, ")");
}

/* The languages the default policy allows: tools/list has a tool for each. */
static void instructions(char *how, size_t cap, const struct tp_policy *deflt)
{
	size_t n = 0, k = 0;
	for (int i = 0; i < TP_NLANGS; i++)
		n += tp_policy_allows_lang(deflt, tp_langs[i].id) != 0;
	snprintf(how, cap, "Call ");
	for (int i = 0; i < TP_NLANGS; i++) {
		const struct tp_lang_info *l = &tp_langs[i];
		if (!tp_policy_allows_lang(deflt, l->id))
			continue;
		append(how, cap, "%s%s with %s code (%s)", join(k++, n, " or "), l->tool, l->title,
		       l->value_hint);
	}
	append(how, cap,
	       ". Output is captured. Each call runs in a fresh, locked-down process, unless "
	       "it passes session: \"new\" (a session keeps its variables; the result's "
	       "session_id, passed back as session, continues it; list_sessions and "
	       "close_session manage them).");
	if (deflt->session.workspace_bytes > 0)
		append(how, cap,
		       " A session's working directory is its workspace: write_file puts a file "
		       "there for its code, read_file and list_files get what the code wrote.");
}

static json_t *server_info(void)
{
	char title[256];
	server_title(title, sizeof title);
	return json_pack("{s:s, s:s, s:s}", "name", "tidepool", "title", title, "version",
			 TP_VERSION);
}

int tp_mcp_version_known(const char *v)
{
	for (size_t i = 0; i < NVERSIONS; i++)
		if (strcmp(versions[i], v) == 0)
			return 1;
	return 0;
}

const char *tp_mcp_initialize_version(const json_t *params)
{
	const char *want = json_string_value(json_object_get(params, "protocolVersion"));
	if (want == NULL)
		return NULL;
	/* The first is the modern revision, which initialize cannot pick. */
	for (size_t i = 1; i < NVERSIONS; i++)
		if (strcmp(want, versions[i]) == 0)
			return versions[i];
	return versions[1];
}

json_t *tp_mcp_initialize(const char *version, const struct tp_policy *deflt)
{
	char how[1024];
	instructions(how, sizeof how, deflt);
	json_t *r =
	    json_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", version, "capabilities",
		      "tools", "listChanged", 0, "serverInfo", server_info(), "instructions", how);
	/* A session's files come back as resources (resource_link, embedded), read
	 * with resources/read: the capability goes with the workspaces. */
	if (r != NULL && deflt->session.workspace_bytes > 0)
		json_object_set_new(json_object_get(r, "capabilities"), "resources", json_object());
	return r;
}

json_t *tp_mcp_discover(const struct tp_policy *deflt)
{
	char how[1024];
	json_t *v = json_array();
	for (size_t i = 0; v != NULL && i < NVERSIONS; i++)
		if (json_array_append_new(v, json_string(versions[i])) != 0) {
			json_decref(v);
			v = NULL;
		}
	instructions(how, sizeof how, deflt);
	/* The tools never change while this process lives: an hour is safe. */
	json_t *r =
	    v ? json_pack("{s:o, s:{s:{}}, s:s, s:i, s:s}", "supportedVersions", v, "capabilities",
			  "tools", "instructions", how, "ttlMs", 3600000, "cacheScope", "private")
	      : NULL;
	if (r != NULL && deflt->session.workspace_bytes > 0)
		json_object_set_new(json_object_get(r, "capabilities"), "resources", json_object());
	return r;
}

int tp_mcp_modern(const json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	return json_is_object(meta) && json_object_get(meta, META_VERSION) != NULL;
}

int tp_mcp_era(const json_t *params, char *msg, size_t cap, json_t **data)
{
	json_t *meta = json_object_get(params, "_meta");
	json_t *ver = json_object_get(meta, META_VERSION);
	*data = NULL;
	if (!tp_mcp_modern(params))
		return 0;
	if (!json_is_string(ver) || strcmp(json_string_value(ver), TP_MCP_MODERN) != 0) {
		json_t *sup = json_array();
		for (size_t i = 0; sup != NULL && i < NVERSIONS; i++)
			json_array_append_new(sup, json_string(versions[i]));
		*data = json_pack("{s:o, s:O}", "supported", sup ? sup : json_array(), "requested",
				  ver);
		snprintf(msg, cap, "Unsupported protocol version");
		return TP_MCP_UNSUPPORTED_VERSION;
	}
	if (!json_is_object(json_object_get(meta, META_CAPS))) {
		snprintf(msg, cap,
			 "Invalid params: _meta." META_CAPS " must be an object (revision %s)",
			 TP_MCP_MODERN);
		return TP_RPC_INVALID_PARAMS;
	}
	return 0;
}

json_t *tp_mcp_stamp(json_t *result, const json_t *params)
{
	if (result == NULL || !tp_mcp_modern(params))
		return result;
	json_t *meta = json_object_get(result, "_meta");
	if (meta == NULL && json_object_set_new(result, "_meta", meta = json_object()) != 0)
		meta = NULL;
	if (meta == NULL || json_object_set_new(meta, META_SERVER, server_info()) != 0 ||
	    json_object_set_new(result, "resultType", json_string("complete")) != 0) {
		json_decref(result);
		return NULL;
	}
	return result;
}

/* ---- tools/list ------------------------------------------------------------------ */

/* A JSON text of ours: NULL only when out of memory. */
static json_t *parse(const char *text)
{
	return json_loads(text, 0, NULL);
}

/* What an exec result holds (README, "sandbox/exec"): error.kind's enum is
 * filled from err.c, so it names every kind a client can be shown. */
static const char output_schema_text[] =
    "{\"type\": \"object\", \"properties\": {"
    "\"ok\": {\"type\": \"boolean\"},"
    "\"value\": {\"description\": \"the snippet's value as JSON (null when none)\","
    " \"anyOf\": [{\"type\": \"null\"}, {\"type\": \"boolean\"}, {\"type\": \"number\"},"
    " {\"type\": \"string\"}, {\"type\": \"array\"}, {\"type\": \"object\"}]},"
    "\"value_repr\": {\"type\": \"boolean\", \"description\": \"true: value is the repr() of a"
    " value JSON cannot carry\"},"
    "\"text\": {\"description\": \"the value as a REPL prints it (Python repr, a pandas table;"
    " Lua print); null when there is no value\","
    " \"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
    "\"images\": {\"description\": \"the figures the snippet showed or left open, each an image"
    " content item of this result, in this order\", \"type\": \"array\", \"items\": {"
    "  \"type\": \"object\", \"properties\": {\"mime\": {\"type\": \"string\"},"
    "  \"bytes\": {\"type\": \"integer\", \"minimum\": 1}}, \"required\": [\"mime\", \"bytes\"]}},"
    "\"nonfinite\": {\"description\": \"the numbers JSON has none for (NaN, infinities), each"
    " a null of value named by its JSON pointer (RFC 6901; \\\"\\\" is the whole value); absent"
    " when there are none\", \"type\": \"object\", \"additionalProperties\": {"
    "  \"type\": \"string\", \"enum\": [\"nan\", \"inf\", \"-inf\"]}},"
    "\"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"},"
    "\"truncated\": {\"type\": \"object\", \"properties\": {\"stdout\": {\"type\": \"boolean\"},"
    " \"stderr\": {\"type\": \"boolean\"}, \"text\": {\"type\": \"boolean\"}},"
    " \"required\": [\"stdout\", \"stderr\"]},"
    "\"error\": {\"anyOf\": [{\"type\": \"null\"}, {\"type\": \"object\", \"properties\": {"
    "  \"kind\": {\"type\": \"string\"},"
    "  \"layer\": {\"type\": \"string\", \"enum\": [\"language\", \"process\", \"kernel\","
    "   \"host\"]},"
    "  \"type\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}], \"description\":"
    "   \"the exception class or Lua error type; null for limits and other verdicts\"},"
    "  \"message\": {\"type\": \"string\"},"
    "  \"traceback\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}]},"
    "  \"line\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]},"
    "  \"column\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]},"
    "  \"data\": {\"description\": \"a Lua error({...}) table as JSON\", \"anyOf\": ["
    "   {\"type\": \"null\"}, {\"type\": \"boolean\"}, {\"type\": \"number\"},"
    "   {\"type\": \"string\"}, {\"type\": \"array\"}, {\"type\": \"object\"}]},"
    "  \"limit\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"},"
    "   \"limit\": {\"type\": \"integer\"}, \"used\": {\"type\": \"integer\"}},"
    "   \"required\": [\"name\", \"limit\", \"used\"]},"
    "  \"rule\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}], \"description\":"
    "   \"what decided: a policy key and the name it refused (python.modules:socket,"
    " lua.functions:os.execute, filesystem.read, limits.memory_bytes) or a wall (seccomp:execve,"
    " landlock:read_file, python.attribute:__subclasses__); null for an error that is no"
    " refusal\"},"
    "  \"policy\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"null\"}],"
    "   \"description\": \"the policy the exec ran under\"},"
    "  \"path\": {\"type\": \"string\", \"description\": \"the path a file refusal was"
    " about\"},"
    "  \"syscall\": {\"type\": \"string\"}, \"signal\": {\"type\": \"string\"},"
    "  \"syscall_nr\": {\"type\": \"integer\"},"
    "  \"retry_after_ms\": {\"type\": \"integer\"}},"
    " \"required\": [\"kind\", \"layer\", \"type\", \"message\", \"rule\", \"policy\"]}]},"
    "\"usage\": {\"type\": \"object\", \"properties\": {"
    "  \"instructions\": {\"type\": \"integer\", \"minimum\": 0},"
    "  \"memory_peak_bytes\": {\"type\": \"integer\", \"minimum\": 0},"
    "  \"cpu_ms\": {\"type\": \"number\", \"minimum\": 0},"
    "  \"wall_ms\": {\"type\": \"number\", \"minimum\": 0},"
    "  \"queue_ms\": {\"type\": \"number\", \"minimum\": 0},"
    "  \"tool_calls\": {\"type\": \"integer\", \"minimum\": 0}},"
    " \"required\": [\"instructions\", \"memory_peak_bytes\", \"cpu_ms\", \"wall_ms\","
    "  \"queue_ms\", \"tool_calls\"]},"
    "\"session_id\": {\"type\": \"string\"}, \"session_lost\": {\"type\": \"boolean\"},"
    "\"files\": {\"description\": \"the files a session exec created, modified or deleted in its"
    " workspace, by path; each created or modified one is also a resource_link content item"
    " (tidepool://sessions/SID/files/PATH) and, when small, an embedded resource\","
    " \"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": {"
    "  \"path\": {\"type\": \"string\"}, \"path_b64\": {\"type\": \"string\", \"description\":"
    "   \"the path's bytes in base64, when they are not UTF-8\"},"
    "  \"size\": {\"type\": \"integer\", \"minimum\": 0}, \"mime\": {\"type\": \"string\"},"
    "  \"change\": {\"type\": \"string\", \"enum\": [\"created\", \"modified\", \"deleted\"]}},"
    "  \"required\": [\"change\"]}},"
    "\"files_more\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"changed files"
    " past the 100 listed\"},"
    "\"files_complete\": {\"type\": \"boolean\", \"description\": \"false: the workspace"
    " held more files than the host walks (1000, 8 deep), so files may miss some\"},"
    "\"isolation\": {\"type\": \"object\", \"properties\": {"
    "  \"level\": {\"type\": \"string\", \"enum\": [\"process\", \"state\"]},"
    "  \"worker_exec\": {\"type\": \"integer\", \"minimum\": 1}},"
    " \"required\": [\"level\", \"worker_exec\"]}},"
    "\"required\": [\"ok\", \"value\", \"text\", \"stdout\", \"stderr\", \"truncated\","
    " \"error\", \"usage\"]}";

static json_t *output_schema(void)
{
	json_t *s = parse(output_schema_text);
	json_t *err = json_array_get(
	    json_object_get(json_object_get(json_object_get(s, "properties"), "error"), "anyOf"),
	    1);
	json_t *kind = json_object_get(json_object_get(err, "properties"), "kind");
	json_t *a = json_array();
	for (int k = TP_KIND_NONE + 1; a != NULL && k < TP_KIND__COUNT; k++)
		if (json_array_append_new(a, json_string(tp_kind_name((enum tp_kind)k))) != 0) {
			json_decref(a);
			a = NULL;
		}
	if (kind == NULL || a == NULL || json_object_set_new(kind, "enum", a) != 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* 67108864 -> "64 MiB". */
static void bytes_text(char *buf, size_t cap, unsigned long long n)
{
	if (n >= 1024 * 1024 && n % (1024 * 1024) == 0)
		snprintf(buf, cap, "%llu MiB", n / (1024 * 1024));
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, cap, "%llu KiB", n / 1024);
	else
		snprintf(buf, cap, "%llu bytes", n);
}

static void ms_text(char *buf, size_t cap, unsigned long long ms)
{
	if (ms % 1000 == 0)
		snprintf(buf, cap, "%llu s", ms / 1000);
	else
		snprintf(buf, cap, "%llu ms", ms);
}

static void strv_text(char *desc, size_t cap, const struct tp_strv *v, const char *last)
{
	for (size_t i = 0; i < v->n; i++)
		append(desc, cap, "%s%s", join(i, v->n, last), v->v[i]);
}

/* The tool's description: what it does, the policy's real limits, what the
 * language layer lets in, and how state is kept. */
static void tool_description(char *desc, size_t cap, const struct tp_lang_info *l,
			     const struct tp_policy *p)
{
	const struct tp_limits *lim = &p->limits;
	char mem[32], out[32], res[32], cpu[32], wall[32];
	bytes_text(mem, sizeof mem, (unsigned long long)lim->memory_bytes);
	bytes_text(out, sizeof out, (unsigned long long)lim->output_bytes);
	bytes_text(res, sizeof res, (unsigned long long)lim->result_bytes);
	ms_text(cpu, sizeof cpu, (unsigned long long)lim->cpu_ms);
	ms_text(wall, sizeof wall, (unsigned long long)lim->wall_ms);
	int grants = p->fs_read.n > 0 || p->fs_write.n > 0;
	int files = grants || p->session.workspace_bytes > 0;
	snprintf(desc, cap,
		 "%s %s Limits of each call (policy '%s'; the limits argument may only lower "
		 "them): memory %s, CPU time %s, wall clock %s, stdout+stderr %s, value %s of "
		 "JSON nested at most %llu deep, ",
		 l->tool_desc,
		 grants  ? "No network or processes; files only where the policy grants them."
		 : files ? "No network or processes. Files live in a session's workspace, its "
			   "working directory (relative paths); a call without a session has none."
			 : "No files, network or processes.",
		 p->name, mem, cpu, wall, out, res, (unsigned long long)lim->result_depth);
	if (lim->instructions == 0)
		append(desc, cap, "no instruction limit.");
	else
		append(desc, cap, "%llu %s.", (unsigned long long)lim->instructions,
		       l->id == TP_LANG_LUA ? "VM instructions" : "lines run");
	if (p->language_layer && l->id == TP_LANG_PYTHON && p->py_modules.n > 0) {
		append(desc, cap, " Only these modules can be imported: ");
		strv_text(desc, cap, &p->py_modules, files ? ", " : " and ");
		if (files) /* the file shims' facades (py-sandbox/shim.py) */
			append(desc, cap, ", and os, os.path and pathlib for files");
		append(desc, cap, " (any other import is a policy_violation).");
		for (size_t i = 0; i < p->py_modules.n; i++) {
			if (strcmp(p->py_modules.v[i], "pandas") == 0)
				append(desc, cap,
				       " A pandas DataFrame or Series as the last expression comes "
				       "back as records in value and its printed table in text.");
			if (strcmp(p->py_modules.v[i], "matplotlib") == 0)
				append(desc, cap,
				       " Every matplotlib figure shown (plt.show()) or left open "
				       "comes "
				       "back as a PNG image; savefig to a path is refused.");
		}
	} else if (p->language_layer && l->id == TP_LANG_PYTHON) {
		append(desc, cap, " No module can be imported.");
	} else if (p->language_layer && l->id == TP_LANG_LUA) {
		append(desc, cap, " Libraries: ");
		strv_text(desc, cap, &p->lua_libraries, " and ");
		if (p->lua_functions.n > 0) {
			append(desc, cap, "; functions: ");
			strv_text(desc, cap, &p->lua_functions, files ? ", " : " and ");
		}
		if (files) /* the file shims (lua-sandbox/lenv.c) */
			append(desc, cap, "%s io.open and io.lines for files",
			       p->lua_functions.n > 0 ? ", and" : "; functions:");
		append(desc, cap, " (anything else is nil).");
		for (size_t i = 0; i < p->lua_libraries.n; i++)
			if (strcmp(p->lua_libraries.v[i], "json") == 0)
				append(desc, cap,
				       " json.encode(value) gives JSON text, json.decode(text) a "
				       "value; json.null stands for null.");
	}
	append(desc, cap,
	       " To keep variables, functions and imports for later calls, pass session: "
	       "\"new\"; the result has a session_id: pass it as session in the next calls. A "
	       "session ends after %llu s without a call (list_sessions shows them, "
	       "close_session ends one). Without session, each call starts fresh.",
	       (unsigned long long)(p->session.idle_ms / 1000));
}

/* limits: one integer per limit name, at most the policy's ceiling. */
static json_t *limits_schema(const struct tp_policy *p)
{
	json_t *props = json_object();
	for (int i = 0; props != NULL && i < TP_LIMIT__COUNT; i++) {
		uint64_t ceil = tp_limit_get(&p->limits, (enum tp_limit_id)i);
		json_t *one = json_pack("{s:s, s:i}", "type", "integer", "minimum", 1);
		if (one != NULL && ceil > 0 && ceil <= (uint64_t)INT64_MAX)
			json_object_set_new(one, "maximum", json_integer((json_int_t)ceil));
		if (one == NULL ||
		    json_object_set_new(props, tp_limit_name((enum tp_limit_id)i), one) != 0) {
			json_decref(props);
			props = NULL;
		}
	}
	return props ? json_pack("{s:s, s:s, s:o, s:b}", "type", "object", "description",
				 "lower limits for this call (each at most the policy's; a "
				 "session's calls are held to the session's)",
				 "properties", props, "additionalProperties", 0)
		     : NULL;
}

static json_t *annotations(int read_only, int destructive, int idempotent, int open_world)
{
	return json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", read_only, "destructiveHint",
			 destructive, "idempotentHint", idempotent, "openWorldHint", open_world);
}

static json_t *tool(const struct tp_lang_info *l, const struct tp_policy *p)
{
	char desc[4096];
	tool_description(desc, sizeof desc, l, p);
	/* Code changes nothing outside the sandbox, but a session is state it
	 * changes (not read-only, not idempotent: time, random, state). It only
	 * reaches the world through the client's tools, when the policy lists some. */
	json_t *t = json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:o}, s:{s:s, s:s}, s:{s:s, s:s}, s:o, s:{s:s, "
	    "s:s}}, s:[s], s:b}, s:o, s:o}",
	    "name", l->tool, "title", l->tool_title, "description", desc, "inputSchema", "type",
	    "object", "properties", "code", "type", "string", "description",
	    json_sprintf("%s source code", l->title), "inputs", "type", "object", "description",
	    "Each key becomes a global variable", "session", "type", "string", "description",
	    "\"new\" to start a session that keeps state, or the session_id of one to continue",
	    "limits", limits_schema(p), "seed", "type", "integer", "description",
	    "makes random numbers reproducible", "required", "code", "additionalProperties", 0,
	    "annotations", annotations(0, 0, 0, p->tools.n > 0), "outputSchema", output_schema());
	return t;
}

static json_t *list_sessions_tool(void)
{
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:{}, s:b}, s:{s:s, s:{s:{s:s}}, s:[s]}, s:o}",
			 "name", "list_sessions", "title", "List sessions", "description",
			 "The open sessions: language, policy, age and idle time in ms, execs, "
			 "memory.",
			 "inputSchema", "type", "object", "properties", "additionalProperties", 0,
			 "outputSchema", "type", "object", "properties", "sessions", "type",
			 "array", "required", "sessions", "annotations", annotations(1, 0, 1, 0));
}

static json_t *close_session_tool(void)
{
	return json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s], s:b}, "
	    "s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s]}, s:o}",
	    "name", "close_session", "title", "Close a session", "description",
	    "Ends a session and frees what it holds; its variables are gone.", "inputSchema",
	    "type", "object", "properties", "session_id", "type", "string", "required",
	    "session_id", "additionalProperties", 0, "outputSchema", "type", "object", "properties",
	    "session_id", "type", "string", "closed", "type", "boolean", "execs", "type", "integer",
	    "required", "session_id", "closed", "execs", "annotations", annotations(0, 1, 1, 0));
}

/* write_file, read_file, list_files: a session's workspace, in text. Each
 * returns structuredContent (files.c), so each has its outputSchema. */
static json_t *file_schema(const char *name)
{
	json_t *entry = json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:i}}, s:[s,s]}", "type", "object",
				  "properties", "path", "type", "string", "bytes", "type",
				  "integer", "minimum", 0, "required", "path", "bytes");
	if (entry == NULL || strcmp(name, "write_file") == 0)
		return entry;
	if (strcmp(name, "read_file") == 0) { /* text, or base64 in data */
		json_t *props = json_object_get(entry, "properties");
		json_object_set_new(props, "text", json_pack("{s:s}", "type", "string"));
		json_object_set_new(props, "data", json_pack("{s:s}", "type", "string"));
		return entry;
	}
	return json_pack("{s:s, s:{s:{s:s, s:o}, s:{s:s}}, s:[s,s]}", "type", "object",
			 "properties", "files", "type", "array", "items", entry, "complete", "type",
			 "boolean", "required", "files", "complete");
}

static json_t *write_file_tool(void)
{
	return json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s], s:b}, s:o, s:o}",
	    "name", "write_file", "title", "Write a file", "description",
	    "Writes text to a file in a session's workspace (its working directory), for the "
	    "session's code to read with a relative path. Open the session with session: \"new\".",
	    "inputSchema", "type", "object", "properties", "session_id", "type", "string", "path",
	    "type", "string", "text", "type", "string", "required", "session_id", "path", "text",
	    "additionalProperties", 0, "outputSchema", file_schema("write_file"), "annotations",
	    annotations(0, 1, 1, 0));
}

static json_t *read_file_tool(void)
{
	return json_pack(
	    "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s], s:b}, s:o, s:o}", "name",
	    "read_file", "title", "Read a file", "description",
	    "Reads a file the session's code wrote in its workspace: text, or base64 in data when "
	    "it is not UTF-8.",
	    "inputSchema", "type", "object", "properties", "session_id", "type", "string", "path",
	    "type", "string", "required", "session_id", "path", "additionalProperties", 0,
	    "outputSchema", file_schema("read_file"), "annotations", annotations(1, 0, 1, 0));
}

static json_t *list_files_tool(void)
{
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:{s:s}}, s:[s], s:b}, s:o, s:o}", "name",
			 "list_files", "title", "List files", "description",
			 "The files in a session's workspace, with their sizes.", "inputSchema",
			 "type", "object", "properties", "session_id", "type", "string", "required",
			 "session_id", "additionalProperties", 0, "outputSchema",
			 file_schema("list_files"), "annotations", annotations(1, 0, 1, 0));
}

static int always(const struct tp_policy *deflt)
{
	(void)deflt;
	return 1;
}

/* A workspace's tools exist when the default policy gives sessions one. */
static int with_workspace(const struct tp_policy *deflt)
{
	return deflt->session.workspace_bytes > 0;
}

/* The registry of MCP tools besides each language's run tool (common/langs.c
 * names those): tools/list lists them in this order, and tools/call routes by
 * it (host.c). Adding a tool is one row here and its handler. */
static const struct row {
	struct tp_mcp_tool t;
	json_t *(*descriptor)(void);
	int (*offered)(const struct tp_policy *deflt);
} rows[] = {
	{ { "list_sessions", TP_MCP_TOOL_SESSIONS, NULL }, list_sessions_tool, always },
	{ { "close_session", TP_MCP_TOOL_SESSIONS, NULL }, close_session_tool, always },
	{ { "write_file", TP_MCP_TOOL_FILES, NULL }, write_file_tool, with_workspace },
	{ { "read_file", TP_MCP_TOOL_FILES, NULL }, read_file_tool, with_workspace },
	{ { "list_files", TP_MCP_TOOL_FILES, NULL }, list_files_tool, with_workspace },
};

int tp_mcp_tool_find(const struct tp_policy *deflt, const char *name, struct tp_mcp_tool *out)
{
	if (name == NULL)
		return -1;
	for (int i = 0; i < TP_NLANGS; i++)
		if (strcmp(tp_langs[i].tool, name) == 0) {
			*out =
			    (struct tp_mcp_tool){ tp_langs[i].tool, TP_MCP_TOOL_RUN, &tp_langs[i] };
			return 0;
		}
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (strcmp(rows[i].t.name, name) == 0 && rows[i].offered(deflt)) {
			*out = rows[i].t;
			return 0;
		}
	return -1;
}

json_t *tp_mcp_tools_list(const struct tp_policy *deflt, int modern)
{
	json_t *tools = json_array();
	/* A language the default policy does not allow has no tool: the model
	 * would only learn that by failing. */
	for (int i = 0; tools != NULL && i < TP_NLANGS; i++)
		if (tp_policy_allows_lang(deflt, tp_langs[i].id) &&
		    json_array_append_new(tools, tool(&tp_langs[i], deflt)) != 0) {
			json_decref(tools);
			return NULL;
		}
	/* Then the registry's: the sessions', and a workspace's when the policy gives one. */
	for (size_t i = 0; tools != NULL && i < sizeof rows / sizeof rows[0]; i++)
		if (rows[i].offered(deflt) &&
		    json_array_append_new(tools, rows[i].descriptor()) != 0) {
			json_decref(tools);
			tools = NULL;
		}
	if (tools == NULL)
		return NULL;
	/* 2026-07-28's CacheableResult: the list never changes in this process. */
	return modern ? json_pack("{s:o, s:i, s:s}", "tools", tools, "ttlMs", 3600000, "cacheScope",
				  "private")
		      : json_pack("{s:o}", "tools", tools);
}

/* ---- tools/call ------------------------------------------------------------------ */

json_t *tp_mcp_tool_value(json_t *obj, int is_error)
{
	/* An exec's value (and its text) are written from the worker's bytes
	 * where answer.c registered them, here and in the reply (jsonrpc.h). */
	char *text = obj ? tp_rpc_dumps(obj) : NULL;
	if (text == NULL) {
		json_decref(obj);
		return NULL;
	}
	/* Where the value is written as bytes, the content text (that dump) is
	 * too: an empty string stands in for it, with no copy of it in the tree. */
	size_t n = strlen(text);
	json_t *stand = tp_rpc_splicing() ? json_string("") : NULL;
	json_t *item = stand != NULL ? json_incref(stand) : json_stringn(text, n);
	json_t *r = json_pack("{s:[{s:s, s:o}], s:o, s:b}", "content", "type", "text", "text", item,
			      "structuredContent", obj, "isError", is_error);
	if (r != NULL && stand != NULL && tp_rpc_splice_text(stand, text, n) == 0) {
		json_decref(stand);
		return r; /* text is the registration's now */
	}
	json_t *first = json_array_get(json_object_get(r, "content"), 0);
	if (r != NULL && stand != NULL &&
	    json_object_set_new(first, "text", json_stringn(text, n)) != 0) {
		json_decref(r);
		r = NULL;
	}
	json_decref(stand);
	free(text);
	if (r != NULL)
		tp_rpc_splice_string(json_object_get(first, "text"));
	return r;
}

json_t *tp_mcp_tool_text(const char *text)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text,
			 "isError", 1);
}

/* The result's images become image content items after the text, in their
 * order; the result (the text item and structuredContent) keeps each one's
 * mime and size, not its data twice. */
static json_t *image_items(json_t *result)
{
	json_t *images = json_object_get(result, "images"), *items = json_array(), *img;
	size_t i;

	json_array_foreach(images, i, img)
	{
		json_t *data = json_object_get(img, "data");
		size_t n = json_string_length(data);
		json_int_t bytes = (json_int_t)(n / 4 * 3) -
				   (n > 0 && json_string_value(data)[n - 1] == '=') -
				   (n > 1 && json_string_value(data)[n - 2] == '=');
		if (items == NULL ||
		    json_array_append_new(items, json_pack("{s:s, s:O, s:O}", "type", "image",
							   "data", data, "mimeType",
							   json_object_get(img, "mime"))) != 0 ||
		    json_object_set_new(img, "bytes", json_integer(bytes)) != 0) {
			json_decref(items);
			return NULL;
		}
		json_object_del(img, "data");
	}
	return items;
}

json_t *tp_mcp_tool_result(json_t *exec_result)
{
	json_t *items, *r;

	if (exec_result == NULL)
		return NULL;
	if (json_object_get(exec_result, "images") == NULL)
		return tp_mcp_tool_value(exec_result,
					 !json_is_true(json_object_get(exec_result, "ok")));
	items = image_items(exec_result);
	r = items ? tp_mcp_tool_value(exec_result, 0) : (json_decref(exec_result), NULL);
	if (r != NULL && json_array_extend(json_object_get(r, "content"), items) != 0) {
		json_decref(r);
		r = NULL;
	}
	json_decref(items);
	return r;
}

/* ---- a session's files as resources ------------------------------------------------ */

static const struct {
	const char *ext, *mime;
	int text; /* embedded as text when UTF-8 */
} mimes[] = {
	{ "csv", "text/csv", 1 },
	{ "json", "application/json", 1 },
	{ "txt", "text/plain", 1 },
	{ "md", "text/markdown", 1 },
	{ "png", "image/png", 0 },
	{ "jpg", "image/jpeg", 0 },
	{ "jpeg", "image/jpeg", 0 },
	{ "svg", "image/svg+xml", 1 },
	{ "pdf", "application/pdf", 0 },
	{ "npy", "application/x-npy", 0 },
	{ "parquet", "application/vnd.apache.parquet", 0 },
	{ "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", 0 },
	{ "html", "text/html", 1 },
	{ "htm", "text/html", 1 },
	{ "py", "text/x-python", 1 },
	{ "lua", "text/x-lua", 1 },
};

#define OCTETS "application/octet-stream"

const char *tp_mcp_mime(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	if (dot == NULL || dot == base)
		return OCTETS;
	for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++)
		if (strcasecmp(dot + 1, mimes[i].ext) == 0)
			return mimes[i].mime;
	return OCTETS;
}

int tp_mcp_mime_embeds(const char *mime)
{
	if (strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0)
		return TP_MCP_EMBED_BLOB;
	for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++)
		if (mimes[i].text && strcmp(mime, mimes[i].mime) == 0)
			return TP_MCP_EMBED_TEXT;
	return TP_MCP_EMBED_NONE;
}

int tp_mcp_resource_links(const char *version, const json_t *params)
{
	/* resource_link content came with 2025-06-18; a client that never said
	 * initialize is served as the newest initialize revision. */
	return tp_mcp_modern(params) || version == NULL || version[0] == '\0' ||
	       strcmp(version, "2025-06-18") >= 0;
}

#define URI_PREFIX "tidepool://sessions/"
#define URI_FILES "/files/"

/* RFC 3986's pchar without percent-encoding, and '/' between segments. */
static int uri_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("-._~!$&'()*+,;=:@/", c) != NULL);
}

char *tp_mcp_file_uri(const char *sid, const char *path, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(URI_PREFIX) + strlen(sid) + strlen(URI_FILES) + 3 * len + 1;
	char *u = malloc(n);
	if (u == NULL)
		return NULL;
	char *o = u + snprintf(u, n, "%s%s%s", URI_PREFIX, sid, URI_FILES);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (uri_plain(c)) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return u;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

int tp_mcp_file_uri_parse(const char *uri, size_t len, char *sid, size_t sid_cap, char *path,
			  size_t path_cap, size_t *path_len)
{
	size_t np = strlen(URI_PREFIX), nf = strlen(URI_FILES);
	if (len < np || memcmp(uri, URI_PREFIX, np) != 0)
		return -1;
	const char *p = uri + np, *end = uri + len;
	const char *slash = memchr(p, '/', (size_t)(end - p));
	if (slash == NULL || slash == p || (size_t)(slash - p) >= sid_cap ||
	    (size_t)(end - slash) < nf || memcmp(slash, URI_FILES, nf) != 0)
		return -1;
	for (const char *q = p; q < slash; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-'))
			return -1;
	memcpy(sid, p, (size_t)(slash - p));
	sid[slash - p] = '\0';
	size_t n = 0;
	for (p = slash + nf; p < end; p++) {
		int c = (unsigned char)*p;
		if (c == '%') {
			int hi = end - p > 2 ? hexval(p[1]) : -1, lo = hi >= 0 ? hexval(p[2]) : -1;
			if (lo < 0)
				return -1;
			c = hi * 16 + lo;
			p += 2;
		} else if (!uri_plain((unsigned char)c)) {
			return -1; /* a query, a fragment, a space: no URI of ours */
		}
		if (n + 1 >= path_cap)
			return -1;
		path[n++] = (char)c;
	}
	path[n] = '\0';
	*path_len = n;
	return 0;
}

json_t *tp_mcp_resources_list(int modern)
{
	/* The files of a client's sessions are not listed: they come as links in
	 * its tool results (the spec: a link need not be listed), and the list
	 * must not vary by connection (2026-07-28). It never changes. */
	return modern ? json_pack("{s:[], s:i, s:s}", "resources", "ttlMs", 3600000, "cacheScope",
				  "private")
		      : json_pack("{s:[]}", "resources");
}
