"""Session jobs: what a command leaves writing in the background is a job of
the session (``Shell.jobs()``), read with ``Shell.poll``/``poll_async``,
never output of a later run. Replays the shared vectors
(tests/vectors/jobs.json, also run by the Rust suite), then what only a
Python caller can see: the GIL, cancellation, asyncio, misuse."""

from __future__ import annotations

import _thread
import asyncio
import json
import math
import threading
import time

import pytest

import conch
from conftest import GUARD, RELEASE, VECTORS, gated, in_background, python_work, seconds_to_cancel


def vector_cases() -> list:
    path = VECTORS / "jobs.json"
    assert path.is_file(), f"{path} is missing"
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return [pytest.param(case, id=case["name"]) for case in loaded]


def poll_options(options: dict) -> dict:
    """A vector's poll options as ``Shell.poll`` keywords (``wait_ms`` is
    ``wait`` in seconds)."""
    out = {k: v for k, v in options.items() if k != "wait_ms"}
    if "wait_ms" in options:
        out["wait"] = options["wait_ms"] / 1000
    return out


@pytest.mark.parametrize("where", ["local", "remote"])
@pytest.mark.parametrize("case", vector_cases())
def test_shared_vectors(case, where, request):
    # On a local session and on a remote one (`conch serve --stdio`).
    shell = request.getfixturevalue("shell" if where == "local" else "remote_shell")
    for r in case["runs"]:
        assert shell.run(r["command"], timeout=GUARD).output == r["output"]
    listed = shell.jobs()
    own = listed[-1].job if listed else 0
    for p in case["polls"]:
        job = p.get("job", own)
        options = poll_options(p["options"])
        if "error" in p:
            # The vector names a piece of the message; the class depends on
            # it (an unknown job is NotFoundError, a bad option InvalidArgumentError).
            with pytest.raises(conch.ConchError) as e:
                shell.poll(job, **options)
            assert p["error"] in str(e.value)
            continue
        got = shell.poll(job, **options)
        assert isinstance(got, conch.JobPoll)
        for key, want in p["expect"].items():
            assert getattr(got, key) == want, f"{key} of {got!r}"
    if "jobs" in case:
        listed = shell.jobs()
        assert len(listed) == len(case["jobs"]), listed
        for got, want in zip(listed, case["jobs"]):
            assert isinstance(got, conch.JobInfo)
            for key, value in want.items():
                assert getattr(got, key) == value, f"{key} of {got!r}"


@pytest.fixture
def remote_shell(remote, tmp_path):
    with remote.shell(cwd=tmp_path, snapshot=None) as sh:
        yield sh


def start_job(shell: conch.Shell, body: str) -> int:
    """Runs ``gated(body)``, then ``RELEASE``, and returns the job: all that
    ``body`` writes is the job's."""
    assert shell.run(gated(body), timeout=GUARD).output == ""
    assert shell.run(RELEASE, timeout=GUARD).output == ""
    return shell.jobs()[-1].job


def test_late_output_belongs_to_the_job_not_the_next_run(shell):
    command = gated("/bin/sleep 0.3; echo late") + " echo started"
    before = time.time()
    assert shell.run(command, timeout=GUARD).output == "started\n"
    shell.run(RELEASE, timeout=GUARD)
    time.sleep(1)
    assert shell.run("echo next", timeout=GUARD).output == "next\n"

    [info] = shell.jobs()
    assert isinstance(info.job, int) and info.job >= 1
    assert info.command == command
    assert info.status == "exited" and info.exit_code is None
    assert info.total_bytes == 5 and info.artifact_id is None
    assert before - 1 <= info.started <= time.time()
    assert isinstance(info.elapsed, float) and 0.25 <= info.elapsed < GUARD

    got = shell.poll(info.job)
    assert got.output == "late\n"
    assert (got.job, got.status, got.exit_code) == (info.job, "exited", None)
    assert (got.cursor, got.next_cursor, got.total_bytes, got.omitted_bytes) == (0, 5, 5, 0)
    assert got.artifact_id is None and 0.25 <= got.elapsed < GUARD
    # Read once: the next poll starts where this one stopped.
    assert shell.poll(info.job).output == ""
    assert shell.poll(info.job, cursor=0).output == "late\n"


def test_reprs_show_the_fields(shell):
    start_job(shell, "echo late")
    [info] = shell.jobs()
    got = shell.poll(info.job, wait=GUARD)
    text = repr(got)
    assert text.startswith(f"JobPoll(job={info.job}, status='exited', exit_code=None, cursor=0, next_cursor=5, ")
    assert "artifact_id=None" in text and "elapsed=" in text and text.endswith("output='late\\n')")
    info = shell.jobs()[0]
    text = repr(info)
    assert text.startswith(f"JobInfo(job={info.job}, status='exited', exit_code=None, started=")
    assert text.endswith(f"command={gated('echo late')!r})")


