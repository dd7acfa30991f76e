"""asyncio: run_async/execute_*_async are awaitable, run concurrently, and
cancelling the task stops the command and its processes."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

import conch
from conftest import pids_with, wait_until


def unique_sleep(seconds: int) -> str:
    """A sleep argument no other process has, to find it in /proc."""
    return f"{seconds}.{random.randrange(10**8):08d}"


def test_three_sessions_run_concurrently(tmp_path):
    shells = [conch.Shell(cwd=tmp_path, snapshot=None) for _ in range(3)]

    async def main():
        return await asyncio.gather(*(sh.run_async("/bin/sleep 1") for sh in shells))

    try:
        start = time.monotonic()
        results = asyncio.run(main())
        elapsed = time.monotonic() - start
    finally:
        for sh in shells:
            sh.close()
    assert [r.exit_code for r in results] == [0, 0, 0]
    assert elapsed < 2, f"three 1 s sleeps took {elapsed:.2f} s"


def test_cancelling_the_task_stops_the_command(shell):
    arg = unique_sleep(100)

    async def main():
        task = asyncio.create_task(shell.run_async(f"/bin/sleep {arg}"))
        assert await asyncio.to_thread(wait_until, lambda: pids_with(arg))
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    elapsed = asyncio.run(main())
    assert elapsed < 1, f"cancellation took {elapsed:.2f} s"
    assert pids_with(arg) == [], "the sleep outlived its cancelled task"
    assert shell.run("echo alive").output == "alive\n"


def test_wait_for_timeout_cancels_too(shell):
    arg = unique_sleep(100)

    async def main():
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(shell.run_async(f"/bin/sleep {arg}"), 0.5)

    asyncio.run(main())
    assert pids_with(arg) == []


def test_async_results_options_and_errors(shell, tmp_path):
    loop_thread = threading.get_ident()
    chunk_threads = set()

    async def main():
        r = await shell.run_async(
            "echo $V; seq 5", env={"V": "v"}, tail=2,
            on_chunk=lambda c: chunk_threads.add(threading.get_ident()),
        )
        assert r.output == "4\n5\n"
        token = conch.CancelToken()
        token.cancel()
        r = await shell.run_async("echo never", cancel=token)
        assert r.cancelled
        with pytest.raises(conch.InvalidArgumentError):
            await shell.run_async("true", cwd="missing")
        r = await conch.execute_shell_async("echo one-shot", cwd=tmp_path)
        assert r.output == "one-shot\n"
        key = f"async-{id(shell)}"
        try:
            r = await conch.execute_bash_async("echo cached", session_key=key, snapshot=None)
        finally:
            conch.close_session(key)
        assert r.output == "cached\n"

    asyncio.run(main())
    assert chunk_threads and loop_thread not in chunk_threads


def test_a_callers_token_still_cancels_an_async_run(shell):
    async def main():
        token = conch.CancelToken()
        asyncio.get_running_loop().call_later(0.3, token.cancel)
        start = time.monotonic()
        r = await shell.run_async("sleep 30", cancel=token)
        return r, time.monotonic() - start

    r, elapsed = asyncio.run(main())
    assert r.cancelled and elapsed < 2


def test_cancelling_execute_shell_async(tmp_path):
    arg = unique_sleep(100)

    async def main():
        task = asyncio.create_task(conch.execute_shell_async(f"/bin/sleep {arg}"))
        assert await asyncio.to_thread(wait_until, lambda: pids_with(arg))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert pids_with(arg) == []
