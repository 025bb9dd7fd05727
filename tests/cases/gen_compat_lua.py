#!/usr/bin/python3
"""Writes the `reference` of each case of compat_lua.json: what plain lua5.4 does
with the same code (compat_lua_ref.lua runs it), so the table says where tidepool
differs from the interpreter an LLM's Lua was written for.

  /usr/bin/python3 tests/cases/gen_compat_lua.py              # refresh the references
  /usr/bin/python3 tests/cases/gen_compat_lua.py --from FILE   # (re)start from a snippet list

--from reads a list of {name, code} (key "lua" of /work/shared/compat/llm-snippets.json)
and keeps what the table already says of a case of the same name (preset, inputs,
seed, status, reason, expect). Run it after adding a case; tests/proto/test_compat_lua.py
reads the file and never runs lua5.4.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "compat_lua.json")
HARNESS = os.path.join(HERE, "compat_lua_ref.lua")
LUA = "/usr/bin/lua5.4"


def lua_literal(v):
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid Lua string for these inputs
    if isinstance(v, list):
        return "{" + ", ".join(lua_literal(x) for x in v) + "}"
    return "{" + ", ".join(f"[{json.dumps(k)}] = {lua_literal(x)}" for k, x in v.items()) + "}"


def prelude(case):
    """One line (the snippet's line numbers stay): what tidepool does before the
    snippet runs, said in Lua: its inputs as globals, its seed."""
    parts = [f"{k} = {lua_literal(v)}" for k, v in case.get("inputs", {}).items()]
    if "seed" in case:
        parts.append(f"math.randomseed({case['seed']}, 0)")
    return "; ".join(parts) + ("; " if parts else "")


def reference(case):
    with tempfile.TemporaryDirectory() as d:
        src, out, pre = (os.path.join(d, n) for n in ("snippet.lua", "out.json", "prelude.lua"))
        with open(src, "w") as f:
            f.write(case["code"])
        with open(pre, "w") as f:
            f.write(prelude(case))
        p = subprocess.run([LUA, HARNESS, src, out, pre], capture_output=True, text=True,
                           timeout=30, cwd=d, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "TZ": "UTC"})
        if p.returncode != 0:
            raise SystemExit(f"{case['name']}: the harness failed: {p.stderr}")
        with open(out) as f:
            return json.load(f)


def main():
    cases = []
    if os.path.exists(TABLE):
        with open(TABLE) as f:
            cases = json.load(f)["cases"]
    if len(sys.argv) == 3 and sys.argv[1] == "--from":
        with open(sys.argv[2]) as f:
            src = json.load(f)
        old = {c["name"]: c for c in cases}
        cases = []
        for s in src["lua"] if isinstance(src, dict) else src:
            c = {"name": s["name"], "code": s["code"], "preset": "standard", "status": "same"}
            c.update({k: v for k, v in old.get(s["name"], {}).items() if k not in ("name", "code", "reference")})
            cases.append(c)
    order = ["name", "code", "preset", "inputs", "seed", "status", "reason", "expect", "reference"]
    for i, c in enumerate(cases):
        c["reference"] = reference(c)
        cases[i] = {k: c[k] for k in order + sorted(set(c) - set(order)) if k in c}
    with open(TABLE, "w") as f:
        json.dump({"about": "Lua snippets of the kind LLMs write, what plain lua5.4 does with each "
                            "(reference, by tests/cases/gen_compat_lua.py) and what tidepool does: "
                            "status 'same' (as lua5.4: ok, value, error kind), 'refused' (tidepool "
                            "refuses on purpose: expect, reason) or 'differs' (on purpose: expect, reason). "
                            "Read by tests/proto/test_compat_lua.py.",
                   "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases written to {TABLE}")


if __name__ == "__main__":
    main()
