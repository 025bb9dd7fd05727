/*
 * zygote.h — the pristine template that clones workers (zygote side).
 *
 * Usage:
 *   1. main() calls tp_zygote_main(lang) in a process the host started with
 *      `tidepool --zygote LANG` (host/zygote_ctl.h). It builds the language's
 *      interpreter, enters the zygote filter and then serves common/spawn.h on
 *      fd TP_ZYGOTE_CTL_FD until EOF; it never returns to the caller's code.
 *   2. Each worker it clones runs tp_worker_main() (worker.h).
 */
#ifndef TP_ZYGOTE_H
#define TP_ZYGOTE_H

#include <stdint.h>
#include <sys/types.h>

/* Nice value of the zygote and of the warm workers it makes. */
#define TP_BACKGROUND_NICE 10

/* workspace_base: where the host makes sessions' workspaces (argv[3]), or NULL. */
int tp_zygote_main(const char *lang, const char *workspace_base);

/* clone(CLONE_PARENT | SIGCHLD): the worker is the host's child. Also used by
 * the test-only fake zygote (tests/faults/fake_tidepool.c). */
pid_t tp_zygote_clone_worker(void);
/* The calling process's mapped bytes (/proc/self/statm): the base of RLIMIT_AS. */
uint64_t tp_zygote_vm_bytes(void);

#endif
