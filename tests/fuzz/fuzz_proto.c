/*
 * fuzz_proto.c — libFuzzer harness for the client side of the host: bytes from
 * stdin through tp_linebuf, tp_rpc_parse and the param parsers, as the host
 * loop would dispatch them, without starting a zygote. Invariants checked:
 * every fault has an encodable reply, accepted limits never exceed the ceiling.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec_params.h"
#include "jsonrpc.h"
#include "langs.h"
#include "limit.h"
#include "linebuf.h"
#include "mcp.h"
#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) ((c) ? (void)0 : abort())

static void send_reply(json_t *reply)
{
	size_t len = 0;
	char *line;

	if (reply == NULL)
		return;
	line = tp_rpc_encode(reply, &len);
	CHECK(line != NULL);
	CHECK(len > 0 && line[len - 1] == '\n' && memchr(line, '\n', len - 1) == NULL);
	free(line);
	json_decref(reply);
}

/* Equal as compact text: json_equal reads object keys as C strings, so keys
 * that differ after a NUL byte would compare equal (and a NUL key not at all). */
static int same_text(const json_t *a, const json_t *b)
{
	char *x = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
	char *y = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
	int same = x != NULL && y != NULL && strcmp(x, y) == 0;

	free(x);
	free(y);
	return same;
}

static void check_exec(const struct tp_exec_params *p, const struct tp_limits *ceiling)
{
	CHECK((unsigned)p->lang < TP_NLANGS);
	CHECK(p->code != NULL);
	CHECK(p->inputs == NULL || json_is_object(p->inputs));
	for (int i = 0; i < TP_LIMIT__COUNT; i++) {
		uint64_t want = tp_limit_get(&p->limits, (enum tp_limit_id)i);
		uint64_t cap = tp_limit_get(ceiling, (enum tp_limit_id)i);
		CHECK(cap == 0 || (want > 0 && want <= cap)); /* a request only tightens */
	}
	/* What the host sends a worker must come back identical (common/msg.h). */
	struct tp_request req = { .code = p->code,
				  .code_len = p->code_len,
				  .inputs = p->inputs,
				  .limits = p->limits,
				  .has_seed = p->has_seed,
				  .seed = (uint64_t)p->seed },
			  back;
	size_t n;
	char *buf = tp_msg_request_encode(&req, &n);
	CHECK(buf != NULL && tp_msg_request_decode(buf, n, &back) == 0);
	CHECK(memcmp(&back.limits, &p->limits, sizeof back.limits) == 0);
	CHECK(back.code_len == p->code_len && memcmp(back.code, p->code, p->code_len) == 0);
	CHECK(back.has_seed == p->has_seed && (!p->has_seed || back.seed == (uint64_t)p->seed));
	CHECK(p->inputs == NULL ? back.inputs == NULL : same_text(back.inputs, p->inputs));
	tp_request_free(&back);
	free(buf);
}

/* Dispatch like the host: each params parser sees the params of every method,
 * so all of them are reached from any seed. */
static struct tp_exec_policies pols;

