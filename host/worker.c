/*
 * worker.c — a worker and its zygote, the bottom of the pool: starting a
 * zygote (with its backoff when it fails), spawning a worker through it,
 * handing a worker its exec, writing its channel, killing and freeing it, and
 * reading a process's CPU time. Sessions, tools and the pool call it; it
 * calls only the answer path (answer.c) and the writer (output.c) below it.
 * Invariant: every spawn that fails leaves its language a backoff timer, the
 * loop's reason to wake and try again.
 */
#include "host_int.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "frame.h"
#include "spawn.h"
#include "zygote_ctl.h"

/* Consecutive failures of one language's workers (a zygote that will not start
 * or died, a fork that failed, a warm worker dead before use) back off
 * exponentially, and every FAIL_QUEUE_AFTER of them the zygote is restarted and
 * what is queued for that language is answered rather than held. Nothing is
 * permanent (a worker that replies resets the count), and one language's
 * trouble never stops the other's. */
#define FAIL_QUEUE_AFTER 8
#define BACKOFF_MIN_MS 10.0
#define BACKOFF_MAX_MS 2000.0

void tp_worker_kill(struct worker *w)
{
	if (w->exited)
		return;
	w->killed = 1;
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
void tp_worker_boost(struct worker *w)
{
	if (w->pid > 0)
		setpriority(PRIO_PROCESS, (id_t)w->pid, 0);
}

/* The request message (common/msg.h) in one frame, header included. */
static char *request_frame(const struct exec *e, size_t *len)
{
	struct tp_request req = { .seq = e->seq,
				  .code = e->p.code,
				  .code_len = e->p.code_len,
				  .inputs = e->p.inputs,
				  .limits = e->p.limits,
				  .has_seed = e->p.has_seed,
				  .seed = (uint64_t)e->p.seed,
				  .session = e->sess != NULL,
				  .workspace =
				      e->sess && e->sess->ws_path[0] ? e->sess->ws_path : NULL };
	size_t n;
	char *body = tp_msg_request_encode(&req, &n);
	char *frame = body ? malloc(n + TP_FRAME_HDR) : NULL;

	if (frame != NULL) {
		tp_frame_header(frame, n);
		memcpy(frame + TP_FRAME_HDR, body, n);
		*len = n + TP_FRAME_HDR;
	}
	free(body);
	return frame;
}

void tp_worker_flush_tx(struct worker *w)
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

/* 1 when the host may raise a hard limit (CAP_SYS_RESOURCE: a root host). */
static int may_raise_hard(void)
{
	static int known = -1;
	if (known < 0) {
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		memset(d, 0, sizeof d);
		known = syscall(SYS_capget, &hdr, d) == 0 &&
			(d[CAP_SYS_RESOURCE / 32].effective & (1u << (CAP_SYS_RESOURCE % 32))) != 0;
	}
	return known;
}

/* A session's exec gets a CPU bound from the kernel, which the worker cannot
 * lift (its filter refuses setrlimit, and prlimit64 with a new limit): before
 * the exec is handed over, the host sets the worker's RLIMIT_CPU (prlimit) to
 * its CPU time so far (/proc/PID/stat) plus the exec's cpu_ms and
 * TP_CPU_GRACE_MS, rounded up to a second, plus a second of margin; the hard
 * limit, one more (SIGKILL). The language's timer ends an honest exec long
 * before; code that switched the timer off and ignores its stop and SIGXCPU
 * dies of the hard limit, a cpu_limit at the kernel layer, instead of running
 * until its wall clock ends. Never above what the lockdown set (the session's
 * lifetime: sandbox/zygote.c). (A kernel-only one-shot worker bounds itself:
 * sandbox/verdict.c.) A host without CAP_SYS_RESOURCE could never
 * raise a hard limit it lowered (nor set any limit of a worker of another
 * uid): it sets the soft limit only, where it may (SIGXCPU, which native code
 * may ignore), and reads the worker's CPU time every IDLE_WATCH_MS while the
 * exec runs, killing it past where the hard limit would have been: a cpu_limit
 * at the host layer. */
void tp_worker_bound_cpu(struct tp_host *h, struct worker *w)
{
	char state;
	double used;
	struct rlimit old, lim;
	w->cpu_kill_ms = 0;
	if (w->sess == NULL || w->exec == NULL || w->pid <= 0 ||
	    tp_proc_stat(w->pid, &state, &used) != 0)
		return;
	const struct tp_policy *p = h->zyg[w->zi].policy;
	rlim_t life = (rlim_t)(p->session.lifetime_ms / 1000 + 1);
	/* With a language layer its timer ends an honest exec TP_CPU_GRACE_MS past
	 * cpu_ms: the bound leaves that and a second. Without one (kernel-only) the
	 * worker's ITIMER_PROF kills at cpu_ms and its own soft RLIMIT_CPU sends
	 * SIGXCPU at the next whole second past it (sandbox/verdict.c): the hard
	 * bound is a second after that. */
	rlim_t soft =
	    p->language_layer
		? ((rlim_t)used + (rlim_t)w->exec->p.limits.cpu_ms + TP_CPU_GRACE_MS + 999) / 1000 +
		      1
		: ((rlim_t)used + (rlim_t)w->exec->p.limits.cpu_ms) / 1000 + 1;
	lim.rlim_cur = soft < life ? soft : life;
	lim.rlim_max = lim.rlim_cur + 1;
	if (may_raise_hard() && prlimit(w->pid, RLIMIT_CPU, &lim, NULL) == 0)
		return; /* the kernel's */
	/* The host's: at the hard limit it would have set; the soft one if it may
	 * (a worker of another uid needs CAP_SYS_RESOURCE even for that). */
	w->cpu_kill_ms = (double)lim.rlim_max * 1000.0;
	w->cpu_check_at = tp_now_ms() + IDLE_WATCH_MS;
	if (prlimit(w->pid, RLIMIT_CPU, NULL, &old) == 0) {
		lim.rlim_max = old.rlim_max;
		if (lim.rlim_cur > lim.rlim_max)
			lim.rlim_cur = lim.rlim_max;
		prlimit(w->pid, RLIMIT_CPU, &lim, NULL);
	}
}

int tp_worker_assign(struct tp_host *h, struct exec *e, struct worker *w)
{
	free(w->tx); /* nothing unsent is left for a worker that gets an exec */
	/* A session's workspace as it is before its code runs: what the exec
	 * created, changed or deleted comes back in its result (answer.c). */
	if (e->sess != NULL && e->sess->ws_dir >= 0 && e->ws_before == NULL)
		e->ws_before = tp_ws_snapshot(e->sess->ws_dir);
	e->seq = ++h->exec_seq;
	w->tx = request_frame(e, &w->tx_len);
	if (w->tx == NULL)
		return -1;
	w->tx_off = 0;
	w->exec = e;
	e->w = w;
	tp_worker_bound_cpu(h, w); /* before the request is sent */
	if (!w->handed)
		tp_worker_boost(w);
	e->t_start = tp_now_ms();
	e->queue_ms = e->t_start - e->t_arrival;
	/* The page's output is this exec's from here on (a session's worker holds
	 * its last exec's until the next begins): a stream reads it from 0. The
	 * worker waits for this request, so it writes nothing meanwhile. */
	__atomic_store_n(&w->shm->len[0], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&w->shm->len[1], 0, __ATOMIC_RELEASE);
	/* No CPU clock until this exec's starts (a worker killed before: 0 ms). */
	w->shm->cpu_begin_us = TP_SHM_CPU_UNSET;
	w->shm->cpu_us = 0;
	/* A worker still rehearsing stops at its next step: the request goes first.
	 * Only its first exec finds it there (it rehearses once, before it serves):
	 * a state or session worker serving again is not woken for nothing. */
	if (!w->handed) {
		__atomic_store_n(&w->shm->handed, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &w->shm->handed, FUTEX_WAKE, 1, NULL, NULL, 0);
		w->handed = 1;
	}
	e->next_tick = e->t_start + STREAM_TICK_MS;
	/* wall_ms is the snippet's: it runs from here. Its wait in the queue
	 * had its own bound (expire_queue). */
	e->deadline = e->t_start + (double)e->p.limits.wall_ms;
	tp_frame_rx_free(&w->rx);
	tp_frame_rx_init(&w->rx, tp_msg_reply_max(&e->p.limits));
	tp_worker_flush_tx(w);
	return 0;
}

void tp_worker_free(struct tp_host *h, struct worker *w)
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
	if (w->page_fd >= 0)
		close(w->page_fd);
	tp_frame_rx_free(&w->rx);
	free(w->tx);
	if (w->reply != NULL)
		tp_reply_free(w->reply);
	free(w->reply);
	tp_exec_free(w->exec);
	free(w);
	h->nworkers--;
}

