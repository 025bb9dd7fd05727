/*
 * test_proto.c — the host's pure modules: line framing, JSON-RPC envelopes,
 * exec parameters and limits, worker frames, reply checking, exec results.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_params.h"
#include "frame.h"
#include "jsonio.h"
#include "jsonrpc.h"
#include "linebuf.h"
#include "mcp.h"
#include "msg.h"
#include "result.h"
#include "utf8.h"
#include "cases.h"
#include "tap.h"

static void feed(struct tp_linebuf *lb, const char *s)
{
	size_t room, n = strlen(s);
	char *p = tp_linebuf_space(lb, &room);
	CHECK(p != NULL && room >= n);
	memcpy(p, s, n);
	tp_linebuf_commit(lb, n);
}

/* An overlong answer to one of the host's tool calls: reported, then a short
 * stand-in naming its id and length, so the code waiting on it is answered. */
static void test_linebuf_tool_answer(void)
{
	struct tp_linebuf lb;
	struct tp_rpc rpc;
	json_t *reply;
	const char *line;
	size_t len;
	char id[64];
	tp_linebuf_init(&lb, 40);
	feed(&lb, "{\"jsonrpc\":\"2.0\",\"id\":\"tp-tool-7\",\"result\":\"xxxxxxxxxx");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_TOO_LONG);
	feed(&lb, "xxxxxxxxxx\"}\n{}\n");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK_EQ_INT(tp_rpc_parse(line, len, &rpc, &reply), 0);
	CHECK(rpc.response && rpc.unreadable == TP_RPC_TOO_LONG && rpc.line_bytes == 66 &&
	      rpc.line_max == 40 && strcmp(json_string_value(rpc.id), "tp-tool-7") == 0);
	tp_rpc_clear(&rpc);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK(len == 2 && memcmp(line, "{}", 2) == 0);
	/* Not a response to the host (a request, another id): dropped as before. */
	feed(&lb, "{\"jsonrpc\":\"2.0\",\"id\":\"tp-tool-7\",\"method\":\"x\",\"result\":1}\nok\n");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_TOO_LONG);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK(len == 2 && memcmp(line, "ok", 2) == 0);
	tp_linebuf_free(&lb);
	const char *yes = "{\"result\":{\"id\":\"no\",\"a\":[1,\"}\"]}, \"id\" : \"tp-tool-1\"}";
	CHECK(tp_rpc_tool_response_id(yes, strlen(yes), id, sizeof id) &&
	      strcmp(id, "tp-tool-1") == 0);
	const char *no[] = { "{\"id\":\"tp-tool-1\"}", "{\"id\":\"x-1\",\"result\":1}",
			     "[{\"id\":\"tp-tool-1\",\"result\":1}]",
			     "{\"id\":\"tp-tool-\\u0031\",\"result\":1}", NULL };
	for (size_t i = 0; no[i] != NULL; i++)
		CHECK(!tp_rpc_tool_response_id(no[i], strlen(no[i]), id, sizeof id));
}

static void test_linebuf(void)
{
	struct tp_linebuf lb;
	const char *line;
	size_t len;
	tp_linebuf_init(&lb, 10);
	feed(&lb, "abc\r\n\n  \nde");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK_EQ_INT(len, 3);
	CHECK(memcmp(line, "abc", 3) == 0);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_NONE); /* blanks skipped */
	feed(&lb, "f\n0123456789X");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK_EQ_INT(len, 3);
	CHECK(memcmp(line, "def", 3) == 0);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_TOO_LONG);
	feed(&lb, "still the long line\nok\n");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK_EQ_INT(len, 2);
	CHECK(memcmp(line, "ok", 2) == 0);
	/* A long line that arrives whole is dropped too, and only it. */
	feed(&lb, "0123456789AB\nyes\n");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_TOO_LONG);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_OK);
	CHECK(len == 3 && memcmp(line, "yes", 3) == 0);
	feed(&lb, "tail");
	CHECK_EQ_INT(tp_linebuf_next(&lb, 0, &line, &len), TP_LINE_NONE);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 1, &line, &len), TP_LINE_OK);
	CHECK(len == 4 && memcmp(line, "tail", 4) == 0);
	CHECK_EQ_INT(tp_linebuf_next(&lb, 1, &line, &len), TP_LINE_NONE);
	tp_linebuf_free(&lb);
}

static void test_parse(void)
{
	struct tp_rpc rpc;
	json_t *reply;
	const char *ok = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}";
	CHECK_EQ_INT(tp_rpc_parse(ok, strlen(ok), &rpc, &reply), 0);
	CHECK_EQ_STR(rpc.method, "ping");
	CHECK_EQ_STR(json_string_value(rpc.id), "a");
	tp_rpc_clear(&rpc);
}

/* A batch is handed over whole only when the caller takes batches. */
static void test_parse_batch(void)
{
	struct tp_rpc rpc;
	json_t *reply, *batch = NULL;
	const char *line = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}, 5]";
	CHECK_EQ_INT(tp_rpc_parse_batch(line, strlen(line), &rpc, &reply, &batch), 1);
	CHECK(json_is_array(batch) && json_array_size(batch) == 2);
	CHECK(reply == NULL);
	/* each member is checked as a message of its own */
	CHECK_EQ_INT(tp_rpc_check(json_incref(json_array_get(batch, 0)), &rpc, &reply), 0);
	CHECK_EQ_STR(rpc.method, "ping");
	tp_rpc_clear(&rpc);
	CHECK_EQ_INT(tp_rpc_check(json_incref(json_array_get(batch, 1)), &rpc, &reply), -1);
	CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(reply, "error"), "message")),
		     "Invalid Request: not an object");
	json_decref(reply);
	json_decref(batch);
	/* an object is not a batch, and a caller without batches refuses one */
	batch = NULL;
	CHECK_EQ_INT(
	    tp_rpc_parse_batch("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", 30, &rpc, &reply, &batch),
	    0);
	CHECK(batch == NULL);
	tp_rpc_clear(&rpc);
	CHECK_EQ_INT(tp_rpc_parse("[]", 2, &rpc, &reply), -1);
	CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(reply, "error"), "code")),
		     TP_RPC_INVALID_REQUEST);
	CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(reply, "error"), "message")),
		     "Invalid Request: batches are not supported");
	json_decref(reply);
}

/* The built-in presets, the default "standard": what a host without --policy has. */
static struct tp_exec_policies pols;

