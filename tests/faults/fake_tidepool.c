/*
 * fake_tidepool.c — a test-only host whose workers misbehave on purpose.
 * Serving, it is the real host (the host/ objects, unchanged). Its `--zygote` mode is a
 * fake zygote speaking the real control protocol, and its workers read the real
 * request frame, then do to their channel and page what the request's `code`
 * names (see scenarios[]). Nothing here is linked into build/tidepool, so no
 * untrusted snippet can reach these behaviours in a real host.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "policy.h"
#include "host.h"
#include "shm.h"
#include "spawn.h"
#include "zygote.h"

#define CTL_FD TP_ZYGOTE_CTL_FD

/* Replies in the real wire format (common/msg.h), made by the real encoder;
 * the broken ones are made from a real one, then altered. */
static char *ok_reply;
static size_t ok_len;
static uint64_t g_seq; /* the request's number: a real reply carries it back */

static void make_ok_reply(void)
{
	free(ok_reply);
	struct tp_reply r = { .seq = g_seq, .ok = 1, .value = json_integer(1) };
	ok_reply = tp_msg_reply_encode(&r, &ok_len);
	json_decref(r.value);
	if (ok_reply == NULL)
		_exit(9);
}

/* An ok reply whose value is the text given, which need not be JSON. After the
 * value, version 8 has TAIL bytes: an absent text (a length word), its cut flag,
 * the image count and an absent nonfinite (a length word), kept as the encoder
 * wrote them. */
#define TAIL 13u
static char *reply_with_value_text(const char *text, size_t n, size_t *len)
{
	struct tp_reply r = { .seq = g_seq, .ok = 1, .value = json_null() };
	size_t k, all;
	char *head = tp_msg_reply_encode(&r, &all), *out;
	uint32_t n32 = (uint32_t)n;

	k = all - TAIL - 8; /* the value's length word and "null" */
	out = head ? malloc(k + 4 + n + TAIL) : NULL;
	if (out == NULL)
		_exit(9);
	memcpy(out, head, k);
	for (int i = 0; i < 4; i++)
		out[k + (size_t)i] = (char)(n32 >> (8 * i));
	memcpy(out + k + 4, text, n);
	memcpy(out + k + 4 + n, head + all - TAIL, TAIL);
	free(head);
	*len = k + 4 + n + TAIL;
	return out;
}

/* ---- worker behaviours ------------------------------------------------------- */

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w <= 0)
			_exit(9);
		c += w;
		n -= (size_t)w;
	}
}

static void frame(int fd, const char *payload, size_t n)
{
	char hdr[TP_FRAME_HDR];
	tp_frame_header(hdr, n);
	send_all(fd, hdr, sizeof hdr);
	send_all(fd, payload, n);
}

static void reply_ok(int fd)
{
	frame(fd, ok_reply, ok_len);
}

static void w_ok(int fd, struct tp_shm *shm)
{
	tp_shm_write(shm, TP_STDOUT, "fake\n", 5);
	reply_ok(fd);
}

static void w_garbage(int fd, struct tp_shm *shm)
{
	(void)shm;
	frame(fd, "\x01\x02garbage{{{", 12);
}

static void w_raw_bytes(int fd, struct tp_shm *shm)
{
	(void)shm;
	send_all(fd, "\xff\xff\xff\x7fjunkjunkjunk", 16); /* declares a 2 GiB frame */
}

static void w_truncated(int fd, struct tp_shm *shm)
{
	char hdr[TP_FRAME_HDR];
	(void)shm;
	tp_frame_header(hdr, ok_len);
	send_all(fd, hdr, sizeof hdr);
	send_all(fd, ok_reply, 10); /* then exit: the rest never comes */
}

static void w_truncated_hang(int fd, struct tp_shm *shm)
{
	w_truncated(fd, shm);
	pause();
}

static void w_header_only_hang(int fd, struct tp_shm *shm)
{
	(void)shm;
	send_all(fd, "\x10\x00", 2); /* half a header */
	pause();
}

/* One byte above the cap for the default limits (result_bytes 1 MiB). */
static void w_oversize(int fd, struct tp_shm *shm)
{
	struct tp_limits l;
	tp_limits_default(&l);
	size_t n = tp_msg_reply_max(&l) + 1;
	char *big = malloc(n);
	(void)shm;
	if (big == NULL)
		_exit(9);
	memset(big, ' ', n);
	frame(fd, big, n); /* the host stops reading at the header: this blocks, then EPIPE */
}

