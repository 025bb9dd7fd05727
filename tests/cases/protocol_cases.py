"""The protocol-fault cases of tests/cases/protocol/ (format: tests/cases/README.md),
for the Python readers: tests/proto/test_protocol.py, tests/faults/test_failalloc.py
and tests/fuzz/make_seeds.py. tests/unit/test_proto.c reads the same files in C."""
import json
import os

DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol")
STAGES = ("jsonrpc", "params", "host")
FILL = b"@FILL@"
ABSENT = "@ABSENT@"  # a member that must not be in the reply


class Case:
    def __init__(self, name):
        self.name = name
        with open(os.path.join(DIR, name, "input"), "rb") as f:
            self.raw = f.read()
        with open(os.path.join(DIR, name, "expected.json")) as f:
            exp = json.load(f)
        self.stage = exp["stage"]
        self.fill = exp.get("fill")
        self.replies = exp["replies"]
        assert self.stage in STAGES, (name, self.stage)
        assert self.raw.endswith(b"\n"), name
        assert (self.fill is not None) == (FILL in self.raw), name

    def input(self, fill=None):
        """The bytes to send: @FILL@ becomes `fill` (default: the case's) times 'x'."""
        if self.fill is None:
            return self.raw
        return self.raw.replace(FILL, b"x" * (self.fill if fill is None else fill))

    def __repr__(self):
        return self.name


def load():
    return [Case(n) for n in sorted(os.listdir(DIR)) if os.path.isdir(os.path.join(DIR, n))]


def matches(want, got):
    """True when `got` has every member of the pattern `want`: objects match
    member by member (extra members are allowed; a member whose pattern is
    ABSENT must not be there), a "message" by substring, anything else by equality."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return False
        for k, v in want.items():
            if v == ABSENT:
                if k in got:
                    return False
                continue
            if k not in got:
                return False
            if k == "message" and isinstance(v, str):
                if not isinstance(got[k], str) or v not in got[k]:
                    return False
            elif not matches(v, got[k]):
                return False
        return True
    return type(want) is type(got) and want == got
