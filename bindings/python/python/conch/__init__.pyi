"""Type stubs of conch: the bash tool runtime for AI coding agents."""

import os
from pathlib import Path
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypedDict, TypeVar, final

from typing_extensions import NotRequired, Self

from ._types import BashResult as BashResult
from ._types import Details as _Details
from ._types import JobInfo as JobInfo
from ._types import JobPoll as JobPoll
from ._types import PtyResult as PtyResult
from ._types import SandboxApplied as SandboxApplied
from ._errors import (
    AuthError as AuthError,
    BlockedError as BlockedError,
    ClosedError as ClosedError,
    ConchError as ConchError,
    ConnectionLost as ConnectionLost,
    InternalError as InternalError,
    InvalidArgumentError as InvalidArgumentError,
    IoError as IoError,
    NoInputError as NoInputError,
    NotFoundError as NotFoundError,
    SandboxUnavailableError as SandboxUnavailableError,
    SessionLost as SessionLost,
    SpawnError as SpawnError,
    ToolAbortError as ToolAbortError,
    ToolError as ToolError,
    TooManyJobsError as TooManyJobsError,
)

__version__: str

_Path = str | os.PathLike[str]
_Env = Mapping[str, str]
_OnChunk = Callable[[str], object]
_Snapshot = Literal["auto", "none"] | _Path | None
_Inherit = Literal["all", "core", "none"]
_CarriageReturn = Literal["terminal", "newline"]
_EngineChoice = Literal["auto", "builtin", "eval"]
_Mask = bool | Sequence[str] | None

class _EnvPolicy(TypedDict, total=False):
    """``env_policy=``: which host variables reach the shell (every key
    optional; another key is a ``TypeError``)."""

    inherit: _Inherit
    exclude: Sequence[str]

class _SandboxLimits(TypedDict, total=False):
    """Resource limits of a sandboxed session (each a whole number >= 1;
    left out: no limit)."""

    cpu_seconds: int
    memory_bytes: int
    file_size_bytes: int
    open_files: int
    processes: int
    session_memory_bytes: int

class _DomainPolicy(TypedDict, total=False):
    """A network by name: the hosts commands may reach through the
    session's proxy (every key optional). Patterns: ``example.com``,
    ``*.example.com``, ``example.com:443``, ``10.0.0.0/8``; ``deny`` wins
    over ``allow``; ``resolve`` maps a name to the address it is reached
    at."""

    allow: Sequence[str]
    deny: Sequence[str]
    resolve: Mapping[str, str]

_Network = Literal["allow", "deny"] | _DomainPolicy

class _SandboxPolicy(TypedDict, total=False):
    """``sandbox=``: what a sandboxed session may do (every key optional;
    another key is an ``InvalidArgumentError``)."""

    writable: Sequence[_Path]
    readable: Sequence[_Path] | None
    network: _Network | None
    allow_tcp_ports: Sequence[int]
    limits: _SandboxLimits
    best_effort: bool

_Sandbox = _SandboxPolicy | bool | None

class _InterceptorRule(TypedDict):
    """One interceptor rule (other keys are ignored)."""

    pattern: str
    flags: NotRequired[str | None]
    tool: str
    message: str

@final
class CancelToken:
    """Cancels the runs it is passed to, from any thread. ``CancelToken(parent)``
    is cancelled whenever ``parent`` is."""

    def __new__(cls, parent: CancelToken | None = None) -> Self: ...
    def cancel(self) -> None: ...
    def is_cancelled(self) -> bool: ...

class _ContextManager(Protocol):
    """``with`` and ``async with``, as ``Shell``, ``PtySession`` and
    ``BashTool`` each define them: entering gives the object, leaving
    closes it (a ``PtySession`` kills its running command) and lets the
    exception propagate. A protocol, not a runtime base class."""

    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...

_P = ParamSpec("_P")
_R = TypeVar("_R")

def _coroutine_of(call: Callable[_P, _R]) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """Stub-only: the ``*_async`` twin of a blocking call, written once as
    ``twin = _coroutine_of(call)``: the parameters of ``call``, and a
    coroutine of its result."""

