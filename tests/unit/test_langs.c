/*
 * test_langs.c — the language table: every row complete, and each lookup
 * (name, tool, file name) finds its row and nothing else; the interpreters
 * (sandbox/lang.c) are found only once the binary registers them.
 */
#include "lang.h"
#include "langs.h"
#include "lsandbox.h"
#include "pysandbox.h"
#include "tap.h"

static void test_rows(void)
{
	for (int i = 0; i < TP_NLANGS; i++) {
		const struct tp_lang_info *l = &tp_langs[i];
		CHECK_EQ_INT(l->id, i);
		CHECK(l->name && l->title && l->value_hint && l->tool && l->tool_title &&
		      l->tool_desc && l->exts[0]);
		CHECK(tp_langs_by_name(l->name) == l);
		CHECK(tp_langs_by_tool(l->tool) == l);
	}
	CHECK(tp_langs_by_name("lua") == &tp_langs[TP_LANG_LUA]);
	CHECK(tp_langs_by_name("python") == &tp_langs[TP_LANG_PYTHON]);
	CHECK(tp_langs_by_tool("run_python") == &tp_langs[TP_LANG_PYTHON]);
	CHECK(tp_langs_by_name("Lua") == NULL);
	CHECK(tp_langs_by_name("") == NULL);
	CHECK(tp_langs_by_name(NULL) == NULL);
	CHECK(tp_langs_by_tool("lua") == NULL);
	CHECK(tp_langs_by_tool(NULL) == NULL);
}

static void test_paths(void)
{
	CHECK(tp_langs_by_path("a.lua") == &tp_langs[TP_LANG_LUA]);
	CHECK(tp_langs_by_path("/x.d/b.py") == &tp_langs[TP_LANG_PYTHON]);
	CHECK(tp_langs_by_path("b.py.txt") == NULL);
	CHECK(tp_langs_by_path("lua") == NULL);
	CHECK(tp_langs_by_path(".py") == NULL); /* a name, not an ending */
	CHECK(tp_langs_by_path("-") == NULL);
	CHECK(tp_langs_by_path("") == NULL);
	CHECK(tp_langs_by_path(NULL) == NULL);
}

static void test_names(void)
{
	char buf[64];
	CHECK_EQ_STR(tp_langs_names(buf, sizeof buf, "\"%s\"", ", ", " or "),
		     "\"lua\" or \"python\"");
	CHECK_EQ_STR(tp_langs_names(buf, sizeof buf, "%s", ", ", "|"), "lua|python");
	CHECK_EQ_STR(tp_langs_names(buf, 6, "%s", ", ", "|"), "lua|p"); /* cut, terminated */
	CHECK_EQ_STR(tp_langs_names(buf, 3, "%s", ", ", "|"), "lu");
}

/* A binary hosts what its main registers: tidepool-lua registers Lua only. */
static void test_registry(void)
{
	CHECK(tp_lang_find("lua") == NULL);
	CHECK(tp_lang_find("python") == NULL);
	tp_lang_register(&tp_lang_lua);
	CHECK(tp_lang_find("lua") == &tp_lang_lua);
	CHECK(tp_lang_find("python") == NULL);
	tp_lang_register(&tp_lang_python);
	CHECK(tp_lang_find("python") == &tp_lang_python);
	CHECK(tp_lang_find("lua") == &tp_lang_lua);
	CHECK(tp_lang_find("Lua") == NULL);
	CHECK(tp_lang_find("run_lua") == NULL);
	CHECK(tp_lang_find("") == NULL);
	CHECK(tp_lang_find(NULL) == NULL);
	tp_lang_register(NULL); /* ignored */
	CHECK(tp_lang_find("lua") == &tp_lang_lua);
}

int main(void)
{
	test_rows();
	test_paths();
	test_names();
	test_registry();
	return tp_test_done("test_langs");
}
