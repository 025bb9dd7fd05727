/*
 * zygote_ctl.c — the host's side of a zygote: start it with execve and an empty
 * environment, its control socket on TP_ZYGOTE_CTL_FD. The messages on that
 * socket are common/spawn.h's.
 */
#include "zygote_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "limit.h"
#include "spawn.h"

uint32_t tp_zygote_area_bytes(const struct tp_policy *policy)
{
	return (uint32_t)policy->limits.output_bytes;
}

/* The policy's text in a sealed memfd: the zygote reads it once, and nothing
 * can change it between our write and its read. */
static int policy_fd(const struct tp_policy *policy, struct tp_err *err)
{
	size_t len;
	char *text = tp_policy_wire(policy, &len);
	int fd = text ? memfd_create("tidepool-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING) : -1;
	int e = text ? errno : ENOMEM;
	if (fd >= 0 && (write(fd, text, len) != (ssize_t)len ||
			fcntl(fd, F_ADD_SEALS,
			      F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
			lseek(fd, 0, SEEK_SET) != 0)) {
		e = errno;
		close(fd);
		fd = -1;
	}
	free(text);
	if (fd < 0)
		tp_err_sys(err, TP_LAYER_HOST, "memfd_create(policy)", e, NULL);
	return fd;
}

/* The binary a language's zygote runs: its own build (common/langs.c's
 * zygote_bin, e.g. tidepool-python, beside ours: see the Makefile) when it is
 * there, else this one. Found from our own path (/proc/self/exe), never from
 * the environment or PATH. */
static const char *zygote_binary(const struct tp_lang_info *lang)
{
	static char path[4096];
	ssize_t n = lang->zygote_bin ? readlink("/proc/self/exe", path, sizeof path - 1) : -1;
	char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
	if (slash == NULL)
		return "/proc/self/exe";
	size_t room = sizeof path - (size_t)(slash + 1 - path);
	if ((size_t)snprintf(slash + 1, room, "%s", lang->zygote_bin) >= room)
		return "/proc/self/exe";
	return access(path, X_OK) == 0 ? path : "/proc/self/exe";
}

static void exec_zygote(int ctl, int pfd, const struct tp_lang_info *lang, const char *ws_base)
{
	char *const argv[] = { "tidepool", "--zygote", (char *)lang->name, (char *)ws_base, NULL };
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
	if (ctl == TP_ZYGOTE_CTL_FD ? fcntl(ctl, F_SETFD, 0) < 0 : dup2(ctl, TP_ZYGOTE_CTL_FD) < 0)
		_exit(127);
	if (pfd == TP_ZYGOTE_POLICY_FD ? fcntl(pfd, F_SETFD, 0) < 0
				       : dup2(pfd, TP_ZYGOTE_POLICY_FD) < 0)
		_exit(127);
	/* Only stdin/stdout (null), stderr (logs), the control socket and the
	 * policy survive. */
	syscall(SYS_close_range, TP_ZYGOTE_POLICY_FD + 1, ~0u, 0);
	execve(zygote_binary(lang), argv, envp);
	_exit(127);
}

int tp_zygote_start(const struct tp_lang_info *lang, const struct tp_policy *policy,
		    const char *ws_base, pid_t *pid, struct tp_err *err)
{
	int sv[2];
	int pfd = policy_fd(policy, err);
	if (pfd < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		tp_err_sys(err, TP_LAYER_HOST, "socketpair(zygote)", errno, NULL);
		close(pfd);
		return -1;
	}
	/* The fds must not land on the numbers the child moves them to. */
	if (sv[1] == TP_ZYGOTE_POLICY_FD || pfd == TP_ZYGOTE_CTL_FD) {
		int a = fcntl(sv[1], F_DUPFD_CLOEXEC, TP_ZYGOTE_POLICY_FD + 1);
		int b = fcntl(pfd, F_DUPFD_CLOEXEC, TP_ZYGOTE_POLICY_FD + 1);
		close(sv[1]);
		close(pfd);
		sv[1] = a;
		pfd = b;
	}
	pid_t p = fork();
	if (p < 0) {
		tp_err_sys(err, TP_LAYER_HOST, "fork(zygote)", errno, NULL);
		close(sv[0]);
		close(sv[1]);
		close(pfd);
		return -1;
	}
	if (p == 0)
		exec_zygote(sv[1], pfd, lang, policy->session.workspace_bytes > 0 ? ws_base : NULL);
	close(sv[1]);
	close(pfd);
	*pid = p;
	return sv[0];
}