def _opening(options: Callable[_P, object], session: type[_R]) -> Callable[Concatenate[Any, _P], _R]:
    """Stub-only: a method that takes the options of the class ``options``
    (its constructor's parameters) and returns a ``session``."""

_JobStatus = Literal["running", "exited", "killed", "timed_out"]

_Signal = str | int

class _ShellCalls(_ContextManager):
    """The calls ``Shell`` and ``RemoteShell`` share: a base of the stub
    only (at run time each class defines them)."""

    def run(
        self,
        command: str,
        *,
        # schema: RunOptions
        cwd: _Path | None = None,
        env: _Env | None = None,
        head: int | None = None,
        tail: int | None = None,
        timeout: float | None = None,
        yield_after: float | None = None,
        # /schema
        on_chunk: _OnChunk | None = None,
        cancel: CancelToken | None = None,
    ) -> BashResult: ...
    run_async = _coroutine_of(run)
    def abort(self) -> None: ...
    def background_jobs(self) -> list[int]: ...
    def jobs(self) -> list[JobInfo]: ...
    def poll(
        self,
        job: int,
        *,
        wait: float = 0,
        until: str | None = None,
        max_bytes: int | None = None,
        cursor: int | None = None,
        cancel: CancelToken | None = None,
    ) -> JobPoll: ...
    poll_async = _coroutine_of(poll)
    def start(
        self,
        command: str,
        *,
        # schema: JobOptions
        cwd: _Path | None = None,
        env: _Env | None = None,
        pty: tuple[int, int] | None = None,
        stdin: bool = False,
        timeout: float | None = None,
        # /schema
    ) -> int: ...
    start_async = _coroutine_of(start)
    def write(self, job: int, data: str | bytes) -> None: ...
    write_async = _coroutine_of(write)
    def close_stdin(self, job: int) -> None: ...
    def write_key(self, job: int, key: str) -> None: ...
    def signal(self, job: int, signal: _Signal) -> None: ...
    def kill(self, job: int) -> JobPoll: ...
    kill_async = _coroutine_of(kill)
    def wait_any(
        self, jobs: Sequence[int], timeout: float | None = None, *, cancel: CancelToken | None = None
    ) -> int | None: ...
    wait_any_async = _coroutine_of(wait_any)
    def set_network(self, policy: _Network) -> None:
        """Changes the domains the session may reach, between runs:
        ``"deny"`` (none) or a domain policy, as ``sandbox``'s ``network``.
        ``"allow"``, a bad pattern, or a session not started with a domain
        policy raise ``InvalidArgumentError``."""
    set_network_async = _coroutine_of(set_network)
    def reset(self) -> None:
        """Starts the session afresh, as a new ``Shell`` with the same
        options would: everything it runs killed, its jobs forgotten, a
        fresh bash in its start directory. The shell stays open. From the
        first reset on, a reset takes a spare bash forked ahead of time."""
    reset_async = _coroutine_of(reset)
    @property
    def sandbox_applied(self) -> SandboxApplied | None: ...
    @property
    def engine(self) -> Literal["builtin", "eval"]:
        """The loop the session's bash runs: ``"builtin"`` (the loop
        builtin) or ``"eval"`` (the eval loop); the ``engine`` option
        chooses it. Waits for bash's start-up the first time; raises
        ``ClosedError`` once the session is closed."""
    def close(self) -> None: ...

@final
class Shell(_ShellCalls):
    """A persistent bash session; a context manager (closing kills
    everything it still runs)."""

    def __new__(
        cls,
        *,
        # schema: ShellOptions
        artifacts_dir: _Path | ArtifactStore | None = None,
        carriage_return: _CarriageReturn = "terminal",
        cwd: _Path | None = None,
        engine: _EngineChoice = "auto",
        env: _Env | None = None,
        env_policy: _EnvPolicy | None = None,
        job_artifact_cap: int | None = 1073741824,
        mask: _Mask = True,
        max_bytes: int | None = 51200,
        max_jobs: int | None = 16,
        non_interactive_env: bool = True,
        prefix: str | None = None,
        sandbox: _Sandbox = None,
        shell: _Path | None = None,
        snapshot: _Snapshot = "auto",
        # /schema
        on_job_exit: Callable[[JobInfo], object] | None = None,
    ) -> Self: ...
    @property
    def cwd(self) -> Path: ...