static void test_initialize(void)
{
	json_t *p = json_pack("{s:s}", "protocolVersion", "2025-03-26");
	CHECK_EQ_STR(tp_mcp_initialize_version(p), "2025-03-26");
	json_t *r = tp_mcp_initialize(tp_mcp_initialize_version(p), pols.deflt);
	CHECK_EQ_STR(json_string_value(json_object_get(r, "protocolVersion")), "2025-03-26");
	json_decref(r);
	json_decref(p);
	p = json_pack("{s:s}", "protocolVersion", "1999-01-01");
	CHECK_EQ_STR(tp_mcp_initialize_version(p), "2025-11-25");
	json_decref(p);
	/* initialize cannot pick the stateless revision, nor go without a version */
	p = json_pack("{s:s}", "protocolVersion", TP_MCP_MODERN);
	CHECK_EQ_STR(tp_mcp_initialize_version(p), "2025-11-25");
	json_decref(p);
	p = json_pack("{s:i}", "protocolVersion", 5);
	CHECK(tp_mcp_initialize_version(p) == NULL);
	json_decref(p);
	CHECK(tp_mcp_initialize_version(NULL) == NULL);
	r = tp_mcp_tools_list(pols.deflt, 0);
	json_t *tool = json_array_get(json_object_get(r, "tools"), 0);
	CHECK_EQ_STR(json_string_value(json_object_get(tool, "name")), "run_lua");
	CHECK(json_is_object(json_object_get(tool, "outputSchema")));
	CHECK(json_object_get(r, "ttlMs") == NULL);
	json_decref(r);
	r = tp_mcp_tools_list(pols.deflt, 1);
	CHECK_EQ_INT(json_integer_value(json_object_get(r, "ttlMs")), 3600000);
	CHECK_EQ_STR(json_string_value(json_object_get(r, "cacheScope")), "private");
	json_decref(r);
}

/* A session's files as resources: the URI both ways, the MIME table, the revisions
 * with resource_link content. */
static void test_file_uris(void)
{
	char sid[32], path[64];
	size_t n;
	char *u = tp_mcp_file_uri("s-0123456789abcdef", "out/a b%\xc3\xa9?#.txt", 16);
	CHECK_EQ_STR(u,
		     "tidepool://sessions/s-0123456789abcdef/files/out/a%20b%25%C3%A9%3F%23.txt");
	CHECK_EQ_INT(tp_mcp_file_uri_parse(u, strlen(u), sid, sizeof sid, path, sizeof path, &n),
		     0);
	CHECK_EQ_STR(sid, "s-0123456789abcdef");
	CHECK_EQ_INT((long long)n, 16);
	CHECK_EQ_STR(path, "out/a b%\xc3\xa9?#.txt");
	free(u);
	static const char *const bad[] = {
		"file:///etc/passwd",
		"tidepool://sessions/s-1/x.txt",
		"tidepool://sessions//files/x",
		"tidepool://sessions/S-1/files/x",
		"tidepool://sessions/s-1/files/x?y",
		"tidepool://sessions/s-1/files/x#y",
		"tidepool://sessions/s-1/files/a b",
		"tidepool://sessions/s-1/files/%4",
		"tidepool://sessions/s-1/files/%zz",
		"tidepool://sessions/s-0123456789abcdef0123456789abcdef/files/x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ_INT(tp_mcp_file_uri_parse(bad[i], strlen(bad[i]), sid, sizeof sid, path,
						   sizeof path, &n),
			     -1);
	/* a decoded NUL is kept for the path check to refuse */
	const char *nul = "tidepool://sessions/s-1/files/a%00b";
	CHECK_EQ_INT(
	    tp_mcp_file_uri_parse(nul, strlen(nul), sid, sizeof sid, path, sizeof path, &n), 0);
	CHECK(n == 3 && path[1] == '\0');
	CHECK_EQ_STR(tp_mcp_mime("a/B.PNG"), "image/png");
	CHECK_EQ_STR(tp_mcp_mime("x.tar.gz"), "application/octet-stream");
	CHECK_EQ_STR(tp_mcp_mime("dir.csv/file"), "application/octet-stream");
	CHECK_EQ_STR(tp_mcp_mime(".json"), "application/octet-stream");
	CHECK_EQ_INT(tp_mcp_mime_embeds("text/csv"), TP_MCP_EMBED_TEXT);
	CHECK_EQ_INT(tp_mcp_mime_embeds("image/jpeg"), TP_MCP_EMBED_BLOB);
	CHECK_EQ_INT(tp_mcp_mime_embeds("application/pdf"), TP_MCP_EMBED_NONE);
	CHECK_EQ_INT(tp_mcp_resource_links("2025-03-26", NULL), 0);
	CHECK_EQ_INT(tp_mcp_resource_links("2024-11-05", NULL), 0);
	CHECK_EQ_INT(tp_mcp_resource_links("2025-06-18", NULL), 1);
	CHECK_EQ_INT(tp_mcp_resource_links("2025-11-25", NULL), 1);
	CHECK_EQ_INT(tp_mcp_resource_links("", NULL), 1);
}

/* The stateless revision: a request names it in _meta, with its capabilities. */
static void test_modern_era(void)
{
	char msg[200];
	json_t *data;
	json_t *p =
	    json_loads("{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": "
		       "\"2026-07-28\", \"io.modelcontextprotocol/clientCapabilities\": {}}}",
		       0, NULL);
	CHECK_EQ_INT(tp_mcp_modern(p), 1);
	CHECK_EQ_INT(tp_mcp_era(p, msg, sizeof msg, &data), 0);
	CHECK(data == NULL);
	json_t *r = tp_mcp_stamp(json_object(), p);
	CHECK_EQ_STR(json_string_value(json_object_get(r, "resultType")), "complete");
	json_t *si =
	    json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo");
	CHECK_EQ_STR(json_string_value(json_object_get(si, "name")), "tidepool");
	json_decref(r);
	json_decref(p);
	p = json_loads("{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2030-01-01\"}}",
		       0, NULL);
	CHECK_EQ_INT(tp_mcp_era(p, msg, sizeof msg, &data), TP_MCP_UNSUPPORTED_VERSION);
	CHECK_EQ_STR(msg, "Unsupported protocol version");
	CHECK_EQ_STR(json_string_value(json_object_get(data, "requested")), "2030-01-01");
	CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
		     TP_MCP_MODERN);
	CHECK_EQ_INT(json_array_size(json_object_get(data, "supported")), 5);
	json_decref(data);
	json_decref(p);
	p = json_loads("{\"_meta\": {\"io.modelcontextprotocol/protocolVersion\": \"2026-07-28\"}}",
		       0, NULL);
	CHECK_EQ_INT(tp_mcp_era(p, msg, sizeof msg, &data), TP_RPC_INVALID_PARAMS);
	CHECK_EQ_STR(msg, "Invalid params: _meta.io.modelcontextprotocol/clientCapabilities must "
			  "be an object (revision 2026-07-28)");
	json_decref(p);
	/* a legacy request: untouched */
	p = json_pack("{s:{s:i}}", "_meta", "progressToken", 1);
	CHECK_EQ_INT(tp_mcp_modern(p), 0);
	CHECK_EQ_INT(tp_mcp_era(p, msg, sizeof msg, &data), 0);
	r = tp_mcp_stamp(json_object(), p);
	CHECK_EQ_INT(json_object_size(r), 0);
	json_decref(r);
	json_decref(p);
	r = tp_mcp_discover(pols.deflt);
	CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(r, "supportedVersions"), 0)),
		     TP_MCP_MODERN);
	CHECK(json_is_object(json_object_get(json_object_get(r, "capabilities"), "tools")));
	json_decref(r);
	/* A default policy of one language (data: Python): its tool alone, and the
	 * instructions name only it. */
	const struct tp_policy *dp = tp_policy_set_find(pols.set, "data");
	CHECK(dp != NULL);
	r = tp_mcp_initialize("2025-06-18", dp);
	const char *how = json_string_value(json_object_get(r, "instructions"));
	CHECK(how != NULL && strncmp(how, "Call run_python with Python 3.11 code (", 39) == 0 &&
	      strstr(how, "run_lua") == NULL);
	json_decref(r);
	r = tp_mcp_tools_list(dp, 0);
	json_t *tools = json_object_get(r, "tools");
	CHECK_EQ_INT((long long)json_array_size(tools), 6); /* and its workspace's three */
	CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
		     "run_python");
	json_decref(r);
}

