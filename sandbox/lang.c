/*
 * lang.c — the interpreters a zygote can host, one per row of common/langs.c
 * and indexed by the same id; each language directory defines its struct.
 */
#include "lang.h"

#include <string.h>

#include "lsandbox.h"
#ifndef TP_LUA_ONLY
#include "pysandbox.h"
#endif

/* TP_LUA_ONLY: tidepool-lua, the Lua zygote's binary, has no CPython. */
static const struct tp_lang *const langs[TP_NLANGS] = {
	[TP_LANG_LUA] = &tp_lang_lua,
#ifndef TP_LUA_ONLY
	[TP_LANG_PYTHON] = &tp_lang_python,
#endif
};

static struct tp_policy *active;
static struct tp_policy_set *builtin;

void tp_sandbox_set_policy(struct tp_policy *p)
{
	tp_policy_free(active);
	active = p;
}

const struct tp_policy *tp_sandbox_policy(void)
{
	if (active != NULL)
		return active;
	if (builtin == NULL)
		builtin = tp_policy_set_new(NULL);
	return builtin ? tp_policy_set_find(builtin, "standard") : NULL;
}

const struct tp_lang *tp_lang_find(const char *name)
{
	const struct tp_lang_info *info = tp_langs_by_name(name);
	return info != NULL ? langs[info->id] : NULL;
}

static char g_workspace[1024];

const char *tp_sandbox_workspace(void)
{
	return g_workspace[0] ? g_workspace : NULL;
}

void tp_sandbox_set_workspace(const char *dir)
{
	if (dir == NULL || strlen(dir) >= sizeof g_workspace)
		g_workspace[0] = '\0';
	else
		memcpy(g_workspace, dir, strlen(dir) + 1);
}

int tp_sandbox_in_workspace(const char *path)
{
	size_t n = strlen(g_workspace);
	return n > 0 && strncmp(path, g_workspace, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
