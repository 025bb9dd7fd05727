/*
 * pykernel.c — kernel-only mode (a policy without a language layer): the
 * snippet may call anything, and a refusal by the kernel (Landlock, seccomp)
 * that the runtime sees ends the exec as a sticky sandbox_violation naming the
 * call and the path. The audit hook records the last call that may reach the
 * kernel; an OSError (or the RuntimeError of a thread that could not start)
 * created after it with a refusal's errno trips the verdict. Invariant: only
 * EACCES, EPERM, EROFS and ENOSYS after a recorded call trip it; catching the
 * exception does not help (the verdict is sticky).
 * Layer (pyint.h): it calls pystate.c and pyguard.c, and hands the guard's
 * audit hook its recorder (tp_py_guard_kernel_recorder); pysandbox.c calls it.
 */
#include "pyint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* Kernel-only mode's state, one instance. No signal handler touches it. */
static struct {
	/* -- zygote (tp_py_kernel_install): the constructors it wraps, read-only after */
	newfunc oserror_new, runtime_new;

	/* -- per exec: reset by tp_py_kernel_begin, written by record (the audit
	 * hook) at each call that may reach the kernel, consumed by oserror_new */
	char call[200]; /* the last recorded call, as "open('/etc/passwd')" */
	char event[64]; /* its audit event */
	int have_call;
	int open_flags;       /* the flags of the last "open" event, -1 for none */
	PyFrameObject *frame; /* the Python frame that made it (compared, never used) */
} G;

/* "repr(o)" into out, cut; "?" if repr fails. */
static void repr_into(PyObject *o, char *out, size_t len)
{
	PyObject *r = o ? PyObject_Repr(o) : NULL;
	const char *s = r ? PyUnicode_AsUTF8(r) : NULL;

	snprintf(out, len, "%s", s ? s : "?");
	if (strlen(out) + 1 >= len && len > 4)
		memcpy(out + len - 4, "...", 4);
	Py_XDECREF(r);
	PyErr_Clear();
}

static PyObject *arg(PyObject *args, Py_ssize_t i)
{
	return PyTuple_Check(args) && PyTuple_GET_SIZE(args) > i ? PyTuple_GET_ITEM(args, i) : NULL;
}

/* Records an audit event that may reach the kernel: the call as a person reads it.
 * The audit hook (pyguard.c) calls it through the pointer tp_py_kernel_install
 * hands it: the guard below never calls up into this file. */
static void record(const char *event, PyObject *args)
{
	char a[150];
	PyObject *shown = arg(args, 0);

	if (!tp_py_running)
		return;
	if (strcmp(event, "socket.__new__") == 0) {
		snprintf(G.call, sizeof G.call, "socket()");
		goto done;
	}
	if (strcmp(event, "_thread.start_new_thread") == 0) {
		snprintf(G.call, sizeof G.call, "a new thread (clone)");
		goto done;
	}
	if (strcmp(event, "os.fork") == 0 || strcmp(event, "os.forkpty") == 0) {
		snprintf(G.call, sizeof G.call, "%s()", event);
		goto done;
	}
	if (strcmp(event, "os.kill") == 0 || strcmp(event, "os.killpg") == 0) {
		char b[40];
		repr_into(arg(args, 0), a, 40);
		repr_into(arg(args, 1), b, sizeof b);
		snprintf(G.call, sizeof G.call, "%s(%s, %s)", event, a, b);
		goto done;
	}
	if (strncmp(event, "socket.", 7) == 0 || strcmp(event, "subprocess.Popen") == 0)
		shown = arg(args, 1); /* the socket object, or the executable: the address, argv */
	G.open_flags = -1;
	if (strcmp(event, "open") == 0 && arg(args, 2) != NULL && PyLong_Check(arg(args, 2))) {
		G.open_flags = (int)PyLong_AsLong(arg(args, 2));
		PyErr_Clear();
	}
	if (strcmp(event, "import") == 0) {
		repr_into(shown, a, sizeof a);
		snprintf(G.call, sizeof G.call, "import of %s", a);
		goto done;
	}
	if (shown != NULL)
		repr_into(shown, a, sizeof a);
	else
		a[0] = '\0';
	snprintf(G.call, sizeof G.call, "%s(%s)", event, a);
done:
	snprintf(G.event, sizeof G.event, "%s", event);
	G.have_call = 1;
	G.frame = PyEval_GetFrame();
}

static const char *errno_name(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EROFS: return "EROFS";
	case ENOSYS: return "ENOSYS";
	default: return "?";
	}
}

static int refusal_errno(int e)
{
	return e == EACCES || e == EPERM || e == EROFS || e == ENOSYS;
}

