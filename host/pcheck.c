/*
 * pcheck.c — sandbox/policy/check's answer (pcheck.h): the policy parser's
 * report, as JSON. The text is resolved against a view of the set and freed:
 * a checked policy can run nothing unless the operator loads it.
 */
#include "pcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define NAME "policy" /* what messages call the text (stripped again) */

/* A message without its "policy:LINE:COL: " or "policy: ". */
static const char *bare(const struct tp_policy_error *e)
{
	char head[64];
	int n = snprintf(head, sizeof head, NAME ":%d:%d: ", e->line, e->col);
	if (n > 0 && strncmp(e->msg, head, (size_t)n) == 0)
		return e->msg + n;
	if (strncmp(e->msg, NAME ": ", sizeof NAME + 1) == 0)
		return e->msg + sizeof NAME + 1;
	return e->msg;
}

/* The effective policy, as sandbox/policy/get shows one: redact only counted. */
static json_t *effective(const struct tp_policy *p)
{
	json_t *r = tp_policy_to_json(p, 0), *env = json_array();
	for (size_t i = 0; env != NULL && i < p->redact_env.n; i++)
		if (json_array_append_new(env, json_string(p->redact_env.v[i])) != 0) {
			json_decref(env);
			env = NULL;
		}
	json_t *red = env ? json_pack("{s:I, s:I, s:o}", "strings", (json_int_t)p->redact_strings.n,
				      "patterns", (json_int_t)p->redact_patterns.n, "env", env)
			  : NULL;
	if (r == NULL || red == NULL || json_object_set_new(r, "redact", red) != 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *tp_pcheck(const struct tp_policy_set *s, const char *text, size_t len)
{
	struct tp_err err = { 0 };
	struct tp_policy_report *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	struct tp_policy *p = tp_policy_set_check_text(s, text, len, NAME, r, &err);
	json_t *errors = json_array(), *pol = p ? effective(p) : json_null();
	json_t *ans = errors && pol ? json_pack("{s:b, s:O, s:I, s:O}", "ok", p != NULL, "errors",
						errors, "more", (json_int_t)r->more, "policy", pol)
				    : NULL;
	/* A failure with no message kept (out of memory at once): err's. */
	if (ans != NULL && p == NULL && r->n == 0 && tp_err_failed(&err)) {
		r->e[0].line = r->e[0].col = 0;
		snprintf(r->e[0].msg, sizeof r->e[0].msg, "%s", err.msg);
		r->n = 1;
	}
	for (size_t i = 0; ans != NULL && i < r->n; i++) {
		/* A message quoting the text may be cut inside a character: repaired. */
		const char *m = bare(&r->e[i]);
		json_t *e = json_pack("{s:i, s:i, s:o}", "line", r->e[i].line, "column",
				      r->e[i].col, "message", tp_utf8_json(m, strlen(m)));
		if (e == NULL || json_array_append_new(errors, e) != 0) {
			json_decref(ans);
			ans = NULL;
		}
	}
	json_decref(errors);
	json_decref(pol);
	tp_policy_free(p);
	free(r);
	return ans;
}