static int exec_params(const char *js, struct tp_exec_params *out, struct tp_err *err)
{
	json_t *p = json_loads(js, 0, NULL);
	CHECK(p != NULL);
	tp_err_clear(err);
	int r = tp_exec_params_parse(p, &pols, NULL, out, err);
	json_decref(p);
	return r;
}

static void test_exec_params(void)
{
	struct tp_exec_params e;
	struct tp_err err = { 0 };
	CHECK_EQ_INT(
	    exec_params("{\"lang\":\"lua\",\"code\":\"return 1\",\"limits\":{\"cpu_ms\":10,"
			"\"instructions\":5},\"seed\":9}",
			&e, &err),
	    0);
	CHECK_EQ_INT(e.limits.cpu_ms, 10);
	CHECK_EQ_INT(e.limits.instructions, 5);
	CHECK_EQ_INT(e.limits.memory_bytes, 64u << 20);
	CHECK_EQ_INT(e.has_seed, 1);
	CHECK_EQ_INT(e.seed, 9);
	CHECK_EQ_INT(e.stream, 0);
	CHECK_EQ_INT(exec_params("{\"lang\":\"lua\",\"code\":\"\",\"stream\":true}", &e, &err), 0);
	CHECK_EQ_INT(e.stream, 1);
	CHECK_EQ_INT(exec_params("{\"lang\":\"lua\",\"code\":\"\",\"stream\":null}", &e, &err), 0);
	CHECK_EQ_INT(e.stream, 0);
	CHECK_EQ_INT(exec_params("{\"lang\":\"lua\",\"code\":\"\",\"stream\":1}", &e, &err), -1);
	CHECK_EQ_STR(err.msg, "'stream' must be true or false");

	/* Under a policy that redacts, stream is refused; without stream it runs. */
	struct tp_exec_policies saved = pols;
	struct tp_policy red = *pols.deflt;
	char *secret[] = { "hunter2", NULL };
	red.name = "red";
	red.redact_strings = (struct tp_strv){ .v = secret, .n = 1 };
	pols.deflt = &red;
	CHECK_EQ_INT(exec_params("{\"lang\":\"lua\",\"code\":\"\",\"stream\":true}", &e, &err), -1);
	CHECK_EQ_STR(err.msg, "'stream' is not available under policy 'red': it redacts secrets, "
			      "which needs the whole output (the reply carries it)");
	CHECK_EQ_INT(exec_params("{\"lang\":\"lua\",\"code\":\"\",\"stream\":false}", &e, &err), 0);
	pols = saved;

	/* tools/call: _meta.progressToken, a string or an integer, beside name and arguments. */
	const char *tools[] = {
		"{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\"},\"_meta\":{\"progressToken\":"
		"7}}",
		"{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\"},\"_meta\":{\"progressToken\":"
		"\"t\"}}",
		"{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\"},\"_meta\":{}}",
		"{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\"},\"_meta\":{\"progressToken\":["
		"1]}}",
		"{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\"},\"_meta\":3}",
	};
	for (int i = 0; i < 5; i++) {
		json_t *p = json_loads(tools[i], 0, NULL);
		tp_err_clear(&err);
		int r = tp_exec_params_parse_tool(p, &pols, NULL, &e, &err);
		CHECK_EQ_INT(r, i < 3 ? 0 : -2);
		CHECK_EQ_INT(e.progress_token != NULL, i < 2);
		if (i == 0)
			CHECK_EQ_INT(json_integer_value(e.progress_token), 7);
		json_decref(p);
	}
	CHECK_EQ_STR(err.msg, "'_meta' must be an object");

	/* Bad arguments are -1 (the model reads them in an isError result); an
	 * unknown tool is -2 (a JSON-RPC error). limits and seed are arguments. */
	struct {
		const char *js;
		int r;
		const char *msg;
	} args[] = {
		{ "{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\",\"seed\":3,\"limits\":{"
		  "\"cpu_ms\":100}}}",
		  0, NULL },
		{ "{\"name\":\"run_lua\"}", -1,
		  "'arguments' is missing: run_lua takes {\"code\": a string, ...}" },
		{ "{\"name\":\"run_lua\",\"arguments\":{}}", -1, "'code' must be a string" },
		{ "{\"name\":\"run_python\",\"arguments\":{\"code\":42}}", -1,
		  "'code' must be a string" },
		{ "{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\",\"timeout\":1}}", -1,
		  "unknown parameter 'timeout'" },
		{ "{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\",\"limits\":{\"cpu_ms\":"
		  "999999}}}",
		  -1,
		  "limit 'cpu_ms' may only be tightened: 999999 > ceiling 5000 (policy "
		  "'standard')" },
		{ "{\"name\":\"run_lua\",\"arguments\":{\"code\":\"\",\"seed\":1.5}}", -1,
		  "'seed' must be an integer" },
		{ "{\"name\":\"run_ruby\",\"arguments\":{}}", -2, "Unknown tool: run_ruby" },
	};
	for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
		json_t *p = json_loads(args[i].js, 0, NULL);
		tp_err_clear(&err);
		CHECK_EQ_INT(tp_exec_params_parse_tool(p, &pols, NULL, &e, &err), args[i].r);
		if (args[i].msg != NULL)
			CHECK_EQ_STR(err.msg, args[i].msg);
		else
			CHECK(e.has_seed && e.seed == 3 && e.limits.cpu_ms == 100);
		json_decref(p);
	}
}

/* ---- the protocol-fault cases (tests/cases/protocol/) ------------------------- */

/* The reply to one line from the stage that refuses it, or NULL for none. A
 * "params" case passes the envelope and is refused by the exec params. */
