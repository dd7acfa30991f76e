"""Misuse, property-based: random types and values for every argument of
every public function, constructor and method, calls on closed handles,
and calls made from inside callbacks. Whatever the input, a call either
returns a valid result or raises an ``Exception`` (never a bare
``BaseException`` such as a PanicException) with a message; it never
crashes the interpreter and never hangs.

The fuzz loops run in a child Python process (this file run as a script),
so a segfault or an abort is a failing return code, not a dead test run.
Each call in the child is bounded (``faulthandler`` dumps every thread's
stack and exits the child when one call takes longer than CALL_BOUND), and
the child as a whole is bounded here. Examples are derandomized: every run
tries the same inputs. Commands stay trivial (``true``, ``echo``): random
text is never run as a command, a shell, a prefix or an rc file.
"""

from __future__ import annotations

import asyncio
import faulthandler
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import RELEASE, gated

# How long one call may take in the child (a timeout's kill ladder is about
# a second; everything here should take milliseconds).
CALL_BOUND = 20
# How long one group of calls may take, startup included.
CHILD_BOUND = 120

GROUPS = ["functions", "shell", "execute", "tool", "pty", "artifacts", "closed", "callbacks"]


@pytest.mark.parametrize("group", GROUPS)
def test_misuse_neither_crashes_nor_hangs(group: str, tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-X", "faulthandler", __file__, group],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CHILD_BOUND,
        stdin=subprocess.DEVNULL,
    )
    assert child.returncode == 0, (
        f"the {group} child exited with {child.returncode}\n"
        f"--- stdout\n{child.stdout[-6000:]}\n--- stderr\n{child.stderr[-6000:]}"
    )
    assert f"{group}: ok" in child.stdout


