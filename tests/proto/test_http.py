"""--listen http://127.0.0.1:PORT: MCP's Streamable HTTP transport, first step
(docs/clients.md, "HTTP"): POST answered with JSON, MCP sessions by
Mcp-Session-Id, DELETE, the stateless revision, native methods; Host and
Origin checked against DNS rebinding, body size, loopback-only binding. Every
refusal is proven: nothing ran (no audit line), no session was touched."""
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BINARY

ENV = {"PATH": "/usr/bin:/bin"}
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


class Server:
    def __init__(self, *args):
        """args: more of tidepool's; SIGTERM cancels at once (--drain-timeout 0)
        unless they say otherwise."""
        if "--drain-timeout" not in args:
            args = ("--drain-timeout", "0", *args)
        self.dir = tempfile.mkdtemp(prefix="tp-http-", dir="/tmp")
        self.audit = os.path.join(self.dir, "audit.jsonl")
        self.proc = subprocess.Popen([BINARY, "--listen", "http://127.0.0.1:0", "--audit", self.audit,
                                      *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=ENV)
        line = b""
        deadline = time.monotonic() + 10
        while b"listening on http://" not in line:
            assert time.monotonic() < deadline and self.proc.poll() is None, line
            line = self.proc.stderr.readline()
        url = line.decode().split("listening on ")[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        self.port = int(url.split(":")[2].split("/")[0])

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method, body=None, headers=None, path="/mcp", conn=None):
        c = conn or self.conn()
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        return r.status, dict(r.getheaders()), raw

    def post(self, msg, **kw):
        """The reply to msg: the JSON body, or an SSE stream's reply (its
        other messages are kept in self.events)."""
        status, headers, raw = self.request("POST", msg, **kw)
        self.events = []
        if headers.get("Content-Type") == "text/event-stream":
            self.events = sse_messages(raw)
            replies = [m for m in self.events if "method" not in m]
            assert len(replies) == 1 and self.events[-1] is replies[0], self.events
            return status, headers, replies[0]
        return status, headers, (json.loads(raw) if raw else None)

    def audit_lines(self):
        if not os.path.exists(self.audit):
            return []
        with open(self.audit) as f:
            return [json.loads(x) for x in f]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(10)


@pytest.fixture
def srv():
    s = Server()
    yield s
    s.stop()


def sse_messages(raw):
    """The messages of a whole SSE body, checked strictly: every event is
    'event: message' then one 'data:' line of JSON, then a blank line."""
    text = raw.decode()
    assert text.endswith("\n\n"), text
    out = []
    for block in text[:-2].split("\n\n"):
        lines = block.split("\n")
        assert lines[0] == "event: message" and len(lines) == 2, block
        assert lines[1].startswith("data: "), block
        out.append(json.loads(lines[1][len("data: "):]))
    return out


def rq(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return m


def test_a_native_exec_is_answered_as_json_when_only_json_is_accepted(srv):
    status, headers, m = srv.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 6*7"}),
                                  headers={"Accept": "application/json"})
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert m["id"] == 1 and m["result"]["ok"] is True and m["result"]["value"] == 42
    assert "Mcp-Session-Id" not in headers


def test_an_exec_is_answered_as_an_sse_stream_when_the_client_takes_one(srv):
    status, headers, raw = srv.request("POST", rq(1, "sandbox/exec", {"lang": "lua", "code": "return 6*7"}))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert headers["Cache-Control"] == "no-cache"
    (m,) = sse_messages(raw)
    assert m["id"] == 1 and m["result"]["value"] == 42
    # What the host answers while it reads the body comes back as JSON.
    status, headers, raw = srv.request("POST", rq(2, "ping"))
    assert (status, headers["Content-Type"], json.loads(raw)) == (
        200, "application/json", {"jsonrpc": "2.0", "id": 2, "result": {}})


def test_the_stateless_revision_needs_no_session(srv):
    status, _, m = srv.post(rq(1, "tools/call", {"name": "run_python", "arguments": {"code": "2**10"},
                                                  "_meta": MODERN}))
    assert status == 200
    assert m["result"]["structuredContent"]["value"] == 1024
    assert m["result"]["resultType"] == "complete"


def test_an_mcp_session_keeps_its_state_across_posts_until_delete(srv):
    status, headers, m = srv.post(rq(1, "initialize", {"protocolVersion": "2025-06-18",
                                                        "capabilities": {}}))
    assert status == 200 and m["result"]["protocolVersion"] == "2025-06-18"
    sid = headers["Mcp-Session-Id"]
    assert len(sid) == 32 and int(sid, 16) >= 0
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    status, headers, body = srv.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                        headers=h)
    assert (status, body) == (202, b"")
    _, _, m = srv.post(rq(2, "tools/call", {"name": "run_lua",
                                            "arguments": {"code": "x = 41 return x", "session": "new"}}),
                       headers=h)
    tp_session = m["result"]["structuredContent"]["session_id"]
    _, _, m = srv.post(rq(3, "tools/call", {"name": "run_lua",
                                            "arguments": {"code": "return x + 1", "session": tp_session}}),
                       headers=h)
    assert m["result"]["structuredContent"]["value"] == 42
    # Another POST without the header is another client: it does not see it.
    _, _, m = srv.post(rq(4, "sandbox/session/list"))
    assert m["result"] == {"sessions": []}
    status, _, body = srv.request("DELETE", headers=h)
    assert (status, body) == (200, b"")
    status, _, m = srv.post(rq(5, "ping"), headers=h)
    assert status == 404
    assert m["error"] == {"code": -32002, "message": "Not Found: no MCP session has this Mcp-Session-Id"}
    status, _, m = srv.request("DELETE", headers=h)
    assert status == 404


