"""Round trip of a remote session against a local one, in one run.

    .venv/bin/python bench/remote.py [CONCH_BIN]

Runs the builtin ``true`` and ``/bin/true`` many times through a local
``conch.Shell``, a remote session over stdio (``conch serve --stdio``, a
subprocess) and a remote session over a WebSocket on 127.0.0.1, each
measured the same way (wall time of ``run`` from Python, medians), and
writes the table to bench/RESULTS-remote.md. The goal: remote within 0.3 ms
of local for both commands.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import conch

ROOT = Path(__file__).resolve().parents[1]
CONCH = sys.argv[1] if len(sys.argv) > 1 else str(
    ROOT / "target" / "x86_64-unknown-linux-gnu" / "release" / "conch"
)
RUNS = int(os.environ.get("BENCH_REMOTE_RUNS", "400"))
WARMUP = 30


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
    finally:
        server.terminate()
        server.wait()
    lines = [
        "# Remote round trip (`bench/remote.py`)",
        "",
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {RUNS * 4} runs per row "
        "(four interleaved rounds), wall time of `run` from Python, µs.",
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
            lines.append(
                f"| `{command}` | {name} | {median:,.0f} | {deciles[0]:,.0f}–{deciles[-1]:,.0f} | {delta} |"
            )
    text = "\n".join(lines) + "\n"
    (ROOT / "bench" / "RESULTS-remote.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
