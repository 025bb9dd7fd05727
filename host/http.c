/*
 * http.c — MCP's Streamable HTTP transport (--listen http://127.0.0.1:PORT),
 * on libmicrohttpd in external-poll mode: its epoll fd is one of the loop's
 * fds, it parses HTTP, and nothing here does. One endpoint, /mcp:
 *   POST    one JSON-RPC message (or a 2025-03-26 batch); answered with the
 *           reply as application/json once every request in it is answered
 *           (the connection is suspended meanwhile), 202 when it held none;
 *   DELETE  ends the MCP session its Mcp-Session-Id names (its client leaves);
 *   GET     405: no server-initiated stream is offered;
 * and /healthz, /readyz, /metrics; under `tidepool playground` also its page at
 * / and the page's files (playground.h), with a strict Content-Security-Policy:
 * the page is one more client of /mcp. An initialize without Mcp-Session-Id opens an MCP
 * session: a client of its own (client.c), named by a 128-bit random id in the
 * Mcp-Session-Id header, kept until DELETE, an hour idle, or the end. A POST
 * without the header (the stateless 2026-07-28 revision, or a native method)
 * is a client for that POST alone.
 *
 * A message the host sends is routed by the request it is about: a reply by
 * its id, sandbox/output and sandbox/tool_call by their exec_id, progress by
 * the progressToken its request carried. One that no SSE stream of its client
 * is open for is dropped, except a tool call, which is refused before it is
 * sent (cannot_ask): the snippet gets the reason.
 *
 * Invariants: only a loopback address is bound (there are no tokens yet); a
 * request whose Host or Origin is not loopback is refused (DNS rebinding); a
 * body larger than the line limit is refused without being kept; no reply is
 * ever written to another exchange than the one whose request it answers.
 * Calls down only (client.c, output.c through the clients); the host's line
 * handler and leave are function pointers it hands over at open.
 */
#include "host_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "playground.h"

#define HTTP_IDLE_S 30                  /* a connection idle this long is closed */
#define SESSION_IDLE_MS (3600.0 * 1000) /* an MCP session unused this long ends */
#define SESSION_ID_HEX 32
/* MCP sessions open at once, at most; per tenant at most a quarter of them. A
 * client that never sends DELETE leaves its session for SESSION_IDLE_MS: this
 * bounds what such clients (or a hostile one) hold. TIDEPOOL_HTTP_SESSIONS_MAX
 * lowers it (tests). */
#define SESSIONS_MAX 4096
#define HANGUP_CHECK_MS 200.0 /* how often a waiting POST's peer is looked at */
#define KEEPALIVE_MS                                                                               \
	15000.0 /* an SSE stream silent this long gets a comment line, so                          \
		 * that no proxy between ends it as idle */

struct http_session {
	struct http_session *next;
	char id[SESSION_ID_HEX + 1];
	struct client *c; /* its tenant is the session's: no other tenant finds it */
	double last_used;
};

/* One POST (or DELETE, GET) being answered: MHD's per-request pointer. */
struct exchange {
	struct exchange *next; /* among its client's, or the stateless ones */
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	int too_big, handled, ready, suspended;
	int stateless; /* its client is its own: it leaves when the exchange ends */
	struct client *c;
	struct http_session *s; /* NULL: its client is this exchange's alone */
	json_t *want;           /* the ids still to be answered */
	json_t *replies;        /* the answers so far, in order (JSON answers) */
	json_t *tokens;         /* the progressTokens its requests carried */
	int sse;                /* answered as text/event-stream */
	int failed;             /* its stream lost a message (out of memory): cut */
	int peer_gone;          /* its peer hung up while it was suspended */
	char *ev;               /* SSE bytes not yet handed to MHD */
	double last_event;      /* tp_now_ms when its stream last had bytes queued */
	size_t ev_len, ev_off, ev_cap;
	int batch;    /* the body was an array */
	int as_array; /* the host answered it with an array (a batch's) */
	char new_session[SESSION_ID_HEX + 1];
	struct tp_tenant *tenant; /* whose bearer token it carried (--tokens), or NULL */
};

struct tp_http {
	struct MHD_Daemon *d;
	int epoll_fd;
	char url[128];
	struct tp_http_ops ops;
	struct http_session *sessions;
	int nsessions, sessions_max;
	struct exchange *open;    /* every exchange waiting for replies */
	struct exchange *feeding; /* the one whose body the host is reading now */
	int loopback;             /* bound to a loopback address: Host and Origin are checked */
	int playground;           /* its page is served (cfg.playground) */
	double keepalive_ms;      /* KEEPALIVE_MS, or TIDEPOOL_SSE_KEEPALIVE_MS (tests) */
	double next_hangup_check; /* tp_now_ms: suspended connections' peers looked at */
};

/* ---- replies: the clients' writer ------------------------------------------------- */

