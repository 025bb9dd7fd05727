/*
 * zygote.h — the pristine template that forks workers.
 *
 * Usage:
 *   1. Host: tp_zygote_start(lang) execs `tidepool --zygote LANG` with an empty
 *      environment and a control socket on its fd 3.
 *   2. Host: tp_zygote_spawn() hands it a worker's channel and shared-page fds;
 *      the zygote answers with the worker's pid (tp_zygote_read_pid), in order.
 *      The worker is the host's child (CLONE_PARENT): the host reaps it.
 *   3. Zygote side: tp_zygote_main() never returns.
 */
#ifndef TP_ZYGOTE_H
#define TP_ZYGOTE_H

#include <stdint.h>
#include <sys/types.h>

/* Nice value of the zygote and of the warm workers it makes. */
#define TP_BACKGROUND_NICE 10

/* Returns the control fd (host end) and sets *pid, or -1 with err. */
int tp_zygote_start(const char *lang, pid_t *pid, char *err, size_t errlen);
int tp_zygote_spawn(int ctl, int chan_fd, int shm_fd, uint32_t area_bytes);
/* Returns 1 with *pid, 0 if nothing to read, -1 when the zygote is gone. */
int tp_zygote_read_pid(int ctl, pid_t *pid);

int tp_zygote_main(const char *lang);

/* The zygote's side of the control protocol, also used by the test-only fake
 * zygote (tests/faults/fake_tidepool.c), so both speak it the same way. */
/* Returns 1 with the fds, 0 at EOF, -1 on a malformed message. */
int tp_zygote_recv_spawn(int ctl, int *chan, int *shm, uint32_t *area);
/* A worker's pid, or -errno when the clone failed. */
int tp_zygote_send_pid(int ctl, pid_t pid);
/* clone(CLONE_PARENT | SIGCHLD): the worker is the host's child. */
pid_t tp_zygote_clone_worker(void);
/* The calling process's mapped bytes (/proc/self/statm): the base of RLIMIT_AS. */
uint64_t tp_zygote_vm_bytes(void);

/* The fixed output area every worker's shared page has (the output ceiling). */
uint32_t tp_zygote_area_bytes(void);

#endif
