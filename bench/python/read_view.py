"""What the defaults of what the model reads cost on a stream.

Sessions with the defaults (``carriage_return: "terminal"``, ``mask:
True``), with the seed's rules (``carriage_return: "newline"``, ``mask:
False``), and with the defaults and a secret given in ``env`` (so that the
masker runs), ``cat`` the same file in interleaved rounds. The artifacts go to a directory on /dev/shm
and are removed after each run, so that the disk (conch writes each run's
whole output to its artifact) does not decide the figure.

Run: ``.venv/bin/python bench/python/read_view.py [MiB] [rounds]``
(defaults 1024 and 5). Prints MB/s per round and the medians.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

import conch

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
LINE = b"[000123] compiling module_123: the quick brown fox jumps over the lazy dog\n"


def make_file(directory: str) -> str:
    path = os.path.join(directory, "stream.txt")
    block = LINE * (1024 * 1024 // len(LINE) + 1)
    with open(path, "wb") as f:
        written = 0
        while written < MIB * 1024 * 1024:
            f.write(block)
            written += len(block)
    return path


def main() -> None:
    root = tempfile.mkdtemp(prefix="conch-read-view-", dir="/dev/shm")
    try:
        path = make_file(root)
        size = os.path.getsize(path)
        secret = {"API_TOKEN": "s3cr3t-value-of-the-bench"}
        sessions = {
            "defaults": conch.Shell(artifacts_dir=os.path.join(root, "defaults")),
            "seed rules": conch.Shell(
                artifacts_dir=os.path.join(root, "seed rules"),
                carriage_return="newline",
                mask=False,
            ),
            "defaults, a secret given": conch.Shell(
                artifacts_dir=os.path.join(root, "defaults, a secret given"), env=secret
            ),
        }
        rates: dict[str, list[float]] = {name: [] for name in sessions}
        for _ in range(ROUNDS):
            for name, sh in sessions.items():
                start = time.perf_counter()
                result = sh.run(f"cat {path}")
                took = time.perf_counter() - start
                assert result.exit_code == 0 and result.total_bytes == size, result
                rates[name].append(size / took / 1e6)
                store = os.path.join(root, name)
                for entry in os.listdir(store):
                    os.remove(os.path.join(store, entry))
        for sh in sessions.values():
            sh.close()
        for name, values in rates.items():
            shown = ", ".join(f"{v:,.0f}" for v in values)
            print(f"{name:25}  median {statistics.median(values):,.0f} MB/s  ({shown})")
        seed = statistics.median(rates["seed rules"])
        for name in ("defaults", "defaults, a secret given"):
            print(f"{name} / seed rules: {statistics.median(rates[name]) / seed:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
