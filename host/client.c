/*
 * client.c — clients as values: the list of peers the host serves, each with
 * its own reader, writer, id space and MCP revision (host_int.h, struct
 * client). Here a client is made, counted and freed; what its requests do is
 * host.c's, what is written to it output.c's. Invariant: a closed client is
 * out of the list at once, and its memory outlives it only while an exec that
 * came from it still points at it (a closed client is never written to).
 */
#include "host_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct client *tp_client_new(struct tp_host *h, enum tp_client_kind kind, int rfd, int wfd)
{
	struct client *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	if (kind == TP_CLIENT_STDIO || kind == TP_CLIENT_SOCKET) {
		c->out = malloc(OUT_INITIAL); /* with its reserve for out-of-memory replies */
		if (c->out == NULL) {
			free(c);
			return NULL;
		}
		c->out_cap = OUT_INITIAL;
	}
	c->num = ++h->client_seq;
	c->kind = kind;
	c->rfd = rfd;
	c->wfd = wfd;
	c->open = rfd >= 0;
	tp_linebuf_init(&c->lb, h->cfg.max_line);
	struct client **tail = &h->clients;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = c;
	h->nclients++;
	return c;
}

static void client_free(struct client *c)
{
	tp_out_batches_free(c);
	tp_linebuf_free(&c->lb);
	free(c->out);
	free(c);
}

void tp_client_close(struct tp_host *h, struct client *c)
{
	struct client **pp = &h->clients;
	while (*pp != NULL && *pp != c)
		pp = &(*pp)->next;
	if (*pp == NULL)
		return;
	*pp = c->next;
	h->nclients--;
	tp_metrics_bytes(h, c->bytes_in, c->bytes_out);
	c->bytes_in = c->bytes_out = 0;
	if (c->kind == TP_CLIENT_SOCKET && c->rfd >= 0)
		close(c->rfd); /* rfd and wfd are one socket */
	c->rfd = c->wfd = -1;
	c->open = 0;
	c->gone = 1;
	c->closed = 1;
	if (c->refs == 0)
		client_free(c);
}

void tp_client_ref(struct client *c)
{
	c->refs++;
}

void tp_client_unref(struct client *c)
{
	if (c != NULL && --c->refs == 0 && c->closed)
		client_free(c);
}

int tp_client_accepting(const struct tp_host *h)
{
	if (h->listen_fd >= 0 || h->http != NULL)
		return 1;
	for (const struct client *c = h->clients; c != NULL; c = c->next)
		if (c->open && !c->gone)
			return 1;
	return 0;
}

int tp_client_reserve(struct tp_host *h)
{
	int want = h->nclients + 1;
	if (want <= h->client_cap)
		return 0;
	want += want / 2 + 4;
	if (tp_poll_grow(h, want, h->poll_cap) != 0)
		return -1;
	h->client_cap = want;
	return 0;
}

int tp_poll_grow(struct tp_host *h, int clients, int workers)
{
	struct pollfd *f =
	    realloc(h->pfds, (size_t)(P_FIXED + 2 * clients + workers + h->nzyg) * sizeof *f);
	if (f == NULL)
		return -1;
	h->pfds = f;
	return 0;
}
