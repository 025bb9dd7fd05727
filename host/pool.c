/*
 * pool.c — the warm pool, the dispatch queue, worker channels, reaping, zygote
 * death, early exits and timeouts, over worker.c's workers. Invariants:
 * nothing here blocks (worker channels are written only when poll says so),
 * and every worker is reaped by this process (it is their parent via
 * CLONE_PARENT). Calls down into sessions, tools, the stream and the answer
 * path; nothing below calls back.
 */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "jsonio.h"
#include "result.h"
#include "spawn.h"
#include "zygote_ctl.h"

void tp_pool_stop_worker(struct tp_host *h, struct worker *w)
{
	if (w->exited || w->killed || w->exec == NULL || w->exec->stop_deadline > 0)
		return;   /* asked already: the first deadline holds */
	w->shm->stop = 1; /* a worker not yet started sees it when its exec begins */
	if (w->pid <= 0) {
		w->stop_pending = 1; /* the signal and the grace period start with its pid */
		return;
	}
	w->stop_pending = 0;
	kill(w->pid, SIGUSR1);
	w->exec->stop_deadline = tp_now_ms() + STOP_GRACE_MS;
	/* Waiting on the client's tool: the answer is now, so the code can stop. */
	tp_tools_abort(h, w, "the exec is being stopped");
}

/* Its exec waits for the client's answer to a tool call: it runs nothing. */
static int waiting_on_tool(const struct worker *w)
{
	return w->exec != NULL && !w->answered && w->exec->tool_pending[0] != '\0';
}

/* Its exec runs (or will as soon as the worker reads it), and is not waiting
 * on a tool: what --jobs bounds. */
static int computing(const struct worker *w)
{
	return w->exec != NULL && !w->answered && !waiting_on_tool(w);
}

/* Execs waiting on tools beyond what may wait for free: at most --queue of
 * them hold a process without a job slot or a worker slot; past that each one
 * holds both as if it computed, so a client that never answers its tools runs
 * out of slots and gets busy answers, not thousands of processes. */
static int waiting_over_cap(const struct tp_host *h)
{
	int n = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		n += !w->killed && waiting_on_tool(w);
	return n > h->cfg.max_queue ? n - h->cfg.max_queue : 0;
}

/* A one-shot worker ready for an exec. */
static int is_warm(const struct worker *w)
{
	return w->exec == NULL && !w->exited && !w->killed && w->sess == NULL && w->ready_seq == 0;
}

/* Live one-shot workers in all (sessions' do not count: their policies bound
 * them); warm ones of one language. */
static int count_live(const struct tp_host *h, int zi, int *warm)
{
	int n = 0;
	*warm = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		/* one waiting for the client's tool holds a process, not a slot */
		n += w->sess == NULL && !w->killed && !waiting_on_tool(w);
		*warm += is_warm(w) && w->zi == zi;
	}
	return n + waiting_over_cap(h);
}

/* Work queued and nothing under way for it: the loop tries the refill again
 * this soon (tp_pool_next_timeout), whatever left it so. */
#define REFILL_RETRY_MS 10.0

/* One-shot execs queued for a zygote (a session's wait for its own worker). */
static int queued_for(const struct tp_host *h, int zi)
{
	int n = 0;
	for (const struct exec *e = h->qhead; e != NULL; e = e->next)
		n += e->zi == zi && e->sess == NULL;
	return n;
}

int tp_pool_running(const struct tp_host *h)
{
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		if (w->exec != NULL && !w->answered)
			return 1;
	return 0;
}

/* Keeps pool_size warm workers per used language, plus one for each queued
 * exec, within max_workers. */
/* Kills a warm worker of the zygote (other than zi) with the most warm ones. */
static int evict_warm(struct tp_host *h, int zi)
{
	int best = -1, most = 0;
	for (int i = 0; i < h->nzyg; i++) {
		int warm;
		if (i == zi)
			continue;
		count_live(h, i, &warm);
		if (warm > most) {
			most = warm;
			best = i;
		}
	}
	for (struct worker *w = h->workers; best >= 0 && w != NULL; w = w->next)
		if (is_warm(w) && w->zi == best) {
			tp_worker_kill(w);
			return 0;
		}
	return -1;
}

