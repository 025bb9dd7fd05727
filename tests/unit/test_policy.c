/*
 * test_policy.c — policy files: the presets' values, every kind of validation
 * message (exactly, with its line and column), extends and its cycles, the
 * wire round trip, and path containment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "regex_cost.h"
#include "tap.h"

static char msg[TP_ERR_MSG_MAX];

/* Parses text; NULL with the message in msg. */
static struct tp_policy *parse(const char *text)
{
	struct tp_err err = { 0 };
	struct tp_policy *p = tp_policy_parse(text, strlen(text), "p.json", &err);
	snprintf(msg, sizeof msg, "%s", p ? "" : err.msg);
	return p;
}

static void refused(const char *text, const char *want)
{
	struct tp_policy *p = parse(text);
	CHECK(p == NULL);
	CHECK_EQ_STR(msg, want);
	tp_policy_free(p);
}

static void accepted(const char *text)
{
	struct tp_policy *p = parse(text);
	CHECK(p != NULL);
	if (p == NULL)
		fprintf(stderr, "# refused: %s\n", msg);
	tp_policy_free(p);
}

static void test_presets(void)
{
	struct tp_limits std;
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	CHECK(s != NULL);
	if (s == NULL)
		return;
	tp_limits_default(&std);
	CHECK_EQ_INT(tp_policy_set_count(s), 5);
	/* The catalog the help texts list: every preset, in the set's order. */
	size_t n = 0;
	for (; tp_policy_preset(n) != NULL; n++)
		CHECK(tp_policy_set_at(s, n) == tp_policy_set_find(s, tp_policy_preset(n)));
	CHECK_EQ_INT(n, 5);
	CHECK(tp_policy_preset(n + 1) == NULL);
	CHECK_EQ_STR(tp_policy_preset(0), TP_POLICY_DEFAULT);
	const struct tp_policy *st = tp_policy_set_find(s, "strict");
	const struct tp_policy *pe = tp_policy_set_find(s, "permissive");
	const struct tp_policy *ko = tp_policy_set_find(s, "kernel-only");
	const struct tp_policy *sd = tp_policy_set_find(s, "standard");
	CHECK(memcmp(&sd->limits, &std, sizeof std) == 0);
	CHECK_EQ_INT(st->limits.memory_bytes, 33554432);
	CHECK_EQ_INT(st->limits.instructions, 10000000);
	CHECK_EQ_INT(st->limits.cpu_ms, 2000);
	CHECK_EQ_INT(st->limits.wall_ms, 5000);
	CHECK_EQ_INT(st->limits.output_bytes, 65536);
	CHECK_EQ_INT(st->limits.result_bytes, 65536);
	CHECK_EQ_INT(st->limits.result_depth, 32);
	CHECK_EQ_INT(st->rate.per_minute, 600);
	CHECK_EQ_INT(st->session.lifetime_ms, 900000);
	CHECK_EQ_INT(sd->session.lifetime_ms, 3600000);
	CHECK_EQ_INT(pe->session.lifetime_ms, 86400000);
	CHECK_EQ_INT(ko->session.lifetime_ms, 3600000);
	/* Workspaces by default (issue 23): strict has none. */
	CHECK_EQ_INT(pe->session.workspace_bytes, 67108864);
	CHECK_EQ_INT(sd->session.workspace_bytes, 16777216);
	CHECK_EQ_INT(st->session.workspace_bytes, 0);
	CHECK_EQ_INT(ko->session.workspace_bytes, 16777216);
	CHECK_EQ_INT(pe->limits.memory_bytes, 536870912);
	CHECK_EQ_INT(pe->limits.cpu_ms, 60000);
	CHECK_EQ_INT(pe->limits.wall_ms, 120000);
	CHECK_EQ_INT(pe->limits.result_depth, 128);
	CHECK(memcmp(&ko->limits, &std, sizeof std) == 0);
	CHECK_EQ_INT(ko->language_layer, 0);
	CHECK_EQ_INT(sd->language_layer, 1);
	/* Inherited lists: strict wrote its modules, kernel-only none. */
	CHECK_EQ_INT(ko->py_modules.n, sd->py_modules.n);
	CHECK(st->py_modules.n < sd->py_modules.n);
	CHECK_EQ_STR(st->extends, "standard");
	/* data: standard's modules and numpy, pandas, matplotlib; bigger ceilings. */
	const struct tp_policy *da = tp_policy_set_find(s, "data");
	CHECK(da != NULL);
	if (da != NULL) {
		CHECK_EQ_STR(da->extends, "standard");
		CHECK_EQ_INT(da->py_modules.n, sd->py_modules.n + 3);
		CHECK_EQ_INT(da->limits.memory_bytes, 536870912);
		CHECK_EQ_INT(da->limits.cpu_ms, 30000);
		CHECK_EQ_INT(da->limits.wall_ms, 60000);
		CHECK_EQ_INT(da->limits.result_depth, std.result_depth);
		CHECK_EQ_INT(da->language_layer, 1);
	}
	tp_policy_set_free(s);
}

