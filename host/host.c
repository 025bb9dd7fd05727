/*
 * host.c — the event loop. Invariants: nothing here blocks (stdout and worker
 * channels are written only when poll says so), nothing here exits on bad
 * input, every exec gets exactly one reply (none when cancelled), and every
 * worker is reaped by this process (it is their parent via CLONE_PARENT).
 */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec_params.h"
#include "frame.h"
#include "jsonio.h"
#include "jsonrpc.h"
#include "langs.h"
#include "linebuf.h"
#include "mcp.h"
#include "result.h"
#include "spawn.h"
#include "zygote_ctl.h"

#define MAX_QUEUED 4096
#define MAX_OUT_PENDING (16u << 20) /* stop reading stdin while this much is unwritten */
#define MAX_SPAWN_FAILURES 8

struct worker;

struct exec {
	struct exec *next;
	json_t *msg; /* the request; p borrows from it */
	json_t *id;
	int lang; /* enum tp_lang_id: an index into tp_langs[] and the host's zygotes */
	struct tp_exec_params p;
	double t_start, deadline;
	struct worker *w;
	enum tp_kind host_kind;
	int cancelled;
};

struct worker {
	struct worker *next;
	int lang;  /* index into tp_langs[] and the host's zygotes */
	pid_t pid; /* 0 until the zygote answers */
	int chan;
	struct tp_shm *shm;
	uint32_t area;
	struct tp_frame_rx rx;
	char *tx;
	size_t tx_len, tx_off;
	struct exec *exec;
	json_t *reply; /* the checked reply frame */
	int answered;  /* its exec got its reply */
	int exited, status;
	double cpu_ms;
	int kill_pending; /* kill as soon as the pid is known */
};

struct early_exit {
	pid_t pid;
	int status;
	double cpu_ms;
};

/* One zygote per language: a Lua worker never maps an initialized CPython. */
struct zygote {
	const struct tp_lang_info *lang;
	pid_t pid;
	int ctl;
	int failures;
	int used;                    /* keep a warm pool only for languages a client has used */
	struct worker *spawning[64]; /* FIFO awaiting a pid from the zygote */
	int nspawning;
};

struct tp_host {
	struct tp_host_cfg cfg;
	struct tp_limits ceiling;
	struct zygote zyg[TP_NLANGS]; /* indexed by enum tp_lang_id */
	struct worker *workers;
	struct exec *qhead, *qtail;
	int queued;
	struct tp_linebuf lb;
	int stdin_open;
	char *out;
	size_t out_len, out_cap;
	int out_blocking;
	int sigfd;
	int terminated;
	int open_line;       /* a partial write left a reply line unfinished on stdout */
	struct pollfd *pfds; /* P_FIXED + max_workers entries */
	struct worker **pws; /* max_workers entries */
	struct early_exit early[32];
	int nearly;
	int spawn_failures;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void logmsg(const char *fmt, const char *detail)
{
	fprintf(stderr, "tidepool: ");
	fprintf(stderr, fmt, detail);
	fputc('\n', stderr);
}

/* ---- replies ---------------------------------------------------------------- */

/* The last OUT_RESERVE bytes of the output buffer are kept for out-of-memory
 * replies, so a request still gets its one answer when nothing can be allocated. */
#define OUT_RESERVE 512
#define OUT_INITIAL (64u << 10)

static int out_append(struct tp_host *h, const char *s, size_t n, int use_reserve)
{
	size_t room = h->out_cap - h->out_len;
	if (n > room || (!use_reserve && n > room - (room < OUT_RESERVE ? room : OUT_RESERVE))) {
		size_t cap = h->out_cap ? h->out_cap : OUT_INITIAL;
		while (cap < h->out_len + n + OUT_RESERVE)
			cap *= 2;
		char *p = realloc(h->out, cap);
		if (p != NULL) {
			h->out = p;
			h->out_cap = cap;
		} else if (!use_reserve || n > room) {
			return -1;
		}
	}
	memcpy(h->out + h->out_len, s, n);
	h->out_len += n;
	return 0;
}

static void out_flush(struct tp_host *h)
{
	size_t off = 0;
	while (off < h->out_len) {
		ssize_t n = write(1, h->out + off, h->out_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) { /* the client is gone: nothing more can be said */
			h->out_len = off = 0;
			h->stdin_open = 0;
			break;
		}
		off += (size_t)n;
	}
	/* Every buffered reply ends with '\n': only a partial write leaves one open. */
	if (off > 0)
		h->open_line = h->out[off - 1] != '\n';
	memmove(h->out, h->out + off, h->out_len - off);
	h->out_len -= off;
}

/* On SIGTERM: a reading client must not see half a line. Finish the one a
 * partial write left open (waiting up to 1 s for the client), drop the rest. */
static void finish_open_line(struct tp_host *h)
{
	char *nl = h->open_line ? memchr(h->out, '\n', h->out_len) : NULL;
	if (nl == NULL)
		return;
	h->out_len = (size_t)(nl - h->out) + 1;
	for (int tries = 0; h->out_len > 0 && tries < 100; tries++) {
		out_flush(h);
		if (h->out_len > 0)
			poll(&(struct pollfd){ 1, POLLOUT, 0 }, 1, 10);
	}
}

/* Appends a JSON text for a request id, written by hand: no allocation. */
static size_t id_text(const json_t *id, char *buf, size_t len)
{
	const char *s = json_string_value(id);
	size_t o = 0;
	if (json_is_integer(id))
		return (size_t)snprintf(buf, len, "%lld", (long long)json_integer_value(id));
	if (s == NULL || strlen(s) > 200)
		return (size_t)snprintf(buf, len, "null");
	buf[o++] = '"';
	for (; *s != '\0' && o + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
		else
			buf[o++] = (char)c; /* already valid UTF-8: jansson checked the line */
	}
	buf[o++] = '"';
	return o;
}

/* The one answer a request gets when its real reply could not be built. */
static void emit_oom(struct tp_host *h, const json_t *id)
{
	char idbuf[256], line[OUT_RESERVE];
	id_text(id, idbuf, sizeof idbuf);
	int n = snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,"
			 "\"message\":\"out of memory\"}}\n",
			 idbuf, TP_RPC_INTERNAL_ERROR);
	if (out_append(h, line, (size_t)n, 1) != 0)
		logmsg("%s", "out of memory: reply dropped");
}

