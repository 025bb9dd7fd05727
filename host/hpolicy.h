/*
 * hpolicy.h — what the host does around an exec for its policy: refuse a policy
 * this kernel cannot enforce, count execs against its rate, and redact its
 * secrets from everything that leaves (the reply and the audit log).
 *
 * Usage:
 *   1. tp_hpolicy_init() once per policy at host start: compiles the redact
 *      patterns and reads redact.env from the host's environment (an unset
 *      variable is an error: the secret would pass unredacted), and runs
 *      tp_policy_kernel_check().
 *   2. Per exec: tp_hpolicy_admit() (rate), then tp_hpolicy_redact() on the
 *      result before it is sent or logged.
 */
#ifndef TP_HPOLICY_H
#define TP_HPOLICY_H

#include <jansson.h>
#include <regex.h>
#include <stddef.h>

#include "err.h"
#include "policy.h"

#define TP_REDACTED "[REDACTED]"

struct tp_hpolicy {
	const struct tp_policy *p;
	int kernel_ok;
	char why[512];            /* when !kernel_ok */
	struct tp_strv secrets;   /* redact.strings and the values of redact.env */
	struct tp_strv forms;     /* each secret as the host's outputs may encode it */
	unsigned char first[256]; /* 1: some form begins with this byte */
	regex_t *re;
	size_t nre;
	double *starts; /* ring of the last rate.per_minute exec starts, ms */
	size_t head, count;
};

int tp_hpolicy_init(struct tp_hpolicy *hp, const struct tp_policy *p, struct tp_err *err);
void tp_hpolicy_free(struct tp_hpolicy *hp);
/* 0: the exec may start now (recorded); else ms until it could. */
double tp_hpolicy_admit(struct tp_hpolicy *hp, double now_ms);
/* Every string and key in v with the secrets and pattern matches replaced, and a
 * string's end that begins a secret (4 bytes or more: output cut at its limit)
 * too. Returns v (edited in place) or a new value; NULL out of memory. */
json_t *tp_hpolicy_redact(const struct tp_hpolicy *hp, json_t *v);
/* A workspace reply of files/get, files/list, read_file, list_files: as
 * tp_hpolicy_redact, and a file's base64 data decoded, redacted and encoded
 * again; bytes then counts what is sent. Takes r; NULL out of memory (r freed). */
json_t *tp_hpolicy_redact_file(const struct tp_hpolicy *hp, json_t *r);
/* The same for one text: a malloc'd copy, NULL out of memory. */
char *tp_hpolicy_redact_text(const struct tp_hpolicy *hp, const char *s, size_t n, size_t *out_n);

#endif
