"""make demo (examples/demo.py) shows every step's real result: it runs here
against the binary under test, and each step's line must carry its outcome.
The demo checks its own steps too and exits 1 when one differs."""
import os
import re
import subprocess

from conftest import BINARY, LANDLOCK_ABI

DEMO = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "demo.py")
KERNEL = ("sandbox_violation (kernel layer): the kernel refused open('/etc/passwd'): "
          "Permission denied (EACCES)")
WANT = [
    ("lua", "a value", "42"),
    ("python", "a value, an input", "285"),
    ("lua", "output and a table", "prints 'hi Lua 5.4', [1,2,3]"),
    ("python", "a session keeps state", "2.0"),
    ("python", "a file in and out",
     "3" if LANDLOCK_ABI > 0 else "skipped: this kernel has no Landlock, so sessions get no workspace"),
    ("lua", "a session keeps state", "2"),
    ("lua", "a limit", "cpu_limit (language layer): CPU time limit exceeded: cpu_ms 300 (used "),
    ("python", "a limit", "memory_limit (language layer): memory limit exceeded: memory_bytes 67108864"),
    ("python", "a refusal", "policy_violation (language layer): import of module 'socket' is not "
                            "allowed in the sandbox (policy standard: no network)"),
    ("lua", "a refusal", "policy_violation (language layer): os.execute is not available in the "
                         "sandbox (policy standard: no processes)"),
    ("python", "the kernel's refusal", KERNEL if LANDLOCK_ABI > 0 else "skipped: this kernel has no Landlock"),
    ("python", "a tool callback", "42"),
    ("lua", "a tool callback", "2"),
]


def test_the_demo_shows_every_step_working():
    p = subprocess.run(["/usr/bin/python3", DEMO, BINARY], capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    steps = [l for l in p.stdout.splitlines() if re.match(r"^ ?\d+ (lua|python) ", l)]
    assert len(steps) == len(WANT), p.stdout
    for line, (lang, what, result) in zip(steps, WANT):
        head, _, got = line.partition(" → ")
        assert head.split()[1] == lang and what in head, line
        assert got.startswith(result), line
        assert "NOT AS EXPECTED" not in line, line
    assert ("hot.txt holds 'Lima, Cairo'" in p.stdout) == (LANDLOCK_ABI > 0), p.stdout
    assert p.stdout.rstrip().endswith("13 steps, each as shown. The protocol under them: "
                                      "docs/protocol.md; plugging tidepool into an MCP host: README.md.")
