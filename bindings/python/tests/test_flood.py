"""A 1 GiB flood through on_chunk keeps memory bounded; prints throughput."""

from __future__ import annotations

import time

import conch
from conftest import rss_bytes

GIB = 1 << 30


def test_one_gib_through_on_chunk_keeps_rss_bounded(shell, capsys):
    seen = 0
    peak = 0
    calls = 0
    base = rss_bytes()

    def on_chunk(text: str) -> None:
        nonlocal seen, peak, calls
        seen += len(text)
        calls += 1
        if calls % 64 == 0:
            peak = max(peak, rss_bytes())

    start = time.monotonic()
    r = shell.run(r"head -c 1G /dev/zero | tr '\0' x", on_chunk=on_chunk)
    elapsed = time.monotonic() - start
    peak = max(peak, rss_bytes())

    assert r.exit_code == 0 and seen == GIB
    assert r.total_bytes == GIB and r.truncated
    assert r.output_bytes <= 51200
    growth = peak - base
    assert growth < 64 << 20, f"RSS grew by {growth >> 20} MiB"
    with capsys.disabled():
        print(
            f"\n[flood] 1 GiB through on_chunk in {elapsed:.2f} s = {GIB / elapsed / 1e6:.0f} MB/s, "
            f"{calls} chunks, RSS growth {growth / (1 << 20):.1f} MiB"
        )
