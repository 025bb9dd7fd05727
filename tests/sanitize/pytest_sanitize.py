"""pytest plugin for `make test-sanitize` (loaded with -p pytest_sanitize).

The protocol suites end most hosts with SIGKILL (Host.close), so LeakSanitizer
would never run and a report on stderr would never be read. This plugin makes
Host.close end a host the way a client does, by closing stdin, waits for it,
and fails the test when the host (or its zygote, which shares its stderr)
printed a sanitizer report or exited with a sanitizer's status.
"""
import os
import signal
import subprocess

import pytest

MARKERS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:",
           b"SUMMARY: AddressSanitizer", b"SUMMARY: UndefinedBehaviorSanitizer")
LEAK_EXIT = 23  # LeakSanitizer's exitcode
reports = []


def _wrap(host_cls):
    orig_close = host_cls.close

    def close(self):
        p = self.proc
        err = b""
        if p.poll() is None:
            if p.stdin is not None and p.stdin.closed:
                p.stdin = None  # the test closed it already: communicate() must not flush
            try:
                _, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
        else:
            try:
                err = p.stderr.read() if p.stderr and not p.stderr.closed else b""
            except (OSError, ValueError):
                err = b""
        err = err or b""
        if any(m in err for m in MARKERS) or p.returncode == LEAK_EXIT:
            reports.append((os.environ.get("PYTEST_CURRENT_TEST", "?"), p.returncode,
                            err.decode("utf-8", "replace")))
        orig_close(self)

    host_cls.close = close


def pytest_plugin_registered(plugin, manager):
    host = getattr(plugin, "Host", None)
    if isinstance(host, type) and hasattr(host, "close") and not getattr(host, "_san", False):
        host._san = True
        _wrap(host)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    before = len(reports)
    yield
    if len(reports) > before:
        test, rc, err = reports[-1]
        pytest.fail(f"sanitizer report from the host (exit {rc}):\n{err[-8000:]}", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    if reports and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    for test, rc, err in reports:
        terminalreporter.write_line(f"SANITIZER: {test}: exit {rc}")
        terminalreporter.write_line(err[-4000:])
