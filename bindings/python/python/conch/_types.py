"""The results of the core as Python classes: generated from docs/api/schema.json
by core/tests/schema.rs, do not edit (regenerate with
``CONCH_BLESS=1 cargo test -p conch-core --test schema``). The binding
fills them from the core's serialized result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from typing_extensions import NotRequired

Direction = Literal["head", "tail"]
"""Which end of the output was kept."""

JobStatus = Literal["running", "exited", "killed", "timed_out"]
"""Where a job is in its life."""

TruncatedBy = Literal["bytes", "lines"]
"""Which limit cut the output."""


@dataclass(frozen=True)
class BashResult:
    """What a run produced. The output and its counts are the sink's
    `OutputSummary` (reachable as fields of the result itself, e.g.
    `result.output`); the rest says how the run ended. The fields and their
    meaning are the same on every face (docs/api/rust.md).
    """

    truncated: bool
    """`output` is not the whole stream."""

    total_lines: int
    """Lines of the whole stream."""

    total_bytes: int
    """Bytes of the whole (sanitized) stream."""

    output_lines: int
    """Lines of `output`, the notice excluded."""

    output_bytes: int
    """Bytes of `output`, the notice excluded."""

    artifact_id: str | None
    """Set when the artifact file holds the whole stream."""

    exit_code: int | None
    """`None` when the command was killed, cancelled or its status is unknown."""

    cancelled: bool
    """True on abort, on timeout, and when conch ended the command itself
    (the session's process limit, a shell that stopped reporting): the
    output then starts with the notice saying why.
    """

    timed_out: bool
    """The deadline ended the command."""

    working_dir: str | None
    """The shell's cwd after the command."""

    session_reset: bool
    """The persistent shell had to be started afresh for this run."""

    session_ended: bool
    """This command ended the shell (`exit`, `exec`, a signal to bash, or
    a bash that could not be brought back from an interrupt): what
    earlier commands set (variables, functions, aliases, options) is
    gone; the next run starts a new bash in the last directory.
    """

    backgrounded: int | None
    """The command was still running at the run's `yield_after` and goes
    on as this job (see `RunOptions::yield_after`); the output
    is what it wrote until then, after a notice saying so.
    """

    sandbox_violations: list[str]
    """The connections the sandbox's domain policy refused while the
    command ran, as `host:port`; each is also a line `[sandbox]
    blocked: …` at the end of the output.
    """

    output: str
    """The kept text, prefixed with `[notice]\\n` when a notice was given."""


@dataclass(frozen=True)
class PtyResult:
    """How a PTY run ended."""

    exit_code: int | None
    """The exit status (`128 + signal` when a signal ended the command);
    `None` when the run was stopped (timeout, kill, cancel) or the
    command could not start.
    """

    cancelled: bool
    """Ended by `PtySession::kill`, the cancel token or the
    timeout (as `BashResult::cancelled`).
    """

    timed_out: bool
    """Ended by the timeout."""

    truncated: bool
    """`output` is not the whole stream."""

    total_lines: int
    """Lines of the whole stream."""

    total_bytes: int
    """Bytes of the whole (sanitized) stream."""

    output_lines: int
    """Lines of `output`, the notice excluded."""

    output_bytes: int
    """Bytes of `output`, the notice excluded."""

    artifact_id: str | None
    """Set when the artifact file holds the whole stream."""

    output: str
    """The kept text, prefixed with `[notice]\\n` when a notice was given."""


@dataclass(frozen=True)
class JobPoll:
    """What one poll of a job read."""

    job: int
    """The job's number in its session."""

    status: JobStatus
    """Where the job is in its life."""

    exit_code: int | None
    """The command's exit status once it ended by itself (128 + N for a
    signal N); `None` while it runs, when it was killed or timed out,
    and for work a command left behind (`cmd &`: bash alone could
    tell, and it does not wait).
    """

    cursor: int
    """The offset `output` starts at: the requested one, or later when
    what lay between is no longer kept (`omitted_bytes`).
    """

    next_cursor: int
    """Where the next poll reads from."""

    total_bytes: int
    """Bytes of sanitized output the job has written so far."""

    omitted_bytes: int
    """Bytes between the requested offset and `cursor`, skipped because
    they are no longer kept or did not fit (the artifact holds them).
    """

    artifact_id: str | None
    """The artifact holding the whole output, once it outgrew memory."""

    artifact_truncated: bool
    """The artifact reached the job's cap: it holds the first bytes of the
    output, not all of it (memory goes on keeping the newest).
    """

    elapsed: float
    """Since the job started, until it ended. In seconds."""

    waiting_for_input: bool
    """The job runs on a terminal and a process in its foreground is
    blocked reading it, its output quiet: it waits for input (write
    the answer, or kill it). False otherwise, and for a job without a
    terminal.
    """

    output: str
    """Sanitized output from `cursor` to the end of what arrived (at most
    `max_bytes`: the newest).
    """


@dataclass(frozen=True)
class JobInfo:
    """One job as `Shell::jobs` lists it."""

    job: int
    """The job's number in its session."""

    status: JobStatus
    """Where the job is in its life."""

    exit_code: int | None
    """As `JobPoll::exit_code`."""

    started: float
    """When the command that started it started (since the Unix epoch). In seconds since the Unix epoch."""

    elapsed: float
    """Since the job started, until it ended. In seconds."""

    total_bytes: int
    """Bytes of sanitized output the job has written so far."""

    artifact_id: str | None
    """The artifact holding the whole output, once it outgrew memory."""

    artifact_truncated: bool
    """The artifact reached the job's cap."""

    command: str
    """The command that started it."""


@dataclass(frozen=True)
class SandboxApplied:
    """What of a session's sandbox is in force (`Shell::sandbox_applied`):
    everything the policy asked for, unless it was made with
    `Sandbox::best_effort` on a kernel or host that lacks something,
    which `SandboxApplied::not_applied` then names.
    """

    landlock_abi: int
    """The kernel's Landlock ABI (0: none)."""

    namespaces: bool
    """The session's own mount, PID, UTS and IPC namespaces: every mount
    but the writable paths read-only (so `chmod`, `chown`, `touch -d`
    and links outside them fail too), the secrets covered (password
    hashes, SSH host keys, `/root`, other users' homes, credential
    stores, the daemons' control sockets), a `/proc` that shows only
    the session's own processes, and a host name and IPC objects of
    its own.
    """

    filesystem: bool
    """The filesystem rules (Landlock)."""

    network: bool
    """The socket filter of `Network::Deny` (seccomp); `false` with
    `Network::Allow`.
    """

    tcp_ports: bool
    """The allowed TCP ports (Landlock ABI 4); `false` when none are asked."""

    scopes: bool
    """No signal to, and no abstract UNIX socket of, a process outside the
    sandbox (Landlock ABI 6): applied when the kernel has it, never
    required.
    """

    limits: bool
    """The per-process limits (rlimits, always applied when asked);
    `false` when none is asked.
    """

    processes: bool
    """`Limits::processes` (a cgroup); `false` when not asked."""

    session_memory: bool
    """`Limits::session_memory_bytes` (a cgroup); `false` when not asked."""

    not_applied: list[str]
    """What was asked and did not apply, each with why."""


class Details(TypedDict):
    """The structured part of a tool result."""

    meta: Meta
    """Metadata the host keeps next to the text."""


class Meta(TypedDict):
    """Metadata the host keeps next to the text."""

    truncation: NotRequired[Truncation]
    """Set when the text is not the whole output the command was asked for."""


class Truncation(TypedDict):
    """What was shown of an output, and where the whole of it is."""

    direction: Direction
    """Which end of the output was kept."""

    truncated_by: TruncatedBy
    """Which limit cut the output."""

    total_lines: int
    """Lines and bytes of the whole output."""

    total_bytes: int

    output_lines: int
    """Lines and bytes shown."""

    output_bytes: int

    artifact_id: NotRequired[str]
    """The artifact holding the whole output (`artifact://<id>`)."""

    max_bytes: NotRequired[int]
    """The byte limit that cut the output."""

    shown_range: NotRequired[LineRange]
    """The lines shown, when they are one contiguous range."""


class LineRange(TypedDict):
    """Lines `start..=end` (1-based) of the whole output."""

    start: int

    end: int


__all__ = ["Direction", "JobStatus", "TruncatedBy", "BashResult", "PtyResult", "JobPoll", "JobInfo", "SandboxApplied", "Details", "Meta", "Truncation", "LineRange"]
