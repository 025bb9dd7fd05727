/*
 * fuzz_policy.c — a policy file is an operator's, but treated as hostile: any
 * bytes make a policy or a "FILE:LINE:COL: ..." message, never a crash, a leak
 * or a read out of bounds; what parses writes back out (tp_policy_wire) and
 * parses again to the same policy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_err err = { 0 };
	struct tp_policy *p = tp_policy_parse((const char *)data, size, "fuzz.json", &err);

	if (p == NULL) {
		CHECK(tp_err_failed(&err));
		CHECK(strncmp(err.msg, "fuzz.json:", 10) == 0 || tp_err_is_oom(&err));
		return 0;
	}
	size_t len;
	char *wire = tp_policy_wire(p, &len);
	CHECK(wire != NULL);
	struct tp_err err2 = { 0 };
	struct tp_policy *q = tp_policy_from_wire(wire, len, &err2);
	if (q == NULL) /* a path that vanished between the two parses is the only excuse */
		CHECK(strstr(err2.msg, "filesystem.") != NULL);
	else {
		json_t *a = tp_policy_to_json(p, 0), *b = tp_policy_to_json(q, 0);
		CHECK(json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	free(wire);
	tp_policy_free(q);
	tp_policy_free(p);
	return 0;
}
