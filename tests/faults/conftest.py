"""Fault-injection suite: the real binary (and a test-only fake) under abuse."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from faultlib import Host  # noqa: E402


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # Print why a test was skipped (a build or kernel feature absent), also under -q.
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and "s" not in tr.reportchars:
        tr.reportchars += "s"


@pytest.fixture
def host():
    h = Host()
    yield h
    h.close()
