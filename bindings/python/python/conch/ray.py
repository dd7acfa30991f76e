"""conch on Ray: sessions as Ray actors, placed by Ray across a cluster.

Ray does the placement; conch stays the shell inside each worker. A
``ShellActor`` owns a local ``conch.Shell`` on the node Ray put it on, with
that shell's jobs (PTY jobs too), artifacts, files and a bash tool; its
methods and results are the local ones. ``ActorShell`` is its blocking face
in the caller (``conch.Shell``'s calls, conch's errors raised as their own
classes, a dead actor or node raised as ``conch.SessionLost``), and
``ShellPool`` keeps a set of them across the cluster, recycling each
returned session to a fresh bash. Nothing here is a scheduler: the core
does the shell, Ray does the rest (docs/ray.md).

Nothing a session started outlives its actor: the actor's process is the
session's host, and conch's lifeline kills every tree a host started when
the host dies by any means (``ray.kill``, a removed node, a crashed worker).
"""

from __future__ import annotations

import contextlib
import errno as _errno
import os
import queue
import shutil
import stat as _stat
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

import conch

__all__ = ["ActorJobTool", "ActorShell", "ActorTool", "ShellActor", "ShellPool", "ToolResult"]

# Calls one actor serves at once: a run, and an abort or a poll beside it.
# Ray runs a threaded actor's calls on this many threads.
MAX_CONCURRENCY = 32
# The most bytes one file read returns and one write takes, as for
# ``conch.RemoteFiles`` (docs/remote.md, Files).
MAX_FILE_BYTES = 8 << 20
T = TypeVar("T")
# Ray's worker SIGKILLs its direct children when it exits (ray.kill, a lost
# raylet): conch's guard among them, and the session's roots before the
# guard could freeze their trees, so what those roots started (background
# jobs, setsid escapes) would be left to init. Turned off for the actor's
# worker, the host's death goes to conch's lifeline, which takes every
# tree down whole (measured: nothing left, where Ray's kill left three of
# four test processes running).
RUNTIME_ENV = {"env_vars": {"RAY_kill_child_processes_on_worker_exit": "false"}}


@dataclass(frozen=True)
class ToolResult:
    """A tool call's result from a ``ShellActor``: ``conch.ToolResult``'s
    fields (that native class does not cross processes)."""

    text: str
    details: Any = None


