"""--tokens FILE (docs/deploy.md, "Tenants"): bearer tokens kept as SHA-256
digests, each naming a tenant, its policies and quotas. Every refusal is
proven: nothing ran (no audit line), nothing of the other tenant was touched.
Tenant isolation is checked both ways for every session and file method."""
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BINARY, wait_for
from test_http import ENV, Server, rq

TOKENS = {"acme": "tp_acme-secret-token", "globex": "tp_globex-secret-token"}


def digest(tok):
    return hashlib.sha256(tok.encode()).hexdigest()


def tokens_file(tenants):
    d = tempfile.mkdtemp(prefix="tp-tokens-", dir="/tmp")
    path = os.path.join(d, "tokens.json")
    with open(path, "w") as f:
        json.dump({"tenants": tenants}, f)
    return path


def tenant(name, **kw):
    t = {"name": name, "tokens_sha256": [digest(TOKENS[name])], "policies": ["standard", "strict"]}
    t.update(kw)
    return t


def auth(name):
    return {"Authorization": "Bearer " + TOKENS[name]}


@pytest.fixture
def two():
    s = Server("--tokens", tokens_file([tenant("acme"), tenant("globex", default_policy="strict")]))
    yield s
    s.stop()


def session(srv, who):
    _, headers, m = srv.post(rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
                             headers=auth(who))
    assert m["result"]["protocolVersion"] == "2025-06-18"
    return {**auth(who), "Mcp-Session-Id": headers["Mcp-Session-Id"]}


# -- authentication ------------------------------------------------------------------------

def test_no_token_is_401_with_the_challenge_and_nothing_runs(two):
    status, headers, m = two.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 1"}))
    assert status == 401
    assert headers["WWW-Authenticate"] == 'Bearer realm="tidepool"'
    assert m["error"] == {"code": -32600, "message": "Unauthorized: send Authorization: Bearer TOKEN"}
    assert two.audit_lines() == []


@pytest.mark.parametrize("value", ["Bearer tp_wrong", "Bearer " + digest(TOKENS["acme"]),
                                   "Basic " + TOKENS["acme"], "Bearer ", "Bearer " + "x" * 600])
def test_a_wrong_token_is_401_invalid_token_and_nothing_runs(two, value):
    status, headers, m = two.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 1"}),
                                  headers={"Authorization": value})
    assert status == 401
    assert headers["WWW-Authenticate"] == 'Bearer realm="tidepool", error="invalid_token"'
    assert m["error"] == {"code": -32600, "message": "Unauthorized: the bearer token is not valid"}
    assert two.audit_lines() == []


def test_health_endpoints_need_no_token(two):
    assert two.request("GET", path="/healthz")[::2] == (200, b"ok\n")
    assert two.request("GET", path="/readyz")[::2] == (200, b"ready\n")


def test_the_audit_line_names_the_tenant_and_the_session(two):
    h = session(two, "acme")
    _, _, m = two.post(rq(2, "tools/call", {"name": "run_lua", "arguments": {"code": "return 1",
                                                                             "session": "new"}}), headers=h)
    sid = m["result"]["structuredContent"]["session_id"]
    two.post(rq(3, "sandbox/exec", {"lang": "lua", "code": "return 2"}), headers=auth("globex"))
    a, g = two.audit_lines()
    assert (a["tenant"], a["session"], a["policy"]) == ("acme", sid, "standard")
    assert (g["tenant"], g["policy"]) == ("globex", "strict") and "session" not in g


# -- policies ------------------------------------------------------------------------------

def test_a_tenant_names_only_its_policies_and_gets_its_default(two):
    _, _, m = two.post(rq(1, "sandbox/policy/list"), headers=auth("globex"))
    assert [(p["name"], p["default"]) for p in m["result"]["policies"]] == [
        ("standard", False), ("strict", True)]
    _, _, m = two.post(rq(2, "sandbox/exec", {"lang": "lua", "code": "return 1", "policy": "permissive"}),
                       headers=auth("globex"))
    assert m["error"] == {"code": -32602, "message": "policy 'permissive' is not allowed for tenant "
                          "'globex' (its policies: standard, strict)"}
    _, _, m = two.post(rq(3, "sandbox/policy/get", {"name": "permissive"}), headers=auth("globex"))
    assert m["error"]["message"] == "unknown policy 'permissive' (sandbox/policy/list names them)"
    _, _, m = two.post(rq(4, "sandbox/session/open", {"lang": "python", "policy": "permissive"}),
                       headers=auth("acme"))
    assert m["error"]["message"] == ("policy 'permissive' is not allowed for tenant 'acme' "
                                     "(its policies: standard, strict)")
    assert two.audit_lines() == []


