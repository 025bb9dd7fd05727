"""A Python client for tidepool: runs untrusted Lua 5.4 and Python 3.11 snippets.

    from tidepool import Client
    with Client() as tp:                       # starts `tidepool` ($TIDEPOOL, or on PATH)
        r = tp.run("sum(range(10))")
        print(r.value, r.text, r.stdout, r.error)

Standard library only. See the README of the repository, "Python client".
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
