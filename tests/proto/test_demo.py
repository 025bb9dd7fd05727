"""make demo (examples/demo.py) shows every step's real result: it runs here
against the binary under test, and each step's line must carry its outcome.
The demo checks its own steps too and exits 1 when one differs."""
import os
import re
import subprocess

import pytest

from conftest import BINARY, LANDLOCK_ABI

DEMO = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "demo.py")
KERNEL = ("sandbox_violation (kernel layer): the kernel refused open('/etc/passwd'): "
          "Permission denied (EACCES)")
NO_WS = "skipped: this kernel has no Landlock, so sessions get no workspace"
NO_KO = ("skipped: kernel-only is refused here: policy 'kernel-only' turns the language layer "
         "off, so the kernel is its only wall, and this kernel has no Landlock")


def want(landlock):
    return [
        ("lua", "a value", "42"),
        ("python", "a value, an input", "285"),
        ("lua", "output and a table", "prints 'hi Lua 5.4', [1,2,3]"),
        ("python", "a session keeps state", "2.0"),
        ("python", "a file in and out", "3" if landlock else NO_WS),
        ("lua", "a session keeps state", "2"),
        ("lua", "a limit", "cpu_limit (language layer): CPU time limit exceeded: cpu_ms 300 (used "),
        ("python", "a limit", "memory_limit (language layer): memory limit exceeded: memory_bytes 67108864"),
        ("python", "a refusal", "policy_violation (language layer): import of module 'socket' is not "
                                "allowed in the sandbox (policy standard: no network)"),
        ("lua", "a refusal", "policy_violation (language layer): os.execute is not available in the "
                             "sandbox (policy standard: no processes)"),
        ("python", "the kernel's refusal", KERNEL if landlock else NO_KO),
        ("python", "a tool callback", "42"),
        ("lua", "a tool callback", "2"),
    ]


# As this kernel has it, and as a kernel without Landlock would (the host's test knob).
@pytest.mark.parametrize("landlock", [LANDLOCK_ABI > 0, False], ids=["this kernel", "no Landlock"])
def test_the_demo_shows_every_step_working(landlock):
    env = dict(os.environ, **({} if landlock else {"TIDEPOOL_TEST_NO_LANDLOCK": "1"}))
    p = subprocess.run(["/usr/bin/python3", DEMO, BINARY], capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    steps = [l for l in p.stdout.splitlines() if re.match(r"^ ?\d+ (lua|python) ", l)]
    WANT = want(landlock)
    assert len(steps) == len(WANT), p.stdout
    for line, (lang, what, result) in zip(steps, WANT):
        head, _, got = line.partition(" → ")
        assert head.split()[1] == lang and what in head, line
        assert got.startswith(result), line
        assert "NOT AS EXPECTED" not in line, line
    assert ("hot.txt holds 'Lima, Cairo'" in p.stdout) == landlock, p.stdout
    assert p.stdout.rstrip().endswith("13 steps, each as shown. The protocol under them: "
                                      "docs/protocol.md; plugging tidepool into an MCP host: README.md.")
