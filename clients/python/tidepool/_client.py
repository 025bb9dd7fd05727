"""The tidepool client: one tidepool process, JSON-RPC 2.0 lines over its stdin/stdout.

Threads: a reader thread reads every line tidepool writes and matches replies to
calls by id; it calls on_stdout/on_stderr itself (in order, before the run's
result is delivered), and hands each sandbox/tool_call request to a thread of its
own, so a slow tool blocks neither other replies nor other tools. A second
thread keeps the last lines of tidepool's stderr (its log) for error messages.
Any number of threads may call the client at once.
"""
import base64
import collections
import copy
import itertools
import json
import os
import shutil
import signal
import subprocess
import threading
import traceback

# How long run(timeout=...) waits for a cancelled exec's reply: a one-shot
# exec's worker is killed at once, a session's is interrupted, killed 250 ms later.
CANCEL_GRACE = 10.0


# ---- errors -----------------------------------------------------------------------

class TidepoolError(Exception):
    """A JSON-RPC error from tidepool (.code, .message, .data): -32602 invalid
    params, -32001 busy or too many sessions, -32002 unknown or ended session, ..."""

    def __init__(self, code, message, data=None):
        super().__init__(message if code is None else f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message
        self.data = data


class ProcessExited(TidepoolError):
    """tidepool is gone (it died, was killed, or the client was closed): raised in
    every call pending then and every call made after. .returncode is the
    process's status (negative: the signal), .stderr the last lines of its log."""

    def __init__(self, message, returncode=None, stderr=""):
        super().__init__(None, message)
        self.returncode = returncode
        self.stderr = stderr


class RunTimeout(TimeoutError):
    """run(timeout=...) ran out: the exec was cancelled. .result is the cancelled
    exec's Execution (its output so far, error.kind "cancelled"), or None when
    tidepool did not answer the cancel either."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


# ---- results ----------------------------------------------------------------------

MAX_LINE = 8 << 20  # tidepool's longest request line (host/linebuf.h)


class ExecutionError:
    """Why an exec failed. e2b's ExecutionError names (name, value, traceback),
    plus tidepool's own fields; Jupyter's ename/evalue are aliases."""

    __slots__ = ("name", "value", "traceback", "kind", "layer", "line", "column", "type",
                 "limit", "rule", "policy", "raw")

    def __init__(self, raw, lang):
        self.raw = raw
        self.kind = raw.get("kind")  # runtime_error, timeout, cpu_limit, cancelled, ...
        self.type = raw.get("type")  # ZeroDivisionError, PolicyViolation; Lua: string, table
        # The exception class for Python (what e2b and Jupyter call the name);
        # the kind otherwise (Lua's types are value types, not classes; limits have none).
        self.name = self.type if lang == "python" and self.type else self.kind
        self.value = raw.get("message") or ""
        self.traceback = raw.get("traceback")
        self.layer = raw.get("layer")  # language, process, kernel, host
        self.line = raw.get("line")
        self.column = raw.get("column")  # 1-based, or None
        self.limit = raw.get("limit")  # {name, limit, used} when a limit stopped it
        self.rule = raw.get("rule")  # what decided: python.modules:socket, seccomp:clone, ...
        self.policy = raw.get("policy")  # the policy the exec ran under

    @property
    def ename(self):
        return self.name

    @property
    def evalue(self):
        return self.value

    def __str__(self):
        return f"{self.name}: {self.value}"

    def __repr__(self):
        return (f"ExecutionError(name={self.name!r}, value={self.value!r}, kind={self.kind!r}, "
                f"layer={self.layer!r}, line={self.line!r})")


_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _with_nonfinite(value, nonfinite):
    """value with each null that nonfinite names (a JSON pointer, RFC 6901) made the
    float it was: NaN or an infinity, which JSON has no number for. A pointer that
    names no null is left alone (tidepool's host checked them; this is a client)."""
    if not isinstance(nonfinite, dict):
        return value
    if "" in nonfinite:
        return _NONFINITE.get(nonfinite[""], value)
    for ptr, name in nonfinite.items():
        if not isinstance(ptr, str) or not ptr.startswith("/") or name not in _NONFINITE:
            continue
        parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]
        node = value
        try:
            for p in parts[:-1]:
                node = node[int(p)] if isinstance(node, list) else node[p]
            last = parts[-1]
            if isinstance(node, list):
                if node[int(last)] is None:
                    node[int(last)] = _NONFINITE[name]
            elif isinstance(node, dict) and node.get(last, 0) is None:
                node[last] = _NONFINITE[name]
        except (KeyError, IndexError, ValueError, TypeError):
            continue
    return value


class Execution:
    """An exec's result: .value (the JSON value), .text (its text/plain repr, None
    for a null value), .images (the figures, as Image), .stdout, .stderr, .error
    (None or an ExecutionError), .usage, .ok, and .raw (the result object as
    tidepool sent it)."""

    __slots__ = ("raw", "ok", "value", "value_repr", "stdout", "stderr", "error", "usage",
                 "truncated", "session_id", "session_lost", "images", "files")

    def __init__(self, raw, lang):
        self.raw = raw
        self.ok = bool(raw.get("ok"))
        # NaN and the infinities come as null named in raw["nonfinite"]: made floats again.
        self.value = raw.get("value")
        if raw.get("nonfinite"):  # raw keeps what tidepool sent
            self.value = _with_nonfinite(copy.deepcopy(self.value), raw["nonfinite"])
        self.value_repr = bool(raw.get("value_repr"))  # value is the repr() of a non-JSON value
        self.stdout = raw.get("stdout") or ""
        self.stderr = raw.get("stderr") or ""
        self.error = ExecutionError(raw["error"], lang) if raw.get("error") else None
        self.usage = raw.get("usage") or {}
        self.truncated = raw.get("truncated") or {}
        self.session_id = raw.get("session_id")
        self.session_lost = bool(raw.get("session_lost"))
        self.images = [Image(i.get("mime"), base64.b64decode(i.get("data", "")))
                       for i in raw.get("images") or ()]
        # In a session: the files the code created, modified or deleted ({path, size,
        # mime, change}); get_file reads one.
        self.files = list(raw.get("files") or ())

    @property
    def text(self):
        """The value as a REPL shows it, as tidepool sent it (`text`): Python's repr
        (a pandas frame's table), the line lua5.4 prints; None when there is no
        value (a REPL and Jupyter show nothing)."""
        return self.raw.get("text")

    def __repr__(self):
        return (f"Execution(ok={self.ok}, value={self.value!r}, stdout={self.stdout!r}, "
                f"stderr={self.stderr!r}, error={self.error!r})")


FileInfo = collections.namedtuple("FileInfo", "path size")
Image = collections.namedtuple("Image", "mime data")  # data: the file's bytes (a PNG)


class FileList(list):
    """A session's files (FileInfo(path, size), by path); .complete is False when
    the workspace held more than tidepool lists (1000 files, 8 deep)."""

    complete = True


# ---- calls in flight ----------------------------------------------------------------

class _Call:
    __slots__ = ("id", "event", "reply", "exc", "tools", "on_stdout", "on_stderr")

    def __init__(self, id_, tools=None, on_stdout=None, on_stderr=None):
        self.id = id_
        self.event = threading.Event()
        self.reply = None
        self.exc = None
        self.tools = tools
        self.on_stdout = on_stdout
        self.on_stderr = on_stderr


class Run:
    """An exec started by run_async(): .result(timeout=None), .cancel(), .done(), .id."""

    def __init__(self, client, call, lang):
        self._client = client
        self._call = call
        self._lang = lang

    @property
    def id(self):
        """The JSON-RPC id of the exec's request."""
        return self._call.id

    def done(self):
        return self._call.event.is_set()

    def result(self, timeout=None):
        """The Execution; raises TimeoutError (without cancelling) when it has not
        finished within timeout seconds, TidepoolError for a JSON-RPC error."""
        if not self._call.event.wait(timeout):
            raise TimeoutError(f"exec {self.id} has not finished within {timeout} s")
        if self._call.exc is not None:
            raise self._call.exc
        return Execution(self._call.reply, self._lang)

    def cancel(self):
        """Asks tidepool to stop the exec (notifications/cancelled). Its result then
        comes as usual, with error.kind "cancelled" and the output so far (or the
        normal result, when it finished first). False when it had already finished."""
        if self.done():
            return False
        try:
            self._client.notify("notifications/cancelled", {"requestId": self.id})
        except ProcessExited:
            pass  # the pending call gets the same error
        return True

    def _wait(self, timeout):
        if timeout is None:
            return self.result()
        try:
            return self.result(timeout)
        except TimeoutError:
            pass
        self.cancel()
        try:
            r = self.result(CANCEL_GRACE)
        except TimeoutError:
            raise RunTimeout(f"exec {self.id} did not finish within {timeout} s, and tidepool did "
                             f"not answer its cancel within {CANCEL_GRACE} s") from None
        if r.error is not None and r.error.kind == "cancelled":
            raise RunTimeout(f"exec {self.id} did not finish within {timeout} s: cancelled", r)
        return r  # it finished before the cancel reached it


def _exec_params(code, lang, limits, inputs, seed, policy, on_stdout, on_stderr):
    p = {"code": code}
    if lang is not None:
        p["lang"] = lang
    for k, v in (("limits", limits), ("inputs", inputs), ("seed", seed), ("policy", policy)):
        if v is not None:
            p[k] = v
    if on_stdout is not None or on_stderr is not None:
        p["stream"] = True
    return p


def _describe_status(rc):
    if rc is None:
        return "closed its output"
    if rc < 0:
        try:
            return f"was killed by signal {-rc} ({signal.Signals(-rc).name})"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with status {rc}"


# ---- finding the binary ----------------------------------------------------------------

# What marks a tidepool checkout: the directory holding build/tidepool also holds this.
_CHECKOUT_MARK = os.path.join("clients", "python", "pyproject.toml")
_BUILT = os.path.join("build", "tidepool")


def _runnable(p):
    return os.path.isfile(p) and os.access(p, os.X_OK)


def _candidates():
    """The checkouts' build/tidepool, in the order find_binary tries them, as
    (path, where it comes from, the checkout's root or None when it is no checkout)."""
    out = []
    # The checkout this package's own source sits in (clients/python/tidepool/):
    # only when imported from the source tree, not from an installed copy.
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if os.path.isfile(os.path.join(root, _CHECKOUT_MARK)):
        out.append((os.path.join(root, _BUILT), "the checkout this package was imported from",
                    root))
    # The current directory and its parents: a checkout's root holds both.
    try:
        d = os.getcwd()
    except OSError:  # the current directory was removed
        return out
    while True:
        mark = os.path.isfile(os.path.join(d, _CHECKOUT_MARK))
        p = os.path.join(d, _BUILT)
        if not any(c[0] == p for c in out):
            out.append((p, "the current directory or a parent", d if mark else None))
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent


def find_binary(path=None):
    """The tidepool binary Client starts: path, else $TIDEPOOL, else `tidepool` on
    PATH, else a checkout's build/tidepool (`make` builds it): first the checkout
    this package's source sits in (when imported from clients/python), then the
    current directory or the nearest parent that holds both build/tidepool and
    clients/python/pyproject.toml. path and $TIDEPOOL are taken as given (a wrong
    one fails when it is started). FileNotFoundError, naming every place looked
    at and how to fix it, when none has one."""
    if path:
        return os.fspath(path)
    env = os.environ.get("TIDEPOOL")
    if env:
        return env
    exe = shutil.which("tidepool")
    if exe:
        return exe
    looked = ["  path=: not given", "  $TIDEPOOL: not set",
              f"  `tidepool` on PATH: not in {os.environ.get('PATH') or '(PATH is empty)'}"]
    unbuilt = []
    for p, why, root in _candidates():
        if root is not None and _runnable(p):
            return p
        if root is not None:
            unbuilt.append(root)
            looked.append(f"  {p}: {why}, not built")
        else:
            looked.append(f"  {p}: {os.path.dirname(os.path.dirname(p))} ({why}) is no "
                          f"tidepool checkout (no {_CHECKOUT_MARK})")
    fix = ("Fix: build it with `make` in a tidepool checkout and run from inside the checkout, "
           "or `make install` it (puts tidepool on PATH, in /usr/local/bin), or set $TIDEPOOL "
           "to the binary, or pass Client(path=...).")
    if unbuilt:
        fix = f"Fix: run `make` in {unbuilt[0]}; or {fix[5].lower()}{fix[6:]}"
    raise FileNotFoundError("no tidepool binary found; looked at:\n" + "\n".join(looked) +
                            "\n" + fix)


# ---- the client ----------------------------------------------------------------------

class Client:
    """Starts and owns one tidepool process, or connects to one that serves a
    Unix socket (`tidepool --listen unix:PATH`).

    path: the binary (else $TIDEPOOL, else `tidepool` on PATH, else a checkout's
    build/tidepool: see find_binary); args: its options
    (["--policy", "strict"], ["--policy-dir", DIR]); socket: connect to that
    socket instead of starting a process (path, args and env are then not
    allowed); tools: {name: function} every run may call. Use it as a context
    manager, or call close()."""

    def __init__(self, path=None, args=(), *, tools=None, env=None, start_timeout=30.0,
                 socket=None):
        if socket is not None and (path is not None or args or env is not None):
            raise ValueError("Client(socket=...) connects to a running tidepool: "
                             "path, args and env are for one it starts")
        exe = find_binary(path) if socket is None else None
        self._lock = threading.Lock()  # _pending, _dead
        self._wlock = threading.Lock()  # stdin
        self._ids = itertools.count(1)
        self._pending = {}
        self._dead = None
        self._closing = False
        self._tools = dict(tools or {})
        self._log = collections.deque(maxlen=50)
        self._proc = self._sock = None
        if socket is None:
            self._proc = subprocess.Popen([exe, *args], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          env=env, close_fds=True)
            self._w, self._r = self._proc.stdin, self._proc.stdout
        else:
            import socket as _socket
            self._sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                self._sock.connect(socket)
            except OSError:
                self._sock.close()
                raise
            self._w, self._r = self._sock.makefile("wb"), self._sock.makefile("rb")
        self._log_thread = threading.Thread(target=self._log_loop, name="tidepool-log", daemon=True)
        self._log_thread.start()
        self._reader = threading.Thread(target=self._read_loop, name="tidepool-reader", daemon=True)
        self._reader.start()
        try:
            self.request("ping", {}, timeout=start_timeout)  # a bad option or policy fails here
        except BaseException:
            self.close(timeout=5)
            raise

    # -- life -----------------------------------------------------------------------
    @property
    def pid(self):
        """The tidepool process's pid (the daemon's, on a socket)."""
        if self._sock is not None:
            import socket as _socket
            import struct
            cred = self._sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED,
                                         struct.calcsize("3i"))
            return struct.unpack("3i", cred)[0]
        return self._proc.pid

    @property
    def log(self):
        """The last lines tidepool wrote on stderr (its log)."""
        return list(self._log)

    def close(self, timeout=30.0):
        """Closes tidepool's stdin: it answers the requests in flight and exits.
        Waits for it (killing it after timeout seconds); returns its exit status.
        On a socket: ends this client's requests (a half-close), waits up to
        timeout seconds for the answers in flight, then closes the connection
        (what is still running is cancelled, its sessions end); returns None."""
        self._closing = True
        with self._wlock:
            try:
                self._w.close()
            except OSError:
                pass
        if self._sock is not None:
            import socket as _socket
            try:
                self._sock.shutdown(_socket.SHUT_WR)
            except OSError:
                pass
            self._reader.join(timeout)
            self._sock.close()
            self._reader.join(10)
            return None
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(10)
        self._log_thread.join(5)
        return self._proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- JSON-RPC ---------------------------------------------------------------------
    def _send(self, msg):
        line = (json.dumps(msg, allow_nan=False, separators=(",", ":")) + "\n").encode()
        with self._wlock:
            if self._dead is not None:
                raise self._dead
            try:
                self._w.write(line)
                self._w.flush()
            except (OSError, ValueError):  # EPIPE, or stdin closed by close()
                raise self._gone_error() from None

    def _gone_error(self):
        if self._closing:
            return ProcessExited("the tidepool client is closed")
        # The pipe broke: the process is gone or going. The reader thread sees its
        # output end next and knows the status and the log; wait for it.
        if threading.current_thread() is not self._reader:
            self._reader.join(10)
        with self._lock:
            if self._dead is not None:
                return self._dead
        return ProcessExited("tidepool is not reading its input (it is exiting)")

    def _start(self, method, params, **call_kw):
        id_ = next(self._ids)
        msg = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        # A bad param raises here, before anything is pending; so does a request longer
        # than the line tidepool reads (8 MiB), which it could answer only without an id.
        size = len(json.dumps(msg, allow_nan=False, separators=(",", ":")).encode())
        if size >= MAX_LINE:
            raise TidepoolError(None, f"the request is {size} bytes of JSON, more than one "
                                      f"line tidepool reads ({MAX_LINE}): send a file in "
                                      f"parts (put_file does)")
        call = _Call(id_, **call_kw)
        with self._lock:
            if self._dead is not None:
                raise self._dead
            self._pending[id_] = call
        try:
            self._send(msg)
        except BaseException:
            with self._lock:
                self._pending.pop(id_, None)
            raise
        return call

    def request(self, method, params=None, timeout=None):
        """Any JSON-RPC method; returns its result, raises TidepoolError for an error,
        TimeoutError when there is no answer within timeout seconds."""
        call = self._start(method, {} if params is None else params)
        if not call.event.wait(timeout):
            with self._lock:
                self._pending.pop(call.id, None)
            raise TimeoutError(f"{method}: no answer within {timeout} s")
        if call.exc is not None:
            raise call.exc
        return call.reply

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    # -- running code -------------------------------------------------------------------
    def run(self, code, lang="python", *, limits=None, inputs=None, seed=None, policy=None,
            timeout=None, on_stdout=None, on_stderr=None, tools=None):
        """Runs one snippet in a fresh sandbox and returns its Execution. A failure of
        the snippet is a result (.ok False, .error); TidepoolError is for refused
        requests; RunTimeout when timeout seconds pass (the exec is cancelled)."""
        return self.run_async(code, lang, limits=limits, inputs=inputs, seed=seed, policy=policy,
                              on_stdout=on_stdout, on_stderr=on_stderr, tools=tools)._wait(timeout)

    def run_async(self, code, lang="python", *, limits=None, inputs=None, seed=None, policy=None,
                  on_stdout=None, on_stderr=None, tools=None, _session=None):
        """As run(), but returns a Run handle at once: .result(timeout), .cancel()."""
        params = _exec_params(code, lang, limits, inputs, seed, policy, on_stdout, on_stderr)
        if _session is not None:
            params["session_id"] = _session
        call = self._start("sandbox/exec", params, tools=tools, on_stdout=on_stdout,
                           on_stderr=on_stderr)
        return Run(self, call, lang)

    def session(self, lang="python", policy=None, limits=None):
        """Opens a session (sandbox/session/open): state kept between its runs."""
        params = {"lang": lang}
        if policy is not None:
            params["policy"] = policy
        if limits is not None:
            params["limits"] = limits
        return Session(self, self.request("sandbox/session/open", params), lang)

    def register_tool(self, name, fn):
        """fn(**arguments) answers the code's calls to tool `name` (the policy must list
        it); its return value must be JSON. Returns fn."""
        with self._lock:
            self._tools[name] = fn
        return fn

    # -- the reader thread ----------------------------------------------------------------
    def _read_loop(self):
        try:
            for line in self._r:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                if isinstance(msg, dict):
                    try:
                        self._dispatch(msg)
                    except Exception:  # a bug here must not stop the replies
                        traceback.print_exc()
        finally:
            try:
                self._r.close()
            except OSError:
                pass
            self._exited()

    def _dispatch(self, msg):
        method = msg.get("method")
        if method is None:  # a reply
            with self._lock:
                call = self._pending.pop(msg.get("id"), None)
            if call is None:
                return
            err = msg.get("error")
            if err is not None:
                call.exc = TidepoolError(err.get("code"), err.get("message", ""), err.get("data"))
            else:
                call.reply = msg.get("result")
            call.event.set()
        elif "id" in msg:  # tidepool's own request: a tool call
            threading.Thread(target=self._serve, args=(msg,), name="tidepool-tool",
                             daemon=True).start()
        elif method == "sandbox/output":
            p = msg.get("params") or {}
            with self._lock:
                call = self._pending.get(p.get("exec_id"))
            if call is None:
                return
            cb = call.on_stdout if p.get("stream") == "stdout" else call.on_stderr
            if cb is not None:
                try:
                    cb(p.get("text", ""))
                except Exception:
                    traceback.print_exc()

    def _serve(self, msg):
        rid, params = msg["id"], msg.get("params") or {}
        reply = {"jsonrpc": "2.0", "id": rid}
        if msg.get("method") != "sandbox/tool_call":
            reply["error"] = {"code": -32601, "message": f"method not found: {msg.get('method')}"}
        else:
            name, args = params.get("name"), params.get("arguments") or {}
            with self._lock:
                call = self._pending.get(params.get("exec_id"))
                fn = (call.tools or {}).get(name) if call is not None else None
                fn = fn or self._tools.get(name)
            if fn is None:
                reply["error"] = {"code": -32601,
                                  "message": f"no tool '{name}' is registered with the client"}
            else:
                try:
                    result = fn(**args)
                    json.dumps(result, allow_nan=False)
                    reply["result"] = result
                except Exception as e:
                    reply["error"] = {"code": -32000, "message": f"{type(e).__name__}: {e}"}
        try:
            self._send(reply)
        except ProcessExited:
            pass

    def _log_loop(self):
        if self._proc is None:
            return  # a daemon's log is its own
        with self._proc.stderr:
            for line in self._proc.stderr:
                self._log.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _exited(self):
        try:
            rc = self._proc.wait(5) if self._proc is not None else None
        except subprocess.TimeoutExpired:
            rc = None
        self._log_thread.join(2)
        if self._closing:
            err = ProcessExited("the tidepool client is closed", rc)
        elif self._proc is None:
            err = ProcessExited("tidepool closed the connection before answering")
        else:
            tail = "\n".join(list(self._log)[-5:])
            err = ProcessExited(f"tidepool {_describe_status(rc)} before answering"
                                + (f"; its last log lines:\n{tail}" if tail else ""), rc, tail)
        with self._lock:
            self._dead = err
            calls = list(self._pending.values())
            self._pending.clear()
        for call in calls:
            call.exc = err
            call.event.set()


