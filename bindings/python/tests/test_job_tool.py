"""Replays tests/vectors/job_tool.json through the Python face, as
core/tests/tool/job_tool.rs does in Rust: a scripted model loop calling
``bash`` (with ``async``, or past ``auto_background_after``) and ``job``
(``conch.JobTool``), every text exact (``{secs}`` is a whole number of
seconds)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

import conch
from conftest import VECTORS


def cases() -> list:
    path = VECTORS / "job_tool.json"
    assert path.is_file(), f"{path} is missing"
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return [pytest.param(case, id=case["name"]) for case in loaded]


def matches(want: str, text: str) -> bool:
    pattern = r"\d+".join(re.escape(part) for part in want.split("{secs}"))
    return re.fullmatch(pattern, text, re.S) is not None


@pytest.mark.parametrize("case", cases())
def test_job_tool_vectors(case, tmp_path):
    replay_job_tool(case, tmp_path, conch.BashTool, conch.JobTool)


def replay_job_tool(case, tmp_path, make, job_tool_of):
    """Replays a job tool vector on the bash tool ``make(cwd, **options)``
    gives (a local ``BashTool``, or a remote one) and the job tool
    ``job_tool_of(bash)`` gives for it."""
    after_ms = case.get("config", {}).get("auto_background_after_ms")
    bash = make(
        tmp_path,
        snapshot="none",
        session_key=f"py-job-tool-{id(case)}",
        auto_background_after=None if after_ms is None else after_ms / 1000,
    )
    job = job_tool_of(bash)
    try:
        for i, step in enumerate(case["steps"]):
            tool = bash if step["tool"] == "bash" else job
            try:
                text, kind = tool.execute(step["args"]).text, "ok"
            except conch.ToolError as e:
                text, kind = str(e), "failed"
            expect = step["expect"]
            assert kind == expect["kind"], (i, text)
            if "text" in expect:
                assert matches(expect["text"], text), (i, text, expect["text"])
            if "text_starts_with" in expect:
                assert text.startswith(expect["text_starts_with"]), (i, text)
    finally:
        bash.close()


def test_a_job_tool_call_is_awaitable_and_releases_the_gil(tmp_path):
    bash = conch.BashTool(tmp_path, snapshot="none", session_key="py-job-tool-async")
    job = conch.JobTool(bash)
    try:
        started = bash.execute({"command": "/bin/sleep 0.3; echo late", "async": True})
        assert started.text.startswith("Started job 1: ")

        async def main():
            ticks = 0

            async def tick():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            result = await job.execute_async({"op": "poll", "job": 1, "wait": 10})
            ticker.cancel()
            return result, ticks

        result, ticks = asyncio.run(main())
        want = "Job 1 (/bin/sleep 0.3; echo late): exited with code 0 after {secs}s\nlate"
        assert matches(want, result.text), result.text
        assert ticks > 5, "the event loop stood still during the wait"
    finally:
        bash.close()


def test_bad_job_tool_arguments_are_clear_errors(tmp_path):
    bash = conch.BashTool(tmp_path, snapshot="none", session_key="py-job-tool-bad")
    job = conch.JobTool(bash)
    with pytest.raises(conch.InvalidArgumentError, match="op"):
        job.execute({})
    with pytest.raises(conch.InvalidArgumentError, match="job"):
        job.execute({"op": "poll", "job": "one"})
    with pytest.raises(conch.InvalidArgumentError, match="async"):
        bash.execute({"command": "true", "async": "yes"})
    with pytest.raises(TypeError):
        conch.JobTool("not a tool")
    bash.close()
