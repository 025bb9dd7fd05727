#!/usr/bin/python3
"""The man page matches the binary: usage: check_man.py BINARY MAN_PAGE

- OPTIONS, "Serving": the long options of `tidepool --help`'s serving usage, plus
  --help and --version; "tidepool run": those of `tidepool run --help`; "tidepool
  policy": `tidepool policy --help`'s options and its three commands.
- SYNOPSIS names every option and command `tidepool --help` and `tidepool policy
  --help` name, and nothing else.
- .TH carries `tidepool --version`'s version.
- groff -man -ww (every warning) is silent, and `man -l` renders it, where they are
  installed (else a skip line says so).
"""
import os
import re
import shutil
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def helptext(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"{binary} {' '.join(args)}: exit {r.returncode}: {r.stderr}"
    return r.stdout


def longs(text):
    return {o for o in OPT.findall(text) if o.startswith("--")}


def plain(line):
    """A line of troff as text: escapes of fonts, hyphens and quotes undone."""
    line = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-").replace("\\%", "")
    line = re.sub(r"\\\(\w\w", "", line)
    return line


def sections(page):
    """{(SH, SS): [lines]}"""
    out, sh, ss = {}, None, None
    for line in page.splitlines():
        m = re.match(r'\.(SH|SS)\s+"?([^"]*)"?\s*$', line)
        if m:
            if m.group(1) == "SH":
                sh, ss = m.group(2), None
            else:
                ss = m.group(2)
            continue
        out.setdefault((sh, ss), []).append(line)
    return out


def tags(lines):
    """The options of the .TP/.TQ items' tag lines."""
    found, after = set(), False
    for line in lines:
        if after and not line.startswith(".\\\""):
            found |= set(OPT.findall(plain(line)))
            after = False
        if line.startswith((".TP", ".TQ")):
            after = True
    return found


def main():
    binary, man = sys.argv[1], sys.argv[2]
    page = open(man, encoding="utf-8").read()
    secs = sections(page)
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: the man page has {sorted(got)}, the binary {sorted(want)}"
                            f" (missing: {sorted(want - got)}, extra: {sorted(got - want)})")

    main_help = helptext(binary, "--help")
    serve_usage = main_help.split("tidepool run")[0]  # the serving usage comes first
    run_help = helptext(binary, "run", "--help")
    policy_help = helptext(binary, "policy", "--help")

    check("OPTIONS/Serving", {o for o in tags(secs[("OPTIONS", "Serving")]) if o.startswith("--")},
          longs(serve_usage) | {"--help", "--version"})
    check("OPTIONS/tidepool run", tags(secs[("OPTIONS", "tidepool run")]),
          set(OPT.findall(run_help.split("\n\n", 1)[1].split("\n\nExit status")[0])))
    policy_tags = tags(secs[("OPTIONS", "tidepool policy")])
    check("OPTIONS/tidepool policy", policy_tags, longs(policy_help))
    policy_cmds = set(re.findall(r"tidepool policy (\w+)", policy_help))
    got_cmds = set()
    lines = secs[("OPTIONS", "tidepool policy")]
    for i, line in enumerate(lines):
        if line.startswith(".TP") and i + 1 < len(lines):
            m = re.match(r"\.BI?\s+(\w+)", lines[i + 1])
            if m and not lines[i + 1].startswith(".B \\-"):
                got_cmds.add(m.group(1))
    check("OPTIONS/tidepool policy commands", got_cmds, policy_cmds)

    synopsis = "\n".join(plain(x) for x in secs[("SYNOPSIS", None)])
    check("SYNOPSIS options", longs(synopsis), longs(main_help) | longs(policy_help))
    want_cmds = set(re.findall(r"^\s+tidepool ((?:policy )?[a-z]+)", main_help, re.M))
    got_cmds = set(re.findall(r'^\.SY "tidepool ([a-z ]+)"', page, re.M))
    check("SYNOPSIS commands", got_cmds, want_cmds)

    version = helptext(binary, "--version").split()[-1]
    th = re.search(r'^\.TH TIDEPOOL 1 \S+ "tidepool ([^"]+)"', page, re.M)
    if th is None or th.group(1) != version:
        failures.append(f".TH: version {th.group(1) if th else None!r}, the binary's {version!r}")

    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-ww", "-z", man], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr:
            failures.append(f"groff -man -ww: exit {r.returncode}:\n{r.stderr}")
    else:
        print("# skip: groff -ww lint: groff is not installed (Debian: groff-base)")
    if shutil.which("man"):
        r = subprocess.run(["man", "--warnings", "-l", man], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80"))
        if r.returncode != 0 or r.stderr or "SYNOPSIS" not in r.stdout:
            failures.append(f"man -l: exit {r.returncode}:\n{r.stderr}")
    else:
        print("# skip: man -l: man is not installed (Debian: man-db)")

    for f in failures:
        print(f"FAIL {f}")
    if failures:
        return 1
    print(f"ok: {man} matches {binary}'s options and commands, and renders without warnings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
