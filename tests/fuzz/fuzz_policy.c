/*
 * fuzz_policy.c — a policy file is an operator's, but treated as hostile: any
 * bytes make a policy or "FILE:LINE:COL: ..." messages, never a crash, a leak
 * or a read out of bounds; the report of every error stays bounded, in the
 * text's order, and holds err's first error; what parses writes back out
 * (tp_policy_wire) and parses again to the same policy. The same bytes as
 * sandbox/policy/check's text (host/pcheck.c: resolved through "extends"
 * against the presets, never added to them) make a well-formed answer: ok with
 * a policy, or not ok with at least one placed, valid-UTF-8 message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcheck.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The report of a bad text: bounded, each message placed, in order, err among them. */
static void check_report(const struct tp_policy_report *r, const struct tp_err *err)
{
	int found = 0;
	CHECK(r->n >= 1 && r->n <= TP_POLICY_MAX_ERRORS);
	CHECK(r->more == 0 || r->n == TP_POLICY_MAX_ERRORS);
	for (size_t i = 0; i < r->n; i++) {
		const struct tp_policy_error *e = &r->e[i];
		CHECK(strncmp(e->msg, "fuzz.json:", 10) == 0 || strstr(e->msg, "out of memory"));
		CHECK(memchr(e->msg, '\0', sizeof e->msg) != NULL);
		CHECK(i == 0 || e->line > e[-1].line ||
		      (e->line == e[-1].line && e->col >= e[-1].col));
		found |= strcmp(e->msg, err->msg) == 0;
	}
	CHECK(found || tp_err_is_oom(err) || r->more > 0);
}

/* sandbox/policy/check's answer to the same bytes. */
static void check_answer(const uint8_t *data, size_t size)
{
	static struct tp_policy_set *set;
	struct tp_err err = { 0 };
	if (set == NULL)
		set = tp_policy_set_new(&err);
	CHECK(set != NULL);
	size_t before = tp_policy_set_count(set);
	json_t *a = tp_pcheck(set, (const char *)data, size);
	CHECK(tp_policy_set_count(set) == before); /* never loaded */
	if (a == NULL)
		return; /* out of memory */
	json_t *ok = json_object_get(a, "ok"), *errors = json_object_get(a, "errors");
	json_t *pol = json_object_get(a, "policy");
	CHECK(json_is_boolean(ok) && json_is_array(errors) && pol != NULL);
	CHECK(json_is_true(ok) ? json_is_object(pol) && json_array_size(errors) == 0
			       : json_is_null(pol) && json_array_size(errors) >= 1);
	for (size_t i = 0; i < json_array_size(errors); i++) {
		json_t *e = json_array_get(errors, i);
		CHECK(json_integer_value(json_object_get(e, "line")) >= 0);
		CHECK(json_integer_value(json_object_get(e, "column")) >= 0);
		CHECK(json_is_string(json_object_get(e, "message")));
	}
	char *text = json_dumps(a, 0); /* jansson refuses to write invalid UTF-8 */
	CHECK(text != NULL);
	free(text);
	json_decref(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tp_policy_report report;
	struct tp_err err = { 0 };
	memset(&report, 0, sizeof report);
	check_answer(data, size);
	struct tp_policy *p =
	    tp_policy_parse_report((const char *)data, size, "fuzz.json", &report, &err);

	if (p == NULL) {
		CHECK(tp_err_failed(&err));
		CHECK(strncmp(err.msg, "fuzz.json:", 10) == 0 || tp_err_is_oom(&err));
		check_report(&report, &err);
		return 0;
	}
	CHECK(report.n == 0 && report.more == 0);
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
