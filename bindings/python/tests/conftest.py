"""Shared helpers of the conch pytest suite."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

import conch

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "tests" / "vectors"


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[conch.Shell]:
    """A clean session (no rc snapshot) starting in a temporary directory."""
    with conch.Shell(cwd=tmp_path, snapshot=None) as sh:
        yield sh


@pytest.fixture
def marker() -> str:
    """A unique word to put in a command line and look for in /proc."""
    return f"conch-test-{uuid.uuid4().hex[:12]}"


def pids_with(word: str) -> list[int]:
    """Live processes whose command line contains ``word`` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if word.encode() in cmdline and state != b"Z":
            found.append(int(entry))
    return found


def wait_until(predicate, timeout: float = 5.0) -> bool:
    """Polls ``predicate`` until it is true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def rss_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