# -- isolation, both ways -------------------------------------------------------------------

@pytest.mark.parametrize("owner, other", [("acme", "globex"), ("globex", "acme")])
def test_a_tenant_reaches_nothing_of_anothers(two, owner, other):
    mine = session(two, owner)
    _, _, m = two.post(rq(2, "sandbox/session/open", {"lang": "lua", "policy": "standard"}), headers=mine)
    sid = m["result"]["session_id"]
    _, _, m = two.post(rq(3, "sandbox/exec", {"lang": "lua", "code": "secret = 'mine' return 1",
                                              "session_id": sid}), headers=mine)
    assert m["result"]["ok"] is True
    theirs = session(two, other)
    # The other tenant's token with the owner's MCP session id: no such session.
    for hdrs in ({**auth(other), "Mcp-Session-Id": mine["Mcp-Session-Id"]},):
        status, _, m = two.post(rq(4, "ping"), headers=hdrs)
        assert status == 404
        assert m["error"]["message"] == "Not Found: no MCP session has this Mcp-Session-Id"
        status, _, _ = two.request("DELETE", headers=hdrs)
        assert status == 404
    unknown = f"unknown session '{sid}'"
    for hdrs in (theirs, auth(other)):
        _, _, m = two.post(rq(5, "sandbox/session/list"), headers=hdrs)
        assert m["result"] == {"sessions": []}
        _, _, m = two.post(rq(6, "sandbox/exec", {"lang": "lua", "code": "return secret",
                                                  "session_id": sid}), headers=hdrs)
        assert m["error"]["message"].startswith(unknown), m
        for method, params in (("sandbox/session/close", {}),
                               ("sandbox/session/files/put", {"path": "x.txt", "data": "cHduZWQ="}),
                               ("sandbox/session/files/get", {"path": "x.txt"}),
                               ("sandbox/session/files/list", {})):
            _, _, m = two.post(rq(7, method, {"session_id": sid, **params}), headers=hdrs)
            assert m["error"]["message"].startswith(unknown), (method, m)
    # The owner's session is as it was: its state, and no file was written.
    _, _, m = two.post(rq(8, "sandbox/exec", {"lang": "lua", "code": "return secret", "session_id": sid}),
                       headers=mine)
    assert m["result"]["value"] == "mine"
    _, _, m = two.post(rq(9, "sandbox/session/list"), headers=mine)
    assert [s["session_id"] for s in m["result"]["sessions"]] == [sid]
    _, _, m = two.post(rq(10, "sandbox/session/files/list", {"session_id": sid}), headers=mine)
    if "result" in m:  # a workspace (Landlock): the file was not written
        assert "x.txt" not in json.dumps(m["result"])
    else:
        assert m["error"]["message"].startswith("session"), m
    assert [a["tenant"] for a in two.audit_lines()] == [owner, owner]


def test_a_cancel_from_another_tenant_stops_nothing(two):
    h = session(two, "acme")
    out = {}

    def run():
        out["m"] = two.post(rq(5, "tools/call", {"name": "run_lua", "arguments": {
            "code": "local t=os.clock() while os.clock()-t < 0.6 do end return 'finished'"}}), headers=h)[2]
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    g = session(two, "globex")
    status, _, _ = two.request("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": 5}}, headers=g)
    assert status == 202
    t.join(10)
    assert out["m"]["result"]["structuredContent"]["value"] == "finished"


# -- quotas ----------------------------------------------------------------------------------

def test_execs_per_minute_refuses_past_the_bucket_and_not_another_tenant():
    s = Server("--tokens", tokens_file([tenant("acme", quotas={"execs_per_minute": 2}), tenant("globex")]))
    try:
        for i in range(2):
            assert s.post(rq(i, "sandbox/exec", {"lang": "lua", "code": "return 1"}),
                          headers=auth("acme"))[2]["result"]["ok"] is True
        _, _, m = s.post(rq(3, "sandbox/exec", {"lang": "lua", "code": "return 1"}), headers=auth("acme"))
        e = m["result"]["error"]
        assert (e["kind"], e["layer"]) == ("rate_limit", "host")
        assert e["message"].startswith("quota: 2 execs per minute for tenant 'acme' (execs_per_minute); "
                                       "retry in "), e
        assert 0 < e["retry_after_ms"] <= 30000
        for i in range(4):
            assert s.post(rq(10 + i, "sandbox/exec", {"lang": "lua", "code": "return 1"}),
                          headers=auth("globex"))[2]["result"]["ok"] is True
        kinds = [(a["tenant"], a["kind"]) for a in s.audit_lines()]
        assert kinds == [("acme", None)] * 2 + [("acme", "rate_limit")] + [("globex", None)] * 4
    finally:
        s.stop()