def test_two_posts_on_one_session_get_each_their_own_reply(srv):
    _, headers, _ = srv.post(rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}))
    h = {"Mcp-Session-Id": headers["Mcp-Session-Id"]}
    out = {}

    def slow():
        out["slow"] = srv.post(rq(7, "sandbox/exec", {"lang": "lua", "code":
                               "local t=os.clock() while os.clock()-t < 0.4 do end return 'slow'"}),
                               headers=h)[2]
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    _, _, m = srv.post(rq(8, "ping"), headers=h)
    assert m == {"jsonrpc": "2.0", "id": 8, "result": {}}
    assert time.monotonic() - t0 < 0.3
    t.join(10)
    assert out["slow"]["id"] == 7 and out["slow"]["result"]["value"] == "slow"


def test_batches_under_2025_03_26_and_not_without(srv):
    _, headers, _ = srv.post(rq(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}}))
    h = {"Mcp-Session-Id": headers["Mcp-Session-Id"]}
    status, _, m = srv.post([rq(2, "ping"), rq(3, "ping")], headers=h)
    assert status == 200 and sorted(x["id"] for x in m) == [2, 3]
    status, _, m = srv.post([rq(2, "ping")])
    assert status == 400
    assert m["error"] == {"code": -32600, "message": "Invalid Request: batches are not supported"}


def test_not_json_is_400_with_the_parse_error(srv):
    status, _, raw = srv.request("POST", b"{not json")
    assert status == 400
    assert json.loads(raw)["error"]["code"] == -32700


@pytest.mark.parametrize("headers, message", [
    ({"Origin": "http://evil.example"}, "Forbidden: Origin is not a loopback origin"),
    ({"Origin": "http://127.0.0.1.evil.example"}, "Forbidden: Origin is not a loopback origin"),
    ({"Host": "evil.example:80"}, "Forbidden: the Host header must name this loopback server"),
    ({"Host": "localhost.evil.example"}, "Forbidden: the Host header must name this loopback server"),
])
def test_dns_rebinding_is_refused_and_nothing_runs(srv, headers, message):
    status, _, m = srv.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 1"}), headers=headers)
    assert status == 403
    assert m["error"] == {"code": -32600, "message": message}
    assert srv.audit_lines() == []


def test_loopback_origins_are_served(srv):
    for origin in ("http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443"):
        status, _, m = srv.post(rq(1, "ping"), headers={"Origin": origin})
        assert (status, m["result"]) == (200, {}), origin


def test_a_body_over_the_line_limit_is_413_and_not_run(srv):
    big = b'{"jsonrpc":"2.0","id":1,"method":"sandbox/exec","params":{"lang":"lua","code":"return 1 --' \
        + b"x" * (8 << 20) + b'"}}'
    status, _, raw = srv.request("POST", big)
    assert status == 413
    assert json.loads(raw)["error"] == {"code": -32600, "message": "Request body larger than 8388608 bytes"}
    assert srv.audit_lines() == []


def test_unsupported_protocol_version_header_is_400(srv):
    status, _, m = srv.post(rq(1, "ping"), headers={"MCP-Protocol-Version": "1999-01-01"})
    assert status == 400
    assert m["error"]["message"] == "Bad Request: unsupported MCP-Protocol-Version"