/* Sends msg (stolen), the reply to request id (borrowed; NULL for null). */
static void emit(struct tp_host *h, const json_t *id, json_t *msg)
{
	if (h->cfg.emit != NULL) {
		if (msg != NULL)
			h->cfg.emit(h->cfg.emit_ctx, msg);
		return;
	}
	size_t len;
	char *line = msg ? tp_rpc_encode(msg, &len) : NULL;
	if (line == NULL || out_append(h, line, len, 0) != 0)
		emit_oom(h, id); /* id may live in msg: before it is released */
	json_decref(msg);
	free(line);
	out_flush(h); /* at once: non-blocking on a pipe, so it never stalls the loop */
}

static void emit_error(struct tp_host *h, json_t *id, int code, const char *msg)
{
	emit(h, id, tp_rpc_error(id, code, msg, NULL));
}

/* ---- execs ------------------------------------------------------------------ */

static void exec_free(struct exec *e)
{
	if (e != NULL)
		json_decref(e->msg);
	free(e);
}

static void kill_worker(struct worker *w)
{
	if (w->exited)
		return;
	if (w->pid > 0) {
		/* Its exit (unmapping everything) is cleanup: nobody waits for it. */
		setpriority(PRIO_PROCESS, (id_t)w->pid, 19);
		kill(w->pid, SIGKILL);
	} else {
		w->kill_pending = 1;
	}
}

/* Warm workers wait at the zygote's background priority; the one that runs an
 * exec gets the normal one (setpriority fails harmlessly when not root). */
static void boost(struct worker *w)
{
	if (w->pid > 0)
		setpriority(PRIO_PROCESS, (id_t)w->pid, 0);
}

/* Sends the exec's one reply, built from everything known about the worker. */
static void finish(struct tp_host *h, struct worker *w, enum tp_kind host_kind, const char *msg)
{
	struct exec *e = w->exec;
	struct tp_shm_view view;
	if (e == NULL || w->answered)
		return;
	w->answered = 1;
	if (e->cancelled || e->id == NULL)
		return;
	tp_shm_snapshot(w->shm, w->area, &view);
	struct tp_outcome o = {
		.reply = w->reply,
		.shm = &view,
		.exited = w->exited,
		.status = w->status,
		.host_kind = e->host_kind ? e->host_kind : host_kind,
		.host_msg = msg,
		.wall_ms = now_ms() - e->t_start,
		.cpu_ms = w->exited ? w->cpu_ms : -1,
		.limits = &e->p.limits,
	};
	json_t *res = tp_result_build(&o);
	if (e->p.tool_call)
		res = tp_mcp_tool_result(res);
	if (res == NULL)
		emit_error(h, e->id, TP_RPC_INTERNAL_ERROR, "out of memory building the result");
	else
		emit(h, e->id, tp_rpc_result(e->id, res));
}

