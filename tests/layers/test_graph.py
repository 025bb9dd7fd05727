"""graph.py on a tiny tree built in tmp_path: a cycle and an upward include or
call fail, naming the files and what joins them; an acyclic tree passes; a
cycle outside the directories enforced is printed as known and passes. Run by
`make format-check`."""
import pathlib
import shutil
import subprocess
import sys

import pytest

GRAPH = pathlib.Path(__file__).with_name("graph.py")
DIRS = ("common", "host", "sandbox", "toy-sandbox")
ALL = ["toy-sandbox", "sandbox", "common", "host"]


def build(root, files):
    """Writes the sources and compiles each .c to root/build/obj/<dir>/<name>.o."""
    for d in DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).write_text(text)
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    quote = [a for d in DIRS for a in ("-iquote", str(root / d))]
    for rel in files:
        if rel.endswith(".c"):
            o = root / "build" / "obj" / (rel[:-2] + ".o")
            o.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([cc, "-c", *quote, "-o", str(o), str(root / rel)], check=True)


def run(root, *dirs):
    r = subprocess.run([sys.executable, str(GRAPH), "--root", str(root), *dirs],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


ACYCLIC = {
    "common/util.c": '#include "util.h"\nint util_fn(void) { return 1; }\n',
    "common/util.h": "int util_fn(void);\n",
    "sandbox/guard.c": '#include "guard.h"\n#include "util.h"\nint guard_fn(void) { return util_fn(); }\n',
    "sandbox/guard.h": "int guard_fn(void);\n",
    "toy-sandbox/lower.c": '#include "lower.h"\n#include "guard.h"\nint lower_fn(void) { return guard_fn(); }\n',
    "toy-sandbox/lower.h": "int lower_fn(void);\n",
    "toy-sandbox/upper.c": '#include "lower.h"\nint upper_fn(void);\nint upper_fn(void) { return lower_fn(); }\n',
    "host/main.c": "int main(void) { return 0; }\n",
}


def test_acyclic_passes(tmp_path):
    build(tmp_path, ACYCLIC)
    assert run(tmp_path, *ALL) == (0, "", "")


def test_cycle_fails_naming_files_and_functions(tmp_path):
    files = dict(ACYCLIC)
    # lower.c calls back up into upper.c, with no include: a call edge only.
    files["toy-sandbox/lower.c"] = ('#include "lower.h"\n#include "guard.h"\nint upper_fn(void);\n'
                                    "int lower_fn(void) { return guard_fn() + upper_fn(); }\n")
    build(tmp_path, files)
    rc, out, err = run(tmp_path, *ALL)
    assert rc == 1
    assert out == ""
    assert err.splitlines()[:3] == [
        "graph: cycle of 2 files: toy-sandbox/lower.c toy-sandbox/upper.c",
        "  toy-sandbox/lower.c -> toy-sandbox/upper.c: calls upper_fn",
        "  toy-sandbox/upper.c -> toy-sandbox/lower.c: calls lower_fn; includes lower.h (toy-sandbox/upper.c:1)",
    ]
    assert len(err.splitlines()) == 4 and err.splitlines()[3].startswith("graph: the layers")
    rc, _, err = run(tmp_path, "-v", *ALL)  # every edge inside the cycle, in order
    assert rc == 1 and err.splitlines()[3:6] == [
        "  every edge inside it:",
        "    toy-sandbox/lower.c -> toy-sandbox/upper.c: calls upper_fn",
        "    toy-sandbox/upper.c -> toy-sandbox/lower.c: calls lower_fn; includes lower.h (toy-sandbox/upper.c:1)",
    ]


def test_upward_include_and_call_fail(tmp_path):
    files = dict(ACYCLIC)
    # sandbox/ includes a language's header; common/ calls into host/.
    files["sandbox/guard.c"] = '#include "guard.h"\n#include "util.h"\n#include "lower.h"\nint guard_fn(void) { return util_fn(); }\n'
    files["host/hostfn.c"] = "int host_fn(void);\nint host_fn(void) { return 2; }\n"
    files["common/util.c"] = '#include "util.h"\nint host_fn(void);\nint util_fn(void) { return host_fn(); }\n'
    build(tmp_path, files)
    rc, out, err = run(tmp_path, *ALL)
    assert rc == 1
    lines = err.splitlines()
    assert lines[:3] == [
        # guard.c -> lower.c (the include) and lower.c -> guard.c (the call): a cycle too.
        "graph: cycle of 2 files: sandbox/guard.c toy-sandbox/lower.c",
        "  sandbox/guard.c -> toy-sandbox/lower.c: includes lower.h (sandbox/guard.c:3)",
        "  toy-sandbox/lower.c -> sandbox/guard.c: calls guard_fn; includes guard.h (toy-sandbox/lower.c:2)",
    ]
    assert lines[3:5] == [
        "graph: common/util.c reaches up into host/hostfn.c: calls host_fn",
        "graph: sandbox/guard.c reaches up into toy-sandbox/lower.c: includes lower.h (sandbox/guard.c:3)",
    ]
    assert len(lines) == 6
    # The upward reach alone fails even when the language directory is not enforced.
    rc, out, err = run(tmp_path, "common")
    assert rc == 1
    assert "graph: common/util.c reaches up into host/hostfn.c: calls host_fn" in err.splitlines()


def test_cycle_outside_enforced_dirs_is_known(tmp_path):
    files = dict(ACYCLIC)
    files["host/a.c"] = '#include "b.h"\nint a_fn(void);\nint a_fn(void) { return b_fn(); }\n'
    files["host/b.h"] = "int b_fn(void);\n"
    files["host/b.c"] = "int a_fn(void);\nint b_fn(void);\nint b_fn(void) { return a_fn(); }\n"
    build(tmp_path, files)
    rc, out, err = run(tmp_path, "toy-sandbox", "sandbox", "common")
    assert (rc, err) == (0, "")
    assert out.splitlines() == [
        "graph: known, being removed (host/ not enforced yet): cycle of 2 files: host/a.c host/b.c",
        "  host/a.c -> host/b.c: calls b_fn; includes b.h (host/a.c:1)",
        "  host/b.c -> host/a.c: calls a_fn",
    ]
    rc, out, err = run(tmp_path, *ALL)
    assert rc == 1 and err.startswith("graph: cycle of 2 files: host/a.c host/b.c\n")


def test_stale_object_is_ignored(tmp_path):
    build(tmp_path, dict(ACYCLIC, **{"sandbox/gone.c": "int upper_fn(void);\nint gone_fn(void) { return upper_fn(); }\n"}))
    (tmp_path / "sandbox" / "gone.c").unlink()  # its object stays behind, calling up
    assert run(tmp_path, *ALL) == (0, "", "")


def test_unknown_dir_is_a_usage_error(tmp_path):
    build(tmp_path, ACYCLIC)
    rc, _, err = run(tmp_path, "nope")
    assert rc == 2 and "no source directory nope" in err
