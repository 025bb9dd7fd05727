"""Teaching: `tidepool run --compare` and the lesson table (examples/lessons.json,
docs/teaching.md). Each lesson attack runs under strict, standard and kernel-only, and
the layer and kind each policy reports must be the table's: the table is what the docs
print, so it stays true."""
import json
import os
import re
import subprocess

import pytest

from conftest import BINARY as TIDEPOOL, check_refusal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LESSONS = json.load(open(os.path.join(ROOT, "examples", "lessons.json")))["lessons"]
THREE = ["strict", "standard", "kernel-only"]
SUFFIX = {"python": ".py", "lua": ".lua"}
FLAG = {"cpu_ms": "--cpu-ms", "wall_ms": "--wall-ms", "memory_bytes": "--memory-bytes"}


def compare(tmp_path, lesson, policies=",".join(THREE), extra=()):
    src = tmp_path / ("snippet" + SUFFIX[lesson["lang"]])
    src.write_text(lesson["code"])
    args = [TIDEPOOL, "run", "--compare", policies]
    for k, v in lesson.get("limits", {}).items():
        args += [FLAG[k], str(v)]
    return subprocess.run(args + list(extra) + [str(src)], capture_output=True, text=True,
                          timeout=120)


def test_lesson_table_shape():
    """At least ten attacks, both languages, each with an expectation per preset."""
    assert len(LESSONS) >= 10
    assert {l["lang"] for l in LESSONS} == {"python", "lua"}
    assert len({l["id"] for l in LESSONS}) == len(LESSONS)
    for l in LESSONS:
        assert set(l["expect"]) == set(THREE), l["id"]
        assert l["title"] and l["teaches"] and l["code"].endswith("\n"), l["id"]


