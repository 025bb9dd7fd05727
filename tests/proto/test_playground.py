"""`tidepool playground` (docs/playground.md): the HTTP service with a page at /,
and sandbox/policy/check, the method its policy checker calls. The page is
served only by the playground, with a strict Content-Security-Policy; its files
are the repository's, compiled in; the playground binds as --listen http://
does (loopback unless --tokens); a checked policy is never loaded. The page in
a browser is tests/browser (make browser)."""
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BINARY
from test_http import ENV, Server, rq
from test_tenants import auth, tenant, tokens_file

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ASSETS = {
    "/": ("host/playground/index.html", "text/html; charset=utf-8"),
    "/playground.js": ("host/playground/playground.js", "text/javascript; charset=utf-8"),
    "/playground.css": ("host/playground/playground.css", "text/css; charset=utf-8"),
    "/lessons.json": ("examples/lessons.json", "application/json"),
}
BROKEN = "examples/broken-policy.json"


class Playground:
    def __init__(self, *args):
        self.proc = subprocess.Popen([BINARY, "playground", *(args or ("--port", "0"))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=ENV)
        self.line = self.proc.stdout.readline().decode()
        assert self.line.startswith("playground on http://"), (self.line, self.proc.stderr.read())
        self.url = self.line.split("playground on ")[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1].rstrip("/"))

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        h.update(headers or {})
        c.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=h)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()

    def call(self, method, params=None, headers=None):
        status, _, raw = self.request("POST", "/mcp", rq(1, method, params), headers)
        return status, json.loads(raw)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(10)


@pytest.fixture(scope="module")
def pg():
    p = Playground()
    yield p
    p.stop()


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# -- the page ---------------------------------------------------------------------------

def test_it_prints_its_url_and_reads_no_stdin(pg):
    assert pg.line == f"playground on http://127.0.0.1:{pg.port}/\n"
    pg.proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    pg.proc.stdin.flush()
    assert pg.request("GET", "/healthz")[0] == 200  # still serving; stdin is not a client


@pytest.mark.parametrize("path", sorted(ASSETS))
def test_each_file_is_the_repositorys_with_its_type_and_headers(pg, path):
    status, headers, body = pg.request("GET", path)
    file, ctype = ASSETS[path]
    assert status == 200
    assert body == read(file)
    assert headers["Content-Type"] == ctype
    assert headers["X-Content-Type-Options"] == "nosniff"
    csp = [d.strip() for d in headers["Content-Security-Policy"].split(";")]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    assert "unsafe-eval" not in headers["Content-Security-Policy"]


def test_the_page_has_no_inline_script_or_style_and_nothing_from_elsewhere():
    html = read("host/playground/index.html").decode()
    assert "<script>" not in html and "<style" not in html and " style=" not in html
    assert not re.search(r"<[^>]*\son\w+\s*=", html)  # no onclick= and the like
    for f in ("host/playground/index.html", "host/playground/playground.js", "host/playground/playground.css"):
        text = read(f).decode()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, f


def test_lessons_json_is_examples_lessons_json(pg):
    status, _, body = pg.request("GET", "/lessons.json")
    assert status == 200 and json.loads(body) == json.loads(read("examples/lessons.json"))


def test_other_paths_and_methods_are_not_the_page(pg):
    assert pg.request("GET", "/index.html")[0] == 404
    assert pg.request("GET", "/../host/playground/index.html")[0] == 404
    assert pg.request("POST", "/", {})[0] == 404
    assert pg.request("GET", "/mcp")[0] == 405


def test_head_gets_the_headers(pg):
    status, headers, body = pg.request("HEAD", "/")
    assert status == 200 and body == b"" and headers["Content-Type"] == "text/html; charset=utf-8"


def test_the_plain_http_service_does_not_serve_the_page():
    s = Server()
    try:
        for path in ASSETS:
            status, _, raw = s.request("GET", path=path)
            assert status == 404, path
            assert json.loads(raw)["error"]["message"] == "Not Found: the MCP endpoint is /mcp"
    finally:
        s.stop()


def test_the_page_is_a_client_of_the_same_mcp(pg):
    status, m = pg.call("sandbox/exec", {"lang": "lua", "code": "return 6*7", "policy": "strict"})
    assert status == 200 and m["result"]["value"] == 42
    status, m = pg.call("sandbox/policy/list")
    assert {"strict", "standard", "kernel-only"} <= {p["name"] for p in m["result"]["policies"]}
    # DNS rebinding is refused as on any loopback service.
    status, _, _ = pg.request("GET", "/", headers={"Host": "evil.example:80"})
    assert status == 403
    status, _, _ = pg.request("POST", "/mcp", rq(1, "ping"), headers={"Origin": "http://evil.example"})
    assert status == 403


