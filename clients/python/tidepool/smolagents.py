"""tidepool as the code executor of a smolagents CodeAgent (the `smolagents` extra).

    from smolagents import CodeAgent
    from tidepool.smolagents import TidepoolExecutor

    agent = CodeAgent(tools=[...], model=model, executor=TidepoolExecutor())

The agent's code runs in ONE tidepool session (its globals persist from step to
step); its tools run here, on the host, as tidepool tool callbacks (the code's
`get_weather("Paris")` is a stub in the sandbox that calls `tools.call`); its
`final_answer(...)` raises smolagents' FinalAnswerException, whose message is
the answer in smolagents' safe format (`safe:` + JSON with type markers: no
pickle, in either direction). A session that is lost (its worker killed, closed,
idle too long) is opened again, and the tools and variables are sent again.
matplotlib figures (policies with matplotlib, such as `data`) come back as PIL
images. Only this module imports smolagents; `import tidepool` does not.
"""
import json
import keyword
import os
import shutil
import tempfile
from io import BytesIO

from smolagents.local_python_executor import CodeOutput
from smolagents.monitoring import AgentLogger, LogLevel
from smolagents.remote_executors import RemotePythonExecutor
from smolagents.serialization import SafeSerializer, SerializationError
from smolagents.utils import BASE_BUILTIN_MODULES, AgentError

from ._client import Client, ProcessExited, TidepoolError

__all__ = ["TidepoolExecutor", "SMOLAGENTS_VERSION"]

# The version this module is written and tested against (pyproject.toml's extra).
SMOLAGENTS_VERSION = "1.26.0"

# The name of the policy an executor that starts its own tidepool writes: its
# `policy` (a preset) plus the agent's tools.
AGENT_POLICY = "smolagents-agent"

# tidepool cuts an error's message at about 8 KiB: a longer final answer is read
# back from the session (the sandbox keeps it in _tp_box["final"]).
_MESSAGE_SAFE = 4000

# Defined in every session before the agent's code: smolagents' safe format
# (SafeSerializer's type markers) both ways, the tool stubs' maker and
# final_answer's exception. Nothing here imports a module unless a value needs
# it (a refused import is the exec's end in tidepool, try/except or not).
_HELPERS = r'''
_tp_box = {}

class FinalAnswerException(BaseException):
    def __init__(self, value):
        self.value = value
        super().__init__(value)

class SerializationError(Exception):
    pass

def _tp_to_safe(obj):
    t = type(obj)
    if obj is None or t is str or t is int or t is float or t is bool:
        return obj
    if t is list:
        return [_tp_to_safe(v) for v in obj]
    if t is tuple:
        return {"__type__": "tuple", "data": [_tp_to_safe(v) for v in obj]}
    if t is dict:
        if all(type(k) is str for k in obj):
            return {k: _tp_to_safe(v) for k, v in obj.items()}
        return {"__type__": "dict_with_complex_keys",
                "data": [[_tp_to_safe(k), _tp_to_safe(v)] for k, v in obj.items()]}
    if t is set or t is frozenset:
        return {"__type__": t.__name__, "data": [_tp_to_safe(v) for v in obj]}
    if t is bytes:
        import base64
        return {"__type__": "bytes", "data": base64.b64encode(obj).decode()}
    if t is complex:
        return {"__type__": "complex", "real": obj.real, "imag": obj.imag}
    mod, name = getattr(t, "__module__", "") or "", t.__name__
    if mod == "datetime" and name in ("datetime", "date", "time"):
        return {"__type__": name, "data": obj.isoformat()}
    if mod == "datetime" and name == "timedelta":
        return {"__type__": "timedelta", "total_seconds": obj.total_seconds()}
    if mod == "decimal" and name == "Decimal":
        return {"__type__": "Decimal", "data": str(obj)}
    if mod.startswith("pathlib") and "Path" in name:
        return {"__type__": "Path", "data": str(obj)}
    if mod == "numpy" or mod.startswith("numpy."):
        if name == "ndarray":
            return {"__type__": "ndarray", "data": obj.tolist(), "dtype": str(obj.dtype)}
        if hasattr(obj, "item"):
            return obj.item()
    fields = getattr(t, "__dataclass_fields__", None)
    if isinstance(fields, dict) and not isinstance(obj, type):
        return {"__type__": "dataclass", "class_name": name, "module": mod,
                "data": {f: _tp_to_safe(getattr(obj, f)) for f in fields}}
    raise SerializationError(f"Cannot safely serialize object of type {name}")

def _tp_from_safe(obj):
    if isinstance(obj, list):
        return [_tp_from_safe(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    kind = obj.get("__type__")
    if kind is None or not isinstance(kind, str):
        return {k: _tp_from_safe(v) for k, v in obj.items()}
    data = obj.get("data")
    if kind in ("tuple", "set", "frozenset"):
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](
            _tp_from_safe(v) for v in data)
    if kind == "dict_with_complex_keys":
        return {_tp_from_safe(k): _tp_from_safe(v) for k, v in data}
    if kind in ("bytes", "PIL.Image"):  # an image arrives as its PNG file's bytes
        import base64
        return base64.b64decode(data)
    if kind == "complex":
        return complex(obj["real"], obj["imag"])
    if kind in ("datetime", "date", "time"):
        import datetime
        return getattr(datetime, kind).fromisoformat(data)
    if kind == "timedelta":
        import datetime
        return datetime.timedelta(seconds=obj["total_seconds"])
    if kind == "Decimal":
        import decimal
        return decimal.Decimal(data)
    if kind == "Path":
        return data
    if kind == "ndarray":
        return _tp_from_safe(data)
    if kind == "dataclass":
        return {"__dataclass__": obj.get("class_name"), "__module__": obj.get("module"),
                **{k: _tp_from_safe(v) for k, v in data.items()}}
    return {k: _tp_from_safe(v) for k, v in obj.items()}

def _tp_bind(name, params, args, kwargs):
    if len(args) == 1 and not kwargs and isinstance(args[0], dict) and args[0] \
            and all(k in params for k in args[0]):
        return dict(args[0])
    if len(args) > len(params):
        raise TypeError(f"{name}() takes {len(params)} positional arguments but "
                        f"{len(args)} were given")
    bound = dict(kwargs)
    for p, a in zip(params, args):
        if p in bound:
            raise TypeError(f"{name}() got multiple values for argument '{p}'")
        bound[p] = a
    return bound

def _tp_tool(name, params, doc):
    call = tools.call
    def stub(*args, **kwargs):
        return _tp_from_safe(call(name, _tp_to_safe_args(_tp_bind(name, params, args, kwargs))))
    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    return stub

def _tp_to_safe_args(bound):
    return {k: _tp_to_safe(v) for k, v in bound.items()}

def _tp_final_answer(params, doc):
    def final_answer(*args, **kwargs):
        import json
        value = "safe:" + json.dumps(_tp_to_safe(_tp_bind("final_answer", params, args, kwargs)))
        _tp_box["final"] = value
        raise FinalAnswerException(value)
    final_answer.__doc__ = doc
    return final_answer
'''


