/*
 * langs.h — the languages tidepool runs: one row each, read by every process
 * (the params check, the MCP tools list, the zygote binary, `run FILE`, the
 * zygote's choice of interpreter). No interpreter is linked through it, so the
 * host-only and fuzz builds link without Lua or CPython.
 *
 * Usage:
 *   1. Find a row with tp_langs_by_name() ("lua", from a request or argv),
 *      tp_langs_by_tool() ("run_lua", from tools/call) or tp_langs_by_path()
 *      (a file's extension); each returns NULL for something unknown.
 *   2. Index per-language state by its id (0 .. TP_NLANGS-1), or walk tp_langs[].
 *   3. The interpreter itself is a struct tp_lang (sandbox/lang.h) with the
 *      same id, which the binary's entry point registers and tp_lang_find()
 *      looks up.
 */
#ifndef TP_LANGS_H
#define TP_LANGS_H

#include <stddef.h>

enum tp_lang_id { TP_LANG_LUA, TP_LANG_PYTHON, TP_NLANGS };

#define TP_LANG_MAX_EXTS 4

struct tp_lang_info {
	enum tp_lang_id id;
	const char *name;       /* the "lang" param, `--zygote NAME`, `run --lang NAME` */
	const char *title;      /* "Lua 5.4": serverInfo, instructions, code description */
	const char *value_hint; /* how a snippet returns its value, for the instructions */
	const char *tool;       /* the MCP tool that runs it */
	const char *tool_title;
	const char *tool_desc;
	const char *zygote_bin;             /* basename beside our binary; NULL: our own binary */
	const char *exts[TP_LANG_MAX_EXTS]; /* file name endings for `run FILE`; unused: NULL */
	int prewarm;                        /* its zygote and pool start with the host */
};

extern const struct tp_lang_info tp_langs[TP_NLANGS];

const struct tp_lang_info *tp_langs_by_name(const char *name);
const struct tp_lang_info *tp_langs_by_tool(const char *tool);
/* By the ending of the file name (".py"); NULL for none or an unknown one. */
const struct tp_lang_info *tp_langs_by_path(const char *path);

/* Writes the names into buf for a message that lists the choices: each through
 * item_fmt (one %s), joined by sep, the last two by last_sep. Returns buf. */
const char *tp_langs_names(char *buf, size_t len, const char *item_fmt, const char *sep,
			   const char *last_sep);

#endif