def test_sigint_ends_it_at_once():
    p = Playground()
    t0 = time.monotonic()
    assert p.stop(signal.SIGINT) == 128 + signal.SIGINT
    assert time.monotonic() - t0 < 5


# -- binding -----------------------------------------------------------------------------

def start_fails(*args):
    r = subprocess.run([BINARY, "playground", *args], stdin=subprocess.DEVNULL, capture_output=True,
                       env=ENV, timeout=10)
    return r.returncode, r.stderr.decode().splitlines()[-1]


def test_binding_beyond_loopback_needs_tokens():
    assert start_fails("--listen", "http://0.0.0.0:0") == (
        2, "tidepool: --listen http://0.0.0.0:0: only a loopback address (127.0.0.1) may be bound "
           "without --tokens: nothing else tells one caller from another")


@pytest.mark.parametrize("args", [("--port", "0", "--listen", "http://127.0.0.1:0"),
                                  ("--listen", "unix:/tmp/x.sock"), ("--port", "70000"), ("extra",)])
def test_bad_arguments_are_refused(args):
    assert start_fails(*args)[0] == 2


def test_with_tokens_beyond_loopback_the_page_is_public_and_mcp_needs_a_token():
    p = Playground("--listen", "http://0.0.0.0:0", "--tokens", tokens_file([tenant("acme")]))
    try:
        assert p.url.startswith("http://0.0.0.0:")
        host = {"Host": "class.example:8080"}
        assert p.request("GET", "/", headers=host)[0] == 200
        assert p.call("ping", headers=host)[0] == 401
        # The page's own calls: Origin is the Host it was loaded from.
        same = {**host, **auth("acme"), "Origin": "http://class.example:8080"}
        assert p.call("ping", headers=same) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
        assert p.call("ping", headers={**same, "Authorization": "Bearer tp_wrong"})[0] == 401
        status, m = p.call("ping", headers={**same, "Origin": "http://other.example:8080"})
        assert (status, m["error"]["message"]) == (403, "Forbidden: browser origins are served only on loopback")
    finally:
        p.stop()


# -- sandbox/policy/check ----------------------------------------------------------------