static int id_at(const json_t *ids, const json_t *id)
{
	for (size_t i = 0; i < json_array_size(ids); i++) {
		json_t *x = json_array_get(ids, i);
		if ((json_is_null(x) && (id == NULL || json_is_null(id))) ||
		    (id != NULL && json_equal(x, (json_t *)id)))
			return (int)i;
	}
	return -1;
}

/* The exchange waiting for this reply of client c: the one whose request it
 * answers (by id: any member's, for a batch's array); else, for a reply
 * without a known id (a parse error, a refused batch: id null), the one whose
 * body is being read, since the host answers those at once. */
static struct exchange *route(struct tp_http *t, const struct client *c, const json_t *msg, int *at)
{
	size_t n = json_is_array(msg) ? json_array_size(msg) : 1;
	for (struct exchange *x = t->open; x != NULL; x = x->next) {
		if (x->c != c)
			continue;
		for (size_t i = 0; i < n; i++) {
			const json_t *m = json_is_array(msg) ? json_array_get(msg, i) : msg;
			const json_t *id = json_object_get(m, "id");
			if (id != NULL && !json_is_null(id) && (*at = id_at(x->want, id)) >= 0)
				return x;
		}
	}
	*at = -1;
	return t->feeding != NULL && t->feeding->c == c ? t->feeding : NULL;
}

/* The exchange whose request a message of ours is about: an exec's output or
 * tool call names its exec (the request's id), progress its token. */
static struct exchange *related(struct tp_http *t, const struct client *c, const json_t *msg)
{
	const json_t *params = json_object_get(msg, "params");
	const json_t *exec = json_object_get(params, "exec_id");
	const json_t *token = json_object_get(params, "progressToken");
	for (struct exchange *x = t->open; x != NULL; x = x->next)
		if (x->c == c && ((exec != NULL && id_at(x->want, exec) >= 0) ||
				  (token != NULL && id_at(x->tokens, token) >= 0)))
			return x;
	return NULL;
}

static void wake(struct exchange *x)
{
	if (x->suspended) {
		x->suspended = 0;
		MHD_resume_connection(x->conn);
	}
}

/* One SSE event (data: the message's JSON, one line) queued on x's stream. */
static int sse_push(struct exchange *x, const json_t *msg)
{
	size_t len;
	char *line = tp_rpc_encode(msg, &len); /* ends in '\n': the event's blank line follows */
	static const char head[] = "event: message\ndata: ";
	size_t need = sizeof head - 1 + len + 1;
	if (line == NULL)
		return -1;
	if (x->ev_len + need > x->ev_cap) {
		size_t cap = x->ev_cap ? x->ev_cap : 4096;
		while (cap < x->ev_len + need)
			cap *= 2;
		char *b = realloc(x->ev, cap);
		if (b == NULL) {
			free(line);
			return -1;
		}
		x->ev = b;
		x->ev_cap = cap;
	}
	x->last_event = tp_now_ms();
	memcpy(x->ev + x->ev_len, head, sizeof head - 1);
	memcpy(x->ev + x->ev_len + sizeof head - 1, line, len);
	x->ev[x->ev_len + need - 1] = '\n';
	x->ev_len += need;
	free(line);
	return 0;
}

/* A client's message (stolen): the reply goes to the exchange that carried its
 * request, on its stream or in its JSON body; a message about a request goes
 * on that request's stream, if it has one; anything else is dropped. */
static void emit(void *ctx, json_t *msg)
{
	struct client *c = ctx;
	struct tp_http *t = c->transport;
	const json_t *first = json_is_array(msg) ? json_array_get(msg, 0) : msg;
	int at = -1, reply = json_is_object(first) && json_object_get(first, "method") == NULL;
	struct exchange *x = NULL;
	if (t != NULL && json_is_object(first))
		x = reply ? route(t, c, msg, &at) : related(t, c, msg);
	if (x == NULL || (!reply && (!x->sse || x->peer_gone))) {
		json_decref(msg);
		return;
	}
	if (reply) {
		if (json_is_array(msg) || at < 0)
			json_array_clear(x->want); /* a batch's, or the whole body's answer */
		else
			json_array_remove(x->want, (size_t)at);
	}
	if (x->sse) {
		if (sse_push(x, msg) != 0)
			x->failed = 1; /* a lost message: the stream is cut, not left waiting */
	} else if (json_is_array(msg)) {
		x->as_array = 1;
		json_array_extend(x->replies, msg);
	} else {
		json_array_append(x->replies, msg);
	}
	if (x->handled && json_array_size(x->want) == 0 && !x->ready)
		x->ready = 1;
	if (x->ready || x->sse)
		wake(x);
	json_decref(msg);
}

/* Request id of client c will get no reply (a cancelled MCP call): its POST
 * no longer waits for it. */
