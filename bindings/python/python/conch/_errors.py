"""The exceptions conch raises (all are ``conch.ConchError``)."""

from __future__ import annotations

from typing import Any


class ConchError(Exception):
    """Base class of every error conch raises."""


class InvalidArgumentError(ConchError, ValueError):
    """A bad argument: a missing working directory, a bad option value, an
    invalid interceptor rule, a NUL byte in a command. Also a ``ValueError``."""


class IoError(ConchError, OSError):
    """An operating-system call failed. Also an ``OSError`` (``errno`` is set
    when the system gave one)."""


class SpawnError(ConchError, OSError):
    """A process (bash, a PTY child) could not be started. Also an ``OSError``."""


class ClosedError(ConchError):
    """The handle (a ``Shell``, a ``PtySession``) was closed."""


class NotFoundError(ConchError, LookupError):
    """A lookup failed, e.g. ``artifact://7`` does not exist, or a job id the
    session does not have (``no job 7 in this session``). Also a ``LookupError``."""


class TooManyJobsError(ConchError):
    """``Shell.start`` was refused: the session already runs as many jobs as
    its ``max_jobs`` allows. Nothing was started. ``running`` is the number
    of jobs running then."""

    def __init__(self, message: str, running: int = 0) -> None:
        super().__init__(message)
        self.running = running


class NoInputError(ConchError):
    """Input (``Shell.write``, ``close_stdin``, ``write_key``) for a job that
    takes none: it has ended, its input was closed, it was started without
    ``stdin=True`` (or, for a key, without a terminal), or a command left it
    running."""


class SandboxUnavailableError(ConchError):
    """The ``sandbox`` asked for cannot be enforced on this machine: the
    kernel lacks a feature the policy needs (Landlock, a Landlock ABI,
    seccomp, a cgroup controller). ``str(e)`` names it. Nothing was started;
    ``best_effort=True`` in the sandbox applies what the kernel supports."""


class InternalError(ConchError, RuntimeError):
    """A bug in conch: the native code panicked (``str(e)`` is ``conch
    panicked: <what>``). Also a ``RuntimeError``. The call did not complete;
    the object it was called on stays usable where it can."""


class AuthError(ConchError):
    """``conch.connect``: the server refused the token, or asked for one that
    was not given."""


class ConnectionLost(ConchError, ConnectionError):
    """The server of a ``conch.connect`` cannot be reached, or was lost and
    did not come back within ``reconnect_within``: nothing more can be asked
    of that connection. Also a ``ConnectionError``."""


class SessionLost(ConchError):
    """The remote session is gone on the server: it was closed, or its
    client was away longer than the server's grace period."""


class ToolError(ConchError):
    """A tool call failed; ``str(e)`` is the text for the model (output,
    then e.g. ``Command exited with code 1``), ``details`` the structured
    details (truncation metadata) or ``None``."""

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


class BlockedError(ToolError):
    """The interceptor blocked the command: ``str(e)`` is ``Blocked: <why>
    ...``, ``suggested_tool`` the host tool to use instead."""

    def __init__(self, message: str, suggested_tool: str = "") -> None:
        super().__init__(message)
        self.suggested_tool = suggested_tool


class ToolAbortError(ConchError):
    """The caller aborted the tool call (its ``cancel`` token, or the asyncio
    task was cancelled); ``details`` as for ``ToolError``."""

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


__all__ = [
    "BlockedError",
    "ClosedError",
    "ConchError",
    "InternalError",
    "InvalidArgumentError",
    "IoError",
    "NoInputError",
    "NotFoundError",
    "SandboxUnavailableError",
    "SpawnError",
    "ToolAbortError",
    "ToolError",
    "TooManyJobsError",
]