def test_other_methods_and_paths(srv):
    status, headers, _ = srv.request("GET")
    assert status == 405 and headers["Allow"] == "POST, DELETE"
    assert srv.request("PUT", b"{}")[0] == 405
    assert srv.request("GET", path="/other")[0] == 404
    assert srv.request("GET", path="/healthz")[::2] == (200, b"ok\n")
    assert srv.request("GET", path="/readyz")[::2] == (200, b"ready\n")
    status, _, m = srv.request("DELETE")
    assert status == 400


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_a_client_gone_mid_exec_cancels_a_stateless_exec(srv, accept):
    c = srv.conn()
    c.request("POST", "/mcp", body=json.dumps(rq(1, "sandbox/exec", {"lang": "lua",
              "code": "while true do end"})).encode(), headers={"Content-Type": "application/json",
                                                                 "Accept": accept})
    time.sleep(0.3)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    deadline = time.monotonic() + 5
    while not any(x.get("kind") == "cancelled" for x in srv.audit_lines()):
        assert time.monotonic() < deadline, srv.audit_lines()
        time.sleep(0.05)
    assert srv.post(rq(2, "ping"))[2]["result"] == {}


@pytest.fixture
def tooly(tmp_path):
    (tmp_path / "tooly.json").write_text(json.dumps({"name": "tooly", "extends": "standard",
                                                     "tools": ["add"]}))
    os.chmod(tmp_path, 0o755)
    s = Server("--policy-dir", str(tmp_path), "--policy", "tooly")
    yield s
    s.stop()


def open_session(srv, version="2025-06-18"):
    _, headers, m = srv.post(rq(1, "initialize", {"protocolVersion": version, "capabilities": {}}))
    assert m["result"]["protocolVersion"] == version
    return {"Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": version}


def read_event(r):
    """The next message of an SSE response being read."""
    assert r.readline() == b"event: message\n"
    data = r.readline()
    assert data.startswith(b"data: ") and r.readline() == b"\n", data
    return json.loads(data[len(b"data: "):])


TOOL_LUA = "local a = tools.call('add', {a = 40, b = 2}) print('got', a) return a"


def test_a_snippets_tool_call_goes_on_the_calls_stream_and_its_answer_in_a_post(tooly):
    h = open_session(tooly)
    c = tooly.conn()
    c.request("POST", "/mcp", body=json.dumps(rq(5, "tools/call", {
        "name": "run_lua", "arguments": {"code": TOOL_LUA}, "_meta": {"progressToken": "p1"}})),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **h})
    r = c.getresponse()
    assert (r.status, r.getheader("Content-Type")) == (200, "text/event-stream")
    seen = []
    while True:
        m = read_event(r)
        seen.append(m)
        if m.get("method") == "sandbox/tool_call":
            assert m["params"]["name"] == "add" and m["params"]["arguments"] == {"a": 40, "b": 2}
            assert m["params"]["exec_id"] == 5 and m["id"].startswith("tp-tool-")
            status, _, body = tooly.request("POST", {"jsonrpc": "2.0", "id": m["id"], "result": 42},
                                            headers=h)
            assert (status, body) == (202, b"")
        if "method" not in m:
            break
    assert r.read() == b""  # the stream ends with the reply
    assert seen[-1]["id"] == 5 and seen[-1]["result"]["structuredContent"]["value"] == 42
    assert seen[-1]["result"]["structuredContent"]["stdout"] == "got\t42\n"
    assert [m["method"] for m in seen[:-1]].count("sandbox/tool_call") == 1
    for m in seen[:-1]:  # nothing else but its own progress
        assert m["method"] in ("sandbox/tool_call", "notifications/progress"), m
        if m["method"] == "notifications/progress":
            assert m["params"]["progressToken"] == "p1"
    (line,) = [x for x in tooly.audit_lines() if x["tool_calls"]]
    assert line["tool_calls"] == [{"name": "add", "outcome": "sent"}]


def test_progress_goes_on_the_stream_of_the_call_it_is_about(srv):
    h = open_session(srv)
    _, _, m = srv.post(rq(2, "tools/call", {"name": "run_lua", "_meta": {"progressToken": 9}, "arguments": {
        "code": "local t=os.clock() while os.clock()-t < 1.2 do end return 'done'"}}), headers=h)
    assert m["result"]["structuredContent"]["value"] == "done"
    progress = [e for e in srv.events if e.get("method") == "notifications/progress"]
    assert progress and all(e["params"]["progressToken"] == 9 for e in progress), srv.events
    assert len(progress) == len(srv.events) - 1