static void unanswered(struct client *c, const json_t *id)
{
	struct tp_http *t = c->transport;
	for (struct exchange *x = t ? t->open : NULL; x != NULL; x = x->next) {
		int at = x->c == c ? id_at(x->want, id) : -1;
		if (at < 0)
			continue;
		json_array_remove(x->want, (size_t)at);
		if (x->handled && json_array_size(x->want) == 0 && !x->ready) {
			x->ready = 1;
			wake(x);
		}
		return;
	}
}

/* Why a snippet's tool call cannot be sent to client c now, or NULL: it goes
 * on the SSE stream of the request that runs the exec, and its answer must
 * come back in a later POST of the same MCP session. */
static const char *cannot_ask(const struct client *c, const json_t *exec_id)
{
	struct tp_http *t = c->transport;
	for (struct exchange *x = t ? t->open : NULL; x != NULL; x = x->next) {
		if (x->c != c || id_at(x->want, exec_id) < 0)
			continue;
		if (x->s == NULL)
			return "a tool call over HTTP needs an MCP session (initialize, then "
			       "Mcp-Session-Id): its answer comes in another POST";
		if (!x->sse)
			return "a tool call over HTTP needs a stream back: send Accept: "
			       "application/json, text/event-stream";
		if (x->peer_gone)
			return "the HTTP stream of the call that runs the code has closed";
		return NULL;
	}
	return "the HTTP stream of the call that runs the code has closed";
}

/* ---- sessions ------------------------------------------------------------------------- */

/* The MCP session of this id and tenant: another tenant's is not found. */
static struct http_session *session_find(struct tp_http *t, const char *id,
					 const struct tp_tenant *tenant)
{
	for (struct http_session *s = t->sessions; id != NULL && s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0 && s->c->tenant == tenant)
			return s;
	return NULL;
}

static struct client *http_client(struct tp_host *h, struct tp_http *t, struct tp_tenant *tenant)
{
	if (tp_client_reserve(h) != 0)
		return NULL;
	struct client *c = tp_client_new(h, TP_CLIENT_HTTP, -1, -1);
	if (c == NULL)
		return NULL;
	c->emit = emit;
	c->emit_ctx = c;
	c->cannot_ask = cannot_ask;
	c->unanswered = unanswered;
	c->transport = t;
	c->tenant = tenant;
	c->open = 1;
	return c;
}

static void session_end(struct tp_host *h, struct tp_http *t, struct http_session *s,
			const char *why)
{
	struct http_session **pp = &t->sessions;
	while (*pp != NULL && *pp != s)
		pp = &(*pp)->next;
	if (*pp != NULL) {
		*pp = s->next;
		t->nsessions--;
	}
	for (struct exchange *x = t->open; x != NULL; x = x->next)
		if (x->s == s)
			x->s = NULL; /* its replies are no one's now */
	t->ops.leave(h, s->c, why);
	free(s);
}

static int tenant_sessions(const struct tp_http *t, const struct tp_tenant *tenant)
{
	int n = 0;
	for (const struct http_session *s = t->sessions; s != NULL; s = s->next)
		n += s->c->tenant == tenant;
	return n;
}

/* ---- answering -------------------------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
			       const char *body, size_t len, const char *session_id)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	if (type != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (session_id != NULL && session_id[0] != '\0')
		MHD_add_response_header(r, "Mcp-Session-Id", session_id);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
	enum MHD_Result ok = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ok;
}

/* A JSON-RPC error as the body of an HTTP error (id null). */
static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, int code,
			      const char *msg)
{
	json_t *e = tp_rpc_error(NULL, code, msg, NULL);
	size_t len = 0;
	char *text = e ? tp_rpc_encode(e, &len) : NULL;
	enum MHD_Result r = text ? respond(conn, status, "application/json", text, len, NULL)
				 : respond(conn, status, "text/plain", msg, strlen(msg), NULL);
	free(text);
	json_decref(e);
	return r;
}

static enum MHD_Result answer(struct exchange *x)
{
	size_t n = json_array_size(x->replies), len = 0;
	if (n == 0)
		return respond(x->conn, MHD_HTTP_ACCEPTED, NULL, "", 0, x->new_session);
	json_t *body =
	    x->as_array ? json_incref(x->replies) : json_incref(json_array_get(x->replies, 0));
	/* A body that was no request (not JSON, not JSON-RPC): 400, with the error. */
	const json_t *id = json_object_get(body, "id");
	unsigned status = json_object_get(body, "error") != NULL && (id == NULL || json_is_null(id))
			      ? MHD_HTTP_BAD_REQUEST
			      : MHD_HTTP_OK;
	char *text = tp_rpc_encode(body, &len);
	json_decref(body);
	x->c->bytes_out += text ? len : 0;
	enum MHD_Result r =
	    text ? respond(x->conn, status, "application/json", text, len, x->new_session)
		 : MHD_NO; /* out of memory: the connection is closed */
	free(text);
	return r;
}