static json_t *stage_reply(const char *stage, const char *line, size_t len)
{
	struct tp_exec_params p;
	struct tp_rpc rpc;
	json_t *reply;
	struct tp_err err = { 0 };
	int r = tp_rpc_parse(line, len, &rpc, &reply);

	if (strcmp(stage, "jsonrpc") == 0) {
		CHECK_EQ_INT(r, -1);
		return reply;
	}
	CHECK_EQ_INT(r, 0);
	if (r != 0)
		return reply;
	if (strcmp(rpc.method, "tools/call") == 0)
		r = tp_exec_params_parse_tool(rpc.params, &pols, NULL, &p, &err);
	else if (strcmp(rpc.method, "sandbox/exec") == 0)
		r = tp_exec_params_parse(rpc.params, &pols, NULL, &p, &err);
	/* tools/call's only faults are an unknown tool and a bad _meta (-2). */
	CHECK_EQ_INT(r, strcmp(rpc.method, "tools/call") == 0 ? -2 : -1);
	reply = r != 0 ? tp_rpc_error(rpc.id, TP_RPC_INVALID_PARAMS, err.msg, NULL) : NULL;
	tp_rpc_clear(&rpc);
	return reply;
}

static void check_reply(const char *name, const json_t *want, const json_t *got)
{
	CHECK(case_matches(want, got));
	if (!case_matches(want, got)) {
		char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		char *g = json_dumps(got, JSON_COMPACT);
		fprintf(stderr, "  case %s: want %s\n  got %s\n", name, w ? w : "no reply", g);
		free(w);
		free(g);
	}
}

/* Each line of the case's input gets the next expected reply, or none. Cases of
 * the "host" stage need the loop (ids in flight, line length, dispatch): tests/proto. */
static int run_fault_case(const char *name)
{
	char rel[300];
	size_t len = 0, k = 0;
	snprintf(rel, sizeof rel, "protocol/%s/expected.json", name);
	json_t *exp = json_load_file(case_path(rel), 0, NULL);
	snprintf(rel, sizeof rel, "protocol/%s/input", name);
	char *input = case_read(case_path(rel), &len), *end = input + len, *nl;
	const char *stage = json_string_value(json_object_get(exp, "stage"));
	json_t *replies = json_object_get(exp, "replies");
	int checked = input != NULL && stage != NULL && strcmp(stage, "host") != 0;

	CHECK(input != NULL && stage != NULL && json_is_array(replies));
	for (char *line = input; checked && (nl = memchr(line, '\n', (size_t)(end - line)));
	     line = nl + 1) {
		json_t *got = stage_reply(stage, line, (size_t)(nl - line));
		if (got != NULL)
			check_reply(name, json_array_get(replies, k++), got);
		json_decref(got);
	}
	if (checked && k != json_array_size(replies)) {
		CHECK_EQ_INT(k, json_array_size(replies));
		fprintf(stderr, "  case %s: %zu replies\n", name, k);
	}
	free(input);
	json_decref(exp);
	return checked;
}

static void test_fault_cases(void)
{
	struct dirent **names;
	int n = scandir(case_path("protocol"), &names, NULL, alphasort), cases = 0, checked = 0;

	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			cases++;
			checked += run_fault_case(names[i]->d_name);
		}
		free(names[i]);
	}
	if (n > 0)
		free(names);
	CHECK(checked >= 30);
	printf("# protocol cases: %d, %d checked here, the rest by tests/proto\n", cases, checked);
}

static void test_frames(void)
{
	char buf[16];
	size_t n = 0;
	tp_frame_header(buf, 3);
	memcpy(buf + 4, "abc", 3);
	CHECK_EQ_INT(tp_frame_parse(buf, 3, 100, &n), 0);
	CHECK_EQ_INT(tp_frame_parse(buf, 6, 100, &n), 0);
	CHECK_EQ_INT(tp_frame_parse(buf, 7, 100, &n), 1);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(tp_frame_parse(buf, 7, 2, &n), -1);
	tp_frame_header(buf, 0xffffffffu);
	CHECK_EQ_INT(tp_frame_parse(buf, 4, 1u << 30, &n), -1);

	/* tp_frame_sendv: parts (one empty) as one frame, through a pipe far
	 * smaller than the frame while a child reads it. */
	static char big[300000];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)('a' + i % 26);
	int fds[2];
	CHECK(pipe(fds) == 0);
	(void)fcntl(fds[1], F_SETPIPE_SZ, 4096);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		struct iovec parts[3] = { { "head:", 5 }, { big, sizeof big }, { NULL, 0 } };
		_exit(tp_frame_sendv(fds[1], parts, 3) == 0 &&
			      tp_frame_sendv(fds[1], parts, 4) == -1 /* too many parts */
			  ? 0
			  : 1);
	}
	close(fds[1]);
	size_t got = 0;
	char *p = tp_frame_recv(fds[0], sizeof big + 16, &got);
	CHECK(p != NULL && got == 5 + sizeof big && memcmp(p, "head:", 5) == 0 &&
	      memcmp(p + 5, big, sizeof big) == 0);
	free(p);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fds[0]);
}

/* ---- the worker messages (common/msg.h) ------------------------------------- */

static struct tp_limits reply_caps(void)
{
	struct tp_limits l;
	tp_limits_default(&l);
	l.result_depth = 3;
	l.result_bytes = 20;
	return l;
}

static int splits; /* replies roundtrip() split around their value_json */

/* Encodes r, decodes it under reply_caps(); the decoded reply or NULL. */
static struct tp_reply *roundtrip(const struct tp_reply *r, int expect)
{
	static struct tp_reply out;
	struct tp_limits l = reply_caps();
	struct tp_err err = { 0 };
	size_t n;
	char *buf = tp_msg_reply_encode(r, &n);

	CHECK(buf != NULL);
	if (buf == NULL)
		return NULL;
	/* The split a worker sends: its parts are the same bytes. */
	struct tp_msg_split m;
	CHECK_EQ_INT(tp_msg_reply_encode_split(r, &m), 0);
	CHECK(m.pre_n + m.mid_n + m.post_n == n && memcmp(buf, m.pre, m.pre_n) == 0 &&
	      (m.mid_n == 0 || memcmp(buf + m.pre_n, m.mid, m.mid_n) == 0) &&
	      (m.post_n == 0 || memcmp(buf + m.pre_n + m.mid_n, m.post, m.post_n) == 0));
	CHECK(r->ok && r->value_json != NULL ? m.mid == r->value_json && m.post_n > 0
					     : m.mid_n == 0 && m.post_n == 0);
	splits += m.mid_n > 0;
	free(m.pre);
	free(m.post);
	tp_reply_free(&out);
	int rc = tp_msg_reply_decode(buf, n, &l, &out, &err);
	CHECK_EQ_INT(rc, expect);
	CHECK(rc == 0 || strncmp(err.msg, "worker reply refused: ", 22) == 0);
	CHECK(rc != 0 || out.seq == r->seq);
	/* Every prefix is refused, and so is one trailing byte. */
	for (size_t k = 0; rc == 0 && k < n; k++) {
		struct tp_reply cut;
		tp_err_clear(&err);
		CHECK_EQ_INT(tp_msg_reply_decode(buf, k, &l, &cut, &err), -1);
	}
	if (rc == 0) {
		struct tp_reply more;
		char *longer = malloc(n + 1);
		memcpy(longer, buf, n);
		longer[n] = 0;
		tp_err_clear(&err);
		CHECK_EQ_INT(tp_msg_reply_decode(longer, n + 1, &l, &more, &err), -1);
		CHECK(strstr(err.msg, "bytes after the message") != NULL);
		free(longer);
	}
	free(buf);
	return rc == 0 ? &out : NULL;
}