static void test_messages(void)
{
	refused("{\"name\": \"x\", \"colour\": 1}",
		"p.json:1:15: unknown key 'colour' (known: name, description, extends, languages, "
		"limits, language_layer, lua, python, filesystem, tools, session, isolation, rate, "
		"redact)");
	refused(
	    "{\"name\": \"x\",\n \"limits\": {\"cpu\": 1}}",
	    "p.json:2:13: limits: unknown key 'cpu' (known: memory_bytes, instructions, cpu_ms, "
	    "wall_ms, output_bytes, result_bytes, result_depth, tool_calls)");
	refused("{\"name\": \"x\", \"limits\": {\"tool_calls\": 0}}",
		"p.json:1:26: limits.tool_calls: 0 is out of range (1 .. 100000)");
	refused("{\"name\": \"x\", \"limits\": []}",
		"p.json:1:15: limits: must be an object, not a list");
	refused("{\"name\": \"x\", \"language_layer\": 1}",
		"p.json:1:15: language_layer: must be a boolean, not an integer");
	refused("{\"name\": 7}", "p.json:1:2: name: must be a string, not an integer");
	refused("{\"name\": \"Bad Name\"}",
		"p.json:1:2: name: 'Bad Name' is not a name: 1 to 32 of a-z, 0-9, '-' and '_', "
		"starting with a letter or digit");
	refused("{\"description\": \"d\"}", "p.json:1:1: a policy needs a \"name\"");
	refused("[1]", "p.json:1:1: a policy must be a JSON object, not a list");
	refused("{\"name\": \"x\",,}",
		"p.json:1:14: not valid JSON: string or '}' expected near ','");
	refused("{\"name\": \"x\", \"name\": \"y\"}",
		"p.json:1:20: not valid JSON: duplicate object key near '\"name\"'");
	/* Ranges, at their edges. */
	accepted("{\"name\": \"x\", \"limits\": {\"cpu_ms\": 600000, \"wall_ms\": 3600000}}");
	refused("{\"name\": \"x\", \"limits\": {\"cpu_ms\": 600001}}",
		"p.json:1:26: limits.cpu_ms: 600001 is out of range (1 .. 600000)");
	refused("{\"name\": \"x\", \"limits\": {\"cpu_ms\": 0}}",
		"p.json:1:26: limits.cpu_ms: 0 is out of range (1 .. 600000)");
	accepted("{\"name\": \"x\", \"session\": {\"max_sessions\": 100000}}");
	refused("{\"name\": \"x\", \"session\": {\"max_sessions\": 100001}}",
		"p.json:1:27: session.max_sessions: 100001 is out of range (0 .. 100000)");
	refused("{\"name\": \"x\", \"limits\": {\"wall_ms\": 3600001}}",
		"p.json:1:26: limits.wall_ms: 3600001 is out of range (1 .. 3600000)");
	accepted("{\"name\": \"x\", \"limits\": {\"instructions\": 0, \"result_depth\": 200}}");
	refused("{\"name\": \"x\", \"limits\": {\"instructions\": 999}}",
		"p.json:1:26: limits.instructions: 999 is out of range (0 for none, or 1000 .. "
		"1000000000000)");
	refused("{\"name\": \"x\", \"limits\": {\"result_depth\": 201}}",
		"p.json:1:26: limits.result_depth: 201 is out of range (1 .. 200)");
	accepted("{\"name\": \"x\", \"session\": {\"lifetime_ms\": 604800000}}");
	refused("{\"name\": \"x\", \"session\": {\"lifetime_ms\": 999}}",
		"p.json:1:27: session.lifetime_ms: 999 is out of range (1000 .. 604800000)");
	refused("{\"name\": \"x\", \"session\": {\"lifetime\": 1000}}",
		"p.json:1:27: session: unknown key 'lifetime' (known: max_sessions, idle_ms, "
		"max_execs, "
		"memory_bytes, lifetime_ms, workspace_bytes)");
	refused(
	    "{\"name\": \"x\", \"session\": {\"workspace_bytes\": 1073741825}}",
	    "p.json:1:27: session.workspace_bytes: 1073741825 is out of range (0 .. 1073741824)");
	refused(
	    "{\"name\": \"x\", \"limits\": {\"memory_bytes\": 1.5}}",
	    "p.json:1:26: limits.memory_bytes: must be an integer, not a number with a fraction");
	/* Catalogs: the element is placed. */
	refused("{\"name\": \"x\", \"python\": {\"modules\": [\"math\", \"os\"]}}",
		"p.json:1:46: python.modules[1]: module 'os' cannot be preloaded: it is not one "
		"tidepool can offer inside its language layer (`tidepool policy show permissive` "
		"lists them all)");
	refused(
	    "{\"name\": \"x\", \"lua\": {\"functions\": [\"os.execute\"]}}",
	    "p.json:1:37: lua.functions[0]: 'os.execute' is not a Lua function tidepool offers");
	refused("{\"name\": \"x\", \"python\": {\"modules\": [\"math\", \"math\"]}}",
		"p.json:1:46: python.modules[1]: 'math' is listed twice");
	refused("{\"name\": \"x\", \"languages\": [\"cobol\"]}",
		"p.json:1:29: languages[0]: unknown language 'cobol' (lua or python)");
	refused(
	    "{\"name\": \"x\", \"isolation\": \"vm\"}",
	    "p.json:1:15: isolation: 'vm' is not an isolation tidepool has: \"process\" (a fresh "
	    "process for every exec) or \"state\" (Lua: a fresh Lua state for every exec, in a "
	    "worker that serves several)");
	refused("{\"name\": \"x\", \"tools\": [\"a b\"]}",
		"p.json:1:25: tools[0]: 'a b' is not a tool name: 1 to 64 of A-Z, a-z, 0-9, '_', "
		"'-', '.'");
	refused(
	    "{\"name\": \"x\", \"redact\": {\"strings\": [\"abc\"]}}",
	    "p.json:1:38: redact.strings[0]: a string to redact needs at least 4 bytes (shorter "
	    "ones would mangle ordinary output)");
	refused("{\"name\": \"x\", \"redact\": {\"patterns\": [\"a*\"]}}",
		"p.json:1:39: redact.patterns[0]: 'a*' matches the empty string");
	refused("{\"name\": \"x\", \"redact\": {\"env\": [\"1X\"]}}",
		"p.json:1:34: redact.env[0]: '1X' is not an environment variable name");
	/* Paths. */
	refused("{\"name\": \"x\", \"filesystem\": {\"read\": [\"tmp\"]}}",
		"p.json:1:39: filesystem.read[0]: 'tmp' is relative: grants take absolute paths");
	refused("{\"name\": \"x\", \"filesystem\": {\"read\": [\"/tmp/../etc\"]}}",
		"p.json:1:39: filesystem.read[0]: '/tmp/../etc' has a '.' or '..' component");
	refused("{\"name\": \"x\", \"filesystem\": {\"read\": [\"/tmp/\"]}}",
		"p.json:1:39: filesystem.read[0]: '/tmp/' is not normalized (a double or trailing "
		"'/')");
	refused("{\"name\": \"x\", \"filesystem\": {\"read\": [\"/proc/self\"]}}",
		"p.json:1:39: filesystem.read[0]: '/proc/self' is in /proc: the kernel's own "
		"filesystems cannot be granted");
	refused("{\"name\": \"x\", \"filesystem\": {\"read\": [\"/no/such/tidepool\"]}}",
		"p.json:1:39: filesystem.read[0]: '/no/such/tidepool': No such file or directory");
	refused("{\"name\": \"x\", \"extends\": \"x\"}", "p.json:1:1: policy 'x' extends itself");
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_extends(void)
{
	char dir[] = "/tmp/tp-test-policy-XXXXXX", path[256], link[256], want[1400];
	struct tp_err err = { 0 };
	CHECK(mkdtemp(dir) != NULL);
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	write_file(dir, "a.json", "{\"name\": \"a\", \"extends\": \"b\"}");
	write_file(dir, "b.json", "{\"name\": \"b\", \"extends\": \"a\"}");
	snprintf(path, sizeof path, "%s/a.json", dir);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(want, sizeof want, "%s/b.json:1:15: extends: 'extends' makes a cycle: a -> b -> a",
		 dir);
	CHECK_EQ_STR(err.msg, want);
	/* A child overrides one limit and inherits the rest; its lists replace whole. */
	write_file(dir, "c.json",
		   "{\"name\": \"c\", \"extends\": \"strict\", \"limits\": {\"cpu_ms\": 100},"
		   " \"python\": {\"modules\": [\"math\"]}}");
	snprintf(path, sizeof path, "%s/c.json", dir);
	tp_err_clear(&err);
	const struct tp_policy *c = tp_policy_set_load_file(s, path, &err);
	CHECK(c != NULL);
	if (c != NULL) {
		CHECK_EQ_INT(c->limits.cpu_ms, 100);
		CHECK_EQ_INT(c->limits.instructions, 10000000);
		CHECK_EQ_INT(c->py_modules.n, 1);
		CHECK_EQ_INT(c->rate.per_minute, 600);
		/* The wire form parses back to the same policy. */
		size_t len;
		char *w = tp_policy_wire(c, &len);
		struct tp_policy *back = tp_policy_from_wire(w, len, &err);
		json_t *x = tp_policy_to_json(c, 0), *y = back ? tp_policy_to_json(back, 0) : NULL;
		CHECK(back != NULL && json_equal(x, y));
		json_decref(x);
		json_decref(y);
		tp_policy_free(back);
		free(w);
	}
	/* Loading it again, or another file of that name, is refused. */
	tp_err_clear(&err);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(want, sizeof want, "%s: a policy named 'c' is already loaded (from %s)", path,
		 path);
	CHECK_EQ_STR(err.msg, want);
	write_file(dir, "d.json", "{\"name\": \"d\", \"extends\": \"nowhere\"}");
	snprintf(path, sizeof path, "%s/d.json", dir);
	tp_err_clear(&err);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(
	    want, sizeof want,
	    "%s:1:15: extends: extends 'nowhere', which is neither a loaded policy, a built-in "
	    "preset nor a file nowhere.json beside this one",
	    path);
	CHECK_EQ_STR(err.msg, want);
	/* A symlinked grant names its target. */
	snprintf(link, sizeof link, "%s/ln", dir);
	CHECK(symlink("/tmp", link) == 0);
	char text[1024];
	snprintf(text, sizeof text, "{\"name\": \"e\", \"filesystem\": {\"read\": [\"%s\"]}}",
		 link);
	struct tp_policy *e = parse(text);
	CHECK(e == NULL);
	snprintf(want, sizeof want,
		 "p.json:1:39: filesystem.read[0]: '%s' leads through a symlink to '/tmp': grant "
		 "that path",
		 link);
	CHECK_EQ_STR(msg, want);
	tp_policy_set_free(s);
	unlink(link);
	for (const char *n = "a\0b\0c\0d\0"; *n; n += 2) {
		snprintf(path, sizeof path, "%s/%s.json", dir, n);
		unlink(path);
	}
	rmdir(dir);
}

/* Every error of a text, in its order; err keeps the first found. */
static void test_report(void)
{
	static struct tp_policy_report r;
	struct tp_err err = { 0 };
	const char *text = "{\"python\": {\"modules\": [\"os\", \"math\", \"sys\", \"os\"]},\n"
			   " \"name\": \"x\",\n"
			   " \"limits\": {\"cpu_ms\": 0, \"cpu\": 1, \"wall_ms\": 5},\n"
			   " \"colour\": 1, \"languages\": [\"lua\", \"cobol\"]}";
	struct tp_policy *p = tp_policy_parse_report(text, strlen(text), "p.json", &r, &err);
	CHECK(p == NULL);
	CHECK_EQ_INT(r.n, 6);
	CHECK_EQ_INT(r.more, 0);
	CHECK_EQ_STR(r.e[0].msg, "p.json:1:25: python.modules[0]: module 'os' cannot be preloaded: "
				 "it is not one tidepool can offer inside its language layer "
				 "(`tidepool policy show permissive` lists them all)");
	CHECK_EQ_STR(r.e[1].msg, "p.json:1:46: python.modules[3]: module 'os' cannot be preloaded: "
				 "it is not one tidepool can offer inside its language layer "
				 "(`tidepool policy show permissive` lists them all)");
	CHECK_EQ_STR(r.e[2].msg, "p.json:3:13: limits.cpu_ms: 0 is out of range (1 .. 600000)");
	CHECK(strncmp(r.e[3].msg, "p.json:3:26: limits: unknown key 'cpu' (known: ", 47) == 0);
	CHECK(strncmp(r.e[4].msg, "p.json:4:2: unknown key 'colour' (known: ", 41) == 0);
	CHECK_EQ_STR(r.e[5].msg,
		     "p.json:4:36: languages[1]: unknown language 'cobol' (lua or python)");
	CHECK_EQ_INT(r.e[2].line, 3);
	CHECK_EQ_INT(r.e[2].col, 13);
	/* err: the first found, as a caller that wants one error always had it. */
	CHECK(strncmp(err.msg, "p.json:4:2: unknown key 'colour'", 32) == 0);
	tp_policy_free(p);
}

static void test_report_cap(void)
{
	static struct tp_policy_report r;
	struct tp_err err = { 0 };
	char text[8192] = "{\"name\": \"x\"";
	size_t w = strlen(text);
	for (int i = 0; i < 150; i++)
		w += (size_t)snprintf(text + w, sizeof text - w, ", \"k%d\": 1", i);
	snprintf(text + w, sizeof text - w, "}");
	CHECK(tp_policy_parse_report(text, strlen(text), "p.json", &r, &err) == NULL);
	CHECK_EQ_INT(r.n, TP_POLICY_MAX_ERRORS);
	CHECK_EQ_INT(r.more, 50);
	CHECK(strncmp(r.e[0].msg, "p.json:1:15: unknown key 'k0' ", 30) == 0);
	CHECK(strncmp(r.e[99].msg, "p.json:1:", 9) == 0 && strstr(r.e[99].msg, "'k99'") != NULL);
	/* A report already full only counts; a message it holds is not a new error. */
	CHECK(tp_policy_parse_report(text, strlen(text), "p.json", &r, &err) == NULL);
	CHECK_EQ_INT(r.n, TP_POLICY_MAX_ERRORS);
	CHECK_EQ_INT(r.more, 50 + 149);
	/* The rest of a file is read past its errors: a good key still counts. */
	struct tp_policy_report r2 = { 0 };
	const char *t2 = "{\"name\": \"x\", \"limits\": {\"cpu_ms\": \"a\", \"wall_ms\": -1}}";
	CHECK(tp_policy_parse_report(t2, strlen(t2), "p.json", &r2, NULL) == NULL);
	CHECK_EQ_INT(r2.n, 2);
	CHECK_EQ_STR(r2.e[0].msg, "p.json:1:26: limits.cpu_ms: must be an integer, not a string");
	CHECK_EQ_STR(r2.e[1].msg, "p.json:1:41: limits.wall_ms: -1 is out of range (1 .. 3600000)");
}

/* A file named like a preset: checked on its own, refused beside the preset. */
static void test_preset_files(void)
{
	char dir[] = "/tmp/tp-test-policy-XXXXXX", path[256], want[1024];
	static struct tp_policy_report r;
	struct tp_err err = { 0 };
	CHECK(mkdtemp(dir) != NULL);
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	extern const char *const tp_preset_texts[];
	write_file(dir, "strict.json", tp_preset_texts[1]);
	snprintf(path, sizeof path, "%s/strict.json", dir);
	struct tp_policy *p = tp_policy_set_check_file(s, path, &err);
	CHECK(p != NULL);
	CHECK(p && tp_policy_equal(p, tp_policy_set_find(s, "strict")));
	CHECK(p && !tp_policy_equal(p, tp_policy_set_find(s, "standard")));
	CHECK_EQ_INT(tp_policy_set_count(s), 5);
	tp_policy_free(p);
	tp_policy_set_report(s, &r);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(want, sizeof want,
		 "%s: a policy named 'strict' is already loaded (from built-in): this file is a "
		 "copy of the preset, which is always there: leave the file out and name the "
		 "preset",
		 path);
	CHECK_EQ_STR(err.msg, want);
	CHECK_EQ_INT(r.n, 1);
	CHECK_EQ_STR(r.e[0].msg, want);
	/* Another policy under the preset's name: valid on its own, refused beside it. */
	write_file(
	    dir, "strict.json",
	    "{\"name\": \"strict\", \"extends\": \"standard\", \"limits\": {\"cpu_ms\": 100}}");
	p = tp_policy_set_check_file(s, path, &err);
	CHECK(p != NULL && p->limits.cpu_ms == 100);
	CHECK(p && !tp_policy_equal(p, tp_policy_set_find(s, "strict")));
	tp_policy_free(p);
	tp_err_clear(&err);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(want, sizeof want,
		 "%s: a policy named 'strict' is already loaded (from built-in): a preset's name "
		 "always means the preset: rename this policy (it may extend 'strict')",
		 path);
	CHECK_EQ_STR(err.msg, want);
	CHECK_EQ_INT(r.n, 2);
	tp_policy_set_report(s, NULL);
	tp_policy_set_free(s);
	unlink(path);
	rmdir(dir);
}

/* redact.env: the load places an unset variable; tp_policy_check_env(), the
 * host's check at start, says the same of it. */
static void test_env(void)
{
	char dir[] = "/tmp/tp-test-policy-XXXXXX", path[256], want[512];
	struct tp_err err = { 0 };
	CHECK(mkdtemp(dir) != NULL);
	unsetenv("TP_TEST_UNSET_VAR");
	setenv("TP_TEST_SET_VAR", "s3cret-value", 1);
	write_file(dir, "e.json",
		   "{\"name\": \"e\",\n \"redact\": {\"env\": [\"TP_TEST_SET_VAR\", "
		   "\"TP_TEST_UNSET_VAR\"]}}");
	snprintf(path, sizeof path, "%s/e.json", dir);
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	CHECK(tp_policy_set_load_file(s, path, &err) == NULL);
	snprintf(want, sizeof want,
		 "%s:2:40: redact.env[1]: TP_TEST_UNSET_VAR is not set, so its value could not be "
		 "redacted",
		 path);
	CHECK_EQ_STR(err.msg, want);
	setenv("TP_TEST_UNSET_VAR", "", 1); /* set, if empty: nothing to redact, no error */
	tp_err_clear(&err);
	const struct tp_policy *p = tp_policy_set_load_file(s, path, &err);
	CHECK(p != NULL);
	CHECK(p && tp_policy_check_env(p, &err) == 0);
	unsetenv("TP_TEST_UNSET_VAR");
	CHECK(p && tp_policy_check_env(p, &err) == -1);
	CHECK_EQ_STR(err.msg, "policy 'e': redact.env[1]: TP_TEST_UNSET_VAR is not set, so its "
			      "value could not be redacted");
	tp_policy_set_free(s);
	unsetenv("TP_TEST_SET_VAR");
	unlink(path);
	rmdir(dir);
}

/* A text checked against the set (sandbox/policy/check): resolved, never
 * added, placed like a file's errors, and judged without a look at the host. */
static void test_check_text(void)
{
	struct tp_err err = { 0 };
	struct tp_policy_report *r = calloc(1, sizeof *r);
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	size_t n = tp_policy_set_count(s);
	const char *good = "{\"name\": \"t\", \"extends\": \"strict\",\n"
			   " \"filesystem\": {\"read\": [\"/no/such/dir\"]},\n"
			   " \"redact\": {\"env\": [\"TP_TEST_UNSET_VAR\"]}}";
	unsetenv("TP_TEST_UNSET_VAR");
	struct tp_policy *p = tp_policy_set_check_text(s, good, strlen(good), "t", r, &err);
	CHECK(p != NULL && r->n == 0);
	CHECK(p && strcmp(p->source, "t") == 0 && p->limits.instructions == 10000000);
	CHECK(tp_policy_set_count(s) == n && tp_policy_set_find(s, "t") == NULL);
	tp_policy_free(p);
	/* The same as a file: its grant is looked up, its variable looked for. */
	char dir[] = "/tmp/tp-test-policy-XXXXXX", path[256];
	CHECK(mkdtemp(dir) != NULL);
	write_file(dir, "t.json", good);
	snprintf(path, sizeof path, "%s/t.json", dir);
	tp_err_clear(&err);
	p = tp_policy_set_check_file(s, path, &err);
	CHECK(p == NULL && strstr(err.msg, "filesystem.read[0]: '/no/such/dir'") != NULL);
	unlink(path);
	rmdir(dir);
	/* A text with errors of its own is not resolved further: no word of nosuch. */
	const char *bad = "{\"name\": \"t\",\n \"extends\": \"nosuch\", \"colour\": 1}";
	tp_err_clear(&err);
	CHECK(tp_policy_set_check_text(s, bad, strlen(bad), "t", r, &err) == NULL);
	CHECK(r->n == 1 && r->e[0].line == 2 && r->e[0].col == 23);
	CHECK_EQ_STR(r->e[0].msg,
		     "t:2:23: unknown key 'colour' (known: name, description, extends, "
		     "languages, limits, language_layer, lua, python, filesystem, tools, "
		     "session, isolation, rate, redact)");
	const char *orphan = "{\"name\": \"t\", \"extends\": \"nosuch\"}";
	memset(r, 0, sizeof *r);
	tp_err_clear(&err);
	CHECK(tp_policy_set_check_text(s, orphan, strlen(orphan), "t", r, &err) == NULL);
	CHECK_EQ_STR(err.msg, "t:1:15: extends: extends 'nosuch', which is neither a loaded policy "
			      "nor a built-in preset");
	CHECK(r->n == 1 && tp_policy_set_count(s) == n);
	tp_policy_set_free(s);
	free(r);
}

/* A directory: every bad file's errors, the good ones loaded; err the first. */
static void test_dir_all(void)
{
	char dir[] = "/tmp/tp-test-policy-XXXXXX", want[1024];
	static struct tp_policy_report r;
	struct tp_err err = { 0 };
	CHECK(mkdtemp(dir) != NULL);
	write_file(dir, "a.json", "{\"name\": \"a\", \"rate\": {\"per_minute\": -1}}");
	write_file(dir, "b.json", "{\"name\": \"b\", \"extends\": \"a\"}");
	write_file(dir, "c.json", "{\"name\": \"c\"}");
	write_file(dir, "d.json", "{\"name\": \"d\", \"tools\": [\"a b\", \"ok\", \"c d\"]}");
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	tp_policy_set_report(s, &r);
	CHECK_EQ_INT(tp_policy_set_load_dir(s, dir, &err), -1);
	CHECK(tp_policy_set_find(s, "c") != NULL);
	CHECK(tp_policy_set_find(s, "a") == NULL && tp_policy_set_find(s, "b") == NULL);
	/* b's load fails on a's error, which is told once. */
	CHECK_EQ_INT(r.n, 3);
	snprintf(want, sizeof want,
		 "%s/a.json:1:24: rate.per_minute: -1 is out of range (0 .. 1000000)", dir);
	CHECK_EQ_STR(r.e[0].msg, want);
	CHECK_EQ_STR(err.msg, want);
	snprintf(want, sizeof want,
		 "%s/d.json:1:25: tools[0]: 'a b' is not a tool name: 1 to 64 of A-Z, a-z, 0-9, "
		 "'_', '-', '.'",
		 dir);
	CHECK_EQ_STR(r.e[1].msg, want);
	CHECK(strncmp(r.e[2].msg, want, strlen(dir) + 10) == 0 && strstr(r.e[2].msg, "'c d'"));
	tp_policy_set_free(s);
	for (const char *n = "a\0b\0c\0d\0"; *n; n += 2) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s.json", dir, n);
		unlink(path);
	}
	rmdir(dir);
}

