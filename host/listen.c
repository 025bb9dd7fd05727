/*
 * listen.c — the Unix-domain socket listener (--listen unix:PATH): JSON lines,
 * any number of concurrent clients up to --max-clients, each a client of its
 * own (client.c). The socket file's mode is the access control: 0600 unless
 * --listen-mode says otherwise, set before any connection can be made. The
 * path is removed at exit. Invariant: a path that exists and is not a stale
 * socket of ours (one nothing answers on) is never removed or replaced.
 */
#include "host_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A socket file nothing listens on any more (a host that was killed): it may
 * be replaced. Anything else at the path is left alone. */
static int stale_socket(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int refused =
	    fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == ECONNREFUSED;
	if (fd >= 0)
		close(fd);
	return refused;
}

int tp_listen_open(struct tp_host *h, const char *spec, unsigned mode, struct tp_err *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strncmp(spec, "unix:", 5) != 0 || spec[5] == '\0')
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--listen takes unix:PATH (a Unix-domain socket), not '%.200s'",
				  spec);
	const char *path = spec + 5;
	/* The socket is bound under a name of its own beside PATH (PATH and
	 * TMP_SUFFIX more bytes), listens, takes its mode, and only then is
	 * linked to PATH: whoever sees PATH can connect (bound at PATH itself it
	 * would show a file that refuses until listen), and link, unlike rename,
	 * never replaces what is there. */
	enum { TMP_SUFFIX = 10 }; /* ".%08lx~": a pid is at most 2^22 */
	const size_t max = sizeof a.sun_path - 1 - TMP_SUFFIX;
	if (strlen(path) > max)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, 0,
				  "--listen: the path is longer than %zu bytes: %.200s", max, path);
	if (stale_socket(path))
		unlink(path);
	char tmp[sizeof a.sun_path];
	int n = snprintf(tmp, sizeof tmp, "%s.%08lx~", path, (unsigned long)getpid());
	if (stale_socket(tmp))
		unlink(tmp); /* a host of this pid that was killed left it */
	memcpy(a.sun_path, tmp, (size_t)n + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return tp_err_sys(err, TP_LAYER_HOST, "socket(AF_UNIX)", errno, NULL);
	/* No one may connect before the mode is set: bind under a umask that
	 * leaves the file 0600 at most, then chmod to the mode asked for. */
	mode_t old = umask(0177);
	int b = bind(fd, (struct sockaddr *)&a, sizeof a);
	int e = errno;
	umask(old);
	if (b != 0) {
		close(fd);
		return tp_err_sys(err, TP_LAYER_HOST, "--listen", e, path);
	}
	if (chmod(tmp, (mode_t)mode) != 0 || listen(fd, 64) != 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		return tp_err_sys(err, TP_LAYER_HOST, "--listen", e, path);
	}
	b = link(tmp, path);
	e = errno;
	unlink(tmp);
	if (b != 0) {
		close(fd);
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_HOST, e, "--listen %s: %s%s",
				  path, strerror(e == EEXIST ? EADDRINUSE : e),
				  e == EEXIST ? " (another tidepool listens there, or a "
						"file that is not a socket is in the way)"
					      : "");
	}
	h->listen_path = strdup(path);
	if (h->listen_path == NULL) {
		close(fd);
		unlink(path);
		return tp_err_oom(err, TP_LAYER_HOST);
	}
	h->listen_fd = fd;
	return 0;
}

/* Past --max-clients a connection is told why, in one line, and closed. */
static void refuse(int fd, int max)
{
	char line[200];
	int n = snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":"
			 "\"busy: %d clients are connected, the most this tidepool serves "
			 "(--max-clients); retry later\"}}\n",
			 TP_RPC_BUSY, max);
	(void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

void tp_listen_accept(struct tp_host *h)
{
	for (int i = 0; i < 64 && h->listen_fd >= 0; i++) {
		int fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* EAGAIN, or a connection that went before we took it */
		int sockets = 0;
		for (const struct client *c = h->clients; c != NULL; c = c->next)
			sockets += c->kind == TP_CLIENT_SOCKET;
		if (sockets >= h->cfg.max_clients) {
			refuse(fd, h->cfg.max_clients);
			continue;
		}
		struct client *c = NULL;
		if (tp_client_reserve(h) == 0)
			c = tp_client_new(h, TP_CLIENT_SOCKET, fd, fd);
		if (c == NULL) {
			tp_out_log("%s", "out of memory: a connection was closed");
			close(fd);
			continue;
		}
		struct ucred cred;
		socklen_t len = sizeof cred;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			c->peer_pid = cred.pid;
			c->peer_uid = cred.uid;
		}
		c->out_blocking = 0;
	}
}

void tp_listen_close(struct tp_host *h)
{
	if (h->listen_fd >= 0) {
		close(h->listen_fd);
		h->listen_fd = -1;
	}
	if (h->listen_path != NULL) {
		unlink(h->listen_path);
		free(h->listen_path);
		h->listen_path = NULL;
	}
}