static struct tp_reply failure(enum tp_kind kind, const char *msg)
{
	struct tp_reply r = { .ok = 0, .error = { .kind = kind, .limit_id = -1 } };
	if (msg != NULL)
		tp_text_set(&r.error.message, msg, strlen(msg), TP_MSG_MAX_TEXT);
	return r;
}

/* A text that is the value's own JSON text (version 8): no bytes for it on the
 * wire; the decoder makes it from the value's, its reals tidied as
 * tp_json_dumps writes them. Only for an array or object, never cut. */
static void test_text_is_value(void)
{
	static const struct {
		const char *value, *text;
		int cut, rc;
	} cases[] = {
		{ "{\"a\":0.1,\"b\":[1,2.5,\"x\\\"y\"]}", "{\"a\":0.1,\"b\":[1,2.5,\"x\\\"y\"]}", 0,
		  0 },
		{ "[0.30000000000000004,1e300]", "[0.30000000000000004,1e300]", 0, 0 },
		{ "[0.1]", "[0.1]", 0, 0 },
		{ "[]", "[]", 0, 0 },
		{ "[1]", NULL, 1, -1 },   /* a text of the value is never cut */
		{ "\"s\"", NULL, 0, -1 }, /* a string's text is not its JSON */
		{ "1.5", NULL, 0, -1 },
		{ "null", NULL, 0, -1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tp_reply r = {
			.seq = 9, .ok = 1, .text_is_value = 1, .text_cut = cases[i].cut
		};
		r.value =
		    tp_json_loadb(cases[i].value, strlen(cases[i].value), JSON_DECODE_ANY, NULL);
		CHECK(r.value != NULL);
		size_t n;
		char *wire = tp_msg_reply_encode(&r, &n);
		CHECK(wire != NULL);
		/* on the wire: the value once */
		CHECK(wire != NULL && memmem(wire, n, "\xfe\xff\xff\xff", 4) != NULL);
		free(wire);
		/* reply_caps' result_bytes (20) is below "[0.10000000000000001]": these
		 * caps are the defaults. */
		struct tp_limits l;
		struct tp_reply d;
		struct tp_err err = { 0 };
		tp_limits_default(&l);
		wire = tp_msg_reply_encode(&r, &n);
		CHECK_EQ_INT(tp_msg_reply_decode(wire, n, &l, &d, &err), cases[i].rc);
		if (cases[i].rc == 0) {
			CHECK(d.text_is_value == 1 && d.text.s != NULL);
			CHECK_EQ_STR(d.text.s, cases[i].text);
			CHECK(d.text.n == strlen(cases[i].text));
			tp_reply_free(&d);
		}
		free(wire);
		if (strlen(cases[i].value) < 12 && strchr(cases[i].value, '.') == NULL)
			roundtrip(&r, cases[i].rc); /* and every prefix refused */
		json_decref(r.value);
	}
}

/* nonfinite (version 7): each pointer must name a null of the value; the
 * values are nan, inf or -inf; an empty map, a non-object, a NUL-free pointer
 * to nothing, an index with a leading zero or past the end: refused. */
static void test_nonfinite(void)
{
	static const struct {
		const char *value, *map;
		int rc;
	} cases[] = {
		{ "null", "{\"\":\"nan\"}", 0 },
		{ "[1,null]", "{\"/1\":\"inf\"}", 0 },
		{ "{\"a/b\":null}", "{\"/a~1b\":\"-inf\"}", 0 },
		{ "{\"~\":[null]}", "{\"/~0/0\":\"nan\"}", 0 },
		{ "[1,null]", "{\"/0\":\"inf\"}", -1 },  /* not a null */
		{ "[1,null]", "{\"/2\":\"inf\"}", -1 },  /* past the end */
		{ "[1,null]", "{\"/01\":\"inf\"}", -1 }, /* a leading zero */
		{ "[1,null]", "{\"/-1\":\"inf\"}", -1 },
		{ "[1,null]", "{\"/+1\":\"inf\"}", -1 },
		{ "[1,null]", "{\"1\":\"inf\"}", -1 },        /* no leading slash */
		{ "{\"a\":null}", "{\"/a~2\":\"nan\"}", -1 }, /* a bad escape */
		{ "{\"a\":null}", "{\"/a\":\"NaN\"}", -1 },   /* not nan, inf, -inf */
		{ "{\"a\":null}", "{\"/a\":1}", -1 },
		{ "{\"a\":null}", "{}", -1 },                              /* empty */
		{ "{\"a\":null}", "[\"/a\"]", -1 },                        /* not an object */
		{ "{\"a\":null}", "{\"/a\\u0000\":\"nan\"}", -1 },         /* no such key */
		{ "{\"a\\u0000b\":null}", "{\"/a\\u0000b\":\"nan\"}", 0 }, /* NUL in a key */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tp_reply r = { .seq = 7, .ok = 1 };
		r.value = tp_json_loadb(cases[i].value, strlen(cases[i].value),
					JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		r.nonfinite = tp_json_loadb(cases[i].map, strlen(cases[i].map),
					    JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		CHECK(r.value != NULL && r.nonfinite != NULL);
		struct tp_reply *d = roundtrip(&r, cases[i].rc);
		if (cases[i].rc == 0)
			CHECK(d != NULL && json_object_size(d->nonfinite) == 1);
		json_decref(r.value);
		json_decref(r.nonfinite);
	}
}

static void test_check_reply(void)
{
	struct tp_reply r = { .seq = ~0ull, .ok = 1, .usage = { 1, 2, 500 } }, *d, tmp;
	struct tp_err err = { 0 };
	struct tp_limits l = reply_caps();

	r.value = json_loads("[1,[2]]", 0, NULL);
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->ok && json_equal(d->value, r.value));
	CHECK(d != NULL && d->usage.instructions == 1 && d->usage.memory_peak_bytes == 2 &&
	      d->usage.cpu_us == 500);
	json_decref(r.value);
	r.value = json_loads("[[[[1]]]]", 0, NULL); /* deeper than result_depth */
	roundtrip(&r, -1);
	json_decref(r.value);
	r.value = json_string("0123456789012345678901"); /* larger than result_bytes */
	roundtrip(&r, -1);
	json_decref(r.value);

	r = failure(TP_KIND_TIMEOUT, "m"); /* the host's verdicts are not claimable */
	roundtrip(&r, -1);
	tp_reply_free(&r);
	r = failure(TP_KIND_CRASHED, "m");
	roundtrip(&r, -1);
	tp_reply_free(&r);
	r = failure(TP_KIND_RUNTIME_ERROR, NULL); /* no message */
	roundtrip(&r, -1);
	r = failure(TP_KIND_RUNTIME_ERROR, "m");
	r.error.limit_id = TP_LIMIT__COUNT; /* no such limit */
	roundtrip(&r, -1);
	r.error.limit_id = -1;
	r.error.line = 3;
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->error.line == 3 && d->error.kind == TP_KIND_RUNTIME_ERROR);
	CHECK(d != NULL && d->error.message.n == 1 && d->error.type.s == NULL);
	char big[TP_MSG_MAX_TYPE + 2];
	memset(big, 'T', sizeof big);
	r.error.type.s = big; /* longer than the type cap */
	r.error.type.n = sizeof big;
	roundtrip(&r, -1);
	r.error.type.s = NULL;
	r.error.type.n = 0;
	/* A Lua error table's data: carried as JSON under the value's caps. */
	r.error.data = json_loads("{\"c\":4,\"l\":[null]}", 0, NULL);
	d = roundtrip(&r, 0);
	CHECK(d != NULL && json_equal(d->error.data, r.error.data));
	json_decref(r.error.data);
	r.error.data = json_loads("[[[[1]]]]", 0, NULL); /* deeper than result_depth */
	roundtrip(&r, -1);
	json_decref(r.error.data);
	r.error.data = json_string("0123456789012345678901"); /* larger than result_bytes */
	roundtrip(&r, -1);
	tp_reply_free(&r);
	r = failure(TP_KIND_RUNTIME_ERROR, "m");
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->error.data == NULL); /* absent stays absent */
	tp_reply_free(&r);

	/* Bytes that are no reply of this version. */
	CHECK_EQ_INT(tp_msg_reply_decode("[]", 2, &l, &r, &err), -1);
	CHECK_EQ_INT(tp_msg_reply_decode("", 0, &l, &r, &err), -1);
	r = (struct tp_reply){ .ok = 1, .value = json_integer(1) };
	size_t n;
	char *buf = tp_msg_reply_encode(&r, &n);
	buf[4] = TP_MSG_VERSION + 1;
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), -1);
	buf[4] = TP_MSG_VERSION;
	buf[16] = 2; /* ok (after the header and seq) is neither 0 nor 1 */
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), -1);
	free(buf);
	json_decref(r.value);
	d = roundtrip(&(struct tp_reply){ .ok = 1, .value = json_null() }, 0);
	CHECK(d != NULL && json_is_null(d->value));
	if (d != NULL)
		tp_reply_free(d);

	/* A value's text as a worker writes it (value_json): sent as it is, read
	 * as hostile. A NUL byte after a number, which json_loadb skips ("[4\0]"
	 * is [4] to it) and which went into replies as it was, is refused. */
	static const struct {
		const char *text;
		size_t n;
		int rc;
	} texts[] = { { "[4]", 3, 0 },       { "[4\0]", 4, -1 }, { "[4,\0]", 5, -1 },
		      { "{\"a\":1}", 7, 0 }, { "[1 ]", 4, 0 },   { "[1,]", 4, -1 } };
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		char *text = malloc(texts[i].n + 1);
		memcpy(text, texts[i].text, texts[i].n + 1);
		r = (struct tp_reply){ .ok = 1, .value_json = text, .value_json_n = texts[i].n };
		buf = tp_msg_reply_encode(&r, &n);
		tp_err_clear(&err);
		CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), texts[i].rc);
		if (texts[i].rc == 0) {
			/* kept as the value's text only when compact */
			CHECK((tmp.value_json != NULL) == (strchr(texts[i].text, ' ') == NULL));
			tp_reply_free(&tmp);
		} else {
			CHECK_EQ_STR(err.msg, "worker reply refused: a value is not JSON");
		}
		/* The host's lazy decoder: the same verdict; a compact text is kept
		 * without a tree, whose tree is then the eager one's. */
		tp_err_clear(&err);
		CHECK_EQ_INT(tp_msg_reply_decode_lazy(buf, n, &l, &tmp, &err), texts[i].rc);
		if (texts[i].rc == 0) {
			int compact = strchr(texts[i].text, ' ') == NULL;
			CHECK(tmp.value_lazy == compact && (tmp.value == NULL) == compact);
			json_t *want = json_loadb(texts[i].text, texts[i].n, 0, NULL);
			CHECK(json_equal(tp_reply_value(&tmp), want) && tmp.value_lazy == 0);
			json_decref(want);
			tp_reply_free(&tmp);
		} else {
			CHECK_EQ_STR(err.msg, "worker reply refused: a value is not JSON");
		}
		(void)roundtrip(&r, texts[i].rc); /* and its split */
		free(buf);
		tp_reply_free(&r);
	}
}

