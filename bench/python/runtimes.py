"""The ways a Python host runs a model's command (conch with either of its
session loops, subprocess.run per command, pexpect), behind one shape.

Each runtime has ``name``, ``run(command, on_chunk, cwd=None) -> exit code``,
``session()`` (a fresh one of the same kind) and ``close()``; abort and
timeout are measured per runtime in bench.py because each API does them its
own way. A runtime that cannot be loaded is an ``Unavailable``.
"""

from __future__ import annotations

import os
import re
import subprocess


class Unavailable:
    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.unavailable = why


class SubprocessRuntime:
    """``subprocess.run(command, shell=True)`` per command, output captured as text."""

    name = "subprocess"
    unavailable = None

    def run(self, command, on_chunk, cwd=None):
        p = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        # The API has no streaming: the whole output arrives at the end.
        on_chunk(p.stdout)
        return p.returncode

    def session(self):
        return self

    def close(self):
        pass


PROMPT = "<<bench-prompt:"
PROMPT_RE = re.compile(r"<<bench-prompt:(\d+)>>")
# Output is held back by this much so a prompt split across reads is seen.
HOLD = 64


class PexpectRuntime:
    """A persistent bash on a pty driven by pexpect: the prompt carries the
    exit status, echo is off, and output is streamed as it is read
    (``\\r\\n`` turned back into ``\\n``). pexpect's default 50 ms sleep
    before each send (``delaybeforesend``) is switched off, as a harness
    tuned for speed does."""

    name = "pexpect"
    unavailable = None

    def __init__(self, pexpect):
        self.pexpect = pexpect
        self.child = pexpect.spawn(
            "bash",
            ["--noprofile", "--norc", "--noediting"],
            encoding="utf-8",
            codec_errors="replace",
            echo=False,
            maxread=65536,
            env={**os.environ, "PS1": "", "PS2": ""},
        )
        self.child.delaybeforesend = None
        self.child.sendline("stty -echo; PS2=''; PS1='" + PROMPT + "$?>>'")
        self.child.expect(PROMPT_RE, timeout=10)

    def run(self, command, on_chunk, cwd=None, timeout=None):
        """Returns the exit status, or None when ``timeout`` (seconds) ran out
        (the command is then interrupted and the prompt awaited)."""
        self.child.sendline(command)
        return self.wait_prompt(on_chunk, timeout)

    def wait_prompt(self, on_chunk, timeout=None):
        buf = ""
        while True:
            try:
                buf += self.child.read_nonblocking(65536, timeout=timeout if timeout else -1)
            except self.pexpect.TIMEOUT:
                self.interrupt()
                return None
            m = PROMPT_RE.search(buf)
            if m:
                if m.start():
                    on_chunk(buf[: m.start()].replace("\r\n", "\n"))
                return int(m.group(1))
            if len(buf) > HOLD:
                cut = len(buf) - HOLD
                if buf[cut - 1] == "\r":
                    cut -= 1  # keep a `\r\n` together
                on_chunk(buf[:cut].replace("\r\n", "\n"))
                buf = buf[cut:]

    def interrupt(self):
        """Ctrl-C, then wait for the prompt (what a pexpect harness does to
        stop a command), again if no prompt comes: one run of the bench
        saw no prompt within 10 s of a single Ctrl-C, and the whole Python
        harness failed with it (a Ctrl-C that comes as bash forks the
        command can reach the child before it takes the default action)."""
        for _ in range(5):
            self.child.sendintr()
            try:
                self.child.expect(PROMPT_RE, timeout=2)
                return
            except self.pexpect.TIMEOUT:
                continue
        raise RuntimeError("pexpect: no prompt after five Ctrl-C")

    def session(self):
        return PexpectRuntime(self.pexpect)

    def close(self):
        self.child.close(force=True)


# The session loops of conch a runtime can run (docs/engine.md): the
# runtime's name in the records -> (the ``engine`` option it is made with,
# the loop ``Shell.engine`` must then report).
CONCH_ENGINES = {
    # The default: the loop builtin (conch-loop.so) where bash loads it.
    "conch": ("auto", "builtin"),
    # The previous implementation, bash text run with ``eval``.
    "conch-eval": ("eval", "eval"),
}


class ConchRuntime:
    """conch's Python module (bindings/python), built by run.sh, running the
    loop ``CONCH_ENGINES[name]`` names."""

    unavailable = None

    def __init__(self, conch, name="conch"):
        self.conch = conch
        self.name = name
        self.shell = conch.Shell(snapshot="none", engine=CONCH_ENGINES[name][0])

    def run(self, command, on_chunk, cwd=None, timeout=None):
        return self.result(command, on_chunk, timeout).exit_code

    def result(self, command, on_chunk, timeout=None):
        return self.shell.run(command, on_chunk=on_chunk, timeout=timeout)

    def session(self):
        return ConchRuntime(self.conch, self.name)

    def close(self):
        self.shell.close()


def pexpect_runtime():
    try:
        import pexpect
    except ImportError as e:
        return Unavailable("pexpect", f"not installed: {e}")
    return PexpectRuntime(pexpect)


def conch_runtime(name="conch"):
    """The conch runtime ``name`` (a key of ``CONCH_ENGINES``). Raises when its
    session runs another loop than the one its name claims: its figures would
    be another runtime's."""
    try:
        import conch
    except ImportError:
        return Unavailable(name, os.environ.get("BENCH_CONCH_PY_PENDING", "pending: Python module not built"))
    option, runs = CONCH_ENGINES[name]
    rt = ConchRuntime(conch, name)
    engine = rt.shell.engine
    if engine != runs:
        rt.close()
        raise RuntimeError(f"{name}: made with engine={option!r}, the session runs the {engine!r} loop, not {runs!r}")
    return rt
