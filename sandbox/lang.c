/*
 * lang.c — the interpreters this binary hosts, one per row of common/langs.c
 * and indexed by the same id. Each language directory defines its struct; the
 * binary's entry point registers those it links (lang.h), so nothing here
 * names a language: tidepool-lua, without CPython, registers Lua only.
 */
#include "lang.h"

#include <string.h>

/* This file's state. None of it is read or written by a signal handler. */
static struct {
	/* At start, by the binary's entry point (tp_lang_register()), before any
	 * zygote or worker: the interpreters it links, by id. */
	const struct tp_lang *langs[TP_NLANGS];
	/* In the zygote, before tp_lockdown_prepare() and its first worker
	 * (tp_sandbox_set_policy()): the policy it enforces; builtin, the presets,
	 * made on the first tp_sandbox_policy() that finds no active policy. */
	struct tp_policy *active;
	struct tp_policy_set *builtin;
	/* Per exec, in the worker (tp_sandbox_set_workspace()): its session's
	 * workspace directory, "" for none. */
	char workspace[1024];
} L;

void tp_lang_register(const struct tp_lang *lang)
{
	if (lang != NULL && (unsigned)lang->id < TP_NLANGS)
		L.langs[lang->id] = lang;
}

void tp_sandbox_set_policy(struct tp_policy *p)
{
	tp_policy_free(L.active);
	L.active = p;
}

const struct tp_policy *tp_sandbox_policy(void)
{
	if (L.active != NULL)
		return L.active;
	if (L.builtin == NULL)
		L.builtin = tp_policy_set_new(NULL);
	return L.builtin ? tp_policy_set_find(L.builtin, "standard") : NULL;
}

const struct tp_lang *tp_lang_find(const char *name)
{
	const struct tp_lang_info *info = tp_langs_by_name(name);
	return info != NULL ? L.langs[info->id] : NULL;
}

const char *tp_sandbox_workspace(void)
{
	return L.workspace[0] ? L.workspace : NULL;
}

void tp_sandbox_set_workspace(const char *dir)
{
	if (dir == NULL || strlen(dir) >= sizeof L.workspace)
		L.workspace[0] = '\0';
	else
		memcpy(L.workspace, dir, strlen(dir) + 1);
}

int tp_sandbox_in_workspace(const char *path)
{
	size_t n = strlen(L.workspace);
	return n > 0 && strncmp(path, L.workspace, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
