"""The ``engine`` option and ``Shell.engine``: which loop runs the commands
inside bash (the loop builtin or the eval loop), as chosen and as the two
differ, locally and through ``conch serve``."""

from __future__ import annotations

import os

import pytest

import conch

# The loop a session runs when nothing chooses it: `CONCH_ENGINE` (the test
# command runs every suite once with `eval`), else the builtin.
EXPECTED = os.environ.get("CONCH_ENGINE") or "builtin"

# How each loop words a syntax error: the builtin runs a command as
# `bash -c` input, the eval loop through `eval`.
SYNTAX_ERROR = {"builtin": "bash: -c: line 1: ", "eval": "bash: eval: line 1: "}


def test_the_default_engine_is_the_expected_one(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        assert sh.engine == EXPECTED
        assert sh.run("echo ok").output == "ok\n"
        assert sh.engine == EXPECTED


@pytest.mark.parametrize("engine", ["builtin", "eval"])
def test_the_engine_option_chooses_the_loop(tmp_path, engine):
    with conch.Shell(cwd=tmp_path, snapshot=None, engine=engine) as sh:
        assert sh.engine == engine
        r = sh.run("if then")
        assert r.exit_code == 2
        assert r.output.startswith(SYNTAX_ERROR[engine] + "syntax error"), r.output
        assert sh.engine == engine


def test_auto_is_the_default(tmp_path):
    with conch.Shell(cwd=tmp_path, snapshot=None, engine="auto") as sh:
        assert sh.engine == EXPECTED


def test_a_bad_engine_is_a_clear_error(tmp_path):
    # A word the option does not take, as any enum option's: named, with
    # the words it takes.
    with pytest.raises(TypeError, match="^engine: unknown variant `bash`, expected one of "
                       "`auto`, `builtin`, `eval`$"):
        conch.Shell(cwd=tmp_path, snapshot=None, engine="bash")
    with pytest.raises(TypeError, match="^engine: invalid type"):
        conch.Shell(cwd=tmp_path, snapshot=None, engine=1)


def test_a_bad_conch_engine_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CONCH_ENGINE", "bash")
    with pytest.raises(conch.InvalidArgumentError, match="CONCH_ENGINE"):
        conch.Shell(cwd=tmp_path, snapshot=None)
    # An engine the option names leaves the variable unread.
    with conch.Shell(cwd=tmp_path, snapshot=None, engine="eval") as sh:
        assert sh.engine == "eval"


def test_a_closed_shell_raises(tmp_path):
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    sh.close()
    with pytest.raises(conch.ClosedError):
        sh.engine


def test_the_engine_is_read_from_inside_a_runs_callback(tmp_path):
    seen = []
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        sh.run("echo one", on_chunk=lambda _: seen.append(sh.engine))
    assert seen and set(seen) == {EXPECTED}


def test_a_remote_shell_tells_its_engine(remote, tmp_path):
    with remote.shell(cwd=str(tmp_path), snapshot=None) as sh:
        assert sh.engine == EXPECTED
    for engine in ("builtin", "eval"):
        with remote.shell(cwd=str(tmp_path), snapshot=None, engine=engine) as sh:
            assert sh.engine == engine
            assert sh.run("if then").output.startswith(SYNTAX_ERROR[engine])
    with pytest.raises(TypeError, match="^engine: unknown variant `bash`"):
        remote.shell(engine="bash")
    sh = remote.shell(snapshot=None)
    sh.close()
    with pytest.raises(conch.ClosedError):
        sh.engine


@pytest.mark.parametrize("engine", ["builtin", "eval"])
def test_the_tool_and_execute_bash_take_the_option(tmp_path, engine):
    # The bash tool's session, and a cached session of execute_bash, run
    # the loop asked for.
    key = f"test-engine-tool-{engine}"
    tool = conch.BashTool(tmp_path, snapshot=None, engine=engine, session_key=key)
    try:
        with pytest.raises(conch.ToolError) as info:
            tool.execute({"command": "if then"})
        assert str(info.value).startswith(SYNTAX_ERROR[engine] + "syntax error"), str(info.value)
    finally:
        tool.close()
    key = f"test-engine-execute-bash-{engine}"
    try:
        r = conch.execute_bash("if then", session_key=key, snapshot=None, engine=engine)
        assert r.output.startswith(SYNTAX_ERROR[engine] + "syntax error"), r.output
    finally:
        conch.close_session(key)
    with pytest.raises(conch.InvalidArgumentError, match='^engine must be "auto", "builtin" or "eval"'):
        conch.BashTool(tmp_path, engine="bash")