/* ---- checks ------------------------------------------------------------------------------ */

/* A loopback host name, with or without a port: localhost, 127.x.y.z, [::1]. */
static int loopback_name(const char *s, size_t n)
{
	char host[64];
	const char *end = memchr(s, ']', n);
	if (n > 0 && s[0] == '[') /* [v6]:port */
		return end != NULL && (size_t)(end - s) == 4 && memcmp(s, "[::1]", 5) == 0;
	const char *colon = memchr(s, ':', n);
	size_t hl = colon ? (size_t)(colon - s) : n;
	if (hl == 0 || hl >= sizeof host)
		return 0;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (strcmp(host, "localhost") == 0)
		return 1;
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* Whether origin is http://HOST (or https://HOST, behind a proxy that ends
 * TLS), the Host this request was sent to: the playground's page calling /mcp
 * of the server that served it. A page of another name that rebinds to us
 * passes too, and has no tenant's token: /mcp answers it 401. */
static int same_origin(const char *host, const char *origin)
{
	const char *p = strncmp(origin, "http://", 7) == 0    ? origin + 7
			: strncmp(origin, "https://", 8) == 0 ? origin + 8
							      : NULL;
	return host != NULL && p != NULL && strcmp(p, host) == 0;
}

/* DNS rebinding: a page of another site that resolves its name to us sends its
 * own Host and Origin. Both must name loopback (an absent Origin is a client
 * that is not a browser). */
static const char *rebinding(const struct tp_http *t, struct MHD_Connection *conn)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	if (!t->loopback) /* a service beyond loopback: its callers are told apart by
			   * their tokens, whatever name they reached it by; browsers
			   * (which send Origin) are not served, but for the playground's
			   * own page (its origin is the Host it was loaded from) */
		return origin == NULL || (t->playground && same_origin(host, origin))
			   ? NULL
			   : "Forbidden: browser origins are served only on loopback";
	if (host == NULL || !loopback_name(host, strlen(host)))
		return "Forbidden: the Host header must name this loopback server";
	if (origin != NULL) {
		const char *p = strstr(origin, "://");
		if (p == NULL || !loopback_name(p + 3, strcspn(p + 3, "/")))
			return "Forbidden: Origin is not a loopback origin";
	}
	return NULL;
}

/* The ids of the requests in a body (a message or a batch): what must be
 * answered before the POST is. A body that is not JSON gets one answer, with
 * id null (the parse error). The progress tokens the requests carry go to
 * tokens: the notifications that name them belong on this POST's stream. */
static json_t *wanted(const char *body, size_t len, int *batch, int *init, json_t *tokens)
{
	json_error_t e;
	json_t *v = json_loadb(body, len, JSON_DECODE_ANY, &e);
	json_t *ids = json_array();
	*batch = json_is_array(v);
	*init = 0;
	if (ids == NULL) {
		json_decref(v);
		return NULL;
	}
	if (v == NULL || (!json_is_object(v) && !json_is_array(v)) ||
	    (json_is_array(v) && json_array_size(v) == 0)) {
		*batch = 0;
		json_array_append_new(ids, json_null());
		json_decref(v);
		return ids;
	}
	for (size_t i = 0; i < (json_is_array(v) ? json_array_size(v) : 1); i++) {
		json_t *m = json_is_array(v) ? json_array_get(v, i) : v;
		json_t *id = json_object_get(m, "id");
		const char *method = json_string_value(json_object_get(m, "method"));
		if (!json_is_object(m)) {
			json_array_append_new(ids, json_null());
			continue;
		}
		if (method == NULL)
			continue; /* a response of the client's: nothing to answer */
		*init |= strcmp(method, "initialize") == 0;
		if (id != NULL)
			json_array_append(ids, id);
		json_t *token = json_object_get(
		    json_object_get(json_object_get(m, "params"), "_meta"), "progressToken");
		if (token != NULL && tokens != NULL)
			json_array_append(tokens, token);
	}
	json_decref(v);
	return ids;
}

/* ---- operations: /healthz, /readyz, /metrics ------------------------------------------ */

/* Ready: not draining, and the default policy's zygotes that start warm are
 * up (a replica that cannot fork a worker takes no traffic). */
static int ready(const struct tp_host *h)
{
	if (h->terminated || h->draining)
		return 0;
	for (int i = 0; i < h->nzyg; i++)
		if (h->zyg[i].policy == h->pols.deflt && h->zyg[i].used && h->zyg[i].pid <= 0)
			return 0;
	return 1;
}

static enum MHD_Result metrics(struct tp_host *h, struct MHD_Connection *conn)
{
	size_t len = 0;
	char *page = tp_metrics_render(h, ready(h), &len);
	if (page == NULL)
		return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, TP_RPC_INTERNAL_ERROR,
			      "out of memory");
	struct MHD_Response *r = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(page);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