/* Which wall refused, in words: by what the call was. */
static const char *which_wall(const char *event, int e)
{
	if (strncmp(event, "socket.", 7) == 0)
		return "seccomp allows no network";
	if (strcmp(event, "os.kill") == 0 || strcmp(event, "os.killpg") == 0)
		return "seccomp allows no signal to another process";
	if (strncmp(event, "subprocess.", 11) == 0 || strcmp(event, "os.system") == 0 ||
	    strncmp(event, "os.exec", 7) == 0 || strncmp(event, "os.fork", 7) == 0 ||
	    strncmp(event, "os.posix_spawn", 14) == 0 || strncmp(event, "os.spawn", 8) == 0 ||
	    strcmp(event, "_thread.start_new_thread") == 0)
		return "seccomp allows no new process, thread or program";
	if (strncmp(event, "ctypes", 6) == 0)
		return "the kernel layer refused a system call the native code made";
	if (strncmp(event, "mmap", 4) == 0)
		return "seccomp allows no executable or shared mapping";
	if (event[0] == '\0')
		return "seccomp refused the system call";
	if (e == EROFS)
		return "the file system is read-only to the sandbox";
	if (e == ENOSYS)
		return "seccomp allows no such system call";
	return e == EACCES ? "Landlock allows no file outside the policy's grants"
			   : "the kernel layer allows no file outside the policy's grants";
}

/* The Landlock access right a refused call needed, by what the call was
 * (docs/protocol.md, error.rule): NULL when it cannot be told. */
static const char *landlock_right(const char *event)
{
	if (strcmp(event, "open") == 0 && G.open_flags >= 0) {
		if ((G.open_flags & O_ACCMODE) != O_RDONLY || (G.open_flags & (O_CREAT | O_TRUNC)))
			return (G.open_flags & O_CREAT) ? "make_reg" : "write_file";
		return (G.open_flags & O_DIRECTORY) ? "read_dir" : "read_file";
	}
	if (strcmp(event, "os.listdir") == 0 || strcmp(event, "os.scandir") == 0)
		return "read_dir";
	if (strcmp(event, "os.mkdir") == 0)
		return "make_dir";
	if (strcmp(event, "os.remove") == 0)
		return "remove_file";
	if (strcmp(event, "os.rmdir") == 0)
		return "remove_dir";
	return NULL;
}

/* error.rule of a refusal the runtime saw: Landlock's right and the path, or
 * seccomp's answer (its errno: the runtime cannot see which call it was). */
static void rule(const char *event, int e, const char *path)
{
	const char *right = landlock_right(event);
	if (e == EACCES)
		tp_py_rule("landlock%s%s%s%.160s", right ? ":" : "", right ? right : "",
			   path ? " " : "", path ? path : "");
	else if (e == EROFS)
		tp_py_rule("kernel:EROFS%s%.160s", path ? " " : "", path ? path : "");
	else
		tp_py_rule("seccomp:%s", e == ENOSYS ? "ENOSYS" : "EPERM");
}

/* Records the sticky verdict for the call `call` refused with errno e. */
static void trip(const char *call, const char *event, int e, const char *path)
{
	if (!tp_py_running || tp_py_verdict())
		return;
	rule(event, e, path);
	snprintf(tp_py_policy_msg, sizeof tp_py_policy_msg, "the kernel refused %s: %s (%s); %s",
		 call, strerror(e), errno_name(e), which_wall(event, e));
	tp_py_policy_line = tp_py_snippet_line();
	tp_shm_note(tp_py_shm, tp_py_policy_msg);
	tp_py_trip(TP_KIND_SANDBOX_VIOLATION, -1, 0, 0);
}

/* A ctypes call left errno e (ctypes' own copy, so nothing else touched it):
 * ENOSYS is libc falling back from a newer call, not a refusal. */
int tp_py_kernel_check(const char *call, int e)
{
	if (!tp_py_kernel_only || !refusal_errno(e) || e == ENOSYS)
		return 0;
	trip(call, "ctypes", e, NULL);
	return 1;
}

/* A str or bytes argument as text into out; 0, or -1 when it is neither. */
static int text_arg(PyObject *o, char *out, size_t len)
{
	const char *s = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8(o)
			: o && PyBytes_Check(o) ? PyBytes_AsString(o)
						: NULL;
	PyErr_Clear();
	if (s == NULL)
		return -1;
	snprintf(out, len, "%s", s);
	return 0;
}

/* The libc functions a ctypes snippet reaches files with: which audit event
 * each is like (for Landlock's right), where its path and flags are. */
