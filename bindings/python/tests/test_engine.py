"""Engine behaviour as Python sees it: background jobs, abort, timeout,
respawn, stdin, invalid UTF-8, callbacks, threads and Ctrl-C."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

import conch
from conftest import pids_with, wait_until


def test_background_job_returns_at_once_and_is_listed(tmp_path, marker):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    try:
        start = time.monotonic()
        r = sh.run(f"(exec -a {marker} sleep 30) & echo started")
        assert time.monotonic() - start < 2
        assert r.exit_code == 0 and r.output == "started\n"
        assert wait_until(lambda: pids_with(marker))
        jobs = sh.background_jobs()
        assert set(pids_with(marker)) <= set(jobs)
        assert sh.run("echo next").output == "next\n"
    finally:
        sh.close()
    assert wait_until(lambda: not pids_with(marker)), "close() left the background job"
    assert sh.background_jobs() == []


def test_abort_from_another_thread(shell, marker):
    threading.Timer(0.3, shell.abort).start()
    start = time.monotonic()
    r = shell.run(f"exec -a {marker} sleep 30")
    assert time.monotonic() - start < 2
    assert r.cancelled and not r.timed_out and r.exit_code is None
    assert r.output.startswith("[Command cancelled]")
    assert wait_until(lambda: not pids_with(marker))
    assert shell.run("echo alive").output == "alive\n"


def test_cancel_token_from_another_thread(shell, marker):
    token = conch.CancelToken()
    threading.Timer(0.3, token.cancel).start()
    start = time.monotonic()
    r = shell.run(f"bash -c 'exec -a {marker} sleep 30'", cancel=token)
    assert time.monotonic() - start < 2 and r.cancelled
    assert wait_until(lambda: not pids_with(marker))


def test_timeout_kills_the_process_tree(shell, marker):
    start = time.monotonic()
    r = shell.run(f"echo before; (exec -a {marker} sleep 30) & wait", timeout=1)
    elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 3
    assert r.timed_out and r.cancelled and r.exit_code is None
    assert r.output == "[Command timed out after 1 seconds]\nbefore\n"
    assert wait_until(lambda: not pids_with(marker))


def test_exit_respawns_the_session_in_the_last_cwd(shell, tmp_path):
    (tmp_path / "here").mkdir()
    shell.run("cd here")
    r = shell.run("exit 7")
    assert r.exit_code == 7 and not r.session_reset
    r = shell.run("pwd")
    assert r.session_reset and r.output == f"{tmp_path / 'here'}\n"
    assert not shell.run("true").session_reset


def test_stdin_is_dev_null(shell):
    start = time.monotonic()
    r = shell.run("cat; read line; echo rc=$?; readlink /proc/self/fd/0")
    assert time.monotonic() - start < 2
    assert r.output == "rc=1\n/dev/null\n"


def test_invalid_utf8_becomes_replacement_characters(shell):
    chunks: list[str] = []
    r = shell.run(r"printf 'a\xffb\xc3\n'; printf '\xa9!\n'", on_chunk=chunks.append)
    assert r.output == "a\ufffdb\ufffd\n\ufffd!\n"
    assert "".join(chunks) == r.output


def test_chunks_arrive_in_order_on_the_calling_thread(shell):
    seen: list[tuple[int, str]] = []
    r = shell.run(
        "for i in 1 2 3; do echo $i; sleep 0.05; done",
        on_chunk=lambda c: seen.append((threading.get_ident(), c)),
    )
    assert {ident for ident, _ in seen} == {threading.get_ident()}
    assert "".join(c for _, c in seen) == r.output == "1\n2\n3\n"
    assert len(seen) >= 2  # streamed, not delivered at the end


class Stop(Exception):
    pass


def test_a_raising_callback_cancels_the_run_and_is_reraised(shell, marker):
    calls = []

    def on_chunk(text: str) -> None:
        calls.append(text)
        raise Stop("enough")

    start = time.monotonic()
    with pytest.raises(Stop, match="enough"):
        shell.run(f"echo first; exec -a {marker} sleep 30", on_chunk=on_chunk)
    assert time.monotonic() - start < 2
    assert calls == ["first\n"]  # not called again after it raised
    assert wait_until(lambda: not pids_with(marker))
    assert shell.run("echo still usable").output == "still usable\n"


def test_a_raising_callback_does_not_cancel_the_callers_token(shell):
    token = conch.CancelToken()
    with pytest.raises(ZeroDivisionError):
        shell.run("echo x; sleep 5", cancel=token, on_chunk=lambda c: 1 / 0)
    assert not token.is_cancelled()


def test_ctrl_c_stops_a_blocked_run(shell, marker):
    threading.Timer(0.3, _thread.interrupt_main).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        shell.run(f"exec -a {marker} sleep 30")
    assert time.monotonic() - start < 2
    assert wait_until(lambda: not pids_with(marker))
    assert shell.run("echo after").output == "after\n"


def test_other_threads_run_while_run_blocks(shell):
    counter = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal counter
        while not stop.is_set():
            counter += 1

    t = threading.Thread(target=count)
    t.start()
    samples = []
    sampler = threading.Timer(0.5, lambda: samples.append(counter))
    sampler2 = threading.Timer(1.5, lambda: samples.append(counter))
    sampler.start()
    sampler2.start()
    r = shell.run("/bin/sleep 2")
    stop.set()
    t.join()
    assert r.exit_code == 0
    assert len(samples) == 2 and 0 < samples[0] < samples[1] < counter


def test_the_blocked_thread_does_not_block_the_main_thread(shell):
    done = threading.Event()
    worker = threading.Thread(target=lambda: (shell.run("/bin/sleep 2"), done.set()))
    worker.start()
    counter = 0
    seen = []
    start = time.monotonic()
    while not done.is_set():
        counter += 1
        if len(seen) < int((time.monotonic() - start) / 0.25):
            seen.append(counter)
    worker.join()
    assert time.monotonic() - start >= 1.9
    assert len(seen) >= 6 and all(a < b for a, b in zip(seen, seen[1:]))


def test_runs_from_two_threads_queue_in_order(shell):
    results = {}

    def run(name: str, cmd: str) -> None:
        results[name] = shell.run(cmd)

    a = threading.Thread(target=run, args=("a", "sleep 0.5; X=a; echo a"))
    a.start()
    time.sleep(0.1)
    b = threading.Thread(target=run, args=("b", "echo ${X:-unset}"))
    b.start()
    a.join()
    b.join()
    assert results["a"].output == "a\n" and results["b"].output == "a\n"


def test_a_one_mebibyte_command(shell):
    payload = "x" * (1 << 20)
    r = shell.run(f"v='{payload}'; echo ${{#v}}")
    assert r.output == f"{1 << 20}\n"


def test_setsid_escapee_is_killed_on_abort(shell, marker):
    threading.Timer(0.5, shell.abort).start()
    r = shell.run(f"setsid bash -c 'exec -a {marker} sleep 30' & wait")
    assert r.cancelled
    assert wait_until(lambda: not pids_with(marker))