/* Just above the default result_bytes (1 MiB), so the frame is within its cap. */
static void w_big_value(int fd, struct tp_shm *shm)
{
	size_t n = (1u << 20) + 8, len;
	char *s = malloc(n + 2), *r;
	(void)shm;
	if (s == NULL)
		_exit(9);
	s[0] = '"';
	memset(s + 1, 'x', n);
	s[n + 1] = '"';
	r = reply_with_value_text(s, n + 2, &len);
	frame(fd, r, len);
}

static void w_twice(int fd, struct tp_shm *shm)
{
	(void)shm;
	reply_ok(fd);
	reply_ok(fd);
}

static void w_reply_then_hang(int fd, struct tp_shm *shm)
{
	(void)shm;
	reply_ok(fd);
	pause();
}

static void w_bad_kind(int fd, struct tp_shm *shm)
{
	struct tp_reply r = { .seq = g_seq,
			      .ok = 0,
			      .error = { .kind = TP_KIND_TIMEOUT, .limit_id = -1 } };
	size_t len;
	char *buf;
	(void)shm;
	tp_text_set(&r.error.message, "x", 1, 16);
	buf = tp_msg_reply_encode(&r, &len);
	if (buf == NULL)
		_exit(9);
	frame(fd, buf, len);
}

/* A well-formed reply to another request (the next one, say, made up ahead). */
static void w_wrong_seq(int fd, struct tp_shm *shm)
{
	struct tp_reply r = { .seq = g_seq + 1, .ok = 1, .value = json_integer(1) };
	size_t len;
	char *buf = tp_msg_reply_encode(&r, &len);
	(void)shm;
	if (buf == NULL)
		_exit(9);
	frame(fd, buf, len);
	pause();
}

static void w_bad_utf8(int fd, struct tp_shm *shm)
{
	static const char v[] = "\"\xc3\x28\xff\"";
	size_t len;
	char *r = reply_with_value_text(v, sizeof v - 1, &len);
	(void)shm;
	frame(fd, r, len);
}

static void w_deep(int fd, struct tp_shm *shm)
{
	size_t depth = 100000, len;
	char *s = malloc(2 * depth), *r;
	(void)shm;
	if (s == NULL)
		_exit(9);
	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	r = reply_with_value_text(s, 2 * depth, &len);
	frame(fd, r, len);
}

/* Version 6's images: one that is not a PNG file, and a text beside a repr value. */
static void w_bad_image(int fd, struct tp_shm *shm)
{
	struct tp_reply r = { .seq = g_seq, .ok = 1, .value = json_integer(1), .nimages = 1 };
	size_t len;
	char *buf;
	(void)shm;
	tp_text_set(&r.images[0], "GIF89a-not-a-png", 16, 64);
	buf = tp_msg_reply_encode(&r, &len);
	if (buf == NULL)
		_exit(9);
	frame(fd, buf, len);
}

static void w_repr_text(int fd, struct tp_shm *shm)
{
	struct tp_reply r = { .seq = g_seq, .ok = 1, .value_repr = 1, .value = json_string("{1}") };
	size_t len;
	char *buf;
	(void)shm;
	tp_text_set(&r.text, "{2}", 3, 64);
	buf = tp_msg_reply_encode(&r, &len);
	if (buf == NULL)
		_exit(9);
	frame(fd, buf, len);
}

static void w_silent_exit(int fd, struct tp_shm *shm)
{
	(void)fd;
	(void)shm;
}

static void w_exit3(int fd, struct tp_shm *shm)
{
	(void)fd;
	(void)shm;
	_exit(3);
}

static void w_segv(int fd, struct tp_shm *shm)
{
	(void)fd;
	tp_shm_write(shm, TP_STDOUT, "before the crash\n", 17);
	raise(SIGSEGV);
}

/* Every field of the page lies; the host must clamp and range-check. */
/* A page that claims a full area of stdout and of stderr, whatever the exec's
 * output_bytes, and no limit tripped (native code under kernel-only could). */
static void w_page_overrun(int fd, struct tp_shm *shm)
{
	memset(shm->data, 'o', (size_t)shm->area_bytes * 2);
	__atomic_store_n(&shm->len[0], shm->area_bytes, __ATOMIC_RELEASE);
	__atomic_store_n(&shm->len[1], shm->area_bytes, __ATOMIC_RELEASE);
	shm->truncated[0] = shm->truncated[1] = 0;
	reply_ok(fd);
}

