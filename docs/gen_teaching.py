"""Writes what docs/teaching.md shows from the repository's own data:
docs/layers.svg (the four layers), the lesson table between the markers in
docs/teaching.md, and examples/lessons/ID.py|.lua (one lesson attack a file),
from examples/lessons.json.
    /usr/bin/python3 docs/gen_teaching.py          # rewrite both
    /usr/bin/python3 docs/gen_teaching.py --check  # fail when either is stale
"""
import json
import os
import sys
from html import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSONS = os.path.join(ROOT, "examples", "lessons.json")
DOC = os.path.join(ROOT, "docs", "teaching.md")
SVG = os.path.join(ROOT, "docs", "layers.svg")
BEGIN, END = "<!-- lessons: begin (docs/gen_teaching.py) -->", "<!-- lessons: end -->"
PRESETS = ["strict", "standard", "kernel-only"]

# Outer to inner: (name, colour, what it enforces, what it does not)
LAYERS = [
    ("host", "#e8eef7", "tidepool: never runs snippet code",
     "owns the wall clock (timeout), re-checks every reply, rates and quotas, tool calls"),
    ("kernel", "#fdf0e1", "the worker locks itself down before it reads code",
     "seccomp allowlist, Landlock (files, TCP), rlimits (memory, CPU), uid 65534, no_new_privs"),
    ("process", "#e6f4ea", "a fresh worker per exec, cloned from a zygote",
     "no memory, state or descriptor passes between execs; a crash ends one worker"),
    ("language", "#fbe9ec", "the interpreter, trimmed by the policy",
     "allowlisted modules and functions, blocked introspection, counted memory, CPU and instructions"),
]


