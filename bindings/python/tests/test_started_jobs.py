"""Jobs started beside the session: ``Shell.start`` and what acts on a
started job (``write``, ``close_stdin``, ``write_key``, ``signal``,
``kill``, ``wait_any``), ``run(yield_after=)``, the job limit, the exit
hook: the acceptance checks, then what only a Python caller can see.
``test_jobs.py`` has the polls and the shared vectors."""

from __future__ import annotations

import _thread
import asyncio
import gc
import math
import queue
import re
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

import conch
from conftest import GUARD, in_background, pids_with, python_work, rss_bytes, seconds_to_cancel, sleeper, wait_until


def fetch_command(url: str) -> str:
    """A command that prints the body at ``url`` (curl, or Python's own)."""
    if shutil.which("curl"):
        return f"curl -s {url}"
    return f"python3 -c 'import urllib.request; print(urllib.request.urlopen(\"{url}\").read().decode())'"


def port_is_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_server_job_serves_a_later_run_and_kill_closes_its_port(shell, tmp_path):
    (tmp_path / "hello.txt").write_text("hello from the job\n")
    job = shell.start("python3 -m http.server 0 --bind 127.0.0.1", env={"PYTHONUNBUFFERED": "1"})
    assert isinstance(job, int) and job >= 1
    start = time.monotonic()
    got = shell.poll(job, wait=5, until="Serving HTTP")
    assert time.monotonic() - start < 5, got
    assert got.status == "running" and "Serving HTTP" in got.output, got
    port = int(re.search(r"port (\d+)", got.output)[1])
    assert port_is_open(port)

    r = shell.run(fetch_command(f"http://127.0.0.1:{port}/hello.txt"), timeout=GUARD)
    assert r.exit_code == 0 and r.output == "hello from the job\n", r
    # The request's log line is the job's output, not the run's.
    assert "GET /hello.txt" in shell.poll(job, wait=GUARD, until="GET /hello.txt").output

    killed = shell.kill(job)
    assert isinstance(killed, conch.JobPoll)
    assert (killed.job, killed.status, killed.exit_code) == (job, "killed", None)
    assert wait_until(lambda: not port_is_open(port)), f"port {port} still open"
    [info] = shell.jobs()
    assert info.status == "killed" and info.command.startswith("python3 -m http.server")


def test_a_counting_job_polled_every_0_3_s_reads_each_line_once(shell):
    job = shell.start("for i in $(seq 1 50); do echo $i; /bin/sleep 0.05; done")
    text, polls = "", 0
    deadline = time.monotonic() + 4 * GUARD
    while True:
        got = shell.poll(job)
        text += got.output
        polls += 1
        if got.status != "running":
            break
        assert time.monotonic() < deadline, text
        time.sleep(0.3)
    assert text == "".join(f"{i}\n" for i in range(1, 51))
    assert (got.status, got.exit_code) == ("exited", 0)
    assert polls >= 3, polls  # it was read while it ran, in pieces
    assert shell.poll(job).output == ""


def test_a_pipe_job_reads_what_is_written(shell):
    job = shell.start("read -r n; echo hi $n", stdin=True)
    shell.write(job, "ann\n")
    got = shell.poll(job, wait=GUARD)
    assert (got.output, got.status, got.exit_code) == ("hi ann\n", "exited", 0)


def test_a_pipe_job_takes_bytes_and_ends_at_close_stdin(shell):
    job = shell.start("wc -c", stdin=True)
    shell.write(job, b"\x00\xff abc")
    shell.write(job, bytearray(b"de"))
    shell.close_stdin(job)
    got = shell.poll(job, wait=GUARD)
    assert (got.output.strip(), got.exit_code) == ("8", 0)


def test_a_pty_job_answers_its_prompt(shell):
    job = shell.start("""python3 -c 'print(input("name? "))'""", pty=(80, 24))
    got = shell.poll(job, wait=GUARD, until=r"name\? ")
    assert got.output == "name? " and got.status == "running", got
    shell.write(job, "ann\r")
    got = shell.poll(job, wait=GUARD)
    assert (got.output, got.status, got.exit_code) == ("ann\nann\n", "exited", 0)


