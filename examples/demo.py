#!/usr/bin/python3
"""make demo: tidepool at work, one line per step, in both languages.

Each step runs through the Python client (clients/python) against one tidepool
process, prints what it ran and what came back, and checks the outcome: a step
that does not do what its line says makes the demo exit 1, so it can never
show nothing again (tests/demo/test_demo.py runs it).

    python3 examples/demo.py [BINARY]     # default: build/tidepool of this checkout
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
from tidepool import Client, TidepoolError  # noqa: E402

# A policy for the tool-callback step: standard, plus one tool the client answers.
DEMO_POLICY = {"name": "demo-tools", "extends": "standard", "tools": ["add"]}
WIDTH = 46  # the code column


def shorten(s, n):
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def outcome(r):
    """What a person reads of a result: the value as a REPL shows it, or the
    error's kind, layer and message."""
    if r.ok:
        out = r.stdout.strip()
        return (f"prints {out!r}, " if out else "") + (r.text if r.text is not None else "ok")
    e = r.raw["error"]
    lim = e.get("limit")
    used = f": {lim['name']} {lim['limit']} (used {lim['used']})" if lim else ""
    return f"{e['kind']} ({e['layer']} layer): {e['message']}{used}"


class Demo:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def step(self, lang, what, code, r, check):
        self.n += 1
        good = check(r)
        self.failed += not good
        mark = "" if good else "   <-- NOT AS EXPECTED"
        print(f"{self.n:2} {lang:<6} {what:<22} {shorten(code, WIDTH):<{WIDTH}} → "
              f"{shorten(outcome(r), 150)}{mark}", flush=True)

    def skip(self, lang, what, code, why):
        self.n += 1
        print(f"{self.n:2} {lang:<6} {what:<22} {shorten(code, WIDTH):<{WIDTH}} → skipped: {why}")


def err(kind, layer, start):
    return lambda r: (not r.ok and r.raw["error"]["kind"] == kind
                      and r.raw["error"]["layer"] == layer
                      and r.raw["error"]["message"].startswith(start))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "tidepool")
    pol_dir = tempfile.mkdtemp(prefix="tidepool-demo-")
    os.chmod(pol_dir, 0o755)
    with open(os.path.join(pol_dir, "demo-tools.json"), "w") as f:
        json.dump(DEMO_POLICY, f)
    d = Demo()
    with Client(binary, ["--policy-dir", pol_dir]) as tp:
        print(f"tidepool demo: {binary} (policy standard)")
        for line in tp.log[:1]:  # what the kernel enforces here
            print(f"   {line.removeprefix('tidepool: ')}")
        print()

        code = "return 6 * 7"
        d.step("lua", "a value", code, tp.run(code, "lua"), lambda r: r.value == 42)
        code = "sum(i * i for i in range(n))"
        d.step("python", "a value, an input", code + "   (n=10)", tp.run(code, inputs={"n": 10}),
               lambda r: r.value == 285)
        code = "print('hi ' .. _VERSION) return {1, 2, 3}"
        d.step("lua", "output and a table", code, tp.run(code, "lua"),
               lambda r: r.stdout == "hi Lua 5.4\n" and r.value == [1, 2, 3])

        with tp.session("python") as s:
            s.run("import statistics\nxs = [2, 4, 4, 4, 5, 5, 7, 9]")
            code = "statistics.pstdev(xs)"
            d.step("python", "a session keeps state", "xs = [...] | " + code, s.run(code),
                   lambda r: r.value == 2.0)
            what = "put data.csv | read it, write hot.txt | get"
            if s.workspace is None:  # the kernel holds workspaces: Landlock
                d.skip("python", "a file in and out", what,
                       "this kernel has no Landlock, so sessions get no workspace")
            else:
                s.put_file("data.csv", b"city,temp\nOslo,4\nLima,19\nCairo,28\n")
                code = ("import csv\nrows = list(csv.DictReader(open('data.csv')))\n"
                        "hot = [r['city'] for r in rows if int(r['temp']) > 15]\n"
                        "open('hot.txt', 'w').write(', '.join(hot))\nlen(rows)")
                r = s.run(code)
                got = s.get_file("hot.txt") if r.ok else b""
                d.step("python", "a file in and out", what, r,
                       lambda r: r.value == 3 and got == b"Lima, Cairo")
                print(f"{'':32}hot.txt holds {got.decode()!r}")
        with tp.session("lua") as s:
            s.run("count = 0")
            s.run("count = count + 1")
            code = "count = count + 1 return count"
            d.step("lua", "a session keeps state", "count = 0 | count = count + 1 (twice)", s.run(code),
                   lambda r: r.value == 2)

        code = "while true do end"
        d.step("lua", "a limit", code + "   (cpu_ms 300)", tp.run(code, "lua", limits={"cpu_ms": 300}),
               err("cpu_limit", "language", "CPU time limit exceeded"))
        code = "x = bytearray(100 * 1024 * 1024)"
        d.step("python", "a limit", code, tp.run(code),
               err("memory_limit", "language", "memory limit exceeded"))
        code = "import socket"
        d.step("python", "a refusal", code, tp.run(code),
               err("policy_violation", "language", "import of module 'socket' is not allowed"))
        code = "os.execute('id')"
        d.step("lua", "a refusal", code, tp.run(code, "lua"),
               err("policy_violation", "language", "os.execute is not available"))
        code = "print(open('/etc/passwd').read())"
        try:
            r = tp.run(code, policy="kernel-only")
        except TidepoolError as e:  # refused where it cannot be enforced: no Landlock
            r = None
            d.skip("python", "the kernel's refusal", "open('/etc/passwd')   (kernel-only)",
                   f"kernel-only is refused here: {e.message.split(':')[0]}")
        if r is not None:
            d.step("python", "the kernel's refusal", "open('/etc/passwd')   (kernel-only)", r,
                   err("sandbox_violation", "kernel", "the kernel refused open('/etc/passwd')"))
        code = "tools.add(a=2, b=40)"
        d.step("python", "a tool callback", code, tp.run(code, policy="demo-tools",
                                                         tools={"add": lambda a, b: a + b}),
               lambda r: r.value == 42)
        code = "return tools.call('add', {a = 1, b = 1})"
        d.step("lua", "a tool callback", code, tp.run(code, "lua", policy="demo-tools",
                                                      tools={"add": lambda a, b: a + b}),
               lambda r: r.value == 2)
    os.remove(os.path.join(pol_dir, "demo-tools.json"))
    os.rmdir(pol_dir)
    print()
    if d.failed:
        print(f"demo: {d.failed} of {d.n} steps did not do what they show", file=sys.stderr)
        return 1
    print(f"{d.n} steps, each as shown. The protocol under them: docs/protocol.md; "
          "plugging tidepool into an MCP host: README.md.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