/* A pattern's measure: its cost, and whether it repeats what can match empty. */
static size_t re_cost(const char *ere)
{
	struct tp_regex_measure m;
	tp_regex_measure(ere, 1000, &m);
	return m.cost;
}

static int re_repeats_empty(const char *ere)
{
	struct tp_regex_measure m;
	tp_regex_measure(ere, 1000, &m);
	return m.repeats_empty;
}

/* Patterns are measured before they are compiled: glibc copies what a
 * repetition repeats, and a few bytes could take gigabytes or minutes. */
static void test_regex_cost(void)
{
	CHECK_EQ_INT(re_cost("abc"), 3);
	CHECK_EQ_INT(re_cost("a+"), 3);
	CHECK_EQ_INT(re_cost("a{1,50}"), 51);
	CHECK_EQ_INT(re_cost("a{,50}"), 51);
	CHECK_EQ_INT(re_cost("(ab){3}"), 10);
	CHECK_EQ_INT(re_cost("a|b*"), 4);
	CHECK_EQ_INT(re_cost("[]{}+*]x"), 2); /* a bracket is one atom */
	CHECK_EQ_INT(re_cost("[[:alpha:]]{2}"), 3);
	CHECK_EQ_INT(re_cost("a\\{9}"), 4); /* an escaped brace is itself */
	CHECK_EQ_INT(re_cost("a{x}"), 4);   /* not a bound: four atoms */
	CHECK_EQ_INT(re_cost("a{1,999}"), 1000);
	CHECK_EQ_INT(re_cost("a{1,1000}"), 1001);
	CHECK_EQ_INT(re_cost("s+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++k"),
		     1001);
	CHECK_EQ_INT(re_cost("((a{1,16}){1,16}){1,16}"), 1001);
	CHECK_EQ_INT(re_cost("a{99999999999999999999}"), 1001);
	CHECK_EQ_INT(re_cost("((((((((((((((((((((((((((((((((((a"), 1001); /* deep */
	CHECK_EQ_INT(re_cost("sk-[A-Za-z0-9]{20,64}"), 68);
	/* What can match empty, repeated: each of these took seconds to minutes. */
	const char *empty[] = { "a**",       "a*+",     "a?{2}",      "(a?)+",
				"(|a)+",     "(a|)*",   "()*",        "(^)*",
				"($a|\\b)+", "(a*b*)+", "(()|){1,3}", "a{0,2}{2}",
				"$a+*+",     "(a+)*+",  "(a{,3})+",   NULL };
	for (int i = 0; empty[i] != NULL; i++)
		CHECK(re_repeats_empty(empty[i]));
	const char *fine[] = { "a+*",      "a++",     "(ab?)+",  "(a|b)*",
			       "(^a|b$)+", "($a)+",   "a*b*",    "([a-z]+\\.)*[a-z]+",
			       "(a|b?c)+", "x{0,3}y", "(a+|b)*", NULL };
	for (int i = 0; fine[i] != NULL; i++)
		CHECK(!re_repeats_empty(fine[i]));
	refused(
	    "{\"name\": \"x\", \"redact\": {\"patterns\": [\"(a{1,100}){1,100}\"]}}",
	    "p.json:1:39: redact.patterns[0]: '(a{1,100}){1,100}' is too costly to compile: its "
	    "repetitions copy what they repeat ('a+' twice, 'a{1,50}' fifty times, a "
	    "repetition of one multiplies), past 1000");
	refused("{\"name\": \"x\", \"redact\": {\"patterns\": [\"(|$)+\"]}}",
		"p.json:1:39: redact.patterns[0]: '(|$)+' repeats what can match the empty string "
		"('a**', '(a?)+', '(|a){2}', '(^)*'): it means the same without that repetition, "
		"and compiling it can take exponential time");
	accepted("{\"name\": \"x\", \"redact\": {\"patterns\": [\"a{1,900}\", \"b{1,900}\"]}}");
	refused("{\"name\": \"x\", \"redact\": {\"patterns\": [\"a{1,900}\", \"b{1,900}\", "
		"\"c{1,900}\"]}}",
		"p.json:1:63: redact.patterns[2]: the patterns up to this one are too costly to "
		"compile together: past 2000");
}

