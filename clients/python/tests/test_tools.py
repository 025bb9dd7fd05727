"""Tool callbacks: tidepool asks the client (sandbox/tool_call) and the client's function answers."""
import threading


def add(a, b):
    return a + b


def boom(**kw):
    raise ValueError(f"nope: {sorted(kw)}")


def test_registered_tool_python_and_lua(tp):
    tp.register_tool("add", add)
    r = tp.run("print(tools.add(a=1, b=2))\ntools.call('add', {'a': 5, 'b': 6})")
    assert (r.ok, r.stdout, r.value, r.usage["tool_calls"]) == (True, "3\n", 11, 2)
    r = tp.run("return tools.call('add', {a = 20, b = 22})", "lua")
    assert (r.ok, r.value) == (True, 42)


def test_per_run_tools_win_over_registered_ones(tp):
    tp.register_tool("echo", lambda **kw: {"from": "client", **kw})
    assert tp.run("tools.echo(x=[1, 2])").value == {"from": "client", "x": [1, 2]}
    r = tp.run("tools.echo(x=1)", tools={"echo": lambda **kw: {"from": "run", **kw}})
    assert r.value == {"from": "run", "x": 1}


def test_a_tool_that_raises_is_an_error_the_code_can_catch(tp):
    r = tp.run("try:\n    tools.boom(q=1)\nexcept tools.ToolError as e:\n    print(type(e).__name__, e)\n"
               "isinstance(tools.ToolError('x'), RuntimeError)", tools={"boom": boom})
    assert (r.ok, r.stdout, r.value) == (True, "ToolError ValueError: nope: ['q']\n", True)
    # Not caught: the exec fails with the tool's message.
    r = tp.run("return tools.call('boom', {})", "lua", tools={"boom": boom})
    assert (r.ok, r.error.kind, r.error.value) == (False, "runtime_error", "ValueError: nope: []")
    r = tp.run("tools.boom()", tools={"boom": boom})
    assert (r.error.name, r.error.kind, r.error.value) == (
        "ToolError", "runtime_error", "ValueError: nope: []")


def test_a_result_json_cannot_carry_is_an_error(tp):
    r = tp.run("tools.echo()", tools={"echo": lambda: {1, 2}})
    assert r.error.value == "TypeError: Object of type set is not JSON serializable"


def test_an_unknown_tool_is_answered_with_an_error(tp):
    r = tp.run("return tools.call('sleepy', {})", "lua")  # listed by the policy, not registered
    assert (r.error.kind, r.error.value) == ("runtime_error",
                                             "no tool 'sleepy' is registered with the client")


def test_the_policy_decides_which_tools_exist(tp):
    called = []
    r = tp.run("return tools.call('rm', {})", "lua", tools={"rm": lambda: called.append(1)})
    assert (r.error.kind, r.error.layer, r.error.value) == (
        "policy_violation", "host",
        "tool 'rm' is not allowed by policy 'agent' (its tools: add, boom, slow, gate, echo, sleepy)")
    assert called == [] and r.usage["tool_calls"] == 0


def test_a_slow_tool_does_not_block_other_runs(tp):
    release, entered = threading.Event(), threading.Event()

    def slow(x):
        entered.set()
        assert release.wait(30)
        return x * 2

    h = tp.run_async("tools.slow(x=21)", tools={"slow": slow})
    assert entered.wait(30)
    # While the tool waits, other runs (and other tools) complete.
    assert tp.run("1 + 1").value == 2
    assert tp.run("tools.add(a=1, b=1)", tools={"add": add}).value == 2
    assert not h.done()
    release.set()
    r = h.result(30)
    assert (r.ok, r.value, r.usage["tool_calls"]) == (True, 42, 1)


def test_many_slow_tools_at_once(tp):
    # Each call waits until all six are in the client at once: served one at a
    # time, the first would wait for ever (and fail at the barrier's timeout).
    barrier = threading.Barrier(6, timeout=60)

    def sleepy(i):
        barrier.wait()
        return i

    hs = [tp.run_async(f"tools.sleepy(i={i})", tools={"sleepy": sleepy}) for i in range(6)]
    assert [h.result(90).value for h in hs] == list(range(6))


def test_session_tool_calls(tp):
    with tp.session() as s:
        r = s.run("total = tools.add(a=2, b=3)\ntotal", tools={"add": add})
        assert r.value == 5
        assert s.run("total * 2").value == 10


def test_a_tool_may_call_the_client_itself(tp):
    # The tool runs on a thread of its own, so the reader thread is free to
    # deliver the inner run's reply while the outer run waits on the tool.
    def echo(code):
        return tp.run(code, "lua").value

    r = tp.run("tools.echo(code='return 6 * 7') + 1", tools={"echo": echo})
    assert (r.ok, r.value, r.usage["tool_calls"]) == (True, 43, 1)
