"""Fault-injection suite: the real binary (and a test-only fake) under abuse."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from faultlib import Host  # noqa: E402


@pytest.fixture
def host():
    h = Host()
    yield h
    h.close()
