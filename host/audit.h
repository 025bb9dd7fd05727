/*
 * audit.h — the audit log (`--audit FILE`): one JSON line per exec, appended
 * with one write(2) each, so lines stay whole and a crash loses none already
 * written. The host writes it when the exec's reply is decided (a worker that
 * crashed still gets its line). The format is in README.md ("Audit log").
 */
#ifndef TP_AUDIT_H
#define TP_AUDIT_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "hpolicy.h"
#include "langs.h"

/* Whose exec it was: the tenant (--tokens) and the session, each NULL when none. */
struct tp_audit_who {
	const char *tenant;
	const char *session;
};

/* Now, as RFC 3339 UTC with milliseconds ("2026-11-23T00:21:07.123Z"). */
json_t *tp_audit_time(void);

/* An fd opened for appending (0600 when created), or -1 with err. */
int tp_audit_open(const char *path, struct tp_err *err);
/* One line: result is the exec result (already redacted; NULL: none, with kind
 * saying why, e.g. "cancelled"); tools the exec's tool calls, [{name, outcome}]
 * (NULL: none). Errors are logged to stderr, never fatal. */
void tp_audit_exec(int fd, const struct tp_hpolicy *hp, struct tp_audit_who who, const json_t *id,
		   enum tp_lang_id lang, const char *code, size_t code_len, const json_t *result,
		   const char *kind, const json_t *tools);

#endif