def test_concurrent_execs_queue_the_tenants_excess_and_not_another_tenants():
    s = Server("--jobs", "4", "--tokens", tokens_file([
        tenant("acme", quotas={"concurrent_execs": 1}), tenant("globex")]))
    spin = "local t=os.clock() while os.clock()-t < %s do end return 1"
    try:
        res = {}

        def run(key, who, secs):
            res[key] = s.post(rq(1, "sandbox/exec", {"lang": "lua", "code": spin % secs}), headers=auth(who))[2]
        threads = [threading.Thread(target=run, args=(k, "acme", 0.5)) for k in ("a1", "a2")]
        for t in threads:
            t.start()
        time.sleep(0.15)
        run("g", "globex", 0.05)
        for t in threads:
            t.join(10)
        qa = sorted(res[k]["result"]["usage"]["queue_ms"] for k in ("a1", "a2"))
        assert qa[0] < 150 and qa[1] >= 350, qa  # the second waited for the first
        assert res["g"]["result"]["usage"]["queue_ms"] < 150, res["g"]
        # Past concurrent_execs x 5 in flight, one is answered busy at once. Five
        # are in flight once four wait (the host's queue depth says so: a fixed
        # sleep was too short under ASan on a loaded machine); each spins 1.5 s, so
        # the first is still running when the sixth comes.
        threads = [threading.Thread(target=run, args=(f"b{i}", "acme", 1.5)) for i in range(5)]
        for t in threads:
            t.start()
        wait_for(lambda: queue_depth(s) >= 4, 20, "four of acme's execs waiting")
        _, _, m = s.post(rq(2, "sandbox/exec", {"lang": "lua", "code": "return 1"}), headers=auth("acme"))
        assert m["error"] == {"code": -32001, "message": "busy: tenant 'acme' has 5 execs running or "
                              "waiting, the most its concurrent_execs quota (1) lets wait; retry later"}
        for t in threads:
            t.join(30)
    finally:
        s.stop()


def queue_depth(s):
    """tidepool_queue_depth from GET /metrics (no token needed)."""
    status, _, raw = s.request("GET", path="/metrics")
    assert status == 200, status
    for line in raw.decode().splitlines():
        if line.startswith("tidepool_queue_depth "):
            return int(line.split()[1])
    raise AssertionError("no tidepool_queue_depth in /metrics")


def test_open_sessions_quota():
    s = Server("--tokens", tokens_file([tenant("acme", quotas={"open_sessions": 1}), tenant("globex")]))
    try:
        acme, globex = session(s, "acme"), session(s, "globex")
        _, _, m = s.post(rq(1, "sandbox/session/open", {"lang": "lua"}), headers=acme)
        assert m["result"]["session_id"]
        _, _, m = s.post(rq(2, "sandbox/session/open", {"lang": "lua"}), headers=acme)
        assert m["error"] == {"code": -32001, "message": "quota: tenant 'acme' has 1 sessions open, the "
                              "most its open_sessions quota allows; close one (sandbox/session/close)"}
        assert s.post(rq(3, "sandbox/session/open", {"lang": "lua"}), headers=globex)[2]["result"]
    finally:
        s.stop()