static void test_within(void)
{
	char a[] = "/data", b[] = "/";
	char *va[] = { a }, *vb[] = { b };
	struct tp_strv data = { va, 1 }, root = { vb, 1 };
	CHECK(tp_policy_path_within(&data, "/data"));
	CHECK(tp_policy_path_within(&data, "/data/x/y"));
	CHECK(!tp_policy_path_within(&data, "/database"));
	CHECK(!tp_policy_path_within(&data, "/dat"));
	CHECK(tp_policy_path_within(&root, "/etc/passwd"));
}

/* ---- the schema table --------------------------------------------------------- */

/* A text that writes row k as val (JSON text); *col is the column of k's key. */
static void row_text(const struct tp_policy_key *k, const char *val, char *text, size_t size,
		     int *col)
{
	int n;
	if (strcmp(k->key, "name") == 0 && k->section == NULL)
		n = snprintf(text, size, "{\"name\": ");
	else if (k->section == NULL)
		n = snprintf(text, size, "{\"name\": \"p\", ");
	else
		n = snprintf(text, size, "{\"name\": \"p\", \"%s\": {", k->section);
	*col = n + 1;
	if (strcmp(k->key, "name") == 0 && k->section == NULL) {
		*col = 2;
		snprintf(text + n, size - (size_t)n, "%s}", val);
		return;
	}
	snprintf(text + n, size - (size_t)n, "\"%s\": %s}%s", k->key, val, k->section ? "}" : "");
}

