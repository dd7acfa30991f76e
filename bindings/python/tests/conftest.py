"""Shared helpers of the conch pytest suite."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import pytest

import conch

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "tests" / "vectors"
# The `conch` binary the remote tests serve from (scripts/test-python.sh
# names the release build's).
CONCH = os.environ.get("CONCH_BIN") or str(REPO / "target" / "release" / "conch")

# A hang guard, in seconds: how long a test waits for something that should
# happen at once (a process to appear, a killed tree to be gone, a stopped
# call to return). Far above what a busy machine needs, kill ladder included
# (SIGINT, 0.5 s, SIGTERM, 0.5 s, SIGKILL), and far below the 30 s sleeps
# the tests stop, so a run that was not stopped cannot pass for one that was.
GUARD = 10.0


@pytest.fixture(scope="module")
def remote() -> Iterator[conch.Remote]:
    """One ``conch serve --stdio`` for a module's remote tests."""
    with conch.connect([CONCH, "serve", "--stdio"]) as r:
        yield r


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[conch.Shell]:
    """A clean session (no rc snapshot) starting in a temporary directory."""
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        yield sh


@pytest.fixture
def marker() -> str:
    """A unique word to put in a command line and look for in /proc."""
    return f"conch-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler for the test: a process started in the
    background by a non-interactive shell (as CI may start the suite)
    inherits SIGINT ignored, and then Python installs no handler and
    ``_thread.interrupt_main()`` does nothing."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def python_work() -> int:
    """Pure Python work: it needs the GIL for every step."""
    return sum(i * i for i in range(200_000))


def seconds_to_cancel(make: Callable[[], Awaitable[Any]]) -> float:
    """Runs ``make()`` as an asyncio task, cancels it once it waits (0.2 s
    in) and returns how long it took to end with ``CancelledError``."""

    async def main() -> float:
        task = asyncio.create_task(make())
        await asyncio.sleep(0.2)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    return asyncio.run(main())


def unique_sleep(base: int) -> str:
    """A ``/bin/sleep`` argument no other process uses: ``base`` seconds and
    a random fraction. ``pids_with`` then finds this test's sleeps only,
    whatever runs beside it (the test command runs this suite under both
    loops at once)."""
    return f"{base}.{uuid.uuid4().int % 10**9:09d}"


def pids_with(word: str) -> list[int]:
    """Live processes whose command line contains ``word`` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and word.encode() in (_cmdline(int(entry)) or b""):
            found.append(int(entry))
    return found


def _cmdline(pid: int) -> bytes | None:
    """The command line of a live process, None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return None
    return None if state == b"Z" else cmdline


def is_alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` is a live process named ``marker`` (its argv[0]), so a
    recycled pid is never mistaken for the process a test started."""
    cmdline = _cmdline(pid)
    return cmdline is not None and cmdline.split(b"\0")[0] == marker.encode()


def wait_until(predicate: Callable[[], object], timeout: float = GUARD) -> bool:
    """Polls ``predicate`` until it is true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def gated(body: str) -> str:
    """A background command whose ``body`` runs once the session's next run
    is ``RELEASE``: it is still running when the run that starts it returns,
    however loaded the machine (what it printed before would be that run's
    output). It waits while the file its run made is there; ``$$`` is the
    session's bash, in the subshell too."""
    return f": > /tmp/conch-gate-$$; (while [ -e /tmp/conch-gate-$$ ]; do /bin/sleep 0.02; done; {body}) &"


#: The run that lets a ``gated`` command go on: it removes the file.
RELEASE = "rm /tmp/conch-gate-$$"


def sleeper(marker: str, seconds: int = 30) -> str:
    """A command that prints ``pid=<pid>``, then becomes ``sleep`` under that
    pid with ``marker`` as its argv[0]: a process a test can find in /proc."""
    return f"bash -c 'echo pid=$$; exec -a {marker} sleep {seconds}'"


class Sleeper:
    """The output callback (``on_chunk``, ``on_update``) of a run of
    ``sleeper(marker)``. When the ``pid=`` line arrives it waits, inside the
    callback, until /proc shows that pid as the sleeper: the run cannot end
    meanwhile, as its callbacks run in its own loop. Then ``started`` is set.
    An assertion failing here fails the run, and so the test."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.pid: int | None = None
        self.started = threading.Event()

    def __call__(self, text: str) -> None:
        found = re.search(r"pid=(\d+)", text)
        if self.pid is None and found:
            pid = int(found[1])
            assert wait_until(lambda: self.is_alive(pid)), f"pid {pid} never became {self.marker}"
            self.pid = pid
            self.started.set()

    def is_alive(self, pid: int | None = None) -> bool:
        return is_alive(self.pid if pid is None else pid, self.marker)

    def wait_started(self) -> int:
        """Blocks until the sleeper runs (from another thread than the run's)."""
        assert self.started.wait(GUARD), f"{self.marker} did not start"
        assert self.pid is not None
        return self.pid

    def assert_gone(self) -> None:
        """The sleeper, seen alive before, is gone (or a zombie) by now."""
        assert self.pid is not None, "the sleeper was never seen alive"
        assert wait_until(lambda: not self.is_alive()), f"{self.marker} ({self.pid}) outlived the kill"


class Output:
    """An ``on_chunk`` callback that collects the text and lets other threads
    wait for a word to appear in it."""

    def __init__(self) -> None:
        self.text = ""
        self._changed = threading.Condition()

    def __call__(self, chunk: str) -> None:
        with self._changed:
            self.text += chunk
            self._changed.notify_all()

    def wait_for(self, word: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: word in self.text, GUARD), (
                f"{word!r} not in the output {self.text!r}"
            )


@contextmanager
def in_background(fn: Callable[..., object], *args: object, **kwargs: object) -> Iterator[None]:
    """Runs ``fn(*args, **kwargs)`` on another thread while the body runs, then joins
    it and raises what it raised, so its assertions fail the test."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            fn(*args, **kwargs)
        except BaseException as e:  # re-raised on the test's thread
            errors.append(e)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(GUARD)
    assert not thread.is_alive(), f"{fn.__name__} did not finish"
    if errors:
        raise errors[0]


def rss_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
