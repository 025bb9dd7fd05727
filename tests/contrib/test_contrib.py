"""contrib/: the systemd units and the logrotate snippet (make contrib-check).

- systemd-analyze verify and security --offline on the units (skipped, saying why,
  without systemd-analyze), and a misspelled directive must be caught;
- the host under the service's hardening, emulated by harden.py (root only): the
  emulation itself holds, and tidepool serves every kind of request under it;
- logrotate -d on the snippet, and a real rotation of a running tidepool's audit
  log with its postrotate's SIGHUP aimed at that one process (root only).
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SYSTEMD = os.path.join(ROOT, "contrib", "systemd")
SERVICE = os.path.join(SYSTEMD, "tidepool@.service")
SOCKET = os.path.join(SYSTEMD, "tidepool.socket")
LOGROTATE = os.path.join(ROOT, "contrib", "logrotate", "tidepool")
HARDEN = os.path.join(HERE, "harden.py")
BINARY = os.path.abspath(os.environ.get("TIDEPOOL") or os.path.join(ROOT, "build", "tidepool"))
INSTALLED = "/usr/local/bin/tidepool"

sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
sys.path.insert(0, HERE)
import harden  # noqa: E402
import tidepool  # noqa: E402

needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze is not installed (Debian: systemd)")
needs_logrotate = pytest.mark.skipif(shutil.which("logrotate") is None,
                                     reason="logrotate is not installed (make deps installs it)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the emulation makes namespaces and "
                                "mounts, and the host drops workers to 65534: root only")


def service_args():
    """ExecStart's options (after the binary)."""
    argv = harden.value(harden.parse_service(SERVICE), "ExecStart").split()
    assert argv[0] == INSTALLED
    return argv[1:]


# ---- systemd-analyze ------------------------------------------------------------------

def units_copy(d, edit=None):
    """Both units in d, ExecStart pointing at the built binary (verify checks that it
    exists), and a man page where MANPATH finds it (verify runs Documentation=man:)."""
    paths = []
    for src in (SOCKET, SERVICE):
        with open(src, encoding="utf-8") as f:
            text = f.read()
        text = text.replace(f"ExecStart={INSTALLED} ", f"ExecStart={BINARY} ")
        if edit and src == SERVICE:
            text = edit(text)
        p = os.path.join(d, os.path.basename(src))
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        paths.append(p)
    os.makedirs(os.path.join(d, "man", "man1"))
    shutil.copy(os.path.join(ROOT, "man", "tidepool.1"), os.path.join(d, "man", "man1"))
    return paths


def verify(d, paths):
    man = [] if shutil.which("man") else ["--man=no"]
    if man:
        print("# man is not installed: Documentation=man:tidepool(1) is not checked")
    return subprocess.run(["systemd-analyze", "verify", *man, *paths], capture_output=True,
                          text=True, cwd=d, env=dict(os.environ, MANPATH=os.path.join(d, "man")),
                          timeout=60)


@needs_analyze
def test_units_verify_clean(tmp_path):
    r = verify(tmp_path, units_copy(str(tmp_path)))
    # A unit systemd would load with a warning (an unknown key is ignored!) fails too.
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@needs_analyze
@pytest.mark.parametrize("edit,says", [
    (lambda t: t.replace("\nNoNewPrivileges=yes", "\nNoNewPrivilegez=yes"),
     "Unknown key 'NoNewPrivilegez'"),
    (lambda t: t.replace("\nProtectSystem=strict", "\nProtectSystem=strictest"),
     "Failed to parse protect system value, ignoring: strictest"),
])
def test_verify_catches_a_mistake(tmp_path, edit, says):
    r = verify(tmp_path, units_copy(str(tmp_path), edit))
    assert r.returncode != 0 or r.stdout or r.stderr, "systemd-analyze verify said nothing"
    assert says in r.stdout + r.stderr


