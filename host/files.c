/*
 * files.c — sessions' workspaces: a private directory per session (under one
 * base the host makes at start), read-write for that session's worker alone
 * (Landlock, sandbox/lockdown.c) and its working directory; the host moves
 * files in and out with sandbox/session/files/put, get and list, and removes
 * the directory when the session ends.
 *
 * The host treats the directory as hostile: its worker may have made anything
 * there it can. Every path a client names is relative, of plain components
 * (no "", ".", "..", NUL), at most 8 deep, and is walked one component at a
 * time from the workspace's fd with O_NOFOLLOW (workspace.c's walk), so
 * neither ".." nor a symlink (which the worker cannot make, but a bug might)
 * leads out. MCP's resources/read reads a file the same way, by its
 * tidepool://sessions/SID/files/PATH URI.
 */
#include "host_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "mcp.h"
#include "utf8.h"

#define NOBODY 65534
#define MAX_DEPTH TP_WS_MAX_DEPTH
#define MOVE_MAX (8u << 20) /* the most one put or get carries */

static const struct tp_policy *policy_of(const struct tp_host *h, const struct session *s)
{
	return h->zyg[s->zi].policy;
}

/* ---- paths ------------------------------------------------------------------------ */

/* A client's path: relative, plain components. NULL, or why not. */
static const char *bad_path(const char *p, size_t n)
{
	size_t depth = 1, seg = 0;
	if (n == 0)
		return "is empty";
	if (n > 1024)
		return "is longer than 1024 bytes";
	if (memchr(p, '\0', n) != NULL)
		return "holds a NUL byte";
	if (p[0] == '/')
		return "must be relative to the workspace";
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/') {
			if (++seg > 255)
				return "has a name longer than 255 bytes";
			continue;
		}
		const char *c = p + i - seg;
		if (seg == 0)
			return "has an empty name (a '//' or a trailing '/')";
		if ((seg == 1 && c[0] == '.') || (seg == 2 && c[0] == '.' && c[1] == '.'))
			return "may not name '.' or '..'";
		seg = 0;
		if (i < n && ++depth > MAX_DEPTH)
			return "is deeper than 8 names";
	}
	return NULL;
}

/* ---- the methods -------------------------------------------------------------------- */

static void answer(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
		   const struct session *s, json_t *r)
{
	r = tp_hpolicy_redact_file(&h->hp[s->zi / TP_NLANGS], r); /* names and contents */
	if (r == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, r));
}

static int refuse(struct client *c, const struct tp_rpc *rpc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(struct client *c, const struct tp_rpc *rpc, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS, msg);
	return -1;
}

static uint64_t move_max(const struct tp_host *h, const struct session *s)
{
	uint64_t cap = policy_of(h, s)->session.workspace_bytes;
	return cap < MOVE_MAX ? cap : MOVE_MAX;
}

/* Writes n bytes to path (the directories on the way made): {path, bytes}, or
 * NULL with msg (a client's mistake) or msg empty (out of memory). */