/* ---- the playground's page ---------------------------------------------------------------- */

/* Its own files only, no inline script or style, no frame, no form, no
 * request but to this origin (the page is a client of /mcp, nothing more). */
#define PAGE_CSP                                                                                   \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "             \
	"frame-ancestors 'none'"

static enum MHD_Result page(struct MHD_Connection *conn, const struct tp_asset *a)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	MHD_add_response_header(r, "Content-Security-Policy", PAGE_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

/* The asset at url, when the playground is served; else NULL. */
static const struct tp_asset *asset(const struct tp_http *t, const char *method, const char *url)
{
	if (!t->playground || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
		return NULL;
	for (const struct tp_asset *a = tp_playground_assets; a->path != NULL; a++)
		if (strcmp(a->path, url) == 0)
			return a;
	return NULL;
}

/* ---- tenants (--tokens) ------------------------------------------------------------------ */

/* The tenant whose bearer token the request carries, or NULL. */
static struct tp_tenant *bearer(struct tp_host *h, struct MHD_Connection *conn)
{
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	if (a == NULL || strncasecmp(a, "Bearer ", 7) != 0)
		return NULL;
	a += 7;
	while (*a == ' ')
		a++;
	size_t n = strlen(a);
	while (n > 0 && a[n - 1] == ' ')
		n--;
	return n > 0 && n <= 512 ? tp_tenant_by_token(h, a, n) : NULL;
}

/* 401, as RFC 6750 says: a request without a token gets the challenge alone;
 * one with a token that is no tenant's gets error="invalid_token". Nothing of
 * the request is read or run. */
static enum MHD_Result unauthorized(struct MHD_Connection *conn)
{
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	const char *msg = a == NULL ? "Unauthorized: send Authorization: Bearer TOKEN"
				    : "Unauthorized: the bearer token is not valid";
	json_t *e = tp_rpc_error(NULL, TP_RPC_INVALID_REQUEST, msg, NULL);
	size_t len = 0;
	char *text = e ? tp_rpc_encode(e, &len) : NULL;
	json_decref(e);
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    text ? len : strlen(msg), text ? text : (void *)msg, MHD_RESPMEM_MUST_COPY);
	free(text);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				a == NULL ? "Bearer realm=\"tidepool\""
					  : "Bearer realm=\"tidepool\", error=\"invalid_token\"");
	enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return ok;
}

/* ---- MHD's callbacks ---------------------------------------------------------------------- */

static void exchange_unlink(struct tp_http *t, struct exchange *x)
{
	struct exchange **pp = &t->open;
	while (*pp != NULL && *pp != x)
		pp = &(*pp)->next;
	if (*pp != NULL)
		*pp = x->next;
}

/* Whether the client takes an SSE answer: its Accept names text/event-stream
 * (the spec has every client send both types; one that sends only JSON gets
 * JSON, and no message about its request). */
static int accepts_sse(struct MHD_Connection *conn)
{
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept");
	return a != NULL && strstr(a, "text/event-stream") != NULL;
}

/* MHD asks for the next bytes of an SSE answer: what is queued; the end once
 * every request of the POST is answered and said; else nothing yet, and the
 * connection sleeps until emit() wakes it. */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct exchange *x = cls;
	(void)pos;
	if (x->failed || x->peer_gone)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (x->ev_off < x->ev_len) {
		size_t n = x->ev_len - x->ev_off < max ? x->ev_len - x->ev_off : max;
		memcpy(buf, x->ev + x->ev_off, n);
		x->ev_off += n;
		x->c->bytes_out += n;
		if (x->ev_off == x->ev_len)
			x->ev_off = x->ev_len = 0;
		return (ssize_t)n;
	}
	if (x->ready)
		return MHD_CONTENT_READER_END_OF_STREAM;
	x->suspended = 1;
	MHD_suspend_connection(x->conn);
	return 0;
}

/* The POST is answered as an SSE stream: the headers now, its events as they
 * come (what was said while the body was read is queued already). */
