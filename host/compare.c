/*
 * compare.c — `tidepool run --compare POLICY[,POLICY...]|all FILE`: one snippet
 * under several policies, side by side (docs/teaching.md).
 *
 * Each policy's exec is an ordinary sandbox/exec request to an in-process host,
 * all sent at once and answered in any order: what the table shows is exactly
 * what a client of the protocol would get. Beside each verdict it shows the
 * policy's entry that decided it, found from error.rule: the part before ':'
 * (or ' ') is a key of the policy (python.modules, limits.cpu_ms,
 * filesystem.read), or names a wall no key turns off (seccomp, landlock, the
 * Python guard's fixed rules).
 */
#include "compare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "jsonio.h"
#include "kprobe.h"
#include "langs.h"
#include "policy.h"

#define MAX_COMPARE 32

struct row {
	const struct tp_policy *p;
	char refused[512]; /* this kernel cannot enforce the policy: why */
	int not_offered;   /* the policy does not offer the snippet's language */
	json_t *reply;     /* the JSON-RPC reply, owned */
};

struct rows {
	struct row r[MAX_COMPARE];
	size_t n;
};

static void keep(void *ctx, json_t *msg)
{
	struct rows *rs = ctx;
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	if (id >= 1 && (size_t)id <= rs->n && rs->r[id - 1].reply == NULL)
		rs->r[id - 1].reply = msg;
	else
		json_decref(msg);
}

/* The policies named by spec ("all", or NAME[,NAME...]) into rs. 0, or 2
 * after a message. */
static int pick(struct rows *rs, const struct tp_policy_set *set, const char *spec)
{
	if (strcmp(spec, "all") == 0) {
		for (size_t i = 0; i < tp_policy_set_count(set) && rs->n < MAX_COMPARE; i++)
			rs->r[rs->n++].p = tp_policy_set_at(set, i);
		return 0;
	}
	const char *s = spec;
	while (*s != '\0') {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char name[128];
		if (len == 0 || len >= sizeof name) {
			fprintf(
			    stderr,
			    "tidepool run: --compare: an empty or too long policy name in '%s'\n",
			    spec);
			return 2;
		}
		memcpy(name, s, len);
		name[len] = '\0';
		const struct tp_policy *p = tp_policy_set_find(set, name);
		if (p == NULL) {
			fprintf(
			    stderr,
			    "tidepool run: --compare: unknown policy '%s' (tidepool policy list; "
			    "--policy-dir DIR loads more)\n",
			    name);
			return 2;
		}
		for (size_t i = 0; i < rs->n; i++)
			if (rs->r[i].p == p) {
				fprintf(stderr,
					"tidepool run: --compare: policy '%s' named twice\n", name);
				return 2;
			}
		if (rs->n == MAX_COMPARE) {
			fprintf(stderr, "tidepool run: --compare: at most %d policies\n",
				MAX_COMPARE);
			return 2;
		}
		rs->r[rs->n++].p = p;
		s = end ? end + 1 : s + len;
	}
	if (rs->n == 0) {
		fprintf(stderr, "tidepool run: --compare needs POLICY[,POLICY...] or all\n");
		return 2;
	}
	return 0;
}

/* The value at a dotted key of the policy's JSON ("python.modules"), or NULL. */
static json_t *at_key(json_t *pj, const char *key, size_t len)
{
	json_t *v = pj;
	const char *s = key, *stop = key + len;
	while (v != NULL && s < stop) {
		const char *dot = memchr(s, '.', (size_t)(stop - s));
		size_t n = dot ? (size_t)(dot - s) : (size_t)(stop - s);
		char part[64];
		if (n == 0 || n >= sizeof part)
			return NULL;
		memcpy(part, s, n);
		part[n] = '\0';
		v = json_is_object(v) ? json_object_get(v, part) : NULL;
		s += n + 1;
	}
	return v;
}

static int in_list(const json_t *a, const char *name)
{
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x) if (json_is_string(x) &&
					strcmp(json_string_value(x), name) == 0) return 1;
	return 0;
}