def test_capabilities_are_spelled_right(tmp_path):
    """systemd ignores a capability it does not know, silently (verify too): harden.py
    knows them all, and refuses a misspelled one."""
    keep = harden.bounding_set(harden.parse_service(SERVICE))
    assert sorted(harden.CAPS[c] for c in keep) == ["CHOWN", "DAC_OVERRIDE", "KILL", "SETGID",
                                                     "SETUID"]
    bad = tmp_path / "bad.service"
    bad.write_text(open(SERVICE).read().replace("CAP_DAC_OVERRIDE", "CAP_DAC_OVERIDE"))
    with pytest.raises(ValueError):
        harden.bounding_set(harden.parse_service(str(bad)))


@needs_analyze
def test_security_exposure_stays_low(tmp_path):
    """systemd's own score of the service's exposure (0 best, 10 worst): 1.7 today,
    all of it root's capabilities and the directives contrib/README.md explains."""
    _, service = units_copy(str(tmp_path))
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--man=no",
                        "--threshold=20", service], capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    print(r.stdout.splitlines()[-1] if r.stdout else r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr


def test_socket_and_service_agree():
    sock = open(SOCKET, encoding="utf-8").read()
    assert re.search(r"^Accept=yes$", sock, re.M)
    unit = harden.parse_service(SERVICE)
    assert harden.value(unit, "StandardInput") == harden.value(unit, "StandardOutput") == "socket"
    assert harden.value(unit, "StandardError") == "journal"
    # The audit log is in the one writable directory.
    audit = service_args()[service_args().index("--audit") + 1]
    assert os.path.dirname(audit) == "/var/log/" + harden.value(unit, "LogsDirectory")


# ---- the host under the service's hardening --------------------------------------------

def test_harden_knows_every_directive():
    unit = harden.parse_service(SERVICE)
    unknown = set(unit) - set(harden.EMULATED) - set(harden.NOT_EMULATED) - harden.SETTINGS
    assert not unknown, f"harden.py neither emulates nor explains {unknown}"


@pytest.fixture(scope="module")
def hardened(tmp_path_factory):
    """A wrapper that runs the built binary under the service's hardening; its logs dir."""
    if os.geteuid() != 0:
        pytest.skip("the emulation needs root")
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed: the emulation of SystemCallFilter= "
                    "reads the groups' calls from it (Debian: systemd)")
    d = tmp_path_factory.mktemp("hardened")
    logs = d / "logs"
    logs.mkdir()
    wrapper = str(d / "tidepool")
    # The three binaries as `make install` leaves them, side by side, where the unit's
    # hardening hides nothing: a checkout under /tmp (PrivateTmp), /root or /home
    # (ProtectHome) would be out of the service's sight, as it would be under systemd.
    inst = tempfile.mkdtemp(prefix="tidepool-contrib-", dir="/run")
    os.chmod(inst, 0o755)
    for name in ("tidepool", "tidepool-python", "tidepool-lua"):
        src = os.path.join(os.path.dirname(BINARY), name)
        if os.path.exists(src):
            shutil.copy2(src, inst)
    subprocess.run([sys.executable, HARDEN, SERVICE, "--logs-dir", str(logs), "--wrapper",
                    wrapper, "--", os.path.join(inst, "tidepool")], check=True)
    yield wrapper, logs
    shutil.rmtree(inst, ignore_errors=True)