/* "SEC.KEY" or "KEY". */
static void row_path(const struct tp_policy_key *k, char *out, size_t size)
{
	snprintf(out, size, "%s%s%s", k->section ? k->section : "", k->section ? "." : "", k->key);
}

/* The value of row k in p's JSON (borrowed), NULL when it is not there. */
static json_t *row_in_json(json_t *j, const struct tp_policy_key *k)
{
	json_t *o = k->section ? json_object_get(j, k->section) : j;
	return o ? json_object_get(o, k->key) : NULL;
}

/* Row k written as val is taken, and its field and its JSON give want back. */
static void row_takes(const struct tp_policy_key *k, const char *val, uint64_t want)
{
	char text[2048];
	int col;
	row_text(k, val, text, sizeof text, &col);
	struct tp_policy *p = parse(text);
	CHECK(p != NULL);
	if (p == NULL) {
		fprintf(stderr, "# %s refused: %s\n", text, msg);
		return;
	}
	CHECK_EQ_INT(tp_policy_key_u64(p, k), want);
	json_t *j = tp_policy_to_json(p, 1), *v = row_in_json(j, k);
	CHECK(v != NULL);
	if (k->type == TP_PT_U64)
		CHECK(json_is_integer(v) && (uint64_t)json_integer_value(v) == want);
	else
		CHECK(json_is_boolean(v) && (uint64_t)json_is_true(v) == want);
	json_decref(j);
	tp_policy_free(p);
}