def test_poll_waits_for_until_and_for_the_end(shell):
    job = start_job(shell, "echo one; /bin/sleep 0.2; echo ready; /bin/sleep 0.2; echo bye")
    got = shell.poll(job, wait=GUARD, until="ready")
    assert got.status == "running" and got.output == "one\nready\n"
    got = shell.poll(job, wait=GUARD)
    assert got.status == "exited" and got.output == "bye\n"


def test_poll_releases_the_gil(shell, tmp_path):
    # The job prints "done" only once another Python thread has done its
    # work and made the flag: a poll holding the GIL would wait to its end.
    flag = tmp_path / "flag"
    job = start_job(shell, f"echo ready; while [ ! -e {flag} ]; do /bin/sleep 0.01; done; echo done")
    assert shell.poll(job, wait=GUARD, until="ready").output == "ready\n"

    def work_then_flag() -> None:
        time.sleep(0.1)  # the poll below is waiting by now
        python_work()
        flag.touch()

    start = time.monotonic()
    with in_background(work_then_flag):
        got = shell.poll(job, wait=GUARD, until="done")
    assert got.output == "done\n", got
    assert time.monotonic() - start < GUARD


def test_poll_never_waits_for_a_run(shell):
    job = start_job(shell, "echo tick; /bin/sleep 30")
    with in_background(shell.run, "/bin/sleep 1", timeout=GUARD):
        time.sleep(0.2)  # the run holds the session now
        start = time.monotonic()
        got = shell.poll(job, wait=GUARD, until="tick")
        assert time.monotonic() - start < 0.9, "the poll waited for the run"
    assert got.output == "tick\n" and got.status == "running"


def test_a_cancelled_poll_returns_early_and_the_job_goes_on(shell):
    job = start_job(shell, "echo a; /bin/sleep 1; echo b")
    assert shell.poll(job, wait=GUARD, until="a").output == "a\n"
    token = conch.CancelToken()

    def cancel_soon() -> None:
        time.sleep(0.2)
        token.cancel()

    start = time.monotonic()
    with in_background(cancel_soon):
        got = shell.poll(job, wait=GUARD, cancel=token)
    assert time.monotonic() - start < 0.9, "the cancel did not end the wait"
    assert got.status == "running" and got.output == ""
    # The job was not stopped: its later output still arrives.
    got = shell.poll(job, wait=GUARD)
    assert got.status == "exited" and got.output == "b\n"


def test_a_poll_with_a_cancelled_token_reads_at_once(shell):
    job = start_job(shell, "echo a; /bin/sleep 30")
    shell.poll(job, wait=GUARD, until="a")
    token = conch.CancelToken()
    token.cancel()
    start = time.monotonic()
    got = shell.poll(job, wait=GUARD, cancel=conch.CancelToken(token))
    assert time.monotonic() - start < GUARD / 2 and got.status == "running"


def test_ctrl_c_ends_a_waiting_poll(shell, sigint_raises):
    job = start_job(shell, "echo a; /bin/sleep 1; echo b")

    def interrupt_soon() -> None:
        time.sleep(0.2)
        _thread.interrupt_main()

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt), in_background(interrupt_soon):
        shell.poll(job, wait=GUARD)
    assert time.monotonic() - start < 0.9
    # The job goes on; what the interrupted poll read is read again from 0.
    got = shell.poll(job, wait=GUARD, cursor=0)
    assert got.status == "exited" and got.output == "a\nb\n"


def test_closing_the_shell_ends_a_waiting_poll(shell):
    job = start_job(shell, "echo a; /bin/sleep 30")
    shell.poll(job, wait=GUARD, until="a")

    def close_soon() -> None:
        time.sleep(0.2)
        shell.close()

    start = time.monotonic()
    with in_background(close_soon):
        got = shell.poll(job, wait=30)
    assert time.monotonic() - start < GUARD
    assert got.status == "killed"


def test_poll_async(shell):
    job = start_job(shell, "echo ready; /bin/sleep 0.5; echo bye")

    async def main():
        return await asyncio.gather(
            shell.poll_async(job, wait=GUARD, until="ready"),
            shell.poll_async(job, cursor=0, wait=GUARD, until="bye"),
        )

    first, second = asyncio.run(main())
    assert isinstance(first, conch.JobPoll) and first.output.startswith("ready\n")
    assert second.output == "ready\nbye\n"


