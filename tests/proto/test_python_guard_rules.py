"""Keeps docs/python-guard.md honest: every row of its "The guard's rules" table
names a rule (D<n>) or an exemption (E<n>) and at least one test, and every test it
names exists: the function is defined in the named file and, for a parametrised
case (function[case id]), the case id is a string in that file."""
import ast
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "python-guard.md")
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:\[([^\]`]+)\])?`")


def rows():
    text = open(DOC, encoding="utf-8").read()
    section = text.split("## The guard's rules", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"[DE]\d+", cells[0]):
            out.append((cells[0], line))
    return out


def defined(path):
    tree = ast.parse(open(os.path.join(ROOT, path), encoding="utf-8").read())
    funcs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return funcs, strings


def test_the_table_has_rules_and_exemptions():
    got = rows()
    ids = [r for r, _ in got]
    assert len(ids) == len(set(ids)), ids
    assert any(r.startswith("D") for r in ids) and any(r.startswith("E") for r in ids), ids


def test_every_row_names_a_test():
    for rule, line in rows():
        assert TEST.search(line), "%s names no test" % rule


def test_every_named_test_exists():
    cache = {}
    for rule, line in rows():
        for path, func, case in TEST.findall(line):
            assert os.path.isfile(os.path.join(ROOT, path)), (rule, path)
            funcs, strings = cache.setdefault(path, defined(path))
            assert func in funcs, "%s: %s::%s is not defined" % (rule, path, func)
            if case:
                assert case in strings, "%s: %s::%s has no case %r" % (rule, path, func, case)


def test_python_md_links_the_rules():
    text = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    assert "python-guard.md" in text
