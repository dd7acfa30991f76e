"""conch.PtySession: a command on a pseudo-terminal, input from other
threads, the virtual screen, kills, timeouts and asyncio."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import conch
from conftest import pids_with, wait_until


@pytest.fixture
def pty():
    with conch.PtySession() as session:
        yield session


def later(delay: float, fn, *args) -> None:
    threading.Timer(delay, fn, args).start()


def test_raw_chunks_sanitized_output_and_terminal(pty):
    chunks: list[str] = []
    r = pty.start(r"printf '\e[31mred\e[0m\n'; echo $TERM; stty size", cols=90, rows=30,
                  on_chunk=chunks.append)
    assert r.exit_code == 0 and not (r.cancelled or r.timed_out)
    assert "\x1b[31mred\x1b[0m\r\n" in "".join(chunks)
    assert r.output == "red\nxterm-256color\n30 90\n"
    assert r.total_bytes == len(r.output)
    assert pty.size() == (90, 30)


def test_default_size_is_80x24(pty):
    assert pty.start("stty size").output == "24 80\n"


def test_the_screen_shows_what_a_user_sees(pty):
    pty.start(r"printf '\e[2J\e[3;5Hhello\e[1;1Htop'")
    lines = pty.screen_text().split("\n")
    assert lines[0].startswith("top")
    assert lines[2] == "    hello"


def test_input_from_another_thread(pty):
    def type_in():
        assert wait_until(pty.is_running)
        time.sleep(0.2)
        pty.write("hello\r")
        pty.write(b"bytes\r")
        pty.write_key("ctrl+d")

    later(0, type_in)
    r = pty.start("read a; read b; echo got=$a,$b; cat", timeout=10)
    assert r.exit_code == 0
    assert r.output.endswith("got=hello,bytes\n")


@pytest.mark.parametrize(
    ("mode", "expect"), [("", "$'\\E[A'"), (r"printf '\e[?1h';", "$'\\EOA'")]
)
def test_cursor_keys_follow_the_application_cursor_mode(pty, mode, expect):
    later(0.4, pty.write_key, "up")
    r = pty.start(f"{mode} IFS= read -rsn3 k; printf '%q\\n' \"$k\"", timeout=10)
    assert r.output.strip().endswith(expect)


def test_kitty_ctrl_c_interrupts_like_a_terminal(pty):
    later(0.4, pty.write, b"\x1b[99;5u")
    r = pty.start("sleep 30", timeout=10)
    assert r.exit_code == 130 and not r.cancelled


def test_resize_reaches_the_command(pty):
    later(0.3, pty.resize, 100, 30)
    r = pty.start("sleep 0.8; stty size")
    assert r.output == "30 100\n" and pty.size() == (100, 30)


def test_kill_stops_the_process_tree(pty, marker):
    later(0.3, pty.kill)
    start = time.monotonic()
    r = pty.start(f"(exec -a {marker} sleep 30) & exec -a {marker} sleep 31")
    assert time.monotonic() - start < 3
    assert r.cancelled and not r.timed_out
    assert wait_until(lambda: not pids_with(marker))


def test_timeout(pty):
    r = pty.start("echo start; sleep 30", timeout=1)
    assert r.timed_out and not r.cancelled
    assert r.output.startswith("start\n")


def test_cancel_token(pty):
    token = conch.CancelToken()
    later(0.3, token.cancel)
    assert pty.start("sleep 30", cancel=token).cancelled


def test_a_raising_callback_kills_the_command(pty):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="stop"):
        pty.start("echo x; sleep 30", on_chunk=lambda c: (_ for _ in ()).throw(RuntimeError("stop")))
    assert time.monotonic() - start < 3
    assert not pty.is_running()


def test_start_failure_is_reported_in_the_output(pty, tmp_path):
    r = pty.start("true", cwd=tmp_path / "missing")
    assert r.exit_code is None
    assert r.output.startswith("PTY error: Working directory does not exist")


def test_one_command_at_a_time_and_no_input_when_idle(pty):
    with pytest.raises(conch.InvalidArgumentError, match="not running"):
        pty.write("x")
    with pytest.raises(conch.InvalidArgumentError, match="not running"):
        pty.kill()
    errors = []

    def second():
        assert wait_until(pty.is_running)
        try:
            pty.start("true")
        except conch.InvalidArgumentError as e:
            errors.append(str(e))
        pty.kill()

    later(0, second)
    pty.start("sleep 30", timeout=10)
    assert errors == ["PTY session already running"]
    with pytest.raises(ValueError):
        pty.write_key("no-such-key")


def test_leaving_the_context_kills_a_running_command(marker):
    session = conch.PtySession()
    done = threading.Event()
    later(0, lambda: (session.start(f"exec -a {marker} sleep 30"), done.set()))
    assert wait_until(lambda: pids_with(marker))
    with session:
        pass
    assert done.wait(3) and wait_until(lambda: not pids_with(marker))


def test_start_async_and_task_cancellation(pty, marker):
    async def main():
        r = await pty.start_async("echo async")
        assert r.output == "async\n"
        task = asyncio.create_task(pty.start_async(f"exec -a {marker} sleep 30"))
        assert await asyncio.to_thread(wait_until, lambda: pids_with(marker))
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    assert asyncio.run(main()) < 1
    assert not pids_with(marker)