static json_t *do_put(struct tp_host *h, struct session *s, const char *path,
		      const unsigned char *bytes, size_t n, int append, char *msg, size_t len)
{
	uint64_t cap = move_max(h, s);
	if ((uint64_t)n > cap) {
		snprintf(msg, len, "the file is larger than %" PRIu64 " bytes (%s)", cap,
			 cap == MOVE_MAX ? "what one put carries" : "session.workspace_bytes");
		return NULL;
	}
	const char *leaf;
	int dir = tp_ws_walk(s->ws_dir, path, 1, &leaf);
	/* Non-blocking: code may have left a FIFO there, which would hold the
	 * host in open() or write() for as long as it likes. */
	int fd = dir >= 0 ? openat(dir, leaf,
				   O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_NOFOLLOW |
				       O_NONBLOCK | O_CLOEXEC,
				   0600)
			  : -1;
	int e = errno;
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		snprintf(msg, len, "'%.200s' in the workspace is not a regular file", path);
		if (dir >= 0)
			close(dir);
		return NULL;
	}
	if (dir >= 0)
		close(dir);
	/* A file put in parts (append) is held to the workspace's cap as a whole. */
	uint64_t ws = policy_of(h, s)->session.workspace_bytes;
	if (fd >= 0 && append && (uint64_t)st.st_size + n > ws) {
		close(fd);
		snprintf(msg, len,
			 "'%.200s' would be %" PRIu64 " bytes, more than %" PRIu64
			 " (session.workspace_bytes)",
			 path, (uint64_t)st.st_size + n, ws);
		return NULL;
	}
	uint64_t before = fd >= 0 && append ? (uint64_t)st.st_size : 0;
	size_t off = 0;
	while (fd >= 0 && off < n) {
		ssize_t w = write(fd, bytes + off, n - off);
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			break;
		}
		off += (size_t)w;
	}
	if (fd >= 0 && geteuid() == 0)
		(void)fchown(fd, NOBODY, NOBODY);
	if (fd >= 0)
		close(fd);
	if (fd < 0 || off < n) {
		snprintf(msg, len, "could not write '%.200s' in the workspace: %s", path,
			 strerror(e));
		return NULL;
	}
	msg[0] = '\0';
	return json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)(before + n));
}

/* Reads path: {path, bytes, data (base64)}, or with as_text {path, bytes, text}
 * when the file is UTF-8 (else data); NULL as do_put. */
static json_t *do_get(struct tp_host *h, struct session *s, const char *path, int as_text,
		      int64_t at, char *msg, size_t len)
{
	uint64_t cap = move_max(h, s);
	unsigned char *bytes;
	size_t n;
	uint64_t size = 0;
	msg[0] = '\0';
	if (tp_ws_read(s->ws_dir, path, cap, at, &size, &bytes, &n) != 0) {
		if (errno == EFBIG)
			snprintf(msg, len,
				 "'%.200s' is %zu bytes, more than the %" PRIu64
				 " one get carries: get it in parts with 'offset'",
				 path, n, cap);
		else if (errno != ENOMEM)
			snprintf(msg, len, "no file '%.200s' in the workspace", path);
		return NULL;
	}
	json_t *res = tp_ws_content(path, bytes, n, as_text, "text", "data");
	free(bytes);
	if (res != NULL && at >= 0) { /* a part: where, and of how much */
		json_object_set_new(res, "offset", json_integer(at));
		json_object_set_new(res, "size", json_integer((json_int_t)size));
	}
	return res;
}

/* A listing's entry: {path, bytes}, or {path_b64, bytes} when the path is not
 * UTF-8 (JSON cannot carry it as a string): its bytes in base64. */
static json_t *entry(const char *path, json_int_t bytes)
{
	if (tp_utf8_valid(path, strlen(path)))
		return json_pack("{s:s, s:I}", "path", path, "bytes", bytes);
	size_t n = strlen(path);
	char *b = malloc(tp_base64_encoded_len(n) + 1);
	if (b == NULL)
		return NULL;
	tp_base64_encode((const unsigned char *)path, n, b);
	json_t *e = json_pack("{s:s, s:I}", "path_b64", b, "bytes", bytes);
	free(b);
	return e;
}

static int list_one(void *ctx, const char *path, size_t len, const struct stat *st)
{
	(void)len;
	json_t *e = entry(path, (json_int_t)st->st_size);
	return e == NULL || json_array_append_new(ctx, e) != 0;
}

/* An entry's path as bytes (path_b64 decoded) into buf; its length. */
static size_t raw_path(const json_t *e, unsigned char *buf, size_t cap)
{
	const json_t *p = json_object_get(e, "path");
	if (p != NULL) {
		size_t n = json_string_length(p);
		n = n < cap ? n : cap;
		memcpy(buf, json_string_value(p), n);
		return n;
	}
	p = json_object_get(e, "path_b64");
	if (json_string_length(p) / 4 * 3 > cap)
		return 0;
	long n = tp_base64_decode(json_string_value(p), json_string_length(p), buf);
	return n > 0 ? (size_t)n : 0;
}

