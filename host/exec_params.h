/*
 * exec_params.h — the parameters of one exec, read from a request. Pure.
 *
 * Usage:
 *   1. tp_exec_params_parse() reads sandbox/exec's params, tp_exec_params_parse_tool()
 *      tools/call's name and arguments; both start from the host's ceiling.
 *   2. On -1, answer with an invalid-params error carrying err's message (the
 *      error is TP_KIND_INPUT_ERROR at TP_LAYER_HOST).
 *   3. code and inputs are borrowed: keep the request alive while they are used.
 */
#ifndef TP_EXEC_PARAMS_H
#define TP_EXEC_PARAMS_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "langs.h"
#include "limits.h"

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

/* Returns 0, or -1 with an invalid-params message recorded in err. */
int tp_exec_params_parse(const json_t *params, const struct tp_limits *ceiling,
			 struct tp_exec_params *out, struct tp_err *err);
int tp_exec_params_parse_tool(const json_t *params, const struct tp_limits *ceiling,
			      struct tp_exec_params *out, struct tp_err *err);

#endif
