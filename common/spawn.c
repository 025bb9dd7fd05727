/*
 * spawn.c — the spawn message and its pid answer (see spawn.h). One layout,
 * one encoder and one decoder each, used by the host, the zygote and the
 * test-only fake zygote alike.
 */
#include "spawn.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* 'S' (a one-shot worker), 'L' (a session's, long-lived) or 'R' (isolation
 * "state": reused for one-shot execs), the output area's size, and two fds
 * (SCM_RIGHTS; a session's third is its workspace). */
struct spawn_msg {
	char body[1 + sizeof(uint32_t)];
	struct iovec iov;
	struct msghdr mh;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
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

static const char kind_letter[] = { 'S', 'L', 'R' };

int tp_spawn_send(int ctl, int chan_fd, int shm_fd, uint32_t area_bytes, enum tp_spawn_kind kind,
		  int ws_fd)
{
	struct spawn_msg m;
	int fds[3] = { chan_fd, shm_fd, ws_fd };
	size_t nfds = kind == TP_SPAWN_SESSION && ws_fd > 2 ? 3 : 2;

	spawn_msg_init(&m);
	m.mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	struct cmsghdr *c = CMSG_FIRSTHDR(&m.mh);
	m.body[0] = kind_letter[kind];
	memcpy(m.body + 1, &area_bytes, sizeof area_bytes);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	return sendmsg(ctl, &m.mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof m.body ? 0 : -1;
}

int tp_spawn_recv(int ctl, int *chan, int *shm, uint32_t *area, enum tp_spawn_kind *kind,
		  int *ws_fd)
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
	const char *k =
	    n == sizeof m.body ? memchr(kind_letter, m.body[0], sizeof kind_letter) : NULL;
	if (k == NULL || m.body[0] == '\0' || c == NULL || c->cmsg_type != SCM_RIGHTS ||
	    (c->cmsg_len != CMSG_LEN(2 * sizeof(int)) &&
	     (m.body[0] != 'L' || c->cmsg_len != CMSG_LEN(3 * sizeof(int)))))
		return -1;
	int fds[3] = { -1, -1, 0 };
	memcpy(fds, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
	*chan = fds[0];
	*shm = fds[1];
	*ws_fd = fds[2];
	memcpy(area, m.body + 1, sizeof *area);
	*kind = (enum tp_spawn_kind)(k - kind_letter);
	return 1;
}

int tp_spawn_send_pid(int ctl, pid_t pid)
{
	int32_t v = pid;
	return send(ctl, &v, sizeof v, MSG_NOSIGNAL) == (ssize_t)sizeof v ? 0 : -1;
}

int tp_spawn_recv_pid(int ctl, pid_t *pid)
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
