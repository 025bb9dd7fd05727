"""The client README's example and examples/agent_tool.py run, and print what they say."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))


def readme_example():
    """clients/python/README.md's example: its first python block that a text block
    follows (what it prints), as make doc-check and make pyclient-install read it."""
    with open(os.path.join(ROOT, "clients", "python", "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```python\n(.*?)^```\n\s*^```text\n(.*?)^```$", text, re.S | re.M)
    return m.group(1), m.group(2)


def test_readme_example_prints_what_it_shows():
    code, want = readme_example()
    assert len(code.strip().splitlines()) <= 15
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV,
                       stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want


def test_agent_tool_example():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "agent_tool.py")],
                       capture_output=True, text=True, env=os.environ, stdin=subprocess.DEVNULL,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "tools: run_code(code, language)"
    answers = [json.loads(x) for x in lines[1:]]
    assert answers[0] == {"ok": True, "value": "5", "stdout": "", "stderr": ""}
    assert answers[1] == {"ok": True, "value": "{'a': [1, 2]}", "stdout": "hi\n", "stderr": ""}
    assert answers[2]["value"] == "8"
    assert answers[3]["ok"] is False
    assert answers[3]["error"] == "ValueError: invalid literal for int() with base 10: 'x'"


def test_agent_tool_schema():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import agent_tool
    finally:
        sys.path.pop(0)
    spec = agent_tool.RUN_CODE
    assert spec["parameters"]["required"] == ["code"]
    assert spec["parameters"]["properties"]["language"]["enum"] == ["python", "lua"]
    json.dumps(spec)  # a framework sends it as JSON