/* By path, byte by byte (whether the path is given as text or in base64). */
static int by_path(const void *a, const void *b)
{
	unsigned char x[MAX_DEPTH * 256 + 16], y[sizeof x];
	size_t nx = raw_path(*(json_t *const *)a, x, sizeof x);
	size_t ny = raw_path(*(json_t *const *)b, y, sizeof y);
	int c = memcmp(x, y, nx < ny ? nx : ny);
	return c != 0 ? c : nx < ny ? -1 : nx > ny;
}

static json_t *do_list(struct session *s)
{
	json_t *all = json_array();
	struct tp_ws_scan sc = { 0 };
	if (all != NULL)
		tp_ws_scan(s->ws_dir, list_one, all, &sc);
	/* Sorted by path: one answer for one directory. */
	size_t n = all ? json_array_size(all) : 0;
	json_t **v = n ? malloc(n * sizeof *v) : NULL;
	json_t *sorted = json_array();
	for (size_t i = 0; v != NULL && i < n; i++)
		v[i] = json_array_get(all, i);
	if (v != NULL)
		qsort(v, n, sizeof *v, by_path);
	for (size_t i = 0; v != NULL && sorted != NULL && i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(all);
	if (all == NULL || sorted == NULL || json_array_size(sorted) != n) {
		json_decref(sorted);
		return NULL;
	}
	return json_pack("{s:o, s:b}", "files", sorted, "complete", !sc.full && !sc.hidden);
}

void tp_files_method(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	/* sandbox/session/files/put, get or list (host.c's registry routes them here) */
	const char *what = strrchr(rpc->method, '/') + 1;
	static const char *const keys_put[] = { "session_id", "path", "data", "append", NULL };
	static const char *const keys_get[] = { "session_id", "path", "offset", NULL };
	static const char *const keys_list[] = { "session_id", NULL };
	const char *const *keys = strcmp(what, "put") == 0   ? keys_put
				  : strcmp(what, "get") == 0 ? keys_get
							     : keys_list;
	const char *key;
	json_t *val;
	if (!json_is_object(rpc->params)) {
		refuse(c, rpc, "params must be an object with 'session_id'");
		return;
	}
	json_object_foreach(rpc->params, key, val)
	{
		int ok = 0;
		for (size_t i = 0; keys[i] != NULL; i++)
			ok |= strcmp(keys[i], key) == 0;
		if (!ok) {
			refuse(c, rpc, "unknown parameter '%.64s'", key);
			return;
		}
	}
	json_t *sid = json_object_get(rpc->params, "session_id");
	if (!json_is_string(sid)) {
		refuse(c, rpc, "'session_id' must be a string");
		return;
	}
	struct session *s = tp_sess_find(h, c, json_string_value(sid));
	if (s == NULL) {
		tp_sess_unknown(h, c, rpc->id, json_string_value(sid));
		return;
	}
	if (s->ws_dir < 0) {
		if (policy_of(h, s)->session.workspace_bytes == 0)
			refuse(c, rpc,
			       "session '%s' has no workspace (policy '%s' has "
			       "session.workspace_bytes 0)",
			       s->id, policy_of(h, s)->name);
		else
			refuse(c, rpc,
			       "session '%s' has no workspace: a workspace needs Landlock, which "
			       "this kernel lacks",
			       s->id);
		return;
	}
	if (keys == keys_list) {
		answer(h, c, rpc, s, do_list(s));
		return;
	}
	json_t *p = json_object_get(rpc->params, "path");
	const char *why = json_is_string(p) ? bad_path(json_string_value(p), json_string_length(p))
					    : "must be a string";
	if (why != NULL) {
		refuse(c, rpc, "'path' %s", why);
		return;
	}
	char msg[512];
	json_t *r;
	if (keys == keys_put) {
		json_t *data = json_object_get(rpc->params, "data");
		size_t n = json_is_string(data) ? json_string_length(data) : 0;
		unsigned char *bytes = json_is_string(data) ? malloc(n / 4 * 3 + 1) : NULL;
		long got = bytes ? tp_base64_decode(json_string_value(data), n, bytes) : -1;
		if (!json_is_string(data)) {
			refuse(c, rpc, "'data' must be a string: the file's bytes in base64");
			return;
		}
		if (bytes == NULL) {
			tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
		if (got < 0) {
			free(bytes);
			refuse(c, rpc, "'data' is not base64 (RFC 4648, with padding)");
			return;
		}
		json_t *app = json_object_get(rpc->params, "append");
		if (app != NULL && !json_is_boolean(app)) {
			free(bytes);
			refuse(c, rpc, "'append' must be true or false");
			return;
		}
		r = do_put(h, s, json_string_value(p), bytes, (size_t)got, json_is_true(app), msg,
			   sizeof msg);
		free(bytes);
	} else {
		json_t *o = json_object_get(rpc->params, "offset");
		if (o != NULL && (!json_is_integer(o) || json_integer_value(o) < 0)) {
			refuse(c, rpc, "'offset' must be an integer, 0 or more");
			return;
		}
		r = do_get(h, s, json_string_value(p), 0, o ? (int64_t)json_integer_value(o) : -1,
			   msg, sizeof msg);
	}
	if (r == NULL && msg[0] != '\0')
		refuse(c, rpc, "%s", msg);
	else
		answer(h, c, rpc, s, r);
}

/* ---- MCP: write_file, read_file, list_files ------------------------------------------- */

void tp_files_mcp_tool(struct tp_host *h, struct client *c, const struct tp_rpc *rpc,
		       const char *name)
{
	json_t *args = json_object_get(rpc->params, "arguments");
	json_t *sid = json_object_get(args, "session_id"), *p = json_object_get(args, "path");
	json_t *text = json_object_get(args, "text");
	int wr = strcmp(name, "write_file") == 0, ls = strcmp(name, "list_files") == 0;
	size_t want = ls ? 1 : wr ? 3 : 2;
	char msg[512] = "";
	json_t *r = NULL;
	struct session *s = json_is_string(sid) ? tp_sess_find(h, c, json_string_value(sid)) : NULL;
	const char *why;
	if (!json_is_object(args) || !json_is_string(sid) || json_object_size(args) != want ||
	    (!ls && !json_is_string(p)) || (wr && !json_is_string(text)))
		snprintf(msg, sizeof msg, "%s takes {%s}", name,
			 ls   ? "\"session_id\""
			 : wr ? "\"session_id\", \"path\", \"text\""
			      : "\"session_id\", \"path\"");
	else if (s == NULL)
		snprintf(msg, sizeof msg, "unknown or ended session '%.40s'",
			 json_string_value(sid));
	else if (s->ws_dir < 0)
		snprintf(msg, sizeof msg, "session '%s' has no workspace", s->id);
	else if (!ls && (why = bad_path(json_string_value(p), json_string_length(p))) != NULL)
		snprintf(msg, sizeof msg, "'path' %s", why);
	else if (ls)
		r = do_list(s);
	else if (wr)
		r = do_put(h, s, json_string_value(p),
			   (const unsigned char *)json_string_value(text), json_string_length(text),
			   0, msg, sizeof msg);
	else
		r = do_get(h, s, json_string_value(p), 1, -1, msg, sizeof msg);
	if (r != NULL) /* names and contents */
		r = tp_hpolicy_redact_file(&h->hp[s->zi / TP_NLANGS], r);
	json_t *res = r != NULL ? tp_mcp_tool_value(r, 0) : msg[0] ? tp_mcp_tool_text(msg) : NULL;
	tp_answer_tool_reply(c, rpc->id, rpc->params, res);
}

/* ---- MCP: resources/read of tidepool://sessions/SID/files/PATH ------------------------- */

static void no_resource(struct client *c, const struct tp_rpc *rpc, int code, const char *msg,
			const json_t *uri)
{
	json_t *data = json_pack("{s:O}", "uri", uri);
	tp_out_emit(c, rpc->id, tp_rpc_error(rpc->id, code, msg, data));
}

void tp_files_resource_read(struct tp_host *h, struct client *c, struct tp_rpc *rpc)
{
	/* Not found: -32002 before 2026-07-28, -32602 in it (its resources page). */
	int nf = tp_mcp_modern(rpc->params) ? TP_RPC_INVALID_PARAMS : -32002;
	json_t *uri = json_object_get(rpc->params, "uri");
	char sid[SESSION_ID_LEN + 1], path[1024 + 1], msg[512];
	size_t plen;
	if (!json_is_object(rpc->params) || !json_is_string(uri)) {
		tp_out_error(c, rpc->id, TP_RPC_INVALID_PARAMS,
			     "Invalid params: resources/read takes {\"uri\": a string}");
		return;
	}
	/* Another client's session is not found, as one that never was: no
	 * answer tells a client whether another's exists. */
	struct session *s = NULL;
	const char *why = NULL;
	if (tp_mcp_file_uri_parse(json_string_value(uri), json_string_length(uri), sid, sizeof sid,
				  path, sizeof path, &plen) == 0 &&
	    (s = tp_sess_find(h, c, sid)) != NULL && s->ws_dir >= 0)
		why = bad_path(path, plen);
	if (s == NULL || s->ws_dir < 0) {
		no_resource(c, rpc, nf, "Resource not found", uri);
		return;
	}
	if (why != NULL) {
		snprintf(msg, sizeof msg, "Resource not found: its path %s", why);
		no_resource(c, rpc, nf, msg, uri);
		return;
	}
	uint64_t cap = move_max(h, s);
	unsigned char *bytes;
	size_t n;
	if (tp_ws_read(s->ws_dir, path, cap, -1, NULL, &bytes, &n) != 0) {
		if (errno == ENOMEM) {
			tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
		} else if (errno == EFBIG) {
			snprintf(msg, sizeof msg,
				 "Invalid params: '%.200s' is %zu bytes, more than the %" PRIu64
				 " one read carries",
				 path, n, cap);
			no_resource(c, rpc, TP_RPC_INVALID_PARAMS, msg, uri);
		} else {
			no_resource(c, rpc, nf, "Resource not found", uri);
		}
		return;
	}
	json_t *r = tp_ws_content(path, bytes, n, 1, "text", "data");
	free(bytes);
	/* Its bytes and its URI redacted, as read_file's contents and path. */
	const struct tp_hpolicy *hp = &h->hp[s->zi / TP_NLANGS];
	r = tp_hpolicy_redact_file(hp, r);
	json_t *one = r ? json_pack("{s:O, s:s}", "uri", uri, "mimeType", tp_mcp_mime(path)) : NULL;
	one = tp_hpolicy_redact(hp, one);
	json_t *text = json_object_get(r, "text");
	if (one != NULL)
		json_object_set(one, text ? "text" : "blob",
				text ? text : json_object_get(r, "data"));
	json_decref(r);
	json_t *res = one ? json_pack("{s:[o]}", "contents", one) : NULL;
	if (res != NULL && tp_mcp_modern(rpc->params)) { /* a file changes: never cached */
		json_object_set_new(res, "ttlMs", json_integer(0));
		json_object_set_new(res, "cacheScope", json_string("private"));
	}
	res = tp_mcp_stamp(res, rpc->params);
	if (res == NULL)
		tp_out_error(c, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
	else
		tp_out_emit(c, rpc->id, tp_rpc_result(rpc->id, res));
}
