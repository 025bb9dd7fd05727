"""kernel-only (no language layer): the limits and refusals come from below it.

Memory is RLIMIT_AS (the allocators only measure), CPU is ITIMER_PROF at its
default action with RLIMIT_CPU behind it, the wall clock stays the host's, and
instructions stay the language layer's hook (no kernel counter is deterministic).
Every seccomp refusal traps and names its call. Exact kinds, layers, limits."""
import json
import math
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BINARY, Host, needs_landlock, said

MIB = 1 << 20
MEM = 64 * MIB  # kernel-only's (standard's) memory_bytes

BOMB = {
    "python": "x = []\nwhile True:\n    x.append('x' * 1000000)",
    "lua": "local t = {}\nwhile true do t[#t + 1] = string.rep('x', 1000000) .. #t end",
}
SPIN = {"python": "while True:\n    pass", "lua": "while true do end"}
SLEEP = {"python": "import time\ntime.sleep(30)",
         "lua": "local t = os.time()\nwhile os.time() - t < 30 do end"}


@pytest.fixture(scope="module")
def h():
    d = tempfile.mkdtemp(prefix="tp-konly-")
    # kernel-only without sessions' workspaces: no write grant at all, so seccomp
    # refuses a write open (with workspaces, its filters let it through to Landlock).
    with open(os.path.join(d, "ko-nows.json"), "w") as f:
        json.dump({"name": "ko-nows", "extends": "kernel-only",
                   "session": {"workspace_bytes": 0}}, f)
    host = Host(args=("--policy-dir", d))
    yield host
    host.close()
    shutil.rmtree(d, ignore_errors=True)


def run(h, lang, code, policy="kernel-only", **limits):
    params = {"lang": lang, "code": code, "policy": policy}
    if limits:
        params["limits"] = limits
    r = h.call("sandbox/exec", params, 60)
    assert "result" in r, r
    return r["result"]


def failed(res, kind, layer):
    assert res["ok"] is False and res["value"] is None, res
    e = res["error"]
    assert (e["kind"], e["layer"]) == (kind, layer), res
    return e


# -- memory: RLIMIT_AS under kernel-only, the allocator under a language layer ------------

@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_memory_bomb_is_the_kernels(h, lang):
    e = failed(run(h, lang, BOMB[lang]), "memory_limit", "kernel")
    assert said(e) == "memory limit exceeded", e
    assert e["limit"]["name"] == "memory_bytes" and e["limit"]["limit"] == MEM, e
    assert e["limit"]["used"] >= MEM, e


@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_memory_bomb_under_standard_stays_the_languages(h, lang):
    e = failed(run(h, lang, BOMB[lang], "standard"), "memory_limit", "language")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("memory_bytes", MEM), e


