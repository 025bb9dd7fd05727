/*
 * tenant.c — --tokens FILE: who may call the HTTP service, under which
 * policies, and how much each may use (docs/deploy.md, "Tenants").
 *
 * A tenant is named by one or more bearer tokens, of which the file holds only
 * SHA-256 digests: a stolen file lets no one in. A presented token is hashed
 * and compared with every digest of every tenant in constant time (no early
 * exit, no length leak: digests are all 64 hex digits), so the time taken says
 * nothing about which digest came close.
 *
 * Quotas, each optional (absent: no bound):
 *   execs_per_minute  a bucket refilled continuously; an exec over it is
 *                     answered rate_limit, with retry_after_ms, and not run;
 *   concurrent_execs  execs of the tenant running at once; more wait in the
 *                     queue (pool.c skips them), and at most QUEUED_PER_SLOT
 *                     times as many may wait, past which one is answered busy;
 *   open_sessions     sessions open at once;
 *   workspace_bytes   the sum of its open sessions' workspace limits: a session
 *                     reserves its policy's workspace_bytes when it opens, so
 *                     the bound holds whatever the code writes.
 * Invariant: a client has at most one tenant, fixed when it is made; what a
 * tenant's clients own (sessions, execs, files) is bound to that client, so no
 * tenant reaches another's.
 */
#include "host_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

#define QUEUED_PER_SLOT 4
#define TOKENS_FILE_MAX (4u << 20)

static int bad(struct tp_err *err, const char *path, const char *fmt, const char *a, const char *b)
{
	char msg[320];
	snprintf(msg, sizeof msg, fmt, a, b);
	return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0, "--tokens %.200s: %s", path,
			  msg);
}

static int only_keys(const json_t *o, const char *const *keys, const char **extra)
{
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		size_t i = 0;
		while (keys[i] != NULL && strcmp(keys[i], k) != 0)
			i++;
		if (keys[i] == NULL) {
			*extra = k;
			return -1;
		}
	}
	return 0;
}

static int good_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > TP_TENANT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_'))
			return 0;
	return 1;
}

