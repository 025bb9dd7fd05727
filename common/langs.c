/*
 * langs.c — the one table of languages. Every other part reads a language's
 * name, tool, texts, zygote binary and file endings from here; nothing else
 * spells them (tests aside).
 */
#include "langs.h"

#include <stdio.h>
#include <string.h>

/*
 * Adding a language ("js") touches:
 *   1. here: a TP_LANG_JS id in langs.h and its row below;
 *   2. a new directory js-sandbox/ that defines tp_lang_js (sandbox/lang.h:
 *      zygote_init, worker_init, exec) with .id = TP_LANG_JS;
 *   3. host/main.c: tp_lang_register(&tp_lang_js) beside the others;
 *   4. the Makefile: js-sandbox in SRC_DIRS, and its library's flags.
 * The params check, tools/list, initialize, the host's zygotes and pools, the
 * zygote binary and `tidepool run FILE` follow from the row.
 */
const struct tp_lang_info tp_langs[TP_NLANGS] = {
	[TP_LANG_LUA] = {
	    .id = TP_LANG_LUA,
	    .name = "lua",
	    .title = "Lua 5.4",
	    .value_hint = "`return` a value to get it back as JSON",
	    .tool = "run_lua",
	    .tool_title = "Run Lua 5.4",
	    .tool_desc = "Run a Lua 5.4 snippet in a sandbox. The chunk's return value comes "
			 "back as JSON in `value`; print() and io.write() go to `stdout`.",
	    .zygote_bin = "tidepool-lua",
	    .exts = { ".lua", NULL },
	    .prewarm = 1, /* a Lua zygote is small: warm from the start */
	},
	[TP_LANG_PYTHON] = {
	    .id = TP_LANG_PYTHON,
	    .name = "python",
	    .title = "Python 3.11",
	    .value_hint = "the last expression is the value",
	    .tool = "run_python",
	    .tool_title = "Run Python 3.11",
	    .tool_desc = "Run a Python 3.11 snippet in a sandbox. The value of the last "
			 "expression comes back as JSON in `value` (its repr when it is not "
			 "JSON, with `value_repr: true`); print() goes to `stdout`.",
	    /* CPython linked statically and not PIE, ~25 % faster (see the Makefile). */
	    .zygote_bin = "tidepool-python",
	    .exts = { ".py", NULL },
	    .prewarm = 0,
	},
};

const struct tp_lang_info *tp_langs_by_name(const char *name)
{
	for (int i = 0; name != NULL && i < TP_NLANGS; i++)
		if (strcmp(tp_langs[i].name, name) == 0)
			return &tp_langs[i];
	return NULL;
}

const struct tp_lang_info *tp_langs_by_tool(const char *tool)
{
	for (int i = 0; tool != NULL && i < TP_NLANGS; i++)
		if (strcmp(tp_langs[i].tool, tool) == 0)
			return &tp_langs[i];
	return NULL;
}

static int ends_with(const char *s, size_t n, const char *end)
{
	size_t m = strlen(end);
	return n > m && memcmp(s + n - m, end, m) == 0;
}

const struct tp_lang_info *tp_langs_by_path(const char *path)
{
	size_t n = path != NULL ? strlen(path) : 0;
	for (int i = 0; i < TP_NLANGS; i++) {
		const char *const *ext = tp_langs[i].exts;
		for (size_t j = 0; j < TP_LANG_MAX_EXTS && ext[j] != NULL; j++)
			if (ends_with(path, n, ext[j]))
				return &tp_langs[i];
	}
	return NULL;
}

const char *tp_langs_names(char *buf, size_t len, const char *item_fmt, const char *sep,
			   const char *last_sep)
{
	size_t off = 0;
	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i < TP_NLANGS && off < len; i++) {
		const char *join = i == 0 ? "" : i == TP_NLANGS - 1 ? last_sep : sep;
		int n = snprintf(buf + off, len - off, "%s", join);
		off += n > 0 ? (size_t)n : 0;
		if (off >= len)
			break;
		n = snprintf(buf + off, len - off, item_fmt, tp_langs[i].name);
		off += n > 0 ? (size_t)n : 0;
	}
	return buf;
}
