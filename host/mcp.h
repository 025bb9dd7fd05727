/*
 * mcp.h — the MCP methods answered without a worker. Pure: each returns a new
 * result object (NULL when out of memory) for jsonrpc.h's tp_rpc_result().
 *
 * Usage:
 *   1. initialize: tp_mcp_initialize(params) picks the protocol version.
 *   2. tools/list: tp_mcp_tools_list(), one tool per language (common/langs.c).
 *   3. tools/call: exec_params.h reads the arguments; the exec's result goes
 *      through tp_mcp_tool_result() into the tools/call shape.
 */
#ifndef TP_MCP_H
#define TP_MCP_H

#include <jansson.h>

#include "policy.h"

#define TP_VERSION "0.1.0" /* serverInfo's and `tidepool --version`'s */

json_t *tp_mcp_initialize(const json_t *params);
/* deflt: the policy tools/call runs under (its session values are quoted). */
json_t *tp_mcp_tools_list(const struct tp_policy *deflt);
/* A tool result of a JSON object (stolen): as text and structuredContent. */
json_t *tp_mcp_tool_value(json_t *obj, int is_error);
/* A tool result that is only an error text (isError: true). */
json_t *tp_mcp_tool_text(const char *text);
/* MCP tools/call result around an exec result (stolen). */
json_t *tp_mcp_tool_result(json_t *exec_result);

#endif