static json_t *request_json(const struct exec *e)
{
	return json_pack("{s:s%, s:O, s:o, s:o}", "code", e->p.code, e->p.code_len, "inputs",
			 e->p.inputs ? e->p.inputs : json_null(), "limits",
			 tp_limits_to_json(&e->p.limits), "seed",
			 e->p.has_seed ? json_integer(e->p.seed) : json_null());
}

static void flush_tx(struct worker *w)
{
	while (w->tx != NULL && w->tx_off < w->tx_len) {
		ssize_t n = send(w->chan, w->tx + w->tx_off, w->tx_len - w->tx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EAGAIN: poll for POLLOUT; EPIPE: the exit will be reaped */
		w->tx_off += (size_t)n;
	}
	if (w->tx != NULL && w->tx_off == w->tx_len) {
		free(w->tx);
		w->tx = NULL;
	}
}

static int assign(struct tp_host *h, struct exec *e, struct worker *w)
{
	json_t *req = request_json(e);
	char *body = req ? tp_json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (body == NULL)
		return -1;
	size_t n = strlen(body);
	w->tx = malloc(n + TP_FRAME_HDR);
	if (w->tx == NULL) {
		free(body);
		return -1;
	}
	tp_frame_header(w->tx, n);
	memcpy(w->tx + TP_FRAME_HDR, body, n);
	free(body);
	w->tx_len = n + TP_FRAME_HDR;
	w->tx_off = 0;
	w->exec = e;
	e->w = w;
	boost(w);
	e->t_start = now_ms();
	e->deadline = e->t_start + (double)e->p.limits.wall_ms;
	tp_frame_rx_free(&w->rx);
	tp_frame_rx_init(&w->rx, tp_result_max_frame(&e->p.limits));
	flush_tx(w);
	(void)h;
	return 0;
}

/* ---- workers and the zygote --------------------------------------------------- */

static void worker_free(struct tp_host *h, struct worker *w)
{
	struct worker **pp = &h->workers;
	while (*pp != NULL && *pp != w)
		pp = &(*pp)->next;
	if (*pp == w)
		*pp = w->next;
	if (w->chan >= 0)
		close(w->chan);
	if (w->shm != NULL)
		munmap(w->shm, tp_shm_size(w->area));
	tp_frame_rx_free(&w->rx);
	free(w->tx);
	json_decref(w->reply);
	exec_free(w->exec);
	free(w);
}

static int start_zygote(struct zygote *z)
{
	char err[256];
	if (z->ctl >= 0)
		return 0;
	if (z->failures >= MAX_SPAWN_FAILURES)
		return -1;
	z->ctl = tp_zygote_start(z->lang, &z->pid, err, sizeof err);
	if (z->ctl < 0) {
		z->failures++;
		logmsg("%s", err);
		return -1;
	}
	return 0;
}

/* A page per worker; sealed so a worker cannot shrink it under the host's reads. */
static int new_page(struct worker *w)
{
	int fd = memfd_create("tidepool-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t size = tp_shm_size(w->area);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	w->shm = p;
	tp_shm_init(w->shm, w->area);
	return fd;
}

static int spawn_worker(struct tp_host *h, int lang)
{
	int sv[2], page;
	struct zygote *z = &h->zyg[lang];
	if (z->nspawning == (int)(sizeof z->spawning / sizeof z->spawning[0]) ||
	    start_zygote(z) != 0)
		return -1;
	struct worker *w = calloc(1, sizeof *w);
	if (w == NULL)
		return -1;
	w->lang = lang;
	w->area = tp_zygote_area_bytes();
	w->chan = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		free(w);
		return -1;
	}
	page = new_page(w);
	if (page < 0 || tp_spawn_send(z->ctl, sv[1], page, w->area) != 0) {
		if (page >= 0)
			close(page);
		close(sv[1]);
		w->chan = sv[0];
		w->next = h->workers;
		h->workers = w;
		worker_free(h, w);
		return -1;
	}
	close(page);
	close(sv[1]);
	w->chan = sv[0];
	fcntl(w->chan, F_SETFL, O_NONBLOCK);
	/* Oldest first: dispatch takes the worker most likely done with its lockdown. */
	struct worker **tail = &h->workers;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = w;
	z->spawning[z->nspawning++] = w;
	return 0;
}

static int running(const struct tp_host *h)
{
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered)
			return 1;
	return 0;
}

