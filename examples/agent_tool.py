#!/usr/bin/python3
r"""tidepool as a tool of an agent framework: one function and its description.

OpenAI- and Anthropic-style function calling take a name, a description and a
JSON schema of the arguments; the framework calls the function with the model's
arguments and gives the model back the string it returns. Standard library only.
From a checkout, after `make`, with no environment needed (the client finds
build/tidepool; $TIDEPOOL or a tidepool on PATH would come first):

    python3 examples/agent_tool.py

It uses the installed client (pip install ./clients/python) if there is one,
else the checkout's clients/python. It prints (checked by make pyclient-install):

    tools: run_code(code, language)
    {"ok": true, "value": "5", "stdout": "", "stderr": ""}
    {"ok": true, "value": "{'a': [1, 2]}", "stdout": "hi\n", "stderr": ""}
    {"ok": true, "value": "8", "stdout": "", "stderr": ""}
    {"ok": false, "value": null, "stdout": "", "stderr": "", "error": "ValueError: invalid literal for int() with base 10: 'x'", "traceback": "Traceback (most recent call last):\n  File \"<snippet>\", line 1, in <module>\n    int('x')\nValueError: invalid literal for int() with base 10: 'x'"}
"""
import json
import os
import sys

try:
    from tidepool import Client, RunTimeout
except ImportError:  # not installed: the checkout's copy, beside this file
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                    "python"))
    from tidepool import Client, RunTimeout

RUN_CODE = {
    "name": "run_code",
    "description": ("Run a Python 3.11 or Lua 5.4 snippet in a sandbox (no files, network or "
                    "processes; pure modules such as math, json, re, datetime). Python returns the "
                    "value of its last expression, Lua what the chunk returns; print() output is "
                    "captured. Each call starts fresh."),
    "parameters": {  # OpenAI's key; Anthropic calls the same schema "input_schema"
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "the snippet"},
            "language": {"type": "string", "enum": ["python", "lua"], "default": "python"},
        },
        "required": ["code"],
    },
}

_client = None


def run_code(code, language="python"):
    """The tool: runs the snippet, answers what the model should read, as JSON."""
    global _client
    if _client is None:
        _client = Client()  # one tidepool for every call; it exits with this program
    try:
        r = _client.run(code, language, timeout=30)
    except RunTimeout:
        return json.dumps({"error": "timeout: the code ran for more than 30 s"})
    answer = {"ok": r.ok, "value": r.text, "stdout": r.stdout, "stderr": r.stderr}
    if r.error is not None:
        answer["error"] = f"{r.error.name}: {r.error.value}"
        answer["traceback"] = r.error.traceback
    return json.dumps(answer)


TOOLS = {"run_code": (RUN_CODE, run_code)}


def dispatch(call):
    """What a framework does with a model's tool call: {"name", "arguments": JSON text}."""
    _, fn = TOOLS[call["name"]]
    return fn(**json.loads(call["arguments"]))


if __name__ == "__main__":
    print("tools:", ", ".join(f"{spec['name']}({', '.join(spec['parameters']['properties'])})"
                               for spec, _ in TOOLS.values()))
    for args in ({"code": "import statistics\nstatistics.mean([2, 4, 9])"},
                 {"code": "print('hi')\n{'a': [1, 2]}"},
                 {"code": "return #('tidepool')", "language": "lua"},
                 {"code": "int('x')"}):
        print(dispatch({"name": "run_code", "arguments": json.dumps(args)}))