def test_a_silent_sse_stream_gets_keep_alive_comments():
    s = Server.__new__(Server)
    old = dict(ENV)
    ENV["TIDEPOOL_SSE_KEEPALIVE_MS"] = "300"
    try:
        Server.__init__(s)
    finally:
        ENV.clear()
        ENV.update(old)
    try:
        status, headers, raw = s.request("POST", rq(1, "sandbox/exec", {"lang": "lua", "code":
                                         "local t=os.clock() while os.clock()-t < 1.2 do end return 1"}))
        assert headers["Content-Type"] == "text/event-stream"
        text = raw.decode()
        n = text.count(": keep-alive\n\n")
        assert 2 <= n <= 5, text
        (m,) = sse_messages(text.replace(": keep-alive\n\n", "").encode())
        assert m["result"]["value"] == 1
    finally:
        s.stop()


def test_stream_output_goes_on_the_exec_stream(srv):
    _, _, m = srv.post(rq(3, "sandbox/exec", {"lang": "python", "stream": True, "code":
                                              "import time\nprint('a', flush=True)\ntime.sleep(0.6)\n"
                                              "print('b')\n7"}))
    assert m["result"]["value"] == 7
    out = "".join(e["params"]["text"] for e in srv.events if e.get("method") == "sandbox/output")
    assert out == "a\nb\n", srv.events
    assert all(e["params"]["exec_id"] == 3 for e in srv.events[:-1])


@pytest.mark.parametrize("how, message", [
    ("stateless", "a tool call over HTTP needs an MCP session (initialize, then Mcp-Session-Id): "
                  "its answer comes in another POST"),
    ("json", "a tool call over HTTP needs a stream back: send Accept: application/json, "
             "text/event-stream"),
])
def test_a_tool_call_with_no_way_back_is_refused_and_never_sent(tooly, how, message):
    h = open_session(tooly) if how == "json" else {}
    if how == "json":
        h["Accept"] = "application/json"
    status, headers, m = tooly.post(rq(1, "sandbox/exec", {"lang": "lua", "code":
                                    "local ok, e = pcall(tools.call, 'add', {}) return e"}), headers=h)
    assert m["result"]["value"].endswith(message), m
    assert [e for e in tooly.events if "method" in e] == []  # no sandbox/tool_call went out
    (line,) = [x for x in tooly.audit_lines() if x["tool_calls"]]
    assert line["tool_calls"] == [{"name": "add", "outcome": "refused: no client"}]


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_a_cancelled_call_ends_its_post_without_a_reply(srv, accept):
    h = open_session(srv)
    c = srv.conn()
    c.request("POST", "/mcp", body=json.dumps(rq(5, "tools/call", {"name": "run_lua", "arguments": {
        "code": "while true do end"}})), headers={"Content-Type": "application/json", "Accept": accept, **h})
    time.sleep(0.3)
    status, _, body = srv.request("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                           "params": {"requestId": 5}}, headers=h)
    assert (status, body) == (202, b"")
    r = c.getresponse()
    if accept == "application/json":
        assert (r.status, r.read()) == (202, b"")
    else:
        assert (r.status, r.read()) == (200, b"")  # the stream ends with nothing said
    deadline = time.monotonic() + 5
    while not any(x.get("kind") == "cancelled" for x in srv.audit_lines()):
        assert time.monotonic() < deadline, srv.audit_lines()
        time.sleep(0.05)


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "application/json"])
def test_a_session_call_whose_client_hangs_up_runs_on(srv, accept):
    """A disconnection is not a cancel (the spec): the session's exec finishes,
    and the session keeps its state for the next POST."""
    h = open_session(srv)
    _, _, m = srv.post(rq(2, "tools/call", {"name": "run_lua", "arguments": {"code": "x = 1 return x",
                                                                             "session": "new"}}), headers=h)
    sess = m["result"]["structuredContent"]["session_id"]
    c = srv.conn()
    c.request("POST", "/mcp", body=json.dumps(rq(3, "tools/call", {"name": "run_lua", "arguments": {
        "code": "local t=os.clock() while os.clock()-t < 0.5 do end x = x + 1 return x", "session": sess}})),
        headers={"Content-Type": "application/json", "Accept": accept, **h})
    time.sleep(0.15)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    time.sleep(0.8)
    _, _, m = srv.post(rq(4, "tools/call", {"name": "run_lua", "arguments": {"code": "return x",
                                                                             "session": sess}}), headers=h)
    assert m["result"]["structuredContent"]["value"] == 2
    assert [x["ok"] for x in srv.audit_lines()] == [True, True, True]


