/*
 * spawn.h — the host ⇄ zygote control protocol, both ends: one message type
 * each way on a SOCK_SEQPACKET socket (the zygote's fd TP_ZYGOTE_CTL_FD).
 *
 * Usage:
 *   1. Host: tp_spawn_send() asks for one worker, handing over its channel and
 *      shared-page fds (SCM_RIGHTS), the page's output-area size and whether it
 *      is a session's (it then serves many requests, under limits for its life).
 *   2. Zygote: tp_spawn_recv() takes it; it clones the worker and answers with
 *      tp_spawn_send_pid() (the pid, or -errno when the clone failed).
 *   3. Host: tp_spawn_recv_pid() reads the answers, in request order.
 * The zygote never receives anything else: no request data passes through it.
 */
#ifndef TP_SPAWN_H
#define TP_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

#define TP_ZYGOTE_CTL_FD 3
/* The zygote's policy (policy.h's wire text), read once at its start. */
#define TP_ZYGOTE_POLICY_FD 4

/* What the worker is for. */
enum tp_spawn_kind {
	TP_SPAWN_ONESHOT = 0, /* 'S': one exec, then it exits */
	TP_SPAWN_SESSION = 1, /* 'L': a session's, its state kept between execs */
	TP_SPAWN_STATE = 2,   /* 'R': isolation "state": one-shot execs, each in a fresh
				 language state, until the host replaces it */
};

/* Execs a worker of isolation "state" serves at most before the host replaces it. */
#define TP_STATE_MAX_EXECS 100

/* Host: 0, or -1 (errno set) when the message could not be queued. */
/* ws_fd (> 2): a session's workspace directory (O_PATH), handed on to its worker. */
int tp_spawn_send(int ctl, int chan_fd, int shm_fd, uint32_t area_bytes, enum tp_spawn_kind kind,
		  int ws_fd);
/* Zygote: 1 with the fds, 0 at EOF, -1 on a malformed message. */
/* *ws_fd: the workspace's fd, or 0 for none. */
int tp_spawn_recv(int ctl, int *chan, int *shm, uint32_t *area, enum tp_spawn_kind *kind,
		  int *ws_fd);
/* Zygote: a worker's pid, or -errno when the clone failed. 0 or -1. */
int tp_spawn_send_pid(int ctl, pid_t pid);
/* Host: 1 with *pid, 0 if nothing to read, -1 when the zygote is gone. */
int tp_spawn_recv_pid(int ctl, pid_t *pid);

#endif