/* Row k written as val is refused with "p.json:1:COL: PATH: why". */
static void row_refuses(const struct tp_policy_key *k, const char *val, const char *why)
{
	char text[2048], path[128], want[TP_ERR_MSG_MAX];
	int col;
	row_text(k, val, text, sizeof text, &col);
	row_path(k, path, sizeof path);
	snprintf(want, sizeof want, "p.json:1:%d: %s: %s", col, path, why);
	refused(text, want);
}

/* Every row: its value at lo and hi (or a value of its type) is taken and written
 * back by to_json, lo-1 and hi+1 refused with their exact messages; a row a
 * child does not write is its parent's, one it writes is the child's. */
static void test_schema(void)
{
	char val[1400], why[256];
	CHECK(tp_policy_nkeys > 0);
	struct tp_policy *base = parse("{\"name\": \"p\"}");
	CHECK(base != NULL);
	for (size_t i = 0; base != NULL && i < tp_policy_nkeys; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		/* A section's rows are contiguous: each top-level key is one place. */
		for (size_t j = 0; k->section && j + 1 < i; j++)
			if (tp_policy_keys[j].section &&
			    strcmp(tp_policy_keys[j].section, k->section) == 0)
				CHECK(tp_policy_keys[j + 1].section &&
				      strcmp(tp_policy_keys[j + 1].section, k->section) == 0);
		switch (k->type) {
		case TP_PT_U64: {
			/* Its default is within its range, and is what a policy starts from. */
			CHECK((k->def >= k->lo && k->def <= k->hi) ||
			      (k->def == 0 && (k->flags & TP_PK_ZERO_OK)));
			CHECK_EQ_INT(tp_policy_key_u64(base, k), k->def);
			const char *none =
			    (k->flags & TP_PK_ZERO_OK) && k->lo > 0 ? "0 for none, or " : "";
			snprintf(val, sizeof val, "%llu", (unsigned long long)k->lo);
			row_takes(k, val, k->lo);
			snprintf(val, sizeof val, "%llu", (unsigned long long)k->hi);
			row_takes(k, val, k->hi);
			snprintf(val, sizeof val, "%llu", (unsigned long long)k->hi + 1);
			snprintf(why, sizeof why, "%llu is out of range (%s%llu .. %llu)",
				 (unsigned long long)k->hi + 1, none, (unsigned long long)k->lo,
				 (unsigned long long)k->hi);
			row_refuses(k, val, why);
			snprintf(val, sizeof val, "%lld", (long long)k->lo - 1);
			if (k->lo == 1 && (k->flags & TP_PK_ZERO_OK)) {
				row_takes(k, val, 0); /* 0: none, so -1 is the one below */
				snprintf(val, sizeof val, "-1");
			}
			snprintf(why, sizeof why, "%s is out of range (%s%llu .. %llu)", val, none,
				 (unsigned long long)k->lo, (unsigned long long)k->hi);
			row_refuses(k, val, why);
			row_refuses(k, "1.5", "must be an integer, not a number with a fraction");
			row_refuses(k, "\"1\"", "must be an integer, not a string");
			break;
		}
		case TP_PT_BOOL:
			CHECK_EQ_INT(tp_policy_key_u64(base, k), k->def);
			row_takes(k, "true", 1);
			row_takes(k, "false", 0);
			row_refuses(k, "1", "must be a boolean, not an integer");
			break;
		case TP_PT_STR: {
			const char *ok = k->check == TP_PC_ISOLATION ? "process" : "abc";
			char text[2048];
			int col;
			snprintf(val, sizeof val, "\"%s\"", ok);
			row_text(k, val, text, sizeof text, &col);
			struct tp_policy *p = parse(text);
			CHECK(p != NULL);
			if (p != NULL) {
				CHECK_EQ_STR(*(char **)((char *)p + k->off), ok);
				json_t *j = tp_policy_to_json(p, 1), *v = row_in_json(j, k);
				CHECK((k->flags & TP_PK_NO_JSON)
					  ? v == NULL
					  : json_is_string(v) &&
						strcmp(json_string_value(v), ok) == 0);
				json_decref(j);
			}
			tp_policy_free(p);
			/* hi bytes are taken (where any string is), hi + 1 refused. */
			memset(val + 1, 'a', k->hi + 1);
			val[0] = '"';
			snprintf(val + k->hi + 2, 2, "\"");
			snprintf(why, sizeof why,
				 "must be a string of at most %llu bytes without NUL",
				 (unsigned long long)k->hi);
			row_refuses(k, val, why);
			if (k->check == TP_PC_NONE || k->check == TP_PC_NAME) {
				snprintf(val + k->hi + 1, 2, "\"");
				row_text(k, val, text, sizeof text, &col);
				p = parse(text);
				CHECK(p != NULL);
				CHECK(p == NULL || strlen(*(char **)((char *)p + k->off)) == k->hi);
				tp_policy_free(p);
			}
			row_refuses(k, "1", "must be a string, not an integer");
			break;
		}
		case TP_PT_STRV: {
			char text[2048];
			int col;
			row_text(k, "[]", text, sizeof text, &col);
			struct tp_policy *p = parse(text);
			CHECK(p != NULL);
			if (p != NULL) {
				json_t *j = tp_policy_to_json(p, 1), *v = row_in_json(j, k);
				CHECK(json_is_array(v) && json_array_size(v) == 0);
				json_decref(j);
				/* The wire leaves out only what never leaves the host. */
				j = tp_policy_to_json(p, 0);
				CHECK((row_in_json(j, k) == NULL) ==
				      ((k->flags & TP_PK_HOST) != 0));
				json_decref(j);
			}
			tp_policy_free(p);
			row_refuses(k, "{}", "must be a list of strings, not an object");
			break;
		}
		case TP_PT_LANGS: row_refuses(k, "[]", "must name at least one language"); break;
		}
	}
	tp_policy_free(base);
}