def svg():
    w, h, pad, head = 760, 420, 22, 54
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, sans-serif">' % (w, h, w, h),
           '<title>tidepool: the four layers around a snippet</title>',
           '<rect width="%d" height="%d" fill="#ffffff"/>' % (w, h)]
    x, y, bw, bh = 10, 10, w - 20, h - 20
    for name, colour, what, detail in LAYERS:
        out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="10" fill="%s" '
                   'stroke="#444" stroke-width="1.5"/>' % (x, y, bw, bh, colour))
        out.append('<text x="%d" y="%d" font-size="17" font-weight="bold" fill="#222">%s layer'
                   '<tspan font-weight="normal" font-size="13" fill="#444"> — %s</tspan></text>'
                   % (x + 14, y + 22, escape(name), escape(what)))
        out.append('<text x="%d" y="%d" font-size="12" fill="#333">%s</text>'
                   % (x + 14, y + 41, escape(detail)))
        x, y, bw, bh = x + pad, y + head, bw - 2 * pad, bh - head - pad
    out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#fff" stroke="#999" '
               'stroke-dasharray="5,4"/>' % (x, y, bw, bh))
    out.append('<text x="%d" y="%d" font-size="15" text-anchor="middle" fill="#222">the snippet '
               '(Lua 5.4 or Python 3.11), untrusted</text>' % (x + bw // 2, y + bh // 2 + 5))
    out.append('</svg>')
    return "\n".join(out) + "\n"


KSVG = os.path.join(ROOT, "docs", "kernel-layer.svg")
# The worker's lockdown (docs/kernel-layer.md, "Steps, in order"), after clone, before code.
STEPS = [
    ("0", "pdeathsig", "dies with its parent"),
    ("1", "fds", "0/1/2 on /dev/null; all else closed"),
    ("2", "rlimits", "AS, CPU, FSIZE, NOFILE, NPROC 0"),
    ("3", "uid drop", "65534, no capabilities"),
    ("4", "no_new_privs", "inherited from the zygote"),
    ("5", "Landlock", "only the grants; no TCP"),
    ("6", "SIGSYS report", "names a trapped call"),
    ("7", "seccomp seal", "W stacked on the zygote's Z"),
]


def kernel_svg():
    w, h = 900, 250
    bw, gap, top = 100, 10, 70
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="DejaVu Sans, Verdana, sans-serif">' % (w, h, w, h),
           '<title>tidepool: the kernel layer, step by step, in each worker</title>',
           '<rect width="%d" height="%d" fill="#ffffff"/>' % (w, h),
           '<text x="10" y="26" font-size="16" font-weight="bold" fill="#222">A worker locks '
           'itself down, in this order, before it reads any code</text>',
           '<text x="10" y="48" font-size="12" fill="#444">clone from the zygote (which has '
           'filter Z and no_new_privs already) → steps 0–7 → the snippet runs; a failed step '
           'ends the worker before any code</text>']
    for i, (n, name, what) in enumerate(STEPS):
        x = 10 + i * (bw + gap)
        out.append('<rect x="%d" y="%d" width="%d" height="110" rx="8" fill="#fdf0e1" '
                   'stroke="#444" stroke-width="1.2"/>' % (x, top, bw))
        out.append('<text x="%d" y="%d" font-size="20" font-weight="bold" fill="#a65d00" '
                   'text-anchor="middle">%s</text>' % (x + bw // 2, top + 26, n))
        out.append('<text x="%d" y="%d" font-size="11.5" font-weight="bold" fill="#222" '
                   'text-anchor="middle">%s</text>' % (x + bw // 2, top + 50, escape(name)))
        words, line, lines = what.split(), "", []
        for wd in words:
            if len(line) + len(wd) + 1 > 16:
                lines.append(line)
                line = wd
            else:
                line = (line + " " + wd).strip()
        lines.append(line)
        for j, l in enumerate(lines):
            out.append('<text x="%d" y="%d" font-size="10.5" fill="#333" text-anchor="middle">'
                       '%s</text>' % (x + bw // 2, top + 70 + 14 * j, escape(l)))
        if i + 1 < len(STEPS):
            out.append('<text x="%d" y="%d" font-size="14" fill="#666">›</text>'
                       % (x + bw + 1, top + 58))
    for j, l in enumerate(("After step 7, a call the policy refuses gets EPERM or ENOSYS, or traps and the "
                           "host names it (seccomp:NAME);",
                           "under kernel-only every refusal traps. A path outside the grants gets "
                           "Landlock's EACCES (landlock:RIGHT, with the path).")):
        out.append('<text x="10" y="%d" font-size="12" fill="#333">%s</text>'
                   % (top + 145 + 18 * j, escape(l)))
    out.append('</svg>')
    return "\n".join(out) + "\n"


def cell(e):
    if e["kind"] is None:
        return "allowed"
    return "%s: `%s`" % (e["layer"], e["kind"])


def table():
    lessons = json.load(open(LESSONS))["lessons"]
    rows = ["| lesson | language | " + " | ".join(PRESETS) + " | what it teaches |",
            "|---|---|" + "---|" * len(PRESETS) + "---|"]
    for l in lessons:
        lim = "".join(" `--%s %d`" % (k.replace("_", "-"), v) for k, v in l.get("limits", {}).items())
        rows.append("| `%s`: %s%s | %s | %s | %s |" % (
            l["id"], l["title"], lim, l["lang"],
            " | ".join(cell(l["expect"][p]) for p in PRESETS), l["teaches"]))
    return "\n".join([BEGIN] + rows + [END])


SUFFIX = {"python": ".py", "lua": ".lua"}


def lesson_files(lessons):
    """examples/lessons/ID.py|.lua: one attack a file, for `run` and `run --compare`."""
    out = {}
    for l in lessons:
        c = "#" if l["lang"] == "python" else "--"
        head = ["%s %s (examples/lessons.json, written by docs/gen_teaching.py)" % (c, l["title"]),
                "%s %s" % (c, l["teaches"])]
        lim = " ".join("--%s %d" % (k.replace("_", "-"), v) for k, v in l.get("limits", {}).items())
        head.append("%s tidepool run --compare strict,standard,kernel-only %sexamples/lessons/%s%s"
                    % (c, lim + " " if lim else "", l["id"], SUFFIX[l["lang"]]))
        out[os.path.join(ROOT, "examples", "lessons", l["id"] + SUFFIX[l["lang"]])] = \
            "\n".join(head) + "\n" + l["code"]
    return out


def main():
    check = "--check" in sys.argv[1:]
    doc = open(DOC).read()
    a, b = doc.index(BEGIN), doc.index(END) + len(END)
    want_doc = doc[:a] + table() + doc[b:]
    want_svg = svg()
    lessons = json.load(open(LESSONS))["lessons"]
    want = {DOC: want_doc, SVG: want_svg, KSVG: kernel_svg()}
    want.update(lesson_files(lessons))
    if check:
        stale = [p for p, text in want.items()
                 if not os.path.exists(p) or open(p).read() != text]
        if stale:
            sys.exit("stale: %s (run /usr/bin/python3 docs/gen_teaching.py)" % ", ".join(stale))
        return
    os.makedirs(os.path.join(ROOT, "examples", "lessons"), exist_ok=True)
    for path, text in want.items():
        open(path, "w").write(text)


if __name__ == "__main__":
    main()