static enum MHD_Result stream(struct exchange *x)
{
	x->sse = 1;
	x->last_event = tp_now_ms();
	if (x->ev == NULL && (x->ev = malloc(x->ev_cap = 4096)) == NULL)
		return MHD_NO; /* (room for a keep-alive comment, always) */
	for (size_t i = 0; i < json_array_size(x->replies); i++)
		if (sse_push(x, json_array_get(x->replies, i)) != 0)
			return MHD_NO;
	json_array_clear(x->replies);
	struct MHD_Response *r =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, x, NULL);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	if (x->new_session[0] != '\0')
		MHD_add_response_header(r, "Mcp-Session-Id", x->new_session);
	enum MHD_Result ok = MHD_queue_response(x->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result post(struct tp_host *h, struct tp_http *t, struct exchange *x)
{
	const char *sid = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, "Mcp-Session-Id");
	const char *pv =
	    MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, "MCP-Protocol-Version");
	int init;
	if (x->too_big) {
		char msg[96];
		snprintf(msg, sizeof msg, "Request body larger than %zu bytes", h->cfg.max_line);
		return refuse(x->conn, 413, TP_RPC_INVALID_REQUEST, msg);
	}
	if (pv != NULL && !tp_mcp_version_known(pv))
		return refuse(x->conn, MHD_HTTP_BAD_REQUEST, TP_RPC_INVALID_REQUEST,
			      "Bad Request: unsupported MCP-Protocol-Version");
	x->tokens = json_array();
	x->want = wanted(x->body ? x->body : "", x->len, &x->batch, &init, x->tokens);
	x->replies = json_array();
	if (x->want == NULL || x->replies == NULL || x->tokens == NULL)
		return MHD_NO;
	if (h->draining && sid == NULL && json_array_size(x->want) > 0)
		return refuse(x->conn, MHD_HTTP_SERVICE_UNAVAILABLE, TP_RPC_BUSY,
			      "Service Unavailable: draining (SIGTERM): retry on another replica");
	if (sid != NULL) {
		x->s = session_find(t, sid, x->tenant);
		if (x->s == NULL)
			return refuse(x->conn, MHD_HTTP_NOT_FOUND, TP_RPC_NO_SESSION,
				      "Not Found: no MCP session has this Mcp-Session-Id");
		x->c = x->s->c;
		x->s->last_used = tp_now_ms();
	} else if (init &&
		   (t->nsessions >= t->sessions_max ||
		    (x->tenant != NULL && tenant_sessions(t, x->tenant) >= t->sessions_max / 4))) {
		return refuse(
		    x->conn, MHD_HTTP_SERVICE_UNAVAILABLE, TP_RPC_BUSY,
		    t->nsessions >= t->sessions_max
			? "Service Unavailable: too many MCP sessions are open; end one "
			  "(DELETE) or retry later"
			: "Service Unavailable: this tenant has too many MCP sessions open; "
			  "end one (DELETE)");
	} else if (init) {
		unsigned char raw[SESSION_ID_HEX / 2];
		struct http_session *s = calloc(1, sizeof *s);
		if (s == NULL || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
		    (s->c = http_client(h, t, x->tenant)) == NULL) {
			free(s);
			return refuse(x->conn, MHD_HTTP_SERVICE_UNAVAILABLE, TP_RPC_INTERNAL_ERROR,
				      "out of memory");
		}
		for (size_t i = 0; i < sizeof raw; i++)
			snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
		s->last_used = tp_now_ms();
		s->next = t->sessions;
		t->sessions = s;
		t->nsessions++;
		x->s = s;
		x->c = s->c;
		snprintf(x->new_session, sizeof x->new_session, "%s", s->id);
	} else if ((x->c = http_client(h, t, x->tenant)) == NULL) {
		return refuse(x->conn, MHD_HTTP_SERVICE_UNAVAILABLE, TP_RPC_INTERNAL_ERROR,
			      "out of memory");
	} else {
		x->stateless = 1;
	}
	tp_client_ref(x->c); /* it outlives a DELETE that comes meanwhile */
	x->c->bytes_in += x->len;
	x->next = t->open;
	t->open = x;
	t->feeding = x;
	t->ops.line(h, x->c, x->body ? x->body : "", x->len);
	t->feeding = NULL;
	x->handled = 1;
	if (json_array_size(x->want) == 0) {
		x->ready = 1;
		return answer(x);
	}
	if (accepts_sse(x->conn) && !x->batch)
		return stream(x);
	x->suspended = 1;
	MHD_suspend_connection(x->conn);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct tp_host *h = cls;
	struct tp_http *t = h->http;
	struct exchange *x = *con_cls;
	(void)version;
	if (x == NULL) { /* the headers: decide now what needs a body */
		const char *why = rebinding(t, conn);
		struct tp_tenant *tenant = NULL;
		if (why != NULL)
			return refuse(conn, MHD_HTTP_FORBIDDEN, TP_RPC_INVALID_REQUEST, why);
		if (strcmp(method, "GET") == 0 && strcmp(url, "/healthz") == 0)
			return respond(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3, NULL);
		if (strcmp(method, "GET") == 0 && strcmp(url, "/readyz") == 0)
			return h->terminated || h->draining
				   ? respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
					     "draining\n", 9, NULL)
			       : !ready(h)
				   ? respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
					     "starting\n", 9, NULL)
				   : respond(conn, MHD_HTTP_OK, "text/plain", "ready\n", 6, NULL);
		/* No token, as for the probes: a scraper has none, and the page says
		 * how much, never what (no code, no output, no session id). */
		if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0)
			return metrics(h, conn);
		/* The page needs no token: it holds nothing, and can do nothing
		 * but call /mcp, which does need one (it asks for it). */
		const struct tp_asset *a = asset(t, method, url);
		if (a != NULL)
			return page(conn, a);
		if (strcmp(url, "/mcp") != 0)
			return refuse(conn, MHD_HTTP_NOT_FOUND, TP_RPC_INVALID_REQUEST,
				      "Not Found: the MCP endpoint is /mcp");
		if (h->ntenants > 0 && (tenant = bearer(h, conn)) == NULL)
			return unauthorized(conn);
		if (strcmp(method, "DELETE") == 0) {
			const char *sid =
			    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Mcp-Session-Id");
			struct http_session *s = session_find(t, sid, tenant);
			if (sid == NULL)
				return refuse(conn, MHD_HTTP_BAD_REQUEST, TP_RPC_INVALID_REQUEST,
					      "Bad Request: DELETE needs Mcp-Session-Id");
			if (s == NULL)
				return refuse(conn, MHD_HTTP_NOT_FOUND, TP_RPC_NO_SESSION,
					      "Not Found: no MCP session has this Mcp-Session-Id");
			session_end(h, t, s, "ended by the client (HTTP DELETE)");
			return respond(conn, MHD_HTTP_OK, NULL, "", 0, NULL);
		}
		if (strcmp(method, "POST") != 0)
			return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, TP_RPC_INVALID_REQUEST,
				      "Method Not Allowed: POST a JSON-RPC message; no GET stream "
				      "is offered");
		if ((x = calloc(1, sizeof *x)) == NULL)
			return MHD_NO;
		x->conn = conn;
		x->tenant = tenant;
		*con_cls = x;
		return MHD_YES;
	}
	if (*upload_data_size > 0) { /* a piece of the body */
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (x->too_big || x->len + n > h->cfg.max_line) {
			x->too_big = 1; /* read on and dropped: the answer is 413 */
			free(x->body);
			x->body = NULL;
			x->len = x->cap = 0;
			return MHD_YES;
		}
		if (x->len + n + 1 > x->cap) {
			size_t cap = x->cap ? x->cap : 4096;
			while (cap < x->len + n + 1)
				cap *= 2;
			char *b = realloc(x->body, cap);
			if (b == NULL)
				return MHD_NO;
			x->body = b;
			x->cap = cap;
		}
		memcpy(x->body + x->len, upload_data, n);
		x->len += n;
		return MHD_YES;
	}
	if (!x->handled && x->want == NULL)
		return post(h, t, x);
	if (x->ready) /* resumed: every request of it is answered */
		return answer(x);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct tp_host *h = cls;
	struct tp_http *t = h->http;
	struct exchange *x = *con_cls;
	(void)conn;
	(void)why;
	if (x == NULL)
		return;
	*con_cls = NULL;
	exchange_unlink(t, x);
	if (x->c != NULL) {
		/* A POST's own client leaves with it: what it still runs is
		 * cancelled (its HTTP client went away before the answer). */
		if (x->stateless && !x->c->closed)
			t->ops.leave(h, x->c, "cancelled: the HTTP client went away");
		tp_client_unref(x->c);
	}
	json_decref(x->want);
	json_decref(x->replies);
	json_decref(x->tokens);
	free(x->ev);
	free(x->body);
	free(x);
}

