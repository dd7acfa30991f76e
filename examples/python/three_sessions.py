"""Three persistent shells driven concurrently from asyncio.

Each session keeps its own state (cwd, variables) across commands; the
three run at the same time, so the total time is that of the slowest, and
a command that overstays is cancelled with its task.

    python examples/python/three_sessions.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time

import conch


async def worker(name: str, shell: conch.Shell) -> str:
    await shell.run_async(f"mkdir -p {name} && cd {name} && export WHO={name}")
    r = await shell.run_async("sleep 1; echo \"$WHO works in $(basename \"$PWD\")\"")
    return r.output.strip()


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        shells = [conch.Shell(cwd=root, snapshot=None) for _ in range(3)]
        try:
            start = time.monotonic()
            lines = await asyncio.gather(
                *(worker(name, sh) for name, sh in zip(("alpha", "beta", "gamma"), shells))
            )
            print("\n".join(lines))
            print(f"three 1 s commands took {time.monotonic() - start:.2f} s together")

            # A command that would run for minutes, cut short by its task's deadline.
            start = time.monotonic()
            try:
                await asyncio.wait_for(shells[0].run_async("sleep 300"), timeout=0.5)
            except asyncio.TimeoutError:
                print(f"sleep 300 cancelled after {time.monotonic() - start:.2f} s")
            print(shells[0].run("echo the session lives on in $(basename $PWD)").output, end="")
        finally:
            for sh in shells:
                sh.close()


if __name__ == "__main__":
    asyncio.run(main())