def test_a_pty_job_takes_keys_and_its_size(shell):
    job = shell.start("stty size; read -r line; echo \"[$line]\"", pty=[100, 30])
    assert shell.poll(job, wait=GUARD, until="30 100").output.startswith("30 100")
    shell.write(job, "ab")
    shell.write_key(job, "backspace")
    shell.write_key(job, "enter")
    got = shell.poll(job, wait=GUARD)
    assert got.output.endswith("[a]\n") and got.exit_code == 0, got


def test_yield_after_backgrounds_the_run_and_keeps_the_session(shell, tmp_path):
    start = time.monotonic()
    r = shell.run("cd /; export X=1; /bin/sleep 3; echo done", yield_after=1, timeout=GUARD)
    took = time.monotonic() - start
    assert 0.9 <= took < 2.5, took
    assert isinstance(r.backgrounded, int) and r.exit_code is None, r
    assert r.output.startswith(
        f"[Command still running after 1 seconds: it goes on as background job {r.backgrounded} "
    ), r.output
    assert f"backgrounded={r.backgrounded}," in repr(r)
    after = shell.run('echo "$PWD ${X-unset}"', timeout=GUARD)
    assert after.output == f"{tmp_path} unset\n" and after.backgrounded is None
    assert "backgrounded=None," in repr(after)
    got = shell.poll(r.backgrounded, wait=GUARD)
    assert (got.output, got.status, got.exit_code) == ("done\n", "exited", 0)


def test_a_quick_run_with_yield_after_is_a_plain_run(shell):
    r = shell.run("cd /; echo quick", yield_after=5, timeout=GUARD)
    assert (r.output, r.exit_code, r.backgrounded) == ("quick\n", 0, None)
    assert shell.cwd == Path("/")


def test_run_async_takes_yield_after(shell):
    r = asyncio.run(shell.run_async("/bin/sleep 2; echo late", yield_after=0.3))
    assert isinstance(r.backgrounded, int)
    assert shell.poll(r.backgrounded, wait=GUARD).output == "late\n"


def test_the_17th_start_with_16_running_is_refused(shell):
    jobs = [shell.start("/bin/sleep 30") for _ in range(16)]
    assert len(set(jobs)) == 16
    with pytest.raises(conch.TooManyJobsError) as e:
        shell.start("/bin/sleep 30")
    assert e.value.running == 16
    assert str(e.value) == (
        "16 jobs are running in this session, the most it runs at once: wait for one to end or kill one"
    )
    assert isinstance(e.value, conch.ConchError)
    assert len(shell.jobs()) == 16  # nothing was started
    # A run past its yield_after stays in the foreground at the limit.
    r = shell.run("/bin/sleep 0.3; echo fg", yield_after=0.05, timeout=GUARD)
    assert (r.output, r.backgrounded) == ("fg\n", None)
    shell.kill(jobs[0])
    assert isinstance(shell.start("true"), int)


def test_max_jobs_is_the_sessions_limit(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, max_jobs=1) as sh:
        sh.start("/bin/sleep 30")
        with pytest.raises(conch.TooManyJobsError):
            sh.start("true")
    with conch.Shell(cwd=tmp_path, snapshot=None, max_jobs=0) as sh:
        with pytest.raises(conch.TooManyJobsError):
            sh.start("true")


def test_on_job_exit_is_told_of_every_end_with_its_exit_code(tmp_path):
    ended: queue.Queue = queue.Queue()

    def on_job_exit(info: conch.JobInfo) -> None:
        ended.put((info, threading.current_thread() is threading.main_thread()))

    with conch.Shell(cwd=tmp_path, snapshot=None, on_job_exit=on_job_exit) as sh:
        job = sh.start("echo bye; exit 5")
        info, on_main = ended.get(timeout=GUARD)
        assert isinstance(info, conch.JobInfo) and not on_main
        assert (info.job, info.status, info.exit_code, info.command) == (job, "exited", 5, "echo bye; exit 5")
        assert info.total_bytes == 4 and info.artifact_truncated is False
        # Each job once: a killed one too, and the callback may call the shell.
        killed = sh.start("/bin/sleep 30")
        sh.kill(killed)
        info, _ = ended.get(timeout=GUARD)
        assert (info.job, info.status, info.exit_code) == (killed, "killed", None)
        assert ended.empty()


