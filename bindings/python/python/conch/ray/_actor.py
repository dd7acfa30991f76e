"""The actor: a ``conch.Shell`` on the node Ray placed it on (docs/ray.md)."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import threading
from dataclasses import dataclass
from typing import Any, Iterator

import ray

import conch

from ._files import _failing, _info, _list, _read, _remove, _write

# Calls one actor serves at once besides its runs and their aborts (job
# calls, files, artifacts, a reset or close beside a run): Ray runs them on
# this many threads.
MAX_CONCURRENCY = 32
# A session runs one command at a time (a second run waits for the first,
# as with a local conch.Shell), so its runs have a group of their own with
# one thread: each call reaches Python on the thread the last one used,
# where a pool of 32 hands each call to another of its threads (measured:
# 2-3% of a run's round trip through Ray here). Abort and cancel have a
# group of their own, so no call queued ahead of them delays them.
CONCURRENCY_GROUPS = {"runs": 1, "control": 2}
# The cancels of runs that had not started yet (a run queued behind
# another), remembered for when they start; the oldest forgotten past this
# many (a cancel that came after its run ended is never claimed).
EARLY_CANCELS = 256
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


@ray.remote(max_concurrency=MAX_CONCURRENCY, concurrency_groups=CONCURRENCY_GROUPS, runtime_env=RUNTIME_ENV)
class ShellActor:
    """A conch session on the node Ray places this actor on.

    ``ShellActor.options(...).remote(**shell_options)`` takes
    ``conch.Shell``'s options. A ``runtime_env`` given to ``.options()``
    must keep ``RUNTIME_ENV``'s variable (``ShellPool`` keeps it), or
    ``ray.kill`` can leave a session's background processes running.
    Without ``artifacts_dir`` the session spills
    into a store of its own on the node, removed with the session, so an
    episode never reads the last one's artifacts: the worker's own
    (``conch.ArtifactStore.process_default()``: a worker hosts one actor),
    which the next conch on the node removes if the worker is killed.
    """

    def __init__(self, **shell_options: Any) -> None:
        self._options = shell_options
        self._tokens: dict[str, conch.CancelToken] = {}
        self._early_cancels: dict[str, None] = {}  # ordered: the oldest first
        self._tokens_lock = threading.Lock()
        self._tool: conch.BashTool | None = None
        self._shell: conch.Shell | None = None
        self._own_store = False
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
        self._shell = None
        options = dict(options)
        store = options.get("artifacts_dir")
        self._own_store = store is None
        if store is None:
            store = conch.ArtifactStore.process_default()
        self._store = store if isinstance(store, conch.ArtifactStore) else conch.ArtifactStore(store)
        options["artifacts_dir"] = self._store
        self._shell = conch.Shell(**options)

    def _drop(self) -> None:
        self.tool_close()
        if self._shell is not None:
            self._shell.close()
        self._empty_store()
        self._own_store = False

    def _empty_store(self) -> None:
        if self._own_store:
            # Made again at the next spill.
            shutil.rmtree(self._store.dir, ignore_errors=True)

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
        when given, else the first ones, in the first start directory.
        Without options the shell itself is reset (``conch.Shell.reset``):
        from the second reset on, its bash is a spare forked ahead of time."""
        if shell_options or self._shell is None:  # None: it could not open
            self._drop()
            self._open(shell_options or self._options)
        else:
            self.tool_close()
            self._shell.reset()
            self._empty_store()
        return self.info()

    def close(self) -> None:
        self._drop()

    # -- runs -------------------------------------------------------------

    @ray.method(concurrency_group="runs")
    def run(self, command: str, call_id: str | None = None, **options: Any) -> conch.BashResult:
        if call_id is None:  # nothing can cancel it but abort: no token to watch
            return self._sh.run(command, **options)
        with self._token(call_id) as token:
            return self._sh.run(command, cancel=token, **options)

    @ray.method(concurrency_group="runs")
    def _run(self, command: str, call_id: str | None = None, **options: Any) -> dict[str, Any]:
        """``run`` for ``ActorShell.run``: the result's fields as a dict,
        rebuilt into the ``BashResult`` by the caller. Ray sends a dict of
        plain values as msgpack, where a ``BashResult`` takes its pickle
        path (about 90 µs more per call, measured: bench/RESULTS-ray.md)."""
        return vars(self.run(command, call_id, **options))

    @ray.method(num_returns="streaming", concurrency_group="runs")
    def stream(self, command: str, call_id: str | None = None, **options: Any) -> Iterator[Any]:
        """The run's output as it comes (``str`` chunks), then its
        ``BashResult``. A stream the caller drops stops the command."""
        yield from self._streaming(command, call_id, options, lambda result: result)

    @ray.method(num_returns="streaming", concurrency_group="runs")
    def _stream(self, command: str, call_id: str | None = None, **options: Any) -> Iterator[Any]:
        """``stream`` for ``ActorShell.stream``: the result last as a dict
        of its fields, as ``_run`` gives it."""
        yield from self._streaming(command, call_id, options, vars)

    def _streaming(
        self, command: str, call_id: str | None, options: dict[str, Any], result: Any
    ) -> Iterator[Any]:
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
        yield result(outcome[0])

    @ray.method(concurrency_group="control")
    def cancel(self, call_id: str) -> None:
        """Cancels the run made with ``call_id`` (its tree killed on this
        node); a run not started yet (queued behind another) is cancelled
        as it starts."""
        with self._tokens_lock:
            token = self._tokens.get(call_id)
            if token is None:
                self._early_cancels[call_id] = None
                if len(self._early_cancels) > EARLY_CANCELS:
                    del self._early_cancels[next(iter(self._early_cancels))]
        if token is not None:
            token.cancel()

    @contextlib.contextmanager
    def _token(self, call_id: str | None) -> Iterator[conch.CancelToken]:
        token = conch.CancelToken()
        if call_id is None:
            yield token
            return
        with self._tokens_lock:
            self._tokens[call_id] = token
            if call_id in self._early_cancels:
                del self._early_cancels[call_id]
                token.cancel()
        try:
            yield token
        finally:
            with self._tokens_lock:
                self._tokens.pop(call_id, None)

    @ray.method(concurrency_group="control")
    def abort(self) -> None:
        self._sh.abort()

    def cwd(self) -> str:
        return str(self._sh.cwd)

    def sandbox_applied(self) -> Any:
        return self._sh.sandbox_applied

    def engine(self) -> str:
        return self._sh.engine

    def set_network(self, policy: Any) -> None:
        self._sh.set_network(policy)

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

