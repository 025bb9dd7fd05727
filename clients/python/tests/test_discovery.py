"""Which binary Client() starts: path=, $TIDEPOOL, PATH, then a checkout's build/tidepool
(the checkout the package's source sits in, then the current directory and its parents).
No tidepool is started here but in the last test."""
import os
import pathlib
import tempfile

import pytest

import tidepool
from tidepool import _client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SOURCE_BUILT = os.path.join(ROOT, "build", "tidepool")


def fake_binary(d):
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "tidepool")
    with open(p, "w") as f:
        f.write("#!/bin/sh\nexit 1\n")
    os.chmod(p, 0o755)
    return p


def fake_checkout(d, built=True):
    """A directory that looks like a checkout: clients/python/pyproject.toml, and
    build/tidepool when built."""
    os.makedirs(os.path.join(d, "clients", "python"))
    open(os.path.join(d, "clients", "python", "pyproject.toml"), "w").close()
    return fake_binary(os.path.join(d, "build")) if built else None


@pytest.fixture
def bare(monkeypatch):
    """No $TIDEPOOL, a PATH with no tidepool, the current directory outside any checkout
    (in /tmp: pytest's own tmp_path may be under one, with --basetemp)."""
    with tempfile.TemporaryDirectory(prefix="tp-discovery-", dir="/tmp") as d:
        yield _bare(pathlib.Path(d), monkeypatch)


def _bare(tmp_path, monkeypatch):
    monkeypatch.delenv("TIDEPOOL", raising=False)
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    return tmp_path


@pytest.fixture
def installed(bare, monkeypatch):
    """As if the package were pip-installed (its source in site-packages, no checkout)."""
    site = bare / "venv" / "lib" / "python3.11" / "site-packages" / "tidepool"
    site.mkdir(parents=True)
    monkeypatch.setattr(_client, "__file__", str(site / "_client.py"))
    return bare


def test_path_wins(bare, monkeypatch):
    monkeypatch.setenv("TIDEPOOL", "/nowhere/tidepool-env")
    monkeypatch.setenv("PATH", os.path.dirname(fake_binary(str(bare / "bin"))))
    assert _client.find_binary("/given/tidepool") == "/given/tidepool"


def test_env_wins_over_path_and_checkout(bare, monkeypatch):
    monkeypatch.setenv("PATH", os.path.dirname(fake_binary(str(bare / "bin"))))
    monkeypatch.setenv("TIDEPOOL", "/nowhere/tidepool-env")
    monkeypatch.chdir(ROOT)
    # Taken as given: a wrong $TIDEPOOL fails when started, it is not skipped.
    assert _client.find_binary() == "/nowhere/tidepool-env"


def test_path_next(bare, monkeypatch):
    onpath = fake_binary(str(bare / "bin"))
    monkeypatch.setenv("PATH", f"{bare / 'emptybin'}{os.pathsep}{bare / 'bin'}")
    monkeypatch.chdir(ROOT)  # a built checkout comes after PATH
    assert _client.find_binary() == onpath


def test_the_source_checkout_next(bare):
    if not os.access(SOURCE_BUILT, os.X_OK):
        pytest.skip(f"{SOURCE_BUILT} is not built (make)")
    # Imported from clients/python: its checkout's build/tidepool, from anywhere.
    assert _client.find_binary() == SOURCE_BUILT


def test_the_source_checkout_before_the_current_directory(bare, monkeypatch):
    if not os.access(SOURCE_BUILT, os.X_OK):
        pytest.skip(f"{SOURCE_BUILT} is not built (make)")
    fake_checkout(str(bare / "other"))
    monkeypatch.chdir(bare / "other")
    assert _client.find_binary() == SOURCE_BUILT


def test_installed_finds_the_checkout_it_runs_in(installed, monkeypatch):
    built = fake_checkout(str(installed / "co"))
    deep = installed / "co" / "docs" / "deeper"
    deep.mkdir(parents=True)
    for cwd in (installed / "co", deep):
        monkeypatch.chdir(cwd)
        assert _client.find_binary() == built


def test_installed_needs_the_checkout_mark(installed, monkeypatch):
    # build/tidepool alone does not make a checkout; the nearest real one does.
    built = fake_checkout(str(installed / "co"))
    fake_binary(str(installed / "co" / "sub" / "build"))
    monkeypatch.chdir(installed / "co" / "sub")
    assert _client.find_binary() == built


def test_error_lists_every_place(installed, monkeypatch):
    monkeypatch.chdir(installed / "outside")
    with pytest.raises(FileNotFoundError) as e:
        _client.find_binary()
    msg = str(e.value)
    assert "path=: not given" in msg
    assert "$TIDEPOOL: not set" in msg
    assert f"`tidepool` on PATH: not in {installed / 'emptybin'}" in msg
    d = str(installed / "outside")
    while True:  # the current directory and every parent, up to /
        assert os.path.join(d, "build", "tidepool") in msg, d
        if os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    for fix in ("`make`", "`make install`", "set $TIDEPOOL", "Client(path=...)"):
        assert fix in msg


def test_error_names_an_unbuilt_checkout(installed, monkeypatch):
    fake_checkout(str(installed / "co"), built=False)
    monkeypatch.chdir(installed / "co")
    with pytest.raises(FileNotFoundError) as e:
        _client.find_binary()
    msg = str(e.value)
    assert f"{installed / 'co' / 'build' / 'tidepool'}: the current directory or a parent, " \
           "not built" in msg
    assert f"Fix: run `make` in {installed / 'co'};" in msg


def test_source_checkout_unbuilt_is_named(bare, monkeypatch):
    co = bare / "co"
    fake_checkout(str(co), built=False)
    monkeypatch.setattr(_client, "__file__",
                        str(co / "clients" / "python" / "tidepool" / "_client.py"))
    with pytest.raises(FileNotFoundError) as e:
        _client.find_binary()
    assert (f"{co / 'build' / 'tidepool'}: the checkout this package was imported from, "
            "not built") in str(e.value)


def test_client_raises_it(installed):
    with pytest.raises(FileNotFoundError, match="no tidepool binary found"):
        tidepool.Client()