def test_a_tool_answer_from_another_mcp_session_is_ignored(tooly):
    h, other = open_session(tooly), open_session(tooly)
    c = tooly.conn()
    c.request("POST", "/mcp", body=json.dumps(rq(5, "sandbox/exec", {"lang": "lua", "code": TOOL_LUA})),
              headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **h})
    r = c.getresponse()
    m = read_event(r)
    assert m["method"] == "sandbox/tool_call"
    assert tooly.request("POST", {"jsonrpc": "2.0", "id": m["id"], "result": 666}, headers=other)[0] == 202
    assert tooly.request("POST", {"jsonrpc": "2.0", "id": m["id"], "result": 42}, headers=h)[0] == 202
    m = read_event(r)
    assert m["id"] == 5 and m["result"]["value"] == 42, m


@pytest.mark.parametrize("spec, message", [
    ("http://0.0.0.0:8080", "tidepool: --listen http://0.0.0.0:8080: only a loopback address "
     "(127.0.0.1) may be bound without --tokens: nothing else tells one caller from another\n"),
    ("http://10.1.2.3:80", "tidepool: --listen http://10.1.2.3:80: only a loopback address "
     "(127.0.0.1) may be bound without --tokens: nothing else tells one caller from another\n"),
    ("http://127.0.0.1", "tidepool: --listen takes http://127.0.0.1:PORT (the endpoint is /mcp), "
     "not 'http://127.0.0.1'\n"),
    ("http://127.0.0.1:99999", "tidepool: --listen takes http://127.0.0.1:PORT (the endpoint is /mcp), "
     "not 'http://127.0.0.1:99999'\n"),
])
def test_binding_beyond_loopback_or_a_bad_spec_is_refused(spec, message):
    r = subprocess.run([BINARY, "--listen", spec], stdin=subprocess.DEVNULL, capture_output=True,
                       env=ENV, timeout=10)
    assert r.returncode == 2
    assert r.stderr.decode().splitlines(keepends=True)[-1] == message


def test_sigterm_answers_what_runs_and_exits(srv):
    out = {}

    def run():
        out["r"] = srv.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "while true do end"}))
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    assert srv.stop() == 128 + signal.SIGTERM
    t.join(5)
    status, _, m = out["r"]
    assert status == 200 and m["result"]["error"]["kind"] == "cancelled"


def test_sigterm_drains_what_runs_and_refuses_new_work():
    s = Server("--drain-timeout", "10")
    try:
        h = open_session(s)
        out = {}

        def run():
            out["r"] = s.post(rq(1, "sandbox/exec", {"lang": "lua", "code":
                              "local t=os.clock() while os.clock()-t < 1.0 do end return 'drained'"}))
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        assert s.request("GET", path="/readyz")[::2] == (503, b"draining\n")
        assert s.request("GET", path="/healthz")[::2] == (200, b"ok\n")
        status, _, m = s.post(rq(2, "sandbox/exec", {"lang": "lua", "code": "return 1"}))
        assert (status, m["error"]) == (503, {"code": -32001, "message":
                                              "Service Unavailable: draining (SIGTERM): retry on another replica"})
        status, _, m = s.post(rq(3, "tools/call", {"name": "run_lua", "arguments": {"code": "return 1"}}),
                              headers=h)
        assert (status, m["error"]) == (200, {"code": -32001, "message": "draining: this tidepool is shutting "
                                              "down (SIGTERM) and starts nothing new; retry on another"})
        assert s.post(rq(4, "ping"), headers=h)[2]["result"] == {}  # what starts nothing is served
        t.join(10)
        assert out["r"][2]["result"]["value"] == "drained"
        assert s.proc.wait(10) == 128 + signal.SIGTERM
        err = s.proc.stderr.read().decode()
        assert "tidepool: SIGTERM: draining: not ready, nothing new starts; 1 execs in flight may finish " \
               "for 10 s\n" in err, err
        assert [a["ok"] for a in s.audit_lines()] == [True]
    finally:
        s.stop()