def test_workspace_bytes_quota_reserves_each_sessions_limit():
    s = Server("--tokens", tokens_file([tenant("acme", quotas={"workspace_bytes": 20 << 20}),
                                        tenant("globex")]))
    try:
        acme, globex = session(s, "acme"), session(s, "globex")
        _, _, m = s.post(rq(1, "sandbox/session/open", {"lang": "lua", "policy": "standard"}),
                         headers=acme)
        if m["result"].get("workspace") is None:
            pytest.skip("no workspaces on this kernel (Landlock absent): the quota has nothing to hold")
        first = m["result"]["session_id"]
        _, _, m = s.post(rq(2, "sandbox/session/open", {"lang": "lua", "policy": "standard"}),
                         headers=acme)
        assert m["error"] == {"code": -32001, "message": "quota: tenant 'acme' holds 16777216 of its "
                              "20971520 workspace bytes in open sessions, and a session under policy "
                              "'standard' reserves 16777216; close one (sandbox/session/close)"}
        # strict has no workspace: it reserves nothing
        assert s.post(rq(3, "sandbox/session/open", {"lang": "lua", "policy": "strict"}),
                      headers=acme)[2]["result"]["session_id"]
        assert s.post(rq(4, "sandbox/session/close", {"session_id": first}), headers=acme)[2]["result"]
        assert s.post(rq(5, "sandbox/session/open", {"lang": "lua", "policy": "standard"}),
                      headers=acme)[2]["result"]["session_id"]
    finally:
        s.stop()


# -- the file and the command line ------------------------------------------------------------

def start_fails(args):
    r = subprocess.run([BINARY, *args], stdin=subprocess.DEVNULL, capture_output=True, env=ENV, timeout=10)
    return r.returncode, r.stderr.decode().splitlines()[-1]


@pytest.mark.parametrize("tenants, message", [
    ([{"name": "a", "tokens_sha256": ["abc"], "policies": ["standard"]}],
     "tenant 'a': 'abc' is not a SHA-256 digest (64 lowercase hex digits)"),
    ([{"name": "a", "tokens_sha256": [digest("x")], "policies": ["nope"]}], "tenant 'a': unknown policy 'nope'"),
    ([{"name": "a", "tokens_sha256": [digest("x")], "policies": ["standard"], "extra": 1}],
     "tenant 'a': unknown key 'extra'"),
    ([{"name": "A B", "tokens_sha256": [digest("x")], "policies": ["standard"]}],
     "a tenant's name must be 1 to 63 of a-z, 0-9, '-' and '_'"),
    ([{"name": "a", "tokens_sha256": [digest("x")], "policies": ["standard"]},
      {"name": "b", "tokens_sha256": [digest("x")], "policies": ["standard"]}], "tenants 'a' and 'b' share a token"),
    ([{"name": "a", "tokens_sha256": [digest("x")], "policies": ["standard"], "default_policy": "strict"}],
     "tenant 'a': default_policy must be one of its policies"),
    ([{"name": "a", "tokens_sha256": [digest("x")], "policies": ["standard"], "quotas": {"open_sessions": 0}}],
     "tenant 'a': quota 'open_sessions' must be an integer from 1 to 1000000 (workspace_bytes: any "
     "positive integer)"),
    ([], "must be {\"tenants\": [1 to 1024 tenants]}"),
])
def test_a_bad_tokens_file_stops_the_start(tenants, message):
    path = tokens_file(tenants)
    rc, last = start_fails(["--listen", "http://127.0.0.1:0", "--tokens", path])
    assert (rc, last) == (2, f"tidepool: --tokens {path}: {message}")


def test_a_missing_or_huge_tokens_file_stops_the_start(tmp_path):
    rc, last = start_fails(["--listen", "http://127.0.0.1:0", "--tokens", "/nonexistent/tokens.json"])
    assert (rc, last) == (2, "tidepool: --tokens /nonexistent/tokens.json: No such file or directory")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (4 << 20) + b"{}")
    rc, last = start_fails(["--listen", "http://127.0.0.1:0", "--tokens", str(big)])
    assert (rc, last) == (2, f"tidepool: --tokens {big}: larger than 4 MiB")
    bad = tmp_path / "bad.json"
    bad.write_text('{"tenants": [}')
    rc, last = start_fails(["--listen", "http://127.0.0.1:0", "--tokens", str(bad)])
    assert (rc, last) == (2, f"tidepool: --tokens {bad}: line 1: unexpected token near '}}'")


