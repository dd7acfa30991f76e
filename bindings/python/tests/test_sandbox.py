"""The ``sandbox=`` option of the Python face. Replays
tests/vectors/sandbox_options.json (also replayed by the C and Node
suites): a policy is read into the core's, every value checked by the
core's parser under its Python name (``sandbox.limits.cpu_seconds``), so
the texts are the other faces' with their own names. Then what only Python
has (its types), and the sandbox at work on a real session: writes outside
the allowed paths and network connections are refused."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from pathlib import Path

import pytest

import conch
from conftest import VECTORS, pids_with, unique_sleep, wait_until


def load() -> list[dict]:
    path = VECTORS / "sandbox_options.json"
    assert path.is_file(), f"{path} is missing"
    loaded = json.loads(path.read_text())
    assert loaded, f"{path} has no cases"
    return loaded


def option_name(path: list) -> str:
    """The Python name of an option of the vectors: ``["limits",
    "cpu_seconds"]`` is ``sandbox.limits.cpu_seconds``, an index
    ``[i]``."""
    name = "sandbox"
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else f".{part}"
    return name


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in load()])
def test_shared_vectors(case, tmp_path):
    if "error" in case:
        expected = f"{option_name(case['error']['option'])} {case['error']['message']}"
        with pytest.raises(conch.InvalidArgumentError) as raised:
            conch.Shell(cwd=tmp_path, snapshot=None, sandbox=case["sandbox"])
        assert str(raised.value) == expected
        return
    assert case["expect"] == "ok"
    # The policy was read; whether this kernel can enforce it is another
    # matter (SandboxUnavailableError, also a sign the value was accepted).
    try:
        sh = conch.Shell(cwd=tmp_path, snapshot=None, sandbox=case["sandbox"])
    except conch.SandboxUnavailableError:
        return
    with sh:
        assert sh.run("echo ok").output == "ok\n"


@pytest.mark.parametrize(
    ("sandbox", "error", "message"),
    [
        ("strict", TypeError, 'sandbox: invalid type: string "strict", expected a sandbox policy (an object), true, false or null'),
        ({"writable": "/tmp"}, TypeError, 'sandbox.writable: invalid type: string "/tmp", expected a sequence'),
        ({"readable": [1]}, TypeError, "sandbox.readable: invalid type: integer `1`, expected path string"),
        ({"network": False}, TypeError, 'sandbox.network: invalid type: boolean `false`, expected "allow", "deny" or a domain policy (an object of allow, deny and resolve)'),
        ({"network": {"allow": ["a.test"], "proxy": True}}, conch.InvalidArgumentError, "sandbox.network.proxy is not an option"),
        ({"limits": {"cpu_seconds": 1.5}}, conch.InvalidArgumentError, "sandbox.limits.cpu_seconds must be a whole number >= 1, got 1.5"),
        ({"limits": {"open_files": True}}, TypeError, "sandbox.limits.open_files: invalid type: boolean `true`, expected a number"),
        ({"allow_tcp_ports": 80}, TypeError, "sandbox.allow_tcp_ports: invalid type: integer `80`, expected a sequence"),
        ({"allow_tcp_ports": [2**70]}, conch.InvalidArgumentError, "sandbox.allow_tcp_ports[0] must be a TCP port, 1 to 65535, got 1.1805916207174113e21"),
        ({"best_effort": 1}, TypeError, "sandbox.best_effort: invalid type: integer `1`, expected a boolean"),
        ({1: 2}, TypeError, "sandbox: invalid type: dict with a key of type int, expected a sandbox policy (an object), true, false or null"),
        ({"allowTcpPorts": [80]}, conch.InvalidArgumentError, "sandbox.allowTcpPorts is not an option"),
    ],
)
def test_python_types(sandbox, error, message, tmp_path):
    with pytest.raises(error) as raised:
        conch.Shell(cwd=tmp_path, snapshot=None, sandbox=sandbox)
    assert str(raised.value) == message


def test_none_values_are_the_defaults_and_paths_may_be_pathlike(tmp_path):
    policy = {"writable": [tmp_path], "readable": None, "network": None, "limits": None,
              "allow_tcp_ports": (), "best_effort": True}
    try:
        sh = conch.Shell(cwd=tmp_path, snapshot=None, sandbox=policy)
    except conch.SandboxUnavailableError:
        return
    sh.close()


def sandboxed(cwd: Path, **policy) -> conch.Shell:
    return conch.Shell(cwd=cwd, snapshot=None, sandbox=policy)


def test_writes_outside_the_allowed_paths_are_refused(tmp_path):
    work, outside, extra = (tmp_path / n for n in ("work", "outside", "extra"))
    for d in (work, outside, extra):
        d.mkdir()
    with sandboxed(work, writable=[str(extra)]) as sh:
        inside = sh.run("echo in > inside.txt && cat inside.txt")
        assert (inside.exit_code, inside.output) == (0, "in\n")
        assert sh.run(f"echo x > {extra}/f && echo $TMPDIR && touch $TMPDIR/t").exit_code == 0
        refused = sh.run(f"echo out > {outside}/f")
        assert refused.exit_code != 0
        assert "Read-only file system" in refused.output
        # A child process is bound as bash is.
        assert sh.run(f"python3 -c 'open(\"{outside}/g\", \"w\")'").exit_code != 0
    assert not (outside / "f").exists() and not (outside / "g").exists()
    assert (extra / "f").read_text() == "x\n"


class Server:
    """A TCP server on 127.0.0.1 that accepts connections as long as it runs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def connect(port: int) -> str:
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"


