/*
 * pysandbox.h — the Python 3.11 language layer (Debian's libpython3.11).
 *
 * Usage:
 *   1. tp_py_zygote_init(err): initialize CPython once (isolated, counting
 *      allocators, audit hook), pre-import the allowed modules, build the
 *      facades and the trimmed builtins, then gc.collect() + gc.freeze();
 *      -1 with the failure recorded in err.
 *   2. tp_py_worker_init(entropy): in a fresh worker, before lockdown: CPython's
 *      after-fork step and a reseed of random.
 *   3. tp_py_exec(req, shm): run one snippet under the memory, instruction, CPU
 *      and output limits; return the worker reply object. A non-JSON value is
 *      sent as its repr with "value_repr": true next to "value".
 */
#ifndef TP_PYSANDBOX_H
#define TP_PYSANDBOX_H

#include "lang.h"

int tp_py_zygote_init(struct tp_err *err);
void tp_py_worker_init(uint64_t entropy);
int tp_py_exec(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out);
/* (body, last expression or None) of a snippet, as the exec compiles it: from
 * its text where the AST check can refuse nothing in it (tp_py_prepare_text:
 * NULL, no error set, when the text is not such), else by the shim's prepare()
 * (tp_py_prepare_shim: NULL and an error when it refuses). test_py holds the
 * first to the second, code object for code object. */
struct _object *tp_py_prepare_text(const char *code, size_t len); /* a PyObject */
struct _object *tp_py_prepare_shim(const char *code, size_t len);

extern const struct tp_lang tp_lang_python;

#endif
