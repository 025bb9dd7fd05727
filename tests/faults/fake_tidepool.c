/*
 * fake_tidepool.c — a test-only host whose workers misbehave on purpose.
 * Serving, it is the real host (the host/ objects, unchanged). Its `--zygote` mode is a
 * fake zygote speaking the real control protocol, and its workers read the real
 * request frame, then do to their channel and page what the request's `code`
 * names (see scenarios[]). Nothing here is linked into build/tidepool, so no
 * untrusted snippet can reach these behaviours in a real host.
 */
#include <errno.h>
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
#include "host.h"
#include "shm.h"
#include "spawn.h"
#include "zygote.h"

#define CTL_FD TP_ZYGOTE_CTL_FD

static const char ok_reply[] =
	"{\"ok\":true,\"value\":1,\"error\":null,"
	"\"usage\":{\"instructions\":0,\"memory_peak_bytes\":0,\"cpu_ms\":0.0}}";

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
	frame(fd, ok_reply, strlen(ok_reply));
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
	tp_frame_header(hdr, strlen(ok_reply));
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
	size_t n = (size_t)(1u << 20) * 6 + 2 * (64u << 10) + 65536 + 1;
	char *big = malloc(n);
	(void)shm;
	if (big == NULL)
		_exit(9);
	memset(big, ' ', n);
	frame(fd, big, n); /* the host stops reading at the header: this blocks, then EPIPE */
}

/* A well-framed reply whose value is above result_bytes (checked in the host). */
static void w_big_value(int fd, struct tp_shm *shm)
{
	size_t n = (2u << 20);
	char *s = malloc(n + 200);
	(void)shm;
	if (s == NULL)
		_exit(9);
	int h = sprintf(s, "{\"ok\":true,\"value\":\"");
	memset(s + h, 'x', n);
	h += (int)n;
	h += sprintf(s + h, "\",\"error\":null,\"usage\":{\"instructions\":0,\"memory_peak_bytes\":0,\"cpu_ms\":0}}");
	frame(fd, s, (size_t)h);
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
	static const char r[] = "{\"ok\":false,\"error\":{\"kind\":\"timeout\",\"message\":\"x\"},"
				"\"usage\":{\"instructions\":0,\"memory_peak_bytes\":0,\"cpu_ms\":0}}";
	(void)shm;
	frame(fd, r, strlen(r));
}

static void w_bad_utf8(int fd, struct tp_shm *shm)
{
	static const char r[] = "{\"ok\":true,\"value\":\"\xc3\x28\xff\",\"error\":null,"
				"\"usage\":{\"instructions\":0,\"memory_peak_bytes\":0,\"cpu_ms\":0}}";
	(void)shm;
	frame(fd, r, strlen(r));
}

static void w_deep(int fd, struct tp_shm *shm)
{
	size_t depth = 100000, n = 0;
	char *s = malloc(2 * depth + 200);
	(void)shm;
	if (s == NULL)
		_exit(9);
	n += (size_t)sprintf(s, "{\"ok\":true,\"value\":");
	memset(s + n, '[', depth);
	n += depth;
	memset(s + n, ']', depth);
	n += depth;
	n += (size_t)sprintf(s + n, ",\"error\":null,\"usage\":{\"instructions\":0,"
				    "\"memory_peak_bytes\":0,\"cpu_ms\":0}}");
	frame(fd, s, n);
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
	tp_frame_header(hdr, strlen(ok_reply));
	send_all(fd, hdr, sizeof hdr);
	for (size_t i = 0; ok_reply[i]; i++) {
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

static const struct scenario {
	const char *name;
	void (*run)(int fd, struct tp_shm *shm);
} scenarios[] = {
	{"ok", w_ok},
	{"garbage", w_garbage},
	{"raw_bytes", w_raw_bytes},
	{"truncated", w_truncated},
	{"truncated_hang", w_truncated_hang},
	{"header_only_hang", w_header_only_hang},
	{"oversize", w_oversize},
	{"big_value", w_big_value},
	{"twice", w_twice},
	{"reply_then_hang", w_reply_then_hang},
	{"bad_kind", w_bad_kind},
	{"bad_utf8", w_bad_utf8},
	{"deep", w_deep},
	{"silent_exit", w_silent_exit},
	{"exit3", w_exit3},
	{"segv", w_segv},
	{"scribble", w_scribble},
	{"slow", w_slow},
	{"close_then_live", w_close_then_live},
};

static _Noreturn void fake_worker(int chan, int shm_fd, uint32_t area)
{
	size_t len;
	prctl(PR_SET_NAME, "tp-worker");
	void *p = mmap(NULL, tp_shm_size(area), PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	close(shm_fd);
	char *req = tp_frame_recv(chan, 64u << 20, &len);
	if (p == MAP_FAILED || req == NULL)
		_exit(0);
	json_t *m = json_loads(req, 0, NULL);
	const char *code = json_string_value(json_object_get(m, "code"));
	tp_shm_begin(p, 1u << 20);
	for (size_t i = 0; code != NULL && i < sizeof scenarios / sizeof scenarios[0]; i++) {
		if (strcmp(code, scenarios[i].name) == 0) {
			scenarios[i].run(chan, p);
			_exit(0);
		}
	}
	_exit(5); /* unknown scenario */
}

/* ---- fake zygote: the real control protocol (docs/worker-protocol.md) ----------- */

static int fake_zygote(void)
{
	int chan, shm;
	uint32_t area;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "tp-zygote");
	while (tp_spawn_recv(CTL_FD, &chan, &shm, &area) == 1) {
		pid_t pid = tp_zygote_clone_worker();
		if (pid == 0) {
			close(CTL_FD);
			fake_worker(chan, shm, area);
		}
		close(chan);
		close(shm);
		if (tp_spawn_send_pid(CTL_FD, pid < 0 ? -errno : pid) != 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[256];
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0)
		return fake_zygote();
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	struct tp_host *h = tp_host_new(&cfg, err, sizeof err);
	if (h == NULL) {
		fprintf(stderr, "fake_tidepool: %s\n", err);
		return 1;
	}
	int rc = tp_host_run(h);
	tp_host_free(h);
	return rc;
}
