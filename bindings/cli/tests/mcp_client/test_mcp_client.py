"""`conch mcp` driven by the official MCP Python SDK as its client (a client
nobody here wrote): the handshake, tools/list (the core's definitions, as
the shared vectors state them), tools/call (success, failure texts, bad
arguments, timeout, progress, cancellation that kills the command, the job
tool), the interceptor option, artifact:// resources, and nothing left
running when the client goes away.

Run by scripts/test-mcp.sh, which builds `conch` and names it in CONCH_BIN.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[4]
CONCH = os.environ.get("CONCH_BIN", str(REPO / "target" / "debug" / "conch"))
VECTORS = REPO / "tests" / "vectors"
# Hang-catchers only: nothing here waits for a time to pass.
GUARD = 60

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "work").mkdir()
    return tmp_path


@asynccontextmanager
async def client(project: Path, *extra: str):
    params = StdioServerParameters(
        command=CONCH,
        args=["mcp", "--cwd", str(project / "work"), "--artifacts", str(project / "artifacts"),
              *extra],
    )
    with anyio.fail_after(GUARD):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def text_of(result) -> str:
    assert len(result.content) == 1, result.content
    return result.content[0].text


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        # Gone before the open, or between the open and the read.
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for(condition, what: str):
    with anyio.fail_after(GUARD):
        while not condition():
            await anyio.sleep(0.05)


def system_sentence() -> str:
    """What tool_definition.json's ``{system}`` stands for, read here as a
    user would: ``bash`` on ``PATH`` and ``uname``."""
    version = subprocess.run(
        ["bash", "-c", 'printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}"'],
        capture_output=True, text=True, check=True).stdout
    uname = os.uname()
    system = "macOS" if uname.sysname == "Darwin" else uname.sysname
    return f"The shell is bash {version} on {system} {uname.release} ({uname.machine})."


def test_initialize_and_list_the_core_definitions(project):
    text = (VECTORS / "tool_definition.json").read_text()
    text = text.replace("{system}", json.dumps(system_sentence())[1:-1])
    defaults = next(c for c in json.loads(text) if c["name"] == "defaults")["expect"]

    async def main():
        async with client(project) as session:
            info = session.initialize_result
            assert info.server_info.name == "conch"
            assert info.capabilities.tools is not None
            assert info.capabilities.resources is not None
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["bash", "job"]
            for name in ("bash", "job"):
                assert tools[name].description == defaults[name]["description"]
                assert tools[name].input_schema == defaults[name]["input_schema"]
            assert tools["bash"].annotations.destructive_hint is True

    anyio.run(main)


def test_calls_give_the_tools_texts(project):
    async def main():
        async with client(project) as session:
            ok = await session.call_tool("bash", {"command": "echo hello; pwd"})
            assert (ok.is_error, text_of(ok)) == (False, f"hello\n{project / 'work'}")
            failed = await session.call_tool("bash", {"command": "echo partial; (exit 3)"})
            assert (failed.is_error, text_of(failed)) == (True, "partial\n\nCommand exited with code 3")
            # A variable set by one call is there in the next: one session.
            await session.call_tool("bash", {"command": "export KEPT=yes"})
            kept = await session.call_tool("bash", {"command": "echo $KEPT", "head": 1})
            assert text_of(kept) == "yes"
            bad = await session.call_tool("bash", {"command": "ls", "head": -1})
            assert (bad.is_error, text_of(bad)) == (True, "head must be a whole number >= 0, got -1")
            missing = await session.call_tool("bash", {})
            assert text_of(missing) == "command is required: the bash command to run"
            cwd = await session.call_tool("bash", {"command": "true", "cwd": "nope"})
            assert (cwd.is_error, text_of(cwd)) == (
                True, f"Working directory does not exist: {project / 'work' / 'nope'}")
            with pytest.raises(MCPError):
                await session.call_tool("nosuchtool", {})

    anyio.run(main)


def test_the_engine_flag_chooses_the_loop_of_the_tools_session(project):
    # The eval loop's traps are the session's, which `trap -p` lists; the
    # loop builtin's commands see none of them.
    async def main(engine: str) -> str:
        async with client(project, "--engine", engine) as session:
            r = await session.call_tool("bash", {"command": "trap -p"})
            assert not r.is_error, text_of(r)
            return text_of(r)

    assert "__conch" not in anyio.run(main, "builtin")
    assert "__conch" in anyio.run(main, "eval")


def test_timeout_kills_and_says_so(project):
    async def main():
        async with client(project) as session:
            r = await session.call_tool("bash", {"command": "echo before; /bin/sleep 30", "timeout": 1})
            assert (r.is_error, text_of(r)) == (True, "[Command timed out after 1 seconds]\nbefore")

    anyio.run(main)


def test_progress_carries_the_output_so_far(project):
    marker = project / "go"
    messages: list[str] = []

    async def on_progress(progress, total, message):
        messages.append(message)
        # The command waits for the first update to arrive before it ends.
        marker.touch()

    async def main():
        async with client(project) as session:
            r = await session.call_tool(
                "bash",
                {"command": f"echo first; while [ ! -e {marker} ]; do /bin/sleep 0.05; done; echo last"},
                progress_callback=on_progress,
            )
            assert (r.is_error, text_of(r)) == (False, "first\nlast")

    anyio.run(main)
    assert messages and "first" in messages[0], messages


def test_cancel_stops_the_command_and_the_session_goes_on(project):
    pidfile = project / "pid"

    async def main():
        async with client(project) as session:
            async def call():
                with anyio.CancelScope() as scope:
                    calls.append(scope)
                    await session.call_tool(
                        "bash", {"command": f"bash -c 'echo $$ > {pidfile}; exec /bin/sleep 300'"})
                    done.append("returned")

            calls: list[anyio.CancelScope] = []
            done: list[str] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the pid")
                pid = int(pidfile.read_text())
                assert alive(pid)
                calls[0].cancel()
            assert done == []
            # notifications/cancelled reached the server: the command is killed.
            await wait_for(lambda: not alive(pid), "the command to die")
            after = await session.call_tool("bash", {"command": "echo after"})
            assert (after.is_error, text_of(after)) == (False, "after")

    anyio.run(main)


def test_artifacts_are_resources(project):
    async def main():
        async with client(project) as session:
            r = await session.call_tool("bash", {"command": "seq 1 100000"})
            text = text_of(r)
            assert r.is_error is False
            m = re.search(r"\[Showing lines \d+-100000 of 100000 \(50\.0KB limit\)\. Full: (artifact://(\d+))\]$",
                          text)
            assert m, text[-200:]
            uri = m.group(1)
            read = await session.read_resource(uri)
            assert read.contents[0].text == "".join(f"{i}\n" for i in range(1, 100001))
            listed = [str(r.uri) for r in (await session.list_resources()).resources]
            assert listed == [uri]
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["artifact://{id}{?offset,limit}"]
            with pytest.raises(MCPError):
                await session.read_resource("artifact://999999")
            part = await session.read_resource(f"{uri}?offset=99997&limit=2")
            assert part.contents[0].text == "99998\n99999\n"
            for bad in (f"{uri}?offset=-1", f"{uri}?lines=3", f"{uri}?offset=100000"):
                with pytest.raises(MCPError):
                    await session.read_resource(bad)

    anyio.run(main)


def test_a_large_artifact_is_read_a_bounded_page_at_a_time(project):
    # About 2 MB of lines: more than one read answers with (1 MB).
    async def main():
        async with client(project) as session:
            r = await session.call_tool("bash", {"command": "seq 1 300000"})
            uri = re.search(r"Full: (artifact://\d+)\]$", text_of(r)).group(1)
            pages, next_uri = [], uri
            while next_uri:
                text = (await session.read_resource(next_uri)).contents[0].text
                assert len(text.encode()) <= (1 << 20) + 200, len(text)
                # The page's own last line end, a blank line, the notice.
                m = re.search(r"(?<=\n)\n\[Showing lines (\d+)-(\d+) of 300000 \(1\.0MB limit\)\. "
                              r"Next: (artifact://\d+\?offset=(\d+))\]$", text)
                if m:
                    assert m.group(2) == m.group(4)
                    text, next_uri = text[: m.start()], m.group(3)
                else:
                    next_uri = None
                pages.append(text)
            assert len(pages) == 2
            assert "".join(pages) == "".join(f"{i}\n" for i in range(1, 300001))

    anyio.run(main)


def test_job_tool_and_nothing_outlives_the_server(project):
    pidfile = project / "job-pid"

    async def main():
        async with client(project) as session:
            started = await session.call_tool(
                "bash", {"command": f"echo $BASHPID > {pidfile}; echo ready; exec /bin/sleep 300",
                         "async": True})
            assert text_of(started).startswith("Started job 1: ")
            polled = await session.call_tool("job", {"op": "poll", "job": 1, "until": "ready", "wait": 30})
            assert polled.is_error is False
            assert "ready" in text_of(polled), text_of(polled)
            bad = await session.call_tool("job", {"op": "stop"})
            assert (bad.is_error, text_of(bad)) == (True, 'Unknown op "stop": use poll, write, kill or list')
            return int(pidfile.read_text())

    pid = anyio.run(main)
    # The client closed the server's stdin and waited for it to exit: the
    # job it left running was killed on the way out.
    deadline = time.monotonic() + GUARD
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_the_interceptor_option(project):
    (project / "work" / "notes.txt").write_text("hi\n")

    async def main():
        async with client(project, "--tools", "read") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "Use the `read` tool instead of cat/head/tail." in tools["bash"].description
            r = await session.call_tool("bash", {"command": "cat notes.txt"})
            assert r.is_error is True
            assert text_of(r).startswith("Blocked: Use the `read` tool instead of cat/head/tail.")

    anyio.run(main)


def test_a_stopped_server_exits_though_its_client_stopped_reading(project):
    """SIGTERM while the client reads nothing more (a 1 MB resource read
    fills the pipe to it): the server exits anyway, and kills what the tools
    started. Raw JSON-RPC lines, since an SDK client always reads."""
    import signal

    stamp = f"1000.{os.getpid()}7"
    server = subprocess.Popen(
        [CONCH, "mcp", "--cwd", str(project / "work"), "--artifacts", str(project / "artifacts")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(message):
        server.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        server.stdin.flush()

    def reply(id_):
        while True:
            line = json.loads(server.stdout.readline())
            if line.get("id") == id_:
                return line

    try:
        send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        reply(1)
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "seq 1 300000"}}})
        text = reply(2)["result"]["content"][0]["text"]
        uri = re.search(r"Full: (artifact://\d+)\]$", text).group(1)
        send({"id": 3, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": f"/bin/sleep {stamp}", "async": True}}})
        reply(3)
        send({"id": 4, "method": "resources/read", "params": {"uri": uri}})
        # Its 1 MB reply is never read.
        time.sleep(0.5)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=GUARD) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline and any(
            stamp in p.read_text(errors="replace")
            for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()):
        time.sleep(0.05)
    assert not any(stamp in p.read_text(errors="replace")
                   for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists())


class RawServer:
    """`conch mcp` driven with raw JSON-RPC lines: for what an SDK client
    never sends."""

    def __init__(self, *args: str):
        import subprocess
        self.process = subprocess.Popen([CONCH, "mcp", *args],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}))
        self.reply(0)
        self.send_line('{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send_line(self, line: str):
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def reply(self, id_):
        while True:
            line = json.loads(self.process.stdout.readline())
            if line.get("id") == id_:
                return line

    def call(self, id_, method, params):
        self.send_line(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))
        return self.reply(id_)

    def close(self):
        self.process.stdin.close()
        assert self.process.wait(timeout=GUARD) == 0


def test_a_request_that_does_not_parse_is_answered_with_its_id(project):
    server = RawServer("--cwd", str(project / "work"))
    try:
        server.send_line('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "x"}')
        error = server.reply(7)["error"]
        assert error["code"] == -32602, error
        assert error["message"].startswith("Invalid params of tools/call: "), error
        server.send_line('{"jsonrpc": "2.0", "id": "s", "params": {}}')
        assert server.reply("s")["error"]["code"] == -32600
        server.send_line("{not json")
        assert server.reply(None)["error"]["code"] == -32700
        # The server goes on.
        tools = server.call(8, "tools/list", {})["result"]["tools"]
        assert {t["name"] for t in tools} == {"bash", "job"}
    finally:
        server.close()


def test_two_servers_sharing_an_artifacts_directory_read_only_their_own(project):
    """The CLI's default artifacts directory is shared by every conch of
    the user: a server reads only the artifacts its own results named, and
    another scheme is no artifact."""
    shared = ("--cwd", str(project / "work"), "--artifacts", str(project / "artifacts"))
    one, two = RawServer(*shared), RawServer(*shared)
    try:
        ids = {}
        for server, word in ((one, "one"), (two, "two")):
            text = server.call(1, "tools/call", {"name": "bash", "arguments": {
                "command": f"for i in $(seq 1 20000); do echo {word} $i; done"}})["result"]["content"][0]["text"]
            ids[word] = re.search(r"Full: artifact://(\d+)\]$", text).group(1)
        assert ids["one"] != ids["two"]
        for server, word, other in ((one, "one", "two"), (two, "two", "one")):
            read = server.call(2, "resources/read", {"uri": f"artifact://{ids[word]}"})["result"]
            assert read["contents"][0]["text"].startswith(f"{word} 1\n"), read
            error = server.call(3, "resources/read", {"uri": f"artifact://{ids[other]}"})["error"]
            assert error["message"] == (f"artifact://{ids[other]} is not an artifact of this server "
                                        "(resources/list names them)"), error
        error = one.call(4, "resources/read", {"uri": "file:///etc/passwd"})["error"]
        assert error["message"] == "Not an artifact:// URL: file:///etc/passwd", error
    finally:
        one.close()
        two.close()
