#!/usr/bin/env python3
"""make fleet: three tidepool replicas behind Debian's HAProxy on loopback, with
session affinity by the MCP session header (deploy/haproxy.cfg), two tenants
(--tokens), and a load generator of many clients, each one an MCP session that
opens a sandbox session, runs execs that keep state, writes and reads a file,
answers a snippet's tool call, and ends with DELETE. Mid-run one replica is
killed (SIGKILL). Checked:

- every client whose session lived on the killed replica sees its session lost
  clearly (404 with the JSON-RPC error -32002; for a request in flight at the
  kill, 502, or its SSE stream cut before the reply), and no other client sees
  anything but correct answers;
- no request goes unanswered: every HTTP request gets a status in time;
- tenant isolation across the fleet: one tenant's MCP session id is 404 for the
  other's token.

Printed, never asserted (timing is make bench's business): execs per second
overall and per core, latency before and after the kill, sessions lost against
those on the killed replica, and one tenant's latency while the other floods
past its quota. FLEET_FULL=1 runs more clients for longer."""
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BINARY = os.path.abspath(os.environ.get("TIDEPOOL", "build/tidepool"))
HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "..", "deploy", "haproxy.cfg")
FULL = os.environ.get("FLEET_FULL", "") not in ("", "0")
CLIENTS = 48 if FULL else 12
STEPS = 400 if FULL else 60
PACE = 0.05  # seconds between a client's steps: the run outlasts the kill
REPLICAS = 3
TOKENS = {"acme": "tp_fleet-acme-token", "globex": "tp_fleet-globex-token",
          "initech": "tp_fleet-initech-token"}
TIMEOUT = 30  # an HTTP request not answered in this long is a failure: "unanswered"
TOOL_LUA = "local v = tools.call('add', {a = n, b = 1000}) return v"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Replica:
    def __init__(self, i, workdir, tokens, policy_dir):
        self.name = f"r{i}"
        self.audit = os.path.join(workdir, f"audit-{self.name}.jsonl")
        self.proc = subprocess.Popen(
            [BINARY, "--listen", "http://127.0.0.1:0", "--tokens", tokens, "--policy-dir", policy_dir,
             "--policy", "fleet", "--audit", self.audit, "--drain-timeout", "0", "--jobs", "2"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = b""
        deadline = time.monotonic() + 20
        while b"listening on" not in line:
            assert time.monotonic() < deadline and self.proc.poll() is None, line
            line = self.proc.stderr.readline()
        self.port = int(line.decode().rsplit(":", 1)[1].split("/")[0])
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def sessions(self):
        """The sandbox session ids this replica ran execs in (its audit log)."""
        if not os.path.exists(self.audit):
            return set()
        with open(self.audit) as f:
            return {json.loads(x).get("session") for x in f if x.strip()} - {None}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Lost(Exception):
    """The client's MCP session is gone (its replica died)."""


class Client:
    def __init__(self, port, tenant):
        self.port, self.tenant = port, tenant
        self.conn = None
        self.sid = None
        self.lat = []  # (time, seconds) of each exec

    def _conn(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        return self.conn

    def post(self, msg, accept="application/json, text/event-stream", on_event=None, side=False):
        """One POST; side: on a connection of its own (a tool's answer, sent
        while the call's SSE stream is being read on the main one)."""
        h = {"Content-Type": "application/json", "Accept": accept,
             "Authorization": "Bearer " + TOKENS[self.tenant]}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        for attempt in range(2):  # a keep-alive connection the proxy closed: once more
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT) if side else self._conn()
            try:
                c.request("POST", "/mcp", body=json.dumps(msg), headers=h)
                r = c.getresponse()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not side:
                    self.conn = None
                if attempt:
                    raise
        if r.status in (404, 502, 503):
            body = r.read()
            if not side:
                self.conn = None
            raise Lost((r.status, body[:200]))
        assert r.status in (200, 202), (r.status, r.read()[:300])
        if r.getheader("Content-Type") == "text/event-stream":
            reply = None
            while True:
                line = r.readline()
                if not line:
                    break
                if line.startswith(b"data: "):
                    m = json.loads(line[6:])
                    if "method" in m:
                        on_event(m)
                    else:
                        reply = m
            if reply is None:  # the stream was cut before its reply: its replica died
                self.conn = None
                raise Lost((r.status, b"the SSE stream ended without the reply"))
            return r.status, reply
        body = r.read()
        return r.status, (json.loads(body) if body else None)

    def initialize(self):
        c = self._conn()
        c.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}}}),
            headers={"Content-Type": "application/json", "Accept": "application/json",
                     "Authorization": "Bearer " + TOKENS[self.tenant]})
        r = c.getresponse()
        r.read()
        assert r.status == 200
        self.sid = r.getheader("Mcp-Session-Id")
        assert self.sid and len(self.sid) == 32

    def answer_tool(self, m):
        assert m["method"] == "sandbox/tool_call" and m["params"]["name"] == "add", m
        a = m["params"]["arguments"]
        status, _ = self.post({"jsonrpc": "2.0", "id": m["id"], "result": a["a"] + a["b"]}, side=True)
        assert status == 202

    def call(self, i, method, params):
        t0 = time.monotonic()
        status, m = self.post({"jsonrpc": "2.0", "id": i, "method": method, "params": params},
                              on_event=self.answer_tool)
        if method == "sandbox/exec":
            self.lat.append((t0, time.monotonic() - t0))
        assert m is not None and m["id"] == i, m
        return m


