"""deploy/ (docs/deploy.md) agrees with the binary it deploys: every manifest
parses; the Deployment's and the Containerfile's command lines start a real
host; its probes' paths answer; the autoscaler's metric is one /metrics
exports; its capabilities are the systemd unit's; both HAProxy configurations
pass `haproxy -c` and share the affinity rules the fleet test proves."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest
import yaml

from conftest import BINARY
from test_http import ENV
from test_tenants import tenant, tokens_file

TOP = os.path.join(os.path.dirname(__file__), "..", "..")
DEPLOY = os.path.join(TOP, "deploy")


def docs(name):
    with open(os.path.join(DEPLOY, "k8s", name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kind(name, k):
    (d,) = [d for d in docs(name) if d["kind"] == k]
    return d


def test_every_manifest_parses_with_its_kinds():
    got = sorted((n, d["kind"]) for n in os.listdir(os.path.join(DEPLOY, "k8s")) for d in docs(n))
    assert got == [("autoscaler.yaml", "HorizontalPodAutoscaler"), ("haproxy.yaml", "ConfigMap"),
                   ("haproxy.yaml", "Deployment"), ("haproxy.yaml", "Service"),
                   ("tidepool.yaml", "Deployment"), ("tidepool.yaml", "NetworkPolicy"),
                   ("tidepool.yaml", "PodDisruptionBudget"), ("tidepool.yaml", "Service")]


def start(args, tmp):
    """The binary with a manifest's arguments, its paths moved under tmp and
    its address to a free loopback port: it must come up and answer probes."""
    toks = tokens_file([tenant("acme")])
    fixed = []
    for a in args:
        a = a.replace("/etc/tidepool/tokens.json", toks).replace("http://0.0.0.0:8080", "http://127.0.0.1:0")
        for d in ("/var/lib/tidepool", "/var/log/tidepool"):
            if a.startswith(d):
                os.makedirs(os.path.join(tmp, d.strip("/")), exist_ok=True)
                a = os.path.join(tmp, a.strip("/"))
        fixed.append(a)
    p = subprocess.Popen([BINARY, *fixed], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=ENV)
    port = None
    deadline = time.monotonic() + 10
    while port is None:
        assert time.monotonic() < deadline and p.poll() is None, p.stderr.read()
        line = p.stderr.readline().decode()
        msg = json.loads(line)["msg"] if line.startswith("{") else line
        if "listening on http://" in msg:
            port = int(msg.rsplit(":", 1)[1].split("/")[0])
    return p, port


def get(port, path):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read()


def test_the_deployments_command_line_starts_a_host_whose_probes_and_metric_answer(tmp_path):
    dep = kind("tidepool.yaml", "Deployment")
    (ct,) = dep["spec"]["template"]["spec"]["containers"]
    p, port = start(ct["args"], str(tmp_path))
    try:
        deadline = time.monotonic() + 10
        while get(port, ct["readinessProbe"]["httpGet"]["path"])[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert get(port, ct["livenessProbe"]["httpGet"]["path"]) == (200, b"ok\n")
        hpa = kind("autoscaler.yaml", "HorizontalPodAutoscaler")
        (metric,) = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]]
        status, page = get(port, "/metrics")
        assert status == 200 and re.search(rb"^" + metric.encode() + rb" \d+$", page, re.M), metric
        # the drain fits in the grace period
        drain = int(ct["args"][ct["args"].index("--drain-timeout") + 1])
        assert drain < dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    finally:
        p.terminate()
        p.wait(30)


def test_the_containerfiles_command_line_starts_a_host(tmp_path):
    with open(os.path.join(DEPLOY, "Containerfile")) as f:
        text = f.read()
    cmd = re.search(r'^CMD (\[.*?\])$', text.replace("\\\n", ""), re.M | re.S)
    args = json.loads(cmd.group(1))
    p, port = start(args, str(tmp_path))
    try:
        assert get(port, "/healthz") == (200, b"ok\n")
    finally:
        p.terminate()
        p.wait(30)


def test_capabilities_are_the_system_units():
    with open(os.path.join(TOP, "contrib", "systemd", "tidepool@.service")) as f:
        unit = re.search(r"^CapabilityBoundingSet=(.*)$", f.read(), re.M).group(1).split()
    ct = kind("tidepool.yaml", "Deployment")["spec"]["template"]["spec"]["containers"][0]
    sc = ct["securityContext"]
    assert sorted("CAP_" + c for c in sc["capabilities"]["add"]) == sorted(unit)
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False
    assert sc["runAsUser"] == 0  # the uid drop needs it (docs/deploy.md)


def affinity(text):
    return [l.strip() for l in text.splitlines() if l.strip().startswith(("stick", "balance", "option",
                                                                         "http-check", "retr"))]


def test_both_haproxy_configurations_check_and_share_the_affinity_rules(tmp_path):
    with open(os.path.join(DEPLOY, "haproxy.cfg")) as f:
        local = f.read()
    k8s = kind("haproxy.yaml", "ConfigMap")["data"]["haproxy.cfg"]
    assert affinity(local) == affinity(k8s)
    if shutil.which("haproxy") is None:
        pytest.skip("haproxy is not installed: the configurations were compared, not checked")
    a = tmp_path / "local.cfg"
    a.write_text(local.replace("{bind}", "127.0.0.1:18443").replace("{servers}", "    server r0 127.0.0.1:1"))
    b = tmp_path / "k8s.cfg"
    b.write_text(k8s)
    for cfg in (a, b):
        r = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr.decode() + r.stdout.decode()
