/*
 * exec_params.c — the parameters of one exec, from sandbox/exec's params or
 * tools/call's arguments: unknown keys are refused, the language must be a row
 * of common/langs.c, and limits may only tighten the host's ceiling. Pure.
 */
#include "exec_params.h"

#include <stdio.h>
#include <string.h>

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

int tp_exec_params_parse(const json_t *params, const struct tp_limits *ceiling,
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

int tp_exec_params_parse_tool(const json_t *params, const struct tp_limits *ceiling,
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