static int is_warm(const struct worker *w)
{
	return w->exec == NULL && !w->exited;
}

/* Live workers in all; warm ones of one language. */
static int count_live(const struct tp_host *h, int lang, int *warm)
{
	int n = 0;
	*warm = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		n++;
		*warm += is_warm(w) && w->lang == lang;
	}
	return n;
}

static int queued_for(const struct tp_host *h, int lang)
{
	int n = 0;
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		n += e->lang == lang;
	return n;
}

static void unlink_exec(struct tp_host *h, struct exec *e)
{
	struct exec **pp = &h->qhead, *prev = NULL;
	while (*pp != NULL && *pp != e) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp == NULL)
		return;
	*pp = e->next;
	if (h->qtail == e)
		h->qtail = prev;
	e->next = NULL;
	h->queued--;
}

/* Answers every queued exec of one language with an error. */
static void fail_queue(struct tp_host *h, int lang, const char *msg)
{
	struct exec *e = h->qhead;
	while (e != NULL) {
		struct exec *next = e->next;
		if (e->lang == lang) {
			unlink_exec(h, e);
			if (e->id != NULL && !e->cancelled)
				emit_error(h, e->id, TP_RPC_INTERNAL_ERROR, msg);
			exec_free(e);
		}
		e = next;
	}
}

/* Keeps pool_size warm workers per used language, plus one for each queued
 * exec, within max_workers. */
static void refill_lang(struct tp_host *h, int lang)
{
	struct zygote *z = &h->zyg[lang];
	int warm, live = count_live(h, lang, &warm), queued = queued_for(h, lang);
	if (h->spawn_failures >= MAX_SPAWN_FAILURES || z->failures >= MAX_SPAWN_FAILURES) {
		fail_queue(h, lang, "workers fail to start: see the host's stderr");
		return;
	}
	/* Once stdin is closed no new exec can come: stop keeping workers warm. */
	int target = (h->stdin_open && z->used ? h->cfg.pool_size : 0) + queued;
	/* A fork and a lockdown compete with a running exec for the CPU: while one
	 * runs and a warm worker is still ready, making more can wait. */
	if (warm > 0 && queued == 0 && running(h))
		return;
	while (warm < target && live < h->cfg.max_workers) {
		if (spawn_worker(h, lang) != 0)
			break;
		warm++;
		live++;
	}
}

static void refill(struct tp_host *h)
{
	for (int i = 0; i < TP_NLANGS; i++)
		refill_lang(h, i);
}

static struct exec *first_queued(struct tp_host *h, int lang)
{
	for (struct exec *e = h->qhead; e != NULL; e = e->next)
		if (e->lang == lang)
			return e;
	return NULL;
}

static void dispatch_queue(struct tp_host *h)
{
	for (struct worker *w = h->workers; w != NULL && h->qhead != NULL; w = w->next) {
		struct exec *e = is_warm(w) ? first_queued(h, w->lang) : NULL;
		if (e == NULL)
			continue;
		unlink_exec(h, e);
		if (assign(h, e, w) != 0) {
			w->exec = e;
			finish(h, w, TP_KIND_INTERNAL, "out of memory sending the request");
			kill_worker(w);
		}
	}
	refill(h);
}

static struct worker *find_pid(struct tp_host *h, pid_t pid)
{
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->pid == pid)
			return w;
	return NULL;
}

static void requeue_front(struct tp_host *h, struct exec *e)
{
	e->w = NULL;
	e->next = h->qhead;
	h->qhead = e;
	if (h->qtail == NULL)
		h->qtail = e;
	h->queued++;
}

