/*
 * test_py_kernel.c — the kernel layer refuses what CPython's built-in modules
 * do, even with the language layer bypassed. Debian's libpython has posix,
 * _socket and _posixsubprocess built in: this test reaches them straight through
 * the C API in a locked-down worker (the deliberately unguarded path) and
 * proves each refusal: the errno, and that nothing happened.
 */
#include <Python.h>

#include "lockdown.h"
#include "zygote.h"
#include "pysandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#ifdef TP_SANITIZE
/* The embedded interpreter lives until this process exits, as in the zygote,
 * which never finalizes it: what it still holds at exit is not a leak. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	/* and hashlib's OpenSSL state, its module's for the same life */
	return "leak:libpython3.11.so\nleak:libcrypto.so\n";
}
#endif

#define CANARY "/tmp/tidepool-py-kernel-canary"

/* RLIMIT_AS for the workers: 4 GiB, or under ASan (which reserves terabytes of
 * shadow) the current size plus 4 GiB. Computed in main, before any lockdown. */
static unsigned long long g_as_bytes = 4ull << 30;

static void init_as_bytes(void)
{
#ifdef TP_SANITIZE
	g_as_bytes += tp_zygote_vm_bytes();
#endif
}
#define MARKER "/tmp/tidepool-py-kernel-marker"

/* In the worker: runs src with the real posix/_socket/_posixsubprocess in
 * scope and writes "<exception type>:<errno>" or "ok:<repr>" to fd. */
static void probe(const char *src, int fd)
{
	PyObject *g = PyDict_New();
	PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
	static const char *const mods[] = { "posix", "_socket", "_posixsubprocess" };
	for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) {
		PyObject *m = PyImport_ImportModule(mods[i]); /* built in: no file is read */
		if (m == NULL) {
			PyErr_Clear();
			continue;
		}
		PyDict_SetItemString(g, mods[i], m);
		Py_DECREF(m);
	}
	PyObject *r = PyRun_String(src, Py_eval_input, g, g);
	char out[256];
	if (r == NULL) {
		PyObject *t, *v, *tb;
		PyErr_Fetch(&t, &v, &tb);
		PyErr_NormalizeException(&t, &v, &tb);
		long e = -1;
		if (v != NULL && PyObject_HasAttrString(v, "errno")) {
			PyObject *en = PyObject_GetAttrString(v, "errno");
			e = en && PyLong_Check(en) ? PyLong_AsLong(en) : -1;
			Py_XDECREF(en);
		}
		snprintf(out, sizeof out, "%s:%ld", t ? ((PyTypeObject *)t)->tp_name : "?", e);
	} else {
		PyObject *s = PyObject_Repr(r);
		snprintf(out, sizeof out, "ok:%s", s ? PyUnicode_AsUTF8(s) : "?");
	}
	if (write(fd, out, strlen(out)) < 0)
		_exit(1);
}

/* Forks a worker from this (zygote-like) process, locks it down, probes. */
static void run_locked(const char *src, char *res, size_t reslen, int *status)
{
	struct tp_err err = { 0 };
	int fds[2];
	if (pipe(fds) != 0)
		abort();
	struct tp_shm *shm = mmap(NULL, tp_shm_size(4096), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	tp_shm_init(shm, 4096);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		tp_py_worker_init(1);
		int keep[1] = { fds[1] };
		struct tp_lockdown ld = { .as_bytes = g_as_bytes,
					  .cpu_sec = 5,
					  .nofile = 8,
					  .keep_fds = keep,
					  .nkeep = 1,
					  .shm = shm };
		if (tp_lockdown_apply(&ld, &err) != 0)
			_exit(99);
		probe(src, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], res, reslen - 1);
	res[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	waitpid(pid, status, 0);
	munmap(shm, tp_shm_size(4096));
}

static void expect(const char *src, const char *want)
{
	char res[256];
	int st;
	unlink(MARKER);
	run_locked(src, res, sizeof res, &st);
	CHECK_EQ_STR(res, want);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (strcmp(res, want) != 0)
		fprintf(stderr, "  for: %s\n", src);
}

int main(void)
{
	struct tp_err err = { 0 };
	clearenv(); /* as the host's execve of the zygote: an empty environment */
	init_as_bytes();
	if (geteuid() != 0) {
		TP_SKIP("every case: the lockdown drops to uid 65534, which needs root");
		return tp_test_done("test_py_kernel");
	}
	if (tp_py_zygote_init(&err) != 0 || tp_lockdown_prepare(&err) != 0) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	int fd = open(CANARY, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "secret", 6) == 6);
	close(fd);

	/* Files: seccomp answers EPERM before Landlock is even asked. */
	expect("posix.open('" CANARY "', posix.O_RDONLY)", "PermissionError:1");
	expect("posix.open('" MARKER "', posix.O_WRONLY | posix.O_CREAT)", "PermissionError:1");
	CHECK(access(MARKER, F_OK) != 0); /* no file was created */
	expect("posix.listdir('/')", "PermissionError:1");
	/* Processes: fork, exec and spawn are refused; no marker file appears. */
	expect("posix.fork()", "PermissionError:1");
	expect("posix.execv('/bin/touch', ['touch', '" MARKER "'])", "PermissionError:1");
	/* glibc's system() reports a posix_spawn that failed as exit status 127. */
	expect("posix.system('touch " MARKER "')", "ok:32512");
	CHECK(access(MARKER, F_OK) != 0); /* no process ran */
	expect("posix.posix_spawn('/bin/touch', ['touch', '" MARKER "'], {})", "PermissionError:1");
	/* 3.11's fork_exec, as subprocess calls it (close_fds off: fd 2 serves as errpipe). */
	expect("_posixsubprocess.fork_exec([b'/bin/touch', b'" MARKER "'], [b'/bin/touch'], False,"
	       " (), None, None, -1, -1, -1, -1, -1, -1, 0, 2, False, False, -1, None, None, None,"
	       " -1, None, True)",
	       "PermissionError:1");
	CHECK(access(MARKER, F_OK) != 0);
	/* Network: no socket of any family. */
	expect("_socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)", "PermissionError:1");
	expect("_socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)", "PermissionError:1");
	expect("_socket.socketpair()", "PermissionError:1");
	/* Environment: the zygote's is empty, and the worker's is a copy of it. */
	expect("len(posix.environ)", "ok:0");
	/* Signals to other processes: refused. */
	expect("posix.kill(1, 0)", "PermissionError:1");
	unlink(CANARY);
	return tp_test_done("test_py_kernel");
}