class RemoteShell(_ShellCalls):
    """A session on a ``conch serve``, with ``Shell``'s calls."""

    @property
    def files(self) -> RemoteFiles:
        """The files as the session's commands reach them: inside its
        sandbox, relative paths from its cwd."""
    @property
    def artifacts(self) -> RemoteArtifactStore: ...

def connect(
    target: str | Sequence[str],
    *,
    token: str | None = None,
    ca: _Path | None = None,
    reconnect_within: float | None = None,
) -> Remote: ...

class Remote(_ContextManager):
    """A connection to ``conch serve`` (see ``connect``)."""

    shell = _opening(Shell, RemoteShell)
    @property
    def files(self) -> RemoteFiles:
        """The server's files: inside its sandbox when it has one; relative
        paths from its cwd."""
    def pty(self) -> RemotePty: ...
    def tool(
        self,
        *,
        # schema: BashToolConfig
        artifacts_dir: _Path | ArtifactStore | None = None,
        auto_background_after: float | None = None,
        cwd: _Path | None = ".",
        engine: _EngineChoice = "auto",
        env: _Env | None = None,
        interceptor: bool = False,
        job_tool_name: str = "job",
        mask: _Mask = True,
        name: str = "bash",
        prefix: str | None = None,
        rules: Sequence[_InterceptorRule | Mapping[str, Any]] | None = None,
        sandbox: _Sandbox = None,
        session_key: str | None = None,
        shell: _Path | None = None,
        snapshot: _Snapshot = "auto",
        tool_names: Sequence[str] = (),
        update_interval: float = 0.05,
        virtual_terminal: bool = False,
        # /schema
    ) -> RemoteTool: ...
    def close(self) -> None: ...

@final
class RemoteTool(_ToolCalls):
    """The model's ``bash`` tool on a ``conch serve``, with ``BashTool``'s calls."""

    async def execute_async(
        self,
        args: _ToolArgs | Mapping[str, Any],
        *,
        on_update: _OnChunk | None = None,
        cancel: CancelToken | None = None,
    ) -> ToolResult: ...
    def job_tool(self) -> RemoteJobTool: ...
    @property
    def artifacts(self) -> RemoteArtifactStore: ...
    def close(self) -> None: ...

@final
class RemoteJobTool(_JobToolCalls):
    """The model's ``job`` tool of a ``RemoteTool``'s session, with ``JobTool``'s calls."""

    async def execute_async(
        self,
        args: _JobToolArgs | Mapping[str, Any],
        *,
        cancel: CancelToken | None = None,
    ) -> ToolResult: ...

@final
class RemoteArtifactStore(_ArtifactReads):
    """A remote session's artifact store: ``ArtifactStore``'s reads, answered by the server."""

class _FileInfo(TypedDict):
    """What ``RemoteFiles.stat`` tells of a path (and ``list`` of each entry)."""

    name: str
    type: Literal["file", "dir", "symlink", "other"]
    size: int
    mode: int
    mtime: float
    target: NotRequired[str]

@final
class RemoteFiles:
    """The files of a ``conch serve`` (``Remote.files``) or of a remote shell
    (``RemoteShell.files``). One ``read`` returns, and one ``write`` takes,
    at most 8 MiB."""

    def read(self, path: _Path, offset: int = 0, limit: int | None = None) -> bytes: ...
    async def read_async(self, path: _Path, offset: int = 0, limit: int | None = None) -> bytes: ...
    def write(self, path: _Path, data: bytes | str, mode: int | None = None) -> None: ...
    async def write_async(self, path: _Path, data: bytes | str, mode: int | None = None) -> None: ...
    def stat(self, path: _Path) -> _FileInfo: ...
    async def stat_async(self, path: _Path) -> _FileInfo: ...
    def list(self, path: _Path) -> list[_FileInfo]: ...
    async def list_async(self, path: _Path) -> list[_FileInfo]: ...
    def remove(self, path: _Path, *, recursive: bool = False) -> None: ...
    async def remove_async(self, path: _Path, *, recursive: bool = False) -> None: ...