/* A worker that never got its pid: its exec (if any) goes back to the queue. */
static void drop_unborn(struct tp_host *h, struct worker *w)
{
	if (w->exec != NULL && !w->answered) {
		requeue_front(h, w->exec);
		w->exec = NULL;
	}
	worker_free(h, w);
}

/* ---- worker channels ---------------------------------------------------------- */

static void take_reply(struct tp_host *h, struct worker *w, const char *buf, size_t len)
{
	char err[200];
	json_t *clean;
	if (w->exec == NULL || w->answered) {
		kill_worker(w); /* unsolicited bytes: the worker is not behaving */
		return;
	}
	if (tp_result_check_reply(buf, len, &w->exec->p.limits, &clean, err, sizeof err) != 0) {
		finish(h, w, TP_KIND_INTERNAL, err);
	} else {
		w->reply = clean;
		h->spawn_failures = 0;
		finish(h, w, TP_KIND_NONE, NULL);
	}
	kill_worker(w); /* one-shot: it has said all it may say */
}

static void read_chan(struct tp_host *h, struct worker *w)
{
	char *buf;
	size_t len;
	int r;
	for (;;) {
		long n = tp_frame_rx_read(&w->rx, w->chan);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EMSGSIZE) {
			finish(h, w, TP_KIND_INTERNAL, "worker reply larger than the frame cap");
			kill_worker(w);
		}
		if (n < 0 && errno == ENOMEM) { /* our failure, not the snippet's */
			finish(h, w, TP_KIND_INTERNAL, "out of memory reading the worker reply");
			kill_worker(w);
		}
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(w->chan);
				w->chan = -1;
			}
			break;
		}
		while ((r = tp_frame_rx_take(&w->rx, &buf, &len)) == 1) {
			take_reply(h, w, buf, len);
			free(buf);
		}
		if (r < 0) {
			finish(h, w, TP_KIND_INTERNAL, "worker broke the channel framing");
			kill_worker(w);
			break;
		}
	}
}

static void worker_exited(struct tp_host *h, struct worker *w, int status, double cpu_ms)
{
	w->exited = 1;
	w->status = status;
	w->cpu_ms = cpu_ms;
	if (w->chan >= 0)
		read_chan(h, w); /* a reply written just before exit is still buffered */
	if (w->exec != NULL) {
		finish(h, w, TP_KIND_NONE, NULL);
	} else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
		   !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		char d[64];
		snprintf(d, sizeof d, "%s %d", WIFEXITED(status) ? "status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		logmsg("a warm worker died before use (%s)", d);
		h->spawn_failures++;
	}
	worker_free(h, w);
}

/* ---- zygote and child exits ------------------------------------------------- */

static void zygote_gone(struct tp_host *h, struct zygote *z)
{
	if (z->ctl >= 0)
		close(z->ctl);
	z->ctl = -1;
	z->pid = 0;
	z->failures++;
	for (int i = 0; i < z->nspawning; i++)
		drop_unborn(h, z->spawning[i]);
	z->nspawning = 0;
}

static void take_early_exit(struct tp_host *h, struct worker *w)
{
	for (int i = 0; i < h->nearly; i++) {
		if (h->early[i].pid != w->pid)
			continue;
		struct early_exit x = h->early[i];
		h->early[i] = h->early[--h->nearly];
		worker_exited(h, w, x.status, x.cpu_ms);
		return;
	}
}

static void read_zygote(struct tp_host *h, struct zygote *z)
{
	pid_t pid;
	int r;
	while (z->ctl >= 0 && (r = tp_spawn_recv_pid(z->ctl, &pid)) != 0) {
		if (r < 0 || z->nspawning == 0) {
			kill(z->pid, SIGKILL); /* reaped below; its spawns are dropped then */
			return;
		}
		struct worker *w = z->spawning[0];
		memmove(z->spawning, z->spawning + 1,
			(size_t)--z->nspawning * sizeof z->spawning[0]);
		if (pid <= 0) {
			logmsg("the zygote could not fork: %s", strerror(-pid));
			h->spawn_failures++;
			drop_unborn(h, w);
			continue;
		}
		z->failures = 0;
		w->pid = pid;
		if (w->exec != NULL)
			boost(w);
		if (w->kill_pending)
			kill(pid, SIGKILL);
		take_early_exit(h, w);
	}
}