@pytest.mark.timeout(60)
def test_a_run_from_inside_its_own_shells_callback_is_an_error_not_a_hang(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-X", "faulthandler", __file__, "reentrant"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]


# ---------------------------------------------------------------- the child

if __name__ == "__main__":
    import conch
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    BIG = "x" * 1_000_000

    class Thing:
        def __repr__(self) -> str:
            return "Thing()"

    class BadMapping:
        """Looks like a mapping, and fails when used as one."""

        def items(self) -> Any:
            raise RuntimeError("no items")

        def __getitem__(self, key: object) -> Any:
            raise RuntimeError("no item")

    def quiet(*_args: object) -> None:
        return None

    def raising(*_args: object) -> None:
        raise RuntimeError("callback failed")

    NUMBERS = st.one_of(
        st.sampled_from([-1, 0, 1, 2, 2**31, 2**63, 2**64, 2**200, 2**1100, -(2**63) - 1, -(2**200)]),
        st.integers(),
        st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, -0.0, 0.0, 1e-300, 0.5, 2.0]),
        st.floats(),
        st.booleans(),
    )
    ODD_TEXT = st.sampled_from(["", "\0", "a\0b", "\ud800", "x\udfffy", BIG, "artifact://0", "artifact://x"])
    OTHER = st.sampled_from(
        [None, b"true", bytearray(b"x"), [], [None], ["a", 1], (), {}, {1: 2}, {"a": None}, Thing(), BadMapping(),
         quiet, raising, object, len, 1j]
    )
    NOT_STR = st.one_of(NUMBERS, OTHER, st.binary(max_size=8), st.lists(st.integers(), max_size=3),
                        st.dictionaries(st.integers(), st.integers(), max_size=2))
    TEXT = st.one_of(st.text(max_size=16), ODD_TEXT)
    ANY = st.one_of(NOT_STR, TEXT)
    # Strings that are safe to run: never random text.
    COMMAND = st.one_of(
        st.sampled_from(["true", "echo hi", "echo a; echo b; echo c", "exit 3", "", "\0", "echo \ud800",
                         "printf '\\033[31mred\\r\\n'", BIG, "echo " + BIG[:100_000]]),
        NOT_STR,
    )
    # Safe paths and programs: nothing random runs.
    PATH = st.one_of(
        st.sampled_from(["", ".", "/", "/nonexistent", "sub", "\0", "\ud800", BIG[:5000], "/bin/true", "/bin/false"]),
        NOT_STR,
    )
    ENV = st.one_of(
        st.dictionaries(st.sampled_from(["A", "", "A=B", "\0", "\ud800", "PATH_X", "1A"]), TEXT, max_size=3),
        ANY,
    )
    RULE = st.fixed_dictionaries(
        {"pattern": st.one_of(st.sampled_from(["cat", "(", "^ls\\b", "a" * 50_000]), ANY),
         "tool": ANY, "message": ANY},
        optional={"flags": st.one_of(st.sampled_from(["i", "imsx", "q", ""]), ANY)},
    )
    RULES = st.one_of(st.lists(st.one_of(RULE, ANY), max_size=3), ANY)
    TOOL_ARGS = st.one_of(
        st.fixed_dictionaries(
            {"command": COMMAND},
            optional={"cwd": PATH, "timeout": NUMBERS, "head": NUMBERS, "tail": NUMBERS, "extra": ANY},
        ),
        ANY,
    )

    Arg = tuple  # (valid strategy, misuse strategy)
    CLEAN = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=8)
    SAFE_COMMAND = st.sampled_from(["true", "echo hi", "echo a; echo b; echo c", "exit 3", "printf 'x\\033[1my'"])
    A_COMMAND: Arg = (SAFE_COMMAND, COMMAND)
    A_ANY: Arg = (TEXT, ANY)
    A_TEXT: Arg = (CLEAN, ANY)
    A_PATH: Arg = (st.sampled_from([None, ".", "/tmp"]), PATH)
    A_DIR: Arg = (st.sampled_from([None, "artifacts", "/tmp/conch-misuse-artifacts"]), PATH)
    A_SHELL: Arg = (st.sampled_from([None, "bash"]), PATH)
    A_ENV: Arg = (st.one_of(st.none(), st.dictionaries(st.sampled_from(["A", "B_1", "CONCH_X"]), CLEAN, max_size=2)),
                  ENV)
    A_SECONDS: Arg = (st.one_of(st.none(), st.floats(1, 30), st.integers(1, 30)), NUMBERS)
    A_COUNT: Arg = (st.one_of(st.none(), st.integers(0, 5), st.just(2**70)), NUMBERS)
    A_SIZE: Arg = (st.integers(0, 500), NUMBERS)
    A_CALLBACK: Arg = (st.sampled_from([None, quiet, len]), ANY)
    A_CANCEL: Arg = (st.one_of(st.none(), st.builds(conch.CancelToken)), ANY)
    A_BOOL: Arg = (st.booleans(), ANY)
    A_MAX_BYTES: Arg = (st.one_of(st.integers(1, 100_000), st.just(2**63 - 1)), NUMBERS)
    A_SNAPSHOT: Arg = (st.sampled_from([None, "none", "auto"]), st.one_of(st.sampled_from(["auto", "none", None]), PATH))
    A_PREFIX: Arg = (st.sampled_from([None, "command"]), st.one_of(st.sampled_from(["", "\0", "\ud800"]), NOT_STR))
    A_ENV_POLICY: Arg = (st.fixed_dictionaries({}, optional={
        "inherit": st.sampled_from(["all", "core", "none"]),
        "exclude": st.lists(st.sampled_from(["*_KEY", "X", "*"]), max_size=2)}),
        st.one_of(st.fixed_dictionaries({}, optional={"inherit": ANY, "exclude": st.one_of(st.lists(TEXT, max_size=2), ANY)}), ANY))
    A_NAMES: Arg = (st.lists(st.sampled_from(["read", "grep", "find", "ls"]), max_size=3), st.one_of(st.lists(TEXT), ANY))
    A_KEY: Arg = (st.sampled_from([None, "misuse"]), NOT_STR)
    A_RULES: Arg = (st.one_of(st.none(), st.lists(st.fixed_dictionaries(
        {"pattern": st.sampled_from(["^cat\\b", "grep"]), "tool": st.sampled_from(["read", "grep"]),
         "message": CLEAN}), max_size=2)), RULES)
    A_NUMBER: Arg = (st.one_of(st.integers(0, 5), st.floats(0, 0.1)), NUMBERS)

    SETTINGS = settings(
        max_examples=int(os.environ.get("CONCH_MISUSE_EXAMPLES", "40")),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )

    # name -> [results, exceptions], printed at the end: a group whose calls
    # all fail tells that its inputs never reach the interesting paths.
    TALLY: dict[str, list[int]] = {}

    def check(name: str, call: Callable[[], object], expect: type | tuple[type, ...] | None = None) -> object:
        """One bounded call: a result of type ``expect``, or an Exception
        with a message (returned)."""
        tally = TALLY.setdefault(name, [0, 0])
        faulthandler.dump_traceback_later(CALL_BOUND, exit=True)
        try:
            result = call()
        except Exception as e:  # noqa: BLE001 - the property is about what it is
            assert str(e).strip(), f"{name}: {type(e).__name__} without a message"
            tally[1] += 1
            return e
        except BaseException as e:  # noqa: BLE001
            raise AssertionError(
                f"{name} raised {type(e).__module__}.{type(e).__qualname__}, not an Exception: {e}"
            ) from None
        finally:
            faulthandler.cancel_dump_traceback_later()
        if expect is not None:
            assert isinstance(result, expect), f"{name} returned {result!r}, not a {expect}"
        tally[0] += 1
        return result

    def fuzz(name: str, fn: Callable[..., object], args: list[Arg], kwargs: dict[str, Arg],
             expect: type | tuple[type, ...] | None, after: Callable[[object], None] | None = None,
             examples: int | None = None) -> None:
        """Calls ``fn`` with up to two of its arguments drawn bad (any type,
        odd values) and the others valid or left out, so that each bad
        value also reaches the paths behind the first check; ``after``
        cleans a result up (closes it)."""
        chosen = SETTINGS if examples is None else settings(SETTINGS, max_examples=examples)
        names = [f"arg{i}" for i in range(len(args))] + list(kwargs)
        specs = dict(zip(names, [*args, *kwargs.values()]))

        @chosen
        @given(st.data())
        def one(data: st.DataObject) -> None:
            bad = data.draw(st.sets(st.sampled_from(names), max_size=2), label="bad") if names else set()

            def value(key: str) -> Any:
                valid, misuse = specs[key]
                return data.draw(misuse if key in bad else valid, label=key)

            a = [value(f"arg{i}") for i in range(len(args))]
            kw = {k: value(k) for k in kwargs if k in bad or data.draw(st.booleans())}
            result = check(name, lambda: fn(*a, **kw), expect)
            if after is not None and not isinstance(result, Exception):
                after(result)

        one()

    def awaited(fn: Callable[..., Any]) -> Callable[..., object]:
        return lambda *a, **kw: asyncio.run(fn(*a, **kw))

    def close(obj: Any) -> None:
        check("close", obj.close)

    RUN_KW = {"cwd": A_PATH, "env": A_ENV, "timeout": A_SECONDS, "on_chunk": A_CALLBACK, "cancel": A_CANCEL,
              "head": A_COUNT, "tail": A_COUNT}
    POLL_KW = {"wait": (st.one_of(st.just(0), st.floats(0, 0.05)), NUMBERS),
               "until": (st.sampled_from([None, "late", "x|y", "(?m)^l"]),
                         st.one_of(st.sampled_from(["(", "\\", "a{99999999}", "[z-a]"]), ANY)),
               "max_bytes": A_MAX_BYTES, "cursor": A_COUNT, "cancel": A_CANCEL}
    SHELL_KW = {"shell": A_SHELL, "cwd": A_PATH, "env": A_ENV, "snapshot": A_SNAPSHOT, "prefix": A_PREFIX,
                "non_interactive_env": A_BOOL, "max_bytes": A_MAX_BYTES, "artifacts_dir": A_DIR,
                "env_policy": A_ENV_POLICY}

    def group_functions() -> None:
        norm_text: Arg = (st.one_of(CLEAN, st.sampled_from(["cat f | head -n 3", "seq 9 | tail -2", "a || b"])), ANY)
        fuzz("normalize_bash_command", conch.normalize_bash_command, [norm_text], {}, conch.NormalizedCommand)
        fuzz("NormalizedCommand", conch.NormalizedCommand, [A_TEXT], {"head_lines": A_COUNT, "tail_lines": A_COUNT},
             conch.NormalizedCommand)
        fuzz("apply_head_tail", conch.apply_head_tail, [A_TEXT], {"head": A_COUNT, "tail": A_COUNT}, str)
        fuzz("check_bash_interception", conch.check_bash_interception, [norm_text, A_NAMES],
             {"rules": A_RULES}, (conch.Interception, type(None)))
        fuzz("default_interceptor_rules", conch.default_interceptor_rules, [], {}, list, examples=3)
        fuzz("sanitize_text", conch.sanitize_text, [(st.one_of(CLEAN, st.binary(max_size=16)), ANY)], {}, str)
        sanitizer = conch.Sanitizer()
        fuzz("Sanitizer.push", sanitizer.push, [(st.one_of(CLEAN, st.binary(max_size=16)), ANY)], {}, str)
        fuzz("Sanitizer.finish", sanitizer.finish, [], {}, str, examples=3)
        fuzz("CancelToken", conch.CancelToken, [A_CANCEL], {}, conch.CancelToken)
        token = conch.CancelToken(conch.CancelToken())
        for method in (token.cancel, token.is_cancelled, token.__repr__):
            check("CancelToken method", method)
        fuzz("close_session", conch.close_session, [A_TEXT], {}, type(None), examples=10)
        check("close_all_sessions", conch.close_all_sessions)

    def group_shell() -> None:
        fuzz("Shell", conch.Shell, [], SHELL_KW, conch.Shell, after=close)
        with conch.Shell(snapshot=None) as sh:
            fuzz("Shell.run", sh.run, [A_COMMAND], RUN_KW, conch.BashResult)
            fuzz("Shell.run_async", awaited(sh.run_async), [A_COMMAND], RUN_KW, conch.BashResult, examples=15)
            fuzz("Shell.abort", sh.abort, [], {}, type(None), examples=3)
            fuzz("Shell.background_jobs", sh.background_jobs, [], {}, list, examples=3)
            # A job that ends once the run after it lets it: a poll never
            # waits long, whatever its wait.
            sh.run(gated("echo late"))
            job: Arg = (st.just(sh.jobs()[-1].job), NUMBERS)
            sh.run(RELEASE)
            fuzz("Shell.jobs", sh.jobs, [], {}, list, examples=3)
            fuzz("Shell.poll", sh.poll, [job], POLL_KW, conch.JobPoll)
            fuzz("Shell.poll_async", awaited(sh.poll_async), [job], POLL_KW, conch.JobPoll, examples=10)
            for info in check("Shell.jobs", sh.jobs, list):
                check("JobInfo.repr", lambda: repr(info), str)
            check("JobPoll.repr", lambda: repr(sh.poll(sh.jobs()[-1].job, cursor=0)), str)
            check("Shell.cwd", lambda: sh.cwd, Path)
            check("Shell.repr", lambda: repr(sh), str)
            fuzz("Shell.run extra", sh.run, [A_COMMAND], {"unknown": A_ANY}, conch.BashResult, examples=5)

    def group_execute() -> None:
        fuzz("execute_shell", conch.execute_shell, [A_COMMAND],
             {**RUN_KW, "shell": A_SHELL, "non_interactive_env": A_BOOL, "max_bytes": A_MAX_BYTES,
              "artifacts_dir": A_DIR, "env_policy": A_ENV_POLICY}, conch.BashResult)
        bash_kw = {**RUN_KW, "session_key": A_KEY, "shell": A_SHELL, "prefix": A_PREFIX,
                   "snapshot": A_SNAPSHOT, "session_env": A_ENV, "artifacts_dir": A_DIR}
        fuzz("execute_bash", conch.execute_bash, [A_COMMAND], bash_kw, conch.BashResult)
        fuzz("execute_shell_async", awaited(conch.execute_shell_async), [A_COMMAND], RUN_KW, conch.BashResult,
             examples=10)
        fuzz("execute_bash_async", awaited(conch.execute_bash_async), [A_COMMAND], RUN_KW, conch.BashResult,
             examples=10)
        conch.close_all_sessions()

    def group_tool() -> None:
        tool_kw = {"artifacts_dir": A_DIR, "tool_names": A_NAMES, "interceptor": A_BOOL,
                   "virtual_terminal": A_BOOL, "has_ui": A_BOOL, "session_key": A_KEY, "rules": A_RULES,
                   "shell": A_SHELL, "prefix": A_PREFIX, "snapshot": A_SNAPSHOT, "env": A_ENV,
                   "update_interval": A_NUMBER}
        fuzz("BashTool", conch.BashTool, [(st.sampled_from([".", "/tmp"]), PATH)], tool_kw, conch.BashTool,
             after=close)
        tool_args: Arg = (st.fixed_dictionaries(
            {"command": st.one_of(SAFE_COMMAND, st.sampled_from(["cat /etc/hostname", "seq 1 9 | head -n 2"]))},
            optional={"cwd": st.sampled_from([".", "/tmp"]), "timeout": st.integers(1, 30),
                      "head": st.integers(0, 3), "tail": st.integers(0, 3)}), TOOL_ARGS)
        for tool in (conch.BashTool(snapshot=None, interceptor=True, tool_names=["read"], session_key="misuse"),
                     conch.BashTool(snapshot=None, virtual_terminal=True, has_ui=True)):
            with tool:
                fuzz("BashTool.execute", tool.execute, [tool_args], {"on_update": A_CALLBACK, "cancel": A_CANCEL},
                     conch.ToolResult)
                fuzz("BashTool.execute_async", awaited(tool.execute_async), [tool_args],
                     {"on_update": A_CALLBACK, "cancel": A_CANCEL}, conch.ToolResult, examples=10)
                check("BashTool.artifacts", lambda: tool.artifacts)
                check("BashTool.pty", lambda: tool.pty, conch.PtySession)
                check("BashTool.repr", lambda: repr(tool), str)
        conch.close_all_sessions()

    def group_pty() -> None:
        start_kw = {"cols": A_SIZE, "rows": A_SIZE, "cwd": A_PATH, "env": A_ENV, "timeout": A_SECONDS,
                    "shell": A_SHELL, "on_chunk": A_CALLBACK, "cancel": A_CANCEL, "max_bytes": A_MAX_BYTES}
        with conch.PtySession() as pty:
            fuzz("PtySession.start", pty.start, [A_COMMAND], start_kw, conch.PtyResult)
            fuzz("PtySession.start_async", awaited(pty.start_async), [A_COMMAND], start_kw, conch.PtyResult,
                 examples=10)
            # Nothing runs: each is the "not running" error, whatever the input.
            fuzz("PtySession.write", pty.write, [A_ANY], {}, type(None))
            fuzz("PtySession.write_key", pty.write_key, [(st.sampled_from(["enter", "ctrl+c", "up"]), ANY)], {},
                 type(None))
            fuzz("PtySession.resize", pty.resize, [A_SIZE, A_SIZE], {}, type(None))
            for name in ("kill", "is_running", "screen_text", "cursor_position", "size", "__repr__"):
                check(f"PtySession.{name}", getattr(pty, name))

    def group_artifacts() -> None:
        fuzz("ArtifactStore", conch.ArtifactStore, [(st.sampled_from(["store", "/tmp/x"]), PATH)], {},
             conch.ArtifactStore)
        store = conch.ArtifactStore("store")
        artifact = check("allocate", store.allocate, conch.Artifact)
        artifact.path.write_text("one\ntwo\nthree\n")
        fuzz("ArtifactStore.allocate", store.allocate, [(st.sampled_from(["bash", "pty"]), ANY)], {}, conch.Artifact)
        fuzz("ArtifactStore.resolve", store.resolve, [(st.just(artifact.url), ANY)], {}, str)
        fuzz("ArtifactStore.read", store.read, [(st.sampled_from([artifact.id, artifact.url]), ANY)],
             {"offset": A_COUNT, "limit": A_COUNT}, str)
        for getter in (lambda: store.dir, lambda: repr(store), lambda: artifact.url, lambda: repr(artifact)):
            check("artifact getter", getter)

    def group_closed() -> None:
        sh = conch.Shell(snapshot=None)
        sh.close()
        fuzz("closed Shell.run", sh.run, [A_COMMAND], RUN_KW, conch.BashResult, examples=20)
        fuzz("closed Shell.run_async", awaited(sh.run_async), [A_COMMAND], RUN_KW, conch.BashResult, examples=5)
        for name in ("abort", "background_jobs", "jobs", "close", "__repr__", "__enter__"):
            check(f"closed Shell.{name}", getattr(sh, name))
        fuzz("closed Shell.poll", sh.poll, [(st.integers(0, 3), NUMBERS)], POLL_KW, conch.JobPoll, examples=20)
        fuzz("closed Shell.poll_async", awaited(sh.poll_async), [(st.integers(0, 3), NUMBERS)], POLL_KW,
             conch.JobPoll, examples=5)
        assert isinstance(check("closed poll", lambda: sh.poll(1)), conch.ClosedError)
        check("closed Shell.cwd", lambda: sh.cwd, Path)
        assert isinstance(check("closed run", lambda: sh.run("true")), conch.ClosedError)
        tool = conch.BashTool(snapshot=None, session_key="misuse-closed")
        tool.close()
        fuzz("closed BashTool.execute", tool.execute, [(st.just({"command": "echo hi"}), TOOL_ARGS)],
             {"on_update": A_CALLBACK}, conch.ToolResult, examples=10)
        check("closed BashTool.close", tool.close)
        pty = conch.PtySession()
        with pty:
            pass
        for name in ("kill", "is_running", "screen_text", "size"):
            check(f"idle PtySession.{name}", getattr(pty, name))
        conch.close_all_sessions()

    def group_callbacks() -> None:
        """Callbacks that call back into the object whose call is running."""
        other = conch.Shell(snapshot=None)
        token = conch.CancelToken()
        sh_actions = [
            lambda sh: sh.abort(), lambda sh: sh.background_jobs(), lambda sh: sh.cwd, lambda sh: repr(sh),
            lambda sh: sh.close(), lambda sh: other.run("echo other"), lambda sh: token.cancel(),
            lambda sh: conch.execute_shell("echo nested"), lambda sh: conch.sanitize_text("x"),
            lambda sh: sh.jobs(), lambda sh: sh.poll(1, wait=0.01),
        ]

        @SHELL_SETTINGS
        @given(st.lists(st.sampled_from(range(len(sh_actions))), min_size=1, max_size=3),
               st.sampled_from(["echo a", "echo a; echo b; echo c", "seq 1 2000"]))
        def shell_callbacks(actions: list[int], command: str) -> None:
            with conch.Shell(snapshot=None) as sh:
                def on_chunk(_text: str) -> None:
                    for i in actions:
                        sh_actions[i](sh)
                check("run with a re-entrant on_chunk", lambda: sh.run(command, on_chunk=on_chunk),
                      conch.BashResult)
                check("run after", lambda: sh.run("echo after"))

        pty_actions = [
            lambda p: p.kill(), lambda p: p.write("x\r"), lambda p: p.write_key("enter"), lambda p: p.resize(100, 30),
            lambda p: p.screen_text(), lambda p: p.is_running(), lambda p: p.start("true"),
            lambda p: p.cursor_position(), lambda p: p.__exit__(None, None, None),
        ]

        @SHELL_SETTINGS
        @given(st.lists(st.sampled_from(range(len(pty_actions))), min_size=1, max_size=3),
               st.sampled_from(["echo a", "read -t 0.2 x; echo got $x", "seq 1 500"]))
        def pty_callbacks(actions: list[int], command: str) -> None:
            with conch.PtySession() as pty:
                def on_chunk(_text: str) -> None:
                    for i in actions:
                        pty_actions[i](pty)
                check("start with a re-entrant on_chunk",
                      lambda: pty.start(command, on_chunk=on_chunk, timeout=2), conch.PtyResult)

        tool_actions = [
            lambda t: t.close(), lambda t: t.pty.kill(), lambda t: t.artifacts, lambda t: token.cancel(),
            lambda t: conch.close_all_sessions(),
        ]

        @SHELL_SETTINGS
        @given(st.lists(st.sampled_from(range(len(tool_actions))), min_size=1, max_size=2))
        def tool_callbacks(actions: list[int]) -> None:
            with conch.BashTool(snapshot=None, session_key="misuse-cb", update_interval=0) as tool:
                def on_update(_text: str) -> None:
                    for i in actions:
                        tool_actions[i](tool)
                check("execute with a re-entrant on_update",
                      lambda: tool.execute({"command": "echo a; echo b"}, on_update=on_update), conch.ToolResult)

        shell_callbacks()
        pty_callbacks()
        tool_callbacks()
        other.close()
        conch.close_all_sessions()

    SHELL_SETTINGS = settings(SETTINGS, max_examples=12)

    def reentrant() -> None:
        """A run of a shell from inside that shell's own on_chunk: an error
        (or a result), never a hang."""
        with conch.Shell(snapshot=None) as sh:
            def on_chunk(_text: str) -> None:
                sh.run("echo inner", timeout=5)

            # Output in many chunks: the outer run still runs (and waits for
            # room in the chunk queue) when the callback calls in.
            outer = "for i in $(seq 1 40); do echo $i; sleep 0.01; done"
            outcome = check("re-entrant run", lambda: sh.run(outer, on_chunk=on_chunk, timeout=5))
            assert isinstance(outcome, conch.InvalidArgumentError), outcome
            assert str(outcome).startswith(
                "a run was started from inside a callback of a run on the same shell:"), outcome
            # The error was the callback's: the session is unharmed.
            assert sh.run("echo after").output == "after\n"

            # Caught inside the callback, the outer run goes on to its end.
            nested: list[BaseException] = []

            def catching(_text: str) -> None:
                try:
                    sh.run("echo inner")
                except conch.InvalidArgumentError as e:
                    nested.append(e)

            r = sh.run("echo one; echo two", on_chunk=catching)
            assert r.output == "one\ntwo\n" and nested, (r, nested)

            # Closing the shell from its own callback cancels the run at once.
            def closing(text: str) -> None:
                if "started" in text:
                    sh.close()

            r = sh.run("echo started; /bin/sleep 30; echo never", on_chunk=closing)
            assert r.cancelled and "never" not in r.output, r

        # The same for a cached session and for the bash tool.
        key = f"reentrant-{os.getpid()}"
        errors: list[BaseException] = []

        def nested_bash(_text: str) -> None:
            try:
                conch.execute_bash("echo inner", session_key=key)
            except conch.InvalidArgumentError as e:
                errors.append(e)

        r = conch.execute_bash("echo one; echo two", session_key=key, on_chunk=nested_bash)
        assert r.output == "one\ntwo\n" and errors, (r, errors)
        conch.close_session(key)

        with conch.BashTool(cwd=".", session_key=key) as tool:
            failures: list[BaseException] = []

            def nested_tool(_update: object) -> None:
                try:
                    tool.execute({"command": "echo inner"})
                except conch.ToolError as e:
                    failures.append(e)

            res = tool.execute({"command": "echo one; /bin/sleep 0.2; echo two"}, on_update=nested_tool)
            assert res.text == "one\ntwo" and failures, (res, failures)
            assert str(failures[0]).startswith(
                "a call was made from inside a callback of a run on the same tool:")

    group = sys.argv[1]
    if group == "reentrant":
        faulthandler.dump_traceback_later(20, exit=True)
        reentrant()
    else:
        globals()[f"group_{group}"]()
    for name, (results, errors) in TALLY.items():
        print(f"{name}: {results} results, {errors} exceptions")
    print(f"{group}: ok", flush=True)
