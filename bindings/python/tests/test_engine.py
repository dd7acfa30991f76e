"""Engine behaviour as Python sees it: background jobs, abort, timeout,
respawn, stdin, invalid UTF-8, callbacks, threads and Ctrl-C."""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time

import pytest

import conch
from conftest import GUARD, Output, Sleeper, in_background, pids_with, python_work, sleeper, unique_sleep, wait_until


def test_background_job_returns_at_once_and_is_listed(tmp_path, marker):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    try:
        start = time.monotonic()
        r = sh.run(f"(exec -a {marker} sleep 30) & echo started")
        assert time.monotonic() - start < GUARD  # not held until the job ends
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
    sleep = Sleeper(marker)

    def abort_once_running() -> None:
        sleep.wait_started()
        shell.abort()

    with in_background(abort_once_running):
        r = shell.run(sleeper(marker), on_chunk=sleep)
    assert r.cancelled and not r.timed_out and r.exit_code is None
    assert r.output == f"[Command cancelled]\npid={sleep.pid}\n"
    sleep.assert_gone()
    assert shell.run("echo alive").output == "alive\n"


def test_cancel_token_from_another_thread(shell, marker):
    token = conch.CancelToken()
    sleep = Sleeper(marker)

    def cancel_once_running() -> None:
        sleep.wait_started()
        token.cancel()

    with in_background(cancel_once_running):
        r = shell.run(sleeper(marker), cancel=token, on_chunk=sleep)
    assert r.cancelled and not r.timed_out
    sleep.assert_gone()


def test_timeout_kills_the_process_tree(shell, marker):
    # The sleeper runs in a subshell, a child of the command, so the whole
    # tree must go; 2 s leave the command ample time to print before it.
    sleep = Sleeper(marker)
    start = time.monotonic()
    r = shell.run(f"echo before; ({sleeper(marker)}) & wait", timeout=2, on_chunk=sleep)
    elapsed = time.monotonic() - start
    assert 1.9 < elapsed < 2 + GUARD  # not early, and not the sleep's 30 s
    assert r.timed_out and r.cancelled and r.exit_code is None
    assert r.output == f"[Command timed out after 2 seconds]\nbefore\npid={sleep.pid}\n"
    sleep.assert_gone()


def test_exit_respawns_the_session_in_the_last_cwd(shell, tmp_path):
    (tmp_path / "here").mkdir()
    shell.run("cd here")
    r = shell.run("exit 7")
    assert r.exit_code == 7 and not r.session_reset and r.session_ended
    r = shell.run("pwd")
    assert r.session_reset and not r.session_ended and r.output == f"{tmp_path / 'here'}\n"
    assert not shell.run("true").session_reset


def test_a_timeout_and_an_abort_keep_the_shell_and_its_state(shell, tmp_path):
    shell.run("cd /tmp; export A=1; B=2; f() { echo f; }; alias g='echo g'; shopt -s expand_aliases")
    r = shell.run("/bin/sleep 30; touch never", timeout=1)
    assert r.timed_out and not r.session_ended, r
    token = conch.CancelToken()

    def cancel_when_started(text: str) -> None:
        if "started" in text:
            token.cancel()

    r = shell.run("echo started; /bin/sleep 30; touch never", on_chunk=cancel_when_started, cancel=token)
    assert r.cancelled and not r.timed_out and not r.session_ended, r
    r = shell.run("pwd; echo $A$B; f; g; ls never 2>/dev/null || echo 'no never'")
    assert r.output == "/tmp\n12\nf\ng\nno never\n", r
    assert not r.session_reset


def test_stdin_is_dev_null(shell):
    # With any other stdin, cat and read would wait for input until the
    # timeout.
    r = shell.run("cat; read line; echo rc=$?; readlink /proc/self/fd/0", timeout=GUARD)
    assert not r.timed_out
    assert r.output == "rc=1\n/dev/null\n"


def test_invalid_utf8_becomes_replacement_characters(shell):
    chunks: list[str] = []
    r = shell.run(r"printf 'a\xffb\xc3\n'; printf '\xa9!\n'", on_chunk=chunks.append)
    assert r.output == "a\ufffdb\ufffd\n\ufffd!\n"
    assert "".join(chunks) == r.output


