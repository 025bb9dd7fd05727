"""Redaction (docs/policies.md "Rate, redaction, audit"): a secret is replaced
by [REDACTED] in every encoding the host itself produces (raw, JSON-escaped,
JSON-escaped twice, Python repr/ascii/bytes-repr escaping), in workspace file
names and contents, and two keys that redact alike never merge."""
import base64
import json
import os

import pytest

from conftest import Host, needs_landlock, policy_dir

# Each has what an encoding changes: a backslash, quotes, a newline, a tab,
# non-ASCII (printable, and one Python's repr escapes).
SECRETS = ["bk\\slash-7q", "q'uo\"te-7q", "nl\nline-7q", "tab\tsec-7q", "pässwörd-7q",
           "nb\u00a0sp-7q"]


def forms(s):
    """Every encoding of s the host could let out, unredacted."""
    one = [s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], repr(s)[1:-1],
           ascii(s)[1:-1], repr(s.encode())[2:-1], repr(s + "'")[1:-2]]
    two = [json.dumps(f)[1:-1] for f in one] + [json.dumps(f, ensure_ascii=False)[1:-1] for f in one]
    return set(one + two)


def assert_clean(obj):
    blob = json.dumps(obj) + json.dumps(obj, ensure_ascii=False)
    strings = []

    def walk(v):
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                strings.append(k)
                walk(x)
    walk(obj)
    for s in SECRETS:
        for f in forms(s):
            assert f not in blob, (s, f, blob)
            for t in strings:
                assert f not in t, (s, f, t)


@pytest.fixture
def pol_dir():
    with policy_dir("tp-redact-", {
            "secret": {"extends": "standard", "redact": {"strings": SECRETS + ["tok-file-42"]}},
            "secret-ws": {"extends": "standard", "redact": {"strings": SECRETS + ["tok-file-42"]},
                          "session": {"workspace_bytes": 65536, "idle_ms": 5000}},
        }) as d:
        yield d


def py_str(s):
    return json.dumps(s)  # a JSON string literal is a Python one


def test_every_encoding_the_host_produces_is_redacted(pol_dir):
    audit = os.path.join(pol_dir, "audit.log")
    h = Host(args=("--policy-dir", pol_dir, "--policy", "secret", "--audit", audit))
    try:
        for s in SECRETS:
            lit = py_str(s)
            # value (JSON) and text (repr)
            r = h.exec("s = %s\ns" % lit, lang="python")
            assert r["value"] == "[REDACTED]" and r["text"] == "'[REDACTED]'", r
            assert_clean(r)
            # in a container: repr of a list, of bytes, ascii()
            r = h.exec("s = %s\n[s, s.encode(), ascii(s), {s: 1}]" % lit, lang="python")
            assert r["ok"] is True, r
            assert_clean(r)
            # stdout / stderr: repr, json.dumps, raw
            r = h.exec("import json, sys\ns = %s\nprint(repr(s), json.dumps(s), s)\n"
                       "print(repr(s), file=sys.stderr)" % lit, lang="python")
            assert r["ok"] is True and "[REDACTED]" in r["stdout"] and "[REDACTED]" in r["stderr"], r
            assert_clean(r)
            # error message and traceback: KeyError's message is a repr
            r = h.exec("d = {}\nd[%s]" % lit, lang="python")
            assert r["ok"] is False and "[REDACTED]" in r["error"]["message"], r
            assert_clean(r)
            # the MCP content text: the result JSON as a string (escaped twice)
            t = h.call("tools/call", {"name": "run_python",
                                      "arguments": {"code": "s = %s\nprint(repr(s))\n[s]" % lit}})
            assert "result" in t, t
            assert_clean(t)
            assert "[REDACTED]" in t["result"]["content"][0]["text"], t
            # Lua: value, text, stdout, error
            r = h.exec("local s = %s print(s) return s, {s}" % json.dumps(s))
            assert_clean(r)
    finally:
        h.close()
    with open(audit) as f:
        for line in f:
            assert_clean(json.loads(line))


@needs_landlock
def test_workspace_names_and_contents_are_redacted(pol_dir):
    h = Host(args=("--policy-dir", pol_dir, "--policy", "secret-ws"))
    try:
        r = h.call("sandbox/session/open", {"lang": "python"})["result"]
        sid = r["session_id"]
        code = ("open('tok-file-42.txt', 'w').write('a tok-file-42 b %s c')\n"
                "open('raw.bin', 'wb').write(b'\\xff tok-file-42 \\x00')\n"
                "open('plain.txt', 'w').write('nothing')\n" % json.dumps(SECRETS[0])[1:-1])
        r = h.call("sandbox/exec", {"session_id": sid, "code": code})["result"]
        assert r["ok"] is True, r
        ls = h.call("sandbox/session/files/list", {"session_id": sid})["result"]
        assert_clean(ls)
        assert "tok-file-42" not in json.dumps(ls), ls
        assert sorted(f["path"] for f in ls["files"]) == ["[REDACTED].txt", "plain.txt", "raw.bin"], ls
        got = h.call("sandbox/session/files/get", {"session_id": sid, "path": "tok-file-42.txt"})["result"]
        assert got["path"] == "[REDACTED].txt", got
        assert base64.b64decode(got["data"]) == b"a [REDACTED] b [REDACTED] c", got
        assert got["bytes"] == len(b"a [REDACTED] b [REDACTED] c"), got
        got = h.call("sandbox/session/files/get", {"session_id": sid, "path": "raw.bin"})["result"]
        assert base64.b64decode(got["data"]) == b"\xff [REDACTED] \x00", got
        got = h.call("sandbox/session/files/get", {"session_id": sid, "path": "plain.txt"})["result"]
        assert got == {"path": "plain.txt", "bytes": 7, "data": base64.b64encode(b"nothing").decode()}

        def tool(name, args):
            return h.call("tools/call", {"name": name, "arguments": args})["result"]
        t = tool("list_files", {"session_id": sid})
        assert_clean(t)
        assert "tok-file-42" not in json.dumps(t), t
        t = tool("read_file", {"session_id": sid, "path": "tok-file-42.txt"})
        assert t["structuredContent"]["text"] == "a [REDACTED] b [REDACTED] c", t
        assert "tok-file-42" not in json.dumps(t), t
        assert_clean(t)
        t = tool("read_file", {"session_id": sid, "path": "raw.bin"})
        assert base64.b64decode(t["structuredContent"]["data"]) == b"\xff [REDACTED] \x00", t
    finally:
        h.close()


@pytest.mark.parametrize("lang,code", [
    ("python", "{'k-tok-file-42': 1, 'k-%s': 2, 'k-[REDACTED]#2': 3, 'other': 4}"
     % json.dumps(SECRETS[0])[1:-1]),
    ("lua", "return {['k-tok-file-42'] = 1, ['k-%s'] = 2, ['k-[REDACTED]#2'] = 3, other = 4}"
     % json.dumps(SECRETS[0])[1:-1]),
])
def test_keys_that_redact_alike_are_all_kept(pol_dir, lang, code):
    h = Host(args=("--policy-dir", pol_dir, "--policy", "secret"))
    try:
        r = h.exec(code, lang=lang)
        assert r["ok"] is True, r
        v = r["value"]
        assert len(v) == 4, v
        assert sorted(v.values()) == [1, 2, 3, 4], v
        assert v["other"] == 4 and v["k-[REDACTED]#2"] == 3, v
        assert {v["k-[REDACTED]"], v["k-[REDACTED]#3"]} == {1, 2}, v
    finally:
        h.close()
