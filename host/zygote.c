/*
 * zygote.c — the template process. It is exec'd with an empty environment, so
 * the client's secrets never reach its memory; it builds the interpreter once
 * and clones workers from that pristine state. It never receives request data:
 * its only input is "spawn" with two fds, its only output a pid.
 */
#include "zygote.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lang.h"
#include "limits.h"
#include "lockdown.h"
#include "worker.h"

#define CTL_FD 3
/* Address space a worker may map beyond the zygote's and its heap cap:
 * jansson buffers for the reply and libc's own arenas. */
#define AS_SLACK (256ull << 20)

uint32_t tp_zygote_area_bytes(void)
{
	struct tp_limits d;
	tp_limits_default(&d);
	return (uint32_t)d.output_bytes;
}

/* ---- host side -------------------------------------------------------------- */

/* The binary a language's zygote runs: Python's own build (tidepool-python,
 * beside ours: see the Makefile) when it is there, else this one. Found from
 * our own path (/proc/self/exe), never from the environment or PATH. */
static const char *zygote_binary(const char *lang)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
	if (strcmp(lang, "python") != 0 || slash == NULL)
		return "/proc/self/exe";
	strcpy(slash + 1, "tidepool-python");
	return access(path, X_OK) == 0 ? path : "/proc/self/exe";
}

static void exec_zygote(int ctl, const char *lang)
{
	char *const argv[] = { "tidepool", "--zygote", (char *)lang, NULL };
	char *const envp[] = { NULL }; /* empty: the client's environment stays out */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	sigset_t none;
	sigemptyset(&none);
	/* The host blocks SIGCHLD/SIGTERM for its signalfd and ignores SIGPIPE;
	 * both survive execve, and a worker must start from defaults. */
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
		_exit(127);
	/* dup2 onto itself keeps FD_CLOEXEC: clear it by hand in that case. */
	if (ctl == CTL_FD ? fcntl(ctl, F_SETFD, 0) < 0 : dup2(ctl, CTL_FD) < 0)
		_exit(127);
	/* Only stdin/stdout (null), stderr (logs) and the control socket survive. */
	syscall(SYS_close_range, CTL_FD + 1, ~0u, 0);
	execve(zygote_binary(lang), argv, envp);
	_exit(127);
}

