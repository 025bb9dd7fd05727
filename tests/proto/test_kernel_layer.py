"""The kernel layer end to end (issue 11): file grants held by Landlock and
seccomp, kernel-only's runtime grants and traps, what a worker with full Python
(ctypes) still cannot reach, and the zygote's own refusal of a policy this kernel
cannot hold. Exact kinds, layers, messages and syscalls."""
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from conftest import BINARY, needs_data, needs_landlock, Host, said

ENV = {"PATH": "/usr/bin:/bin"}
EPERM = "Operation not permitted (EPERM)"
EACCES = "Permission denied (EACCES)"
LANDLOCK = "Landlock allows no file outside the policy's grants"


@pytest.fixture(scope="module")
def tree():
    """ro/ (read grant), rw/ (write grant) and a canary beside them, readable by
    the workers' uid 65534, and a host with policies over them."""
    d = tempfile.mkdtemp(prefix="tp-kernel-", dir="/tmp")
    os.chmod(d, 0o755)
    for sub, mode in (("ro", 0o755), ("rw", 0o777), ("pol", 0o755)):
        os.mkdir(os.path.join(d, sub))
        os.chmod(os.path.join(d, sub), mode)
    for path, text in (("ro/data.txt", "granted\n"), ("canary.txt", "CANARY-kernel\n")):
        with open(os.path.join(d, path), "w") as f:
            f.write(text)
        os.chmod(os.path.join(d, path), 0o644)
    grant = {"read": [os.path.join(d, "ro")], "write": [os.path.join(d, "rw")],
             "file_bytes": 4096}
    for name, base in (("bare", "kernel-only"), ("files", "standard")):
        with open(os.path.join(d, "pol", name + ".json"), "w") as f:
            json.dump({"name": name, "extends": base, "filesystem": grant}, f)
    h = Host(args=("--policy-dir", os.path.join(d, "pol")))
    yield d, h
    h.close()
    shutil.rmtree(d, ignore_errors=True)


def py(h, code, policy):
    r = h.call("sandbox/exec", {"lang": "python", "code": code, "policy": policy}, 60)
    assert "result" in r, r
    return r["result"]


def lua(h, code, policy):
    return h.exec(code, policy=policy)


# x86-64 numbers of the calls these tests see trapped: the error's syscall_nr.
NRS = {"mmap": 9, "kill": 62, "socket": 41, "clone": 56, "execve": 59, "ptrace": 101,
       "prctl": 157, "link": 86, "futex": 202, "clock_gettime": 228, "clock_getres": 229,
       "clock_nanosleep": 230, "process_vm_readv": 310, "nr_5000": 5000, "unknown": None}


def violation(res, message, syscall=None):
    assert res["ok"] is False and res["value"] is None, res
    e = res["error"]
    assert (e["kind"], e["layer"], said(e)) == ("sandbox_violation", "kernel", message), res
    if syscall is not None:
        assert (e["syscall"], e["syscall_nr"], e["line"]) == (syscall, NRS[syscall], None), res
    else:
        assert "syscall_nr" not in e, res
    assert "CANARY" not in json.dumps(res)


# -- kernel-only: the runtime's library, the traps ---------------------------------------

@needs_landlock
def test_kernel_only_runtime_grant_and_refusals(tree):
    _, h = tree
    # json is preloaded (standard allows it); chunk is in no preset, so the
    # kernel-only zygote did not load it: it comes from the grant (the
    # interpreter's library, read-only).
    res = py(h, "import sys\nwas = 'chunk' in sys.modules\nimport chunk, json\n"
                "[was, chunk.__name__, json.dumps([1])]", "kernel-only")
    assert res["ok"] is True and res["value"] == [False, "chunk", "[1]"], res
    violation(py(h, "open('/etc/passwd').read()", "kernel-only"),
              f"the kernel refused open('/etc/passwd'): {EACCES}; {LANDLOCK}")
    violation(py(h, "import os\nos.system('id')", "kernel-only"),
              "seccomp refused the system call 'clone'", "clone")
    violation(lua(h, "return os.execute('id')", "kernel-only"),
              "seccomp refused the system call 'clone'", "clone")
    violation(lua(h, "return io.open('/etc/passwd')", "kernel-only"),
              f"the kernel refused io.open('/etc/passwd'): {EACCES}; {LANDLOCK}")