static void dispatch(const struct tp_rpc *rpc)
{
	struct tp_exec_params p;
	struct tp_err err = { 0 };

	if (tp_exec_params_parse(rpc->params, &pols, NULL, &p, &err) == 0)
		check_exec(&p, &p.policy->limits);
	else
		send_reply(tp_rpc_error(rpc->id, TP_RPC_INVALID_PARAMS, err.msg, NULL));
	tp_err_clear(&err);
	if (tp_exec_params_parse_tool(rpc->params, &pols, NULL, &p, &err) == 0) {
		check_exec(&p, &p.policy->limits);
		CHECK(p.tool_call == 1);
	} else {
		send_reply(tp_rpc_error(rpc->id, TP_RPC_INVALID_PARAMS, err.msg, NULL));
	}
	if (strcmp(rpc->method, "initialize") == 0 || json_is_object(rpc->params)) {
		const char *v = tp_mcp_initialize_version(rpc->params);
		json_t *r = v ? tp_mcp_initialize(v, pols.deflt) : NULL;
		CHECK(v == NULL || r != NULL);
		if (r != NULL)
			send_reply(tp_rpc_result(rpc->id, tp_mcp_stamp(r, rpc->params)));
	}
	if (strcmp(rpc->method, "tools/list") == 0)
		send_reply(tp_rpc_result(
		    rpc->id, tp_mcp_tools_list(pols.deflt, tp_mcp_modern(rpc->params))));
	if (strcmp(rpc->method, "tools/call") == 0 && json_is_object(rpc->params))
		send_reply(tp_rpc_result(rpc->id, tp_mcp_tool_result(json_deep_copy(rpc->params))));
	/* A resources/read URI: parsed, its path encoded back, parsed again, the same. */
	json_t *uri = json_object_get(rpc->params, "uri");
	char sid[32], path[1025], again[1025];
	size_t plen, alen;
	if (json_is_string(uri) &&
	    tp_mcp_file_uri_parse(json_string_value(uri), json_string_length(uri), sid, sizeof sid,
				  path, sizeof path, &plen) == 0) {
		char *u = tp_mcp_file_uri(sid, path, plen);
		CHECK(u != NULL);
		char sid2[32];
		CHECK(tp_mcp_file_uri_parse(u, strlen(u), sid2, sizeof sid2, again, sizeof again,
					    &alen) == 0);
		CHECK(strcmp(sid, sid2) == 0 && alen == plen && memcmp(path, again, plen) == 0);
		CHECK(tp_mcp_mime(path) != NULL);
		free(u);
	}
	/* The stateless revision's _meta check, and its marks on a result. */
	char msg[200];
	json_t *data;
	int code = tp_mcp_era(rpc->params, msg, sizeof msg, &data);
	CHECK(code == 0 || code == TP_RPC_INVALID_PARAMS || code == TP_MCP_UNSUPPORTED_VERSION);
	CHECK(code == 0 || tp_mcp_modern(rpc->params));
	if (code != 0)
		send_reply(tp_rpc_error(rpc->id, code, msg, data));
	else
		send_reply(
		    tp_rpc_result(rpc->id, tp_mcp_stamp(tp_mcp_discover(pols.deflt), rpc->params)));
}

static void handle_line(const char *line, size_t len)
{
	struct tp_rpc rpc;
	json_t *reply;

	json_t *batch = NULL;
	int r = tp_rpc_parse_batch(line, len, &rpc, &reply, &batch);
	if (r == 1) { /* a batch, as under MCP 2025-03-26: each member alone */
		CHECK(json_is_array(batch) && reply == NULL);
		for (size_t i = 0; i < json_array_size(batch); i++) {
			if (tp_rpc_check(json_incref(json_array_get(batch, i)), &rpc, &reply) !=
			    0) {
				CHECK(rpc.msg == NULL);
				send_reply(reply);
				continue;
			}
			dispatch(&rpc);
			tp_rpc_clear(&rpc);
		}
		json_decref(batch);
		return;
	}
	if (r != 0) {
		CHECK(rpc.msg == NULL);
		send_reply(reply);
		return;
	}
	CHECK(reply == NULL && rpc.method != NULL && json_is_object(rpc.msg));
	dispatch(&rpc);
	tp_rpc_clear(&rpc);
}

static void drain(struct tp_linebuf *lb, int at_eof)
{
	const char *line;
	size_t len;
	enum tp_line_status st;

	while ((st = tp_linebuf_next(lb, at_eof, &line, &len)) != TP_LINE_NONE) {
		if (st != TP_LINE_OK) { /* too long (no allocation fails here) */
			send_reply(
			    tp_rpc_error(NULL, TP_RPC_INVALID_REQUEST, "line too long", NULL));
			continue;
		}
		CHECK(len <= lb->max && memchr(line, '\n', len) == NULL);
		handle_line(line, len);
	}
}

/* data[0]: the line cap (small caps reach the overlong-line paths) and the size
 * of the reads the bytes arrive in; the rest is stdin. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_linebuf lb;

	if (size < 1)
		return 0;
	if (pols.set == NULL) { /* the presets; "strict" is a ceiling with instructions on */
		pols.set = tp_policy_set_new(NULL);
		CHECK(pols.set != NULL);
	}
	pols.deflt = tp_policy_set_find(pols.set, (data[0] & 0x80) ? "strict" : "standard");
	size_t max = (data[0] & 0x40) ? 16 + (data[0] & 0x3f) * 8 : TP_MAX_LINE_DEFAULT;
	size_t chunk = 1 + (data[0] & 0x0f) * 37;
	data++, size--;
	tp_linebuf_init(&lb, max);
	for (size_t off = 0; off < size;) {
		size_t room, n;
		char *p = tp_linebuf_space(&lb, &room);
		CHECK(p != NULL && room > 0);
		n = size - off < chunk ? size - off : chunk;
		n = n < room ? n : room;
		memcpy(p, data + off, n);
		tp_linebuf_commit(&lb, n);
		off += n;
		drain(&lb, 0);
	}
	drain(&lb, 1);
	tp_linebuf_free(&lb);
	return 0;
}
