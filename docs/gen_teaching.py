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
    ("process", "#e6f4ea", "a fresh worker per exec, cloned from a zygote",
     "no memory, state or descriptor passes between execs; a crash ends one worker"),
    ("kernel", "#fdf0e1", "the worker locks itself down before it reads code",
     "seccomp allowlist, Landlock (files, TCP), rlimits (memory, CPU), uid 65534, no_new_privs"),
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
    want = {DOC: want_doc, SVG: want_svg}
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