int tp_worker_reserve(struct tp_host *h, int n)
{
	int want = h->nworkers + n;
	if (want <= h->poll_cap)
		return 0;
	want += want / 2 + 8;
	if (tp_poll_grow(h, h->client_cap, want) != 0)
		return -1;
	struct worker **ws = realloc(h->pws, (size_t)want * sizeof *ws);
	if (ws == NULL)
		return -1;
	h->pws = ws;
	h->poll_cap = want;
	return 0;
}

/* Answers every queued exec of one language with an error. */
static void fail_queue(struct tp_host *h, int zi, const char *msg)
{
	struct exec *e = h->qhead;
	while (e != NULL) {
		struct exec *next = e->next;
		if (e->zi == zi && e->sess == NULL) {
			tp_queue_remove(h, e);
			if (e->id != NULL && !e->cancelled)
				tp_out_error(e->c, e->id, TP_RPC_INTERNAL_ERROR, msg);
			tp_exec_free(e);
		}
		e = next;
	}
}

/* One more consecutive failure of this language's workers. What is queued for it
 * waits out the backoff, unless the failures go on: then it is answered. */
void tp_zygote_failed(struct tp_host *h, struct zygote *z)
{
	double backoff = BACKOFF_MIN_MS;
	z->failures++;
	for (int i = 1; i < z->failures && backoff < BACKOFF_MAX_MS; i++)
		backoff *= 2;
	z->retry_at = tp_now_ms() + (backoff < BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS);
	if (z->failures % FAIL_QUEUE_AFTER == 0 && z->pid > 0) {
		tp_out_log("restarting the %s zygote: its workers keep failing", z->lang->name);
		kill(z->pid, SIGKILL); /* reaped as any zygote death; the next spawn starts one */
	}
	if (z->failures >= FAIL_QUEUE_AFTER)
		fail_queue(h, (int)(z - h->zyg), "workers fail to start: see the host's stderr");
}