/* Version 6: an ok reply's text and images. */
static void test_reply_rich(void)
{
	static const char png[] = "\x89PNG\r\n\x1a\nIHDR-and-more";
	struct tp_reply r = { .ok = 1 }, *d;
	struct tp_err err = { 0 };
	struct tp_limits l = reply_caps();

	r.value = json_integer(7);
	tp_text_set(&r.text, "7", 1, 64);
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->text.n == 1 && d->text.s[0] == '7' && !d->text_cut && !d->nimages);
	r.text_cut = 1;
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->text_cut == 1);
	tp_text_free(&r.text);
	d = roundtrip(&r, -1); /* cut without a text */
	r.text_cut = 0;
	tp_text_set(&r.text, "012345678901234567890", 21, 64); /* above result_bytes (20) */
	roundtrip(&r, -1);
	tp_text_free(&r.text);
	r.value_repr = 1; /* a repr value is its own text: a second one is refused */
	json_decref(r.value);
	r.value = json_string("{1}");
	tp_text_set(&r.text, "{1}", 3, 64);
	roundtrip(&r, -1);
	tp_text_free(&r.text);
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->value_repr && d->text.s == NULL);
	r.value_repr = 0;

	/* Images: PNG files, at most TP_MSG_MAX_IMAGES, within output_bytes together. */
	tp_text_set(&r.images[0], png, sizeof png - 1, 64);
	tp_text_set(&r.images[1], png, 8, 64);
	r.nimages = 2;
	d = roundtrip(&r, 0);
	CHECK(d != NULL && d->nimages == 2 && d->images[0].n == sizeof png - 1 &&
	      memcmp(d->images[0].s, png, sizeof png - 1) == 0 && d->images[1].n == 8);
	r.images[1].s[0] = 'G'; /* not a PNG */
	roundtrip(&r, -1);
	tp_text_free(&r.images[1]);
	roundtrip(&r, -1); /* an absent image */
	r.nimages = 1;
	l.output_bytes = 8;
	size_t n;
	char *buf = tp_msg_reply_encode(&r, &n); /* 21 bytes of images, output_bytes 8 */
	struct tp_reply tmp;
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), -1);
	CHECK(strstr(err.msg, "output_bytes") != NULL);
	l.output_bytes = sizeof png - 1;
	tp_err_clear(&err);
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), 0);
	tp_reply_free(&tmp);
	free(buf);
	/* Together: two that each fit but not both. */
	tp_text_set(&r.images[1], png, sizeof png - 1, 64);
	r.nimages = 2;
	buf = tp_msg_reply_encode(&r, &n);
	tp_err_clear(&err);
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), -1);
	CHECK(strstr(err.msg, "images longer than output_bytes together") != NULL);
	free(buf);
	/* A count above the cap is refused before any image is read. */
	r.nimages = TP_MSG_MAX_IMAGES + 1;
	buf = tp_msg_reply_encode(&r, &n);
	r.nimages = 2;
	tp_err_clear(&err);
	CHECK_EQ_INT(tp_msg_reply_decode(buf, n, &l, &tmp, &err), -1);
	CHECK(strstr(err.msg, "more images than the cap") != NULL);
	free(buf);
	tp_reply_free(&r);
	if (d != NULL)
		tp_reply_free(d);
}

