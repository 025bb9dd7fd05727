"""Regenerate tests/cases/compat_python.json's "cpython" fields: each snippet run by
plain /usr/bin/python3.11 with the REPL rule (the last expression statement is the
value), in a fresh process in an empty directory, its value converted as tidepool
converts one (docs/python.md, "Value and errors"). The "expect" fields (what tidepool
should do, and why where it differs) are kept as they are.
Usage: /usr/bin/python3 tests/cases/gen_compat_python.py [snippets.json] [--only NAME ...]
(--only: regenerate those cases' "cpython" fields and keep every other case as it is; a
case's "preset" is kept too, so a case run under "data" has numpy, pandas and matplotlib
from Debian's python3-* packages, which /usr/bin/python3.11 imports as well). A case with
an "added" field (why) was added in the repository, not taken from the collection: it is
kept, after the collection's, with its code; to add one, write it with "added" and run
--only with its name."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "compat_python.json")

RUNNER = r'''
import ast, json, math, sys
src = sys.stdin.read()
NONFINITE = {}
def conv(v, depth=0, path=""):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        if -2**63 <= v < 2**64:
            return int(v)
        raise TypeError
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):  # null, named by its JSON pointer
            NONFINITE[path] = "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"
            return None
        return float(v)
    if isinstance(v, (list, tuple)):
        return [conv(x, depth + 1, "%s/%d" % (path, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(k, str): ks = k
            elif k is None: ks = "null"
            elif isinstance(k, bool): ks = "true" if k else "false"
            elif isinstance(k, int): ks = str(k)
            elif isinstance(k, float): ks = repr(k)
            else: raise TypeError
            if ks in out: raise TypeError
            out[ks] = conv(x, depth + 1, path + "/" + ks.replace("~", "~0").replace("/", "~1"))
        return out
    raise TypeError
tree = ast.parse(src, "<snippet>", "exec")
expr = None
if tree.body and isinstance(tree.body[-1], ast.Expr):
    expr = compile(ast.Expression(tree.body.pop().value), "<snippet>", "eval")
g = {"__name__": "__main__"}
res = {"ok": True, "value": None}
try:
    exec(compile(tree, "<snippet>", "exec"), g)
    v = eval(expr, g) if expr is not None else None
    try:
        res["value"] = conv(v)
        if NONFINITE:
            res["nonfinite"] = NONFINITE
    except TypeError:
        res["value"], res["value_repr"] = repr(v), True
    if res["ok"] and v is not None:
        res["text"] = repr(v)  # what the REPL prints: tidepool's "text"
except SystemExit as e:
    if e.code not in (None, 0, False):
        res = {"ok": False, "type": "SystemExit"}
except BaseException as e:
    res = {"ok": False, "type": type(e).__name__}
sys.stdout.flush()
sys.__stderr__.write("\n@@RESULT@@" + json.dumps(res))
'''


def run(code):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["/usr/bin/python3.11", "-I", "-c", RUNNER], input=code, cwd=d,
                           capture_output=True, text=True, timeout=60)
    err, _, res = p.stderr.rpartition("\n@@RESULT@@")
    res = json.loads(res)
    res["stdout"] = p.stdout
    res["stderr"] = err
    return res


def main():
    args = sys.argv[1:]
    only = set()
    while "--only" in args:
        i = args.index("--only")
        only.add(args[i + 1])
        del args[i:i + 2]
    src = args[0] if args else "/work/shared/compat/llm-snippets.json"
    snippets = json.load(open(src))["python"]
    old = {}
    if os.path.exists(OUT):
        old = {c["name"]: c for c in json.load(open(OUT))["cases"]}
    # Cases added in the repository (an "added" field says why) follow the collection's.
    names = {s["name"] for s in snippets}
    snippets += [{"name": c["name"], "code": c["code"]} for c in old.values()
                 if "added" in c and c["name"] not in names]
    cases = []
    for s in snippets:
        prev = old.get(s["name"], {})
        c = {"name": s["name"], "code": s["code"], "preset": prev.get("preset", "standard")}
        if only and s["name"] not in only:
            c["cpython"] = prev["cpython"]
        else:
            c["cpython"] = run(s["code"])
        c.update({k: v for k, v in prev.items() if k not in c})
        cases.append(c)
    with open(OUT, "w") as f:
        json.dump({"about": __doc__.split("\n")[0], "cases": cases}, f, indent=1,
                  ensure_ascii=False)
        f.write("\n")
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