def run_client(cl, out, has_files, stop_at):
    """One client's whole life; out gets (outcome, detail)."""
    try:
        cl.initialize()
        m = cl.call(1, "sandbox/session/open", {"lang": "lua"})
        cl.tp_session = m["result"]["session_id"]
        for i in range(STEPS):
            if time.monotonic() > stop_at:
                break
            m = cl.call(10 + i, "sandbox/exec", {"session_id": cl.tp_session, "lang": "lua",
                                                  "code": "n = (n or 0) + 1 return n"})
            assert m["result"]["value"] == i + 1, m
            if i % 4 == 1:
                m = cl.call(10000 + i, "sandbox/exec", {"session_id": cl.tp_session, "lang": "lua",
                                                         "code": TOOL_LUA})
                assert m["result"]["value"] == i + 1001, m
            if i % 4 == 3 and has_files:
                data = f"{cl.tenant}:{i}".encode()
                import base64
                m = cl.call(20000 + i, "sandbox/session/files/put", {
                    "session_id": cl.tp_session, "path": "f.txt", "data": base64.b64encode(data).decode()})
                assert m["result"]["bytes"] == len(data), m
                m = cl.call(30000 + i, "sandbox/session/files/get", {"session_id": cl.tp_session, "path": "f.txt"})
                assert base64.b64decode(m["result"]["data"]) == data, m
            time.sleep(PACE)
        c = cl._conn()
        c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": cl.sid, "Authorization": "Bearer " + TOKENS[cl.tenant]})
        r = c.getresponse()
        r.read()
        if r.status == 404:
            raise Lost((404, b"at DELETE"))
        assert r.status == 200, r.status
        out.append(("done", None))
    except Lost as e:
        out.append(("lost", e.args[0]))
    except socket.timeout as e:
        out.append(("unanswered", repr(e)))
    except Exception as e:  # noqa: BLE001 - any other outcome is a failure, reported whole
        out.append(("wrong", repr(e)))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


def flood_ratio(port, flooder):
    """acme's paced exec latency alone, then while another tenant floods it
    with short execs from 6 threads: (alone, during, refused, sent)."""
    acme = Client(port, "acme")
    acme.initialize()

    def paced(n):
        xs = []
        for i in range(n):
            t0 = time.monotonic()
            acme.call(i, "sandbox/exec", {"lang": "lua", "code": "return 1"})
            xs.append(time.monotonic() - t0)
            time.sleep(0.01)
        return xs
    alone = paced(80)
    stop = threading.Event()
    counts = [0, 0]

    def flood():
        g = Client(port, flooder)
        g.initialize()
        while not stop.is_set():
            try:
                m = g.call(1, "sandbox/exec", {"lang": "lua", "code":
                                               "local t=os.clock() while os.clock()-t < 0.02 do end"})
                counts[0] += "error" in m or (m["result"].get("error") or {}).get("kind") == "rate_limit"
                counts[1] += 1
            except Lost:
                pass
    fl = [threading.Thread(target=flood) for _ in range(6)]
    for t in fl:
        t.start()
    time.sleep(0.3)
    during = paced(80)
    stop.set()
    for t in fl:
        t.join(30)
    return statistics.median(alone), statistics.median(during), counts