def execute_shell(
    command: str,
    *,
    # schema: ExecuteOptions
    artifacts_dir: _Path | ArtifactStore | None = None,
    carriage_return: _CarriageReturn = "terminal",
    cwd: _Path | None = None,
    env: _Env | None = None,
    env_policy: _EnvPolicy | None = None,
    head: int | None = None,
    mask: _Mask = True,
    max_bytes: int | None = 51200,
    non_interactive_env: bool = True,
    sandbox: _Sandbox = None,
    shell: _Path | None = None,
    tail: int | None = None,
    timeout: float | None = None,
    # /schema
    on_chunk: _OnChunk | None = None,
    cancel: CancelToken | None = None,
) -> BashResult:
    """Runs ``command`` once in a fresh ``<shell> -c`` process."""

execute_shell_async = _coroutine_of(execute_shell)

def execute_bash(
    command: str,
    *,
    session_key: str | None = None,
    shell: _Path | None = None,
    prefix: str | None = None,
    snapshot: _Snapshot = "auto",
    engine: _EngineChoice = "auto",
    session_env: _Env | None = None,
    mask: _Mask = True,
    cwd: _Path | None = None,
    env: _Env | None = None,
    timeout: float | None = None,
    on_chunk: _OnChunk | None = None,
    cancel: CancelToken | None = None,
    head: int | None = None,
    tail: int | None = None,
    artifacts_dir: _Path | ArtifactStore | None = None,
    sandbox: _Sandbox = None,
) -> BashResult:
    """Runs ``command`` in a cached persistent session (by ``session_key``)."""

execute_bash_async = _coroutine_of(execute_bash)

def close_session(session_key: str) -> None: ...
def close_all_sessions() -> None: ...
@final
class NormalizedCommand:
    """A command with its trailing ``| head``/``| tail`` stages taken off."""

    def __new__(
        cls, command: str, head_lines: int | None = None, tail_lines: int | None = None
    ) -> Self: ...
    @property
    def command(self) -> str: ...
    @property
    def head_lines(self) -> int | None: ...
    @property
    def tail_lines(self) -> int | None: ...

def normalize_bash_command(command: str) -> NormalizedCommand: ...
def apply_head_tail(text: str, head: int | None = None, tail: int | None = None) -> str: ...
@final
class Interception:
    """A blocked command."""

    @property
    def blocked(self) -> bool: ...
    @property
    def message(self) -> str: ...
    @property
    def suggested_tool(self) -> str: ...

def check_bash_interception(
    command: str,
    tool_names: Iterable[str],
    rules: Sequence[_InterceptorRule | Mapping[str, Any]] | None = None,
) -> Interception | None: ...
def default_interceptor_rules() -> list[_InterceptorRule]: ...
def sanitize_text(text: str | bytes) -> str: ...
@final
class Sanitizer:
    """``sanitize_text`` for a stream that arrives in pieces."""

    def __init__(self) -> None: ...
    def push(self, data: str | bytes) -> str: ...
    def finish(self) -> str: ...