/* ---- the listener ----------------------------------------------------------------------- */

int tp_http_open(struct tp_host *h, const char *spec, const struct tp_http_ops *ops,
		 struct tp_err *err)
{
	char host[64];
	unsigned port;
	int n = 0;
	struct sockaddr_in a = { .sin_family = AF_INET };
	if (sscanf(spec, "http://%63[^:/]:%u%n", host, &port, &n) != 2 ||
	    (spec[n] != '\0' && strcmp(spec + n, "/") != 0 && strcmp(spec + n, "/mcp") != 0) ||
	    port > 65535)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--listen takes http://127.0.0.1:PORT (the endpoint is /mcp), "
				  "not '%.200s'",
				  spec);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--listen %.200s: '%s' is not an IPv4 address", spec, host);
	int loopback = (ntohl(a.sin_addr.s_addr) >> 24) == 127;
	if (!loopback && h->ntenants == 0)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--listen %.200s: only a loopback address (127.0.0.1) may be "
				  "bound without --tokens: nothing else tells one caller from "
				  "another",
				  spec);
	a.sin_port = htons((uint16_t)port);
	struct tp_http *t = calloc(1, sizeof *t);
	if (t == NULL)
		return tp_err_oom(err, TP_LAYER_HOST);
	t->ops = *ops;
	t->loopback = loopback;
	t->playground = h->cfg.playground;
	const char *ka = getenv("TIDEPOOL_SSE_KEEPALIVE_MS");
	t->keepalive_ms = ka != NULL && atof(ka) >= 100 ? atof(ka) : KEEPALIVE_MS;
	const char *sm = getenv("TIDEPOOL_HTTP_SESSIONS_MAX");
	t->sessions_max =
	    sm != NULL && atoi(sm) >= 4 && atoi(sm) < SESSIONS_MAX ? atoi(sm) : SESSIONS_MAX;
	h->http = t;
	t->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request,
				h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->cfg.max_clients,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	if (t->d == NULL) {
		int e = errno;
		free(t);
		h->http = NULL;
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, e, "--listen %.200s: %s",
				  spec, e ? strerror(e) : "the HTTP server did not start");
	}
	const union MHD_DaemonInfo *ep = MHD_get_daemon_info(t->d, MHD_DAEMON_INFO_EPOLL_FD);
	const union MHD_DaemonInfo *pi = MHD_get_daemon_info(t->d, MHD_DAEMON_INFO_BIND_PORT);
	t->epoll_fd = ep ? ep->epoll_fd : -1;
	snprintf(t->url, sizeof t->url, "http://%s:%u/mcp", host, pi ? (unsigned)pi->port : port);
	tp_out_log("listening on %s", t->url);
	return 0;
}