int tp_zygote_start(const char *lang, pid_t *pid, char *err, size_t errlen)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errlen, "socketpair(zygote): %s", strerror(errno));
		return -1;
	}
	pid_t p = fork();
	if (p < 0) {
		snprintf(err, errlen, "fork(zygote): %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (p == 0)
		exec_zygote(sv[1], lang);
	close(sv[1]);
	*pid = p;
	return sv[0];
}

/* One spawn message: 'S', the output area's size, and two fds (SCM_RIGHTS). */
struct spawn_msg {
	char body[1 + sizeof(uint32_t)];
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov;
	struct msghdr mh;
};

static void spawn_msg_init(struct spawn_msg *m)
{
	memset(m, 0, sizeof *m);
	m->iov = (struct iovec){ m->body, sizeof m->body };
	m->mh = (struct msghdr){ .msg_iov = &m->iov,
				 .msg_iovlen = 1,
				 .msg_control = m->u.buf,
				 .msg_controllen = sizeof m->u.buf };
}

int tp_zygote_spawn(int ctl, int chan_fd, int shm_fd, uint32_t area_bytes)
{
	struct spawn_msg m;
	int fds[2] = { chan_fd, shm_fd };

	spawn_msg_init(&m);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m.mh);
	m.body[0] = 'S';
	memcpy(m.body + 1, &area_bytes, sizeof area_bytes);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	return sendmsg(ctl, &m.mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof m.body ? 0 : -1;
}

int tp_zygote_read_pid(int ctl, pid_t *pid)
{
	int32_t v;
	ssize_t n = recv(ctl, &v, sizeof v, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n != (ssize_t)sizeof v)
		return -1;
	*pid = v;
	return 1;
}

/* ---- zygote side ------------------------------------------------------------ */

uint64_t tp_zygote_vm_bytes(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f != NULL) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

int tp_zygote_recv_spawn(int ctl, int *chan, int *shm, uint32_t *area)
{
	struct spawn_msg m;
	ssize_t n;

	spawn_msg_init(&m);
	do
		n = recvmsg(ctl, &m.mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m.mh);
	if (n != sizeof m.body || m.body[0] != 'S' || c == NULL || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -1;
	int fds[2];
	memcpy(fds, CMSG_DATA(c), sizeof fds);
	*chan = fds[0];
	*shm = fds[1];
	memcpy(area, m.body + 1, sizeof *area);
	return 1;
}

int tp_zygote_send_pid(int ctl, pid_t pid)
{
	int32_t v = pid;
	return send(ctl, &v, sizeof v, MSG_NOSIGNAL) == (ssize_t)sizeof v ? 0 : -1;
}

/* clone(CLONE_PARENT): the worker becomes the host's child, so the host reaps it
 * and sees its real exit status. glibc's fork() would also run atfork handlers;
 * the zygote registers none and is single-threaded, so a raw clone is safe. */
pid_t tp_zygote_clone_worker(void)
{
	return (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
}

int tp_zygote_main(const char *lang_name)
{
	char err[256];
	const struct tp_lang *lang = tp_lang_find(lang_name);
	struct tp_worker_cfg cfg = { .lang = lang };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "tp-zygote");
	if (lang == NULL) {
		fprintf(stderr, "tidepool zygote: unknown language '%s'\n", lang_name);
		return 1;
	}
	/* UTC, fixed once: os.date is deterministic and never reads /etc/localtime. */
	setenv("TZ", "UTC", 1);
	tzset();
	if (lang->zygote_init(err, sizeof err) != 0 || tp_lockdown_prepare(err, sizeof err) != 0) {
		fprintf(stderr, "tidepool zygote: %s\n", err);
		return 1;
	}
	tp_limits_default(&cfg.ceiling);
	cfg.host_pid = getppid();
	cfg.as_bytes = tp_zygote_vm_bytes() + cfg.ceiling.memory_bytes + AS_SLACK;
	/* Purge before forking (Android's zygote lesson): consolidate the free chunks
	 * init left behind, or every worker's first large malloc does it again and
	 * takes a copy-on-write fault on each heap page it walks. */
	malloc_trim(0);
	/* Making workers is background work: at a lower priority, the fork and the
	 * lockdown give way to the host, its client and the exec that is running.
	 * The host raises each worker back to normal when it hands it an exec (it
	 * can only do that as root, so only then is the zygote lowered). */
	if (geteuid() == 0)
		setpriority(PRIO_PROCESS, 0, TP_BACKGROUND_NICE);
	/* Trimming leaves the merged chunks unsorted; one large request sorts them
	 * into bins here, once, instead of in every worker. */
	free(malloc(96u << 10));
	if (tp_lockdown_enter_zygote(err, sizeof err) != 0) { /* Z: no open from here on */
		fprintf(stderr, "tidepool zygote: %s\n", err);
		return 1;
	}
	for (;;) {
		int r = tp_zygote_recv_spawn(CTL_FD, &cfg.chan_fd, &cfg.shm_fd, &cfg.area_bytes);
		if (r == 0)
			return 0;
		if (r < 0 || cfg.area_bytes > TP_MAX_OUTPUT_BYTES)
			return 1; /* the host broke the protocol: stop rather than guess */
		pid_t pid = tp_zygote_clone_worker();
		if (pid == 0) {
			close(CTL_FD);
			tp_worker_main(&cfg);
		}
		close(cfg.chan_fd);
		close(cfg.shm_fd);
		if (tp_zygote_send_pid(CTL_FD, pid < 0 ? -errno : pid) != 0)
			return 1;
	}
}
