/*
 * msg.h — what a worker tells the host, besides its frames: the exit codes that
 * carry a verdict when the worker ends without replying (the shared page has
 * the details).
 */
#ifndef TP_MSG_H
#define TP_MSG_H

#define TP_EXIT_FATAL 157     /* setup failed before any code ran */
#define TP_EXIT_LIMIT 158     /* a limit tripped and the grace period ran out */
#define TP_EXIT_VIOLATION 159 /* seccomp trapped a syscall (128 + SIGSYS) */

#endif
