"""SWE-ReX's round trip, the row a user would otherwise pick: its own
server (``swerex-remote``) on 127.0.0.1 with a token, its ``RemoteRuntime``,
one bash session, ``run_in_session`` of each command, with its defaults.

    python rtt.py RUNS COMMAND...   (in a virtualenv with swe-rex==1.4.0)

Prints one JSON object: each command's wall times in µs.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

from swerex.runtime.abstract import BashAction, CreateBashSessionRequest
from swerex.runtime.remote import RemoteRuntime

TOKEN = "bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def measure(port: int, runs: int, commands: list[str]) -> dict[str, list[float]]:
    runtime = RemoteRuntime(host="http://127.0.0.1", port=port, auth_token=TOKEN)
    deadline = time.monotonic() + 60
    while not await runtime.is_alive():
        if time.monotonic() > deadline:
            raise SystemExit("swerex-remote did not come up in 60 s")
        await asyncio.sleep(0.2)
    await runtime.create_session(CreateBashSessionRequest())
    out = {}
    for command in commands:
        for _ in range(5):
            await runtime.run_in_session(BashAction(command=command, timeout=30))
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            await runtime.run_in_session(BashAction(command=command, timeout=30))
            samples.append((time.perf_counter() - start) * 1e6)
        out[command] = samples
    await runtime.close()
    return out


def main() -> None:
    runs, commands = int(sys.argv[1]), sys.argv[2:]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "swerex.server", "--host", "127.0.0.1", "--port", str(port),
         "--auth-token", TOKEN],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        print(json.dumps(asyncio.run(measure(port, runs, commands))))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