static void refill_lang(struct tp_host *h, int zi)
{
	struct zygote *z = &h->zyg[zi];
	int warm, live = count_live(h, zi, &warm), queued = queued_for(h, zi);
	if (tp_zygote_backing_off(z, tp_now_ms()))
		return; /* tp_pool_next_timeout wakes the loop when it is over */
	/* Once stdin is closed no new exec can come: stop keeping workers warm.
	 * More than jobs of the queued cannot start at once. */
	int startable = queued < h->cfg.jobs ? queued : h->cfg.jobs;
	int target = (tp_client_accepting(h) && z->used ? h->cfg.pool_size : 0) + startable;
	/* A fork and a lockdown compete with a running exec for the CPU: while one
	 * runs and a warm worker is still ready, making more can wait. */
	if (warm > 0 && queued == 0 && tp_pool_running(h))
		return;
	/* Work waits here while every slot is another language's or policy's warm
	 * worker: one of those makes room (warm pools are a cache, not a claim). */
	if (queued > 0 && warm == 0 && live >= h->cfg.max_workers && evict_warm(h, zi) == 0)
		live--;
	while (warm < target && live < h->cfg.max_workers) {
		if (tp_worker_spawn(h, zi,
				    tp_zygote_state(h, zi) ? TP_SPAWN_STATE : TP_SPAWN_ONESHOT,
				    0) == NULL)
			break;
		warm++;
		live++;
	}
}

static void refill(struct tp_host *h)
{
	for (int i = 0; i < h->nzyg; i++)
		refill_lang(h, i);
}

/* The worker that can take e now: its session's when idle, or a warm one of
 * its zygote (the oldest: the most likely done with its lockdown). Isolation
 * "state" takes a used one first; "process" only one that never ran an exec,
 * and when a state zygote's warm workers have all been used, one of them goes
 * so that a fresh one is made. */
static struct worker *worker_for(struct tp_host *h, const struct exec *e)
{
	struct worker *fresh = NULL, *used = NULL;
	if (e->sess != NULL) /* idle as the kernel says: asleep (session.c) */
		return tp_sess_worker_waiting(e->sess->w) ? e->sess->w : NULL;
	for (struct worker *w = h->workers; w != NULL; w = w->next) {
		if (!is_warm(w) || w->zi != e->zi)
			continue;
		if (w->uses == 0 && fresh == NULL)
			fresh = w;
		if (w->uses > 0 && used == NULL)
			used = w;
	}
	if (e->p.state)
		return used != NULL ? used : fresh;
	/* One at a time: dispatch asks again each loop while the refill forks. */
	if (fresh == NULL && used != NULL && h->zyg[e->zi].nspawning == 0)
		tp_worker_kill(used); /* the refill makes a fresh one */
	return fresh;
}

/* After its reply, a state worker serves again when its exec ended as code
 * ends (a value, or the code's own error: syntax, runtime, inputs, result) and
 * nothing else happened: no limit, no stop, no host verdict, nothing unsent. */
static int reusable(const struct tp_host *h, const struct worker *w)
{
	const struct exec *e = w->exec;
	const struct tp_reply *r = w->reply;
	if (!w->state || !e->p.state || w->killed || w->exited || r == NULL ||
	    w->uses + 1 >= TP_STATE_MAX_EXECS || !tp_client_accepting(h) || e->cancelled ||
	    e->stop_deadline > 0 || w->stop_pending || tp_err_failed(&e->verdict) ||
	    e->tool_pending[0] != '\0' || w->tx != NULL || w->shm->tripped != 0 || w->shm->stop)
		return 0;
	if (r->ok)
		return 1;
	switch (r->error.kind) {
	case TP_KIND_SYNTAX_ERROR:
	case TP_KIND_RUNTIME_ERROR:
	case TP_KIND_INPUT_ERROR:
	case TP_KIND_RESULT_ERROR: return 1;
	default: return 0;
	}
}

