/*
 * jsonio.c — jansson calls that fail whole (see jsonio.h for the jansson bugs).
 * Invariant: a document that comes back was read or written with every byte;
 * one allocation failure anywhere inside the call refuses the result.
 */
#include "jsonio.h"

#include <stdlib.h>

static unsigned long failures; /* allocations jansson asked for and did not get */

static void *counting_malloc(size_t n)
{
	void *p = malloc(n);
	if (p == NULL)
		failures++;
	return p;
}

/* The free function stays free(): values made before the switch are freed alike. */
static void watch(void)
{
	static int installed;
	if (!installed) {
		json_set_alloc_funcs(counting_malloc, free);
		installed = 1;
	}
}

json_t *tp_json_loadb(const char *buf, size_t len, size_t flags, struct tp_err *err)
{
	json_error_t jerr;
	watch();
	unsigned long before = failures;
	json_t *j = json_loadb(buf, len, flags, &jerr);
	if (failures != before) {
		json_decref(j);
		tp_err_oom(err, TP_LAYER_HOST);
		return NULL;
	}
	if (j == NULL)
		tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "%s at column %d", jerr.text,
			   jerr.column);
	return j;
}

char *tp_json_dumps(const json_t *json, size_t flags)
{
	watch();
	unsigned long before = failures;
	char *s = json_dumps(json, flags);
	if (failures != before) {
		free(s);
		return NULL;
	}
	return s;
}

size_t tp_json_size(const json_t *json, size_t flags)
{
	watch();
	unsigned long before = failures;
	size_t n = json_dumpb(json, NULL, 0, flags);
	return failures != before || (n == 0 && json != NULL) ? (size_t)-1 : n;
}