int tp_http_fd(const struct tp_host *h)
{
	return h->http ? h->http->epoll_fd : -1;
}

/* A suspended connection is not watched by MHD: one whose peer hung up is
 * found here. A POST's own client leaves (what it runs is cancelled); a
 * session's exchange is let go (its exec runs on, as the spec asks: a
 * disconnection is no cancel). */
static void hung_up(struct tp_host *h, struct tp_http *t)
{
	static const char keepalive[] = ": keep-alive\n\n";
	double now = tp_now_ms();
	for (struct exchange *x = t->open, *next; x != NULL; x = next) {
		next = x->next;
		if (!x->suspended)
			continue;
		if (x->sse && now - x->last_event >= t->keepalive_ms &&
		    x->ev_len + 32 <= x->ev_cap) {
			memcpy(x->ev + x->ev_len, keepalive, sizeof keepalive - 1);
			x->ev_len += sizeof keepalive - 1;
			x->last_event = now;
			wake(x);
			continue;
		}
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct pollfd p = { ci ? ci->connect_fd : -1, POLLRDHUP, 0 };
		if (p.fd < 0 || poll(&p, 1, 0) <= 0 ||
		    !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		x->suspended = 0;
		x->ready = 1;
		x->peer_gone = 1;
		MHD_resume_connection(x->conn); /* its answer fails: on_completed */
		if (x->stateless && !x->c->closed)
			t->ops.leave(h, x->c, "cancelled: the HTTP client went away");
	}
}

void tp_http_run(struct tp_host *h)
{
	struct tp_http *t = h->http;
	if (t == NULL)
		return;
	double now = tp_now_ms();
	if (now >= t->next_hangup_check) {
		hung_up(h, t);
		t->next_hangup_check = now + HANGUP_CHECK_MS;
	}
	/* A resumed connection is answered over several passes (its handler,
	 * then its write): run them now rather than one per loop turn. */
	MHD_UNSIGNED_LONG_LONG ms = 1;
	for (int pass = 0;
	     pass < 4 && (pass == 0 || (MHD_get_timeout(t->d, &ms) == MHD_YES && ms == 0)); pass++)
		MHD_run(t->d);
	for (struct http_session *s = t->sessions, *next; s != NULL; s = next) {
		next = s->next;
		if (now - s->last_used >= SESSION_IDLE_MS)
			session_end(h, t, s, "its MCP session was idle for an hour");
	}
}

double tp_http_next_timeout(const struct tp_host *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	double best = -1;
	if (h->http == NULL)
		return -1;
	if (MHD_get_timeout(h->http->d, &ms) == MHD_YES)
		best = (double)ms;
	for (const struct exchange *x = h->http->open; x != NULL; x = x->next)
		if (x->suspended) { /* its peer is looked at this often */
			double left = h->http->next_hangup_check - tp_now_ms();
			left = left < 0 ? 0 : left;
			if (best < 0 || left < best)
				best = left;
			break;
		}
	return best;
}

const char *tp_http_url(const struct tp_host *h)
{
	return h->http ? h->http->url : NULL;
}

int tp_http_is_open(const struct tp_host *h)
{
	return h->http != NULL;
}

void tp_http_close(struct tp_host *h)
{
	struct tp_http *t = h->http;
	if (t == NULL)
		return;
	for (struct exchange *x = t->open; x != NULL; x = x->next)
		if (x->suspended) { /* MHD may not be stopped with one asleep */
			x->suspended = 0;
			x->peer_gone = 1;
			MHD_resume_connection(x->conn);
		}
	MHD_stop_daemon(t->d); /* completes every exchange: on_completed */
	while (t->sessions != NULL) {
		struct http_session *s = t->sessions;
		t->sessions = s->next;
		free(s); /* its client is freed with the host's */
	}
	free(t);
	h->http = NULL;
}
