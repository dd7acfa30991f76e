"""conch.PtySession: a command on a pseudo-terminal, input from other
threads, the virtual screen, kills, timeouts and asyncio."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import conch
from conftest import GUARD, Output, Sleeper, in_background, is_alive, sleeper, wait_until


@pytest.fixture
def pty():
    with conch.PtySession() as session:
        yield session


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
    out = Output()

    def type_in():
        out.wait_for("ready")
        pty.write("hello\r")
        pty.write(b"bytes\r")
        pty.write_key("ctrl+d")

    # Echo off before "ready", so the typed lines do not show in the output.
    with in_background(type_in):
        r = pty.start("stty -echo; echo ready; read a; read b; echo got=$a,$b; cat",
                      on_chunk=out, timeout=GUARD)
    assert r.exit_code == 0
    assert r.output == "ready\ngot=hello,bytes\n"


@pytest.mark.parametrize(
    ("mode", "expect"), [("", "$'\\E[A'"), (r"printf '\e[?1h';", "$'\\EOA'")]
)
def test_cursor_keys_follow_the_application_cursor_mode(pty, mode, expect):
    # "ready" comes after the mode switch, and the screen has taken in every
    # byte before on_chunk sees it, so the key is sent in the right mode.
    # Echo and line editing are off first: the key's bytes reach read as sent.
    out = Output()

    def press_up():
        out.wait_for("ready")
        pty.write_key("up")

    with in_background(press_up):
        r = pty.start(f"stty -echo -icanon; {mode} echo ready; IFS= read -rn3 k; printf '%q\\n' \"$k\"",
                      on_chunk=out, timeout=GUARD)
    assert r.output == f"ready\n{expect}\n"


def test_kitty_ctrl_c_interrupts_like_a_terminal(pty, marker):
    sleep = Sleeper(marker)

    def press_ctrl_c():
        sleep.wait_started()
        pty.write(b"\x1b[99;5u")

    with in_background(press_ctrl_c):
        r = pty.start(sleeper(marker), on_chunk=sleep, timeout=GUARD)
    assert r.exit_code == 130 and not (r.cancelled or r.timed_out)
    sleep.assert_gone()


def test_resize_reaches_the_command(pty):
    out = Output()

    def resize_then_go_on():
        out.wait_for("ready")
        pty.resize(100, 30)
        pty.write("\r")

    with in_background(resize_then_go_on):
        r = pty.start("stty -echo; echo ready; read _; stty size", on_chunk=out, timeout=GUARD)
    assert r.output == "ready\n30 100\n" and pty.size() == (100, 30)


def test_kill_stops_the_process_tree(pty, marker):
    # A background child and the command's shell itself, both becoming
    # sleeps named marker.
    command = f"(exec -a {marker} sleep 30) & echo pids $! $$; exec -a {marker} sleep 31"
    out = Output()
    pids: list[int] = []

    def kill_once_both_run():
        out.wait_for("\n")
        pids.extend(int(p) for p in out.text.split()[1:3])
        assert wait_until(lambda: all(is_alive(p, marker) for p in pids)), out.text
        pty.kill()

    start = time.monotonic()
    with in_background(kill_once_both_run):
        r = pty.start(command, on_chunk=out)
    assert time.monotonic() - start < GUARD  # not the sleeps' 30 s
    assert r.cancelled and not r.timed_out
    assert len(pids) == 2
    assert wait_until(lambda: not any(is_alive(p, marker) for p in pids))


def test_timeout(pty):
    # 2 s leave the command ample time to print before it.
    r = pty.start("echo start; sleep 30", timeout=2)
    # As for a shell run: a timeout is a cancel too, with the notice first.
    assert r.timed_out and r.cancelled and r.exit_code is None
    assert r.output == "[Command timed out after 2 seconds]\nstart\n"


def test_cancel_token(pty, marker):
    token = conch.CancelToken()
    sleep = Sleeper(marker)

    def on_chunk(text: str) -> None:
        sleep(text)
        if sleep.started.is_set():
            token.cancel()

    r = pty.start(sleeper(marker), cancel=token, on_chunk=on_chunk)
    assert r.cancelled and not r.timed_out
    sleep.assert_gone()


def test_a_raising_callback_kills_the_command(pty, marker):
    sleep = Sleeper(marker)

    def on_chunk(text: str) -> None:
        sleep(text)
        if sleep.started.is_set():
            raise RuntimeError("stop")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="stop"):
        pty.start(sleeper(marker), on_chunk=on_chunk)
    assert time.monotonic() - start < GUARD  # not the sleep's 30 s
    assert not pty.is_running()
    sleep.assert_gone()


def test_a_missing_cwd_raises_as_for_a_shell(pty, tmp_path):
    with pytest.raises(conch.InvalidArgumentError, match="^Working directory does not exist"):
        pty.start("true", cwd=tmp_path / "missing")


def test_one_command_at_a_time_and_no_input_when_idle(pty):
    with pytest.raises(conch.InvalidArgumentError, match="not running"):
        pty.write("x")
    with pytest.raises(conch.InvalidArgumentError, match="not running"):
        pty.write_key("enter")
    with pytest.raises(conch.InvalidArgumentError, match="not running"):
        pty.kill()
    out = Output()
    errors = []

    def second():
        out.wait_for("ready")
        try:
            pty.start("true")
        except conch.InvalidArgumentError as e:
            errors.append(str(e))
        pty.kill()

    with in_background(second):
        pty.start("echo ready; sleep 30", on_chunk=out, timeout=GUARD)
    assert errors == ["PTY session already running"]


def test_an_unknown_key_is_refused_while_a_command_runs(pty):
    out = Output()
    refused = []

    def press_bad_keys_then_stop():
        out.wait_for("ready")
        for key in ("no-such-key", "super+x"):
            try:
                pty.write_key(key)
            except conch.InvalidArgumentError as e:
                refused.append(str(e))
        assert pty.is_running()  # the refusals left the command alone
        pty.write("done\r")

    with in_background(press_bad_keys_then_stop):
        r = pty.start("stty -echo; echo ready; read -r line; echo got=$line",
                      on_chunk=out, timeout=GUARD)
    assert r.output == "ready\ngot=done\n"  # nothing of the bad keys reached it
    assert len(refused) == 2
    assert refused[0].startswith('Unknown key "no-such-key"')
    assert refused[1].startswith('Unknown key modifier "super" in "super+x"')


def test_leaving_the_context_kills_a_running_command(marker):
    session = conch.PtySession()
    sleep = Sleeper(marker)
    with in_background(session.start, sleeper(marker), on_chunk=sleep):
        sleep.wait_started()
        with session:
            pass
    sleep.assert_gone()


def test_start_async_and_task_cancellation(pty, marker):
    sleep = Sleeper(marker)

    async def main():
        r = await pty.start_async("echo async")
        assert r.output == "async\n"
        task = asyncio.create_task(pty.start_async(sleeper(marker), on_chunk=sleep))
        await asyncio.to_thread(sleep.wait_started)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    assert asyncio.run(main()) < GUARD  # not the sleep's 30 s
    sleep.assert_gone()