@needs_landlock
def test_the_kernel_gives_about_memory_bytes(h):
    # The allocator holds no limit: about memory_bytes past the exec's start fits,
    # and one block past it is the rlimit's refusal (Python's MemoryError).
    res = run(h, "python", "x = bytearray(56 << 20)\nlen(x)")
    assert res["ok"] is True and res["value"] == 56 * MIB, res
    assert res["usage"]["memory_peak_bytes"] >= 56 * MIB, res
    e = failed(run(h, "python", "x = bytearray(72 << 20)\nlen(x)"), "memory_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("memory_bytes", MEM), e
    assert e["limit"]["used"] >= 72 * MIB, e
    # A request's lower memory_bytes is the kernel's too.
    e = failed(run(h, "python", "x = bytearray(20 << 20)\nlen(x)", memory_bytes=16 * MIB),
               "memory_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("memory_bytes", 16 * MIB), e
    res = run(h, "python", "x = bytearray(12 << 20)\nlen(x)", memory_bytes=16 * MIB)
    assert res["ok"] is True and res["value"] == 12 * MIB, res


@needs_landlock
def test_lua_cannot_catch_the_kernels_refusal(h):
    # Lua's own pcall (kernel-only has no guard wrappers) catches "not enough
    # memory", but the verdict is sticky: a failed malloc trips it at once.
    code = ("local ok, err = pcall(function() local t = {} while true do "
            "t[#t + 1] = string.rep('y', 1000000) .. #t end end)\nreturn tostring(err)")
    e = failed(run(h, "lua", code), "memory_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("memory_bytes", MEM), e


# -- CPU: ITIMER_PROF at its default action, RLIMIT_CPU behind it -------------------------

@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_busy_loop_is_the_kernels(h, lang):
    res = run(h, lang, SPIN[lang], cpu_ms=1000)
    e = failed(res, "cpu_limit", "kernel")
    assert said(e) == "CPU time limit exceeded", e
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e
    assert e["limit"]["used"] >= 1000, e
    assert e.get("signal") is None and e["traceback"] is None, e
    # the kernel's tick-counted timer, read back with the scheduler's exact clock
    assert 900 <= res["usage"]["cpu_ms"] <= 1500, res


@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_busy_loop_under_standard_stays_the_languages(h, lang):
    e = failed(run(h, lang, SPIN[lang], "standard", cpu_ms=1000), "cpu_limit", "language")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e


# cpu_ms 1000: RLIMIT_CPU's soft limit is the next whole second of CPU time past
# cpu_ms from the exec's start (SIGXCPU: within cpu_ms rounded up to a second + 1 s),
# its hard limit a second more (SIGKILL).
DODGES = [
    ("import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\nwhile True:\n    pass", 2),
    ("import signal\nsignal.signal(signal.SIGPROF, lambda *a: None)\nwhile True:\n    pass", 2),
    ("import signal\nsignal.setitimer(signal.ITIMER_PROF, 0)\nwhile True:\n    pass", 2),
    ("import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
     "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass", 3),
]


@needs_landlock
@pytest.mark.parametrize("code,seconds", DODGES,
                         ids=["ignore-SIGPROF", "catch-SIGPROF", "disarm", "ignore-both"])
def test_rlimit_cpu_stands_behind_the_timer(h, code, seconds):
    res = run(h, "python", code, cpu_ms=1000, wall_ms=10000)
    e = failed(res, "cpu_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e
    assert res["usage"]["cpu_ms"] <= seconds * 1000 + 300, res
    assert res["usage"]["wall_ms"] < 10000, res


@needs_landlock
def test_rlimit_cpu_follows_the_requests_cpu_ms(h):
    # cpu_ms 2500: SIGXCPU at 3 s, the hard limit 4 s; the ceiling (5 s) is not the bound.
    code = DODGES[3][0]
    res = run(h, "python", code, cpu_ms=2500, wall_ms=10000)
    e = failed(res, "cpu_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 2500), e
    assert math.ceil(2500 / 1000) * 1000 <= res["usage"]["cpu_ms"] + 300, res
    assert res["usage"]["cpu_ms"] <= 4300, res


# -- the wall clock stays the host's; instructions stay the language layer's ------------

@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_wall_clock_is_the_hosts(h, lang):
    # Python sleeps (no CPU); Lua has no sleep and spins on os.time(), under a CPU
    # budget larger than its wall clock.
    res = run(h, lang, SLEEP[lang], wall_ms=1000, cpu_ms=5000)
    e = failed(res, "timeout", "host")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("wall_ms", 1000), e


@needs_landlock
@pytest.mark.parametrize("lang,code", [("python", "while True:\n    pass"),
                                       ("lua", "while true do end")])
def test_instructions_are_the_language_layers_even_here(h, lang, code):
    e = failed(run(h, lang, code, instructions=10000), "instruction_limit", "language")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("instructions", 10000), e


def test_policy_show_says_who_enforces_each_limit():
    out = subprocess.run([BINARY, "policy", "show", "kernel-only"], capture_output=True,
                         text=True, check=True).stdout
    assert "instructions    0 (off): counted by the language layer's hook, even here" in out, out
    assert "memory_bytes    67108864: the kernel's (RLIMIT_AS)" in out, out
    assert "cpu_ms          5000: the kernel's (ITIMER_PROF, RLIMIT_CPU behind it)" in out, out
    std = subprocess.run([BINARY, "policy", "show", "standard"], capture_output=True,
                         text=True, check=True).stdout
    assert "memory_bytes    67108864\n" in std and "RLIMIT_AS)" not in std, std


# -- every seccomp refusal names its call ---------------------------------------------------

def trapped(res, name, nr):
    e = failed(res, "sandbox_violation", "kernel")
    assert (said(e), e["syscall"], e["syscall_nr"], e["line"]) == (
        f"seccomp refused the system call '{name}'", name, nr, None), res


@needs_landlock
def test_subprocess_traps_at_its_pipes(h):
    trapped(run(h, "python", "import subprocess\nsubprocess.run(['id'])"), "pipe2", 293)


@needs_landlock
def test_a_write_open_traps_without_a_write_grant(h):
    trapped(run(h, "python", "open('/tmp/x', 'w')", "ko-nows"), "openat", 257)
    trapped(run(h, "lua", "return io.open('/tmp/x', 'w')", "ko-nows"), "openat", 257)
    # kernel-only's sessions have workspaces: its seccomp lets write opens through
    # to Landlock, whose EACCES the runtime names with the path.
    e = failed(run(h, "python", "open('/tmp/x', 'w')"), "sandbox_violation", "kernel")
    assert said(e) == ("the kernel refused open('/tmp/x'): Permission denied (EACCES); "
                            "Landlock allows no file outside the policy's grants"), e
    assert "syscall_nr" not in e, e
    e = failed(run(h, "lua", "return io.open('/tmp/x', 'w')"), "sandbox_violation", "kernel")
    assert said(e).startswith("the kernel refused io.open('/tmp/x'): Permission denied"), e


@needs_landlock
def test_a_refusal_nothing_catches(h):
    code = ("import os\ntry:\n    os.pipe()\nexcept OSError as e:\n    print('caught', e)\n"
            "'leaked'")
    res = run(h, "python", code)
    trapped(res, "pipe2", 293)
    assert res["stdout"] == "", res


# -- a session's exec of each limit ----------------------------------------------------------

def open_session(h, lang, **limits):
    params = {"lang": lang, "policy": "kernel-only"}
    if limits:
        params["limits"] = limits
    r = h.call("sandbox/session/open", params)
    assert "result" in r, r
    return r["result"]["session_id"]


def sx(h, sid, code, **limits):
    params = {"session_id": sid, "code": code}
    if limits:
        params["limits"] = limits
    r = h.call("sandbox/exec", params, 60)
    assert "result" in r, r
    return r["result"]


@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_session_memory_is_the_kernels(h, lang):
    sid = open_session(h, lang)
    assert sx(h, sid, "y = 41")["ok"] is True
    res = sx(h, sid, BOMB[lang])
    e = failed(res, "memory_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("memory_bytes", MEM), e
    assert e["limit"]["used"] >= MEM, e
    h.call("sandbox/session/close", {"session_id": sid})


@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_session_cpu_is_the_kernels(h, lang):
    sid = open_session(h, lang)
    assert sx(h, sid, "y = 41")["ok"] is True
    res = sx(h, sid, SPIN[lang], cpu_ms=1000)
    e = failed(res, "cpu_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e
    assert res["session_lost"] is True, res  # the kernel ended the worker, and its state
    assert res["usage"]["cpu_ms"] <= 1500, res


def host_may_raise_limits():
    """CAP_SYS_RESOURCE in the host's (this process's) effective set: then the host
    sets a session worker's hard RLIMIT_CPU per exec; without it, it watches."""
    with open("/proc/self/status") as f:
        eff = int(next(ln for ln in f if ln.startswith("CapEff:")).split()[1], 16)
    return bool(eff & (1 << 24))


@needs_landlock
def test_session_cpu_dodge_is_still_the_kernels(h):
    # The worker sets its own soft RLIMIT_CPU per exec: SIGXCPU at cpu_ms rounded up.
    sid = open_session(h, "python")
    assert sx(h, sid, "y = 41")["ok"] is True
    res = sx(h, sid, DODGES[0][0], cpu_ms=1000)
    e = failed(res, "cpu_limit", "kernel")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e
    assert res["usage"]["cpu_ms"] <= 2300 and res["session_lost"] is True, res


@needs_landlock
def test_session_cpu_dodge_of_both_signals_meets_the_hard_bound(h):
    # SIGXCPU ignored too: the hard limit of a session's worker only the host can
    # raise between execs, so the host sets it (CAP_SYS_RESOURCE: the kernel's SIGKILL)
    # or reads the worker's CPU and kills it at the same bound (the host's).
    sid = open_session(h, "python")
    assert sx(h, sid, "y = 41")["ok"] is True
    res = sx(h, sid, DODGES[3][0], cpu_ms=1000)
    e = failed(res, "cpu_limit", "kernel" if host_may_raise_limits() else "host")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("cpu_ms", 1000), e
    assert res["usage"]["cpu_ms"] <= 3600 and res["session_lost"] is True, res


@needs_landlock
@pytest.mark.parametrize("lang", ["python", "lua"])
def test_session_wall_clock_is_the_hosts(h, lang):
    sid = open_session(h, lang)
    res = sx(h, sid, SLEEP[lang], wall_ms=1000, cpu_ms=5000)
    e = failed(res, "timeout", "host")
    assert (e["limit"]["name"], e["limit"]["limit"]) == ("wall_ms", 1000), e
    h.call("sandbox/session/close", {"session_id": sid})
