"""The documentation is executed, so it cannot go stale (make doc-check):

- every relative link in the Markdown files resolves, and every #anchor names a heading there;
- how a client ends tidepool is stated word for word alike in --help, the man page, README.md
  and docs/protocol.md;
- every command in a ```console block runs, and its output matches the one shown (`...` in a
  line matches any text, a line of just `...` any lines);
- every line of a ```sh block runs (the block as one bash script, set -e), but the commands
  that are themselves stages of `make test` (which runs this) and the ones in NOT_RUN, each
  with its reason, printed;
- a ```python block followed by a ```text block runs, and prints exactly that text;
- every ```json block parses.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("TIDEPOOL", os.path.join(ROOT, "build", "tidepool"))
DOCS = sorted(
    [os.path.join(ROOT, "README.md")]
    + [os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")]
    + [os.path.join(ROOT, p) for p in ("policies/README.md", "clients/python/README.md",
                                       "contrib/README.md") if os.path.exists(os.path.join(ROOT, p))])

# Commands shown but not run here, each with why. Nothing else may be skipped.
NOT_RUN = {
    r"^make bench\b|\bmake bench$|^BENCH_\S+=.*make bench": "a measurement of minutes, never a test (make bench)",
    r"^make -j2 fuzz FUZZ_SECONDS=600": "ten minutes of fuzzing; `make fuzz` (a stage of make test) runs the same harnesses",
    r"^make SANITIZE=address,undefined$": "the build `make test-sanitize` (a stage of make test) makes",
    r"^make test\b": "make test is the run that runs this test",
}


def _landlock_abi():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset(VERSION)
    return r if r > 0 else 0


# kernel-only (and the teaching policy that extends it) needs Landlock: tidepool refuses it
# without, and tests/proto tests that refusal on every kernel.
if _landlock_abi() == 0:
    NOT_RUN[r"kernel-only|teaching\.json"] = "this kernel has no Landlock, which kernel-only needs"


def rel(path):
    return os.path.relpath(path, ROOT)


def blocks(path):
    """(lang, text, line number, the next block or None) of each fenced block."""
    text = open(path, encoding="utf-8").read()
    found = [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, m.end())
             for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]
    out = []
    for i, (lang, body, line, end) in enumerate(found):
        nxt = found[i + 1] if i + 1 < len(found) else None
        adjacent = nxt is not None and text[end:text.find("```", end)].strip() == ""
        out.append((lang, body, line, nxt if adjacent else None))
    return out


def stages():
    mk = open(os.path.join(ROOT, "Makefile")).read()
    m = re.search(r"^TEST_STAGES := (.*?)\n(?!\s)", mk, re.M | re.S)
    words = re.findall(r"[\w-]+", m.group(1).replace("\\\n", " "))
    return {w for w in words if w not in ("if", "QUICK")}


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


# -- links ----------------------------------------------------------------------------

@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_links_resolve(doc):
    text = open(doc, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not dest.startswith(ROOT) or not os.path.exists(dest):
            bad.append(f"{target}: no such file")
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            bad.append(f"{target}: no heading #{frag}")
    assert bad == [], f"{rel(doc)}: {bad}"


# -- the ending rule, word for word ---------------------------------------------------------

def plain(s):
    s = s.replace("\\-", "-").replace("**", "").replace("`", "")
    return " ".join(s.split())


def test_the_ending_rule_is_one_text_everywhere():
    helptext = subprocess.run([BINARY, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"^Ending: .*?(?=\n\n|\Z)", helptext, re.M | re.S)
    assert m, helptext
    rule = plain(m.group(0))
    assert rule.endswith("SIGHUP reopens the --audit file and changes nothing else."), rule
    for path in ("man/tidepool.1", "README.md", "docs/protocol.md"):
        assert rule in plain(open(os.path.join(ROOT, path)).read()), path


# -- commands -------------------------------------------------------------------------------

def env_for(tmp):
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": tmp, "LANG": "C.UTF-8",
           "TIDEPOOL": BINARY,
           # the README's `pip install` runs offline: its build environment's setuptools and
           # wheel come from Debian's wheels (python3-setuptools-whl, python3-wheel-whl)
           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/usr/share/python-wheels",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return env


def matches(want, got):
    """want: lines with `...` wildcards (a line of just `...`: any lines)."""
    pat = "\n".join(".*?" if l.strip() == "..." else ".*?".join(map(re.escape, l.split("...")))
                    for l in want.rstrip("\n").split("\n"))
    return re.fullmatch(pat, got.rstrip("\n"), re.S) is not None


def not_run(cmd):
    cmd = cmd.strip()
    m = re.match(r"^make ([\w-]+)(\s+[A-Z_]+=\S+)*$", cmd)
    if m and m.group(1) in stages():
        return f"`make {m.group(1)}` is a stage of make test"
    for pat, why in NOT_RUN.items():
        if re.search(pat, cmd):
            return why
    return None


def console_cases():
    for doc in DOCS:
        for lang, body, line, _ in blocks(doc):
            if lang == "console":
                yield pytest.param(doc, body, id=f"{rel(doc)}:{line}")


def sh_cases():
    for doc in DOCS:
        for lang, body, line, _ in blocks(doc):
            if lang == "sh":
                yield pytest.param(doc, body, id=f"{rel(doc)}:{line}")


def python_cases():
    for doc in DOCS:
        for lang, body, line, nxt in blocks(doc):
            if lang == "python" and nxt is not None and nxt[0] == "text":
                yield pytest.param(body, nxt[1], id=f"{rel(doc)}:{line}")


@pytest.mark.parametrize("doc,body", list(console_cases()))
def test_console_blocks_run_as_shown(doc, body, tmp_path):
    steps, cur = [], None
    for l in body.split("\n"):
        if l.startswith("$ "):
            cur = [l[2:], []]
            steps.append(cur)
        elif cur is not None:
            cur[1].append(l)
    assert steps, "a console block without a $ command"
    for cmd, out in steps:
        why = not_run(cmd)
        if why:
            print(f"# not run: {cmd}: {why}")
            continue
        # stdout and stderr as a terminal shows them: one stream, in order
        p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env_for(str(tmp_path)),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        got = p.stdout
        want = "\n".join(out).rstrip("\n")
        assert matches(want, got), f"$ {cmd}\n--- shown:\n{want}\n--- got:\n{got}"


@pytest.mark.parametrize("doc,body", list(sh_cases()))
def test_sh_blocks_run(doc, body, tmp_path):
    script = ["set -e"]
    for l in body.split("\n"):
        cmd = l.split("  #")[0].split(" # ")[0].strip()
        if not cmd or cmd.startswith("#"):
            continue
        why = not_run(cmd)
        if why:
            print(f"# not run: {cmd}: {why}")
            continue
        script.append(cmd)
    if len(script) == 1:
        return
    p = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env=env_for(str(tmp_path)),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{script}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


@pytest.mark.parametrize("code,want", list(python_cases()))
def test_python_blocks_print_what_they_show(code, want, tmp_path):
    env = env_for(str(tmp_path))
    env["PYTHONPATH"] = os.path.join(ROOT, "clients", "python")
    p = subprocess.run(["/usr/bin/python3", "-c", code], cwd=ROOT, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == want, f"--- shown:\n{want}--- got:\n{p.stdout}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_json_blocks_parse(doc):
    for lang, body, line, _ in blocks(doc):
        if lang == "json":
            try:
                json.loads(body)
            except ValueError as e:
                pytest.fail(f"{rel(doc)}:{line}: {e}")


def test_the_mcp_configurations_name_make_installs_path(tmp_path):
    # make install, into a scratch root: the path every shown configuration starts
    p = subprocess.run(["make", "--no-print-directory", "install", f"DESTDIR={tmp_path}"],
                       cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    exe = tmp_path / "usr" / "local" / "bin" / "tidepool"
    v = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("tidepool "), v
    for name in ("tidepool-python", "tidepool-lua"):
        assert (exe.parent / name).exists(), name
    # an MCP client started from that path answers initialize and a tool call
    reqs = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_lua",'
            '"arguments":{"code":"return 6*7"}}}\n')
    r = subprocess.run([str(exe)], input=reqs, capture_output=True, text=True, timeout=60)
    replies = [json.loads(l) for l in r.stdout.splitlines()]
    assert [m["id"] for m in replies] == [1, 2] and replies[1]["result"]["structuredContent"]["value"] == 42
    seen = 0
    for doc in (os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "mcp-hosts.md")):
        text = open(doc, encoding="utf-8").read()
        for cmd in re.findall(r'"command": "([^"]+)"|cmd: (\S+)|"command": \{"path": "([^"]+)"', text):
            path = next(c for c in cmd if c)
            assert path == "/usr/local/bin/tidepool", (doc, path)
            seen += 1
    assert seen >= 5, seen
