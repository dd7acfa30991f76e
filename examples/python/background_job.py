"""A server started in the background, as an agent would: the command
returns at once, what the server writes later is its job's (never the
output of the next command), and ``poll`` waits until it says it is ready.

    python examples/python/background_job.py
"""

from __future__ import annotations

import tempfile

import conch


def main() -> None:
    with tempfile.TemporaryDirectory() as root, conch.Shell(cwd=root, snapshot=None) as sh:
        # A stand-in for `npm run dev &`: it takes a moment, then says where it listens.
        r = sh.run("(sleep 0.5; echo 'listening on :8000'; sleep 300) & echo started")
        print(f"run: {r.output.strip()!r}")  # 'started', at once

        r = sh.run("echo other work")
        print(f"next run: {r.output.strip()!r}")  # only its own output

        [job] = sh.jobs()
        print(f"job {job.job}: {job.command!r} is {job.status}")

        ready = sh.poll(job.job, wait=10, until=r"listening on :\d+")
        print(f"poll: {ready.status}, {ready.output.strip()!r} after {ready.elapsed:.1f} s")
        assert ready.status == "running" and "listening on :8000" in ready.output

        # Nothing new since: a poll without wait returns at once.
        print(f"poll again: {sh.poll(job.job).output!r}")
    # Leaving the `with` closed the shell, and killed the server with it.


if __name__ == "__main__":
    main()