# Full Python (ctypes, mmap) may corrupt its own worker; what the kernel still holds.
REACH = [
    ("import ctypes\nctypes.CDLL(None).ptrace(0, 0, 0, 0)",
     "seccomp refused the system call 'ptrace'", "ptrace"),
    ("import ctypes\nctypes.CDLL(None).process_vm_readv(1, 0, 0, 0, 0, 0)",
     "seccomp refused the system call 'process_vm_readv'", "process_vm_readv"),
    ("import ctypes\nctypes.CDLL(None).kill(1, 0)", "seccomp refused the system call 'kill'",
     "kill"),
    ("import ctypes\nctypes.CDLL(None).socket(2, 1, 0)",
     "seccomp refused the system call 'socket'", "socket"),
    ("import ctypes\nctypes.CDLL(None).execve(b'/bin/sh', None, None)",
     "seccomp refused the system call 'execve'", "execve"),
    # Refusals other policies answer with EPERM trap under kernel-only, named.
    ("import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)",  # PR_SET_DUMPABLE
     "seccomp refused the system call 'prctl'", "prctl"),
    ("import mmap\nmmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)",
     "seccomp refused the system call 'mmap'", "mmap"),
    ("open('/proc/self/mem', 'rb')", f"the kernel refused open('/proc/self/mem'): {EACCES}; "
     f"{LANDLOCK}", None),
    ("open('/proc/1/environ', 'rb')", f"the kernel refused open('/proc/1/environ'): {EACCES}; "
     f"{LANDLOCK}", None),
    # a number no x86-64 kernel has: trapped and reported by its number (it read as "exited
    # with status 159" when the page's number was dropped above 4095)
    ("import ctypes\nctypes.CDLL(None).syscall(5000)",
     "seccomp refused the system call 'nr_5000'", "nr_5000"),
    # x32's getpid: the filter's bad-ABI action kills outright, with no report to read
    ("import ctypes\nctypes.CDLL(None).syscall(0x40000000 | 39)",
     "seccomp killed the worker for a system call it does not name: one of another ABI (x32, "
     "or i386's int $0x80), which the filter ends outright, or one trapped while SIGSYS was "
     "blocked", "unknown"),
]


@needs_landlock
@pytest.mark.parametrize("code,message,syscall", REACH, ids=[c.split("\n")[-1][:40] for c, _, _ in REACH])
def test_kernel_only_full_python_reaches_nothing(tree, code, message, syscall):
    violation(py(tree[1], code, "kernel-only"), message, syscall)


# -- futex commands and clock ids: allowed by argument (issue 24) -----------------------

# futex(word, op, 0, timeout, NULL, 0) on a word that names tid 1 as its owner, with an
# absolute timeout of 0: unfiltered, none of these blocks. The priority-inheritance
# commands (6 LOCK_PI, 7 UNLOCK_PI, 8 TRYLOCK_PI, 11 WAIT_REQUEUE_PI, 12 CMP_REQUEUE_PI,
# 13 LOCK_PI2) reach the thread the word names; 3 REQUEUE, 5 WAKE_OP, 10 WAKE_BITSET
# have no user in a worker. All trap, private (| 128) or not, whatever the upper 32 bits.
FUTEX = ("import ctypes\nw = ctypes.c_int(1)\nt = (ctypes.c_long * 2)(0, 0)\n"
         "ctypes.CDLL(None).syscall(202, ctypes.byref(w), {}, 0, ctypes.byref(t), None, 0)")
FUTEX_OPS = ["6", "6 | 128", "7", "8", "11", "12", "13", "13 | 128 | 256", "3", "5", "10",
             "ctypes.c_long(1 << 32 | 6)"]
# A negative clock id is another process's or thread's CPU clock, (~pid << 3) | type:
# -14 is pid 1's. It would read that process's CPU time and tell which pids exist.
CLOCK = "seccomp refused the system call '{0}'"
CLOCKS = [
    ("import time\ntime.clock_gettime(-14)", "clock_gettime"),
    ("import time\ntime.clock_getres(-14)", "clock_getres"),
    ("import time\ntime.clock_gettime_ns(-14)", "clock_gettime"),
    # TIMER_ABSTIME at 0: unfiltered, it returns at once
    ("import ctypes\nt = (ctypes.c_long * 2)(0, 0)\n"
     "ctypes.CDLL(None).clock_nanosleep(-14, 1, ctypes.byref(t), None)", "clock_nanosleep"),
    # the kernel reads an int: -14 in the low 32 bits, the upper ones clear
    ("import ctypes\nt = (ctypes.c_long * 2)()\n"
     "ctypes.CDLL(None).syscall(228, ctypes.c_long(0xfffffff2), ctypes.byref(t))",
     "clock_gettime"),
    # glibc's clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID) passes the caller's own
    # process clock as -6 (pid 0): negative, so it traps too
    ("import ctypes\nt = (ctypes.c_long * 2)(0, 0)\n"
     "ctypes.CDLL(None).clock_nanosleep(2, 1, ctypes.byref(t), None)", "clock_nanosleep"),
    # 12 and above name no clock
    ("import ctypes\nt = (ctypes.c_long * 2)()\nctypes.CDLL(None).syscall(228, 12, "
     "ctypes.byref(t))", "clock_gettime"),
]