def cli_errors(path):
    r = subprocess.run([BINARY, "policy", "check", path], cwd=ROOT, capture_output=True, text=True,
                       env=ENV, stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    out = []
    for line in r.stderr.splitlines():
        head = f"tidepool: {path}:"
        assert line.startswith(head), line
        ln, col, msg = line[len(head):].split(":", 2)
        out.append({"line": int(ln), "column": int(col), "message": msg[1:]})
    return out


def test_a_good_policy_is_ok_with_its_effective_policy(pg):
    text = '{"name": "mine", "extends": "strict", "limits": {"cpu_ms": 500}}'
    status, m = pg.call("sandbox/policy/check", {"text": text})
    r = m["result"]
    assert status == 200 and r["ok"] is True and r["errors"] == [] and r["more"] == 0
    assert r["policy"]["name"] == "mine"
    assert r["policy"]["limits"]["cpu_ms"] == 500
    assert r["policy"]["limits"]["instructions"] == 10000000  # strict's, inherited
    assert r["policy"]["redact"] == {"strings": 0, "patterns": 0, "env": []}


def test_a_broken_policy_has_policy_checks_messages_lines_and_columns(pg):
    want = cli_errors(BROKEN)
    assert len(want) == 3
    status, m = pg.call("sandbox/policy/check", {"text": read(BROKEN).decode()})
    assert status == 200
    assert m["result"] == {"ok": False, "errors": want, "more": 0, "policy": None}


def test_not_json_and_an_unknown_parent_are_placed(pg):
    r = pg.call("sandbox/policy/check", {"text": '{"name": "x",\n  "limits": {'})[1]["result"]
    assert r["ok"] is False and r["errors"][0]["line"] == 2 and r["policy"] is None
    r = pg.call("sandbox/policy/check", {"text": '{"name": "x", "extends": "nosuch"}'})[1]["result"]
    assert r["ok"] is False
    assert r["errors"] == [{"line": 1, "column": 15, "message": "extends: extends 'nosuch', which is "
                            "neither a loaded policy nor a built-in preset"}]


def test_the_host_is_not_looked_at(pg):
    """A caller learns nothing of the host's files or environment: grants are
    checked for form only, redact.env's variables are not looked for."""
    text = json.dumps({"name": "x", "extends": "standard",
                       "filesystem": {"read": ["/no/such/dir", "/etc/shadow"]},
                       "redact": {"env": ["TP_SURELY_UNSET_VAR"]}})
    r = pg.call("sandbox/policy/check", {"text": text})[1]["result"]
    assert r["ok"] is True, r
    assert r["policy"]["redact"] == {"strings": 0, "patterns": 0, "env": ["TP_SURELY_UNSET_VAR"]}
    bad = json.dumps({"name": "x", "filesystem": {"read": ["relative", "/a//b", "/proc/1"]}})
    r = pg.call("sandbox/policy/check", {"text": bad})[1]["result"]
    assert [e["message"].split(":", 1)[0] for e in r["errors"]] == [
        "filesystem.read[0]", "filesystem.read[1]", "filesystem.read[2]"], r


@pytest.mark.parametrize("params, message", [
    (None, "params must be {\"text\": a policy's JSON text}"),
    ({}, "params must be {\"text\": a policy's JSON text}"),
    ({"text": 1}, "params must be {\"text\": a policy's JSON text}"),
    ({"text": "{}", "name": "x"}, "params must be {\"text\": a policy's JSON text}"),
    ({"text": " " * (256 * 1024 + 1)}, "text is 262145 bytes; a policy to check is at most 262144"),
])
def test_bad_params_and_an_oversize_text_are_invalid_params(pg, params, message):
    status, m = pg.call("sandbox/policy/check", params)
    assert status == 200 and m["error"] == {"code": -32602, "message": message}


def test_the_largest_text_is_checked(pg):
    text = " " * (256 * 1024 - 30) + '{"name": "big", "colour": 1}'
    assert len(text) <= 256 * 1024
    r = pg.call("sandbox/policy/check", {"text": text})[1]["result"]
    assert r["ok"] is False and r["errors"][0]["message"].startswith("unknown key 'colour'"), r


def test_a_checked_policy_cannot_run_code(pg):
    text = '{"name": "checked-only", "extends": "permissive"}'
    assert pg.call("sandbox/policy/check", {"text": text})[1]["result"]["ok"] is True
    status, m = pg.call("sandbox/exec", {"lang": "lua", "code": "return 1", "policy": "checked-only"})
    assert m["error"]["code"] == -32602
    assert m["error"]["message"] == "unknown policy 'checked-only' (sandbox/policy/list names them)"
    names = {p["name"] for p in pg.call("sandbox/policy/list")[1]["result"]["policies"]}
    assert "checked-only" not in names
    assert pg.call("sandbox/policy/get", {"name": "checked-only"})[1]["error"]["code"] == -32602


def test_a_tenant_cannot_extend_a_policy_it_may_not_see():
    d = tempfile.mkdtemp(prefix="tp-pg-", dir="/tmp")
    with open(os.path.join(d, "globex-only.json"), "w") as f:
        json.dump({"name": "globex-only", "extends": "strict", "limits": {"cpu_ms": 1234}}, f)
    path = tokens_file([tenant("acme"), tenant("globex", policies=["strict", "globex-only"])])
    s = Server("--policy-dir", d, "--tokens", path)
    try:
        text = '{"name": "mine", "extends": "globex-only"}'
        _, _, m = s.post(rq(1, "sandbox/policy/check", {"text": text}), headers=auth("globex"))
        assert m["result"]["ok"] is True and m["result"]["policy"]["limits"]["cpu_ms"] == 1234
        _, _, m = s.post(rq(1, "sandbox/policy/check", {"text": text}), headers=auth("acme"))
        assert m["result"]["ok"] is False and m["result"]["policy"] is None
        assert "extends 'globex-only', which is neither a loaded policy" in m["result"]["errors"][0]["message"]
        # A preset is everyone's to extend.
        _, _, m = s.post(rq(1, "sandbox/policy/check", {"text": '{"name": "m", "extends": "permissive"}'}),
                         headers=auth("acme"))
        assert m["result"]["ok"] is True
    finally:
        s.stop()


def test_the_method_is_served_on_stdio_too():
    text = read(BROKEN).decode()
    r = subprocess.run([BINARY], input=json.dumps(rq(7, "sandbox/policy/check", {"text": text})) + "\n",
                       capture_output=True, text=True, env=ENV, timeout=30)
    m = json.loads(r.stdout)
    assert m["id"] == 7 and m["result"]["errors"] == cli_errors(BROKEN)
