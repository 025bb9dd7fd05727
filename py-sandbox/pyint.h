/*
 * pyint.h — private to py-sandbox/: the state of one exec and what the Python
 * layer's parts share.
 *   pyguard.c    the sticky verdict wiring, who is calling, the audit tripwire
 *   pyattr.c     the attribute guard: denied names refused by every type's lookup
 *   pymembrane.c the membrane: what crosses from trusted code into the snippet
 *   pyshimfns.c  the C functions the shim and the snippet call
 *   pykernel.c   kernel-only mode: a kernel refusal as a sticky sandbox_violation
 *   pyerror.c    capturing an exception: type, message, traceback, line
 *   pysandbox.c  one exec, the fast path, zygote and worker init, struct tp_lang
 * Nothing outside py-sandbox/ includes it: the public API is pysandbox.h.
 * Include it first: it includes <Python.h>, which must come before any header.
 */
#ifndef TP_PYINT_H
#define TP_PYINT_H

#include <Python.h>

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "lang.h"
#include "verdict.h"

#define STDLIB "/usr/lib/python3.11"
#define DIST_PACKAGES "/usr/lib/python3/dist-packages" /* Debian's python3-numpy ... */
#define SNIPPET "<snippet>"
#define SHIM "<tidepool>"

/* The exec's page and limits (pysandbox.c sets them at the start of an exec). */
extern struct tp_shm *tp_py_shm; /* NULL outside an exec */
extern struct tp_limits tp_py_lim;

/* The verdict's state (pyguard.c). The CPU timer's signal handler reaches the
 * ones marked volatile through tp_py_verdict_ops. */
extern volatile sig_atomic_t tp_py_running;   /* snippet code may run: sticky raises armed */
extern volatile sig_atomic_t tp_py_limits_on; /* allocator refusals trip memory_limit */
extern volatile sig_atomic_t tp_py_armed;     /* the audit tripwire is live */
extern volatile sig_atomic_t tp_py_pending;
extern volatile uint64_t tp_py_count; /* line events charged */
extern size_t tp_py_base;             /* allocator bytes when the exec began */
extern char tp_py_policy_msg[512];
extern int tp_py_policy_line;
extern PyObject *tp_py_exc_limit, *tp_py_exc_policy,
    *tp_py_exc_kernel; /* made by the zygote (pysandbox.c) */

/* pyguard.c: the sticky verdict, who is calling, the audit tripwire. */
extern const struct tp_verdict_ops tp_py_verdict_ops;
uint64_t tp_py_mem_peak(void);
void tp_py_publish_usage(struct tp_shm *shm);
int tp_py_verdict(void);
void tp_py_trip(enum tp_kind kind, int id, uint64_t limit, uint64_t used);
void tp_py_on_refuse(void);
int tp_py_raise_verdict(void);
void tp_py_trace_on(void);
void tp_py_trace_off(void);
PyObject *tp_py_refuse(const char *msg, int line);
int tp_py_snippet_line(void); /* the innermost snippet frame's line, or -1 */
/* {name: message}: a NameError for one of them trips a policy verdict. */
int tp_py_refused_names(PyObject *dict);
int tp_py_frame_exempt(int no_frame);
int tp_py_caller_trusted(void);
/* The innermost Python frame is the shim's own code. */
int tp_py_caller_shim(void);
int tp_py_audit_hook(const char *event, PyObject *args, void *ud);

/* pyattr.c: the attribute guard (installed by the shim in the zygote). */
int tp_py_guard_install(PyObject *deny);
/* {id(namespace): frozenset of names}: the names each stdlib module's code spells, and
 * the modules whose attributes the stdlib reads only by those (the shim's _SPELL_ONLY). */
int tp_py_guard_spelled(PyObject *d, PyObject *only);
/* pymembrane.c: the checks where values cross from trusted code into the
 * snippet's frames (installed after the guard: the facades, the builtins). */
int tp_py_membrane_install(PyObject *facades, PyObject *builtins);
int tp_py_membrane_snippet_frame(void); /* the innermost Python frame is the snippet's side */
/* A value of a type the membrane may refuse (a quick filter for the guard), and what
 * is forbidden about it, shallowly (a static description), or NULL. */
int tp_py_membrane_suspect(PyObject *v);
const char *tp_py_membrane_forbidden(PyObject *v);
int tp_py_guard_locked(PyTypeObject *t);
int tp_py_attr_denied(PyObject *name);
int tp_py_real_namespace(PyObject *dict);
int tp_py_real_module(PyObject *obj); /* a module the zygote loaded (not a facade) */
PyObject *tp_py_snippet_getattr(PyObject *const *args, Py_ssize_t n); /* _sgetattr */
PyObject *tp_py_snippet_setattr(PyObject *const *args, Py_ssize_t n); /* _ssetattr */
int tp_py_zygote_type(PyTypeObject *t); /* existed when the guard was installed */
/* The innermost frame called an attrgetter or methodcaller now reading. */
int tp_py_acting_now(void);
int tp_py_caller_data_package(void);
int tp_py_caller_stdlib_file(void); /* a stdlib module's own code, from its file */
int tp_py_caller_zygote_code(void); /* any module's own code the zygote loaded */
int tp_py_data_dict_ok(PyObject *obj, PyObject *name);

/* pyshimfns.c: the shim's C functions, put in its globals by the zygote. */
extern PyMethodDef tp_py_shim_fns[];
/* The catalog modules that live in DIST_PACKAGES (pyshimfns.c). */
extern const char *const tp_py_data_modules[];
/* pynumpy.c: _numpy_alloc(numpy.core._multiarray_umath), numpy's data through pyalloc. */
PyObject *tp_py_numpy_alloc(PyObject *self, PyObject *mod);
/* The `tools` builtin (pytools.c): a new reference, or NULL with an exception. */
PyObject *tp_py_tools_new(void);
extern volatile sig_atomic_t tp_py_fileop; /* a file shim's checked call is running */

/* pykernel.c: kernel-only mode (the policy has no language layer). */
extern int tp_py_kernel_only;
extern PyMethodDef tp_py_kernel_fns[];
void tp_py_kernel_install(void);
void tp_py_kernel_begin(void);
void tp_py_kernel_record(const char *event, PyObject *args);
int tp_py_kernel_check(const char *call, int e);

/* pyerror.c: an exec's failure, taken from the pending exception. */
enum stage { ST_INPUTS, ST_LOAD, ST_RUN };

struct failure {
	int set;
	enum stage stage;
	int syntax; /* a SyntaxError (or a source the parser refused) */
	int line;
	int column; /* 1-based, 0: unknown */
	char type[64];
	json_t *message, *traceback;
};

/* Takes the pending exception into err: "what: str(exc)"; returns -1. */
int tp_py_fail(const char *what, struct tp_err *err);
void tp_py_capture(struct failure *f, enum stage stage, const struct tp_request *req);
/* The largest file this worker may write (its RLIMIT_FSIZE, sandbox/worker.c)
 * and the policy setting that says so in *which. */
uint64_t tp_py_file_limit(const char **which);
/* The running exec's request (NULL outside one), for _tb_rows. */
extern const struct tp_request *tp_py_req;
/* [(line, function, source line)] of exc's traceback, the snippet's frames only. */
PyObject *tp_py_tb_rows(PyObject *exc);
/* The instance dict of one of the snippet's own objects, for vars(obj). */
PyObject *tp_py_vars(PyObject *obj);
PyObject *tp_py_own_dict(PyObject *obj);

#endif
