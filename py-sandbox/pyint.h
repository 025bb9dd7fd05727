/*
 * pyint.h — private to py-sandbox/: the state of one exec and what the Python
 * layer's parts share. Its files, from the bottom up: each calls only files
 * listed before it here (and sandbox/, common/, and the leaves with their own
 * headers: pyalloc.c, pyfork.c, pyjson.c, pyshim.c), never one listed after it
 * (`make layer-check`):
 *   pystate.c    the exec's page, limits and flags; what the zygote recorded
 *   pyguard.c    the sticky verdict wiring, who is calling, the audit tripwire
 *   pymembrane.c the membrane: what crosses from trusted code into the snippet
 *   pyattr.c     the attribute guard: denied names refused by every type's lookup
 *   pykernel.c   kernel-only mode: a kernel refusal as a sticky sandbox_violation
 *   pynumpy.c    numpy's array data through the counting allocators
 *   pyerror.c    capturing an exception: type, message, traceback, line
 *   pytools.c    the `tools` builtin
 *   pyshimfns.c  the C functions the shim and the snippet call
 *   pyaddr.c     addresses: id(), hash() and the reprs (its own header, pyaddr.h)
 *   pysandbox.c  one exec, the fast path, zygote and worker init, struct tp_lang
 * A lower file that must reach an upper one is handed a function pointer at
 * init (tp_py_guard_kernel_recorder). Nothing outside py-sandbox/ includes it:
 * the public API is pysandbox.h.
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

/* pystate.c: the exec's page and limits (pysandbox.c sets them at the start of
 * an exec), its flags, and what the attribute guard's install recorded in the
 * zygote (pyattr.c fills it). */
extern struct tp_shm *tp_py_shm; /* NULL outside an exec */
extern struct tp_limits tp_py_lim;
extern volatile sig_atomic_t tp_py_fileop; /* a file shim's checked call is running */
extern int tp_py_kernel_only;              /* kernel-only mode (pykernel.c) */
/* The largest file this worker may write (its RLIMIT_FSIZE, sandbox/worker.c)
 * and the policy setting that says so in *which. */
uint64_t tp_py_file_limit(const char **which);
/* The catalog modules that live in DIST_PACKAGES. */
extern const char *const tp_py_data_modules[];
/* ... and the packages whose code is a data package's (pyguard.c). */
extern const char *const tp_py_data_code[];
extern int tp_py_attr_armed; /* the attribute guard is installed */
extern PyObject *tp_py_deny; /* frozenset of str: the denied names */
int tp_py_attr_denied(PyObject *name);
/* The types of the modules loaded in the zygote but the module type itself
 * (six._MovedItems under the data preset). */
extern PyTypeObject *tp_py_modtypes[8];
extern int tp_py_nmodtypes;
/* Records the namespaces and module types of the modules loaded (all but __main__). */
int tp_py_collect_namespaces(void);
int tp_py_real_namespace(PyObject *dict);
int tp_py_real_module(PyObject *obj); /* a module the zygote loaded (not a facade) */
/* Every type there is when the guard is armed, each kept alive (so its address
 * is never reused), sorted once all are in; tp_py_ztype: t is one of them (a
 * builtin, the stdlib's, a data package's or the shim's class, never one the
 * exec made); tp_py_zygote_type: the same once the guard is armed. */
int tp_py_remember_type(PyObject *t);
void tp_py_sort_ztypes(void);
int tp_py_ztype(PyTypeObject *t);
int tp_py_zygote_type(PyTypeObject *t);
/* The interpreter frame (tstate->cframe->current_frame: no frame object is made
 * for it) whose attrgetter/methodcaller reads now, or whose attribute slot
 * wrapper does (tp_py_acting_slot); pyattr.c's acting_call sets them. */
extern const void *tp_py_acting;
extern int tp_py_acting_slot;
/* The innermost frame called an attrgetter or methodcaller now reading. */
int tp_py_acting_now(void);

static inline const void *tp_py_current_frame(void)
{
	return PyThreadState_Get()->cframe->current_frame;
}

/* A module type: the module type's or one of tp_py_modtypes. */
static inline int tp_py_module_type(PyTypeObject *t)
{
	if (__builtin_expect(t == &PyModule_Type, 0))
		return 1;
	for (int i = 0; __builtin_expect(i < tp_py_nmodtypes, 0); i++)
		if (t == tp_py_modtypes[i])
			return 1;
	return 0;
}

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
/* rule: error.rule (docs/protocol.md), e.g. "python.modules:socket". */
PyObject *tp_py_refuse(const char *rule, const char *msg, int line);
/* Names the rule of the verdict about to be tripped (none yet): printf-style. */
void tp_py_rule(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tp_py_snippet_line(void); /* the innermost snippet frame's line, or -1 */
/* {name: message}: a NameError for one of them trips a policy verdict. */
int tp_py_refused_names(PyObject *dict);
int tp_py_frame_exempt(int no_frame);
int tp_py_caller_trusted(void);
/* The innermost Python frame is the shim's own code. */
int tp_py_caller_shim(void);
int tp_py_audit_hook(const char *event, PyObject *args, void *ud);
/* Kernel-only mode's recorder of the calls that may reach the kernel (pykernel.c). */
void tp_py_guard_kernel_recorder(void (*record)(const char *event, PyObject *args));

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
PyObject *tp_py_snippet_getattr(PyObject *const *args, Py_ssize_t n); /* _sgetattr */
PyObject *tp_py_snippet_setattr(PyObject *const *args, Py_ssize_t n); /* _ssetattr */
int tp_py_caller_data_package(void);
int tp_py_caller_stdlib_file(void); /* a stdlib module's own code, from its file */
int tp_py_caller_zygote_code(void); /* any module's own code the zygote loaded */
int tp_py_data_dict_ok(PyObject *obj, PyObject *name);

/* pyshimfns.c: the shim's C functions, put in its globals by the zygote. */
extern PyMethodDef tp_py_shim_fns[];
/* pynumpy.c: _numpy_alloc(numpy.core._multiarray_umath), numpy's data through pyalloc. */
PyObject *tp_py_numpy_alloc(PyObject *self, PyObject *mod);
/* The `tools` builtin (pytools.c): a new reference, or NULL with an exception. */
PyObject *tp_py_tools_new(void);

/* pykernel.c: kernel-only mode (the policy has no language layer). */
extern PyMethodDef tp_py_kernel_fns[];
void tp_py_kernel_install(void);
void tp_py_kernel_record_files(void);
void tp_py_kernel_fileop_failed(void);
void tp_py_kernel_begin(void);
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
/* The running exec's request (NULL outside one), for _tb_rows. */
extern const struct tp_request *tp_py_req;
/* [(line, function, source line)] of exc's traceback, the snippet's frames only. */
PyObject *tp_py_tb_rows(PyObject *exc);
/* The instance dict of one of the snippet's own objects, for vars(obj). */
PyObject *tp_py_vars(PyObject *obj);
PyObject *tp_py_own_dict(PyObject *obj);

#endif