def start_beyond_loopback(path):
    """A host bound to 0.0.0.0 with the tokens at path: (its process, its
    "listening on" log line)."""
    p = subprocess.Popen([BINARY, "--listen", "http://0.0.0.0:0", "--tokens", path],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    line = b""
    while b"listening on" not in line:
        line = p.stderr.readline()
        assert line, "exited"
    return p, line


def test_tokens_need_http_and_allow_binding_beyond_loopback():
    path = tokens_file([tenant("acme")])
    assert start_fails(["--tokens", path]) == (2, "tidepool: --tokens needs --listen http://ADDR:PORT "
                                                  "(tokens are HTTP's bearer tokens)")
    p, line = start_beyond_loopback(path)
    try:
        assert line.decode().startswith("tidepool: listening on http://0.0.0.0:")
    finally:
        p.terminate()
        p.wait(10)


def test_beyond_loopback_any_host_name_is_served_and_browsers_are_not():
    """Bound to 0.0.0.0 (tokens given), callers are told apart by their tokens,
    whatever name reached the server; a browser's request (it sends Origin) is
    refused, since no page should carry a tenant's token."""
    import http.client
    path = tokens_file([tenant("acme")])
    p, line = start_beyond_loopback(path)
    try:
        port = int(line.decode().rsplit(":", 1)[1].split("/")[0])

        def post(headers):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("POST", "/mcp", body=json.dumps(rq(1, "ping")),
                      headers={"Content-Type": "application/json", "Host": "tidepool.svc:8080", **headers})
            r = c.getresponse()
            return r.status, json.loads(r.read())
        assert post(auth("acme")) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
        assert post({})[0] == 401
        status, m = post({**auth("acme"), "Origin": "http://tidepool.svc:8080"})
        assert (status, m["error"]["message"]) == (403, "Forbidden: browser origins are served only on loopback")
    finally:
        p.terminate()
        p.wait(10)


def test_on_loopback_with_tokens_host_and_origin_are_still_checked(two):
    status, _, m = two.post(rq(1, "ping"), headers={**auth("acme"), "Origin": "http://evil.example"})
    assert (status, m["error"]["message"]) == (403, "Forbidden: Origin is not a loopback origin")


def test_token_new_and_hash():
    r = subprocess.run([BINARY, "token", "new"], capture_output=True, env=ENV, timeout=10, check=True)
    tok_line, sha_line = r.stdout.decode().splitlines()
    tok = tok_line.split()[1]
    assert tok_line.startswith("token:  tp_") and len(tok) == 67 and int(tok[3:], 16) >= 0
    assert sha_line == "sha256: " + digest(tok)
    r = subprocess.run([BINARY, "token", "hash"], input=(tok + "\n").encode(), capture_output=True,
                       env=ENV, timeout=10, check=True)
    assert r.stdout.decode() == digest(tok) + "\n"
    r = subprocess.run([BINARY, "token", "hash"], input=b"", capture_output=True, env=ENV, timeout=10)
    assert (r.returncode, r.stderr.decode()) == (2, "tidepool: token hash: give one token (1 to 512 "
                                                     "bytes) on stdin\n")


def test_mcp_sessions_are_bounded_overall_and_per_tenant():
    """A client that never sends DELETE leaves its MCP session open for an
    hour: how many may be open is bounded (4096; a tenant a quarter of it), so
    no caller can pile them up. Lowered here to 8 by the test knob."""
    import test_http
    old = dict(test_http.ENV)
    test_http.ENV["TIDEPOOL_HTTP_SESSIONS_MAX"] = "8"
    try:
        s = Server("--tokens", tokens_file([tenant("acme"), tenant("globex")]))
    finally:
        test_http.ENV.clear()
        test_http.ENV.update(old)
    try:
        a = [session(s, "acme") for _ in range(2)]
        status, headers, m = s.post(rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
                                    headers=auth("acme"))
        assert (status, m["error"]) == (503, {"code": -32001, "message": "Service Unavailable: this tenant "
                                              "has too many MCP sessions open; end one (DELETE)"})
        assert "Mcp-Session-Id" not in headers
        g = [session(s, "globex") for _ in range(2)]  # the other tenant is not held back
        assert s.request("DELETE", headers=a[0])[0] == 200
        a.append(session(s, "acme"))  # room again
        assert len({h["Mcp-Session-Id"] for h in a + g}) == 5
    finally:
        s.stop()
    test_http.ENV["TIDEPOOL_HTTP_SESSIONS_MAX"] = "8"
    try:
        s = Server()
    finally:
        del test_http.ENV["TIDEPOOL_HTTP_SESSIONS_MAX"]
    try:
        for _ in range(8):
            assert s.post(rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}))[0] == 200
        status, _, m = s.post(rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}))
        assert (status, m["error"]["message"]) == (503, "Service Unavailable: too many MCP sessions are open; "
                                                        "end one (DELETE) or retry later")
        assert s.post(rq(2, "ping"))[2]["result"] == {}  # a stateless POST is still served
    finally:
        s.stop()
