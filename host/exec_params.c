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

static int common_params(const json_t *p, const struct tp_exec_session *sess,
			 struct tp_exec_params *out, struct tp_err *err)
{
	json_t *code = json_object_get(p, "code");
	json_t *inputs = json_object_get(p, "inputs");
	json_t *seed = json_object_get(p, "seed");

	if (!json_is_string(code))
		return refuse(err, "'code' must be a string");
	if (inputs != NULL && !json_is_null(inputs) && !json_is_object(inputs))
		return refuse(err, "'inputs' must be an object");
	if (seed != NULL && !json_is_null(seed) && !json_is_integer(seed))
		return refuse(err, "'seed' must be an integer");
	out->code = json_string_value(code);
	out->code_len = json_string_length(code);
	out->inputs = json_is_object(inputs) ? inputs : NULL;
	out->has_seed = json_is_integer(seed);
	out->seed = out->has_seed ? json_integer_value(seed) : 0;
	if (!tp_policy_allows_lang(out->policy, out->lang))
		return refuse(err, "policy '%s' does not allow %s", out->policy->name,
			      tp_langs[out->lang].title);
	/* A secret can be cut across two notifications and a pattern match can be
	 * any length: redaction works on the whole output, so it is never streamed. */
	const struct tp_policy *pol = out->policy;
	if (out->stream && pol->redact_strings.n + pol->redact_patterns.n + pol->redact_env.n > 0)
		return refuse(err,
			      "'stream' is not available under policy '%s': it redacts secrets, "
			      "which needs the whole output (the reply carries it)",
			      pol->name);
	out->limits = sess ? sess->ceiling : out->policy->limits;
	struct tp_err why = { 0 };
	if (tp_limits_tighten(&out->limits, json_object_get(p, "limits"), &why) == 0)
		return 0;
	if (sess != NULL)
		return refuse(err, "%.300s (the session's limits)", why.msg);
	return refuse(err, "%.300s (policy '%s')", why.msg, out->policy->name);
}

/* The exec's isolation: the policy's, or "process" when the request asks for
 * it. A request may only go from "state" to "process", never the other way. */
static int isolation(const json_t *params, struct tp_exec_params *out, struct tp_err *err)
{
	json_t *iso = json_object_get(params, "isolation");
	const char *want = json_string_value(iso);
	const char *pol = out->policy->isolation;
	out->state = out->lang == TP_LANG_LUA && strcmp(pol, "state") == 0;
	if (iso == NULL || json_is_null(iso))
		return 0;
	if (want == NULL || (strcmp(want, "process") != 0 && strcmp(want, "state") != 0))
		return refuse(err, "'isolation' must be \"process\" or \"state\"");
	if (strcmp(want, "process") == 0) {
		out->state = 0;
		return 0;
	}
	if (out->lang != TP_LANG_LUA)
		return refuse(err,
			      "isolation \"state\" is for Lua: %s execs each get a fresh "
			      "process",
			      tp_langs[out->lang].title);
	if (!out->state)
		return refuse(err,
			      "isolation \"state\" is looser than policy '%s' gives (\"%s\"): a "
			      "request may ask \"process\" of a \"state\" policy, never the "
			      "other way",
			      out->policy->name, pol);
	return 0;
}

int tp_exec_params_session_id(const json_t *params, const char **id, struct tp_err *err)
{
	json_t *s = json_is_object(params) ? json_object_get(params, "session_id") : NULL;
	*id = NULL;
	if (s == NULL || json_is_null(s))
		return 0;
	if (!json_is_string(s))
		return refuse(err,
			      "'session_id' must be a string (sandbox/session/open gives one)");
	*id = json_string_value(s);
	return 0;
}