PROBE = r"""
import ctypes, errno, json, mmap, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def rc(r):
    return 0 if r == 0 else errno.errorcode[ctypes.get_errno()]
out = {}
out["status"] = {k: v.strip() for k, v in (l.split(":", 1) for l in open("/proc/self/status"))
                 if k in ("CapBnd", "CapEff", "NoNewPrivs", "Seccomp")}
out["ns"] = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "uts", "ipc")}
def touch(p):
    try:
        open(p, "w").close(); return 0
    except OSError as e:
        return errno.errorcode[e.errno]
out["write"] = {p: touch(p) for p in ("/usr/tp-probe", "/etc/tp-probe", "/tmp/tp-probe",
                                      "/var/log/tidepool/tp-probe", "/sys/fs/cgroup/tp-probe")}
out["tmp"] = sorted(os.listdir("/tmp"))
out["home"] = sorted(os.listdir("/home")) if os.access("/home", os.R_OK) else "EACCES"
out["dev"] = sorted(os.listdir("/dev"))
out["proc_sys"] = os.path.exists("/proc/sys")
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); out["inet"] = 0
except OSError as e:
    out["inet"] = errno.errorcode[e.errno]
a, b = socket.socketpair(); out["socketpair"] = 0
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC); out["wx"] = 0
except OSError as e:
    out["wx"] = errno.errorcode[e.errno]
out["unshare_user"] = rc(libc.unshare(0x10000000))
out["personality"] = rc(libc.personality(0x0400000))
out["ptrace_traceme"] = rc(libc.ptrace(0, 0, 0, 0))
out["sethostname"] = rc(libc.sethostname(b"x", 1))
out["umask"] = oct(os.umask(0))
print(json.dumps(out))
"""


