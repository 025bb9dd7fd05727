/*
 * pcheck.h — sandbox/policy/check's answer: a policy's text judged as `tidepool
 * policy check` judges a file, and never added to the policies a server runs.
 *
 * Usage: tp_pcheck(set, text, len) with the policies the caller may extend;
 * the answer is {"ok", "errors": [{"line", "column", "message"}], "more",
 * "policy": the effective policy or null}. Each message is policy check's,
 * without its "FILE:LINE:COL: " (line and column are fields of their own).
 * Pure (no host state): tests/fuzz/fuzz_policy.c drives it.
 */
#ifndef TP_PCHECK_H
#define TP_PCHECK_H

#include <jansson.h>
#include <stddef.h>

#include "policy.h"

#define TP_PCHECK_MAX_TEXT (256u << 10) /* a text's bytes at most (more: -32602) */

/* The answer (new reference), or NULL out of memory. */
json_t *tp_pcheck(const struct tp_policy_set *s, const char *text, size_t len);

#endif
