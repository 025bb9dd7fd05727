/*
 * worker.c — the life of a one-shot worker. It maps its shared page, reseeds,
 * locks itself down, and only then reads its request from the host. It trusts
 * the host's bytes, but nothing it computes is trusted by the host.
 */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "frame.h"
#include "jsonio.h"
#include "lockdown.h"

/* Largest request frame: the code, inputs and limits; the host caps lines lower. */
#define MAX_REQUEST (64u << 20)

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

static int parse_request(const char *buf, size_t len, json_t **msg, struct tp_exec_req *req)
{
	json_error_t jerr;
	int oom;
	/* Not json_loadb: short of memory it can drop bytes from the code. */
	json_t *m = tp_json_loadb(buf, len, JSON_ALLOW_NUL, &jerr, &oom);
	json_t *code = json_object_get(m, "code");
	json_t *inputs = json_object_get(m, "inputs");
	json_t *seed = json_object_get(m, "seed");

	memset(req, 0, sizeof *req);
	if (!json_is_string(code) ||
	    tp_limits_from_json(&req->limits, json_object_get(m, "limits")) != 0) {
		json_decref(m);
		return -1;
	}
	req->code = json_string_value(code);
	req->code_len = json_string_length(code);
	req->inputs = json_is_object(inputs) ? inputs : NULL;
	req->has_seed = json_is_integer(seed);
	req->seed = req->has_seed ? (uint64_t)json_integer_value(seed) : 0;
	*msg = m;
	return 0;
}

static void reply(int chan, json_t *r)
{
	char *s = r ? tp_json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (s == NULL)
		_exit(TP_EXIT_FATAL);
	if (tp_frame_send(chan, s, strlen(s)) != 0)
		_exit(TP_EXIT_FATAL);
}

_Noreturn void tp_worker_main(const struct tp_worker_cfg *cfg)
{
	char err[256];
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
	cfg->lang->worker_init(e);

	int keep[1] = { cfg->chan_fd };
	struct tp_lockdown ld = {
		.as_bytes = cfg->as_bytes,
		/* RLIMIT_CPU is the backstop behind the language's own CPU timer. */
		.cpu_sec = (cfg->ceiling.cpu_ms + TP_CPU_GRACE_MS) / 1000 + 1,
		.nofile = 8,
		.keep_fds = keep,
		.nkeep = 1,
		.shm = shm,
	};
	if (tp_lockdown_apply(&ld, err, sizeof err) != 0)
		die("lockdown", err);

	/* Locked down: from here on, only the request and the language run. */
	size_t len;
	char *buf = tp_frame_recv(cfg->chan_fd, MAX_REQUEST, &len);
	json_t *msg;
	struct tp_exec_req req;
	if (buf == NULL)
		_exit(0); /* the host closed the channel: pool shutdown */
	if (parse_request(buf, len, &msg, &req) != 0)
		_exit(TP_EXIT_FATAL);
	free(buf);
	reply(cfg->chan_fd, cfg->lang->exec(&req, shm));
	_exit(0);
}
