/*
 * worker.c — the life of a worker (one exec, or a session's many). It maps its shared page,
 * reseeds, locks itself down, and only then reads its request from the host. It trusts the host's
 * bytes, but nothing it computes is trusted by the host.
 */
#include "worker.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "lockdown.h"
#include "toolcall.h"
#include "verdict.h"

static _Noreturn void die(const char *what, const char *detail)
{
	/* stderr is still the host's stderr only before lockdown; after it, /dev/null. */
	fprintf(stderr, "tidepool worker: %s: %s\n", what, detail);
	_exit(TP_EXIT_FATAL);
}

static struct tp_shm *map_page(int fd, uint32_t area)
{
	void *p = mmap(NULL, tp_shm_size(area), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static uint64_t entropy(void)
{
	uint64_t e = 0;
	if (getrandom(&e, sizeof e, 0) != sizeof e)
		die("getrandom", strerror(errno));
	return e;
}

/* Isolation "state": what one exec leaves in memory is zeroed as it is freed,
 * so the next exec in this worker cannot find it, even through a memory-safety
 * bug. The Lua heap scrubs itself (lalloc); jansson's values and our buffers
 * go through these. This file's one mutable global: set once per worker,
 * before lockdown and its first exec (tp_worker_main), read after; no signal
 * handler touches it. */
static int g_scrub;

static void scrub_free(void *p)
{
	if (p != NULL && g_scrub)
		explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void scrub_text(const char *s, size_t n)
{
	if (s != NULL && g_scrub)
		explicit_bzero((char *)s, n);
}

/* The C stack below this frame, where the exec's frames were. Noinline: its
 * own frame is below its caller's, so the caller's locals survive. */
__attribute__((noinline)) static void scrub_stack(void)
{
	char below[256u << 10];
	explicit_bzero(below, sizeof below);
	__asm__ volatile("" : : "r"(below) : "memory");
}

/* The reply in one frame; a value's own JSON text (value_json) is written
 * from where it is, not copied into the message first. */
static void reply(int chan, struct tp_shm *shm, const struct tp_reply *r)
{
	struct tp_msg_split m;

	if (tp_msg_reply_encode_split(r, &m) != 0)
		_exit(TP_EXIT_FATAL);
	/* A one-shot worker's (shm set): before the send, since once the host has
	 * the reply it may kill the worker, and what follows is its exit (the
	 * metrics' phases; a reused worker's are not counted). */
	if (shm != NULL)
		__atomic_store_n(&shm->cpu_reply_us, tp_verdict_cpu_since_fork_us(),
				 __ATOMIC_RELEASE);
	struct iovec parts[3] = { { m.pre, m.pre_n },
				  { (void *)m.mid, m.mid_n },
				  { m.post, m.post_n } };
	if (tp_frame_sendv(chan, parts, 3) != 0)
		_exit(TP_EXIT_FATAL);
	scrub_free(m.pre);
	scrub_free(m.post);
}

/* The language's rehearsal (lang.h, worker.h): each snippet runs through the
 * same exec and reply encoding as a request, against a private page (the host
 * never sees it), and its reply is dropped. What they write once, the pages of
 * the shared heap an exec touches (copy-on-write faults), lazy caches, the
 * allocator's free lists, is then paid before the request. */
void tp_worker_rehearse(const struct tp_lang *lang, const struct tp_limits *ceiling,
			const volatile uint32_t *stop)
{
	static union {
		struct tp_shm shm;
		char page[4096];
	} priv;

	if (lang->rehearsal == NULL)
		return;
	tp_shm_init(&priv.shm, (uint32_t)(sizeof priv - sizeof priv.shm) / 2);
	for (const char *const *t = lang->rehearsal; *t != NULL; t++) {
		if (stop != NULL && __atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return;
		struct tp_request req = {
			.code = *t, .code_len = strlen(*t), .limits = *ceiling, .rehearsal = 1
		};
		struct tp_reply out;
		struct tp_msg_split m;
		memset(&out, 0, sizeof out);
		if (lang->exec(&req, &priv.shm, &out) == 0 &&
		    tp_msg_reply_encode_split(&out, &m) == 0) {
			free(m.pre);
			free(m.post);
		}
		tp_reply_free(&out);
	}
}

/* A warm worker rehearses only when idle: it first waits REHEARSAL_IDLE_MS for
 * a request (the host sets the page's handed and wakes it), so a worker that
 * requests reach back to back spends no CPU on it; and once the host has handed
 * it one, it skips the rest. */
#define REHEARSAL_IDLE_MS 5
static void rehearse_if_idle(const struct tp_worker_cfg *cfg, struct tp_shm *shm)
{
	struct timespec idle = { 0, REHEARSAL_IDLE_MS * 1000000L };

	if (cfg->lang->rehearsal == NULL)
		return;
	while (!__atomic_load_n(&shm->handed, __ATOMIC_ACQUIRE))
		if (syscall(SYS_futex, &shm->handed, FUTEX_WAIT, 0, &idle, NULL, 0) != 0 &&
		    errno != EINTR && errno != EAGAIN)
			break; /* ETIMEDOUT: idle */
	tp_worker_rehearse(cfg->lang, &cfg->ceiling, &shm->handed);
}

/* Kernel-only: address space the reply needs once the snippet is done (its
 * JSON, the frame, a traceback): the exec may not touch it (verdict.c). */
static uint64_t kernel_reserve(const struct tp_worker_cfg *cfg)
{
	return (16u << 20) + 2 * cfg->ceiling.result_bytes;
}

/* Kernel-only: the kernel holds memory_bytes, so RLIMIT_AS is what the worker
 * maps when its exec starts plus the exec's memory and the reply's reserve,
 * with no slack. The start is the zygote's size at the clone (cfg->vm_bytes,
 * measured in the zygote: a worker cannot read /proc) plus the page it maps;
 * what the worker allocates before the snippet (the request, the rehearsal's
 * leftovers) is a little less room for the snippet. */
static uint64_t kernel_as_bytes(const struct tp_worker_cfg *cfg, uint64_t room)
{
	return cfg->vm_bytes + tp_shm_size(cfg->area_bytes) + room + kernel_reserve(cfg);
}

_Noreturn void tp_worker_main(const struct tp_worker_cfg *cfg)
{
	struct tp_err err = { 0 };
	/* Die with the host from the first instruction: a host that exits before it
	 * learns our pid cannot kill us, and its request may already be in the
	 * channel. Parent-death signals are not inherited through clone, and a host
	 * that died before the prctl shows as another parent. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != cfg->host_pid)
		_exit(0);
	prctl(PR_SET_NAME, "tp-worker"); /* tells workers from the zygote in ps and /proc */
	struct tp_shm *shm = map_page(cfg->shm_fd, cfg->area_bytes);
	if (shm == NULL)
		die("mmap(shared page)", strerror(errno));
	uint64_t e = entropy();
	/* jansson seeds its hash from /dev/urandom on first use, which lockdown
	 * forbids: seed it now (a no-op if the zygote already used jansson). */
	json_object_seed((size_t)(e | 1));
	if (cfg->state) {
		g_scrub = 1;
		json_set_alloc_funcs(malloc, scrub_free);
	}
	cfg->lang->worker_init(e);

	int keep[1] = { cfg->chan_fd };
	const struct tp_policy *policy = tp_sandbox_policy();
	int kernel = policy != NULL && !policy->language_layer && cfg->vm_bytes > 0;
	uint64_t room = cfg->session ? cfg->session_memory_bytes : cfg->ceiling.memory_bytes;
	struct tp_lockdown ld = {
		.as_bytes = kernel         ? kernel_as_bytes(cfg, room)
			    : cfg->session ? cfg->session_as_bytes
					   : cfg->as_bytes,
		/* RLIMIT_CPU is the backstop behind the language's own CPU timer, per
		 * exec; a session's worker runs many, each under its own timer, so its
		 * backstop is the session's lifetime (the host ends it then). */
		.cpu_sec = cfg->session ? cfg->session_cpu_sec
			   : cfg->state ? ((cfg->ceiling.cpu_ms + TP_CPU_GRACE_MS) / 1000 + 1) *
					      TP_STATE_MAX_EXECS
					: (cfg->ceiling.cpu_ms + TP_CPU_GRACE_MS) / 1000 + 1,
		.nofile = cfg->files || cfg->workspace_fd > 2 ? 32 : 8,
		/* A file in a workspace may hold workspace_bytes (a write grant's
		 * file_bytes may say more: the larger, as the kernel has one limit). */
		.fsize = cfg->workspace_fd > 2 && cfg->workspace_bytes > cfg->fsize
			     ? cfg->workspace_bytes
			     : cfg->fsize,
		.workspace_fd = cfg->workspace_fd,
		.keep_fds = keep,
		.nkeep = 1,
		.shm = shm,
	};
	/* No language layer: the kernel enforces memory_bytes and cpu_ms (verdict.h). */
	if (kernel)
		tp_verdict_kernel_limits(room, kernel_reserve(cfg), cfg->session);
	if (tp_lockdown_apply(&ld, &err) != 0)
		die("lockdown", err.msg);
	tp_verdict_catch_stop();
	tp_tool_set_channel(cfg->chan_fd);
	shm->cpu_ready_us = tp_verdict_cpu_since_fork_us();
	rehearse_if_idle(cfg, shm);
	shm->cpu_rehearsed_us = tp_verdict_cpu_since_fork_us();

	/* Locked down: from here on, only the requests and the language run. A
	 * one-shot worker serves one; a session's serves until the host closes the
	 * channel or kills it, each request flagged as the session's; one of
	 * isolation "state" serves one-shot execs, each in a fresh state, until the
	 * host replaces it. */
	uint32_t used[2] = { 0, 0 }; /* the last exec's output in the page */
	for (unsigned n = 0;; n++) {
		size_t len;
		char *buf = tp_frame_recv(cfg->chan_fd, TP_MSG_MAX_REQUEST, &len);
		struct tp_request req;
		struct tp_reply out;
		if (buf == NULL)
			_exit(0); /* the host closed the channel: shutdown, or the session ended */
		if (tp_msg_request_decode(buf, len, &req) != 0 || req.session != cfg->session ||
		    (cfg->state && n >= TP_STATE_MAX_EXECS))
			_exit(TP_EXIT_FATAL);
		scrub_text(buf, len);
		free(buf);
		if (cfg->state && n > 0) {
			/* The host has read the last exec's output: it asked for this one. */
			explicit_bzero(shm->data, used[0]);
			explicit_bzero(shm->data + cfg->area_bytes, used[1]);
		}
		tp_sandbox_set_workspace(req.workspace);
		if (cfg->lang->exec(&req, shm, &out) != 0)
			_exit(TP_EXIT_FATAL);
		out.seq = req.seq;
		uint64_t seq = req.seq;
		for (int i = 0; i < 2; i++) {
			uint32_t l = __atomic_load_n(&shm->len[i], __ATOMIC_ACQUIRE);
			used[i] = l < cfg->area_bytes ? l : cfg->area_bytes;
		}
		reply(cfg->chan_fd, cfg->session || cfg->state ? NULL : shm, &out);
		scrub_text(req.code, req.code_len);
		scrub_text(out.text.s, out.text.n);
		scrub_text(out.value_json, out.value_json_n);
		tp_request_free(&req);
		tp_reply_free(&out);
		if (!cfg->session && !cfg->state)
			break;
		if (cfg->state) {
			/* Off the request's path: the host has the reply. */
			if (cfg->lang->reset(entropy()) != 0)
				_exit(TP_EXIT_FATAL);
			scrub_stack();
			/* The host hands it the next exec only now. */
			char *ready = tp_msg_ready_encode(seq, &len);
			if (ready == NULL || tp_frame_send(cfg->chan_fd, ready, len) != 0)
				_exit(TP_EXIT_FATAL);
			free(ready);
		}
	}
	_exit(0);
}
