"""conch.BashTool: the model's bash tool as a Python host drives it."""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import sys
import threading
import time
import uuid

import pytest

import conch
from conftest import GUARD, Sleeper, in_background, sleeper, wait_until


@pytest.fixture
def tool(tmp_path):
    key = f"tool-{uuid.uuid4().hex[:8]}"
    with conch.BashTool(tmp_path, artifacts_dir=tmp_path / "artifacts", session_key=key,
                        snapshot=None) as t:
        yield t


def test_success_text_and_no_details(tool):
    r = tool.execute({"command": "echo hello; echo world"})
    assert isinstance(r, conch.ToolResult)
    assert (r.text, r.details) == ("hello\nworld", None)
    assert tool.execute({"command": "true"}).text == "(no output)"
    assert "hello" in repr(r)


def test_state_persists_in_the_tools_session_but_each_call_starts_in_cwd(tool, tmp_path):
    (tmp_path / "sub").mkdir()
    tool.execute({"command": "cd sub; export K=v"})
    assert tool.execute({"command": "echo $K; pwd"}).text == f"v\n{tmp_path}"


def test_non_zero_exit_is_a_tool_error_with_the_model_text(tool):
    with pytest.raises(conch.ToolError) as info:
        tool.execute({"command": "echo partial; (exit 3)"})
    assert str(info.value) == "partial\n\nCommand exited with code 3"
    assert info.value.details is None
    assert not isinstance(info.value, conch.BlockedError)


def test_cwd_argument_and_its_errors(tool, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "file").write_text("x")
    assert tool.execute({"command": "pwd", "cwd": "d"}).text == str(tmp_path / "d")
    with pytest.raises(conch.ToolError, match="^Working directory does not exist: "):
        tool.execute({"command": "pwd", "cwd": "missing"})
    with pytest.raises(conch.ToolError, match="^Working directory is not a directory: "):
        tool.execute({"command": "pwd", "cwd": "file"})


@pytest.mark.parametrize("timeout", [0.2, -3])
def test_timeout_is_clamped_and_reported(tool, marker, timeout):
    """The model's timeout is clamped, never refused: below 1 s (negative
    too) it is 1 s."""
    sleep = Sleeper(marker)
    start = time.monotonic()
    with pytest.raises(conch.ToolError) as info:
        tool.execute({"command": f"echo before; {sleeper(marker)}", "timeout": timeout},
                     on_update=sleep)
    assert 0.9 < time.monotonic() - start < 1 + GUARD  # clamped up to 1 s
    assert str(info.value) == f"[Command timed out after 1 seconds]\nbefore\npid={sleep.pid}"
    sleep.assert_gone()


def test_head_and_tail_from_the_command_and_the_arguments(tool):
    assert tool.execute({"command": "seq 1 100 | head -n 3"}).text == "1\n2\n3"
    assert tool.execute({"command": "seq 1 100", "tail": 2}).text == "99\n100"
    # explicit arguments win over extracted ones
    assert tool.execute({"command": "seq 1 100 | tail -n 5", "tail": 1}).text == "100"
    # The head stage is taken off the command: the tool stops `yes` itself
    # once it has the lines, long before the timeout.
    assert tool.execute({"command": "yes | head -n 2", "timeout": GUARD}).text == "y\ny"


def test_truncated_output_spills_with_details_in_snake_case(tool):
    with pytest.raises(conch.ToolError) as info:
        tool.execute({"command": "seq 1 100000; (exit 1)"})
    details = info.value.details
    t = details["meta"]["truncation"]
    assert t["direction"] == "tail" and t["truncated_by"] == "bytes"
    assert t["total_lines"] == 100000 and t["shown_range"]["end"] == 100000
    notice = (f"[Showing lines {t['shown_range']['start']}-100000 of 100000 (50.0KB limit). "
              f"Full: artifact://{t['artifact_id']}]")
    assert str(info.value).endswith("Command exited with code 1\n\n" + notice)
    full = tool.artifacts.resolve(f"artifact://{t['artifact_id']}")
    assert full == "".join(f"{i}\n" for i in range(1, 100001))

    r = tool.execute({"command": "head -c 60000 /dev/zero | tr '\\0' a"})
    assert r.details["meta"]["truncation"]["total_bytes"] == 60000
    assert r.text.endswith("]") and "artifact://" in r.text