/* {"key", "value", "says"}: the policy's entry behind a rule. */
static json_t *entry(const struct tp_policy *p, const char *rule, const json_t *lim)
{
	if (rule == NULL)
		return json_null();
	size_t klen = strcspn(rule, ": ");
	const char *arg = rule[klen] == ':' ? rule + klen + 1 : NULL;
	char says[512];
	json_t *pj = tp_policy_to_json(p, 0), *v = NULL, *out;
	int lang_layer = p->language_layer;

	if (strncmp(rule, "seccomp", klen) == 0 && klen == 7) {
		snprintf(says, sizeof says,
			 "the kernel layer's seccomp allowlist, in every policy%s (tidepool policy "
			 "show %s lists the system calls)",
			 lang_layer ? ""
				    : "; language_layer is false, so nothing stopped it before",
			 p->name);
	} else if (strncmp(rule, "landlock", klen) == 0 && klen == 8) {
		v = at_key(pj, "filesystem.read", 15);
		snprintf(says, sizeof says, "Landlock allows only the policy's file grants%s",
			 lang_layer ? "" : " and the interpreter's library directories");
	} else if (strncmp(rule, "kernel", klen) == 0 && klen == 6) {
		snprintf(says, sizeof says, "the kernel layer");
	} else if (strncmp(rule, "python.", 7) == 0 &&
		   (strncmp(rule, "python.modules", klen) == 0 ||
		    strncmp(rule, "python.builtins", klen) == 0) &&
		   (klen == 14 || klen == 15)) {
		v = at_key(pj, rule, klen);
		snprintf(says, sizeof says, "%.*s %s '%s'", (int)klen, rule,
			 v && arg && in_list(v, arg) ? "lists" : "does not list", arg ? arg : "?");
		v = NULL; /* the list is long: the sentence says what matters */
	} else if (strncmp(rule, "lua.", 4) == 0 &&
		   (strncmp(rule, "lua.functions", klen) == 0 ||
		    strncmp(rule, "lua.libraries", klen) == 0) &&
		   klen == 13) {
		v = at_key(pj, rule, klen);
		snprintf(says, sizeof says, "%.*s %s '%s'", (int)klen, rule,
			 v && arg && in_list(v, arg) ? "lists" : "does not list", arg ? arg : "?");
	} else if (strncmp(rule, "python.", 7) == 0 || strncmp(rule, "lua.", 4) == 0) {
		snprintf(says, sizeof says,
			 "language_layer is true: the guard's own rules, which no key of a policy "
			 "turns off but language_layer (docs/python-guard.md, docs/lua.md)");
	} else {
		v = at_key(pj, rule, klen);
		if (v != NULL) {
			char *s = tp_json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			snprintf(says, sizeof says, "%.*s = %.400s", (int)klen, rule, s ? s : "?");
			free(s);
			/* A limit the request lowered: what this run had. */
			json_t *l = json_object_get(lim, "limit");
			if (json_is_integer(v) && json_is_integer(l) &&
			    json_integer_value(l) != json_integer_value(v)) {
				size_t n = strlen(says);
				snprintf(says + n, sizeof says - n, " (this run: %lld)",
					 (long long)json_integer_value(l));
			}
		} else {
			snprintf(says, sizeof says, "%.*s", (int)klen, rule);
		}
	}
	out = json_pack("{s:s%, s:O?, s:s}", "key", rule, klen, "value", v, "says", says);
	json_decref(pj);
	return out ? out : json_null();
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

/* One row as data: {policy, outcome, layer, rule, message, entry, result}. */
static json_t *row_json(const struct row *r)
{
	json_t *res = json_object_get(r->reply, "result");
	json_t *err = json_object_get(res, "error");
	json_t *rpc = json_object_get(r->reply, "error");

	if (r->not_offered)
		return json_pack("{s:s, s:s, s:n, s:n, s:s, s:n, s:n}", "policy", r->p->name,
				 "outcome", "not_offered", "layer", "rule", "message",
				 "the policy does not offer this language", "entry", "result");
	if (r->refused[0] != '\0')
		return json_pack("{s:s, s:s, s:s, s:n, s:s, s:n, s:n}", "policy", r->p->name,
				 "outcome", "not_enforceable", "layer", "host", "rule", "message",
				 r->refused, "entry", "result");
	if (!json_is_object(res))
		return json_pack("{s:s, s:s, s:s, s:n, s:s, s:n, s:n}", "policy", r->p->name,
				 "outcome", "request_error", "layer", "host", "rule", "message",
				 str_or(rpc, "message", "no reply"), "entry", "result");
	if (json_is_true(json_object_get(res, "ok")))
		return json_pack("{s:s, s:s, s:n, s:n, s:s, s:n, s:O}", "policy", r->p->name,
				 "outcome", "ok", "layer", "rule", "message",
				 "allowed: ran to the end", "entry", "result", res);
	const char *rule = json_string_value(json_object_get(err, "rule"));
	return json_pack("{s:s, s:s, s:s, s:O, s:s, s:o, s:O}", "policy", r->p->name, "outcome",
			 str_or(err, "kind", "?"), "layer", str_or(err, "layer", "?"), "rule",
			 json_object_get(err, "rule") ? json_object_get(err, "rule") : json_null(),
			 "message", str_or(err, "message", ""), "entry",
			 entry(r->p, rule, json_object_get(err, "limit")), "result", res);
}

static void print_table(json_t *rows)
{
	size_t i, wp = 6, wo = 7, wl = 5, wr = 4;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		size_t n;
		if ((n = strlen(str_or(r, "policy", ""))) > wp)
			wp = n;
		if ((n = strlen(str_or(r, "outcome", ""))) > wo)
			wo = n;
		if ((n = strlen(str_or(r, "layer", "-"))) > wl)
			wl = n;
		if ((n = strlen(str_or(r, "rule", "-"))) > wr)
			wr = n;
	}
	printf("%-*s  %-*s  %-*s  %-*s  %s\n", (int)wp, "policy", (int)wo, "outcome", (int)wl,
	       "layer", (int)wr, "rule", "message");
	json_array_foreach(rows, i, r)
	    printf("%-*s  %-*s  %-*s  %-*s  %s\n", (int)wp, str_or(r, "policy", ""), (int)wo,
		   str_or(r, "outcome", ""), (int)wl, str_or(r, "layer", "-"), (int)wr,
		   str_or(r, "rule", "-"), str_or(r, "message", ""));
	printf("\nwhat decided, in each policy:\n");
	json_array_foreach(rows, i, r)
	{
		const json_t *e = json_object_get(r, "entry");
		printf("  %-*s  %s\n", (int)wp, str_or(r, "policy", ""),
		       json_is_object(e) ? str_or(e, "says", "") : "-");
	}
}

