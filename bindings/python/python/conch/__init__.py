"""conch: the bash tool runtime for AI coding agents.

Run a model's shell commands in a persistent real bash (``Shell``) or a
fresh process (``execute_shell``), stream their output (``on_chunk``), bound
its memory, spill the full text to an artifact, kill the whole process tree
on timeout or abort, and get back a result the model can read.

Blocking calls release the GIL; ``*_async`` twins are awaitable and stop
the command when their task is cancelled. Every error is a ``ConchError``.
"""

from __future__ import annotations

import atexit
from typing import Any

from . import _aio
from ._conch import (
    Artifact,
    ArtifactStore,
    BashTool,
    CancelToken,
    Interception,
    JobTool,
    NormalizedCommand,
    PtySession,
    Remote,
    RemoteFiles,
    RemoteArtifactStore,
    RemotePty,
    RemoteJobTool,
    RemoteShell,
    RemoteTool,
    Sanitizer,
    Shell,
    ToolResult,
    __version__,
    apply_head_tail,
    check_bash_interception,
    close_all_sessions,
    close_session,
    connect,
    default_interceptor_rules,
    execute_bash,
    execute_shell,
    normalize_bash_command,
    sanitize_text,
)
from ._conch import _shutdown
from ._types import BashResult, JobInfo, JobPoll, PtyResult, SandboxApplied
from ._errors import (
    AuthError,
    BlockedError,
    ClosedError,
    ConchError,
    ConnectionLost,
    InternalError,
    InvalidArgumentError,
    IoError,
    NoInputError,
    NotFoundError,
    SandboxUnavailableError,
    SessionLost,
    SpawnError,
    ToolAbortError,
    ToolError,
    TooManyJobsError,
)


async def execute_shell_async(
    command: str, *, cancel: CancelToken | None = None, **options: Any
) -> BashResult:
    """``execute_shell`` as a coroutine; cancelling the task stops the command."""
    return await _aio.call_async(execute_shell, command, cancel, options)


async def execute_bash_async(
    command: str, *, cancel: CancelToken | None = None, **options: Any
) -> BashResult:
    """``execute_bash`` as a coroutine; cancelling the task stops the command."""
    return await _aio.call_async(execute_bash, command, cancel, options)


# Nothing a session started outlives the host: bash itself dies with us,
# but its background jobs would be re-parented and live on.
atexit.register(_shutdown)

__all__ = [
    "Artifact",
    "ArtifactStore",
    "AuthError",
    "BashResult",
    "BashTool",
    "BlockedError",
    "CancelToken",
    "ClosedError",
    "ConchError",
    "ConnectionLost",
    "Interception",
    "InternalError",
    "InvalidArgumentError",
    "IoError",
    "JobInfo",
    "JobPoll",
    "JobTool",
    "NoInputError",
    "NormalizedCommand",
    "NotFoundError",
    "PtyResult",
    "PtySession",
    "Remote",
    "RemoteFiles",
    "RemoteArtifactStore",
    "RemotePty",
    "RemoteJobTool",
    "RemoteShell",
    "RemoteTool",
    "SandboxApplied",
    "SandboxUnavailableError",
    "Sanitizer",
    "SessionLost",
    "Shell",
    "SpawnError",
    "ToolAbortError",
    "ToolError",
    "ToolResult",
    "TooManyJobsError",
    "__version__",
    "apply_head_tail",
    "check_bash_interception",
    "close_all_sessions",
    "close_session",
    "connect",
    "default_interceptor_rules",
    "execute_bash",
    "execute_bash_async",
    "execute_shell",
    "execute_shell_async",
    "normalize_bash_command",
    "sanitize_text",
]