def test_chunks_arrive_in_order_on_the_calling_thread(shell, tmp_path):
    # The command prints 2 and 3 only once the callback has seen 1: chunks
    # delivered only at the end would leave it waiting until the timeout.
    seen: list[tuple[int, str]] = []
    flag = tmp_path / "seen-1"

    def on_chunk(text: str) -> None:
        seen.append((threading.get_ident(), text))
        if "1" in text:
            flag.touch()

    r = shell.run(
        f"echo 1; while [ ! -e {flag} ]; do sleep 0.01; done; echo 2; echo 3",
        on_chunk=on_chunk, timeout=GUARD,
    )
    assert not r.timed_out
    assert {ident for ident, _ in seen} == {threading.get_ident()}
    assert "".join(c for _, c in seen) == r.output == "1\n2\n3\n"
    assert seen[0][1] == "1\n"


class Stop(Exception):
    pass


def test_a_raising_callback_cancels_the_run_and_is_reraised(shell, marker):
    calls = []
    sleep = Sleeper(marker)

    def on_chunk(text: str) -> None:
        calls.append(text)
        sleep(text)  # returns once the sleeper runs
        if sleep.started.is_set():
            raise Stop("enough")

    start = time.monotonic()
    with pytest.raises(Stop, match="enough"):
        shell.run(sleeper(marker), on_chunk=on_chunk)
    assert time.monotonic() - start < GUARD  # not the sleep's 30 s
    assert calls == [f"pid={sleep.pid}\n"]  # not called again after it raised
    sleep.assert_gone()
    assert shell.run("echo still usable").output == "still usable\n"


def test_a_raising_callback_does_not_cancel_the_callers_token(shell):
    token = conch.CancelToken()
    with pytest.raises(ZeroDivisionError):
        shell.run("echo x; sleep 5", cancel=token, on_chunk=lambda c: 1 / 0)
    assert not token.is_cancelled()


def test_ctrl_c_stops_a_blocked_run(shell, marker, sigint_raises):
    sleep = Sleeper(marker)

    def interrupt_once_running() -> None:
        sleep.wait_started()
        _thread.interrupt_main()

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt), in_background(interrupt_once_running):
        shell.run(sleeper(marker), on_chunk=sleep)
    assert time.monotonic() - start < GUARD  # not the sleep's 30 s
    sleep.assert_gone()
    assert shell.run("echo after").output == "after\n"


def waits_for(flag) -> str:
    """A command that prints ``ready``, waits until ``flag`` exists, then
    prints ``done``."""
    return f"echo ready; while [ ! -e {flag} ]; do sleep 0.01; done; echo done"


def test_other_threads_run_while_run_blocks(shell, tmp_path):
    # The command ends only once another Python thread has done its work
    # and made the flag: a run holding the GIL would time out.
    flag = tmp_path / "flag"
    out = Output()

    def work_then_flag() -> None:
        out.wait_for("ready")
        python_work()
        flag.touch()

    with in_background(work_then_flag):
        r = shell.run(waits_for(flag), on_chunk=out, timeout=GUARD)
    assert not r.timed_out and r.output == "ready\ndone\n"


def test_the_blocked_thread_does_not_block_the_main_thread(shell, tmp_path):
    flag = tmp_path / "flag"
    out = Output()
    results = []
    with in_background(lambda: results.append(shell.run(waits_for(flag), on_chunk=out,
                                                        timeout=GUARD))):
        out.wait_for("ready")
        python_work()  # on this thread, while the other one is in run()
        assert not results, "the run ended before the flag was made"
        flag.touch()
    assert not results[0].timed_out and results[0].output == "ready\ndone\n"


def test_runs_from_two_threads_queue_in_order(shell, tmp_path):
    # b calls run() while a's command holds the session, so b must wait for
    # a, and see the variable a's command sets on its way out.
    flag = tmp_path / "flag"
    out = Output()
    results = {}

    def run(name: str, cmd: str, **options) -> None:
        results[name] = shell.run(cmd, timeout=GUARD, **options)

    with in_background(run, "a", f"{waits_for(flag)}; X=a", on_chunk=out):
        out.wait_for("ready")
        b = threading.Thread(target=run, args=("b", "echo ${X:-unset}"))
        b.start()
        # b's frame stays on the call line while it waits inside run().
        assert wait_until(lambda: (frame := sys._current_frames().get(b.ident)) is not None
                          and frame.f_code is run.__code__
                          and frame.f_lineno == run.__code__.co_firstlineno + 1)
        assert "a" not in results and "b" not in results
        flag.touch()
    b.join(GUARD)
    assert results["a"].output == "ready\ndone\n" and results["b"].output == "a\n"