def main():
    if shutil.which("haproxy") is None:
        print("# skip: make fleet: haproxy is not installed (Debian's haproxy package)")
        return 0
    work = tempfile.mkdtemp(prefix="tp-fleet-", dir="/tmp")
    tokens = os.path.join(work, "tokens.json")
    with open(tokens, "w") as f:
        json.dump({"tenants": [
            {"name": "acme", "tokens_sha256": [hashlib.sha256(TOKENS["acme"].encode()).hexdigest()],
             "policies": ["fleet"]},
            {"name": "globex", "tokens_sha256": [hashlib.sha256(TOKENS["globex"].encode()).hexdigest()],
             "policies": ["fleet"], "quotas": {"concurrent_execs": 1, "execs_per_minute": 3000}},
            {"name": "initech", "tokens_sha256": [hashlib.sha256(TOKENS["initech"].encode()).hexdigest()],
             "policies": ["fleet"]}]}, f)
    pol = os.path.join(work, "policies")
    os.mkdir(pol)
    with open(os.path.join(pol, "fleet.json"), "w") as f:
        json.dump({"name": "fleet", "extends": "standard", "tools": ["add"],
                   "session": {"max_sessions": 256}, "rate": {"per_minute": 100000,
                                                              "session_per_minute": 100000}}, f)
    os.chmod(work, 0o755)
    os.chmod(pol, 0o755)
    replicas = [Replica(i, work, tokens, pol) for i in range(REPLICAS)]
    port = free_port()
    servers = "\n".join(f"    server {r.name} 127.0.0.1:{r.port}" for r in replicas)
    with open(TEMPLATE) as f:
        cfg = f.read().replace("{bind}", f"127.0.0.1:{port}").replace("{servers}", servers)
    cfgpath = os.path.join(work, "haproxy.cfg")
    with open(cfgpath, "w") as f:
        f.write(cfg)
    hap = subprocess.Popen(["haproxy", "-db", "-f", cfgpath], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    failures = []
    try:
        deadline = time.monotonic() + 10
        while True:  # up, and every replica passed its health check
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/readyz", headers={"Host": "localhost"})
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and hap.poll() is None, hap.stderr.read()
            time.sleep(0.1)
        time.sleep(1.2)  # rise 2 x 500 ms: every server up
        probe = Client(port, "acme")
        probe.initialize()
        m = probe.call(1, "sandbox/session/open", {"lang": "lua"})
        has_files = m["result"].get("workspace") is not None
        if not has_files:
            print("# fleet: no workspaces on this kernel (no Landlock): the file steps are skipped")
        # Isolation across the fleet: acme's MCP session id with globex's token is 404.
        other = Client(port, "globex")
        other.sid = probe.sid
        try:
            other.call(2, "ping", {})
            failures.append("globex reached acme's MCP session")
        except Lost as e:
            if e.args[0][0] != 404:
                failures.append(f"cross-tenant request got {e.args[0]}")

        clients = [Client(port, "acme" if i % 2 == 0 else "globex") for i in range(CLIENTS)]
        outs = [[] for _ in clients]
        t_start = time.monotonic()
        stop_at = t_start + (300 if FULL else 45)
        threads = [threading.Thread(target=run_client, args=(cl, outs[i], has_files, stop_at))
                   for i, cl in enumerate(clients)]
        for t in threads:
            t.start()
            time.sleep(0.02)
        time.sleep(1.2 if not FULL else 8.0)
        victim = replicas[1]
        on_victim_before = victim.sessions()
        t_kill = time.monotonic()
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        for t in threads:
            t.join(TIMEOUT + 60)
            if t.is_alive():
                failures.append("a client thread never finished: a request went unanswered")
        elapsed = time.monotonic() - t_start
        on_victim = victim.sessions()
        assert on_victim_before <= on_victim
        lost_expected = {cl for cl in clients if getattr(cl, "tp_session", None) in on_victim}
        results = {cl: (o[0] if o else ("none", None)) for cl, o in zip(clients, outs)}
        for cl, (outcome, detail) in results.items():
            if cl in lost_expected and outcome != "lost":
                # one that finished before the kill is fine
                if outcome != "done":
                    failures.append(f"client on the killed replica: {outcome} {detail}")
            elif cl not in lost_expected and outcome != "done":
                failures.append(f"client on a live replica: {outcome} {detail}")
        lost = [cl for cl, (o, _) in results.items() if o == "lost"]
        for cl in lost:
            status, body = results[cl][1]
            if status == 404 and b"-32002" not in body and body != b"at DELETE" or \
                    status not in (404, 502, 503, 200):
                failures.append(f"lost without the clear error: {status} {body!r}")
        execs = sum(len(cl.lat) for cl in clients)
        before = [d for cl in clients for (t, d) in cl.lat if t < t_kill]
        after = [d for cl in clients for (t, d) in cl.lat if t >= t_kill + 1.0]
        print(f"fleet: {REPLICAS} replicas behind HAProxy, {CLIENTS} clients x {STEPS} steps, "
              f"{'full' if FULL else 'short'} form")
        print(f"  execs: {execs} in {elapsed:.1f} s = {execs / elapsed:.0f}/s, "
              f"{execs / elapsed / (os.cpu_count() or 1):.0f}/s per core ({os.cpu_count()} cores, "
              f"the load generator on them too)")
        print(f"  latency before the kill: p50 {pct(before, 0.5):.2f} ms, p99 {pct(before, 0.99):.2f} ms; "
              f"after (from 1 s on): p50 {pct(after, 0.5):.2f} ms, p99 {pct(after, 0.99):.2f} ms")
        print(f"  sessions on the killed replica: {len(lost_expected)}; lost: {len(lost)} "
              f"(the others finished before the kill); live replicas' clients done: "
              f"{sum(1 for cl in clients if cl not in lost_expected and results[cl][0] == 'done')}"
              f"/{sum(1 for cl in clients if cl not in lost_expected)}")
        for flooder, what in (("initech", "a tenant with no quotas"),
                              ("globex", "a tenant held to concurrent_execs 1")):
            alone, during, n = flood_ratio(port, flooder)
            print(f"  acme's paced exec p50 {alone * 1000:.2f} ms alone, {during * 1000:.2f} ms while "
                  f"{what} floods (ratio {during / alone:.2f}; {n[1]} flood execs, {n[0]} refused)")
    finally:
        hap.terminate()
        try:
            hap.wait(10)
        except subprocess.TimeoutExpired:
            hap.kill()
        for r in replicas:
            r.stop()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
