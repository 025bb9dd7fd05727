"""The `smolagents` extra, as far as it can be checked without smolagents (make
smolagents runs tidepool.smolagents itself, against the real package): the
client imports nothing of it, and the extra, the module and the test venv pin
one version."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
PKG = os.path.join(ROOT, "clients", "python")


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_import_tidepool_imports_no_smolagents():
    out = subprocess.run([sys.executable, "-c", "import sys, tidepool\n"
                          "print(sorted(m for m in sys.modules if 'smolagents' in m))"],
                         capture_output=True, text=True, cwd=PKG, check=True)
    assert out.stdout.strip() == "[]"


def test_one_pinned_version():
    extra = re.search(r'^smolagents = \["smolagents==([0-9.]+)"\]$',
                      _read("clients", "python", "pyproject.toml"), re.M)
    module = re.search(r'^SMOLAGENTS_VERSION = "([0-9.]+)"$',
                       _read("clients", "python", "tidepool", "smolagents.py"), re.M)
    venv = re.search(r"^smolagents==([0-9.]+) \\$",
                     _read("tests", "smolagents", "requirements.txt"), re.M)
    assert extra and module and venv
    assert extra.group(1) == module.group(1) == venv.group(1)
    # every line of the venv's requirements is pinned with a hash
    reqs = [r for r in _read("tests", "smolagents", "requirements.txt").split("\n")
            if r and not r.startswith("#")]
    pins = [r for r in reqs if not r.startswith("    --hash=sha256:")]
    assert len(pins) * 2 == len(reqs) and all(re.fullmatch(r"[a-z0-9_.-]+==[^ ]+ \\", p)
                                              for p in pins), pins
