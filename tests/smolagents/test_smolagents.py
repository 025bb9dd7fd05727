"""make smolagents: a real smolagents CodeAgent (the version pinned in
requirements.txt, from PyPI) runs its code in tidepool through
tidepool.smolagents.TidepoolExecutor, driven by a scripted model (canned code
blobs: no network, no LLM).

Run by the venv's python (build/smolagents-venv) with clients/python on
PYTHONPATH and $TIDEPOOL set; the policies are the files beside this one.
"""
import os
import sys

import pytest

from smolagents import CodeAgent, tool
from smolagents.default_tools import FinalAnswerTool
from smolagents.memory import ActionStep
from smolagents.models import ChatMessage, MessageRole, Model

import tidepool
from tidepool import Client
from tidepool.smolagents import SMOLAGENTS_VERSION, TidepoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TIDEPOOL = os.environ.get("TIDEPOOL")


class ScriptedModel(Model):
    """Returns the next canned step at each call; before_step[i] runs first (the
    test's hook between steps: recording, or killing the session)."""

    def __init__(self, steps, before_step=None):
        super().__init__(model_id="scripted")
        self.steps = list(steps)
        self.before_step = before_step or {}
        self.calls = 0

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        i = self.calls
        self.calls += 1
        if i >= len(self.steps):
            raise AssertionError(f"the agent asked for step {i + 1}; the script has "
                                 f"{len(self.steps)}")
        if i in self.before_step:
            self.before_step[i]()
        return ChatMessage(role=MessageRole.ASSISTANT,
                           content=f"Thought: step {i + 1}.\n<code>\n{self.steps[i]}\n</code>")


weather_calls = []


@tool
def get_weather(city: str, unit: str = "C") -> dict:
    """The weather in a city (a canned answer, recorded by the test).

    Args:
        city: the city's name.
        unit: "C" or "F".
    """
    weather_calls.append({"city": city, "unit": unit})
    return {"city": city, "temp": 70 if unit == "F" else 21, "unit": unit}


def action_steps(agent):
    return [s for s in agent.memory.steps if isinstance(s, ActionStep)]


@pytest.fixture(scope="module")
def client():
    with Client(TIDEPOOL, ["--policy-dir", HERE]) as c:
        yield c


@pytest.fixture(scope="module")
def no_data(client):
    r = client.run("import matplotlib.pyplot as plt\nplt.figure()", policy="smol-agent-data")
    return None if r.ok else f"the data preset cannot import matplotlib here ({r.error})"


def test_figure_step_runs(no_data):
    """Says (skipped, with the reason) when the agent run leaves out its figure step."""
    if no_data:
        pytest.skip(f"the agent run's figure step is left out: {no_data}")


def test_import_tidepool_alone():
    # the client itself has no dependencies; only tidepool.smolagents imports smolagents
    assert tidepool.__name__ == "tidepool"
    import subprocess
    out = subprocess.run([sys.executable, "-c", "import sys, tidepool; "
                          "print('smolagents' in sys.modules)"], capture_output=True, text=True,
                         env={**os.environ})
    assert out.stdout.strip() == "False", out.stderr


def test_pinned_version():
    import smolagents
    assert smolagents.__version__ == SMOLAGENTS_VERSION