int tp_cli_compare(const char *spec, json_t *params, const char *path, const char *code, size_t len,
		   struct tp_policy_set *set, const struct tp_policy *deflt, int as_json)
{
	struct rows rs = { .n = 0 };
	int rc = 0;

	if ((rc = pick(&rs, set, spec)) != 0)
		return rc;
	struct tp_err err = { 0 };
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	cfg.use_stdin = 0;
	cfg.emit = keep;
	cfg.emit_ctx = &rs;
	cfg.policies = set;
	cfg.policy = deflt;
	struct tp_host *h = tp_host_new(&cfg, &err);
	if (h == NULL) {
		fprintf(stderr, "tidepool run: %s\n", err.msg);
		return 2;
	}
	json_object_set_new(params, "code", json_stringn(code, len));
	const struct tp_lang_info *l = tp_langs_by_name(str_or(params, "lang", ""));
	for (size_t i = 0; i < rs.n; i++) {
		struct row *r = &rs.r[i];
		/* "all" skips a policy of other languages; a policy named is asked. */
		if (strcmp(spec, "all") == 0 && l != NULL && !(r->p->languages & (1u << l->id))) {
			r->not_offered = 1;
			continue;
		}
		if (tp_policy_kernel_check(r->p, r->refused, sizeof r->refused) != 0)
			continue;
		r->refused[0] = '\0';
		json_object_set_new(params, "policy", json_string(r->p->name));
		json_t *req =
		    json_pack("{s:s, s:I, s:s, s:O}", "jsonrpc", "2.0", "id", (json_int_t)(i + 1),
			      "method", "sandbox/exec", "params", params);
		char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
		json_decref(req);
		if (line == NULL) {
			fprintf(stderr, "tidepool run: out of memory\n");
			rc = 2;
			break;
		}
		tp_host_line(h, line, strlen(line));
		free(line);
	}
	if (rc == 0)
		tp_host_run(h);
	tp_host_free(h);
	json_t *rows = json_array();
	for (size_t i = 0; i < rs.n && rc == 0; i++) {
		json_t *row = row_json(&rs.r[i]);
		if (row == NULL || json_array_append_new(rows, row) != 0)
			rc = 2;
		else if (strcmp(str_or(row, "outcome", ""), "not_enforceable") == 0 ||
			 strcmp(str_or(row, "outcome", ""), "request_error") == 0)
			rc = 1;
	}
	if (rc != 2 && as_json) {
		json_t *doc = json_pack("{s:s, s:s, s:O}", "file", path, "lang",
					str_or(params, "lang", "?"), "results", rows);
		char *s = doc ? tp_json_dumps(doc, JSON_INDENT(2)) : NULL;
		printf("%s\n", s ? s : "null");
		free(s);
		json_decref(doc);
	} else if (rc != 2) {
		print_table(rows);
	}
	json_decref(rows);
	for (size_t i = 0; i < rs.n; i++)
		json_decref(rs.r[i].reply);
	return rc;
}
