"""The process and kernel layers seen from outside: what a worker is, what it
holds, and that what it was refused did not happen."""
import os
import signal
import time

import pytest

from conftest import (Host, assert_healthy, cpu_ticks, dying, proc_read, status_field,
                      wait_spinning, wait_warm_workers)

CANARY = "tidepool-canary-7f3e9a"


def test_every_worker_is_locked_down(host):
    assert_healthy(host)
    ws = wait_warm_workers(host, 2)
    for pid in ws:
        assert status_field(pid, "Seccomp") == "2"
        assert status_field(pid, "NoNewPrivs") == "1"
        assert status_field(pid, "Uid").split()[:3] == ["65534"] * 3
        assert status_field(pid, "CapEff") == "0000000000000000"
        assert status_field(pid, "PPid") == str(host.proc.pid)  # the host reaps them


def test_worker_fds_and_stdout(host):
    pid = wait_warm_workers(host)[0]
    fds = sorted(int(f) for f in os.listdir(f"/proc/{pid}/fd"))
    targets = {f: os.readlink(f"/proc/{pid}/fd/{f}") for f in fds}
    # 0/1/2 are /dev/null: a worker's own stdout cannot reach the client.
    assert [targets[0], targets[1], targets[2]] == ["/dev/null"] * 3
    others = [t for f, t in targets.items() if f > 2]
    assert len(others) == 1 and others[0].startswith("socket:")


def test_worker_rlimits(host):
    pid = wait_warm_workers(host)[0]
    limits = open(f"/proc/{pid}/limits").read().splitlines()
    row = {l[:26].strip(): l[26:].split() for l in limits[1:]}
    assert row["Max file size"][:2] == ["0", "0"]
    assert row["Max core file size"][:2] == ["0", "0"]
    assert row["Max open files"][:2] == ["8", "8"]
    assert row["Max address space"][0] != "unlimited"
    assert row["Max cpu time"][0] != "unlimited"


def test_environment_never_reaches_zygote_or_workers():
    h = Host(env={"PATH": "/usr/bin:/bin", "SECRET_API_KEY": CANARY})
    try:
        assert_healthy(h)
        z = h.zygote_pid()
        assert z is not None
        assert open(f"/proc/{z}/environ", "rb").read() == b""
        for pid in wait_warm_workers(h):
            env = open(f"/proc/{pid}/environ", "rb").read()
            assert CANARY.encode() not in env
        for code in ["return os.getenv and os.getenv('SECRET_API_KEY')",
                     "local t = {} for k, v in pairs(_G) do t[#t+1] = tostring(k) .. tostring(v) end return table.concat(t, ' ')",
                     "return _ENV.SECRET_API_KEY"]:
            h.exec(code)
        assert all(CANARY.encode() not in line for line in h.lines)
    finally:
        h.close()


def test_worker_killed_by_signal_is_crashed(host):
    idle = {p: t for p in wait_warm_workers(host, 2) if (t := cpu_ticks(p)) is not None}
    host.send({"jsonrpc": "2.0", "id": "spin", "method": "sandbox/exec",
               "params": {"lang": "lua", "code": "print('partial') while true do end"}})
    # The exec goes to a warm worker: the one whose CPU time grows.
    victim = wait_spinning(idle)
    os.kill(victim, signal.SIGSEGV)
    r = host.reply("spin")["result"]
    assert r["ok"] is False
    assert (r["error"]["kind"], r["error"]["layer"]) == ("crashed", "process")
    assert r["error"]["signal"] == "SIGSEGV"
    assert r["stdout"] == "partial\n"
    assert_healthy(host)


def test_zygote_death_is_survived(host):
    assert_healthy(host)
    z = host.zygote_pid()
    os.kill(z, signal.SIGKILL)
    time.sleep(0.1)
    for _ in range(5):
        assert_healthy(host)
    assert host.zygote_pid() not in (None, z)


def test_no_stray_processes_after_hostile_load(host):
    for code in ["while true do end", "return string.rep('x', 1 << 30)", "error('x')"]:
        host.exec(code, limits={"cpu_ms": 100, "memory_bytes": 1 << 20})
    assert_healthy(host)
    # The workers used above were killed, and exit at background priority: on a
    # busy machine that takes a while. Count once none is on its way out (a stray
    # process stays, and is counted after the deadline).
    deadline = time.monotonic() + 30
    while True:
        kids = host.children()
        if (len(kids) <= 3 and not any(dying(p) for p in kids)) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # The zygote, the warm pool (2) and nothing else.
    assert len(kids) <= 3, kids
    for pid in kids:
        assert open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"tidepool")


def test_each_zygote_runs_its_own_build_when_beside_the_host(host):
    """tidepool-python (CPython's non-PIC build) for Python's zygote, tidepool-lua
    (no CPython mapped) for Lua's; without them, the host's own binary."""
    here = os.path.dirname(os.path.realpath(host.proc.args[0]))
    r = host.call("sandbox/exec", {"lang": "python", "code": "6*7"})
    assert r["result"]["value"] == 42
    exes = set()
    for p in host.zygotes():
        try:
            exes.add(os.readlink(f"/proc/{p}/exe"))
        except (FileNotFoundError, ProcessLookupError):
            pass
    want = set()
    for name in ("tidepool-python", "tidepool-lua"):
        sibling = os.path.join(here, name)
        want.add(sibling if os.access(sibling, os.X_OK) else os.path.realpath(host.proc.args[0]))
    assert exes == want, exes
    for p in host.zygotes():
        if os.readlink(f"/proc/{p}/exe").endswith("tidepool-lua"):
            maps = open(f"/proc/{p}/maps").read()
            assert "libpython" not in maps  # the point of it


def test_python_workers_are_locked_down_too(host):
    assert host.call("sandbox/exec", {"lang": "python", "code": "1"})["result"]["value"] == 1
    pyz = [p for p in host.zygotes() if b"python" in (proc_read(p, "cmdline") or b"")]
    assert len(pyz) == 1
    zcmd = proc_read(pyz[0], "cmdline")
    # The Python pool is warm once Python has been used (a while on a slow machine).
    # Workers are cloned from the zygote's image: same cmdline, comm tp-worker.
    workers = wait_warm_workers(host, 1, pred=lambda p: proc_read(p, "cmdline") == zcmd,
                                what="Python worker")
    for pid in workers:
        assert status_field(pid, "Seccomp") == "2"
        assert status_field(pid, "NoNewPrivs") == "1"
        assert status_field(pid, "Uid").split()[:3] == ["65534"] * 3
        assert open(f"/proc/{pid}/environ", "rb").read() == b""
    # The zygote itself runs under the zygote filter (one layer), workers add the seal.
    assert status_field(pyz[0], "Seccomp") == "2"
    if status_field(workers[0], "Seccomp_filters") is None:
        pytest.skip("kernel before 5.9: /proc/<pid>/status has no Seccomp_filters to count the layers")
    assert status_field(workers[0], "Seccomp_filters") == "2"