def test_on_job_exit_may_call_the_shell(tmp_path):
    polled: queue.Queue = queue.Queue()
    holder: list[conch.Shell] = []

    def on_job_exit(info: conch.JobInfo) -> None:
        polled.put(holder[0].poll(info.job).output)

    with conch.Shell(cwd=tmp_path, snapshot=None, on_job_exit=on_job_exit) as sh:
        holder.append(sh)
        sh.start("echo from the job")
        assert polled.get(timeout=GUARD) == "from the job\n"


def test_an_exception_in_on_job_exit_is_unraisable_and_harms_nothing(tmp_path, monkeypatch):
    reported: queue.Queue = queue.Queue()
    monkeypatch.setattr(sys, "unraisablehook", reported.put)

    def on_job_exit(info: conch.JobInfo) -> None:
        raise RuntimeError(f"hook failed for job {info.job}")

    with conch.Shell(cwd=tmp_path, snapshot=None, on_job_exit=on_job_exit) as sh:
        job = sh.start("true")
        report = reported.get(timeout=GUARD)
        assert isinstance(report.exc_value, RuntimeError)
        assert str(report.exc_value) == f"hook failed for job {job}"
        assert report.object is on_job_exit
        assert sh.run("echo still here", timeout=GUARD).output == "still here\n"
        second = sh.start("true")
        assert str(reported.get(timeout=GUARD).exc_value) == f"hook failed for job {second}"


def test_on_job_exit_must_be_callable(tmp_path):
    with pytest.raises(TypeError, match="on_job_exit must be callable"):
        conch.Shell(cwd=tmp_path, snapshot=None, on_job_exit=5)


class ShellHook:
    """An ``on_job_exit`` that refers to its shell (a cycle through conch)."""

    sh: conch.Shell | None = None  # also once the collector cleared the instance

    def __call__(self, info: conch.JobInfo) -> None:
        if self.sh is not None:
            self.sh.jobs()


def test_a_shell_whose_hook_refers_to_it_is_collected_and_closed(tmp_path, marker):
    hook = ShellHook()
    sh = hook.sh = conch.Shell(cwd=tmp_path, snapshot=None, on_job_exit=hook)
    job = sh.start(sleeper(marker))
    assert "pid=" in sh.poll(job, wait=GUARD, until="pid=").output
    assert wait_until(lambda: pids_with(marker)), "the sleeper never ran"
    del sh, hook
    gc.collect()
    assert wait_until(lambda: not pids_with(marker)), "a collected shell left its job running"


def test_close_with_running_jobs_leaves_no_process(tmp_path, marker):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    started = sh.start(sleeper(marker))
    left = sh.run(f"{sleeper(marker + 'b')} &", timeout=GUARD)
    moved = sh.run(sleeper(marker + "c"), yield_after=0.5, timeout=GUARD)
    assert left.exit_code == 0 and isinstance(moved.backgrounded, int)
    assert "pid=" in moved.output
    sh.poll(started, wait=GUARD, until="pid=")
    assert wait_until(lambda: len(pids_with(marker)) == 3), pids_with(marker)
    start = time.monotonic()
    sh.close()
    assert time.monotonic() - start < GUARD
    assert wait_until(lambda: not pids_with(marker)), f"left running: {pids_with(marker)}"


def test_a_signal_by_name_or_number_reaches_the_job(shell):
    for sig in ("TERM", "sigterm", 15, signal.SIGTERM):
        job = shell.start("trap 'echo got TERM; exit 7' TERM; echo ready; while :; do /bin/sleep 0.05; done")
        shell.poll(job, wait=GUARD, until="ready")
        shell.signal(job, sig)
        got = shell.poll(job, wait=GUARD)
        # (bash may report the sleep the signal also ended: "Terminated")
        assert got.output.endswith("got TERM\n") and got.exit_code == 7, (sig, got)
        shell.signal(job, "KILL")  # an ended job is left alone