static void reap(struct tp_host *h)
{
	int status;
	struct rusage ru;
	pid_t pid;
	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		struct worker *w = find_pid(h, pid);
		struct zygote *z = NULL;
		for (int i = 0; i < TP_NLANGS; i++)
			if (h->zyg[i].pid == pid)
				z = &h->zyg[i];
		if (z != NULL)
			zygote_gone(h, z);
		else if (w != NULL)
			worker_exited(h, w, status, cpu);
		else if (h->nearly < (int)(sizeof h->early / sizeof h->early[0]))
			h->early[h->nearly++] = (struct early_exit){ pid, status, cpu };
	}
}

static void check_timeouts(struct tp_host *h, double now)
{
	for (struct worker *w = h->workers; w != NULL; w = w->next) {
		struct exec *e = w->exec;
		if (e != NULL && !w->answered && e->host_kind == TP_KIND_NONE &&
		    now >= e->deadline) {
			e->host_kind = TP_KIND_TIMEOUT;
			kill_worker(w);
		}
	}
}

static int next_timeout(const struct tp_host *h, double now)
{
	double best = 0;
	int any = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		const struct exec *e = w->exec;
		if (e == NULL || w->answered || e->host_kind != TP_KIND_NONE)
			continue;
		double left = e->deadline - now;
		if (!any || left < best)
			best = left;
		any = 1;
	}
	if (!any)
		return -1;
	return best <= 0 ? 0 : (int)best + 1;
}

/* ---- requests --------------------------------------------------------------- */

static struct exec *find_exec(struct tp_host *h, const json_t *id, struct worker **wp)
{
	for (struct exec *e = h->qhead; e != NULL; e = e->next)
		if (e->id != NULL && json_equal(e->id, (json_t *)id)) {
			*wp = NULL;
			return e;
		}
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered && w->exec->id != NULL &&
		    json_equal(w->exec->id, (json_t *)id)) {
			*wp = w;
			return w->exec;
		}
	return NULL;
}

static void cancel(struct tp_host *h, const json_t *params)
{
	struct worker *w;
	json_t *id = json_object_get(params, "requestId");
	struct exec *e = id ? find_exec(h, id, &w) : NULL;
	if (e == NULL)
		return; /* already answered, or never seen: nothing to stop */
	e->cancelled = 1;
	if (w != NULL)
		kill_worker(w);
}