/* A state worker that takes longer than this to build its fresh state is
 * stuck (it takes well under a millisecond): it is replaced. */
#define STATE_RESET_MS 2000

/* A state worker back in the warm pool, its exec answered. */
static void recycle(struct worker *w)
{
	w->cpu_prior += (double)w->reply->usage.cpu_us / 1000.0;
	w->uses++;
	w->ready_seq = w->exec->seq;
	w->ready_by = tp_now_ms() + STATE_RESET_MS;
	tp_exec_free(w->exec);
	w->exec = NULL;
	w->answered = 0;
	tp_reply_free(w->reply);
	free(w->reply);
	w->reply = NULL;
}

static int same_flow(const struct exec *a, const struct exec *b)
{
	return a->sess != NULL ? a->sess == b->sess : b->sess == NULL && a->zi == b->zi;
}

/* Execs of e's flow (its session, or one-shot execs of its policy and
 * language) running now. */
static int flow_running(const struct tp_host *h, const struct exec *e)
{
	int n = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		n += w->exec != NULL && !w->answered && same_flow(e, w->exec);
	return n;
}

/* Execs of e's client running now. */
static int client_running(const struct tp_host *h, const struct exec *e)
{
	int n = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		n += w->exec != NULL && !w->answered && w->exec->c == e->c;
	return n;
}

/* Execs of e's tenant running now (the clients of no tenant count as one). */
static int tenant_running(const struct tp_host *h, const struct exec *e)
{
	int n = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		n += w->exec != NULL && !w->answered && w->exec->c->tenant == e->c->tenant;
	return n;
}

static double *tenant_last_start(struct tp_host *h, const struct exec *e)
{
	return e->c->tenant != NULL ? &e->c->tenant->last_start : &h->untenanted_last_start;
}

static double *flow_last_start(struct tp_host *h, const struct exec *e)
{
	return e->sess != NULL ? &e->sess->last_start : &h->zyg[e->zi].last_start;
}

/* An exec waits at most its wall_ms to start, and at least QUEUE_WAIT_MIN_MS (a
 * pool refilling or a zygote starting is not held against a tiny wall clock):
 * one still queued then is answered queue_timeout and never runs (waiting is
 * not running: a timeout is the snippet's own wall clock, from its start). */
#define QUEUE_WAIT_MIN_MS 1000.0
static double queue_deadline(const struct exec *e)
{
	double w = (double)e->p.limits.wall_ms;
	return e->t_arrival + (w > QUEUE_WAIT_MIN_MS ? w : QUEUE_WAIT_MIN_MS);
}

static void expire_queue(struct tp_host *h, double now)
{
	struct exec *e = h->qhead;
	while (e != NULL) {
		struct exec *next = e->next;
		if (now >= queue_deadline(e)) {
			tp_queue_remove(h, e);
			tp_err_set(
			    &e->verdict, TP_KIND_QUEUE_TIMEOUT, TP_LAYER_HOST, 0,
			    "it waited %.0f ms in the queue and never started (an exec waits "
			    "at most its wall_ms, or 1 s, to start): every job was busy; retry "
			    "later",
			    now - e->t_arrival);
			if (e->id != NULL && !e->cancelled)
				tp_answer_unrun(h, e);
			tp_exec_free(e);
		}
		e = next;
	}
}

/* A worker that broke the channel's protocol: its process runs the snippet, so
 * that is the snippet's doing (native code under kernel-only can), never the
 * host's failure: crashed, at the process layer. */
static void broke_protocol(struct tp_host *h, struct worker *w, const char *msg)
{
	struct tp_err err = { 0 };
	tp_err_set(&err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0, "%s", msg);
	tp_answer_finish(h, w, &err);
}

/* The host's own failure answers the worker's exec: TP_KIND_INTERNAL at TP_LAYER_HOST. */
static void fail_exec(struct tp_host *h, struct worker *w, int sys_errno, const char *msg)
{
	struct tp_err err = { 0 };
	tp_err_set(&err, TP_KIND_INTERNAL, TP_LAYER_HOST, sys_errno, "%s", msg);
	tp_answer_finish(h, w, &err);
}

