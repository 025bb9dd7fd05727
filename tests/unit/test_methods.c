/*
 * test_methods.c — the registries are the one source: host.c's methods and
 * mcp.c's tools. Every method the registry has is in the man page's list and
 * in docs/protocol.md; every method docs/protocol.md's method tables name is
 * in the registry; every tool tools/list gives is one tp_mcp_tool_find knows,
 * and the workspace's tools exist exactly when the policy gives a workspace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "langs.h"
#include "mcp.h"
#include "policy.h"
#include "tap.h"

/* The file at path, from the tree's root (__FILE__ is tests/unit/test_methods.c). */
static char *slurp(const char *rel)
{
	char path[512];
	const char *src = __FILE__, *slash = strrchr(src, '/');
	snprintf(path, sizeof path, "%.*s%s../../%s", slash ? (int)(slash - src + 1) : 0, src,
		 slash ? "" : "tests/unit/", rel);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strdup(buf);
}

/* The man page with its font escapes and hyphen escapes taken out. */
static void man_plain(char *s)
{
	char *o = s;
	for (char *p = s; *p != '\0'; p++) {
		if (p[0] == '\\' && p[1] == 'f' && p[2] != '\0') {
			p += 2;
			continue;
		}
		if (p[0] == '\\' && p[1] == '-') {
			*o++ = '-';
			p++;
			continue;
		}
		*o++ = *p;
	}
	*o = '\0';
}

/* name appears as a whole word (not inside a longer method name). */
static int has_word(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(text, name); p != NULL; p = strstr(p + 1, name)) {
		char before = p == text ? ' ' : p[-1], after = p[n];
		int inner =
		    before == '/' || after == '/' || (after >= 'a' && after <= 'z') || after == '_';
		if (!inner)
			return 1;
	}
	return 0;
}

static const struct tp_method *find(const char *name)
{
	size_t n;
	const struct tp_method *m = tp_host_methods(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

static void test_docs_list_every_method(void)
{
	size_t n;
	const struct tp_method *m = tp_host_methods(&n);
	char *man = slurp("man/tidepool.1"), *doc = slurp("docs/protocol.md");
	CHECK(man != NULL && doc != NULL);
	if (man == NULL || doc == NULL)
		return;
	man_plain(man);
	CHECK(n >= 19);
	for (size_t i = 0; i < n; i++) {
		char tick[128];
		snprintf(tick, sizeof tick, "`%s", m[i].name);
		if (!has_word(man, m[i].name))
			fprintf(stderr, "# the man page does not list %s\n", m[i].name);
		CHECK(has_word(man, m[i].name));
		if (!has_word(doc, tick))
			fprintf(stderr, "# docs/protocol.md does not name `%s`\n", m[i].name);
		CHECK(has_word(doc, tick));
		CHECK(m[i].summary != NULL && m[i].summary[0] != '\0');
		CHECK((m[i].fn == NULL) ==
		      (m[i].kind == TP_METHOD_SENT || m[i].kind == TP_METHOD_NOTIFICATION));
	}
	/* The other way: a method docs/protocol.md's tables name is the registry's. */
	for (char *line = strtok(doc, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		char name[128];
		if (sscanf(line, "| `%127[a-z/_]", name) != 1 || strchr(name, '/') == NULL)
			continue;
		if (find(name) == NULL)
			fprintf(stderr,
				"# docs/protocol.md's table names %s, not in the registry\n", name);
		CHECK(find(name) != NULL);
	}
	free(man);
	free(doc);
}

static void test_tools_list_is_the_registry(void)
{
	struct tp_policy_set *set = tp_policy_set_new(NULL);
	CHECK(set != NULL);
	if (set == NULL)
		return;
	const char *presets[] = { "standard", "strict", "data" };
	for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
		const struct tp_policy *p = tp_policy_set_find(set, presets[k]);
		CHECK(p != NULL);
		if (p == NULL)
			continue;
		json_t *r = tp_mcp_tools_list(p, 0);
		json_t *tools = json_object_get(r, "tools");
		size_t i;
		json_t *t;
		int files = 0;
		CHECK(json_array_size(tools) >= 3);
		json_array_foreach(tools, i, t)
		{
			const char *name = json_string_value(json_object_get(t, "name"));
			struct tp_mcp_tool found;
			CHECK(tp_mcp_tool_find(p, name, &found) == 0);
			CHECK(strcmp(found.name, name) == 0);
			files += found.kind == TP_MCP_TOOL_FILES;
			if (found.kind == TP_MCP_TOOL_RUN)
				CHECK(found.lang != NULL && strcmp(found.lang->tool, name) == 0);
		}
		/* write_file, read_file, list_files: all or none, with the workspace. */
		CHECK_EQ_INT(files, p->session.workspace_bytes > 0 ? 3 : 0);
		struct tp_mcp_tool x;
		CHECK_EQ_INT(tp_mcp_tool_find(p, "write_file", &x),
			     p->session.workspace_bytes > 0 ? 0 : -1);
		CHECK_EQ_INT(tp_mcp_tool_find(p, "run_ruby", &x), -1);
		CHECK_EQ_INT(tp_mcp_tool_find(p, NULL, &x), -1);
		json_decref(r);
	}
	tp_policy_set_free(set);
}

int main(void)
{
	test_docs_list_every_method();
	test_tools_list_is_the_registry();
	return tp_test_done("test_methods");
}
