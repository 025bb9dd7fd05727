/*
 * exec_params.c — the parameters of one exec, from sandbox/exec's params or
 * tools/call's arguments: unknown keys are refused, the language must be a row
 * of common/langs.c, and limits may only tighten the host's ceiling. Pure.
 */
#include "exec_params.h"

#include <string.h>

/* A refused request: the client's fault, seen by the host (an invalid-params reply). */
#define refuse(err, ...) tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, __VA_ARGS__)

static int check_keys(const json_t *obj, const char *const *allowed, struct tp_err *err)
{
	const char *key;
	json_t *val;
	json_object_foreach((json_t *)obj, key, val)
	{
		int ok = 0;
		for (size_t i = 0; allowed[i] != NULL && !ok; i++)
			ok = strcmp(allowed[i], key) == 0;
		if (!ok)
			return refuse(err, "unknown parameter '%.64s'", key);
	}
	return 0;
}

static int common_params(const json_t *p, struct tp_exec_params *out, struct tp_err *err)
{
	json_t *code = json_object_get(p, "code");
	json_t *inputs = json_object_get(p, "inputs");
	json_t *seed = json_object_get(p, "seed");
	json_t *session = json_object_get(p, "session_id");

	if (!json_is_string(code))
		return refuse(err, "'code' must be a string");
	if (inputs != NULL && !json_is_null(inputs) && !json_is_object(inputs))
		return refuse(err, "'inputs' must be an object");
	if (seed != NULL && !json_is_null(seed) && !json_is_integer(seed))
		return refuse(err, "'seed' must be an integer");
	if (session != NULL && !json_is_null(session))
		return refuse(err, "sessions are not available in this version");
	out->code = json_string_value(code);
	out->code_len = json_string_length(code);
	out->inputs = json_is_object(inputs) ? inputs : NULL;
	out->has_seed = json_is_integer(seed);
	out->seed = out->has_seed ? json_integer_value(seed) : 0;
	if (!tp_policy_allows_lang(out->policy, out->lang))
		return refuse(err, "policy '%s' does not allow %s", out->policy->name,
			      tp_langs[out->lang].title);
	out->limits = out->policy->limits;
	struct tp_err why = { 0 };
	if (tp_limits_tighten(&out->limits, json_object_get(p, "limits"), &why) == 0)
		return 0;
	return refuse(err, "%.300s (policy '%s')", why.msg, out->policy->name);
}

int tp_exec_params_parse(const json_t *params, const struct tp_exec_policies *pols,
			 struct tp_exec_params *out, struct tp_err *err)
{
	static const char *const keys[] = { "lang", "code",   "policy", "limits", "session_id",
					    "seed", "inputs", "stream", NULL };
	memset(out, 0, sizeof *out);
	if (!json_is_object(params))
		return refuse(err, "params must be an object");
	if (check_keys(params, keys, err) != 0)
		return -1;
	const struct tp_lang_info *lang =
	    tp_langs_by_name(json_string_value(json_object_get(params, "lang")));
	if (lang == NULL) {
		char names[256];
		return refuse(err, "'lang' must be %s",
			      tp_langs_names(names, sizeof names, "\"%s\"", ", ", " or "));
	}
	json_t *pol = json_object_get(params, "policy");
	out->policy = pols->deflt;
	if (pol != NULL && !json_is_null(pol)) {
		if (!json_is_string(pol))
			return refuse(err, "'policy' must be the name of a policy");
		out->policy = tp_policy_set_find(pols->set, json_string_value(pol));
		if (out->policy == NULL)
			return refuse(err,
				      "unknown policy '%.64s' (sandbox/policy/list names them)",
				      json_string_value(pol));
	}
	json_t *stream = json_object_get(params, "stream");
	if (stream != NULL && !json_is_false(stream) && !json_is_null(stream))
		return refuse(err, "'stream' is not available in this version");
	out->lang = lang->id;
	return common_params(params, out, err);
}

int tp_exec_params_parse_tool(const json_t *params, const struct tp_exec_policies *pols,
			      struct tp_exec_params *out, struct tp_err *err)
{
	static const char *const keys[] = { "code", "inputs", NULL };
	memset(out, 0, sizeof *out);
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	const struct tp_lang_info *lang = tp_langs_by_tool(name);
	if (lang == NULL)
		return refuse(err, "Unknown tool: %.64s", name ? name : "(none)");
	if (!json_is_object(args))
		return refuse(err, "'arguments' must be an object");
	if (check_keys(args, keys, err) != 0)
		return -1;
	out->lang = lang->id;
	out->tool_call = 1;
	out->policy = pols->deflt;
	return common_params(args, out, err);
}
