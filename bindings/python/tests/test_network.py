"""Network by name from Python: a shell whose ``sandbox`` network is a
domain policy reaches the allowed names through its proxy (curl, and
Python's ``urllib`` in the session), and nothing else: each refused
connection is in ``BashResult.sandbox_violations`` and a ``[sandbox]
blocked`` line ends the output. ``set_network`` changes the domains between
runs; bad policies raise the core's errors. A remote shell (a real ``conch
serve --stdio``) does the same through the protocol. The servers are
tests/net/server.py's, on 127.0.0.2, named through the policy's
``resolve``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import conch
from conftest import CONCH, REPO

NAMES = ("registry.test", "unlisted.test", "denied.test", "a.pkg.test")
RESOLVE = {name: "127.0.0.2" for name in NAMES}


class Servers:
    """tests/net/server.py: HTTPS and HTTP on 127.0.0.2, a self-signed
    certificate for the test names."""

    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "net" / "server.py"), str(directory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        ports = {}
        for _ in range(2):
            kind, port = self.proc.stdout.readline().split()
            ports[kind] = int(port)
        self.https, self.http = ports["https"], ports["http"]
        self.cert = directory / "cert.pem"

    def curl(self, url: str) -> str:
        return f"curl -sS --max-time 10 --cacert {self.cert} {url}"

    def urllib(self, url: str) -> str:
        """Python's ``urllib`` in the session, trusting the test's CA."""
        code = (
            "import ssl, urllib.request as u; "
            f"print(u.urlopen('{url}', context=ssl.create_default_context(cafile='{self.cert}'))"
            ".read().decode().strip())"
        )
        return f'python3 -c "{code}"'

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[Servers]:
    s = Servers(tmp_path_factory.mktemp("net"))
    yield s
    s.close()


def policy(allow: list[str], deny: list[str] | None = None) -> dict:
    return {"allow": allow, "deny": deny or [], "resolve": RESOLVE}


def blocked(target: str) -> str:
    return f"[sandbox] blocked: {target} is not in the allowed domains\n"


def assert_ok(r: conch.BashResult, output: str | None = None) -> None:
    assert r.exit_code == 0, r.output
    assert r.sandbox_violations == [], r
    if output is not None:
        assert r.output == output


def assert_blocked(r: conch.BashResult, target: str) -> None:
    assert r.exit_code != 0, r.output
    assert r.sandbox_violations == [target], r
    assert r.output.endswith(blocked(target)), r.output


def by_name(open_shell, tmp_path: Path):
    """A session with a domain policy (registry.test allowed, denied.test
    denied), or a skip where the kernel cannot confine one (Landlock's TCP
    rules, ABI 4)."""
    try:
        return open_shell(cwd=tmp_path, snapshot=None,
                          sandbox={"network": policy(["registry.test"], ["denied.test"])})
    except conch.SandboxUnavailableError as err:
        pytest.skip(f"no domain policy on this kernel: {err}")


def check_policy(sh, servers: Servers) -> None:
    """What a session with ``by_name``'s policy reaches, refuses, and lets
    through once ``set_network`` allows it."""
    https, http = servers.https, servers.http
    assert_ok(sh.run(servers.curl(f"https://registry.test:{https}/")), "hello from registry.test\n")
    assert_ok(sh.run(servers.curl(f"http://registry.test:{http}/")), "hello from registry.test\n")
    assert_ok(sh.run(servers.urllib(f"https://registry.test:{https}/")), "hello from registry.test\n")

    unlisted = servers.curl(f"https://unlisted.test:{https}/")
    assert_blocked(sh.run(unlisted), f"unlisted.test:{https}")
    assert_blocked(sh.run(servers.curl(f"https://denied.test:{https}/")), f"denied.test:{https}")
    r = sh.run(servers.urllib(f"https://unlisted.test:{https}/"))
    assert r.exit_code != 0, r.output
    assert r.sandbox_violations == [f"unlisted.test:{https}"], r
    assert r.output.endswith(blocked(f"unlisted.test:{https}")), r.output

    # The host approves a name: the next command reaches it.
    sh.set_network(policy(["registry.test", "unlisted.test"], ["denied.test"]))
    assert_ok(sh.run(unlisted), "hello from unlisted.test\n")
    assert_ok(sh.run(servers.urllib(f"https://unlisted.test:{https}/")), "hello from unlisted.test\n")
    assert_blocked(sh.run(servers.curl(f"https://denied.test:{https}/")), f"denied.test:{https}")
    # A wildcard, and a port pattern that allows its port only.
    sh.set_network(policy(["*.pkg.test", f"registry.test:{http}"]))
    assert_ok(sh.run(servers.curl(f"https://a.pkg.test:{https}/")), "hello from a.pkg.test\n")
    assert_ok(sh.run(servers.curl(f"http://registry.test:{http}/")))
    assert_blocked(sh.run(servers.curl(f"https://registry.test:{https}/")), f"registry.test:{https}")
    # "deny" takes every name back.
    sh.set_network("deny")
    assert_blocked(sh.run(unlisted), f"unlisted.test:{https}")


def check_refusals(sh) -> None:
    """The errors of ``set_network``: the core's, with its names."""
    with pytest.raises(conch.InvalidArgumentError, match=r"^network\.allow\[1\] must be a domain pattern"):
        sh.set_network({"allow": ["ok.test", "bad pattern"]})
    with pytest.raises(conch.InvalidArgumentError, match=r"^network\.deny\[0\] must be a domain pattern"):
        sh.set_network({"deny": ["https://x.test/"]})
    with pytest.raises(conch.InvalidArgumentError, match="cannot open the whole network"):
        sh.set_network("allow")
    with pytest.raises(conch.InvalidArgumentError, match=r"^network\.proxy is not an option$"):
        sh.set_network({"allow": [], "proxy": True})
    with pytest.raises(TypeError, match=r'^network: invalid type: integer `7`, expected "allow", "deny" or a domain policy'):
        sh.set_network(7)
    with pytest.raises(TypeError, match=r"^network: invalid type: unit value"):
        sh.set_network(None)
    # A refused policy changed nothing: the session still works.
    assert sh.run("echo still").output == "still\n"


