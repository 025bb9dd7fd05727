/*
 * fuzz_tokens.c — a --tokens file is an operator's, but treated as hostile:
 * any bytes make tenants or one "--tokens PATH: ..." message, never a crash, a
 * leak or a read out of bounds. What parses holds the file's invariants: each
 * tenant named, 1 to 16 digests of 64 lowercase hex digits, no digest shared,
 * at least one policy, its default among them; a refusal leaves no tenant.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static struct tp_policy_set *set;

static void check(const struct tp_host *h)
{
	CHECK(h->ntenants >= 1 && h->ntenants <= TP_TENANTS_MAX);
	for (size_t i = 0; i < h->ntenants; i++) {
		const struct tp_tenant *t = &h->tenants[i];
		CHECK(t->name[0] != '\0' && strlen(t->name) <= TP_TENANT_NAME_MAX);
		CHECK(t->ndigests >= 1 && t->ndigests <= 16);
		for (size_t d = 0; d < t->ndigests; d++) {
			CHECK(strlen(t->digests[d]) == 64 &&
			      strspn(t->digests[d], "0123456789abcdef") == 64);
			for (size_t j = 0; j < i; j++)
				for (size_t e = 0; e < h->tenants[j].ndigests; e++)
					CHECK(strcmp(t->digests[d], h->tenants[j].digests[e]) != 0);
		}
		CHECK(t->nallowed >= 1 && tp_tenant_allows(t, t->pols.deflt));
		CHECK(t->pols.set == set && t->pols.allowed == t->allowed);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(t->name, h->tenants[j].name) != 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_err err = { 0 };
	struct tp_host h;
	if (set == NULL) {
		set = tp_policy_set_new(&err);
		CHECK(set != NULL);
	}
	memset(&h, 0, sizeof h);
	h.pols.set = set;
	if (tp_tenants_parse(&h, (const char *)data, size, "fuzz.json", &err) == 0) {
		check(&h);
	} else {
		CHECK(h.tenants == NULL && h.ntenants == 0);
		CHECK(strncmp(err.msg, "--tokens fuzz.json: ", 20) == 0 || tp_err_is_oom(&err));
	}
	tp_tenants_free(&h);
	return 0;
}