def test_a_jobs_own_timeout_kills_it(shell):
    job = shell.start("echo started; /bin/sleep 30", timeout=0.3)
    got = shell.poll(job, wait=GUARD)
    assert (got.output, got.status, got.exit_code) == ("started\n", "timed_out", None)


def test_a_job_has_its_own_cwd_and_env(shell, tmp_path):
    (tmp_path / "sub").mkdir()
    job = shell.start("echo $PWD $ONLY", cwd="sub", env={"ONLY": "job"})
    assert shell.poll(job, wait=GUARD).output == f"{tmp_path / 'sub'} job\n"


def test_the_artifact_cap_truncates_a_jobs_artifact(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=100, job_artifact_cap=1000) as sh:
        job = sh.start("seq 1 5000")
        got = sh.poll(job, wait=GUARD)
        assert got.status == "exited" and got.artifact_id is not None
        assert got.artifact_truncated is True and got.total_bytes > 1000
        assert "artifact_truncated=True" in repr(got)
        [info] = sh.jobs()
        assert info.artifact_truncated is True and "artifact_truncated=True" in repr(info)
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=100) as sh:
        job = sh.start("seq 1 5000")
        got = sh.poll(job, wait=GUARD)
        assert got.artifact_id is not None and got.artifact_truncated is False


def test_a_yes_job_for_20_s_stays_bounded_at_its_artifact_cap(tmp_path):
    cap = 10 << 20
    artifacts = tmp_path / "artifacts"
    with conch.Shell(
        cwd=tmp_path, snapshot=None, max_bytes=4096, job_artifact_cap=cap, artifacts_dir=artifacts
    ) as sh:
        before = rss_bytes()
        job = sh.start("yes")
        deadline = time.monotonic() + 20
        skipped = False
        while time.monotonic() < deadline:
            got = sh.poll(job, wait=1.0)
            assert got.status == "running"
            assert len(got.output.encode()) <= 4096
            skipped = skipped or got.omitted_bytes > 0
        assert skipped, "a poll of a flood says what it skipped"
        assert rss_bytes() - before < 32 << 20
        asked = time.monotonic()
        last = sh.kill(job)
        assert time.monotonic() - asked < GUARD
        assert last.status == "killed" and last.artifact_truncated is True
        [file] = artifacts.glob(f"{last.artifact_id}.*")
        assert file.stat().st_size == cap
        [info] = sh.jobs()
        assert info.artifact_truncated is True and info.total_bytes > cap


def test_polls_writes_and_a_kill_racing_lose_nothing(shell):
    for _ in range(5):
        job = shell.start("echo a; echo b")
        got = shell.poll(job, wait=GUARD)
        assert (got.output, got.exit_code) == ("a\nb\n", 0)
    job = shell.start("while read -r l; do echo got $l; done", stdin=True)
    seen: list[str] = []
    ends: list[str] = []
    lock = threading.Lock()

    def poller() -> None:
        while True:
            got = shell.poll(job, wait=0.2)
            with lock:
                seen.append(got.output)
            if got.status != "running":
                ends.append(got.status)
                return

    threads = [threading.Thread(target=poller) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(20):
        shell.write(job, f"{i}\n")
    assert wait_until(lambda: "".join(seen).count("got") == 20)
    last = shell.kill(job)
    for t in threads:
        t.join(GUARD)
    assert ends == ["killed", "killed"]
    assert "".join(seen) + last.output == "".join(f"got {i}\n" for i in range(20))


def test_wait_any_returns_the_first_to_end_or_none(shell):
    slow = shell.start("/bin/sleep 30")
    start = time.monotonic()
    assert shell.wait_any([slow], 0.2) is None
    assert 0.15 <= time.monotonic() - start < GUARD
    assert shell.wait_any([slow], 0) is None
    quick = shell.start("/bin/sleep 0.2")
    assert shell.wait_any([slow, quick], GUARD) == quick
    assert shell.wait_any([slow, quick]) == quick  # no timeout: ended already
    assert shell.wait_any((quick,), timeout=0) == quick


def test_wait_any_releases_the_gil_and_ends_at_a_cancel(shell):
    slow = shell.start("/bin/sleep 30")
    token = conch.CancelToken()
    done = []

    def work_then_cancel() -> None:
        time.sleep(0.1)
        done.append(python_work())
        token.cancel()

    start = time.monotonic()
    with in_background(work_then_cancel):
        assert shell.wait_any([slow], cancel=token) is None
    assert done and time.monotonic() - start < GUARD
    assert shell.jobs()[0].status == "running"  # the wait ended, not the job


def test_ctrl_c_ends_a_wait_any(shell, sigint_raises):
    slow = shell.start("/bin/sleep 30")

    def interrupt_soon() -> None:
        time.sleep(0.2)
        _thread.interrupt_main()

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt), in_background(interrupt_soon):
        shell.wait_any([slow], GUARD)
    assert time.monotonic() - start < GUARD / 2