def test_a_local_shell_reaches_allowed_names_only(servers, tmp_path):
    with by_name(conch.Shell, tmp_path) as sh:
        check_policy(sh, servers)


def test_set_network_refuses_bad_policies_and_sessions_without_one(tmp_path):
    with by_name(conch.Shell, tmp_path) as sh:
        check_refusals(sh)
    with conch.Shell(cwd=tmp_path, snapshot=None, sandbox={"best_effort": True}) as sh:
        with pytest.raises(conch.InvalidArgumentError, match="set_network needs a session started with a domain policy"):
            sh.set_network("deny")
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        with pytest.raises(conch.InvalidArgumentError):
            sh.set_network("deny")
    sh = conch.Shell(cwd=tmp_path, snapshot=None)
    sh.close()
    with pytest.raises(conch.ClosedError):
        sh.set_network("deny")


def test_a_bad_pattern_in_the_sandbox_option_is_named(tmp_path):
    with pytest.raises(conch.InvalidArgumentError, match=r"^sandbox\.network\.allow\[0\] must be a domain pattern"):
        conch.Shell(cwd=tmp_path, snapshot=None, sandbox={"network": {"allow": ["a b"]}})


def test_a_result_without_a_domain_policy_has_no_violations(shell):
    assert shell.run("true").sandbox_violations == []


def test_set_network_async(servers, tmp_path):
    async def main(sh) -> conch.BashResult:
        await sh.set_network_async(policy(["unlisted.test"]))
        return await sh.run_async(servers.curl(f"https://unlisted.test:{servers.https}/"))

    with by_name(conch.Shell, tmp_path) as sh:
        assert_ok(asyncio.run(main(sh)), "hello from unlisted.test\n")


@pytest.fixture(scope="module")
def remote() -> Iterator[conch.Remote]:
    with conch.connect([CONCH, "serve", "--stdio"]) as r:
        yield r


def test_a_remote_shell_reaches_allowed_names_only(remote, servers, tmp_path):
    with by_name(remote.shell, tmp_path) as sh:
        check_policy(sh, servers)


def test_a_remote_set_network_refuses_as_a_local_one(remote, servers, tmp_path):
    with by_name(remote.shell, tmp_path) as sh:
        check_refusals(sh)

        async def main() -> conch.BashResult:
            await sh.set_network_async(policy(["unlisted.test"]))
            return await sh.run_async(servers.curl(f"https://unlisted.test:{servers.https}/"))

        assert_ok(asyncio.run(main()), "hello from unlisted.test\n")
    with remote.shell(cwd=tmp_path, snapshot=None) as sh:
        with pytest.raises(conch.InvalidArgumentError, match="set_network needs a session started with a domain policy"):
            sh.set_network("deny")
    with pytest.raises(conch.ClosedError):
        sh.set_network("deny")
