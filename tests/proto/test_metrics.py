"""GET /metrics (docs/deploy.md, "Metrics"): the Prometheus text format 0.0.4,
parsed strictly by Debian's prometheus_client and line by line; every counter
moves by exactly what was done."""
import json
import re
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from test_http import Server, open_session, rq, srv  # noqa: F401 (srv: the fixture)
from test_tenants import TOKENS, auth, tenant, tokens_file

NAMES = {"tidepool_build_info", "tidepool_ready", "tidepool_execs", "tidepool_exec_duration_seconds",
         "tidepool_queue_wait_seconds", "tidepool_workers", "tidepool_sessions_open", "tidepool_queue_depth",
         "tidepool_clients", "tidepool_zygote_restarts", "tidepool_bytes_received", "tidepool_bytes_sent",
         "tidepool_metrics_series_dropped", "tidepool_worker_cpu_seconds", "tidepool_workers_measured",
         "tidepool_workers_unmeasured", "tidepool_zygote_cpu_seconds", "process_cpu_seconds"}
PHASES = ("start", "rehearsal", "request", "exec", "reply", "exit")
LINE = re.compile(r'^[a-z_]+(\{([a-z_]+="([^"\\\n]|\\.)*",?)*\})? -?[0-9.e+-]+$|^# (HELP|TYPE) [a-z_]+ .+$')


def scrape(srv):
    status, headers, raw = srv.request("GET", path="/metrics")
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = raw.decode()
    assert text.endswith("\n")
    for line in text.splitlines():
        assert LINE.match(line), line
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(fams) == NAMES, set(fams) ^ NAMES
    return fams


