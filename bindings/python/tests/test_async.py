"""asyncio: run_async/execute_*_async are awaitable, run concurrently, and
cancelling the task stops the command and its processes."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import conch
from conftest import GUARD, Sleeper, sleeper


def test_three_sessions_run_concurrently(tmp_path):
    # Each command checks in, then waits until all three have: run one
    # after another, the first would wait alone until its timeout.
    shells = [conch.Shell(cwd=tmp_path, snapshot=None) for _ in range(3)]
    command = "touch in-$RANDOM$RANDOM; until [ $(ls | grep -c ^in-) -ge 3 ]; do sleep 0.01; done"

    async def main():
        return await asyncio.gather(*(sh.run_async(command, timeout=GUARD) for sh in shells))

    try:
        results = asyncio.run(main())
    finally:
        for sh in shells:
            sh.close()
    assert [(r.exit_code, r.timed_out) for r in results] == [(0, False)] * 3


async def start_and_cancel(run_async, sleep: Sleeper) -> float:
    """Runs ``sleep``'s sleeper through ``run_async`` as a task, cancels the
    task once the sleeper runs, and returns how long the cancel took."""
    task = asyncio.create_task(run_async(sleeper(sleep.marker), on_chunk=sleep))
    await asyncio.to_thread(sleep.wait_started)
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.monotonic() - start


def test_cancelling_the_task_stops_the_command(shell, marker):
    sleep = Sleeper(marker)
    elapsed = asyncio.run(start_and_cancel(shell.run_async, sleep))
    assert elapsed < GUARD  # not the sleep's 30 s
    sleep.assert_gone()
    assert shell.run("echo alive").output == "alive\n"


def test_wait_for_timeout_cancels_too(shell, marker):
    sleep = Sleeper(marker)

    async def main():
        run = asyncio.ensure_future(shell.run_async(sleeper(marker), on_chunk=sleep))
        await asyncio.to_thread(sleep.wait_started)
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await asyncio.wait_for(run, 1)

    asyncio.run(main())
    sleep.assert_gone()


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


def test_a_callers_token_still_cancels_an_async_run(shell, marker):
    token = conch.CancelToken()
    sleep = Sleeper(marker)

    def on_chunk(text: str) -> None:
        sleep(text)
        if sleep.started.is_set():
            token.cancel()

    r = asyncio.run(shell.run_async(sleeper(marker), cancel=token, on_chunk=on_chunk))
    assert r.cancelled and not r.timed_out
    sleep.assert_gone()


def test_cancelling_execute_shell_async(marker):
    sleep = Sleeper(marker)
    elapsed = asyncio.run(start_and_cancel(conch.execute_shell_async, sleep))
    assert elapsed < GUARD
    sleep.assert_gone()
