"""The public names of the Python module (docs/api/python.md), their types and
argument checks."""

from __future__ import annotations

import asyncio
import inspect
import os
from pathlib import Path

import pytest

import conch
from conftest import pids_with, wait_until

API_NAMES = [
    "__version__", "Shell", "CancelToken", "execute_shell", "execute_bash",
    "normalize_bash_command", "NormalizedCommand", "apply_head_tail",
    "check_bash_interception", "Interception", "default_interceptor_rules",
    "sanitize_text", "ArtifactStore", "BashResult", "ConchError", "ToolError",
    "ToolAbortError", "BlockedError",
]


def test_every_api_name_exists_and_is_documented():
    for name in API_NAMES:
        assert hasattr(conch, name), name
    for name in conch.__all__:
        obj = getattr(conch, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"{name} has no docstring"


def test_version_matches_the_package():
    assert conch.__version__.count(".") == 2
    from importlib.metadata import version

    assert version("conch") == conch.__version__


def test_help_of_run_shows_the_signature_and_the_options():
    doc = conch.Shell.run.__doc__
    for option in ("cwd", "env", "timeout", "on_chunk", "cancel", "head", "tail"):
        assert f"``{option}" in doc, option
    sig = inspect.signature(conch.Shell.run)
    assert list(sig.parameters)[:2] == ["self", "command"]
    assert sig.parameters["timeout"].default is None
    assert inspect.signature(conch.Shell).parameters["snapshot"].default == "auto"


def test_stubs_and_py_typed_ship_with_the_package():
    pkg = Path(conch.__file__).parent
    assert (pkg / "py.typed").exists()
    stub = (pkg / "__init__.pyi").read_text()
    for name in API_NAMES:
        assert name in stub, name


def test_exception_hierarchy():
    assert issubclass(conch.InvalidArgumentError, conch.ConchError)
    assert issubclass(conch.InvalidArgumentError, ValueError)
    assert issubclass(conch.IoError, OSError)
    assert issubclass(conch.SpawnError, OSError)
    assert issubclass(conch.NotFoundError, LookupError)
    assert issubclass(conch.BlockedError, conch.ToolError)
    for cls in (conch.ToolError, conch.ToolAbortError, conch.ClosedError):
        assert issubclass(cls, conch.ConchError)
    e = conch.BlockedError("Blocked: x", "read")
    assert (str(e), e.suggested_tool, e.details) == ("Blocked: x", "read", None)
    e = conch.ToolError("text", {"a": 1})
    assert e.details == {"a": 1}


def test_exceptions_pickle():
    import pickle

    e = pickle.loads(pickle.dumps(conch.BlockedError("Blocked: x", "read")))
    assert (str(e), e.suggested_tool) == ("Blocked: x", "read")
    e = pickle.loads(pickle.dumps(conch.ToolAbortError("aborted", {"k": 2})))
    assert e.details == {"k": 2}


def test_bash_result_fields(shell):
    r = shell.run("printf 'a\\nb\\n'; exit_code_is=3; (exit 3)")
    fields = ["output", "exit_code", "cancelled", "timed_out", "truncated", "total_lines",
              "total_bytes", "output_lines", "output_bytes", "artifact_id", "working_dir",
              "session_reset"]
    for f in fields:
        assert hasattr(r, f), f
    assert r.output == "a\nb\n"
    assert r.exit_code == 3
    assert (r.total_lines, r.total_bytes, r.output_lines, r.output_bytes) == (2, 4, 2, 4)
    assert not (r.cancelled or r.timed_out or r.truncated or r.session_reset)
    assert r.artifact_id is None
    assert r.working_dir == os.path.realpath(shell.cwd)
    assert "exit_code=3" in repr(r) and "output='a\\nb\\n'" in repr(r)
    assert r == r and r != shell.run("true")
    with pytest.raises(AttributeError):
        r.output = "x"


def test_state_persists_between_runs(shell, tmp_path):
    (tmp_path / "sub").mkdir()
    shell.run("cd sub && export FOO=bar && f() { echo fn-$1; } && set -o noclobber")
    r = shell.run("pwd; echo $FOO; f 1; echo $-")
    assert r.output.startswith(f"{tmp_path / 'sub'}\nbar\nfn-1\n")
    assert "C" in r.output.splitlines()[-1]
    assert shell.cwd == tmp_path / "sub"


def test_per_run_cwd_and_env_do_not_stick(shell, tmp_path):
    (tmp_path / "d").mkdir()
    r = shell.run("pwd; echo ${ONLY:-unset}", cwd="d", env={"ONLY": "here"})
    assert r.output == f"{tmp_path / 'd'}\nhere\n"
    assert shell.run("pwd; echo ${ONLY:-unset}").output == f"{tmp_path}\nunset\n"
    # any mapping works, os.environ included
    assert shell.run("echo $HOME", env=os.environ).output == os.environ["HOME"] + "\n"


def test_session_env_and_prefix(tmp_path):
    # The prefix goes in front of every command: `env X_PREFIXED=1 <command>`
    # puts the variable in the environment of what the command runs, and
    # nowhere else (the session's own shell never sets it).
    with conch.Shell(cwd=tmp_path, snapshot=None, env={"SESSION_VAR": "s"},
                     prefix="env X_PREFIXED=1") as sh:
        assert sh.run("printenv X_PREFIXED SESSION_VAR").output == "1\ns\n"
        assert sh.run("printenv X_PREFIXED").output == "1\n"
        assert sh.run("echo ${X_PREFIXED:-unset}").output == "unset\n"
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        r = sh.run("printenv X_PREFIXED")
        assert r.output == "" and r.exit_code == 1


def test_env_policy_drops_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("CONCH_TEST_API_KEY", "secret")
    monkeypatch.setenv("CONCH_TEST_PLAIN", "plain")
    with conch.Shell(cwd=tmp_path, snapshot=None, env_policy={"exclude": ["*_KEY"]}) as sh:
        r = sh.run("echo ${CONCH_TEST_API_KEY:-gone} $CONCH_TEST_PLAIN")
        assert r.output == "gone plain\n"
    with conch.Shell(cwd=tmp_path, snapshot=None, env_policy={"inherit": "none"}) as sh:
        assert sh.run("echo ${CONCH_TEST_PLAIN:-none}").output == "none\n"


def test_non_interactive_env_is_on_by_default(shell):
    assert shell.run("echo $PAGER $GIT_EDITOR $CI").output == "cat true 1\n"


def test_head_and_tail_apply_to_the_whole_stream(shell):
    r = shell.run("seq 1 100", head=10, tail=3)
    assert r.output == "8\n9\n10\n"
    assert r.total_lines == 100
    r = shell.run("yes", head=5)  # a satisfied head ends the command
    assert r.output == "y\n" * 5 and r.exit_code == 0


def test_bad_arguments_raise_value_errors(shell, tmp_path):
    with pytest.raises(conch.InvalidArgumentError, match="Working directory does not exist"):
        shell.run("true", cwd="missing")
    with pytest.raises(ValueError, match="timeout"):
        shell.run("true", timeout=0)
    with pytest.raises(ValueError, match="timeout"):
        shell.run("true", timeout=float("nan"))
    with pytest.raises(ValueError, match="head must be a whole number >= 0"):
        shell.run("true", head=-1)
    with pytest.raises(TypeError, match="^env"):
        shell.run("true", env={"A": 1})
    with pytest.raises(ValueError):
        shell.run("true", env={"1BAD": "x"})
    with pytest.raises(ValueError, match="NUL"):
        shell.run("echo a\0b")
    with pytest.raises(TypeError, match="on_chunk must be callable"):
        shell.run("true", on_chunk=3)
    with pytest.raises(ValueError, match="^env_policy.inherit must be"):
        conch.Shell(env_policy={"inherit": "some"})
    with pytest.raises(TypeError, match="^snapshot: "):
        conch.Shell(snapshot=3)
    with pytest.raises(TypeError, match=r"^Shell\(\) got an unexpected keyword argument 'inherit_env'$"):
        conch.Shell(inherit_env="none")
    # An empty snapshot path is a mistake, refused with the core's text on every face.
    with pytest.raises(conch.InvalidArgumentError) as empty:
        conch.Shell(snapshot="")
    assert str(empty.value) == (
        'snapshot must be "auto", "none" or the path of a snapshot file, got ""'
    )
    with pytest.raises(conch.InvalidArgumentError):
        conch.Shell(cwd=tmp_path / "missing")
    # the session survived every refusal
    assert shell.run("echo ok").output == "ok\n"


def test_a_missing_shell_is_a_spawn_error(tmp_path):
    with pytest.raises(conch.SpawnError):
        conch.Shell(shell=tmp_path / "no-such-bash", snapshot=None)


def test_closed_shell_refuses_runs(tmp_path):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    with sh as entered:
        assert entered is sh
    with pytest.raises(conch.ClosedError, match="closed"):
        sh.run("true")
    sh.close()  # idempotent


def test_reset_starts_the_session_afresh_in_its_start_directory(shell, tmp_path, marker):
    shell.run(f"cd / && export LEFT=1 && (exec -a {marker} /bin/sleep 60) &")
    job = shell.start("/bin/sleep 60")
    assert wait_until(lambda: pids_with(marker))
    before = shell.run("echo $$").output
    for _ in range(2):  # the second reset takes the spare the first bash forked
        shell.reset()
        assert shell.cwd == tmp_path
        r = shell.run("echo ${LEFT:-unset}; pwd; [[ $$ == $BASHPID ]] && echo own")
        assert r.output == f"unset\n{tmp_path}\nown\n" and not r.session_reset
        assert shell.jobs() == [] and shell.run("echo $$").output != before
        shell.run("export LEFT=1")
    assert wait_until(lambda: not pids_with(marker)), "the last session's processes are killed"
    with pytest.raises(conch.NotFoundError):
        shell.poll(job)
    shell.close()
    with pytest.raises(conch.ClosedError):
        shell.reset()


def test_reset_async_is_awaitable(shell):
    shell.run("export LEFT=1")
    asyncio.run(shell.reset_async())
    assert shell.run("echo ${LEFT:-unset}").output == "unset\n"


def test_cancel_token():
    parent = conch.CancelToken()
    child = conch.CancelToken(parent)
    other = conch.CancelToken()
    assert not child.is_cancelled()
    child.cancel()
    assert child.is_cancelled() and not parent.is_cancelled()
    child2 = conch.CancelToken(parent)
    parent.cancel()
    assert child2.is_cancelled() and not other.is_cancelled()
    assert repr(parent) == "CancelToken(cancelled=True)"


def test_pre_cancelled_token_returns_a_cancelled_result(shell):
    token = conch.CancelToken()
    token.cancel()
    r = shell.run("echo never", cancel=token)
    assert r.cancelled and r.exit_code is None
    assert r.output == "[Command cancelled]\n"


def test_execute_shell_is_one_shot(tmp_path):
    r = conch.execute_shell("cd /; export X=1; echo $0", cwd=tmp_path)
    assert r.exit_code == 0 and r.working_dir == str(tmp_path)
    r = conch.execute_shell("echo ${X:-none}; pwd", cwd=tmp_path)
    assert r.output == f"none\n{tmp_path}\n"
    r = conch.execute_shell("echo $0", shell="/bin/sh")
    assert r.output == "/bin/sh\n"
    chunks = []
    r = conch.execute_shell("seq 3", on_chunk=chunks.append, tail=1)
    assert "".join(chunks) == "1\n2\n3\n" and r.output == "3\n"


def test_execute_bash_shares_sessions_by_key(tmp_path):
    key = f"api-{os.getpid()}"
    try:
        conch.execute_bash(f"cd {tmp_path}; V=kept", session_key=key, snapshot=None)
        r = conch.execute_bash("echo $V; pwd", session_key=key, snapshot=None)
        assert r.output == f"kept\n{tmp_path}\n"
        other = conch.execute_bash("echo ${V:-fresh}", session_key=key + "-other", snapshot=None)
        assert other.output == "fresh\n"
        r = conch.execute_bash("sleep 5", session_key=key, snapshot=None, timeout=1)
        assert r.timed_out and r.output.startswith("[Command timed out after 1 seconds]")
    finally:
        conch.close_session(key)
        conch.close_session(key + "-other")
    r = conch.execute_bash("echo ${V:-gone}", session_key=key, snapshot=None)
    conch.close_session(key)
    assert r.output == "gone\n"


def test_normalize_and_head_tail():
    n = conch.normalize_bash_command("  git log | head -n 20  ")
    assert (n.command, n.head_lines, n.tail_lines) == ("git log", 20, None)
    assert n == conch.NormalizedCommand("git log", 20)
    assert "head_lines=20" in repr(n)
    assert conch.apply_head_tail("1\n2\n3\n4\n", head=3, tail=2) == "2\n3"
    assert conch.apply_head_tail("1\n2\n", tail=5) == "1\n2\n"
    with pytest.raises(ValueError):
        conch.apply_head_tail("x", head=-2)


def test_interception():
    tools = ["read", "edit"]
    hit = conch.check_bash_interception("cd src && cat main.rs", tools)
    assert isinstance(hit, conch.Interception) and hit.blocked
    assert hit.suggested_tool == "read"
    assert hit.message.endswith("\n\nOriginal command: cd src && cat main.rs")
    assert conch.check_bash_interception("cat main.rs", ["edit"]) is None
    assert conch.check_bash_interception("echo 'cat f'", tools) is None

    rules = conch.default_interceptor_rules()
    assert rules and all(set(r) == {"pattern", "flags", "tool", "message"} for r in rules)
    mine = [{"pattern": r"^\s*make\b", "tool": "build", "message": "Use build.", "extra": 1}]
    hit = conch.check_bash_interception("FOO=1 make all", ["build"], mine)
    assert hit.message == "Blocked: Use build.\n\nOriginal command: FOO=1 make all"
    with pytest.raises(conch.InvalidArgumentError, match="rule 0"):
        conch.check_bash_interception("x", ["t"], [{"pattern": "(", "tool": "t", "message": "m"}])
    with pytest.raises(ValueError, match="pattern"):
        conch.check_bash_interception("x", ["t"], [{"tool": "t", "message": "m"}])


def test_sanitize_text_takes_str_and_bytes():
    assert conch.sanitize_text("\x1b[31mred\x1b[0m\r\n") == "red\n"
    assert conch.sanitize_text(b"ok\xff\n") == "ok\ufffd\n"
    s = conch.Sanitizer()
    assert s.push(b"\x1b[3") + s.push("1mA\r") + s.push(b"\n\xe2\x82") + s.push(b"\xac") == "A\n\u20ac"
    assert s.finish() == ""
    with pytest.raises(TypeError):
        conch.sanitize_text(3)


def test_the_process_default_store_is_where_a_shell_without_a_directory_spills(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=1000) as sh:
        r = sh.run("seq 1 2000")
    store = conch.ArtifactStore.process_default()
    assert store.resolve(f"artifact://{r.artifact_id}") == "".join(f"{i}\n" for i in range(1, 2001))
    # In conch's private directory, locked while this process lives.
    assert store.dir.parent.name == f"conch-{os.getuid()}"
    assert (store.dir / ".lock").is_file()


def test_artifacts_spill_and_resolve(tmp_path):
    store = conch.ArtifactStore(tmp_path / "arts")
    with conch.Shell(cwd=tmp_path, snapshot=None, max_bytes=1000, artifacts_dir=store) as sh:
        r = sh.run("seq 1 2000")
    assert r.truncated and r.artifact_id is not None
    full = store.resolve(f"artifact://{r.artifact_id}")
    assert full == "".join(f"{i}\n" for i in range(1, 2001))
    assert store.read(r.artifact_id, offset=10, limit=2) == "11\n12\n"
    a = store.allocate("bash")
    assert int(a.id) > int(r.artifact_id) and a.url == f"artifact://{a.id}"
    assert a.path == tmp_path / "arts" / f"{a.id}.bash.log"
    with pytest.raises(conch.NotFoundError, match=f"Artifact 99 not found"):
        store.resolve("artifact://99")
    with pytest.raises(conch.InvalidArgumentError, match="numeric"):
        store.resolve("artifact://x")