/* Starts queued execs while fewer than jobs compute (an exec waiting for the
 * client's tool is not counted while it waits). Fair at three levels, each
 * deciding only among equals of the one above: across tenants (the tenant
 * with the fewest running, then the one served longest ago; the clients of no
 * tenant count as one), then across a tenant's clients (the same rule), then
 * across a client's flows (the same rule), so a burst of one-shot execs
 * cannot hold back a session's, nor one policy's another's, nor one client's
 * another's, nor one tenant's another's. A flow is a session, or the one-shot
 * execs of one policy and language. A tenant at its concurrent_execs quota
 * starts nothing more until one of its execs ends. */
struct rank {
	int load[3];
	double last[3];
};

static int better(const struct rank *a, const struct rank *b)
{
	for (int i = 0; i < 3; i++) {
		if (a->load[i] != b->load[i])
			return a->load[i] < b->load[i];
		if (a->last[i] != b->last[i])
			return a->last[i] < b->last[i];
	}
	return 0;
}

void tp_pool_dispatch_queue(struct tp_host *h)
{
	int running = waiting_over_cap(h);
	expire_queue(h, tp_now_ms());
	/* A session's worker that ran while idle ends here, before its exec is
	 * handed over (session.c: the idle watch). */
	tp_sess_watch(h, tp_now_ms(), TP_WATCH_QUEUED);
	for (const struct worker *w = h->workers; w != NULL; w = w->next)
		running += computing(w);
	while (running < h->cfg.jobs && h->qhead != NULL) {
		struct exec *best = NULL;
		struct worker *bw = NULL;
		struct rank br = { { 0 }, { 0 } };
		for (struct exec *e = h->qhead; e != NULL; e = e->next) {
			/* A client that does not read its replies: while MAX_OUT_PENDING
			 * of them wait, none of its execs starts, so what waits is that
			 * plus the replies of its execs running now, not one reply per
			 * queued exec. */
			if (e->c->out_len >= MAX_OUT_PENDING)
				continue;
			const struct tp_tenant *t = e->c->tenant;
			int tload = tenant_running(h, e);
			if (t != NULL && t->q.concurrent_execs > 0 &&
			    (uint64_t)tload >= t->q.concurrent_execs)
				continue;
			struct worker *w = worker_for(h, e);
			if (w == NULL)
				continue;
			struct rank r = { { tload, client_running(h, e), flow_running(h, e) },
					  { *tenant_last_start(h, e), e->c->last_start,
					    *flow_last_start(h, e) } };
			if (best == NULL || better(&r, &br)) {
				best = e;
				bw = w;
				br = r;
			}
		}
		if (best == NULL)
			break;
		*flow_last_start(h, best) = best->c->last_start = *tenant_last_start(h, best) =
		    tp_now_ms();
		tp_queue_remove(h, best);
		if (tp_worker_assign(h, best, bw) != 0) {
			bw->exec = best;
			fail_exec(h, bw, ENOMEM, "out of memory sending the request");
			tp_worker_kill(bw);
		}
		running++;
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

/* A worker that never got its pid: its exec (if any) goes back to the queue. A
 * session's worker cannot be replaced: its session ends, answering its execs. */
static void drop_unborn(struct tp_host *h, struct worker *w)
{
	if (w->exec != NULL && !w->answered) {
		requeue_front(h, w->exec);
		w->exec = NULL;
	}
	if (w->sess != NULL)
		tp_sess_end(h, w->sess, "its worker could not start: see the host's stderr");
	tp_worker_free(h, w);
}

/* ---- worker channels ---------------------------------------------------------- */

static void take_reply(struct tp_host *h, struct worker *w, const char *buf, size_t len)
{
	struct tp_err err = { 0 };
	struct tp_reply *r;
	if (w->exec == NULL && w->ready_seq != 0 &&
	    tp_msg_ready_decode(buf, len, w->ready_seq) == 0) {
		w->ready_seq = 0; /* its fresh state is built: warm again */
		return;
	}
	if (w->exec == NULL || w->answered) {
		tp_worker_kill(w); /* unsolicited bytes: the worker is not behaving */
		return;
	}
	if (tp_msg_type(buf, len) == TP_MSG_TOOL_CALL) {
		tp_tools_from_worker(h, w, buf, len);
		return;
	}
	if (w->exec->tool_pending[0] != '\0' || w->tx != NULL) {
		/* It answers before reading all the host sent it (a request, a tool's
		 * answer): those bytes would reach its next exec. */
		tp_err_set(&err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0, "worker reply refused: %s",
			   w->exec->tool_pending[0] != '\0'
			       ? "sent while its tool call was unanswered"
			       : "sent before it read what the host sent");
		tp_worker_kill(w);
		tp_answer_finish(h, w, &err);
		return;
	}
	r = malloc(sizeof *r);
	if (r == NULL) {
		fail_exec(h, w, ENOMEM, "out of memory reading the worker reply");
	} else if ((tp_answer_splices(h, w->exec)
			? tp_msg_reply_decode_lazy(buf, len, &w->exec->p.limits, r, &err)
			: tp_msg_reply_decode(buf, len, &w->exec->p.limits, r, &err)) != 0) {
		free(r);
		tp_answer_finish(h, w, &err);
	} else if (r->seq != w->exec->seq) {
		tp_reply_free(r);
		free(r);
		tp_err_set(&err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0,
			   "worker reply refused: it answers another request");
		tp_worker_kill(w);
		tp_answer_finish(h, w, &err);
	} else if (!r->ok && r->error.kind == TP_KIND_CANCELLED && w->exec->stop_deadline == 0 &&
		   !w->stop_pending) {
		/* (A stop asked before the zygote told the worker's pid is one: the
		 * page's flag was set, and the worker may answer before the pid is read.) */
		tp_reply_free(r);
		free(r);
		tp_err_set(&err, TP_KIND_CRASHED, TP_LAYER_PROCESS, 0,
			   "worker reply refused: a stop the host did not ask for");
		tp_worker_kill(w); /* before finish: a session's reply says it is lost */
		tp_answer_finish(h, w, &err);
	} else {
		w->reply = r;
		w->exec_cpu_us = r->usage.cpu_us;
		h->zyg[w->zi].failures = 0; /* this language's workers work */
		if (w->sess != NULL && !w->killed) {
			/* A session's worker lives on for the next exec. */
			tp_answer_finish(h, w, NULL);
			tp_sess_exec_done(h, w);
			return;
		}
		tp_answer_finish(h, w, NULL);
		if (reusable(h, w)) {
			recycle(w);
			return;
		}
	}
	w->measured = 1;   /* its phases are counted when it is reaped */
	tp_worker_kill(w); /* one-shot: it has said all it may say */
}

void tp_pool_read_chan(struct tp_host *h, struct worker *w)
{
	char *buf;
	size_t len;
	int r;
	for (;;) {
		long n = tp_frame_rx_read(&w->rx, w->chan);
		int sys_errno = n < 0 ? errno : 0;
		if (sys_errno == EINTR)
			continue;
		if (sys_errno == EMSGSIZE) {
			broke_protocol(h, w, "worker reply larger than the frame cap");
			tp_worker_kill(w);
		}
		if (sys_errno == ENOMEM) { /* our failure, not the snippet's */
			fail_exec(h, w, sys_errno, "out of memory reading the worker reply");
			tp_worker_kill(w);
		}
		if (n <= 0) {
			if (n == 0 || sys_errno != EAGAIN) {
				close(w->chan);
				w->chan = -1;
			}
			break;
		}
		while ((r = tp_frame_rx_take(&w->rx, &buf, &len)) == 1) {
			take_reply(h, w, buf, len);
			free(buf);
		}
		if (r == -2) { /* our failure, not the worker's */
			fail_exec(h, w, ENOMEM, "out of memory reading the worker reply");
			tp_worker_kill(w);
			break;
		}
		if (r < 0) {
			broke_protocol(h, w, "worker broke the channel framing");
			tp_worker_kill(w);
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
		tp_pool_read_chan(h, w); /* a reply written just before exit is still buffered */
	if (w->sess != NULL) {           /* the session dies with its worker */
		char why[128];
		if (WIFSIGNALED(status))
			snprintf(why, sizeof why, "its worker was killed (signal %d)",
				 WTERMSIG(status));
		else if (WEXITSTATUS(status) == TP_EXIT_LIMIT)
			snprintf(why, sizeof why,
				 "a limit tripped and its code did not stop within the grace "
				 "period, so its worker ended itself");
		else if (WEXITSTATUS(status) == TP_EXIT_VIOLATION)
			snprintf(why, sizeof why,
				 "seccomp refused a system call and ended its worker");
		else
			snprintf(why, sizeof why, "its worker exited (status %d)",
				 WEXITSTATUS(status));
		tp_sess_end(h, w->sess, why);
	}
	if (w->exec != NULL) {
		tp_answer_finish(h, w, NULL);
	} else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
		   !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		char d[64];
		snprintf(d, sizeof d, "%s %d", WIFEXITED(status) ? "status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		tp_out_log("a warm worker died before use (%s)", d);
		tp_zygote_failed(h, &h->zyg[w->zi]);
	}
	if (w->measured && w->shm != NULL)
		tp_metrics_worker_cpu(h, h->zyg[w->zi].lang->id, w->shm, w->exec_cpu_us, cpu_ms);
	/* Reaped: its page is the host's alone, zeroed for the next (pages.c). */
	tp_pages_put(&h->pages, w->page_fd, w->shm, w->area);
	w->page_fd = -1;
	w->shm = NULL;
	tp_worker_free(h, w);
}

/* ---- zygote and child exits ------------------------------------------------- */

static void zygote_gone(struct tp_host *h, struct zygote *z)
{
	if (z->ctl >= 0)
		close(z->ctl);
	z->ctl = -1;
	z->pid = 0;
	tp_zygote_unsent_free(z);
	tp_zygote_failed(h, z);
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

void tp_pool_read_zygote(struct tp_host *h, struct zygote *z)
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
			tp_out_log("the zygote could not fork: %s", strerror(-pid));
			tp_zygote_failed(h, z);
			drop_unborn(h, w);
			continue;
		}
		w->pid = pid;
		if (w->exec != NULL) {
			tp_worker_bound_cpu(h, w);
			tp_worker_boost(w);
		}
		if (w->kill_pending)
			kill(pid, SIGKILL);
		else if (w->stop_pending && w->exec != NULL)
			tp_pool_stop_worker(h, w);
		else if (w->sess != NULL)
			tp_sess_worker_born(w);
		take_early_exit(h, w);
	}
}

void tp_pool_reap(struct tp_host *h)
{
	int status;
	struct rusage ru;
	pid_t pid;
	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		struct worker *w = find_pid(h, pid);
		struct zygote *z = NULL;
		for (int i = 0; i < h->nzyg; i++)
			if (h->zyg[i].pid == pid)
				z = &h->zyg[i];
		if (z != NULL) {
			tp_metrics_zygote_cpu(h, z->lang->id, cpu);
			zygote_gone(h, z);
		} else if (w != NULL)
			worker_exited(h, w, status, cpu);
		else if (h->nearly < (int)(sizeof h->early / sizeof h->early[0]))
			h->early[h->nearly++] = (struct early_exit){ pid, status, cpu };
	}
}

void tp_pool_check_timeouts(struct tp_host *h, double now)
{
	for (struct worker *w = h->workers; w != NULL; w = w->next) {
		struct exec *e = w->exec;
		if (e == NULL && w->ready_seq != 0 && !w->killed && now >= w->ready_by)
			tp_worker_kill(w);
		if (e == NULL || w->answered)
			continue;
		if (w->cpu_kill_ms > 0 && now >= w->cpu_check_at && !w->killed) {
			char state;
			double cpu;
			w->cpu_check_at = now + IDLE_WATCH_MS;
			if (w->pid > 0 && tp_proc_stat(w->pid, &state, &cpu) == 0 &&
			    cpu >= w->cpu_kill_ms) {
				/* Its hard RLIMIT_CPU, enforced by the host (bound_session_cpu). */
				if (!tp_err_failed(&e->verdict))
					tp_err_set(&e->verdict, TP_KIND_CPU_LIMIT, TP_LAYER_HOST, 0,
						   "%s", tp_limit_message(TP_LIMIT_CPU_MS));
				tp_worker_kill(w);
				continue;
			}
		}
		if (now >= e->deadline && e->stop_deadline == 0 && !w->killed && !w->stop_pending) {
			/* The wall clock holds whatever verdict came first (a refused
			 * tool call, say): the exec still ends at its deadline. */
			if (!tp_err_failed(&e->verdict))
				tp_err_set(&e->verdict, TP_KIND_TIMEOUT, TP_LAYER_HOST, 0, "%s",
					   tp_limit_message(TP_LIMIT_WALL_MS));
			/* A session's state is worth the grace period; a one-shot
			 * worker's is not (its output is in the page either way). */
			if (w->sess != NULL)
				tp_pool_stop_worker(h, w);
			else
				tp_worker_kill(w);
		} else if (e->stop_deadline > 0 && now >= e->stop_deadline) {
			/* Its answer may have come since the loop's poll returned (a
			 * loaded machine): read it first; a session then stays. */
			struct pollfd p = { w->chan, POLLIN, 0 };
			uint64_t seq = e->seq; /* e may be answered and freed meanwhile */
			if (w->chan >= 0 && poll(&p, 1, 0) > 0)
				tp_pool_read_chan(h, w);
			if (w->exec != NULL && w->exec->seq == seq && !w->answered)
				tp_worker_kill(w);
		}
	}
}

int tp_pool_next_timeout(const struct tp_host *h, double now)
{
	double best = 0;
	int any = 0;
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		const struct exec *e = w->exec;
		if (e == NULL && w->ready_seq != 0 && !w->killed) {
			double left = w->ready_by - now;
			if (!any || left < best)
				best = left;
			any = 1;
		}
		/* A stop asked before its pid came waits for the pid (the zygote's
		 * channel wakes the loop), not for a clock. */
		if (e == NULL || w->answered || w->killed || w->stop_pending)
			continue;
		/* Asked to stop: its grace period; else its wall clock. */
		double left = e->stop_deadline > 0 ? e->stop_deadline - now : e->deadline - now;
		if (w->cpu_kill_ms > 0 && w->cpu_check_at - now < left)
			left = w->cpu_check_at - now; /* its CPU time, read by the host */
		if (!any || left < best)
			best = left;
		any = 1;
	}
	/* A language backing off wakes the loop when it may try again, if it has
	 * work or keeps a warm pool. And liveness, whatever left it so: one-shot
	 * work queued for a language with no warm worker, none being born and room
	 * for one is retried after REFILL_RETRY_MS (refill spawns, or backs off). */
	for (int i = 0; i < h->nzyg; i++) {
		const struct zygote *z = &h->zyg[i];
		int warm, queued = queued_for(h, i);
		double left;
		if (tp_zygote_backing_off(z, now) && (z->used || queued > 0))
			left = z->retry_at - now;
		else if (queued > 0 && z->nspawning == 0 &&
			 count_live(h, i, &warm) < h->cfg.max_workers && warm == 0)
			left = REFILL_RETRY_MS;
		else
			continue;
		if (!any || left < best)
			best = left;
		any = 1;
	}
	/* A queued exec waits at most its queue_deadline (expire_queue). */
	for (const struct exec *e = h->qhead; e != NULL; e = e->next) {
		double left = queue_deadline(e) - now;
		if (!any || left < best)
			best = left;
		any = 1;
	}
	double sess = tp_sess_next_timeout(h, now);
	if (sess >= 0 && (!any || sess < best)) {
		best = sess;
		any = 1;
	}
	/* Streaming execs' pages and progress notifications (stream.c). */
	double st = tp_stream_next_timeout(h, now);
	if (st >= 0 && (!any || st < best)) {
		best = st;
		any = 1;
	}
	if (!any)
		return -1;
	return best <= 0 ? 0 : (int)best + 1;
}