int tp_zygote_backing_off(const struct zygote *z, double now)
{
	return z->failures > 0 && now < z->retry_at;
}

static int start_zygote(struct tp_host *h, struct zygote *z)
{
	struct tp_err err = { 0 };
	if (z->ctl >= 0)
		return 0;
	z->ctl = tp_zygote_start(z->lang, z->policy, h->ws_base, &z->pid, &err);
	if (z->ctl < 0) {
		tp_zygote_failed(h, z);
		tp_out_log("%s", err.msg);
		return -1;
	}
	if (z->starts++ > 0)
		tp_metrics_restart(h, z->lang->id);
	return 0;
}

/* The zygote reads its requests as fast as it forks, and writes each new pid
 * back; a burst of requests (many sessions opened at once) fills its socket.
 * Waiting for room in place would deadlock (the zygote waits for us to read
 * its pids), so a request that does not fit waits in z->unsent, its fds with
 * it, and the loop sends it when the socket has room (tp_zygote_flush); the
 * worker is in spawning[] already, in the order its pid will come. */
void tp_zygote_unsent_free(struct zygote *z)
{
	for (int i = 0; i < z->nunsent; i++) {
		close(z->unsent[i].chan);
		close(z->unsent[i].page);
		if (z->unsent[i].ws > 2)
			close(z->unsent[i].ws);
	}
	z->nunsent = 0;
}

int tp_zygote_flush(struct zygote *z)
{
	int sent = 0;
	while (sent < z->nunsent) {
		struct tp_spawn_req *r = &z->unsent[sent];
		if (tp_spawn_send(z->ctl, r->chan, r->page, r->area, r->kind, r->ws) != 0)
			break;
		close(r->chan);
		close(r->page);
		if (r->ws > 2)
			close(r->ws);
		sent++;
	}
	int hard = sent < z->nunsent && errno != EAGAIN && errno != EWOULDBLOCK;
	memmove(z->unsent, z->unsent + sent, (size_t)(z->nunsent - sent) * sizeof *z->unsent);
	z->nunsent -= sent;
	return hard ? -1 : 0;
}