@pytest.mark.parametrize("lesson", LESSONS, ids=[l["id"] for l in LESSONS])
def test_lesson(tmp_path, lesson):
    p = compare(tmp_path, lesson, extra=["--json"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["lang"] == lesson["lang"]
    rows = {r["policy"]: r for r in doc["results"]}
    assert list(rows) == THREE  # in the order asked
    for pol in THREE:
        want, got = lesson["expect"][pol], rows[pol]
        if want["kind"] is None:
            assert got["outcome"] == "ok" and got["layer"] is None and got["rule"] is None, got
            assert got["result"]["ok"] is True, got
            continue
        assert (got["outcome"], got["layer"]) == (want["kind"], want["layer"]), (pol, got)
        err = got["result"]["error"]
        assert (err["kind"], err["layer"], err["policy"]) == (want["kind"], want["layer"], pol)
        assert got["rule"] == err["rule"] and got["message"] == err["message"]
        check_refusal(err)
        if want["kind"].endswith("_limit") or want["kind"] == "timeout":
            assert err["rule"] == "limits." + err["limit"]["name"], err
        # The entry that decided is the policy's own: a key and what it says.
        assert isinstance(got["entry"], dict) and got["entry"]["says"], got


def test_compare_table_text(tmp_path):
    """The table a person reads: a header, one row per policy, the deciding entries."""
    lesson = next(l for l in LESSONS if l["id"] == "lua-run-program")
    p = compare(tmp_path, lesson)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert re.match(r"policy\s+outcome\s+layer\s+rule\s+message$", lines[0]), lines[0]
    assert re.match(r"strict\s+policy_violation\s+language\s+lua\.functions:os\.execute\s+"
                    r"os\.execute is not available in the sandbox \(policy strict: no processes\)$",
                    lines[1]), lines[1]
    assert re.match(r"standard\s+policy_violation\s+language\s+lua\.functions:os\.execute\s",
                    lines[2]), lines[2]
    assert re.match(r"kernel-only\s+sandbox_violation\s+kernel\s+seccomp:clone\s+seccomp refused "
                    r"the system call 'clone'", lines[3]), lines[3]
    assert lines[4] == "" and lines[5] == "what decided, in each policy:"
    assert re.match(r"\s+strict\s+lua\.functions does not list 'os\.execute'$", lines[6]), lines[6]
    assert re.match(r"\s+kernel-only\s+the kernel layer's seccomp allowlist", lines[8]), lines[8]


def test_compare_limit_entry(tmp_path):
    """A limit's entry is the policy's value of it."""
    lesson = next(l for l in LESSONS if l["id"] == "lua-memory-bomb")
    p = compare(tmp_path, lesson, "strict,standard", ["--json"])
    rows = {r["policy"]: r for r in json.loads(p.stdout)["results"]}
    assert rows["strict"]["entry"] == {"key": "limits.memory_bytes", "value": 33554432,
                                       "says": "limits.memory_bytes = 33554432"}
    assert rows["standard"]["entry"]["value"] == 67108864


def test_compare_all_skips_other_languages(tmp_path):
    """`all` is every policy the host has; one that does not offer the language says so and
    runs nothing, and the exit status stays 0."""
    lesson = next(l for l in LESSONS if l["id"] == "lua-bytecode")
    p = compare(tmp_path, lesson, "all", ["--json"])
    assert p.returncode == 0, p.stderr
    rows = {r["policy"]: r for r in json.loads(p.stdout)["results"]}
    assert set(rows) == {"strict", "standard", "permissive", "data", "kernel-only"}
    assert rows["data"]["outcome"] == "not_offered" and rows["data"]["result"] is None
    assert rows["kernel-only"]["outcome"] == "ok"


def test_compare_named_policy_of_other_language_is_an_error_row(tmp_path):
    """A policy named outright that cannot run the snippet is a row that says why, exit 1."""
    lesson = next(l for l in LESSONS if l["id"] == "lua-debug")
    p = compare(tmp_path, lesson, "strict,data", ["--json"])
    assert p.returncode == 1, p.stderr
    rows = {r["policy"]: r for r in json.loads(p.stdout)["results"]}
    assert rows["data"]["outcome"] == "request_error" and rows["data"]["layer"] == "host"
    assert rows["data"]["message"] == "policy 'data' does not allow Lua 5.4", rows["data"]


@pytest.mark.parametrize("spec,err", [
    ("nosuch", "tidepool run: --compare: unknown policy 'nosuch' (tidepool policy list; "
               "--policy-dir DIR loads more)"),
    ("strict,,standard", "tidepool run: --compare: an empty or too long policy name in "
                         "'strict,,standard'"),
    ("strict,strict", "tidepool run: --compare: policy 'strict' named twice"),
])
def test_compare_bad_spec(tmp_path, spec, err):
    src = tmp_path / "a.lua"
    src.write_text("return 1\n")
    p = subprocess.run([TIDEPOOL, "run", "--compare", spec, str(src)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == err


def test_compare_with_policy_is_a_usage_error(tmp_path):
    src = tmp_path / "a.lua"
    src.write_text("return 1\n")
    p = subprocess.run([TIDEPOOL, "run", "--compare", "strict", "--policy", "standard", str(src)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("tidepool run: --compare names the policies: drop --policy\n")


def test_generated_teaching_files_are_fresh():
    """docs/layers.svg, the lesson table in docs/teaching.md and examples/lessons/ are what
    docs/gen_teaching.py makes of examples/lessons.json."""
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "docs", "gen_teaching.py"),
                        "--check"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    made = sorted(os.listdir(os.path.join(ROOT, "examples", "lessons")))
    assert made == sorted(l["id"] + SUFFIX[l["lang"]] for l in LESSONS)


@pytest.mark.parametrize("lesson", [l for l in LESSONS if l["id"] in ("py-read-secret", "lua-debug")],
                         ids=lambda l: l["id"])
def test_lesson_file_runs_as_its_lesson(tmp_path, lesson):
    """A lesson's file in examples/lessons/ is the lesson: the same verdict as its code."""
    path = os.path.join(ROOT, "examples", "lessons", lesson["id"] + SUFFIX[lesson["lang"]])
    p = subprocess.run([TIDEPOOL, "run", "--compare", "strict,kernel-only", "--json", path],
                       capture_output=True, text=True, timeout=120)
    rows = {r["policy"]: r for r in json.loads(p.stdout)["results"]}
    for pol in ("strict", "kernel-only"):
        want = lesson["expect"][pol]
        assert (rows[pol]["outcome"] if want["kind"] else None, rows[pol]["layer"]) == \
            (want["kind"], want["layer"]), rows[pol]
