/*
 * pyfork.h — the functions modules registered to run after a fork, and the
 * three a worker does not need (pyfork.c says why).
 */
#ifndef TP_PYFORK_H
#define TP_PYFORK_H

#include <Python.h>

/* In the zygote, before its first clone: takes random's, threading's and
 * logging's after-fork functions out of the interpreter's list; any other
 * stays, and PyOS_AfterFork_Child runs it in each worker. 0, or -1 (the list
 * is left as it was) if Python could not build the new list. */
int tp_pyfork_seal(void);
/* How many after-fork functions a worker still runs (tests). */
Py_ssize_t tp_pyfork_hooks_left(void);

#endif
