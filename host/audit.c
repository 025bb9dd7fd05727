/*
 * audit.c — the audit log's lines (audit.h).
 */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "jsonio.h"
#include "sha256.h"

int tp_audit_open(const char *path, struct tp_err *err)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, errno, "--audit %s: %s", path,
			   strerror(errno));
	return fd;
}

json_t *tp_audit_time(void)
{
	struct timeval tv;
	struct tm tm;
	char buf[40];
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof buf - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
	return json_string(buf);
}

static size_t text_len(const json_t *res, const char *key)
{
	return json_string_length(json_object_get(res, key));
}

void tp_audit_exec(int fd, const struct tp_hpolicy *hp, struct tp_audit_who who, const json_t *id,
		   enum tp_lang_id lang, const char *code, size_t code_len, const json_t *res,
		   const char *kind, const json_t *tools)
{
	char hex[65];
	if (fd < 0)
		return;
	tp_sha256_hex(code, code_len, hex);
	const json_t *err = json_object_get(res, "error");
	const char *k = json_is_object(err) ? json_string_value(json_object_get(err, "kind"))
			: res != NULL       ? NULL /* it succeeded */
					    : kind;
	json_t *refusals = json_array();
	if (k != NULL &&
	    (strcmp(k, "policy_violation") == 0 || strcmp(k, "sandbox_violation") == 0))
		json_array_append(refusals, json_object_get(err, "message"));
	json_t *line =
	    json_pack("{s:o, s:O, s:s*, s:s*, s:s, s:s, s:s, s:b, s:s?, s:O?, s:O?, s:O?, s:o, "
		      "s:o, s:I, s:I}",
		      "time", tp_audit_time(), "id", id ? id : json_null(), "tenant", who.tenant,
		      "session", who.session, "policy", hp->p->name, "lang", tp_langs[lang].name,
		      "code_sha256", hex, "ok", json_is_true(json_object_get(res, "ok")), "kind", k,
		      "layer", json_is_object(err) ? json_object_get(err, "layer") : NULL, "limit",
		      json_is_object(err) ? json_object_get(err, "limit") : NULL, "usage",
		      json_object_get(res, "usage"), "tool_calls",
		      tools ? json_incref((json_t *)tools) : json_array(), "refusals", refusals,
		      "stdout_bytes", (json_int_t)text_len(res, "stdout"), "stderr_bytes",
		      (json_int_t)text_len(res, "stderr"));
	char *s = line ? tp_json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(line);
	if (s == NULL) {
		fprintf(stderr, "tidepool: audit: out of memory: a line was not written\n");
		return;
	}
	size_t n = strlen(s);
	char *l = malloc(n + 1);
	if (l != NULL) {
		memcpy(l, s, n);
		l[n] = '\n';
		if (write(fd, l, n + 1) != (ssize_t)(n + 1))
			fprintf(stderr, "tidepool: audit: write: %s\n", strerror(errno));
	}
	free(l);
	free(s);
}
