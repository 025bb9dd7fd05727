/*
 * lang.c — the table of languages a zygote can host.
 */
#include <string.h>

#include "lang.h"
#include "lsandbox.h"
#include "pysandbox.h"

static const struct tp_lang *const langs[] = { &tp_lang_lua, &tp_lang_python };

const struct tp_lang *tp_lang_find(const char *name)
{
	for (size_t i = 0; i < sizeof langs / sizeof langs[0]; i++)
		if (strcmp(langs[i]->name, name) == 0)
			return langs[i];
	return NULL;
}