def test_a_one_mebibyte_command(shell):
    payload = "x" * (1 << 20)
    r = shell.run(f"v='{payload}'; echo ${{#v}}")
    assert r.output == f"{1 << 20}\n"


def test_setsid_escapee_is_killed_on_abort(shell, marker):
    sleep = Sleeper(marker)

    def abort_once_running() -> None:
        pid = sleep.wait_started()
        with open(f"/proc/{pid}/stat") as f:
            session = int(f.read().rsplit(")", 1)[1].split()[3])
        shell.abort()
        assert session == pid, "the sleeper did not lead a session of its own"

    with in_background(abort_once_running):
        r = shell.run(f"setsid {sleeper(marker)} & wait", on_chunk=sleep)
    assert r.cancelled
    sleep.assert_gone()


def test_a_killed_host_leaves_no_state_file_behind():
    """The session's state (its variables: secrets too) never waits in a
    file: not for the bash that takes over from a backgrounded run, not for
    a job. A host killed by SIGKILL leaves none of its files in conch's
    private directory."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    code = (
        "import conch\n"
        "sh = conch.Shell(snapshot=None)\n"
        "sh.run('export PROBE_SECRET=sk-live-1')\n"
        "r = sh.run('/bin/sleep 30', yield_after=0.1)\n"
        "assert r.backgrounded is not None\n"
        "sh.start('/bin/sleep 30')\n"
        "print('ready', flush=True)\n"
        "sh.run('/bin/sleep 30')\n"
    )
    host = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout.readline().strip() == "ready"
        host.kill()
        host.wait(GUARD)
    finally:
        host.kill()
        host.wait()
    private = Path(tempfile.gettempdir()) / f"conch-{os.getuid()}"
    left = [p.name for p in private.iterdir()
            if f"-{host.pid}-" in p.name and not p.is_dir()]
    assert left == [], f"a killed host left {left}"


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_nothing_outlives_a_python_host_that_dies(how):
    """A host killed mid-command takes everything its shells started with
    it: the command, a background job, a setsid escape, a double fork."""
    import subprocess

    stamp = unique_sleep(1000)
    code = (
        "import conch\n"
        "sh = conch.Shell(snapshot=None)\n"
        f"sh.run('/bin/sleep {stamp}1 & setsid /bin/sleep {stamp}2 & ( (/bin/sleep {stamp}3 &) )')\n"
        "print('ready', flush=True)\n"
        f"sh.run('/bin/sleep {stamp}4')\n"
    )
    host = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout.readline().strip() == "ready"
        assert wait_until(lambda: all(pids_with(f"{stamp}{n}") for n in range(1, 5)))
        host.send_signal(how)
        host.wait(GUARD)
        # Within the hang guard, not at the sleeps' end: how fast is a
        # measurement (bench/README-performance.md), which a loaded machine
        # stretches.
        assert wait_until(lambda: not any(pids_with(f"{stamp}{n}") for n in range(1, 5))), \
            "processes outlived the host"
    finally:
        host.kill()
        host.wait()


def test_a_debug_trap_that_skips_the_sessions_steps_ends_the_run_early(shell):
    # With extdebug, a DEBUG trap that fails skips every command after it,
    # the session's own included (the eval loop's): the run ends within
    # seconds, not at its timeout, and the next run gets a fresh bash.
    start = time.monotonic()
    r = shell.run("echo before; shopt -s extdebug; trap 'false' DEBUG", timeout=60)
    assert time.monotonic() - start < GUARD
    if shell.engine == "builtin":
        # The loop builtin has no steps of its own for the trap to skip:
        # the run ends with its status, as under `bash -c`, and the trap,
        # still set, skips the next command's commands.
        assert not r.cancelled and not r.session_ended and r.exit_code == 0
        nxt = shell.run("echo skipped", timeout=60)
        assert (nxt.output, nxt.session_reset) == ("", False)
        return
    assert r.cancelled and r.session_ended and not r.timed_out
    assert r.exit_code is None
    assert r.output.startswith("[Command ended, but the shell stopped reporting after it: ")
    assert r.output.endswith("before\n")
    nxt = shell.run("echo next; trap -p DEBUG")
    assert nxt.output == "next\n" and nxt.session_reset