/* Every U64 and BOOL row: a child that writes it has its value, one that does not
 * its parent's (strict's), and every other row is strict's. */
static void test_schema_extends(void)
{
	char dir[] = "/tmp/tp-test-schema-XXXXXX", path[256], text[512];
	CHECK(mkdtemp(dir) != NULL);
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	const struct tp_policy *st = s ? tp_policy_set_find(s, "strict") : NULL;
	CHECK(st != NULL);
	snprintf(path, sizeof path, "%s/c.json", dir);
	for (size_t i = 0; st != NULL && i < tp_policy_nkeys; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		uint64_t v = tp_policy_key_u64(st, k) == k->hi ? k->lo : k->hi;
		if (k->type == TP_PT_BOOL)
			snprintf(text, sizeof text,
				 "{\"name\": \"c\", \"extends\": \"strict\", \"%s\": %s}", k->key,
				 v ? "true" : "false");
		else if (k->type == TP_PT_U64 && k->section)
			snprintf(
			    text, sizeof text,
			    "{\"name\": \"c\", \"extends\": \"strict\", \"%s\": {\"%s\": %llu}}",
			    k->section, k->key, (unsigned long long)v);
		else
			continue;
		write_file(dir, "c.json", text);
		struct tp_err err = { 0 };
		struct tp_policy *c = tp_policy_set_check_file(s, path, &err);
		CHECK(c != NULL);
		if (c == NULL) {
			fprintf(stderr, "# %s: %s\n", text, err.msg);
			continue;
		}
		for (size_t j = 0; j < tp_policy_nkeys; j++) {
			const struct tp_policy_key *o = &tp_policy_keys[j];
			if (o->type == TP_PT_U64 || o->type == TP_PT_BOOL)
				CHECK_EQ_INT(tp_policy_key_u64(c, o),
					     j == i ? v : tp_policy_key_u64(st, o));
		}
		tp_policy_free(c);
	}
	tp_policy_set_free(s);
	unlink(path);
	rmdir(dir);
}

/* v as policies/README.md writes a bound: "4 GiB", "16 MiB", "10^7", "600000". */
static void human(uint64_t v, char *out, size_t size)
{
	uint64_t p = 1000000;
	int e = 6;
	for (; p < v && p <= UINT64_MAX / 10; p *= 10)
		e++;
	if (v >= (1ull << 30) && v % (1ull << 30) == 0)
		snprintf(out, size, "%llu GiB", (unsigned long long)(v >> 30));
	else if (v >= (1ull << 20) && v % (1ull << 20) == 0)
		snprintf(out, size, "%llu MiB", (unsigned long long)(v >> 20));
	else if (p == v)
		snprintf(out, size, "10^%d", e);
	else
		snprintf(out, size, "%llu", (unsigned long long)v);
}

/* The table row of policies/README.md at line: its first cell's `key` into key,
 * its n-th cell (from 0) into cell. 0, or -1 when the line is no such row. */
static int md_row(const char *line, int n, char *key, size_t ksize, char *cell, size_t csize)
{
	if (strncmp(line, "| `", 3) != 0)
		return -1;
	const char *end = strchr(line + 3, '`');
	if (end == NULL)
		return -1;
	snprintf(key, ksize, "%.*s", (int)(end - line - 3), line + 3);
	const char *c = line;
	for (int i = 0; i < n && c != NULL; i++)
		c = strstr(c + 1, " | ");
	if (c == NULL)
		return -1;
	c += 3;
	const char *e = strstr(c, " |");
	snprintf(cell, csize, "%.*s", e ? (int)(e - c) : (int)strlen(c), c);
	return 0;
}

/* policies/README.md's key tables are the schema's: the format table names every
 * top-level key in order, a section's type cell its keys in order (with the range
 * of each that gives one), and the limits table every limit, its range and
 * standard's value. */