static int good_digest(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int quotas(const json_t *q, struct tp_tenant *t, const char *path, struct tp_err *err)
{
	static const char *const keys[] = { "execs_per_minute", "concurrent_execs", "open_sessions",
					    "workspace_bytes", NULL };
	uint64_t *dst[] = { &t->q.execs_per_minute, &t->q.concurrent_execs, &t->q.open_sessions,
			    &t->q.workspace_bytes };
	const char *extra;
	if (q == NULL)
		return 0;
	if (!json_is_object(q))
		return bad(err, path, "tenant '%s': quotas must be an object%s", t->name, "");
	if (only_keys(q, keys, &extra) != 0)
		return bad(err, path, "tenant '%s': unknown quota '%.64s'", t->name, extra);
	for (size_t i = 0; keys[i] != NULL; i++) {
		const json_t *v = json_object_get(q, keys[i]);
		if (v == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    (i != 3 && json_integer_value(v) > 1000000))
			return bad(err, path,
				   "tenant '%s': quota '%s' must be an integer from 1 to 1000000 "
				   "(workspace_bytes: any positive integer)",
				   t->name, keys[i]);
		*dst[i] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int one(const json_t *o, struct tp_tenant *t, const struct tp_policy_set *set,
	       const char *path, struct tp_err *err)
{
	static const char *const keys[] = { "name",           "tokens_sha256", "policies",
					    "default_policy", "quotas",        NULL };
	const char *extra;
	const json_t *name = json_object_get(o, "name");
	if (!json_is_object(o))
		return bad(err, path, "each tenant must be an object%s%s", "", "");
	if (!json_is_string(name) || !good_name(json_string_value(name)))
		return bad(err, path,
			   "a tenant's name must be 1 to 63 of a-z, 0-9, '-' and '_'%s%s", "", "");
	snprintf(t->name, sizeof t->name, "%s", json_string_value(name));
	if (only_keys(o, keys, &extra) != 0)
		return bad(err, path, "tenant '%s': unknown key '%.64s'", t->name, extra);
	const json_t *toks = json_object_get(o, "tokens_sha256");
	t->ndigests = json_array_size(toks);
	if (!json_is_array(toks) || t->ndigests == 0 || t->ndigests > 16)
		return bad(err, path,
			   "tenant '%s': tokens_sha256 must list 1 to 16 SHA-256 digests "
			   "(tidepool token new makes one)%s",
			   t->name, "");
	t->digests = calloc(t->ndigests, sizeof *t->digests);
	if (t->digests == NULL)
		return tp_err_oom(err, TP_LAYER_HOST);
	for (size_t i = 0; i < t->ndigests; i++) {
		const char *d = json_string_value(json_array_get(toks, i));
		if (d == NULL || !good_digest(d))
			return bad(err, path,
				   "tenant '%s': '%.80s' is not a SHA-256 digest (64 lowercase "
				   "hex digits)",
				   t->name, d ? d : "(not a string)");
		memcpy(t->digests[i], d, 65);
	}
	const json_t *pols = json_object_get(o, "policies");
	t->nallowed = json_array_size(pols);
	if (!json_is_array(pols) || t->nallowed == 0)
		return bad(err, path, "tenant '%s': policies must list at least one policy%s",
			   t->name, "");
	t->allowed = calloc(t->nallowed, sizeof *t->allowed);
	if (t->allowed == NULL)
		return tp_err_oom(err, TP_LAYER_HOST);
	for (size_t i = 0; i < t->nallowed; i++) {
		const char *pn = json_string_value(json_array_get(pols, i));
		t->allowed[i] = pn ? tp_policy_set_find(set, pn) : NULL;
		if (t->allowed[i] == NULL)
			return bad(err, path, "tenant '%s': unknown policy '%.64s'", t->name,
				   pn ? pn : "(not a string)");
	}
	const json_t *dp = json_object_get(o, "default_policy");
	t->pols.deflt = t->allowed[0];
	if (dp != NULL) {
		const struct tp_policy *p =
		    json_is_string(dp) ? tp_policy_set_find(set, json_string_value(dp)) : NULL;
		if (p == NULL || !tp_tenant_allows(t, p))
			return bad(err, path,
				   "tenant '%s': default_policy must be one of its policies%s",
				   t->name, "");
		t->pols.deflt = p;
	}
	t->pols.set = set;
	t->pols.allowed = t->allowed;
	t->pols.nallowed = t->nallowed;
	t->pols.owner = t->name;
	return quotas(json_object_get(o, "quotas"), t, path, err);
}

int tp_tenants_load(struct tp_host *h, const char *path, struct tp_err *err)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	if (f == NULL)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, errno,
				  "--tokens %.200s: %s", path, strerror(errno));
	do { /* at most TOKENS_FILE_MAX: a tokens file is small */
		if (len == cap) {
			char *b =
			    cap < TOKENS_FILE_MAX ? realloc(text, cap ? 2 * cap : 4096) : NULL;
			if (b == NULL) {
				free(text);
				fclose(f);
				return cap >= TOKENS_FILE_MAX
					   ? bad(err, path, "larger than 4 MiB%s%s", "", "")
					   : tp_err_oom(err, TP_LAYER_HOST);
			}
			text = b;
			cap = cap ? 2 * cap : 4096;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	int rc = ferror(f) ? tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, errno,
					"--tokens %.200s: read: %s", path, strerror(errno))
			   : tp_tenants_parse(h, text, len, path, err);
	fclose(f);
	free(text);
	return rc;
}

int tp_tenants_parse(struct tp_host *h, const char *text, size_t len, const char *path,
		     struct tp_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	const char *extra;
	static const char *const keys[] = { "tenants", NULL };
	int rc = -1;
	if (root == NULL)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--tokens %.200s: line %d: %.200s", path, je.line, je.text);
	const json_t *arr = json_object_get(root, "tenants");
	if (!json_is_object(root) || only_keys(root, keys, &extra) != 0 || !json_is_array(arr) ||
	    json_array_size(arr) == 0 || json_array_size(arr) > TP_TENANTS_MAX) {
		bad(err, path, "must be {\"tenants\": [1 to 1024 tenants]}%s%s", "", "");
		goto out;
	}
	h->tenants = calloc(json_array_size(arr), sizeof *h->tenants);
	if (h->tenants == NULL) {
		tp_err_oom(err, TP_LAYER_HOST);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		struct tp_tenant *t = &h->tenants[i];
		h->ntenants = i + 1;
		if (one(json_array_get(arr, i), t, h->pols.set, path, err) != 0)
			goto out;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(h->tenants[j].name, t->name) == 0) {
				bad(err, path, "two tenants are named '%s'%s", t->name, "");
				goto out;
			}
			for (size_t a = 0; a < t->ndigests; a++)
				for (size_t b = 0; b < h->tenants[j].ndigests; b++)
					if (strcmp(t->digests[a], h->tenants[j].digests[b]) == 0) {
						bad(err, path,
						    "tenants '%s' and '%s' share a token",
						    h->tenants[j].name, t->name);
						goto out;
					}
		}
		t->tokens = (double)t->q.execs_per_minute; /* full at the start */
	}
	rc = 0;
out:
	json_decref(root);
	if (rc != 0)
		tp_tenants_free(h);
	return rc;
}

void tp_tenants_free(struct tp_host *h)
{
	for (size_t i = 0; i < h->ntenants; i++) {
		free(h->tenants[i].digests);
		free(h->tenants[i].allowed);
	}
	free(h->tenants);
	h->tenants = NULL;
	h->ntenants = 0;
}

/* Constant time in which digest matches: every byte of every digest is looked
 * at, whatever the token. */
struct tp_tenant *tp_tenant_by_token(struct tp_host *h, const char *token, size_t len)
{
	char hex[65];
	struct tp_tenant *found = NULL;
	tp_sha256_hex(token, len, hex);
	for (size_t i = 0; i < h->ntenants; i++)
		for (size_t j = 0; j < h->tenants[i].ndigests; j++) {
			unsigned char diff = 0;
			for (size_t k = 0; k < 64; k++)
				diff |= (unsigned char)(hex[k] ^ h->tenants[i].digests[j][k]);
			/* branch-free select: found stays or becomes this tenant */
			uintptr_t m = (uintptr_t)0 - (uintptr_t)(diff == 0);
			found = (struct tp_tenant *)(((uintptr_t)&h->tenants[i] & m) |
						     ((uintptr_t)found & ~m));
		}
	return found;
}

int tp_tenant_allows(const struct tp_tenant *t, const struct tp_policy *p)
{
	for (size_t i = 0; i < t->nallowed; i++)
		if (t->allowed[i] == p)
			return 1;
	return 0;
}

double tp_tenant_admit(struct tp_tenant *t, double now)
{
	if (t->q.execs_per_minute == 0)
		return 0;
	if (t->tokens_at == 0) /* its first exec: the bucket is full since now */
		t->tokens_at = now;
	return tp_bucket_take(&t->tokens, &t->tokens_at, t->q.execs_per_minute, now);
}

int tp_tenant_queue_full(const struct tp_tenant *t)
{
	return t->q.concurrent_execs > 0 &&
	       t->in_flight >= t->q.concurrent_execs * (1 + QUEUED_PER_SLOT);
}