static void start_exec(struct tp_host *h, struct tp_rpc *rpc, int tool)
{
	char err[256];
	struct worker *w;
	struct exec *e;
	if (rpc->id == NULL)
		return; /* an exec nobody can hear about is not run */
	if (find_exec(h, rpc->id, &w) != NULL) {
		emit_error(h, rpc->id, TP_RPC_INVALID_REQUEST,
			   "Invalid Request: id already in flight");
		return;
	}
	e = calloc(1, sizeof *e);
	if (e == NULL) {
		emit_error(h, rpc->id, TP_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	int r = tool ? tp_exec_params_parse_tool(rpc->params, &h->ceiling, &e->p, err, sizeof err)
		     : tp_exec_params_parse(rpc->params, &h->ceiling, &e->p, err, sizeof err);
	if (r != 0) {
		emit_error(h, rpc->id, TP_RPC_INVALID_PARAMS, err);
		free(e);
		return;
	}
	e->msg = json_incref(rpc->msg);
	e->id = rpc->id;
	e->lang = (int)e->p.lang;
	h->zyg[e->lang].used = 1;
	if (h->qtail != NULL)
		h->qtail->next = e;
	else
		h->qhead = e;
	h->qtail = e;
	h->queued++;
	dispatch_queue(h);
}

static void handle(struct tp_host *h, struct tp_rpc *rpc)
{
	const char *m = rpc->method;
	if (strcmp(m, "sandbox/exec") == 0)
		start_exec(h, rpc, 0);
	else if (strcmp(m, "tools/call") == 0)
		start_exec(h, rpc, 1);
	else if (strcmp(m, "notifications/cancelled") == 0)
		cancel(h, rpc->params);
	else if (rpc->id == NULL)
		return; /* other notifications (initialized, unknown) need nothing */
	else if (strcmp(m, "initialize") == 0)
		emit(h, rpc->id, tp_rpc_result(rpc->id, tp_mcp_initialize(rpc->params)));
	else if (strcmp(m, "ping") == 0)
		emit(h, rpc->id, tp_rpc_result(rpc->id, json_object()));
	else if (strcmp(m, "tools/list") == 0)
		emit(h, rpc->id, tp_rpc_result(rpc->id, tp_mcp_tools_list()));
	else
		emit_error(h, rpc->id, TP_RPC_METHOD_NOT_FOUND, "Method not found");
}

void tp_host_line(struct tp_host *h, const char *line, size_t len)
{
	struct tp_rpc rpc;
	json_t *reply;
	if (tp_rpc_parse(line, len, &rpc, &reply) != 0) {
		if (reply != NULL)
			emit(h, json_object_get(reply, "id"), reply);
		return;
	}
	handle(h, &rpc);
	tp_rpc_clear(&rpc);
}

static void read_stdin(struct tp_host *h)
{
	size_t room, len;
	const char *line;
	char msg[96];
	enum tp_line_status st;
	char *p = tp_linebuf_space(&h->lb, &room);
	ssize_t n = p ? read(0, p, room) : -1;
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		h->stdin_open = 0; /* EOF (or an unreadable stdin): finish what is in flight */
	else
		tp_linebuf_commit(&h->lb, (size_t)n);
	while ((st = tp_linebuf_next(&h->lb, !h->stdin_open, &line, &len)) != TP_LINE_NONE) {
		if (st == TP_LINE_OK) {
			tp_host_line(h, line, len);
			continue;
		}
		snprintf(msg, sizeof msg, "Invalid Request: line longer than %zu bytes",
			 h->cfg.max_line);
		emit_error(h, NULL, TP_RPC_INVALID_REQUEST, msg);
	}
}

/* ---- the loop ------------------------------------------------------------------ */

static int busy(const struct tp_host *h)
{
	return h->qhead != NULL || running(h);
}

static void handle_signals(struct tp_host *h)
{
	struct signalfd_siginfo si;
	while (read(h->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			h->terminated = (int)si.ssi_signo;
	}
	reap(h); /* SIGCHLD coalesces: always reap everything */
}

enum { P_SIG, P_STDIN, P_STDOUT, P_ZYGOTE, P_FIXED = P_ZYGOTE + TP_NLANGS };

static void poll_once(struct tp_host *h)
{
	/* Arrays sized once for max_workers: the loop allocates nothing to wait, so
	 * it cannot spin when memory runs out. */
	struct pollfd *fds = h->pfds;
	struct worker **ws = h->pws;
	int nw = 0;
	for (struct worker *w = h->workers; w != NULL && nw < h->cfg.max_workers; w = w->next)
		ws[nw++] = w;
	int reading = h->stdin_open && h->queued < MAX_QUEUED && h->out_len < MAX_OUT_PENDING;
	fds[P_SIG] = (struct pollfd){ h->sigfd, POLLIN, 0 };
	fds[P_STDIN] = (struct pollfd){ reading ? 0 : -1, POLLIN, 0 };
	fds[P_STDOUT] = (struct pollfd){ h->out_len > 0 ? 1 : -1, POLLOUT, 0 };
	for (int z = 0; z < TP_NLANGS; z++)
		fds[P_ZYGOTE + z] = (struct pollfd){ h->zyg[z].ctl, POLLIN, 0 };
	int i;
	for (i = 0; i < nw; i++)
		fds[P_FIXED + i] =
		    (struct pollfd){ ws[i]->chan, (short)(POLLIN | (ws[i]->tx ? POLLOUT : 0)), 0 };
	int r = poll(fds, (nfds_t)(P_FIXED + nw), next_timeout(h, now_ms()));
	if (r > 0) {
		for (i = 0; i < nw; i++) {
			if (fds[P_FIXED + i].revents & POLLOUT)
				flush_tx(ws[i]);
			if (ws[i]->chan >= 0 &&
			    fds[P_FIXED + i].revents & (POLLIN | POLLHUP | POLLERR))
				read_chan(h, ws[i]);
		}
		if (fds[P_STDOUT].revents)
			out_flush(h);
		for (int z = 0; z < TP_NLANGS; z++)
			if (fds[P_ZYGOTE + z].revents)
				read_zygote(h, &h->zyg[z]);
		if (fds[P_SIG].revents)
			handle_signals(h);
		if (fds[P_STDIN].revents)
			read_stdin(h);
	}
	check_timeouts(h, now_ms());
	dispatch_queue(h);
}

int tp_host_run(struct tp_host *h)
{
	dispatch_queue(h); /* warm the pool before the first request */
	for (;;) {
		if (h->terminated) {
			finish_open_line(h);
			return 128 + h->terminated;
		}
		int more_input = h->cfg.use_stdin && h->stdin_open;
		if (!more_input && !busy(h) && h->out_len == 0)
			return 0;
		if (!more_input && !busy(h) && h->out_blocking)
			return 0;
		poll_once(h);
	}
}

/* ---- setup and teardown -------------------------------------------------------- */

void tp_host_default_cfg(struct tp_host_cfg *cfg)
{
	*cfg = (struct tp_host_cfg){
		.use_stdin = 1,
		.max_line = TP_MAX_LINE_DEFAULT,
		.pool_size = 2,
		.max_workers = 16,
	};
}

static int setup_signals(struct tp_host *h, char *err, size_t errlen)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* Writes to a vanished client or worker must fail with EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
	    (h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		snprintf(err, errlen, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* A pipe or socket stdout is made non-blocking so a slow client cannot stall
 * the loop; a terminal or file is shared with others and written blocking. */
static void setup_stdout(struct tp_host *h)
{
	struct stat st;
	h->out_blocking = 1;
	if (fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		int fl = fcntl(1, F_GETFL);
		if (fl >= 0 && fcntl(1, F_SETFL, fl | O_NONBLOCK) == 0)
			h->out_blocking = 0;
	}
}

struct tp_host *tp_host_new(const struct tp_host_cfg *cfg, char *err, size_t errlen)
{
	struct tp_host *h = calloc(1, sizeof *h);
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->cfg = *cfg;
	h->pfds = calloc((size_t)(P_FIXED + cfg->max_workers), sizeof *h->pfds);
	h->pws = calloc((size_t)cfg->max_workers, sizeof *h->pws);
	h->out = malloc(OUT_INITIAL); /* with its reserve for out-of-memory replies */
	h->out_cap = h->out ? OUT_INITIAL : 0;
	if (h->pfds == NULL || h->pws == NULL || h->out == NULL) {
		free(h->out);
		snprintf(err, errlen, "out of memory");
		free(h->pfds);
		free(h->pws);
		free(h);
		return NULL;
	}
	for (int i = 0; i < TP_NLANGS; i++)
		h->zyg[i] =
		    (struct zygote){ .lang = &tp_langs[i], .ctl = -1, .used = tp_langs[i].prewarm };
	h->sigfd = -1;
	h->stdin_open = cfg->use_stdin;
	tp_limits_default(&h->ceiling);
	tp_linebuf_init(&h->lb, cfg->max_line);
	/* Workers are our children (CLONE_PARENT); a subreaper also catches any
	 * grandchild, should one ever exist. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (setup_signals(h, err, errlen) != 0) {
		free(h->out);
		free(h->pfds);
		free(h->pws);
		free(h);
		return NULL;
	}
	if (cfg->emit == NULL)
		setup_stdout(h);
	return h;
}

void tp_host_free(struct tp_host *h)
{
	if (h == NULL)
		return;
	for (struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->pid > 0 && !w->exited)
			kill(w->pid, SIGKILL);
	/* A worker whose pid the zygote had not told us yet: stop the zygote, then
	 * read the pids it already sent and kill those workers too. */
	for (int i = 0; i < TP_NLANGS; i++) {
		struct zygote *z = &h->zyg[i];
		pid_t pid;
		if (z->pid > 0) {
			kill(z->pid, SIGKILL);
			waitpid(z->pid, NULL, 0);
		}
		while (z->ctl >= 0 && tp_spawn_recv_pid(z->ctl, &pid) == 1)
			if (pid > 0)
				kill(pid, SIGKILL);
	}
	while (h->workers != NULL)
		worker_free(h, h->workers);
	while (h->qhead != NULL) {
		struct exec *e = h->qhead;
		h->qhead = e->next;
		exec_free(e);
	}
	for (int i = 0; i < TP_NLANGS; i++)
		if (h->zyg[i].ctl >= 0)
			close(h->zyg[i].ctl);
	if (h->sigfd >= 0)
		close(h->sigfd);
	/* Reap what we killed, so no zombie outlives a host embedded in a test. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	tp_linebuf_free(&h->lb);
	free(h->out);
	free(h->pfds);
	free(h->pws);
	free(h);
}