@ray.remote(max_concurrency=MAX_CONCURRENCY, runtime_env=RUNTIME_ENV)
class ShellActor:
    """A conch session on the node Ray places this actor on.

    ``ShellActor.options(...).remote(**shell_options)`` takes
    ``conch.Shell``'s options. A ``runtime_env`` given to ``.options()``
    must keep ``RUNTIME_ENV``'s variable (``ShellPool`` keeps it), or
    ``ray.kill`` can leave a session's background processes running.
    Without ``artifacts_dir`` the session spills
    into a store of its own on the node, removed with the session, so an
    episode never reads the last one's artifacts.
    """

    def __init__(self, **shell_options: Any) -> None:
        self._options = shell_options
        self._tokens: dict[str, conch.CancelToken] = {}
        self._tool: conch.BashTool | None = None
        self._shell: conch.Shell | None = None
        self._own_store: str | None = None
        self._error: BaseException | None = None
        try:
            self._open(shell_options)
        except Exception as e:
            # Raised by every call instead: an error in __init__ would reach
            # the caller as Ray's ActorDiedError, its conch class lost.
            self._error = e
            return
        # A reset goes back to where the first bash started, whatever the
        # worker's own cwd is by then.
        self._options = {**shell_options, "cwd": str(self._shell.cwd)}

    @property
    def _sh(self) -> conch.Shell:
        if self._error is not None:
            raise self._error
        return self._shell

    def _open(self, options: dict[str, Any]) -> None:
        self._error = None
        options = dict(options)
        store = options.get("artifacts_dir")
        if store is None:
            self._own_store = tempfile.mkdtemp(prefix="conch-ray-")
            store = self._own_store
        self._store = store if isinstance(store, conch.ArtifactStore) else conch.ArtifactStore(store)
        options["artifacts_dir"] = self._store
        self._shell = conch.Shell(**options)

    def _drop(self) -> None:
        if self._tool is not None:
            self._tool.close()
            self._tool = None
        if self._shell is not None:
            self._shell.close()
        if self._own_store is not None:
            shutil.rmtree(self._own_store, ignore_errors=True)
            self._own_store = None

    def info(self) -> dict[str, Any]:
        """Where the session runs: Ray's node id and address, the pid of its
        host (this actor's process), its cwd."""
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "cwd": str(self._sh.cwd),
        }

    def reset(self, **shell_options: Any) -> dict[str, Any]:
        """Closes the session (everything it runs is killed, its tool and
        own artifacts go) and opens a fresh bash: with ``shell_options``
        when given, else the first ones, in the first start directory."""
        self._drop()
        self._open(shell_options or self._options)
        return self.info()

    def close(self) -> None:
        self._drop()

    # -- runs -------------------------------------------------------------

    def run(self, command: str, call_id: str | None = None, **options: Any) -> conch.BashResult:
        if call_id is None:  # nothing can cancel it but abort: no token to watch
            return self._sh.run(command, **options)
        with self._token(call_id) as token:
            return self._sh.run(command, cancel=token, **options)

    @ray.method(num_returns="streaming")
    def stream(self, command: str, call_id: str | None = None, **options: Any) -> Iterator[Any]:
        """The run's output as it comes (``str`` chunks), then its
        ``BashResult``. A stream the caller drops stops the command."""
        chunks: queue.Queue[Any] = queue.Queue()
        done = object()
        outcome: list[Any] = []
        with self._token(call_id) as token:

            def body() -> None:
                try:
                    outcome.append(self._sh.run(command, cancel=token, on_chunk=chunks.put, **options))
                except BaseException as e:  # re-raised in the stream
                    outcome.append(e)
                chunks.put(done)

            worker = threading.Thread(target=body, daemon=True)
            worker.start()
            try:
                while (item := chunks.get()) is not done:
                    yield item
            finally:
                # Dropped early (GeneratorExit): stop the command first.
                token.cancel()
                worker.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        yield outcome[0]

    def cancel(self, call_id: str) -> None:
        """Cancels the run made with ``call_id`` (its tree killed on this node)."""
        token = self._tokens.get(call_id)
        if token is not None:
            token.cancel()

    @contextlib.contextmanager
    def _token(self, call_id: str | None) -> Iterator[conch.CancelToken]:
        token = conch.CancelToken()
        if call_id is None:
            yield token
            return
        self._tokens[call_id] = token
        try:
            yield token
        finally:
            self._tokens.pop(call_id, None)

    def abort(self) -> None:
        self._sh.abort()

    def cwd(self) -> str:
        return str(self._sh.cwd)

    def sandbox_applied(self) -> Any:
        return self._sh.sandbox_applied

    def engine(self) -> str:
        return self._sh.engine

    # -- jobs: conch.Shell's calls ---------------------------------------

    def background_jobs(self) -> list[int]:
        return self._sh.background_jobs()

    def jobs(self) -> list[conch.JobInfo]:
        return self._sh.jobs()

    def start(self, command: str, **options: Any) -> int:
        return self._sh.start(command, **options)

    def poll(self, job: int, **options: Any) -> conch.JobPoll:
        return self._sh.poll(job, **options)

    def write(self, job: int, data: str | bytes) -> None:
        self._sh.write(job, data)

    def close_stdin(self, job: int) -> None:
        self._sh.close_stdin(job)

    def write_key(self, job: int, key: str) -> None:
        self._sh.write_key(job, key)

    def signal(self, job: int, signal: str | int) -> None:
        self._sh.signal(job, signal)

    def kill(self, job: int) -> conch.JobPoll:
        return self._sh.kill(job)

    def wait_any(self, jobs: list[int], timeout: float | None = None) -> int | None:
        return self._sh.wait_any(jobs, timeout)

    # -- artifacts: the spilled outputs stay on this node ----------------

    def artifact_read(self, id: str, offset: int = 0, limit: int | None = None) -> str:
        return self._store.read(id, offset, limit)

    def artifact_resolve(self, url: str) -> str:
        return self._store.resolve(url)

    # -- files: conch.RemoteFiles' calls, on this node -------------------

    def file_read(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        return _read(self._path(path), offset, limit)

    def file_write(self, path: str, data: bytes | str, mode: int | None = None) -> None:
        _write(self._path(path), data.encode() if isinstance(data, str) else bytes(data), mode)

    def file_stat(self, path: str) -> dict[str, Any]:
        path = self._path(path)
        return _info(os.path.basename(path.rstrip("/")) or path, path, _failing("stat", path, os.lstat))

    def file_list(self, path: str) -> list[dict[str, Any]]:
        return _list(self._path(path))

    def file_remove(self, path: str, recursive: bool = False) -> None:
        _remove(self._path(path), recursive)

    def _path(self, path: str | os.PathLike[str]) -> str:
        """``path`` from the session's cwd. A sandboxed session's files
        would have to be reached from inside its sandbox (``conch serve``
        runs a helper there); this actor has none, so it refuses, as a
        server without its helper does."""
        if self._sh.sandbox_applied is not None:
            raise conch.SandboxUnavailableError(
                "the files of a sandboxed ShellActor are reached through its commands: "
                "this actor has no files helper to run inside the sandbox"
            )
        return os.path.join(str(self._sh.cwd), os.fspath(path))

    # -- the model's bash and job tools ----------------------------------

    def tool(self, **tool_options: Any) -> None:
        """Opens the bash tool (``conch.BashTool``'s options), closing the
        one before."""
        if self._tool is not None:
            self._tool.close()
        tool_options.setdefault("cwd", str(self._sh.cwd))
        self._tool = conch.BashTool(**tool_options)

    def tool_execute(self, args: dict[str, Any]) -> ToolResult:
        r = self._open_tool().execute(args)
        return ToolResult(r.text, r.details)

    def tool_definition(self) -> dict[str, Any]:
        return self._open_tool().definition()

    def job_tool_execute(self, args: dict[str, Any]) -> ToolResult:
        r = conch.JobTool(self._open_tool()).execute(args)
        return ToolResult(r.text, r.details)

    def job_tool_definition(self) -> dict[str, Any]:
        return conch.JobTool(self._open_tool()).definition()

    def tool_close(self) -> None:
        if self._tool is not None:
            self._tool.close()
            self._tool = None

    def _open_tool(self) -> conch.BashTool:
        if self._tool is None:
            raise conch.ClosedError("the ShellActor's tool is not open: call tool() first")
        return self._tool


# -- files: the remote face's file operations (remote/src/files/ops.rs) ----


def _failed(what: str, path: str, err: OSError) -> conch.ConchError:
    if err.errno == _errno.ENOENT:
        return conch.NotFoundError(f"no such file or directory: {path}")
    return conch.IoError(err.errno, f"cannot {what} {path}: {os.strerror(err.errno or 0)} (os error {err.errno})")


def _failing(what: str, path: str, fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(path, *args)
    except OSError as e:
        raise _failed(what, path, e) from None


def _read(path: str, offset: int, limit: int | None) -> bytes:
    if limit is not None and limit > MAX_FILE_BYTES:
        raise conch.InvalidArgumentError(f"limit must be at most {MAX_FILE_BYTES} bytes (one read), got {limit}")
    # Non-blocking: opening a FIFO waits for a writer otherwise.
    fd = _failing("read", path, os.open, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if _stat.S_ISDIR(st.st_mode):
            raise _failed("read", path, OSError(_errno.EISDIR, "Is a directory"))
        if not _stat.S_ISREG(st.st_mode):
            raise conch.InvalidArgumentError(f"{path} is not a regular file: only files are read")
        want = MAX_FILE_BYTES if limit is None else limit
        parts, got = [], 0
        while got <= want:
            part = _failing("read", path, lambda _p: os.pread(fd, want + 1 - got, offset + got))
            if not part:
                break
            parts.append(part)
            got += len(part)
        data = b"".join(parts)
        if len(data) > want and limit is None:
            raise conch.InvalidArgumentError(
                f"{path} is {st.st_size} bytes, more than one read returns ({MAX_FILE_BYTES}): "
                "read it by range (offset, limit)"
            )
        return data[:want]
    finally:
        os.close(fd)


def _write(path: str, data: bytes, mode: int | None) -> None:
    """Atomic: a temporary file beside the target, flushed, renamed over
    it; a reader sees the old file or the new one, never a part."""
    if len(data) > MAX_FILE_BYTES:
        raise conch.InvalidArgumentError(f"data must be at most {MAX_FILE_BYTES} bytes (one write), got {len(data)}")
    if mode is not None and not 0 <= mode <= 0o7777:
        raise conch.InvalidArgumentError(f"mode must be permission bits (0 to 0o7777), got {mode:#o}")
    folder, name = os.path.split(path)
    if not name:
        raise conch.InvalidArgumentError(f"path must name a file, got {path}")
    folder = folder or "."
    _failing("create", folder, os.makedirs, 0o777, True)
    try:
        st = os.lstat(path)
        kept = _stat.S_IMODE(st.st_mode) if _stat.S_ISREG(st.st_mode) else None
    except OSError:
        kept = None
    temp = os.path.join(folder, f".conch-write-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = _failing("write", path, lambda _p: os.open(temp, flags, 0o666))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if (mode if mode is not None else kept) is not None:
                os.fchmod(f.fileno(), mode if mode is not None else kept)
            f.flush()
            os.fsync(f.fileno())
        os.rename(temp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise _failed("write", path, e) from None
    # The rename is durable once the directory is.
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _info(name: str, path: str, st: os.stat_result) -> dict[str, Any]:
    kind = ("symlink" if _stat.S_ISLNK(st.st_mode) else "dir" if _stat.S_ISDIR(st.st_mode)
            else "file" if _stat.S_ISREG(st.st_mode) else "other")
    info: dict[str, Any] = {"name": name, "type": kind, "size": st.st_size,
                            "mode": _stat.S_IMODE(st.st_mode), "mtime": st.st_mtime_ns / 1e9}
    if kind == "symlink":
        with contextlib.suppress(OSError):
            info["target"] = os.readlink(path)
    return info


def _list(path: str) -> list[dict[str, Any]]:
    entries = []
    for name in _failing("list", path, os.listdir):
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue  # gone since the directory was read
        entries.append(_info(name, full, st))
    return sorted(entries, key=lambda e: e["name"].encode("utf-8", "surrogateescape"))


def _remove(path: str, recursive: bool) -> None:
    st = _failing("remove", path, os.lstat)
    try:
        if not _stat.S_ISDIR(st.st_mode):
            os.unlink(path)
        elif recursive:
            shutil.rmtree(path)  # symlinks inside are removed, never followed
        else:
            os.rmdir(path)
    except OSError as e:
        if e.errno == _errno.ENOTEMPTY:
            raise conch.IoError(e.errno, f"cannot remove {path} (a directory with entries: "
                                f"recursive removes its tree): {os.strerror(e.errno)} (os error {e.errno})") from None
        raise _failed("remove", path, e) from None


# -- the caller's side -----------------------------------------------------


class ActorShell:
    """The blocking face of a ``ShellActor``, with ``conch.Shell``'s calls.

    Errors are conch's own classes (``NotFoundError``, ``ClosedError``…),
    not Ray's wrappers. Once the actor or its node is gone, every call
    raises ``conch.SessionLost`` naming the node (and ``lost`` is true).
    """

    def __init__(self, actor: Any, info: dict[str, Any] | None = None) -> None:
        self.actor = actor
        self.lost = False
        self._info: dict[str, Any] = {"node_id": None, "ip": None}
        self._info = info if info is not None else self._get(actor.info.remote())

    @property
    def node_id(self) -> str:
        """The Ray node the session runs on (hex)."""
        return self._info["node_id"]

    @property
    def ip(self) -> str:
        return self._info["ip"]

    @property
    def pid(self) -> int:
        """The pid of the session's host, the actor's process."""
        return self._info["pid"]

    def _get(self, ref: Any) -> Any:
        if self.lost:
            raise self._lost("it was lost before")
        try:
            return ray.get(ref)
        except RayTaskError as e:
            # The actor raised: the caller gets the exception it raised.
            raise e.cause from None
        except RayActorError as e:
            self.lost = True
            raise self._lost(_reason(e)) from e

    def _lost(self, why: str) -> conch.SessionLost:
        return conch.SessionLost(f"the conch session on Ray node {self.node_id} ({self.ip}) is gone: {why}")

    def run(
        self,
        command: str,
        *,
        on_chunk: Callable[[str], object] | None = None,
        cancel: conch.CancelToken | None = None,
        **options: Any,
    ) -> conch.BashResult:
        """``conch.Shell.run`` on the node. ``on_chunk`` gets the output as
        Ray streams it back; ``cancel`` stops the command there."""
        if on_chunk is None and cancel is None:
            return self._get(self.actor.run.remote(command, **options))
        call_id = uuid.uuid4().hex
        done = threading.Event()
        if cancel is not None:
            # A CancelToken does not cross processes: watch it here.
            def watch() -> None:
                while not done.wait(0.01):
                    if cancel.is_cancelled():
                        self.actor.cancel.remote(call_id)
                        return

            threading.Thread(target=watch, daemon=True).start()
        try:
            result = None
            for item in self.stream(command, call_id=call_id, **options):
                if isinstance(item, str):
                    if on_chunk is not None:
                        on_chunk(item)
                else:
                    result = item
            return result
        finally:
            done.set()

    def stream(self, command: str, *, call_id: str | None = None, **options: Any) -> Iterator[str | conch.BashResult]:
        """The run's output chunks as they come, then its ``BashResult``.
        Closing the generator before its end stops the command on the node."""
        call_id = call_id or uuid.uuid4().hex
        refs = self.actor.stream.remote(command, call_id=call_id, **options)
        ended = False
        try:
            while True:
                try:
                    ref = next(refs)
                except StopIteration:
                    ended = True
                    return
                except RayActorError as e:
                    self.lost = True
                    raise self._lost(_reason(e)) from e
                yield self._get(ref)
        finally:
            if not ended and not self.lost:
                self.actor.cancel.remote(call_id)

    def abort(self) -> None:
        self._get(self.actor.abort.remote())

    def reset(self, **shell_options: Any) -> None:
        """A fresh bash in the start directory, nothing left running."""
        self._info = self._get(self.actor.reset.remote(**shell_options))

    @property
    def cwd(self) -> str:
        return self._get(self.actor.cwd.remote())

    @property
    def sandbox_applied(self) -> Any:
        return self._get(self.actor.sandbox_applied.remote())

    @property
    def engine(self) -> str:
        """The loop the session's bash runs: ``"builtin"`` or ``"eval"``."""
        return self._get(self.actor.engine.remote())

    def background_jobs(self) -> list[int]:
        return self._get(self.actor.background_jobs.remote())

    def jobs(self) -> list[conch.JobInfo]:
        return self._get(self.actor.jobs.remote())

    def start(self, command: str, **options: Any) -> int:
        return self._get(self.actor.start.remote(command, **options))

    def poll(self, job: int, **options: Any) -> conch.JobPoll:
        return self._get(self.actor.poll.remote(job, **options))

    def write(self, job: int, data: str | bytes) -> None:
        self._get(self.actor.write.remote(job, data))

    def close_stdin(self, job: int) -> None:
        self._get(self.actor.close_stdin.remote(job))

    def write_key(self, job: int, key: str) -> None:
        self._get(self.actor.write_key.remote(job, key))

    def signal(self, job: int, signal: str | int) -> None:
        self._get(self.actor.signal.remote(job, signal))

    def kill(self, job: int) -> conch.JobPoll:
        return self._get(self.actor.kill.remote(job))

    def wait_any(self, jobs: Iterable[int], timeout: float | None = None) -> int | None:
        return self._get(self.actor.wait_any.remote(list(jobs), timeout))

    @property
    def files(self) -> _Files:
        """The node's files, as ``conch.RemoteFiles``: relative paths from
        the session's cwd."""
        return _Files(self)

    @property
    def artifacts(self) -> _Artifacts:
        """The session's artifacts, read on the node."""
        return _Artifacts(self)

    def tool(self, **tool_options: Any) -> ActorTool:
        """The model's bash tool on the node (``conch.BashTool``'s
        options; ``cwd`` defaults to the session's)."""
        self._get(self.actor.tool.remote(**tool_options))
        return ActorTool(self)

    def close(self) -> None:
        """Closes the session on the node (the actor stays)."""
        if not self.lost:
            self._get(self.actor.close.remote())

    def __enter__(self) -> ActorShell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Files:
    """``conch.RemoteFiles``' calls, answered by the actor."""

    def __init__(self, sh: ActorShell) -> None:
        self._sh = sh

    def read(self, path: str | os.PathLike[str], offset: int = 0, limit: int | None = None) -> bytes:
        return self._sh._get(self._sh.actor.file_read.remote(os.fspath(path), offset, limit))

    def write(self, path: str | os.PathLike[str], data: bytes | str, mode: int | None = None) -> None:
        self._sh._get(self._sh.actor.file_write.remote(os.fspath(path), data, mode))

    def stat(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        return self._sh._get(self._sh.actor.file_stat.remote(os.fspath(path)))

    def list(self, path: str | os.PathLike[str]) -> list[dict[str, Any]]:
        return self._sh._get(self._sh.actor.file_list.remote(os.fspath(path)))

    def remove(self, path: str | os.PathLike[str], *, recursive: bool = False) -> None:
        self._sh._get(self._sh.actor.file_remove.remote(os.fspath(path), recursive))


class _Artifacts:
    """``conch.ArtifactStore``'s reads, answered by the actor."""

    def __init__(self, sh: ActorShell) -> None:
        self._sh = sh

    def read(self, id: str, offset: int = 0, limit: int | None = None) -> str:
        return self._sh._get(self._sh.actor.artifact_read.remote(id, offset, limit))

    def resolve(self, url: str) -> str:
        return self._sh._get(self._sh.actor.artifact_resolve.remote(url))


class ActorTool:
    """The model's bash tool of an ``ActorShell``: ``conch.BashTool``'s
    ``execute`` and ``definition``, its errors (``ToolError``,
    ``BlockedError``…) raised as their own classes."""

    def __init__(self, sh: ActorShell) -> None:
        self._sh = sh

    def execute(self, args: dict[str, Any]) -> ToolResult:
        return self._sh._get(self._sh.actor.tool_execute.remote(dict(args)))

    def definition(self) -> dict[str, Any]:
        return self._sh._get(self._sh.actor.tool_definition.remote())

    def job_tool(self) -> ActorJobTool:
        return ActorJobTool(self._sh)

    def close(self) -> None:
        self._sh._get(self._sh.actor.tool_close.remote())


class ActorJobTool:
    """The model's job tool beside an ``ActorTool``."""

    def __init__(self, sh: ActorShell) -> None:
        self._sh = sh

    def execute(self, args: dict[str, Any]) -> ToolResult:
        return self._sh._get(self._sh.actor.job_tool_execute.remote(dict(args)))

    def definition(self) -> dict[str, Any]:
        return self._sh._get(self._sh.actor.job_tool_definition.remote())


def _reason(e: RayActorError) -> str:
    """Ray's account of a dead actor, in one line."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    said = [line for line in lines if "died" in line or "node" in line.lower()]
    return " ".join(said[-2:] or lines[:1]) or type(e).__name__


# -- the pool --------------------------------------------------------------


def _actor_options(resources: dict[str, float] | None) -> dict[str, Any]:
    """Ray's actor options for a session's ``resources``: ``CPU``, ``GPU``
    and ``memory`` are Ray's own keywords, the rest custom resources."""
    rest = dict(resources or {})
    options: dict[str, Any] = {}
    for key, option in (("CPU", "num_cpus"), ("GPU", "num_gpus"), ("memory", "memory")):
        if key in rest:
            options[option] = rest.pop(key)
    if rest:
        options["resources"] = rest
    return options


def _is_node_id(name: object) -> bool:
    """Ray's node ids are 28 bytes, written in hex."""
    return isinstance(name, str) and len(name) == 56 and all(c in "0123456789abcdef" for c in name)


def _strategies(placement: Any, size: int) -> list[Any]:
    """The scheduling strategy of each of ``size`` sessions."""
    if placement == "SPREAD":
        return ["SPREAD"] * size
    if placement == "PACK":
        # Ray's default scheduler fills a node before it moves to the next.
        return ["DEFAULT"] * size
    if isinstance(placement, (NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy)):
        return [placement] * size
    nodes = [placement] if isinstance(placement, str) else placement
    if isinstance(nodes, (list, tuple)) and nodes and all(map(_is_node_id, nodes)):
        return [NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False) for i in range(size)]
    raise conch.InvalidArgumentError(
        'placement must be "SPREAD", "PACK", a node id, a list of node ids or a Ray '
        f"scheduling strategy, got {placement!r}"
    )


class ShellPool:
    """``size`` conch sessions across the cluster, handed out one at a time.

    ``placement``: ``"SPREAD"`` (over as many nodes as can take them),
    ``"PACK"`` (Ray's default scheduler: a node filled before the next), a
    node id or a list of them (node affinity, one after the other), or a
    Ray scheduling strategy (a placement group's). ``resources``: what
    each session holds while it lives (``{"CPU": 1, "node_a": 1}``);
    ``None``: Ray's actor default. ``shell_options``: ``conch.Shell``'s.
    """

    def __init__(
        self,
        size: int,
        placement: Any = "SPREAD",
        resources: dict[str, float] | None = None,
        **shell_options: Any,
    ) -> None:
        if not isinstance(size, int) or size < 1:
            raise conch.InvalidArgumentError(f"size must be a whole number >= 1, got {size!r}")
        self.size = size
        self._strategies = _strategies(placement, size)
        self._actor_options = _actor_options(resources)
        self._shell_options = shell_options
        self._idle: queue.Queue[ActorShell] = queue.Queue()
        self._sessions: list[ActorShell | None] = [None] * size
        self._lock = threading.Lock()
        self._closed = False
        actors = [self._actor(slot) for slot in range(size)]
        try:
            infos = ray.get([a.info.remote() for a in actors])
        except BaseException as e:
            for a in actors:
                ray.kill(a)
            if isinstance(e, RayTaskError):
                raise e.cause from None
            raise
        for slot, (actor, info) in enumerate(zip(actors, infos)):
            self._adopt(slot, ActorShell(actor, info))

    def _actor(self, slot: int) -> Any:
        return ShellActor.options(
            scheduling_strategy=self._strategies[slot], **self._actor_options
        ).remote(**self._shell_options)

    def _adopt(self, slot: int, sh: ActorShell) -> None:
        sh._slot = slot  # type: ignore[attr-defined]
        self._sessions[slot] = sh
        self._idle.put(sh)

    def node_ids(self) -> list[str]:
        """The node of each session, by slot."""
        return [sh.node_id for sh in self._sessions if sh is not None]

    @contextlib.contextmanager
    def session(self, timeout: float | None = None) -> Iterator[ActorShell]:
        """An idle session (waiting up to ``timeout`` seconds for one); on
        leaving, it is recycled to a fresh bash in its start directory
        with nothing left running, or replaced if it was lost."""
        if self._closed:
            raise conch.ClosedError("the ShellPool is closed")
        try:
            sh = self._idle.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no idle session within {timeout} s") from None
        if sh.lost:
            try:
                sh = self._replace(sh)
            except BaseException:
                self._idle.put(sh)  # replaced by the next caller
                raise
        try:
            yield sh
        finally:
            self._recycle(sh)

    def _recycle(self, sh: ActorShell) -> None:
        if not sh.lost:
            try:
                sh.reset()
            except conch.SessionLost:
                pass
            except Exception:
                # A fresh bash could not start (the episode removed its start
                # directory…): replaced when next handed out, which raises
                # the reason if it still holds.
                sh.lost = True
        if self._closed:
            ray.kill(sh.actor)
        else:
            self._idle.put(sh)

    def _replace(self, lost: ActorShell) -> ActorShell:
        """A new actor in the lost one's slot; the old one is killed, in
        case only its node's link was lost."""
        with contextlib.suppress(Exception):
            ray.kill(lost.actor)
        slot = lost._slot  # type: ignore[attr-defined]
        actor = self._actor(slot)
        try:
            sh = ActorShell(actor)
        except BaseException:
            ray.kill(actor)
            raise
        sh._slot = slot  # type: ignore[attr-defined]
        self._sessions[slot] = sh
        return sh

    def map(self, fn: Callable[[ActorShell, Any], T], items: Iterable[Any]) -> list[T]:
        """``fn(session, item)`` for each item, in the caller's process on
        up to ``size`` threads, each on a recycled session; the results in
        the items' order. The first exception (in that order) is raised
        once the running episodes have ended; those not started are not."""

        def episode(item: Any) -> T:
            with self.session() as sh:
                return fn(sh, item)

        with ThreadPoolExecutor(max_workers=self.size) as ex:
            futures = [ex.submit(episode, item) for item in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()  # the episodes not started yet
                raise

    def close(self) -> None:
        """Kills every session (their processes with them); idempotent."""
        if self._closed:
            return
        self._closed = True
        for sh in self._sessions:
            if sh is None:
                continue
            with contextlib.suppress(Exception):
                ray.get(sh.actor.close.remote(), timeout=10)
            with contextlib.suppress(Exception):
                ray.kill(sh.actor)

    def __enter__(self) -> ShellPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