def _is_name(s):
    return isinstance(s, str) and s.isidentifier() and not keyword.iskeyword(s)


def _safe(value):
    """A value as smolagents' safe format's JSON (type markers), for the sandbox."""
    return SafeSerializer.to_json_safe(value)


class TidepoolExecutor(RemotePythonExecutor):
    """smolagents' remote executor on tidepool: CodeAgent(..., executor=TidepoolExecutor()).

    client: a tidepool Client to use (its policy, named by `policy` or its
    default, must list the agent's tools: `"tools": ["get_weather", ...]`);
    without one, the executor starts its own tidepool (the binary `tidepool`,
    else Client's search) under a policy it writes, `smolagents-agent`, which
    extends `policy` (a preset: "standard" by default, "data" for numpy, pandas
    and matplotlib) and lists the agent's tools; `tidepool_args` are added to its
    command line. limits: the session's limits (they may only lower the
    policy's). additional_imports: modules the agent may import; tidepool
    installs nothing, so they must be in the policy's python.modules (those that
    are not are logged). Attributes: session (the tidepool Session in use),
    sessions_opened, unavailable_modules (smolagents' base modules and
    additional_imports the policy refuses), last_execution (the last step's
    tidepool Execution), last_images (its figures, as PIL images when Pillow is
    installed).
    """

    def __init__(self, additional_imports=None, logger=None, allow_pickle=False, *, client=None,
                 policy=None, limits=None, tidepool=None, tidepool_args=()):
        if allow_pickle:
            raise ValueError("TidepoolExecutor speaks smolagents' safe format only: no pickle")
        super().__init__(list(additional_imports or ()), logger or AgentLogger(LogLevel.INFO),
                         allow_pickle=False)
        self.policy = policy
        self.limits = limits
        self._own = client is None
        self._tidepool = tidepool
        self._tidepool_args = list(tidepool_args)
        self._policy_dir = None
        self._policy_tools = None  # the tool names the written policy lists
        self.client = client
        self.session = None
        self.sessions_opened = 0
        self.unavailable_modules = []
        self.last_execution = None
        self.last_images = []
        self._tools = {}
        self._callbacks = {}
        self._variables = {}
        self.logger.log("tidepool executor ready (the session opens with the first code)",
                        level=LogLevel.DEBUG)

    # -- the tidepool process and the session ------------------------------------------
    def _start_client(self):
        """Starts (or restarts, for a new tool list) the executor's own tidepool."""
        names = sorted(self._tools)
        if self.client is not None and self._policy_tools == names:
            return
        if self.client is not None:
            self.logger.log("the agent's tools changed: restarting tidepool (the session's state "
                            "is lost; tools and variables are sent again)", level=LogLevel.INFO)
            self._close_session()
            self.client.close()
            self.client = None
        if self._policy_dir is None:
            self._policy_dir = tempfile.mkdtemp(prefix="tidepool-smolagents-")
        with open(os.path.join(self._policy_dir, AGENT_POLICY + ".json"), "w") as f:
            json.dump({"name": AGENT_POLICY, "extends": self.policy or "standard",
                       "description": "a smolagents CodeAgent: its base policy and its tools",
                       "tools": names}, f)
        self.client = Client(self._tidepool, [*self._tidepool_args, "--policy-dir",
                                              self._policy_dir])
        self._policy_tools = names

    def _session_policy(self):
        return AGENT_POLICY if self._own else self.policy

    def _close_session(self):
        if self.session is not None:
            try:
                self.session.close()
            except TidepoolError:
                pass
            self.session = None

    def _ensure_session(self):
        if self.session is not None and not self.session.closed:
            return self.session
        if self._own:
            self._start_client()
        self.session = self.client.session("python", policy=self._session_policy(),
                                           limits=self.limits)
        self.sessions_opened += 1
        if self.sessions_opened > 1:
            self.logger.log(f"tidepool session opened again ({self.session.id}): sending the "
                            f"tools and variables again", level=LogLevel.INFO)
        self._setup(self.session)
        return self.session

    def _run(self, session, code, inputs=None):
        # the tools go with each run (they win over a client's registered ones,
        # and a client the caller passed is left as it was)
        r = session.run(code, inputs=inputs, tools=self._callbacks)
        if r.session_lost:
            session.closed = True  # tidepool ended it; the next code opens another
        return r

    def _checked(self, session, code, what, inputs=None):
        r = self._run(session, code, inputs)
        if not r.ok:
            raise AgentError(f"tidepool: {what} failed in the session: {r.error}", self.logger)
        return r

    def _setup(self, session):
        """A new session: the helpers, the modules, the tools, the variables."""
        self._checked(session, _HELPERS, "defining the executor's helpers")
        modules = [m for m in dict.fromkeys([*BASE_BUILTIN_MODULES, *self.additional_imports])
                   if all(_is_name(p) for p in m.split("."))]
        refused = []
        while modules:  # a refused import ends its exec: drop it and import the rest
            r = self._run(session, "\n".join(f"import {m}" for m in modules))
            rule = (r.error.rule or "") if r.error is not None else ""
            if r.ok or not rule.startswith("python.modules:") or rule[15:] not in modules:
                if not r.ok:
                    raise AgentError(f"tidepool: importing {modules} failed: {r.error}",
                                     self.logger)
                break
            modules.remove(rule[15:])
            refused.append(rule[15:])
        if refused and refused != self.unavailable_modules:
            self.logger.log(f"tidepool: the policy ({session.policy}) does not offer "
                            f"{', '.join(refused)}: the agent's code cannot import them",
                            level=LogLevel.INFO)
        self.unavailable_modules = refused
        self._send_tool_stubs(session)
        self._send_variables(session, self._variables)

    # -- tools ---------------------------------------------------------------------------
    @staticmethod
    def _params(tool):
        return list(getattr(tool, "inputs", None) or {})

    def _host_tools(self):
        """The tool callbacks: each calls the agent's tool with the code's arguments."""
        def callback(tool):
            def fn(**arguments):
                args = {k: SafeSerializer.from_json_safe(v) for k, v in arguments.items()}
                result = tool(**args)
                try:
                    return _safe(result)
                except SerializationError:
                    return str(result)
            return fn
        return {name: callback(tool) for name, tool in self._tools.items()
                if name != "final_answer"}

    def _send_tool_stubs(self, session):
        lines = []
        for name, tool in self._tools.items():
            if not _is_name(name):
                self.logger.log(f"tidepool: tool name {name!r} is no Python name: skipped",
                                level=LogLevel.INFO)
                continue
            params, doc = self._params(tool), getattr(tool, "description", None)
            maker = "_tp_final_answer" if name == "final_answer" else "_tp_tool"
            args = f"{params!r}, {doc!r}" if maker == "_tp_final_answer" else \
                f"{name!r}, {params!r}, {doc!r}"
            lines.append(f"{name} = {maker}({args})")
        if lines:
            self._checked(session, "\n".join(lines), "defining the tools")

    def send_tools(self, tools):
        """The agent's tools (and managed agents): each becomes a stub in the sandbox
        that calls it here through a tidepool tool callback; final_answer raises
        FinalAnswerException with the answer."""
        self._tools = dict(tools)
        self._callbacks = self._host_tools()
        if self._own and self.client is not None and self._policy_tools != sorted(self._tools):
            self._start_client()  # a new tool list: a new policy, a new tidepool
        if self.session is not None and not self.session.closed:
            self._send_tool_stubs(self.session)

    # -- variables -----------------------------------------------------------------------
    def _send_variables(self, session, variables):
        inputs = {}
        for name, value in variables.items():
            if not _is_name(name) or name.startswith("__"):
                self.logger.log(f"tidepool: variable {name!r} is no plain Python name: not sent",
                                level=LogLevel.INFO)
                continue
            inputs[name] = _safe(value)  # SerializationError, as smolagents' own executors
        if inputs:
            code = "\n".join(f"{n} = _tp_from_safe({n})" for n in inputs)
            self._checked(session, code, "setting the variables", inputs=inputs)

    def send_variables(self, variables):
        """The agent's state (additional_args): globals of the session, sent again
        when a new session opens."""
        self._variables.update(variables or {})
        if variables and self.session is not None and not self.session.closed:
            self._send_variables(self.session, variables)

    # -- running the agent's code ----------------------------------------------------------
    def run_code_raise_errors(self, code):
        for attempt in range(3):
            session = self._ensure_session()
            try:
                r = self._run(session, code)
                break
            except ProcessExited:
                if not self._own or attempt == 2:
                    raise
                self.logger.log("tidepool exited: starting it again", level=LogLevel.INFO)
                old, self.session, self.client, self._policy_tools = self.client, None, None, None
                try:
                    old.close(timeout=5)
                except (OSError, TidepoolError):
                    pass
            except TidepoolError as e:
                if e.code != -32002 or attempt == 2:  # -32002: the session has ended
                    raise
                session.closed = True  # the code did not run: run it in a new session
        self.last_execution = r
        logs = r.stdout + r.stderr
        self.last_images = []
        if r.error is not None:
            if r.error.name == self.FINAL_ANSWER_EXCEPTION:
                return CodeOutput(output=self._final_answer(session, r.error.value), logs=logs,
                                  is_final_answer=True)
            lost = ("\n(the tidepool session was lost: the variables of earlier steps are gone; "
                    "the next code runs in a new session, with the tools and the agent's "
                    "variables)") if r.session_lost else ""
            raise AgentError(f"{logs}\nExecuting code yielded an error:\n{r.error.name}\n"
                             f"{r.error.value}\n{r.error.traceback or ''}{lost}", self.logger)
        output = r.value if not r.value_repr else r.text
        if r.images:
            self.last_images = self._images(r.images)
            output = self.last_images[0] if len(self.last_images) == 1 else self.last_images
        return CodeOutput(output=output, logs=logs, is_final_answer=False)

    def _final_answer(self, session, message):
        if len(message) >= _MESSAGE_SAFE:  # tidepool may have cut it: read it back
            message = self._checked(session, "_tp_box['final']", "reading the final answer").value
        arguments = self._deserialize_final_answer(message, allow_pickle=False)
        tool = self._tools.get("final_answer")
        if tool is None:
            return next(iter(arguments.values()), None)
        return tool(**arguments)  # the agent's final_answer tool, here on the host

    def _images(self, images):
        try:
            import PIL.Image
        except ImportError:
            self.logger.log("tidepool: the code made figures, but Pillow is not installed: "
                            "they are kept as tidepool Image(mime, data) in last_images",
                            level=LogLevel.INFO)
            return list(images)
        out = []
        for img in images:
            im = PIL.Image.open(BytesIO(img.data))
            im.load()
            out.append(im)
        return out

    def install_packages(self, additional_imports):
        """tidepool installs nothing: the modules are the policy's (see unavailable_modules)."""
        return list(additional_imports)

    def cleanup(self):
        """Closes the session, and the tidepool the executor started."""
        try:
            self._close_session()
        except ProcessExited:
            pass
        if self._own and self.client is not None:
            self.client.close()
            self.client = None
        if self._policy_dir is not None:
            shutil.rmtree(self._policy_dir, ignore_errors=True)
            self._policy_dir = None

    def delete(self):
        self.cleanup()