def post_in_background(s, msg):
    """msg POSTed on a thread of its own: (the thread, where its answer goes)."""
    out = {}
    t = threading.Thread(target=lambda: out.update(r=s.post(msg)))
    t.start()
    return t, out


def test_a_drain_out_of_time_cancels_what_still_runs():
    s = Server("--drain-timeout", "1")
    try:
        t, out = post_in_background(s, rq(1, "sandbox/exec", {"lang": "lua", "code": "while true do end"}))
        time.sleep(0.3)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(10) == 128 + signal.SIGTERM
        assert 0.9 <= time.monotonic() - t0 < 5
        t.join(5)
        assert out["r"][2]["result"]["error"]["kind"] == "cancelled"
        assert out["r"][2]["result"]["error"]["message"] == "cancelled: tidepool received SIGTERM"
    finally:
        s.stop()


def test_a_second_sigterm_cancels_at_once():
    s = Server("--drain-timeout", "60")
    try:
        t, out = post_in_background(s, rq(1, "sandbox/exec", {"lang": "lua", "code": "while true do end"}))
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert s.proc.poll() is None
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(5) == 128 + signal.SIGTERM
        t.join(5)
        assert out["r"][2]["result"]["error"]["kind"] == "cancelled"
    finally:
        s.stop()


def test_log_format_json_writes_one_object_per_line():
    p = subprocess.Popen([BINARY, "--listen", "http://127.0.0.1:0", "--log-format", "json", "--drain-timeout", "0"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    lines = [p.stderr.readline(), p.stderr.readline()]
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 128 + signal.SIGTERM
    recs = [json.loads(x) for x in lines]
    for r in recs:
        assert set(r) == {"time", "level", "msg"} and r["level"] == "info"
        assert r["time"].endswith("Z") and len(r["time"]) == 24
    assert recs[0]["msg"].startswith("kernel: ") and recs[0]["msg"].endswith("; default policy: standard")
    assert recs[1]["msg"].startswith("listening on http://127.0.0.1:")
    r = subprocess.run([BINARY, "--log-format", "xml"], stdin=subprocess.DEVNULL, capture_output=True,
                       env=ENV, timeout=10)
    assert (r.returncode, r.stderr) == (2, b"tidepool: --log-format is text or json, not 'xml'\n")


def test_http_fuzz_leaves_the_server_serving(srv):
    """Seeded: raw connections send random request lines, headers and bodies,
    cut short at random; the server stays up and answers a steady client."""
    rng = random.Random(4242)
    methods = [b"POST", b"GET", b"DELETE", b"PUT", b"OPTIONS", b"\x00", b"POST POST"]
    paths = [b"/mcp", b"/", b"/healthz", b"/mcp/../x", b"*", b"/mcp?x=1", b"\xff"]
    bodies = [b'{"jsonrpc":"2.0","id":1,"method":"ping"}', b"[]", b"{", b"\xff\xfe",
              b'{"jsonrpc":"2.0","id":2,"method":"sandbox/exec","params":{"lang":"lua","code":"return 1"}}',
              b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}']
    for i in range(150):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        body = rng.choice(bodies) if rng.random() < 0.8 else bytes(rng.getrandbits(8) for _ in range(50))
        hdrs = [b"Host: 127.0.0.1", b"Content-Type: application/json"]
        if rng.random() < 0.3:
            hdrs.append(b"Mcp-Session-Id: " + bytes(rng.choice(b"0123456789abcdef") for _ in range(32)))
        if rng.random() < 0.2:
            hdrs.append(b"Transfer-Encoding: chunked")
        if rng.random() < 0.3:
            hdrs.append(b"Content-Length: " + str(rng.choice([len(body), 0, 5, 10**9, -1])).encode())
        else:
            hdrs.append(b"Content-Length: " + str(len(body)).encode())
        req = rng.choice(methods) + b" " + rng.choice(paths) + b" HTTP/1.1\r\n" + b"\r\n".join(hdrs) \
            + b"\r\n\r\n" + body
        if rng.random() < 0.3:
            req = req[:rng.randint(1, len(req))]
        try:
            s.sendall(req)
            if rng.random() < 0.5:
                s.settimeout(0.2)  # a request still waiting for its body gets no answer
                s.recv(4096)
        except OSError:
            pass
        s.close()
        if i % 25 == 0:
            assert srv.post(rq(100 + i, "ping"))[2]["result"] == {}
    assert srv.proc.poll() is None
    _, _, m = srv.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 'still'"}))
    assert m["result"]["value"] == "still"