@final
class Artifact:
    """A reserved artifact."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def url(self) -> str: ...

class _ArtifactReads:
    """The reads ``ArtifactStore`` and ``RemoteArtifactStore`` share (a base
    of the stub only)."""

    def resolve(self, url: str) -> str: ...
    def read(self, id: str, offset: int = 0, limit: int | None = None) -> str: ...

@final
class ArtifactStore(_ArtifactReads):
    """A directory of artifacts with sequential ids."""

    def __new__(cls, dir: _Path) -> Self: ...
    @staticmethod
    def process_default() -> ArtifactStore:
        """The process's own store: where a shell, a tool or a call spills
        when given no ``artifacts_dir``."""
    @property
    def dir(self) -> Path: ...
    def allocate(self, kind: str = "bash") -> Artifact: ...

class _PtyCalls(_ContextManager):
    """The calls ``PtySession`` and ``RemotePty`` share (a base of the stub
    only)."""

    def start(
        self,
        command: str,
        *,
        # schema: PtyOptions
        cols: int | None = 80,
        cwd: _Path | None = None,
        env: _Env | None = None,
        env_policy: _EnvPolicy | None = None,
        mask: _Mask = True,
        max_bytes: int | None = 51200,
        non_interactive_env: bool = True,
        rows: int | None = 24,
        sandbox: _Sandbox = None,
        shell: _Path | None = None,
        timeout: float | None = None,
        # /schema
        on_chunk: _OnChunk | None = None,
        cancel: CancelToken | None = None,
    ) -> PtyResult: ...
    start_async = _coroutine_of(start)
    def write(self, data: str | bytes) -> None: ...
    def write_key(self, key: str) -> None: ...
    def resize(self, cols: int, rows: int) -> None: ...
    def kill(self) -> None: ...
    def is_running(self) -> bool: ...
    def screen_text(self) -> str: ...
    def cursor_position(self) -> tuple[int, int]: ...
    def size(self) -> tuple[int, int]: ...

@final
class PtySession(_PtyCalls):
    """A pseudo-terminal running one command at a time, with a virtual screen."""

    def __init__(self) -> None: ...

@final
class RemotePty(_PtyCalls):
    """A terminal on a ``conch serve``, with ``PtySession``'s calls."""

    def close(self) -> None: ...

# Functional form: `async` is a keyword.
_ToolArgs = TypedDict(
    "_ToolArgs",
    {"command": str, "cwd": str, "timeout": float, "head": int, "tail": int, "async": bool},
    total=False,
)

class _ToolDefinition(TypedDict):
    """A tool's definition for the model: register it with an LLM API as it is."""

    name: str
    description: str
    input_schema: dict[str, Any]

class _JobToolArgs(TypedDict, total=False):
    op: Literal["poll", "write", "kill", "list"]
    job: int
    input: str
    wait: float
    until: str

@final
class ToolResult:
    """A successful tool call: ``text`` for the model, ``details`` the metadata."""

    @property
    def text(self) -> str: ...
    @property
    def details(self) -> _Details | None: ...

class _ToolCalls(_ContextManager):
    """The calls ``BashTool`` and ``RemoteTool`` share (a base of the stub
    only)."""

    def definition(self) -> _ToolDefinition: ...
    def execute(
        self,
        args: _ToolArgs | Mapping[str, Any],
        on_update: _OnChunk | None = None,
        cancel: CancelToken | None = None,
    ) -> ToolResult: ...

@final
class BashTool(_ToolCalls):
    """The model's ``bash`` tool (normalize, intercept, cwd, timeout, run, shape)."""

    def __new__(
        cls,
        cwd: _Path = ".",
        *,
        artifacts_dir: _Path | None = None,
        tool_names: Sequence[str] = (),
        interceptor: bool = False,
        virtual_terminal: bool = False,
        has_ui: bool = False,
        session_key: str | None = None,
        rules: Sequence[_InterceptorRule | Mapping[str, Any]] | None = None,
        shell: _Path | None = None,
        prefix: str | None = None,
        snapshot: _Snapshot = "auto",
        engine: _EngineChoice = "auto",
        env: _Env | None = None,
        mask: _Mask = True,
        update_interval: float = 0.05,
        auto_background_after: float | None = None,
        name: str | None = None,
        job_tool_name: str | None = None,
        sandbox: _Sandbox = None,
    ) -> Self: ...
    execute_async = _coroutine_of(_ToolCalls.execute)
    @property
    def artifacts(self) -> ArtifactStore | None: ...
    @property
    def pty(self) -> PtySession: ...
    def close(self) -> None: ...

class _JobToolCalls:
    """The calls ``JobTool`` and ``RemoteJobTool`` share (a base of the stub
    only)."""

    def definition(self) -> _ToolDefinition: ...
    def execute(
        self,
        args: _JobToolArgs | Mapping[str, Any],
        cancel: CancelToken | None = None,
    ) -> ToolResult: ...

@final
class JobTool(_JobToolCalls):
    """The model's ``job`` tool on the session of a ``BashTool``."""

    def __new__(cls, bash_tool: BashTool) -> Self: ...
    execute_async = _coroutine_of(_JobToolCalls.execute)