static void test_readme_keys(void)
{
	char path[512], line[2048], key[128], cell[1024], want[1024], lo[32], hi[32];
	const char *src = __FILE__, *slash = strrchr(src, '/');
	/* __FILE__ is tests/unit/test_policy.c, from where the tree's root is ../.. */
	snprintf(path, sizeof path, "%.*s%s../../policies/README.md",
		 slash ? (int)(slash - src + 1) : 0, src, slash ? "" : "tests/unit/");
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	struct tp_policy_set *s = tp_policy_set_new(NULL);
	const struct tp_policy *sd = s ? tp_policy_set_find(s, "standard") : NULL;
	size_t top = 0, lim = 0, ntop = 0;
	int where = 0; /* 1: the format table, 2: the limits table */
	for (size_t i = 0; i < tp_policy_nkeys; i++)
		ntop += i == 0 ||
			strcmp(tp_policy_keys[i].section ? tp_policy_keys[i].section
							 : tp_policy_keys[i].key,
			       tp_policy_keys[i - 1].section ? tp_policy_keys[i - 1].section
							     : tp_policy_keys[i - 1].key) != 0;
	while (sd != NULL && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "## The format") == 0)
			where = 1;
		else if (strcmp(line, "### Limits") == 0)
			where = 2;
		else if (strncmp(line, "#", 1) == 0)
			where = 0;
		if (where == 1 && md_row(line, 1, key, sizeof key, cell, sizeof cell) == 0) {
			/* The next top-level key of the table. */
			size_t i = 0, t = 0;
			for (; i < tp_policy_nkeys; i++) {
				const struct tp_policy_key *k = &tp_policy_keys[i];
				if (i > 0 && strcmp(k->section ? k->section : k->key,
						    tp_policy_keys[i - 1].section
							? tp_policy_keys[i - 1].section
							: tp_policy_keys[i - 1].key) != 0)
					t++;
				if (t == top)
					break;
			}
			CHECK(i < tp_policy_nkeys);
			if (i >= tp_policy_nkeys)
				break;
			const struct tp_policy_key *k = &tp_policy_keys[i];
			CHECK_EQ_STR(key, k->section ? k->section : k->key);
			top++;
			if (k->section == NULL || strcmp(k->section, "limits") == 0)
				continue;
			/* "{a (lo..hi), b, ...}": the section's keys, in order. */
			const char *c = strchr(cell, '{');
			unsigned char ranged[64] = { 0 };
			CHECK(c != NULL && tp_policy_nkeys <= sizeof ranged);
			for (size_t j = i; c != NULL && *c != '}' && j < sizeof ranged; j++) {
				c++;
				while (*c == ' ')
					c++;
				size_t n = strspn(c, "abcdefghijklmnopqrstuvwxyz_");
				CHECK(j < tp_policy_nkeys && tp_policy_keys[j].section &&
				      strcmp(tp_policy_keys[j].section, k->section) == 0);
				if (j >= tp_policy_nkeys || !tp_policy_keys[j].section ||
				    strcmp(tp_policy_keys[j].section, k->section) != 0)
					break;
				snprintf(want, sizeof want, "%.*s", (int)n, c);
				CHECK_EQ_STR(want, tp_policy_keys[j].key);
				c += n;
				if (strncmp(c, " (", 2) == 0) {
					human(tp_policy_keys[j].lo, lo, sizeof lo);
					human(tp_policy_keys[j].hi, hi, sizeof hi);
					snprintf(want, sizeof want, " (%s..%s)", lo, hi);
					CHECK(strncmp(c, want, strlen(want)) == 0);
					if (strncmp(c, want, strlen(want)) != 0)
						fprintf(stderr, "# README: %s: %.40s, not%s\n",
							tp_policy_keys[j].key, c, want);
					ranged[j] = 1;
					c = strchr(c, ')');
					if (c == NULL)
						break;
					c++;
				}
				CHECK(*c == ',' || *c == '}');
				if (*c != ',' && *c != '}')
					break;
				/* The section's last key ends the braces. */
				CHECK((*c == '}') ==
				      (j + 1 >= tp_policy_nkeys || !tp_policy_keys[j + 1].section ||
				       strcmp(tp_policy_keys[j + 1].section, k->section) != 0));
			}
			/* A number the braces give no range has one after them, for all
			 * ("{...}` (lo..hi"), or in the line ("`key` (lo .. hi)"). */
			for (size_t j = i; j < tp_policy_nkeys && j < sizeof ranged &&
					   tp_policy_keys[j].section &&
					   strcmp(tp_policy_keys[j].section, k->section) == 0;
			     j++) {
				const struct tp_policy_key *r = &tp_policy_keys[j];
				char all[128], own[128];
				if (r->type != TP_PT_U64 || ranged[j])
					continue;
				human(r->lo, lo, sizeof lo);
				human(r->hi, hi, sizeof hi);
				snprintf(all, sizeof all, " (%s..%s", lo, hi);
				snprintf(own, sizeof own, "`%s` (%s .. %s)", r->key, lo, hi);
				const char *after = strchr(line, '}');
				int ok = (after && strstr(after, all)) || strstr(line, own);
				CHECK(ok);
				if (!ok)
					fprintf(stderr, "# README: %s.%s: neither %s nor %s\n",
						r->section, r->key, all, own);
			}
		}
		if (where == 2 && md_row(line, 1, key, sizeof key, cell, sizeof cell) == 0) {
			/* The next limit: its range, and standard's value. */
			size_t i = 0, n = 0;
			for (; i < tp_policy_nkeys; i++)
				if (tp_policy_keys[i].section &&
				    strcmp(tp_policy_keys[i].section, "limits") == 0 && n++ == lim)
					break;
			CHECK(i < tp_policy_nkeys);
			if (i >= tp_policy_nkeys)
				break;
			const struct tp_policy_key *k = &tp_policy_keys[i];
			CHECK_EQ_STR(key, k->key);
			human(k->lo, lo, sizeof lo);
			human(k->hi, hi, sizeof hi);
			snprintf(want, sizeof want, "%s%s .. %s",
				 k->flags & TP_PK_ZERO_OK ? "0 (off) or " : "", lo, hi);
			CHECK_EQ_STR(cell, want);
			md_row(line, 2, key, sizeof key, cell, sizeof cell);
			uint64_t v = tp_policy_key_u64(sd, k);
			human(v, want, sizeof want);
			CHECK_EQ_STR(cell, v == 0 && (k->flags & TP_PK_ZERO_OK) ? "off" : want);
			lim++;
		}
	}
	fclose(f);
	/* Every top-level key and every limit is in the tables. */
	CHECK_EQ_INT(top, ntop);
	size_t nlim = 0;
	for (size_t i = 0; i < tp_policy_nkeys; i++)
		nlim +=
		    tp_policy_keys[i].section && strcmp(tp_policy_keys[i].section, "limits") == 0;
	CHECK_EQ_INT(lim, nlim);
	tp_policy_set_free(s);
}

int main(void)
{
	test_presets();
	test_messages();
	test_extends();
	test_report();
	test_report_cap();
	test_preset_files();
	test_env();
	test_check_text();
	test_dir_all();
	test_regex_cost();
	test_within();
	test_schema();
	test_schema_extends();
	test_readme_keys();
	return tp_test_done("test_policy");
}
