"""The client's tests run against the real binary: $TIDEPOOL, else build/tidepool."""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # clients/python: `import tidepool`

import tidepool  # noqa: E402

BINARY = os.environ.get("TIDEPOOL") or os.path.join(HERE, "..", "..", "..", "build", "tidepool")
os.environ["TIDEPOOL"] = os.path.abspath(BINARY)

# The tools every test may call; `rm` is left out on purpose.
AGENT = {"name": "agent", "extends": "standard",
         "tools": ["add", "boom", "slow", "gate", "echo", "sleepy"],
         "session": {"workspace_bytes": 4096}}
ONE = {"name": "one", "extends": "standard", "session": {"max_sessions": 1}}


@pytest.fixture(scope="session")
def policy_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("policies")
    for p in (AGENT, ONE):
        (d / f"{p['name']}.json").write_text(json.dumps(p))
    return str(d)


@pytest.fixture(scope="session")
def agent_args(policy_dir):
    return ["--policy-dir", policy_dir, "--policy", "agent"]


@pytest.fixture(scope="module")
def tp(agent_args):
    """One client for a module's tests: under the `agent` policy."""
    with tidepool.Client(args=agent_args) as c:
        yield c