def test_interceptor(tmp_path):
    with conch.BashTool(tmp_path, tool_names=["read", "edit"], interceptor=True,
                        snapshot=None) as t:
        with pytest.raises(conch.BlockedError) as info:
            t.execute({"command": "cd . && cat notes.txt"})
        assert info.value.suggested_tool == "read"
        assert str(info.value).startswith("Blocked: ")
        assert str(info.value).endswith("\n\nOriginal command: cd . && cat notes.txt")
        assert isinstance(info.value, conch.ToolError)
        assert t.execute({"command": "echo 'cat f'"}).text == "cat f"
    rules = [{"pattern": r"^\s*rm\b", "tool": "trash", "message": "Use trash."}]
    with conch.BashTool(tmp_path, tool_names=["trash"], interceptor=True, rules=rules,
                        snapshot=None) as t:
        with pytest.raises(conch.BlockedError, match="^Blocked: Use trash."):
            t.execute({"command": "rm -rf x"})
    with pytest.raises(conch.InvalidArgumentError):
        conch.BashTool(tmp_path, interceptor=True, rules=[{"pattern": "(", "tool": "t", "message": "m"}])


def test_on_update_gets_the_tail_on_the_calling_thread(tool, tmp_path):
    # The command goes on only once an update showed its first line: updates
    # sent only at the end would leave it waiting until the timeout.
    updates: list[tuple[int, str]] = []
    flag = tmp_path / "seen-1"

    def on_update(text: str) -> None:
        updates.append((threading.get_ident(), text))
        if text.startswith("1"):
            flag.touch()

    r = tool.execute(
        {"command": f"echo 1; until [ -e {flag} ]; do sleep 0.01; done; echo 2; echo 3",
         "timeout": GUARD},
        on_update=on_update,
    )
    assert r.text == "1\n2\n3"
    assert {i for i, _ in updates} == {threading.get_ident()}
    texts = [t for _, t in updates]
    assert len(texts) >= 2 and texts[-1] == "1\n2\n3\n"
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:]))


def test_cancel_is_an_abort_error(tool, marker):
    token = conch.CancelToken()
    sleep = Sleeper(marker)

    def on_update(text: str) -> None:
        sleep(text)
        if sleep.started.is_set():
            token.cancel()

    with pytest.raises(conch.ToolAbortError) as info:
        tool.execute({"command": f"echo started; {sleeper(marker)}"}, cancel=token,
                     on_update=on_update)
    assert str(info.value) == f"[Command cancelled]\nstarted\npid={sleep.pid}"
    sleep.assert_gone()
    assert tool.execute({"command": "echo again"}).text == "again"


def test_a_raising_on_update_stops_the_call(tool, marker):
    sleep = Sleeper(marker)

    def on_update(text: str) -> None:
        sleep(text)
        if sleep.started.is_set():
            raise LookupError("stop here")

    start = time.monotonic()
    with pytest.raises(LookupError, match="stop here"):
        tool.execute({"command": sleeper(marker)}, on_update=on_update)
    assert time.monotonic() - start < GUARD  # not the sleep's 30 s
    sleep.assert_gone()


def test_bad_arguments(tool):
    with pytest.raises(conch.InvalidArgumentError, match="command"):
        tool.execute({})
    with pytest.raises(ValueError, match="timeout"):
        tool.execute({"command": "true", "timeout": "soon"})
    with pytest.raises(ValueError, match="head"):
        tool.execute({"command": "true", "head": -1})
    # keys the model adds that the tool does not know are ignored
    assert tool.execute({"command": "echo ok", "description": "say ok"}).text == "ok"


def test_execute_async_and_cancellation(tool, marker):
    sleep = Sleeper(marker)

    async def main():
        r = await tool.execute_async({"command": "echo async"})
        assert r.text == "async"
        task = asyncio.create_task(
            tool.execute_async({"command": sleeper(marker)}, on_update=sleep))
        await asyncio.to_thread(sleep.wait_started)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    assert asyncio.run(main()) < GUARD  # not the sleep's 30 s
    sleep.assert_gone()