/* The policy params name, or the default. -1 when it names none of the set. */
static int named_policy(const json_t *params, const struct tp_exec_policies *pols,
			const struct tp_policy **out, struct tp_err *err)
{
	json_t *pol = json_object_get(params, "policy");
	*out = pols->deflt;
	if (pol == NULL || json_is_null(pol))
		return 0;
	if (!json_is_string(pol))
		return refuse(err, "'policy' must be the name of a policy");
	*out = tp_policy_set_find(pols->set, json_string_value(pol));
	size_t i = 0;
	while (*out != NULL && pols->allowed != NULL && i < pols->nallowed &&
	       pols->allowed[i] != *out)
		i++;
	if (*out != NULL && pols->allowed != NULL && i == pols->nallowed) {
		char names[256];
		size_t off = 0;
		for (i = 0; i < pols->nallowed && off < sizeof names; i++)
			off += (size_t)snprintf(names + off, sizeof names - off, "%s%s",
						i ? ", " : "", pols->allowed[i]->name);
		return refuse(err,
			      "policy '%.64s' is not allowed for tenant '%s' (its policies: %s)",
			      json_string_value(pol), pols->owner, names);
	}
	if (*out == NULL)
		return refuse(err, "unknown policy '%.64s' (sandbox/policy/list names them)",
			      json_string_value(pol));
	return 0;
}

static const struct tp_lang_info *named_lang(const json_t *params, struct tp_err *err)
{
	const struct tp_lang_info *lang =
	    tp_langs_by_name(json_string_value(json_object_get(params, "lang")));
	if (lang == NULL) {
		char names[256];
		refuse(err, "'lang' must be %s",
		       tp_langs_names(names, sizeof names, "\"%s\"", ", ", " or "));
	}
	return lang;
}

int tp_exec_params_parse(const json_t *params, const struct tp_exec_policies *pols,
			 const struct tp_exec_session *sess, struct tp_exec_params *out,
			 struct tp_err *err)
{
	static const char *const keys[] = { "lang", "code",   "policy", "limits",    "session_id",
					    "seed", "inputs", "stream", "isolation", NULL };
	memset(out, 0, sizeof *out);
	if (!json_is_object(params))
		return refuse(err, "params must be an object");
	if (check_keys(params, keys, err) != 0 ||
	    tp_exec_params_session_id(params, &out->session_id, err) != 0)
		return -1;
	json_t *stream = json_object_get(params, "stream");
	if (stream != NULL && !json_is_boolean(stream) && !json_is_null(stream))
		return refuse(err, "'stream' must be true or false");
	out->stream = json_is_true(stream);
	if (out->session_id != NULL && sess == NULL)
		return refuse(err, "unknown session '%.40s'", out->session_id);
	if (sess != NULL) {
		json_t *iso = json_object_get(params, "isolation");
		if (iso != NULL && !json_is_null(iso))
			return refuse(err, "'isolation' is for one-shot execs: a session keeps its "
					   "state from one exec to the next by design");
		/* The session fixed both: a request may repeat them, never change them. */
		json_t *lang = json_object_get(params, "lang");
		json_t *pol = json_object_get(params, "policy");
		out->lang = sess->lang;
		out->policy = sess->policy;
		if (lang != NULL && !json_is_null(lang) &&
		    (!json_is_string(lang) ||
		     strcmp(json_string_value(lang), tp_langs[sess->lang].name) != 0))
			return refuse(err, "'lang' must be \"%s\", the session's language",
				      tp_langs[sess->lang].name);
		if (pol != NULL && !json_is_null(pol) &&
		    (!json_is_string(pol) ||
		     strcmp(json_string_value(pol), sess->policy->name) != 0))
			return refuse(err, "'policy' must be \"%s\", the session's policy",
				      sess->policy->name);
		return common_params(params, sess, out, err);
	}
	const struct tp_lang_info *lang = named_lang(params, err);
	if (lang == NULL || named_policy(params, pols, &out->policy, err) != 0)
		return -1;
	out->lang = lang->id;
	if (common_params(params, NULL, out, err) != 0)
		return -1;
	return isolation(params, out, err);
}

int tp_exec_params_tool_session(const json_t *params, const char **session, struct tp_err *err)
{
	json_t *args = json_is_object(params) ? json_object_get(params, "arguments") : NULL;
	json_t *s = json_is_object(args) ? json_object_get(args, "session") : NULL;
	*session = NULL;
	if (s == NULL || json_is_null(s))
		return 0;
	if (!json_is_string(s))
		return refuse(err, "'session' must be \"new\" or a session_id a result returned");
	*session = json_string_value(s);
	return 0;
}