@needs_root
@needs_analyze
def test_the_emulation_holds(tmp_path):
    """harden.py does what it says, so the tests below are not vacuous: a probe in
    Python, run under it as tidepool would be."""
    outside = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "uts", "ipc")}
    r = subprocess.run([sys.executable, HARDEN, SERVICE, "--logs-dir", str(tmp_path), "--",
                        "/usr/bin/python3", "-c", PROBE], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    keep = harden.bounding_set(harden.parse_service(SERVICE))
    assert int(got["status"]["CapBnd"], 16) == sum(1 << c for c in keep)
    assert got["status"]["NoNewPrivs"] == "1" and got["status"]["Seccomp"] == "2"
    assert all(got["ns"][n] != outside[n] for n in outside), (got["ns"], outside)
    assert got["write"] == {"/usr/tp-probe": "EROFS", "/etc/tp-probe": "EROFS", "/tmp/tp-probe": 0,
                            "/var/log/tidepool/tp-probe": 0, "/sys/fs/cgroup/tp-probe": "EROFS"}
    assert os.path.exists(tmp_path / "tp-probe")  # the logs directory is the one given
    assert got["tmp"] == ["tp-probe"]  # a /tmp of its own
    assert got["home"] == []
    assert set(got["dev"]) <= {"null", "zero", "full", "random", "urandom", "tty", "shm", "pts",
                               "mqueue", "hugepages", "fd", "stdin", "stdout", "stderr"}
    assert got["proc_sys"] is False  # ProcSubset=pid
    assert got["inet"] == "EAFNOSUPPORT" and got["socketpair"] == 0
    assert got["wx"] == "EPERM"
    assert got["unshare_user"] == "EPERM"
    assert got["personality"] == "EPERM"
    assert got["ptrace_traceme"] == "EPERM"  # SystemCallFilter=~@debug
    assert got["sethostname"] == "EPERM"
    assert got["umask"] == "0o77"


@needs_root
def test_doctor_under_the_hardening(hardened):
    wrapper, _ = hardened
    r = subprocess.run([wrapper, "doctor"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^  uid drop +yes", r.stdout, re.M), r.stdout
    assert re.search(r"^  no_new_privs +yes", r.stdout, re.M), r.stdout


@needs_root
def test_the_host_serves_under_the_hardening(hardened):
    """Each thing the service's directives could break: the uid drop (CAP_SETUID,
    CAP_SETGID), cancelling and killing workers of another uid (CAP_KILL), a
    session's workspace in the private /tmp (CAP_CHOWN, CAP_DAC_OVERRIDE), the data
    preset's native modules (MemoryDenyWriteExecute), kernel-only's preloads (ctypes,
    ssl, sockets: RestrictAddressFamilies), and the audit log in LogsDirectory."""
    wrapper, logs = hardened
    with tidepool.Client(wrapper, args=service_args()) as tp:
        assert tp.run("1 + 1").value == 2
        assert tp.run("return 6 * 7", "lua").value == 42
        assert tp.run("import os\nos.getuid()", policy="kernel-only").value == 65534
        with pytest.raises(tidepool.RunTimeout) as e:
            tp.run("while True: pass", timeout=1.0)
        assert e.value.result.error.kind == "cancelled"
        with tp.session() as s:
            assert s.workspace and s.workspace["path"].startswith("/tmp/tidepool-ws-")
            s.put_file("in/data.csv", "x,y\n1,2\n3,4\n")
            s.run("import csv\nrows = list(csv.DictReader(open('in/data.csv')))")
            assert s.run("sum(int(r['y']) for r in rows)").value == 6
            s.run("with open('out.txt', 'w') as f:\n    f.write('from code')")
            assert s.get_file("out.txt") == b"from code"
            assert sorted(f.path for f in s.list_files()) == ["in/data.csv", "out.txt"]
            h = s.run_async("while True: pass")
            time.sleep(0.3)
            h.cancel()
            assert h.result(10).error.kind == "cancelled"
            assert s.run("len(rows)").value == 2  # the session survived its cancel
        if importlib.util.find_spec("numpy") is not None:  # (make deps installs it)
            r = tp.run("import numpy as np\nint(np.arange(10).sum())", policy="data")
            assert r.value == 45, r
        r = tp.run("import ctypes, ssl, socket\nctypes.sizeof(ctypes.c_int)", policy="kernel-only")
        assert r.value == 4, r
        r = tp.run("import socket\nsocket.socket()", policy="kernel-only")
        assert r.error.kind == "sandbox_violation", r  # the worker's own filter, as always
    lines = [json.loads(x) for x in open(logs / "audit.jsonl")]
    assert len(lines) >= 8 and all(x["code_sha256"] for x in lines)


@needs_root
@pytest.mark.skipif(shutil.which("systemd-socket-activate") is None,
                    reason="systemd-socket-activate is not installed (Debian: systemd)")
def test_socket_activation_one_tidepool_per_connection(hardened, tmp_path):
    """What tidepool.socket (Accept=yes) and StandardInput/StandardOutput=socket do,
    with systemd's own tool for it: two connections at once, each its own tidepool
    under the hardening, each answering and exiting 0 when its client half-closes."""
    import socket
    wrapper, _ = hardened
    path = str(tmp_path / "tidepool.sock")
    sa = subprocess.Popen(["systemd-socket-activate", "--inetd", "-a", "-l", path, wrapper,
                           *service_args()], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        conns = []
        for i in range(2):
            c = socket.socket(socket.AF_UNIX)
            c.connect(path)
            conns.append(c)
        for i, c in enumerate(conns):
            for rid, code in ((1, "import os\nos.getpid()"), (2, f"{i} + 40")):
                c.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "sandbox/exec",
                                      "params": {"lang": "python", "code": code}}).encode() + b"\n")
            c.shutdown(socket.SHUT_WR)  # end of file: answer what is in flight, then exit
        answers = []
        for c in conns:
            c.settimeout(30)
            with c.makefile("rb") as f:
                answers.append({m["id"]: m["result"]["value"] for m in map(json.loads, f)})
            c.close()
        assert [a[2] for a in answers] == [40, 41]
    finally:
        time.sleep(0.5)
        sa.terminate()
        log = sa.communicate(timeout=10)[0]
    assert log.count("Spawned ") == 2, log
    assert log.count("died with code 0") == 2, log


def readme_install_block():
    text = open(os.path.join(ROOT, "contrib", "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Install\n.*?^```text\n(.*?)^```$", text, re.S | re.M)
    return [line.split("  #")[0].strip() for line in m.group(1).splitlines()
            if line.split("  #")[0].strip()]


@needs_root
def test_readme_install_commands(tmp_path):
    """contrib/README.md's install commands, run as written from the checkout in a
    throwaway mount namespace: /etc/systemd/system, /etc/logrotate.d and /usr/local are
    empty tmpfs there, and systemctl, groupadd and usermod are stubs that log."""
    cmds = readme_install_block()
    assert cmds[0] == "make install" and "systemctl enable --now tidepool.socket" in cmds
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    calls = tmp_path / "calls"
    for name in ("systemctl", "groupadd", "usermod"):
        (stubs / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n')
        (stubs / name).chmod(0o755)
    script = "\n".join([
        "set -e",
        "mount --make-rprivate /",
        "for d in /etc/systemd/system /etc/logrotate.d /usr/local; do mkdir -p $d; "
        "mount -t tmpfs tmpfs $d; done",
        f"export PATH={stubs}:$PATH",
        *cmds,
        "ls -l /usr/local/bin /etc/systemd/system /etc/logrotate.d /usr/local/share/man/man1",
        "cmp contrib/systemd/tidepool@.service '/etc/systemd/system/tidepool@.service'",
        "cmp contrib/systemd/tidepool.socket /etc/systemd/system/tidepool.socket",
        "cmp contrib/logrotate/tidepool /etc/logrotate.d/tidepool",
        # ExecStart's binary is where make install put it, and runs
        "/usr/local/bin/tidepool --version",
    ])
    r = subprocess.run(["unshare", "-m", "bash", "-c", script], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for name in ("tidepool", "tidepool-python", "tidepool-lua"):
        assert re.search(rf"^-rwxr-xr-x .* {name}$", r.stdout, re.M), r.stdout
    assert re.search(r"^-rw-r--r-- .* tidepool@\.service$", r.stdout, re.M), r.stdout
    assert INSTALLED == "/usr/local/bin/tidepool"
    assert open(calls).read().splitlines() == [
        "groupadd --system tidepool", "systemctl daemon-reload",
        "systemctl enable --now tidepool.socket", "usermod -a -G tidepool alice"]


# ---- logrotate --------------------------------------------------------------------------

@needs_logrotate
def test_logrotate_reads_the_snippet(tmp_path):
    r = subprocess.run(["logrotate", "-d", "-s", str(tmp_path / "state"), LOGROTATE],
                       capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "rotating pattern: /var/log/tidepool/*.jsonl" in out, out
    assert not re.search(r"^error", out, re.M | re.I), out


def snippet_for(logs, pid):
    """The snippet on logs/, its postrotate aimed at pid alone (the real one signals
    every tidepool service, which a test must not)."""
    text = open(LOGROTATE, encoding="utf-8").read()
    text = text.replace("/var/log/tidepool/", f"{logs}/")
    body = re.search(r"postrotate\n(.*?)\n\s*endscript", text, re.S)
    assert body and "systemctl kill --kill-whom=main --signal=HUP 'tidepool@*.service'" in \
        body.group(1) and "pkill -HUP -x tidepool" in body.group(1)
    return text.replace(body.group(1), f"        kill -HUP {pid}")


@needs_logrotate
@needs_root
def test_logrotate_rotates_and_tidepool_reopens(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o750)
    audit = logs / "audit.jsonl"
    with tidepool.Client(BINARY, args=["--audit", str(audit)]) as tp:
        assert tp.run("'before'").value == "before"
        conf = tmp_path / "tidepool.logrotate"
        conf.write_text(snippet_for(logs, tp.pid))
        r = subprocess.run(["logrotate", "-f", "-s", str(tmp_path / "state"), str(conf)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        rotated = [p for p in os.listdir(logs) if p != "audit.jsonl"]
        assert len(rotated) == 1 and re.fullmatch(r"audit\.jsonl-\d{8}-\d+", rotated[0]), rotated
        assert (os.stat(audit).st_mode & 0o777) == 0o600  # `create`, as tidepool makes it
        deadline = time.monotonic() + 10
        while os.path.getsize(audit) == 0 and time.monotonic() < deadline:
            assert tp.run("'after'").value == "after"  # a SIGHUP changes nothing else
    old = [json.loads(x) for x in open(logs / rotated[0])]
    new = [json.loads(x) for x in open(audit)]
    assert len(old) == 1 and new, (old, new)
    assert old[0]["code_sha256"] != new[0]["code_sha256"]
