"""A Python client for tidepool: runs untrusted Lua 5.4 and Python 3.11 snippets.

    from tidepool import Client
    with Client() as tp:                       # starts a tidepool binary (below)
        r = tp.run("sum(range(10))")
        print(r.value, r.text, r.stdout, r.error)

Which binary: Client(path=...), else $TIDEPOOL, else `tidepool` on PATH (`make
install` puts it there), else a checkout's build/tidepool (`make` builds it):
the checkout this package was imported from (clients/python), then the current
directory or its nearest parent holding both build/tidepool and
clients/python/pyproject.toml, so that a `pip install ./clients/python` finds
the checkout's binary when run from inside it. None: FileNotFoundError, listing
every place looked at. find_binary() in tidepool._client says which it takes.

Standard library only. See clients/python/README.md in the repository.
"""
from ._client import (
    Client,
    Execution,
    ExecutionError,
    FileInfo,
    Image,
    ProcessExited,
    Run,
    RunTimeout,
    Session,
    TidepoolError,
)

__all__ = [
    "Client",
    "Execution",
    "ExecutionError",
    "FileInfo",
    "Image",
    "ProcessExited",
    "Run",
    "RunTimeout",
    "Session",
    "TidepoolError",
]
