"""The caller's side: ``ActorShell``, the blocking face of a ``ShellActor``."""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any, Callable, Iterable, Iterator

import ray
from ray.exceptions import RayActorError, RayTaskError

import conch

from ._actor import ToolResult


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
            # The fields as a dict: Ray's msgpack, not its pickle path.
            return conch.BashResult(**self._get(self.actor._run.remote(command, **options)))
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
        refs = self.actor._stream.remote(command, call_id=call_id, **options)
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
                item = self._get(ref)
                yield item if isinstance(item, str) else conch.BashResult(**item)
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

    def set_network(self, policy: Any) -> None:
        """Changes the domains the session may reach (``conch.Shell.set_network``)."""
        self._get(self.actor.set_network.remote(policy))

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

