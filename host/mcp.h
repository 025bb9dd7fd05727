/*
 * mcp.h — the MCP methods answered without a worker. Pure: each returns a new
 * result object (NULL when out of memory) for jsonrpc.h's tp_rpc_result().
 *
 * Usage:
 *   1. Every request: tp_mcp_era() refuses a modern _meta that names another
 *      version or lacks the client's capabilities; tp_mcp_stamp() marks the
 *      result of a modern request (resultType, _meta serverInfo).
 *   2. initialize: tp_mcp_initialize_version(params) picks the protocol
 *      version (NULL: params has none), tp_mcp_initialize() answers.
 *   3. server/discover (revision 2026-07-28): tp_mcp_discover().
 *   4. tools/list: tp_mcp_tools_list(), one tool per language (common/langs.c).
 *   5. tools/call: exec_params.h reads the arguments; the exec's result goes
 *      through tp_mcp_tool_result() into the tools/call shape.
 */
#ifndef TP_MCP_H
#define TP_MCP_H

#include <jansson.h>

#include "langs.h"
#include "policy.h"

#define TP_VERSION "0.1.0" /* serverInfo's and `tidepool --version`'s */

/* The stateless revision: every request names it in _meta, no initialize. */
#define TP_MCP_MODERN "2026-07-28"
/* Its UnsupportedProtocolVersionError (data: {supported, requested}). */
#define TP_MCP_UNSUPPORTED_VERSION -32022

const char *tp_mcp_initialize_version(const json_t *params);
/* 1: v is a revision tidepool speaks (an MCP-Protocol-Version header's). */
int tp_mcp_version_known(const char *v);
json_t *tp_mcp_initialize(const char *version, const struct tp_policy *deflt);
json_t *tp_mcp_discover(const struct tp_policy *deflt);
/* 1: params' _meta names a protocol version (a modern request). */
int tp_mcp_modern(const json_t *params);
/* 0, or a JSON-RPC error code with its message in msg and *data (or NULL). */
int tp_mcp_era(const json_t *params, char *msg, size_t cap, json_t **data);
/* result (stolen), with resultType and _meta's serverInfo when params is a
 * modern request's; NULL when out of memory. */
json_t *tp_mcp_stamp(json_t *result, const json_t *params);
/* deflt: the policy tools/call runs under (its limits, imports and session
 * values are quoted); modern: 2026-07-28's cache fields. */
json_t *tp_mcp_tools_list(const struct tp_policy *deflt, int modern);
/* The tools: each language's run tool, and the registry's (mcp.c). */
enum tp_mcp_tool_kind {
	TP_MCP_TOOL_RUN,      /* run_lua, run_python: an exec (lang names which) */
	TP_MCP_TOOL_SESSIONS, /* list_sessions, close_session: session.c */
	TP_MCP_TOOL_FILES,    /* write_file, read_file, list_files: files.c */
};
struct tp_mcp_tool {
	const char *name;
	enum tp_mcp_tool_kind kind;
	const struct tp_lang_info *lang; /* TP_MCP_TOOL_RUN's language */
};
/* 0 and *out: the tool of that name under the default policy (whether it
 * offers the language is the exec's check); -1: no such tool. */
int tp_mcp_tool_find(const struct tp_policy *deflt, const char *name, struct tp_mcp_tool *out);
/* A tool result of a JSON object (stolen): as text and structuredContent. */
json_t *tp_mcp_tool_value(json_t *obj, int is_error);
/* A tool result that is only an error text (isError: true). */
json_t *tp_mcp_tool_text(const char *text);
/* MCP tools/call result around an exec result (stolen). */
json_t *tp_mcp_tool_result(json_t *exec_result);

/* A session's files as MCP resources (docs/protocol.md, "Files back"). */
/* The MIME type of a file by its name's ending (a small table; else
 * application/octet-stream). */
const char *tp_mcp_mime(const char *path);
/* How a file of that type is embedded in a tool result: as text (when its
 * bytes are UTF-8), as a base64 blob (PNG, JPEG), or not at all. */
enum { TP_MCP_EMBED_NONE, TP_MCP_EMBED_TEXT, TP_MCP_EMBED_BLOB };
int tp_mcp_mime_embeds(const char *mime);
/* 1: a client of that revision (initialize's; "" none) or this modern request
 * reads resource_link content items (2025-06-18 and later). */
int tp_mcp_resource_links(const char *version, const json_t *params);
/* tidepool://sessions/SID/files/PATH, PATH's bytes outside RFC 3986's pchar
 * and '/' percent-encoded; malloc'd, NULL out of memory. */
char *tp_mcp_file_uri(const char *sid, const char *path, size_t len);
/* 0 and sid, path (percent-decoded, NUL-terminated, *path_len bytes: it may
 * hold a NUL, which the caller refuses) when uri is such a URI; -1 when it is
 * not one (another scheme, a malformed escape, a query, a part too long). */
int tp_mcp_file_uri_parse(const char *uri, size_t len, char *sid, size_t sid_cap, char *path,
			  size_t path_cap, size_t *path_len);
/* resources/list's result: none (modern: with its cache fields). */
json_t *tp_mcp_resources_list(int modern);

#endif
