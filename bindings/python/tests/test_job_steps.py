"""Replays tests/vectors/job_steps.json through the Python face, every case
and every step, as core/tests/shell/job_steps.rs does in Rust, on a local
``Shell`` and on a remote session (``conch serve --stdio``): jobs started
beside the session, written to on a pipe and on a terminal, keyed,
signalled, killed, timed out and waited for, runs moved to the background
at ``yield_after``, the job limit, and misuse. A step's ``error`` is the
kind of the error, which names exactly one exception class here."""

from __future__ import annotations

import json
from typing import Any

import pytest

import conch
from conftest import VECTORS

# The error kinds of the vectors, each exactly one class of the Python face.
ERROR_KINDS: dict[type[BaseException], str] = {
    conch.InvalidArgumentError: "invalid_argument",
    conch.NotFoundError: "not_found",
    conch.NoInputError: "no_input",
    conch.TooManyJobsError: "too_many_jobs",
    conch.ClosedError: "closed",
    conch.IoError: "io",
    conch.SpawnError: "spawn",
}

OPS = {"run", "start", "poll", "write", "close_stdin", "key", "signal", "kill", "jobs", "wait_any"}


def load() -> list[dict]:
    path = VECTORS / "job_steps.json"
    assert path.is_file(), f"{path} is missing"
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return loaded


def cases() -> list:
    return [pytest.param(case, id=case["name"]) for case in load()]


def seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def poll_options(options: dict) -> dict:
    """A vector's poll options as ``Shell.poll`` keywords."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "wait_ms":
            out["wait"] = value / 1000
        else:
            assert key in ("until", "max_bytes", "cursor"), key
            out[key] = value
    return out


def start_options(options: dict) -> dict:
    """A vector's start options as ``Shell.start`` keywords."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "timeout_ms":
            out["timeout"] = value / 1000
        elif key == "pty":
            out["pty"] = (value[0], value[1])
        else:
            assert key in ("cwd", "env", "stdin"), key
            out[key] = value
    return out


class Replay:
    """One case's session and the job its steps act on by default: the one
    the last ``start``, or the last backgrounded ``run``, made."""

    def __init__(self, sh: conch.Shell) -> None:
        self.sh = sh
        self.last = 0

    def play(self, step: dict) -> Any:
        sh, op = self.sh, step["op"]
        job = step.get("job", self.last)
        options = step.get("options", {})
        if op == "run":
            r = sh.run(step["command"], yield_after=seconds(options.get("yield_after_ms")))
            if r.backgrounded is not None:
                self.last = r.backgrounded
            return r
        if op == "start":
            started = sh.start(step["command"], **start_options(options))
            assert isinstance(started, int)
            self.last = started
            return started
        if op == "poll":
            return sh.poll(job, **poll_options(options))
        if op == "write":
            return sh.write(job, step["data"])
        if op == "close_stdin":
            return sh.close_stdin(job)
        if op == "key":
            return sh.write_key(job, step["key"])
        if op == "signal":
            return sh.signal(job, step["signal"])
        if op == "kill":
            return sh.kill(job)
        if op == "jobs":
            return sh.jobs()
        if op == "wait_any":
            return sh.wait_any(step.get("jobs", [self.last]), seconds(step.get("timeout_ms", 0)))
        raise AssertionError(f"unknown op {op}")


def expect(got: Any, want: Any, at: str) -> None:
    """The fields ``want`` gives, compared with ``got``'s attributes; a list
    element by element (same length); anything else whole."""
    if isinstance(want, dict):
        for key, value in want.items():
            assert getattr(got, key) == value, f"{at}: {key} of {got!r}"
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{at}: {got!r}"
        for g, w in zip(got, want):
            expect(g, w, at)
    else:
        assert got == want and type(got) is type(want), f"{at}: {got!r} != {want!r}"


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("case", cases())
def test_shared_vectors(case: dict, where: str, tmp_path, request) -> None:
    shell_options = case.get("shell", {})
    assert set(shell_options) <= {"max_jobs"}, shell_options
    make = conch.Shell if where == "local" else request.getfixturevalue("remote").shell
    with make(cwd=tmp_path, snapshot=None, **shell_options) as sh:
        replay = Replay(sh)
        for i, step in enumerate(case["steps"]):
            at = f"{case['name']}: step {i} ({step['op']})"
            if "error" in step:
                with pytest.raises(conch.ConchError) as raised:
                    replay.play(step)
                kind = ERROR_KINDS.get(type(raised.value))
                assert kind == step["error"], f"{at}: {type(raised.value).__name__}: {raised.value}"
                continue
            got = replay.play(step)
            if "expect" in step:
                expect(got, step["expect"], at)


def test_every_op_and_error_kind_of_the_file_is_known() -> None:
    for case in load():
        for step in case["steps"]:
            assert step["op"] in OPS, step
            if "error" in step:
                assert step["error"] in ERROR_KINDS.values(), step


def test_each_error_kind_is_a_class_of_its_own() -> None:
    classes = list(ERROR_KINDS)
    for cls in classes:
        assert issubclass(cls, conch.ConchError)
        assert not any(cls is not other and issubclass(cls, other) for other in classes), cls
