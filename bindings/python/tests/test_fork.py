"""A host that forks (Python's ``multiprocessing``, a pre-forking server)
after it used conch: the forked child opens and runs sessions of its own,
leaves the parent's alone (its exit does not close them), and the host's
sessions still die with the host while the child lives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import GUARD, is_alive, pids_with, wait_until


def host(script: str) -> subprocess.Popen[str]:
    """A Python process running ``script`` (conch imported), its output
    piped, in a process group of its own with what it forks."""
    return subprocess.Popen(
        [sys.executable, "-c", "import os, time, conch\n" + textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill_group(p: subprocess.Popen[str]) -> None:
    """The host and the children it forked (their sessions' processes are
    in sessions of their own)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def test_a_forked_child_opens_and_runs_sessions_of_its_own():
    # The child has no spawner thread of the host's: before, its first
    # session waited forever for one.
    p = host(
        """
        sh = conch.Shell(snapshot=None)
        assert sh.run("echo parent").output == "parent\\n"
        pid = os.fork()
        if pid == 0:
            with conch.Shell(snapshot=None) as child:
                print(child.run("echo child").output.strip(), flush=True)
            print(conch.execute_shell("echo one-shot").output.strip(), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print(sh.run("echo parent again").output.strip(), flush=True)
        """
    )
    try:
        out, _ = p.communicate(timeout=GUARD * 3)
    except subprocess.TimeoutExpired:
        kill_group(p)
        pytest.fail(f"the forked child hung: {p.communicate()[0]!r}")
    assert (p.returncode, out) == (0, "child\none-shot\nparent again\n")


def test_the_parents_session_is_the_parents_in_the_child_and_after_its_exit():
    # The child exits as a program does (atexit hooks, finalizers): before,
    # that closed the parent's session, its state lost.
    p = host(
        """
        sh = conch.Shell(snapshot=None)
        sh.run("export KEPT=1")
        pid = os.fork()
        if pid == 0:
            try:
                sh.run("echo in the child")
            except conch.InvalidArgumentError as e:
                print(e, flush=True)
            raise SystemExit(0)
        os.waitpid(pid, 0)
        r = sh.run("echo kept=$KEPT")
        print(r.output.strip(), r.session_reset, flush=True)
        """
    )
    try:
        out, _ = p.communicate(timeout=GUARD * 3)
    finally:
        kill_group(p)
    assert out.splitlines() == [
        f"this shell belongs to process {p.pid}, which opened it: a forked process opens "
        "shells of its own",
        "kept=1 False",
    ]


def named(marker: str) -> list[int]:
    """Live processes whose argv[0] is ``marker`` (not the hosts, whose
    script names it)."""
    return [pid for pid in pids_with(marker) if is_alive(pid, marker)]


def test_the_hosts_session_dies_with_it_while_a_forked_child_lives(marker):
    # The child's copy of the lifeline is closed at the fork: the guard
    # reads the end of its input when the host dies, not when the last
    # forked child does.
    p = host(
        f"""
        sh = conch.Shell(snapshot=None)
        sh.run("setsid bash -c 'exec -a {marker} sleep 300' >/dev/null 2>&1 </dev/null &")
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
        print("ready", flush=True)
        time.sleep(300)
        """
    )
    try:
        assert p.stdout.readline() == "ready\n"
        assert wait_until(lambda: named(marker)), "the escape did not start"
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert wait_until(lambda: not named(marker)), "the host's escape outlived it"
    finally:
        kill_group(p)  # the forked child
        subprocess.run(["pkill", "-f", marker], check=False)  # an escape left