def test_network_deny_refuses_a_tcp_connect(tmp_path, server):
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        assert sh.run(connect(server.port)).output == "connected\n"  # the control
    with sandboxed(tmp_path) as sh:
        denied = sh.run(connect(server.port))
        assert denied.exit_code != 0 and "connected" not in denied.output
    with sandboxed(tmp_path, network="allow") as sh:
        assert sh.run(connect(server.port)).output == "connected\n"


def test_execute_shell_and_pty_take_the_same_sandbox(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    r = conch.execute_shell(f"echo in > one && echo out > {outside}/one", cwd=work, sandbox=True)
    assert r.exit_code != 0 and "Read-only file system" in r.output
    assert (work / "one").exists() and not (outside / "one").exists()
    with pytest.raises(conch.InvalidArgumentError, match=r"^sandbox.network must be"):
        conch.execute_shell("true", sandbox={"network": "none"})
    pty = conch.PtySession()
    r = pty.start(f"echo out > {outside}/pty", cwd=work, timeout=20, sandbox={})
    assert r.exit_code not in (0, None)
    assert not (outside / "pty").exists()
    with pytest.raises(conch.InvalidArgumentError, match=r"^sandbox.limits.cpu is not"):
        pty.start("true", sandbox={"limits": {"cpu": 1}})


def test_a_kernel_without_landlock_is_the_typed_error(tmp_path, monkeypatch):
    # The core's test hook caps the Landlock ABI it believes the kernel has.
    monkeypatch.setenv("CONCH_TEST_LANDLOCK_ABI", "0")
    with pytest.raises(conch.SandboxUnavailableError) as raised:
        conch.Shell(cwd=tmp_path, snapshot=None, sandbox={})
    assert str(raised.value).startswith("the sandbox cannot be enforced: ")
    assert isinstance(raised.value, conch.ConchError)
    with pytest.raises(conch.SandboxUnavailableError):
        conch.execute_shell("true", cwd=tmp_path, sandbox=True)
    with conch.Shell(cwd=tmp_path, snapshot=None, sandbox={"best_effort": True}) as sh:
        assert sh.run("echo ok").output == "ok\n"


def test_the_bash_tool_and_execute_bash_take_the_same_sandbox(tmp_path, monkeypatch):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    tool = conch.BashTool(work, snapshot=None, session_key=f"sandbox-{tmp_path.name}", sandbox={})
    try:
        assert "Commands run in a sandbox" in tool.definition()["description"]
        assert tool.execute({"command": "echo in > one && cat one"}).text == "in"
        with pytest.raises(conch.ToolError, match="Read-only file system"):
            tool.execute({"command": f"echo out > {outside}/one"})
        assert not (outside / "one").exists()
    finally:
        tool.close()
    with pytest.raises(conch.InvalidArgumentError, match=r"^sandbox.limits.cpu_seconds must be"):
        conch.BashTool(work, sandbox={"limits": {"cpu_seconds": 0}})
    r = conch.execute_bash(f"echo out > {outside}/two", cwd=work, session_key=f"sandbox-{tmp_path.name}",
                           snapshot=None, sandbox=True)
    assert r.exit_code != 0 and not (outside / "two").exists()
    conch.close_session(f"sandbox-{tmp_path.name}")
    monkeypatch.setenv("CONCH_TEST_LANDLOCK_ABI", "0")
    with pytest.raises(conch.SandboxUnavailableError):
        conch.BashTool(work, sandbox=True)


def test_sandbox_applied_names_what_is_in_force(tmp_path, monkeypatch):
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        assert sh.sandbox_applied is None
    try:
        sh = conch.Shell(cwd=tmp_path, snapshot=None, sandbox={})
    except conch.SandboxUnavailableError:
        return  # the strict default needs Landlock and seccomp
    with sh:
        applied = sh.sandbox_applied
        assert isinstance(applied, conch.SandboxApplied)
        assert applied.landlock_abi >= 1
        assert applied.filesystem and applied.network
        # None of these was asked.
        assert not applied.limits and not applied.tcp_ports
        assert not applied.processes and not applied.session_memory
        assert applied.not_applied == []
        assert repr(applied).startswith("SandboxApplied(landlock_abi=")
    assert sh.sandbox_applied == applied  # still answers once closed
    # The core's test hook caps the Landlock ABI it believes the kernel has.
    monkeypatch.setenv("CONCH_TEST_LANDLOCK_ABI", "0")
    with conch.Shell(cwd=tmp_path, snapshot=None, sandbox={"best_effort": True}) as sh:
        applied = sh.sandbox_applied
        assert applied.landlock_abi == 0
        assert not applied.filesystem
        assert applied.not_applied
        assert any("Landlock" in why for why in applied.not_applied)


def test_a_run_stuck_at_the_process_limit_is_stopped_early(tmp_path):
    # bash retries a refused fork and waits for what it started: the run is
    # stopped once the session stays at its limit, not at its timeout.
    sh = conch.Shell(cwd=tmp_path, snapshot=None, sandbox={"limits": {"processes": 20}})
    try:
        sh.run("X=kept")
        start = time.monotonic()
        nap = unique_sleep(3077)
        r = sh.run(f"for i in $(seq 30); do /bin/sleep {nap} & done; wait", timeout=60)
        assert time.monotonic() - start < 10
        assert r.cancelled and not r.timed_out and r.exit_code is None
        assert r.output.startswith(
            "[Command stopped: the session's process limit (20) was reached"
        ), r.output
        assert wait_until(lambda: pids_with(nap) == [])
        # The state is kept. Under the eval loop bash may first tell of a
        # killed background sleep, as it does of any job a signal killed
        # (docs/behaviour.md, section 16); nothing else comes before.
        *told, kept = sh.run("echo $X").output.splitlines()
        assert kept == "kept", told
        killed = re.compile(rf"bash: line \d+: +\d+ Killed +/bin/sleep {re.escape(nap)}")
        assert all(killed.fullmatch(line) for line in told), told
    finally:
        sh.close()
