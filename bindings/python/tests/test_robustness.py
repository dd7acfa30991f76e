"""Regressions of misuse: a panic is an ordinary exception, every number
reaches the core's checker (whatever its size), ``async with`` closes
without holding the event loop, and ``close()`` frees the descriptors of a
shell that is still referenced."""

from __future__ import annotations

import asyncio
import gc
import os

import pytest

import conch
from conch import _conch

from conftest import GUARD, Sleeper, sleeper


# -- a panic is conch.InternalError, an Exception ---------------------------


@pytest.mark.parametrize("place", ["call", "pool"])
def test_a_panic_is_an_internal_error_that_except_exception_catches(place):
    try:
        _conch._panic(place)
    except Exception as e:  # a PanicException (a BaseException) would escape
        error = e
    assert isinstance(error, conch.InternalError)
    assert isinstance(error, conch.ConchError) and isinstance(error, RuntimeError)
    assert str(error).startswith("conch panicked: on purpose")


def test_the_pool_runs_on_after_a_panic(shell):
    for _ in range(3):
        with pytest.raises(conch.InternalError):
            _conch._panic("pool")
    assert shell.run("echo still here").output == "still here\n"


# -- numbers of any size reach the core's checkers --------------------------

TOO_LARGE = [2**63, 2**64, 2**200, 2**1100]
# Past i64 but within a float's range: the count the core saturates.
HUGE = [2**63, 2**64, 2**200]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e300, -1, 0, -0.0, *TOO_LARGE])
def test_a_bad_timeout_is_the_checkers_error(shell, value):
    with pytest.raises(conch.InvalidArgumentError, match=r"^timeout must be a positive number of seconds"):
        shell.run("true", timeout=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^timeout must be"):
        conch.execute_shell("true", timeout=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^timeout must be"):
        conch.PtySession().start("true", timeout=value)


@pytest.mark.parametrize("value", [-1, -(2**63) - 1, -(2**200), -(2**1100)])
def test_a_negative_count_is_the_checkers_error_whatever_its_size(shell, value):
    for name in ("head", "tail"):
        with pytest.raises(conch.InvalidArgumentError, match=rf"^{name} must be a whole number >= 0, got -"):
            shell.run("true", **{name: value})
        with pytest.raises(conch.InvalidArgumentError, match=rf"^{name} must be a whole number >= 0"):
            conch.apply_head_tail("a\nb", **{name: value})
    for name in ("cols", "rows"):
        with pytest.raises(conch.InvalidArgumentError, match=rf"^{name} must be a whole number >= 0"):
            conch.PtySession().start("true", **{name: value})
    with pytest.raises(conch.InvalidArgumentError, match=r"^cols must be a whole number >= 0"):
        conch.PtySession().resize(value, 24)
    store = conch.ArtifactStore("unused")
    with pytest.raises(conch.InvalidArgumentError, match=r"^offset must be a whole number >= 0"):
        store.read("0", offset=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^limit must be a whole number >= 0"):
        store.read("0", limit=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^head_lines must be a whole number >= 0"):
        conch.NormalizedCommand("true", value)
    with pytest.raises(conch.InvalidArgumentError, match=r'^args\["head"\] must be a whole number >= 0'):
        conch.BashTool().execute({"command": "true", "head": value})


@pytest.mark.parametrize("value", [0, -1, -(2**200)])
def test_a_bad_max_bytes_is_the_checkers_error(tmp_path, value):
    with pytest.raises(conch.InvalidArgumentError, match=r"^max_bytes must be a whole number >= 1, got"):
        conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^max_bytes must be a whole number >= 1"):
        conch.execute_shell("true", max_bytes=value)


@pytest.mark.parametrize("value", [2**64, 2**200])
def test_a_count_past_64_bits_is_refused(shell, value):
    """A count past 2^64 is no count a caller meant: the core refuses it
    (for a JavaScript number too), it never saturates to "everything"."""
    with pytest.raises(conch.InvalidArgumentError, match=r"^head must be a whole number below 2\^64, got "):
        shell.run("echo a; echo b", head=value)
    with pytest.raises(conch.InvalidArgumentError, match=r"^head must be a whole number below 2\^64, got "):
        conch.apply_head_tail("a\nb", value, value)


def test_an_artifact_offset_past_64_bits_is_refused_not_saturated():
    store = conch.ArtifactStore("unused")
    with pytest.raises(conch.InvalidArgumentError, match=r"^offset must be a whole number below 2\^64, got "):
        store.read("0", offset=10**30)


def test_an_int_past_a_float_is_the_checkers_error_as_infinity(shell):
    with pytest.raises(conch.InvalidArgumentError, match=r"^head must be a whole number below 2\^64, got inf$"):
        shell.run("true", head=2**1100)
    with pytest.raises(conch.InvalidArgumentError, match=r"^max_bytes must be a whole number below 2\^64, got inf$"):
        conch.execute_shell("true", max_bytes=2**1100)


@pytest.mark.parametrize("value", [2**64, 2**200])
def test_a_max_bytes_past_64_bits_is_refused(tmp_path, value):
    with pytest.raises(conch.InvalidArgumentError, match=r"^max_bytes must be a whole number below 2\^64, got "):
        conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=value)


def test_a_max_bytes_in_64_bits_keeps_everything(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=2**63) as big:
        assert big.run("echo ok").output == "ok\n"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 1e300, 2**1100])
def test_a_bad_update_interval_is_the_checkers_error(value):
    with pytest.raises(conch.InvalidArgumentError, match=r"^update_interval must be a number"):
        conch.BashTool(update_interval=value)


def test_a_huge_pty_size_is_clamped_as_at_start():
    with conch.PtySession() as pty:
        r = pty.start("stty size", cols=2**40, rows=2**63, timeout=GUARD)
    assert r.exit_code == 0, r.output
    rows, cols = map(int, r.output.split())
    assert 0 < rows < 2**16 and 0 < cols < 2**16


# -- async with ------------------------------------------------------------


def test_async_with_closes_the_shell_without_holding_the_loop(tmp_path, marker):
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    async def main() -> conch.Shell:
        async with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
            assert isinstance(sh, conch.Shell)
            # A background job that ignores SIGINT and SIGTERM: closing
            # takes the whole kill ladder (about a second) to get it.
            sh.run(f"trap '' INT TERM; {sleeper(marker)} &", timeout=GUARD)
            stop = asyncio.Event()
            tick = asyncio.create_task(ticker(stop))
            await asyncio.sleep(0.05)
            before = ticks
        stop.set()
        await tick
        assert ticks - before > 20, "the loop did not run while the shell closed"
        return sh

    sh = asyncio.run(main())
    with pytest.raises(conch.ClosedError):
        sh.run("true")


def test_async_with_closes_on_an_exception_and_lets_it_through(tmp_path):
    async def main() -> conch.Shell:
        sh = conch.Shell(cwd=tmp_path, snapshot=None)
        with pytest.raises(KeyError):
            async with sh:
                raise KeyError("mine")
        return sh

    with pytest.raises(conch.ClosedError):
        asyncio.run(main()).run("true")


def test_async_with_kills_the_pty_command_and_closes_the_tool(tmp_path, marker):
    job = Sleeper(marker)

    async def main() -> None:
        async with conch.PtySession() as pty:
            task = asyncio.ensure_future(pty.start_async(sleeper(marker), on_chunk=job))
            await asyncio.get_running_loop().run_in_executor(None, job.wait_started)
        result = await asyncio.wait_for(task, GUARD)
        assert result.cancelled
        async with conch.BashTool(tmp_path, session_key=marker) as tool:
            assert tool.execute({"command": "echo in"}).text == "in"

    asyncio.run(main())
    job.assert_gone()


# -- close() releases the descriptors at once ------------------------------


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_close_releases_every_descriptor_of_a_shell_still_referenced(tmp_path):
    gc.collect()
    gc.disable()  # nothing may be freed but by close() itself
    try:
        before = open_fds()
        sh = conch.Shell(cwd=tmp_path, snapshot=None)
        assert sh.run("echo hi").output == "hi\n"
        assert len(open_fds() - before) > 0
        sh.close()
        leaked = open_fds() - before
        assert not leaked, [os.readlink(f"/proc/self/fd/{fd}") for fd in leaked if os.path.exists(f"/proc/self/fd/{fd}")]
        assert sh.cwd == tmp_path
        assert sh.background_jobs() == []
        sh.abort()
        with pytest.raises(conch.ClosedError, match="^shell is closed$"):
            sh.run("true")
    finally:
        gc.enable()


# -- a burst of parallel runs leaves no threads or descriptors behind --------


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def test_fifty_parallel_runs_leave_threads_and_descriptors_as_they_were(tmp_path):
    """The runs of a burst run in parallel (each on its caller's thread,
    the GIL released), any helper thread ends once idle (10 s), and every
    shell frees its descriptors on close: nothing grows for the life of
    the process."""
    import threading
    import time

    gc.collect()
    threads_before, fds_before = thread_count(), len(open_fds())
    shells = [conch.Shell(cwd=tmp_path, snapshot=None) for _ in range(50)]
    results: list[str] = []
    started = threading.Barrier(50)

    def one(sh: conch.Shell) -> None:
        started.wait(GUARD)
        results.append(sh.run("/bin/sleep 0.2; echo done").output)

    runners = [threading.Thread(target=one, args=(sh,)) for sh in shells]
    began = time.monotonic()
    for t in runners:
        t.start()
    for t in runners:
        t.join(GUARD)
    took = time.monotonic() - began
    assert results == ["done\n"] * 50
    # One after another they would take 10 s.
    assert took < 5, f"the runs ran in parallel (took {took:.1f} s)"
    for sh in shells:
        sh.close()
    del shells, runners
    gc.collect()
    deadline = time.monotonic() + 10 + GUARD
    while thread_count() > threads_before + 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert thread_count() <= threads_before + 2, (threads_before, thread_count())
    assert len(open_fds()) <= fds_before + 2, (fds_before, len(open_fds()))