static void test_request_msg(void)
{
	json_t *in = json_loads("{\"x\": [1, {\"y\": null}]}", 0, NULL);
	struct tp_request req = { .seq = 0x0102030405060708ull,
				  .code = "return\0 x",
				  .code_len = 9,
				  .inputs = in,
				  .has_seed = 1,
				  .seed = 1ull << 63 },
			  out;
	size_t n;
	char *buf;

	tp_limits_default(&req.limits);
	buf = tp_msg_request_encode(&req, &n);
	CHECK(buf != NULL);
	CHECK_EQ_INT(tp_msg_request_decode(buf, n, &out), 0);
	CHECK(out.code_len == 9 && memcmp(out.code, req.code, 9) == 0);
	CHECK(json_equal(out.inputs, in));
	CHECK(out.has_seed == 1 && out.seed == 1ull << 63);
	CHECK(out.seq == 0x0102030405060708ull);
	CHECK(memcmp(&out.limits, &req.limits, sizeof out.limits) == 0);
	tp_request_free(&out);
	for (size_t k = 0; k < n; k++)
		CHECK_EQ_INT(tp_msg_request_decode(buf, k, &out), -1);
	free(buf);
	req.limits.result_depth = TP_MAX_RESULT_DEPTH + 1; /* above a hard ceiling */
	buf = tp_msg_request_encode(&req, &n);
	CHECK_EQ_INT(tp_msg_request_decode(buf, n, &out), -1);
	free(buf);
	tp_limits_default(&req.limits);
	json_decref(in);
	req.inputs = in = json_array(); /* inputs must be an object */
	buf = tp_msg_request_encode(&req, &n);
	CHECK_EQ_INT(tp_msg_request_decode(buf, n, &out), -1);
	free(buf);
	json_decref(in);
	req.inputs = NULL;
	buf = tp_msg_request_encode(&req, &n);
	CHECK_EQ_INT(tp_msg_request_decode(buf, n, &out), 0);
	CHECK(out.inputs == NULL);
	tp_request_free(&out);
	free(buf);
}

/* Tool calls: both directions round-trip; the host's decoder refuses a bad
 * name, arguments that are not an object or over the exec's caps, and any cut. */
static void test_tool_msgs(void)
{
	struct tp_limits lim;
	struct tp_tool_call c = { .name = "web.search_v2" }, cout;
	struct tp_tool_result res = { .status = TP_TOOL_OK }, rout;
	size_t n;
	char *buf;

	tp_limits_default(&lim);
	c.arguments = json_loads("{\"q\": \"x\", \"n\": [1, 2]}", 0, NULL);
	buf = tp_msg_tool_call_encode(&c, &n);
	CHECK_EQ_INT(tp_msg_type(buf, n), TP_MSG_TOOL_CALL);
	CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), 0);
	CHECK_EQ_STR(cout.name, "web.search_v2");
	CHECK(json_equal(cout.arguments, c.arguments));
	tp_tool_call_free(&cout);
	for (size_t k = 0; k < n; k++)
		CHECK_EQ_INT(tp_msg_tool_call_decode(buf, k, &lim, &cout), -1);
	lim.result_depth = 1; /* [1, 2] is at depth 2 */
	CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), -1);
	tp_limits_default(&lim);
	lim.result_bytes = 10;
	CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), -1);
	tp_limits_default(&lim);
	free(buf);
	const char *bad[] = { "", "a b", "x/y", "\xc3\xa9" };
	char long_name[66];
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	CHECK(tp_tool_name_ok(long_name, 64) && !tp_tool_name_ok(long_name, 65));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(c.name, sizeof c.name, "%s", bad[i]);
		buf = tp_msg_tool_call_encode(&c, &n);
		CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), -1);
		CHECK(cout.arguments == NULL);
		free(buf);
	}
	snprintf(c.name, sizeof c.name, "ok");
	json_decref(c.arguments);
	c.arguments = json_array(); /* arguments must be an object */
	buf = tp_msg_tool_call_encode(&c, &n);
	CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), -1);
	free(buf);
	json_decref(c.arguments);
	/* The result: a value, or a message. */
	res.value = json_loads("[\"v\", null]", 0, NULL);
	buf = tp_msg_tool_result_encode(&res, &n);
	CHECK_EQ_INT(tp_msg_type(buf, n), TP_MSG_TOOL_RESULT);
	CHECK_EQ_INT(tp_msg_tool_call_decode(buf, n, &lim, &cout), -1); /* not a call */
	CHECK_EQ_INT(tp_msg_tool_result_decode(buf, n, &lim, &rout), 0);
	CHECK(rout.status == TP_TOOL_OK && json_equal(rout.value, res.value));
	tp_tool_result_free(&rout);
	free(buf);
	json_decref(res.value);
	res = (struct tp_tool_result){ .status = TP_TOOL_REFUSED };
	tp_text_set(&res.message, "no", 2, TP_TOOL_MESSAGE_MAX);
	buf = tp_msg_tool_result_encode(&res, &n);
	CHECK_EQ_INT(tp_msg_tool_result_decode(buf, n, &lim, &rout), 0);
	CHECK(rout.status == TP_TOOL_REFUSED && strcmp(rout.message.s, "no") == 0);
	tp_tool_result_free(&rout);
	buf[8] = 7; /* no such status */
	CHECK_EQ_INT(tp_msg_tool_result_decode(buf, n, &lim, &rout), -1);
	free(buf);
	tp_tool_result_free(&res);
	CHECK_EQ_INT(tp_msg_type("xx", 2), -1);
}