static void w_scribble(int fd, struct tp_shm *shm)
{
	shm->magic = 0xdeadbeef;
	shm->area_bytes = 0xffffffffu;
	shm->len[0] = 0xffffffffu;
	shm->len[1] = 0x7fffffffu;
	shm->truncated[0] = 77;
	shm->tripped = 0xffffu;
	shm->tripped_limit = 0xffffu;
	shm->syscall_nr = 0x7fffffff;
	shm->instructions = ~0ull;
	shm->mem_peak = ~0ull;
	memset(shm->data, 0xff, 4096); /* invalid UTF-8 where output would be */
	reply_ok(fd);
}

static void w_slow(int fd, struct tp_shm *shm)
{
	char hdr[TP_FRAME_HDR];
	(void)shm;
	tp_frame_header(hdr, ok_len);
	send_all(fd, hdr, sizeof hdr);
	for (size_t i = 0; i < ok_len; i++) {
		send_all(fd, ok_reply + i, 1);
		usleep(2000);
	}
}

static void w_close_then_live(int fd, struct tp_shm *shm)
{
	(void)shm;
	close(fd);
	sleep(1);
	_exit(0);
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	int ppid = -1;
	if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

/* What a snippet that could signal other workers would do (on a kernel without
 * Landlock's signal scope): for two seconds, kill every other worker of its own
 * language (the same command line: a worker has its zygote's), warm ones included. */
static void w_kill_siblings(int fd, struct tp_shm *shm)
{
	char self[256], path[64], cmd[256];
	(void)shm;
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t len = f ? fread(self, 1, sizeof self, f) : 0;
	if (f)
		fclose(f);
	for (int round = 0; round < 400; round++) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d != NULL && (e = readdir(d)) != NULL) {
			pid_t pid = (pid_t)atoi(e->d_name);
			if (pid <= 0 || pid == getpid())
				continue;
			snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
			f = fopen(path, "r");
			size_t k = f ? fread(cmd, 1, sizeof cmd, f) : 0;
			if (f)
				fclose(f);
			snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
			char comm[32] = "";
			f = fopen(path, "r");
			if (f) {
				if (fgets(comm, sizeof comm, f) == NULL)
					comm[0] = '\0';
				fclose(f);
			}
			if (k == len && memcmp(cmd, self, len) == 0 &&
			    strcmp(comm, "tp-worker\n") == 0 &&
			    parent_of(pid) == getppid()) /* its siblings: the same host's workers */
				kill(pid,
				     SIGTERM); /* not SIGKILL: the host kills its used workers so */
		}
		if (d)
			closedir(d);
		usleep(5000);
	}
	(void)fd; /* and no reply: nothing from this exec resets the host's count */
}

/* Signals a stop or a CPU limit would send, ignored (native code can). */
static void ignore_stops(void)
{
	signal(SIGTERM, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGXCPU, SIG_IGN);
}

/* A session's worker that answers its exec with a well-formed reply, then
 * keeps running instead of waiting: it spins, deaf to a stop, and answers each
 * request it finds on its channel at once (ok, to the request's number), as if
 * it served the session's next execs. Its stdout names its pid. */
static void w_spin_after_reply(int fd, struct tp_shm *shm)
{
	char pid[32];
	int n = snprintf(pid, sizeof pid, "pid %d\n", (int)getpid());
	tp_shm_write(shm, TP_STDOUT, pid, (size_t)n);
	ignore_stops();
	reply_ok(fd);
	for (volatile unsigned long i = 0;; i++) {
		struct pollfd p = { fd, POLLIN, 0 };
		if ((i & 0xfffff) != 0 || poll(&p, 1, 0) <= 0)
			continue;
		size_t len;
		char *req = tp_frame_recv(fd, 64u << 20, &len);
		struct tp_request r;
		if (req == NULL)
			_exit(0);
		if (tp_msg_request_decode(req, len, &r) == 0) {
			g_seq = r.seq;
			make_ok_reply();
			reply_ok(fd);
			tp_request_free(&r);
		}
		free(req);
	}
}

/* An exec that switched off its own CPU timer and every stop: it spins and
 * never replies. Only the kernel's RLIMIT_CPU (or the host's SIGKILL) ends it. */
static void w_spin_no_timer(int fd, struct tp_shm *shm)
{
	(void)fd;
	(void)shm;
	ignore_stops();
	for (volatile unsigned long i = 0;; i++)
		;
}

