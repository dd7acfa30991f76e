"""``conch.connect``: a real ``conch serve`` (the release binary), over stdio
(a subprocess of the client) and over a WebSocket on 127.0.0.1, through the
same calls, results and errors as a local ``Shell``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import conch
from conftest import CONCH, GUARD, Output, in_background, pids_with, unique_sleep, wait_until
from test_job_tool import cases as job_tool_cases
from test_job_tool import replay_job_tool
from test_tool_definition import CASES as DEFINITION_CASES
from test_tool_definition import tool_options
from test_vectors import (
    SINK_CASES,
    TOOL_CASES,
    cases,
    replay_artifact,
    replay_keys,
    replay_sink,
    replay_tool,
    write_artifacts,
)


class Listening:
    """``conch serve --listen 127.0.0.1:0`` with a token."""

    def __init__(self, token: str, *args: str) -> None:
        env = {**os.environ, "CONCH_TOKEN": token}
        self.proc = subprocess.Popen(
            [CONCH, "serve", "--listen", "127.0.0.1:0", *args],
            env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        line = self.proc.stderr.readline()
        assert line.startswith("conch serve: listening on "), line
        self.url = "ws://" + line.split()[-1]

    def close(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(GUARD) == 0


def test_a_remote_session_runs_as_a_local_one(remote, tmp_path):
    with remote.shell(cwd=tmp_path, snapshot=None) as sh:
        chunks = []
        r = sh.run("echo one; echo two >&2; (exit 3)", on_chunk=chunks.append)
        assert isinstance(r, conch.BashResult)
        assert (r.output, r.exit_code, "".join(chunks)) == ("one\ntwo\n", 3, "one\ntwo\n")
        sh.run("cd sub 2>/dev/null || mkdir sub && cd sub; export KEPT=1")
        r = sh.run("echo $KEPT; pwd")
        assert r.output == f"1\n{tmp_path}/sub\n"
        assert r.working_dir == f"{tmp_path}/sub"
        assert sh.sandbox_applied is None
        nap = unique_sleep(3076)
        sh.run(f"/bin/sleep {nap} & echo started")
        [pid] = sh.background_jobs()
        # The job's process execs the sleep a moment after bash forks it.
        assert wait_until(lambda: pids_with(nap) == [pid])
        sh.reset()  # on the server: a fresh bash in the start directory
        assert wait_until(lambda: pids_with(nap) == [])
        r = sh.run("echo ${KEPT:-unset}; pwd")
        assert (r.output, r.session_reset) == (f"unset\n{tmp_path}\n", False)
        sh.run(f"/bin/sleep {nap} & echo started")
    assert wait_until(lambda: pids_with(nap) == [])


def test_errors_are_the_local_ones(remote, tmp_path):
    with pytest.raises(conch.InvalidArgumentError, match="^max_bytes must be"):
        remote.shell(max_bytes=0)
    with pytest.raises(TypeError):
        remote.shell(max_bytes="many")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        remote.shell(nope=1)
    sh = remote.shell(cwd=tmp_path, snapshot=None)
    with pytest.raises(conch.InvalidArgumentError, match="no/such/dir"):
        sh.run("true", cwd="/no/such/dir")
    with pytest.raises(conch.InvalidArgumentError):
        sh.run("true", timeout=-1)
    sh.close()
    sh.close()  # idempotent
    with pytest.raises(conch.ClosedError):
        sh.run("true")


def test_a_cancel_token_aborts_the_remote_command(remote, tmp_path, marker):
    sh = remote.shell(cwd=tmp_path, snapshot=None)
    token = conch.CancelToken()

    def cancel_when_running():
        assert wait_until(lambda: pids_with(marker))
        token.cancel()

    threading.Thread(target=cancel_when_running).start()
    started = time.monotonic()
    r = sh.run(f"exec -a {marker} /bin/sleep 60", cancel=token)
    assert r.cancelled and r.output.startswith("[Command cancelled]")
    assert time.monotonic() - started < GUARD
    assert wait_until(lambda: not pids_with(marker))
    assert sh.run("echo on").output == "on\n"
    sh.close()


def test_cancelling_run_async_aborts_the_remote_command(remote, tmp_path, marker):
    sh = remote.shell(cwd=tmp_path, snapshot=None)

    async def main():
        task = asyncio.ensure_future(sh.run_async(f"exec -a {marker} /bin/sleep 60"))
        while not pids_with(marker):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), GUARD))
    assert wait_until(lambda: not pids_with(marker))
    sh.close()


def test_a_websocket_server_asks_for_its_token(tmp_path):
    server = Listening("s3cret")
    try:
        with pytest.raises(conch.AuthError):
            conch.connect(server.url)
        with pytest.raises(conch.AuthError):
            conch.connect(server.url, token="wrong")
        with conch.connect(server.url, token="s3cret") as r:
            with r.shell(cwd=tmp_path, snapshot=None) as sh:
                assert sh.run("echo over ws").output == "over ws\n"
    finally:
        server.close()


@pytest.mark.parametrize("transport, seconds", [("stdio", "3079.25"), ("websocket", "3079.75")])
def test_a_client_killed_mid_command_leaves_nothing_running(transport, seconds):
    """The client process dies by SIGKILL while its command runs: nothing it
    started outlives the grace period (stdio: at once, its server ends with
    its stdin), and a WebSocket server goes on serving others."""
    server = Listening("k1ll", "--grace", "1") if transport == "websocket" else None
    target = repr(server.url) if server else repr([CONCH, "serve", "--stdio"])
    client = subprocess.Popen(
        [sys.executable, "-c",
         "import conch\n"
         f"r = conch.connect({target}, token='k1ll')\n"
         f"r.shell(snapshot=None).run('/bin/sleep {seconds}')\n"],
        stdin=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: pids_with(seconds)), "the command runs"
        client.kill()
        client.wait(GUARD)
        assert wait_until(lambda: not pids_with(seconds)), "gone after the grace period"
        if server:
            with conch.connect(server.url, token="k1ll") as r, r.shell(snapshot=None) as sh:
                assert sh.run("echo still serving").output == "still serving\n"
    finally:
        client.kill()
        if server:
            server.close()


def test_an_unreachable_server_is_a_lost_connection():
    with pytest.raises(conch.ConnectionLost, match="cannot connect"):
        conch.connect("ws://127.0.0.1:9", reconnect_within=0)
    with pytest.raises(conch.ConnectionLost, match="cannot start"):
        conch.connect(["/no/such/conch", "serve", "--stdio"])
    with pytest.raises(TypeError):
        conch.connect(7)


@pytest.mark.parametrize("case", SINK_CASES)
def test_sink_vectors_agree_through_a_remote_session(case, remote, tmp_path, marker):
    def run(command, *, cwd, max_bytes, artifacts_dir, **run_options):
        with remote.shell(cwd=cwd, max_bytes=max_bytes, artifacts_dir=artifacts_dir,
                          snapshot=None) as sh:
            return sh.run(command, **run_options)

    replay_sink(case, tmp_path, marker, run)


TLS = Path(__file__).resolve().parents[3] / "tests" / "tls"


def test_a_tls_server_is_reached_with_its_ca(tmp_path):
    server = Listening("t1s", "--tls-cert", str(TLS / "server.pem"), "--tls-key", str(TLS / "server.key"))
    try:
        url = server.url.replace("ws://", "wss://")
        with conch.connect(url, token="t1s", ca=TLS / "ca.pem") as r:
            with r.shell(cwd=tmp_path, snapshot=None) as sh:
                assert sh.run("echo private").output == "private\n"
        with pytest.raises(conch.ConnectionLost, match="certificate"):
            conch.connect(url, token="t1s", ca=TLS / "server.pem")
    finally:
        server.close()


def test_jobs_of_a_remote_session_are_the_local_calls(remote, tmp_path, marker):
    with remote.shell(cwd=tmp_path, snapshot=None) as sh:
        job = sh.start("for i in 1 2 3; do echo $i; done")
        assert sh.wait_any([job], timeout=GUARD) == job
        poll = sh.poll(job)
        assert isinstance(poll, conch.JobPoll)
        assert (poll.output, poll.status, poll.exit_code) == ("1\n2\n3\n", "exited", 0)
        [info] = sh.jobs()
        assert isinstance(info, conch.JobInfo) and info.job == job
        reader = sh.start("read line; echo got $line", stdin=True)
        sh.write(reader, "hi\n")
        assert sh.poll(reader, wait=GUARD, until="got").output == "got hi\n"
        sleeper = sh.start(f"exec -a {marker} /bin/sleep 60")
        assert wait_until(lambda: pids_with(marker))
        assert sh.kill(sleeper).status == "killed"
        assert wait_until(lambda: not pids_with(marker))
        with pytest.raises(conch.NotFoundError, match="no job 99 in this session"):
            sh.poll(99)
        with pytest.raises(conch.InvalidArgumentError, match="^signal must be"):
            sh.signal(job, "NOPE")
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            sh.start("true", nope=1)
        token = conch.CancelToken()
        threading.Timer(0.2, token.cancel).start()
        waiter = sh.start(f"exec -a {marker} /bin/sleep 60")
        started = time.monotonic()
        assert sh.poll(waiter, wait=60, cancel=token).status == "running"
        assert time.monotonic() - started < GUARD

        async def kill_it():
            return await sh.kill_async(waiter)

        assert asyncio.run(kill_it()).status == "killed"
    assert sh.jobs() == []


def test_on_job_exit_hears_each_remote_job_end(remote, tmp_path):
    ended = []
    with remote.shell(cwd=tmp_path, snapshot=None, on_job_exit=ended.append) as sh:
        job = sh.start("exit 4")
        assert wait_until(lambda: ended)
        [info] = ended
        assert isinstance(info, conch.JobInfo)
        assert (info.job, info.status, info.exit_code) == (job, "exited", 4)
    with pytest.raises(TypeError):
        remote.shell(on_job_exit=7)


def test_remote_files_round_trip_by_range(remote, tmp_path):
    files = remote.files
    assert isinstance(files, conch.RemoteFiles)
    target = tmp_path / "a" / "b.txt"
    files.write(target, "hello, remote", mode=0o600)
    assert target.read_bytes() == b"hello, remote"
    assert target.stat().st_mode & 0o7777 == 0o600
    assert files.read(str(target)) == b"hello, remote"
    assert files.read(target, offset=7, limit=3) == b"rem"
    files.write(target, bytes(range(256)))
    assert files.read(target) == bytes(range(256))
    stat = files.stat(target)
    assert (stat["name"], stat["type"], stat["size"], stat["mode"]) == ("b.txt", "file", 256, 0o600)
    assert abs(stat["mtime"] - target.stat().st_mtime) < 0.001
    (tmp_path / "a" / "link").symlink_to(target)
    entries = files.list(tmp_path / "a")
    assert [(e["name"], e["type"]) for e in entries] == [("b.txt", "file"), ("link", "symlink")]
    assert entries[1]["target"] == str(target)
    with pytest.raises(conch.IoError):
        files.remove(tmp_path / "a")
    files.remove(tmp_path / "a", recursive=True)
    assert not (tmp_path / "a").exists()


def test_remote_files_errors_are_the_local_classes(remote, tmp_path):
    files = remote.files
    with pytest.raises(conch.NotFoundError, match="no such file"):
        files.read(tmp_path / "missing")
    with pytest.raises(conch.NotFoundError):
        files.stat(tmp_path / "missing")
    with pytest.raises(conch.IoError) as raised:
        files.read(tmp_path)
    assert raised.value.errno == 21  # EISDIR
    with pytest.raises(conch.InvalidArgumentError, match="^offset must be"):
        files.read(tmp_path / "x", offset=-1)
    with pytest.raises(conch.InvalidArgumentError, match="^limit must be at most"):
        files.read(tmp_path / "x", limit=1 << 30)
    with pytest.raises(TypeError):
        files.write(tmp_path / "x", 7)


def test_remote_files_of_a_session_are_confined_by_its_sandbox(remote, tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    with remote.shell(cwd=inside, snapshot=None, sandbox={"writable": []}) as sh:
        sh.files.write("mine.txt", b"in")
        assert (inside / "mine.txt").read_bytes() == b"in"
        assert sh.run("cat mine.txt").output == "in"
        with pytest.raises(conch.IoError) as raised:
            sh.files.write(outside / "x", b"x")
        assert raised.value.errno in (1, 13, 30)  # EPERM, EACCES, EROFS
        assert not (outside / "x").exists()
    with pytest.raises(conch.ClosedError):
        sh.files


def test_remote_files_async_twins(remote, tmp_path):
    async def main():
        files = remote.files
        await files.write_async(tmp_path / "f", b"async")
        assert await files.read_async(tmp_path / "f", offset=1) == b"sync"
        assert (await files.stat_async(tmp_path / "f"))["size"] == 5
        await files.remove_async(tmp_path / "f")
        assert await files.list_async(tmp_path) == []

    asyncio.run(main())


def test_a_remote_pty_has_the_calls_of_a_local_one(remote, marker):
    with remote.pty() as pty:
        assert isinstance(pty, conch.RemotePty)
        out = Output()

        def answer() -> None:
            out.wait_for("name? ")
            assert pty.is_running() and pty.cursor_position() == (0, 6)
            pty.write("héllo\r".encode())

        with in_background(answer):
            r = pty.start("printf 'name? '; read -r line; echo \"got [$line]\"",
                          on_chunk=out, cols=40)
        assert isinstance(r, conch.PtyResult)
        assert (r.exit_code, r.cancelled) == (0, False)
        assert "got [héllo]" in r.output and "got [héllo]" in pty.screen_text()

        def interrupt() -> None:
            assert wait_until(lambda: pids_with(marker))
            pty.write_key("ctrl+c")

        with in_background(interrupt):
            r = pty.start(f"exec -a {marker} /bin/sleep 60")
        assert (r.exit_code, r.cancelled) == (130, False)

        out = Output()

        def resize() -> None:
            out.wait_for("go")
            pty.resize(100, 30)
            pty.write("\r")

        with in_background(resize):
            r = pty.start("echo go; read -r x; stty size", on_chunk=out)
        assert "30 100" in r.output
        assert (pty.is_running(), pty.size()) == (False, (100, 30))

        def kill() -> None:
            assert wait_until(lambda: pids_with(marker))
            pty.kill()

        with in_background(kill):
            r = pty.start(f"exec -a {marker} /bin/sleep 60")
        assert (r.exit_code, r.cancelled) == (None, True)
        assert wait_until(lambda: not pids_with(marker))

        token = conch.CancelToken()
        threading.Timer(0.2, token.cancel).start()
        r = pty.start(f"exec -a {marker} /bin/sleep 60", cancel=token)
        assert r.cancelled and r.output.startswith("[Command cancelled]")

        async def started():
            return await pty.start_async("echo async")

        assert asyncio.run(started()).output == "async\n"
        with pytest.raises(conch.InvalidArgumentError, match="must be UTF-8 text"):
            pty.write(b"\xff")
        with pytest.raises(conch.InvalidArgumentError, match="^PTY session is not running$"):
            pty.write_key("enter")
        with pytest.raises(TypeError, match="^cols"):
            pty.start("true", cols="wide")
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            pty.start("true", nope=1)
        pty.close()
        with pytest.raises(conch.ClosedError):
            pty.screen_text()


def test_closing_a_remote_pty_kills_its_command(remote, marker):
    pty = remote.pty()

    def close() -> None:
        assert wait_until(lambda: pids_with(marker))
        pty.close()

    with in_background(close):
        try:
            r = pty.start(f"exec -a {marker} /bin/sleep 60")
            assert r.cancelled
        except conch.SessionLost:
            pass
    assert wait_until(lambda: not pids_with(marker))


@pytest.mark.parametrize("app_cursor", [False, True], ids=["normal-cursor", "app-cursor"])
def test_key_vectors_agree_through_a_remote_pty(app_cursor, remote):
    replay_keys(app_cursor, remote.pty())


def test_a_spilled_output_is_read_by_range_on_the_server(remote, tmp_path):
    with remote.shell(cwd=tmp_path, snapshot=None, max_bytes=100,
                      artifacts_dir=tmp_path / "a") as sh:
        r = sh.run("seq 1 5000")
        store = sh.artifacts
        assert isinstance(store, conch.RemoteArtifactStore)
        assert store.read(r.artifact_id, 10, 3) == "11\n12\n13\n"
        assert store.read(f"artifact://{r.artifact_id}", offset=4998) == "4999\n5000\n"
        assert store.resolve(f"artifact://{r.artifact_id}") == "".join(
            f"{n}\n" for n in range(1, 5001))
        with pytest.raises(conch.NotFoundError, match="^Artifact 999 not found"):
            store.read("999")
        with pytest.raises(conch.InvalidArgumentError, match="^offset must be"):
            store.read(r.artifact_id, -1)
    with pytest.raises(conch.SessionLost):
        store.read(r.artifact_id)
    with pytest.raises(conch.ClosedError):
        sh.artifacts  # noqa: B018 (the property raises)


def test_a_remote_tools_spilled_output_is_read_on_the_server(remote, tmp_path):
    with remote.tool(cwd=tmp_path, artifacts_dir=tmp_path / "a", snapshot=None) as tool:
        with pytest.raises(conch.ToolError) as info:
            tool.execute({"command": "seq 1 100000; (exit 1)"})
        t = info.value.details["meta"]["truncation"]
        store = tool.artifacts
        assert isinstance(store, conch.RemoteArtifactStore)
        assert store.read(t["artifact_id"], 99997) == "99998\n99999\n100000\n"
        assert store.resolve(f"artifact://{t['artifact_id']}") == "".join(
            f"{i}\n" for i in range(1, 100001))
        with pytest.raises(conch.NotFoundError, match="^Artifact 999999 not found"):
            store.read("999999")


@pytest.mark.parametrize("case", cases("artifact", keep=lambda c: c["op"] != "allocate"))
def test_artifact_vectors_agree_through_a_remote_session(case, remote, tmp_path):
    # No remote allocate: a remote store only reads what its session spilled.
    root = tmp_path / "artifacts"
    write_artifacts(case, root)
    with remote.shell(cwd=tmp_path, snapshot=None, artifacts_dir=root) as sh:
        if case["files"] is None:
            root.rmdir()  # the session made it, empty
        replay_artifact(case, root, sh.artifacts)


@pytest.mark.parametrize("case", TOOL_CASES)
def test_tool_vectors_agree_through_a_remote_tool(case, remote, tmp_path):
    replay_tool(case, tmp_path, lambda cwd, **options: remote.tool(cwd=cwd, **options))


@pytest.mark.parametrize("case", job_tool_cases())
def test_job_tool_vectors_agree_through_a_remote_tool(case, remote, tmp_path):
    replay_job_tool(case, tmp_path, lambda cwd, **options: remote.tool(cwd=cwd, **options),
                    lambda bash: bash.job_tool())


@pytest.mark.parametrize("case", DEFINITION_CASES, ids=lambda c: c["name"])
def test_tool_definition_vectors_agree_through_a_remote_tool(case, remote):
    with remote.tool(cwd=".", **tool_options(case["config"])) as bash:
        got = {"bash": bash.definition(), "job": bash.job_tool().definition()}
    assert got == case["expect"]


def test_remote_tool_rules_are_read_as_the_local_tool_reads_them(remote, tmp_path):
    # Any object with the fields by key is a rule, as for a local tool; a
    # bad one raises the local error before anything is sent.
    class Rule:
        def __init__(self, **fields):
            self.fields = fields

        def __getitem__(self, key):
            return self.fields[key]

    rule = Rule(pattern="^cat\\b", tool="read", message="Use read.")
    options = {"cwd": tmp_path, "snapshot": None, "interceptor": True,
               "tool_names": ("read",), "rules": (rule,)}
    for make in (conch.BashTool, remote.tool):
        with make(**options) as tool:
            with pytest.raises(conch.BlockedError) as blocked:
                tool.execute({"command": "cat notes.txt"})
            assert blocked.value.suggested_tool == "read"
            assert str(blocked.value).startswith("Blocked: Use read.")
    bad = {**options, "rules": [{"pattern": "^cat", "message": "no tool"}]}
    errors = []
    for make in (conch.BashTool, remote.tool):
        with pytest.raises(conch.InvalidArgumentError) as refused:
            make(**bad)
        errors.append(str(refused.value))
    assert errors[0] == errors[1]


def test_a_remote_tool_has_the_local_calls_and_errors(remote, tmp_path, marker):
    options = {"cwd": tmp_path, "snapshot": None, "update_interval": 0}
    with remote.tool(**options) as tool:
        updates = []
        r = tool.execute({"command": "echo one; /bin/sleep 0.2; echo two"},
                         on_update=updates.append)
        assert isinstance(r, conch.ToolResult)
        assert (r.text, r.details) == ("one\ntwo", None)
        assert updates and all("one\ntwo\n".startswith(u) for u in updates)
        local = conch.BashTool(tmp_path, snapshot=None)
        assert tool.definition() == local.definition()
        assert tool.job_tool().definition() == conch.JobTool(local).definition()
        local.close()
        with pytest.raises(conch.ToolError) as failed:
            tool.execute({"command": "echo partial; (exit 3)"})
        assert str(failed.value) == "partial\n\nCommand exited with code 3"
        assert failed.value.details is None
        with pytest.raises(conch.InvalidArgumentError):
            tool.execute({"cwd": "."})
        token = conch.CancelToken()
        threading.Thread(target=lambda: (wait_until(lambda: pids_with(marker)),
                                          token.cancel())).start()
        with pytest.raises(conch.ToolAbortError):
            tool.execute({"command": f"exec -a {marker} /bin/sleep 60"}, cancel=token)
        assert wait_until(lambda: not pids_with(marker))
        started = tool.execute({"command": "echo ready; read line; echo got $line",
                                "async": True})
        assert started.text.startswith("Started job 1: ")
        jobs = tool.job_tool()
        r = jobs.execute({"op": "write", "job": 1, "input": "x\n", "wait": 30})
        assert "ready\ngot x" in r.text
        r = asyncio.run(tool.execute_async({"command": "echo async"}))
        assert r.text == "async"
    with pytest.raises(conch.ClosedError):
        tool.execute({"command": "true"})
    with pytest.raises(conch.ClosedError):
        jobs.execute({"op": "list"})
    with remote.tool(interceptor=True, tool_names=["read"], snapshot=None) as tool:
        with pytest.raises(conch.BlockedError) as blocked:
            tool.execute({"command": "cat notes.txt"})
        assert blocked.value.suggested_tool == "read"