def test_cancelling_a_poll_async_task_ends_the_wait_not_the_job(shell):
    job = start_job(shell, "echo a; /bin/sleep 1; echo b")
    shell.poll(job, wait=GUARD, until="a")

    assert seconds_to_cancel(lambda: shell.poll_async(job, wait=GUARD)) < 0.7
    got = shell.poll(job, wait=GUARD)
    assert got.status == "exited" and got.output == "b\n"


def test_poll_async_with_the_callers_token(shell):
    job = start_job(shell, "echo a; /bin/sleep 30")
    token = conch.CancelToken()
    token.cancel()
    got = asyncio.run(shell.poll_async(job, wait=GUARD, until="never", cancel=token))
    assert got.status == "running"


def test_poll_returns_the_newest_output_within_max_bytes(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=8) as sh:
        job = start_job(sh, "printf 0123456789abcdef")
        got = sh.poll(job, wait=GUARD)
        assert got.output == "89abcdef" and got.omitted_bytes == 8  # the session's max_bytes
        # What the session no longer keeps is omitted, not returned.
        got = sh.poll(job, cursor=0, max_bytes=100)
        assert got.output.endswith("89abcdef") and got.next_cursor == 16
        assert got.omitted_bytes == got.cursor == 16 - len(got.output)


def test_jobs_of_a_fresh_session_and_of_a_plain_run(shell):
    assert shell.jobs() == []
    shell.run("echo hi", timeout=GUARD)
    assert shell.jobs() == []


def test_a_closed_shell(tmp_path):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    job = start_job(sh, "echo a; /bin/sleep 30")
    sh.close()
    assert sh.jobs() == []  # as background_jobs()
    with pytest.raises(conch.ClosedError):
        sh.poll(job)
    with pytest.raises(conch.ClosedError):
        asyncio.run(sh.poll_async(job, wait=1))


def test_misuse_is_a_clear_error(shell):
    job = start_job(shell, "echo a; /bin/sleep 30")

    def invalid(match: str, *args, **kwargs) -> None:
        with pytest.raises(conch.InvalidArgumentError, match=match):
            shell.poll(*args, **kwargs)

    def not_found(match: str, *args, **kwargs) -> None:
        with pytest.raises(conch.NotFoundError, match=match):
            shell.poll(*args, **kwargs)

    not_found(r"^no job 99 in this session$", 99)
    not_found(r"^no job 0 in this session$", 0)
    not_found(r"^no job \d+ in this session$", 2**63)
    invalid(r"^job must be a whole number >= 0, got -1$", -1)
    invalid(r"^job must be a whole number below 2\^64, got 1.1805916207174113e21$", 2**70)
    invalid(r"^wait must be a number >= 0 of seconds up to 2147483.647, got -1$", job, wait=-1)
    for wait in (math.nan, math.inf, 1e300, 2**2000):
        invalid(r"^wait must be", job, wait=wait)
    invalid(r"^until must be a valid regular expression, got \"\(\" \(.+\)$", job, until="(")
    invalid(r"^max_bytes must be a whole number >= 1, got 0$", job, max_bytes=0)
    invalid(r"^cursor must be a whole number >= 0, got -1$", job, cursor=-1)
    assert issubclass(conch.InvalidArgumentError, ValueError)

    for args, kwargs in [
        (("1",), {}),
        ((1.0,), {}),
        ((None,), {}),
        ((job,), {"wait": "1"}),
        ((job,), {"until": 5}),
        ((job,), {"until": b"a"}),
        ((job,), {"max_bytes": 1.5}),
        ((job,), {"cursor": "0"}),
        ((job,), {"cancel": "token"}),
        ((), {}),
        ((job, 1), {}),
        ((job,), {"unknown": 1}),
    ]:
        with pytest.raises(TypeError):
            shell.poll(*args, **kwargs)
    with pytest.raises(TypeError):
        asyncio.run(shell.poll_async(job, wait="1"))
    with pytest.raises(conch.NotFoundError, match="no job 99"):
        asyncio.run(shell.poll_async(99))
    # Nothing of it harmed the session or the job.
    assert shell.poll(job, cursor=0, wait=GUARD, until="a").output == "a\n"
    assert shell.run("echo after", timeout=GUARD).output == "after\n"


def test_a_huge_cursor_reads_nothing(shell):
    job = start_job(shell, "echo late")
    shell.poll(job, wait=GUARD)
    got = shell.poll(job, cursor=2**63)
    assert (got.output, got.cursor, got.next_cursor) == ("", 5, 5)


def test_poll_from_another_thread_while_this_one_polls(shell):
    job = start_job(shell, "echo x; /bin/sleep 0.3")
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(shell.poll(job, cursor=0, wait=GUARD)))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GUARD)
    assert [(r.status, r.output) for r in results] == [("exited", "x\n")] * 3
