#!/usr/bin/python3
"""make pyclient-install's check: the client as installed by pip, run as a user would.

Usage: check_install.py VENV_PYTHON

VENV_PYTHON's environment has `pip install ./clients/python` done. From the
checkout's root (and from a directory inside it), with no $TIDEPOOL, no
PYTHONPATH and no tidepool on PATH, the example of clients/python/README.md
(its first fenced python block that a text block follows, written to a temporary
file) must print exactly that text block, and
examples/agent_tool.py exactly the block its docstring says it prints; outside
the checkout the example must fail, naming the places looked at. Prints one line
per check and 'N passed, N failed'; exits 1 on any failure.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The top README's snippet and the client README's example, each as written.
READMES = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "clients", "python", "README.md")]
AGENT = os.path.join(ROOT, "examples", "agent_tool.py")


def readme_example(readme):
    """(the example's code, its output) from a README: the first ```python block
    followed directly by a ```text block (make doc-check's rule too)."""
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```python\n(.*?)^```\n\s*^```text\n(.*?)^```$", text, re.S | re.M)
    if not m:
        sys.exit(f"{readme}: no ```python block followed by its ```text output")
    return m.group(1), m.group(2)


def agent_output():
    """The lines examples/agent_tool.py's docstring says it prints (indented 4)."""
    with open(AGENT, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"It prints[^\n]*:\n\n((?:    [^\n]*\n)+)", text)
    if not m:
        sys.exit(f"{AGENT}: no 'It prints ...:' block in its docstring")
    return "".join(line[4:] + "\n" for line in m.group(1).splitlines())


def clean_env():
    """The environment less $TIDEPOOL and PYTHONPATH, PATH less every directory
    holding a tidepool."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIDEPOOL", "PYTHONPATH")}
    dirs = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "tidepool"), os.X_OK)]
    env["PATH"] = os.pathsep.join(dirs)
    return env


def run(python, argv, cwd, env):
    return subprocess.run([python, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    python = os.path.abspath(sys.argv[1])
    venv = os.path.dirname(os.path.dirname(python))
    env = clean_env()
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f"\n{detail}"))

    # The package imported is the installed one, not the checkout's source.
    r = run(python, ["-c", "import tidepool; print(tidepool.__file__)"], ROOT, env)
    where = r.stdout.strip()
    check("the venv imports the installed tidepool",
          r.returncode == 0 and where.startswith(venv + os.sep) and "site-packages" in where,
          f"  tidepool imported from {where!r} (want under {venv}); stderr:\n{r.stderr}")

    for readme in READMES:
        code, want = readme_example(readme)
        name = os.path.relpath(readme, ROOT)
        with tempfile.TemporaryDirectory(prefix="tidepool-install-") as tmp:
            snippet = os.path.join(tmp, "example.py")
            with open(snippet, "w", encoding="utf-8") as f:
                f.write(code)
            for cwd in (ROOT, os.path.join(ROOT, "docs")):
                r = run(python, [snippet], cwd, env)
                check(f"{name}'s example, from {os.path.relpath(cwd, ROOT)}/ of the checkout",
                      r.returncode == 0 and r.stdout == want,
                      f"  exit {r.returncode}\n  stdout: {r.stdout!r}\n  want:   {want!r}\n"
                      f"  stderr: {r.stderr[-2000:]}")

            # Outside a checkout nothing is found: the error names the places looked at.
            r = run(python, [snippet], tmp, env)
            check(f"{name}'s example outside the checkout fails, listing where it looked",
                  r.returncode != 0 and "FileNotFoundError: no tidepool binary found" in r.stderr
                  and os.path.join(tmp, "build", "tidepool") in r.stderr and "$TIDEPOOL" in r.stderr
                  and "make install" in r.stderr,
                  f"  exit {r.returncode}\n  stdout: {r.stdout!r}\n  stderr: {r.stderr[-2000:]}")

    r = run(python, [os.path.relpath(AGENT, ROOT)], ROOT, env)
    want = agent_output()
    check("examples/agent_tool.py, from the checkout's root",
          r.returncode == 0 and r.stdout == want,
          f"  exit {r.returncode}\n  stdout: {r.stdout!r}\n  want:   {want!r}\n"
          f"  stderr: {r.stderr[-2000:]}")

    print(f"{results.count(True)} passed, {results.count(False)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
