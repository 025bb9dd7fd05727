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

#define TP_VERSION "0.1.0" /* serverInfo's and `tidepool --version`'s */

json_t *tp_mcp_initialize(const json_t *params);
json_t *tp_mcp_tools_list(void);
/* MCP tools/call result around an exec result (stolen). */
json_t *tp_mcp_tool_result(json_t *exec_result);

#endif