static const struct scenario {
	const char *name;
	void (*run)(int fd, struct tp_shm *shm);
} scenarios[] = {
	{ "ok", w_ok },
	{ "garbage", w_garbage },
	{ "raw_bytes", w_raw_bytes },
	{ "truncated", w_truncated },
	{ "truncated_hang", w_truncated_hang },
	{ "header_only_hang", w_header_only_hang },
	{ "oversize", w_oversize },
	{ "big_value", w_big_value },
	{ "twice", w_twice },
	{ "reply_then_hang", w_reply_then_hang },
	{ "bad_kind", w_bad_kind },
	{ "wrong_seq", w_wrong_seq },
	{ "bad_utf8", w_bad_utf8 },
	{ "deep", w_deep },
	{ "bad_image", w_bad_image },
	{ "repr_text", w_repr_text },
	{ "silent_exit", w_silent_exit },
	{ "exit3", w_exit3 },
	{ "segv", w_segv },
	{ "scribble", w_scribble },
	{ "page_overrun", w_page_overrun },
	{ "slow", w_slow },
	{ "close_then_live", w_close_then_live },
	{ "kill_siblings", w_kill_siblings },
	{ "spin_after_reply", w_spin_after_reply },
	{ "spin_no_timer", w_spin_no_timer },
};

/* A one-shot worker serves one request; a session's (its request says so)
 * serves each until the host closes its channel, as a real one does. */
static _Noreturn void fake_worker(int chan, int shm_fd, uint32_t area)
{
	size_t len;
	prctl(PR_SET_NAME, "tp-worker");
	void *p = mmap(NULL, tp_shm_size(area), PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	close(shm_fd);
	if (p == MAP_FAILED)
		_exit(0);
	for (;;) {
		char *req = tp_frame_recv(chan, 64u << 20, &len);
		if (req == NULL)
			_exit(0);
		struct tp_request r;
		const char *code = tp_msg_request_decode(req, len, &r) == 0 ? r.code : NULL;
		int session = code != NULL && r.session;
		g_seq = code != NULL ? r.seq : 0;
		make_ok_reply();
		tp_shm_begin(p, 1u << 20);
		size_t i = 0;
		while (code != NULL && i < sizeof scenarios / sizeof scenarios[0] &&
		       strcmp(code, scenarios[i].name) != 0)
			i++;
		if (code == NULL || i == sizeof scenarios / sizeof scenarios[0])
			_exit(5); /* unknown scenario */
		scenarios[i].run(chan, p);
		if (!session)
			_exit(0);
		tp_request_free(&r);
		free(req);
	}
}

/* ---- fake zygote: the real control protocol (docs/worker-protocol.md) ----------- */

#define LATE_PID_MS 1500

static int fake_zygote(void)
{
	int chan, shm;
	enum tp_spawn_kind kind;
	uint32_t area;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "tp-zygote");
	/* Under the policy 'permissive' each worker's pid is told LATE_PID_MS
	 * after its fork, so its reply can reach the host before its pid does (as
	 * it can on a loaded machine). The zygote has no environment: the policy
	 * the host hands it is how a test chooses. */
	long late_ms = 0;
	char buf[1 << 16];
	ssize_t n = read(TP_ZYGOTE_POLICY_FD, buf, sizeof buf);
	struct tp_err err = { 0 };
	struct tp_policy *policy = n > 0 ? tp_policy_from_wire(buf, (size_t)n, &err) : NULL;
	if (policy != NULL && strcmp(policy->name, "permissive") == 0)
		late_ms = LATE_PID_MS;
	tp_policy_free(policy);
	int ws;
	while (tp_spawn_recv(CTL_FD, &chan, &shm, &area, &kind, &ws) == 1) {
		pid_t pid = tp_zygote_clone_worker();
		if (pid == 0) {
			close(CTL_FD);
			fake_worker(chan, shm, area);
		}
		close(chan);
		close(shm);
		if (late_ms > 0 && pid > 0)
			poll(NULL, 0, (int)late_ms);
		if (tp_spawn_send_pid(CTL_FD, pid < 0 ? -errno : pid) != 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tp_err err = { 0 };
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0)
		return fake_zygote();
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	struct tp_host *h = tp_host_new(&cfg, &err);
	if (h == NULL) {
		fprintf(stderr, "fake_tidepool: %s\n", err.msg);
		return 1;
	}
	int rc = tp_host_run(h);
	tp_host_free(h);
	return rc;
}