static const struct {
	const char *fn, *event;
	int path, flags; /* argument index; flags -1: none (a mode string for fopen) */
} file_fns[] = {
	{ "open", "open", 0, 1 },         { "open64", "open", 0, 1 },
	{ "openat", "open", 1, 2 },       { "openat64", "open", 1, 2 },
	{ "creat", "open", 0, -2 },       { "fopen", "open", 0, -1 },
	{ "fopen64", "open", 0, -1 },     { "opendir", "os.listdir", 0, -3 },
	{ "mkdir", "os.mkdir", 0, -3 },   { "unlink", "os.remove", 0, -3 },
	{ "remove", "os.remove", 0, -3 }, { "rmdir", "os.rmdir", 0, -3 },
};

/* A ctypes call of fn(args) left errno e: a refusal of a file function names
 * Landlock's right and the path, as the same call from Python would. */
static void kernel_check_args(const char *call, const char *fn, int e, PyObject *args)
{
	char path[170], mode[8];
	for (size_t i = 0; fn && PyTuple_Check(args) && i < sizeof file_fns / sizeof file_fns[0];
	     i++) {
		if (strcmp(fn, file_fns[i].fn) != 0 ||
		    text_arg(arg(args, file_fns[i].path), path, sizeof path) != 0)
			continue;
		if (!tp_py_kernel_only || !refusal_errno(e) || e == ENOSYS)
			return;
		G.open_flags = O_RDONLY;
		if (file_fns[i].flags >= 0 && arg(args, file_fns[i].flags) != NULL &&
		    PyLong_Check(arg(args, file_fns[i].flags)))
			G.open_flags = (int)PyLong_AsLong(arg(args, file_fns[i].flags));
		else if (file_fns[i].flags == -2)
			G.open_flags = O_CREAT | O_WRONLY | O_TRUNC;
		else if (file_fns[i].flags == -1 &&
			 text_arg(arg(args, 1), mode, sizeof mode) == 0 && mode[0] != 'r')
			G.open_flags = O_CREAT | O_WRONLY;
		PyErr_Clear();
		trip(call, file_fns[i].event, e, path);
		return;
	}
	tp_py_kernel_check(call, e);
}

/* A call no audit event names (os.pipe, os.open ...): where it was made. */
static void unnamed_call(PyObject *filename, char *out, size_t len)
{
	PyFrameObject *f = PyEval_GetFrame();
	PyCodeObject *code = f ? PyFrame_GetCode(f) : NULL;
	const char *file = code ? PyUnicode_AsUTF8(code->co_filename) : NULL;
	const char *fn = code ? PyUnicode_AsUTF8(code->co_name) : NULL;
	const char *base = file ? strrchr(file, '/') : NULL;
	char path[150];

	PyErr_Clear();
	if (filename != NULL && filename != Py_None) {
		repr_into(filename, path, sizeof path);
		snprintf(out, len, "a system call on %s", path);
	} else {
		snprintf(out, len, "a system call (in %s, %s)",
			 base   ? base + 1
			 : file ? file
				: "?",
			 fn ? fn : "?");
	}
	Py_XDECREF(code);
}

/* An OSError from the runtime (PyErr_SetFromErrno, subprocess's child error):
 * a refusal's errno trips the verdict, naming the call the audit hook recorded
 * in the same Python frame, or else where it was made (inside an import, both).
 * Every OSError uses the record up. */
static PyObject *oserror_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *self = G.oserror_new(type, args, kw);
	char call[200];

	if (self != NULL && tp_py_running &&
	    PyObject_TypeCheck(self, (PyTypeObject *)PyExc_OSError)) {
		PyOSErrorObject *o = (PyOSErrorObject *)self;
		int e = o->myerrno && PyLong_Check(o->myerrno) ? (int)PyLong_AsLong(o->myerrno) : 0;
		int named = G.have_call && G.frame == PyEval_GetFrame();
		int importing = G.have_call && strcmp(G.event, "import") == 0;
		PyErr_Clear();
		G.have_call = 0;
		if (refusal_errno(e)) {
			if (!named)
				unnamed_call(o->filename, call, sizeof call);
			if (!named && importing) { /* importlib's probe for the import */
				char probe[sizeof call];
				memcpy(probe, call, sizeof probe);
				snprintf(call, sizeof call, "%.80s (%.110s)", G.call, probe);
			}
			PyObject *fn = o->filename;
			const char *path =
			    fn != NULL && PyUnicode_Check(fn) ? PyUnicode_AsUTF8(fn) : NULL;
			PyErr_Clear();
			if (!named)
				G.open_flags = -1;
			trip(named ? G.call : call,
			     named                                           ? G.event
			     : o->filename != NULL && o->filename != Py_None ? "open"
									     : "",
			     e, path);
		}
	}
	return self;
}