def test_closing_the_shell_ends_a_wait_any(shell):
    slow = shell.start("/bin/sleep 30")

    def close_soon() -> None:
        time.sleep(0.3)
        shell.close()

    start = time.monotonic()
    with in_background(close_soon):
        assert shell.wait_any([slow], 30) == slow
    assert time.monotonic() - start < GUARD


def test_kill_releases_the_gil(shell):
    # A job deaf to INT and TERM: the kill climbs the whole ladder.
    job = shell.start("trap '' INT TERM; echo ready; while :; do /bin/sleep 0.05; done")
    shell.poll(job, wait=GUARD, until="ready")
    ticks = []

    def tick() -> None:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            ticks.append(python_work())

    with in_background(tick):
        got = shell.kill(job)
    assert got.status == "killed" and len(ticks) >= 2


def test_the_async_twins(shell):
    async def main():
        job = await shell.start_async("read -r n; echo hi $n; /bin/sleep 30", stdin=True)
        await shell.write_async(job, "ann\n")
        got = await shell.poll_async(job, wait=GUARD, until="hi ann")
        quick = await shell.start_async("/bin/sleep 0.2")
        first = await shell.wait_any_async([job, quick], GUARD)
        none = await shell.wait_any_async([job], timeout=0.05)
        killed = await shell.kill_async(job)
        return got, quick, first, none, killed

    got, quick, first, none, killed = asyncio.run(main())
    assert got.output == "hi ann\n" and first == quick and none is None
    assert isinstance(killed, conch.JobPoll) and killed.status == "killed"


def test_cancelling_a_wait_any_async_task_ends_the_wait_not_the_job(shell):
    slow = shell.start("/bin/sleep 30")

    assert seconds_to_cancel(lambda: shell.wait_any_async([slow], GUARD)) < 0.7
    assert shell.jobs()[0].status == "running"


