/*
 * lang.c — the interpreters this binary hosts, one per row of common/langs.c
 * and indexed by the same id. Each language directory defines its struct; the
 * binary's entry point registers those it links (lang.h), so nothing here
 * names a language: tidepool-lua, without CPython, registers Lua only.
 */
#include "lang.h"

#include <string.h>

static const struct tp_lang *langs[TP_NLANGS];

void tp_lang_register(const struct tp_lang *lang)
{
	if (lang != NULL && (unsigned)lang->id < TP_NLANGS)
		langs[lang->id] = lang;
}

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