@needs_landlock
@pytest.mark.parametrize("op", FUTEX_OPS)
def test_kernel_only_futex_commands_trap(tree, op):
    violation(py(tree[1], FUTEX.format(op), "kernel-only"),
              "seccomp refused the system call 'futex'", "futex")


@needs_landlock
@pytest.mark.parametrize("code,name", CLOCKS, ids=[c.split("\n")[-1][:40] for c, _ in CLOCKS])
def test_kernel_only_other_clocks_trap(tree, code, name):
    violation(py(tree[1], code, "kernel-only"), CLOCK.format(name), name)


def _clock_calls(nr):
    """What this kernel answers, unconfined, to syscall nr (clock_gettime 228,
    clock_getres 229) for each standard clock id 0..11: 0, or the errno."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    t = (ctypes.c_long * 2)()
    out = []
    for i in range(12):
        ctypes.set_errno(0)
        out.append(0 if libc.syscall(nr, i, ctypes.byref(t)) == 0 else ctypes.get_errno())
    return out


@needs_landlock
def test_kernel_only_waits_and_clocks_still_work(tree):
    h = tree[1]
    # Waits and wakes on our own word: WAIT with a stale value (EAGAIN), WAIT that
    # times out (ETIMEDOUT), WAKE (none woken), WAIT_BITSET private and realtime.
    res = py(h, "import ctypes\nlibc = ctypes.CDLL(None)\nw = ctypes.c_int(5)\n"
                "t = (ctypes.c_long * 2)(0, 1000000)\n"
                "def futex(op, val, timeout=None):\n    ctypes.set_errno(0)\n"
                "    r = libc.syscall(202, ctypes.byref(w), op, val, timeout, None, "
                "ctypes.c_uint(0xffffffff))\n"
                "    return [r, ctypes.get_errno() if r == -1 else 0]\n"
                "[futex(0, 4), futex(128, 4), futex(128, 5, ctypes.byref(t)), futex(1, 1), "
                "futex(129, 1), futex(9 | 128, 4), futex(9 | 128 | 256, 4)]", "kernel-only")
    assert res["ok"] is True and res["value"] == [
        [-1, 11], [-1, 11], [-1, 110], [0, 0], [0, 0], [-1, 11], [-1, 11]], res
    # Every standard clock id reaches the kernel, which answers as it does unconfined
    # (10, CLOCK_SGI_CYCLE, is EINVAL; the alarm clocks 8 and 9 need an RTC).
    code = ("import ctypes\nlibc = ctypes.CDLL(None)\nt = (ctypes.c_long * 2)()\n"
            "def calls(nr):\n    out = []\n    for i in range(12):\n"
            "        ctypes.set_errno(0)\n"
            "        out.append(0 if libc.syscall(nr, i, ctypes.byref(t)) == 0 "
            "else ctypes.get_errno())\n    return out\n[calls(228), calls(229)]")
    want = [_clock_calls(228), _clock_calls(229)]
    assert want[0][:8] == [0] * 8 and want[0][10] == 22 and want[0][11] == 0, want
    res = py(h, code, "kernel-only")
    assert res["ok"] is True and res["value"] == want, res
    # time's own clocks, a lock's timed wait, sleeps (relative, and absolute at 0)
    res = py(h, "import ctypes, threading, time\nl = threading.Lock()\nl.acquire()\n"
                "t = (ctypes.c_long * 2)(0, 1000)\nz = (ctypes.c_long * 2)(0, 0)\n"
                "ns = ctypes.CDLL(None).clock_nanosleep\n"
                "[l.acquire(timeout=0.01), type(time.time()).__name__, time.time() > 1.6e9, "
                "time.process_time() > 0, time.thread_time() > 0, time.monotonic() > 0, "
                "time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID) > 0, "
                "time.clock_getres(time.CLOCK_MONOTONIC), time.sleep(0.001), "
                "ns(1, 0, ctypes.byref(t), None), ns(0, 1, ctypes.byref(z), None)]",
             "kernel-only")
    assert res["ok"] is True and res["value"] == [
        False, "float", True, True, True, True, True, 1e-09, None, 0, 0], res
    # Lua's clocks under a language layer
    res = lua(h, "return {type(os.clock()), os.clock() > 0, os.time() > 1600000000}",
              "standard")
    assert res["ok"] is True and res["value"] == ["number", True, True], res


@needs_data
def test_numpy_under_the_data_preset_still_works(tree):
    res = py(tree[1], "import numpy as np\na = np.arange(12.0).reshape(3, 4)\n"
                      "[float((a @ a.T).sum()), float(np.linalg.norm([3.0, 4.0]))]", "data")
    assert res["ok"] is True and res["value"] == [1134.0, 5.0], res


def _unconfined(nr):
    """This kernel's own answer to syscall nr with no arguments, in a forked child
    with no filter: ("signal", name) or ("errno", e), 0 for success."""
    import ctypes
    pid = os.fork()
    if pid == 0:
        import faulthandler
        faulthandler.disable()  # pytest's: it would print the child's SIGILL
        libc = ctypes.CDLL(None, use_errno=True)
        os._exit(ctypes.get_errno() if libc.syscall(nr) == -1 else 0)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return ("signal", signal.Signals(os.WTERMSIG(st)).name)
    return ("errno", os.WEXITSTATUS(st))


def _as_result(answer):
    """What a kernel-only exec of `libc.syscall(nr)` returns for that answer: a
    crash naming the signal, or [-1, errno]."""
    kind, v = answer
    if kind == "signal":
        return {"kind": "crashed", "layer": "process", "message": f"the worker was killed by {v}",
                "signal": v}
    return [-1 if v else 0, v]


# uretprobe (335, x86-64 since 6.11) and uprobe (336, since 6.18) are called by the
# kernel's own uprobe trampoline. The kernel runs them before any seccomp filter
# (kernel/seccomp.c: uretprobe since 6.14, and 6.12.y/6.13.y stable; uprobe from its
# start), so the worker gets the kernel's own answer, not the filter's ENOSYS: from
# anywhere but the trampoline uretprobe kills with SIGILL and uprobe returns ENXIO.
UPROBES = [(335, "uretprobe", (6, 11), (6, 14)), (336, "uprobe", (6, 18), (6, 18))]


@needs_landlock
@pytest.mark.parametrize("nr,name,added,passthrough", UPROBES, ids=[u[1] for u in UPROBES])
def test_kernel_only_uprobe_syscalls_get_the_kernels_answer(tree, nr, name, added, passthrough):
    version = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    own = _unconfined(nr)
    res = py(tree[1], f"import ctypes\nlibc = ctypes.CDLL(None)\n[libc.syscall({nr}), "
                      "ctypes.get_errno()]", "kernel-only")
    got = (res["value"] if res["ok"] else
           {k: res["error"][k] for k in ("kind", "layer", "message", "signal")})
    enosys = _as_result(("errno", errno.ENOSYS))
    if own == ("errno", errno.ENOSYS):
        assert got == enosys, res  # no such syscall: the filter's answer
        if version >= added:
            pytest.skip(f"{nr} ({name}): kernel {os.uname().release} has no {name} syscall "
                        "(configured out?): nothing passes through seccomp")
        return
    assert own in (("signal", "SIGILL"), ("errno", errno.ENXIO)), own
    if version >= passthrough:
        assert got == _as_result(own), res
        return
    assert got in (_as_result(own), enosys), res
    pytest.skip(f"{nr} ({name}) on kernel {os.uname().release}: whether it passes through "
                "seccomp depends on a stable backport (the worker got "
                f"{'the kernel' if got != enosys else 'the filter'}'s answer)")


@needs_landlock
def test_kernel_only_worker_holds_only_its_channel(tree):
    # 0, 1, 2 (/dev/null) and the channel: no grant fd, no page fd, nothing inherited.
    res = py(tree[1], "import os\nfds = []\nfor fd in range(256):\n    try:\n"
                      "        os.fstat(fd)\n        fds.append(fd)\n    except OSError:\n"
                      "        pass\n[fds[:3], len(fds)]", "bare")
    assert res["ok"] is True and res["value"] == [[0, 1, 2], 4], res


# -- grants: the kernel alone (bare: kernel-only plus grants) ----------------------------

@needs_landlock
def test_bare_grants_read_write_and_refuse(tree):
    d, h = tree
    ro, rw = os.path.join(d, "ro"), os.path.join(d, "rw")
    res = py(h, f"open('{ro}/data.txt').read()", "bare")
    assert res["ok"] is True and res["value"] == "granted\n", res
    res = py(h, f"import os\nwith open('{rw}/out.txt', 'w') as f:\n    f.write('made')\n"
                f"os.mkdir('{rw}/sub')\nos.rename('{rw}/out.txt', '{rw}/moved.txt')\n"
                f"sorted(os.listdir('{rw}'))", "bare")
    assert res["ok"] is True and res["value"] == ["moved.txt", "sub"], res
    with open(os.path.join(rw, "moved.txt")) as f:
        assert f.read() == "made"
    violation(py(h, f"open('{ro}/data.txt', 'a').write('x')", "bare"),
              f"the kernel refused open('{ro}/data.txt'): {EACCES}; {LANDLOCK}")
    violation(py(h, f"open('{d}/canary.txt').read()", "bare"),
              f"the kernel refused open('{d}/canary.txt'): {EACCES}; {LANDLOCK}")
    violation(py(h, f"open('{ro}/../canary.txt').read()", "bare"),
              f"the kernel refused open('{ro}/../canary.txt'): {EACCES}; {LANDLOCK}")
    # link is refused by seccomp (no grant allows it): under kernel-only, a trap that names it.
    violation(py(h, f"import os\nos.link('{d}/canary.txt', '{rw}/hard')", "bare"),
              "seccomp refused the system call 'link'", "link")
    assert not os.path.exists(os.path.join(rw, "hard"))
    # file_bytes is RLIMIT_FSIZE: the write fails with EFBIG, the worker lives.
    res = py(h, f"f = open('{rw}/big', 'wb', buffering=0)\nn = f.write(b'x' * 10000)\n"
                f"try:\n    f.write(b'x')\nexcept OSError as e:\n    err = e.errno\n[n, err]",
             "bare")
    assert res["ok"] is True and res["value"] == [4096, 27], res  # EFBIG
    assert os.path.getsize(os.path.join(rw, "big")) == 4096


# -- the zygote refuses a policy this kernel cannot hold ---------------------------------

def start_zygote(policy_json, env):
    """`tidepool --zygote lua` as the host starts it: control socket on fd 3,
    the policy on fd 4; the host's check skipped, so only the zygote's stands."""
    ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    os.write(w, json.dumps(policy_json).encode())
    os.close(w)

    def fds():
        os.dup2(theirs.fileno(), 3)
        os.dup2(r, 4)
    p = subprocess.Popen([BINARY, "--zygote", "lua"], preexec_fn=fds, close_fds=False, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    theirs.close()
    os.close(r)
    ctl.close()  # EOF: a zygote that starts exits 0 at once
    _, err = p.communicate(timeout=30)
    return p.returncode, err.decode()


def shown(*args):
    out = subprocess.run([BINARY, "policy", "show", *args, "--json"], capture_output=True,
                         text=True, env=ENV, timeout=30)
    assert out.returncode == 0, out.stderr
    p = json.loads(out.stdout)
    p.pop("redact", None)
    return p


def test_zygote_refuses_rather_than_runs_with_less(tree):
    d, _ = tree
    no_ll = dict(ENV, TIDEPOOL_TEST_NO_LANDLOCK="1")
    rc, err = start_zygote(shown("kernel-only"), no_ll)
    assert (rc, err) == (1, "tidepool zygote: policy 'kernel-only' turns the language layer off, "
                            "so the kernel is its only wall, and this kernel has no Landlock "
                            "(Operation not supported): refused rather than run with less\n")
    rc, err = start_zygote(shown(os.path.join(d, "pol", "files.json")), no_ll)
    assert (rc, err) == (1, "tidepool zygote: policy 'files' grants files, which needs Landlock "
                            "to hold them to their paths, and this kernel has none (Operation "
                            "not supported): refused rather than run with less\n")
    assert start_zygote(shown("standard"), no_ll) == (0, "")