def test_virtual_terminal_runs_on_the_pty_when_the_host_has_a_ui(tmp_path, monkeypatch):
    monkeypatch.delenv("CONCH_NO_PTY", raising=False)
    monkeypatch.delenv("PI_NO_PTY", raising=False)
    with conch.BashTool(tmp_path, virtual_terminal=True, has_ui=True, snapshot=None) as t:
        assert t.execute({"command": "tty"}).text.startswith("/dev/pts/")

        def answer_the_prompt():
            assert wait_until(lambda: t.pty.is_running() and "name?" in t.pty.screen_text())
            t.pty.write("typed\r")

        with in_background(answer_the_prompt):
            r = t.execute({"command": "printf 'name? '; read n; echo hi $n", "timeout": GUARD})
        assert r.text.endswith("hi typed")
    with conch.BashTool(tmp_path, virtual_terminal=True, has_ui=False, snapshot=None) as t:
        with pytest.raises(conch.ToolError, match="not a tty"):
            t.execute({"command": "tty"})


def test_close_is_final_with_its_own_session_key(tmp_path):
    bash = conch.BashTool(tmp_path, snapshot="none", session_key=f"closed-{uuid.uuid4().hex[:8]}")
    before = conch.JobTool(bash)
    bash.execute({"command": "export MARK=kept"})
    bash.close()
    bash.close()  # idempotent
    calls = {
        "execute": lambda: bash.execute({"command": 'echo "[$MARK]"'}),
        "execute async": lambda: bash.execute({"command": "echo x", "async": True}),
        "JobTool made before close": lambda: before.execute({"op": "list"}),
        "JobTool made after close": lambda: conch.JobTool(bash).execute({"op": "list"}),
    }
    for what, call in calls.items():
        with pytest.raises(conch.ClosedError, match="^bash tool is closed$") as raised:
            call()
        assert not isinstance(raised.value, conch.ToolError), what
    with pytest.raises(conch.ClosedError):
        asyncio.run(bash.execute_async({"command": "true"}))


def test_closing_a_tool_of_a_shared_session_spares_the_session(tmp_path):
    env = {"CLOSED_SHARED": uuid.uuid4().hex}
    a = conch.BashTool(tmp_path, snapshot="none", env=env)
    b = conch.BashTool(tmp_path, snapshot="none", env=env)
    a.execute({"command": "export SHARED=kept"})
    with a:
        pass
    with pytest.raises(conch.ClosedError):
        a.execute({"command": 'echo "$SHARED"'})
    assert b.execute({"command": 'echo "$SHARED"'}).text == "kept"
    b.close()


def test_secrets_of_the_env_are_masked_unless_mask_is_false(tmp_path):
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    env = {"GITHUB_TOKEN": token, "DB_URL": "postgres://app:pw@db/app"}
    for mask, expect in [
        (True, "[masked: GITHUB_TOKEN] postgres://app:pw@db/app"),
        (["DB_URL"], "[masked: GITHUB_TOKEN] [masked: DB_URL]"),
        (False, f"{token} postgres://app:pw@db/app"),
    ]:
        key = f"tool-{uuid.uuid4().hex[:8]}"
        with conch.BashTool(tmp_path, session_key=key, snapshot=None, env=env, mask=mask) as t:
            assert t.execute({"command": 'echo "$GITHUB_TOKEN" "$DB_URL"'}).text == expect
    with pytest.raises(TypeError, match="mask"):
        conch.BashTool(tmp_path, mask="yes")
    # execute_bash: its session's mask (sessions with another are others).
    key = f"bash-{uuid.uuid4().hex[:8]}"
    r = conch.execute_bash('echo "$GITHUB_TOKEN"', session_key=key, snapshot=None, session_env=env)
    assert r.output == "[masked: GITHUB_TOKEN]\n"
    r = conch.execute_bash('echo "$GITHUB_TOKEN"', session_key=key, snapshot=None, session_env=env,
                           mask=False)
    assert r.output == f"{token}\n"
    conch.close_session(key)


def test_a_cwd_of_tilde_is_the_users_home_without_home_set():
    # As bash expands `~`: HOME, else the password database's entry.
    script = "import conch; print(conch.BashTool('/', snapshot=None).execute({'command': 'pwd', 'cwd': '~'}).text)"
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=GUARD * 3)
    assert out.stdout == pwd.getpwuid(os.getuid()).pw_dir + "\n", out