/* A text above its cap is cut within the cap and says how much was cut. */
static void test_text_cut(void)
{
	struct tp_text t;
	char big[1000];

	memset(big, 'a', sizeof big);
	CHECK_EQ_INT(tp_text_set(&t, big, sizeof big, 100), 0);
	CHECK(t.n <= 100 && strstr(t.s, "bytes cut)") != NULL);
	tp_text_free(&t);
	CHECK_EQ_INT(tp_text_set(&t, "a\0b", 3, 100), 0);
	CHECK(t.n == 3 && memcmp(t.s, "a\0b", 3) == 0);
	tp_text_free(&t);
}

static const char *err_field(json_t *res, const char *k)
{
	return json_string_value(json_object_get(json_object_get(res, "error"), k));
}

static void test_build(void)
{
	struct tp_limits l;
	struct tp_shm_view v;
	tp_limits_default(&l);
	memset(&v, 0, sizeof v);
	v.syscall_nr = -1;
	v.tripped_limit = -1;
	v.out[0] = "part\xff";
	v.len[0] = 5;
	v.out[1] = "";
	struct tp_outcome o = { .shm = &v, .limits = &l, .cpu_ms = -1, .wall_ms = 12.5 };
	struct tp_err timeout = { 0 };

	tp_err_set(&timeout, TP_KIND_TIMEOUT, TP_LAYER_HOST, 0, "%s",
		   tp_limit_message(TP_LIMIT_WALL_MS));
	o.host = &timeout;
	json_t *res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "timeout");
	CHECK_EQ_STR(err_field(res, "layer"), "host");
	CHECK_EQ_STR(json_string_value(json_object_get(res, "stdout")), "part\xef\xbf\xbd");
	CHECK(json_is_false(json_object_get(res, "ok")));
	json_decref(res);

	o.host = NULL;
	o.exited = 1;
	o.status = SIGSEGV; /* a wait status for "killed by SIGSEGV" */
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "crashed");
	CHECK_EQ_STR(err_field(res, "layer"), "process");
	CHECK_EQ_STR(err_field(res, "signal"), "SIGSEGV");
	json_decref(res);

	o.status = TP_EXIT_VIOLATION << 8;
	v.syscall_nr = 41;
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "sandbox_violation");
	CHECK_EQ_STR(err_field(res, "layer"), "kernel");
	CHECK_EQ_STR(err_field(res, "syscall"), "socket");
	CHECK_EQ_INT(
	    json_integer_value(json_object_get(json_object_get(res, "error"), "syscall_nr")), 41);
	json_decref(res);

	/* A kill by SIGSYS names no call: syscall "unknown", syscall_nr null. */
	o.status = SIGSYS;
	v.syscall_nr = -1;
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "sandbox_violation");
	CHECK_EQ_STR(err_field(res, "syscall"), "unknown");
	CHECK(json_is_null(json_object_get(json_object_get(res, "error"), "syscall_nr")));
	json_decref(res);

	o.status = SIGXCPU;
	v.syscall_nr = -1;
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "cpu_limit");
	CHECK_EQ_STR(err_field(res, "layer"), "kernel");
	json_decref(res);

	/* The sticky flag beats a reply that claims success. */
	struct tp_reply reply = { .ok = 1, .value = json_integer(1), .usage = { 1, 2, 500 } };
	o.reply = &reply;
	o.exited = 0;
	v.tripped = TP_KIND_INSTRUCTION_LIMIT;
	v.tripped_limit = TP_LIMIT_INSTRUCTIONS;
	v.limit_value = 1000;
	v.limit_used = 1000;
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "instruction_limit");
	CHECK_EQ_STR(err_field(res, "layer"), "language");
	json_t *lim = json_object_get(json_object_get(res, "error"), "limit");
	CHECK_EQ_STR(json_string_value(json_object_get(lim, "name")), "instructions");
	CHECK_EQ_INT(json_integer_value(json_object_get(lim, "used")), 1000);
	CHECK(json_is_null(json_object_get(res, "value")));
	CHECK(json_is_null(json_object_get(json_object_get(res, "error"), "type")));
	json_decref(res);

	/* A result above result_bytes is said as such, not as "output limit". */
	v.tripped = TP_KIND_OUTPUT_LIMIT;
	v.tripped_limit = TP_LIMIT_RESULT_BYTES;
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "output_limit");
	CHECK_EQ_STR(err_field(res, "message"), "result larger than result_bytes");
	json_decref(res);

	/* A policy kill through the page (an audit tripwire) carries its note. */
	o.reply = NULL;
	o.exited = 1;
	o.status = TP_EXIT_LIMIT << 8;
	v.tripped = TP_KIND_POLICY_VIOLATION;
	v.tripped_limit = -1;
	snprintf(v.note, sizeof v.note, "audit event 'os.system' is not allowed");
	res = tp_result_build(&o);
	CHECK_EQ_STR(err_field(res, "kind"), "policy_violation");
	CHECK_EQ_STR(err_field(res, "layer"), "language");
	CHECK_EQ_STR(err_field(res, "message"), "audit event 'os.system' is not allowed");
	CHECK(json_object_get(json_object_get(res, "error"), "limit") == NULL);
	json_decref(res);
	o.reply = &reply;
	o.exited = 0;

	v.tripped = 0;
	res = tp_result_build(&o);
	CHECK(json_is_true(json_object_get(res, "ok")));
	CHECK(json_is_null(json_object_get(res, "error")));
	CHECK_EQ_INT(json_integer_value(json_object_get(res, "value")), 1);
	CHECK_EQ_INT(
	    json_integer_value(json_object_get(json_object_get(res, "usage"), "memory_peak_bytes")),
	    2);
	json_decref(res);
	tp_reply_free(&reply);
}

static void test_utf8(void)
{
	json_t *j = tp_utf8_json("a\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\xc0\xaf", 12);
	const char *s = json_string_value(j);
	/* é kept, a surrogate (3 bytes) and an overlong (2 bytes) become U+FFFD each byte. */
	CHECK_EQ_STR(s, "a\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xf0\x9f\x98\x80\xef\xbf\xbd"
			"\xef\xbf\xbd");
	json_decref(j);
}

int main(void)
{
	pols.set = tp_policy_set_new(NULL);
	CHECK(pols.set != NULL);
	pols.deflt = tp_policy_set_find(pols.set, "standard");
	test_linebuf();
	test_linebuf_tool_answer();
	test_parse();
	test_parse_batch();
	test_initialize();
	test_modern_era();
	test_file_uris();
	test_exec_params();
	test_fault_cases();
	test_frames();
	test_check_reply();
	test_reply_rich();
	test_request_msg();
	test_tool_msgs();
	test_text_cut();
	test_nonfinite();
	test_text_is_value();
	test_build();
	test_utf8();
	CHECK(splits > 0); /* the value_json replies were split */
	return tp_test_done("test_proto");
}
