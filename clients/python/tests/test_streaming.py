"""on_stdout/on_stderr: the output as it appears (stream: true), in order, before the result."""
import threading

import tidepool


def test_output_arrives_while_the_code_runs(tp):
    seen, first = [], threading.Event()

    def on_stdout(text):
        seen.append(("out", text))
        if "one" in text:
            first.set()

    def gate():
        # The code waits here until the client has seen its first line: so it
        # arrived while the exec was still running, not with the result.
        return first.wait(30)

    r = tp.run("print('one')\nok = tools.gate()\nprint('two')\nok", on_stdout=on_stdout,
               tools={"gate": gate})
    assert (r.ok, r.value, r.stdout) == (True, True, "one\ntwo\n")
    assert "".join(t for _, t in seen) == "one\ntwo\n"
    assert seen[0] == ("out", "one\n")


def test_streams_in_order_and_complete_before_the_result(tp):
    out, err = [], []
    code = ("import sys\nfor i in range(200):\n    print(i)\n    print('e', i, file=sys.stderr)\n"
            "    for _ in range(2000): pass\n'done'")
    h = tp.run_async(code, on_stdout=out.append, on_stderr=err.append)
    r = h.result(60)
    # Each stream's pieces, joined in order, are exactly the result's output.
    assert r.stdout == "".join(f"{i}\n" for i in range(200)) == "".join(out)
    assert r.stderr == "".join(f"e {i}\n" for i in range(200)) == "".join(err)
    assert r.value == "done"


def test_lua_streaming_and_only_stderr(tp):
    out, err = [], []
    r = tp.run("print('a') print('b') return 1", "lua", on_stderr=err.append)
    assert (r.stdout, err) == ("a\nb\n", [])
    r = tp.run("print('a') print('b') return 1", "lua", on_stdout=out.append)
    assert "".join(out) == "a\nb\n"


def test_a_failing_callback_does_not_break_the_client(tp, capsys):
    def bad(text):
        raise RuntimeError("callback bug")

    r = tp.run("print('x')\n1", on_stdout=bad)
    assert (r.ok, r.stdout, r.value) == (True, "x\n", 1)
    assert "callback bug" in capsys.readouterr().err
    assert tp.run("2").value == 2


def test_killed_exec_streams_what_it_wrote(tp):
    out = []
    with_limit = tp.run("print('so far')\nwhile True: pass", limits={"cpu_ms": 200},
                        on_stdout=out.append)
    assert with_limit.error.kind == "cpu_limit"
    assert "".join(out) == with_limit.stdout == "so far\n"
    assert isinstance(with_limit, tidepool.Execution)