class Session:
    """A session (sandbox/session/open): its runs share one interpreter's state and,
    when the policy gives one, a workspace directory. A context manager."""

    def __init__(self, client, info, lang):
        self._client = client
        self.info = info
        self.id = info["session_id"]
        self.lang = info.get("lang", lang)
        self.policy = info.get("policy")
        self.limits = info.get("limits")
        self.workspace = info.get("workspace")  # {path, file_bytes}, or None
        self.closed = False

    def run(self, code, *, limits=None, inputs=None, seed=None, timeout=None, on_stdout=None,
            on_stderr=None, tools=None):
        return self.run_async(code, limits=limits, inputs=inputs, seed=seed, on_stdout=on_stdout,
                              on_stderr=on_stderr, tools=tools)._wait(timeout)

    def run_async(self, code, *, limits=None, inputs=None, seed=None, on_stdout=None,
                  on_stderr=None, tools=None):
        return self._client.run_async(code, self.lang, limits=limits, inputs=inputs, seed=seed,
                                      on_stdout=on_stdout, on_stderr=on_stderr, tools=tools,
                                      _session=self.id)

    _PART = 4 << 20  # bytes a put or a get carries: a request line is at most 8 MiB of JSON

    def put_file(self, path, data):
        """Writes data (bytes; a str is written as UTF-8) to path in the workspace, in
        parts of 4 MiB (the first replaces the file, the others append); returns the
        file's size."""
        if isinstance(data, str):
            data = data.encode()
        data = bytes(data)
        size = 0
        for at in range(0, max(len(data), 1), self._PART):
            params = {"session_id": self.id, "path": path,
                      "data": base64.b64encode(data[at:at + self._PART]).decode()}
            if at > 0:
                params["append"] = True
            size = self._client.request("sandbox/session/files/put", params)["bytes"]
        return size

    def get_file(self, path):
        """The file's bytes, read in parts (offset) however large it is."""
        out, at = [], 0
        while True:
            r = self._client.request("sandbox/session/files/get",
                                     {"session_id": self.id, "path": path, "offset": at})
            part = base64.b64decode(r["data"], validate=True)
            out.append(part)
            at += len(part)
            if not part or at >= r["size"]:
                return b"".join(out)

    def list_files(self):
        r = self._client.request("sandbox/session/files/list", {"session_id": self.id})
        files = FileList(FileInfo(f["path"], f["bytes"]) for f in r["files"])
        files.complete = bool(r.get("complete", True))
        return files

    def close(self):
        """Ends the session. Idempotent; a session tidepool already ended (-32002) or a
        tidepool that is gone count as closed."""
        if self.closed:
            return
        self.closed = True
        try:
            self._client.request("sandbox/session/close", {"session_id": self.id})
        except ProcessExited:
            pass
        except TidepoolError as e:
            if e.code != -32002:
                raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Session({self.id!r}, lang={self.lang!r}, policy={self.policy!r})"