/* 0: sent, or queued (the fds are the queue's); -1: neither (the caller's). */
static int send_spawn(struct zygote *z, int chan, int page, uint32_t area, enum tp_spawn_kind kind,
		      int ws_fd)
{
	if (z->nunsent == 0 && tp_spawn_send(z->ctl, chan, page, area, kind, ws_fd) == 0) {
		close(chan); /* the page's fd stays the worker's (pages.c) */
		return 0;
	}
	if (z->nunsent == 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		return -1;
	if (z->nunsent == z->unsent_cap) {
		int cap = z->unsent_cap ? 2 * z->unsent_cap : 16;
		struct tp_spawn_req *q = realloc(z->unsent, (size_t)cap * sizeof *q);
		if (q == NULL)
			return -1;
		z->unsent = q;
		z->unsent_cap = cap;
	}
	int ws = ws_fd > 2 && kind == TP_SPAWN_SESSION ? fcntl(ws_fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (ws_fd > 2 && kind == TP_SPAWN_SESSION && ws < 0)
		return -1;
	int pg = fcntl(page, F_DUPFD_CLOEXEC, 3); /* the queue's own */
	if (pg < 0) {
		if (ws > 2)
			close(ws);
		return -1;
	}
	z->unsent[z->nunsent++] =
	    (struct tp_spawn_req){ .chan = chan, .page = pg, .ws = ws, .area = area, .kind = kind };
	return 0;
}

static struct worker *spawn(struct tp_host *h, int zi, enum tp_spawn_kind kind, int ws_fd)
{
	int sv[2], page;
	struct zygote *z = &h->zyg[zi];
	if (z->nspawning == z->spawning_cap) {
		int cap = z->spawning_cap ? 2 * z->spawning_cap : 16;
		struct worker **f = realloc(z->spawning, (size_t)cap * sizeof *f);
		if (f == NULL)
			return NULL;
		z->spawning = f;
		z->spawning_cap = cap;
	}
	if (tp_worker_reserve(h, 1) != 0 || start_zygote(h, z) != 0)
		return NULL;
	struct worker *w = calloc(1, sizeof *w);
	if (w == NULL)
		return NULL;
	h->nworkers++;
	w->zi = zi;
	w->idle_cpu_ms = -1;
	w->state = kind == TP_SPAWN_STATE;
	w->area = tp_zygote_area_bytes(z->policy);
	w->chan = -1;
	w->page_fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		char why[160];
		snprintf(why, sizeof why, "could not start a %s worker: its channel: %s",
			 z->lang->name, strerror(errno));
		tp_out_log("%s", why); /* EMFILE: three fds a session; raise RLIMIT_NOFILE */
		free(w);
		h->nworkers--;
		return NULL;
	}
	page = w->page_fd = tp_pages_get(&h->pages, w->area, &w->shm);
	if (page < 0 || send_spawn(z, sv[1], page, w->area, kind, ws_fd) != 0) {
		char why[160];
		snprintf(why, sizeof why, "could not start a %s worker: %s: %s", z->lang->name,
			 page < 0 ? "its page" : "the request to the zygote", strerror(errno));
		tp_out_log("%s", why);
		close(sv[1]);
		w->chan = sv[0];
		w->next = h->workers;
		h->workers = w;
		tp_worker_free(h, w);
		return NULL;
	}
	w->chan = sv[0];
	fcntl(w->chan, F_SETFL, O_NONBLOCK);
	/* Oldest first: dispatch takes the worker most likely done with its lockdown. */
	struct worker **tail = &h->workers;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = w;
	z->spawning[z->nspawning++] = w;
	return w;
}

/* A spawn that fails for want of memory, a socket or a page counts as a failure
 * of the language, as a zygote that will not start does: its backoff is the
 * loop's reason to wake and try again, since nothing else may come (stdin at
 * EOF, no worker in flight) before the queued execs' deadlines. */
struct worker *tp_worker_spawn(struct tp_host *h, int zi, enum tp_spawn_kind kind, int ws_fd)
{
	struct zygote *z = &h->zyg[zi];
	int failures = z->failures;
	struct worker *w = spawn(h, zi, kind, ws_fd);
	if (w == NULL && z->failures == failures)
		tp_zygote_failed(h, z);
	return w;
}

void tp_queue_remove(struct tp_host *h, struct exec *e)
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