/* _thread's "can't start new thread" is a RuntimeError: clone was refused. */
static PyObject *runtime_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *self = G.runtime_new(type, args, kw);
	PyObject *m = arg(args, 0);
	const char *s = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;

	PyErr_Clear(); /* 3.11 audits no thread start: the message is the sign */
	if (self != NULL && s != NULL && strcmp(s, "can't start new thread") == 0)
		trip("a new thread (clone)", "_thread.start_new_thread", EPERM, NULL);
	return self;
}

/* _errno_call(fn, call, *args): fn(*args); a result that says the call could
 * not be made trips the verdict: -1 with a refusal's errno, or os.system's
 * 127 << 8 (glibc's system() when posix_spawn of the shell fails: the kernel
 * refused the clone or the execve). */
static PyObject *py_errno_call(PyObject *self, PyObject *args)
{
	PyObject *fn, *call, *rest, *r;
	int e;

	(void)self;
	if (PyTuple_GET_SIZE(args) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 1))) {
		PyErr_SetString(PyExc_TypeError, "_errno_call(fn, call, *args)");
		return NULL;
	}
	fn = PyTuple_GET_ITEM(args, 0);
	call = PyTuple_GET_ITEM(args, 1);
	rest = PyTuple_GetSlice(args, 2, PyTuple_GET_SIZE(args));
	if (rest == NULL)
		return NULL;
	errno = 0;
	r = PyObject_Call(fn, rest, NULL);
	e = errno;
	Py_DECREF(rest);
	if (r != NULL && PyLong_Check(r)) {
		long v = PyLong_AsLong(r);
		const char *c = PyUnicode_AsUTF8(call);
		if ((v == -1 && refusal_errno(e)) || v == 127 << 8)
			trip(c ? c : "?", "os.system", refusal_errno(e) ? e : EPERM, NULL);
	}
	if (r != NULL)
		PyErr_Clear(); /* PyLong_AsLong of a huge int */
	return r;
}

/* _errno_check(call, errno[, fn, args]): for ctypes calls (their errno is
 * ctypes' copy); fn and args tell a file function's right and path. */
static PyObject *py_errno_check(PyObject *self, PyObject *args)
{
	const char *call, *fn = NULL;
	PyObject *fargs = NULL;
	int e;

	(void)self;
	if (!PyArg_ParseTuple(args, "si|zO", &call, &e, &fn, &fargs))
		return NULL;
	kernel_check_args(call, fn, e, fargs);
	Py_RETURN_NONE;
}

PyMethodDef tp_py_kernel_fns[] = {
	{ "_errno_call", py_errno_call, METH_VARARGS, NULL },
	{ "_errno_check", py_errno_check, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

/* Zygote: wrap the constructors that report a refusal, and have the audit hook
 * record the calls that may reach the kernel. */
void tp_py_kernel_install(void)
{
	PyTypeObject *ose = (PyTypeObject *)PyExc_OSError;
	PyTypeObject *rte = (PyTypeObject *)PyExc_RuntimeError;

	tp_py_guard_kernel_recorder(record);
	if (G.oserror_new != NULL)
		return;
	G.oserror_new = ose->tp_new;
	ose->tp_new = oserror_new;
	G.runtime_new = rte->tp_new;
	rte->tp_new = runtime_new;
}

/* Zygote, for a policy whose sessions have workspaces but that grants no path:
 * only the recorder, so the file shim's own calls are named when the kernel
 * refuses one (tp_py_kernel_fileop_failed); other OSErrors stay the runtime's. */
void tp_py_kernel_record_files(void)
{
	tp_py_guard_kernel_recorder(record);
}

/* The file shim's checked call (_fileop, pyshimfns.c) raised: an OSError with
 * a refusal's errno on a path the shim let through is the kernel's refusal (a
 * symlink in the workspace that leads out of it: Landlock), a sticky
 * sandbox_violation naming the call the audit hook recorded and Landlock's
 * right. The exception itself is left as it was. */
void tp_py_kernel_fileop_failed(void)
{
	PyObject *type, *value, *tb;

	if (!PyErr_ExceptionMatches(PyExc_OSError))
		return;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	if (value != NULL && PyObject_TypeCheck(value, (PyTypeObject *)PyExc_OSError)) {
		PyOSErrorObject *o = (PyOSErrorObject *)value;
		int e = o->myerrno && PyLong_Check(o->myerrno) ? (int)PyLong_AsLong(o->myerrno) : 0;
		const char *path = o->filename != NULL && PyUnicode_Check(o->filename)
				       ? PyUnicode_AsUTF8(o->filename)
				       : NULL;
		PyErr_Clear();
		if (G.have_call && refusal_errno(e) && e != ENOSYS)
			trip(G.call, G.event, e, path);
		G.have_call = 0;
	}
	PyErr_Restore(type, value, tb);
}

void tp_py_kernel_begin(void)
{
	G.have_call = 0;
	G.call[0] = G.event[0] = '\0';
}