def value(fams, fam, name, **labels):
    got = [s.value for s in fams[fam].samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(got) <= 1, got
    return got[0] if got else 0.0


def test_counters_move_by_what_was_done(srv):
    before = scrape(srv)
    ok = srv.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 1"}))[2]["result"]
    assert ok["ok"] is True
    r = srv.post(rq(2, "sandbox/exec", {"lang": "lua", "code": "while true do end", "limits": {"cpu_ms": 100}}))[2]
    assert (r["result"]["error"]["kind"], r["result"]["error"]["layer"]) == ("cpu_limit", "language")
    r = srv.post(rq(3, "sandbox/exec", {"lang": "python", "code": "import socket"}))[2]
    kind, layer = r["result"]["error"]["kind"], r["result"]["error"]["layer"]
    assert kind == "policy_violation"
    r = srv.post(rq(4, "sandbox/exec", {"lang": "python", "code": "x = bytearray(10**9)"}))[2]
    assert r["result"]["error"]["kind"] == "memory_limit"
    after = scrape(srv)
    E = "tidepool_execs_total"
    for labels, n in ((dict(language="lua", policy="standard", kind="ok", layer="none", tenant=""), 1),
                      (dict(language="lua", policy="standard", kind="cpu_limit", layer="language"), 1),
                      (dict(language="python", policy="standard", kind=kind, layer=layer), 1),
                      (dict(language="python", policy="standard", kind="memory_limit", layer="language"), 1)):
        assert value(after, "tidepool_execs", E, **labels) - value(before, "tidepool_execs", E, **labels) == n, labels
    total = sum(s.value for s in after["tidepool_execs"].samples if s.name == E)
    assert total - sum(s.value for s in before["tidepool_execs"].samples if s.name == E) == 4
    H = "tidepool_exec_duration_seconds"
    assert value(after, H, H + "_count", language="lua") - value(before, H, H + "_count", language="lua") == 2
    assert value(after, H, H + "_count", language="python") - value(before, H, H + "_count", language="python") == 2
    inf = value(after, H, H + "_bucket", language="lua", le="+Inf")
    assert inf == value(after, H, H + "_count", language="lua")
    # the timed-out exec (100 ms of CPU) is past the 0.1 s bucket, the first not
    assert value(after, H, H + "_bucket", language="lua", le="0.05") == inf - 1
    assert value(after, "tidepool_ready", "tidepool_ready") == 1
    D = "tidepool_metrics_series_dropped"
    assert value(after, D, D + "_total") == 0
    assert value(after, "tidepool_build_info", "tidepool_build_info", version="0.1.0") == 1
    rx = value(after, "tidepool_bytes_received", "tidepool_bytes_received_total")
    assert rx - value(before, "tidepool_bytes_received", "tidepool_bytes_received_total") >= 4 * 60


def test_worker_cpu_by_phase(srv):
    """Each one-shot worker reaped after its answer adds its CPU by phase; the
    exec phase is exactly the execs' own usage.cpu_ms; a session's worker is
    not a one-shot's and adds nothing (tests/unit/test_metrics.c holds the
    arithmetic and forged stamps)."""
    W, M, U, Z = ("tidepool_worker_cpu_seconds", "tidepool_workers_measured", "tidepool_workers_unmeasured",
                  "tidepool_zygote_cpu_seconds")

    def measured(f, lang):
        return value(f, M, M + "_total", language=lang)

    before = scrape(srv)
    cpu = {"lua": 0.0, "python": 0.0}
    for i, (lang, code) in enumerate([("lua", "return 1"), ("python", "1+1")] * 3):
        r = srv.post(rq(10 + i, "sandbox/exec", {"lang": lang, "code": code}))[2]["result"]
        assert r["ok"] is True, r
        cpu[lang] += r["usage"]["cpu_ms"] / 1000
    deadline = time.monotonic() + 10
    while True:  # the workers are reaped after their answers
        after = scrape(srv)
        if all(measured(after, lang) - measured(before, lang) == 3 for lang in cpu):
            break
        assert time.monotonic() < deadline, [measured(after, lang) - measured(before, lang) for lang in cpu]
        time.sleep(0.05)
    for lang in cpu:
        assert value(after, U, U + "_total", language=lang) == value(before, U, U + "_total", language=lang)
        d = {p: value(after, W, W + "_total", language=lang, phase=p) -
             value(before, W, W + "_total", language=lang, phase=p) for p in PHASES}
        assert all(v >= 0 for v in d.values()), d
        assert d["start"] > 0 and d["exit"] > 0, d
        assert abs(d["exec"] - cpu[lang]) < 1e-5, (d["exec"], cpu[lang])
        assert value(after, Z, Z + "_total", language=lang) > 0
    assert value(after, "process_cpu_seconds", "process_cpu_seconds_total") > 0
    h = open_session(srv)
    sid = srv.post(rq(20, "sandbox/session/open", {"lang": "lua"}), headers=h)[2]["result"]["session_id"]
    r = srv.post(rq(21, "sandbox/exec", {"lang": "lua", "code": "return 2", "session_id": sid}), headers=h)[2]
    assert r["result"]["ok"] is True, r
    srv.post(rq(22, "sandbox/session/close", {"session_id": sid}), headers=h)
    time.sleep(0.3)
    assert measured(scrape(srv), "lua") == measured(after, "lua")


def test_gauges_say_what_is_there_now(srv):
    h = open_session(srv)
    _, _, m = srv.post(rq(2, "sandbox/session/open", {"lang": "python"}), headers=h)
    assert m["result"]["session_id"]
    f = scrape(srv)
    assert value(f, "tidepool_sessions_open", "tidepool_sessions_open", language="python") == 1
    assert value(f, "tidepool_workers", "tidepool_workers", language="python", state="session") == 1
    assert value(f, "tidepool_workers", "tidepool_workers", language="lua", state="warm") >= 1
    assert value(f, "tidepool_queue_depth", "tidepool_queue_depth") == 0
    assert value(f, "tidepool_clients", "tidepool_clients") >= 2  # stdio's and the MCP session's


def test_queue_depth_under_load_and_back_to_zero():
    s = Server("--jobs", "1")
    try:
        res = []
        spin = "local t=os.clock() while os.clock()-t < 0.4 do end return 1"
        ts = [threading.Thread(target=lambda: res.append(s.post(rq(1, "sandbox/exec", {"lang": "lua", "code": spin}))))
              for _ in range(3)]
        for t in ts:
            t.start()
        time.sleep(0.2)
        assert value(scrape(s), "tidepool_queue_depth", "tidepool_queue_depth") == 2
        busy = value(scrape(s), "tidepool_workers", "tidepool_workers", language="lua", state="busy")
        assert busy == 1
        for t in ts:
            t.join(10)
        f = scrape(s)
        assert value(f, "tidepool_queue_depth", "tidepool_queue_depth") == 0
        Q = "tidepool_queue_wait_seconds"
        assert value(f, Q, Q + "_count", language="lua") == 3
        assert value(f, Q, Q + "_bucket", language="lua", le="0.25") == 1  # the first did not wait
    finally:
        s.stop()


def test_tenant_label_and_no_token_needed_for_the_scrape():
    s = Server("--tokens", tokens_file([tenant("acme"), tenant("globex")]))
    try:
        for who in ("acme", "acme", "globex"):
            assert s.post(rq(1, "sandbox/exec", {"lang": "lua", "code": "return 1"}), headers=auth(who))[2]["result"]["ok"]
        f = scrape(s)
        E = "tidepool_execs_total"
        assert value(f, "tidepool_execs", E, tenant="acme", kind="ok") == 2
        assert value(f, "tidepool_execs", E, tenant="globex", kind="ok") == 1
    finally:
        s.stop()


def test_the_scrape_is_held_to_the_rebinding_checks(srv):
    status, _, raw = srv.request("GET", path="/metrics", headers={"Host": "evil.example"})
    assert status == 403 and b"tidepool_" not in raw


def test_draining_is_not_ready():
    import signal
    s = Server("--drain-timeout", "5")
    try:
        t = threading.Thread(target=lambda: s.post(rq(1, "sandbox/exec", {"lang": "lua", "code":
                                                   "local t=os.clock() while os.clock()-t < 0.8 do end"})))
        t.start()
        time.sleep(0.2)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        assert value(scrape(s), "tidepool_ready", "tidepool_ready") == 0
        t.join(10)
    finally:
        s.stop()
