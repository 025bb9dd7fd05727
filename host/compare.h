/*
 * compare.h — `tidepool run --compare` (compare.c), called by cli.c's run.
 */
#ifndef TP_COMPARE_H
#define TP_COMPARE_H

#include <jansson.h>
#include <stddef.h>

#include "policy.h"

/* params holds the request but its code and policy; the policies named by spec
 * ("all", or NAME[,NAME...]) come from set. Prints the table (or, as_json, the
 * same as data). 0, 1 when a policy could not run it, 2 on a usage error. */
int tp_cli_compare(const char *spec, json_t *params, const char *path, const char *code, size_t len,
		   struct tp_policy_set *set, const struct tp_policy *deflt, int as_json);

#endif
