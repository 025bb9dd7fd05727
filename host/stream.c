/*
 * stream.c — what the host says about an exec while it runs: its new output as
 * sandbox/output notifications (sandbox/exec with "stream": true), and MCP
 * notifications/progress (a tools/call with _meta.progressToken).
 *
 * The page of each streaming exec is read every STREAM_TICK_MS, and the rest
 * of it just before its reply, from the very view the reply is built from. So
 * the texts of one stream's notifications, joined, are exactly the reply's
 * stdout or stderr: each piece ends where tp_utf8_complete() says (never inside
 * a character), so it repairs as the whole does. Invariants: no notification
 * after the exec's reply, nor after an MCP cancel; a stream whose notifications
 * stop (a slow client, out of memory) stops for good, so what was sent is
 * still a prefix of the reply's; nothing is read or sent while no exec asks.
 */
#include "host_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "utf8.h"

static const char *const stream_names[2] = { "stdout", "stderr" };

/* Sends one stream's bytes from e->sent[s] up to len, in notifications of at
 * most STREAM_CHUNK bytes; an incomplete character at the end waits for more,
 * unless this is the end (final). */
static void send_stream(struct exec *e, int s, const char *area, size_t len, int final)
{
	char *copy = NULL;
	if (len < e->sent[s]) { /* a page that shrank: the worker forged it */
		e->stream_off = 1;
		return;
	}
	while (!e->stream_off && e->sent[s] < len) {
		size_t avail = len - e->sent[s];
		size_t take = avail < STREAM_CHUNK ? avail : STREAM_CHUNK;
		if (copy == NULL && (copy = malloc(STREAM_CHUNK)) == NULL) {
			e->stream_off = 1;
			break;
		}
		/* A copy: the worker may rewrite the page while it is read. */
		memcpy(copy, area + e->sent[s], take);
		size_t n = final && take == avail ? take : tp_utf8_complete(copy, take);
		if (n == 0)
			break; /* only the start of a character so far */
		if (e->c->out_len >= STREAM_MAX_PENDING) {
			e->stream_off = 1; /* a slow client: the reply carries it all */
			break;
		}
		json_t *params = json_pack("{s:O, s:s, s:o}", "exec_id", e->id, "stream",
					   stream_names[s], "text", tp_utf8_json(copy, n));
		if (tp_out_send(e->c, tp_rpc_notification("sandbox/output", params)) != 0) {
			e->stream_off = 1;
			break;
		}
		e->sent[s] += n;
	}
	free(copy);
}

static void send_page(struct exec *e, const struct tp_shm_view *v, int final)
{
	for (int s = 0; s < 2; s++)
		send_stream(e, s, v->out[s], v->len[s], final);
}

/* Progress: ms since the call (its time queued counts, as for wall_ms),
 * strictly increasing. Skipped, not stopped, while the client is slow. */
static void progress(struct exec *e, double now)
{
	if (e->p.progress_token == NULL || e->cancelled || now < e->next_progress)
		return;
	e->next_progress = now + PROGRESS_MS;
	if (e->c->out_len >= STREAM_MAX_PENDING)
		return;
	json_int_t ms = (json_int_t)(now - e->t_arrival);
	if (ms <= e->progress)
		ms = e->progress + 1;
	char text[64];
	snprintf(text, sizeof text, "%s for %.1f s", e->w ? "running" : "waiting to run",
		 (double)ms / 1000.0);
	json_t *params = json_pack("{s:O, s:I, s:s}", "progressToken", e->p.progress_token,
				   "progress", ms, "message", text);
	if (tp_out_send(e->c, tp_rpc_notification("notifications/progress", params)) == 0)
		e->progress = ms;
}

static int streaming(const struct exec *e)
{
	return e->p.stream && !e->stream_off && !e->cancelled;
}

void tp_stream_tick(struct tp_host *h, double now)
{
	for (struct worker *w = h->workers; w != NULL; w = w->next) {
		struct exec *e = w->exec;
		if (e == NULL || w->answered)
			continue;
		if (streaming(e) && now >= e->next_tick) {
			struct tp_shm_view v;
			tp_shm_snapshot(w->shm, w->area, &v);
			tp_shm_view_cap(&v, e->p.limits.output_bytes); /* finish says why */
			send_page(e, &v, 0);
			e->next_tick = now + STREAM_TICK_MS;
		}
		progress(e, now);
	}
	for (struct exec *e = h->qhead; e != NULL; e = e->next)
		progress(e, now);
}

void tp_stream_flush(struct exec *e, const struct tp_shm_view *v)
{
	if (streaming(e))
		send_page(e, v, 1);
}

static void sooner(double *best, int *any, double left)
{
	if (!*any || left < *best)
		*best = left;
	*any = 1;
}

double tp_stream_next_timeout(const struct tp_host *h, double now)
{
	double best = 0;
	int any = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		const struct exec *e = w->exec;
		if (e == NULL || w->answered)
			continue;
		if (streaming(e))
			sooner(&best, &any, e->next_tick - now);
		if (e->p.progress_token != NULL && !e->cancelled)
			sooner(&best, &any, e->next_progress - now);
	}
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		if (e->p.progress_token != NULL && !e->cancelled)
			sooner(&best, &any, e->next_progress - now);
	return !any ? -1 : best > 0 ? best : 0;
}
