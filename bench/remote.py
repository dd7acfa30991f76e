"""A remote session against a local one, in one run.

    .venv/bin/python bench/remote.py [CONCH_BIN]

- Round trip: the builtin ``true`` and ``/bin/true`` many times through a
  local ``conch.Shell``, a remote session over stdio (``conch serve
  --stdio``, a subprocess) and one over a WebSocket on 127.0.0.1, each
  measured the same way (wall time of ``run`` from Python, medians); and
  SWE-ReX 1.4 (its own server and ``RemoteRuntime`` on 127.0.0.1, a bash
  session, ``run_in_session``, its defaults), the row a user would otherwise
  pick: bench/swerex/rtt.py, in a virtualenv of its own made here
  (bench/.venv-swerex, from bench/swerex/requirements.txt). The goal: remote
  within 0.3 ms of local for both commands.
- Scale: 100 sessions x 20 commands through one server (a thread per
  session, one WebSocket connection), against 100 local shells doing the
  same, wall time.
- Memory: the server's RSS per idle session (100 opened, nothing run).

Writes the tables to bench/RESULTS-remote.md.
"""

from __future__ import annotations

import os
import platform
import statistics
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import conch

ROOT = Path(__file__).resolve().parents[1]
CONCH = sys.argv[1] if len(sys.argv) > 1 else str(
    ROOT / "target" / "x86_64-unknown-linux-gnu" / "release" / "conch"
)
RUNS = int(os.environ.get("BENCH_REMOTE_RUNS", "400"))
WARMUP = 30
# SWE-ReX takes about 135 ms a command: fewer runs give a steady median.
SWEREX_RUNS = int(os.environ.get("BENCH_SWEREX_RUNS", "40"))
SWEREX_VENV = ROOT / "bench" / ".venv-swerex"
SESSIONS, COMMANDS = 100, 20


def timings(shell, command: str) -> list[float]:
    for _ in range(WARMUP):
        shell.run(command)
    out = []
    for _ in range(RUNS):
        start = time.perf_counter()
        shell.run(command)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def listening() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [CONCH, "serve", "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "CONCH_TOKEN"},
    )
    line = proc.stderr.readline()
    return proc, "ws://" + line.split()[-1]


def swerex(commands: tuple[str, ...]) -> dict[str, list[float]]:
    """SWE-ReX's timings of ``commands``, from its own virtualenv."""
    python = SWEREX_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SWEREX_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r",
             str(ROOT / "bench" / "swerex" / "requirements.txt")],
            check=True,
        )
    out = subprocess.run(
        [str(python), str(ROOT / "bench" / "swerex" / "rtt.py"), str(SWEREX_RUNS), *commands],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def many(shells: list) -> float:
    """Seconds for every shell to run COMMANDS commands, a thread each."""
    def work(shell) -> None:
        for i in range(COMMANDS):
            assert shell.run(f"echo {i}").output == f"{i}\n"

    threads = [threading.Thread(target=work, args=(sh,)) for sh in shells]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def scale(url: str, server_pid: int) -> list[str]:
    """The scale and memory tables."""
    with conch.connect(url) as ws:
        before = rss_kib(server_pid)
        sessions = [ws.shell(snapshot=None) for _ in range(SESSIONS)]
        # Every session's bash is up once a first command answered.
        for sh in sessions:
            sh.run("true")
        idle = rss_kib(server_pid)
        remote_s = many(sessions)
        for sh in sessions:
            sh.close()
    locals_ = [conch.Shell(snapshot=None) for _ in range(SESSIONS)]
    for sh in locals_:
        sh.run("true")
    local_s = many(locals_)
    for sh in locals_:
        sh.close()
    total = SESSIONS * COMMANDS
    return [
        "",
        f"## {SESSIONS} sessions x {COMMANDS} commands (`echo`), a thread per session",
        "",
        "| Sessions | wall | commands/s | remote / local |",
        "|---|---|---|---|",
        f"| local `conch.Shell` x {SESSIONS} | {local_s:.2f} s | {total / local_s:,.0f} | |",
        f"| remote, one WebSocket server | {remote_s:.2f} s | {total / remote_s:,.0f} "
        f"| {remote_s / local_s:.2f} |",
        "",
        "## Server memory",
        "",
        f"`conch serve` RSS: {before:,} KiB connected, {idle:,} KiB with {SESSIONS} idle sessions: "
        f"**{(idle - before) / SESSIONS:,.0f} KiB per idle session** (the server process; each "
        "session's bash is a process of its own).",
    ]


def main() -> None:
    server, url = listening()
    faces = {}
    try:
        with conch.Shell(snapshot=None) as local, \
                conch.connect([CONCH, "serve", "--stdio"]) as stdio, \
                conch.connect(url) as ws:
            sessions = {
                "local `conch.Shell`": local,
                "remote, stdio": stdio.shell(snapshot=None),
                "remote, WebSocket 127.0.0.1": ws.shell(snapshot=None),
            }
            # Interleaved rounds, so a slow spell of the machine hits every
            # row alike.
            for command in ("true", "/bin/true"):
                per = {name: [] for name in sessions}
                for _ in range(4):
                    for name, shell in sessions.items():
                        per[name] += timings(shell, command)
                faces[command] = per
        for command, samples in swerex(tuple(faces)).items():
            faces[command]["SWE-ReX 1.4 `RemoteRuntime`, 127.0.0.1"] = samples
        scaled = scale(url, server.pid)
    finally:
        server.terminate()
        server.wait()
    lines = [
        "# Remote round trip (`bench/remote.py`)",
        "",
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {RUNS * 4} runs per conch row "
        f"(four interleaved rounds), {SWEREX_RUNS} for SWE-ReX (its defaults), wall time of a "
        "command from Python, µs.",
        "",
        "| Command | Session | median | p10–p90 | remote − local (median) |",
        "|---|---|---|---|---|",
    ]
    for command, per in faces.items():
        local = statistics.median(per["local `conch.Shell`"])
        for name, samples in per.items():
            deciles = statistics.quantiles(samples, n=10)
            median = statistics.median(samples)
            delta = "" if name.startswith("local") else f"{(median - local) / 1000:+.3f} ms"
            if name.startswith("SWE-ReX"):
                delta += f" ({median / local:,.0f}x local)"
            lines.append(
                f"| `{command}` | {name} | {median:,.0f} | {deciles[0]:,.0f}–{deciles[-1]:,.0f} | {delta} |"
            )
    text = "\n".join(lines + scaled) + "\n"
    (ROOT / "bench" / "RESULTS-remote.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
