"""Policies end to end: presets, operator files, tighten-only, file grants, the
kernel check, rate limits, redaction, the audit log, and the commands for people
(`run`, `policy`, `doctor`). Every verdict is checked by kind, layer and message."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import BINARY, Host, needs_landlock, said

ENV = {"PATH": "/usr/bin:/bin"}
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
LIMITS = {  # name: (standard's ceiling, a lower value that still runs `return 1`)
    "memory_bytes": (67108864, 8 << 20),
    "instructions": (None, 100000),
    "cpu_ms": (5000, 1000),
    "wall_ms": (10000, 5000),
    "output_bytes": (1048576, 16),
    "result_bytes": (1048576, 64),
    "result_depth": (64, 4),
}


def run(*args, stdin=None, env=None):
    return subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=env or ENV)


@pytest.fixture
def world_dir():
    """A directory tree workers (uid 65534 under root) can traverse."""
    d = tempfile.mkdtemp(prefix="tp-policy-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write_policy(d, name, body):
    os.makedirs(os.path.join(d, "pol"), exist_ok=True)
    path = os.path.join(d, "pol", name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, **body}, f, indent=2)
    return path


def err(r):
    return r["error"]["kind"], r["error"]["layer"], said(r["error"])


# -- presets: the same attack, stopped by different layers ------------------------------

ATTACKS = [
    ("python", "print(open('/etc/passwd').read())",
     ("policy_violation", "language", "open is not available in the sandbox (policy strict: no files)"),
     "the kernel refused open('/etc/passwd'): Permission denied (EACCES); Landlock allows no file outside the policy's grants"),
    ("lua", "print(io.open('/etc/passwd'):read('a'))",
     ("policy_violation", "language", "io.open is not available in the sandbox (policy strict: no files)"),
     "the kernel refused io.open('/etc/passwd'): Permission denied (EACCES); Landlock allows no file outside the policy's grants"),
    ("lua", "return os.execute('id')",
     ("policy_violation", "language", "os.execute is not available in the sandbox (policy strict: no processes)"),
     # kernel-only traps a new process: the worker dies in the call, named by the host
     "seccomp refused the system call 'clone'"),
    ("python", "import os\nos.system('id')",
     ("policy_violation", "language", "import of module 'os' is not allowed in the sandbox (policy strict: no processes or files); allowed: math, json, re, random, collections, itertools, functools, statistics, fractions, string, heapq, bisect, operator, copy"),
     "seccomp refused the system call 'clone'"),
]


@needs_landlock
@pytest.mark.parametrize("lang,code,strict,kernel", ATTACKS, ids=[a[1][:30] for a in ATTACKS])
def test_same_attack_different_layers(shared_host, lang, code, strict, kernel):
    r = shared_host.exec(code, lang=lang, policy="strict")
    assert r["ok"] is False and err(r) == strict, r
    assert "root:" not in r["stdout"]
    r = shared_host.exec(code, lang=lang, policy="kernel-only")
    assert r["ok"] is False and err(r) == ("sandbox_violation", "kernel", kernel), r
    assert "root:" not in r["stdout"]


@needs_landlock
def test_presets_allow_what_they_say(shared_host):
    r = shared_host.exec("return os.time() > 0", policy="standard")
    assert r["ok"] is True and r["value"] is True, r
    r = shared_host.exec("return os.time()", policy="strict")
    assert err(r) == ("policy_violation", "language",
                      "os.time is not available in the sandbox (policy strict: no clocks)")
    r = shared_host.exec("import hashlib\nhashlib.sha256(b'x').hexdigest()[:8]", lang="python",
                         policy="permissive")
    assert r["ok"] is True and r["value"] == "2d711642", r
    r = shared_host.exec("import zlib\nzlib.decompress(zlib.compress(b'ab'))", lang="python",
                         policy="standard")
    assert r["ok"] is True and r["value"] == "b'ab'", r
    r = shared_host.exec("import zlib", lang="python", policy="strict")
    assert r["error"]["kind"] == "policy_violation", r
    r = shared_host.exec("import subprocess", lang="python", policy="standard")
    assert r["error"]["kind"] == "policy_violation", r
    r = shared_host.exec("import hashlib", lang="python", policy="strict")
    assert r["error"]["kind"] == "policy_violation", r
    # kernel-only: everything installed, read from the interpreters' own directories.
    r = shared_host.exec("import email.utils\nemail.utils.quote('a\"b')", lang="python",
                         policy="kernel-only")
    assert r["ok"] is True and r["value"] == 'a\\"b', r
    r = shared_host.exec("return debug.traceback ~= nil and string.dump ~= nil", policy="kernel-only")
    assert r["ok"] is True and r["value"] is True, r
    # Limits hold in every preset: strict counts instructions, kernel-only keeps the CPU budget.
    r = shared_host.exec("while true do end", policy="strict")
    assert r["error"]["kind"] == "instruction_limit" and r["error"]["limit"]["limit"] == 10000000, r
    r = shared_host.exec("while true do end", policy="kernel-only", limits={"cpu_ms": 200})
    assert r["error"]["kind"] == "cpu_limit", r


@needs_landlock
def test_kernel_only_refusals_are_sticky(shared_host):
    for lang, code, what in [
        ("lua", "pcall(io.open, '/etc/passwd') return 1", "io.open('/etc/passwd')"),
        ("python", "try:\n    open('/etc/passwd')\nexcept BaseException:\n    pass\n1", "open('/etc/passwd')"),
    ]:
        r = shared_host.exec(code, lang=lang, policy="kernel-only")
        assert r["ok"] is False and r["error"]["kind"] == "sandbox_violation", r
        assert r["error"]["layer"] == "kernel" and what in said(r["error"]), r


@needs_landlock
def test_kernel_only_creates_no_file(shared_host):
    path = "/tmp/tp-kernel-only-%d" % os.getpid()
    for lang, code in [("lua", "return io.open('%s', 'w')" % path),
                       ("python", "open('%s', 'w').write('x')" % path)]:
        r = shared_host.exec(code, lang=lang, policy="kernel-only")
        assert r["error"]["kind"] == "sandbox_violation" and r["error"]["layer"] == "kernel", r
        assert not os.path.exists(path)


# -- policy files, validation, the kernel check ----------------------------------------------

def test_bad_policy_at_start_exits_2_with_the_place(world_dir):
    path = os.path.join(world_dir, "bad.json")
    with open(path, "w") as f:
        f.write('{\n  "name": "bad",\n  "limits": {"cpu_ms": 900000}\n}\n')
    p = run("--policy", path, stdin="")
    assert p.returncode == 2
    assert p.stderr == "tidepool: %s:3:14: limits.cpu_ms: 900000 is out of range (1 .. 600000)\n" % path
    assert p.stdout == ""
    with open(path, "w") as f:
        f.write('{"name": "bad", "colour": 1}')
    p = run("--policy-dir", world_dir, stdin="")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("tidepool: %s:1:17: unknown key 'colour' (known: name, " % path), p.stderr


THREE_ERRORS = """{
  "python": {"modules": ["math", "os"]},
  "name": "three",
  "limits": {"cpu_ms": 900000},
  "colour": "blue"
}
"""


def test_check_reports_every_error_in_order(world_dir):
    """Three independent errors: three lines, in the file's order (found in another:
    unknown keys first), exit 2; the server prints the same lines."""
    path = os.path.join(world_dir, "three.json")
    with open(path, "w") as f:
        f.write(THREE_ERRORS)
    want = ("tidepool: {0}:2:34: python.modules[1]: module 'os' cannot be preloaded: it is not "
            "one tidepool can offer inside its language layer (`tidepool policy show "
            "permissive` lists them all)\n"
            "tidepool: {0}:4:14: limits.cpu_ms: 900000 is out of range (1 .. 600000)\n"
            "tidepool: {0}:5:3: unknown key 'colour' (known: name, description, extends, "
            "languages, limits, language_layer, lua, python, filesystem, tools, session, "
            "isolation, rate, redact)\n").format(path)
    p = run("policy", "check", path)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", want)
    p = run("--policy", path, stdin="")
    assert (p.returncode, p.stdout, p.stderr) == (2, "", want)
    # A directory: every bad file's errors, in name order; a good one between does not hide them.
    d = os.path.join(world_dir, "dir")
    os.makedirs(d)
    shutil.copy(path, os.path.join(d, "a.json"))
    write_policy(d, "b", {"extends": "standard"})
    with open(os.path.join(d, "c.json"), "w") as f:
        f.write('{"name": "c", "tools": ["a b"]}')
    p = run("--policy-dir", d, stdin="")
    a = os.path.join(d, "a.json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == want.replace(path, a) + (
        "tidepool: %s/c.json:1:25: tools[0]: 'a b' is not a tool name: 1 to 64 of A-Z, a-z, "
        "0-9, '_', '-', '.'\n" % d)


def test_check_error_list_is_bounded(world_dir):
    path = os.path.join(world_dir, "many.json")
    with open(path, "w") as f:
        json.dump({"name": "many", **{"k%03d" % i: i for i in range(150)}}, f, indent=1)
    p = run("policy", "check", path)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and p.stdout == ""
    assert len(lines) == 101, lines[-3:]
    assert all(l.startswith("tidepool: %s:%d:2: unknown key 'k%03d' " % (path, i + 3, i))
               for i, l in enumerate(lines[:100])), lines[:3]
    assert lines[100] == "tidepool: ... 50 more errors"


PRESET_NAMES = ["standard", "strict", "permissive", "kernel-only", "data"]
POLICIES = os.path.join(os.path.dirname(__file__), "..", "..", "policies")


@needs_landlock
@pytest.mark.parametrize("name", PRESET_NAMES)
def test_shipped_preset_files_pass_check(name):
    """Each policies/*.json passes on its own merits (exit 0), and is the built-in preset."""
    path = os.path.join(POLICIES, name + ".json")
    p = run("policy", "check", path)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ("tidepool: %s: note: identical to the built-in preset '%s', which every "
                        "server has: name the preset, not this file\n" % (path, name))
    out = p.stdout.splitlines()
    assert out[0].startswith("policy %s (%s" % (name, path)), out[0]
    assert out[-1] == "verdict: this kernel can enforce policy '%s'" % name


def test_shipped_policies_are_the_presets():
    """Every policies/*.json is a preset, and every preset has its file."""
    files = sorted(f[:-5] for f in os.listdir(POLICIES) if f.endswith(".json"))
    assert files == sorted(PRESET_NAMES)
    p = run("policy", "list")
    assert [l.split()[0] for l in p.stdout.splitlines()] == PRESET_NAMES


def test_a_file_named_like_a_preset(world_dir):
    """check judges it alone and says how it stands to the preset; a server refuses it
    (a copy as much as another policy: the preset's name means the preset)."""
    d = os.path.join(world_dir, "dir")
    os.makedirs(d)
    path = os.path.join(d, "strict.json")
    shutil.copy(os.path.join(POLICIES, "strict.json"), path)
    p = run("--policy-dir", d, stdin="")
    copy = ("tidepool: %s: a policy named 'strict' is already loaded (from built-in): this file "
            "is a copy of the preset, which is always there: leave the file out and name the "
            "preset\n" % path)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", copy)
    p = run("--policy", path, stdin="")
    assert (p.returncode, p.stdout, p.stderr) == (2, "", copy)
    with open(path, "w") as f:
        f.write('{"name": "strict", "extends": "strict", "limits": {"cpu_ms": 100}}')
    p = run("policy", "check", path)
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "tidepool: %s:1:1: policy 'strict' extends itself\n" % path)
    with open(path, "w") as f:
        f.write('{"name": "strict", "extends": "standard", "limits": {"cpu_ms": 100}}')
    p = run("policy", "check", path)
    assert p.returncode in (0, 1) and "  cpu_ms          100" in p.stdout.splitlines()
    assert p.stderr == ("tidepool: %s: note: differs from the built-in preset 'strict': a server "
                        "refuses it under that name (rename it; it may extend 'strict')\n" % path)
    p = run("--policy-dir", d, stdin="")
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "tidepool: %s: a policy named 'strict' is already loaded (from built-in): a "
        "preset's name always means the preset: rename this policy (it may extend 'strict')\n"
        % path)


def test_policy_file_in_the_policy_dir(world_dir):
    """--policy naming a file --policy-dir already loaded is that policy, not a second one;
    `policy check` of a file in the directory checks it without a note."""
    path = write_policy(world_dir, "tiny", {"extends": "standard", "limits": {"output_bytes": 8}})
    d = os.path.dirname(path)
    p = run("run", "--policy-dir", d, "--policy", os.path.join(d, ".", "tiny.json"),
            "--lang", "lua", "-", stdin="print('0123456789')")
    assert p.returncode == 1 and p.stderr.startswith("error: output_limit"), p.stderr
    p = run("policy", "check", path, "--policy-dir", d)
    assert p.returncode in (0, 1) and p.stderr == "", p.stderr


def test_help_names_every_preset():
    """--help lists the presets from the compiled-in catalog (data was missing once)."""
    p = run("--help")
    assert p.returncode == 0
    assert ("the presets are standard (the default), strict, permissive, kernel-only and data.\n"
            in p.stdout), p.stdout
    for name in PRESET_NAMES:
        assert " %s" % name in p.stdout.split("the presets are")[1]


def test_operator_policy_named_by_a_request(world_dir):
    write_policy(world_dir, "tiny", {"extends": "standard", "limits": {"output_bytes": 8},
                                     "languages": ["lua"]})
    h = Host(args=("--policy-dir", os.path.join(world_dir, "pol")))
    try:
        names = [p["name"] for p in h.call("sandbox/policy/list")["result"]["policies"]]
        assert names == ["standard", "strict", "permissive", "kernel-only", "data", "tiny"]
        r = h.exec("print('0123456789')", policy="tiny")
        assert r["error"]["kind"] == "output_limit" and r["error"]["limit"]["limit"] == 8, r
        r = h.call("sandbox/exec", {"lang": "python", "code": "1", "policy": "tiny"})
        assert r["error"] == {"code": -32602, "message": "policy 'tiny' does not allow Python 3.11"}
        r = h.call("sandbox/exec", {"lang": "lua", "code": "1", "policy": "nope"})
        assert said(r["error"]) == "unknown policy 'nope' (sandbox/policy/list names them)"
        g = h.call("sandbox/policy/get", {"name": "tiny"})["result"]
        assert g["limits"]["output_bytes"] == 8 and g["languages"] == ["lua"]
        assert g["source"].endswith("/pol/tiny.json") and g["default"] is False
        assert g["redact"] == {"strings": 0, "patterns": 0, "env": []}
    finally:
        h.close()


def test_kernel_check_refuses_rather_than_runs_with_less():
    env = dict(ENV, TIDEPOOL_TEST_NO_LANDLOCK="1")
    p = run("--policy", "kernel-only", stdin="", env=env)
    assert p.returncode == 2
    assert "policy 'kernel-only' turns the language layer off, so the kernel is its only wall, " \
           "and this kernel has no Landlock" in p.stderr
    h = Host(env=env)
    try:
        r = h.call("sandbox/exec", {"lang": "python", "code": "1", "policy": "kernel-only"})
        assert r["error"]["code"] == -32602
        assert said(r["error"]).startswith("policy 'kernel-only' turns the language layer off")
        assert h.exec("return 1")["value"] == 1  # the host keeps serving
    finally:
        h.close()


# -- tighten only ---------------------------------------------------------------------

@pytest.mark.parametrize("name", list(LIMITS))
def test_a_request_only_lowers_limits(shared_host, name):
    ceiling, lower = LIMITS[name]
    if ceiling is not None:
        r = shared_host.call("sandbox/exec", {"lang": "lua", "code": "return 1",
                                              "limits": {name: ceiling + 1}})
        assert r["error"] == {"code": -32602, "message":
                              "limit '%s' may only be tightened: %d > ceiling %d (policy 'standard')"
                              % (name, ceiling + 1, ceiling)}
    r = shared_host.exec("return 1", limits={name: lower})
    assert r["ok"] is True, r


def test_lowered_limits_are_enforced(shared_host):
    r = shared_host.exec("while true do end", limits={"instructions": 5000})
    assert r["error"]["limit"] == {"name": "instructions", "limit": 5000, "used": 5000}, r
    r = shared_host.exec("return {{{{{1}}}}}", limits={"result_depth": 4})
    assert r["error"]["limit"]["name"] == "result_depth" and r["error"]["limit"]["limit"] == 4, r
    r = shared_host.exec("print(string.rep('x', 100))", limits={"output_bytes": 16})
    assert r["error"]["kind"] == "output_limit" and len(r["stdout"]) == 16, r
    r = shared_host.exec("while true do end", policy="strict", limits={"cpu_ms": 100})
    assert r["error"]["kind"] in ("cpu_limit", "instruction_limit"), r


# -- file grants -------------------------------------------------------------------------

@pytest.fixture
def grants(world_dir):
    d = world_dir
    for sub in ("in", "out"):
        os.mkdir(os.path.join(d, sub))
        os.chmod(os.path.join(d, sub), 0o777)
    with open(os.path.join(d, "in", "data.txt"), "w") as f:
        f.write("granted data\n")
    with open(os.path.join(d, "canary.txt"), "w") as f:
        f.write("CANARY-outside\n")
    for p in ("in/data.txt", "canary.txt"):
        os.chmod(os.path.join(d, p), 0o644)
    os.symlink(os.path.join(d, "canary.txt"), os.path.join(d, "in", "link"))
    grant = {"read": [os.path.join(d, "in")], "write": [os.path.join(d, "out")], "file_bytes": 4096}
    write_policy(d, "files", {"extends": "standard", "filesystem": grant})
    write_policy(d, "bare", {"extends": "kernel-only", "filesystem": grant})
    h = Host(args=("--policy-dir", os.path.join(d, "pol")))
    yield d, h
    h.close()


@needs_landlock
def test_grants_read_write_and_refuse(grants):
    d, h = grants
    inp, out = os.path.join(d, "in"), os.path.join(d, "out")
    r = h.exec("return io.open('%s/data.txt'):read('a')" % inp, policy="files")
    assert r["ok"] is True and r["value"] == "granted data\n", r
    r = h.exec("open('%s/data.txt').read()" % inp, lang="python", policy="files")
    assert r["ok"] is True and r["value"] == "granted data\n", r
    r = h.exec("local f = io.open('%s/new.txt', 'w') f:write('made') f:close() "
               "return io.open('%s/new.txt'):read('a')" % (out, out), policy="files")
    assert r["ok"] is True and r["value"] == "made", r
    assert open(os.path.join(out, "new.txt")).read() == "made"
    # A read grant is not a write grant: the shim, then the kernel.
    r = h.exec("return io.open('%s/data.txt', 'w')" % inp, policy="files")
    assert err(r) == ("policy_violation", "language",
                      "io.open('%s/data.txt', 'w') is refused: outside the policy's writable file "
                      "grants (policy files)" % inp)
    r = h.exec("open('%s/data.txt', 'a').write('x')" % inp, lang="python", policy="bare")
    assert r["error"]["kind"] == "sandbox_violation" and r["error"]["layer"] == "kernel", r
    assert open(os.path.join(inp, "data.txt")).read() == "granted data\n"
    # file_bytes is RLIMIT_FSIZE: a bigger file stops at it.
    r = h.exec("f = open('%s/big', 'w')\nf.write('x' * 10000)\nf.close()" % out, lang="python",
               policy="files")
    assert r["ok"] is False and os.path.getsize(os.path.join(out, "big")) <= 4096, r


@needs_landlock
@pytest.mark.parametrize("lang,policy,code,kind", [
    ("lua", "files", "return io.open('{d}/in/../canary.txt'):read('a')", "policy_violation"),
    ("python", "files", "open('{d}/in/../canary.txt').read()", "policy_violation"),
    ("python", "files", "open('/proc/self/root{d}/canary.txt').read()", "policy_violation"),
    ("lua", "files", "return io.open('{d}/in/link'):read('a')", "sandbox_violation"),
    ("python", "files", "open('{d}/in/link').read()", "sandbox_violation"),
    # The shim bypassed (kernel-only has none): the kernel alone holds the line.
    ("python", "bare", "open('{d}/canary.txt').read()", "sandbox_violation"),
    ("python", "bare", "open('{d}/in/../canary.txt').read()", "sandbox_violation"),
    ("python", "bare", "open('{d}/in/link').read()", "sandbox_violation"),
    ("python", "bare", "open('/proc/self/root{d}/canary.txt').read()", "sandbox_violation"),
    ("python", "bare", "import os\nos.link('{d}/canary.txt', '{d}/out/hard')", "sandbox_violation"),
    ("python", "bare", "import os\nos.symlink('{d}/canary.txt', '{d}/out/sym')", "sandbox_violation"),
    ("lua", "bare", "return io.open('{d}/canary.txt'):read('a')", "sandbox_violation"),
])
def test_grants_hold_against_escapes(grants, lang, policy, code, kind):
    d, h = grants
    r = h.exec(code.format(d=d), lang=lang, policy=policy)
    assert r["ok"] is False and r["error"]["kind"] == kind, r
    assert r["error"]["layer"] == ("kernel" if kind == "sandbox_violation" else "language"), r
    assert "CANARY" not in json.dumps(r)
    assert not os.path.exists(os.path.join(d, "out", "hard"))
    assert not os.path.exists(os.path.join(d, "out", "sym"))


def test_grant_validation(world_dir):
    rel = write_policy(world_dir, "rel", {"filesystem": {"read": ["data"]}})
    p = run("policy", "check", rel)
    assert p.returncode == 2
    assert p.stderr == ("tidepool: %s:5:7: filesystem.read[0]: 'data' is relative: grants take "
                        "absolute paths\n" % rel)
    nofb = write_policy(world_dir, "nofb", {"filesystem": {"write": [world_dir]}})
    p = run("policy", "check", nofb)
    assert p.returncode == 2
    assert p.stderr == ("tidepool: %s:4:5: policy 'nofb': filesystem.file_bytes must be set "
                        "(1 .. 1073741824) when filesystem.write grants paths\n" % nofb)


# -- rate, redaction, audit --------------------------------------------------------------

def test_rate_limit(world_dir):
    write_policy(world_dir, "slow", {"extends": "standard", "rate": {"per_minute": 3}})
    h = Host(args=("--policy", os.path.join(world_dir, "pol", "slow.json")))
    try:
        for _ in range(3):
            assert h.exec("return 1")["ok"] is True
        r = h.exec("return 1")
        assert r["ok"] is False and r["error"]["kind"] == "rate_limit", r
        assert r["error"]["layer"] == "host"
        assert 0 < r["error"]["retry_after_ms"] <= 60000
        assert said(r["error"]).startswith(
            "rate limit: 3 execs per minute under policy 'slow'; retry in "), r
        t = h.call("tools/call", {"name": "run_lua", "arguments": {"code": "return 1"}})["result"]
        assert t["isError"] is True and t["structuredContent"]["error"]["kind"] == "rate_limit"
    finally:
        h.close()


def test_redaction_everywhere_and_the_audit_log(world_dir):
    audit = os.path.join(world_dir, "audit.log")
    write_policy(world_dir, "secret", {
        "extends": "standard",
        "redact": {"strings": ["hunter2-pass"], "env": ["TP_TEST_TOKEN"],
                   "patterns": ["sk-[a-z0-9]{8}"]},
    })
    env = dict(ENV, TP_TEST_TOKEN="tok-4242-xyz")
    h = Host(env=env, args=("--policy", os.path.join(world_dir, "pol", "secret.json"),
                            "--audit", audit))
    try:
        code = ("print('a hunter2-pass b') io.stderr = nil "
                "local v = {['k-tok-4242-xyz'] = 'sk-abcd1234'} "
                "return v")
        r = h.exec(code)
        assert r["stdout"] == "a [REDACTED] b\n", r
        assert r["value"] == {"k-[REDACTED]": "[REDACTED]"}, r
        r = h.exec("error('leak tok-4242-xyz and sk-abcdefgh')")
        assert said(r["error"]) == "leak [REDACTED] and [REDACTED]", r
        r = h.exec("print('x hunter2-pa')", limits={"output_bytes": 11})  # cut inside the secret
        assert "hunter2" not in r["stdout"], r
        r = h.exec("raise ValueError('hunter2-pass')", lang="python")
        assert said(r["error"]) == "[REDACTED]", r
        assert "hunter2" not in r["error"]["traceback"] and "[REDACTED]" in r["error"]["traceback"]
        r = h.exec("while true do end", limits={"wall_ms": 300, "cpu_ms": 5000})
        assert r["error"]["kind"] in ("timeout", "cpu_limit")
        r = h.exec("return os.execute('id')")
        assert r["error"]["kind"] == "policy_violation"
        r = h.exec("class X:\n    def __index__(self):\n        ba.clear()\n        return 0\n"
                   "ba = bytearray(2 ** 22)\nba.count(X())", lang="python")
        crashed = r["error"]["kind"]
    finally:
        h.close()
    lines = open(audit).read().splitlines()
    assert len(lines) == 7
    recs = [json.loads(l) for l in lines]
    text = open(audit).read()
    assert "hunter2" not in text and "tok-4242" not in text and "sk-abcd" not in text
    assert [r["kind"] for r in recs[:4]] == [None, "runtime_error", "output_limit", "runtime_error"]
    assert recs[0]["ok"] is True and recs[0]["policy"] == "secret" and recs[0]["lang"] == "lua"
    import hashlib
    assert recs[0]["code_sha256"] == hashlib.sha256(code.encode()).hexdigest()
    assert recs[0]["stdout_bytes"] == len("a [REDACTED] b\n")
    assert recs[5]["kind"] == "policy_violation" and recs[5]["layer"] == "language"
    assert recs[5]["refusals"] == ["os.execute is not available in the sandbox (policy secret: no processes)"]
    assert recs[6]["kind"] == crashed and recs[6]["lang"] == "python"
    for r in recs:
        assert set(r) == {"time", "id", "policy", "lang", "code_sha256", "ok", "kind", "layer",
                          "limit", "usage", "tool_calls", "refusals", "stdout_bytes", "stderr_bytes"}
        assert r["time"].endswith("Z") and len(r["time"]) == 24
    assert os.stat(audit).st_mode & 0o777 == 0o600


def test_redact_env_must_be_set(world_dir):
    """An unset redact.env variable: `policy check` reports it at the list element,
    and the server refuses the same file with the same line (one check, in the load)."""
    path = write_policy(world_dir, "needs", {"redact": {"env": ["HOME", "TP_TEST_UNSET_VAR"]}})
    line = ("tidepool: %s:6:7: redact.env[1]: TP_TEST_UNSET_VAR is not set, so its value could "
            "not be redacted\n" % path)
    env = dict(ENV, HOME="/nonexistent")
    p = run("policy", "check", path, env=env)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", line)
    p = run("--policy", path, stdin="", env=env)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", line)
    p = run("--policy-dir", os.path.dirname(path), stdin="", env=env)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", line)
    p = run("run", "--policy", path, "--lang", "lua", "-", stdin="return 1", env=env)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", line)
    # Set (even empty), the file is good for both.
    env["TP_TEST_UNSET_VAR"] = ""
    p = run("policy", "check", path, env=env)
    assert p.returncode in (0, 1) and p.stderr == "", p.stderr
    assert "  redact          0 strings, 0 patterns, 2 environment variables" in p.stdout.splitlines()
    p = run("run", "--policy", path, "--lang", "lua", "-", stdin="return 1", env=env)
    assert p.returncode == 0, p.stderr


# -- the commands for people ----------------------------------------------------------

@needs_landlock
def test_run_for_people(world_dir):
    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("tidepool ")
    for args in (("--help",), ("-h",), ("run", "--help")):
        p = run(*args)
        assert p.returncode == 0 and "usage: tidepool" in p.stdout and p.stderr == "", args
    assert "Python" in run("--help").stdout
    p = run("run", "--bogus", "x.lua")
    assert p.returncode == 2 and "usage: tidepool run" in p.stderr
    p = run("run", "--policy", "strict", os.path.join(EXAMPLES, "attack.py"))
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("error: policy_violation (language layer): open is not available "
                               "in the sandbox (policy strict: no files)\n")
    p = run("run", "--policy", "kernel-only", os.path.join(EXAMPLES, "attack.py"))
    assert p.returncode == 1 and "root:" not in p.stdout
    assert p.stderr.startswith("error: sandbox_violation (kernel layer): the kernel refused "
                               "open('/etc/passwd')")
    p = run("run", "--cpu-ms", "100", "--lang", "lua", "-", stdin="while true do end")
    assert p.returncode == 1
    assert p.stderr.startswith("error: cpu_limit (language layer): CPU time limit exceeded: "
                               "cpu_ms 100 (used "), p.stderr
    p = run("run", "--cpu-ms", "9999", "--lang", "lua", "-", stdin="return 1")
    assert p.returncode == 2
    assert p.stderr == ("tidepool run: limit 'cpu_ms' may only be tightened: 9999 > ceiling 5000 "
                        "(policy 'standard')\n")
    p = run("run", "--input", "n=41", "--input", "who=ada", "--seed", "7", "--json",
            "--lang", "python", "-", stdin="print(who)\nn + 1")
    assert p.returncode == 0
    res = json.loads(p.stdout)
    assert res["value"] == 42 and res["stdout"] == "ada\n"
    p = run("run", os.path.join(EXAMPLES, "hello.lua"))
    assert p.returncode == 0 and p.stdout == "squares\t1 4 9 16 25 36 49 64 81 100\n"
    p = run("run", os.path.join(EXAMPLES, "hello.py"))
    assert p.returncode == 0 and p.stdout == "mean 3.875\n"


@needs_landlock
def test_policy_check_show_list_doctor(world_dir):
    p = run("policy", "check", os.path.join(EXAMPLES, "teaching.json"))
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[0].startswith("policy teaching (") and out[0].endswith("teaching.json, extends kernel-only)")
    # kernel-only's limits say who enforces them: the kernel, the host, the language's hook
    assert "  cpu_ms          2000: the kernel's (ITIMER_PROF, RLIMIT_CPU behind it)" in out
    assert "  wall_ms         5000: the host's clock" in out
    assert "  instructions    0 (off): counted by the language layer's hook, even here" in out
    assert "  off: it refuses nothing (every builtin, every installed module and library);" in out
    assert any(l.startswith("  allowed (") for l in out)
    assert out[-1] == "verdict: this kernel can enforce policy 'teaching'"
    p = run("policy", "show", "strict")
    assert p.returncode == 0 and "  instructions    10000000" in p.stdout.splitlines()
    p = run("policy", "show", "strict", "--json")
    assert json.loads(p.stdout)["limits"]["memory_bytes"] == 33554432
    p = run("policy", "show", "nope")
    assert p.returncode == 2 and p.stderr == "tidepool policy: unknown policy 'nope' (tidepool policy list)\n"
    p = run("policy", "list")
    assert [l.split()[0] for l in p.stdout.splitlines()] == ["standard", "strict", "permissive", "kernel-only", "data"]
    p = run("doctor")
    assert p.returncode == 0 and "seccomp filters" in p.stdout and "Landlock" in p.stdout