def test_cancelling_a_start_async_task_kills_the_job_it_started(shell):
    async def main() -> None:
        # The start waits for the run in progress: the task is cancelled
        # while it waits, and the job it then starts is killed.
        run = asyncio.create_task(shell.run_async("/bin/sleep 0.5"))
        await asyncio.sleep(0.1)
        task = asyncio.create_task(shell.start_async("/bin/sleep 30"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await run

    asyncio.run(main())
    [info] = shell.jobs()
    assert info.status == "killed" and info.command == "/bin/sleep 30"


def test_misuse_of_started_jobs_is_a_typed_error(shell):
    ended = shell.start("true")
    assert shell.wait_any([ended], GUARD) == ended
    running = shell.start("/bin/sleep 30")
    pty = shell.start("/bin/sleep 30", pty=(80, 24))

    for call in (
        lambda: shell.write(99, "x"),
        lambda: shell.close_stdin(99),
        lambda: shell.write_key(99, "enter"),
        lambda: shell.signal(99, "TERM"),
        lambda: shell.kill(99),
        lambda: shell.wait_any([running, 99], 0),
        lambda: shell.poll(2**63),
        lambda: asyncio.run(shell.kill_async(99)),
    ):
        with pytest.raises(conch.NotFoundError, match=r"^no job \d+ in this session$"):
            call()
    with pytest.raises(conch.NoInputError, match=f"^job {ended} has ended$"):
        shell.write(ended, "late\n")
    with pytest.raises(conch.NoInputError, match=f"^job {ended} has ended$"):
        shell.close_stdin(ended)
    with pytest.raises(conch.NoInputError, match="takes no input"):
        shell.write(running, "x")  # started without stdin
    with pytest.raises(conch.NoInputError, match="has no terminal"):
        shell.write_key(running, "enter")
    with pytest.raises(conch.InvalidArgumentError):
        shell.write_key(pty, "no-such-key")
    with pytest.raises(conch.InvalidArgumentError, match=r'^signal must be a signal name .* got "NOPE"$'):
        shell.signal(running, "NOPE")
    for number in (0, 99, -15, 2**70):
        with pytest.raises(conch.InvalidArgumentError, match=f'got "{number}"$'):
            shell.signal(running, number)
    with pytest.raises(conch.InvalidArgumentError, match="NUL"):
        shell.start("a\0b")
    with pytest.raises(conch.InvalidArgumentError):
        shell.start("true", cwd="/no/such/dir")
    with pytest.raises(conch.InvalidArgumentError, match="at least 1 column and 1 row"):
        shell.start("true", pty=(0, 24))
    for bad in ({"timeout": 0}, {"timeout": -1}, {"timeout": math.inf}):
        with pytest.raises(conch.InvalidArgumentError, match="^timeout must be a positive number"):
            shell.start("true", **bad)
    with pytest.raises(conch.InvalidArgumentError, match="^yield_after must be a positive number of seconds"):
        shell.run("true", yield_after=0)
    with pytest.raises(conch.InvalidArgumentError, match="^timeout must be a number >= 0 of seconds"):
        shell.wait_any([running], -1)
    with pytest.raises(conch.InvalidArgumentError, match="^max_jobs must be a whole number >= 0"):
        conch.Shell(snapshot=None, max_jobs=-1)
    with pytest.raises(conch.InvalidArgumentError, match="^job_artifact_cap must be a whole number >= 0"):
        conch.Shell(snapshot=None, job_artifact_cap=-1)

    for call in (
        lambda: shell.signal(running, True),
        lambda: shell.signal(running, 15.0),
        lambda: shell.signal(running, None),
        lambda: shell.write(running, 5),
        lambda: shell.write(running, None),
        lambda: shell.write_key(running, b"enter"),
        lambda: shell.start("true", pty=80),
        lambda: shell.start("true", pty=(80,)),
        lambda: shell.start("true", pty="80x24"),
        lambda: shell.start("true", stdin="yes"),
        lambda: shell.start(5),
        lambda: shell.wait_any(running),
        lambda: shell.wait_any("1"),
        lambda: shell.wait_any([1.0]),
        lambda: shell.kill("1"),
        lambda: shell.start("true", unknown=1),
    ):
        with pytest.raises(TypeError):
            call()
    # Nothing of it harmed the session or its jobs.
    assert shell.run("echo after", timeout=GUARD).output == "after\n"
    assert [j.status for j in shell.jobs()] == ["exited", "running", "running"]


def test_a_closed_shell_refuses_every_job_call(tmp_path):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    job = sh.start("/bin/sleep 30", stdin=True)
    sh.close()
    for call in (
        lambda: sh.start("true"),
        lambda: sh.write(job, "x"),
        lambda: sh.close_stdin(job),
        lambda: sh.write_key(job, "enter"),
        lambda: sh.signal(job, "TERM"),
        lambda: sh.kill(job),
        lambda: sh.wait_any([job], 1),
        lambda: asyncio.run(sh.start_async("true")),
        lambda: asyncio.run(sh.write_async(job, "x")),
        lambda: asyncio.run(sh.kill_async(job)),
        lambda: asyncio.run(sh.wait_any_async([job], 1)),
    ):
        with pytest.raises(conch.ClosedError, match="^shell is closed$"):
            call()
    assert sh.jobs() == []


def test_the_new_errors_are_conch_errors():
    for cls in (conch.TooManyJobsError, conch.NoInputError):
        assert issubclass(cls, conch.ConchError) and cls.__module__ == "conch._errors"
        assert cls.__name__ in conch.__all__
    e = conch.TooManyJobsError("16 jobs are running", 16)
    assert (str(e), e.running) == ("16 jobs are running", 16)
