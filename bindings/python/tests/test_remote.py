"""``conch.connect``: a real ``conch serve`` (the release binary), over stdio
(a subprocess of the client) and over a WebSocket on 127.0.0.1, through the
same calls, results and errors as a local ``Shell``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

import conch
from conftest import GUARD, pids_with, wait_until
from test_job_tool import cases as job_tool_cases
from test_job_tool import replay_job_tool
from test_tool_definition import CASES as DEFINITION_CASES
from test_tool_definition import tool_options
from test_vectors import SINK_CASES, TOOL_CASES, replay_sink, replay_tool

CONCH = os.environ.get("CONCH_BIN") or str(
    Path(__file__).resolve().parents[3] / "target" / "release" / "conch"
)


@pytest.fixture(scope="module")
def remote():
    """One stdio server for the module's tests."""
    with conch.connect([CONCH, "serve", "--stdio"]) as r:
        yield r


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