int tp_exec_params_tool_meta(const json_t *params, struct tp_err *err)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	if (tp_langs_by_tool(name) == NULL)
		return refuse(err, "Unknown tool: %.64s", name ? name : "(none)");
	/* MCP's _meta, a sibling of name and arguments: its progressToken is read,
	 * and the stateless revision's keys (mcp.h). */
	json_t *meta = json_object_get(params, "_meta");
	json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
	if (meta != NULL && !json_is_null(meta) && !json_is_object(meta))
		return refuse(err, "'_meta' must be an object");
	if (token != NULL && !json_is_null(token) && !json_is_string(token) &&
	    !json_is_integer(token))
		return refuse(err, "'_meta.progressToken' must be a string or an integer");
	return 0;
}

int tp_exec_params_parse_tool(const json_t *params, const struct tp_exec_policies *pols,
			      const struct tp_exec_session *sess, struct tp_exec_params *out,
			      struct tp_err *err)
{
	static const char *const keys[] = { "code", "inputs", "session", "limits", "seed", NULL };
	memset(out, 0, sizeof *out);
	if (tp_exec_params_tool_meta(params, err) != 0)
		return -2;
	const struct tp_lang_info *lang =
	    tp_langs_by_tool(json_string_value(json_object_get(params, "name")));
	json_t *args = json_object_get(params, "arguments");
	json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	out->progress_token = json_is_null(token) ? NULL : token;
	if (args == NULL)
		return refuse(err, "'arguments' is missing: %s takes {\"code\": a string, ...}",
			      lang->tool);
	if (!json_is_object(args))
		return refuse(err, "'arguments' must be an object");
	if (check_keys(args, keys, err) != 0)
		return -1;
	out->lang = lang->id;
	out->tool_call = 1;
	out->policy = pols->deflt;
	if (tp_exec_params_tool_session(params, &out->session_id, err) != 0)
		return -1;
	if (out->session_id != NULL && strcmp(out->session_id, "new") == 0) {
		out->session_new = 1;
		out->session_id = NULL;
	}
	if ((out->session_id != NULL || out->session_new) && sess == NULL)
		return refuse(err, "unknown session '%.40s'",
			      out->session_id ? out->session_id : "new");
	if (sess != NULL) {
		if (sess->lang != out->lang)
			return refuse(err, "session '%.40s' runs %s: call %s",
				      out->session_id ? out->session_id : "new",
				      tp_langs[sess->lang].title, tp_langs[sess->lang].tool);
		out->policy = sess->policy;
	}
	return common_params(args, sess, out, err);
}

int tp_session_params_parse(const json_t *params, const struct tp_exec_policies *pols,
			    struct tp_exec_session *out, struct tp_err *err)
{
	static const char *const keys[] = { "lang", "policy", "limits", NULL };
	memset(out, 0, sizeof *out);
	if (params == NULL)
		return refuse(err, "params must be an object with 'lang'");
	if (!json_is_object(params))
		return refuse(err, "params must be an object");
	if (check_keys(params, keys, err) != 0)
		return -1;
	const struct tp_lang_info *lang = named_lang(params, err);
	if (lang == NULL || named_policy(params, pols, &out->policy, err) != 0)
		return -1;
	out->lang = lang->id;
	const struct tp_policy *p = out->policy;
	if (!tp_policy_allows_lang(p, out->lang))
		return refuse(err, "policy '%s' does not allow %s", p->name,
			      tp_langs[out->lang].title);
	if (p->session.max_sessions == 0)
		return refuse(err, "policy '%s' allows no sessions (session.max_sessions is 0)",
			      p->name);
	/* A session's memory is its state across execs: the session section's. */
	out->ceiling = p->limits;
	out->ceiling.memory_bytes = p->session.memory_bytes;
	struct tp_err why = { 0 };
	if (tp_limits_tighten(&out->ceiling, json_object_get(params, "limits"), &why) == 0)
		return 0;
	return refuse(err, "%.300s (policy '%s', for a session)", why.msg, p->name);
}