def test_agent_steps_in_one_session(client, no_data):
    weather_calls.clear()
    steps = [
        'x = base * 4\nprint("x is", x)',
        'y = x + 2\nprint("y is", y)\ny',
        'w = get_weather("Paris", unit="F")\nprint(w["city"], w["temp"])',
        'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [base, x, y])\nplt.title("steps")\n'
        'print("plotted")',
        'final_answer({"y": y, "weather": w, "pair": (x, y), "n": len(weather_calls_seen)})',
    ]
    if no_data:  # the reason it cannot run
        del steps[3]
    seen = []
    executor = TidepoolExecutor(client=client,
                                policy="smol-agent" if no_data else "smol-agent-data")
    model = ScriptedModel(steps)
    # before each step after the first: which session the last one ran in
    model.before_step = {i: (lambda: seen.append(executor.last_execution.session_id))
                         for i in range(1, len(steps))}
    agent = CodeAgent(tools=[get_weather], model=model, executor=executor, max_steps=len(steps))
    try:
        answer = agent.run("Compute things.", additional_args={"base": 10,
                                                               "weather_calls_seen": [1]})
    finally:
        agent.cleanup()
    assert answer == {"y": 42, "weather": {"city": "Paris", "temp": 70, "unit": "F"},
                      "pair": (40, 42), "n": 1}
    acts = action_steps(agent)
    assert len(acts) == len(steps)
    assert all(a.error is None for a in acts), [str(a.error) for a in acts]
    assert "x is 40" in acts[0].observations
    assert "y is 42" in acts[1].observations and acts[1].action_output == 42
    assert "Paris 70" in acts[2].observations
    assert weather_calls == [{"city": "Paris", "unit": "F"}]  # on the host, by the callback
    if not no_data:
        img = acts[3].action_output
        assert "plotted" in acts[3].observations
        assert img.format == "PNG" and img.size == (640, 480), img
    assert acts[-1].is_final_answer
    # one session: opened once, every step in it
    assert executor.sessions_opened == 1
    assert len(set(seen)) == 1 and seen[0] == executor.last_execution.session_id
    # smolagents' base modules: those tidepool's catalog lacks are logged, the rest imported
    # standard offers every module smolagents' preamble imports (queue and stat included).
    assert executor.unavailable_modules == [], executor.unavailable_modules
    print(f"\n# smolagents' base modules this policy refuses: {executor.unavailable_modules}")
    assert executor.session is None  # cleanup closed it


def test_lost_session_is_reopened():
    """The executor's own tidepool (a policy it writes: standard + the tools); the
    session is closed behind its back between steps 1 and 2."""
    weather_calls.clear()
    executor = TidepoolExecutor(tidepool=TIDEPOOL)
    ids = []

    def kill():
        ids.append(executor.session.id)
        executor.client.request("sandbox/session/close", {"session_id": executor.session.id})

    steps = [
        'x = 1\nprint("x set", base)',
        'print(get_weather("Oslo"), base)',       # a new session: the tool and base again
        'print(x)',                                  # x was the lost session's
        'final_answer(base + 1)',
    ]
    agent = CodeAgent(tools=[get_weather], model=ScriptedModel(steps, {1: kill}),
                      executor=executor, max_steps=len(steps))
    try:
        answer = agent.run("Survive.", additional_args={"base": 10})
        assert answer == 11
        acts = action_steps(agent)
        assert "x set 10" in acts[0].observations
        assert acts[1].error is None and "Oslo" in acts[1].observations
        assert "10" in acts[1].observations
        assert weather_calls == [{"city": "Oslo", "unit": "C"}]
        assert "NameError" in str(acts[2].error)
        assert executor.sessions_opened == 2 and executor.session.id != ids[0]
        assert executor.session.policy == "smolagents-agent"
    finally:
        agent.cleanup()
    assert executor.client is None


def test_values_both_ways(client):
    """Variables, tool arguments and results, and final answers in smolagents'
    safe format; a final answer longer than an error message may be."""
    import datetime
    ex = TidepoolExecutor(client=client, policy="smol-agent")
    try:
        ex.send_tools({"get_weather": get_weather, "final_answer": FinalAnswerTool()})
        ex.send_variables({"when": datetime.date(2025, 3, 4), "tags": {"a", "b"},
                           "raw": b"\x00\x01", "pair": (1, "two")})
        out = ex("(when.year, sorted(tags), raw, pair)")
        assert out.output == "(2025, ['a', 'b'], b'\\x00\\x01', (1, 'two'))"  # repr: no JSON
        assert not out.is_final_answer
        out = ex('print("hi")\nfinal_answer({"long": "z" * 20000, "when": when, "s": tags})')
        assert out.is_final_answer and out.logs == "hi\n"
        assert out.output == {"long": "z" * 20000, "when": datetime.date(2025, 3, 4),
                              "s": {"a", "b"}}
        with pytest.raises(Exception) as e:
            ex("get_weather('a', 'b', 'c')")
        assert "takes 2 positional arguments" in str(e.value)
        with pytest.raises(Exception) as e:
            ex("1/0")
        assert "ZeroDivisionError" in str(e.value)
        out = ex('get_weather({"city": "Rome"})')  # one dict of the tool's inputs
        assert out.output == {"city": "Rome", "temp": 21, "unit": "C"}
    finally:
        ex.cleanup()
